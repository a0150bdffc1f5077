r"""Dominance certificates: the SPR paper's Theorem 3.1 for a given mechanism, checkable by matrix products.

Theorem 3.1 of "Sort, Partition, Randomize" says that every extreme point of the joint range
:math:`\mathcal R_m(p, q) = \{(Q^\top p, Q^\top q) : Q \in \mathcal Q_{\varepsilon, m}\}` is the pair of
an SPR mechanism whose outputs are placed in the m output slots (relabelled, zero-padded).  The
joint range is a polytope, so the pair of **any** eps-LDP mechanism Q with m outputs is a convex
combination of at most :math:`2m - 1` such SPR pairs (Caratheodory: the pairs lie in an affine
space of dimension :math:`2m - 2`).  For every f-divergence, convexity then gives
:math:`D_f(Q) \le \sum_t w_t D_f(C_t) \le \max_t D_f(C_t)`.

* :func:`staircase_refinement` - Lemma A.1: a staircase channel with nested high sets per
  original output and the merge map back to Q (the paper's Example A.3);
* :func:`layer_decomposition` - Proposition 4.2 / Lemma B.1: a staircase channel with interval
  high sets peeled into SPR channels (the paper's Example B.2);
* :func:`spr_decomposition` - the certificate :math:`\sum_t w_t C_t^\top [p_0\ p_1] = Q^\top
  [p_0\ p_1]`, each :math:`C_t` the SPR channel of an LR-contiguous partition with its outputs placed
  injectively into Q's output slots;
* :func:`verify_certificate` - the check of a certificate by matrix products alone (shares no code
  with the construction);
* :func:`dominance` - per divergence: value <= mixture bound <= best component <= optimum.

**Construction** (``docs/certificates.md``). The paper's own route (refine, remove the zigzag and
3-cycle obstructions, peel layers) is a proof about extreme points. When Q itself, rows in
likelihood-ratio order, is a staircase channel with interval high sets (SPR mechanisms, k-ary RR,
Example B.2), its layers (Proposition 4.2) are the certificate. For any other Q we compute the
convex combination directly by column generation: the master problem is the distance from the target
pair to the convex hull of the SPR pairs found so far (non-negative least squares; in whitened
coordinates when the pairs are close together), and the pricing oracle maximises the master's
residual direction over all SPR pairs exactly, by a dynamic program over LR-contiguous partitions (a
linear functional of the pair is a sum of block scores over the common denominator :math:`1+(s-1)c`,
``c = e^-eps``; the best slot of a block is chosen per block). When the best partition places two
blocks in one slot (a merged SPR, not an SPR), Proposition 4.3 splits it into randomized response on
the coarser partition plus an input-independent remainder, whose one-block SPR pairs are then
optimal too; those enter instead. A linear functional's maximum over the joint range is attained at
an extreme point, an SPR pair (Theorem 3.1), so the oracle is exact. At the end the combination is
reduced to affinely independent pairs (Caratheodory, at most 2m - 1) and the weights are solved
again from the small linear system (least squares with iterative refinement), so the residual is at
rounding level.
"""

from __future__ import annotations

import math
from dataclasses import KW_ONLY, dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from ldpopt._numerics import fsum, rescale
from ldpopt._validation import check_eps, check_labelled_pair, is_real
from ldpopt.divergences import FDivergence, get_divergence, is_chernoff
from ldpopt.mechanism import Mechanism, as_channel_matrix, ldp_violation
from ldpopt.spr.reduction import likelihood_ratio_reduction
from ldpopt.spr.solve import optimal_mechanism

__all__ = [
    "DEFAULT_DIVERGENCES",
    "CERTIFICATE_FORMAT",
    "RESIDUAL_TOL",
    "DominanceResult",
    "DominanceRow",
    "LayerDecomposition",
    "SPRDecomposition",
    "StaircaseRefinement",
    "CertificateCheck",
    "dominance",
    "layer_decomposition",
    "spr_decomposition",
    "staircase_refinement",
    "verify_certificate",
]

#: the certificate's contract: max |sum_t w_t C_t^T [p0 p1] - Q^T [p0 p1]| <= RESIDUAL_TOL.  The
#: entries are probabilities (<= 1); each recomputed product has ~k ulp of rounding (~1e-14 at
#: k = 100 in the worst case, ~1e-16 typically), so 1e-12 leaves room for the products while
#: any real gap in the convex combination would be far larger.
RESIDUAL_TOL = 1e-12
#: the divergences :func:`dominance` reports by default (the built-in ones)
DEFAULT_DIVERGENCES = ("kl", "reverse_kl", "tv", "chi2", "hellinger", "js")
#: name of the JSON certificate format written by ``ldpopt compare`` and read by ``verify-certificate``
CERTIFICATE_FORMAT = "ldpopt.spr_certificate"
CERTIFICATE_VERSION = 1
#: the master's residual (max abs entry) at which the target counts as reached: a few ulp of the
#: probabilities; below it no new pair can be told from rounding
_MASTER_DONE = 1e-15
#: the master's whitening ignores directions in which the pairs minus the target spread less than
#: this: a gap there is below 1e-13 per entry (under RESIDUAL_TOL), and inverting a smaller
#: singular value would amplify the pairs' rounding (~1e-16) beyond 1e-3
_SV_FLOOR = 1e-13
#: guards a division by a sum of weights that NNLS may return as 0
_TINY = 1e-300
#: column generation stops after this many rounds (each adds at least one new SPR pair; a
#: safety bound far above the rounds observed, about m)
_MAX_ROUNDS = 2000
#: singular values of the augmented image matrix [X; 1] below this count as 0 (affine dependence,
#: Caratheodory step): moving the weights (<= 1) along such a direction changes the mixture by
#: less than this, 10 times below RESIDUAL_TOL, and the weights are solved again afterwards
_RANK_TOL = 1e-13
#: a polished weight at or below this is dropped (and the rest solved again): leaving its pair out
#: moves the mixture by at most this much per entry, 100 times below RESIDUAL_TOL
_NEGLIGIBLE_WEIGHT = 1e-14
#: a verified component may differ from the SPR channel of its partition by this much per entry
#: (both are 1/(1+(s-1)c) and c/(1+(s-1)c) rounded once or twice: a few ulp)
COMPONENT_ATOL = 1e-13
#: verified weights: >= -WEIGHT_ATOL and summing to 1 within WEIGHT_ATOL (a sum of <= 2m - 1
#: rounded weights is within ~m ulp of 1)
WEIGHT_ATOL = 1e-12


