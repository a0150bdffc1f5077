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


def within_all(name: str, a, b, bound) -> bool:
    """Elementwise :func:`within` of two arrays (``bound`` broadcast); records the worst element."""
    a, b = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(b, dtype=float))
    bound = np.broadcast_to(np.asarray(bound, dtype=float), a.shape)
    ok = True
    for x, y, bd in zip(a.ravel(), b.ravel(), bound.ravel(), strict=True):
        ok = within(name, x, y, bd) and ok
    return ok


def gamma(n: int) -> float:
    """gamma_n = n u / (1 - n u): a sum of n + 1 terms, any order, is within gamma_n sum|terms|."""
    return n * U / (1.0 - n * U)


# ---------------------------------------------------------------------------------------------
# One f-divergence evaluation: the library's ``FDivergence.raw`` and the textbook loops of
# tests/reference.py, each against the exact divergence of its float inputs
# ---------------------------------------------------------------------------------------------
def fdiv_bound(code: int, param: float, u, v, log_floor: float = -math.inf) -> float:
    """Bound of |computed - exact| of ``FDivergence.raw(u, v)`` (raw scale) for a built-in code.

    ``raw`` evaluates the perspectives at ``(u_i, v_i, d_i = fl(u_i - v_i))`` and adds them with
    ``math.fsum`` (correctly rounded: u |sum|).  Each perspective is within ``score_bound`` of the
    exact formula at those inputs; the rounding of d_i (u |d_i|, 0 when u_i / 2 <= v_i <= 2 u_i by
    Sterbenz) moves it by at most |dg/dd| u |d_i|: TV 1/2, E_gamma 1, chi^2 2|d|/y, Hellinger
    2|d|/s^2, JS 1/2 (its log1p branch; the log branch does not read d); KL, reverse KL and the
    power (Renyi) codes read d only where |d| < y / 2, where the subtraction is exact.
    Returns inf where the divergence is infinite (tests compare infinities by equality).
    """
    x, y = _f(u), _f(v)
    d = x - y
    with np.errstate(all="ignore"):
        terms = np.abs(d)
        if code == TV:
            dd = 0.5 * terms
        elif code == EGAMMA:
            dd = terms
        elif code == CHI2:
            dd = np.where(y > 0, 2.0 * d * d / np.where(y > 0, y, 1.0), 0.0)
        elif code == HELLINGER:
            s = np.sqrt(x) + np.sqrt(y)
            dd = np.where(s > 0, 2.0 * d * d / np.where(s > 0, s * s, 1.0), 0.0)
        elif code == JS:
            dd = 0.5 * terms
        else:
            dd = np.zeros(x.shape)
        b = score_bound(code, param, x, y, d, log_floor) + U * dd
    total = float(np.sum(b))
    return total if math.isfinite(total) else math.inf


