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
accurately than ``x - y`` (both are close to 1 when eps is tiny), so e.g. KL uses
``x * log1p(d / y)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "FDivergence",
    "get_divergence",
    "f_divergence",
    "egamma",
    "renyi",
    "BUILTIN_NAMES",
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
CODE_POWER_UP = 7  # f(t) = t^a - 1, a > 1 (Renyi, a > 1)
CODE_POWER_DOWN = 8  # f(t) = 1 - t^a, 0 < a < 1 (Renyi, a < 1)

#: relative tolerance of the f(1) = 0 check for user-supplied generators
F_ONE_TOL = 1e-9
#: slack allowed in the midpoint-convexity spot check of a user generator
CONVEXITY_TOL = 1e-9
_LOG2 = math.log(2.0)


def _perspective_scalar(
    code: int, param: float, x: float, y: float, d: float, log_floor: float = -math.inf
) -> float:
    """Reference scalar perspective y f(x/y) for the built-in codes (readable version).

    ``log_floor`` is the log of a positive lower bound that x and y are known to have even
    when they underflowed to 0.0 (in the SPR scores it is -eps: every entry is at least
    e^{-eps}); KL and reverse KL then stay finite for eps beyond ~745.
    """
    if x == 0.0 and y == 0.0:
        return 0.0
    if code == CODE_TV:
        return 0.5 * abs(d)
    if code == CODE_EGAMMA:
        v = d - (param - 1.0) * y
        return v if v > 0.0 else 0.0
    if code == CODE_KL:
        if x == 0.0:
            return 0.0
        if y == 0.0:
            return x * (math.log(x) - log_floor)
        return x * _log_ratio(x, y, d)
    if code == CODE_REVERSE_KL:
        if y == 0.0:
            return 0.0
        if x == 0.0:
            return y * (math.log(y) - log_floor)
        return -y * _log_ratio(x, y, d)
    if code == CODE_CHI2:
        if y == 0.0:
            return math.inf
        return d * d / y
    if code == CODE_HELLINGER:
        s = math.sqrt(x) + math.sqrt(y)
        return d * d / (s * s)
    if code == CODE_JS:
        # 2x/s = 1 + d/s and 2y/s = 1 - d/s: log1p while x, y are comparable, plain logs otherwise
        s = x + y
        close = abs(d) < 0.5 * s
        a = (x * (math.log1p(d / s) if close else math.log(2.0 * x / s))) if x > 0.0 else 0.0
        b = (y * (math.log1p(-d / s) if close else math.log(2.0 * y / s))) if y > 0.0 else 0.0
        return 0.5 * (a + b)
    if code == CODE_POWER_UP:
        if y == 0.0:
            return math.inf
        if x == 0.0:
            return -y
        return y * math.expm1(param * _log_ratio(x, y, d))
    if code == CODE_POWER_DOWN:
        if y == 0.0:
            return 0.0
        if x == 0.0:
            return y
        return -y * math.expm1(param * _log_ratio(x, y, d))
    raise ValueError(f"unknown divergence code {code!r}")


def _perspective_array(
    code: int, param: float, x: np.ndarray, y: np.ndarray, d: np.ndarray, log_floor: float = -math.inf
) -> np.ndarray:
    """Vectorised :func:`_perspective_scalar` (same formulas, numpy masks)."""
    out = np.zeros(x.shape, dtype=float)
    with np.errstate(all="ignore"):
        if code == CODE_TV:
            out = 0.5 * np.abs(d)
        elif code == CODE_EGAMMA:
            out = np.maximum(d - (param - 1.0) * y, 0.0)
        elif code == CODE_HELLINGER:
            s = np.sqrt(x) + np.sqrt(y)
            out = np.where(s > 0, d * d / np.where(s > 0, s * s, 1.0), 0.0)
        elif code == CODE_JS:
            s = np.where(x + y > 0, x + y, 1.0)
            close = np.abs(d) < 0.5 * s
            xs = np.where(x > 0, x, 1.0)
            ys = np.where(y > 0, y, 1.0)
            la = np.where(close, np.log1p(d / s), np.log(2.0 * xs / s))
            lb = np.where(close, np.log1p(-d / s), np.log(2.0 * ys / s))
            a = np.where(x > 0, x * la, 0.0)
            b = np.where(y > 0, y * lb, 0.0)
            out = 0.5 * (a + b)
        else:
            both = (x > 0) & (y > 0)
            yy = np.where(both, y, 1.0)
            xx = np.where(both, x, 1.0)
            dd = np.where(both, d, 0.0)
            lr = np.where(np.abs(dd) < 0.5 * yy, np.log1p(dd / yy), np.log(xx) - np.log(yy))
            x_only = (x > 0) & (y == 0)
            y_only = (x == 0) & (y > 0)
            if code == CODE_KL:
                out = np.where(both, xx * lr, 0.0)
                out[x_only] = x[x_only] * (np.log(x[x_only]) - log_floor)
            elif code == CODE_REVERSE_KL:
                out = np.where(both, -yy * lr, 0.0)
                out[y_only] = y[y_only] * (np.log(y[y_only]) - log_floor)
            elif code == CODE_CHI2:
                out = np.where(y > 0, d * d / np.where(y > 0, y, 1.0), 0.0)
                out[x_only] = np.inf
            elif code == CODE_POWER_UP:
                out = np.where(both, yy * np.expm1(param * lr), 0.0)
                out[x_only] = np.inf
                out[y_only] = -y[y_only]
            elif code == CODE_POWER_DOWN:
                out = np.where(both, -yy * np.expm1(param * lr), 0.0)
                out[y_only] = y[y_only]
            else:
                raise ValueError(f"unknown divergence code {code!r}")
    return np.asarray(out, dtype=float)


