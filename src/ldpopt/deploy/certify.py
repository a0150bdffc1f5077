r"""The exact privacy level of any channel matrix: :func:`certify_epsilon`.

A channel :math:`Q` (rows = inputs, ``matrix[x, y] = Q(y|x)``) is :math:`\varepsilon`-LDP when
:math:`Q(y|x)\le e^\varepsilon Q(y|x')` for all x, x', y (SPR paper, eq. 1), so its privacy
level is :math:`\varepsilon^*=\max_y\log(\max_x Q(y|x)/\min_x Q(y|x))`.

How it is computed:

1. *Floating point, vectorised.*  One pass for the column maxima and minima; per column
   :math:`\log(\max/\min)` as ``log1p((max - min) / min)`` when ``max <= 2 min`` (the
   difference is exact by Sterbenz' lemma, so small levels keep their relative accuracy),
   ``log(max / min)`` while the quotient is finite (IEEE division is correctly rounded, also
   for subnormal entries such as 1e-310), and ``log(max) - log(min)`` when it overflows
   (levels above 709, where an absolute error of a few 1e-13 is still relative 1e-16).
   Every branch is within :data:`FLOAT_REL_ERR` of the exact level (derivation there).
2. *Exact, on the candidate columns.*  Every column whose floating-point level is within twice
   that error of the largest one may hold the true maximum; their ratios ``max/min`` are
   compared exactly as :class:`fractions.Fraction` of the stored floats, which gives the exact
   largest ratio :math:`R^*` (``max_ratio``).
3. *A rigorous upper bound.*  ``epsilon_upper`` is the first float from the floating-point
   level upwards whose exponential is proven :math:`\ge R^*` by rational arithmetic
   (:func:`exp_at_least`, on the library's rational bracket of :math:`e^x` that also proves the
   realised channels of :mod:`ldpopt.deploy.sampling`), so
   :math:`Q(y|x)\le e^{\text{epsilon\_upper}}Q(y|x')` holds exactly for every pair and output.
   :meth:`EpsilonCertificate.satisfies` decides a claim exactly the same way.

A column with a zero next to a positive entry has level ``inf``; an all-zero column (an output
never produced) has level 0.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
from dataclasses import KW_ONLY, dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ldpopt._json import in_memory_file, loads_strict
from ldpopt._sampler import exp_bounds
from ldpopt._validation import as_real_array, check_bool, is_real, short_repr
from ldpopt.deploy.files import FORMAT_NAME, MechanismFileError, load_mechanism
from ldpopt.mechanism import ROW_SUM_TOL, Mechanism, as_mechanism

__all__ = [
    "ChannelFile",
    "EpsilonCertificate",
    "certify_epsilon",
    "exp_at_least",
    "parse_channel_text",
    "read_channel",
]

#: relative error bound of the floating-point column level (u = 2**-53, the unit roundoff):
#: ``log1p(q)`` with q = fl((max - min)/min) (max - min exact): q carries relative error u and
#: log1p's sensitivity q/((1+q) log1p q) is <= 1, plus log1p's own <= 2 ulp (glibc), so <= 5u;
#: ``log(r)`` with r = fl(max/min) >= 2: absolute error u from r plus log's 2 ulp, relative to a
#: level >= log 2 that is <= u/log 2 + 2u < 4u; ``log(max) - log(min)`` (level > 709): 2 ulp of
#: each |log| <= 745 plus the subtraction's u, relative to > 709 that is < 6u.  8u covers all.
FLOAT_REL_ERR = 8 * 2.0**-53
#: decimal digits of the first bracket of e^x (doubled until the comparison is decided)
_EXP_DIGITS = 40
#: a float just above log 2: ``b * _LN2_UP <= x`` proves ``2**b <= e^x``
_LN2_UP = math.nextafter(math.log(2.0), math.inf)
#: how many floats above the floating-point level are tried before stepping up geometrically
#: (the level is within FLOAT_REL_ERR, a few ulps, of the exact one)
_MAX_ULP_STEPS = 64


@dataclass(frozen=True)
class EpsilonCertificate:
    r"""The exact privacy level of a channel (:func:`certify_epsilon`).

    Attributes
    ----------
    epsilon : float
        :math:`\max_y\log(\max_x Q(y|x)/\min_x Q(y|x))` in floating point (relative error
        <= :data:`FLOAT_REL_ERR`); ``inf`` when a column has a zero beside a positive entry.
    epsilon_upper : float
        A float proven by exact arithmetic to satisfy :math:`Q(y|x)\le e^{\text{epsilon\_upper}}
        Q(y|x')` for every x, x', y: the level rounded up, never understated.
    inputs : tuple
        ``(x_hi, x_lo)``: the worst input pair (labels when given), ``Q(y|x_hi)/Q(y|x_lo)`` largest.
    output : int or label
        The worst output y.
    max_ratio : Fraction or None
        The exact largest ratio :math:`\max_y\max_x Q(y|x)/\min_x Q(y|x)` of the stored floats
        (None when it is infinite).
    verified : bool
        ``epsilon_upper`` was proven (always True for a finite level; True for ``inf``).
    num_inputs, num_outputs : int
        Keyword-only, like the following fields.
    candidates : int
        Columns compared exactly (those within twice the floating-point error of the largest).
    message : str
    """

    epsilon: float
    epsilon_upper: float
    inputs: tuple
    output: Any
    max_ratio: Fraction | None
    verified: bool
    _: KW_ONLY
    num_inputs: int
    num_outputs: int
    candidates: int
    message: str = ""

    def satisfies(self, eps: Any) -> bool:
        r"""Exactly whether :math:`Q(y|x)\le e^{\varepsilon}Q(y|x')` for all x, x', y (``eps >= 0``;
        ``inf`` always holds).  Decided with rational arithmetic on the stored floats."""
        e = _check_claim(eps)
        if math.isinf(e):
            return True
        if self.max_ratio is None:
            return False
        return exp_at_least(e, self.max_ratio)


def _check_claim(eps: Any, name: str = "eps") -> float:
    if not is_real(eps):
        raise TypeError(f"{name} must be a real number, got {short_repr(eps)}")
    e = float(eps)
    if math.isnan(e) or e < 0:
        raise ValueError(f"{name} must be >= 0, got {name}={eps!r}")
    return e


# ---------------------------------------------------------------------------------------------
# exact comparison with e^x (the library's one rational bracket of e^x: ldpopt._sampler.exp_bounds)
# ---------------------------------------------------------------------------------------------
def exp_at_least(x: float, ratio: Fraction) -> bool:
    """Exactly whether ``exp(x) >= ratio`` (``x >= 0`` a float, ``ratio >= 1`` a rational).

    Bit lengths decide when ``ratio < 2**b <= e^x`` plainly (also for an ``x`` whose exponential
    no decimal holds); otherwise the rational bracket of ``e^x`` (a correctly rounded ``decimal``
    exponential, :func:`ldpopt._sampler.exp_bounds`) is refined until it decides.  ``exp(x)`` is
    irrational for rational ``x != 0`` (Lindemann), so only ``x == 0`` can tie, answered exactly."""
    if x == 0.0:
        return ratio <= 1
    bits = ratio.numerator.bit_length() - ratio.denominator.bit_length() + 1  # ratio < 2**bits
    if bits * _LN2_UP <= x:
        return True
    digits = _EXP_DIGITS
    while True:
        lo, hi = exp_bounds(x, digits)
        if lo >= ratio:
            return True
        if hi < ratio:
            return False
        digits *= 2


# ---------------------------------------------------------------------------------------------
# the certificate
# ---------------------------------------------------------------------------------------------
def _as_matrix(matrix: Any, normalize: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The channel as a float array (no copy for a float64 array) with its column maxima and
    minima, checked: 2-D, non-empty, finite, non-negative, rows summing to 1 (or rescaled)."""
    m = as_real_array(matrix, "matrix", "a 2-D array of real numbers")
    if m.ndim != 2 or m.shape[0] < 1 or m.shape[1] < 1:
        raise ValueError(f"matrix must be a non-empty 2-D array (rows = inputs), got shape {m.shape}")
    cmax, cmin = m.max(axis=0), m.min(axis=0)  # NaN propagates into both; +-inf shows in one
    if not (np.all(np.isfinite(cmax)) and np.all(np.isfinite(cmin))):
        raise ValueError("matrix must contain only finite numbers")
    if np.any(cmin < 0):
        j = int(np.flatnonzero(cmin < 0)[0])
        raise ValueError(f"matrix must be non-negative, found {float(cmin[j])!r} in column {j}")
    sums = m.sum(axis=1)
    if normalize:
        if np.any(sums <= 0):
            raise ValueError(f"matrix row {int(np.flatnonzero(sums <= 0)[0])} is all zero: cannot normalize")
        m = m / sums[:, None]
        return m, m.max(axis=0), m.min(axis=0)
    bad = np.flatnonzero(np.abs(sums - 1.0) > ROW_SUM_TOL)
    if bad.size:
        raise ValueError(
            f"matrix rows must sum to 1, row {int(bad[0])} sums to {float(sums[bad[0]])!r} "
            "(pass normalize=True to rescale each row)"
        )
    return m, cmax, cmin


