"""The LP machinery of ``ldpopt.decision.lp``: column generation priced at in-out and at Lagrangian
dual points, its backends, warm starts, purging, limits and failures."""

from __future__ import annotations

import math

import numpy as np
import pytest
from decision_cases import TOL, check_channel, random_problem

import ldpopt
from ldpopt.decision import lp
from ldpopt.decision.problem import DecisionProblem
from reference import proper_subsets


def test_colgen_backends_and_iteration_limit():
    rng = np.random.default_rng(402)
    prob = random_problem(rng, 9, 4, 4)
    B = prob.bayes_matrix()
    c0 = math.exp(-1.0)
    for duals in ("lagrangian", "in-out"):
        a = lp.column_generation(c0, B=B, backend="linprog", duals=duals)
        b = lp.column_generation(c0, B=B, backend="auto", duals=duals)
        assert a.status == 0 and a.value == pytest.approx(b.value, abs=TOL)
    full = ldpopt.optimal_channel(prob, 2.0, risk="minimax", method="colgen")
    assert full.iterations > 1
    capped = ldpopt.optimal_channel(prob, 2.0, risk="minimax", method="colgen", max_iter=1)
    # stopped early: still a feasible eps-LDP maximal channel and a valid dual bound
    assert capped.status == 1 and not capped.success and "iteration limit" in capped.message
    assert capped.value >= full.value - TOL
    assert capped.certificate.bound <= full.value + TOL
    assert ldpopt.is_maximal(capped.mechanism)


def test_colgen_warm_start_seed_keeps_the_optimum():
    rng = np.random.default_rng(403)
    prob = random_problem(rng, 9, 4, 4)
    B, c0 = prob.bayes_matrix(), math.exp(-1.0)
    ref = lp.solve_pair_lp(*_all_pairs(9, 4), c0, costs=lp.pair_costs(*_all_pairs(9, 4), B, c0))
    # seeded with an optimal support (the diagnostic of bench_decision.py) or with arbitrary columns,
    # including duplicates of the RR seed: the same optimum and a certificate
    arbitrary = (rng.random((12, 9)) < 0.5, rng.integers(0, 4, 12))
    arbitrary[0][:, 0] = True
    arbitrary[0][:, 1] = False  # non-empty proper subsets
    for seed in ((ref.rows, ref.actions), arbitrary, (np.eye(9, dtype=bool), np.zeros(9, int))):
        for duals in ("lagrangian", "in-out"):
            res = lp.column_generation(c0, B=B, seed=seed, duals=duals)
            assert res.status == 0 and res.value == pytest.approx(ref.value, abs=TOL)
            assert lp.min_reduced_cost(B, res.u, c0) >= -1e-9


def _all_pairs(m, K):
    subsets = _subset_matrix(m, proper=True).astype(bool)
    return np.repeat(subsets, K, axis=0), np.tile(np.arange(K), subsets.shape[0])


def test_colgen_stopped_after_purging_returns_a_consistent_channel():
    # a small purge threshold forces column deletions before the iteration limit is hit
    rng = np.random.default_rng(405)
    prob = DecisionProblem(
        rng.dirichlet(np.full(40, 0.5), size=4).T, 1.0 - np.eye(4) + 0.3 * rng.random((4, 4))
    )
    B, c0 = prob.bayes_matrix(), math.exp(-1.0)
    full = lp.column_generation(c0, B=B, purge=1, duals="in-out")
    assert full.status == 0 and full.iterations > 5
    early = lp.column_generation(c0, B=B, purge=1, max_iter=full.iterations - 2, duals="in-out")
    assert early.status == 1
    # the returned support is a feasible point of the polytope with the reported master value
    S = np.where(early.rows, 1.0, c0)
    assert np.allclose(early.z @ S, 1.0, atol=1e-9)
    assert float(early.z @ lp.pair_costs(early.rows, early.actions, B, c0)) == pytest.approx(
        early.value, abs=1e-9
    )


# --------------------------------------------------------------------------------------------
# column generation priced at Lagrangian dual points (the Bayes default)
# --------------------------------------------------------------------------------------------


def _subset_matrix(m, proper=False):
    """Membership rows of the non-empty proper subsets (``reference.proper_subsets``), plus the
    empty and the full set unless ``proper``."""
    rows = [np.isin(np.arange(m), y) for y in proper_subsets(m)]
    if not proper:
        rows += [np.zeros(m, dtype=bool), np.ones(m, dtype=bool)]
    return np.array(rows, dtype=float)


