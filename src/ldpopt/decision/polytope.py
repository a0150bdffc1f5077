r"""Maximal :math:`\varepsilon`-LDP channels and the polytope :math:`\mathcal S_{\mathcal X,\varepsilon}`.

Nam, Park and Lee (Sec. 3.2 and App. B.3) show that, up to Blackwell equivalence, every
maximal :math:`\varepsilon`-LDP channel on an alphabet :math:`\mathcal X` of size m is

.. math:: Q_{\rm ex}^{(c)} = \bigoplus_{y\in\mathcal B(\mathcal X)} c_y S_{y,*},\qquad
          S_{y,x} = e^{\varepsilon}\ (x\in y),\ 1\ (x\notin y),

one output per non-empty proper subset :math:`y\in\mathcal B(\mathcal X)`, with weights in the
polytope :math:`\mathcal S_{\mathcal X,\varepsilon}=\{c\ge 0: c^\top S=\mathbf 1^\top\}` (paper eq. 20-21,
Theorem 3.10).  The paper writes channels column-stochastic (rows = outputs); a
:class:`~ldpopt.Mechanism` keeps rows = inputs, so ``mechanism.matrix`` is :math:`(Q_{\rm ex}^{(c)})^\top`.

Numerics: internally every row is rescaled by :math:`e^{-\varepsilon}`,
:math:`\tilde S_{y,x} = 1\ (x\in y),\ e^{-\varepsilon}\ (x\notin y)`, and the weights by
:math:`\tilde c_y = e^{\varepsilon}c_y`, so nothing overflows; ``weights`` returned to users are the
paper's :math:`c_y = e^{-\varepsilon}\tilde c_y`.

Subsets are handled as boolean membership rows (shape ``(n, m)``) and converted to
``frozenset`` of input indices at the public boundary.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import optimize, sparse

from ldpopt._numerics import min_positive_c, rescale
from ldpopt._validation import check_eps, check_positive_int, check_tolerance
from ldpopt.errors import MissingExtraError
from ldpopt.mechanism import Mechanism, as_channel_matrix

__all__ = [
    "ENUM_MAX_M",
    "VERTEX_MAX_M",
    "subset_rows",
    "scaled_rows",
    "s_matrix",
    "q_ex",
    "polytope_vertices",
    "cdd_vertices",
    "polish_weights",
    "is_maximal",
    "extreme_subset",
    "canonical_form",
    "blackwell_dominates",
    "garbling",
    "maximal_refinement",
    "layer_cake",
    "decompose",
    "rows_to_subsets",
]

#: largest alphabet for which all 2^m - 2 subsets are enumerated
ENUM_MAX_M = 18
#: largest alphabet for vertex enumeration of S_{X,eps} with cdd (m = 6 already takes minutes)
VERTEX_MAX_M = 5
#: relative tolerance when deciding that two entries of a column are "the same level"
MAXIMAL_RTOL = 1e-9
#: columns whose largest entry is at most this are treated as zero outputs
ZERO_TOL = 1e-14
#: relative tolerance for merging proportional outputs in canonical_form
MERGE_RTOL = 1e-9
#: largest residual max|Q1 K - Q2| accepted by the Blackwell LP
BLACKWELL_TOL = 1e-9
#: residual of c^T S = 1 accepted by q_ex
POLYTOPE_TOL = 1e-9


# --------------------------------------------------------------------------------------------
# subsets and the matrix S
# --------------------------------------------------------------------------------------------


def subset_rows(m: int) -> np.ndarray:
    """Membership rows of all :math:`2^m-2` non-empty proper subsets of ``range(m)``.

    Row ``h - 1`` is the subset whose bitmask is ``h`` (bit x set iff x is in the subset),
    ``h = 1 .. 2^m - 2``.  Limited to ``m <= ENUM_MAX_M``.
    """
    m = check_positive_int(m, "m")
    if m > ENUM_MAX_M:
        raise ValueError(
            f"enumerating all 2^m - 2 subsets is limited to m <= {ENUM_MAX_M}, got m={m}; "
            "use column generation (method='colgen'), the channel LP (method='direct') or a symmetry group"
        )
    h = np.arange(1, 2**m - 1, dtype=np.int64)
    return ((h[:, None] >> np.arange(m, dtype=np.int64)[None, :]) & 1).astype(bool)


def _as_rows(subsets: Any, m: int) -> np.ndarray:
    """Boolean membership rows from a bool array or an iterable of index collections."""
    if isinstance(subsets, np.ndarray) and subsets.dtype == bool:
        rows = subsets
        if rows.ndim != 2 or rows.shape[1] != m:
            raise ValueError(f"subsets must have shape (n, {m}), got {rows.shape}")
    else:
        items = list(subsets)
        rows = np.zeros((len(items), m), dtype=bool)
        for j, y in enumerate(items):
            idx = [int(i) for i in y]
            if any(not 0 <= i < m for i in idx):
                raise ValueError(f"subset {sorted(idx)!r} has an index outside range({m})")
            rows[j, idx] = True
    sizes = rows.sum(axis=1)
    bad = np.flatnonzero((sizes == 0) | (sizes == m))
    if bad.size:
        raise ValueError(f"subsets must be non-empty and proper; subset number {int(bad[0])} is not")
    return rows


def scaled_rows(rows: np.ndarray, c0: float) -> np.ndarray:
    r"""Rescaled extreme rows :math:`\tilde S_y = e^{-\varepsilon}S_y` (1 on y, ``c0`` off y),
    shape (n, m)."""
    return np.where(rows, 1.0, c0)


def polish_weights(rows: np.ndarray, w: np.ndarray, c0: float) -> np.ndarray:
    r"""Weights of the support ``rows`` re-solved from :math:`\sum_j\tilde c_j\tilde S_{y_j}=\mathbf 1`
    (least squares), so the channel is exact to round-off; ``w`` unchanged when the re-solve is not a
    positive exact solution (or the support has more rows than inputs)."""
    if rows.shape[0] == 0 or rows.shape[0] > rows.shape[1]:
        return w
    S = scaled_rows(rows, c0).T  # (m, n)
    sol, *_ = np.linalg.lstsq(S, np.ones(S.shape[0]), rcond=None)
    if np.all(sol > 0) and np.max(np.abs(S @ sol - 1.0)) < 1e-13:
        return sol
    return w


def s_matrix(m: int, eps: float, subsets: Any = None) -> np.ndarray:
    r"""The matrix :math:`S_{\mathcal X,\varepsilon}` of the paper (eq. 19), rows = subsets.

    ``S[j, x] = e^eps`` if x is in subset j, else 1.  ``subsets`` defaults to all non-empty proper
    subsets in bitmask order (see :func:`subset_rows`).  Raises when :math:`e^\varepsilon` overflows;
    the solvers use the rescaled form :math:`e^{-\varepsilon}S` instead.
    """
    m = check_positive_int(m, "m")
    eps = check_eps(eps, allow_inf=False)
    rows = subset_rows(m) if subsets is None else _as_rows(subsets, m)
    e = math.exp(eps) if eps < 709.0 else math.inf
    if math.isinf(e):
        raise ValueError(f"e^eps overflows for eps={eps!r}; use the rescaled rows e^(-eps) S")
    return np.where(rows, e, 1.0)


def q_ex(
    weights: Any,
    eps: float,
    m: int | None = None,
    *,
    labels: Sequence | None = None,
    tol: float = POLYTOPE_TOL,
) -> Mechanism:
    r"""The maximal channel :math:`Q_{\rm ex}^{(c)}` of a weight vector in
    :math:`\mathcal S_{\mathcal X,\varepsilon}` (eq. 21).

    Parameters
    ----------
    weights : dict
        ``{subset: c_y}`` with subsets given as collections of input indices and the paper's
        weights :math:`c_y` (row y of the channel is :math:`c_y S_y`).  Zero weights are dropped.
    eps : float
    m : int, optional
        Alphabet size (default: one more than the largest index used).
    tol : float
        Accepted residual of :math:`c^\top S = \mathbf 1^\top`.

    Returns
    -------
    Mechanism
        Rows = inputs, one column per subset with positive weight.
    """
    eps = check_eps(eps, allow_inf=False)
    c0 = min_positive_c(eps)
    if not isinstance(weights, dict):
        raise TypeError(f"weights must be a dict {{subset: weight}}, got {type(weights).__name__}")
    items = [(tuple(sorted(int(i) for i in y)), float(w)) for y, w in weights.items()]
    if m is None:
        m = 1 + max((max(y) for y, _ in items if y), default=0)
    m = check_positive_int(m, "m")
    if any(not math.isfinite(w) or w < 0 for _, w in items):
        raise ValueError("weights must be finite and non-negative")
    items = [(y, w) for y, w in items if w > 0]
    if not items:
        raise ValueError("weights must contain at least one positive weight")
    rows = _as_rows([y for y, _ in items], m)
    # c_y S_y = (e^eps c_y) * S~_y
    scaled = np.array([w for _, w in items]) / c0
    cols = scaled[:, None] * scaled_rows(rows, c0)  # (n, m), paper orientation
    sums = cols.sum(axis=0)
    bad = np.flatnonzero(np.abs(sums - 1.0) > tol)
    if bad.size:
        raise ValueError(
            f"weights are not in the polytope S_(X,eps): sum_y c_y S_(y,x) = {sums[bad[0]]!r} "
            f"for x={int(bad[0])}"
        )
    matrix = (cols / sums[None, :]).T
    out = tuple(tuple(int(i) for i in np.flatnonzero(r)) for r in rows)
    lab = None if labels is None else tuple(labels)
    return Mechanism(matrix, eps, labels=lab, output_labels=out, name="q_ex")


# --------------------------------------------------------------------------------------------
# vertex enumeration (pycddlib)
# --------------------------------------------------------------------------------------------


def cdd_vertices(A_eq: np.ndarray, b_eq: np.ndarray) -> np.ndarray:
    r"""Vertices of the bounded polyhedron :math:`\{w\ge0: A_{\rm eq}w=b_{\rm eq}\}` by the double
    description method.

    Uses pycddlib (``import cdd``, API v3; the optional extra ``ldpopt[vertex]``) in floating point.
    Returns an array (n_vertices, n_vars); tiny negative round-off is clipped to 0.
    """
    try:
        import cdd  # optional and heavy: imported only when vertices are enumerated
    except ImportError:
        raise MissingExtraError("vertex enumeration", "vertex", "cdd") from None
    A_eq = np.asarray(A_eq, dtype=float)
    b_eq = np.asarray(b_eq, dtype=float)
    k, n = A_eq.shape
    # H-representation rows [b, a] mean b + a.w >= 0 (== 0 for rows in lin_set)
    eq = np.hstack([b_eq[:, None], -A_eq])
    nonneg = np.hstack([np.zeros((n, 1)), np.eye(n)])
    mat = cdd.matrix_from_array(
        np.vstack([eq, nonneg]).tolist(), lin_set=set(range(k)), rep_type=cdd.RepType.INEQUALITY
    )
    poly = cdd.polyhedron_from_matrix(mat)
    gen = np.array(cdd.copy_generators(poly).array, dtype=float).reshape(-1, n + 1)
    if gen.size and np.any(gen[:, 0] == 0):
        raise ValueError("the polyhedron is unbounded (it has rays); vertex enumeration needs a polytope")
    verts = gen[:, 1:]
    verts[np.abs(verts) < 1e-13] = 0.0
    return np.clip(verts, 0.0, None)


def polytope_vertices(m: int, eps: float) -> tuple[np.ndarray, np.ndarray]:
    r"""All vertices of :math:`\mathcal S_{\mathcal X,\varepsilon}` for ``m <= VERTEX_MAX_M``.

    Returns ``(rows, weights)``: the subset membership rows (2^m - 2, m) and an array
    (n_vertices, 2^m - 2) of the paper's weights :math:`c` (one vertex per row).
    """
    m = check_positive_int(m, "m")
    eps = check_eps(eps, allow_inf=False)
    if m > VERTEX_MAX_M:
        raise ValueError(
            f"vertex enumeration of S_(X,eps) is limited to m <= {VERTEX_MAX_M} (the vertex count explodes), "
            f"got m={m}; use an LP method or a symmetry group"
        )
    if m < 2:
        raise ValueError("S_(X,eps) needs m >= 2 inputs")
    c0 = min_positive_c(eps)
    rows = subset_rows(m)
    verts = cdd_vertices(scaled_rows(rows, c0).T, np.ones(m))
    return rows, verts * c0


# --------------------------------------------------------------------------------------------
# maximality, canonical form, Blackwell order
# --------------------------------------------------------------------------------------------


def _matrix_of(q: Any, name: str) -> tuple[np.ndarray, float | None]:
    """The channel matrix (rows = inputs) of a Mechanism (with its eps) or of a checked array."""
    matrix = as_channel_matrix(q, name)
    return matrix, (q.eps if isinstance(q, Mechanism) else None)


def extreme_subset(v: Any, eps: float, rtol: float = MAXIMAL_RTOL) -> frozenset | None:
    r"""The subset y if ``v`` is an extreme direction :math:`\propto S_y` of the LDP cone, else ``None``.

    The cone is :math:`\mathcal K_{\mathcal X,\varepsilon}=\{v\ge0: e^\varepsilon v_x\ge v_{x'}\}` (App. B.3);
    its extreme rays are exactly the vectors with two values in ratio :math:`e^\varepsilon`, the
    larger one on a non-empty proper subset (Lemma B.5).  For ``eps = inf`` the cone is the orthant
    and the extreme rays are the coordinate vectors (returned as singletons).  For m = 1 every
    positive vector is extreme (returned as the empty set, which is the whole ray).
    """
    v = np.asarray(v, dtype=float).ravel()
    top = float(v.max()) if v.size else 0.0
    if top <= 0:
        return None
    w = v / top
    if v.size == 1:
        return frozenset()
    high = np.abs(w - 1.0) <= rtol
    if math.isinf(eps):
        low_ok = np.all(w[~high] == 0.0)
        return frozenset(int(i) for i in np.flatnonzero(high)) if (low_ok and high.sum() == 1) else None
    c0 = rescale(eps).c
    low = np.abs(w - c0) <= rtol * c0
    if not np.all(high | low) or high.all() or not high.any():
        return None
    return frozenset(int(i) for i in np.flatnonzero(high))


def is_maximal(mechanism: Any, eps: float | None = None, rtol: float = MAXIMAL_RTOL) -> bool:
    r"""True when the mechanism is a maximal :math:`\varepsilon`-LDP channel in the Blackwell order.

    Proposition B.3 of the paper: an LDP channel is maximal iff every non-zero output (a column
    of ``mechanism.matrix``, a row of the paper's channel) is an extreme direction of the LDP cone,
    i.e. takes exactly two values, in ratio :math:`e^{\varepsilon}`, the larger one on a non-empty
    proper subset of the inputs (Lemma B.5).

    Parameters
    ----------
    mechanism : Mechanism or array_like
        Rows = inputs.
    eps : float, optional
        Privacy level (default: the mechanism's claimed ``eps``; required for a plain array).
        A channel whose true privacy level is below ``eps`` is never maximal.
    rtol : float
        Relative tolerance on the two levels.
    """
    matrix, own = _matrix_of(mechanism, "mechanism")
    rtol = check_tolerance(rtol, "rtol")
    if eps is None:
        if own is None:
            raise ValueError("eps is required when mechanism is a plain array")
        eps = own
    eps = check_eps(eps)
    if not math.isinf(eps):
        c = rescale(eps).c
        # an eps-LDP check first: a column beyond eps cannot be an extreme direction of K_eps
        lo = matrix.min(axis=0)
        hi = matrix.max(axis=0)
        if np.any(lo < hi * c * (1 - rtol) - 1e-300):
            return False
    if matrix.shape[0] == 1:
        return True
    for j in range(matrix.shape[1]):
        col = matrix[:, j]
        if col.max() <= 0.0:
            continue  # zero outputs do not matter (zero padding)
        if extreme_subset(col, eps, rtol) is None:
            return False
    return True


def _merge_proportional(matrix: np.ndarray, rtol: float) -> np.ndarray:
    """Sum proportional columns and drop zero columns; returns the merged columns (m, n')."""
    keep = matrix.max(axis=0) > ZERO_TOL
    cols = matrix[:, keep]
    if cols.shape[1] == 0:
        return cols
    dirs = cols / cols.sum(axis=0, keepdims=True)
    reps: list[np.ndarray] = []
    sums: list[np.ndarray] = []
    for j in range(cols.shape[1]):
        d = dirs[:, j]
        for _r, (rep, acc) in enumerate(zip(reps, sums, strict=False)):
            if np.max(np.abs(d - rep)) <= rtol * max(float(np.max(d)), float(np.max(rep))):
                acc += cols[:, j]
                break
        else:
            reps.append(d)
            sums.append(cols[:, j].copy())
    return np.column_stack(sums)


def canonical_form(mechanism: Any, rtol: float = MERGE_RTOL) -> Mechanism:
    r"""The canonical Blackwell-equivalent channel: proportional outputs merged, zero outputs dropped.

    Relabelling outputs, zero padding and splitting an output into proportional outputs all give
    Blackwell-equivalent channels (paper Lemma B.4); merging undoes the splits.  Two channels are
    Blackwell-equivalent iff their canonical forms coincide (the merged outputs are the atoms of
    the standard experiment).  Columns are sorted in decreasing lexicographic order of their
    normalised direction, so equivalent channels give the same matrix up to round-off.

    Parameters
    ----------
    mechanism : Mechanism or array_like
        Rows = inputs (a plain array gets ``eps`` = its own privacy level).
    rtol : float
        Relative tolerance for "proportional".
    """
    matrix, own = _matrix_of(mechanism, "mechanism")
    merged = _merge_proportional(matrix, check_tolerance(rtol, "rtol"))
    dirs = merged / merged.sum(axis=0, keepdims=True)
    order = np.lexsort(tuple(-np.round(dirs[i], 12) for i in reversed(range(dirs.shape[0]))))
    merged = merged[:, order]
    merged = merged / merged.sum(axis=1, keepdims=True)
    labels = mechanism.labels if isinstance(mechanism, Mechanism) else None
    if own is None:
        own = Mechanism(merged, math.inf).privacy_level()
        own = own if own > 0 else math.inf
    return Mechanism(merged, own, labels=labels, name="canonical")


def garbling(q1: Any, q2: Any, tol: float = BLACKWELL_TOL) -> np.ndarray | None:
    r"""A row-stochastic :math:`K` with ``q1.matrix @ K = q2.matrix``, or ``None`` if none exists.

    In the paper's column-stochastic notation this is :math:`Q^{(2)} = W Q^{(1)}` with
    :math:`W = K^\top` (Definition 3.1).  Solved as the LP :math:`\min t` s.t.
    :math:`|Q_1K-Q_2|\le t` elementwise, :math:`K\mathbf 1=\mathbf 1`, :math:`K\ge0` (HiGHS); a
    garbling exists iff :math:`t^*\le` ``tol``.
    """
    m1, _ = _matrix_of(q1, "q1")
    m2, _ = _matrix_of(q2, "q2")
    tol = check_tolerance(tol, "tol")
    if m1.shape[0] != m2.shape[0]:
        raise ValueError(f"q1 and q2 must have the same inputs, got {m1.shape[0]} and {m2.shape[0]} rows")
    k, n1 = m1.shape
    n2 = m2.shape[1]
    nk = n1 * n2
    # K is flattened row-major: K[y, z] -> y * n2 + z ; (Q1 K)[x, z] = sum_y Q1[x, y] K[y, z]
    prod = sparse.kron(sparse.csr_matrix(m1), sparse.identity(n2, format="csr"))  # (k*n2, nk)
    ones = np.ones((k * n2, 1))
    A_ub = sparse.vstack([sparse.hstack([prod, -ones]), sparse.hstack([-prod, -ones])]).tocsr()
    b_ub = np.concatenate([m2.ravel(), -m2.ravel()])
    A_eq = sparse.hstack(
        [sparse.kron(sparse.identity(n1), np.ones((1, n2))), sparse.csr_matrix((n1, 1))]
    ).tocsr()
    cost = np.zeros(nk + 1)
    cost[-1] = 1.0
    res = optimize.linprog(
        cost, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=np.ones(n1), bounds=(0, None), method="highs"
    )
    if res.status != 0 or res.x[-1] > tol:
        return None
    K = np.clip(res.x[:nk].reshape(n1, n2), 0.0, None)
    return K / K.sum(axis=1, keepdims=True)


def blackwell_dominates(q1: Any, q2: Any, tol: float = BLACKWELL_TOL) -> bool:
    r"""True when ``q1`` is at least as informative as ``q2`` in the Blackwell order
    (:math:`Q_2\precsim Q_1`).

    That is, ``q2`` is a garbling of ``q1``: :math:`Q_2 = WQ_1` for a column-stochastic W in the
    paper's notation (Definition 3.1), i.e. ``q2.matrix = q1.matrix @ K`` with K row-stochastic here.
    Decided by the LP feasibility test of :func:`garbling` with residual tolerance ``tol``.
    """
    return garbling(q1, q2, tol) is not None


# --------------------------------------------------------------------------------------------
# decomposition of an LDP channel into extreme rows
# --------------------------------------------------------------------------------------------


def layer_cake(col: np.ndarray, c0: float) -> list[tuple[np.ndarray, float]]:
    r"""Write one output column (a vector of the LDP cone) as :math:`\sum_j \tilde c_j \tilde S_{y_j}`.

    With the distinct values :math:`v_1<\dots<v_L` of the column and the nested sets
    :math:`y_l=\{x: r_x\ge v_l\}`,

    .. math:: r = v_1\mathbf 1 + \sum_{l\ge2}(v_l-v_{l-1})\mathbf 1_{y_l}
              = \sum_{l\ge2}\frac{v_l-v_{l-1}}{1-c_0}\tilde S_{y_l} + \alpha\mathbf 1,\qquad
              \alpha = v_1 - c_0\frac{v_L-v_1}{1-c_0}\ \ge 0,

    where :math:`\alpha\ge0` is exactly the LDP condition :math:`v_L\le e^\varepsilon v_1`; the
    constant remainder is split as randomized response,
    :math:`\mathbf 1=\sum_x \tilde S_{\{x\}}/(1+(m-1)c_0)`.
    Returns ``[(membership row, weight), ...]`` (weights > 0).
    """
    m = col.shape[0]
    vals = np.unique(col)
    out: list[tuple[np.ndarray, float]] = []
    a1 = 1.0 - c0
    for lo, hi in zip(vals[:-1], vals[1:], strict=False):
        out.append((col >= hi, float((hi - lo) / a1)))
    alpha = float(vals[0] - c0 * (vals[-1] - vals[0]) / a1)
    if alpha > 0:
        w = alpha / (1.0 + (m - 1) * c0)
        for x in range(m):
            y = np.zeros(m, dtype=bool)
            y[x] = True
            out.append((y, w))
    return out


def decompose(matrix: np.ndarray, c0: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Layer-cake decomposition of every column; returns (rows (n, m), scaled weights (n,),
    source column (n,))."""
    rows, weights, source = [], [], []
    for j in range(matrix.shape[1]):
        col = matrix[:, j]
        if col.max() <= ZERO_TOL:
            continue
        for y, w in layer_cake(col, c0):
            if w > 0:
                rows.append(y)
                weights.append(w)
                source.append(j)
    return (
        np.array(rows, dtype=bool).reshape(-1, matrix.shape[0]),
        np.array(weights),
        np.array(source, dtype=int),
    )


def maximal_refinement(mechanism: Mechanism) -> Mechanism:
    r"""A maximal channel that Blackwell-dominates ``mechanism`` (same eps).

    Every output column is split into extreme rows by :func:`layer_cake`, so the original channel
    is recovered by merging outputs back (a deterministic garbling); identical subsets are then
    merged.  The result is maximal by Proposition B.3.
    """
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism must be a Mechanism, got {type(mechanism).__name__}")
    eps = check_eps(mechanism.eps, allow_inf=False)
    c0 = min_positive_c(eps)
    m = mechanism.num_inputs
    if m < 2:
        return mechanism
    # columns of an eps-LDP channel satisfy max <= e^eps min up to LDP_RTOL; clip the excess
    matrix = mechanism.matrix
    rows, w, _ = decompose(matrix, c0)
    keys: dict[bytes, int] = {}
    merged_rows: list[np.ndarray] = []
    merged_w: list[float] = []
    for y, wt in zip(rows, w, strict=False):
        if y.all() or not y.any():
            continue
        key = y.tobytes()
        if key in keys:
            merged_w[keys[key]] += wt
        else:
            keys[key] = len(merged_rows)
            merged_rows.append(y)
            merged_w.append(wt)
    R = np.array(merged_rows, dtype=bool)
    cols = np.array(merged_w)[:, None] * scaled_rows(R, c0)
    out = cols.T / cols.T.sum(axis=1, keepdims=True)
    labels = tuple(tuple(int(i) for i in np.flatnonzero(r)) for r in R)
    return Mechanism(out, eps, labels=mechanism.labels, output_labels=labels, name="maximal_refinement")


def rows_to_subsets(rows: np.ndarray) -> list[frozenset]:
    """Membership rows -> list of frozensets of input indices."""
    return [frozenset(int(i) for i in np.flatnonzero(r)) for r in rows]