# ---------------------------------------------------------------------------------------------
# Lemma A.1: staircase refinement
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StaircaseRefinement:
    r"""A staircase channel :math:`\tilde Q` and the merge map :math:`\tau` with :math:`\tau(\tilde Q) = Q`.

    Attributes
    ----------
    matrix : ndarray, shape (k, n)
        :math:`\tilde Q`; fine column t is ``coefficients[t] * (1 + (e^eps - 1) 1{i in high_sets[t]})``.
    coefficients : ndarray, shape (n,)
        The scales :math:`\alpha_t > 0` of the fine columns.
    high_sets : tuple of tuple of int
        The high set of each fine column (the constant column of an output has high set ``()``).
    merge : ndarray of int, shape (n,)
        :math:`\tau`: the original output of each fine column.  Within one original output the
        high sets are nested, largest first (the constant column, if any, comes first).
    eps : float
    """

    matrix: np.ndarray
    coefficients: np.ndarray
    high_sets: tuple
    merge: np.ndarray
    eps: float

    def merged(self) -> np.ndarray:
        r""":math:`\tau(\tilde Q)`: the fine columns summed back into the original outputs."""
        m = int(self.merge.max()) + 1 if self.merge.size else 0
        out = np.zeros((self.matrix.shape[0], m))
        np.add.at(out.T, self.merge, self.matrix.T)
        return out


def _inv_expm1(eps: float) -> float:
    """:math:`1/(e^\\varepsilon - 1)` without overflow (``c / A`` for large eps)."""
    if eps < 700.0:
        return 1.0 / math.expm1(eps)
    c, A, _ = rescale(eps)
    return c / A


def staircase_refinement(Q: Any, eps: float) -> StaircaseRefinement:
    r"""Lemma A.1 of the SPR paper: refine an eps-LDP channel into staircase columns.

    For each non-zero column y with minimum :math:`\theta` write :math:`Q(i, y) = \theta(1 +
    (e^\varepsilon-1) u_i)` with :math:`u_i \in [0, 1]`; with the distinct positive levels
    :math:`\lambda_1 < \dots < \lambda_L` of u and :math:`H_t = \{i : u_i \ge \lambda_t\}` the
    column is :math:`\sum_{t=0}^{L} \alpha_t (1 + (e^\varepsilon-1) 1_{H_t})` with
    :math:`\alpha_0 = \theta(1-\lambda_L)` (high set empty: a constant column) and
    :math:`\alpha_t = \theta(\lambda_t - \lambda_{t-1})`.  Zero coefficients are left out.

    Parameters
    ----------
    Q : array_like or Mechanism
        Channel matrix, rows = inputs; must be eps-LDP.
    eps : float
        Finite privacy level >= 0.
    """
    matrix = as_channel_matrix(Q, "Q")
    e = _check_eps0(eps, allow_inf=False)
    _refuse_non_ldp(matrix, e, "Q")
    k, m = matrix.shape
    inv = _inv_expm1(e) if e > 0 else 0.0
    e_eps = math.exp(e)
    cols, coefs, sets, merge = [], [], [], []
    for y in range(m):
        col = matrix[:, y]
        theta = float(col.min())
        if col.max() == 0.0:
            continue
        if e == 0.0:
            levels = np.zeros(0)
            u = np.zeros(k)
        else:
            u = np.clip((col / theta - 1.0) * inv, 0.0, 1.0)
            levels = np.unique(u[u > 0])
        top = float(levels[-1]) if levels.size else 0.0
        pieces = [(theta * (1.0 - top), np.zeros(k, dtype=bool))]
        prev = 0.0
        for lam in levels:
            pieces.append((theta * (float(lam) - prev), u >= lam))
            prev = float(lam)
        for alpha, high in pieces:
            if alpha <= 0.0:
                continue
            cols.append(np.where(high, alpha * e_eps, alpha))
            coefs.append(alpha)
            sets.append(tuple(int(i) for i in np.flatnonzero(high)))
            merge.append(y)
    tilde = np.array(cols).T if cols else np.zeros((k, 0))
    return StaircaseRefinement(
        matrix=_frozen(tilde),
        coefficients=_frozen(np.array(coefs, dtype=float)),
        high_sets=tuple(sets),
        merge=_frozen(np.array(merge, dtype=int)),
        eps=e,
    )


# ---------------------------------------------------------------------------------------------
# Proposition 4.2 / Lemma B.1: layers of an interval staircase channel
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LayerDecomposition:
    r""":math:`Q = \sum_t \beta_t \hat Q^{(t)}` for a staircase channel whose high sets are intervals.

    Attributes
    ----------
    weights : ndarray
        :math:`\beta_t = \lambda_t (e^\varepsilon + s_t - 1) > 0`, summing to 1.
    thickness : ndarray
        :math:`\lambda_t`, the weight peeled off with layer t (Lemma B.1).
    partitions : tuple
        Per layer, its blocks (row indices, intervals in the row order of Q).
    placements : tuple
        Per layer, the column of Q of each block.
    components : tuple of ndarray
        :math:`\hat Q^{(t)}`: the SPR channel of the layer in those columns, zero elsewhere.
    residual : float
        :math:`\max|\sum_t \beta_t \hat Q^{(t)} - Q|` (the matrices themselves, not only their pairs).
    """

    weights: np.ndarray
    thickness: np.ndarray
    partitions: tuple
    placements: tuple
    components: tuple
    residual: float


