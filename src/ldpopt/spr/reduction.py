r"""The likelihood-ratio reduction and the block sums every SPR solver shares.

* :func:`likelihood_ratio_reduction` / :func:`_reduce`: sort the alphabet by
  :math:`P_0/P_1`, drop symbols with zero mass under both, merge exactly tied ratios (SPR
  Section 2, "reduction of ties") - one reduction for :func:`ldpopt.optimal_mechanism`,
  :func:`ldpopt.sweep`, the compiled solvers and ``joint_range``;
* :class:`_Prefix`: compensated prefix and suffix sums of p, q and p - q, so the sums
  :math:`\Delta P, \Delta Q, \Delta P - \Delta Q` of any block (eq. 31) cost O(1) and keep
  their precision (vectorised over the block starts); ``_Prefix.table`` holds the
  same numbers for the compiled solvers.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
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
    members : ndarray of int
        Original symbols class by class, in likelihood-ratio order (ascending within a class):
        reduced symbol j merges ``members[starts[j]:starts[j + 1]]``.
    starts : ndarray of int
        Length k + 1, ``starts[0] = 0``, ``starts[k] = len(members)``.
    dropped : tuple of int
        Original symbols with zero mass under both distributions.
    k_original : int
    """

    p: np.ndarray
    q: np.ndarray
    members: np.ndarray
    starts: np.ndarray
    dropped: tuple
    k_original: int

    @property
    def k(self) -> int:
        """Size of the reduced alphabet."""
        return int(self.starts.shape[0]) - 1

    @cached_property
    def classes(self) -> tuple:
        """Original symbols merged into each reduced symbol (tuples of ascending indices)."""
        m, st = self.members.tolist(), self.starts.tolist()
        return tuple(tuple(m[st[j] : st[j + 1]]) for j in range(self.k))

    @cached_property
    def _lift_lists(self) -> tuple[list, list, list]:
        """``members``, ``starts`` and ``dropped`` as Python lists (the lift slices them per block)."""
        return self.members.tolist(), self.starts.tolist(), list(self.dropped)

    def lift_blocks(self, cuts: Sequence[tuple[int, int]]) -> tuple:
        """Map reduced intervals ``[a, b)`` to blocks of original symbols; dropped symbols join block 0.

        Each block lists its original symbols in ascending order.  Plain Python on the cached lists
        (a block of a few symbols sorts faster as a list than through numpy calls).
        """
        m, st, dropped = self._lift_lists
        blocks = [sorted(m[st[a] : st[b]]) for a, b in cuts]
        if blocks and dropped:
            blocks[0] = sorted(blocks[0] + dropped)
        return tuple(map(tuple, blocks))

    def lift_many(self, cut_sets: Iterable[Sequence[tuple[int, int]]]) -> list[tuple]:
        """``[self.lift_blocks(cuts) for cuts in cut_sets]``, each distinct block lifted once.

        The cells of a sweep repeat few blocks across the eps grid: every block ``[a, b)`` is
        sorted once (once more as the first block, which also holds the dropped symbols), equal
        blocks share one tuple, and a cut set given twice (the same object) one partition tuple.
        """
        m, st, dropped = self._lift_lists
        items = list(cut_sets)  # keeps every item alive while its id is a key
        by_id: dict[int, tuple] = {}
        caches: tuple[dict, dict] = ({}, {})  # blocks after the first, first blocks
        out = []
        for cuts in items:
            part = by_id.get(id(cuts))
            if part is None:
                blocks = []
                for j, (a, b) in enumerate(cuts):
                    cache = caches[j == 0]
                    block = cache.get((a, b))
                    if block is None:
                        members = m[st[a] : st[b]] + dropped if j == 0 else m[st[a] : st[b]]
                        block = cache[a, b] = tuple(sorted(members))
                    blocks.append(block)
                part = by_id[id(cuts)] = tuple(blocks)
            out.append(part)
        return out


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

    Vectorised: one sort of the log-ratios; only the runs of adjacent keys within
    ``_NEAR_TIE_RTOL`` of each other (:func:`_exact_runs`: usually none, a few at large k)
    are ordered and merged with exact rational comparisons, one run at a time.
    """
    keep = (u > 0) | (v > 0)
    idx = np.flatnonzero(keep)
    with np.errstate(divide="ignore", invalid="ignore"):
        key = np.log(u[idx]) - np.log(v[idx])  # -inf for p = 0, +inf for q = 0
        perm = np.argsort(key, kind="stable")
        skey = key[perm]
        a, b = skey[:-1], skey[1:]
        finite = np.isfinite(a) & np.isfinite(b)
        scale = np.maximum(1.0, np.maximum(np.abs(a), np.abs(b)))
        near = (a == b) | (finite & (np.abs(b - a) <= _NEAR_TIE_RTOL * np.where(finite, scale, 1.0)))
    members = idx[perm].astype(np.int64)
    new_class = np.ones(members.shape[0], dtype=bool)  # True where a reduced symbol starts
    merged = _exact_runs(u, v, near, members, new_class) if np.any(near) else {}
    starts = np.append(np.flatnonzero(new_class), members.shape[0]).astype(np.int64)
    first = members[starts[:-1]]
    p = u[first].astype(float)
    q = v[first].astype(float)
    for j, (pj, qj) in merged.items():
        p[j], q[j] = pj, qj
    return LRReduction(
        p=p,
        q=q,
        members=members,
        starts=starts,
        dropped=tuple(np.flatnonzero(~keep).tolist()),
        k_original=int(u.shape[0]),
    )


def _exact_runs(u, v, near, members, new_class) -> dict:
    """Order and merge every run of near-tied keys exactly, in place.

    A run is a maximal stretch of sorted positions whose adjacent keys are ``near``; its
    symbols are re-sorted by their exact ratio (then index) and symbols with equal ratios
    become one class (ascending indices), marked in ``new_class``.  Returns
    ``{class index: (fsum of p, fsum of q)}`` for the classes of more than one symbol.
    """
    edge = np.diff(np.concatenate(([0], near.astype(np.int8), [0])))
    run_starts = np.flatnonzero(edge == 1)  # near[s - 1] false, near[s] true: a run from s
    run_ends = np.flatnonzero(edge == -1) + 1  # ... to e (exclusive)
    sums: dict = {}
    for s0, e0 in zip(run_starts.tolist(), run_ends.tolist(), strict=True):
        run = sorted(members[s0:e0].tolist(), key=lambda i: (_exact_ratio_key(float(u[i]), float(v[i])), i))
        classes: list[list[int]] = []
        prev = None
        for i in run:
            kk = _exact_ratio_key(float(u[i]), float(v[i]))
            if prev is not None and kk == prev:
                classes[-1].append(i)
            else:
                classes.append([i])
            prev = kk
        pos = s0
        for c in classes:
            members[pos : pos + len(c)] = sorted(c)
            new_class[pos + 1 : pos + len(c)] = False
            pos += len(c)
        # class indices of the merged classes, once every earlier run has been marked
        sums[(s0, tuple(len(c) for c in classes))] = [
            (math.fsum(u[c].tolist()), math.fsum(v[c].tolist())) for c in classes
        ]
    out = {}
    class_of = np.cumsum(new_class) - 1
    for (s0, lens), vals in sums.items():
        pos = s0
        for n, pq in zip(lens, vals, strict=True):
            if n > 1:
                out[int(class_of[pos])] = pq
            pos += n
    return out


# ---------------------------------------------------------------------------------------------
# Compensated block sums (eq. 31)
# ---------------------------------------------------------------------------------------------
def compensated_prefix(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Prefix sums as (hi, lo) pairs (Neumaier), so interval sums keep full precision."""
    hi, lo = _neumaier_rows(np.asarray(x, dtype=float)[None, :])
    return hi[0], lo[0]


