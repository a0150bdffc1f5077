r"""The one solve policy of the exact SPR solvers: which algorithm answers, and when.

The readable dynamic program (:func:`ldpopt.spr.reference._dp_readable`, the specification)
maximises over every block count at once; the fast solvers reach the same optimum by
Dinkelbach's iteration and fall back to the O(l k^2) budget program where that iteration alone
does not reproduce the readable answer.  Every such decision is taken here, once:

* :func:`start` - one block (k = 1 or l = 1: nothing to choose), one unpenalised pass (eps = inf,
  c = 0: every partition has denominator 1) or Dinkelbach from the best two-block partition;
* :func:`settle` - after Dinkelbach: an infinite score (Renyi of large order, c > 0) is settled by
  the budget program with at most 3 blocks (an infinite block needs only before / it / after);
  near-ties between block counts (c < ``TIE_C``: the penalty lambda c is below rounding) by the
  budget program with the block count found (the readable program's smallest maximising s);
  a binding budget by the budget program with l blocks; otherwise Dinkelbach's partition stands;
* :func:`power_far` - Renyi far from S = 1, where the centred optimum does not determine
  :math:`D_\alpha` and the partition is solved again on the scaled Renyi sum;
* :func:`use_compiled` - the compiled solvers or the readable program.

:func:`start` and :func:`settle` use only scalar arithmetic, so :mod:`ldpopt.spr._kernels`
compiles these very functions (``njit(start)``) for the solves that run inside compiled code
(sweeps); the table path of :mod:`ldpopt.spr._fast` calls them as Python.
"""

from __future__ import annotations

import math

from ldpopt.divergences import CODE_POWER_DOWN, CODE_POWER_UP, RENYI_NEAR_MAX, FDivergence

__all__ = [
    "DINKELBACH",
    "BUDGET",
    "SINGLE",
    "METHOD_NAMES",
    "START_SINGLE",
    "START_UNPENALISED",
    "START_TWO_BLOCKS",
    "TIE_C",
    "TIE_WORK",
    "start",
    "settle",
    "power_far",
    "use_compiled",
    "USER_TABLE_MAX_K",
]

#: method codes of the fast solvers (``OptimalMechanismResult.method`` is ``METHOD_NAMES[code]``)
DINKELBACH, BUDGET, SINGLE = 0, 1, 2
METHOD_NAMES = ("dinkelbach", "budget_dp", "single_block")
#: how Dinkelbach's iteration starts (:func:`start`)
START_SINGLE, START_UNPENALISED, START_TWO_BLOCKS = 0, 1, 2
#: below this c = e^{-eps} (eps > 27.6) the Dinkelbach penalty lambda c is lost in rounding,
#: so optimal partitions with different block counts tie in floating point ...
TIE_C = 1e-12
#: ... and the tie is then settled by the budget program when nb k^2 is at most this
TIE_WORK = 30_000_000


def start(k: int, l: int, c: float) -> int:
    """How a fast solve of k reduced symbols with budget l at ``c = e^-eps`` starts."""
    if k == 1 or l == 1:
        return START_SINGLE
    if c == 0.0:
        return START_UNPENALISED
    return START_TWO_BLOCKS


def settle(raw: float, nb: int, k: int, l: int, c: float) -> tuple[int, int]:
    """``(budget, method)`` after Dinkelbach's optimum ``raw`` with ``nb`` blocks.

    ``budget`` 0: Dinkelbach's partition is the answer; else the budget program with at most
    ``budget`` blocks gives it.  ``method`` is the code the solve reports.
    """
    if math.isinf(raw) and c > 0.0:
        return min(l, 3), BUDGET
    if c < TIE_C and nb > 1 and nb * k * k <= TIE_WORK:
        return min(nb, l), DINKELBACH
    if nb <= l:
        return 0, DINKELBACH
    return l, BUDGET


def power_far(div: FDivergence, raw: float) -> bool:
    """True when the optimum of the centred power f-divergence does not determine D_alpha.

    Its raw value is S - 1 (a > 1) or 1 - S (a < 1) with S the Renyi sum of the outputs.  For
    a > 1 it is accurate to a few ulp unless a score overflowed (raw = inf); for a < 1 it
    carries ~ulp absolute error, too much for log S once S is small (1 - S > 1/2).
    """
    if div.code == CODE_POWER_UP:
        return not math.isfinite(raw)
    if div.code == CODE_POWER_DOWN:
        return not raw <= RENYI_NEAR_MAX
    return False


def use_compiled(method: str, div: FDivergence, k: int) -> bool:
    """``method="auto"``/``"fast"`` runs the compiled solvers for every built-in divergence, and
    for a user's divergence over k <= ``table_max_k`` reduced symbols (the table path scores
    every block with the divergence's own vectorised perspective, then runs the compiled passes);
    ``"dp"`` and a user's divergence over more symbols run the readable program."""
    if method == "dp":
        return False
    return bool(div.is_builtin) or k <= USER_TABLE_MAX_K


#: a user's divergence takes the table path up to this many reduced symbols (the table holds
#: k (k + 1) / 2 scores: 4.2 MB here; the same bound as ``_fast.TABLE_MAX_K``)
USER_TABLE_MAX_K = 1024
