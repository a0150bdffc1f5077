"""Likelihood-ratio tests, SPRT and sample sizes: exact laws against enumeration, errors by simulation."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import binom, binomtest

import ldpopt
from _errmodel import R_FN, U, within
from ldpopt.deploy.testing import LikelihoodRatioTest, SequentialTest, sample_size
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
#: ldpopt.deploy.testing._FFT_FLOOR (repeated on purpose): tilted pmf values below it times the peak
#: are set to 0
FFT_FLOOR = 1e-14
#: relative accuracy of scipy.stats.binom's sf / cdf / pmf (the regularised incomplete beta): the
#: Cephes incbet documentation's peak relative error on random tests with a, b <= 1000 (5.3e-12);
#: Boost's ibeta, which recent scipy uses, documents smaller maxima
IBETA_REL = 5.3e-12


def fft_abs_err(n: int, size: int) -> float:
    """Absolute error of each entry of a tilted n-fold convolution q^(*n) computed as
    irfft(rfft(q)^n) (ldpopt.deploy.testing._lattice_logpmf), q a pmf (sum 1, so |rfft(q)| <= 1):
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


def hypotheses(k: int, seed: int):
    rng = np.random.default_rng(seed)
    return rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))


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
def test_lattice_design_matches_enumeration(alpha, randomized):
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
def test_binomial_design_matches_direct_sums(n):
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


@pytest.mark.xfail(
    strict=True,
    reason="library bug: LikelihoodRatioTest._lattice_pvalue caches a tilted law with a window covering "
    "every t when the query point is an unreachable lattice sum (its tilted log-pmf is -inf, so "
    "lq >= lq[query] - 4 holds everywhere); later deep-tail p-values then come from that law: here "
    "P0(T >= 600) has relative error 2.2e-9, and for n = 30 the p-value of all reports at the top "
    "value is 0.0 instead of 2.2e-12",
)
def test_pvalues_match_enumeration():
    p0, p1 = hypotheses(3, 11)
    mech = ldpopt.randomized_response(3, 0.8)
    test = LikelihoodRatioTest(mech, p0, p1, 0.05, lattice_size=50)
    n = 12
    z, _ = test._lattice_law()
    zc = z[test._law.cls]
    law0 = enumerate_lattice_law(test.output_distributions[0], zc, n)
    z = test._lattice_law()[0]
    m0 = test.output_distributions[0]
    a = test._law.a
    mean = n * float(np.dot(a, z))
    length = n * int(z.max()) + 1
    tt = np.arange(length)
    renorm = n * (abs(math.fsum(m0.tolist()) - 1.0) + 4 * U)
    for counts in ([12, 0, 0], [0, 12, 0], [0, 0, 12], [4, 4, 4], [2, 3, 7]):
        res = test.decide_counts(np.array(counts))
        t = int(np.dot(counts, zc))
        expected = float(sum((v for u, v in law0.items() if u >= t), Fraction(0)))
        # the upper tail at t (law tilted at t), or one minus the lower tail below t (tilted at t - 1):
        # the absolute error of that tail, then 1 - (.) rounds once
        q = t if t >= mean else t - 1
        mask = tt >= t if t >= mean else tt <= t - 1
        # a law tilted elsewhere serves the query only where its tilted log-pmf is within
        # _TAIL_WINDOW_LOG = 4 of its value there (the library's documented window): e^4 times the error
        tilted = math.exp(4.0) * tilted_tail_err(a, z, n, (float(q),), mask)
        err = tilted + tail_rounding(1.0 if t < mean else expected, length)
        err += (renorm + 2 * U) * max(expected, 1.0 if t < mean else 0.0)
        assert within("lattice p-value vs enumeration", res.p_value, expected, err)
        # fsum (correctly rounded) against np.dot of 3 terms (2u of the absolute terms)
        terms = np.abs(np.array(counts) * test.per_report_llr)
        ref = float(np.dot(counts, test.per_report_llr))
        assert within("LLR: fsum vs dot", res.llr, ref, 3 * U * float(terms.sum()))
        # |lattice LLR - LLR| <= n delta / 2 exactly; the statistic n lambda_min + delta sum c z and the
        # llr each round (4 and 3 roundings of magnitudes <= n max|lambda|)
        lam = float(np.max(np.abs(test.per_report_llr)))
        assert abs(res.statistic - res.llr) <= n * test.design(n).lattice_step / 2 + 8 * U * n * lam


def test_binomial_pvalue_and_decision():
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


def test_randomized_boundary_coin_is_used():
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


def test_saddlepoint_agrees_with_exact_lattice():
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