def _neumaier_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Neumaier prefix sums (hi, lo) of every row of ``x`` (shape (r, n) -> two (r, n + 1)).

    Vectorised and bit for bit Neumaier's loop ``t = s + v; comp += err(s, v, t); s = t``:
    ``hi`` is the sequential sum ``np.cumsum`` computes (``np.add.accumulate`` adds left to
    right along the axis, it never sums pairwise), every step's rounding error ``err``
    depends only on the step's own operands (``hi[i]``, ``x[i]``, ``hi[i + 1]``), and ``lo``
    is the sequential sum of those errors.  Both start from 0.0, as the loop does.
    """
    r, n = x.shape
    hi = np.zeros((r, n + 1))
    lo = np.zeros((r, n + 1))
    np.cumsum(x, axis=1, out=hi[:, 1:])
    hi += 0.0  # 0.0 + x[0] as the loop's first step (turns -0.0 into 0.0)
    s, t = hi[:, :-1], hi[:, 1:]
    err = np.where(np.abs(s) >= np.abs(x), (s - t) + x, (x - t) + s)
    np.cumsum(err, axis=1, out=lo[:, 1:])
    lo += 0.0
    return hi, lo


def _interleave(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """p[0], -q[0], p[1], -q[1], ...: the order in which the sums of p - q are accumulated."""
    x = np.empty(2 * p.shape[0])
    x[0::2] = p
    x[1::2] = -np.asarray(q, dtype=float)
    return x


def compensated_prefix_diff(p: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Prefix sums of p - q as (hi, lo) pairs: Neumaier summation of p[i] and -q[i] in turn.

    hi + lo is the exact prefix sum to ~n ulp^2 of the masses summed, so the difference of a
    block (``_Prefix.sums``) keeps about one ulp of itself even where dP and dQ nearly cancel;
    ``dP - dQ`` from the separate sums would carry ~ulp (dP + dQ).
    """
    # the same Neumaier steps over p[0], -q[0], p[1], -q[1], ...; the prefix after each pair
    hi, lo = compensated_prefix(_interleave(np.asarray(p, dtype=float), q))
    return hi[::2], lo[::2]


