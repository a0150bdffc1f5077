"""The tight shuffle bound against the exact worst case, found by enumerating every dataset.

The oracle builds, for every multiset of the other users' inputs, the exact law of the shuffled
histogram (users convolved one at a time on the full count grid) under both inputs of the
differing user, and takes the largest hockey-stick divergence: no clones, no blanket, no CDFs.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import ldpopt
from ldpopt.deploy.pld import PLD_BLOCKS, clone_pld, compose, pld_delta
from ldpopt.deploy.shuffle import EPS_TOL, PLD_GRID, TIGHT_REL_TOL, central_epsilon, clone_delta
from reference import shuffled_exact_eps as _exact_eps
from reference import shuffled_histogram_pairs as _exact_pairs

U = 2.0**-53


# the oracle's sums: (n+1)^(k-1) terms, each from <= n roundings of non-negative terms; at most
# n^3 * 8u in delta, far below the bisection steps
_EPS_SLACK = 1e-8


@pytest.mark.numerics
@pytest.mark.parametrize(
    ("k", "eps0", "n", "delta"), [(2, 1.0, 40, 1e-3), (2, 2.0, 40, 1e-3), (3, 1.0, 16, 1e-3)]
)
def test_tight_brackets_the_exact_worst_case(k, eps0, n, delta):
    mech = ldpopt.randomized_response(k, eps0)
    ps, qs = _exact_pairs(mech.matrix, n)
    exact = _exact_eps(ps, qs, delta, eps0)
    res = central_epsilon(mech, n, delta, "tight")
    assert res.lower - _EPS_SLACK <= exact <= res.upper + _EPS_SLACK
    assert res.value == res.upper and res.gap == res.upper - res.lower >= 0


@pytest.mark.parametrize(("k", "eps0"), [(2, 1.0), (2, 2.0), (3, 1.0)])
def test_rr_at_n40_is_within_one_percent_of_exact(k, eps0):
    # "within 1%": |bound / exact - 1| <= 0.01 for the central eps at fixed delta
    mech = ldpopt.randomized_response(k, eps0)
    ps, qs = _exact_pairs(mech.matrix, 40)
    exact = _exact_eps(ps, qs, 1e-3, eps0)
    res = central_epsilon(mech, 40, 1e-3, "tight")
    assert res.lower - _EPS_SLACK <= exact <= res.upper + _EPS_SLACK
    assert res.upper <= 1.01 * exact and res.lower >= 0.99 * exact


def test_a_two_output_channel_uses_its_extreme_rows():
    # three inputs, two outputs: the worst datasets use only the rows with the extreme P(output 0)
    mat = np.array([[0.7, 0.3], [0.45, 0.55], [0.25, 0.75]])
    n, delta = 30, 1e-3
    ps, qs = _exact_pairs(mat, n)  # every dataset of the three rows
    eps0 = float(np.max(np.log(mat.max(axis=0) / mat.min(axis=0))))
    exact = _exact_eps(ps, qs, delta, eps0)
    res = central_epsilon(mat, n, delta, "tight")
    assert res.lower - _EPS_SLACK <= exact <= res.upper + _EPS_SLACK
    assert res.upper <= 1.001 * exact


@pytest.mark.numerics
def test_a_general_channel_is_bracketed_too():
    # not randomized response: three inputs, three outputs, no two equal rows, eps0 = log 3
    mat = np.array([[0.6, 0.2, 0.2], [0.2, 0.5, 0.3], [0.25, 0.25, 0.5]])
    n, delta = 10, 1e-2
    ps, qs = _exact_pairs(mat, n)
    eps0 = float(np.max(np.log(mat.max(axis=0) / mat.min(axis=0))))
    exact = _exact_eps(ps, qs, delta, eps0)
    res = central_epsilon(mat, n, delta, "tight")
    assert res.lower - _EPS_SLACK <= exact <= res.upper + _EPS_SLACK
    assert res.upper <= central_epsilon(eps0, n, delta).value + TIGHT_REL_TOL * eps0


def test_three_ary_rr_gap_is_below_one_percent_at_large_n():
    # upper and lower within 1% of each other: both within 1% of the true worst case
    res = central_epsilon(ldpopt.randomized_response(3, 4.0), 100_000, 1e-6, "tight")
    assert res.gap <= 0.01 * res.upper


@pytest.mark.parametrize("eps0", [1.0, 4.0, 8.0])
@pytest.mark.parametrize("n", [1_000, 100_000])
def test_never_looser_than_the_older_bounds(eps0, n):
    delta = 1e-6
    p0, p1 = np.array([0.5, 0.2, 0.2, 0.1]), np.array([0.1, 0.2, 0.3, 0.4])
    mechs = [ldpopt.randomized_response(2, eps0), ldpopt.randomized_response(5, eps0)]
    mechs.append(ldpopt.optimal_mechanism(p0, p1, eps0).mechanism)
    num = central_epsilon(eps0, n, delta).value
    for mech in mechs:
        res = central_epsilon(mech, n, delta, "tight")
        # the tight bisection stops at a bracket of TIGHT_REL_TOL * eps0 instead of EPS_TOL
        slack = TIGHT_REL_TOL * eps0 + EPS_TOL
        assert res.lower <= res.upper <= num + slack
        rr = central_epsilon(mech, n, delta, "rr")
        assert res.upper <= rr.value + slack


@pytest.mark.numerics
@pytest.mark.parametrize(("eps", "eps0", "n", "p"), [(0.05, 4.0, 10**6, 0.036), (0.002, 1.0, 10**7, 0.54)])
def test_blocked_clone_sum_is_an_upper_bound_close_to_the_full_sum(eps, eps0, n, p):
    full = clone_delta(eps, eps0, n, p_clone=p, tail=1e-15)
    blocked = clone_delta(eps, eps0, n, p_clone=p, tail=1e-15, max_terms=512)
    assert full <= blocked <= full * 1.01 + 1e-12


def test_inputs():
    with pytest.raises(ValueError, match="tight"):
        central_epsilon(1.0, 100, 1e-6, "tight")
    with pytest.raises(ValueError, match="optimal_for_central"):
        ldpopt.local_epsilon_for(0.5, 100, 1e-6, "tight")
    with pytest.raises(ValueError, match="outputs"):
        central_epsilon(ldpopt.randomized_response(3, 1.0), 100, 1e-6, "tight", outputs=3)
    mech = ldpopt.randomized_response(3, 1.0)
    # a mechanism given to the older methods: its eps (and, for "rr", its number of outputs)
    assert central_epsilon(mech, 1000, 1e-6).value == central_epsilon(1.0, 1000, 1e-6).value
    assert central_epsilon(mech, 1000, 1e-6, "rr").outputs == 3
    same = central_epsilon(np.full((3, 2), 0.5), 100, 1e-6, "tight")
    assert same.value == same.lower == 0.0  # identical rows reveal nothing
    a = central_epsilon(mech.matrix, np.int64(1000), np.float64(1e-6), "tight")
    b = central_epsilon(mech, 1000, 1e-6, "tight")
    assert a.value == b.value and a.lower == b.lower


# ---------------------------------------------------------------------------------------------
# composition
# ---------------------------------------------------------------------------------------------
@pytest.mark.numerics
@pytest.mark.parametrize(("eps0", "n", "p"), [(2.0, 2_000, 0.24), (1.0, 50_000, 0.54)])
def test_one_round_pld_brackets_the_clone_sum(eps0, n, p):
    # the PLD rounds each loss up by at most h: delta(eps) <= PLD delta(eps) <= delta(eps - h) + its
    # documented additions (+inf atom: the tails; err: the CDF/FFT allowances)
    h = 1e-3
    one = clone_pld(eps0, n, p, 1.0, h, 1e-14)
    for eps in (0.02, 0.1, 0.3):
        got = pld_delta(one, eps)
        assert clone_delta(eps, eps0, n, p_clone=p, tail=1e-14) <= got
        upper = clone_delta(eps - h, eps0, n, p_clone=p, tail=1e-14, max_terms=PLD_BLOCKS)
        assert got <= upper + one.inf + one.err + 1e-12


def test_two_rounds_are_above_the_exact_two_round_worst_case():
    eps0, n, delta = 1.0, 20, 1e-3
    mech = ldpopt.randomized_response(2, eps0)
    ps, qs = _exact_pairs(mech.matrix, n)
    # the same users report twice with fresh randomness: product laws of each dataset
    p2 = np.einsum("di,dj->dij", ps, ps)
    q2 = np.einsum("di,dj->dij", qs, qs)
    exact = _exact_eps(p2, q2, delta, 2 * eps0)
    res = central_epsilon(mech, n, delta, "tight", rounds=2)
    one = central_epsilon(mech, n, delta, "tight")
    assert res.lower <= exact <= res.value and res.rounds == 2
    assert res.lower > one.lower  # the composed lower bound (explicit datasets' PLD) is used
    assert one.value < res.value <= 2 * one.value + 2 * PLD_GRID  # never worse than basic composition
    with pytest.raises(ValueError, match="rounds"):
        central_epsilon(1.0, n, delta, rounds=2)


def test_composition_uses_the_mechanisms_own_pair():
    # for binary RR the pair's clone probability 2/(e^eps0 + 1) beats the generic e^-eps0: the
    # composed bound must be below the generic pair's composed PLD
    eps0, n, delta, rounds = 4.0, 100_000, 1e-6, 2
    generic = compose(clone_pld(eps0, n, math.exp(-eps0), 1.0, PLD_GRID, 1e-12), rounds, 64.0)
    res = central_epsilon(ldpopt.randomized_response(2, eps0), n, delta, "tight", rounds=rounds)
    assert pld_delta(generic, res.value) > delta
    assert res.lower <= res.value
