r"""Symmetry reductions of the maximal-channel polytope (Nam-Park-Lee Sec. 3.3, App. B.4-B.5).

A permutation group G acting on the inputs acts on the subsets, :math:`gy=\{gx: x\in y\}`, and on
the weights, :math:`(gc)_y=c_{g^{-1}y}`.  When the objective is G-invariant, an optimal channel can
be taken G-invariant (Theorem 3.7), i.e. with weights constant on the orbits :math:`\mathcal O` of
subsets: :math:`c_y=w_{\mathcal O}` (Theorem 3.15).  The invariant weights form the reduced polytope

.. math:: \mathcal S^G_{\mathcal X,\varepsilon}=\Big\{w\ge0:\ \sum_{\mathcal O}w_{\mathcal O}\,
          \tilde r_{\mathfrak O,\mathcal O}=1\ \ \forall\,\mathfrak O\in\mathcal X/G\Big\},\qquad
          \tilde r_{\mathfrak O,\mathcal O}=\sum_{y\in\mathcal O}S_{y,x}\ (x\in\mathfrak O),

one equality per orbit of *points*.  For a transitive group there is a single equality and the
vertices are the single orbits, with (Corollary 3.17)

.. math:: w_{\mathcal O}=\frac{m}{|\mathcal O|\,(k_{\mathcal O}e^\varepsilon+m-k_{\mathcal O})},

:math:`k_{\mathcal O}` the common size of the subsets in :math:`\mathcal O`; a concave invariant
objective is optimised by evaluating every orbit and taking the best.  For a row-additive
invariant objective the value of orbit :math:`\mathcal O` only needs one representative y:
:math:`R=|\mathcal O|w_{\mathcal O}\phi(S_y)=\frac{m\,\phi(\tilde S_y)}{k+(m-k)e^{-\varepsilon}}`.

The orbits of the symmetric group are the subset sizes (no enumeration of :math:`2^m` subsets);
other groups are handled by the connected components of the generator graph on all subsets
(m <= ``ORBIT_ENUM_MAX_M``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components

from ldpopt._numerics import rescale
from ldpopt._validation import check_eps, check_positive_int
from ldpopt.decision.objectives import ChannelObjective
from ldpopt.decision.polytope import cdd_vertices
from ldpopt.mechanism import Mechanism

__all__ = [
    "PermutationGroup",
    "SubsetOrbit",
    "symmetric",
    "cyclic",
    "dihedral",
    "subset_selection",
    "subset_selection_mutual_information",
    "mi_optimal_size",
    "ORBIT_ENUM_MAX_M",
    "orbit_row_sums",
    "orbit_values",
    "orbit_solution",
    "representatives",
    "check_invariance",
    "reduced_vertices",
]

#: largest m for which the orbits of a general group are found by sweeping all 2^m subsets
ORBIT_ENUM_MAX_M = 20
#: largest number of outputs of an explicitly built subset-selection mechanism
SS_MAX_OUTPUTS = 200_000
#: relative tolerance of the numerical invariance spot check
INVARIANCE_RTOL = 1e-9


@dataclass(frozen=True, eq=False)
class SubsetOrbit:
    """One orbit of non-empty proper subsets under a permutation group.

    Attributes
    ----------
    representative : frozenset
        The orbit member with the smallest bitmask (for the symmetric group: ``{0, ..., k-1}``).
    size : int
        Number of subsets in the orbit, :math:`|\\mathcal O|`.
    k : int
        Common size of its subsets.
    counts : tuple of int
        For each point orbit i (in :meth:`PermutationGroup.point_orbits` order), the number of
        members that contain a given point of that orbit.
    masks : ndarray or None
        Bitmasks of all members (groups enumerated by sweeping); ``None`` for the symmetric group.
    """

    representative: frozenset
    size: int
    k: int
    counts: tuple
    masks: np.ndarray | None = field(default=None, repr=False)


def _check_perm(g: Any, m: int | None, j: int) -> tuple:
    try:
        perm = tuple(int(v) for v in g)
    except (TypeError, ValueError):
        raise TypeError(f"generator {j} must be a sequence of integers, got {g!r}") from None
    if m is not None and len(perm) != m:
        raise ValueError(f"generator {j} must have length m={m}, got {len(perm)}")
    if sorted(perm) != list(range(len(perm))):
        raise ValueError(f"generator {j} is not a permutation of range({len(perm)}): {perm!r}")
    return perm


class PermutationGroup:
    r"""A permutation group acting on the inputs ``range(m)``, given by generators.

    Parameters
    ----------
    generators : sequence of sequences
        Each generator g is a permutation written as images, ``g[x]`` = image of x.  An empty
        sequence (with ``m``) gives the trivial group.
    m : int, optional
        Number of points (default: the generators' length).

    Built-ins: :meth:`symmetric`, :meth:`cyclic`, :meth:`dihedral` (also module functions).
    """

    def __init__(self, generators: Iterable[Sequence[int]], m: int | None = None, *, kind: str = "custom"):
        gens = list(generators) if not isinstance(generators, (str, bytes)) else None
        if gens is None:
            raise TypeError(f"generators must be a sequence of permutations, got {generators!r}")
        if m is not None:
            m = check_positive_int(m, "m")
        elif gens:
            m = len(list(gens[0]))
        else:
            raise ValueError("a group without generators needs m")
        self.generators = tuple(_check_perm(g, m, j) for j, g in enumerate(gens))
        self.m = m
        self.kind = kind
        self._orbits: tuple[SubsetOrbit, ...] | None = None

    # --- built-ins -------------------------------------------------------------------------
    @classmethod
    def symmetric(cls, m: int) -> PermutationGroup:
        """The symmetric group Sym(m): every permutation (generated by a transposition and an m-cycle)."""
        m = check_positive_int(m, "m")
        gens = []
        if m >= 2:
            gens.append(tuple([1, 0] + list(range(2, m))))
        if m >= 3:
            gens.append(tuple((x + 1) % m for x in range(m)))
        return cls(gens, m, kind="symmetric")

    @classmethod
    def cyclic(cls, m: int) -> PermutationGroup:
        """The cyclic group Z_m acting by shifts x -> x + 1 (mod m)."""
        m = check_positive_int(m, "m")
        return cls([tuple((x + 1) % m for x in range(m))] if m >= 2 else [], m, kind="cyclic")

    @classmethod
    def dihedral(cls, m: int) -> PermutationGroup:
        """The dihedral group D_m: shifts and the reflection x -> -x (mod m)."""
        m = check_positive_int(m, "m")
        gens = []
        if m >= 2:
            gens.append(tuple((x + 1) % m for x in range(m)))
            gens.append(tuple((-x) % m for x in range(m)))
        return cls(gens, m, kind="dihedral")

    # --- structure -------------------------------------------------------------------------
    def point_orbits(self) -> tuple:
        """Orbits of the points, each a sorted tuple, ordered by their smallest point."""
        parent = list(range(self.m))

        def find(a):
            while parent[a] != a:
                parent[a] = parent[parent[a]]
                a = parent[a]
            return a

        for g in self.generators:
            for x, gx in enumerate(g):
                ra, rb = find(x), find(gx)
                if ra != rb:
                    parent[max(ra, rb)] = min(ra, rb)
        groups: dict[int, list[int]] = {}
        for x in range(self.m):
            groups.setdefault(find(x), []).append(x)
        return tuple(tuple(v) for _, v in sorted(groups.items()))

    def is_transitive(self) -> bool:
        """True when the group has a single orbit of points."""
        return len(self.point_orbits()) == 1

    def order(self) -> int:
        """Number of group elements (closed forms for the built-ins, enumeration otherwise)."""
        if self.kind == "symmetric":
            return math.factorial(self.m)
        if self.kind == "cyclic":
            return max(self.m, 1)
        if self.kind == "dihedral":
            return 2 * self.m if self.m >= 3 else max(self.m, 1)
        return len(self._elements(limit=10**6))

    def _elements(self, limit: int) -> set:
        ident = tuple(range(self.m))
        seen = {ident}
        frontier = [ident]
        while frontier:
            nxt = []
            for h in frontier:
                for g in self.generators:
                    gh = tuple(g[h[x]] for x in range(self.m))
                    if gh not in seen:
                        seen.add(gh)
                        nxt.append(gh)
                        if len(seen) > limit:
                            raise ValueError(f"the group has more than {limit} elements")
            frontier = nxt
        return seen

    def subset_orbits(self) -> tuple:
        """The orbits of non-empty proper subsets, sorted by (subset size, representative bitmask).

        The symmetric group's orbits are the sizes k = 1 .. m-1 (computed in closed form for any m);
        other groups need m <= ``ORBIT_ENUM_MAX_M``.
        """
        if self._orbits is None:
            self._orbits = self._symmetric_orbits() if self.kind == "symmetric" else self._swept_orbits()
        return self._orbits

    def _symmetric_orbits(self) -> tuple:
        m = self.m
        return tuple(
            SubsetOrbit(frozenset(range(k)), math.comb(m, k), k, (math.comb(m - 1, k - 1),))
            for k in range(1, m)
        )

    def _swept_orbits(self) -> tuple:
        m = self.m
        if m > ORBIT_ENUM_MAX_M:
            raise ValueError(
                f"orbits of a {self.kind} group are found by sweeping all 2^m subsets, limited to m <= "
                f"{ORBIT_ENUM_MAX_M}; got m={m} (only the symmetric group has a closed form for any m)"
            )
        n = 2**m
        masks = np.arange(n, dtype=np.int64)
        bits = (masks[:, None] >> np.arange(m, dtype=np.int64)[None, :]) & 1
        src, dst = [], []
        for g in self.generators:
            img = bits @ (np.int64(1) << np.array(g, dtype=np.int64))
            src.append(masks)
            dst.append(img)
        if src:
            graph = sparse.coo_matrix(
                (np.ones(n * len(src)), (np.concatenate(src), np.concatenate(dst))), shape=(n, n)
            ).tocsr()
        else:
            graph = sparse.csr_matrix((n, n))
        _, labels = connected_components(graph, directed=True, connection="weak")
        inner = masks[1:-1]
        lab = labels[1:-1]
        order = np.argsort(lab, kind="stable")
        lab_sorted = lab[order]
        cuts = np.flatnonzero(np.diff(lab_sorted)) + 1
        groups = np.split(inner[order], cuts)
        pts = self.point_orbits()
        orbits = []
        for members in groups:
            rep = int(members.min())
            k = int(bin(rep).count("1"))
            counts = tuple(int(((members >> np.int64(p[0])) & 1).sum()) for p in pts)
            orbits.append(
                SubsetOrbit(
                    frozenset(i for i in range(m) if rep >> i & 1),
                    int(members.size),
                    k,
                    counts,
                    np.sort(members),
                )
            )
        orbits.sort(key=lambda o: (o.k, sum(1 << i for i in o.representative)))
        return tuple(orbits)

    def members(self, orbit: SubsetOrbit) -> np.ndarray:
        """Membership rows (size, m) of all subsets of an orbit."""
        m = self.m
        if orbit.masks is not None:
            return ((orbit.masks[:, None] >> np.arange(m, dtype=np.int64)[None, :]) & 1).astype(bool)
        if orbit.size > SS_MAX_OUTPUTS:
            raise ValueError(
                f"the orbit of {orbit.k}-subsets has {orbit.size} members, above {SS_MAX_OUTPUTS}"
            )
        rows = np.zeros((orbit.size, m), dtype=bool)
        for j, comb in enumerate(itertools.combinations(range(m), orbit.k)):
            rows[j, list(comb)] = True
        return rows

    def __repr__(self) -> str:
        return f"PermutationGroup(kind={self.kind!r}, m={self.m}, generators={len(self.generators)})"


def symmetric(m: int) -> PermutationGroup:
    """Sym(m) (see :meth:`PermutationGroup.symmetric`)."""
    return PermutationGroup.symmetric(m)


def cyclic(m: int) -> PermutationGroup:
    """Z_m (see :meth:`PermutationGroup.cyclic`)."""
    return PermutationGroup.cyclic(m)


def dihedral(m: int) -> PermutationGroup:
    """D_m (see :meth:`PermutationGroup.dihedral`)."""
    return PermutationGroup.dihedral(m)


# --------------------------------------------------------------------------------------------
# the reduced problem
# --------------------------------------------------------------------------------------------


def orbit_row_sums(group: PermutationGroup, c0: float) -> np.ndarray:
    r"""The matrix :math:`\tilde r_{\mathfrak O,\mathcal O}=\sum_{y\in\mathcal O}\tilde S_{y,x}`
    (x in point orbit i), shape (#point orbits, #subset orbits).

    :math:`\tilde S=e^{-\varepsilon}S` (rescaled), so
    :math:`\tilde r=|\mathcal O|c_0+(1-c_0)\,\#\{y\in\mathcal O: x\in y\}`.
    """
    orbits = group.subset_orbits()
    size = np.array([o.size for o in orbits], dtype=float)
    counts = np.array([o.counts for o in orbits], dtype=float).T  # (points, orbits)
    return size[None, :] * c0 + (1.0 - c0) * counts


def representatives(group: PermutationGroup) -> np.ndarray:
    """Membership rows of one representative per subset orbit, in :meth:`~PermutationGroup.subset_orbits`
    order."""
    rows = np.zeros((len(group.subset_orbits()), group.m), dtype=bool)
    for j, o in enumerate(group.subset_orbits()):
        rows[j, sorted(o.representative)] = True
    return rows


def check_invariance(obj: Any, group: PermutationGroup, c0: float, seed: int = 20240531) -> None:
    r"""Numerical spot check of :math:`\phi(g\cdot v)=\phi(v)` for every generator (raises ValueError).

    Tests a fixed set of random positive rows and extreme rows; it is a necessary condition only.
    """
    rng = np.random.default_rng(seed)
    m = group.m
    V = np.vstack([rng.random((12, m)) + 0.05, np.where(rng.random((12, m)) < 0.5, 1.0, c0)])
    if isinstance(obj, ChannelObjective):
        Q = V.T / V.T.sum(axis=1, keepdims=True)
        base = obj.evaluate(Q)
        for j, g in enumerate(group.generators):
            inv = np.argsort(g)
            val = obj.evaluate(Q[inv])
            if abs(val - base) > INVARIANCE_RTOL * max(1.0, abs(base)):
                raise ValueError(f"objective {obj.name!r} is not invariant under generator {j} of the group")
        return
    base = obj.contributions(V)
    for j, g in enumerate(group.generators):
        # (g v)_x = v_{g^{-1} x}
        Vg = V[:, np.argsort(g)]
        diff = np.abs(obj.contributions(Vg) - base)
        if np.any(diff > INVARIANCE_RTOL * np.maximum(1.0, np.abs(base))):
            raise ValueError(
                f"objective {obj.name!r} is not invariant under generator {j} of the {group.kind} group; "
                "the symmetry reduction does not apply (pass check_invariance=False only if it is)"
            )


def orbit_values(obj: Any, group: PermutationGroup, c0: float) -> np.ndarray:
    r"""Closed-form objective of each single-orbit channel of a transitive group (Corollary 3.17).

    For a row-additive invariant objective, :math:`R(Q_{\mathcal O})=m\,\phi(\tilde S_y)/(k+(m-k)c_0)`
    with any :math:`y\in\mathcal O` (raw scale, before ``transform``).
    """
    rows = representatives(group)
    V = np.where(rows, 1.0, c0)
    k = rows.sum(axis=1)
    return group.m * obj.contributions(V) / (k + (group.m - k) * c0)


def _cyclic_design(m: int, k: int) -> np.ndarray:
    """The m cyclic shifts of {0, ..., k-1}: every point lies in exactly k of them."""
    rows = np.zeros((m, m), dtype=bool)
    for s in range(m):
        rows[s, [(s + i) % m for i in range(k)]] = True
    return rows


def orbit_solution(
    group: PermutationGroup, weights: np.ndarray, c0: float
) -> tuple[np.ndarray, np.ndarray, str]:
    """Support rows and scaled weights of the invariant channel with orbit weights ``weights``."""
    orbits = group.subset_orbits()
    used = np.flatnonzero(weights > 0)
    note = ""
    if group.kind == "symmetric" and used.size == 1 and orbits[used[0]].size > SS_MAX_OUTPUTS:
        # all k-subsets have the same contribution for a Sym-invariant objective, and every feasible
        # weighting of k-subsets has the same total: the cyclic design is an equally optimal channel
        k = orbits[used[0]].k
        rows = _cyclic_design(group.m, k)
        w = np.full(group.m, 1.0 / (k + (group.m - k) * c0))
        note = (
            f"; the invariant optimum (subset selection with C({group.m},{k}) outputs) is replaced by the "
            f"equally optimal cyclic design of {group.m} {k}-subsets"
        )
        return rows, w, note
    row_blocks: list[np.ndarray] = []
    w_blocks: list[np.ndarray] = []
    for j in used:
        mem = group.members(orbits[j])
        row_blocks.append(mem)
        w_blocks.append(np.full(mem.shape[0], weights[j]))
    return np.vstack(row_blocks), np.concatenate(w_blocks), note


def reduced_vertices(group: PermutationGroup, c0: float) -> list:
    """Vertices of the reduced polytope S^G (pycddlib), each as (support rows, scaled weights)."""
    R = orbit_row_sums(group, c0)
    verts = cdd_vertices(R, np.ones(R.shape[0]))
    out = []
    for v in verts:
        weights = np.where(v > 1e-12 * v.max(), v, 0.0)
        rows, w, _ = orbit_solution(group, weights, c0)
        out.append((rows, w))
    return out


# --------------------------------------------------------------------------------------------
# subset selection
# --------------------------------------------------------------------------------------------


def subset_selection(m: int, eps: float, size: int, labels: Sequence | None = None) -> Mechanism:
    r"""The subset-selection mechanism SS(m, k) (Ye-Barg; paper Remark 3.18): one output per k-subset.

    .. math:: Q(y|x)=\frac{e^\varepsilon}{\binom{m-1}{k-1}e^\varepsilon+\binom{m-1}{k}}\ (x\in y),\qquad
              \frac{1}{\binom{m-1}{k-1}e^\varepsilon+\binom{m-1}{k}}\ (x\notin y),

    i.e. :math:`Q_{\rm ex}` with the Corollary 3.17 weight :math:`w=\frac{m}{\binom mk(ke^\varepsilon+m-k)}`
    on the Sym(m)-orbit of k-subsets.  k = 1 is randomized response.  Built from :math:`e^{-\varepsilon}`.
    """
    m = check_positive_int(m, "m")
    eps = check_eps(eps, allow_inf=False)
    k = check_positive_int(size, "size")
    if m < 2:
        raise ValueError(f"subset selection needs m >= 2, got m={m}")
    if not 1 <= k <= m - 1:
        raise ValueError(f"size must be in 1 .. m-1 = {m - 1}, got size={size!r}")
    n = math.comb(m, k)
    if n > SS_MAX_OUTPUTS:
        raise ValueError(f"SS({m}, {k}) has C({m},{k}) = {n} outputs, above the limit {SS_MAX_OUTPUTS}")
    c0 = rescale(eps).c
    rows = PermutationGroup.symmetric(m).members(
        SubsetOrbit(frozenset(range(k)), n, k, (math.comb(m - 1, k - 1),))
    )
    # row sum of x: C(m-1,k-1) * 1 + C(m-1,k) * c0 (rescaled)
    den = math.comb(m - 1, k - 1) + math.comb(m - 1, k) * c0
    matrix = np.where(rows, 1.0, c0).T / den
    out = tuple(tuple(int(i) for i in np.flatnonzero(r)) for r in rows)
    lab = None if labels is None else tuple(labels)
    return Mechanism(matrix, eps, labels=lab, output_labels=out, name=f"ss(k={k})")


def subset_selection_mutual_information(m: int, eps: float, size: int) -> float:
    r"""Mutual information (nats) of SS(m, k) under the uniform input, in closed form.

    With :math:`D=k+(m-k)e^{-\varepsilon}`: :math:`I = \log(m/D) - \varepsilon(m-k)e^{-\varepsilon}/D`
    (Corollary 3.17 applied to :math:`\phi(v)=\frac1m\sum_x v_x\log\frac{v_x}{\bar v}`; see docs/decision.md).
    """
    m = check_positive_int(m, "m")
    eps = check_eps(eps, allow_inf=False)
    k = check_positive_int(size, "size")
    if not 1 <= k <= m - 1:
        raise ValueError(f"size must be in 1 .. m-1 = {m - 1}, got size={size!r}")
    c0 = rescale(eps).c
    D = k + (m - k) * c0
    return math.log(m / D) - eps * (m - k) * c0 / D


def mi_optimal_size(m: int, eps: float) -> int:
    """The subset size k maximising the mutual information of SS(m, k) under the uniform input.

    By Corollary 3.17 (Sym(m)-invariance) SS of this size maximises I(X;Y) over all eps-LDP channels
    (recovering Wang et al. 2019, Thm. 1).  Ties go to the smaller k.
    """
    m = check_positive_int(m, "m")
    if m < 2:
        raise ValueError(f"m must be >= 2, got m={m}")
    vals = [subset_selection_mutual_information(m, eps, k) for k in range(1, m)]
    return 1 + int(np.argmax(vals))
