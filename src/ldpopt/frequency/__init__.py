"""Frequency estimation under eps-LDP: the mechanisms people deploy, exactly; the optimum; gaps;
estimators from reports."""

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

__all__ = [
    "FrequencyMechanism",
    "HistogramEstimate",
    "SupportMLE",
    "basic_rappor",
    "deployed",
    "estimate",
    "grr",
    "hadamard_response",
    "olh",
    "oue",
    "project_to_simplex",
    "subset_selection",
    "subset_sizes",
    "sue",
    "support_mle",
]
