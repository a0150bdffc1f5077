r"""The gap table: every deployed frequency oracle at (k, eps) against the optimum.

Each row is one mechanism of :func:`ldpopt.frequency.mechanisms.deployed` with its standard
estimator's exact ``variance_uniform`` and ``worst_case`` (n = 1), their ratios to the optimal
values over all eps-LDP channels with the best unbiased estimator, the number of distinct
reports (``outputs``, None above 2^63, with its ``log10_outputs``) and the bits per report.
``best_variance_uniform`` is the error of the best unbiased
estimator for the mechanism's own channel (where the channel has at most
:data:`BEST_MAX_COLUMNS` columns), what a better server-side estimator would gain.

The reference (``reference`` names it):

* ``"optimum"``: the exact optimum (:func:`ldpopt.frequency.optimal_mechanism`), ratios exact;
* ``"lower bound"``: a certified lower bound on the optimum where the solver stops short of it;
  the ratios are then upper bounds on the true ratios;
* ``"best deployed"``: the smallest error of the deployed mechanisms (standard or best unbiased
  estimator), an *upper* bound on the optimum: ratios >= 1 that understate the gap.  Used only
  when no optimum is available.
"""

from __future__ import annotations

import math
from dataclasses import KW_ONLY, dataclass
from typing import Any

from ldpopt.frequency.mechanisms import FrequencyMechanism, check_k, check_mechanism_eps, deployed
from ldpopt.frequency.optimum import K_MAX, optimal_mechanism

__all__ = ["BEST_MAX_COLUMNS", "CompareResult", "CompareRow", "compare"]

#: the best unbiased estimator of a deployed channel is computed up to this many channel columns
BEST_MAX_COLUMNS = 4096


@dataclass(frozen=True)
class CompareRow:
    """One mechanism of the gap table (module docstring); ratios are to the reference."""

    mechanism: str
    kind: str
    outputs: int | None
    variance_uniform: float
    worst_case: float
    ratio_uniform: float
    ratio_worst_case: float
    _: KW_ONLY
    bits_per_report: int
    best_variance_uniform: float | None
    log10_outputs: float

    def to_dict(self) -> dict:
        return {
            "mechanism": self.mechanism,
            "kind": self.kind,
            "outputs": self.outputs,
            "log10_outputs": self.log10_outputs,
            "variance_uniform": self.variance_uniform,
            "worst_case": self.worst_case,
            "ratio_uniform": self.ratio_uniform,
            "ratio_worst_case": self.ratio_worst_case,
            "bits_per_report": self.bits_per_report,
            "best_variance_uniform": self.best_variance_uniform,
        }


@dataclass(frozen=True)
class CompareResult:
    """The gap table at (k, eps): ``rows``, the reference values and what they are."""

    k: int
    eps: float
    rows: tuple[CompareRow, ...]
    optimum_uniform: float
    optimum_worst_case: float
    reference: str
    message: str

    def to_dict(self) -> dict:
        return {
            "k": self.k,
            "eps": self.eps,
            "reference": self.reference,
            "message": self.message,
            "optimum_uniform": self.optimum_uniform,
            "optimum_worst_case": self.optimum_worst_case,
            "rows": [r.to_dict() for r in self.rows],
        }


def _best(m: FrequencyMechanism) -> float | None:
    cols = m.channel_size() // m.k
    if cols > BEST_MAX_COLUMNS:
        return None
    return m.best_variance_uniform()


def _optimum(k: int, eps: float, objective: str) -> tuple[float, str, str] | None:
    """(value, "optimum" or "lower bound", the solver's message) of the optimum, or None."""
    res = optimal_mechanism(k, eps, objective=objective)
    if res.status == "optimal" and math.isfinite(res.value):
        return res.value, "optimum", res.message
    if math.isfinite(res.lower_bound) and res.lower_bound > 0:
        return res.lower_bound, "lower bound", res.message
    return None


def _reference(
    k: int, eps: float, mechs: tuple[FrequencyMechanism, ...], best: list[float | None]
) -> tuple[float, float, str, str]:
    """(uniform, worst case, what, message): the optimum, its certified lower bound, or the best
    deployed error when the solver gives neither."""
    uniform, worst = _optimum(k, eps, "variance_uniform"), _optimum(k, eps, "worst_case")
    if uniform is not None and worst is not None:
        what = "optimum" if uniform[1] == worst[1] == "optimum" else "lower bound"
        return uniform[0], worst[0], what, uniform[2]
    low_u = min([m.variance_uniform for m in mechs] + [b for b in best if b is not None])
    low_w = min(m.worst_case for m in mechs)
    return low_u, low_w, "best deployed", "no optimum or lower bound: ratios to the best deployed mechanism"


def _outputs(m: FrequencyMechanism) -> int | None:
    """The exact number of reports when below 2^63 (log10 2^63 ~ 18.96; lgamma's error in the
    log10 is far below the 0.4 margin), else None."""
    if m.log10_num_outputs > 18.5:
        return None
    n = m.num_outputs
    return n if n < 2**63 else None


def compare(k: Any, eps: Any) -> CompareResult:
    """The gap table of the deployed mechanisms at (k, eps) (module docstring); k at most
    :data:`ldpopt.frequency.optimum.K_MAX`, the optimum's bound."""
    kk, e = check_k(k), check_mechanism_eps(eps)
    if kk > K_MAX:
        raise ValueError(f"k must be in 2..{K_MAX} (the optimum's bound), got k={kk}")
    mechs = deployed(kk, e)
    best = [_best(m) for m in mechs]
    opt_u, opt_w, what, message = _reference(kk, e, mechs, best)
    rows = tuple(
        CompareRow(
            mechanism=m.label,
            kind=m.kind,
            outputs=_outputs(m),
            variance_uniform=m.variance_uniform,
            worst_case=m.worst_case,
            ratio_uniform=m.variance_uniform / opt_u if opt_u > 0 else math.inf,
            ratio_worst_case=m.worst_case / opt_w if opt_w > 0 else math.inf,
            bits_per_report=m.bits_per_report,
            best_variance_uniform=b,
            log10_outputs=m.log10_num_outputs,
        )
        for m, b in zip(mechs, best, strict=True)
    )
    return CompareResult(kk, e, rows, opt_u, opt_w, what, message)