def _log_ratio(x: float, y: float, d: float) -> float:
    """log(x / y) computed stably: log1p(d / y) when x and y are close, else a difference of logs."""
    if abs(d) < 0.5 * y:
        return math.log1p(d / y)
    return math.log(x) - math.log(y)


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
            return _perspective_array(self.code, self.param, x, y, d, log_floor)
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
        """The f-divergence itself, :math:`\\sum_y v_y f(u_y/v_y)`, before any value transform."""
        u = np.asarray(u, dtype=float)
        v = np.asarray(v, dtype=float)
        terms = self.perspective(u, v)
        if np.any(np.isposinf(terms)):
            return math.inf
        return float(math.fsum(terms.tolist()))

    def transform(self, raw_value: float) -> float:
        """Map a raw f-divergence value to the reported value (identity except Renyi)."""
        return raw_value if self.value_transform is None else self.value_transform(raw_value)

    def __call__(self, u, v) -> float:
        return self.transform(self.raw(u, v))


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


def _kl_f(t):
    t = np.asarray(t, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(t > 0, t * np.log(np.where(t > 0, t, 1.0)), 0.0)


def _reverse_kl_f(t):
    with np.errstate(divide="ignore"):
        return -np.log(np.asarray(t, dtype=float))


def _tv_f(t):
    return 0.5 * np.abs(np.asarray(t, dtype=float) - 1.0)


def _chi2_f(t):
    return (np.asarray(t, dtype=float) - 1.0) ** 2


def _hellinger_f(t):
    return (np.sqrt(np.asarray(t, dtype=float)) - 1.0) ** 2


def _js_f(t):
    t = np.asarray(t, dtype=float)
    return 0.5 * (_kl_f(t) - (1.0 + t) * np.log((1.0 + t) / 2.0))


def _builtin(name: str) -> FDivergence:
    table = {
        "kl": (_kl_f, 0.0, math.inf, CODE_KL, False),
        "reverse_kl": (_reverse_kl_f, math.inf, 0.0, CODE_REVERSE_KL, False),
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
    from ldpopt._validation import is_real

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

    It is optimised through the monotone f-divergence :math:`f(t)=t^\alpha-1`
    (:math:`\alpha>1`) or :math:`f(t)=1-t^\alpha` (:math:`\alpha<1`); ``value`` and
    :func:`f_divergence` report :math:`D_\alpha` itself.  :math:`\alpha=1` is KL.
    """
    from ldpopt._validation import is_real

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
            return np.asarray(t, dtype=float) ** a - 1.0

        def transform(raw, a=a):
            return math.log1p(raw) / (a - 1.0) if math.isfinite(raw) else math.inf

        return FDivergence(
            f=f,
            name=name,
            f0=-1.0,
            slope_inf=math.inf,
            code=CODE_POWER_UP,
            param=a,
            value_transform=transform,
            symmetric=False,
        )

    def f_down(t, a=a):
        return 1.0 - np.asarray(t, dtype=float) ** a

    def transform_down(raw, a=a):
        # D_a = -log(1 - raw) / (1 - a); raw = 1 means disjoint supports
        return -math.log1p(-raw) / (1.0 - a) if raw < 1.0 else math.inf

    return FDivergence(
        f=f_down,
        name=name,
        f0=1.0,
        slope_inf=0.0,
        code=CODE_POWER_DOWN,
        param=a,
        value_transform=transform_down,
        symmetric=(a == 0.5),
    )


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
        "'egamma:GAMMA', 'renyi:ALPHA' or an FDivergence"
    )


def f_divergence(u, v, divergence: str | FDivergence = "kl") -> float:
    r"""Evaluate :math:`D_f(u\|v)` between two distributions (reported value; Renyi for ``renyi``)."""
    from ldpopt._validation import check_distribution_pair

    div = get_divergence(divergence)
    u, v = check_distribution_pair(u, v, names=("u", "v"))
    return div(u, v)
