"""``method="enumerate"``: the LP over all :math:`2^m-2` subsets (m <= 18) with HiGHS.

A row-additive objective is linear in the weights of the subsets; the minimax risk is linear in the
(subset, action) pairs plus an epigraph variable, so its LP has :math:`(2^m-2)|A|` columns.
"""

from __future__ import annotations

import numpy as np

from ldpopt.decision import lp
from ldpopt.decision.methods._linear import linear_data
from ldpopt.decision.objectives import RowAdditiveObjective
from ldpopt.decision.polytope import ENUM_MAX_M, polish_weights, scaled_rows, subset_rows
from ldpopt.decision.problem import DecisionProblem, Task
from ldpopt.decision.result import Solution, certificate

__all__ = ["solve", "ENUM_MAX_PAIRS"]

#: full minimax enumeration is limited to this many (subset, action) columns
ENUM_MAX_PAIRS = 2**21


def solve(task: Task) -> Solution:
    """The optimum over all subsets (all (subset, action) pairs for the minimax risk)."""
    m = task.num_inputs
    if m > ENUM_MAX_M:
        raise ValueError(
            f"full enumeration is limited to m <= {ENUM_MAX_M} (2^m - 2 subsets), got m={m}; use "
            "method='colgen' or method='direct' (decision problems), or a symmetry group (method='symmetry')"
        )
    if task.risk == "minimax":
        return _minimax(task.problem, task.c0)
    return _row_additive(task.obj, task.c0)


def _row_additive(obj: RowAdditiveObjective, c0: float) -> Solution:
    m = obj.num_inputs
    R = subset_rows(m)
    V = scaled_rows(R, c0)
    phi = obj.contributions(V)
    if not np.all(np.isfinite(phi)):
        raise ValueError(f"objective {obj.name!r} is infinite on some extreme row; the LP is not defined")
    sign = 1.0 if obj.sense == "min" else -1.0
    costs = sign * phi
    k = lp.unit_exponent(costs)
    res = lp.solve_pair_lp(R, np.zeros(R.shape[0], dtype=int), c0, costs=np.ldexp(costs, -k))
    if res.status != 0:
        return Solution.failed(m, "enumerate", res.status, res.message)
    u = np.ldexp(res.u, k)
    rcmin = float((costs - V @ u).min())
    cert = certificate(u, None, rcmin, c0, sign, float(np.abs(costs).max()))
    w = polish_weights(res.rows, res.z, c0)
    return Solution(res.rows, w, None, "enumerate", 0, "optimal (HiGHS over all 2^m - 2 subsets)", cert)


def _minimax(problem: DecisionProblem, c0: float) -> Solution:
    m, A = problem.num_inputs, problem.num_actions
    if (2**m - 2) * A > ENUM_MAX_PAIRS:
        raise ValueError(
            f"full enumeration of the minimax LP needs (2^m - 2) * A = {(2**m - 2) * A} columns, "
            f"above the limit {ENUM_MAX_PAIRS} (m <= {ENUM_MAX_M}); use method='colgen' or method='direct'"
        )
    data = linear_data(problem, "minimax")
    R = subset_rows(m)
    rows = np.repeat(R, A, axis=0)
    acts = np.tile(np.arange(A), R.shape[0])
    res = data.solve_pairs(rows, acts, c0)
    if res.status != 0:
        return Solution.failed(m, "enumerate", res.status, res.message)
    cert = data.certificate(res.u, res.prior, c0)
    rws, w, rule = lp.merge_pairs(res.rows, res.actions, res.z, A)
    return Solution(rws, w, rule, "enumerate", 0, "optimal (HiGHS over all (subset, action) pairs)", cert)
