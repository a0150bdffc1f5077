"""Sample sizes: exact n against brute force and minimality, approximations and fallbacks."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom

import ldpopt
from ldpopt.deploy.sizing import sample_size
from ldpopt.deploy.testing import LikelihoodRatioTest

#: the numerics tests: CI also runs them on numpy's AVX2 and baseline loops (.ci/npy_disable.py)
pytestmark = pytest.mark.numerics


# ---------------------------------------------------------------------------------------------
# sample sizes
# ---------------------------------------------------------------------------------------------
def test_sample_size_binomial_matches_brute_force(hypotheses):
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
def test_sample_size_lattice_is_minimal(randomized, hypotheses):
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


def test_sample_size_methods_and_fallback(hypotheses):
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


def test_sample_size_optimal_beats_rr(hypotheses):
    p0, p1 = hypotheses(10, 15)
    opt = ldpopt.optimal_mechanism(p0, p1, 1.0, method="dp").mechanism
    rr = ldpopt.randomized_response(10, 1.0)
    assert sample_size(rr, p0, p1).n > sample_size(opt, p0, p1).n
