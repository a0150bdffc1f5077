"""Frequency estimation under eps-LDP: the mechanisms people deploy, exactly; the optimum; gaps;
estimators from reports."""

from ldpopt.frequency.objectives import (
    WorstCaseSolution,
    total_variance,
    unbiased_estimator,
    variance_at,
    variance_uniform,
    worst_case,
    worst_case_solution,
)
from ldpopt.frequency.optimum import FrequencyOptimum, optimal_mechanism

__all__ = [
    # objectives (l2 error of the best unbiased estimator)
    "WorstCaseSolution",
    "total_variance",
    "unbiased_estimator",
    "variance_at",
    "variance_uniform",
    "worst_case",
    "worst_case_solution",
    # the exact optimum
    "FrequencyOptimum",
    "optimal_mechanism",
]