#: a staircase column's entries are theta or e^eps theta up to this relative rounding, and peeled
#: weights below this times the largest are rounding of a zero (the weights are differences of
#: O(1) numbers, each exact to a few ulp)
_STAIR_RTOL = 1e-9


def layer_decomposition(Q: Any, eps: float) -> LayerDecomposition:
    r"""Proposition 4.2 of the SPR paper (the peeling of Lemma B.1) for an interval staircase channel.

    Every active column of Q must be staircase, :math:`Q(i, y) = \theta_y(1 + (e^\varepsilon-1)
    1\{i \in I_y\})`, with :math:`I_y` an interval of rows in the given order (a constant column
    counts as :math:`I_y = [k]` with :math:`\theta_y` = its entry / :math:`e^\varepsilon`).  The
    weighted intervals then cover every row equally, and peeling partitions off from the left
    (from row 0, an interval starting where the previous one ended - the one with the largest
    remaining weight - until the rows are tiled; then the smallest weight of the layer,
    :math:`\lambda_t`, is subtracted from each of its intervals) writes Q as a convex combination
    of SPR channels placed in its columns.  This is the paper's Example B.2 construction; rows are
    taken in the given order (sort them by likelihood ratio first for an SPR statement about a
    pair).
    """
    matrix = as_channel_matrix(Q, "Q")
    e = check_eps(eps, allow_inf=False)
    _refuse_non_ldp(matrix, e, "Q")
    k, m = matrix.shape
    e_eps = math.exp(e)
    weight: dict[int, float] = {}
    interval: dict[int, tuple[int, int]] = {}
    for y in range(m):
        col = matrix[:, y]
        hi = float(col.max())
        if hi == 0.0:
            continue
        high = col >= hi / (1.0 + _STAIR_RTOL)
        rows = np.flatnonzero(high)
        low_ok = np.all(np.abs(col[~high] * e_eps - hi) <= _STAIR_RTOL * hi)
        if not low_ok or rows[-1] - rows[0] + 1 != rows.size:
            raise ValueError(
                f"Q column {y} is not a staircase column with an interval high set "
                f"(entries {hi!r} on rows {rows.tolist()} and e^-eps times that elsewhere)"
            )
        weight[y] = hi / e_eps
        interval[y] = (int(rows[0]), int(rows[-1]) + 1)
    wmax = max(weight.values())
    layers, thick = [], []
    while any(w > _STAIR_RTOL * wmax for w in weight.values()):
        chosen, start = [], 0
        while start < k:
            cands = [y for y, (a, _) in interval.items() if a == start and weight[y] > _STAIR_RTOL * wmax]
            if not cands:
                raise ValueError("Q's intervals do not cover every row equally (Q is not row-stochastic)")
            y = max(cands, key=lambda c: weight[c])
            chosen.append(y)
            start = interval[y][1]
        lam = min(weight[y] for y in chosen)
        for y in chosen:
            weight[y] -= lam
        layers.append(chosen)
        thick.append(lam)
    comps, betas, parts = [], [], []
    for chosen, lam in zip(layers, thick, strict=True):
        s = len(chosen)
        comp = np.zeros((k, m))
        for y in chosen:
            a, b = interval[y]
            comp[:, y] = 1.0 / (e_eps + s - 1)
            comp[a:b, y] = e_eps / (e_eps + s - 1)
        comps.append(comp)
        betas.append(lam * (e_eps + s - 1))
        parts.append(tuple(tuple(range(*interval[y])) for y in chosen))
    total = sum(b * c for b, c in zip(betas, comps, strict=True))
    return LayerDecomposition(
        weights=_frozen(np.array(betas)),
        thickness=_frozen(np.array(thick)),
        partitions=tuple(parts),
        placements=tuple(tuple(ch) for ch in layers),
        components=tuple(_frozen(c) for c in comps),
        residual=float(np.max(np.abs(total - matrix))),
    )