def _random_weights(rng, K, c0):
    """Action weights h in [0, 1]^K with 1 <= sum h <= 1/c0 (column maxima of an LDP channel)."""
    hi = min(float(K), 1.0 / c0)
    for _ in range(10_000):
        h = rng.dirichlet(np.ones(K)) * rng.uniform(1.0, hi)
        if h.max() <= 1.0:
            return h
    raise AssertionError("no weights drawn")  # pragma: no cover


def test_lagrangian_pieces_against_brute_force():
    rng = np.random.default_rng(410)
    for _ in range(40):
        m, K = int(rng.integers(2, 8)), int(rng.integers(1, 5))
        B = rng.normal(size=(m, K))  # negative losses are allowed
        if rng.random() < 0.4:
            B = np.round(B, 1)  # ties between actions and inputs
        c0 = math.exp(-rng.uniform(0.05, 5.0))
        u = rng.normal(size=m)
        D = B - u[:, None]
        every = c0 * D.sum(axis=0)[None, :] + (1 - c0) * _subset_matrix(m) @ D
        assert np.allclose(lp.action_slacks(B, u, c0), every.min(axis=0), atol=1e-12)

        # lagrangian_point maximises L(u, h) = sum(u) + h . g(u): L is separable and concave along
        # each u_x, so no single-coordinate move to any breakpoint or nearby point improves it
        h = _random_weights(rng, K, c0)
        ustar = lp.lagrangian_point(B, h, c0)

        def lag(v, h=h, B=B, c0=c0):
            return v.sum() + h @ lp.action_slacks(B, v, c0)

        best = lag(ustar)
        for x in range(m):
            for cand in np.concatenate([B[x], B[x] + 1e-3, B[x] - 1e-3, [ustar[x] + 10, ustar[x] - 10]]):
                v = ustar.copy()
                v[x] = cand
                assert lag(v) <= best + 1e-12

        # _certify: exactly dual feasible over the proper subsets, and as high as possible
        cert, order, rc_cert = lp._certify(B, u, c0)
        # the pricing it returns is the pricing at the lifted point (the shift keeps the order)
        order_ref, rc_ref = lp.price(B - cert[:, None], c0)
        assert np.allclose(rc_cert, rc_ref, atol=1e-12)
        assert np.allclose(
            np.take_along_axis(B - cert[:, None], order, axis=0),
            np.take_along_axis(B - cert[:, None], order_ref, axis=0),
            atol=1e-12,
        )
        Dc = B - cert[:, None]
        S = _subset_matrix(m, proper=True)
        rc = c0 * Dc.sum(axis=0)[None, :] + (1 - c0) * S @ Dc
        assert rc.min() >= -1e-12
        w = S.sum(axis=1) + c0 * (m - S.sum(axis=1))
        assert np.min(rc / w[:, None]) == pytest.approx(0.0, abs=1e-12)


def test_lagrangian_dual_function_is_the_channel_lp_with_fixed_column_maxima():
    # D(h) = max_u L(u, h) equals the channel LP whose column maxima are fixed to h (an
    # independent LP), and min_h D(h) is the optimum: the derivation in docs/decision.md
    from scipy.optimize import linprog

    rng = np.random.default_rng(411)
    for _ in range(10):
        prob = random_problem(rng, int(rng.integers(2, 7)), 3, int(rng.integers(2, 5)))
        B, eps = prob.bayes_matrix(), float(rng.uniform(0.2, 3.0))
        c0 = math.exp(-eps)
        m, K = B.shape
        opt = ldpopt.optimal_channel(prob, eps, method="enumerate").value
        for _ in range(5):
            h = _random_weights(rng, K, c0)
            u = lp.lagrangian_point(B, h, c0)
            D_h = u.sum() + h @ lp.action_slacks(B, u, c0)
            # variables s[x, a] (row-major): W = c0 h + s, sum_a W[x, a] = 1, 0 <= s <= (1 - c0) h
            res = linprog(
                B.ravel(),
                A_eq=np.kron(np.eye(m), np.ones((1, K))),
                b_eq=np.full(m, 1.0 - c0 * h.sum()),
                bounds=[(0.0, (1.0 - c0) * h[a]) for _ in range(m) for a in range(K)],
                method="highs",
            )
            assert res.status == 0
            assert D_h == pytest.approx(c0 * h @ B.sum(axis=0) + res.fun, abs=1e-10)
            assert D_h >= opt - 1e-10
            # the greedy inner solution is that LP's optimum: a channel with column maxima <= h
            _, s = lp._inner(B, h, c0)
            W = c0 * h[None, :] + s
            assert np.all(s >= 0) and np.all(s <= (1 - c0) * h[None, :] + 1e-15)
            assert np.allclose(W.sum(axis=1), 1.0, atol=1e-12)
            assert float((W * B).sum()) == pytest.approx(D_h, abs=1e-10)
            for y, a in lp._layers(s):  # layers: nested level sets of each column
                assert y.any() and np.all(s[y, a] >= s[~y, a].max(initial=0.0))


