"""Input validation shared by the public entry points.

Every check raises ``ValueError``/``TypeError`` naming the argument and the offending value.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any, Literal, overload

import numpy as np

#: tolerance on |sum(p) - 1| before a distribution is rejected (or rescaled with normalize=True)
SUM_TOL = 1e-9


def short_repr(value: Any) -> str:
    """``repr(value)`` cut to 80 characters: how an error message shows the value it refuses."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


# ---------------------------------------------------------------------------------------------
# what counts as a number: the one definition every entry point uses
# ---------------------------------------------------------------------------------------------
#: never numbers, not even where numpy would convert them (True -> 1.0, "0.5" -> 0.5, 1j -> 0.0)
_NOT_NUMBERS = (bool, np.bool_, str, bytes, complex, np.complexfloating)


def is_real(value: Any) -> bool:
    """True for a real number: Python ``int``/``float``, numpy integer/floating scalars (``np.float32``,
    ``np.int64``, ...) and other :class:`numbers.Real`; ``bool``/``np.bool_`` are not numbers here."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def is_integer(value: Any) -> bool:
    """True for an integer: Python ``int`` and numpy integer scalars, never ``bool``/``np.bool_``."""
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def check_real(value: Any, name: str) -> float:
    """``float(value)`` for a real number (:func:`is_real`); TypeError naming the argument otherwise."""
    if not is_real(value):
        raise TypeError(f"{name} must be a real number, got {name}={short_repr(value)}")
    return float(value)


def check_bool(value: Any, name: str) -> bool:
    """A flag: True or False (numpy booleans accepted), a TypeError naming the argument otherwise."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {name}={short_repr(value)}")
    return bool(value)


def check_tolerance(value: Any, name: str) -> float:
    """A tolerance: a finite real number >= 0 (:func:`check_real`)."""
    tol = check_real(value, name)
    if not 0.0 <= tol < math.inf:
        raise ValueError(f"{name} must be a finite number >= 0, got {name}={value!r}")
    return tol


