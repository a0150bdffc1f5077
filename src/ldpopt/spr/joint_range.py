r"""The joint range of binary-output :math:`\varepsilon`-LDP channels (SPR paper, Section 4, Figure 3).

For distributions :math:`p, q` on :math:`[k]` and an output budget :math:`\ell = 2` the joint range

.. math:: \mathcal R_2(p, q) = \{(Q^\top p, Q^\top q) : Q \in \mathcal Q_{\varepsilon, 2}\}

is determined by the pair :math:`(x, y) = (\langle Q^\top p, e_1\rangle, \langle Q^\top q, e_1\rangle)` of
probabilities of output 1 (the other coordinates are complements).  By Theorem 3.1 it is the convex hull
of the :math:`2(k-1) + 2` *SPR-induced candidates*: every LR-contiguous partition
:math:`(B_1, B_2) = ([1:j], [j+1:k])` of the likelihood-ratio sorted (reduced) alphabet with both
block-to-output assignments ``[1,2]`` (:math:`B_1\to 1`) and ``[2,1]`` (:math:`B_1\to 2`), plus the two
constant mechanisms at :math:`(0,0)` and :math:`(1,1)`.  With :math:`c = e^{-\varepsilon}`,
:math:`A = 1 - c`, the candidate with :math:`B_1 \to 1` sits at

.. math:: x = \frac{c + A\,P(B_1)}{1 + c}, \qquad y = \frac{c + A\,Q(B_1)}{1 + c}.

Extremality is decided exactly.  Every non-constant candidate is the image of :math:`(P(B), Q(B))`
under the same affine map :math:`z \mapsto (c + A z)/(1+c)`, which preserves extremality; in these
*normalised* coordinates the constants sit at :math:`(-t, -t)` and :math:`(1+t, 1+t)` with
:math:`t = 1/(e^\varepsilon - 1)`.  The normalised coordinates are exact rationals of the float inputs
(block masses are sums of floats), so the convex hull is computed with a floating-point orientation
filter and an exact :class:`fractions.Fraction` fallback for near-degenerate triples: collinear and
duplicate points are handled exactly, and a candidate on an edge of the hull is *not* extreme.
"""

from __future__ import annotations

import math
from dataclasses import KW_ONLY, dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any

import numpy as np

from ldpopt._numerics import rescale
from ldpopt._validation import check_eps, check_labelled_pair, is_integer
from ldpopt.mechanism import Mechanism, spr_mechanism
from ldpopt.spr.reduction import _reduce, compensated_prefix

__all__ = ["JointRange", "joint_range", "HULL_TOL"]

#: points farther than this outside the hull (in probability units) count as outside
HULL_TOL = 1e-12
#: relative size of the float orientation filter; smaller |cross| is re-decided exactly
_ORIENT_FILTER = 1e-12


