r"""``method="direct"``: the LP over channels X -> A, decomposed into extreme rows (any m).

Composing a channel with its decision rule gives an :math:`\varepsilon`-LDP channel from X to the
actions with the same risks, so the optimum is a polynomial LP over such channels
(:func:`~ldpopt.decision.lp.channel_lp`).  Each of its columns is split into extreme rows (the layer
cake of :func:`~ldpopt.decision.polytope.decompose`) and the pair LP is re-solved over those
columns, which returns a maximal channel with a basic optimal support.
"""

from __future__ import annotations

import numpy as np

from ldpopt.decision import lp
from ldpopt.decision.methods._linear import LinearData, linear_data
from ldpopt.decision.polytope import decompose, polish_weights
from ldpopt.decision.problem import Task
from ldpopt.decision.result import Solution

__all__ = ["solve"]


def solve(task: Task) -> Solution:
    """The channel LP over X -> A, then the pair LP over the extreme rows of its columns."""
    data = linear_data(task.problem, task.risk)
    c0 = task.c0
    W, _, u, prior, status, message = lp.channel_lp(c0, B=data.B, P=data.P, L=data.L)
    if status != 0:
        return Solution.failed(data.num_inputs, "direct", status, message)
    res = _resolve_on_extreme_rows(data, W, c0)
    if res.status != 0:  # pragma: no cover - the decomposition is feasible by construction
        return Solution.failed(data.num_inputs, "direct", res.status, res.message)
    cert = data.certificate(u, prior, c0)
    rows, w, rule = lp.merge_pairs(res.rows, res.actions, res.z, data.num_actions)
    if not data.minimax:
        w = polish_weights(rows, w, c0)
    return Solution(
        rows, w, rule, "direct", 0, "optimal (LP over channels X -> A, decomposed into extreme rows)", cert
    )


def _resolve_on_extreme_rows(data: LinearData, W: np.ndarray, c0: float) -> lp.PairLP:
    """The pair LP over the extreme-row decomposition of every decision column of ``W`` (exact up to
    the LP tolerance); randomized-response columns for every action are added only if it fails."""
    m, K = data.num_inputs, data.num_actions
    rows, _, acts = decompose(W, c0)
    keep = ~(rows.all(axis=1) | ~rows.any(axis=1))
    rows, acts = _distinct_pairs(rows[keep], acts[keep])
    res = data.solve_pairs(rows, acts, c0)
    if res.status != 0:
        eye = np.eye(m, dtype=bool)
        rows, acts = _distinct_pairs(
            np.vstack([rows, np.repeat(eye, K, axis=0)]), np.concatenate([acts, np.tile(np.arange(K), m)])
        )
        res = data.solve_pairs(rows, acts, c0)
    return res


def _distinct_pairs(rows: np.ndarray, acts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (subset, action) columns without repeats, in order of first appearance."""
    first: dict = {}
    for i, (r, a) in enumerate(zip(rows, acts, strict=False)):
        first.setdefault((r.tobytes(), int(a)), i)
    idx = np.array(sorted(first.values()), dtype=int)
    return rows[idx], acts[idx]
