"""Robust design: every bound re-checked by methods that share no code with the solver.

* W(Q) of the returned mechanism by scipy's SLSQP from random starts, on the sets written
  directly as constraints on (P0, P1) (TV through slack variables) and the divergence from its
  textbook formula (tests/reference.py);
* S at the least-favourable pair by brute force over every set partition (tests/reference.py);
* membership of the pair from the definitions of the sets;
* Monte Carlo: pairs drawn inside the sets never give the mechanism less than the guarantee;
* k = 2: a brute-force max-min over a grid of channels.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import NonlinearConstraint, minimize

import ldpopt
from ldpopt import uncertainty as unc
from ldpopt.robust import _inner
from reference import brute_force_optimum, naive_divergence, naive_renyi
from reference import draw_in_uncertainty_set as draw_in
from reference import in_uncertainty_set as in_set

PAPER_P = np.array([0.04, 0.09, 0.22, 0.47, 0.18])
PAPER_Q = np.array([0.25, 0.49, 0.13, 0.10, 0.03])
U = 2.0**-53
#: the independent solver's end points are kept only when feasible within 1e-10; F is Lipschitz
#: with constant < 50 on these instances (|log t| <= eps + log max ratio), so an end point's
#: value can be below W(Q) by at most 5e-9; above W(Q) by SLSQP's stopping error (ftol 1e-15 on
#: the objective, superlinear near the end: ~1e-8 in the point, < 5e-7 in the value); 1e-6
INDEP_ATOL = 1e-6
#: the naive textbook sums and the library's centred perspectives differ by rounding only:
#: each of the <= 2 k terms has error <= 8 u times its magnitude (log, product, sum), and
#: the terms are bounded by the sum of |a log(a/b)| + |a - b| <= 10 here: 2 k * 8 u * 10 << 1e-12
EVAL_ATOL = 1e-12


def _div_fn(name):
    if name.startswith("renyi:"):
        a = float(name.split(":")[1])
        return lambda u, v: naive_renyi(u, v, a)
    return lambda u, v: naive_divergence(u, v, name)


def independent_worst_case(M, name, model, c0, c1, r0, r1, starts=2, seed=0):
    """min over the sets of D(M^T P0 || M^T P1) by SLSQP (best feasible end point of ``starts``) on
    z = (P0, P1, s0, s1): TV balls as the linear constraints -s <= P - c <= s, sum s <= 2 r."""
    k = c0.size
    fn = _div_fn(name)
    n = 4 * k

    def obj(z):
        return fn(z[:k] @ M, z[k : 2 * k] @ M)

    def grad(z):  # KL only: d/dP0 sum a log(a/b) = M (log(a/b) + 1), d/dP1 = -M (a/b)
        a, b = z[:k] @ M, z[k : 2 * k] @ M
        return np.concatenate([M @ (np.log(a / b) + 1), -M @ (a / b), np.zeros(2 * k)])

    rows, lo, hi = [], [], []

    def add(row, a, b):
        rows.append(row)
        lo.append(a)
        hi.append(b)

    lb, ub = np.zeros(n), np.ones(n)
    nonlin = []
    for i, (c, r) in enumerate(((c0, r0), (c1, r1))):
        p_sl, s_sl = slice(i * k, (i + 1) * k), slice((2 + i) * k, (3 + i) * k)
        row = np.zeros(n)
        row[p_sl] = 1.0
        add(row, 1.0, 1.0)
        if r == 0.0:
            lb[p_sl], ub[p_sl] = c, c
        elif model == "contamination":
            lb[p_sl] = (1 - r) * c
        elif model == "tv":
            for j in range(k):
                for sign in (1.0, -1.0):  # s_j - sign (P_j - c_j) >= 0
                    row = np.zeros(n)
                    row[(2 + i) * k + j] = 1.0
                    row[i * k + j] = -sign
                    add(row, -sign * c[j], np.inf)
            row = np.zeros(n)
            row[s_sl] = 1.0
            add(row, 0.0, 2 * r)
        else:
            pos = np.flatnonzero(c > 0)
            nonlin.append(
                NonlinearConstraint(
                    lambda z, sl=p_sl, c=c, pos=pos: np.sum(
                        c[pos] * np.log(c[pos] / np.maximum(z[sl][pos], 1e-300))
                    ),
                    -np.inf,
                    r,
                )
            )
    A, lo_, hi_ = np.array(rows), np.array(lo), np.array(hi)
    eq = lo_ == hi_
    cons = [{"type": "eq", "fun": lambda z: A[eq] @ z - lo_[eq]}]
    fin_lo, fin_hi = ~eq & np.isfinite(lo_), ~eq & np.isfinite(hi_)
    cons.append(
        {
            "type": "ineq",
            "fun": lambda z: np.concatenate([A[fin_lo] @ z - lo_[fin_lo], hi_[fin_hi] - A[fin_hi] @ z]),
        }
    )
    cons += [{"type": "ineq", "fun": lambda z, c=c: c.ub - c.fun(z)} for c in nonlin]
    rng = np.random.default_rng(seed)
    best = math.inf
    for _ in range(starts):
        a, b = draw_in(rng, model, c0, r0), draw_in(rng, model, c1, r1)
        z0 = np.concatenate([a, b, np.abs(a - c0), np.abs(b - c1)])
        res = minimize(
            obj,
            z0,
            jac=grad if name == "kl" else None,
            method="SLSQP",
            constraints=cons,
            bounds=list(zip(lb, ub, strict=True)),
            options={"ftol": 1e-15, "maxiter": 1000},
        )
        z = res.x
        feasible = all(np.all(c["fun"](z) >= -1e-10) for c in cons[1:]) and np.all(
            np.abs(cons[0]["fun"](z)) <= 1e-10
        )
        if feasible:
            best = min(best, obj(z))
    return best


CASES = [
    ("kl", unc.total_variation(0.02, 0.05), PAPER_P, PAPER_Q, 1.0),
    ("hellinger", unc.contamination(0.05, 0.1), PAPER_P, PAPER_Q, 2.0),
    ("chi2", unc.kl_ball(0.01, 0.02), PAPER_P, PAPER_Q, 0.5),
    ("renyi:2", unc.total_variation(0.05, 0.05), np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.2, 0.6]), 1.0),
    (
        "reverse_kl",
        unc.total_variation(0.03, 0.01),
        np.array([0.1, 0.2, 0.3, 0.4]),
        np.array([0.4, 0.3, 0.2, 0.1]),
        3.0,
    ),
]


@pytest.mark.numerics
@pytest.mark.parametrize(("name", "u", "p0", "p1", "eps"), CASES)
def test_bounds_checked_independently(name, u, p0, p1, eps):
    res = ldpopt.robust_mechanism(p0, p1, eps, u, name)
    assert res.certified and res.gap <= 1e-8 * res.upper_bound
    # the pair lies in the sets (from their definitions)
    lf0, lf1 = res.least_favourable
    assert in_set(u.model, p0, u.r0, lf0) and in_set(u.model, p1, u.r1, lf1)
    # S at the least-favourable pair: brute force over every partition equals upper_bound
    fn = _div_fn(name)
    s_brute = brute_force_optimum(lf0, lf1, eps, fn)
    assert abs(s_brute - res.upper_bound) <= EVAL_ATOL
    # W of the returned mechanism by an independent solver: the guarantee is a lower bound
    # (value <= W <= independent) and is tight
    M = np.asarray(res.mechanism.matrix)
    w_ind = independent_worst_case(
        M, name if not name.startswith("renyi") else name, u.model, p0, p1, u.r0, u.r1
    )
    assert res.value <= w_ind + 5e-9
    assert w_ind - res.value <= INDEP_ATOL
    # the plug-in design's own worst case can only be lower
    assert res.plug_in.value <= res.upper_bound + EVAL_ATOL


@pytest.mark.parametrize(("name", "u", "p0", "p1", "eps"), CASES)
def test_monte_carlo_never_below_the_guarantee(name, u, p0, p1, eps):
    res = ldpopt.robust_mechanism(p0, p1, eps, u, name)
    rng = np.random.default_rng(11)
    fn = _div_fn(name)
    M = np.asarray(res.mechanism.matrix)
    worst = math.inf
    for _ in range(300):
        a, b = draw_in(rng, u.model, p0, u.r0), draw_in(rng, u.model, p1, u.r1)
        worst = min(worst, fn(a @ M, b @ M))
    assert worst >= res.value - EVAL_ATOL


def test_radius_zero_is_the_plug_in_optimum():
    opt = ldpopt.optimal_mechanism(PAPER_P, PAPER_Q, 2.0, "kl")
    for u in (unc.total_variation(0, 0), unc.contamination(0, 0), unc.kl_ball(0, 0)):
        res = ldpopt.robust_mechanism(PAPER_P, PAPER_Q, 2.0, u, "kl")
        assert res.partition == opt.partition
        np.testing.assert_array_equal(res.mechanism.matrix, opt.mechanism.matrix)
        assert abs(res.value - opt.value) <= EVAL_ATOL and res.certified
        assert res.plug_in.value == res.value


def test_guarantee_is_monotone_in_the_radius():
    """value(r2) <= W*(r2) <= W*(r1) <= upper_bound(r1) for r1 < r2."""
    rng = np.random.default_rng(3)
    p0, p1 = rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6))
    prev = None
    for r in (0.0, 0.01, 0.02, 0.05, 0.1):
        res = ldpopt.robust_mechanism(p0, p1, 2.0, unc.total_variation(r, r), "kl")
        assert res.value <= res.upper_bound
        if prev is not None:
            assert res.value <= prev.upper_bound
            assert res.value < prev.value or prev.value == 0.0
        prev = res


def test_k2_brute_force_max_min():
    """k = 2: the max over a grid of 2-output eps-LDP channels (including the returned one) of
    the min over a grid of the TV intervals (including the least-favourable pair) lies between
    value and upper_bound: value <= W(Q*) <= grid-min(Q*) and grid-min(Q) <= D(Q P*) <= S(P*)."""
    p0, p1, eps = np.array([0.7, 0.3]), np.array([0.25, 0.75]), 1.0
    u = unc.total_variation(0.05, 0.1)
    res = ldpopt.robust_mechanism(p0, p1, eps, u, "kl")
    e = math.exp(eps)
    # channels Q(0|x) = a, b with a/b, b/a, (1-a)/(1-b), (1-b)/(1-a) <= e^eps
    grid = np.linspace(0.0, 1.0, 201)
    hi, lo = e / (1 + e), 1 / (1 + e)
    chans = [(a, b) for a in np.append(grid, [hi, lo]) for b in np.append(grid, [hi, lo])]
    chans = [
        (a, b)
        for a, b in chans
        if 0 < a < 1
        and 0 < b < 1
        and max(a / b, b / a, (1 - a) / (1 - b), (1 - b) / (1 - a)) <= e * (1 + 1e-12)
    ]
    x0 = np.append(np.linspace(p0[0] - 0.05, p0[0] + 0.05, 41), res.least_favourable[0][0])
    x1 = np.append(np.linspace(p1[0] - 0.1, p1[0] + 0.1, 41), res.least_favourable[1][0])
    X0, X1 = np.meshgrid(x0, x1, indexing="ij")
    best = -math.inf
    for a, b in chans:
        m0 = a * X0 + b * (1 - X0)  # P(output 0) under P0 = (X0, 1 - X0)
        m1 = a * X1 + b * (1 - X1)
        d = m0 * np.log(m0 / m1) + (1 - m0) * np.log((1 - m0) / (1 - m1))
        best = max(best, float(d.min()))
    assert res.value - EVAL_ATOL <= best <= res.upper_bound + EVAL_ATOL


def test_worst_case_of_baselines():
    u = unc.total_variation(0.03, 0.03)
    for mech in (ldpopt.randomized_response(5, 1.0),):
        w = ldpopt.worst_case(mech, PAPER_P, PAPER_Q, u, "kl")
        assert w.value <= w.upper_bound and w.certified
        assert in_set("tv", PAPER_P, 0.03, w.worst_pair[0]) and in_set("tv", PAPER_Q, 0.03, w.worst_pair[1])
        M = np.asarray(mech.matrix)
        w_ind = independent_worst_case(M, "kl", "tv", PAPER_P, PAPER_Q, 0.03, 0.03)
        assert w.value <= w_ind + 5e-9 and w_ind - w.value <= INDEP_ATOL
        assert abs(w.nominal - mech.utility(PAPER_P, PAPER_Q, "kl")) <= EVAL_ATOL


def test_from_counts_centres_and_mismatch():
    u = unc.from_counts([40, 90, 220, 470, 180], [250, 490, 130, 100, 30], 0.95, "kl")
    res = ldpopt.robust_mechanism(u.p0_hat, u.p1_hat, 2.0, u, "kl")
    assert res.value <= res.upper_bound and res.value <= res.plug_in.nominal
    with pytest.raises(ValueError, match="p0_hat differs"):
        ldpopt.robust_mechanism(PAPER_Q, PAPER_P, 2.0, u, "kl")


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"divergence": "chernoff"}, ValueError, "chernoff"),
        ({"divergence": ldpopt.FDivergence(lambda t: (t - 1) ** 4, name="quartic")}, ValueError, "quartic"),
        ({"eps": math.inf}, ValueError, "eps"),
        ({"eps": -1.0}, ValueError, "eps"),
        ({"uncertainty": 0.1}, TypeError, "uncertainty"),
        ({"max_outputs": 0}, ValueError, "max_outputs"),
        ({"p0_hat": [0.5, 0.6]}, ValueError, "p0_hat"),
    ],
)
def test_bad_input(kwargs, exc, match):
    args = {
        "p0_hat": [0.5, 0.5],
        "p1_hat": [0.2, 0.8],
        "eps": 1.0,
        "uncertainty": unc.total_variation(0.1, 0.1),
    }
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        ldpopt.robust_mechanism(**args)


def test_worst_case_bad_input():
    u = unc.total_variation(0.1, 0.1)
    with pytest.raises(ValueError, match="inputs"):
        ldpopt.worst_case(ldpopt.randomized_response(3, 1.0), [0.5, 0.5], [0.2, 0.8], u, "kl")
    with pytest.raises(TypeError, match="mech"):
        ldpopt.worst_case("rr", [0.5, 0.5], [0.2, 0.8], u, "kl")


@pytest.mark.numerics
def test_certified_mixture_of_spr_channels():
    """KL balls where no single SPR channel closes the gap: the mechanism is a mixture with
    disjoint outputs (eps-LDP by construction), certified, and checked like a single channel."""
    rng = np.random.default_rng(1)
    p0, p1 = rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6))
    u = unc.kl_ball(0.01, 0.01)
    res = ldpopt.robust_mechanism(p0, p1, 2.0, u, "kl")
    assert res.partition is None and len(res.weights) >= 2 and res.certified
    M = np.asarray(res.mechanism.matrix)
    assert np.log(M.max(axis=0) / M.min(axis=0)).max() <= 2.0 * (1 + 1e-12)
    lf0, lf1 = res.least_favourable
    assert in_set("kl", p0, 0.01, lf0) and in_set("kl", p1, 0.01, lf1)
    assert abs(brute_force_optimum(lf0, lf1, 2.0, _div_fn("kl")) - res.upper_bound) <= EVAL_ATOL
    w_ind = independent_worst_case(M, "kl", "kl", p0, p1, 0.01, 0.01)
    assert res.value <= w_ind + 5e-9 and w_ind - res.value <= INDEP_ATOL
    # every single channel of the mixture guarantees strictly less than the mixture
    single = ldpopt.worst_case(
        ldpopt.spr_mechanism(ldpopt.optimal_mechanism(lf0, lf1, 2.0, "kl").partition, 6, 2.0), p0, p1, u, "kl"
    )
    assert single.upper_bound < res.value


@pytest.mark.parametrize("tangent", [True, False])
def test_mixture_weights_do_not_need_slsqp_multipliers(monkeypatch, tangent):
    """Older scipy (1.11) reports no SLSQP multipliers (the master's weights then default to
    uniform): the weights are recomputed at the master's point (tangent) and, if that still falls
    short, refined on W itself (tangent=False: the refinement alone), so the case certifies with
    the same value up to the certificate's tolerance."""
    rng = np.random.default_rng(1)
    p0, p1 = rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6))
    u = unc.kl_ball(0.01, 0.01)
    ref = ldpopt.robust_mechanism(p0, p1, 2.0, u, "kl")
    monkeypatch.setattr(_inner, "_weights", lambda res, count, cons: np.full(count, 1.0 / count))
    if not tangent:
        monkeypatch.setattr(_inner, "tangent_weights", lambda mats, div, sides, point, guess: guess)
    res = ldpopt.robust_mechanism(p0, p1, 2.0, u, "kl")
    assert res.certified and len(res.weights) >= 2
    # both certified: each value is within 1e-8 * upper of the max-min, which both upper bounds bound
    assert abs(res.value - ref.value) <= 1e-8 * max(res.upper_bound, ref.upper_bound)
