r"""Rounding-error bounds for the tests that compare two floating-point evaluations.

Nothing here imports the library: the bounds are written from the perspective formulas of
``docs`` / the SPR paper, with the standard model of floating-point arithmetic.

Model (u = 2**-53, the unit roundoff of float64)
------------------------------------------------
* ``+ - * /`` and ``sqrt`` are correctly rounded (IEEE 754): ``fl(a op b) = (a op b)(1 + e)``,
  ``|e| <= u``, plus an absolute error below ``ETA`` when the result is subnormal.
* ``log``, ``log1p``, ``expm1`` (numpy's SIMD loops - AVX-512 ``X86_V4``, AVX2 ``X86_V3`` -,
  numpy's scalar loops, glibc's libm that Python's ``math`` and numba call) are within 1 ulp of
  the correctly rounded result: numpy validates every float64 loop against
  ``numpy/_core/tests/data/umath-validation-set-{log,log1p,expm1}.csv`` with ``ulperrortol``
  1, and glibc documents at most 1 ulp for them on x86-64.  Hence a relative error of at most
  1.5 ulp <= 3u: ``R_FN = 3``.
* Two implementations that perform the *same* sequence of correctly rounded operations give the
  same bits, whatever the code (numpy, numba, Python): the perspectives of TV, E_gamma, chi^2
  and squared Hellinger use nothing else (no transcendental function), so two evaluations of
  them must be equal (``EXACT_CODES``).  The differences this module bounds come only from the
  last-ulp differences of log / log1p / expm1 between numpy's loops and libm.

A perspective evaluated by one implementation is within ``score_bound(...)`` (first-order in u,
every coefficient rounded up, which absorbs the O(u^2) terms) of the exact value of the same
formula at the same float inputs ``(x, y, d)``; two implementations are therefore within
``2 * score_bound``.  Inputs ``x = c + A dP``, ``y = c + A dQ``, ``d = A (dP - dQ)`` are computed
by the same correctly rounded operations in every implementation, so they are identical and no
input error enters (the tests check the block sums bit for bit).
"""

from __future__ import annotations

import math

import numpy as np

#: unit roundoff of float64
U = 2.0**-53
#: absolute error of one rounding whose result is subnormal (half of it, rounded up)
ETA = 2.0**-1074
#: relative error of log / log1p / expm1, in units of u: 1 ulp from the correctly rounded value
#: (numpy's validated ``ulperrortol``, glibc's documented maximum) plus the 1/2 ulp of that rounding
R_FN = 3.0
#: condition number of log1p on t > -1/2 (where every log1p branch is taken): t / ((1 + t) log1p(t))
#: is at most 1 / (2 log 2) = 1.443 (at t = -1/2), rounded up
KAPPA_LOG1P = 1.5
#: absolute slack per score for roundings that underflow (each contributes at most ETA, times
#: factors below 4 for the inputs of these tests; 64 ETA is still ~3e-322)
UNDERFLOW_SLACK = 64 * ETA

# divergence codes (docs: ldpopt.divergences.CODE_*); repeated here on purpose
KL, REVERSE_KL, TV, CHI2, HELLINGER, JS, EGAMMA, POWER_UP, POWER_DOWN = range(9)
#: codes whose perspective is a fixed sequence of correctly rounded operations: equal bits
EXACT_CODES = frozenset({TV, CHI2, HELLINGER, EGAMMA})