def naive_term_bounds(name: str, param: float, u, v) -> tuple[np.ndarray, np.ndarray]:
    """``(|term_i|, bound of |computed term_i - exact term_i|)`` of ``reference.naive_divergence``.

    Counted from its formulas (Python floats: correctly rounded + - * / sqrt, libm log and ``**``
    within R_FN u): a log of a computed quotient r(1 + delta) is log r + delta, so a rounding of
    the argument enters as an absolute error u, the log itself as R_FN u |log r|.
    """
    a, b = _f(u), _f(v)
    with np.errstate(all="ignore"):
        both = (a > 0) & (b > 0)
        aa, bb = np.where(a > 0, a, 1.0), np.where(b > 0, b, 1.0)
        if name in ("kl", "reverse_kl"):
            # w log(w / z): the quotient (absolute u in the log), the log R_FN |L|, the product |w L|
            w = aa if name == "kl" else bb
            L = np.abs(np.log(aa / bb))
            t = np.where(both, w * L, 0.0)
            e = np.where(both, U * w * (1.0 + (R_FN + 1.0) * L), 0.0)
        elif name == "tv":  # |a - b| / 2: the subtraction (the halving is exact)
            t = 0.5 * np.abs(a - b)
            e = U * t
        elif name == "chi2":  # (a - b)^2 / b: the subtraction (twice through the square), ** 2, /
            t = np.where(b > 0, (a - b) ** 2 / bb, 0.0)
            e = 4.0 * U * t
        elif name == "hellinger":
            # (sqrt a - sqrt b)^2: each sqrt u relative, the difference u |D|, the square 2 |D| err + u D^2
            D = np.abs(np.sqrt(a) - np.sqrt(b))
            t = D * D
            e = U * (2.0 * D * (np.sqrt(a) + np.sqrt(b)) + 3.0 * D * D)
        elif name == "js":
            # 0.5 (a log(2a / s) + b log(2b / s)): s and the quotient (2 roundings, absolute 2u in the
            # log), the log R_FN, the product 1, the sum 1 (the halving is exact)
            s = a + b
            la = np.where(a > 0, np.abs(np.log(2.0 * aa / np.where(s > 0, s, 1.0))), 0.0)
            lb = np.where(b > 0, np.abs(np.log(2.0 * bb / np.where(s > 0, s, 1.0))), 0.0)
            A, B = a * la, b * lb
            t = 0.5 * (A + B)
            e = 0.5 * U * (2.0 * (a + b) + (R_FN + 2.0) * (A + B))
        elif name == "egamma":  # max(a - g b, 0): the product, the difference
            t = np.maximum(a - param * b, 0.0)
            e = U * (param * b + np.abs(a - param * b))
        elif name == "renyi_sum":
            # a**p * b**(1 - p): each ** R_FN relative, 1 - p rounded (u |1 - p| |log b| relative
            # in b**(1 - p); exact when 1/2 <= p <= 2), the product 1
            t = np.where(both, aa**param * bb ** (1.0 - param), 0.0)
            e = U * t * (2.0 * R_FN + 1.0 + abs(1.0 - param) * np.abs(np.log(bb)))
        else:
            raise ValueError(name)
    return np.abs(t), e


def naive_bound(name: str, param: float, u, v) -> float:
    """Bound of |computed - exact| of ``reference.naive_divergence``: the terms' bounds plus the
    left-to-right sum (n terms from 0.0: n - 1 roundings, (n - 1) u sum|terms|)."""
    t, e = naive_term_bounds(name, param, u, v)
    n = int(np.count_nonzero(t))
    return float(np.sum(e)) + max(n - 1, 0) * U * float(np.sum(t))


# ---------------------------------------------------------------------------------------------
# External solvers: HiGHS through scipy.optimize.linprog, and the library's LPs
# ---------------------------------------------------------------------------------------------
#: scipy.optimize.linprog(method="highs") defaults: primal and dual feasibility tolerance 1e-7
#: (the reference LPs of tests/reference.py and of the test files pass no options)
HIGHS_TOL = 1e-7
#: the tolerances the library passes to HiGHS: ldpopt.decision.lp.LP_TOL and ldpopt.spr.kov._LP_TOL
#: (repeated here on purpose, like the divergence codes)
LIB_LP_TOL = 1e-10
#: ldpopt.decision.lp.GAP_RTOL: column generation stops when master value - proven dual bound is at
#: most GAP_RTOL * max(scale, |value|), scale = the largest column sum of |B| (<= max |loss|)
GAP_RTOL = 1e-9


