r"""The exact sampler's core: the realised channel, its exact eps-LDP proof, sampling with random bits.

The method is described in :mod:`ldpopt.deploy.sampling`, the public face of this module.  The
code lives here, below :mod:`ldpopt.mechanism`, because :meth:`Mechanism.privatize
<ldpopt.Mechanism.privatize>` and the mechanism-file reader (:mod:`ldpopt._mechfile`) use it: it
needs only numpy, the standard library, :mod:`ldpopt._validation` and :mod:`ldpopt.errors`, and
it takes any mechanism-like object (``matrix``, ``eps``, ``labels``, ``output_labels``,
``num_inputs``, ``num_outputs``).  Labels are mapped with plain dictionaries (no dataframe
library); pandas Series and arrays are accepted through their ``to_numpy()``.
"""

from __future__ import annotations

import math
import secrets
import warnings
import weakref
from dataclasses import KW_ONLY, dataclass, field
from decimal import Decimal, localcontext
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np

from ldpopt._validation import check_eps, is_integer
from ldpopt.errors import LdpoptWarning

__all__ = [
    "BitSource",
    "ExactLDPCheck",
    "RealisedChannel",
    "bernoulli",
    "bit_source",
    "decode_outputs",
    "encode_inputs",
    "encode_outputs",
    "exact_ldp_check",
    "exp_bounds",
    "privatize",
    "realise",
    "realise_matrix",
    "sample_indices",
]

#: every finite float64 is an integer multiple of 2**-1074
_SCALE_BITS = 1074
_WORD_BITS = 64
_UINT64_MAX = np.iinfo(np.uint64).max
#: decimal digits of the first e^eps bracket; doubled until the comparison is decided
_EXP_DIGITS = 40
_EXP_DIGITS_MAX = 5000
#: |log ratio - eps| beyond which float logs decide the comparison with e^eps
_LOG_MARGIN = 1e-6
#: eps above which e^eps exceeds every ratio of floats in [2^-1074, 1] many times over
_EXP_HUGE = 2000.0
_EXP_HUGE_BITS = 2800
#: rounds of nudging before falling back to mixing with the uniform channel
_MAX_NUDGE_ROUNDS = 12
#: mixing weights tried (in order) when nudging single entries does not converge
_MIX_WEIGHTS = (2.0**-44, 2.0**-36, 2.0**-28, 2.0**-20, 2.0**-12)
#: warn when the realised channel differs from the requested one by more than this
_CHANGE_WARN = 1e-9


# ---------------------------------------------------------------------------------------------
# Random bits
# ---------------------------------------------------------------------------------------------
class BitSource:
    """Uniform random 64-bit words.  Subclasses implement :meth:`words`."""

    def words(self, m: int) -> np.ndarray:  # pragma: no cover - interface
        """``m`` independent uniform ``uint64`` words."""
        raise NotImplementedError

    def word(self) -> int:
        """One uniform word as a Python int."""
        return int(self.words(1)[0])


class _SystemBits(BitSource):
    """The operating system's CSPRNG (``secrets.token_bytes`` = ``os.urandom``)."""

    def words(self, m: int) -> np.ndarray:
        if m <= 0:
            return np.zeros(0, dtype=np.uint64)
        return np.frombuffer(secrets.token_bytes(8 * m), dtype=np.uint64).copy()