# ---------------------------------------------------------------------------------------------
# the decomposition
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SPRDecomposition:
    r"""A dominance certificate: :math:`\sum_t w_t C_t^\top [p_0\ p_1] = Q^\top [p_0\ p_1]`.

    Attributes
    ----------
    weights : ndarray, shape (T,)
        :math:`w_t \ge 0`, summing to 1; ``T <= 2m - 1``.
    partitions : tuple
        Per component, its LR-contiguous partition of the inputs, blocks in likelihood-ratio order,
        symbols by the caller's labels (indices when there are none).  Symbols with zero mass
        under both distributions join the first block.
    placements : tuple of tuple of int
        Per component, the output slot (column of Q) of each block; injective.
    components : tuple of ndarray, each shape (k, m)
        :math:`C_t`: the SPR channel of the partition (s-ary randomized response on the block
        label) with block j's output in column ``placements[t][j]``, other columns zero.
    residual : float
        :math:`\max |\sum_t w_t C_t^\top [p_0\ p_1] - Q^\top [p_0\ p_1]|` (<= :data:`RESIDUAL_TOL`
        when ``status == 0``).
    matrix, p0, p1, eps :
        The certified mechanism's channel (k x m), the distributions and the privacy level.
    labels : tuple or None
        The caller's symbol labels (from a mechanism or labelled distributions).
    index_partitions : tuple
        ``partitions`` with symbol indices (what the JSON certificate stores).
    rounds : int
        Rounds of column generation.
    status : int
        0: certified; 1: the residual exceeds :data:`RESIDUAL_TOL` (``message`` says by how much).
    message : str
    """

    weights: np.ndarray
    partitions: tuple
    placements: tuple
    components: tuple
    residual: float
    matrix: np.ndarray
    p0: np.ndarray
    p1: np.ndarray
    _: KW_ONLY
    eps: float
    labels: tuple | None = field(default=None, repr=False)
    index_partitions: tuple = field(default=(), repr=False)
    rounds: int = 0
    status: int = 0
    message: str = "certified"

    @property
    def success(self) -> bool:
        """True when the certificate holds within :data:`RESIDUAL_TOL`."""
        return self.status == 0

    @property
    def num_components(self) -> int:
        """Number of SPR components T."""
        return int(self.weights.shape[0])

    def component_pairs(self) -> list[tuple[np.ndarray, np.ndarray]]:
        r"""Per component, its pair :math:`(C_t^\top p_0, C_t^\top p_1)`."""
        return [(c.T @ self.p0, c.T @ self.p1) for c in self.components]

    def to_dict(self) -> dict:
        """The certificate as a JSON-ready dict (the format :func:`verify_certificate` reads)."""
        return {
            "format": CERTIFICATE_FORMAT,
            "format_version": CERTIFICATE_VERSION,
            "eps": self.eps if math.isfinite(self.eps) else "inf",
            "labels": None if self.labels is None else [_json_label(x) for x in self.labels],
            "p0": self.p0.tolist(),
            "p1": self.p1.tolist(),
            "matrix": self.matrix.tolist(),
            "weights": self.weights.tolist(),
            "partitions": [[list(b) for b in part] for part in self.index_partitions],
            "placements": [list(pl) for pl in self.placements],
            "components": [c.tolist() for c in self.components],
            "residual": self.residual,
        }


def _json_label(x: Any) -> Any:
    return x if isinstance(x, (str, int)) and not isinstance(x, bool) else str(x)


def spr_decomposition(
    mechanism: Any, p0: Any, p1: Any, eps: float | None = None, *, normalize: bool = False
) -> SPRDecomposition:
    r"""Certificate that the mechanism's pair of output distributions is a convex combination of SPR pairs.

    Parameters
    ----------
    mechanism : Mechanism, design result or array_like (k, m)
        The mechanism Q (rows = inputs).
    p0, p1 : array_like, dict or pandas Series
        The two distributions on the k inputs (aligned with a mechanism's labels).
    eps : float, optional
        Privacy level >= 0 (``math.inf``: none); default the mechanism's own.  Q must be eps-LDP:
        a violating column is refused naming its entries.
    normalize : bool
        Rescale p0, p1 to sum to 1 instead of rejecting them.

    Returns
    -------
    SPRDecomposition
        ``weights``, ``partitions``, ``placements``, ``components`` (k x m each) and ``residual``.
    """
    matrix, u, v, labels, e = _inputs(mechanism, p0, p1, eps, normalize)
    red = likelihood_ratio_reduction(u, v)
    target = np.concatenate([matrix.T @ u, matrix.T @ v])
    found = None
    layers = _layer_path(matrix, red, e)
    if layers is not None:  # Proposition 4.2 applies to Q itself: its layers, exactly
        found = _assemble(red, layers[0], layers[1], e, matrix.shape, u, v, target)
        rounds = 0
    if found is None or found[3] > RESIDUAL_TOL:
        cols, w, rounds = _column_generation(red.p, red.q, e, matrix.shape[1], target)
        found = _assemble(red, cols, w, e, matrix.shape, u, v, target)
    cols, keep, comps, residual, weights = found
    index_parts = tuple(red.lift_blocks(cols[i][0]) for i in keep)
    parts = index_parts
    if labels is not None:
        parts = tuple(tuple(tuple(labels[i] for i in b) for b in part) for part in index_parts)
    ok = residual <= RESIDUAL_TOL
    return SPRDecomposition(
        weights=_frozen(weights),
        partitions=parts,
        placements=tuple(tuple(cols[i][1]) for i in keep),
        components=tuple(_frozen(c) for c in comps),
        residual=residual,
        matrix=_frozen(matrix),
        p0=_frozen(u),
        p1=_frozen(v),
        eps=e,
        labels=labels,
        index_partitions=index_parts,
        rounds=rounds,
        status=0 if ok else 1,
        message="certified" if ok else f"residual {residual:.3g} exceeds {RESIDUAL_TOL:g}",
    )


def _assemble(red, cols, w, eps, shape, u, v, target):
    """``(cols, keep, components, residual, weights)``: the components of the columns, reduced to
    affinely independent pairs with their weights solved again (Caratheodory, polish)."""
    comps = [_component(red, cuts, slots, eps, shape) for cuts, slots in cols]
    images = np.array([np.concatenate([c.T @ u, c.T @ v]) for c in comps]).T
    keep, weights = _caratheodory(images, np.asarray(w, dtype=float), target)
    comps = [comps[i] for i in keep]
    return cols, keep, comps, _residual(comps, weights, u, v, target), weights


def _layer_path(matrix: np.ndarray, red, eps: float):
    """``(columns, weights)`` of :func:`layer_decomposition` when Q with its rows in likelihood-ratio
    order is a staircase channel with interval high sets (SPR mechanisms such as k-ary RR, and
    mixtures of them like the paper's Example B.2), else None.  Only without ties and zero-mass
    symbols, where the reduced alphabet is Q's own rows."""
    if red.dropped or any(len(cl) > 1 for cl in red.classes) or not 0.0 < eps < math.inf:
        return None
    order = [cl[0] for cl in red.classes]
    try:
        lay = layer_decomposition(matrix[order], eps)
    except ValueError:
        return None
    cols = [
        ([(blk[0], blk[-1] + 1) for blk in part], list(slots))
        for part, slots in zip(lay.partitions, lay.placements, strict=True)
    ]
    return cols, lay.weights


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.array(a)
    a.setflags(write=False)
    return a


