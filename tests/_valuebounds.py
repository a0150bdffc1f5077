r"""Error bounds of SPR partition values and optima, from the per-score bounds of ``_errmodel``.

Value of a partition P = (B_1, ..., B_n) of the reduced alphabet (SPR eq. 30, rescaled):
``R(P) = (mu'(B_1) + ... + mu'(B_n)) / (1 + (n - 1) c)``, the scores summed left to right, the
denominator computed by the same operations in every implementation.

* ``pair_bound(P)``: two implementations whose scores differ (the compiled kernels call libm,
  the readable program numpy's SIMD loops) give values within ``sum_t 2 b_t`` (b_t the score
  bound of ``_errmodel.score_bound``) plus the rounding of two sums of n terms and two divisions
  (:func:`_errmodel.ratio_bound`).  It is 0 when every score is bit-identical (then so are the
  sums).
* ``dinkelbach_slack``: Dinkelbach's iteration in floating point stops at a partition whose
  value lambda is optimal only up to the rounding of its penalised passes.  With the exact
  values mu_t of the float scores, a pass at penalty pen = fl(lambda c) returns the exact
  maximiser of its float path sums, each within n u W(P) of the exact penalised sum,
  W(P) = sum_t (|mu_t| + pen); the stopping ratio is within n u W(P) / den + u |lambda|.
  Chaining the three (see tests/test_kernels.py, ``assert_same_optimum``), every partition P*
  satisfies ``R(P*) - lambda <= 4 (k + 1) u (W_max + |lambda|)`` with ``W_max`` the largest
  W(P) over all partitions (a max-plus program over |scores| + pen) and den >= 1.
  The budget program (and a single block) maximise their own float sums exactly: slack 0.
* ``transform_bound``: a raw-scale bound mapped through the monotone value transform (the
  identity except Renyi: log1p(r)/(a-1), -log1p(-r)/(1-a)), plus the transform's own rounding.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from _errmodel import EXACT_CODES, R_FN, U, ratio_bound, score_bound
from ldpopt._numerics import rescale
from ldpopt.divergences import get_divergence
from ldpopt.spr import _fast
from ldpopt.spr.reduction import _Prefix, _reduce
from ldpopt.spr.reference import _dp_readable, interval_scores


def _rescale(eps: float) -> tuple[float, float]:
    """(c, A) of ``ldpopt._numerics.rescale``."""
    r = rescale(eps)
    return r.c, r.A


def _log_floor(eps: float, c: float) -> float:
    """-eps when e^-eps underflowed at a finite eps, else -inf (the library's ``log_floor``)."""
    return -eps if (c == 0.0 and math.isfinite(eps)) else -math.inf


def block_inputs(p, q, eps, cuts):
    """``(x, y, d, lf)`` of the blocks ``cuts`` as every implementation computes them."""
    pre = _Prefix(np.asarray(p, float), np.asarray(q, float))
    c, A, lf = rescale(eps)
    xs, ys, ds = [], [], []
    for a, b in cuts:
        dp, dq, dd = pre.sums(np.array([a]), b)
        xs.append(float(c + A * dp[0]))
        ys.append(float(c + A * dq[0]))
        ds.append(float(A * dd[0]))
    return np.array(xs), np.array(ys), np.array(ds), lf


def partition_scores(p, q, eps, div, cuts):
    """The readable program's score of each block of ``cuts`` (numpy)."""
    return np.array([float(interval_scores(p, q, eps, div, np.array([a]), b)[0]) for a, b in cuts])


def pair_bound(p, q, eps, divergence, cuts) -> float:
    """Bound of |R_1(P) - R_2(P)| for two implementations of the scores (raw scale)."""
    div = get_divergence(divergence)
    if div.code in EXACT_CODES:
        return 0.0
    x, y, d, lf = block_inputs(p, q, eps, cuts)
    b = score_bound(div.code, div.param, x, y, d, lf)
    if not np.any(b > 0):
        return 0.0
    s = partition_scores(p, q, eps, div, cuts)
    c = rescale(eps).c
    den = 1.0 + (len(cuts) - 1) * c
    return ratio_bound(2.0 * b, s, den, float(np.sum(s)) / den)


def dinkelbach_slack(p, q, eps, divergence, lam: float) -> float:
    """Float suboptimality of Dinkelbach's stopping partition (module docstring), raw scale."""
    div = get_divergence(divergence)
    c, A, lf = rescale(eps)
    k = len(p)
    S = _fast.score_table(np.asarray(p, float), np.asarray(q, float), c, A, lf, div.code, div.param)
    if not np.all(np.isfinite(S)):
        return math.inf
    pen = abs(lam) * c * (1.0 + U)
    W = np.zeros(k + 1)
    for i in range(1, k + 1):
        W[i] = np.max(W[:i] + np.abs(S[i * (i - 1) // 2 : i * (i + 1) // 2])) + pen
    return 4.0 * (k + 1) * U * (W[k] + abs(lam))


def transform_bound(divergence, raw: float, err: float) -> float:
    """Bound of |T(r') - T(raw)| over |r' - raw| <= err, both values of T computed in float."""
    div = get_divergence(divergence)
    if err == 0.0:
        return 0.0  # the same raw value: the same transform, the same bits
    if div.value_transform is None:
        return err
    lo, mid, hi = div.transform(raw - err), div.transform(raw), div.transform(raw + err)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return math.inf
    # T is monotone: the larger one-sided range, plus T's rounding (log1p R_FN, the division 1)
    # in the two values compared and in the three evaluated here
    return max(hi - mid, mid - lo) + 5.0 * (R_FN + 1.0) * U * max(abs(lo), abs(hi))


def eval_bound(p, q, eps, divergence, cuts) -> float:
    """Bound of |R_computed(P) - R_exact(P)| for ONE implementation (raw scale): its scores within
    b_t of the exact perspectives of the float inputs, one left-to-right sum, one division."""
    div = get_divergence(divergence)
    x, y, d, lf = block_inputs(p, q, eps, cuts)
    b = score_bound(div.code, div.param, x, y, d, lf)
    s = partition_scores(p, q, eps, div, cuts)
    c = rescale(eps).c
    den = 1.0 + (len(cuts) - 1) * c
    n = len(cuts)
    return (float(np.sum(b)) + max(n - 1, 0) * U * float(np.sum(np.abs(s)))) / den + U * abs(
        float(np.sum(s)) / den
    )


#: relative error of an entry of reference.rr_on_blocks, units of u: E = exp(eps) (R_FN),
#: E + s - 1 (1, so 4 in all), hi = E / (E + s - 1) (R_FN + 4 + 1 = 8), lo = 1 / (E + s - 1) (5)
C_RR_ENTRY = R_FN + 5.0


def _grad_terms(name: str, x, y):
    """x |dg/dx| and y |dg/dy| of the perspective g of ``name`` (for relative input errors)."""
    with np.errstate(all="ignore"):
        if name == "kl":
            return x * np.abs(np.log(x / y) + 1.0), x
        if name == "js":
            s = x + y
            return 0.5 * x * np.abs(np.log(2 * x / s)), 0.5 * y * np.abs(np.log(2 * y / s))
        if name == "tv":
            return 0.5 * x, 0.5 * y
        if name == "hellinger":
            r = np.abs(np.sqrt(x) - np.sqrt(y))
            return np.sqrt(x) * r, np.sqrt(y) * r
    raise ValueError(name)


def brute_force_bound(p, q, eps: float, divergence, blocks) -> float:
    """|computed - exact| of ``reference.brute_force_optimum``'s value of one set partition.

    Each output mass u_j = sum_i M_ij p_i (M = reference.rr_on_blocks) is a dot product of
    k nonnegative terms with entries within C_RR_ENTRY u: relative error delta = (k + C_RR_ENTRY) u
    (any summation order, FMA or not).  That moves the divergence by at most
    delta sum_j (u_j |dg/dx| + v_j |dg/dy|); ``FDivergence.perspective`` computes d = u - v
    (an absolute error u |u_j - v_j| in x) and the perspective itself (``score_bound``); ``fsum``
    rounds once (u |D|).  Where the first derivatives vanish (u_j = v_j: one block of two
    distributions whose float sums differ by an ulp) the second-order remainder remains: for
    relative perturbations delta of u_j and v_j it is at most 2 delta^2 (u_j + v_j) for KL, JS
    and squared Hellinger (TV is piecewise linear).
    """
    from reference import rr_on_blocks  # local: reference imports nothing from here

    div = get_divergence(divergence)
    k = len(p)
    m = rr_on_blocks(blocks, k, eps)
    x, y = m.T @ np.asarray(p, float), m.T @ np.asarray(q, float)
    delta = (k + C_RR_ENTRY) * U
    gx, gy = _grad_terms(div.name, x, y)
    dgx = gx / np.where(x > 0, x, 1.0)
    total = delta * float(np.sum(gx + gy)) + U * float(np.sum(dgx * np.abs(x - y)))
    total += float(np.sum(score_bound(div.code, div.param, x, y, x - y)))
    total += 2.0 * delta * delta * float(np.sum(x + y))
    return total + U * abs(div(x, y))


def brute_force_agreement(p, q, eps, divergence, l, value, partition, bf_value, bf_partition, slack=0.0):
    """Bound of |value - bf_value| for an SPR optimum ``(value, partition)`` (raw = reported:
    kl, js, hellinger) and ``reference.brute_force_argmax``'s ``(bf_value, bf_partition)``.

    Both are maxima.  The brute force's B(P) equals the SPR value R(P) of an LR-contiguous P
    and the optimum over all set partitions is LR-contiguous, so
    ``value - bf <= e(P) + beta(P)`` (the brute force also scores P) and
    ``bf - value <= beta(P_bf) + max_P e(P) + slack`` (the solver is within e + slack of every
    R(P); ``slack`` is Dinkelbach's, 0 for the readable program): e = :func:`eval_bound` (max over
    the <= 2^(k-1) LR-contiguous partitions), beta = :func:`brute_force_bound`.
    """
    div = get_divergence(divergence)
    red = _reduce(np.asarray(p, float), np.asarray(q, float))
    if value >= bf_value:
        cuts = [(min(red_index(red, block)), max(red_index(red, block)) + 1) for block in partition]
        return eval_bound(red.p, red.q, eps, div, cuts) + brute_force_bound(p, q, eps, div, partition)
    ll = red.k if l is None else min(l, red.k)
    contiguous = [
        [(a, b) for a, b in zip((0, *cs), (*cs, red.k), strict=True)]
        for r in range(ll)
        for cs in itertools.combinations(range(1, red.k), r)
    ]
    e_max = max(eval_bound(red.p, red.q, eps, div, cuts) for cuts in contiguous)
    return brute_force_bound(p, q, eps, div, bf_partition) + e_max + slack


def red_index(red, block):
    """Reduced indices of the original symbols of ``block`` (dropped symbols left out)."""
    where = {i: j for j, cls in enumerate(red.classes) for i in cls}
    return [where[i] for i in block if i in where]


# ---------------------------------------------------------------------------------------------
# Against an independent exact optimum (LPs, closed forms): the float inputs' own rounding counts
# ---------------------------------------------------------------------------------------------
#: relative error of an SPR output mass x = c + A dP that is not shared by every block (units of
#: u): dP 3 (the class masses by fsum, the compensated interval sum; the floor max(sum, endpoint)
#: only moves it towards the exact sum), A * dP 1, + c 1.  The rounding of c = exp(-eps) and
#: A = -expm1(-eps) (R_FN each) is common to all blocks: :func:`shared_error`.
C_MASS = 5.0


def formula_partials(divergence, x, y, d, log_floor: float = -math.inf):
    """``(|dF/dx|, |dF/dy|, |dF/dd|)`` of the perspective *formula* F(x, y, d) as the library
    evaluates it (``divergences._perspective_array``: x, y and d are separate inputs, and the
    branch - log1p(d / y) where |d| < y / 2 (JS: s / 2), a difference of logs elsewhere - decides
    which of them it reads).  Input errors dx, dy, dd move the score by at most the dot product."""
    div = get_divergence(divergence)
    code, a = div.code, div.param
    x, y, d = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (x, y, d)))
    z = np.zeros(x.shape)
    with np.errstate(all="ignore"):
        xs, ys = np.where(x > 0, x, 1.0), np.where(y > 0, y, 1.0)
        both = (x > 0) & (y > 0)
        if code in (0, 1, 7, 8):
            near = np.abs(d) < 0.5 * ys
            yd = np.abs(ys + d)
            L = np.where(near, np.log1p(d / ys), np.log(xs) - np.log(ys))
            if code == 0:  # x lr; x (log x - log_floor) where y = 0
                fx = np.where(near, np.abs(L), np.abs(L + 1.0))
                fy = np.where(near, xs * np.abs(d) / (ys * yd), xs / ys)
                fd = np.where(near, xs / yd, 0.0)
                edge = (x > 0) & (y == 0)
                lf = log_floor if math.isfinite(log_floor) else 0.0
                fx = np.where(edge, np.abs(np.log(xs) - lf) + 1.0, np.where(both, fx, 0.0))
                fy, fd = np.where(both, fy, 0.0), np.where(both, fd, 0.0)
            elif code == 1:  # -y lr; y (log y - log_floor) where x = 0
                fx = np.where(near, 0.0, ys / xs)
                fy = np.where(near, np.abs(L) + np.abs(d) / yd, np.abs(1.0 - L))
                fd = np.where(near, ys / yd, 0.0)
                edge = (x == 0) & (y > 0)
                lf = log_floor if math.isfinite(log_floor) else 0.0
                fy = np.where(edge, np.abs(np.log(ys) - lf) + 1.0, np.where(both, fy, 0.0))
                fx, fd = np.where(both, fx, 0.0), np.where(both, fd, 0.0)
            else:  # +-y expm1(a lr)
                ea = np.exp(a * L)
                em = np.abs(np.expm1(a * L))
                fx = np.where(near, 0.0, abs(a) * ea * ys / xs)
                fy = np.where(near, em + abs(a) * ea * np.abs(d) / yd, em + abs(a) * ea)
                fd = np.where(near, abs(a) * ea * ys / yd, 0.0)
                fx, fy, fd = (np.where(both, f, 0.0) for f in (fx, fy, fd))
                fy = np.where((x == 0) & (y > 0), 1.0, fy)  # -y or +y
        elif code == 2:  # 0.5 |d|
            fx, fy, fd = z, z, np.full(x.shape, 0.5)
        elif code == 3:  # d^2 / y
            fx, fy, fd = (
                z,
                np.where(y > 0, d * d / (ys * ys), 0.0),
                np.where(y > 0, 2.0 * np.abs(d) / ys, 0.0),
            )
        elif code == 4:  # d^2 / s^2, s = sqrt x + sqrt y
            s = np.sqrt(x) + np.sqrt(y)
            ss = np.where(s > 0, s, 1.0)
            fx = np.where(x > 0, d * d / (ss**3 * np.sqrt(xs)), 0.0)
            fy = np.where(y > 0, d * d / (ss**3 * np.sqrt(ys)), 0.0)
            fd = np.where(s > 0, 2.0 * np.abs(d) / (ss * ss), 0.0)
        elif code == 5:  # 0.5 (x la + y lb)
            s = np.where(x + y > 0, x + y, 1.0)
            near = np.abs(d) < 0.5 * s
            la = np.where(near, np.log1p(d / s), np.log(2.0 * xs / s))
            lb = np.where(near, np.log1p(-d / s), np.log(2.0 * ys / s))
            cross = x * np.abs(d) / (s * np.abs(s + d)) + y * np.abs(d) / (s * np.abs(s - d))
            fx = 0.5 * np.where(near, np.abs(la) + cross, np.abs(la))
            fy = 0.5 * np.where(near, np.abs(lb) + cross, np.abs(lb))
            fd = 0.5 * np.where(near, x / np.abs(s + d) + y / np.abs(s - d), 0.0)
            fx, fy = np.where(x > 0, fx, 0.0), np.where(y > 0, fy, 0.0)
        elif code == 6:  # max(d - (a - 1) y, 0)
            on = d - (a - 1.0) * y > 0
            fx, fy, fd = z, np.where(on, abs(a - 1.0), 0.0), np.where(on, 1.0, 0.0)
        else:
            raise ValueError(f"no formula model for {div.name!r}")
    return fx, fy, fd


def shared_error(divergence, x, y, c: float, A: float, eps: float):
    """Score error from the rounding of c and A (R_FN u each), common to every block.

    It is a consistent change of the problem: with g 1-homogeneous, c dg/dc = c (g_x + g_y) and
    A dg/dA = g - c (g_x + g_y) (Euler), so the score moves by at most
    R_FN u (|g| + 2 c |g_x + g_y|).  g_x + g_y = f(t) + (1 - t) f'(t) (t = x / y) is written out
    where it cancels (KL: log t + 1 - t; TV: 0; chi^2: -(t - 1)^2; Hellinger: -(sqrt t - 1)^2 / sqrt t)
    and bounded by |g_x| + |g_y| (``formula_partials``) otherwise.  0 at eps = inf (c = 0, A = 1).
    """
    div = get_divergence(divergence)
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if math.isinf(eps):
        return np.zeros(np.broadcast(x, y).shape)
    with np.errstate(all="ignore"):
        g = np.abs(div.perspective(x, y))
        ys = np.where(y > 0, y, 1.0)
        r = (x - y) / ys
        if div.code == 0:
            gs = np.abs(np.log1p(r) - r) + U * np.abs(r)
        elif div.code == 2:
            gs = np.zeros(x.shape)
        elif div.code == 3:
            gs = r * r
        elif div.code == 4:
            t = np.sqrt(x / ys)
            gs = (t - 1.0) ** 2 / np.where(t > 0, t, 1.0)
        else:
            fx, fy, _ = formula_partials(div, x, y, x - y)
            gs = fx + fy
        gs = np.where(y > 0, gs, 0.0)
    return R_FN * U * (g + 2.0 * c * gs)


def block_error(divergence, dp, dq, dd, c: float, A: float, eps: float, lf: float) -> np.ndarray:
    """|computed score - exact score| of SPR blocks with computed sums (dP, dQ, dP - dQ).

    ``score_bound`` at the float inputs, plus the inputs' own errors through
    ``formula_partials``: x and y within C_MASS u relative, d = A dd within u |d| (the product)
    + A u (|dd| + 3 (dP + dQ)) (the subtraction, the sums), plus :func:`shared_error`.
    """
    div = get_divergence(divergence)
    x, y, d = c + A * dp, c + A * dq, A * dd
    fx, fy, fd = formula_partials(div, x, y, d, lf)
    err_d = U * np.abs(d) + A * U * (np.abs(dd) + 3.0 * (dp + dq))
    inputs = C_MASS * U * (fx * x + fy * y) + fd * err_d
    return score_bound(div.code, div.param, x, y, d, lf) + inputs + shared_error(div, x, y, c, A, eps)


def partition_error(p, q, eps: float, divergence, cuts) -> float:
    """|R_computed(P) - R_exact(P)| (raw scale) of the readable evaluation of the reduced cuts P:
    :func:`block_error` per block, the left-to-right sum ((n - 1) u sum|s|), den = 1 + (n - 1) c
    ((n - 1) c and + 1: 2u, c's R_FN u times (n - 1) c / den <= 1) and the division (u)."""
    div = get_divergence(divergence)
    pre = _Prefix(np.asarray(p, float), np.asarray(q, float))
    c, A = _rescale(eps)
    lf = _log_floor(eps, c)
    errs, scores = [], []
    for a, b in cuts:
        dp, dq, dd = pre.sums(np.array([a]), b)
        errs.append(float(block_error(div, dp, dq, dd, c, A, eps, lf)[0]))
        scores.append(float(div.perspective(c + A * dp, c + A * dq, A * dd, log_floor=lf)[0]))
    n = len(cuts)
    den = 1.0 + (n - 1) * c
    R = abs(math.fsum(scores)) / den
    total = (sum(errs) + max(n - 1, 0) * U * sum(abs(v) for v in scores)) / den + (R_FN + 3.0) * U * R
    return total if math.isfinite(total) else math.inf


def dp_value_bound(p, q, eps: float, divergence, extra=None) -> float:
    """Bound of |readable DP optimum (raw) - exact optimum over all partitions| (no budget; an
    upper bound under a budget too).

    The DP returns R_c(P_dp) = max_P R_c(P) (it maximises its own float sums exactly), so
    |R_c(P_dp) - max_P R(P)| <= max_P |R_c(P) - R(P)|, each :func:`partition_error`, whose terms
    are at most sum_t (block_error_t + k u |s_t|) + (R_FN + 3) u sum_t |s_t| (den >= 1, n <= k):
    maximised over all LR-contiguous partitions by a max-plus recursion over the interval table.
    ``extra(x, y, d)`` adds a per-score error (a user generator's own formula).
    """
    div = get_divergence(divergence)
    red = _reduce(np.asarray(p, float), np.asarray(q, float))
    k = red.k
    pre = _Prefix(red.p, red.q)
    c, A = _rescale(eps)
    lf = _log_floor(eps, c)
    W = np.zeros(k + 1)
    for b in range(1, k + 1):
        a = np.arange(b)
        dp, dq, dd = pre.sums(a, b)
        x, y, d = c + A * dp, c + A * dq, A * dd
        s = np.abs(div.perspective(x, y, d, log_floor=lf))
        w = block_error(div, dp, dq, dd, c, A, eps, lf) + (k + R_FN + 3.0) * U * s
        if extra is not None:
            w = w + extra(x, y, d)
        W[b] = np.max(W[a] + w)
    total = float(W[k])
    return total if math.isfinite(total) else math.inf


#: ldpopt.spr.kov: weights below _SUPPORT_TOL * max(1, max weight) are dropped; the polish accepts a
#: re-solve whose row residual is below 1e-12 (else HiGHS's weights, within LIB_LP_TOL, are kept)
KOV_SUPPORT_TOL = 1e-12


def kov_bound(p, q, eps: float, divergence, extra=None, rounding_only: bool = False) -> float:
    """Bound of |kov_lp's raw value - exact optimum| (finite eps), from ``_errmodel.lp_gap``.

    max mu.theta s.t. Z theta = 1, theta >= 0, Z = c + A 1_H over the 2^k - 1 high sets H.
    * ||theta*||_1 <= X = k / (k c + A) (sum the k rows: sum_H theta_H (k c + A |H|) = k);
    * duals: min sum(y) s.t. Z^T y >= mu; the singleton columns give y_i >= (mu_i - c v*) / A and
      sum(y) = v*, so ||y*||_1 <= Y = V + 2 k (M + c V) / A, M = max |mu_H|, V = X M >= |v*|;
    * HiGHS's reduced costs are within LIB_LP_TOL: the value is at most LIB_LP_TOL X below v*;
      the returned weights violate the rows by at most rho = kov_residual: at most rho Y above;
    * its own rounding: mu_H at x = c + A P(H) (the doubling subset sums: (k - 1) u relative) as
      :func:`block_error` models the DP's, weighted by theta (sum <= X), and fsum (u V).
    ``rounding_only``: just the last item (|computed sum theta mu - exact sum theta mu_H|).
    """
    from _errmodel import LIB_LP_TOL, lp_gap

    div = get_divergence(divergence)
    u, v = np.asarray(p, float), np.asarray(q, float)
    k = u.shape[0]
    c, A = _rescale(eps)
    h = np.arange(1, 2**k)
    member = ((h[:, None] >> np.arange(k)[None, :]) & 1).astype(float)
    ph, qh, dh = member @ u, member @ v, member @ (u - v)
    x, y, d = c + A * ph, c + A * qh, A * dh
    mu = div.perspective(x, y, d)
    fx, fy, fd = formula_partials(div, x, y, d)
    err_d = U * np.abs(d) + A * U * (np.abs(dh) + k * (ph + qh))
    rnd = score_bound(div.code, div.param, x, y, d) + (C_MASS + k) * U * (fx * x + fy * y) + fd * err_d
    rnd = rnd + shared_error(div, x, y, c, A, eps)
    if extra is not None:
        rnd = rnd + extra(x, y, d)
    X = k / (k * c + A)
    M = float(np.max(np.abs(mu)))
    vv = X * M
    Y = vv + 2.0 * k * (M + c * vv) / A
    rho = kov_residual(k, eps)
    rounding = X * float(np.max(rnd)) + U * vv
    total = rounding if rounding_only else lp_gap(LIB_LP_TOL, X) + rho * Y + rounding
    return total if math.isfinite(total) else math.inf


def kov_residual(k: int, eps: float) -> float:
    """Row residual |Z theta - 1| of kov_lp's weights: the polish (< 1e-12) or HiGHS's primal
    tolerance LIB_LP_TOL, plus the weights dropped below KOV_SUPPORT_TOL max(1, max theta) (a basic
    solution has at most k nonzero weights; max theta <= X = k / (k c + A))."""
    from _errmodel import LIB_LP_TOL

    c, A = _rescale(eps)
    return LIB_LP_TOL + k * KOV_SUPPORT_TOL * max(1.0, k / (k * c + A))


def user_hellinger_error(x, y, d):
    """Per-score error of the user generator f(t) = (sqrt(t) - 1)^2 evaluated as y f(x / y) (no
    builtin formula): t = x / y (u), sqrt (u, and half of t's), r = sqrt(t) - 1 (absolute 1.5u sqrt t
    + u |r|), r * r (2 |err r| |r| + u r^2), times y (u): u y (3 sqrt(t) |r| + 4 r^2); plus the
    built-in's own score_bound, which the user path does not have (7u d^2 / s^2: counted twice)."""
    with np.errstate(all="ignore"):
        t = np.asarray(x, float) / np.where(np.asarray(y) > 0, y, 1.0)
        r = np.sqrt(t) - 1.0
        return np.where(
            np.asarray(y) > 0, U * np.asarray(y) * (3.0 * np.sqrt(t) * np.abs(r) + 4.0 * r * r), 0.0
        )


def utility_bound(matrix, p, q, divergence, entry_rel: float = 0.0) -> float:
    """Bound of |Mechanism.utility(p, q) - D(Q^T p || Q^T q)| (raw scale) for the exact channel Q
    whose float entries ``matrix`` are within ``entry_rel`` relative (0: the matrix itself).

    Each output mass is a dot product of k nonnegative terms: within delta = entry_rel + k u relative
    (any summation order, products included); d = m0 - m1 within delta (m0 + m1) + u |d|; then the
    perspectives at the float masses (``score_bound``, ``formula_partials`` for the masses' errors)
    and fsum (u |sum|).
    """
    div = get_divergence(divergence)
    M = np.asarray(matrix, dtype=float)
    u, v = np.asarray(p, float), np.asarray(q, float)
    k = M.shape[0]
    m0, m1 = M.T @ u, M.T @ v
    d = m0 - m1
    delta = entry_rel + k * U
    fx, fy, fd = formula_partials(div, m0, m1, d)
    err = score_bound(div.code, div.param, m0, m1, d) + delta * (fx * m0 + fy * m1)
    err = err + fd * (delta * (m0 + m1) + U * np.abs(d))
    total = float(np.sum(err)) + U * abs(float(np.sum(div.perspective(m0, m1, d))))
    return total if math.isfinite(total) else math.inf


def ldp_excess(Q, eps: float) -> float:
    """max(0, max over columns of log(max / min) - eps) of a channel (inf: a zero beside a positive
    entry): how far a computed vertex is from eps-LDP.  A channel at excess rho is within relative
    2 rho (first order) of an eps-LDP channel: lower each column's entries to e^eps times its minimum
    (relative rho), then renormalise the rows (relative rho)."""
    Q = np.asarray(Q, dtype=float)
    worst = 0.0
    for col in Q.T:
        hi, lo = float(col.max()), float(col.min())
        if hi == 0.0:
            continue
        if lo == 0.0:
            return math.inf
        worst = max(worst, math.log(hi / lo) - eps)
    return max(worst, 0.0) + 4.0 * U * (1.0 + eps)  # the log ratio itself: 2 roundings and a log


def vertex_bound(p, q, eps: float, divergence, vertices, matrix, opt_err: float) -> float:
    """Bound of |reference.vertex_enumeration_optimum - exact optimum v*| (raw scale).

    cddlib computes the vertices in floating point, with no a priori accuracy; both sides are
    bounded a posteriori from the computed vertices (clipped and row-normalised as the reference
    does):
    * above: each is within relative 2 rho (``ldp_excess``) of an eps-LDP channel, whose exact
      utility is <= v*; the utility moves by at most 2 rho (m0 |dF/dx| + m1 |dF/dy| + |d| |dF/dd|)
      at its output masses; plus the evaluation (``utility_bound``);
    * below: the optimum's own channel ``matrix`` (k x n, its exact utility within ``opt_err`` of
      v*: the optimum's partition is optimal up to the solver's bound), padded with zero columns,
      is a vertex; the nearest computed vertex (entrywise, over column orders) within Delta of it,
      relative Delta / min positive entry, is at most that times the same sensitivities below it.
    """
    import itertools as it

    div = get_divergence(divergence)
    u, v = np.asarray(p, float), np.asarray(q, float)

    def sens(Q, rel):
        m0, m1 = Q.T @ u, Q.T @ v
        fx, fy, fd = formula_partials(div, m0, m1, m0 - m1)
        return rel * float(np.sum(fx * m0 + fy * m1 + fd * (m0 + m1)))

    above = 0.0
    tilde = []
    for Q in vertices:
        Qt = np.clip(Q, 0.0, None)
        Qt = Qt / Qt.sum(axis=1, keepdims=True)
        tilde.append(Qt)
        rho = ldp_excess(Qt, eps)
        above = max(above, sens(Qt, 2.0 * rho) + utility_bound(Qt, u, v, div))
    M = np.asarray(matrix, dtype=float)
    l = tilde[0].shape[1]
    pad = np.hstack([M, np.zeros((M.shape[0], l - M.shape[1]))])
    delta = min(
        float(np.max(np.abs(Qt[:, list(perm)] - pad))) for Qt in tilde for perm in it.permutations(range(l))
    )
    # and the float matrix's own entries (C_RR_LIB u: tests/test_mechanism.py) off the exact channel
    rel = delta / float(M[M > 0].min()) + (R_FN + 3.0) * U
    below = opt_err + sens(pad, rel) + utility_bound(pad, u, v, div)
    return max(above, below)


def dp_raw(p, q, eps: float, divergence, l=None) -> float:
    """The readable program's raw optimum (before the Renyi transform)."""
    div = get_divergence(divergence)
    red = _reduce(np.asarray(p, float), np.asarray(q, float))
    return _dp_readable(red.p, red.q, eps, div, red.k if l is None else min(l, red.k))[0]


def fast_spr_err(p, q, eps: float, divergence) -> float:
    """|optimal_mechanism(method="fast") raw value - exact optimum| (no budget).

    Above: R_f(P_f) <= R_r(P_f) + pair_bound(P_f) <= R(P_f) + e(P_f) + pair_bound(P_f).  Below: the
    fast value is within pair_bound(P_ref) + pair_bound(P_f) + Dinkelbach's slack of the readable
    optimum (tests/spr/test_kernels.py), itself within e(P*) of the exact one.  Over all
    partitions pair_bound(P) <= sum_t (2 b_t + 2 (k + 1) u |s_t|) (``ratio_bound``, den >= 1): so
    :func:`dp_value_bound` with 4 b_t + 4 (k + 1) u |s_t| added per score, plus the slack.
    """
    div = get_divergence(divergence)
    red = _reduce(np.asarray(p, float), np.asarray(q, float))
    k = red.k

    def pairs(x, y, d):
        s = np.abs(div.perspective(x, y, d))
        return 4 * score_bound(div.code, div.param, x, y, d) + 4 * (k + 1) * U * s

    raw = _dp_readable(red.p, red.q, eps, div, k)[0]
    return dp_value_bound(p, q, eps, div, extra=pairs) + dinkelbach_slack(red.p, red.q, eps, div, raw)


def kov_mu_max(p, q, eps: float, divergence) -> float:
    """max_H |mu_H| over the 2^k - 1 high sets: the largest cost of the KOV LP and of the LP of an
    f-divergence objective over the extreme rows (the same scores)."""
    div = get_divergence(divergence)
    u, v = np.asarray(p, float), np.asarray(q, float)
    k = u.shape[0]
    c, A = _rescale(eps)
    h = np.arange(1, 2**k)
    member = ((h[:, None] >> np.arange(k)[None, :]) & 1).astype(float)
    ph, qh = member @ u, member @ v
    return float(np.max(np.abs(div.perspective(c + A * ph, c + A * qh, A * (ph - qh)))))


def baseline_utility_err(p, q, eps: float, which: str) -> float:
    """|experiments' baseline value - its exact utility| ("rr": k-RR through p @ rr and
    perspective(...).sum(), np.sum: k u of the absolute terms on top of utility_bound; "binary":
    binary_mechanism(...).utility): the channel's entries (R_FN + 3) u relative (tests/test_mechanism.py)."""
    import ldpopt

    k = len(p)
    mech = ldpopt.randomized_response(k, eps) if which == "rr" else ldpopt.binary_mechanism(p, q, eps)
    m0, m1 = mech.matrix.T @ np.asarray(p, float), mech.matrix.T @ np.asarray(q, float)
    extra = k * U * float(np.sum(np.abs(get_divergence("kl").perspective(m0, m1)))) if which == "rr" else 0.0
    return utility_bound(mech.matrix, p, q, "kl", (R_FN + 3.0) * U) + extra


def blocks_value_err(
    u, v, eps: float, divergence, blocks, c: float | None = None, A: float | None = None
) -> float:
    """|sweeps.runner's block value (SPR eq. 30 from fsum block sums, c and A from numpy's exp and
    expm1) - exact utility of RR on the blocks| (raw scale): each block's sums by fsum (u relative,
    within the 3u of C_MASS's model), :func:`block_error` per score, the sum of s scores
    ((s - 1) u sum|g|), den and the division ((R_FN + 3) u |R|)."""
    div = get_divergence(divergence)
    u, v = np.asarray(u, float), np.asarray(v, float)
    if c is None:
        c, A = _rescale(eps)
    lf = _log_floor(eps, c)
    errs, scores = [], []
    for b in blocks:
        idx = list(b)
        dp, dq = math.fsum(u[idx].tolist()), math.fsum(v[idx].tolist())
        dd = math.fsum((u[idx] - v[idx]).tolist())
        a = np.array([dp]), np.array([dq]), np.array([dd])
        errs.append(float(block_error(div, *a, c, A, eps, lf)[0]))
        scores.append(float(div.perspective(c + A * a[0], c + A * a[1], A * a[2], log_floor=lf)[0]))
    n = len(blocks)
    den = 1.0 + (n - 1) * c
    R = abs(math.fsum(scores)) / den
    total = (sum(errs) + max(n - 1, 0) * U * sum(abs(s) for s in scores)) / den + (R_FN + 3.0) * U * R
    return total if math.isfinite(total) else math.inf