class _GeneratorBits(BitSource):
    """A numpy Generator (reproducible, NOT for production)."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng

    def words(self, m: int) -> np.ndarray:
        if m <= 0:
            return np.zeros(0, dtype=np.uint64)
        # full-range integers: every bit generator gives uniform 64-bit words this way
        return self.rng.integers(0, _UINT64_MAX, size=m, dtype=np.uint64, endpoint=True)


def bit_source(rng: Any = None) -> BitSource:
    """The random-bit source for ``rng``: ``None`` -> OS CSPRNG, a numpy ``Generator`` -> that
    generator (reproducible, not for production), a :class:`BitSource` -> itself."""
    if rng is None:
        return _SystemBits()
    if isinstance(rng, BitSource):
        return rng
    if isinstance(rng, np.random.Generator):
        return _GeneratorBits(rng)
    raise TypeError(
        f"rng must be None (the operating system's CSPRNG) or a numpy.random.Generator, got rng={rng!r}"
    )


# ---------------------------------------------------------------------------------------------
# Exact comparison with e^eps
# ---------------------------------------------------------------------------------------------
@lru_cache(maxsize=256)
def exp_bounds(eps: float, digits: int = _EXP_DIGITS) -> tuple[Fraction, Fraction]:
    r"""Rationals ``lo < e^eps < hi`` from a correctly rounded ``decimal`` exp with ``digits`` digits.

    ``Decimal(eps)`` is the float exactly and ``Decimal.exp`` is correctly rounded, so
    :math:`|E-e^\varepsilon| \le \tfrac12\,\mathrm{ulp}(E)`; one full ulp is subtracted/added.
    """
    with localcontext() as ctx:
        ctx.prec = digits
        ctx.Emax = 10**9
        ctx.Emin = -(10**9)
        e = Decimal(eps).exp()
    ulp = Fraction(10) ** (e.adjusted() - digits + 1)
    mid = Fraction(e)
    return mid - ulp, mid + ulp


def _exp_lower(eps: float) -> Fraction:
    """A rational lower bound of e^eps (eps beyond _EXP_HUGE: 2**_EXP_HUGE_BITS, far above any
    ratio of probabilities representable in float64, and no decimal overflow)."""
    if eps > _EXP_HUGE:
        return Fraction(2**_EXP_HUGE_BITS)
    return exp_bounds(eps)[0]


def _ratio_exceeds_exp(num: int, den: int, eps: float) -> bool:
    """Certified ``num/den > e^eps`` (``den > 0``); undecidable cases count as exceeding."""
    if math.isinf(eps):
        return False
    # float logs of the integers are accurate to ~1e-13 absolute: decide clear cases fast
    gap = math.log(num) - math.log(den) - eps
    if gap < -_LOG_MARGIN:
        return False
    if gap > _LOG_MARGIN:
        return True
    r = Fraction(num, den)
    digits = _EXP_DIGITS
    while digits <= _EXP_DIGITS_MAX:
        lo, hi = exp_bounds(eps, digits)
        if r <= lo:
            return False
        if r >= hi:
            return True
        digits *= 2
    return True  # pragma: no cover - e^eps is irrational, so this needs an absurd coincidence


def _scaled(f: float) -> int:
    """``f * 2**1074`` as an exact integer (f a finite float >= 0)."""
    num, den = float(f).as_integer_ratio()
    return num << (_SCALE_BITS - (den.bit_length() - 1))


def _log_ratio(hi: int, lo: int) -> float:
    """log(hi/lo) for positive ints, accurate to an ulp of the ratio (no big-int cancellation)."""
    try:
        return math.log(hi / lo)  # int / int is correctly rounded
    except OverflowError:
        return math.log(hi) - math.log(lo)


def _float_ceil(q: Fraction) -> float:
    """Smallest float >= q (q >= 0)."""
    f = float(q)
    if Fraction(f) < q:
        f = math.nextafter(f, math.inf)
    return f


def _float_floor(q: Fraction) -> float:
    """Largest float <= q (q >= 0)."""
    f = float(q)
    if Fraction(f) > q:
        f = math.nextafter(f, 0.0)
    return f


# ---------------------------------------------------------------------------------------------
# Exact LDP check of a plain float matrix
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ExactLDPCheck:
    r"""Outcome of an exact-rational :math:`\varepsilon`-LDP check.

    Attributes
    ----------
    ok : bool
        True when every column satisfies :math:`\max_x Q(y|x) \le e^\varepsilon \min_x Q(y|x)`
        exactly (certified against rational bounds of :math:`e^\varepsilon`).
    eps : float
    column : int or None
        The worst column (largest max/min ratio).
    ratio : Fraction or None
        Its exact max/min ratio (``None`` for a zero beside a positive entry).
    level : float
        ``log`` of the worst ratio (``inf`` for a zero beside a positive entry): the float
        privacy level of the checked matrix.
    """

    ok: bool
    eps: float
    column: int | None
    ratio: Fraction | None
    level: float


def exact_ldp_check(matrix: Any, eps: float) -> ExactLDPCheck:
    r"""Check :math:`\varepsilon`-LDP of a float matrix with its entries taken as exact rationals.

    Unlike :meth:`Mechanism.is_ldp` there is no tolerance: a channel whose worst column ratio
    exceeds :math:`e^\varepsilon` by a single ulp fails.  Row sums are not checked here.

    Parameters
    ----------
    matrix : array_like, shape (k, n)
        Non-negative finite entries, rows = inputs.
    eps : float
        Privacy level (> 0, ``inf`` allowed).
    """
    eps = check_eps(eps)
    m = np.asarray(matrix, dtype=float)
    if m.ndim != 2 or m.size == 0:
        raise ValueError(f"matrix must be a non-empty 2-D array, got shape {m.shape}")
    if not np.all(np.isfinite(m)) or np.any(m < 0):
        raise ValueError("matrix must contain finite non-negative numbers")
    cmax = m.max(axis=0)
    cmin = m.min(axis=0)
    cols: list[tuple[bool, float, int, Fraction | None]] = []  # (bad, level, column, ratio)
    for j in range(m.shape[1]):
        hi, lo = _scaled(cmax[j]), _scaled(cmin[j])
        if hi == 0:
            continue
        if lo == 0:
            cols.append((not math.isinf(eps), math.inf, j, None))
        else:
            cols.append((_ratio_exceeds_exp(hi, lo, eps), _log_ratio(hi, lo), j, Fraction(hi, lo)))
    if not cols:
        return ExactLDPCheck(True, eps, None, Fraction(1), 0.0)
    bad, level, j, ratio = max(cols, key=lambda c: (c[0], c[1]))
    return ExactLDPCheck(not bad, eps, j, ratio, level)


# ---------------------------------------------------------------------------------------------
# The realised channel
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class RealisedChannel:
    r"""The channel that is really sampled: floats plus one exact remainder per row.

    Attributes
    ----------
    eps : float
        Privacy level proven in exact arithmetic.
    entries : ndarray, shape (k, n)
        Float probabilities of every non-remainder entry (the remainder positions hold the
        float nearest to their exact value).
    remainder : ndarray of int, shape (k,)
        Column of each row whose probability is ``1 - sum(other entries)`` exactly.
    kind : {"block_rr", "general"}
        ``"block_rr"``: every non-remainder entry equals one float ``low`` (SPR, k-RR, binary);
        sampled as "keep the block label, else a uniform other label".
    low : float or None
        The common low entry of a block randomized-response channel.
    max_change : float
        :math:`\max_{x,y}|R(y|x)-Q(y|x)|` against the mechanism's float matrix.
    adjusted : int
        Number of entries rounded to make the channel exactly eps-LDP.
    check : ExactLDPCheck
        The exact verification of the realised channel.
    """

    eps: float
    entries: np.ndarray
    remainder: np.ndarray
    kind: str
    low: float | None
    max_change: float
    adjusted: int
    check: ExactLDPCheck = field(repr=False)
    _: KW_ONLY
    _rem_scaled: tuple = field(repr=False, default=())
    _tables: dict = field(repr=False, default_factory=dict)

    @property
    def num_inputs(self) -> int:
        return self.entries.shape[0]

    @property
    def num_outputs(self) -> int:
        return self.entries.shape[1]

    def exact_row(self, x: int) -> list[Fraction]:
        """Row ``x`` as exact rationals (sums to exactly 1)."""
        row = [Fraction(float(v)) for v in self.entries[x]]
        row[int(self.remainder[x])] = Fraction(self._rem_scaled[x], 1 << _SCALE_BITS)
        return row

    def exact_matrix(self) -> list[list[Fraction]]:
        """All rows as exact rationals."""
        return [self.exact_row(x) for x in range(self.num_inputs)]

    def probabilities(self) -> np.ndarray:
        """Float approximation of the realised channel (exact except at remainder entries)."""
        return self.entries.copy()


def _remainders_scaled(F: np.ndarray, r: np.ndarray) -> list[int]:
    """Exact ``2**1074 * (1 - sum of non-remainder entries)`` per row."""
    one = 1 << _SCALE_BITS
    out = []
    k, n = F.shape
    for x in range(k):
        row = F[x]
        others = np.delete(row, r[x])
        if others.size and np.all(others == others[0]):
            total = others.size * _scaled(others[0])
        else:
            total = sum(_scaled(v) for v in others.tolist())
        out.append(one - total)
    return out


def _check_realised(F: np.ndarray, r: np.ndarray, rem: list[int], eps: float) -> tuple[ExactLDPCheck, list]:
    """Exact check of the realised channel; returns the check and the violating columns
    as (column, max_scaled, min_scaled)."""
    k, n = F.shape
    masked = F.copy()
    masked[np.arange(k), r] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-nan columns (every row's remainder)
        fmax = np.nanmax(masked, axis=0)
        fmin = np.nanmin(masked, axis=0)
    rem_by_col: dict[int, list[int]] = {}
    for x in range(k):
        rem_by_col.setdefault(int(r[x]), []).append(rem[x])
    violations = []
    worst: tuple[int | None, Fraction | None, float] | None = None
    for j in range(n):
        vals = list(rem_by_col.get(j, []))
        if not math.isnan(fmax[j]):
            vals.append(_scaled(fmax[j]))
            vals.append(_scaled(fmin[j]))
        hi, lo = max(vals), min(vals)
        if hi == 0:
            continue
        if lo <= 0:
            bad = lo < 0 or not math.isinf(eps)
            ratio, level = None, math.inf
        else:
            ratio = Fraction(hi, lo)
            level = _log_ratio(hi, lo)
            bad = _ratio_exceeds_exp(hi, lo, eps)
        if bad:
            violations.append((j, hi, lo))
        if worst is None or level > worst[2]:
            worst = (j, ratio, level)
    if worst is None:
        worst = (None, Fraction(1), 0.0)
    return ExactLDPCheck(not violations, eps, worst[0], worst[1], worst[2]), violations


def _nudge(F: np.ndarray, r: np.ndarray, eps: float) -> tuple[bool, int, list[int], ExactLDPCheck]:
    """Round entries into exact eps-LDP in place.  Returns (success, entries changed, remainders, check)."""
    changed = 0
    lo_bound = _exp_lower(eps) if not math.isinf(eps) else None
    one = 1 << _SCALE_BITS
    for _ in range(_MAX_NUDGE_ROUNDS + 1):
        rem = _remainders_scaled(F, r)
        if any(v < 0 for v in rem):
            return False, changed, rem, _check_realised(F, r, rem, eps)[0]
        check, viol = _check_realised(F, r, rem, eps)
        if not viol:
            return True, changed, rem, check
        if lo_bound is None:
            return False, changed, rem, check
        for j, hi, lo in viol:
            col_rows = np.flatnonzero(r != j)
            rem_rows = np.flatnonzero(r == j)
            # entries must be >= hi / e^eps; hi / lo_bound is a rational upper bound of that
            need_min = Fraction(hi, one) / lo_bound
            low_rem = [x for x in rem_rows if Fraction(rem[x], one) < need_min]
            if not low_rem:
                target = _float_ceil(need_min)
                rows = col_rows[F[col_rows, j] < target]
                F[rows, j] = target
                changed += rows.size
                continue
            # the minimum is a remainder: lower the large floats instead (<= lo * e^eps)
            need_max = Fraction(lo, one) * lo_bound
            high_rem = [x for x in rem_rows if Fraction(rem[x], one) > need_max]
            if high_rem or lo == 0:
                return False, changed, rem, check
            target = _float_floor(need_max)
            rows = col_rows[F[col_rows, j] > target]
            F[rows, j] = target
            changed += rows.size
    rem = _remainders_scaled(F, r)
    check, viol = _check_realised(F, r, rem, eps)
    return not viol and all(v >= 0 for v in rem), changed, rem, check


def _block_structure(m: np.ndarray) -> tuple[np.ndarray, float] | None:
    """(remainder columns, common low) if every row is 'one high entry, the rest one common low'."""
    k, n = m.shape
    r = np.argmax(m, axis=1)
    if n == 1:
        return r, 0.0
    masked = m.copy()
    masked[np.arange(k), r] = m[0, 1 if r[0] == 0 else 0]
    low = float(masked[0, 0])
    if not np.all(masked == low):
        return None
    return r, low


def _realise_block(m: np.ndarray, eps: float, r: np.ndarray, low: float):
    k, n = m.shape
    one = 1 << _SCALE_BITS
    new_low = low
    if n > 1 and not math.isinf(eps):
        # exact eps-LDP of (1-(n-1)l, l, ..., l) <=> l >= 1/(e^eps + n - 1); use lo <= e^eps
        lo_bound = _exp_lower(eps)
        need = 1 / (lo_bound + (n - 1))
        new_low = max(low, _float_ceil(need))
    F = np.full((k, n), new_low)
    rem_val = one - (n - 1) * _scaled(new_low)
    F[np.arange(k), r] = float(Fraction(rem_val, one))
    rem = [rem_val] * k
    return F, rem, new_low


def realise_matrix(matrix: np.ndarray, eps: float) -> RealisedChannel:
    """The realised channel of a plain float matrix (uncached; see :func:`realise`)."""
    m = np.asarray(matrix, dtype=float)
    k, n = m.shape
    block = _block_structure(m)
    kind = "general"
    low = None
    if block is not None:
        r, low0 = block
        F, rem, new_low = _realise_block(m, eps, r, low0)
        check, viol = _check_realised(F, r, rem, eps)
        if not viol:
            changed = k * (n - 1) if new_low != low0 else 0
            return _finish(m, F, r, rem, eps, kind="block_rr", low=new_low, changed=changed, check=check)
    r = np.argmax(m, axis=1)
    F = m.copy()
    ok, changed, rem, check = _nudge(F, r, eps)
    if not ok:
        for t in _MIX_WEIGHTS:
            # mixing with the constant channel 1/n only shrinks every column ratio
            F = (1.0 - t) * m + t / n
            r = np.argmax(F, axis=1)
            ok, _, rem, check = _nudge(F, r, eps)
            if ok:
                changed = k * n
                break
    if not ok:
        raise ValueError(
            f"cannot realise the mechanism as an exactly {eps!r}-LDP channel: column {check.column} "
            f"has privacy level {check.level!r} after rounding"
        )
    return _finish(m, F, r, rem, eps, kind=kind, low=low, changed=changed, check=check)


def _finish(m, F, r, rem, eps, *, kind, low, changed, check) -> RealisedChannel:
    one = 1 << _SCALE_BITS
    k = m.shape[0]
    F = F.copy()
    F[np.arange(k), r] = [float(Fraction(v, one)) for v in rem]
    max_change = float(np.max(np.abs(F - m)))
    if max_change > _CHANGE_WARN:
        warnings.warn(
            f"the realised eps-LDP channel differs from the mechanism's matrix by up to {max_change:.3g}",
            LdpoptWarning,
            stacklevel=4,
        )
    F.setflags(write=False)
    rr = np.asarray(r, dtype=np.int64)
    rr.setflags(write=False)
    return RealisedChannel(
        eps=eps,
        entries=F,
        remainder=rr,
        kind=kind,
        low=low,
        max_change=max_change,
        adjusted=int(changed),
        check=check,
        _rem_scaled=tuple(rem),
    )


_CACHE: weakref.WeakKeyDictionary[Any, RealisedChannel] = weakref.WeakKeyDictionary()


def realise(mech: Any) -> RealisedChannel:
    """The exactly eps-LDP channel that :func:`privatize` samples for ``mech`` (cached per mechanism).

    Raises ``ValueError`` when the float channel cannot be rounded into exact eps-LDP (it
    then is not eps-LDP, beyond rounding).
    """
    try:
        return _CACHE[mech]
    except (KeyError, TypeError):
        pass
    out = realise_matrix(mech.matrix, mech.eps)
    try:
        _CACHE[mech] = out
    except TypeError:  # pragma: no cover - unhashable mechanism-like object
        pass
    return out


# ---------------------------------------------------------------------------------------------
# Exact samplers
# ---------------------------------------------------------------------------------------------
def _boundary_split(b: int) -> tuple[int, bool]:
    """First 64 bits of the boundary ``b / 2**1074`` and whether it has no further bits."""
    shift = _SCALE_BITS - _WORD_BITS
    return b >> shift, (b & ((1 << shift) - 1)) == 0


def _count_below(first_word: int, boundaries: list[int], source: BitSource) -> int:
    """How many of the sorted boundaries ``b / 2**1074`` are <= U, where U's first word is known.

    Draws further words only while some boundary agrees with U on every bit seen so far.
    """
    v = first_word
    bits = _WORD_BITS
    count = 0
    for b in boundaries:
        while True:
            # U in [v / 2^bits, (v + 1) / 2^bits); boundary C = b / 2^1074
            left = b << bits
            if left <= (v << _SCALE_BITS):
                count += 1  # C <= U
                break
            if left >= ((v + 1) << _SCALE_BITS):
                return count  # C > U, and so is every later boundary
            v = (v << _WORD_BITS) | source.word()
            bits += _WORD_BITS
    return count


def _uniform_below(m: int, count: int, source: BitSource) -> np.ndarray:
    """``count`` exact uniform integers in ``[0, m)`` by rejection (top bits of each word)."""
    out = np.zeros(count, dtype=np.int64)
    if m <= 1 or count == 0:
        return out
    bits = (m - 1).bit_length()
    shift = np.uint64(_WORD_BITS - bits)
    pending = np.arange(count)
    limit = np.uint64(m)
    while pending.size:
        w = source.words(pending.size) >> shift
        ok = w < limit
        out[pending[ok]] = w[ok].astype(np.int64)
        pending = pending[~ok]
    return out


def _block_tables(ch: RealisedChannel) -> dict:
    t = ch._tables.get("block")
    if t is None:
        assert ch.low is not None  # a block randomized-response channel has its common low entry
        n = ch.num_outputs
        b = (n - 1) * _scaled(ch.low) if n > 1 else 0
        first, exact = _boundary_split(b)
        t = {"b": b, "T": np.uint64(first), "exact": exact}
        ch._tables["block"] = t
    return t


def _general_tables(ch: RealisedChannel) -> dict:
    t = ch._tables.get("general")
    if t is None:
        k, n = ch.entries.shape
        order = np.zeros((k, n), dtype=np.int64)
        T = np.zeros((k, max(n - 1, 0)), dtype=np.uint64)
        exact = np.zeros((k, max(n - 1, 0)), dtype=bool)
        bounds: list[list[int]] = []
        for x in range(k):
            rx = int(ch.remainder[x])
            cols = [j for j in range(n) if j != rx]
            order[x] = cols + [rx]
            acc = 0
            row_b = []
            for i, j in enumerate(cols):
                acc += _scaled(ch.entries[x, j])
                row_b.append(acc)
                first, ex = _boundary_split(acc)
                T[x, i] = first
                exact[x, i] = ex
            bounds.append(row_b)
        t = {"order": order, "T": T, "exact": exact, "bounds": bounds}
        ch._tables["general"] = t
    return t


def sample_indices(ch: RealisedChannel, x: np.ndarray, source: BitSource) -> np.ndarray:
    """Exact reports (output indices) for input indices ``x`` from the realised channel."""
    x = np.asarray(x, dtype=np.int64)
    n_rep = x.shape[0]
    n = ch.num_outputs
    if n_rep == 0:
        return np.zeros(0, dtype=np.int64)
    if n == 1:
        return np.zeros(n_rep, dtype=np.int64)
    if ch.kind == "block_rr":
        return _sample_block(ch, x, source)
    return _sample_general(ch, x, source)


def _sample_block(ch: RealisedChannel, x: np.ndarray, source: BitSource) -> np.ndarray:
    t = _block_tables(ch)
    u = source.words(x.shape[0])
    move = u < t["T"]  # U < (s-1) * low: report another label
    if not t["exact"]:
        for i in np.flatnonzero(u == t["T"]):
            move[i] = _count_below(int(u[i]), [t["b"]], source) == 0
    keep_label = ch.remainder[x]
    out = keep_label.copy()
    idx = np.flatnonzero(move)
    if idx.size:
        j = _uniform_below(ch.num_outputs - 1, idx.size, source)
        own = keep_label[idx]
        out[idx] = j + (j >= own)
    return out


def _sample_general(ch: RealisedChannel, x: np.ndarray, source: BitSource) -> np.ndarray:
    t = _general_tables(ch)
    T, order = t["T"], t["order"]
    n_b = T.shape[1]
    u = source.words(x.shape[0])
    out = np.empty(x.shape[0], dtype=np.int64)
    sort = np.argsort(x, kind="stable")
    counts = np.bincount(x, minlength=ch.num_inputs)
    starts = np.concatenate(([0], np.cumsum(counts)))
    for xi in np.flatnonzero(counts):
        pos = sort[starts[xi] : starts[xi + 1]]
        uu = u[pos]
        bucket = np.searchsorted(T[xi], uu, side="left")  # boundaries whose first word is < U's
        tie = np.zeros(pos.size, dtype=bool)
        inb = bucket < n_b
        tie[inb] = T[xi][bucket[inb]] == uu[inb]
        for i in np.flatnonzero(tie):
            b0 = int(bucket[i])
            rest = [bb for bb in t["bounds"][xi][b0:]]
            bucket[i] = b0 + _count_below(int(uu[i]), rest, source)
        out[pos] = order[xi][bucket]
    return out


# ---------------------------------------------------------------------------------------------
# Symbols <-> indices
# ---------------------------------------------------------------------------------------------
def _as_array(values: Any, name: str) -> np.ndarray:
    """A 1-D array of symbols; pandas Series/Index and similar containers through ``to_numpy()``."""
    if hasattr(values, "to_numpy") and not isinstance(values, np.ndarray):
        values = values.to_numpy()
    if isinstance(values, (str, bytes)) or np.isscalar(values):
        raise TypeError(f"{name} must be a 1-D sequence of symbols, got {values!r}")
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got an array of shape {arr.shape}")
    return arr


def _label_positions(labels: tuple, values: list) -> np.ndarray:
    """Position of each value among ``labels`` (-1 when absent), by hash and equality like a dict."""
    pos = {lab: i for i, lab in enumerate(labels)}
    try:
        return np.array([pos.get(v, -1) for v in values], dtype=np.int64)
    except TypeError:  # an unhashable value is no label
        return np.array([pos.get(v, -1) if _hashable(v) else -1 for v in values], dtype=np.int64)


def _hashable(v: Any) -> bool:
    try:
        hash(v)
    except TypeError:
        return False
    return True


def _encode(values: Any, labels: tuple | None, size: int, name: str, what: str) -> np.ndarray:
    arr = _as_array(values, name)
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if labels is not None:
        idx = _label_positions(labels, arr.tolist())
        if np.all(idx >= 0):
            return idx
        # plain integer indices are unambiguous only when the labels are not integers
        if any(is_integer(v) for v in labels) or not _int_like(arr):
            bad = _py(arr[np.flatnonzero(idx < 0)[0]])
            raise ValueError(f"{name} contains unknown {what} {bad!r}; known: {_preview(labels)}")
    elif not _int_like(arr):
        bad = next((v for v in arr.tolist() if not is_integer(v)), _py(arr[0]))
        raise ValueError(
            f"{name} must contain integer {what} indices in range({size}) (the mechanism has no labels), "
            f"got {bad!r}"
        )
    if arr.dtype == object or arr.dtype.kind == "u":  # Python ints beyond int64 (10**30), uint64
        big = next((v for v in arr.tolist() if not 0 <= v < size), None)
        if big is not None:
            raise ValueError(f"{name} contains {what} index {big}, outside range({size})")
    ints = arr.astype(np.int64)
    out = (ints < 0) | (ints >= size)
    if np.any(out):
        raise ValueError(
            f"{name} contains {what} index {int(ints[np.flatnonzero(out)[0]])}, outside range({size})"
        )
    return ints


def _py(v: Any) -> Any:
    """numpy scalar -> Python scalar (for readable messages)."""
    return v.item() if isinstance(v, np.generic) else v


def _int_like(arr: np.ndarray) -> bool:
    if arr.dtype.kind in "iu":
        return True
    if arr.dtype == object:
        return all(is_integer(v) for v in arr.tolist())
    return False


def _preview(labels: tuple) -> str:
    text = ", ".join(map(repr, labels[:8]))
    return text + (", ..." if len(labels) > 8 else "")


def encode_inputs(mech: Any, x: Any, name: str = "x") -> np.ndarray:
    """Input symbols (labels when the mechanism has labels, or integer indices) -> int64 indices."""
    return _encode(x, mech.labels, mech.num_inputs, name, "input symbol")


def encode_outputs(mech: Any, reports: Any, name: str = "reports") -> np.ndarray:
    """Reports (output labels when the mechanism has them, or integer indices) -> int64 indices."""
    return _encode(reports, mech.output_labels, mech.num_outputs, name, "output")


def _label_array(labels: tuple) -> np.ndarray:
    if all(isinstance(v, str) for v in labels):
        return np.array(labels, dtype=str)
    if all(is_integer(v) for v in labels):
        return np.array(labels, dtype=np.int64)
    arr = np.empty(len(labels), dtype=object)
    arr[:] = list(labels)
    return arr


def decode_outputs(mech: Any, idx: np.ndarray) -> np.ndarray:
    """Output indices -> output labels (indices themselves when the mechanism has none)."""
    if mech.output_labels is None:
        return idx
    return _label_array(mech.output_labels)[idx]


def privatize(mech: Any, x: Any, rng: Any = None) -> np.ndarray:
    """Reports for the input symbols ``x`` of ``mech``, sampled exactly from :func:`realise`
    (documented at :func:`ldpopt.deploy.sampling.privatize`)."""
    source = bit_source(rng)
    idx = encode_inputs(mech, x)
    ch = realise(mech)
    return decode_outputs(mech, sample_indices(ch, idx, source))


def bernoulli(p: float, source: BitSource) -> bool:
    """One exact Bernoulli(p) draw for a float ``p`` in [0, 1]: ``U < p`` decided bit by bit."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be in [0, 1], got p={p!r}")
    if p == 1.0:
        return True
    b = _scaled(p)
    first, exact = _boundary_split(b)
    u = source.word()
    if u != first or exact:
        return u < first
    return _count_below(u, [b], source) == 0