def _check_eps0(eps: Any, allow_inf: bool = True) -> float:
    """eps >= 0 (0 allowed here: every channel is then input-independent)."""
    if is_real(eps) and float(eps) == 0.0:
        return 0.0
    return check_eps(eps, allow_inf=allow_inf)


def _refuse_non_ldp(matrix: np.ndarray, eps: float, name: str) -> None:
    """ValueError naming the entries of the first column that violates eps-LDP."""
    viol = ldp_violation(matrix, eps)
    if viol is None:
        return
    j, level = viol
    col = matrix[:, j]
    hi, lo = int(np.argmax(col)), int(np.argmin(col))
    raise ValueError(
        f"{name} is not eps-LDP for eps={eps!r}: {name}[{hi}, {j}] = {float(col[hi])!r} > e^eps * "
        f"{name}[{lo}, {j}] = e^{eps:g} * {float(col[lo])!r} (column {j} has privacy level {level!r})"
    )


def _inputs(mechanism: Any, p0: Any, p1: Any, eps: Any, normalize: bool):
    """Validated ``(matrix, p0, p1, labels, eps)``."""
    if isinstance(mechanism, Mechanism) or isinstance(getattr(mechanism, "mechanism", None), Mechanism):
        mech = mechanism if isinstance(mechanism, Mechanism) else mechanism.mechanism
        matrix = np.array(mech.matrix)
        u, v = mech.input_pair(p0, p1, normalize=normalize)
        labels = mech.labels
        if labels is None:
            labels = check_labelled_pair(p0, p1, normalize=normalize)[2]
        e = mech.eps if eps is None else _check_eps0(eps)
    else:
        if eps is None:
            raise TypeError("eps is required when the mechanism is given as a matrix")
        matrix = np.array(as_channel_matrix(mechanism, "mechanism"))
        u, v, labels = check_labelled_pair(p0, p1, normalize=normalize)
        e = _check_eps0(eps)
        if u.shape[0] != matrix.shape[0]:
            raise ValueError(f"p0 has {u.shape[0]} symbols but the mechanism has {matrix.shape[0]} inputs")
    _refuse_non_ldp(matrix, e, "mechanism")
    return matrix, u, v, labels, e


def _component(red, cuts, slots, eps: float, shape) -> np.ndarray:
    """The SPR channel of the reduced partition ``cuts`` (lifted to the caller's symbols) with
    block j's output in column ``slots[j]``."""
    c = rescale(eps).c
    s = len(cuts)
    den = 1.0 + (s - 1) * c
    high, low = 1.0 / den, c / den
    out = np.zeros(shape)
    for block, j in zip(red.lift_blocks(cuts), slots, strict=True):
        out[:, j] = low
        out[list(block), j] = high
    return out


def _block_sums(x: np.ndarray) -> np.ndarray:
    """``S[a, b] = sum(x[a:b])`` for 0 <= a <= b <= k from an exactly rounded prefix (float)."""
    pre = np.array([0.0] + [math.fsum(x[: i + 1].tolist()) for i in range(x.shape[0])])
    return pre[None, :] - pre[:, None]


def _spr_image(dP, dQ, cuts, slots, c, A, m) -> np.ndarray:
    s = len(cuts)
    den = 1.0 + (s - 1) * c
    img = np.zeros(2 * m)
    for (a, b), j in zip(cuts, slots, strict=True):
        img[j] = (c + A * dP[a, b]) / den
        img[m + j] = (c + A * dQ[a, b]) / den
    return img


def _price(dP, dQ, c, A, g, h, smax):
    r"""Exact pricing: for each number of blocks s <= smax, the LR-contiguous partition and the slot
    of each block maximising :math:`\sum_j g_j u_j + h_j v_j` over the pair of its (merged) SPR
    mechanism.  Returns ``[(value, cuts, slots)]``.

    A block [a, b) in slot j scores :math:`g_j (c + A\Delta P) + h_j (c + A \Delta Q)`; the best
    slot is taken per block (several blocks may pick one slot: the caller splits such a merged
    mechanism by Proposition 4.3), and the best sum of s block scores over the partitions of
    [0, k) is a dynamic program over the end points (:math:`O(s k^2)`).
    """
    k = dP.shape[0] - 1
    W = np.full(dP.shape, -np.inf)
    J = np.zeros(dP.shape, dtype=int)
    x = c + A * dP
    y = c + A * dQ
    for j in range(g.shape[0]):
        sc = g[j] * x + h[j] * y
        better = sc > W
        W[better] = sc[better]
        J[better] = j
    W[np.tril_indices(k + 1)] = -np.inf
    F = np.full(k + 1, -np.inf)
    F[0] = 0.0
    back = []
    out = []
    for s in range(1, smax + 1):
        T = F[:, None] + W
        arg = T.argmax(axis=0)
        F = T[arg, np.arange(k + 1)]
        back.append(arg)
        if not np.isfinite(F[k]):
            continue
        cuts = []
        i = k
        for r in range(s, 0, -1):
            t = int(back[r - 1][i])
            cuts.append((t, i))
            i = t
        cuts.reverse()
        out.append((float(F[k]) / (1.0 + (s - 1) * c), cuts, [int(J[a, b]) for a, b in cuts]))
    return out


