"""Inverse design: every answer is checked by forward calls on both sides (the target met at eps,
missed at eps_below), the forward quantities by independent computations (a scipy binomial
Neyman-Pearson test, an mpmath Fisher information, ldpopt.frequencies' standard errors)."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy import stats

import ldpopt
from ldpopt.deploy.target import (
    minimum_epsilon,
    minimum_epsilon_for_frequency_width,
    minimum_epsilon_for_width,
    mixture_half_width,
)

P0 = [0.55, 0.25, 0.12, 0.08]
P1 = [0.1, 0.2, 0.3, 0.4]


def type_ii(p0, p1, eps, n, alpha, divergence="chernoff"):
    mech = ldpopt.optimal_mechanism(p0, p1, eps, divergence).mechanism
    return ldpopt.LikelihoodRatioTest(mech, p0, p1, alpha, randomized=True).design(n).type_ii


def np_binary_type_ii(m0, m1, n, alpha):
    """Reference: the randomised Neyman-Pearson test on a binary channel, from scipy's binomial.
    The statistic is the count of output 1 (the likelihood ratio is monotone in it)."""
    if m1 < m0:
        m0, m1 = 1 - m0, 1 - m1
    t = n
    while t > 0 and stats.binom.sf(t - 1, n, m0) <= alpha:  # P0(count >= t) <= alpha
        t -= 1
    # reject when count >= t+1; at count == t with probability gamma
    tail = stats.binom.sf(t, n, m0)
    gamma = (alpha - tail) / stats.binom.pmf(t, n, m0)
    return stats.binom.cdf(t - 1, n, m1) + (1 - gamma) * stats.binom.pmf(t, n, m1)


@pytest.mark.parametrize("divergence", ["chernoff", "kl"])
def test_minimum_epsilon_both_sides(divergence):
    r = minimum_epsilon(P0, P1, n=40, alpha=0.05, beta=0.1, divergence=divergence)
    assert 0 < r.eps_below < r.eps and r.eps - r.eps_below <= r.xtol * r.eps
    assert (
        type_ii(P0, P1, r.eps, 40, 0.05, divergence)
        <= 0.1
        < type_ii(P0, P1, r.eps_below, 40, 0.05, divergence)
    )
    assert r.value <= 0.1 and abs(r.size - 0.05) < 1e-9 and r.kind == "test"
    # monotone on a grid across the answer (the bisection's assumption, checked here)
    grid = np.linspace(r.eps / 2, 2 * r.eps, 9)
    errs = [type_ii(P0, P1, e, 40, 0.05, divergence) for e in grid]
    assert all(a >= b - 1e-12 for a, b in zip(errs, errs[1:], strict=False))


def test_minimum_epsilon_lattice_both_sides():
    # a symmetric pair needing a large eps: the optimal mechanism has 3+ outputs (lattice test)
    p0 = [0.4, 0.25, 0.15, 0.1, 0.06, 0.04]
    p1 = p0[::-1]
    r = minimum_epsilon(p0, p1, n=10, alpha=0.01, beta=0.01)
    assert r.method == "exact-lattice" and r.mechanism.num_outputs >= 3
    assert type_ii(p0, p1, r.eps, 10, 0.01) <= 0.01 < type_ii(p0, p1, r.eps_below, 10, 0.01)


def test_minimum_epsilon_binary_against_scipy():
    # two symbols: the optimal mechanism is binary, its test a binomial one (exact-binomial)
    p0, p1 = [0.8, 0.2], [0.3, 0.7]
    r = minimum_epsilon(p0, p1, n=30, alpha=0.05, beta=0.05)
    for eps, ok in ((r.eps, True), (r.eps_below, False)):
        q = ldpopt.optimal_mechanism(p0, p1, eps, "chernoff").mechanism.matrix
        m0, m1 = (np.array(p0) @ q)[0], (np.array(p1) @ q)[0]
        ref = np_binary_type_ii(m0, m1, 30, 0.05)
        assert (ref <= 0.05) == ok
    assert r.method == "exact-binomial"


def fisher_mpmath(mech, p0, p1, pi):
    """I(pi) = -E[d^2/dpi^2 log M_pi(Y)] by mpmath's numerical differentiation."""
    mpmath.mp.dps = 40
    m0, m1 = (np.array(p0) @ mech.matrix), (np.array(p1) @ mech.matrix)
    mpi = [(1 - pi) * a + pi * b for a, b in zip(m0, m1, strict=True)]

    def expected_loglik(t):
        return sum(
            mpmath.mpf(w) * mpmath.log((1 - t) * mpmath.mpf(a) + t * mpmath.mpf(b))
            for w, a, b in zip(mpi, m0, m1, strict=True)
            if w > 0
        )

    return -float(mpmath.diff(expected_loglik, mpmath.mpf(pi), 2))