# Coefficients (units of u), counted from the operations of each formula (the built-in
# generators are centred, f'(1) = 0: ldpopt.divergences); thresholds repeated from there.
#: |u| = |d / y| below this: the KL / reverse-KL terms are Taylor series in u ...
SERIES_U_MAX = 0.1
#: ... and E(z) = e^z - 1 - z a Taylor series in z below this
SERIES_E_MAX = 0.5
#: log(x / y) is log1p(d / y) for -LOG1P_MAX < d / y < R_MAX, else log of the ratio when it is
#: in (R_MIN, R_MAX), else log x - log y
LOG1P_MAX = 0.5
R_MIN, R_MAX = 1e-300, 1e300
#: JS: the atanh form below this |w| = |d / (x + y)|
JS_NEAR_MAX = 0.5
#: series y u^2 H(u) (KL: 16 coefficients 1/(n(n-1)), reverse KL 1/n, |u| < 0.1): Horner's 15
#: multiply-adds are within 30u of sum |c_j| |u|^j <= 1.14 |H(u)| (so 34.2), the float
#: coefficients u (1.14), the truncation < 0.11 u, u = d / y rounded (2u through u^2, and
#: |u H'(u) / H(u)| < 0.1), then u * u, * H, y * (3): 34.2 + 1.14 + 0.11 + 2.1 + 3, rounded up
C_U_SERIES = 41.0
#: x E(z), |z| < 0.5, E's 14 coefficients 1/n! (Horner within 28u of sum |c_j||z|^j <= 1.4 |E|/z^2,
#: coefficients 1.4u, truncation < 0.06u), then z * z, * H, x * (3): 39.2 + 1.4 + 0.06 + 3, up
C_E_SERIES = 44.0
#: relative sensitivity of E(z) = e^z - 1 - z to its argument, |z E'(z) / E(z)| for |z| < 0.5
KAPPA_E = 2.2
#: JS near x = y: A = 2 w atanh(w) and B = log1p(-w^2), w = d / s with s = x + y (2 roundings);
#: A: atanh's condition (<= 1.21 for |w| < 1/2) and both w factors (2 * 2.21 * 2u... counted as
#: 4.42 + R_FN + 1); B: w * w (5u), log1p's condition at -1/4 (1.16), R_FN: 5.8 + R_FN; the
#: sum A + B, 0.25 s * (2 roundings) relative to the result
C_JS_A = 4.42 + R_FN + 1.0
C_JS_B = 5.8 + R_FN
C_JS_OUT = 3.0
#: JS away from x = y: z = 2x / s carries 2 roundings, i.e. an absolute error 2u in log z ...
C_JS_FAR_MASS = 2.0
#: ... log itself R_FN, the product 1 and the final sum 1, relative to |x log z|
C_JS_FAR_TERM = R_FN + 1 + 1


def _f(a):
    return np.asarray(a, dtype=float)


def _log_ratio_err(x, y, d):
    """(l, absolute error of the computed l) for l = log(x / y) as ``divergences._log_ratio``
    writes it (x, y > 0): log1p(d / y) (the quotient's rounding times log1p's condition, <= 1.5
    on the branch, and log1p's own), log of the rounded ratio (u absolute, R_FN relative), or
    log x - log y (R_FN u of each log, and the difference)."""
    u = d / y
    r = x / y
    near = (u > -LOG1P_MAX) & (u < R_MAX)
    ratio = ~near & (r > R_MIN) & (r < R_MAX)
    lx, ly = np.log(x), np.log(y)
    l = np.where(
        near, np.log1p(np.where(near, u, 0.0)), np.where(ratio, np.log(np.where(ratio, r, 1.0)), lx - ly)
    )
    err = np.where(
        near,
        U * (KAPPA_LOG1P + R_FN) * np.abs(l),
        np.where(ratio, U * (1.0 + R_FN * np.abs(l)), U * (R_FN * (np.abs(lx) + np.abs(ly)) + np.abs(l))),
    )
    return l, err


def _kl_term_err(x, y, d, l, err_l, reverse=False):
    """(value, absolute error) of the KL term x l - d (``reverse``: d - y l) given l with error
    err_l: the series y u^2 H(u) for |u| < 0.1 (C_U_SERIES relative), else the product and the
    difference (w err_l + u |w l| + u |value|, w = x or y)."""
    u = d / y
    w = y if reverse else x
    direct = d - y * l if reverse else x * l - d
    series = np.abs(u) < SERIES_U_MAX
    err_direct = w * err_l + U * (np.abs(w * l) + np.abs(direct))
    # a magnitude of the term (its rounding is second order): the series' upper bound
    # y u^2 (1/2 + 0.4 |u|) where the direct form cancels, else the direct form
    val = np.where(series, y * u * u * (0.5 + 0.4 * np.abs(u)), np.abs(direct))
    return val, np.where(series, U * C_U_SERIES * val, err_direct)