def column_levels(cmax: np.ndarray, cmin: np.ndarray) -> np.ndarray:
    """Per-column ``log(max/min)`` in floating point, within :data:`FLOAT_REL_ERR` (see the
    module text); ``inf`` for a zero beside a positive entry, 0 for an all-zero column."""
    out = np.zeros(cmax.shape)
    pos = cmin > 0
    hi, lo = cmax[pos], cmin[pos]
    lev = np.empty(hi.shape)
    with np.errstate(over="ignore", divide="ignore"):
        r = hi / lo
    near = hi <= 2.0 * lo
    lev[near] = np.log1p((hi[near] - lo[near]) / lo[near])
    mid = ~near & np.isfinite(r)
    lev[mid] = np.log(r[mid])
    far = ~np.isfinite(r)
    lev[far] = np.log(hi[far]) - np.log(lo[far])
    out[pos] = lev
    out[(cmin == 0) & (cmax > 0)] = math.inf
    return out


def _exact_max(m: np.ndarray, cmax: np.ndarray, cmin: np.ndarray, cols: np.ndarray) -> tuple[Fraction, int]:
    """The exact largest ``max/min`` over ``cols`` (positive minima) and a column attaining it."""
    best: Fraction | None = None
    best_j = int(cols[0])
    seen: set[tuple[float, float]] = set()
    for j in cols.tolist():
        key = (float(cmax[j]), float(cmin[j]))
        if key in seen:
            continue
        seen.add(key)
        r = Fraction(key[0]) / Fraction(key[1])
        if best is None or r > best:
            best, best_j = r, j
    assert best is not None
    return best, best_j


