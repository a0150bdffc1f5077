"""Frequency estimation under eps-LDP: the mechanisms people deploy, exactly; the optimum; gaps;
estimators from reports."""

from ldpopt.frequency.compare import CompareResult, CompareRow, compare
from ldpopt.frequency.consistent import SupportMLE, project_to_simplex, support_mle
from ldpopt.frequency.estimate import HistogramEstimate, estimate
from ldpopt.frequency.mechanisms import (
    FrequencyMechanism,
    basic_rappor,
    deployed,
    grr,
    hadamard_response,
    olh,
    oue,
    subset_selection,
    subset_sizes,
    sue,
)
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
    # the deployed mechanisms
    "FrequencyMechanism",
    "basic_rappor",
    "deployed",
    "grr",
    "hadamard_response",
    "olh",
    "oue",
    "subset_selection",
    "subset_sizes",
    "sue",
    # the gap table
    "CompareResult",
    "CompareRow",
    "compare",
    # estimates from reports
    "HistogramEstimate",
    "SupportMLE",
    "estimate",
    "project_to_simplex",
    "support_mle",
    # the exact optimum
    "FrequencyOptimum",
    "optimal_mechanism",
]