def _first_non_number(value: Any) -> tuple[bool, Any]:
    """``(True, entry)`` for the first entry of an array or (nested) list/tuple that is not a number
    (:data:`_NOT_NUMBERS`, which numpy would convert silently), else ``(False, None)``."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, np.ndarray):
            if item.dtype.kind in "bcSU" and item.size:
                return True, item.flat[0]
            if item.dtype.kind == "O":
                stack.append(item.ravel().tolist())
        elif isinstance(item, _NOT_NUMBERS):
            return True, item
        elif isinstance(item, (list, tuple)):
            types = set(map(type, item))  # fast for long lists of numbers
            if any(issubclass(t, _NOT_NUMBERS) for t in types):
                return True, next(x for x in item if isinstance(x, _NOT_NUMBERS))
            if any(issubclass(t, (list, tuple, np.ndarray)) for t in types):
                stack.extend(x for x in reversed(item) if isinstance(x, (list, tuple, np.ndarray)))
    return False, None


def as_real_array(value: Any, name: str, what: str = "an array of real numbers") -> np.ndarray:
    """``value`` as a float array; TypeError naming the argument for what numpy would convert silently.

    Refused: booleans (``bool``, ``np.bool_``, boolean arrays), strings and bytes (also as entries,
    ``["0.5", "0.5"]``), complex numbers, and masked arrays (the mask would be dropped).  numpy
    integer and floating arrays and scalars are accepted like Python numbers.
    """
    if isinstance(value, np.ma.MaskedArray):
        raise TypeError(
            f"{name} must not be a masked array (its mask would be ignored), got a masked array of shape "
            f"{value.shape} with {int(np.ma.count_masked(value))} masked entries; pass the values to use"
        )
    found, entry = _first_non_number(value)
    if found:
        raise TypeError(f"{name} must be {what}, got the entry {entry!r} ({type(entry).__name__})")
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be {what}, got {name}={short_repr(value)}") from None


def coerce_distribution(p: Any, name: str) -> tuple[np.ndarray, tuple | None]:
    """Turn a sequence, array, dict (label -> prob) or pandas Series into a float array and its labels.

    The values go through :func:`as_real_array`: booleans, strings/bytes (also as entries), complex
    numbers and masked arrays are refused with a TypeError naming the argument.
    """
    labels = None
    if isinstance(p, dict):
        labels = tuple(p.keys())
        values = list(p.values())
    elif hasattr(p, "index") and hasattr(p, "to_numpy") and not isinstance(p, np.ndarray):
        # pandas Series: keep its index as labels
        labels = tuple(p.index.tolist())
        values = p.to_numpy()
    else:
        values = p
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of probabilities, got {short_repr(p)}")
    arr = as_real_array(values, name, "a sequence of real numbers")
    if labels is not None and len(set(labels)) != len(labels):
        raise ValueError(f"{name} has duplicate labels: {short_repr(labels)}")
    return arr, labels


def check_distribution(p: Any, name: str, normalize: bool = False) -> np.ndarray:
    """Validate one probability vector: 1-D, finite, non-negative, summing to 1 within SUM_TOL."""
    arr, _ = coerce_distribution(p, name)
    return _check_array(arr, name, normalize)


def _check_array(arr: np.ndarray, name: str, normalize: bool) -> np.ndarray:
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got an array of shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if not np.all(np.isfinite(arr)):
        bad = arr[~np.isfinite(arr)][0].item()
        raise ValueError(f"{name} must contain only finite numbers, found {bad!r}")
    if np.any(arr < 0):
        bad = arr[arr < 0][0].item()
        raise ValueError(f"{name} must be non-negative, found {bad!r}")
    try:
        total = math.fsum(arr.tolist())
    except OverflowError:
        # the exact sum is beyond the float range (entries near 1e308): scale by 2^-64, exact for
        # every entry that stays normal, and enough for up to 2^64 entries of at most 2^1024
        if not normalize:
            raise ValueError(f"{name} must sum to 1, got a sum beyond the float range") from None
        arr = np.ldexp(arr, -64)
        total = math.fsum(arr.tolist())
    if total <= 0:
        raise ValueError(f"{name} must have positive total mass, got sum={total!r}")
    if not normalize and abs(total - 1.0) > SUM_TOL:
        hint = ""
        if total > 2.0 and bool(np.all(arr == np.floor(arr))):
            # whole numbers far from a distribution: counts, or reports (output indices) given where
            # a distribution was expected (an old positional order of the arguments)
            hint = " (whole numbers: reports or counts where a distribution was expected?)"
        raise ValueError(
            f"{name} must sum to 1 (within {SUM_TOL:g}), got sum={total!r}{hint}; "
            "pass normalize=True to rescale"
        )
    # an accepted vector is divided by its exact (compensated) sum, also within SUM_TOL of 1:
    # divergences are computed for distributions, and e.g. KL(u || (1 + t) v) = KL(u || v) - log(1 + t)
    # would go negative for t = 1e-10; a vector whose sum rounds to exactly 1 is left as it is
    return arr / total if total != 1.0 else arr.copy()


def check_distribution_pair(
    p0: Any, p1: Any, names: Sequence[str] = ("p0", "p1"), normalize: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Validate two distributions on the same alphabet."""
    u, v, _ = check_labelled_pair(p0, p1, names=names, normalize=normalize)
    return u, v


def check_labelled_pair(
    p0: Any, p1: Any, names: Sequence[str] = ("p0", "p1"), normalize: bool = False
) -> tuple[np.ndarray, np.ndarray, tuple | None]:
    """Validate two distributions and reconcile their labels (dicts/Series are aligned by label)."""
    if normalize is False:
        fast = _plain_pair(p0, p1)
        if fast is not None:
            return fast[0], fast[1], None
    a, la = coerce_distribution(p0, names[0])
    b, lb = coerce_distribution(p1, names[1])
    if la is not None and lb is not None:
        if set(la) != set(lb):
            missing = sorted(map(str, set(la) ^ set(lb)))[:5]
            raise ValueError(f"{names[0]} and {names[1]} have different labels, e.g. {missing}")
        pos = {lab: i for i, lab in enumerate(lb)}
        b = b[[pos[lab] for lab in la]]
    labels = la if la is not None else lb
    normalize = check_bool(normalize, "normalize")
    a = _check_array(a, names[0], normalize)
    b = _check_array(b, names[1], normalize)
    if a.shape != b.shape:
        raise ValueError(
            f"{names[0]} and {names[1]} must have the same length, got {a.shape[0]} and {b.shape[0]}"
        )
    return a, b, labels