def _xe_err(x, b, l, err_l):
    """(value, absolute error) of x E(b l) (``divergences._xe``): z = b l (1 rounding plus
    |b| err_l); the series for |z| < 1/2 (C_E_SERIES relative, KAPPA_E times z's relative error),
    else h - x (1 + z), h = x e^z (or e^(log x + z) past exp's overflow)."""
    z = b * l
    err_z = U * np.abs(z) + abs(b) * err_l
    with np.errstate(all="ignore"):
        # |E(z)| <= z^2 e^|z| / 2 where expm1(z) - z cancels (the series), else directly
        series_z = np.abs(z) < SERIES_E_MAX
        val = np.where(series_z, x * z * z * 0.5 * np.exp(np.abs(z)), np.abs(x * (np.expm1(z) - z)))
        rel_z = np.where(z != 0, err_z / np.where(z != 0, np.abs(z), 1.0), 0.0)
        series = val * (U * C_E_SERIES + KAPPA_E * rel_z)
        h = x * np.exp(z)
        big = ~(z < 709.782712893384)
        lx = np.abs(np.log(x))
        err_h = np.where(
            big,
            h * (U * R_FN + U * (R_FN * lx + np.abs(np.log(x) + z)) + err_z),
            h * (U * (R_FN + 1.0) + err_z),
        )
        direct = err_h + U * 2.0 * np.abs(x * (1.0 + z)) + x * err_z + U * val
    return val, np.where(series_z, series, direct)


def _kl_codes_bound(code, x, y, d, log_floor):
    """score_bound of KL (code 0) and reverse KL (1), both masses positive or one zero."""
    both = (x > 0) & (y > 0)
    xs, ys = np.where(x > 0, x, 1.0), np.where(y > 0, y, 1.0)
    ds = np.where(both, d, 0.0)
    l, err_l = _log_ratio_err(xs, ys, ds)
    _, err = _kl_term_err(xs, ys, ds, l, err_l, reverse=code == REVERSE_KL)
    # one mass 0: w (log w - log_floor - 1), w the other mass (0 when clipped; exact w otherwise)
    one = (x > 0) & (y == 0) if code == KL else (x == 0) & (y > 0)
    w = xs if code == KL else ys
    lw = np.log(w)
    lf = log_floor if math.isfinite(log_floor) else 0.0
    edge = U * w * (R_FN * np.abs(lw) + np.abs(lw - lf) + 2.0 * np.abs(lw - lf - 1.0))
    edge = np.where(math.isfinite(log_floor), edge, 0.0)  # +-inf otherwise
    return np.where(both, err, np.where(one, edge, 0.0))