# ---------------------------------------------------------------------------------------------
# simulated error rates (privatize -> decide)
# ---------------------------------------------------------------------------------------------
def simulated_rejections(test, mech, p, n, reps, rng):
    k = mech.num_inputs
    x = rng.choice(k, size=n * reps, p=p)
    y = mech.privatize(x, rng=rng).reshape(reps, n)
    s = mech.num_outputs
    counts = np.zeros((reps, s), dtype=np.int64)
    np.add.at(counts, (np.repeat(np.arange(reps), n), y.ravel()), 1)
    return sum(test.decide_counts(c, rng=rng).decision for c in counts)


@pytest.mark.parametrize("case", ["binomial", "lattice", "lattice-randomized", "saddlepoint"])
def test_empirical_errors_match_design(case):
    p0, p1 = hypotheses(6, 21)
    rng = np.random.default_rng(sum(map(ord, case)))
    reps = 3000 if case != "saddlepoint" else 2000
    if case == "binomial":
        mech, n, kw = ldpopt.binary_mechanism(p0, p1, 1.0), 40, {}
    elif case == "lattice":
        mech, n, kw = ldpopt.randomized_response(6, 1.5), 30, {}
    elif case == "lattice-randomized":
        mech, n, kw = ldpopt.randomized_response(6, 1.5), 30, {"randomized": True}
    else:
        mech, n, kw = ldpopt.randomized_response(6, 1.5), 150, {"exact_max_n": 20}
    test = LikelihoodRatioTest(mech, p0, p1, 0.05, **kw)
    d = test.design(n)
    expected = {
        "binomial": "exact-binomial",
        "lattice": "exact-lattice",
        "lattice-randomized": "exact-lattice",
        "saddlepoint": "saddlepoint",
    }[case]
    assert d.method == expected
    r0 = simulated_rejections(test, mech, p0, n, reps, rng)
    r1 = simulated_rejections(test, mech, p1, n, reps, rng)
    assert binomtest(r0, reps, d.size).pvalue > CI_ALPHA
    assert binomtest(r1, reps, d.power).pvalue > CI_ALPHA
    # exact designs choose the threshold on their own computed tails: the binomial size is the very
    # binom.sf value tested <= alpha; a lattice size exp(up) with up <= log(alpha) (exp and log: 2 R_FN
    # relative), a randomised one alpha within 4u
    assert d.size <= 0.05 * (1 + (2 * R_FN + 4) * U) or case == "saddlepoint"


# ---------------------------------------------------------------------------------------------
# SPRT
# ---------------------------------------------------------------------------------------------
def test_sprt_stops_and_errs_at_designed_rates():
    p0, p1 = hypotheses(6, 4)
    mech = ldpopt.optimal_mechanism(p0, p1, 1.0, method="dp").mechanism
    alpha, beta = 0.05, 0.1
    sprt = SequentialTest(mech, p0, p1, alpha, beta)
    e0, e1 = sprt.expected_sample_size
    rng = np.random.default_rng(99)
    reps, horizon = 2000, int(20 * max(e0, e1))
    outcomes = {}
    for h, p in ((0, p0), (1, p1)):
        x = rng.choice(6, size=(reps, horizon), p=p)
        y = mech.privatize(x.ravel(), rng=rng).reshape(reps, horizon)
        res = [sprt.run(row) for row in y]
        assert all(r.stopped and not r.truncated for r in res)
        outcomes[h] = (np.array([r.decision for r in res]), np.array([r.n for r in res]))
    wrong0 = int(np.sum(outcomes[0][0] == 1))
    wrong1 = int(np.sum(outcomes[1][0] == 0))
    # Wald: alpha' <= alpha / (1 - beta), beta' <= beta / (1 - alpha), alpha' + beta' <= alpha + beta
    assert binomtest(wrong0, reps, alpha / (1 - beta), alternative="greater").pvalue > CI_ALPHA
    assert binomtest(wrong1, reps, beta / (1 - alpha), alternative="greater").pvalue > CI_ALPHA
    assert wrong0 / reps + wrong1 / reps <= alpha + beta + 4 * math.sqrt((alpha + beta) / reps)
    # errors are not far below the design either (overshoot only shaves a little off)
    assert wrong0 / reps > 0.3 * alpha and wrong1 / reps > 0.3 * beta
    # sample sizes: Wald's approximation ignores overshoot, so the truth is a bit larger
    for h, e in ((0, e0), (1, e1)):
        mean_n = outcomes[h][1].mean()
        assert 0.9 * e <= mean_n <= 2.0 * e


