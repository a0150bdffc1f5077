"""The law of the LLR statistic and the designs built on it (exact binomial, exact lattice,
saddlepoint): thresholds, sizes, powers and p-values against exact enumeration."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import binom, binomtest

import ldpopt
from _errmodel import R_FN, U, within
from ldpopt.deploy.testing import LikelihoodRatioTest
from reference import enumerate_sum_law

#: the numerics tests: CI also runs them on numpy's AVX2 and baseline loops (.ci/npy_disable.py)
pytestmark = pytest.mark.numerics

#: significance level of every statistical check: an exact binomial test's p-value is below it with
#: probability <= 1e-6 when the model is right (the seeds are fixed, so a pass is reproducible; a
#: failure would mean a 1e-6 event or a wrong rate)
CI_ALPHA = 1e-6
#: error of one FFT level (Higham, Accuracy and Stability, Thm 24.2: mu + gamma_4 (sqrt 2 + mu) with
#: the twiddle factors within mu = u): 7u, in the 2-norm relative to the transformed vector
FFT_ETA = 7 * U
#: ldpopt.deploy.llr._FFT_FLOOR (repeated on purpose): tilted pmf values below it times the peak
#: are set to 0
FFT_FLOOR = 1e-14
#: relative accuracy of scipy.stats.binom's sf / cdf / pmf (the regularised incomplete beta): the
#: Cephes incbet documentation's peak relative error on random tests with a, b <= 1000 (5.3e-12);
#: Boost's ibeta, which recent scipy uses, documents smaller maxima
IBETA_REL = 5.3e-12


def fft_abs_err(n: int, size: int) -> float:
    """Absolute error of each entry of a tilted n-fold convolution q^(*n) computed as
    irfft(rfft(q)^n) (ldpopt.deploy.llr.lattice_logpmf), q a pmf (sum 1, so |rfft(q)| <= 1):
    ||d rfft(q)||_2 <= log2(N) FFT_ETA sqrt(N); the n-th power multiplies it by at most n and rounds
    2 log2(n) times (3u each, relative); irfft adds log2(N) FFT_ETA and divides by sqrt(N) in the
    2-norm: ||d q^(*n)||_inf <= (n + 1) log2(N) FFT_ETA + 6 log2(n) u, plus the floor (a zeroed
    value was at most FFT_FLOOR, the peak being <= 1)."""
    return (n + 1) * math.log2(size) * FFT_ETA + 6 * math.log2(max(n, 2)) * U + FFT_FLOOR


def tilted_tail_err(w, z, n, centres, mask) -> float:
    """|computed - exact| of sum_{t in mask} P(sum of n draws = t) from the library's tilted FFT law
    (z integers, w the per-draw law): an absolute error fft_abs_err per entry of the tilted pmf,
    mapped back by the weight M(theta)^n e^(-theta t) (theta tilting the mean to c / n), for every
    tilt point c the library may have used (the error is log-convex in theta: its largest value is at
    an end of the range)."""
    from scipy import fft
    from scipy.optimize import brentq

    w = np.asarray(w, float)
    zf = z.astype(float)
    length = n * int(z.max()) + 1
    size = fft.next_fast_len(length, real=True)
    t = np.arange(length, dtype=float)

    def log_m(th):
        x = np.log(w) + th * zf
        mx = x.max()
        return mx + math.log(float(np.sum(np.exp(x - mx))))

    def mean(th):
        x = np.log(w) + th * zf
        p = np.exp(x - x.max())
        return float(p @ zf / p.sum())

    worst = 0.0
    lo, hi = float(zf.min()), float(zf.max())
    for c in centres:
        target = min(max(c / n, lo + 1e-9 * (hi - lo)), hi - 1e-9 * (hi - lo))
        a, b = -1.0, 1.0
        while mean(a) > target:
            a *= 2
        while mean(b) < target:
            b *= 2
        th = brentq(lambda x, target=target: mean(x) - target, a, b, xtol=1e-14)
        logw = n * log_m(th) - th * t
        worst = max(worst, float(np.sum(np.exp(logw[mask]))))
    return fft_abs_err(n, size) * worst


def tail_rounding(value: float, length: int) -> float:
    """The tails' own rounding: a cumulative sum of up to ``length`` positive terms scaled by the peak
    (length u relative), its log and exp back (R_FN u |log| + R_FN u relative: |log| <= 750)."""
    return (length + R_FN * 751 + 2) * U * value


def lattice_pvalue_err(test, n: int, t: int, expected: float) -> float:
    """Bound of |lattice p-value P0(T >= t) - exact| (``expected``, the exact value, by enumeration).

    The upper tail at t (law tilted at t), or one minus the lower tail below t (tilted at t - 1): the
    absolute error of that tail, then 1 - (.) rounds once.  A law tilted elsewhere serves the query
    only where its tilted log-pmf is within _TAIL_WINDOW_LOG = 4 of its peak (the library's
    documented window): e^4 times the error.  The law is not renormalised (n |fsum(M0) - 1| + 4u).
    """
    z = test._lattice_law()[0]
    a = test._law.a
    m0 = test.output_distributions[0]
    mean = n * float(np.dot(a, z))
    length = n * int(z.max()) + 1
    tt = np.arange(length)
    renorm = n * (abs(math.fsum(m0.tolist()) - 1.0) + 4 * U)
    q = t if t >= mean else t - 1
    mask = tt >= t if t >= mean else tt <= t - 1
    tilted = math.exp(4.0) * tilted_tail_err(a, z, n, (float(q),), mask)
    err = tilted + tail_rounding(1.0 if t < mean else expected, length)
    return err + (renorm + 2 * U) * max(expected, 1.0 if t < mean else 0.0)


# ---------------------------------------------------------------------------------------------
# independent oracles
# ---------------------------------------------------------------------------------------------
def enumerate_lattice_law(probs, zc, n):
    """Exact law of sum_i z(Y_i) by enumerating all count vectors (exact rationals)."""
    return enumerate_sum_law(probs, zc, n)


def tails(law, t):
    above = sum((v for u, v in law.items() if u > t), Fraction(0))
    at = law.get(t, Fraction(0))
    below = sum((v for u, v in law.items() if u < t), Fraction(0))
    return float(above), float(at), float(below)


# ---------------------------------------------------------------------------------------------
# exact designs
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("alpha", [0.05, 1e-3, 1e-9])
@pytest.mark.parametrize("randomized", [False, True])
def test_lattice_design_matches_enumeration(alpha, randomized, hypotheses):
    p0, p1 = hypotheses(4, 3)
    mech = ldpopt.randomized_response(4, 1.0)
    test = LikelihoodRatioTest(mech, p0, p1, alpha, randomized=randomized, lattice_size=64)
    n = 18
    d = test.design(n)
    assert d.method == "exact-lattice" and d.exact
    z, _ = test._lattice_law()
    zc = z[test._law.cls]
    m0, m1 = test.output_distributions
    law0 = enumerate_lattice_law(m0, zc, n)
    law1 = enumerate_lattice_law(m1, zc, n)
    t = d._stat_threshold
    above0, at0, _ = tails(law0, t)
    above1, at1, below1 = tails(law1, t)
    assert above0 <= alpha < above0 + at0  # Neyman-Pearson threshold: the smallest with P0(T > t) <= alpha
    # the library tilts P0's law at a centre within 0.5 sd sqrt(n) of max(t, mean) (its re-centring
    # rule) and P1's at min(t, mean1); it does not renormalise the law (sum(m) = 1 within
    # |fsum(m) - 1| + k u: n times that, relative); the exact side rounds 3 times (u / 2 each, 2u)
    law = test._law
    a, b = law.a, law.b
    mu0, mu1 = float(np.dot(a, z)), float(np.dot(b, z))
    sd0 = math.sqrt(float(np.dot(a, (z - mu0) ** 2)))
    c0 = max(float(t), n * mu0)
    length = n * int(z.max()) + 1
    tt = np.arange(length)
    centres = (c0 - 0.5 * sd0 * math.sqrt(n), c0 + 0.5 * sd0 * math.sqrt(n))
    renorm = n * (max(abs(math.fsum(m.tolist()) - 1.0) for m in (m0, m1)) + 4 * U)
    size_ref = above0 + d.gamma * at0
    err = tilted_tail_err(a, z, n, centres, tt > t) + d.gamma * tilted_tail_err(a, z, n, centres, tt == t)
    err += tail_rounding(size_ref, length) + (renorm + 2 * U) * size_ref
    assert within("lattice design: size vs enumeration", d.size, size_ref, err)
    c1 = (min(float(t), n * mu1),)
    t2_ref = below1 + (1 - d.gamma) * at1
    err = tilted_tail_err(b, z, n, c1, tt < t) + (1 - d.gamma) * tilted_tail_err(b, z, n, c1, tt == t)
    err += tail_rounding(t2_ref, length) + (renorm + 2 * U) * t2_ref
    assert within("lattice design: type II vs enumeration", d.type_ii, t2_ref, err)
    if randomized:
        # gamma = (alpha - above) / at, size = above + gamma at: 3 roundings
        assert within("randomised lattice design: size = alpha", d.size, alpha, 4 * U * alpha)
    else:
        assert d.gamma == 0.0


@pytest.mark.parametrize("n", [1, 7, 60, 150])
def test_binomial_design_matches_direct_sums(n, hypotheses):
    p0, p1 = hypotheses(6, 5)
    mech = ldpopt.binary_mechanism(p0, p1, 1.0)
    test = LikelihoodRatioTest(mech, p0, p1, 0.05)
    d = test.design(n)
    assert d.method == "exact-binomial"
    m0, m1 = test.output_distributions
    hi = int(np.argmax(np.log(m1) - np.log(m0)))  # output counted by the statistic
    q0, q1 = (
        Fraction(float(m0[hi])) / Fraction(float(m0.sum())),
        Fraction(float(m1[hi])) / Fraction(float(m1.sum())),
    )

    def pmf(q, t):
        return Fraction(math.comb(n, t)) * q**t * (1 - q) ** (n - t)

    t = d._stat_threshold
    above = float(sum((pmf(q0, u) for u in range(t + 1, n + 1)), Fraction(0)))
    at = float(pmf(q0, t))
    assert above <= 0.05 < above + at
    # scipy's binomial tails (IBETA_REL) at the library's p = law.a[1], within 2u relative of this
    # q (a float quotient): a tail moves by at most n |dp| (its derivative is n times a pmf <= 1)
    p_err = n * 2 * U * max(float(q0), float(q1))
    assert within("binomial design: size vs exact sums", d.size, above, IBETA_REL * above + p_err + U * above)
    below1 = float(sum((pmf(q1, u) for u in range(0, t + 1)), Fraction(0)))
    bound = IBETA_REL * below1 + p_err + U * below1
    assert within("binomial design: type II vs exact sums", d.type_ii, below1, bound)


def test_pvalues_match_enumeration(hypotheses):
    p0, p1 = hypotheses(3, 11)
    mech = ldpopt.randomized_response(3, 0.8)
    test = LikelihoodRatioTest(mech, p0, p1, 0.05, lattice_size=50)
    n = 12
    z, _ = test._lattice_law()
    zc = z[test._law.cls]
    law0 = enumerate_lattice_law(test.output_distributions[0], zc, n)
    for counts in ([12, 0, 0], [0, 12, 0], [0, 0, 12], [4, 4, 4], [2, 3, 7]):
        res = test.decide_counts(np.array(counts))
        t = int(np.dot(counts, zc))
        expected = float(sum((v for u, v in law0.items() if u >= t), Fraction(0)))
        err = lattice_pvalue_err(test, n, t, expected)
        assert within("lattice p-value vs enumeration", res.p_value, expected, err)
        # fsum (correctly rounded) against np.dot of 3 terms (2u of the absolute terms)
        terms = np.abs(np.array(counts) * test.per_report_llr)
        ref = float(np.dot(counts, test.per_report_llr))
        assert within("LLR: fsum vs dot", res.llr, ref, 3 * U * float(terms.sum()))
        # |lattice LLR - LLR| <= n delta / 2 exactly; the statistic n lambda_min + delta sum c z and the
        # llr each round (4 and 3 roundings of magnitudes <= n max|lambda|)
        lam = float(np.max(np.abs(test.per_report_llr)))
        assert abs(res.statistic - res.llr) <= n * test.design(n).lattice_step / 2 + 8 * U * n * lam


@pytest.mark.parametrize("n", [12, 30, 60])
def test_pvalue_after_a_query_at_an_unreachable_lattice_sum(n, hypotheses):
    # regression: the lattice steps are {0, 14, 50}, so the p-value of n reports at the lowest LLR is
    # 1 - P0(T <= t - 1) with t - 1 a sum no reports reach (its tilted log-pmf is -inf); the law
    # tilted there was cached for every t and served the far upper tail asked next (relative error
    # 2.2e-9 at n = 12, 0.0 instead of 2.2e-12 at n = 30 and of 5e-24 at n = 60)
    p0, p1 = hypotheses(3, 11)
    test = LikelihoodRatioTest(ldpopt.randomized_response(3, 0.8), p0, p1, 0.05, lattice_size=50)
    z, _ = test._lattice_law()
    zc = z[test._law.cls]
    law0 = enumerate_lattice_law(test.output_distributions[0], zc, n)
    low = int(np.dot([n, 0, 0], zc))
    assert low < n * float(np.dot(test._law.a, z)) and low - 1 not in law0  # the setup: lower tail, a gap
    for counts in ([n, 0, 0], [0, 0, n]):
        t = int(np.dot(counts, zc))
        expected = float(sum((v for u, v in law0.items() if u >= t), Fraction(0)))
        res = test.decide_counts(np.array(counts))
        assert res.p_value > 0.0
        err = lattice_pvalue_err(test, n, t, expected)
        assert within("lattice p-value after an unreachable sum", res.p_value, expected, err)


def test_binomial_pvalue_and_decision(hypotheses):
    p0, p1 = hypotheses(5, 2)
    mech = ldpopt.binary_mechanism(p0, p1, 1.0)
    test = LikelihoodRatioTest(mech, p0, p1, 0.05)
    m0, m1 = test.output_distributions
    hi = int(np.argmax(np.log(m1) - np.log(m0)))
    for t in (0, 5, 20, 30):
        counts = np.zeros(2, dtype=np.int64)
        counts[hi], counts[1 - hi] = t, 30 - t
        res = test.decide_counts(counts)
        # binom.sf at the law's p (m0[hi] up to 2u) against binom.sf at m0[hi]: a tail moves by at most
        # n |dp| (n times a pmf <= 1); the same function otherwise
        assert within("binomial p-value", res.p_value, binom.sf(t - 1, 30, m0[hi]), 30 * 2 * U * m0[hi])
        assert res.decision == int(t > test.design(30)._stat_threshold)
        # the threshold n v0 + t* (v1 - v0) and the llr (fsum of the counts' LLRs) agree at t = t* up to
        # their roundings (4u of magnitudes <= 30 max |lambda|): a tie is read within that
        tie = 8 * U * 30 * float(np.max(np.abs(test.per_report_llr)))
        assert res.decision == int(res.llr > res.threshold + tie or (res.boundary and res.decision))


def test_randomized_boundary_coin_is_used(hypotheses):
    p0, p1 = hypotheses(5, 2)
    mech = ldpopt.binary_mechanism(p0, p1, 1.0)
    test = LikelihoodRatioTest(mech, p0, p1, 0.05, randomized=True)
    d = test.design(30)
    m0, m1 = test.output_distributions
    hi = int(np.argmax(np.log(m1) - np.log(m0)))
    counts = np.zeros(2, dtype=np.int64)
    counts[hi], counts[1 - hi] = d._stat_threshold, 30 - d._stat_threshold
    rng = np.random.default_rng(0)
    decisions = [test.decide_counts(counts, rng=rng).decision for _ in range(4000)]
    assert binomtest(sum(decisions), 4000, d.gamma).pvalue > CI_ALPHA
    assert 0 < d.gamma < 1


def test_saddlepoint_agrees_with_exact_lattice(hypotheses):
    p0, p1 = hypotheses(6, 8)
    mech = ldpopt.randomized_response(6, 1.0)
    exact = LikelihoodRatioTest(mech, p0, p1, 0.05).design(1500)
    approx = LikelihoodRatioTest(mech, p0, p1, 0.05, exact_max_n=100).design(1500)
    assert exact.method == "exact-lattice" and approx.method == "saddlepoint" and not approx.exact
    # brentq stops within xtol = 1e-12 (hi - lo) of the root of LR(s) = alpha; LR's slope is at most
    # the normal density 1 / (sqrt(2 pi) sd) of the statistic (sd = sqrt(n var) under P0) times 1.5
    # (Lugannani-Rice's correction stays within that at the 5% point), plus the formula's rounding
    law = LikelihoodRatioTest(mech, p0, p1)._law
    v = law.values
    sd_n = math.sqrt(1500 * law.moments(0)[1])
    xtol = 1e-12 * 1500 * float(v[-1] - v[0])
    size_err = 1.5 * xtol / (math.sqrt(2 * math.pi) * sd_n) + 20 * U * 0.05
    assert within("saddlepoint design: size = alpha", approx.size, 0.05, size_err)
    # not a comparison of two float paths: Lugannani-Rice against the exact lattice law (approximation
    # error O(1/n), Daniels 1987, and the lattice's |statistic - LLR| <= n delta / 2 shift of the
    # threshold); a requirement on the approximation's quality
    assert approx.type_ii == pytest.approx(exact.type_ii, abs=3e-3)
    sd = math.sqrt(1500 * np.var(LikelihoodRatioTest(mech, p0, p1).per_report_llr))
    assert abs(approx.threshold - exact.threshold) < 0.05 * sd  # the same kind of requirement
