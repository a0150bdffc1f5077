r"""The optimum by a linear program over every maximal column (no symmetry assumed; k <= 18).

With rescaled maximal columns :math:`v_S` (1 on S, c off S) and weights :math:`t_S\ge0`,
:math:`\sum_S t_S v_S = \mathbf 1` (row-stochastic), the trace of :math:`M = QW^{-1}Q^T` is linear in t:
:math:`\operatorname{tr}M - k = \sum_S t_S a_S`, :math:`a_S = (k\lVert v_S\rVert^2 - (\mathbf 1^Tv_S)^2)/
\mathbf 1^Tv_S`.  The LP :math:`T^* = \max\{a^Tt: \sum_S t_S v_S = \mathbf 1, t\ge0\}` bounds
:math:`\operatorname{tr}M - k` over every eps-LDP channel, so :math:`V \ge (k-1)^2/T^*`; its dual
:math:`\min\{\mathbf 1^Ty: y^Tv_S\ge a_S\ \forall S\}` gives the certificate :math:`(k-1)^2/\mathbf 1^Ty`
for any feasible y.  Averaging an optimal t over the permutations of the inputs keeps :math:`a^Tt`
and makes :math:`M = \alpha I + \beta J`, which attains the bound: the symmetrised channel reports a
size-s subset with probability :math:`u_s = \sum_{|S|=s} t_S\,\mathbf 1^Tv_S/k`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import optimize

from ldpopt.decision.polytope import scaled_rows, subset_rows

#: a subset size keeps its weight when above this: HiGHS' default primal feasibility tolerance is
#: 1e-7 on t, and a size's weight sums t h / k over its columns, so weights below 1e-9 are
#: solver noise on sizes the optimum does not use
_WEIGHT_FLOOR = 1e-9


class LPOptimum(NamedTuple):
    trace_bound: float  # T*, the LP value
    dual: np.ndarray  # feasible y (k,)
    size_weights: dict[int, float]  # u_s of the symmetrised optimum
    status: int
    message: str


def column_gains(rows: np.ndarray, c: float) -> tuple[np.ndarray, np.ndarray]:
    """The rescaled columns v_S (n, k) and their gains a_S."""
    v = scaled_rows(rows, c)
    k = rows.shape[1]
    h = v.sum(axis=1)
    return v, (k * np.sum(v * v, axis=1) - h * h) / h


def solve(k: int, c: float) -> LPOptimum:
    rows = subset_rows(k)
    v, a = column_gains(rows, c)
    res = optimize.linprog(
        -a,
        A_eq=v.T,
        b_eq=np.ones(k),
        bounds=(0, None),
        method="highs",
    )  # HiGHS' default tolerances: tighter ones (1e-10) stall at k >= 14, eps = 4 (status 4); the
    # bound is re-derived from the dual with its violation removed, so they affect tightness only
    if res.status != 0:
        return LPOptimum(np.nan, np.full(k, np.nan), {}, int(res.status), str(res.message))
    y = -np.asarray(res.eqlin.marginals, dtype=float)
    # make y exactly dual feasible: y + delta * 1 raises y.v_S by delta * 1.v_S >= delta * 1
    # (every v_S has an entry 1), so delta = max violation restores every constraint
    slack = v @ y - a
    y = y + max(0.0, float(-slack.min()))
    t = np.asarray(res.x, dtype=float)
    h = v.sum(axis=1)
    sizes = rows.sum(axis=1)
    u = np.bincount(sizes, weights=t * h / k, minlength=k + 1)
    weights = {int(s): float(u[s]) for s in np.flatnonzero(u > _WEIGHT_FLOOR)}
    total = sum(weights.values())
    weights = {s: w / total for s, w in weights.items()}
    return LPOptimum(float(-res.fun), y, weights, 0, str(res.message))