def test_sprt_streaming_api():
    p0, p1 = hypotheses(5, 6)
    mech = ldpopt.randomized_response(5, 1.0)
    sprt = SequentialTest(mech, p0, p1, 0.05, 0.05)
    rng = np.random.default_rng(1)
    y = mech.privatize(rng.choice(5, size=5000, p=p1), rng=rng)
    whole = sprt.run(y)
    sprt.reset()
    for chunk in np.array_split(y, 50):
        last = sprt.update(chunk)
        if last.stopped:
            break
    assert last.decision == whole.decision and last.n == whole.n
    test_llr = LikelihoodRatioTest(mech, p0, p1).per_report_llr
    # the running sums of the same n LLRs in chunks against at once, and against np.sum: each within
    # (n + 1) u sum|lambda_i| of the exact sum (any order)
    mag = float(np.sum(np.abs(test_llr[y[: whole.n]])))
    assert within("SPRT: chunked vs whole", last.llr, whole.llr, 2 * (whole.n + 1) * U * mag)
    assert whole.unused == y.size - whole.n
    ref = float(np.sum(test_llr[y[: whole.n]]))
    assert within("SPRT: llr vs numpy sum", whole.llr, ref, 2 * (whole.n + 1) * U * mag)
    path = np.cumsum(test_llr[y[: whole.n]])
    assert np.all((path[:-1] > whole.lower) & (path[:-1] < whole.upper))
    after = sprt.update(y[:10])
    assert after.decision == whole.decision and after.unused == 10
    trunc = SequentialTest(mech, p0, p1, 1e-6, 1e-6, max_n=5).run(y)
    assert trunc.truncated and trunc.n == 5 and trunc.decision == int(trunc.llr > 0)


# ---------------------------------------------------------------------------------------------
# sample sizes
# ---------------------------------------------------------------------------------------------
def test_sample_size_binomial_matches_brute_force():
    p0, p1 = hypotheses(7, 12)
    mech = ldpopt.binary_mechanism(p0, p1, 0.7)
    res = sample_size(mech, p0, p1, 0.05, 0.1)
    assert res.method == "exact-binomial" and res.exact
    m0 = mech.matrix.T @ p0
    m1 = mech.matrix.T @ p1
    hi = int(np.argmax(np.log(m1) - np.log(m0)))

    def meets(n):  # independent: non-randomised NP test from scipy's binomial law
        ts = np.arange(n + 1)
        ok = binom.sf(ts, n, m0[hi]) <= 0.05
        t = int(ts[ok][0])
        return binom.cdf(t, n, m1[hi]) <= 0.1

    brute = next(n for n in range(1, 5000) if meets(n))
    assert res.n == brute
    assert res.size <= 0.05 and res.type_ii <= 0.1


@pytest.mark.parametrize("randomized", [False, True])
def test_sample_size_lattice_is_minimal(randomized):
    p0, p1 = hypotheses(5, 13)
    mech = ldpopt.randomized_response(5, 2.0)
    res = sample_size(mech, p0, p1, 0.05, 0.05, randomized=randomized)
    assert res.method == "exact-lattice" and res.exact
    test = LikelihoodRatioTest(mech, p0, p1, 0.05, randomized=randomized)
    assert test.design(res.n).type_ii <= 0.05
    for m in range(max(1, res.n - 25), res.n):
        assert test.design(m).type_ii > 0.05
    assert res.chernoff_n >= res.n  # the Chernoff bound is a guaranteed (conservative) n
    assert res.stein_n > 0


def test_sample_size_methods_and_fallback():
    p0, p1 = hypotheses(8, 14)
    mech = ldpopt.randomized_response(8, 1.0)
    auto = sample_size(mech, p0, p1, 0.05, 0.05, exact_max_n=30)
    assert auto.method == "saddlepoint" and not auto.exact and "exact_max_n" in auto.message
    exact = sample_size(mech, p0, p1, 0.05, 0.05)
    assert exact.exact
    assert abs(auto.n - exact.n) <= 0.05 * exact.n
    ch = sample_size(mech, p0, p1, 0.05, 0.05, method="chernoff")
    assert ch.method == "chernoff" and ch.n >= exact.n and ch.size <= 0.05 and ch.type_ii <= 0.05
    st = sample_size(mech, p0, p1, 0.05, 0.05, method="stein")
    assert st.method == "stein" and st.n == exact.stein_n
    with pytest.raises(ValueError, match="exact_max_n"):
        sample_size(mech, p0, p1, 0.05, 0.05, method="exact", exact_max_n=30)


def test_sample_size_optimal_beats_rr():
    p0, p1 = hypotheses(10, 15)
    opt = ldpopt.optimal_mechanism(p0, p1, 1.0, method="dp").mechanism
    rr = ldpopt.randomized_response(10, 1.0)
    assert sample_size(rr, p0, p1).n > sample_size(opt, p0, p1).n


