"""``method="spr"``: the Sort-Partition-Randomize dynamic program (:func:`ldpopt.optimal_mechanism`),
for the f-divergence objective between two distributions (any m).

The SPR optimum is a partition of the inputs with randomized response on its blocks: the maximal
channel with one output per block, all of the same weight.
"""

from __future__ import annotations

import numpy as np

from ldpopt.decision.objectives import FDivergenceObjective
from ldpopt.decision.problem import Task
from ldpopt.decision.result import Solution
from ldpopt.spr.solve import optimal_mechanism

__all__ = ["solve"]


def solve(task: Task) -> Solution:
    """The SPR partition as a maximal channel."""
    obj, c0 = task.obj, task.c0
    if not isinstance(obj, FDivergenceObjective):
        raise ValueError("method='spr' applies only to the f-divergence objective between two distributions")
    res = optimal_mechanism(obj.p0, obj.p1, task.eps, obj.divergence)
    m = obj.num_inputs
    assert res.partition is not None  # the SPR solvers always return their partition
    blocks = list(res.partition)
    if len(blocks) < 2:  # no information can be gained: any channel is optimal, return RR
        rows = np.eye(m, dtype=bool)
    else:
        rows = np.zeros((len(blocks), m), dtype=bool)
        for j, b in enumerate(blocks):
            rows[j, list(b)] = True
    w = np.full(rows.shape[0], 1.0 / (1.0 + (rows.shape[0] - 1) * c0))
    return Solution(rows, w, None, "spr", res.status, f"optimal (SPR dynamic program: {res.message})")