def lp_gap(tol: float, primal_l1: float, dual_l1: float = 0.0) -> float:
    r"""Bound of |returned objective - optimum| of an LP solved to feasibility tolerance ``tol``.

    For ``min c.x, A x = b, x >= 0`` HiGHS returns a basis: x_hat (row activities and bounds
    violated by at most tol) and duals y_hat with reduced costs d_hat = c - A^T y_hat >= -tol on
    the nonbasic columns and 0 on the basic ones, so c.x_hat = y_hat.b (first order) and
    * c.x* = y_hat.b + d_hat.x* >= c.x_hat - tol ||x*||_1 (any optimum x*): the returned value is
      at most tol ||x*||_1 above the optimum (``primal_l1`` bounds ||x*||_1, in units where the
      costs are the LP's own);
    * with optimal duals (y*, d* >= 0): c.x_hat = y*.(A x_hat) + d*.x_hat >= v* - tol (||y*||_1 +
      sum over the basis of d*_j): the value is at most that far below (``dual_l1`` bounds it).
    A value recomputed from a re-solved exactly feasible support (the library's polish) has no
    primal violation: dual_l1 = 0.
    """
    return tol * (primal_l1 + dual_l1)


# --- the library's decision LPs (ldpopt.decision.lp, methods), solved at unit loss scale ---------
#: ldpopt.decision.lp.SUPPORT_RTOL: weights below it times the largest are dropped from the support
SUPPORT_RTOL = 1e-12


def kappa(m: int, eps: float) -> float:
    """``column_bound``: sum_y c~_y <= m / (1 + (m - 1) e^-eps) over the polytope (sum its rows)."""
    return m / (1.0 + (m - 1) * math.exp(-eps))


def pair_lp_dual_l1(m: int, eps: float) -> float:
    """||u*||_1 of the pair LP min c.z, S~^T z = 1, z >= 0, with costs |c| <= 1 (unit scale):
    singleton columns give c0 sum(u) + (1 - c0) u_x <= 1, and sum(u) = v*, |v*| <= kappa, so
    u_x <= (1 + c0 kappa) / (1 - c0) and u_x >= -kappa - (m - 1) (1 + c0 kappa) / (1 - c0)."""
    c0 = math.exp(-eps)
    k = kappa(m, eps)
    return k + 2.0 * m * (1.0 + c0 * k) / (1.0 - c0)


def weights_residual(weights, m: int, eps: float) -> float:
    """A posteriori row residual max_x |sum_y c_y S_y(x) - 1| of a result's weights (S_y = e^eps on
    y, 1 elsewhere), plus the rounding of computing it: c_y = c0 w_y in the library (c0 and e^eps:
    R_FN each, the product u), e^eps c_y (u), the sum of n terms (n u): (2 R_FN + n + 2) u."""
    E = math.exp(eps)
    rows = np.zeros(m)
    for y, c in weights.items():
        rows += np.where(np.isin(np.arange(m), list(y)), E * c, c)
    return float(np.max(np.abs(rows - 1.0))) + (2 * R_FN + len(weights) + 2) * U * float(np.max(rows))


def decision_lp_err(
    m: int, eps: float, cmax: float, rho: float, method: str, risk: str = "bayes", terms: int = 0
) -> float:
    """Bound of |optimal_channel(...).value - exact optimum| for the LP methods (original units).

    The library divides the loss (an objective's costs) by 2^e, max |cost| in (1/2, 1], so HiGHS's
    absolute tolerances act on costs <= 1 and the error in original units is 2^e <= 2 ``cmax``
    times the unit-scale one (``cmax`` = largest |loss| of a decision problem, largest |cost| of an
    objective).  At unit scale, with ``lp_gap``:
    * reduced costs within LIB_LP_TOL: at most LIB_LP_TOL ||z*||_1 <= LIB_LP_TOL kappa from the
      optimum (minimax: the epigraph variable adds |t| <= 1);
    * the weights' row residual ``rho`` (a posteriori, :func:`weights_residual`; the value is the
      objective of those weights) times ||u*||_1 (:func:`pair_lp_dual_l1`; minimax: its prior
      duals add sum(lambda) = 1);
    * colgen stops at a gap GAP_RTOL max(scale, |value|) <= GAP_RTOL kappa above its proven bound;
    * direct: the channel LP over W (m x A, rows summing to 1: ||W||_1 = m) whose decomposition
      gives the re-solved columns adds its own LIB_LP_TOL (m + kappa) and a primal residual
      LIB_LP_TOL times ||u*||_1;
    * the value's own rounding: dot products of at most m + ``terms`` terms per output, weights
      summing to <= kappa: (m + terms + 2) u kappa.
    """
    k = kappa(m, eps)
    Y = pair_lp_dual_l1(m, eps) + (1.0 if risk == "minimax" else 0.0)
    err = LIB_LP_TOL * (k + (1.0 if risk == "minimax" else 0.0)) + rho * Y + (m + terms + 2) * U * k
    if method == "colgen":
        err += GAP_RTOL * k
    elif method == "direct":
        err += LIB_LP_TOL * (m + k) + LIB_LP_TOL * Y
    return 2.0 * cmax * err