@pytest.mark.parametrize("m, T, A, seed", [(256, 8, 8, 2), (400, 6, 5, 7), (120, 10, 12, 3)])
def test_lagrangian_colgen_large_random_problems_match_the_channel_lp(m, T, A, seed):
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.full(m, 0.5), size=T).T
    prob = DecisionProblem(P, 1.0 - np.eye(T, A) + 0.3 * rng.random((T, A)))
    for eps in (0.5, 1.0, 3.0):
        res = ldpopt.optimal_channel(prob, eps, method="colgen")
        direct = ldpopt.optimal_channel(prob, eps, method="direct")
        assert res.status == 0 and res.value == pytest.approx(direct.value, abs=TOL)
        assert res.iterations <= 60  # pricing at the master's own duals needs > 1000 rounds at m = 256
        assert res.mechanism.is_ldp(eps) and ldpopt.is_maximal(res.mechanism)
        assert prob.bayes_risk(res.mechanism) == pytest.approx(res.value, abs=TOL)
        # the certificate, by an independent pricing: every action's cheapest subset has rc >= 0
        u, B, c0 = res.certificate.dual, prob.bayes_matrix(), math.exp(-eps)
        for a in range(A):
            d = np.sort(B[:, a] - u)
            assert np.min(c0 * d.sum() + (1 - c0) * np.cumsum(d)[:-1]) >= -1e-9
        assert u.sum() == pytest.approx(res.value, abs=TOL)


def _coarse_problem(rng):
    P = np.round(rng.dirichlet(np.ones(6), size=3).T, 1) + 0.1
    return DecisionProblem(P / P.sum(axis=0), rng.integers(0, 3, (3, 3)).astype(float))


def test_lagrangian_colgen_edge_cases_match_enumeration():
    rng = np.random.default_rng(412)
    cases = [
        DecisionProblem(rng.dirichlet(np.ones(6), size=3).T, rng.random((3, 1))),  # one action
        DecisionProblem(
            rng.dirichlet(np.ones(5), size=3).T, np.tile(rng.random((3, 1)), (1, 4))
        ),  # equal actions
        DecisionProblem(np.full((6, 2), 1 / 6), rng.random((2, 3))),  # uninformative likelihood
        DecisionProblem(rng.dirichlet(np.ones(7), size=4).T, -rng.random((4, 3))),  # negative losses
        _coarse_problem(rng),  # repeated likelihoods and integer losses: many exact ties
    ]
    for prob in cases:
        for eps in (1e-3, 1.0, 30.0):
            ref = ldpopt.optimal_channel(prob, eps, method="enumerate").value
            res = ldpopt.optimal_channel(prob, eps, method="colgen")
            assert res.status == 0 and res.value == pytest.approx(ref, abs=TOL)
            check_channel(res, prob, eps, "bayes")


def test_colgen_duals_argument_is_validated():
    B = np.array([[0.1, 0.5], [0.4, 0.2], [0.3, 0.3]])
    with pytest.raises(ValueError, match="duals"):
        lp.column_generation(0.5, B=B, duals="fast")
    with pytest.raises(ValueError, match="minimax"):
        lp.column_generation(0.5, P=np.full((3, 2), 1 / 3), L=np.eye(2), duals="lagrangian")


def test_colgen_master_failure_after_the_first_round_is_reported(monkeypatch):
    # a failed master solve returns no duals: the result is a clean failure (status 4, no channel)
    real = lp.make_master

    def flaky_master(*args, **kwargs):
        master = real(*args, **kwargs)
        solve, calls = master.solve, []

        def flaky():
            calls.append(1)
            if len(calls) >= 2:
                return False, math.nan, None, None, None, "injected failure"
            return solve()

        master.solve = flaky
        return master

    monkeypatch.setattr(lp, "make_master", flaky_master)
    prob = random_problem(np.random.default_rng(404), 8, 3, 3)
    res = ldpopt.optimal_channel(prob, 1.0, risk="minimax", method="colgen")
    assert res.status == 4 and not res.success and "injected failure" in res.message
    assert res.mechanism is None and math.isnan(res.value)
