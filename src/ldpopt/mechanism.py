r"""LDP mechanisms: a row-stochastic channel matrix with a claimed privacy level.

A mechanism :math:`Q` on inputs :math:`[k]` and outputs :math:`[n]` is stored with rows
indexed by inputs, ``matrix[x, y] = Q(y | x)``.  It is :math:`\varepsilon`-LDP when
:math:`Q(y|x) \le e^\varepsilon Q(y|x')` for all x, x', y (SPR paper, eq. 1).

Numerics: channel entries are built from :math:`c = e^{-\varepsilon}` rather than
:math:`e^\varepsilon`, so nothing overflows; for :math:`\varepsilon \gtrsim 745` the low
entries underflow to 0 in float64 and the LDP check accepts a zero wherever the
required lower bound :math:`e^{-\varepsilon}\max_x Q(y|x)` itself underflows.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ldpopt import _opendp, _sampler
from ldpopt._mechfile import read_mechanism_file, write_mechanism_file
from ldpopt._numerics import rescale
from ldpopt._validation import (
    as_real_array,
    check_eps,
    check_labelled_pair,
    check_positive_int,
    check_tolerance,
    is_integer,
    short_repr,
)
from ldpopt.divergences import FDivergence, get_divergence

__all__ = [
    "Mechanism",
    "as_channel_matrix",
    "as_mechanism",
    "check_channel_matrix",
    "randomized_response",
    "binary_mechanism",
    "spr_mechanism",
    "spr_mechanism_from_assignment",
    "two_set_mechanism",
    "LDP_RTOL",
    "ROW_SUM_TOL",
]

#: relative slack on e^eps when checking a floating-point channel for eps-LDP
LDP_RTOL = 1e-9
#: tolerance on |row sum - 1|
ROW_SUM_TOL = 1e-9
#: rows of the inputs of one partition block may differ by this much (absolute) and count as identical
PARTITION_ATOL = 1e-12
#: below this eps the entries of different SPR blocks may coincide in float64 (they differ by ~eps/s)
PARTITION_TIE_EPS = 2.0**-40
#: outputs checked at a time against every block (bounds the memory of the partition check)
_PARTITION_CHUNK = 1024
#: an SPR matrix with at most this many outputs is gathered from the s x s RR matrix (<= 512 KiB)
_GATHER_MAX_S = 256


def _column_privacy(matrix: np.ndarray) -> np.ndarray:
    """Per-column log(max/min); inf for a column with a zero next to a positive entry, 0 for zero columns."""
    cmax = matrix.max(axis=0)
    cmin = matrix.min(axis=0)
    out = np.zeros(matrix.shape[1])
    pos = cmin > 0
    with np.errstate(divide="ignore"):
        out[pos] = np.log(cmax[pos]) - np.log(cmin[pos])
    out[(cmin == 0) & (cmax > 0)] = math.inf
    return out


def ldp_violation(matrix: np.ndarray, eps: float, rtol: float = LDP_RTOL) -> tuple[int, float] | None:
    """Return (column, its privacy level) of a column violating eps-LDP, or None.

    A zero entry beside a positive one is accepted only when ``e^{-eps} * max`` underflows
    to 0.0 in float64 (eps too large for the low entries to be representable).
    """
    if math.isinf(eps):
        return None
    levels = _column_privacy(matrix)
    limit = eps + math.log1p(rtol)
    for j in np.flatnonzero(levels > limit):
        cmax = float(matrix[:, j].max())
        cmin = float(matrix[:, j].min())
        if cmin == 0.0 and cmax * math.exp(-eps) == 0.0:
            continue
        return int(j), float(levels[j])
    return None


@dataclass(frozen=True, eq=False)
class Mechanism:
    r"""A finite LDP mechanism: channel matrix (rows = inputs) plus its claimed :math:`\varepsilon`.

    Parameters
    ----------
    matrix : array_like, shape (k, n)
        ``matrix[x, y] = Q(y | x)``; rows must sum to 1 within ``ROW_SUM_TOL``.
    eps : float
        Claimed privacy level (``math.inf`` = no privacy).  The constructor checks it.
    labels : sequence, optional
        Names of the k input symbols.
    output_labels : sequence, optional
        Names of the n outputs.
    partition : tuple of tuples, optional
        For SPR (partition) mechanisms, the blocks of input indices behind the outputs: block j is
        the set of inputs whose report favours output j.  Checked against ``matrix``: one block per
        output, the blocks are disjoint and cover ``range(k)``, the inputs of a block have identical
        rows, and output j is strictly more likely from block j than from any other block (a block
        may be empty: the two-set mechanisms of :func:`binary_mechanism` when one side is empty).
    name : str, optional
        A short description ("spr", "rr", "binary", ...).
    """

    matrix: np.ndarray
    eps: float
    labels: tuple | None = None
    output_labels: tuple | None = None
    partition: tuple | None = field(default=None, repr=False)
    name: str = "mechanism"

    def __post_init__(self) -> None:
        m = check_channel_matrix(self.matrix, "matrix")
        eps = check_eps(self.eps)
        viol = ldp_violation(m, eps)
        if viol is not None:
            raise ValueError(
                f"matrix is not eps-LDP for eps={self.eps!r}: column {viol[0]} has privacy level {viol[1]!r}"
            )
        m.setflags(write=False)
        object.__setattr__(self, "matrix", m)
        object.__setattr__(self, "eps", eps)
        for attr, size, what in (("labels", m.shape[0], "rows"), ("output_labels", m.shape[1], "columns")):
            lab = getattr(self, attr)
            if lab is not None:
                object.__setattr__(self, attr, _check_labels(lab, attr, size, what))
        if self.partition is not None:
            object.__setattr__(self, "partition", _check_partition(self.partition, m, eps))

    @classmethod
    def _trusted(
        cls, matrix: np.ndarray, eps: float, labels: tuple | None, partition: tuple | None, name: str
    ) -> Mechanism:
        """A mechanism whose fields are valid by construction (a read-only float matrix that is
        an eps-LDP channel, a checked eps, labels and partition as ``__post_init__`` leaves them):
        the constructors of this module, which build the matrix themselves, skip the checks."""
        obj = object.__new__(cls)
        for attr, val in (
            ("matrix", matrix),
            ("eps", eps),
            ("labels", labels),
            ("output_labels", None),
            ("partition", partition),
            ("name", name),
        ):
            object.__setattr__(obj, attr, val)
        return obj

    @classmethod
    def _spr_grouped(
        cls, block_of: np.ndarray, grouped: list, ends: list, eps: float, labels: tuple | None
    ) -> Mechanism:
        """``spr_mechanism_from_assignment(block_of, eps, labels)`` for a caller that built the
        assignment and its blocks itself (``optimal_mechanism``'s compiled small path), unchecked:
        ``block_of`` a valid assignment (int64), ``grouped`` the symbols block by block, ascending
        in each, ``ends[j]`` where block j ends in it, ``eps`` and ``labels`` as checked (a tuple
        of k distinct entries).  The checks and the argsort of the public constructor are O(k)
        numpy calls that a small solve would pay for nothing; the solver's blocks are tested
        against it."""
        blocks = tuple(tuple(grouped[a:e]) for a, e in zip([0, *ends[:-1]], ends, strict=True))
        m = _block_matrix(block_of, len(ends), eps)
        m.setflags(write=False)
        return cls._trusted(m, eps, labels, blocks, "spr")

    # --- shape -----------------------------------------------------------------
    @property
    def num_inputs(self) -> int:
        """Number of input symbols k."""
        return self.matrix.shape[0]

    @property
    def num_outputs(self) -> int:
        """Number of outputs (columns)."""
        return self.matrix.shape[1]

    # --- privacy ---------------------------------------------------------------
    def privacy_level(self) -> float:
        r"""Smallest :math:`\varepsilon` the channel satisfies:
        :math:`\max_y \log(\max_x Q(y|x)/\min_x Q(y|x))`.

        ``inf`` when a column has a zero next to a positive entry.
        """
        return float(_column_privacy(self.matrix).max())

    def is_ldp(self, eps: float, rtol: float = LDP_RTOL) -> bool:
        r"""True when the channel is :math:`\varepsilon`-LDP (up to relative slack ``rtol`` on
        :math:`e^\varepsilon`)."""
        return ldp_violation(self.matrix, check_eps(eps), check_tolerance(rtol, "rtol")) is None

    # --- utility ---------------------------------------------------------------
    def input_pair(self, p0: Any, p1: Any, normalize: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """``p0``, ``p1`` checked as distributions on the mechanism's inputs, in the order of its
        labels (dicts and Series are aligned by label)."""
        u, v, labels = check_labelled_pair(p0, p1, normalize=normalize)
        if labels is not None and self.labels is not None and labels != self.labels:
            if set(labels) != set(self.labels):
                raise ValueError("p0/p1 labels do not match the mechanism's labels")
            pos = {lab: i for i, lab in enumerate(labels)}
            order = [pos[lab] for lab in self.labels]
            u, v = u[order], v[order]
        if u.shape[0] != self.num_inputs:
            raise ValueError(f"p0 has {u.shape[0]} symbols but the mechanism has {self.num_inputs} inputs")
        return u, v

    def output_distributions(self, p0: Any, p1: Any) -> tuple[np.ndarray, np.ndarray]:
        r"""Induced output distributions :math:`M_\nu = Q^\top P_\nu`."""
        u, v = self.input_pair(p0, p1)
        return self.matrix.T @ u, self.matrix.T @ v

    def utility(self, p0: Any, p1: Any, divergence: str | FDivergence = "kl") -> float:
        r""":math:`D_f(Q^\top P_0 \| Q^\top P_1)` (reported value; Renyi for ``renyi``)."""
        div = get_divergence(divergence)
        m0, m1 = self.output_distributions(p0, p1)
        return div(m0, m1)

    # --- deployment (the work is in ldpopt._sampler, ldpopt._mechfile and ldpopt._opendp) ----
    def privatize(self, x: Any, rng: Any = None) -> np.ndarray:
        """Privatize input symbols exactly; see :func:`ldpopt.deploy.sampling.privatize`.

        ``rng=None`` uses the operating system's CSPRNG; a seeded ``numpy.random.Generator``
        is for reproducible experiments only, never for production.
        """
        return _sampler.privatize(self, x, rng=rng)

    def to_opendp(self, *, rng: Any = None) -> Any:
        """This mechanism as an OpenDP ``Measurement`` (needs the ``opendp`` extra).

        Input domain: the input labels (``str`` or ``int``; indices without labels), metric
        ``discrete_distance``; output measure ``max_divergence`` with the privacy map
        ``d_in -> d_in * eps`` (eps as certified for the channel really sampled, rounded up when
        ``d_in > 1``); the function is one exact draw of :meth:`privatize`.  Enables OpenDP's
        ``"contrib"`` and ``"honest-but-curious"`` features process-wide (details in
        ``docs/interop.md``).  Without OpenDP installed, raises
        :class:`~ldpopt.errors.MissingExtraError` naming the extra.

        ``rng=None`` uses the operating system's CSPRNG; a seeded ``numpy.random.Generator``
        is for reproducible experiments only, never for production.
        """
        return _opendp.measurement(self, rng=rng)

    def to_json(
        self,
        path: Any,
        *,
        p0: Any = None,
        p1: Any = None,
        divergence: Any = None,
        value: float | None = None,
        include_distributions: bool = True,
        normalize: bool = False,
        max_outputs: int | None = None,
    ) -> Path:
        """Write the versioned mechanism file; see :func:`ldpopt.deploy.files.save_mechanism`."""
        if (p0 is None) != (p1 is None):
            raise ValueError("give both p0 and p1, or neither")
        u, v = self.input_pair(p0, p1, normalize=normalize) if p0 is not None else (None, None)
        if isinstance(divergence, FDivergence):
            divergence = divergence.name
        return write_mechanism_file(
            path,
            self,
            p0=u,
            p1=v,
            divergence=divergence,
            value=value,
            include_distributions=include_distributions,
            max_outputs=max_outputs,
        )

    @classmethod
    def from_json(cls, path: Any) -> Mechanism:
        """Read and re-validate a mechanism file; see :func:`ldpopt.deploy.files.load_mechanism`."""
        return read_mechanism_file(path, cls).mechanism

    def __repr__(self) -> str:
        return (
            f"Mechanism(name={self.name!r}, eps={self.eps!r}, inputs={self.num_inputs}, "
            f"outputs={self.num_outputs})"
        )


def check_channel_matrix(value: Any, name: str = "matrix") -> np.ndarray:
    """``value`` as a new float array checked as a channel: non-empty, 2-D (rows = inputs), finite,
    non-negative, rows summing to 1 within :data:`ROW_SUM_TOL`; errors name ``name``."""
    m = np.array(as_real_array(value, name, "a 2-D array of real numbers"))  # an own copy
    if m.ndim != 2 or m.shape[0] < 1 or m.shape[1] < 1:
        raise ValueError(f"{name} must be a non-empty 2-D array, got shape {m.shape}")
    if not np.all(np.isfinite(m)):
        raise ValueError(f"{name} must contain only finite numbers")
    if np.any(m < 0):
        raise ValueError(f"{name} must be non-negative, found {m[m < 0][0]!r}")
    sums = m.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > ROW_SUM_TOL)
    if bad.size:
        raise ValueError(f"{name} rows must sum to 1, row {bad[0]} sums to {sums[bad[0]]!r}")
    return m


def as_mechanism(obj: Any, name: str = "mechanism") -> Mechanism:
    """``obj`` itself when it is a :class:`Mechanism`, the mechanism of a design result
    (an :class:`~ldpopt.OptimalMechanismResult`, a ``ChannelResult``: anything whose
    ``mechanism`` attribute is a Mechanism); TypeError naming ``name`` otherwise."""
    if isinstance(obj, Mechanism):
        return obj
    inner = getattr(obj, "mechanism", None)
    if isinstance(inner, Mechanism):
        return inner
    raise TypeError(
        f"{name} must be a Mechanism or an OptimalMechanismResult (a result with a mechanism), "
        f"got {type(obj).__name__}"
    )


def as_channel_matrix(obj: Any, name: str = "mechanism") -> np.ndarray:
    """The channel matrix (rows = inputs) of a :class:`Mechanism` or a design result holding one,
    or ``obj`` itself checked by :func:`check_channel_matrix` (a read-only copy)."""
    if isinstance(obj, Mechanism) or isinstance(getattr(obj, "mechanism", None), Mechanism):
        return as_mechanism(obj, name).matrix
    m = check_channel_matrix(obj, name)
    m.setflags(write=False)
    return m


def _check_labels(labels: Any, attr: str, size: int, what: str) -> tuple:
    """``labels`` as a tuple of ``size`` distinct entries (one per matrix row/column)."""
    lab = tuple(labels)
    if len(lab) != size:
        raise ValueError(f"{attr} must have one entry per matrix {what} ({size}), got {len(lab)}")
    if len(set(lab)) != len(lab):
        raise ValueError(f"{attr} must be distinct, got {lab!r}")
    return lab


def _partition_blocks(partition: Any, k: int, n: int) -> tuple[tuple[int, ...], ...]:
    """The blocks as tuples of ints: one per output, disjoint, covering ``range(k)``."""
    if isinstance(partition, (str, bytes)) or not hasattr(partition, "__iter__"):
        raise TypeError(
            f"partition must be a sequence of blocks of input indices, got {short_repr(partition)}"
        )
    blocks = []
    for j, block in enumerate(partition):
        if isinstance(block, (str, bytes)) or not hasattr(block, "__iter__"):
            raise TypeError(
                f"partition block {j} must be a sequence of input indices, got {short_repr(block)}"
            )
        items = tuple(block)
        for i in items:
            if not is_integer(i):
                raise TypeError(
                    f"partition block {j} {short_repr(items)} must hold integer input indices, got {i!r}"
                )
        blocks.append(tuple(int(i) for i in items))
    if len(blocks) != n:
        raise ValueError(
            f"partition must have one block per output of matrix (block j is behind output j): "
            f"matrix has {n} outputs, partition has {len(blocks)} blocks"
        )
    owner = np.full(k, -1)
    for j, block in enumerate(blocks):
        for i in block:
            if not 0 <= i < k:
                raise ValueError(
                    f"partition block {j} {block!r} contains {i}, outside range({k}) (matrix has {k} rows)"
                )
            if owner[i] >= 0:
                where = (
                    "twice" if owner[i] == j else f"and block {owner[i]} {blocks[owner[i]]!r} contains it too"
                )
                raise ValueError(
                    f"partition block {j} {block!r} contains input {i} {where}; blocks must be disjoint"
                )
            owner[i] = j
    missing = np.flatnonzero(owner < 0)
    if missing.size:
        raise ValueError(
            f"partition does not cover input {int(missing[0])} of range({k}) (matrix has {k} rows)"
        )
    return tuple(blocks)


def _check_partition(partition: Any, matrix: np.ndarray, eps: float) -> tuple[tuple[int, ...], ...]:
    r"""Validate ``partition`` against ``matrix`` (see :class:`Mechanism`); returns it as tuples of ints.

    Output j must be strictly more likely from block j than from any other block, as in SPR
    (:math:`e^\varepsilon/(e^\varepsilon+s-1)` against :math:`1/(e^\varepsilon+s-1)`); for
    ``eps < PARTITION_TIE_EPS`` the two levels may round to the same float and a tie is accepted.
    Vectorised: O(k n) time, O(k) extra memory per chunk of outputs.
    """
    blocks = _partition_blocks(partition, *matrix.shape)
    for j, block in enumerate(blocks):
        if len(block) > 1:
            rows = matrix[list(block)]
            dev = np.abs(rows - rows[0]).max(axis=1)
            worst = int(np.argmax(dev))
            if dev[worst] > PARTITION_ATOL:
                raise ValueError(
                    f"partition block {j} {block!r} contradicts matrix: rows {block[0]} and {block[worst]} "
                    f"differ (by up to {dev[worst]:.3g}), but the inputs of a block must have identical rows"
                )
    used = np.array([j for j, b in enumerate(blocks) if b], dtype=int)  # outputs of non-empty blocks
    reps = np.array([blocks[j][0] for j in used], dtype=int)  # one input of each
    for lo in range(0, used.size, _PARTITION_CHUNK):
        cols = used[lo : lo + _PARTITION_CHUNK]
        sub = matrix[np.ix_(reps, cols)]  # sub[a, c]: output cols[c] from block used[a]
        pos = np.arange(cols.size)
        own = sub[lo + pos, pos]
        sub[lo + pos, pos] = -np.inf
        other = sub.argmax(axis=0)
        there = sub[other, pos]
        bad = np.flatnonzero((there > own) | ((there == own) & (eps >= PARTITION_TIE_EPS)))
        if bad.size:
            c = int(bad[0])
            j, i = int(cols[c]), int(used[other[c]])
            raise ValueError(
                f"partition block {j} {blocks[j]!r} contradicts matrix: output {j} has probability "
                f"{own[c]:.6g} from block {j} but {there[c]:.6g} from block {i} {blocks[i]!r}; output j must "
                "be strictly more likely from block j than from any other block"
            )
    return blocks


def _rr_levels(s: int, eps: float) -> tuple[float, float]:
    r"""High/low entries of s-ary RR: :math:`e^\varepsilon/(e^\varepsilon+s-1)` and
    :math:`1/(e^\varepsilon+s-1)`, computed from :math:`c=e^{-\varepsilon}` so nothing overflows."""
    c = rescale(eps).c
    den = 1.0 + (s - 1) * c
    return 1.0 / den, c / den


def _block_matrix(block_of: np.ndarray, s: int, eps: float) -> np.ndarray:
    """The (k, s) matrix of s-ary RR on the block label ``block_of``: for a few outputs, row x is
    row ``block_of[x]`` of the s x s RR matrix (one gather, cheaper than filling the matrix and
    scattering its high entries); for many, the scatter (no s x s temporary)."""
    high, low = _rr_levels(s, eps)
    if s <= _GATHER_MAX_S:
        rr = np.full((s, s), low)
        rr.flat[:: s + 1] = high
        return rr.take(block_of, axis=0)
    k = block_of.shape[0]
    m = np.full((k, s), low)
    m[np.arange(k), block_of] = high
    return m


def randomized_response(k: int, eps: float, labels: Sequence | None = None) -> Mechanism:
    r"""k-ary randomized response: :math:`Q(x|x)=e^\varepsilon/(e^\varepsilon+k-1)`, else
    :math:`1/(e^\varepsilon+k-1)`."""
    k = check_positive_int(k, "k")
    eps = check_eps(eps)
    m = _block_matrix(np.arange(k), k, eps)
    lab = None if labels is None else tuple(labels)
    return Mechanism(
        m, eps, labels=lab, output_labels=lab, partition=tuple((i,) for i in range(k)), name="rr"
    )


def binary_mechanism(p0: Any, p1: Any, eps: float, normalize: bool = False) -> Mechanism:
    r"""Binary mechanism of Kairouz et al.: binary RR on the bit :math:`1\{P_0(x)\ge P_1(x)\}`.

    Output 0 is "x in H" with :math:`H=\{x: P_0(x)\ge P_1(x)\}` (SPR Remark 2.4).
    """
    u, v, labels = check_labelled_pair(p0, p1, normalize=normalize)
    eps = check_eps(eps)
    in_h = u >= v
    return two_set_mechanism(in_h, eps, labels, "binary")


def two_set_mechanism(in_h: np.ndarray, eps: float, labels, name: str) -> Mechanism:
    """Binary randomized response on the bit ``x in H`` (``in_h`` its indicator): output 0 is H."""
    block_of = np.where(in_h, 0, 1)
    m = _block_matrix(block_of, 2, eps)
    part = (tuple(int(i) for i in np.flatnonzero(in_h)), tuple(int(i) for i in np.flatnonzero(~in_h)))
    return Mechanism(m, eps, labels=labels, partition=part, name=name)


def spr_mechanism(
    partition: Sequence[Sequence[int]], k: int, eps: float, labels: Sequence | None = None
) -> Mechanism:
    r"""SPR mechanism of a partition: s-ary randomized response on the block label (SPR eq. 11).

    .. math:: Q_\pi(j|x) = \frac{e^\varepsilon}{e^\varepsilon+s-1}\ (x\in B_j),\qquad
              \frac{1}{e^\varepsilon+s-1}\ (x\notin B_j).

    ``partition`` lists the blocks (each a sequence of symbol indices in ``range(k)``);
    every symbol must appear exactly once.
    """
    k = check_positive_int(k, "k")
    eps = check_eps(eps)
    if isinstance(partition, (str, bytes)) or not hasattr(partition, "__iter__"):
        raise TypeError(f"partition must be a sequence of blocks, got {partition!r}")
    blocks = []
    for j, block in enumerate(partition):
        try:
            idx = tuple(map(int, block))
        except (TypeError, ValueError):
            raise ValueError(f"partition block {j} must be a sequence of integers, got {block!r}") from None
        if not idx:
            raise ValueError(f"partition block {j} is empty")
        blocks.append(idx)
    block_of = _spr_block_of(blocks, k)
    m = _block_matrix(block_of, len(blocks), eps)
    m.setflags(write=False)
    lab = None if labels is None else _check_labels(labels, "labels", k, "rows")
    # valid by construction (s-ary RR on the blocks of a checked partition): the checks of
    # ``Mechanism.__post_init__`` (row sums, privacy level, partition against the matrix) are
    # O(k s) of Python and numpy calls that every solve would pay for nothing
    return Mechanism._trusted(m, eps, lab, tuple(blocks), "spr")


def spr_mechanism_from_assignment(block_of: Any, eps: float, labels: Sequence | None = None) -> Mechanism:
    r"""SPR mechanism in which symbol i is in block ``block_of[i]`` (s-ary RR on the block label).

    The same mechanism as ``spr_mechanism(partition, len(block_of), eps, labels)`` with block j
    the symbols i with ``block_of[i] == j`` (ascending): ``block_of`` holds integers in
    ``range(s)``, every one of them used, s the number of outputs.  Checked in O(k) vectorised
    steps, which suits solvers that produce the assignment (``optimal_mechanism``).
    """
    eps = check_eps(eps)
    b = np.asarray(block_of)
    if b.dtype.kind not in "iu":
        raise TypeError(f"block_of must hold integers, got {short_repr(block_of)}")
    if b.ndim != 1 or b.size == 0:
        raise ValueError(f"block_of must be a non-empty 1-D array, got {short_repr(block_of)}")
    k = b.shape[0]
    hi = int(b.max())
    counts = None
    if hi < k:  # every block is used, so there are at most k of them
        try:
            counts = np.bincount(b)
        except ValueError:  # a negative entry
            pass
    if counts is None:
        lo = int(b.min())
        raise ValueError(f"block_of must hold block indices in range({k}), found {lo if lo < 0 else hi}")
    if not counts.all():
        empty = int(np.argmin(counts))
        raise ValueError(f"block_of must use every block 0..{counts.size - 1}, block {empty} is empty")
    order = np.argsort(b, kind="stable").tolist()  # block by block, ascending symbols
    ends = list(itertools.accumulate(counts.tolist()))
    blocks = tuple(tuple(order[a:e]) for a, e in zip([0, *ends[:-1]], ends, strict=True))
    m = _block_matrix(b, counts.size, eps)
    m.setflags(write=False)
    lab = None if labels is None else _check_labels(labels, "labels", k, "rows")
    # valid by construction, as spr_mechanism's
    return Mechanism._trusted(m, eps, lab, blocks, "spr")


def _spr_block_of(blocks: list[tuple[int, ...]], k: int) -> np.ndarray:
    """``block_of[i]`` = the block holding symbol i; ValueError for a symbol outside ``range(k)``,
    one listed twice or one missing (the first such symbol in the order of the blocks)."""
    sizes = [len(b) for b in blocks]
    try:
        flat = np.fromiter(itertools.chain.from_iterable(blocks), dtype=np.int64, count=sum(sizes))
    except OverflowError:  # an index beyond int64 is outside range(k) too
        i = next(i for b in blocks for i in b if not 0 <= i < k)
        raise ValueError(f"partition contains symbol {i}, outside range(k) with k={k}") from None
    outside = (flat < 0) | (flat >= k)
    block_of = np.full(k, -1)
    if flat.shape[0] == k and not outside.any():
        block_of[flat] = np.repeat(np.arange(len(blocks)), sizes)
        if (block_of >= 0).all():  # k listings in range(k) covering it: each symbol exactly once
            return block_of
    inside = np.where(outside, -1, flat)
    # a symbol's second listing: positions whose symbol already appeared at an earlier position
    order = np.argsort(inside, kind="stable")
    again = np.zeros(flat.shape[0], dtype=bool)
    again[order[1:]] = inside[order[1:]] == inside[order[:-1]]
    again &= ~outside
    # an outside symbol before the first repeat raises first (the order of the checks per symbol)
    bad = np.flatnonzero(outside | again)
    if bad.size:
        i = int(flat[bad[0]])
        if outside[bad[0]]:
            raise ValueError(f"partition contains symbol {i}, outside range(k) with k={k}")
        raise ValueError(f"partition contains symbol {i} twice")
    block_of[flat] = np.repeat(np.arange(len(blocks)), sizes)
    missing = np.flatnonzero(block_of < 0)
    if missing.size:
        raise ValueError(f"partition does not cover symbol {int(missing[0])} of range(k) with k={k}")
    return block_of