def _column_generation(p, q, eps, m, target):
    r"""``(columns, weights, rounds)``: SPR pairs (``(cuts, slots)`` on the reduced alphabet) whose
    convex combination with ``weights`` is ``target`` up to rounding.

    Master: non-negative least squares ``min |[X; 1] w - [target; 1]|, w >= 0`` over the pairs X
    found so far (Lawson-Hanson, scipy's ``nnls``; also in whitened coordinates, :func:`_master`).
    At its optimum the residual r satisfies :math:`[x; 1]^\top r \le 0` for every column present;
    a pair with :math:`[x; 1]^\top r > 0` lowers the distance, and :func:`_price` finds the pair
    maximising it over all SPR pairs.  When none is positive the target's distance to the joint
    range is the current residual, which is 0 by Theorem 3.1 (the target is the pair of an
    eps-LDP channel).  In floating point the improvement :math:`|r|^2` falls below the rounding of
    the prices once :math:`|r|` is ~1e-8, which is what the whitened master is for; a stall above
    :data:`RESIDUAL_TOL` is reported by the caller as ``status = 1``.
    """
    from scipy.optimize import nnls

    k = p.shape[0]
    c, A, _ = rescale(eps)
    dP, dQ = _block_sums(p), _block_sums(q)
    cols: list[tuple[list, list]] = []
    images: list[np.ndarray] = []
    seen: set = set()

    def add(cuts, slots) -> bool:
        key = (tuple(cuts), tuple(slots))
        if key in seen:
            return False
        seen.add(key)
        cols.append((list(cuts), list(slots)))
        images.append(_spr_image(dP, dQ, cuts, slots, c, A, m))
        return True

    for j in range(m):
        add([(0, k)], [j])
    rounds = 0
    whiten = False
    while True:
        rounds += 1
        X = np.array(images).T
        w, g, offset = _master(X, target, nnls, whiten)
        # NNLS stops once its squared residual is negligible, which can leave sum(w) = 1 - delta
        # where the pairs are close together: w / sum(w) is the combination
        w = w / max(float(w.sum()), _TINY)
        if _miss(X, w, target) <= _MASTER_DONE or rounds >= _MAX_ROUNDS:
            break
        added = False
        for val, cuts, slots in _price(dP, dQ, c, A, g[:m], g[m : 2 * m], min(m, k)):
            if val + offset <= 0.0:
                continue
            if len(set(slots)) == len(slots):
                added |= add(cuts, slots)
            else:  # Proposition 4.3: the one-block SPR pairs of the merged slots are optimal too
                for j in sorted(set(slots)):
                    if slots.count(j) > 1:
                        added |= add([(0, k)], [j])
        if not added:
            if whiten:
                break
            whiten = True  # the plain master stalled: continue in whitened coordinates
    return cols, w, rounds


def _miss(X: np.ndarray, w: np.ndarray, target: np.ndarray) -> float:
    """How far ``X w`` (with ``w`` summing to 1) is from the target: max abs entry."""
    return max(float(np.max(np.abs(X @ w - target))), abs(float(w.sum()) - 1.0))


def _master(X: np.ndarray, target: np.ndarray, nnls, whiten: bool) -> tuple[np.ndarray, np.ndarray, float]:
    r"""``(w, g, offset)``: the master's weights and the pricing functional ``g . x + offset``.

    Plain: the NNLS ``min |[X; 1] w - [x^*; 1]|`` over ``w >= 0``, whose residual
    :math:`(r, r_0)` prices a pair x by :math:`r^\top x + r_0`.  Whitened: the same question in
    coordinates where the pairs are spread evenly: with the thin SVD :math:`X - x^* = U \Sigma
    V^\top` (singular values above :data:`_SV_FLOOR`), :math:`\sum_t w_t x_t = x^*` with
    :math:`\sum_t w_t = 1` is :math:`V^\top w = 0`; the NNLS ``min |[V^T; 1] w - [0; 1]|`` stays
    accurate where the pairs differ by tiny amounts in some direction (eps near 0, p0 close to
    p1), where the plain one stops early, and its residual :math:`(\rho, \rho_0)` prices x by
    :math:`\rho^\top \Sigma^{-1} U^\top (x - x^*) + \rho_0`.  The plain functional is the
    cheaper and robust one; the whitened one takes over when it stalls.
    """
    if not whiten:
        M = np.vstack([X, np.ones(X.shape[1])])
        b = np.concatenate([target, [1.0]])
        w, _ = nnls(M, b)
        r = b - M @ w
        return w, r[:-1], float(r[-1])
    U, sv, Vt = np.linalg.svd(X - target[:, None], full_matrices=False)
    keep = sv > _SV_FLOOR
    M = np.vstack([Vt[keep], np.ones(X.shape[1])])
    b = np.zeros(M.shape[0])
    b[-1] = 1.0
    w, _ = nnls(M, b)
    rho = b - M @ w
    g = U[:, keep] @ (rho[:-1] / sv[keep])
    return w, g, float(rho[-1] - g @ target)


def _caratheodory(images: np.ndarray, w: np.ndarray, target: np.ndarray) -> tuple[list[int], np.ndarray]:
    """Indices of affinely independent images (at most 2m - 1) and the weights solved again on them."""
    idx = [i for i in range(w.shape[0]) if w[i] > 0.0]
    w = w[idx].astype(float)
    m2 = images.shape[0]
    while len(idx) > 1:
        M = np.vstack([images[:, idx], np.ones(len(idx))])
        _, sv, vt = np.linalg.svd(M)
        rank = int(np.sum(sv > _RANK_TOL))
        if len(idx) <= min(rank, m2 - 1):
            break
        z = vt[-1]
        if not np.any(z > 0):
            z = -z
        pos = z > 0
        t = float(np.min(w[pos] / z[pos]))
        w = w - t * z
        drop = int(np.flatnonzero(pos)[np.argmin(w[pos])])
        w[drop] = 0.0
        live = [i for i in range(len(idx)) if i != drop and w[i] > 0.0]
        idx = [idx[i] for i in live]
        w = w[live]
    w = _polish(images[:, idx], w, target)
    while len(idx) > 1 and np.any(w <= _NEGLIGIBLE_WEIGHT):  # its pair is not needed
        pos = np.flatnonzero(w > _NEGLIGIBLE_WEIGHT)
        idx = [idx[int(i)] for i in pos]
        w = _polish(images[:, idx], w[pos], target)
    return idx, w


