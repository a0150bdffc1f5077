r"""The readable dynamic program of the SPR paper: interval scores, partition values, Prop. 3.3.

This is the specification the compiled solvers (:mod:`ldpopt.spr._fast`) reproduce exactly:
every score is ``FDivergence.perspective`` (numpy) of the block sums of
:class:`~ldpopt.spr.reduction._Prefix`, rescaled by :math:`e^{-\varepsilon}` (eq. 31),

.. math:: \mu'[a:b] = g\big(c + A\Delta P,\ c + A\Delta Q;\ A(\Delta P - \Delta Q)\big),
   \qquad \text{value} = \frac{\sum_t \mu'(B_t)}{1+(s-1)c},

and :func:`_dp_readable` is the O(l k^2) program of Prop. 3.3 with its traceback
(Algorithm 1).  ``optimal_mechanism(method="dp")`` runs it.
"""

from __future__ import annotations

import math

import numpy as np

from ldpopt._numerics import rescale
from ldpopt.divergences import FDivergence, get_divergence
from ldpopt.spr import _policy
from ldpopt.spr.reduction import _Prefix

__all__ = ["interval_scores", "spr_value"]


def interval_scores(
    p: np.ndarray, q: np.ndarray, eps: float, divergence: str | FDivergence, starts, end: int
) -> np.ndarray:
    r"""Rescaled interval scores :math:`\mu'[a:b]` for blocks ``[a, end)`` of the sorted reduced alphabet.

    Readable reference used by the dynamic program and the tests (eq. 31, rescaled by
    :math:`e^{-\varepsilon}`).
    """
    div = get_divergence(divergence)
    pre = _Prefix(np.asarray(p, float), np.asarray(q, float))
    c, A, lf = rescale(eps)
    return _scores(pre, div, c, A, np.asarray(starts), end, lf)


def _scores(
    pre: _Prefix,
    div: FDivergence,
    c: float,
    A: float,
    starts: np.ndarray,
    end: int,
    log_floor: float = -math.inf,
) -> np.ndarray:
    dp, dq, dd = pre.sums(starts, end)
    return div.perspective(c + A * dp, c + A * dq, A * dd, log_floor=log_floor)


def _dp_readable(p: np.ndarray, q: np.ndarray, eps: float, div: FDivergence, l: int, table=None):
    """The O(l k^2) dynamic program of Prop. 3.3 with traceback (Algorithm 1), O(l k) memory.

    ``F[s, i]`` is the best raw (rescaled) score of a partition of the first ``i`` sorted
    symbols into exactly ``s`` blocks; ``parent[s, i]`` the start of its last block.  Ties
    are broken towards the smallest split point and the smallest block count.  ``table``
    (optional) holds every block's score, packed as ``_fast.score_table`` (the Renyi sums of
    ``solve._solve_power_far``); by default the scores are the divergence's.
    Returns (raw value, list of (start, end) intervals).
    """
    k = p.shape[0]
    c, A, lf = rescale(eps)
    pre = _Prefix(p, q)
    if _policy.start(k, l, c) == _policy.START_SINGLE:  # one block: nothing to choose
        one = _scores(pre, div, c, A, np.zeros(1, dtype=np.int64), k, lf) if table is None else table[-k:]
        return float(one[0]) / 1.0, [(0, k)]
    F = np.full((l + 1, k + 1), -np.inf)
    parent = np.zeros((l + 1, k + 1), dtype=np.int64)
    for i in range(1, k + 1):
        if table is None:
            sc = _scores(pre, div, c, A, np.arange(i), i, lf)  # sc[t] = mu'[t : i)
        else:
            sc = table[i * (i - 1) // 2 : i * (i + 1) // 2]
        F[1, i] = sc[0]
        smax = min(l, i)
        if smax >= 2:
            with np.errstate(invalid="ignore"):
                cand = F[1:smax, :i] + sc[None, :]  # row r: s = r + 2, last block [t, i)
            t_idx = np.arange(i)[None, :]
            s_idx = np.arange(2, smax + 1)[:, None]
            cand = np.where(t_idx >= s_idx - 1, cand, -np.inf)
            best = np.argmax(cand, axis=1)
            F[2 : smax + 1, i] = cand[np.arange(smax - 1), best]
            parent[2 : smax + 1, i] = best
    ratios = np.array([F[s, k] / (1.0 + (s - 1) * c) for s in range(1, l + 1)])
    s_star = int(np.argmax(ratios)) + 1
    cuts = []
    i = k
    for s in range(s_star, 1, -1):
        t = int(parent[s, i])
        cuts.append((t, i))
        i = t
    cuts.append((0, i))
    cuts.reverse()
    return float(ratios[s_star - 1]), cuts


def spr_value(
    p: np.ndarray, q: np.ndarray, eps: float, divergence: str | FDivergence, cuts: list[tuple[int, int]]
) -> float:
    """Raw utility of the SPR mechanism of reduced intervals ``cuts`` (eq. 30, rescaled)."""
    div = get_divergence(divergence)
    c, A, lf = rescale(eps)
    pre = _Prefix(np.asarray(p, float), np.asarray(q, float))
    total = 0.0
    for a, b in cuts:
        total += float(_scores(pre, div, c, A, np.array([a]), b, lf)[0])
    return total / (1.0 + (len(cuts) - 1) * c)