def _upper(eps: float, ratio: Fraction) -> float:
    """The first float from ``eps`` upwards whose exponential is proven ``>= ratio``."""
    e = eps
    for i in range(10_000):
        if exp_at_least(e, ratio):
            return e
        e = float(np.nextafter(e, math.inf)) if i < _MAX_ULP_STEPS else e * (1 + 2.0**-40) + 2.0**-1074
    raise AssertionError("no upper bound found")  # pragma: no cover - eps is a few ulps off


def certify_epsilon(
    matrix: Any, *, labels: Any = None, output_labels: Any = None, normalize: bool = False
) -> EpsilonCertificate:
    r"""The exact privacy level of a channel matrix, with a rigorous upper bound.

    Parameters
    ----------
    matrix : array_like, shape (k, n), or Mechanism
        ``matrix[x, y] = Q(y|x)``, rows summing to 1 (within ``ROW_SUM_TOL``); a
        :class:`~ldpopt.Mechanism` (or a design result) gives its matrix and labels.
    labels, output_labels : sequence, optional
        Names of the inputs (rows) and outputs (columns), used in ``inputs`` and ``output``.
    normalize : bool
        Rescale every row to sum to 1 instead of refusing one that does not.

    Returns
    -------
    EpsilonCertificate
        ``epsilon`` (floating point), ``epsilon_upper`` (proven), the worst pair and output and
        the exact largest ratio.

    Examples
    --------
    >>> import ldpopt
    >>> c = ldpopt.certify_epsilon([[0.75, 0.25], [0.25, 0.75]])
    >>> round(c.epsilon, 12), c.max_ratio, c.satisfies(1.0986), c.satisfies(1.0987)
    (1.098612288668, Fraction(3, 1), False, True)
    """
    normalize = check_bool(normalize, "normalize")
    if isinstance(matrix, Mechanism) or isinstance(getattr(matrix, "mechanism", None), Mechanism):
        mech = as_mechanism(matrix, "matrix")
        labels = mech.labels if labels is None else labels
        output_labels = mech.output_labels if output_labels is None else output_labels
        matrix = mech.matrix
    m, cmax, cmin = _as_matrix(matrix, normalize)
    k, n = m.shape
    lab = _labels(labels, k, "labels", "rows")
    out_lab = _labels(output_labels, n, "output_labels", "columns")
    levels = column_levels(cmax, cmin)
    j = int(np.argmax(levels))
    eps = float(levels[j])
    if math.isinf(eps):
        ratio, upper, cands = None, math.inf, 1
        msg = f"output {j} has a zero probability beside a positive one: no finite eps"
    elif eps == 0.0:
        ratio, upper, cands = Fraction(1), 0.0, 1
        msg = "every output is equally likely from every input: eps = 0"
    else:
        cols = np.flatnonzero(levels >= eps * (1 - 2 * FLOAT_REL_ERR))
        ratio, j = _exact_max(m, cmax, cmin, cols)
        upper, cands = _upper(eps, ratio), int(cols.size)
        msg = f"eps = {eps:.17g}, proven <= {upper:.17g} by exact arithmetic on {cands} column(s)"
    col = m[:, j]
    hi, lo = int(np.argmax(col)), int(np.argmin(col))
    return EpsilonCertificate(
        epsilon=eps,
        epsilon_upper=upper,
        inputs=(hi, lo) if lab is None else (lab[hi], lab[lo]),
        output=j if out_lab is None else out_lab[j],
        max_ratio=ratio,
        verified=True,
        num_inputs=k,
        num_outputs=n,
        candidates=cands,
        message=msg,
    )