def _power_bound(code, a, x, y, d, log_floor):
    """score_bound of the centred power terms (a > 1: code 7; 0 < a < 1: code 8)."""
    both = (x > 0) & (y > 0)
    xs, ys = np.where(x > 0, x, 1.0), np.where(y > 0, y, 1.0)
    ds = np.where(both, d, 0.0)
    l, err_l = _log_ratio_err(xs, ys, ds)
    b = a - 1.0 if code == POWER_UP else 1.0 - a  # its rounding: u relative on every b-term
    kl, err_kl = _kl_term_err(xs, ys, ds, l, err_l)
    if code == POWER_UP:  # x E(b l) + b * KL term: two nonnegative terms
        xe, err_xe = _xe_err(xs, b, l, err_l)
        g = xe + b * kl
        err = err_xe + U * xe + b * (err_kl + 2.0 * U * kl) + U * g
    else:  # l <= 1: b * KL term - x E(-b l); l > 1: x (b expm1(-l) - expm1(-b l))
        xe, err_xe = _xe_err(xs, -b, l, err_l)
        near = b * (err_kl + 2.0 * U * kl) + err_xe + U * xe + U * np.abs(b * kl - xe)
        with np.errstate(all="ignore"):
            e1, e2 = np.expm1(-l), np.expm1(-b * l)
            err1 = np.exp(-l) * err_l + U * R_FN * np.abs(e1)
            err2 = np.exp(-b * l) * (U * np.abs(b * l) + b * err_l) + U * R_FN * np.abs(e2)
            inner = b * e1 - e2
            far = xs * (b * err1 + 2.0 * U * np.abs(b * e1) + err2 + 2.0 * U * np.abs(inner))
        err = np.where(l <= 1.0, near, far)
    # one mass 0 (a > 1, y = 0: e^(a log x - b log_floor) - a x; the others one or two products)
    with np.errstate(all="ignore"):
        lf = log_floor if math.isfinite(log_floor) else 0.0
        lx = np.log(xs)
        arg = a * lx - b * lf
        h = np.exp(arg)
        err_arg = U * (a * R_FN * np.abs(lx) + np.abs(a * lx) + np.abs(b * lf) + np.abs(arg))
        up_y0 = h * (err_arg + U * R_FN) + U * a * xs + U * np.abs(h - a * xs)
    x_only = (x > 0) & (y == 0)
    y_only = (x == 0) & (y > 0)
    if code == POWER_UP:
        edge = np.where(x_only, np.where(math.isfinite(log_floor), up_y0, 0.0), 2.0 * U * b * ys)
    else:
        edge = np.where(x_only, U * a * xs, 2.0 * U * b * ys)
    out = np.where(both, err, np.where(x_only | y_only, edge, 0.0))
    return np.where(np.isfinite(out), out, 0.0)


def _js_bound(x, y, d):
    """score_bound of JS: the atanh form near x = y, plain logs away from it."""
    s = x + y
    ss = np.where(s > 0, s, 1.0)
    w = d / ss
    near = np.abs(w) < JS_NEAR_MAX
    wn = np.where(near, w, 0.0)
    A = np.abs(2.0 * wn * np.arctanh(wn))
    B = np.abs(np.log1p(-wn * wn))
    res = 0.25 * ss * np.abs(2.0 * wn * np.arctanh(wn) + np.log1p(-wn * wn))
    err_near = U * (0.25 * ss * (C_JS_A * A + C_JS_B * B) + C_JS_OUT * res)
    xs, ys = np.where(x > 0, x, 1.0), np.where(y > 0, y, 1.0)
    a = np.where(x > 0, np.abs(xs * np.log(2.0 * xs / ss)), 0.0)
    bb = np.where(y > 0, np.abs(ys * np.log(2.0 * ys / ss)), 0.0)
    mass = np.where(x > 0, x, 0.0) + np.where(y > 0, y, 0.0)
    far = U * (C_JS_FAR_MASS * mass + C_JS_FAR_TERM * (a + bb))
    out = np.where(near, err_near, far) + UNDERFLOW_SLACK
    return np.where(s > 0, out, 0.0)


