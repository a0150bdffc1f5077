"""``method="colgen"``: column generation with exact pricing, for any m (:mod:`ldpopt.decision.lp`).

Applies to the Bayes and minimax risks of a decision problem and to objectives with linear pieces.
The result carries the dual certificate; ``max_iter``/``time_limit`` stop early with status 1.
"""

from __future__ import annotations

from ldpopt.decision import lp
from ldpopt.decision.methods._linear import linear_data
from ldpopt.decision.polytope import polish_weights
from ldpopt.decision.problem import Task
from ldpopt.decision.result import Solution

__all__ = ["solve"]


def solve(task: Task) -> Solution:
    """Column generation over (subset, action) columns, priced exactly over all subsets."""
    data = linear_data(task.problem, task.risk)
    c0 = task.c0
    res = lp.column_generation(
        c0, B=data.B, P=data.P, L=data.L, max_iter=task.max_iter, time_limit=task.time_limit
    )
    if res.rows.shape[0] == 0:
        return Solution.failed(data.num_inputs, "colgen", res.status or 4, res.message, res.iterations)
    cert = data.certificate(res.u, res.prior, c0)
    rows, w, rule = lp.merge_pairs(res.rows, res.actions, res.z, data.num_actions)
    if not data.minimax:
        w = polish_weights(rows, w, c0)
    msg = f"{res.message}; {res.iterations} rounds, {res.columns} columns in the master"
    return Solution(rows, w, rule, "colgen", res.status, msg, cert, res.iterations)