@dataclass(frozen=True, eq=False)
class JointRange:
    r"""The SPR-induced candidates of :math:`\mathcal R_2(p, q)` and their convex hull (Theorem 3.1).

    Attributes
    ----------
    points : ndarray, shape (n, 2)
        ``points[i] = (P0-probability, P1-probability)`` of output 1 under candidate i;
        ``n = 2(k - 1) + 2`` with k the size of the reduced (tie-merged) alphabet.  Candidates are
        ordered by split point, assignment ``[1,2]`` before ``[2,1]``, followed by the constants
        ``[1]`` (at (1, 1)) and ``[2]`` (at (0, 0)).
    labels : tuple of str
        Figure-3 style labels, e.g. ``"{1,2} | {3,4,5} [1,2]"`` (1-based original symbols or the
        user's symbol labels; ``[a,b]`` means block 1 -> output a, block 2 -> output b).  Built on
        first access (O(k^2) characters in total); :meth:`label` gives one.
    partitions : tuple
        The blocks of each candidate (0-based original symbol indices, LR order); built on first
        access, :meth:`partition` gives one.
    assignments : tuple of tuple of int
        Output (1 or 2) of each block.
    is_extreme : ndarray of bool, shape (n,)
        True when the candidate is a vertex of the hull.  Coincident candidates share the verdict.
    hull : ndarray, shape (h, 2)
        Hull vertices in counter-clockwise order, starting at the lowest-leftmost one (h = 2 when the
        hull degenerates to a segment, e.g. ``p == q``).
    hull_indices : ndarray of int, shape (h,)
        Indices into ``points`` of the hull vertices (first of any coincident candidates).
    eps : float
    k : int
        Size of the original alphabet.
    max_outputs : int
        Always 2.
    """

    points: np.ndarray
    assignments: tuple
    is_extreme: np.ndarray
    hull: np.ndarray
    hull_indices: np.ndarray
    eps: float
    k: int
    max_outputs: int = 2
    _: KW_ONLY  # at most 8 positional fields; the rest by keyword
    symbol_labels: tuple | None = field(default=None, repr=False)
    #: reduced symbols (classes of original indices) in LR order, symbols without mass, split per candidate
    _classes: tuple = field(default=(), repr=False)
    _dropped: tuple = field(default=(), repr=False)
    _splits: tuple = field(default=(), repr=False)

    @cached_property
    def labels(self) -> tuple:
        """Figure-3 style label of every candidate."""
        return tuple(self.label(i) for i in range(self.num_candidates))

    @cached_property
    def partitions(self) -> tuple:
        """Blocks (original indices) of every candidate."""
        return tuple(self.partition(i) for i in range(self.num_candidates))

    def partition(self, i: int) -> tuple:
        """Blocks of candidate ``i``: two blocks in LR order, or one block for a constant."""
        j = self._splits[self._check_index(i)]
        if j < 0:
            return (tuple(range(self.k)),)
        b1 = sorted([x for cls in self._classes[:j] for x in cls] + list(self._dropped))
        b2 = sorted(x for cls in self._classes[j:] for x in cls)
        return (tuple(b1), tuple(b2))

    def label(self, i: int) -> str:
        """Label of candidate ``i``, e.g. ``"{1,2} | {3,4,5} [2,1]"``."""
        sym = self.symbol_labels

        def name(x: int) -> str:
            return str(x + 1) if sym is None else str(sym[x])

        blocks = " | ".join("{" + ",".join(name(x) for x in b) + "}" for b in self.partition(i))
        return f"{blocks} [{','.join(str(a) for a in self.assignments[int(i)])}]"

    def _check_index(self, i: int) -> int:
        i = int(i)
        if not 0 <= i < self.num_candidates:
            raise ValueError(f"i must be in range({self.num_candidates}), got i={i}")
        return i

    @property
    def num_candidates(self) -> int:
        """Number of SPR-induced candidates n."""
        return int(self.points.shape[0])

    @property
    def num_extreme(self) -> int:
        """Number of extreme candidates."""
        return int(np.count_nonzero(self.is_extreme))

    def mechanism(self, i: int) -> Mechanism:
        """The 2-output SPR mechanism of candidate ``i`` (column j = output j + 1)."""
        i = self._check_index(i)
        blocks = self.partition(i)
        assign = self.assignments[i]
        if len(blocks) == 1:
            m = np.zeros((self.k, 2))
            m[:, assign[0] - 1] = 1.0
            # one block per output: every input behind the used output, none behind the other
            part = (blocks[0], ()) if assign[0] == 1 else ((), blocks[0])
            return Mechanism(m, self.eps, labels=self.symbol_labels, partition=part, name="constant")
        order = blocks if assign == (1, 2) else blocks[::-1]
        return spr_mechanism(order, self.k, self.eps, labels=self.symbol_labels)

    def outside_distance(self, xy: Any) -> np.ndarray:
        r"""Signed distance of points ``xy`` (shape (m, 2)) outside the hull.

        For a polygon: the largest signed distance to an edge line (positive = outside, <= 0 inside;
        for a convex polygon this is > 0 exactly for points outside).  For a segment hull: the
        Euclidean distance to the segment.
        """
        pts = np.asarray(xy, dtype=float).reshape(-1, 2)
        return _outside_distance(self.hull, pts)

    def contains(self, xy: Any, tol: float = HULL_TOL) -> np.ndarray:
        """Boolean array: point within ``tol`` of the hull."""
        return self.outside_distance(xy) <= tol

    def __repr__(self) -> str:
        return (
            f"JointRange(k={self.k}, eps={self.eps!r}, candidates={self.num_candidates}, "
            f"extreme={self.num_extreme})"
        )


