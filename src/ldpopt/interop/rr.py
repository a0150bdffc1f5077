r"""Parameters of s-ary randomized response, converted into one another.

s-ary randomized response (k-RR) with privacy level :math:`\varepsilon` reports the true value
with the **keep probability** :math:`\kappa = e^\varepsilon / (e^\varepsilon + s - 1)` and each
other value with :math:`q = 1/(e^\varepsilon + s - 1)`.  Equivalently it keeps the true value with
probability :math:`1 - \gamma` and otherwise reports a uniform draw from all s values, with the
**noise parameter** :math:`\gamma = s q = s/(e^\varepsilon + s - 1)` (Warner's and Google's
RAPPOR-style parametrisation; OpenDP's ``make_randomized_response(categories, prob)`` takes
``prob`` = :math:`\kappa`).

Inverses: :math:`\varepsilon = \log(\kappa(s-1)/(1-\kappa)) = \log(1 + s(1-\gamma)/\gamma)`.

**Rounding.** Each derived quantity is rounded *towards privacy*, past a bound on its
floating-point error (:data:`_REL_SLACK`, relative): an eps computed
from a keep probability or a noise parameter is rounded up (the claim never understates the
privacy loss of the given float), a keep probability computed from eps is rounded down and a noise
parameter rounded up (the channel they describe is never less private than the requested eps).
The given quantity is returned unchanged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ldpopt._validation import check_eps, is_integer, is_real

__all__ = ["RRParameters", "rr_parameters"]


@dataclass(frozen=True)
class RRParameters:
    """The three parametrisations of one s-ary randomized response (see the module docstring)."""

    eps: float
    keep: float
    noise: float
    outputs: int


#: relative error bound of each derived quantity before its directed rounding: at most three
#: libm calls (exp/log/log1p, each within 1 ulp = 2u) and three arithmetic operations (u each)
#: on terms of one sign (no cancellation in the formulas below beyond the eps sum, which is
#: bounded by the sum of the magnitudes of its terms): 3 * 2u + 3u = 9u, rounded up to 16u
_REL_SLACK = 16 * 2.0**-53


def _up(x: float, scale: float | None = None) -> float:
    """``x`` moved up past its rounding error (``scale``: the magnitude the error is relative to)."""
    return math.nextafter(x + _REL_SLACK * abs(x if scale is None else scale), math.inf)


def _down(x: float) -> float:
    return math.nextafter(x - _REL_SLACK * abs(x), -math.inf)


def _check_open(value: Any, name: str, low: float, high: float) -> float:
    """A real number strictly between ``low`` and ``high``."""
    if not is_real(value):
        raise TypeError(f"{name} must be a real number, got {name}={value!r}")
    v = float(value)
    if not low < v < high:
        raise ValueError(f"{name} must be in ({low!r}, {high!r}), got {name}={value!r}")
    return v


def rr_parameters(*, eps: Any = None, keep: Any = None, noise: Any = None, outputs: Any) -> RRParameters:
    """eps, keep probability and noise parameter of s-ary randomized response from any one of them.

    Parameters (keyword-only; give exactly one of the first three)
    ----------
    eps : float
        Privacy level, > 0 (``inf``: keep = 1, noise = 0).
    keep : float
        Probability of reporting the true value, in (1/s, 1).
    noise : float
        Probability of replacing the true value by a uniform draw, in (0, 1).
    outputs : int
        s >= 2.
    """
    if not is_integer(outputs) or int(outputs) < 2:
        raise ValueError(f"outputs must be an integer >= 2, got outputs={outputs!r}")
    s = int(outputs)
    given = [name for name, v in (("eps", eps), ("keep", keep), ("noise", noise)) if v is not None]
    if len(given) != 1:
        raise ValueError(f"give exactly one of eps, keep and noise, got {given or 'none'}")
    if eps is not None:
        e = check_eps(eps, "eps")
        if math.isinf(e):
            return RRParameters(e, 1.0, 0.0, s)
        c = math.exp(-e)  # q = c / (1 + (s-1) c): no overflow of e^eps
        denom = 1.0 + (s - 1) * c
        return RRParameters(e, min(_down(1.0 / denom), 1.0), min(_up(s * c / denom), 1.0), s)
    if keep is not None:
        k = _check_open(keep, "keep", 1.0 / s, 1.0)  # keep = 1/s is eps = 0, keep = 1 is eps = inf
        terms = (math.log(k), math.log(s - 1), -math.log1p(-k))
        e = _up(sum(terms), scale=sum(abs(t) for t in terms))
        return RRParameters(e, k, min(_up(s * (1.0 - k) / (s - 1)), 1.0), s)
    g = _check_open(noise, "noise", 0.0, 1.0)  # noise = 1 is eps = 0, noise = 0 is eps = inf
    e = _up(math.log1p(s * (1.0 - g) / g))
    return RRParameters(e, _down(1.0 - g + g / s), g, s)
