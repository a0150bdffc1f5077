r"""``method="vertex"``: the best vertex of :math:`\mathcal S_{\mathcal X,\varepsilon}` (m <= 5) or of the
reduced polytope of a symmetry group, by vertex enumeration with pycddlib (the extra ``ldpopt[vertex]``).

A concave objective (to be minimised; convex to be maximised) attains its optimum at a vertex
(Remark 3.11): this is the method for a :class:`~ldpopt.decision.objectives.ChannelObjective`, and an
independent check of the LPs for row-additive objectives.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ldpopt.decision.objectives import support_value
from ldpopt.decision.polytope import VERTEX_MAX_M, cdd_vertices, polish_weights, scaled_rows, subset_rows
from ldpopt.decision.problem import Task
from ldpopt.decision.result import Solution
from ldpopt.decision.symmetry import check_invariance, reduced_vertices

__all__ = ["solve"]


def solve(task: Task) -> Solution:
    """Evaluate the objective at every vertex and keep the best."""
    obj, c0, group = task.obj, task.c0, task.group
    if group is not None:
        if task.check_invariance:
            check_invariance(obj, group, c0)
        candidates = reduced_vertices(group, c0)
    else:
        candidates = _polytope_vertices(obj.num_inputs, c0)
    rows, w = _best(obj, candidates, c0)
    where = "the reduced polytope S^G" if group is not None else "S_(X,eps)"
    return Solution(
        rows,
        polish_weights(rows, w, c0),
        None,
        "vertex",
        0,
        f"optimal (best of {len(candidates)} vertices of {where}, pycddlib)",
    )


def _polytope_vertices(m: int, c0: float) -> list[tuple[np.ndarray, np.ndarray]]:
    """Every vertex of S_(X,eps) as (support rows, scaled weights)."""
    if m > VERTEX_MAX_M:
        raise ValueError(
            f"vertex enumeration of S_(X,eps) is limited to m <= {VERTEX_MAX_M}, got m={m}; "
            "pass a symmetry group (group=...) or use an LP method"
        )
    R = subset_rows(m)
    candidates = []
    for v in cdd_vertices(scaled_rows(R, c0).T, np.ones(m)):
        sup = np.flatnonzero(v > 1e-12 * v.max())
        candidates.append((R[sup], v[sup]))
    return candidates


def _best(obj: Any, candidates: list, c0: float) -> tuple[np.ndarray, np.ndarray]:
    """The candidate (rows, weights) with the best objective (the first one on ties)."""
    best: tuple[float, np.ndarray, np.ndarray] | None = None
    for rows, w in candidates:
        val = support_value(obj, rows, w, c0)
        if best is None or (val < best[0] if obj.sense == "min" else val > best[0]):
            best = (val, rows, w)
    assert best is not None  # the polytope is non-empty, so there is at least one vertex
    return best[1], best[2]
