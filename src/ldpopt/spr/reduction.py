r"""The likelihood-ratio reduction and the block sums every SPR solver shares.

* :func:`likelihood_ratio_reduction` / :func:`_reduce`: sort the alphabet by
  :math:`P_0/P_1`, drop symbols with zero mass under both, merge exactly tied ratios (SPR
  Section 2, "reduction of ties") - one reduction for :func:`ldpopt.optimal_mechanism`,
  :func:`ldpopt.sweep`, the compiled solvers and ``joint_range``;
* :class:`_Prefix`: compensated prefix and suffix sums of p, q and p - q, so the sums
  :math:`\Delta P, \Delta Q, \Delta P - \Delta Q` of any block (eq. 31) cost O(1) and keep
  their precision (vectorised over the block starts); ``_kernels.prefix_table`` holds the
  same numbers for the compiled solvers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ldpopt._validation import check_labelled_pair

__all__ = ["LRReduction", "likelihood_ratio_reduction", "compensated_prefix", "compensated_prefix_diff"]

#: keys closer than this (relative, on the log-ratio) are ordered/merged with exact rational arithmetic
_NEAR_TIE_RTOL = 1e-9
#: a block's difference from the sums of p - q is kept within this times (dP + dQ) of dP - dQ
#: (dP and dQ are each within ~2 ulp, so the true difference is within ~4 ulp of dP - dQ)
_DIFF_CLIP = 8 * 2.0**-52


@dataclass(frozen=True)
class LRReduction:
    """The reduced, strictly LR-sorted alphabet (SPR Section 2, "reduction of ties").

    Attributes
    ----------
    p, q : ndarray
        Reduced distributions, :math:`p_1/q_1 < \\dots < p_k/q_k` (``q = 0`` meaning +inf).
    classes : tuple of tuple of int
        Original symbols merged into each reduced symbol (ascending indices).
    dropped : tuple of int
        Original symbols with zero mass under both distributions.
    k_original : int
    """

    p: np.ndarray
    q: np.ndarray
    classes: tuple
    dropped: tuple
    k_original: int

    @property
    def k(self) -> int:
        """Size of the reduced alphabet."""
        return len(self.classes)

    def lift_blocks(self, cuts: list[tuple[int, int]]) -> tuple:
        """Map reduced intervals ``[a, b)`` to blocks of original symbols; dropped symbols join block 0."""
        blocks = []
        for j, (a, b) in enumerate(cuts):
            members = [i for cls in self.classes[a:b] for i in cls]
            if j == 0:
                members.extend(self.dropped)
            blocks.append(tuple(sorted(members)))
        return tuple(blocks)


def _exact_ratio_key(p: float, q: float) -> tuple[int, Fraction]:
    if q == 0.0:
        return (1, Fraction(0))
    return (0, Fraction(p) / Fraction(q))


def likelihood_ratio_reduction(p0: Any, p1: Any, normalize: bool = False) -> LRReduction:
    """Sort by :math:`P_0/P_1`, drop symbols with zero mass under both, merge exactly tied ratios.

    Sorting uses :math:`\\log P_0 - \\log P_1` (stable for probabilities down to subnormals);
    runs of keys within ``1e-9`` relative are re-sorted and merged with exact rational
    comparison of the float inputs, so ties are merged exactly and never by rounding.
    """
    u, v, _ = check_labelled_pair(p0, p1, normalize=normalize)
    return _reduce(u, v)


def _reduce(u: np.ndarray, v: np.ndarray) -> LRReduction:
    """The reduction of validated distributions ``u, v`` (every solver's, single or batched).

    When no two adjacent sorted log-ratios are within ``_NEAR_TIE_RTOL``, every class is one
    symbol and the reduction is the (vectorised) sort itself; otherwise the runs of near-tied
    keys are ordered and merged with exact rational comparisons (:func:`_reduce_exact`).
    """
    keep = (u > 0) | (v > 0)
    idx = np.flatnonzero(keep)
    with np.errstate(divide="ignore", invalid="ignore"):
        key = np.log(u[idx]) - np.log(v[idx])  # -inf for p = 0, +inf for q = 0
        order = idx[np.argsort(key, kind="stable")]
        skey = np.sort(key, kind="stable")
        a, b = skey[:-1], skey[1:]
        finite = np.isfinite(a) & np.isfinite(b)
        scale = np.maximum(1.0, np.maximum(np.abs(a), np.abs(b)))
        near = (a == b) | (finite & (np.abs(b - a) <= _NEAR_TIE_RTOL * np.where(finite, scale, 1.0)))
    if idx.size == 0 or np.any(near):
        return _reduce_exact(u, v)
    return LRReduction(
        p=u[order].astype(float),
        q=v[order].astype(float),
        classes=tuple((int(i),) for i in order),
        dropped=tuple(int(i) for i in np.flatnonzero(~keep)),
        k_original=int(u.shape[0]),
    )


def _reduce_exact(u: np.ndarray, v: np.ndarray) -> LRReduction:
    """The reduction with every run of (near-)tied keys ordered and merged exactly."""
    k0 = u.shape[0]
    keep = (u > 0) | (v > 0)
    dropped = tuple(int(i) for i in np.flatnonzero(~keep))
    idx = np.flatnonzero(keep)
    with np.errstate(divide="ignore"):
        key = np.log(u[idx]) - np.log(v[idx])  # -inf for p = 0, +inf for q = 0
    order = idx[np.argsort(key, kind="stable")]
    skey = np.sort(key, kind="stable")
    # split the sorted list into runs of (near-)equal keys; each run is ordered exactly
    classes: list[list[int]] = []
    start = 0
    n = order.shape[0]
    while start < n:
        end = start + 1
        while end < n and _near(skey[end - 1], skey[end]):
            end += 1
        run = [int(i) for i in order[start:end]]
        if len(run) == 1:
            classes.append(run)
        else:
            run.sort(key=lambda i: (_exact_ratio_key(float(u[i]), float(v[i])), i))
            prev = None
            for i in run:
                kk = _exact_ratio_key(float(u[i]), float(v[i]))
                if prev is not None and kk == prev:
                    classes[-1].append(i)
                else:
                    classes.append([i])
                prev = kk
        start = end
    cls = tuple(tuple(sorted(c)) for c in classes)
    p = np.array([math.fsum(u[list(c)].tolist()) for c in cls]) if cls else np.zeros(0)
    q = np.array([math.fsum(v[list(c)].tolist()) for c in cls]) if cls else np.zeros(0)
    return LRReduction(p=p, q=q, classes=cls, dropped=dropped, k_original=k0)


def _near(a: float, b: float) -> bool:
    if a == b:
        return True
    if math.isinf(a) or math.isinf(b):
        return False
    return abs(b - a) <= _NEAR_TIE_RTOL * max(1.0, abs(a), abs(b))


# ---------------------------------------------------------------------------------------------
# Compensated block sums (eq. 31)
# ---------------------------------------------------------------------------------------------
def compensated_prefix(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Prefix sums as (hi, lo) pairs (Neumaier), so interval sums keep full precision."""
    n = x.shape[0]
    hi = np.zeros(n + 1)
    lo = np.zeros(n + 1)
    s = 0.0
    comp = 0.0
    for i in range(n):
        v = float(x[i])
        t = s + v
        if abs(s) >= abs(v):
            comp += (s - t) + v
        else:
            comp += (v - t) + s
        s = t
        hi[i + 1] = s
        lo[i + 1] = comp
    return hi, lo


def compensated_prefix_diff(p: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Prefix sums of p - q as (hi, lo) pairs: Neumaier summation of p[i] and -q[i] in turn.

    hi + lo is the exact prefix sum to ~n ulp^2 of the masses summed, so the difference of a
    block (``_Prefix.sums``) keeps about one ulp of itself even where dP and dQ nearly cancel;
    ``dP - dQ`` from the separate sums would carry ~ulp (dP + dQ).
    """
    # the same Neumaier steps over p[0], -q[0], p[1], -q[1], ...; the prefix after each pair
    hi, lo = compensated_prefix(np.column_stack((p, -np.asarray(q, dtype=float))).ravel())
    return hi[::2].copy(), lo[::2].copy()


class _Prefix:
    """Interval sums of p and q in O(1) (eq. 31), accurate for tiny blocks.

    Compensated (hi, lo) prefix AND suffix sums are kept; a block [a, b) is summed from the side
    whose partial sums are smaller (prefix when P_b <= S_a, else suffix), so blocks at either end
    of the likelihood-ratio order, where extreme ratios live, keep full relative precision even
    with masses near 1e-300.  A sum is never below its largest endpoint term, which keeps
    rounding from producing a zero or negative mass.
    """

    def __init__(self, p: np.ndarray, q: np.ndarray):
        self.p = np.asarray(p, float)
        self.q = np.asarray(q, float)
        self.P = compensated_prefix(self.p)
        self.Q = compensated_prefix(self.q)
        self.SP = _suffix(self.p)
        self.SQ = _suffix(self.q)
        self.D = compensated_prefix_diff(self.p, self.q)
        hi, lo = compensated_prefix_diff(self.p[::-1], self.q[::-1])
        self.SD = (hi[::-1].copy(), lo[::-1].copy())

    @staticmethod
    def _interval(x, pre, suf, a, b):
        ph, pl = pre
        sh, sl = suf
        from_prefix = (ph[b] - ph[a]) + (pl[b] - pl[a])
        from_suffix = (sh[a] - sh[b]) + (sl[a] - sl[b])
        use_prefix = ph[b] <= sh[a]
        total = np.where(use_prefix, from_prefix, from_suffix)
        floor = np.maximum(x[a], x[b - 1])
        return np.maximum(total, floor)

    def sums(self, a, b):
        """(dP, dQ, dP - dQ) over reduced symbols a..b-1 (arrays allowed).

        The difference comes from the compensated sums of p - q, on the side from which dP is
        summed, kept within ``_DIFF_CLIP (dP + dQ)`` of ``dP - dQ``: about one ulp of itself
        where dP and dQ nearly cancel, never worse than ``dP - dQ`` for a tiny block next to a
        side whose compensation (~n ulp^2 times its mass) is not negligible.
        """
        a = np.asarray(a)
        dp = self._interval(self.p, self.P, self.SP, a, b)
        dq = self._interval(self.q, self.Q, self.SQ, a, b)
        (dh, dl), (sdh, sdl) = self.D, self.SD
        use_prefix = self.P[0][b] <= self.SP[0][a]
        dd = np.where(use_prefix, (dh[b] - dh[a]) + (dl[b] - dl[a]), (sdh[a] - sdh[b]) + (sdl[a] - sdl[b]))
        plain = dp - dq
        e = _DIFF_CLIP * (dp + dq)
        return dp, dq, np.minimum(np.maximum(dd, plain - e), plain + e)


def _suffix(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Compensated suffix sums: S[i] = sum_{j >= i} x[j], S[n] = 0."""
    hi, lo = compensated_prefix(x[::-1])
    return hi[::-1].copy(), lo[::-1].copy()
