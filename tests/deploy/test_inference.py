"""Likelihood-ratio tests, SPRT and sample sizes: exact laws against enumeration, errors by simulation."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import binom, binomtest

import ldpopt
from ldpopt.deploy.sizing import sample_size
from ldpopt.deploy.testing import LikelihoodRatioTest, SequentialTest
from reference import enumerate_sum_law

CI_ALPHA = 1e-6


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
    assert d.size == pytest.approx(above0 + d.gamma * at0, rel=1e-9, abs=1e-300)
    assert d.type_ii == pytest.approx(below1 + (1 - d.gamma) * at1, rel=1e-9)
    if randomized:
        assert d.size == pytest.approx(alpha, rel=1e-9)
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
    assert d.size == pytest.approx(above, rel=1e-9, abs=1e-300)
    below1 = float(sum((pmf(q1, u) for u in range(0, t + 1)), Fraction(0)))
    assert d.type_ii == pytest.approx(below1, rel=1e-9)


def test_pvalues_match_enumeration():
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
        assert res.p_value == pytest.approx(expected, rel=1e-9)
        assert res.llr == pytest.approx(float(np.dot(counts, test.per_report_llr)), rel=1e-12, abs=1e-12)
        assert abs(res.statistic - res.llr) <= n * test.design(n).lattice_step / 2 + 1e-12


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
        assert res.p_value == pytest.approx(binom.sf(t - 1, 30, m0[hi]), rel=1e-12)
        assert res.decision == int(t > test.design(30)._stat_threshold)
        assert res.decision == int(res.llr > res.threshold + 1e-9 or (res.boundary and res.decision))


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
    assert approx.size == pytest.approx(0.05, rel=1e-6)
    assert approx.type_ii == pytest.approx(exact.type_ii, abs=3e-3)
    sd = math.sqrt(1500 * np.var(LikelihoodRatioTest(mech, p0, p1).per_report_llr))
    assert abs(approx.threshold - exact.threshold) < 0.05 * sd


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
    assert d.size <= 0.05 + 1e-12 or case == "saddlepoint"


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
    assert last.llr == pytest.approx(whole.llr, rel=1e-12)
    assert whole.unused == y.size - whole.n
    test_llr = LikelihoodRatioTest(mech, p0, p1).per_report_llr
    assert whole.llr == pytest.approx(float(np.sum(test_llr[y[: whole.n]])), rel=1e-9)
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
        assert res.posterior1 == pytest.approx(like1 / (like0 + like1), rel=1e-10)
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