# --- comparisons of optimal_channel results (used by tests/decision/*) ---------------------------
def lp_err(res, m, eps, cmax, risk="bayes", method=None):
    """|res.value - exact optimum|: decision_lp_err with the result's own a posteriori residual."""
    rho = weights_residual(res.weights, m, eps)
    return decision_lp_err(m, eps, cmax, rho, method or res.method, risk, terms=8)


def channel_err(res, m, eps, cmax, terms):
    """|two evaluations of the risk of the returned channel|: the value reads the weights, the
    Mechanism their rows normalised (relative rho / (1 - rho) <= rho (1 + 2 rho) per entry, risk
    contributions sum_x max_a |B_xa| <= cmax), and each rounds dot products of at most ``terms``
    terms (terms u cmax, the weights summing to 1 per input)."""
    rho = weights_residual(res.weights, m, eps)
    return cmax * (rho * (1 + 2 * rho) + terms * U)


def minimax_risk_err(n, cmax):
    """DecisionProblem.minimax_risk: an LP over delta (n x A, rows summing to 1) and t, HiGHS at its
    default HIGHS_TOL: reduced costs within tol on ||x*||_1 <= n + cmax, and rows violated by tol
    weighed by the duals (the least favourable prior, sum 1, and the n row duals, each <= cmax)."""
    return HIGHS_TOL * (n + cmax + 1 + n * cmax)


def pricing_err(d, c0):
    """Rounding of an independent pricing c0 sum(d) + (1 - c0) cumsum(d) against the library's exact
    pricing of the same duals (ldpopt.decision.lp.price: the same sums in another order): each within
    (m + 3) u (c0 + 1) sum|d| of the exact reduced cost."""
    return 2.0 * (len(d) + 3) * U * (1.0 + c0) * float(np.sum(np.abs(d)))


def dual_value_err(res, m, eps, cmax):
    """|sum(u) - value| of a certificate: sum(u) is the LP's dual objective, within LIB_LP_TOL
    ||u*||_1 (and its rounding, m u ||u*||_1) of the optimum at unit scale, 2 cmax in original
    units; the value is within lp_err."""
    return lp_err(res, m, eps, cmax) + 2 * cmax * (LIB_LP_TOL + m * U) * (pair_lp_dual_l1(m, eps) + 1)


def cert_err(res, m, eps, cmax, risk="bayes"):
    """|certificate.bound - value|: the bound sum(u) + kappa min(0, rc_min) is a proven lower bound;
    sum(u) is the LP's dual objective, within LIB_LP_TOL ||u*||_1 (and m u ||u*||_1 of rounding) of
    the optimum at unit scale (2 cmax in original units); the value is within lp_err above it."""
    k, Y = kappa(m, eps), pair_lp_dual_l1(m, eps) + 1
    gap = 2 * cmax * (LIB_LP_TOL + m * U) * Y + k * abs(min(0.0, res.certificate.min_reduced_cost))
    return lp_err(res, m, eps, cmax, risk) + gap


