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
from ldpopt.spr.reference import interval_scores


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
