"""The law of the LLR statistic and the designs built on it (exact binomial, exact lattice,
saddlepoint): thresholds, sizes, powers and p-values against exact enumeration."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import binom, binomtest

import ldpopt
from ldpopt.deploy.testing import LikelihoodRatioTest
from reference import enumerate_sum_law

CI_ALPHA = 1e-6


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
    assert d.size == pytest.approx(above0 + d.gamma * at0, rel=1e-9, abs=1e-300)
    assert d.type_ii == pytest.approx(below1 + (1 - d.gamma) * at1, rel=1e-9)
    if randomized:
        assert d.size == pytest.approx(alpha, rel=1e-9)
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
    assert d.size == pytest.approx(above, rel=1e-9, abs=1e-300)
    below1 = float(sum((pmf(q1, u) for u in range(0, t + 1)), Fraction(0)))
    assert d.type_ii == pytest.approx(below1, rel=1e-9)


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
        assert res.p_value == pytest.approx(expected, rel=1e-9)
        assert res.llr == pytest.approx(float(np.dot(counts, test.per_report_llr)), rel=1e-12, abs=1e-12)
        assert abs(res.statistic - res.llr) <= n * test.design(n).lattice_step / 2 + 1e-12


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
        assert res.p_value == pytest.approx(binom.sf(t - 1, 30, m0[hi]), rel=1e-12)
        assert res.decision == int(t > test.design(30)._stat_threshold)
        assert res.decision == int(res.llr > res.threshold + 1e-9 or (res.boundary and res.decision))


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
    assert approx.size == pytest.approx(0.05, rel=1e-6)
    assert approx.type_ii == pytest.approx(exact.type_ii, abs=3e-3)
    sd = math.sqrt(1500 * np.var(LikelihoodRatioTest(mech, p0, p1).per_report_llr))
    assert abs(approx.threshold - exact.threshold) < 0.05 * sd