def minimax_dual_lp_err(m, eps, cmax):
    """|reference.minimax_dual_lp - exact minimax risk|: HiGHS at HIGHS_TOL over (u, lambda) with rows
    u . S_y <= sum lambda l py (unscaled S_y = S~_y / c0): ||lambda||_1 = 1, ||u*||_1 <= c0 cmax
    pair_lp_dual_l1 (the pair LP's duals in these units); its dual, the channel weights c = c0 z,
    has ||c||_1 <= c0 kappa, and the basis' reduced costs are at most cmax."""
    c0 = math.exp(-eps)
    return HIGHS_TOL * (1 + c0 * cmax * pair_lp_dual_l1(m, eps) + c0 * kappa(m, eps) + cmax)


def channel_lp_ref_err(m, A, eps, cmax):
    """|min over all eps-LDP channels Q (m x A) of sum r_xa Q_xa by HiGHS at HIGHS_TOL - exact|
    (tests/decision/test_decision_crosscheck.py's bayes_lp_all_channels; sum_x max_a r_xa <= cmax).

    Reduced costs within tol: at most tol ||Q*||_1 = tol m below.  Rows violated by tau = tol (and
    the rounding of E = e^eps in them, R_FN u E): mixing with the uniform channel (slack (E - 1) / A
    in the LDP rows, 1 / A in the bounds), theta = tau A max(1, 1 / (E - 1)), and renormalising the
    rows (tau): at most (2 theta + 2 tau) cmax above."""
    E = math.exp(eps)
    tau = HIGHS_TOL + R_FN * U * E
    theta = tau * A * max(1.0, 1.0 / (E - 1.0))
    return HIGHS_TOL * m + (2 * theta + 2 * tau) * cmax


#: relative error of math.tanh / numpy's tanh in units of u: numpy validates its float64 tanh loops to
#: 2 ulp (umath-validation-set-tanh.csv) and glibc documents 2 ulp on x86-64; plus the 1/2 ulp of the
#: rounding the model counts from (as R_FN): 2.5 ulp <= 5u.  sin, cos: numpy's validation set and glibc
#: give 1 ulp, R_FN.
R_TANH = 5.0


def mi_err(Q, prior, entry_rel: float = 0.0) -> float:
    """Bound of |sum_xy prior_x Q_xy log(Q_xy / out_y) computed in float - exact| (the textbook
    mutual information in nats, numpy), for a channel whose entries are within ``entry_rel`` relative
    of the exact one: out = prior @ Q (m terms: m u relative, an absolute m u in the log), Q / out and
    the log (u + R_FN u |L|), two products (2u), the sum of m n terms ((m n) u sum|t|); the entries'
    own error moves each term by entry_rel t (|L| + 2) (Q and out each move by entry_rel)."""
    Q = np.asarray(Q, dtype=float)
    p = np.asarray(prior, dtype=float)
    m, n = Q.shape
    out = p @ Q
    with np.errstate(divide="ignore", invalid="ignore"):
        L = np.where(Q > 0, np.abs(np.log(Q / out[None, :])), 0.0)
    w = p[:, None] * Q
    t = w * L
    per = U * w * ((m + 1) + (R_FN + 2) * L) + entry_rel * w * (L + 2.0)
    return float(per.sum()) + m * n * U * float(t.sum())


# --- closed forms of the decision examples (ldpopt.decision.problems) ----------------------------
def circular_err(m, gamma, eps):
    """|the circular closed form min_k 1 - X_k (either form) - exact|: X_k = gamma (E - 1) sin(pi k / m)
    / (2 (k E + m - k) sin(pi / m)) moves through E (R_FN E / (E - 1); the library's c0 form:
    R_FN c0 / (1 - c0) + R_FN), E - 1 (1), the sines (np.pi * k / m: 2.5u relative in the argument,
    amplified by |x cot x| <= m, then R_FN; sin(pi / m): 1.5u + R_FN) and 6 more roundings; 1 - X (u);
    the min is 1-Lipschitz; |X| <= gamma."""
    E = math.exp(eps)
    rel = R_FN * E / (E - 1) + R_FN * (1 / (E - 1) + 1) + 1 + 2.5 * m + 2 * R_FN + 1.5 + 8
    return U * (rel * abs(gamma) + 1.0)


