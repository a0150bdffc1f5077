"""Robust design with the piecewise-linear divergences (TV, E_gamma), checked independently.

* polytope sets: W of the returned channel by vertex enumeration of the epigraph polyhedron
  (pycddlib, the sets written from their definitions, TV by its 2^k sign inequalities);
* k = 2 (every set an interval, the KL ball included): a fine grid over both intervals;
* S at ``least_favourable`` by brute force over every set partition;
* Monte Carlo inside the sets; radius 0 against the brute-force plug-in optimum.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import ldpopt
from ldpopt import uncertainty as unc
from ldpopt.robust._piecewise import _dual_bound, _epigraph_slsqp, _kelley, solve_piecewise
from reference import brute_force_optimum, hinge_worst_case_vertices, naive_divergence
from reference import draw_in_uncertainty_set as draw_in
from reference import in_uncertainty_set as in_set

#: the library's bounds and the naive textbook sums differ by rounding only: <= 2 k <= 10 terms
#: of magnitude <= 1, each with <= 4 roundings (product, difference, max, sum): 40 u << 1e-13
EVAL_ATOL = 1e-13


def _fn(name):
    if name.startswith("egamma:"):
        g = float(name.split(":")[1])
        return lambda u, v: naive_divergence(u, v, "egamma", g)
    return lambda u, v: naive_divergence(u, v, name)


def _gamma(name):
    return float(name.split(":")[1]) if name.startswith("egamma:") else 1.0


def _into_set(model, c, r, p):
    """A point of the set next to a float vertex (clip, renormalise, mix with the centre)."""
    p = np.clip(p, 0.0, None)
    p = p / p.sum()
    if model == "tv":
        d = 0.5 * np.abs(p - c).sum()
        return p if d <= r else c + (p - c) * (r / d)
    lo = (1 - r) * c
    short = np.clip(lo - p, 0.0, None).sum()
    return p if short == 0 else (1 - short) * p + short * c  # still a distribution, >= lo up to ~u


def _vertex_worst_case(M, name, model, c0, c1, r0, r1):
    """(W by vertex enumeration at points of the sets, the largest L1 move into the sets)."""
    fn, best, moved = _fn(name), math.inf, 0.0
    for a, b in hinge_worst_case_vertices(M, _gamma(name), model, c0, c1, r0, r1):
        qa, qb = _into_set(model, c0, r0, a), _into_set(model, c1, r1, b)
        assert in_set(model, c0, r0, qa) and in_set(model, c1, r1, qb)
        moved = max(moved, np.abs(qa - a).sum(), np.abs(qb - b).sum())
        best = min(best, fn(qa @ M, qb @ M))
    return best, moved


def _pair(k, seed):
    rng = np.random.default_rng(seed)
    return rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))


CASES = [
    ("tv", "tv", 3, 1.0, 0),
    ("egamma:1.2", "contamination", 3, 3.0, 4),
    ("tv", "contamination", 4, 2.0, 2),
    ("egamma:2", "tv", 4, 3.0, 3),
]


@pytest.mark.numerics
@pytest.mark.parametrize(("name", "model", "k", "eps", "seed"), CASES)
def test_worst_case_matches_vertex_enumeration(name, model, k, eps, seed):
    p0, p1 = _pair(k, seed)
    r0, r1 = 0.05, 0.1
    u = unc.total_variation(r0, r1) if model == "tv" else unc.contamination(r0, r1)
    res = ldpopt.robust_mechanism(p0, p1, eps, u, name)
    assert res.certified and 0.01 < res.value <= res.upper_bound  # not a degenerate instance
    rr = ldpopt.worst_case(ldpopt.randomized_response(k, eps), p0, p1, u, name)
    assert rr.certified and rr.value <= res.upper_bound + EVAL_ATOL
    rr_matrix = np.asarray(ldpopt.randomized_response(k, eps).matrix)
    robust_matrix = np.asarray(res.mechanism.matrix)
    # (proven lower bound on W, proven upper bound on W, the channel): the robust channel's W
    # is at most U*, RR's at most D_f at its worst pair
    checks = ((res.value, res.upper_bound, robust_matrix), (rr.value, rr.upper_bound, rr_matrix))
    for value, upper, M in checks:
        M = M[:, M.max(axis=0) > 0]
        w_ind, moved = _vertex_worst_case(M, name, model, p0, p1, r0, r1)
        # G is (1 + gamma)-Lipschitz in the L1 norm of (P0, P1) (columns of M^T sum to <= 1),
        # so the moved vertices are above W by at most (1 + gamma) * moved
        assert value <= w_ind + EVAL_ATOL
        assert w_ind - (1 + _gamma(name)) * moved <= upper + EVAL_ATOL
    # S at the least-favourable pair by brute force over every set partition
    lf0, lf1 = res.least_favourable
    assert in_set(model, p0, r0, lf0) and in_set(model, p1, r1, lf1)
    assert abs(brute_force_optimum(lf0, lf1, eps, _fn(name)) - res.upper_bound) <= EVAL_ATOL


@pytest.mark.parametrize("name", ["tv", "egamma:1.5"])
@pytest.mark.parametrize("model", ["tv", "contamination", "kl"])
def test_monte_carlo_never_below_the_guarantee(name, model):
    p0, p1 = _pair(4, 7)
    u = {"tv": unc.total_variation, "contamination": unc.contamination, "kl": unc.kl_ball}[model](0.03, 0.05)
    res = ldpopt.robust_mechanism(p0, p1, 2.0, u, name)
    assert 0.0 <= res.value <= res.upper_bound
    assert res.certified == (res.gap <= 1e-8 * res.upper_bound)
    lf0, lf1 = res.least_favourable
    assert in_set(model, p0, 0.03, lf0) and in_set(model, p1, 0.05, lf1)
    assert abs(brute_force_optimum(lf0, lf1, 2.0, _fn(name)) - res.upper_bound) <= EVAL_ATOL
    M = np.asarray(res.mechanism.matrix)
    rng = np.random.default_rng(5)
    fn = _fn(name)
    worst = min(fn(draw_in(rng, model, p0, 0.03) @ M, draw_in(rng, model, p1, 0.05) @ M) for _ in range(300))
    assert worst >= res.value - EVAL_ATOL
    w0, w1 = res.worst_pair  # the pair attaining W's upper bound is in the sets
    assert in_set(model, p0, 0.03, w0) and in_set(model, p1, 0.05, w1)
    assert fn(w0 @ M, w1 @ M) >= res.value - EVAL_ATOL


@pytest.mark.parametrize("name", ["tv", "egamma:1.5"])
def test_radius_zero_is_the_plug_in_optimum(name):
    p0, p1 = np.array([0.04, 0.09, 0.22, 0.47, 0.18]), np.array([0.25, 0.49, 0.13, 0.10, 0.03])
    best = brute_force_optimum(p0, p1, 2.0, _fn(name))
    opt = ldpopt.optimal_mechanism(p0, p1, 2.0, name)
    for u in (unc.total_variation(0, 0), unc.contamination(0, 0), unc.kl_ball(0, 0)):
        res = ldpopt.robust_mechanism(p0, p1, 2.0, u, name)
        assert res.certified and res.partition == opt.partition
        assert abs(res.value - best) <= EVAL_ATOL and abs(res.upper_bound - best) <= EVAL_ATOL
        assert res.plug_in.value == res.value


#: k = 2 grid: each interval of P0 (P1) cut into GRID steps of width <= 2 r / GRID = 1e-4 (TV
#: r = 0.1; the KL intervals here are shorter); G is (1 + gamma)-Lipschitz in L1 (an L1 step of
#: 2 * width per side), so the grid's minimum exceeds W by at most (1 + gamma) * 4 * width
GRID = 2000


@pytest.mark.parametrize("name", ["tv", "egamma:1.2"])
@pytest.mark.parametrize("model", ["tv", "kl"])
def test_k2_grid(name, model):
    c0, c1 = np.array([0.3, 0.7]), np.array([0.75, 0.25])
    r = 0.1 if model == "tv" else 0.02
    u = unc.total_variation(r, r) if model == "tv" else unc.kl_ball(r, r)
    res = ldpopt.robust_mechanism(c0, c1, 2.5, u, name)
    assert res.value > 0.01  # not a degenerate instance
    M = np.asarray(res.mechanism.matrix)
    M = M[:, M.max(axis=0) > 0]

    def interval(c):
        xs = np.linspace(0.0, 1.0, 200001)
        ok = [x for x in xs[::100] if in_set(model, c, r, np.array([x, 1 - x]), 0.0)]
        lo, hi = min(ok) - 0.005, max(ok) + 0.005  # refine the ends by bisection
        a = _edge(model, c, r, lo, min(ok))
        b = _edge(model, c, r, hi, max(ok))
        return np.linspace(a, b, GRID + 1), (b - a) / GRID

    g0, w0 = interval(c0)
    g1, w1 = interval(c1)
    gamma = _gamma(name)
    a = np.stack([g0, 1 - g0], axis=1) @ M  # (GRID+1, m)
    b = np.stack([g1, 1 - g1], axis=1) @ M
    vals = np.clip(a[:, None, :] - gamma * b[None, :, :], 0.0, None).sum(axis=2)
    if name == "tv":
        vals = 0.5 * np.abs(a[:, None, :] - b[None, :, :]).sum(axis=2)
    w_grid = float(vals.min())
    assert w_grid >= res.value - EVAL_ATOL
    assert w_grid - (1 + gamma) * 2 * (w0 + w1) <= res.value + res.gap + EVAL_ATOL
    if model == "tv":
        assert res.certified


def _edge(model, c, r, out, inside):
    """The boundary of the k = 2 set between an outside and an inside point, by bisection (inside end)."""
    lo, hi = inside, min(max(out, 0.0), 1.0)
    if in_set(model, c, r, np.array([hi, 1 - hi]), 0.0):
        return hi
    for _ in range(80):
        mid = (lo + hi) / 2
        if in_set(model, c, r, np.array([mid, 1 - mid]), 0.0):
            lo = mid
        else:
            hi = mid
    return lo


@pytest.mark.parametrize(("name", "model"), [("tv", "tv"), ("egamma:1.5", "contamination")])
def test_dual_bound_is_valid_for_any_multipliers(name, model):
    """The certificate's lower bound, unclipped, at random (also infeasible, then projected)
    multipliers never exceeds W by vertex enumeration; at the LP's own point it is tight."""
    p0, p1 = _pair(3, 4)
    u = unc.total_variation(0.05, 0.1) if model == "tv" else unc.contamination(0.05, 0.1)
    sides = u.sides(p0, p1)
    M = np.asarray(ldpopt.randomized_response(3, 2.0).matrix)
    w_ind, moved = _vertex_worst_case(M, name, model, p0, p1, 0.05, 0.1)
    div = ldpopt.get_divergence(name)
    rng = np.random.default_rng(2)
    bounds = [
        _dual_bound([M], _gamma(name), sides, [rng.uniform(-0.5, 1.5, 3)], rng.uniform(0.0, 2.0, 1))
        for _ in range(200)
    ]
    assert max(bounds) <= w_ind + EVAL_ATOL
    sol = solve_piecewise([M], div, sides, (p0, p1))
    assert sol.lower <= w_ind + EVAL_ATOL and sol.upper >= w_ind - (1 + _gamma(name)) * moved - EVAL_ATOL
    assert sol.upper - sol.lower <= 1e-8 * sol.upper


