"""The separable inner solver of block randomized-response channels (k-ary RR above all).

Every value is re-checked by methods that share no code with the solver: the independent SLSQP
of test_design (the sets written directly as constraints, the divergence from its textbook
formula), membership from the sets' definitions, and Monte Carlo inside the sets.  The solver
is forced to close on its own: the generic SLSQP fallback is disabled in these tests.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_design import EVAL_ATOL, INDEP_ATOL, _div_fn, independent_worst_case

import ldpopt
from ldpopt import uncertainty as unc
from ldpopt.robust import _inner, _separable
from reference import draw_in_uncertainty_set as draw_in
from reference import in_uncertainty_set as in_set


@pytest.fixture
def no_slsqp(monkeypatch):
    """The generic path's SLSQP must not be needed."""

    def fail(*args, **kwargs):
        raise AssertionError("the generic SLSQP path was used")

    monkeypatch.setattr(_inner, "_slsqp", fail)


def _pair(k, seed):
    rng = np.random.default_rng(seed)
    return rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))


def test_block_rr_detection():
    p0, p1 = _pair(7, 1)
    rr = _separable.block_rr(np.asarray(ldpopt.randomized_response(7, 2.0).matrix))
    assert rr is not None and rr.l == 7 and np.array_equal(rr.block, np.arange(7))
    b = _separable.block_rr(np.asarray(ldpopt.binary_mechanism(p0, p1, 1.0).matrix))
    assert b is not None and b.l == 2 and np.array_equal(b.block, np.where(p0 >= p1, 0, 1))
    spr = ldpopt.optimal_mechanism(p0, p1, 3.0, "kl")
    assert _separable.block_rr(np.asarray(spr.mechanism.matrix)) is not None
    # not block RR: a random channel, and a mixture of two RR channels with disjoint outputs
    rng = np.random.default_rng(0)
    m = rng.uniform(0.5, 1.0, (4, 3))
    assert _separable.block_rr(m / m.sum(axis=1, keepdims=True)) is None
    r = np.asarray(ldpopt.randomized_response(4, 1.0).matrix)
    assert _separable.block_rr(np.hstack([0.5 * r, 0.5 * r[:, ::-1]])) is None
    # RR on 3 block labels (4 inputs); the same with a label no input favours (an empty block)
    lo, hi = 1 / (math.e + 2), math.e / (math.e + 2)
    rows = [[hi, lo, lo], [lo, hi, lo], [lo, lo, hi], [hi, lo, lo]]
    blocks = _separable.block_rr(np.array(rows))
    assert blocks is not None and np.array_equal(blocks.block, [0, 1, 2, 0])
    assert _separable.block_rr(np.array([rows[0], rows[1], rows[3]])) is None


def test_lift_keeps_block_masses_and_the_sets():
    c = np.array([0.2, 0.0, 0.3, 0.5, 0.0])
    rr = _separable.BlockRR(np.array([0, 0, 1, 1, 2]), 3, 0.5, 0.1)
    q = np.array([0.3, 0.6, 0.1])
    p = rr.lift(q, c)
    assert np.allclose(rr.aggregate(p), q, rtol=0, atol=1e-15)
    assert np.allclose(p[2:4] / q[1], c[2:4] / 0.8, rtol=0, atol=1e-15)  # proportional to c
    assert p[1] == 0.0 and p[4] == q[2]  # centre-free symbol in a charged block; uncharged block


SMALL = [
    ("kl", "tv", 5, 1.0, 0.03, 0.05),
    ("kl", "contamination", 6, 2.0, 0.05, 0.1),
    ("kl", "kl", 4, 2.0, 0.01, 0.02),
    ("hellinger", "tv", 3, 3.0, 0.05, 0.02),
    ("chi2", "kl", 5, 0.5, 0.02, 0.02),
    ("renyi:2", "contamination", 4, 1.0, 0.1, 0.05),
]


def _sets(model, r0, r1):
    return {"tv": unc.total_variation, "contamination": unc.contamination, "kl": unc.kl_ball}[model](r0, r1)


@pytest.mark.numerics
@pytest.mark.parametrize(("name", "model", "k", "eps", "r0", "r1"), SMALL)
def test_small_k_against_the_independent_solver(no_slsqp, name, model, k, eps, r0, r1):
    p0, p1 = _pair(k, k)
    mech = ldpopt.randomized_response(k, eps)
    w = ldpopt.worst_case(mech, p0, p1, _sets(model, r0, r1), name)
    assert w.value <= w.upper_bound and w.certified
    assert in_set(model, p0, r0, w.worst_pair[0]) and in_set(model, p1, r1, w.worst_pair[1])
    fn = _div_fn(name)
    raw_upper = fn(w.worst_pair[0] @ mech.matrix, w.worst_pair[1] @ mech.matrix)
    assert abs(raw_upper - w.upper_bound) <= EVAL_ATOL  # the upper bound is attained by the pair
    w_ind = independent_worst_case(np.asarray(mech.matrix), name, model, p0, p1, r0, r1)
    # INDEP_ATOL and the 5e-9 feasibility slack: test_design (same independent solver)
    assert w.value <= w_ind + 5e-9
    assert w_ind - w.value <= INDEP_ATOL