def score_bound(code: int, param: float, x, y, d, log_floor: float = -math.inf) -> np.ndarray:
    """Bound of |computed - exact| of the perspective g(x, y; d) of ``code`` for ONE implementation.

    Vectorised over ``x, y, d``.  Zero for exact branches (boundary constants) and where the
    value is infinite (tests compare infinities by equality).
    """
    x, y, d = np.broadcast_arrays(_f(x), _f(y), _f(d))
    out = np.zeros(x.shape)
    with np.errstate(all="ignore"):
        if code == TV:  # 0.5 |d|: exact but for underflow
            out = np.full(x.shape, ETA)
        elif code == EGAMMA:  # d - g1 y (g1 = param - 1 computed once): the product, the difference
            g1 = param - 1.0
            out = U * (np.abs(g1 * y) + np.abs(d - g1 * y)) + 2 * ETA
        elif code == CHI2:  # d * d / y: two roundings
            out = np.where(y > 0, 2.0 * U * d * d / np.where(y > 0, y, 1.0) + UNDERFLOW_SLACK, 0.0)
        elif code == HELLINGER:
            # s = sqrt x + sqrt y: 2u relative (a sqrt, the sum); s * s: 2 * 2 + 1; d * d: 1; the
            # quotient: 1; in all 7u relative
            s = np.sqrt(x) + np.sqrt(y)
            out = np.where(s > 0, 7.0 * U * d * d / np.where(s > 0, s * s, 1.0) + UNDERFLOW_SLACK, 0.0)
        elif code == JS:
            out = _js_bound(x, y, d)
        elif code in (KL, REVERSE_KL):
            out = _kl_codes_bound(code, x, y, d, log_floor)
            out = np.where(np.isfinite(out), out, 0.0)
            out = np.where(out > 0, out + UNDERFLOW_SLACK, out)
        elif code in (POWER_UP, POWER_DOWN):
            out = _power_bound(code, param, x, y, d, log_floor)
            out = np.where(out > 0, out + UNDERFLOW_SLACK, out)
        else:
            raise ValueError(f"unknown divergence code {code!r}")
    return out


def mirror_bound(code: int, param: float, x, y, d, log_floor: float = -math.inf) -> np.ndarray:
    """Bound of |a - b| for two implementations of the same perspective at the same inputs
    (each within ``score_bound`` of the exact value; 0 for ``EXACT_CODES``: the same bits)."""
    b = score_bound(code, param, x, y, d, log_floor)
    return np.zeros(b.shape) if code in EXACT_CODES else 2.0 * b


def mirror_excess(a: float, b: float, bound: float) -> float:
    """|a - b| in units of ``bound`` (0 when equal, inf when unequal with a zero bound).

    Infinite or NaN values must be equal (the same exceptional branch is taken by both).
    """
    if a == b or (math.isnan(a) and math.isnan(b)):
        return 0.0
    if not (math.isfinite(a) and math.isfinite(b)):
        return math.inf
    diff = abs(a - b)
    return diff / bound if bound > 0 else math.inf


def sum_bound(bounds, terms) -> float:
    """Bound of |S1 - S2| for two left-to-right float sums of n terms that differ by <= bounds[i].

    Each sum is within (n - 1) u sum|terms| of its exact sum (recursive summation, first order).
    """
    n = len(terms)
    return float(np.sum(bounds)) + 2.0 * max(n - 1, 0) * U * float(np.sum(np.abs(terms)))


def ratio_bound(bounds, terms, den: float, value: float) -> float:
    """Bound of |R1 - R2| for R = fl(S / den) with the same den: the sums' bound / den + 2 roundings."""
    return sum_bound(bounds, terms) / den + 2.0 * U * abs(value)


# ---------------------------------------------------------------------------------------------
# Measurement: the worst observed error of each bounded assertion
# ---------------------------------------------------------------------------------------------
#: name -> {"units": worst |a - b| / bound, "rel": worst |a - b| / max(|a|, |b|), "n": checks};
#: conftest.py writes it to the JSON file named by $LDPOPT_ERR_REPORT at the end of a session
WORST: dict = {}


def within(name: str, a: float, b: float, bound: float) -> bool:
    """``|a - b| <= bound`` (infinities and NaNs equal); records the error under ``name``."""
    a, b = float(a), float(b)
    units = mirror_excess(a, b, bound)
    rel = 0.0
    if units and math.isfinite(units):
        rel = abs(a - b) / max(abs(a), abs(b))
    w = WORST.setdefault(name, {"units": 0.0, "rel": 0.0, "n": 0})
    w["units"] = max(w["units"], units)
    w["rel"] = max(w["rel"], rel)
    w["n"] += 1
    return units <= 1.0
