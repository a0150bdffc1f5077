r"""Designing for a central target: the best SPR mechanism whose shuffled reports meet (eps, delta).

Two local mechanisms with the same :math:`\varepsilon_0` can shuffle to different central
guarantees (more outputs mean fewer clones), so the local level is searched per mechanism family:
for each output budget l (the unconstrained optimum and, where it helps, the budgets 2, 3, ...
below its number of outputs), the largest :math:`\varepsilon_0` whose optimal mechanism with at
most l outputs meets the target by the ``"tight"`` bound of :func:`~ldpopt.deploy.shuffle.central_epsilon`
(bisection on :math:`\varepsilon_0`, rounded down, assuming the guarantee is monotone in
:math:`\varepsilon_0`; only levels that were checked are returned, so the target is always met).
The candidate with the largest utility wins.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ldpopt._validation import check_eps, check_positive_int, is_real
from ldpopt.deploy.shuffle import (
    EPS0_SEARCH_MAX,
    ShuffleBound,
    central_epsilon,
    tight_delta,
)
from ldpopt.deploy.testing import check_level
from ldpopt.divergences import FDivergence
from ldpopt.spr import OptimalMechanismResult, optimal_mechanism

__all__ = ["CentralDesign", "optimal_for_central", "check_central", "MAX_FAMILY"]

#: at most this many output budgets are tried (2, 3, ... and the unconstrained optimum)
MAX_FAMILY = 6
#: the search on eps0 stops when the bracket is this fraction of the upper end
EPS0_REL_TOL = 1e-4
_MAX_STEPS = 80


@dataclass(frozen=True)
class CentralDesign:
    """The chosen mechanism (``result``, designed at local level ``eps0``) and its shuffled
    guarantee ``central`` (the ``"tight"`` bound, ``central.value <= central_eps``).

    ``candidates`` lists (output budget or None, eps0, utility) for every family tried."""

    result: OptimalMechanismResult
    eps0: float
    central: ShuffleBound
    central_eps: float
    delta: float
    n: int
    candidates: tuple[tuple[int | None, float, float], ...]


def check_central(central: Any) -> tuple[float, float, int]:
    """``(eps, delta, n)`` checked: eps > 0 finite, delta in (0, 1), n >= 1."""
    if not isinstance(central, (tuple, list)) or len(central) != 3:
        raise TypeError(f"central must be a tuple (eps, delta, n), got central={central!r}")
    eps, delta, n = central
    if not is_real(eps):
        raise TypeError(f"central eps must be a real number, got {eps!r}")
    return (
        check_eps(eps, "central eps", allow_inf=False),
        check_level(delta, "central delta"),
        check_positive_int(n, "central n"),
    )


def _meets(p0: Any, p1: Any, eps0: float, target: tuple[float, float, int], kw: dict) -> bool:
    eps, delta, n = target
    mech = optimal_mechanism(p0, p1, eps0, **kw).mechanism
    return mech is not None and tight_delta(mech, eps, n, delta, stop_above=delta) <= delta


def _largest_eps0(p0: Any, p1: Any, target: tuple[float, float, int], kw: dict) -> float:
    lo = target[0]  # shuffling never loses privacy: eps0 = central eps always meets the target
    hi = min(2.0 * lo, EPS0_SEARCH_MAX)
    while _meets(p0, p1, hi, target, kw):  # doubling: the bracket [lo, hi] with hi failing
        lo = hi
        if hi >= EPS0_SEARCH_MAX:
            return hi
        hi = min(2.0 * hi, EPS0_SEARCH_MAX)
    for _ in range(_MAX_STEPS):
        if hi - lo <= EPS0_REL_TOL * hi:
            break
        mid = 0.5 * (lo + hi)
        if _meets(p0, p1, mid, target, kw):
            lo = mid
        else:
            hi = mid
    return lo


def optimal_for_central(
    p0: Any,
    p1: Any,
    central: Any,
    divergence: str | FDivergence = "kl",
    max_outputs: int | None = None,
    *,
    normalize: bool = False,
) -> CentralDesign:
    """The most useful SPR mechanism whose n shuffled reports are (eps, delta)-DP.

    Parameters
    ----------
    p0, p1 : array_like or dict
        The two distributions (as :func:`ldpopt.optimal_mechanism`).
    central : (eps, delta, n)
        The central target and the number of users.
    divergence, max_outputs, normalize
        As :func:`ldpopt.optimal_mechanism`; ``max_outputs`` caps every family tried.
    """
    target = check_central(central)
    kw: dict[str, Any] = {"divergence": divergence, "normalize": normalize}
    budgets: list[int | None] = [max_outputs]
    best: tuple[float, OptimalMechanismResult, float] | None = None
    rows = []
    for budget in budgets:
        if budget is not None and best is not None and budget >= best[1].num_outputs:
            continue  # the unconstrained design already uses at most this many outputs
        eps0 = _largest_eps0(p0, p1, target, {**kw, "max_outputs": budget})
        res = optimal_mechanism(p0, p1, eps0, max_outputs=budget, **kw)
        rows.append((budget, eps0, res.value))
        if best is None or res.value > best[0]:
            best = (res.value, res, eps0)
        if budget == max_outputs:  # fewer outputs: more clones per user, possibly a larger eps0
            top = res.num_outputs if max_outputs is None else min(max_outputs, res.num_outputs)
            budgets += list(range(2, min(top, MAX_FAMILY)))
    assert best is not None
    _, res, eps0 = best
    # the search accepted eps0 by tight_delta(target eps) <= delta, so the mechanism meets the
    # target; ``bound.value`` is the same bound's smallest eps (<= target up to TIGHT_REL_TOL)
    bound = central_epsilon(res, target[2], target[1], "tight")
    return CentralDesign(res, eps0, bound, target[0], target[1], target[2], tuple(rows))