def _labels(value: Any, size: int, name: str, what: str) -> tuple | None:
    if value is None:
        return None
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of {size} names, got {short_repr(value)}")
    lab = tuple(value)
    if len(lab) != size:
        raise ValueError(f"{name} must name the {size} {what}, got {len(lab)} names")
    return lab


# ---------------------------------------------------------------------------------------------
# channel files: a mechanism file, or a bare matrix as CSV, NPY or JSON
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ChannelFile:
    """A channel matrix read by :func:`read_channel` (rows = inputs), not yet checked as a channel.

    ``claimed_eps`` is the eps a mechanism file states (None for a bare matrix); ``kind`` is one of
    ``"mechanism"``, ``"json"``, ``"npy"``, ``"csv"``.  ``problem``: why a mechanism file did not
    validate (its stored matrix is then read as it is, to be checked all the same)."""

    matrix: np.ndarray
    labels: tuple | None
    output_labels: tuple | None
    claimed_eps: float | None
    kind: str
    problem: str = ""


#: cells of a text matrix: separated by commas, semicolons, tabs or blanks
_CELL_SEP = re.compile(r"[,;\t ]+")


def _number(cell: str) -> float | None:
    try:
        return float(cell)
    except ValueError:
        return None


def parse_channel_text(text: str, what: str = "matrix") -> ChannelFile:
    """A matrix typed or pasted as text: one row per line, cells separated by commas, semicolons,
    tabs or blanks; an optional first row of output names and an optional first column of input
    names (recognised by not being numbers); blank lines and ``#`` comments are skipped.  A JSON
    array of rows (text starting with ``[``) is read as JSON.  Errors name ``what``."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got text={short_repr(text)}")
    if text.lstrip().startswith(("[", "{")):
        return _json_channel(loads_strict(text, what), what)
    lines = [ln.split("#", 1)[0].strip() for ln in text.splitlines()]
    if any("," in ln for ln in lines):
        rows = [[c.strip() for c in r] for r in csv.reader(io.StringIO("\n".join(ln for ln in lines if ln)))]
    else:
        rows = [[c for c in _CELL_SEP.split(ln) if c] for ln in lines if ln]
    if not rows:
        raise ValueError(f"{what}: no rows")
    header: tuple | None = None
    if all(_number(c) is None for c in rows[0]):  # names only (the corner cell may be empty)
        header, rows = tuple(rows[0]), rows[1:]
    labelled = bool(rows) and all(_number(r[0]) is None for r in rows if r)
    names = tuple(r[0] for r in rows) if labelled else None
    body = [r[1:] if labelled else r for r in rows]
    if header is not None and labelled and body and len(header) == len(body[0]) + 1:
        header = header[1:]
    widths = {len(r) for r in body}
    if not body or len(widths) != 1 or 0 in widths:
        raise ValueError(f"{what}: every row must have the same number of cells (found {sorted(widths)})")
    values = []
    for i, r in enumerate(body):
        row = [_number(c) for c in r]
        if any(v is None for v in row):
            bad = r[row.index(None)]
            raise ValueError(f"{what}: row {i} has a cell that is not a number: {bad!r}")
        values.append(row)
    return ChannelFile(np.array(values, dtype=float), names, header, None, "csv")


def _json_channel(doc: Any, what: str) -> ChannelFile:
    if isinstance(doc, dict):
        if "matrix" not in doc:
            raise ValueError(f'{what}: a JSON object must hold the channel under "matrix"')
        lab, out = doc.get("labels"), doc.get("output_labels")
        return ChannelFile(
            _json_matrix(doc["matrix"], what),
            None if lab is None else tuple(lab),
            None if out is None else tuple(out),
            None,
            "json",
        )
    return ChannelFile(_json_matrix(doc, what), None, None, None, "json")


def _json_matrix(value: Any, what: str) -> np.ndarray:
    if not (isinstance(value, list) and value and all(isinstance(r, list) for r in value)):
        raise ValueError(f"{what}: the matrix must be a JSON array of rows (arrays of numbers)")
    try:
        return as_real_array(value, f"{what}: the matrix", "an array of rows of numbers")
    except TypeError as exc:
        raise ValueError(str(exc)) from None


def read_channel(source: Any, *, filename: str | None = None) -> ChannelFile:
    """A channel matrix from a file: an ldpopt mechanism file (read and re-validated by
    :func:`ldpopt.deploy.files.load_mechanism`), a JSON array of rows or object with ``matrix``
    (and optional ``labels``, ``output_labels``), a NumPy ``.npy`` array, or text (CSV and the
    forms of :func:`parse_channel_text`).  ``source`` is a path, or content in memory (``bytes``)
    with ``filename`` naming it (its suffix gives the format).  Problems raise ``ValueError``."""
    mem = in_memory_file(source, filename)
    if mem is None and not isinstance(source, (str, os.PathLike)):
        raise TypeError(
            f"source must be a path (str or os.PathLike) or the content as bytes, "
            f"got source={short_repr(source)}"
        )
    name = mem[0] if mem is not None else str(source)
    try:
        data = mem[1] if mem is not None else open(source, "rb").read()  # noqa: SIM115
    except OSError as exc:
        raise ValueError(f"{name}: cannot be read ({exc.strerror or exc})") from None
    if name.lower().endswith(".npy"):
        try:
            arr = np.load(io.BytesIO(data), allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            raise ValueError(f"{name}: not a readable .npy array ({exc})") from None
        return ChannelFile(_npy_matrix(arr, name), None, None, None, "npy")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError(f"{name}: not UTF-8 text (a CSV, JSON or .npy file is expected)") from None
    if text.lstrip().startswith(("{", "[")):
        doc = loads_strict(text, name)
        if isinstance(doc, dict) and doc.get("format") == FORMAT_NAME:
            return _mechanism_channel(doc, data, name)
        return _json_channel(doc, name)
    return parse_channel_text(text, name)


def _mechanism_channel(doc: dict, data: bytes, name: str) -> ChannelFile:
    """A mechanism file, read and re-validated; one that does not validate (a matrix that breaks
    its stated eps, a digest that does not match) is read as its stored matrix, with the reason."""
    try:
        mech = load_mechanism(data, filename=name).mechanism
    except MechanismFileError as exc:
        ch = _json_channel(doc, name)
        eps: Any = doc.get("eps")
        claimed = math.inf if eps == "inf" else float(eps) if is_real(eps) else None
        return ChannelFile(ch.matrix, ch.labels, ch.output_labels, claimed, "mechanism", str(exc))
    return ChannelFile(np.asarray(mech.matrix), mech.labels, mech.output_labels, mech.eps, "mechanism")


def _npy_matrix(arr: np.ndarray, name: str) -> np.ndarray:
    if arr.dtype.kind not in "iuf":
        raise ValueError(f"{name}: the array must hold real numbers, got dtype {arr.dtype}")
    return arr