@pytest.mark.numerics
def test_spr_and_binary_channels_use_it(no_slsqp):
    p0, p1 = _pair(6, 3)
    u = unc.total_variation(0.02, 0.01)
    spr = ldpopt.optimal_mechanism(p0, p1, 4.0, "kl").mechanism
    for mech in (spr, ldpopt.binary_mechanism(p0, p1, 2.0)):
        w = ldpopt.worst_case(mech, p0, p1, u, "kl")
        assert w.certified
        assert in_set(u.model, p0, 0.02, w.worst_pair[0]) and in_set(u.model, p1, 0.01, w.worst_pair[1])
        w_ind = independent_worst_case(np.asarray(mech.matrix), "kl", u.model, p0, p1, 0.02, 0.01)
        assert w.value <= w_ind + 5e-9 and w_ind - w.value <= INDEP_ATOL


K100 = [
    ("kl", unc.total_variation(0.02, 0.02), 2.0),
    ("hellinger", unc.total_variation(0.05, 0.01), 1.0),
    ("kl", unc.contamination(0.02, 0.05), 5.0),
    ("chi2", unc.contamination(0.1, 0.1), 2.0),
    ("kl", unc.kl_ball(0.02, 0.02), 2.0),
    ("js", unc.kl_ball(0.05, 0.01), 5.0),
]


@pytest.mark.parametrize(("name", "u", "eps"), K100)
def test_k100_certified(no_slsqp, name, u, eps):
    p0, p1 = _pair(100, 0)
    mech = ldpopt.randomized_response(100, eps)
    w = ldpopt.worst_case(mech, p0, p1, u, name)
    assert 0.0 <= w.value <= w.upper_bound
    assert w.gap <= 1e-8 * w.upper_bound and w.certified
    assert in_set(u.model, p0, u.r0, w.worst_pair[0]) and in_set(u.model, p1, u.r1, w.worst_pair[1])
    # Monte Carlo inside the sets: never below the guarantee
    rng = np.random.default_rng(5)
    fn = _div_fn(name)
    worst = math.inf
    for _ in range(200):
        a, b = draw_in(rng, u.model, p0, u.r0), draw_in(rng, u.model, p1, u.r1)
        worst = min(worst, fn(a @ mech.matrix, b @ mech.matrix))
    assert worst >= w.value - EVAL_ATOL


@pytest.mark.numerics
@pytest.mark.parametrize("r", [0.03, 0.3])
def test_every_tv_candidate_is_feasible_and_brackets_the_independent_value(r):
    """All candidates of the generator (barrier, polishes, signed and exact-budget forms), not
    only the first: each lifted pair, repaired, lies in the sets, and its certificate brackets
    the independent solver's value."""
    k, eps = 6, 3.0
    p0, p1 = _pair(k, 7)
    M = np.asarray(ldpopt.randomized_response(k, eps).matrix)
    sides = unc.total_variation(r, r).sides(p0, p1)
    div = ldpopt.get_divergence("kl")
    w_ind = independent_worst_case(M, "kl", "tv", p0, p1, r, r)
    count = 0
    for pair in _separable.solve_block_rr(_separable.block_rr(M), div, sides):
        cert = _inner._certify(M, div, sides, pair)
        assert in_set("tv", p0, r, cert.pair[0]) and in_set("tv", p1, r, cert.pair[1])
        assert cert.lower <= w_ind + 5e-9 and cert.upper >= w_ind - INDEP_ATOL
        count += 1
    assert count >= 4  # the barrier solution and its three polishes at least


def test_falls_back_to_slsqp_when_the_separable_pairs_do_not_close(monkeypatch):
    p0, p1 = _pair(4, 2)
    mech = ldpopt.randomized_response(4, 2.0)
    u = unc.total_variation(0.05, 0.05)
    monkeypatch.setattr(_inner, "solve_block_rr", lambda rr, div, sides: iter([(p0, p1)]))
    w = ldpopt.worst_case(mech, p0, p1, u, "kl")
    w_ind = independent_worst_case(np.asarray(mech.matrix), "kl", "tv", p0, p1, 0.05, 0.05)
    assert w.value <= w_ind + 5e-9 and w_ind - w.value <= INDEP_ATOL


@pytest.mark.numerics
def test_empty_centre_cells_barrier_alone_closes():
    """Centres with empty cells (empirical distributions of few samples): the TV decrease of
    such a cell is a fixed variable, which must not enter the Newton step of the free ones.  The
    barrier's own pair (the generator's first, before any polish) already certifies, and
    brackets the independent solver's value."""
    k, eps, r = 12, 2.0, 0.08
    rng = np.random.default_rng(20)
    c0 = rng.multinomial(60, rng.dirichlet(np.ones(k))) / 60.0
    c1 = rng.multinomial(60, rng.dirichlet(np.ones(k))) / 60.0
    assert (c0 == 0).sum() >= 2 and (c1 == 0).sum() >= 1  # the case under test
    M = np.asarray(ldpopt.randomized_response(k, eps).matrix)
    sides = unc.total_variation(r, r).sides(c0, c1)
    div = ldpopt.get_divergence("kl")
    first = next(iter(_separable.solve_block_rr(_separable.block_rr(M), div, sides)))
    cert = _inner._certify(M, div, sides, first)
    assert in_set("tv", c0, r, cert.pair[0]) and in_set("tv", c1, r, cert.pair[1])
    assert cert.upper - cert.lower <= 1e-8 * cert.upper
    w_ind = independent_worst_case(M, "kl", "tv", c0, c1, r, r)
    assert cert.lower <= w_ind + 5e-9 and w_ind - cert.lower <= INDEP_ATOL
