r"""f-divergences and their perspectives.

An f-divergence between two distributions u, v on a finite set is

.. math:: D_f(u \| v) = \sum_y v_y f(u_y / v_y)

for a convex :math:`f:(0,\infty)\to\mathbb R` with :math:`f(1)=0` (SPR paper, eq. 2).
The summand is the *perspective* :math:`g(x, y) = y f(x/y)`, which is positively
1-homogeneous and jointly convex.  It is extended to the boundary with the usual
conventions

* :math:`g(0, 0) = 0`,
* :math:`g(0, y) = y f(0^+)`,
* :math:`g(x, 0) = x f'(\infty)` with :math:`f'(\infty) = \lim_{t\to\infty} f(t)/t`.

Every built-in divergence carries an integer ``code`` and a parameter so that the
numba kernels in :mod:`ldpopt.spr._kernels` evaluate the same perspective without calling
back into Python.  Built-ins evaluate the perspective from ``(x, y, d)`` with
``d = x - y`` supplied separately: in the SPR dynamic program ``d`` is known far more
accurately than ``x - y`` (both are close to 1 when eps is tiny).

Adding :math:`a(t-1)` to f does not change :math:`D_f` between distributions (the terms add
:math:`a\sum(u-v)=0`), and the built-in generators use the one with :math:`f'(1)=0`:
:math:`t\log t-t+1` for KL, :math:`t-1-\log t` for reverse KL,
:math:`t^\alpha-1-\alpha(t-1)` and :math:`1-t^\alpha+\alpha(t-1)` for the power (Renyi)
divergences (JS, chi^2, Hellinger, TV and :math:`E_\gamma` already have it).  Every
perspective term is then >= 0 and of order :math:`d^2/y`, and it is evaluated without
cancellation: e.g. KL as :math:`y\,[(1+u)\log(1+u)-u]` with :math:`u=d/y` (a Taylor series for
small u).  With :math:`f(t)=t\log t` the terms of the SPR blocks are of order d and cancel in
the sum down to order :math:`d^2`: at eps = 1e-8 that cost five digits.  ``docs/spr.md`` states
the measured precision.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ldpopt._validation import check_distribution_pair, is_real

__all__ = [
    "FDivergence",
    "get_divergence",
    "f_divergence",
    "egamma",
    "renyi",
    "BUILTIN_NAMES",
    "RENYI_NEAR_MAX",
    "logsumexp",
    "power_log_terms",
    "renyi_value",
    "perspective_array",
    "log_ratio_array",
    "chernoff",
    "chernoff_information",
    "ChernoffInformation",
    "chernoff_curve",
    "is_chernoff",
]

# Kernel codes; keep in sync with ``ldpopt.spr._kernels.perspective``.
CODE_USER = -1
CODE_KL = 0
CODE_REVERSE_KL = 1
CODE_TV = 2
CODE_CHI2 = 3
CODE_HELLINGER = 4
CODE_JS = 5
CODE_EGAMMA = 6
CODE_POWER_UP = 7  # f(t) = t^a - 1 - a (t - 1), a > 1 (Renyi, a > 1)
CODE_POWER_DOWN = 8  # f(t) = 1 - t^a + a (t - 1), 0 < a < 1 (Renyi, a < 1)
#: the Chernoff objective (not an f-divergence, no kernel): solved by ``ldpopt.spr.chernoff``
CODE_CHERNOFF = 9

#: relative tolerance of the f(1) = 0 check for user-supplied generators
F_ONE_TOL = 1e-9
#: slack allowed in the midpoint-convexity spot check of a user generator
CONVEXITY_TOL = 1e-9
_LOG2 = math.log(2.0)

# ---------------------------------------------------------------------------------------------
# Accurate building blocks of the built-in perspectives (mirrored in ldpopt.spr._kernels)
# ---------------------------------------------------------------------------------------------
#: |u| = |d / y| below this: the KL and reverse-KL terms (1+u) log1p(u) - u and u - log1p(u)
#: are summed as Taylor series; the direct forms cancel by a factor ~2/|u| (<= 20, 4 bits, above)
SERIES_U_MAX = 0.1
#: terms kept: the first dropped term is < 2 |u|^(N-1) / (N+1) <= 1.2e-17 of the sum at |u| = 0.1
SERIES_U_TERMS = 17
#: |z| below this: E(z) = expm1(z) - z is summed as its Taylor series (the direct form cancels
#: by a factor <= 4.7 at the switch) ...
SERIES_E_MAX = 0.5
#: ... with the terms z^n / n!, n = 2..15: the first dropped one is < 2 |z|^14 / 16! = 6e-18 of
#: the sum
SERIES_E_TERMS = 15
#: log(x/y) is log1p(u), u = d / y, for -LOG1P_MAX < u < R_MAX (u known to ~ulp: log1p(u)
#: is then accurate to ~ulp); below, 1 + u would carry the absolute error of u, and the ratio
#: x / y (or log x - log y) is used
LOG1P_MAX = 0.5
#: JS: |w| = |d / (x + y)| below this uses 2 w atanh(w) + log1p(-w^2) (cancels by a factor <= 2.1)
JS_NEAR_MAX = 0.5
#: Renyi, alpha < 1: with 1 - S above this the value is log S of the log-sum-exp of the terms,
#: not log1p(-(1 - S)) (whose absolute error ~ulp / S grows as S -> 0); at the switch both
#: forms are accurate to a few ulp relative
RENYI_NEAR_MAX = 0.5
#: exp / expm1 overflow above log(DBL_MAX)
EXP_MAX = 709.782712893384
#: x / y strictly between these is a normal number: log(x / y) is then taken of the rounded
#: ratio (error ~ulp, where log x - log y carries ~ulp (|log x| + |log y|))
R_MIN = 1e-300
R_MAX = 1e300

#: series coefficients: (1+u) log1p(u) - u = u^2 sum_{n>=2} (-u)^(n-2) / (n (n-1)) (KL) and
#: u - log1p(u) = u^2 sum_{n>=2} (-u)^(n-2) / n (reverse KL)
KL_COEF = tuple(1.0 / (n * (n - 1)) for n in range(2, SERIES_U_TERMS + 1))
RKL_COEF = tuple(1.0 / n for n in range(2, SERIES_U_TERMS + 1))
#: E(z) = e^z - 1 - z = z^2 sum_{n>=2} z^(n-2) / n!
E_COEF = tuple(1.0 / math.factorial(n) for n in range(2, SERIES_E_TERMS + 1))


def _perspective_scalar(
    code: int, param: float, x: float, y: float, d: float, log_floor: float = -math.inf
) -> float:
    """The perspective y f(x/y) of a built-in ``code`` at one point: :func:`perspective_array`
    on length-1 arrays (the compiled kernels' scalar version is ``ldpopt.spr._kernels.perspective``).

    ``d`` is x - y known accurately.  ``log_floor`` is the log of a positive lower bound that
    x and y are known to have even when they underflowed to 0.0 (in the SPR scores it is -eps:
    every entry is at least e^{-eps}); KL, reverse KL and Renyi (a > 1) then stay finite for eps
    beyond ~745.
    """
    return float(perspective_array(code, param, np.array([x]), np.array([y]), np.array([d]), log_floor)[0])


# The built-in perspectives, vectorised: one function per code evaluates its formulas on the
# subsets of entries that take each branch (``out`` starts at 0, the value of x = y = 0).  The
# generators of KL, reverse KL and the power divergences are normalised to f'(1) = 0 (module
# docstring), so every term is >= 0 and O(d^2).  ``ldpopt.spr._kernels`` mirrors the same
# branches and constants for one point in compiled code.
def log_ratio_array(x: np.ndarray, y: np.ndarray, d: np.ndarray) -> np.ndarray:
    """log(x / y) of positive x, y with ``d = x - y`` known accurately (log1p(d / y) near 1)."""
    with np.errstate(all="ignore"):
        return _log_ratio_array(
            np.asarray(x, dtype=float), np.asarray(y, dtype=float), np.asarray(d, dtype=float)
        )


def _u_series_array(u, coef):
    v = -u
    s = np.full(u.shape, coef[-1])
    for cj in coef[-2::-1]:
        # s = s * v + cj, in place (the same roundings, no temporaries)
        np.multiply(s, v, out=s)
        np.add(s, cj, out=s)
    return u * u * s


def _e_series_array(z):
    return _u_series_array(-z, E_COEF)


def _log_ratio_array(x, y, d, u=None):
    """Vectorised :func:`_log_ratio` (``u = d / y`` when the caller has it)."""
    u = d / y if u is None else u
    out = np.log1p(u)
    fix = ~((u > -LOG1P_MAX) & (u < R_MAX))
    if fix.any():
        xf, yf = x[fix], y[fix]
        r = xf / yf
        ok = (r > R_MIN) & (r < R_MAX)
        out[fix] = np.where(ok, np.log(np.where(ok, r, 1.0)), np.log(xf) - np.log(yf))
    return out


def _pow_term_array(x, b, l):
    z = b * l
    out = x * np.exp(z)
    big = ~(z < EXP_MAX)
    if big.any():
        out[big] = np.exp(np.log(x[big]) + z[big])
    return out


def _xe_array(x, b, l):
    z = b * l
    out = _pow_term_array(x, b, l) - x * (1.0 + z)
    s = np.abs(z) < SERIES_E_MAX
    if s.any():
        out[s] = x[s] * _e_series_array(z[s])
    return out


def _a_tv(param, x, y, d, lf, out):
    out[:] = 0.5 * np.abs(d)


def _a_egamma(param, x, y, d, lf, out):
    out[:] = np.maximum(d - (param - 1.0) * y, 0.0)


def _kl_like_array(x, y, d, coef, reverse, lr=None):
    """KL (y [(1+u) log1p(u) - u]) or, ``reverse``, reverse-KL (y [u - log1p(u)]) terms, x, y > 0
    (``lr`` = log(x/y) when the caller has it)."""
    u = d / y
    lr = _log_ratio_array(x, y, d, u) if lr is None else lr
    out = d - y * lr if reverse else x * lr - d
    s = np.abs(u) < SERIES_U_MAX
    if s.any():
        out[s] = y[s] * _u_series_array(u[s], coef)
    return out


def _on_positive(x, y, d, out, fn) -> bool:
    """out[x > 0 & y > 0] = fn(those x, y, d), without copies when every entry is positive;
    True when every entry is (then no entry takes the zero branches of the caller)."""
    both = (x > 0) & (y > 0)
    if both.all():
        out[:] = fn(x, y, d)
        return True
    if both.any():
        out[both] = fn(x[both], y[both], d[both])
    return False


def _a_kl(param, x, y, d, lf, out):
    if _on_positive(x, y, d, out, lambda a, b, c: _kl_like_array(a, b, c, KL_COEF, False)):
        return
    xo = (x > 0) & (y == 0)
    out[xo] = np.maximum(x[xo] * (np.log(x[xo]) - lf - 1.0), 0.0)
    yo = (x == 0) & (y > 0)
    out[yo] = y[yo]


def _a_reverse_kl(param, x, y, d, lf, out):
    if _on_positive(x, y, d, out, lambda a, b, c: _kl_like_array(a, b, c, RKL_COEF, True)):
        return
    yo = (x == 0) & (y > 0)
    out[yo] = np.maximum(y[yo] * (np.log(y[yo]) - lf - 1.0), 0.0)
    xo = (x > 0) & (y == 0)
    out[xo] = x[xo]


def _a_chi2(param, x, y, d, lf, out):
    pos = y > 0
    out[pos] = d[pos] * d[pos] / y[pos]
    out[(x > 0) & ~pos] = np.inf


def _a_hellinger(param, x, y, d, lf, out):
    s = np.sqrt(x) + np.sqrt(y)
    pos = s > 0
    out[pos] = d[pos] * d[pos] / (s[pos] * s[pos])


def _js_array(x, y, d):
    """JS terms for x + y > 0 (:func:`_g_js`): the atanh form where |w| < JS_NEAR_MAX, else logs."""
    s = x + y
    w = d / s
    out = 0.25 * s * (2.0 * w * np.arctanh(w) + np.log1p(-w * w))
    far = ~(np.abs(w) < JS_NEAR_MAX)
    if far.any():
        xf, yf, sf = x[far], y[far], s[far]
        a = np.where(xf > 0, xf * np.log(np.where(xf > 0, 2.0 * xf / sf, 1.0)), 0.0)
        b = np.where(yf > 0, yf * np.log(np.where(yf > 0, 2.0 * yf / sf, 1.0)), 0.0)
        out[far] = 0.5 * (a + b)
    return out


def _a_js(param, x, y, d, lf, out):
    pos = x + y > 0
    if pos.all():
        out[:] = _js_array(x, y, d)
    elif pos.any():
        out[pos] = _js_array(x[pos], y[pos], d[pos])


def _power_up_array(a, x, y, d):
    b = a - 1.0
    l = _log_ratio_array(x, y, d)
    return _xe_array(x, b, l) + b * _kl_like_array(x, y, d, KL_COEF, False, l)


def _power_down_array(a, x, y, d):
    b = 1.0 - a
    l = _log_ratio_array(x, y, d)
    out = b * _kl_like_array(x, y, d, KL_COEF, False, l) - _xe_array(x, -b, l)
    gt = l > 1.0
    if gt.any():
        lg = l[gt]
        out[gt] = x[gt] * (b * np.expm1(-lg) - np.expm1(-b * lg))
    return out


def _a_power_up(param, x, y, d, lf, out):
    if _on_positive(x, y, d, out, lambda u, v, w: _power_up_array(param, u, v, w)):
        return
    xo = (x > 0) & (y == 0)
    out[xo] = np.exp(param * np.log(x[xo]) - (param - 1.0) * lf) - param * x[xo]
    yo = (x == 0) & (y > 0)
    out[yo] = (param - 1.0) * y[yo]


def _a_power_down(param, x, y, d, lf, out):
    if _on_positive(x, y, d, out, lambda u, v, w: _power_down_array(param, u, v, w)):
        return
    xo = (x > 0) & (y == 0)
    out[xo] = param * x[xo]
    yo = (x == 0) & (y > 0)
    out[yo] = (1.0 - param) * y[yo]


_ARRAY = {
    CODE_KL: _a_kl,
    CODE_REVERSE_KL: _a_reverse_kl,
    CODE_TV: _a_tv,
    CODE_CHI2: _a_chi2,
    CODE_HELLINGER: _a_hellinger,
    CODE_JS: _a_js,
    CODE_EGAMMA: _a_egamma,
    CODE_POWER_UP: _a_power_up,
    CODE_POWER_DOWN: _a_power_down,
}


def perspective_array(
    code: int, param: float, x: np.ndarray, y: np.ndarray, d: np.ndarray, log_floor: float = -math.inf
) -> np.ndarray:
    """The perspective y f(x/y) of a built-in ``code``, vectorised (``d = x - y`` known accurately,
    ``log_floor`` as in :func:`_perspective_scalar`)."""
    g = _ARRAY.get(code)
    if g is None:
        raise ValueError(f"unknown divergence code {code!r}")
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    d = np.asarray(d, dtype=float)
    out = np.zeros(x.shape, dtype=float)
    with np.errstate(all="ignore"):
        g(param, x, y, d, log_floor, out)
    return out


def power_log_terms(
    alpha: float, x: np.ndarray, y: np.ndarray, d: np.ndarray, log_floor: float
) -> np.ndarray:
    r"""log of :math:`x^\alpha y^{1-\alpha}` per entry, accurate: :math:`\log y + \alpha \log(x/y)`.

    A zero x or y stands for :math:`e^{\text{log\_floor}}` (``-inf``: a true zero).  Used where the
    Renyi sum :math:`\sum x^\alpha y^{1-\alpha}` itself is needed (far from 1) and would overflow
    or lose its digits as a plain float.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    d = np.asarray(d, dtype=float)
    out = np.empty(x.shape)
    with np.errstate(all="ignore"):
        both = (x > 0) & (y > 0)
        out[both] = np.log(y[both]) + alpha * _log_ratio_array(x[both], y[both], d[both])
        rest = ~both & ((x > 0) | (y > 0))  # x = y = 0 adds nothing: -inf
        lx = np.where(x[rest] > 0, np.log(np.where(x[rest] > 0, x[rest], 1.0)), log_floor)
        ly = np.where(y[rest] > 0, np.log(np.where(y[rest] > 0, y[rest], 1.0)), log_floor)
        out[rest] = alpha * lx + (1.0 - alpha) * ly
        out[(x == 0) & (y == 0)] = -np.inf
    return out


def logsumexp(v: np.ndarray) -> float:
    """log sum exp(v), exact for +-inf entries (-inf for an empty or all -inf vector)."""
    v = np.asarray(v, dtype=float)
    if v.size == 0:
        return -math.inf
    m = float(np.max(v))
    if math.isinf(m):
        return m
    return m + math.log(math.fsum(np.exp(v - m).tolist()))


def _check_generator(f: Callable, name: str) -> None:
    f1 = float(np.asarray(f(np.array([1.0])), dtype=float).reshape(-1)[0])
    if not math.isfinite(f1) or abs(f1) > F_ONE_TOL:
        raise ValueError(f"f must satisfy f(1) = 0; got f(1) = {f1!r} for divergence {name!r}")
    ts = np.array([1e-3, 0.05, 0.3, 0.7, 1.0, 1.5, 3.0, 10.0, 100.0])
    for i in range(len(ts)):
        for j in range(i + 1, len(ts)):
            a, b = ts[i], ts[j]
            fa, fb, fm = (float(np.asarray(f(np.array([t]))).reshape(-1)[0]) for t in (a, b, 0.5 * (a + b)))
            if not all(math.isfinite(v) for v in (fa, fb, fm)):
                continue
            scale = 1.0 + abs(fa) + abs(fb)
            if fm > 0.5 * (fa + fb) + CONVEXITY_TOL * scale:
                raise ValueError(
                    f"f must be convex; divergence {name!r} fails the midpoint check at t = {a:g}, {b:g}: "
                    f"f(mid) = {fm:.6g} > {0.5 * (fa + fb):.6g}"
                )


@dataclass(frozen=True)
class FDivergence:
    r"""An f-divergence :math:`D_f(u\|v)=\sum_y v_y f(u_y/v_y)` (SPR paper, eq. 2).

    Parameters
    ----------
    f : callable
        Convex generator on :math:`(0, \infty)` with :math:`f(1) = 0`, vectorised over numpy arrays.
    name : str
        Display name.
    f0 : float, optional
        :math:`f(0^+)`; estimated from ``f`` when omitted.
    slope_inf : float, optional
        :math:`f'(\infty) = \lim_{t\to\infty} f(t)/t`; estimated when omitted.

    Notes
    -----
    ``value_transform`` maps the raw f-divergence to the reported value; it is the
    identity except for Renyi divergences (Prop. 3.7 of the SPR paper), which are
    optimised as the monotone f-divergence with :math:`f(t)=t^\alpha-1` or :math:`1-t^\alpha`.
    """

    f: Callable[[np.ndarray], np.ndarray]
    name: str = "user"
    f0: float | None = None
    slope_inf: float | None = None
    code: int = field(default=CODE_USER, repr=False)
    param: float = field(default=0.0, repr=False)
    value_transform: Callable[[float], float] | None = field(default=None, repr=False, compare=False)
    symmetric: bool = field(default=False, repr=False)

    def __post_init__(self) -> None:
        if not callable(self.f):
            raise TypeError(f"f must be callable, got {type(self.f).__name__}")
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a str, got {self.name!r}")
        if self.code == CODE_USER:
            _check_generator(self.f, self.name)
            if self.f0 is None:
                object.__setattr__(self, "f0", _limit_at_zero(self.f))
            if self.slope_inf is None:
                object.__setattr__(self, "slope_inf", _slope_at_infinity(self.f))

    @property
    def is_builtin(self) -> bool:
        """True when the numba kernels know this divergence."""
        return self.code != CODE_USER

    def perspective(self, x, y, d=None, log_floor: float = -math.inf) -> np.ndarray:
        r"""Vectorised :math:`y f(x/y)` with the boundary conventions of the module docstring.

        ``d`` is ``x - y`` when the caller knows it more accurately than the subtraction.
        ``log_floor`` is the log of a positive lower bound of x and y that survives their
        underflow to 0.0 (used by KL and reverse KL; ``-inf`` means a true zero).
        """
        x = np.asarray(x, dtype=float)
        y = np.asarray(y, dtype=float)
        d = x - y if d is None else np.asarray(d, dtype=float)
        x, y, d = np.broadcast_arrays(x, y, d)
        out = np.empty(x.shape, dtype=float)
        if self.is_builtin:
            return perspective_array(self.code, self.param, x, y, d, log_floor)
        both = (x > 0) & (y > 0)
        out[:] = 0.0
        if np.any(both):
            out[both] = y[both] * np.asarray(self.f(x[both] / y[both]), dtype=float)
        x_only = (x > 0) & (y == 0)
        out[x_only] = x[x_only] * self.slope_inf if self.slope_inf != 0 else 0.0
        y_only = (x == 0) & (y > 0)
        out[y_only] = y[y_only] * self.f0 if self.f0 != 0 else 0.0
        return out

    def raw(self, u, v) -> float:
        """The f-divergence itself, :math:`\\sum_y v_y f(u_y/v_y)`, before any value transform.

        For two distributions it is >= 0 (Jensen: :math:`\\sum v f(u/v) \\ge f(\\sum u) = f(1) = 0`),
        so a negative rounded sum (possible for a user's generator, whose terms change sign) is
        reported as 0.  The built-in perspectives are >= 0 term by term.
        """
        u = np.asarray(u, dtype=float)
        v = np.asarray(v, dtype=float)
        terms = self.perspective(u, v)
        if np.any(np.isposinf(terms)):
            return math.inf
        return max(float(math.fsum(terms.tolist())), 0.0)

    def transform(self, raw_value: float) -> float:
        """Map a raw f-divergence value to the reported value (identity except Renyi)."""
        return raw_value if self.value_transform is None else self.value_transform(raw_value)

    def __call__(self, u, v) -> float:
        """The reported divergence of two distributions (Renyi itself for ``renyi``)."""
        u = np.asarray(u, dtype=float)
        v = np.asarray(v, dtype=float)
        if self.code in (CODE_POWER_UP, CODE_POWER_DOWN):
            return renyi_value(self.code, self.param, u, v, u - v, 1.0)
        return self.transform(self.raw(u, v))


def renyi_value(code: int, alpha: float, x, y, d, total: float, log_floor: float = -math.inf) -> float:
    r"""Renyi divergence :math:`D_\alpha(x/Z \| y/Z)` of two mass vectors with the same total Z.

    :math:`D_\alpha = \log S / (\alpha - 1)` with :math:`S = \sum x^\alpha y^{1-\alpha} / Z`.  Near
    S = 1 (small divergences) S - 1 is the sum of the nonnegative centred power terms (accurate
    to a few ulp) and :math:`\log S` its log1p; far from 1, where S overflows or 1 - S loses the
    digits of a small S, :math:`\log S` is a log-sum-exp of :math:`\log(x^\alpha y^{1-\alpha})`.
    ``log_floor`` as in :func:`_perspective_scalar`.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    d = np.asarray(d, dtype=float)
    terms = perspective_array(code, alpha, x, y, d, log_floor)
    near = math.inf if np.any(np.isinf(terms)) else math.fsum(terms.tolist()) / total
    if code == CODE_POWER_UP and math.isfinite(near):
        log_s = math.log1p(near)
    elif code == CODE_POWER_DOWN and near <= RENYI_NEAR_MAX:
        log_s = math.log1p(-near)
    else:
        log_s = logsumexp(power_log_terms(alpha, x, y, d, log_floor)) - math.log(total)
    value = log_s / (alpha - 1.0)
    # D_alpha >= 0 for two distributions (S >= 1 for alpha > 1, S <= 1 for alpha < 1): a
    # negative value is rounding of a divergence that is 0 to working precision
    return 0.0 if value < 0.0 else value


def _limit_at_zero(f: Callable) -> float:
    with np.errstate(all="ignore"):
        try:
            v = float(np.asarray(f(np.array([0.0]))).reshape(-1)[0])
        except (ValueError, ZeroDivisionError, FloatingPointError):
            v = math.nan
        if math.isnan(v):
            v = float(np.asarray(f(np.array([1e-300]))).reshape(-1)[0])
    return v


def _slope_at_infinity(f: Callable) -> float:
    """Estimate f'(inf) = lim f(t)/t from t = 1e8, 1e12, 1e16: converging increments give the
    limit, non-shrinking ones (e.g. t log t) mean +inf.  Pass ``slope_inf`` to override."""
    with np.errstate(all="ignore"):
        a, b, c = (float(np.asarray(f(np.array([t]))).reshape(-1)[0]) / t for t in (1e8, 1e12, 1e16))
    if not math.isfinite(c):
        return math.inf if c > 0 else -math.inf
    d1, d2 = b - a, c - b
    if abs(d2) <= 1e-9 * max(1.0, abs(c)) or abs(d2) < 0.1 * abs(d1):
        return c
    return math.inf if d2 > 0 else -math.inf


def _xlogx(t):
    t = np.asarray(t, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(t > 0, t * np.log(np.where(t > 0, t, 1.0)), 0.0)


def _kl_f(t):
    # t log t - (t - 1): the same divergence as t log t, with f'(1) = 0
    return _xlogx(t) - (np.asarray(t, dtype=float) - 1.0)


def _reverse_kl_f(t):
    # -log t + (t - 1)
    t = np.asarray(t, dtype=float)
    with np.errstate(divide="ignore"):
        return (t - 1.0) - np.log(t)


def _tv_f(t):
    return 0.5 * np.abs(np.asarray(t, dtype=float) - 1.0)


def _chi2_f(t):
    return (np.asarray(t, dtype=float) - 1.0) ** 2


def _hellinger_f(t):
    return (np.sqrt(np.asarray(t, dtype=float)) - 1.0) ** 2


def _js_f(t):
    t = np.asarray(t, dtype=float)
    return 0.5 * (_xlogx(t) - (1.0 + t) * np.log((1.0 + t) / 2.0))


def _builtin(name: str) -> FDivergence:
    table = {
        "kl": (_kl_f, 1.0, math.inf, CODE_KL, False),
        "reverse_kl": (_reverse_kl_f, math.inf, 1.0, CODE_REVERSE_KL, False),
        "tv": (_tv_f, 0.5, 0.5, CODE_TV, True),
        "chi2": (_chi2_f, 1.0, math.inf, CODE_CHI2, False),
        "hellinger": (_hellinger_f, 1.0, 1.0, CODE_HELLINGER, True),
        "js": (_js_f, 0.5 * _LOG2, 0.5 * _LOG2, CODE_JS, True),
    }
    f, f0, slope, code, sym = table[name]
    return FDivergence(f=f, name=name, f0=f0, slope_inf=slope, code=code, symmetric=sym)


BUILTIN_NAMES = ("kl", "reverse_kl", "tv", "chi2", "hellinger", "js")
_BUILTINS = {n: _builtin(n) for n in BUILTIN_NAMES}


def egamma(gamma: float) -> FDivergence:
    r"""Hockey-stick divergence :math:`E_\gamma`, :math:`f(t) = (t-\gamma)_+`, :math:`\gamma\ge 1`
    (SPR eq. 14).

    ``egamma(1)`` is total variation.
    """
    if not is_real(gamma):
        raise TypeError(f"gamma must be a real number, got {gamma!r}")
    g = float(gamma)
    if not math.isfinite(g) or g < 1.0:
        raise ValueError(f"gamma must be a finite number >= 1, got gamma={gamma!r}")

    def f(t, g=g):
        return np.maximum(np.asarray(t, dtype=float) - g, 0.0)

    return FDivergence(
        f=f, name=f"egamma({g:g})", f0=0.0, slope_inf=1.0, code=CODE_EGAMMA, param=g, symmetric=(g == 1.0)
    )


def renyi(alpha: float) -> FDivergence:
    r"""Renyi divergence of order :math:`\alpha>0` (SPR Prop. 3.7).

    .. math:: D_\alpha(u\|v) = \frac{1}{\alpha-1}\log\sum_y u_y^\alpha v_y^{1-\alpha}.

    It is optimised through the monotone f-divergence :math:`f(t)=t^\alpha-1-\alpha(t-1)`
    (:math:`\alpha>1`; the f-divergence is :math:`S-1` with :math:`S=\sum u^\alpha v^{1-\alpha}`)
    or :math:`f(t)=1-t^\alpha+\alpha(t-1)` (:math:`\alpha<1`; it is :math:`1-S`), and where S is
    far from 1 through S itself, scaled and evaluated in the log domain (``docs/spr.md``);
    ``value`` and :func:`f_divergence` report :math:`D_\alpha=\log S/(\alpha-1)` itself, evaluated
    by a log-sum-exp where S is far from 1 (no overflow for large orders).  :math:`\alpha=1` is KL.
    """
    if not is_real(alpha):
        raise TypeError(f"alpha must be a real number, got {alpha!r}")
    a = float(alpha)
    if not math.isfinite(a) or a <= 0.0:
        raise ValueError(f"alpha must be a finite number > 0, got alpha={alpha!r}")
    if a == 1.0:
        return _BUILTINS["kl"]
    name = f"renyi({a:g})"
    if a > 1.0:

        def f(t, a=a):
            t = np.asarray(t, dtype=float)
            return t**a - 1.0 - a * (t - 1.0)

        def transform(raw, a=a):
            return math.log1p(raw) / (a - 1.0) if math.isfinite(raw) else math.inf

        return FDivergence(
            f=f,
            name=name,
            f0=a - 1.0,
            slope_inf=math.inf,
            code=CODE_POWER_UP,
            param=a,
            value_transform=transform,
            symmetric=False,
        )

    def f_down(t, a=a):
        t = np.asarray(t, dtype=float)
        return 1.0 - t**a + a * (t - 1.0)

    def transform_down(raw, a=a):
        # D_a = -log(1 - raw) / (1 - a); raw = 1 means disjoint supports
        return -math.log1p(-raw) / (1.0 - a) if raw < 1.0 else math.inf

    return FDivergence(
        f=f_down,
        name=name,
        f0=1.0 - a,
        slope_inf=a,
        code=CODE_POWER_DOWN,
        param=a,
        value_transform=transform_down,
        symmetric=(a == 0.5),
    )


# ---------------------------------------------------------------------------------------------
# Chernoff information
# ---------------------------------------------------------------------------------------------
#: the root of the curve's slope is bracketed to this width in lambda (brentq's ``xtol``); the
#: curve is flat at its maximum, so the value is off by ~curvature * xtol^2, far below rounding
_LAMBDA_XTOL = 1e-14
#: |log(x / y)| below this for every term: the slope of the curve is summed in the centred form
#: sum(y e^{lam l} l - d), whose terms are O(l^2) (the plain terms are O(l) and cancel)
_CENTRED_SLOPE_MAX = 1.0


@dataclass(frozen=True)
class ChernoffInformation:
    r"""Chernoff information :math:`C = \max_{\lambda\in[0,1]} -\log\sum_y u_y^\lambda v_y^{1-\lambda}`
    and the maximising :math:`\lambda` (``lam``)."""

    value: float
    lam: float


def _log_parts(x, y, d, log_floor):
    r"""(log y, log(x / y), active) per term: a zero x or y stands for ``e^log_floor`` (the SPR
    floor e^-eps) and a term with a true zero (``log_floor = -inf``) is inactive: it adds 0 to
    :math:`\sum x^\lambda y^{1-\lambda}` for every lambda in (0, 1) (and, as a limit, at 0 and 1)."""
    with np.errstate(all="ignore"):
        lx = np.where(x > 0, np.log(np.where(x > 0, x, 1.0)), log_floor)
        ly = np.where(y > 0, np.log(np.where(y > 0, y, 1.0)), log_floor)
        active = np.isfinite(lx) & np.isfinite(ly)
        both = (x > 0) & (y > 0)
        lr = np.where(both, log_ratio_array(np.where(both, x, 1.0), np.where(both, y, 1.0), d), lx - ly)
    return np.where(active, ly, -np.inf), np.where(active, lr, 0.0), active


def _curve_value(x, y, d, total: float, lam: float, log_floor: float, ly, lr, active) -> float:
    r""":math:`-\log(\sum x^\lambda y^{1-\lambda} / 	ext{total})`, >= 0, accurate (relative)."""
    if not active.any():
        return math.inf
    if 0.0 < lam < 1.0:
        # (1 - lam) * Renyi D_lam: its centred form near S = 1, a log-sum-exp far from it
        return (1.0 - lam) * renyi_value(CODE_POWER_DOWN, lam, x, y, d, total, log_floor)
    if active.all():
        return 0.0  # S(0) = sum y / total = 1 and S(1) = sum x / total = 1
    terms = ly + lam * lr
    value = -(logsumexp(terms[active]) - math.log(total))
    return value if value > 0.0 else 0.0


def _curve_slope(lam: float, y, d, ly, lr, active, centred: bool) -> float:
    r"""The sign-carrying slope of :math:`S(\lambda) = \sum x^\lambda y^{1-\lambda}` (a positive
    multiple of S'(lambda)); increasing in lambda (S is convex)."""
    if centred:
        return math.fsum((y * np.exp(lam * lr) * lr - d).tolist())
    t = ly[active] + lam * lr[active]
    w = np.exp(t - np.max(t))
    return math.fsum((w * lr[active]).tolist())


def chernoff_curve(x, y, d=None, total: float = 1.0, log_floor: float = -math.inf) -> ChernoffInformation:
    r"""Chernoff information of two mass vectors x, y with the same ``total`` (``d = x - y`` when
    known more accurately than the subtraction).

    :math:`h(\lambda) = -\log(\sum x^\lambda y^{1-\lambda}/Z)` is concave on [0, 1] (minus a
    log-sum-exp of functions linear in lambda); its maximiser is the root of the increasing
    slope of the sum, bracketed by Brent's method (endpoints when the slope does not change
    sign), and the value there is evaluated by :func:`renyi_value` (relative accuracy also
    where it is ~eps^2).  ``log_floor`` as in :func:`perspective_array`: a zero entry stands for
    ``e^log_floor``; with ``-inf`` it is a true zero (a term with one is 0 on (0, 1)).
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    d = x - y if d is None else np.asarray(d, dtype=float)
    ly, lr, active = _log_parts(x, y, d, log_floor)
    if not active.any():
        return ChernoffInformation(math.inf, 0.5)  # disjoint supports: S = 0 on (0, 1)
    centred = bool(active.all()) and float(np.max(np.abs(lr))) < _CENTRED_SLOPE_MAX

    def slope(lam: float) -> float:
        return _curve_slope(lam, y, d, ly, lr, active, centred)

    s0 = slope(0.0)
    if s0 >= 0.0:
        lam = 0.0
    elif slope(1.0) <= 0.0:
        lam = 1.0
    else:
        from scipy.optimize import brentq  # scipy is a core dependency; imported on first use

        lam = float(brentq(slope, 0.0, 1.0, xtol=_LAMBDA_XTOL))
    return ChernoffInformation(_curve_value(x, y, d, total, lam, log_floor, ly, lr, active), lam)


def chernoff_information(m0, m1) -> ChernoffInformation:
    r"""Chernoff information of two distributions, with the maximising lambda (``.value``, ``.lam``):

    .. math:: C(M_0, M_1) = \max_{\lambda\in[0,1]} -\log\sum_y M_0(y)^\lambda M_1(y)^{1-\lambda}.


    The Bayes error of n i.i.d. observations decays as :math:`e^{-nC}`.  Symbols with zero mass
    under one distribution add nothing for lambda in (0, 1); disjoint supports give ``inf``.
    """
    u, v = check_distribution_pair(m0, m1, names=("m0", "m1"))
    return chernoff_curve(u, v, u - v, 1.0)


def _chernoff_f(t):
    # the lambda = 1/2 member of the family 1 - t^lambda (only a placeholder: the objective is
    # the maximum over lambda, which no single generator expresses)
    return 1.0 - np.sqrt(np.asarray(t, dtype=float))


@dataclass(frozen=True)
class _Chernoff(FDivergence):
    """The Chernoff information as a utility (:func:`chernoff`); calling it evaluates
    :func:`chernoff_information`.  It is not an f-divergence: ``perspective`` refuses."""

    def __call__(self, u, v) -> float:
        return chernoff_information(u, v).value

    def perspective(self, x, y, d=None, log_floor: float = -math.inf) -> np.ndarray:
        raise ValueError(
            "divergence 'chernoff' is not an f-divergence (it is a maximum over lambda of "
            "-log sum u^lambda v^(1-lambda)); use ldpopt.chernoff_information"
        )


_CHERNOFF = _Chernoff(
    f=_chernoff_f, name="chernoff", f0=1.0, slope_inf=0.0, code=CODE_CHERNOFF, symmetric=True
)


def chernoff() -> FDivergence:
    r"""The Chernoff information :math:`C(M_0, M_1)` as the utility of :func:`ldpopt.optimal_mechanism`
    (``divergence="chernoff"``): the Bayes-error exponent when both errors count alike.

    ``optimal_mechanism`` maximises it exactly, with a certificate (``docs/chernoff.md``).
    """
    return _CHERNOFF


def is_chernoff(divergence: FDivergence) -> bool:
    """True for the Chernoff objective (:func:`chernoff`), which the f-divergence solvers do not take."""
    return divergence.code == CODE_CHERNOFF


def get_divergence(divergence: str | FDivergence) -> FDivergence:
    """Resolve a divergence given by name (``"kl"``, ``"tv"``, ``"egamma:1.5"``, ``"renyi:2"``...)
    or object."""
    if isinstance(divergence, FDivergence):
        return divergence
    if not isinstance(divergence, str):
        raise TypeError(f"divergence must be a name or an FDivergence, got {divergence!r}")
    key = divergence.strip().lower()
    if key in _BUILTINS:
        return _BUILTINS[key]
    if key == "chernoff":
        return _CHERNOFF
    for prefix, factory in (("egamma", egamma), ("renyi", renyi)):
        for sep in (":", "("):
            if key.startswith(prefix + sep):
                arg = key[len(prefix) + 1 :].rstrip(")")
                try:
                    val = float(arg)
                except ValueError:
                    raise ValueError(f"divergence {divergence!r}: cannot parse parameter {arg!r}") from None
                return factory(val)
    raise ValueError(
        f"unknown divergence={divergence!r}; use one of {', '.join(BUILTIN_NAMES)}, "
        "'chernoff', 'egamma:GAMMA', 'renyi:ALPHA' or an FDivergence"
    )


def f_divergence(u, v, divergence: str | FDivergence = "kl") -> float:
    r"""Evaluate :math:`D_f(u\|v)` between two distributions (reported value; Renyi for ``renyi``)."""
    div = get_divergence(divergence)
    u, v = check_distribution_pair(u, v, names=("u", "v"))
    return div(u, v)