def _polish(X: np.ndarray, w: np.ndarray, target: np.ndarray) -> np.ndarray:
    """The weights as the least-squares solution of ``[X; 1] w = [target; 1]`` with two rounds of
    iterative refinement (residuals by exactly rounded sums), kept >= 0 and summing to 1; the master's
    weights when that is not better."""
    M = np.vstack([X, np.ones(X.shape[1])])
    b = np.concatenate([target, [1.0]])

    def resid(x):
        return np.array([fsum([bi, *(-M[r] * x).tolist()]) for r, bi in enumerate(b)])

    sol = w.copy()
    best = float(np.max(np.abs(resid(w))))
    x, *_ = np.linalg.lstsq(M, b, rcond=None)
    for _ in range(3):
        d, *_ = np.linalg.lstsq(M, resid(x), rcond=None)
        x = x + d
    x = np.maximum(x, 0.0)
    x = x / fsum(x.tolist())
    err = float(np.max(np.abs(resid(x))))
    if err <= best:
        sol = x
    else:
        sol = np.maximum(sol, 0.0) / fsum(np.maximum(sol, 0.0).tolist())
    return sol


def _residual(comps, weights, u, v, target) -> float:
    total = np.zeros_like(target)
    for wt, comp in zip(weights, comps, strict=True):
        total = total + wt * np.concatenate([comp.T @ u, comp.T @ v])
    return float(np.max(np.abs(total - target))) if total.size else 0.0


# ---------------------------------------------------------------------------------------------
# verification by matrix products
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CertificateCheck:
    """Outcome of :func:`verify_certificate`: ``valid``, the recomputed ``residual`` and, when not
    valid, every ``problem`` found."""

    valid: bool
    residual: float
    problems: tuple = ()
    num_components: int = 0


def _lr_key(a: float, b: float) -> tuple[int, Fraction]:
    return (1, Fraction(0)) if b == 0.0 else (0, Fraction(a) / Fraction(b))


def _contiguous(blocks, p0: np.ndarray, p1: np.ndarray) -> bool:
    """True when every symbol of a later block has a likelihood ratio >= every one of an earlier
    block (zero-mass symbols ignored), by exact rational comparison of the floats."""
    prev_max = None
    for block in blocks:
        keys = [_lr_key(float(p0[i]), float(p1[i])) for i in block if p0[i] > 0 or p1[i] > 0]
        if not keys:
            continue
        if prev_max is not None and min(keys) < prev_max:
            return False
        prev_max = max(keys)
    return True


def verify_certificate(cert: Any) -> CertificateCheck:
    r"""Re-check a certificate (a :class:`SPRDecomposition` or its :meth:`~SPRDecomposition.to_dict`)
    with matrix products alone.

    Checked: the weights are >= 0 and sum to 1; each component is a k x m channel equal to the
    SPR channel of its partition (s-ary randomized response, ``1/(1+(s-1)c)`` and
    ``c/(1+(s-1)c)``) placed in its slots; the partition covers the inputs and is LR-contiguous
    for (p0, p1); Q is eps-LDP; and :math:`\max|\sum_t w_t C_t^\top [p_0\ p_1] - Q^\top [p_0\ p_1]|
    \le` :data:`RESIDUAL_TOL`.  A document that is not a certificate (missing keys, ragged arrays,
    inconsistent shapes) raises ValueError; a certificate that does not hold returns ``valid=False``.
    """
    d = cert.to_dict() if isinstance(cert, SPRDecomposition) else cert
    if not isinstance(d, dict) or d.get("format") != CERTIFICATE_FORMAT:
        raise ValueError(f"not a certificate: expected a JSON object with format {CERTIFICATE_FORMAT!r}")
    problems: list[str] = []
    try:
        eps = math.inf if d["eps"] == "inf" else float(d["eps"])
        Q = np.array(d["matrix"], dtype=float)
        p0 = np.array(d["p0"], dtype=float)
        p1 = np.array(d["p1"], dtype=float)
        w = np.array(d["weights"], dtype=float)
        comps = [np.array(c, dtype=float) for c in d["components"]]
        parts = list(d["partitions"])
        places = list(d["placements"])
    except KeyError as exc:
        raise ValueError(f"malformed certificate: missing key {exc}") from None
    except (TypeError, ValueError) as exc:
        raise ValueError(f"malformed certificate: {exc}") from None
    if Q.ndim != 2 or p0.shape != (Q.shape[0],) or p1.shape != (Q.shape[0],) or w.ndim != 1:
        raise ValueError("malformed certificate: matrix, p0, p1 and weights have inconsistent shapes")
    if not (len(comps) == len(parts) == len(places) == w.shape[0]):
        raise ValueError(
            "malformed certificate: weights, partitions, placements, components differ in number"
        )
    if not eps >= 0.0:
        raise ValueError(f"malformed certificate: eps must be >= 0, got {eps!r}")
    k, m = Q.shape
    if ldp_violation(Q, eps) is not None:
        problems.append(f"the matrix is not eps-LDP for eps={eps!r}")
    if np.any(w < -WEIGHT_ATOL) or abs(fsum(w.tolist()) - 1.0) > WEIGHT_ATOL:
        problems.append("the weights are not a probability vector")
    if w.shape[0] > 2 * m - 1:
        problems.append(f"{w.shape[0]} components, more than 2m - 1 = {2 * m - 1}")
    c = 0.0 if math.isinf(eps) else math.exp(-eps)
    for t, (comp, part, place) in enumerate(zip(comps, parts, places, strict=True)):
        issue = _check_component(comp, part, place, c, k, m, p0, p1)
        if issue:
            problems.append(f"component {t}: {issue}")
    if comps and all(cp.shape == (k, m) for cp in comps):
        P = np.column_stack([p0, p1])
        mix = sum(wt * (cp.T @ P) for wt, cp in zip(w, comps, strict=True))
        residual = float(np.max(np.abs(mix - Q.T @ P)))
    else:
        residual = math.nan
    if not residual <= RESIDUAL_TOL:
        problems.append(f"residual {residual!r} exceeds {RESIDUAL_TOL:g}")
    return CertificateCheck(not problems, residual, tuple(problems), len(comps))