def mary_err(m, gamma, eps):
    """|MaryTesting.closed_form (min_k 1 - (1 - g) / m - max(g, g c0) / (k + (m - k) c0)) - exact|:
    c0 (R_FN; the term's sensitivity to it <= 1), the denominator (2), the quotient (1); (1 - g) / m
    (2, |.| <= 1 / m ... <= 1); the two subtractions (u |.| <= u each, values <= 1); min 1-Lipschitz.
    The paper's e^eps form rounds no more: (R_FN + 4) u |g| + 2u + 2u."""
    return U * ((R_FN + 4) * abs(gamma) + 2.0 + 2.0)


def support_vertex_err(res, m: int, eps: float, sens: float) -> float:
    """|objective of a vertex method's polished channel - at its exact vertex| (original units), from the
    returned support: the polish solves S_B^T c = 1 (least squares, backward stable like Gaussian
    elimination with partial pivoting: eta = 2^(n-1) gamma_n relative on S_B), so
    ||dc||_2 <= ||pinv(S_B^T)||_2 eta ||S_B||_F ||c||_2; the channel moves by ||dc||_1 m e^eps, the
    objective by at most that times ``sens`` (max |d objective / d Q_xy|).  Applied twice by the
    callers: the pick among cdd's raw vertices and the polish (the returned support taken as the
    optimal one's)."""
    E = math.exp(eps)
    subsets = list(res.weights)
    S = np.array([[E if x in y else 1.0 for x in range(m)] for y in subsets])
    c = np.array([res.weights[y] for y in subsets])
    n = len(subsets)
    eta = 2 ** (max(n, m) - 1) * gamma(max(n, m))
    dc = float(np.linalg.norm(np.linalg.pinv(S.T), 2) * eta * np.linalg.norm(S) * np.linalg.norm(c))
    return math.sqrt(n) * dc * m * E * sens


def ss_mi_err(m: int, eps: float, k: int) -> float:
    """|subset_selection_mutual_information (log(m / D) - eps (m - k) c0 / D, D = k + (m - k) c0) -
    exact|: c0 (R_FN, sensitivities <= 1), D (2), m / D (1), the log (absolute (R_FN + 3) u + R_FN u
    |log|), the second term (2 R_FN + 5 relative), the difference (u |I|)."""
    c0 = math.exp(-eps)
    D = k + (m - k) * c0
    t1, t2 = math.log(m / D), eps * (m - k) * c0 / D
    return U * ((R_FN + 3) + R_FN * abs(t1) + (2 * R_FN + 5) * abs(t2) + abs(t1 - t2))


def entropy_diff_err(Q, prior):
    """reference.mutual_information_naive's rounding: H(Y) - H(Y|X) from Python loops: each v log v
    (log R_FN |log v|, the product u), the output masses p @ Q (m u relative: an absolute m u in the
    log), the sums (n and m n terms) and the difference (u |I|, |I| <= H(Y))."""
    Q = np.asarray(Q, float)
    p = np.asarray(prior, float)
    m, n = Q.shape
    py = p @ Q
    hy = float(np.sum(py * (U * (m + 1) + (R_FN + 1) * U * np.abs(np.log(py)))))
    w = p[:, None] * Q
    hyx = float(np.sum(w * (R_FN + 2) * U * np.abs(np.log(Q))))
    sums = n * U * float(np.sum(np.abs(py * np.log(py)))) + m * n * U * float(np.sum(np.abs(w * np.log(Q))))
    return hy + hyx + sums + U * float(np.sum(np.abs(py * np.log(py))))
