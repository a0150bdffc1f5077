r"""The reference for the speed benchmarks: the SPR dynamic program written the paper's way.

SPR paper, Prop. 3.3 / Algorithm 1 and Appendix E: after sorting by likelihood ratio, the
(k+1) x (k+1) interval-score matrix :math:`\mu[t+1:i]` (eq. 31) is built with one broadcast,
and every block count s costs one vectorised NumPy step over the whole matrix,

.. math:: F[s, i] = \max_t \; F[s-1, t] + \mu[t+1 : i],

(``argmax`` along the columns, then a gather), followed by the traceback.  O(l k^2) time,
O(k^2) memory.  It is deliberately an honest stand-in for the paper's code, not a Python loop.
"""

from __future__ import annotations

import math

import numpy as np


def _kl_perspective(x, y):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x > 0, x * np.log(x / y), 0.0)


def spr_dp_numpy(p0, p1, eps: float, max_outputs: int | None = None):
    """Optimal KL utility of an eps-LDP mechanism by the vectorised O(l k^2) program.

    Returns ``(value, blocks)`` with ``blocks`` a list of lists of original indices.
    Symbols are sorted by the likelihood ratio; exact ties are not merged (they do not change
    the optimum).  Only the KL utility is implemented (the Figure-1 workload).
    """
    p0 = np.asarray(p0, float)
    p1 = np.asarray(p1, float)
    with np.errstate(divide="ignore"):
        order = np.argsort(np.log(p0) - np.log(p1), kind="stable")
    k = p0.shape[0]
    l = k if max_outputs is None else min(max_outputs, k)
    P = np.concatenate(([0.0], np.cumsum(p0[order])))
    Q = np.concatenate(([0.0], np.cumsum(p1[order])))
    E = math.exp(eps)
    # mu[t, i] = g(1 + (e^eps - 1) (P_i - P_t), 1 + (e^eps - 1) (Q_i - Q_t)) for t < i   (eq. 31)
    x = 1.0 + (E - 1.0) * (P[None, :] - P[:, None])
    y = 1.0 + (E - 1.0) * (Q[None, :] - Q[:, None])
    mu = _kl_perspective(x, y)
    mu[np.tril_indices(k + 1)] = -np.inf  # only t < i are blocks
    F = np.full((l + 1, k + 1), -np.inf)
    arg = np.zeros((l + 1, k + 1), dtype=np.int64)
    F[1] = mu[0]
    cols = np.arange(k + 1)
    for s in range(2, l + 1):
        A = F[s - 1][:, None] + mu  # A[t, i] = F[s-1, t] + mu[t+1 : i]
        arg[s] = np.argmax(A, axis=0)
        F[s] = A[arg[s], cols]
    values = F[1:, k] / (E + np.arange(l))  # s = 1..l: divide by e^eps + s - 1  (eq. 30)
    s_star = int(np.argmax(values)) + 1
    blocks, i = [], k
    for s in range(s_star, 1, -1):
        t = int(arg[s, i])
        blocks.append(order[t:i].tolist())
        i = t
    blocks.append(order[0:i].tolist())
    blocks.reverse()
    return float(values[s_star - 1]), blocks