def _check_component(comp, part, place, c, k, m, p0, p1) -> str | None:
    if comp.shape != (k, m):
        return f"shape {comp.shape}, expected {(k, m)}"
    blocks = [list(map(int, b)) for b in part]
    slots = [int(j) for j in place]
    flat = sorted(i for b in blocks for i in b)
    if flat != list(range(k)) or any(not b for b in blocks):
        return "the partition does not cover the inputs exactly once"
    if len(slots) != len(blocks) or len(set(slots)) != len(slots) or not all(0 <= j < m for j in slots):
        return "the placement is not an injective map of the blocks into the outputs"
    if not _contiguous(blocks, p0, p1):
        return "the partition is not LR-contiguous"
    s = len(blocks)
    den = 1.0 + (s - 1) * c
    expect = np.zeros((k, m))
    for b, j in zip(blocks, slots, strict=True):
        expect[:, j] = c / den
        expect[b, j] = 1.0 / den
    if np.max(np.abs(comp - expect)) > COMPONENT_ATOL:
        return "not the SPR channel of its partition"
    return None


# ---------------------------------------------------------------------------------------------
# dominance
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DominanceRow:
    r"""One divergence: ``value <= mixture <= best_value <= optimum``.

    Attributes
    ----------
    divergence : str
    value : float
        :math:`D_f` of the given mechanism.
    mixture : float
        The convexity bound :math:`\sum_t w_t D_f(C_t)` (for Renyi: the transform of the mixed
        f-divergence :math:`\sum_t w_t S_t`, the convex quantity).
    best_index : int
        The component with the largest value.
    best_value : float
    optimum : float
        The global optimum over all eps-LDP mechanisms (:func:`ldpopt.optimal_mechanism`).
    optimal_partition : tuple or None
        Its partition (symbol indices).
    """

    divergence: str
    value: float
    mixture: float
    best_index: int
    best_value: float
    optimum: float
    optimal_partition: tuple | None = None

    @property
    def loss(self) -> float:
        """``optimum - value``: what the given mechanism gives up for this divergence (>= 0: a
        negative difference is rounding of two evaluations of the same value)."""
        return max(self.optimum - self.value, 0.0)


@dataclass(frozen=True)
class DominanceResult:
    """:func:`dominance`: the certificate and one :class:`DominanceRow` per divergence."""

    decomposition: SPRDecomposition
    rows: tuple
    eps: float

    @property
    def success(self) -> bool:
        """True when the certificate holds."""
        return self.decomposition.success


def dominance(
    mechanism: Any,
    p0: Any,
    p1: Any,
    eps: float | None = None,
    divergences: Any = DEFAULT_DIVERGENCES,
    *,
    normalize: bool = False,
) -> DominanceResult:
    r"""Is the mechanism dominated, by which SPR mechanisms, and how much does it lose?

    Builds the certificate (:func:`spr_decomposition`) and, for each divergence, reports the
    mechanism's value, the mixture bound, the best SPR component and the global optimum:
    value <= mixture <= best <= optimum.
    """
    dec = spr_decomposition(mechanism, p0, p1, eps, normalize=normalize)
    if isinstance(divergences, (str, FDivergence)):
        divergences = (divergences,)
    try:
        names = list(divergences)
    except TypeError:
        raise TypeError(
            f"divergences must be a divergence or a list of them, got divergences={divergences!r}"
        ) from None
    divs = [get_divergence(d) for d in names]
    if not divs:
        raise ValueError("divergences must name at least one divergence")
    if any(is_chernoff(d) for d in divs):
        raise ValueError("divergences: the Chernoff information is not an f-divergence (no dominance bound)")
    u, v = dec.p0, dec.p1
    m0, m1 = dec.matrix.T @ u, dec.matrix.T @ v
    pairs = dec.component_pairs()
    rows = []
    for div in divs:
        value = div(m0, m1)
        comp_vals = [div(a, b) for a, b in pairs]
        raws = [div.raw(a, b) for a, b in pairs]
        mixture = div.transform(fsum(float(wt) * r for wt, r in zip(dec.weights, raws, strict=True)))
        best = int(np.argmax(comp_vals))
        if dec.eps == 0.0:
            optimum, opt_part = 0.0, None
        else:
            opt = optimal_mechanism(u, v, dec.eps, div)
            optimum, opt_part = opt.value, opt.partition
        rows.append(DominanceRow(div.name, value, mixture, best, comp_vals[best], optimum, opt_part))
    return DominanceResult(decomposition=dec, rows=tuple(rows), eps=dec.eps)