def _plain_pair(p0: Any, p1: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`check_labelled_pair` of two valid 1-D float64 arrays of one length in fewer numpy
    calls (the checks of :func:`_check_array`, the same returned arrays); ``None`` for anything
    else, including every invalid pair, which the general path then reports."""
    if not (type(p0) is np.ndarray and type(p1) is np.ndarray):
        return None
    if p0.dtype != np.float64 or p1.dtype != np.float64 or p0.ndim != 1 or p0.shape != p1.shape:
        return None
    out = []
    for arr in (p0, p1):
        # min >= 0 is false for a NaN, and +inf makes the sum inf, which is not within SUM_TOL of 1
        if arr.size == 0 or not float(arr.min()) >= 0.0:
            return None
        try:
            total = math.fsum(arr.tolist())
        except OverflowError:
            return None
        if not abs(total - 1.0) <= SUM_TOL:
            return None
        out.append(arr / total if total != 1.0 else arr.copy())
    return out[0], out[1]


def check_eps(eps: Any, name: str = "eps", allow_inf: bool = True) -> float:
    """eps must be a real number > 0 (math.inf allowed = no privacy)."""
    if type(eps) is float and 0.0 < eps < math.inf:  # the common case, without the ABC checks
        return eps
    if not is_real(eps):
        raise TypeError(f"{name} must be a real number, got {short_repr(eps)}")
    e = float(eps)
    if math.isnan(e) or e <= 0:
        raise ValueError(f"{name} must be > 0, got {name}={eps!r}")
    if math.isinf(e) and not allow_inf:
        raise ValueError(f"{name} must be finite here, got {name}={eps!r}")
    return e


#: counts come back as int64 (numpy's type for histograms, ``np.bincount``): their total, the
#: number of observations, must be an int64 as well, so a total of 2**63 or more is refused
_MAX_TOTAL_COUNT = 2**63


def check_counts(
    value: Any, name: str, size: int | None = None, *, what: str = "category", observed: bool = True
) -> np.ndarray:
    """A vector of counts (observations per category) as an int64 array.

    1-D and non-empty (``size`` entries, one per ``what``, when ``size`` is given), finite
    non-negative whole numbers (integer arrays, or floats that are whole numbers), in total below
    2**63 and, with ``observed`` (the default), at least one observation.  What numpy would convert
    silently (booleans, strings) is a TypeError naming the argument (:func:`as_real_array`).
    """
    arr = as_real_array(value, name, "a sequence of counts")
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence of counts, got {name}={short_repr(value)}")
    if size is not None and arr.size != size:
        raise ValueError(
            f"{name} must have one entry per {what} ({size}), got {arr.size}: {name}={short_repr(value)}"
        )
    if not np.all(np.isfinite(arr)) or np.any(arr < 0) or np.any(arr != np.floor(arr)):
        raise ValueError(f"{name} must be non-negative integers, got {name}={short_repr(value)}")
    raw = np.asarray(value)
    exact = raw.dtype.kind in "iu"  # integers stay exact (a float holds whole numbers up to 2**53)
    # the exact total: Python integers, or the correctly rounded sum of whole floats (which is at
    # least 2**63 whenever the exact sum is)
    total = sum(raw.tolist()) if exact else math.fsum(arr.tolist())
    if total >= _MAX_TOTAL_COUNT:
        raise ValueError(f"{name} must total less than 2**63 observations, got a total of {total:.6g}")
    if observed and total < 1:
        raise ValueError(f"{name} must contain at least one observation, got {name}={short_repr(value)}")
    return (raw if exact else arr).astype(np.int64)


@overload
def check_positive_int(value: Any, name: str, allow_none: Literal[False] = False) -> int: ...


@overload
def check_positive_int(value: Any, name: str, allow_none: bool) -> int | None: ...


def check_positive_int(value: Any, name: str, allow_none: bool = False) -> int | None:
    """A positive integer (``bool`` and non-integral floats rejected)."""
    if value is None and allow_none:
        return None
    if is_integer(value):
        v = int(value)
    elif is_real(value) and float(value).is_integer():
        # math.trunc: a Real need not define __int__ (int()'s __trunc__ fallback is deprecated)
        v = int(math.trunc(value))
    else:
        raise ValueError(f"{name} must be a positive integer, got {name}={short_repr(value)}")
    if v < 1:
        raise ValueError(f"{name} must be >= 1, got {name}={value!r}")
    return v