def joint_range(p0: Any, p1: Any, eps: float, max_outputs: int = 2, *, normalize: bool = False) -> JointRange:
    r"""SPR-induced candidate points of the binary-output joint range and their convex hull.

    Parameters
    ----------
    p0, p1 : array_like, dict or pandas Series
        Distributions on the same alphabet (dict/Series keys become the symbol labels).
    eps : float
        Privacy level > 0 (``math.inf``: deterministic channels).
    max_outputs : int
        Output budget; only ``2`` is supported (for l > 2 the range lives in 2(l-1) dimensions).
    normalize : bool
        Rescale p0/p1 to sum to 1.

    Returns
    -------
    JointRange

    Notes
    -----
    Symbols are sorted by :math:`P_0/P_1`, exact ties are merged and symbols with zero mass under
    both are dropped (they join block 1 in the labels); k below is the reduced size, as in the paper.
    Candidate :math:`B_1=[1:j]\to a,\ B_2\to b` lies at
    :math:`\big((c + A P_0(B_a'))/(1+c),\ (c + A P_1(B_a'))/(1+c)\big)` where :math:`B_a'` is the block
    sent to output 1 (Figure 3 of the SPR paper; Theorem 3.1 says the hull is the joint range).
    """
    u, v, sym = check_labelled_pair(p0, p1, normalize=normalize)
    eps = check_eps(eps)
    if not is_integer(max_outputs) or max_outputs != 2:
        raise ValueError(
            f"max_outputs must be 2 (for l > 2 the joint range is 2(l-1)-dimensional), "
            f"got max_outputs={max_outputs!r}"
        )
    red = _reduce(u, v)
    kr = red.k
    c, A, _ = rescale(eps)
    # t = c / A = 1/(e^eps - 1): offset of the constants in normalised coordinates
    t_exact = Fraction(0) if math.isinf(eps) else Fraction(c) / Fraction(A)

    # block masses: prefix (B1 = first j reduced symbols) and suffix (B2) masses, float and exact
    Ph, Pl = compensated_prefix(red.p)
    Qh, Ql = compensated_prefix(red.q)
    Pt = math.fsum(red.p.tolist())
    Qt = math.fsum(red.q.tolist())
    fr_p = [Fraction(float(x)) for x in red.p]
    fr_q = [Fraction(float(x)) for x in red.q]
    exact_P = [Fraction(0)]
    exact_Q = [Fraction(0)]
    for a, b in zip(fr_p, fr_q, strict=False):
        exact_P.append(exact_P[-1] + a)
        exact_Q.append(exact_Q[-1] + b)

    norm_f: list[tuple[float, float]] = []  # normalised float coordinates
    norm_x: list[tuple[Fraction, Fraction]] = []  # the same, exact
    splits: list[int] = []
    assignments: list[tuple] = []
    assign: tuple[int, ...]
    for j in range(1, kr):
        pb1 = Ph[j] + Pl[j]
        qb1 = Qh[j] + Ql[j]
        pb2 = (Pt - Ph[j]) - Pl[j]
        qb2 = (Qt - Qh[j]) - Ql[j]
        for assign, xy, ex in (
            ((1, 2), (pb1, qb1), (exact_P[j], exact_Q[j])),
            ((2, 1), (pb2, qb2), (exact_P[kr] - exact_P[j], exact_Q[kr] - exact_Q[j])),
        ):
            norm_f.append(xy)
            norm_x.append(ex)
            splits.append(j)
            assignments.append(assign)
    tf = float(t_exact)
    for assign, xy, ex in (
        ((1,), (1.0 + tf, 1.0 + tf), (1 + t_exact, 1 + t_exact)),
        ((2,), (-tf, -tf), (-t_exact, -t_exact)),
    ):
        norm_f.append(xy)
        norm_x.append(ex)
        splits.append(-1)
        assignments.append(assign)

    n = len(norm_f)
    pts = np.empty((n, 2))
    nf = np.array(norm_f, dtype=float)
    pts[:] = (c + A * nf) / (1.0 + c)
    pts[-2] = (1.0, 1.0)
    pts[-1] = (0.0, 0.0)
    np.clip(pts, 0.0, 1.0, out=pts)

    hull_idx, extreme = _exact_hull(nf, norm_x, 1.0 + tf)
    hull = pts[hull_idx].copy()
    for arr in (pts, hull, extreme, hull_idx):
        arr.setflags(write=False)
    return JointRange(
        points=pts,
        assignments=tuple(assignments),
        is_extreme=extreme,
        hull=hull,
        hull_indices=hull_idx,
        eps=eps,
        k=red.k_original,
        max_outputs=2,
        symbol_labels=sym,
        _classes=red.classes,
        _dropped=red.dropped,
        _splits=tuple(splits),
    )