@pytest.mark.parametrize("name", ["tv", "egamma:1.5"])
def test_kl_ball_kelley_fallback_brackets_the_epigraph_solve(name):
    """The two KL-ball solvers (SLSQP on the epigraph; Kelley's cutting planes, the fallback)
    give proven brackets of the same W: they overlap, and sampled pairs stay above both lowers."""
    p0, p1 = _pair(3, 4)
    sides = unc.kl_ball(0.02, 0.03).sides(p0, p1)
    M = np.asarray(ldpopt.randomized_response(3, 2.0).matrix)
    div, gamma = ldpopt.get_divergence(name), _gamma(name)
    a = _kelley([M], div, gamma, sides, (p0, p1))
    b = _epigraph_slsqp([M], div, gamma, sides, (p0, p1))
    assert a.lower <= b.upper + EVAL_ATOL and b.lower <= a.upper + EVAL_ATOL
    assert a.upper - a.lower <= 1e-7 * a.upper  # Kelley's cap of 300 cuts gets this close here
    rng = np.random.default_rng(9)
    fn = _fn(name)
    worst = min(fn(draw_in(rng, "kl", p0, 0.02) @ M, draw_in(rng, "kl", p1, 0.03) @ M) for _ in range(300))
    assert worst >= max(a.lower, b.lower) - EVAL_ATOL
    for sol in (a, b):
        assert in_set("kl", p0, 0.02, sol.pair[0]) and in_set("kl", p1, 0.03, sol.pair[1])