def test_minimum_epsilon_for_width_both_sides():
    n, w, pi = 2000, 0.05, 0.3
    r = minimum_epsilon_for_width(P0, P1, n=n, width=w, pi=pi)
    z2 = stats.chi2.ppf(0.95, 1)
    for eps, ok in ((r.eps, True), (r.eps_below, False)):
        mech = ldpopt.optimal_mechanism(P0, P1, eps, "chernoff").mechanism
        half = math.sqrt(z2 / (n * fisher_mpmath(mech, P0, P1, pi)))
        assert (half <= w) == ok
    assert abs(r.value - math.sqrt(z2 / (n * fisher_mpmath(r.mechanism, P0, P1, pi)))) < 1e-9
    # monotone on a grid across the answer (the bisection's assumption, checked here)
    widths = [
        mixture_half_width(ldpopt.optimal_mechanism(P0, P1, e, "chernoff").mechanism, P0, P1, n, pi, 0.95)
        for e in np.linspace(r.eps / 2, 2 * r.eps, 9)
    ]
    assert all(a >= b * (1 - 1e-12) for a, b in zip(widths, widths[1:], strict=False))


def test_minimum_epsilon_for_frequency_width_both_sides():
    k, n, w = 6, 10**6, 0.004
    th = np.array([0.4, 0.3, 0.1, 0.1, 0.06, 0.04])
    z = stats.norm.ppf(0.975)
    r = minimum_epsilon_for_frequency_width(k, n=n, width=w, theta=th, xtol=1e-2, interval="per-item")
    for eps, ok in ((r.eps, True), (r.eps_below, False)):
        mech = ldpopt.randomized_response(k, eps)
        # ldpopt.frequencies' own plug-in standard errors on the expected counts (rounded: 1e-6)
        counts = np.round(n * (th @ mech.matrix)).astype(int)
        se = ldpopt.frequencies(mech, counts=counts).standard_error
        assert (z * se.max() <= w) == ok
    worst = minimum_epsilon_for_frequency_width(k, n=n, width=w, interval="per-item")
    assert worst.eps >= r.eps  # the worst case is no easier than an anticipated distribution
    assert worst.value <= w and worst.kind == "frequency-width"


def test_unreachable_and_bad_input():
    with pytest.raises(ValueError, match="not reached even at eps = 64"):
        minimum_epsilon(P0, P1, n=2, alpha=0.01, beta=0.01)
    with pytest.raises(ValueError, match="alpha \\+ beta must be < 1"):
        minimum_epsilon(P0, P1, n=10, alpha=0.6, beta=0.5)
    with pytest.raises(ValueError, match="divergence must be 'chernoff' or 'kl'"):
        minimum_epsilon(P0, P1, n=10, divergence="tv")
    with pytest.raises(ValueError, match="n must be"):
        minimum_epsilon(P0, P1, n=0)
    with pytest.raises(ValueError, match="width must be a positive number"):
        minimum_epsilon_for_width(P0, P1, n=10, width=-1)
    with pytest.raises(ValueError, match="pi must be a number in \\[0, 1\\]"):
        minimum_epsilon_for_width(P0, P1, n=10, width=0.1, pi=2)
    with pytest.raises(ValueError, match="xtol must be"):
        minimum_epsilon_for_frequency_width(3, n=10, width=0.1, xtol=0)
    with pytest.raises(ValueError, match="theta must have k = 3"):
        minimum_epsilon_for_frequency_width(3, n=10, width=0.1, theta=[0.5, 0.5])