# ---------------------------------------------------------------------------------------------
# exact-enough planar convex hull
# ---------------------------------------------------------------------------------------------
def _exact_hull(nf: np.ndarray, nx: list, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Andrew's monotone chain on exact coordinates ``nx`` with a float filter on ``nf``.

    Returns (indices of the hull vertices, counter-clockwise from the lowest-leftmost point;
    boolean extremality of every input point).  Collinear points on an edge are dropped.
    """
    n = len(nx)
    # group exactly coincident points; the representative is the first index
    first: dict[tuple, int] = {}
    rep = np.empty(n, dtype=np.int64)
    for i, key in enumerate(nx):
        rep[i] = first.setdefault(key, i)
    uniq = sorted(first.values(), key=lambda i: nx[i])

    def orient(o: int, a: int, b: int) -> int:
        dx1 = nf[a, 0] - nf[o, 0]
        dy1 = nf[a, 1] - nf[o, 1]
        dx2 = nf[b, 0] - nf[o, 0]
        dy2 = nf[b, 1] - nf[o, 1]
        cross = dx1 * dy2 - dy1 * dx2
        s1 = abs(dx1) + abs(dy1)
        s2 = abs(dx2) + abs(dy2)
        # coordinates carry errors ~1e-16 * scale (compensated sums); products ~1e-16 relative
        bound = _ORIENT_FILTER * scale * (s1 + s2 + s1 * s2)
        if cross > bound:
            return 1
        if cross < -bound:
            return -1
        (ox, oy), (ax, ay), (bx, by) = nx[o], nx[a], nx[b]
        ex = (ax - ox) * (by - oy) - (ay - oy) * (bx - ox)
        return (ex > 0) - (ex < 0)

    if len(uniq) <= 2:
        hull = list(uniq)
    else:
        lower: list[int] = []
        for i in uniq:
            while len(lower) >= 2 and orient(lower[-2], lower[-1], i) <= 0:
                lower.pop()
            lower.append(i)
        upper: list[int] = []
        for i in reversed(uniq):
            while len(upper) >= 2 and orient(upper[-2], upper[-1], i) <= 0:
                upper.pop()
            upper.append(i)
        hull = lower[:-1] + upper[:-1]
        if len(hull) < 2:  # all points coincide except one direction: a segment
            hull = [uniq[0], uniq[-1]]
    on_hull = set(hull)
    extreme = np.array([int(rep[i]) in on_hull for i in range(n)], dtype=bool)
    return np.array(hull, dtype=np.int64), extreme


def _outside_distance(hull: np.ndarray, pts: np.ndarray) -> np.ndarray:
    h = hull.shape[0]
    if h == 1:
        return np.hypot(pts[:, 0] - hull[0, 0], pts[:, 1] - hull[0, 1])
    if h == 2:
        a, b = hull
        d = b - a
        L2 = float(d @ d)
        tt = np.clip(((pts - a) @ d) / L2, 0.0, 1.0)
        proj = a + tt[:, None] * d
        return np.hypot(pts[:, 0] - proj[:, 0], pts[:, 1] - proj[:, 1])
    out = np.full(pts.shape[0], -np.inf)
    for i in range(h):
        a = hull[i]
        b = hull[(i + 1) % h]
        dx, dy = b - a
        L = math.hypot(dx, dy)
        # outward normal of a counter-clockwise polygon edge
        dist = ((pts[:, 0] - a[0]) * dy - (pts[:, 1] - a[1]) * dx) / L
        np.maximum(out, dist, out=out)
    return out