#: rows of the table of :class:`_Prefix` (``_Prefix.table``, the compiled kernels' ``pre``):
#: compensated prefix sums (hi, lo) of p and q, compensated suffix sums (hi, lo) of p and q,
#: p and q themselves (for the endpoint floor; entry k unused), compensated prefix and suffix
#: sums (hi, lo) of p - q
PH, PL, QH, QL, SPH, SPL, SQH, SQL, PX, QX, DH, DL, SDH, SDL = range(14)
PRE_ROWS = 14
#: up to this many symbols the six compensated sums of ``_Prefix`` run as one (6, 2k) batch (fewer
#: numpy calls for small k); above, one row at a time (fewer large temporaries)
_BATCH_MAX_K = 1 << 15


class _Prefix:
    """Interval sums of p and q in O(1) (eq. 31), accurate for tiny blocks.

    Compensated (hi, lo) prefix AND suffix sums are kept; a block [a, b) is summed from the side
    whose partial sums are smaller (prefix when P_b <= S_a, else suffix), so blocks at either end
    of the likelihood-ratio order, where extreme ratios live, keep full relative precision even
    with masses near 1e-300.  A sum is never below its largest endpoint term, which keeps
    rounding from producing a zero or negative mass.  Everything is vectorised (O(k) numpy);
    ``table`` holds the same numbers as one (PRE_ROWS, k + 1) array for the compiled kernels.
    """

    def __init__(self, p: np.ndarray, q: np.ndarray):
        self.p = np.asarray(p, float)
        self.q = np.asarray(q, float)
        k = self.p.shape[0]
        t = np.zeros((PRE_ROWS, k + 1))
        pr, qr = self.p[::-1], self.q[::-1]
        # the Neumaier sums of p, q, their reversals (suffix sums), and p - q forwards and
        # backwards as p[0], -q[0], p[1], -q[1], ...: (values, first table row, partial sums kept)
        specs = (
            (self.p, PH, slice(0, k + 1)),
            (self.q, QH, slice(0, k + 1)),
            (pr, SPH, slice(k, None, -1)),
            (qr, SQH, slice(k, None, -1)),
            (_interleave(self.p, self.q), DH, slice(0, None, 2)),
            (_interleave(pr, qr), SDH, slice(None, None, -2)),
        )
        if k <= _BATCH_MAX_K:
            # one (6, 2k) batch (short rows zero-padded: trailing zeros change none of their
            # first k + 1 partial sums); above, one row at a time (fewer large temporaries)
            rows = np.zeros((6, 2 * k))
            for r, (x, _, _) in enumerate(specs):
                rows[r, : x.shape[0]] = x
            hi, lo = _neumaier_rows(rows)
        for r, (x, row, keep) in enumerate(specs):
            h, l_ = (hi[r], lo[r]) if k <= _BATCH_MAX_K else compensated_prefix(x)
            t[row], t[row + 1] = h[keep], l_[keep]
        t[PX, :k] = self.p
        t[QX, :k] = self.q
        self.table = t
        self.P = (t[PH], t[PL])
        self.Q = (t[QH], t[QL])
        self.SP = (t[SPH], t[SPL])
        self.SQ = (t[SQH], t[SQL])
        self.D = (t[DH], t[DL])
        self.SD = (t[SDH], t[SDL])

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
