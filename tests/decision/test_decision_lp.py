"""The LP machinery of ``ldpopt.decision.lp``: column generation priced at in-out and at Lagrangian
dual points, its backends, warm starts, purging, limits and failures."""

from __future__ import annotations

import math

import numpy as np
import pytest
from decision_cases import check_channel, random_problem

import ldpopt
from _errmodel import (
    HIGHS_TOL,
    LIB_LP_TOL,
    SUPPORT_RTOL,
    U,
    channel_err,
    decision_lp_err,
    dual_value_err,
    kappa,
    lp_err,
    pricing_err,
    within,
    within_all,
)
from ldpopt.decision import lp
from ldpopt.decision.problem import DecisionProblem
from reference import proper_subsets

#: the numerics tests: CI also runs them on numpy's AVX2 and baseline loops (.ci/npy_disable.py)
pytestmark = pytest.mark.numerics

#: ldpopt.decision.lp.RC_RTOL, repeated on purpose: column generation prices down to -RC_RTOL max(scale, |v|)
RC_RTOL = 1e-9


def test_colgen_backends_and_iteration_limit():
    rng = np.random.default_rng(402)
    prob = random_problem(rng, 9, 4, 4)
    B = prob.bayes_matrix()
    c0 = math.exp(-1.0)
    # the master values (not polished: HiGHS's residual LIB_LP_TOL plus the support's dropped weights)
    rho = LIB_LP_TOL + 10 * SUPPORT_RTOL * kappa(9, 1.0)
    for duals in ("lagrangian", "in-out"):
        a = lp.column_generation(c0, B=B, backend="linprog", duals=duals)
        b = lp.column_generation(c0, B=B, backend="auto", duals=duals)
        bound = 2 * decision_lp_err(9, 1.0, 1.0, rho, "colgen")
        assert a.status == 0 and within("colgen backends agree", a.value, b.value, bound)
    full = ldpopt.optimal_channel(prob, 2.0, risk="minimax", method="colgen")
    assert full.iterations > 1
    capped = ldpopt.optimal_channel(prob, 2.0, risk="minimax", method="colgen", max_iter=1)
    # stopped early: still a feasible eps-LDP maximal channel and a valid dual bound: exactly
    # capped >= v* >= bound; the values within their residual's and tolerance's errors
    assert capped.status == 1 and not capped.success and "iteration limit" in capped.message
    cmax = float(np.abs(prob.loss).max())
    full_err = lp_err(full, 9, 2.0, cmax, "minimax")
    assert capped.value >= full.value - full_err - lp_err(capped, 9, 2.0, cmax, "minimax", "enumerate")
    assert capped.certificate.bound <= full.value + full_err + dual_value_err(capped, 9, 2.0, cmax)
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
    rho = LIB_LP_TOL + 10 * SUPPORT_RTOL * kappa(9, 1.0)  # master values: HiGHS's own residual
    scale = float(np.abs(B).sum(axis=0).max())
    for seed in ((ref.rows, ref.actions), arbitrary, (np.eye(9, dtype=bool), np.zeros(9, int))):
        for duals in ("lagrangian", "in-out"):
            res = lp.column_generation(c0, B=B, seed=seed, duals=duals)
            bound = decision_lp_err(9, 1.0, 1.0, rho, "colgen") + decision_lp_err(
                9, 1.0, 1.0, rho, "enumerate"
            )
            assert res.status == 0 and within("colgen warm start vs all pairs", res.value, ref.value, bound)
            # the returned duals: the master's when no column prices below -RC_RTOL max(scale, |v|), else
            # the proven bound's (exactly dual feasible, lifted in float): the minimum recomputed
            rc_floor = RC_RTOL * max(scale, abs(res.value)) + pricing_err(B.ravel() - np.repeat(res.u, 4), c0)
            assert lp.min_reduced_cost(B, res.u, c0) >= -rc_floor


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
    # the returned support is a feasible point of the polytope with the reported master value: the
    # master's weights (HiGHS's residual LIB_LP_TOL, plus the weights dropped from the support: at most
    # m + 1 basic ones below SUPPORT_RTOL max z, max z <= kappa) and the product's rounding (n u kappa)
    S = np.where(early.rows, 1.0, c0)
    n = early.rows.shape[0]
    k = kappa(40, 1.0)
    resid = LIB_LP_TOL + 41 * SUPPORT_RTOL * k + (n + 1) * U * k
    assert within_all("colgen master: row residual", early.z @ S, 1.0, resid)
    # HiGHS's objective counts the dropped weights too (costs <= max column sum of B), both round
    cost = float(early.z @ lp.pair_costs(early.rows, early.actions, B, c0))
    scale = float(np.abs(B).sum(axis=0).max())
    bound = scale * (41 * SUPPORT_RTOL * k + 2 * (n + 1) * U * k)
    assert within("colgen master: value of the support", cost, early.value, bound)


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
        # the same D; sum_x min(D, c0 D) ((m + 2) u sum|D|) against c0 sum(D) + (1 - c0) S @ D, each an
        # m-term sum ((2m + 4) u sum|D|); the minimum over subsets is 1-Lipschitz
        bound = (3 * m + 6) * U * np.abs(D).sum(axis=0)
        assert within_all(
            "action slacks vs every subset", lp.action_slacks(B, u, c0), every.min(axis=0), bound
        )

        # lagrangian_point maximises L(u, h) = sum(u) + h . g(u): L is separable and concave along
        # each u_x, so no single-coordinate move to any breakpoint or nearby point improves it
        h = _random_weights(rng, K, c0)
        ustar = lp.lagrangian_point(B, h, c0)

        def lag(v, h=h, B=B, c0=c0):
            return v.sum() + h @ lp.action_slacks(B, v, c0)

        def lag_err(v, h=h, B=B, n=m + K):
            # sum(v) (m u), the slacks ((m + 2) u sum|B - v| each), their h-weighted sum (K u)
            return (n + 2) * U * (np.abs(v).sum() + h @ np.abs(B - v[:, None]).sum(axis=0))

        best = lag(ustar)  # ustar is a breakpoint B[x, a]: an exact maximiser of the exact L
        for x in range(m):
            for cand in np.concatenate([B[x], B[x] + 1e-3, B[x] - 1e-3, [ustar[x] + 10, ustar[x] - 10]]):
                v = ustar.copy()
                v[x] = cand
                assert lag(v) <= best + lag_err(v) + lag_err(ustar)

        # _certify: exactly dual feasible over the proper subsets, and as high as possible
        cert, order, rc_cert = lp._certify(B, u, c0)
        # the pricing it returns is the pricing at the lifted point (the shift keeps the order)
        order_ref, rc_ref = lp.price(B - cert[:, None], c0)
        # rc - t w against a pricing at the rounded u + t: each price is two m-term sums of |d| <=
        # |B| + |u| + |t| ((m + 3) u (1 + c0) each), the shift t w and u + t round once more: per action
        t = float(np.max(np.abs(cert - u)))
        mag = np.abs(B).sum(axis=0) + np.abs(u).sum() + m * abs(t)
        lift_err = 2 * (2 * m + 6) * U * (1 + c0) * mag
        assert within_all("certify: returned pricing vs recomputed", rc_cert, rc_ref, lift_err[None, :])
        # the same array under two sorting orders: they differ only where the rounded shift reordered
        # values closer than its rounding, 4u (|B| + |u| + |t|)
        shifted = B - cert[:, None]
        swap = 4 * U * float(np.max(np.abs(B) + np.abs(u)[:, None] + abs(t)))
        a1 = np.take_along_axis(shifted, order, axis=0)
        a2 = np.take_along_axis(shifted, order_ref, axis=0)
        assert within_all("certify: the shift keeps the order", a1, a2, swap)
        Dc = B - cert[:, None]
        S = _subset_matrix(m, proper=True)
        rc = c0 * Dc.sum(axis=0)[None, :] + (1 - c0) * S @ Dc
        # exactly >= 0 and 0 at the tightest subset, up to lift_err (w >= 1)
        assert np.all(rc >= -lift_err[None, :])
        w = S.sum(axis=1) + c0 * (m - S.sum(axis=1))
        assert within("certify: tight", np.min(rc / w[:, None]), 0.0, float(np.max(lift_err)))


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
        opt_res = ldpopt.optimal_channel(prob, eps, method="enumerate")
        opt = opt_res.value
        cmax = float(np.abs(prob.loss).max())  # B's column sums, the costs, are <= max |loss| <= 1
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
            # D_h's rounding: sum(u) (m u), the slacks ((m + 2) u sum|B - u|), h . g (K u)
            dh_err = (m + K + 2) * U * (np.abs(u).sum() + h @ np.abs(B - u[:, None]).sum(axis=0))
            # that LP at HiGHS's default HIGHS_TOL: reduced costs on ||s*||_1 <= m; rows violated by tol
            # times their duals (|y_x| <= max|B|) and the bound duals of the m K basis candidates
            # (<= 2 max|B|); c0 h . colsum(B) rounds (K + 2) u
            lp_ref = HIGHS_TOL * m * (1 + (2 * K + 1) * float(np.abs(B).max()))
            ref = c0 * h @ B.sum(axis=0) + res.fun
            bound = dh_err + lp_ref + (m + K + 2) * U * float(np.abs(B).sum())
            assert within("Lagrangian D(h) vs fixed-maxima LP", D_h, ref, bound)
            # weak duality, exactly D(h) >= opt: within D_h's rounding and the optimum's lp_err
            assert D_h >= opt - dh_err - lp_err(opt_res, m, eps, cmax)
            # the greedy inner solution is that LP's optimum: a channel with column maxima <= h
            _, s = lp._inner(B, h, c0)
            W = c0 * h[None, :] + s
            # s is clipped to cap = (1.0 - c0) * h: the same product as here, the same bits
            assert np.all(s >= 0) and np.all(s <= (1 - c0) * h[None, :])
            # sum_a s = 1 - c0 sum(h) exactly in exact arithmetic: the cumulative fill (K u sum(cap)),
            # the K products c0 h_a and the row sum (2K + 4) u in all, on terms <= 1
            assert within_all("inner solution: rows", W.sum(axis=1), 1.0, (3 * K + 6) * U)
            # primal-dual pair: sum W B = D(h); m K products and sums, and D_h's own rounding
            wb = float((W * B).sum())
            bound = dh_err + (m * K + 2) * U * float(np.abs(W * B).sum())
            assert within("inner solution: value vs D(h)", wb, D_h, bound)
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
        cmax = float(np.abs(prob.loss).max())
        bound = lp_err(res, m, eps, cmax) + lp_err(direct, m, eps, cmax)
        assert res.status == 0 and within("Lagrangian colgen vs channel LP", res.value, direct.value, bound)
        assert res.iterations <= 60  # pricing at the master's own duals needs > 1000 rounds at m = 256
        assert res.mechanism.is_ldp(eps) and ldpopt.is_maximal(res.mechanism)
        risk = prob.bayes_risk(res.mechanism)
        assert within(
            "decision: risk of the channel vs value",
            risk,
            res.value,
            channel_err(res, m, eps, cmax, m + T + 4),
        )
        # the certificate, by an independent pricing: every action's cheapest subset has rc >= 0, up
        # to the certificate's own min_reduced_cost and the two pricings' rounding
        u, B, c0 = res.certificate.dual, prob.bayes_matrix(), math.exp(-eps)
        floor = min(0.0, res.certificate.min_reduced_cost)
        for a in range(A):
            d = np.sort(B[:, a] - u)
            assert np.min(c0 * d.sum() + (1 - c0) * np.cumsum(d)[:-1]) >= floor - pricing_err(d, c0)
        assert within(
            "certificate: dual value vs value", u.sum(), res.value, dual_value_err(res, m, eps, cmax)
        )


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
        m, cmax = prob.num_inputs, float(np.abs(prob.loss).max())
        for eps in (1e-3, 1.0, 30.0):
            ref_res = ldpopt.optimal_channel(prob, eps, method="enumerate")
            res = ldpopt.optimal_channel(prob, eps, method="colgen")
            bound = lp_err(ref_res, m, eps, cmax) + lp_err(res, m, eps, cmax)
            assert res.status == 0 and within("Lagrangian colgen edge cases", res.value, ref_res.value, bound)
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