def test_uninformative_and_validation():
    p = np.array([0.2, 0.3, 0.5])
    mech = ldpopt.randomized_response(3, 1.0)
    with pytest.raises(ValueError, match="equal"):
        sample_size(mech, p, p)
    test = LikelihoodRatioTest(mech, p, p, 0.05)
    d = test.design(10)
    assert d.method == "uninformative" and d.size == 0.0
    assert LikelihoodRatioTest(mech, p, p, 0.05, randomized=True).design(10).size == 0.05
    with pytest.raises(ValueError, match="alpha"):
        LikelihoodRatioTest(mech, p, p[::-1], 1.5)
    with pytest.raises(ValueError, match="alpha \\+ beta"):
        sample_size(mech, p, p[::-1], 0.6, 0.5)
    with pytest.raises(ValueError, match="empty"):
        LikelihoodRatioTest(mech, p, p[::-1]).decide([])
    with pytest.raises(ValueError, match="counts"):
        LikelihoodRatioTest(mech, p, p[::-1]).decide_counts([1, 2])
    with pytest.raises(ValueError, match="output index 3"):
        LikelihoodRatioTest(mech, p, p[::-1]).decide([0, 3])
    with pytest.raises(ValueError, match="method"):
        sample_size(mech, p, p[::-1], method="magic")
    inf_mech = ldpopt.spr_mechanism([[0], [1, 2]], 3, math.inf)
    with pytest.raises(ValueError, match="probability"):
        LikelihoodRatioTest(inf_mech, [1.0, 0.0, 0.0], [0.0, 0.5, 0.5])


# ---------------------------------------------------------------------------------------------
# Bayes decision and labels
# ---------------------------------------------------------------------------------------------
def test_bayes_decision_matches_direct_posterior():
    p0, p1 = hypotheses(4, 17)
    mech = ldpopt.randomized_response(4, 1.0)
    test = LikelihoodRatioTest(mech, p0, p1)
    m0, m1 = test.output_distributions
    reports = np.array([0, 1, 1, 3, 2, 2, 2])
    for prior1, cfa, cm in ((0.5, 1, 1), (0.1, 1, 1), (0.9, 5, 1), (0.3, 1, 4)):
        res = test.bayes_decide(reports, prior1=prior1, cost_false_alarm=cfa, cost_miss=cm)
        like0 = (1 - prior1) * np.prod(m0[reports])
        like1 = prior1 * np.prod(m1[reports])
        # sigma(llr + log pi1 - log pi0) against the product form: the llr (fsum of 7 logs: R_FN u |.|
        # each), the prior's logs, expit (R_FN); the products (8 roundings each) and the quotient;
        # the posterior's sensitivity to its logit is post (1 - post) <= 1/4... relative 1 - post <= 1
        ref = like1 / (like0 + like1)
        lam = np.abs(np.log(m1[reports]) - np.log(m0[reports]))
        logit_err = U * (R_FN * float(np.sum(np.abs(np.log(m1[reports])) + np.abs(np.log(m0[reports])))) + 8)
        logit_err += U * float(lam.sum()) + R_FN * U * (abs(math.log(prior1)) + abs(math.log1p(-prior1)))
        bound = ref * ((1 - ref) * logit_err + (R_FN + 20) * U)
        assert within("Bayes posterior vs product form", res.posterior1, ref, bound)
        assert res.decision == int(cm * like1 > cfa * like0)
    with pytest.raises(ValueError, match="prior1"):
        test.bayes_decide(reports, prior1=0.0)


def test_labelled_hypotheses_and_reports():
    labels = ["x", "y", "z", "w"]
    p0, p1 = hypotheses(4, 18)
    d0 = dict(zip(labels, p0, strict=False))
    d1 = {lab: p1[i] for i, lab in reversed(list(enumerate(labels)))}
    res = ldpopt.optimal_mechanism(d0, d1, 1.0, method="dp")
    mech = res.mechanism
    assert mech.labels == tuple(labels)
    a = LikelihoodRatioTest(mech, d0, d1).design(50)
    b = LikelihoodRatioTest(mech, p0, p1).design(50)
    assert a.threshold == b.threshold and a.type_ii == b.type_ii
    named = ldpopt.Mechanism(
        ldpopt.randomized_response(4, 1.0).matrix, 1.0, labels=labels, output_labels=("A", "B", "C", "D")
    )
    t = LikelihoodRatioTest(named, d0, d1)
    assert t.decide(["A", "B", "B"]).n == 3
    with pytest.raises(ValueError, match="unknown output 'E'"):
        t.decide(["A", "E"])
