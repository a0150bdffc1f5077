r"""One definition of the numerical conventions every solver shares.

**Rescaling.** An eps-LDP channel's entries are ratios of :math:`e^\varepsilon` and 1; multiplied
by :math:`c = e^{-\varepsilon}` they become :math:`c` and 1, so nothing overflows for any eps (the
papers' formulas in :math:`e^\varepsilon` overflow float64 beyond eps ~ 709).  With
:math:`A = 1 - c` computed as ``-expm1(-eps)`` (no cancellation at tiny eps), an SPR output mass is
:math:`c + A\,P(B)` over the common denominator :math:`1 + (s-1)c`.  When :math:`c` underflows to 0
at a finite eps (eps > ~745) the entries still are at least :math:`e^{-\varepsilon}`; the kernels
then carry :math:`\log c = -\varepsilon` as ``log_floor``, so log-based divergences stay finite.

**Compensated sums.** :func:`fsum` is an exactly rounded sum (Shewchuk, via ``math.fsum``);
:func:`renormalize` divides by it, so a distribution that sums to 1 within rounding becomes one
whose exactly rounded sum is 1 to within one ulp.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import NamedTuple

import numpy as np

__all__ = ["Rescaled", "fsum", "min_positive_c", "renormalize", "rescale", "rescale_array"]


class Rescaled(NamedTuple):
    """``c = e^-eps``, ``A = 1 - c`` without cancellation, and ``log_floor`` (``log c`` when c
    underflowed to 0 at a finite eps, else ``-inf``, unused)."""

    c: float
    A: float
    log_floor: float


def rescale(eps: float) -> Rescaled:
    """:class:`Rescaled` for one eps (``eps = inf``: c = 0, A = 1, no floor)."""
    if math.isinf(eps):
        return Rescaled(0.0, 1.0, -math.inf)
    c = math.exp(-eps)
    return Rescaled(c, -math.expm1(-eps), -eps if c == 0.0 else -math.inf)


def rescale_array(eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised ``(c, A)`` of :func:`rescale` (``exp(-inf) = 0`` and ``-expm1(-inf) = 1`` exactly)."""
    eps = np.asarray(eps, dtype=float)
    return np.exp(-eps), -np.expm1(-eps)


def min_positive_c(eps: float, name: str = "eps") -> float:
    """``c = e^-eps`` for constructions that need it positive (a channel's low level); refuses an
    eps so large that it underflows to 0 in float64 (eps > ~745), naming the argument."""
    c = math.exp(-eps)
    if c == 0.0:
        raise ValueError(f"{name}={eps!r} is too large: e^(-{name}) underflows to 0 in float64")
    return c


def fsum(values: Iterable[float]) -> float:
    """Exactly rounded sum of ``values`` (``math.fsum``)."""
    return math.fsum(values)


def renormalize(p: np.ndarray) -> np.ndarray:
    """``p`` divided by its exactly rounded sum (which must be positive and finite)."""
    total = math.fsum(p.tolist())
    return p / total
