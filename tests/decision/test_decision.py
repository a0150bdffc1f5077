"""optimal_channel: enumeration, column generation, the channel LP and vertex enumeration agree;
the returned channel is eps-LDP, maximal, and its directly computed risk equals the value."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ldpopt
from _errmodel import (
    HIGHS_TOL,
    LIB_LP_TOL,
    R_FN,
    SUPPORT_RTOL,
    U,
    cert_err,
    channel_err,
    decision_lp_err,
    dual_value_err,
    gamma,
    kappa,
    lp_err,
    minimax_dual_lp_err,
    minimax_risk_err,
    pricing_err,
    weights_residual,
    within,
    within_all,
)
from _valuebounds import (
    dp_raw,
    fast_spr_err,
    kov_bound,
    kov_mu_max,
    pair_bound,
    partition_error,
    transform_bound,
    utility_bound,
)
from ldpopt.decision import lp as _colgen
from ldpopt.decision.channel import DecisionProblem
from ldpopt.decision.objectives import ChannelObjective, FDivergenceObjective, MutualInformation
from ldpopt.spr.solve import _reduce
from reference import minimax_dual_lp, polytope_vertices_bruteforce, proper_subsets, reduced_cuts

#: the numerics tests: CI also runs them on numpy's AVX2 and baseline loops (.ci/npy_disable.py)
pytestmark = pytest.mark.numerics

#: ldpopt.decision.lp.RC_RTOL, repeated on purpose: column generation prices down to -RC_RTOL max(scale, |v|)
RC_RTOL = 1e-9


def vertex_err(m, eps, sens):
    """Bound of |objective at a computed vertex - at the exact vertex|, over every vertex of S.

    A vertex c solves S_B^T c = 1 on its support B (extreme rows S_y: e^eps on y, 1 elsewhere).
    Gaussian elimination with partial pivoting (numpy's LU; cddlib's float pivots are counted the
    same; the polish's least squares is at least as stable) is backward stable: the exact solution
    for S_B + dS, |dS| <= eta |S_B|, eta = 2^(m-1) gamma_m (Wilkinson's growth bound), so
    ||dc||_2 <= ||pinv(S_B^T)||_2 eta ||S_B||_F ||c||_2 (first order).  The channel c S moves by
    sum_y |dc_y| ||S_y||_1 <= ||dc||_1 m e^eps, the objective by at most that times ``sens`` (the
    largest |d objective / d Q_xy|: max |B_xa| for a Bayes risk, eps + 2 for mutual information).
    The supports are read from the library's vertex list (combinatorial data of the exact vertices).
    """
    from ldpopt.decision.polytope import polytope_vertices, s_matrix

    rows, verts = polytope_vertices(m, eps)
    S = s_matrix(m, eps)
    eta = 2 ** (m - 1) * gamma(m)
    worst = 0.0
    for v in verts:
        sup = v > 1e-12 * v.max()  # the support as the library reads it (channel._vertex_solve)
        M = S[sup].T
        dc = np.linalg.norm(np.linalg.pinv(M), 2) * eta * np.linalg.norm(M) * np.linalg.norm(v[sup])
        worst = max(worst, math.sqrt(int(sup.sum())) * dc)
    return worst * m * math.exp(eps) * sens


def _random_problem(rng, m, T, A):
    P = rng.dirichlet(np.full(m, 0.7), size=T).T
    # every parameter has its own cheap action, so information about theta has value
    L = 0.6 + 0.4 * rng.random((T, A))
    L[np.arange(T), np.arange(T) % A] = 0.3 * rng.random(T)
    return DecisionProblem(P, L, rng.dirichlet(np.full(T, 2.0)))


def _check_channel(res, prob, eps, risk):
    mech = res.mechanism
    m, T, A = prob.num_inputs, prob.likelihood.shape[1], prob.num_actions
    cmax = float(np.abs(prob.loss).max())
    assert mech.is_ldp(eps)
    assert ldpopt.is_maximal(mech)
    direct = prob.bayes_risk(mech) if risk == "bayes" else prob.minimax_risk(mech)
    # the same channel evaluated twice (channel_err); minimax_risk is itself an LP at HIGHS_TOL
    bound = channel_err(res, m, eps, cmax, m + T + 4)
    if risk == "minimax":
        bound += minimax_risk_err(mech.num_outputs, cmax)
    assert within("decision: risk of the channel vs value", direct, res.value, bound)
    assert res.decision_rule.shape == (mech.num_outputs, prob.num_actions)
    # Bayes: 0/1 rows (exact); minimax: z_a / sum(z): A quotients of a rounded sum, (A + 2) u
    assert within_all("decision rule rows", res.decision_rule.sum(axis=1), 1.0, (A + 2) * U)
    # the decision rule achieves the value
    per_theta = prob.risk(mech, res.decision_rule)
    achieved = float(prob.prior @ per_theta) if risk == "bayes" else float(per_theta.max())
    assert within(
        "decision: risk of the rule vs value",
        achieved,
        res.value,
        channel_err(res, m, eps, cmax, m + T + A + 4),
    )
    # weights: c_y S_y reproduces the channel (paper orientation, rows = outputs): the matrix is the
    # weights' rows normalised (rho / (1 - rho) relative), e^eps c_y against c0 w_y (2 R_FN + 2) and
    # the normalisation's sum and division ((n + 1) u)
    rho = weights_residual(res.weights, m, eps)
    rtol = rho * (1 + 2 * rho) + (2 * R_FN + mech.num_outputs + 4) * U
    for j, (y, c) in enumerate(res.weights.items()):
        row = np.where(np.isin(np.arange(prob.num_inputs), list(y)), math.exp(eps), 1.0) * c
        assert within_all("decision: weights vs channel", row, mech.matrix[:, j], rtol * row)
    cert = res.certificate
    # the certificate is a proven lower bound, within cert_err of the value (tests/_errmodel.py)
    assert cert.verified
    assert within("decision: certificate vs value", cert.bound, res.value, cert_err(res, m, eps, cmax, risk))


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("risk", ["bayes", "minimax"])
def test_enumeration_colgen_and_channel_lp_agree(seed, risk):
    rng = np.random.default_rng(100 + seed)
    m = int(rng.integers(3, 11))
    T, A = int(rng.integers(2, 7)), int(rng.integers(2, 7))
    eps = float(rng.uniform(1.0, 4.0))
    prob = _random_problem(rng, m, T, A)
    results = {
        meth: ldpopt.optimal_channel(prob, eps, risk=risk, method=meth)
        for meth in ("enumerate", "colgen", "direct")
    }
    ref = results["enumerate"].value
    cmax = float(np.abs(prob.loss).max())
    ref_err = lp_err(results["enumerate"], m, eps, cmax, risk)
    for meth, res in results.items():
        assert res.status == 0 and res.method == meth
        bound = ref_err + lp_err(res, m, eps, cmax, risk)
        assert within("decision: LP methods agree", res.value, ref, bound), (meth, res.value, ref)
        _check_channel(res, prob, eps, risk)
    if risk == "bayes":
        assert results["enumerate"].num_outputs <= m  # an optimal vertex has at most m outputs


@pytest.mark.parametrize("seed", range(4))
def test_minimax_epigraph_lp_equals_least_favourable_prior_lp(seed):
    rng = np.random.default_rng(200 + seed)
    m, T, A = int(rng.integers(3, 6)), int(rng.integers(2, 5)), int(rng.integers(2, 5))
    eps = float(rng.uniform(0.5, 2.5))
    prob = _random_problem(rng, m, T, A)
    res = ldpopt.optimal_channel(prob, eps, risk="minimax", method="enumerate")
    dual_value, lam = minimax_dual_lp(prob.likelihood, prob.loss, eps)
    cmax = float(np.abs(prob.loss).max())
    mm_err = lp_err(res, m, eps, cmax, "minimax")
    ref_err = minimax_dual_lp_err(m, eps, cmax)  # the reference LP at HiGHS's default tolerance
    assert within("minimax LP vs least-favourable-prior LP", res.value, dual_value, mm_err + ref_err)
    # the certificate's prior is least favourable: its optimal Bayes risk equals the minimax risk; the
    # prior is HiGHS's dual (reduced costs within LIB_LP_TOL: its Bayes optimum within LIB_LP_TOL kappa
    # at unit scale below the minimax value)
    lf = DecisionProblem(prob.likelihood, prob.loss, res.certificate.prior)
    lf_res = ldpopt.optimal_channel(lf, eps, method="enumerate")
    bound = mm_err + lp_err(lf_res, m, eps, cmax) + 2 * cmax * LIB_LP_TOL * kappa(m, eps)
    assert within("least favourable prior: Bayes = minimax", lf_res.value, res.value, bound)
    # and Bayes risk <= minimax risk for every prior (exactly; each value within its lp_err)
    bayes = ldpopt.optimal_channel(prob, eps)
    assert bayes.value <= res.value + mm_err + lp_err(bayes, m, eps, cmax)


def test_vertex_enumeration_agrees_with_the_lp():
    rng = np.random.default_rng(300)
    for m in (3, 4, 5):
        prob = _random_problem(rng, m, 3, 3)
        eps = float(rng.uniform(0.5, 2.0))
        v = ldpopt.optimal_channel(prob, eps, method="vertex")
        assert v.method == "vertex" and "vertices" in v.message
        en = ldpopt.optimal_channel(prob, eps, method="enumerate")
        # the vertex method picks the best of cdd's vertices and polishes it: within vertex_err of the
        # exact vertices' values twice (the pick and the polish); its residual read a posteriori
        # (lp_err's LP tolerance terms are an upper bound there too)
        cmax = float(np.abs(prob.loss).max())
        bound = lp_err(v, m, eps, cmax) + lp_err(en, m, eps, cmax) + 2 * vertex_err(m, eps, cmax)
        assert within("vertex enumeration vs LP (Bayes)", v.value, en.value, bound)
        mi = MutualInformation(rng.dirichlet(np.ones(m)))
        a = ldpopt.optimal_channel(mi, eps, method="vertex")
        b = ldpopt.optimal_channel(mi, eps, method="enumerate")
        # mutual information: every contribution |V_x prior_x log(V_x / prior.V)| <= eps prior_x V_x,
        # so cmax <= eps; a relative change eta of the channel moves it by at most eta (eps + 2)
        bound = lp_err(a, m, eps, eps) + lp_err(b, m, eps, eps) + 2 * vertex_err(m, eps, eps + 2)
        assert within("vertex enumeration vs LP (MI)", a.value, b.value, bound) and a.sense == "max"


def test_vertex_enumeration_of_a_concave_channel_objective():
    # the minimum of two Bayes risks (two priors) is concave but not row-additive
    rng = np.random.default_rng(301)
    m, eps = 4, 1.2
    P = rng.dirichlet(np.ones(m), size=3).T
    L = 1.0 - np.eye(3)
    probs = [DecisionProblem(P, L, rng.dirichlet(np.ones(3))) for _ in range(2)]
    obj = ChannelObjective(lambda Q: min(p.bayes_risk(Q) for p in probs), m, sense="min", name="min-of-two")
    res = ldpopt.optimal_channel(obj, eps)
    assert res.method == "vertex" and res.decision_rule is None
    # brute force: evaluate at every basic feasible solution of S (independent vertex list)
    import itertools

    subs = [c for r in range(1, m) for c in itertools.combinations(range(m), r)]
    best = math.inf
    rho_bf = 0.0
    for c in polytope_vertices_bruteforce(m, eps):
        cols = np.array(
            [
                np.where(np.isin(np.arange(m), subs[j]), math.exp(eps), 1.0) * c[j]
                for j in np.flatnonzero(c > 1e-12)
            ]
        ).T
        rho_bf = max(rho_bf, float(np.max(np.abs(cols.sum(axis=1) - 1.0))))
        best = min(best, obj.func(cols))
    # both sides evaluate the same exact vertices computed by backward stable solves (vertex_err each;
    # the loss is in [0, 1]), the library's pick polished once more; the brute force's columns are not
    # normalised (rows off by rho_bf: the risk by rho_bf), the library's are (weights_residual); the
    # evaluations round (m + 7) u
    rho = weights_residual(res.weights, m, eps)
    bound = 3 * vertex_err(m, eps, 1.0) + rho_bf + rho + 2 * (m + 7) * U
    assert within("concave objective: vertices vs brute-force bases", res.value, best, bound)
    # the same channel, through the mechanism's normalised rows
    assert within(
        "concave objective: value vs mechanism", obj.evaluate(res.mechanism), res.value, rho + 2 * (m + 7) * U
    )


@pytest.mark.parametrize("div", ["kl", "tv", "chi2", "hellinger", "js", "renyi:2", "egamma:1.5"])
def test_f_divergence_lp_equals_spr_and_kov(div):
    rng = np.random.default_rng(sum(map(ord, div)))
    for _ in range(3):
        k = int(rng.integers(3, 8))
        p0, p1 = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
        eps = float(rng.uniform(0.2, 3.0))
        obj = FDivergenceObjective(p0, p1, div)
        lp = ldpopt.optimal_channel(obj, eps, method="enumerate")
        spr_res = ldpopt.optimal_mechanism(p0, p1, eps, div)
        spr = spr_res.value
        d = ldpopt.get_divergence(div)
        # raw scale: the LP's costs are the KOV scores mu_H (cmax = max |mu_H|: kov's M); the fast
        # SPR path within fast_spr_err; the KOV LP within kov_bound; mapped through the transform
        cmax = kov_mu_max(p0, p1, eps, d)
        raw = dp_raw(p0, p1, eps, d)
        lp_raw_err = lp_err(lp, k, eps, cmax)
        spr_err = fast_spr_err(p0, p1, eps, d)
        assert within("f-divergence LP vs SPR", lp.value, spr, transform_bound(d, raw, lp_raw_err + spr_err))
        kov_err = kov_bound(p0, p1, eps, d)
        kov = ldpopt.kov_lp(p0, p1, eps, div).value
        assert within(
            "f-divergence LP vs KOV LP", lp.value, kov, transform_bound(d, raw, lp_raw_err + kov_err)
        )
        # method="spr" re-evaluates the SPR partition through the objective (a channel-product path,
        # utility_bound's model) against the SPR value of the same partition (partition_error, and
        # pair_bound for the fast path's scores)
        red = _reduce(p0, p1)
        cuts = reduced_cuts(red, spr_res.partition)
        e = partition_error(red.p, red.q, eps, d, cuts) + pair_bound(red.p, red.q, eps, d, cuts)
        e += utility_bound(spr_res.mechanism.matrix, p0, p1, d, (R_FN + 3) * U)
        via = ldpopt.optimal_channel(obj, eps, method="spr").value
        assert within("method='spr' vs optimal_mechanism", via, spr, transform_bound(d, raw, e))
        # the LP's channel: its weights' rows normalised (weights_residual) through the product path,
        # against the value from the weights (its rounding: (k + n + 2) u kappa cmax)
        rho = weights_residual(lp.weights, k, eps)
        rtol = rho * (1 + 2 * rho) + (2 * R_FN + lp.num_outputs + 4) * U
        e = (
            utility_bound(lp.mechanism.matrix, p0, p1, d, rtol)
            + (k + lp.num_outputs + 2) * U * kappa(k, eps) * cmax
        )
        util = lp.mechanism.utility(p0, p1, div)
        assert within("f-divergence LP: utility of its channel", util, lp.value, transform_bound(d, raw, e))
        assert ldpopt.is_maximal(lp.mechanism)


def test_colgen_m64_split_problem_equals_enumeration_of_its_quotient():
    # splitting every symbol into 8 copies with theta-independent proportions changes no optimum
    # (merge the copies' rows of any channel: same output law for every theta)
    rng = np.random.default_rng(400)
    m0, T, A, eps = 8, 4, 4, 1.5
    P0 = rng.dirichlet(np.ones(m0), size=T).T
    L = 1.0 - np.eye(T, A) + 0.5 * rng.random((T, A))
    split = rng.dirichlet(np.ones(8), size=m0)
    P = (P0[:, None, :] * split[:, :, None]).reshape(64, T)
    small, big = DecisionProblem(P0, L), DecisionProblem(P, L)
    cmax = float(np.abs(L).max())
    for risk in ("bayes", "minimax"):
        ref_res = ldpopt.optimal_channel(small, eps, risk=risk, method="enumerate")
        res = ldpopt.optimal_channel(big, eps, risk=risk, method="colgen")
        bound = lp_err(ref_res, 8, eps, cmax, risk) + lp_err(res, 64, eps, cmax, risk)
        assert res.status == 0 and within("colgen m = 64 vs its quotient", res.value, ref_res.value, bound)
        _check_channel(res, big, eps, risk)


def test_colgen_m64_random_bayes_matches_channel_lp_with_certificate():
    rng = np.random.default_rng(401)
    for _ in range(2):
        prob = DecisionProblem(
            rng.dirichlet(np.ones(64), size=5).T, 1.0 - np.eye(5, 4) + 0.4 * rng.random((5, 4))
        )
        res = ldpopt.optimal_channel(prob, 1.5, method="colgen")
        direct = ldpopt.optimal_channel(prob, 1.5, method="direct")
        cmax = float(np.abs(prob.loss).max())
        bound = lp_err(res, 64, 1.5, cmax) + lp_err(direct, 64, 1.5, cmax)
        assert within("colgen vs channel LP (m = 64)", res.value, direct.value, bound)
        _check_channel(res, prob, 1.5, "bayes")
        # the dual certificate, checked by an independent pricing: sort d = B_a - u per action; its
        # minimum is the certificate's min_reduced_cost up to the two pricings' rounding
        u, B, c0 = res.certificate.dual, prob.bayes_matrix(), math.exp(-1.5)
        floor = min(0.0, res.certificate.min_reduced_cost)
        for a in range(4):
            d = np.sort(B[:, a] - u)
            prefix = np.cumsum(d)[:-1]
            assert np.min(c0 * d.sum() + (1 - c0) * prefix) >= floor - pricing_err(d, c0)
        assert within(
            "certificate: dual value vs value", u.sum(), res.value, dual_value_err(res, 64, 1.5, cmax)
        )


def test_colgen_backends_and_iteration_limit():
    rng = np.random.default_rng(402)
    prob = _random_problem(rng, 9, 4, 4)
    B = prob.bayes_matrix()
    c0 = math.exp(-1.0)
    # the master values (not polished: HiGHS's residual LIB_LP_TOL plus the support's dropped weights)
    rho = LIB_LP_TOL + 10 * SUPPORT_RTOL * kappa(9, 1.0)
    for duals in ("lagrangian", "in-out"):
        a = _colgen.column_generation(c0, B=B, backend="linprog", duals=duals)
        b = _colgen.column_generation(c0, B=B, backend="auto", duals=duals)
        bound = 2 * decision_lp_err(9, 1.0, 1.0, rho, "colgen")
        assert a.status == 0 and within("colgen backends agree", a.value, b.value, bound)
    full = ldpopt.optimal_channel(prob, 2.0, risk="minimax", method="colgen")
    assert full.iterations > 1
    capped = ldpopt.optimal_channel(prob, 2.0, risk="minimax", method="colgen", max_iter=1)
    # stopped early: still a feasible eps-LDP maximal channel and a valid dual bound: exactly
    # capped >= v* >= bound; the values within their residual's and tolerance's errors
    assert capped.status == 1 and "iteration limit" in capped.message
    cmax = float(np.abs(prob.loss).max())
    full_err = lp_err(full, 9, 2.0, cmax, "minimax")
    assert capped.value >= full.value - full_err - lp_err(capped, 9, 2.0, cmax, "minimax", "enumerate")
    assert capped.certificate.bound <= full.value + full_err + dual_value_err(capped, 9, 2.0, cmax)
    assert ldpopt.is_maximal(capped.mechanism)


def test_colgen_warm_start_seed_keeps_the_optimum():
    rng = np.random.default_rng(403)
    prob = _random_problem(rng, 9, 4, 4)
    B, c0 = prob.bayes_matrix(), math.exp(-1.0)
    ref = _colgen.solve_pair_lp(*_all_pairs(9, 4), c0, costs=_colgen.pair_costs(*_all_pairs(9, 4), B, c0))
    # seeded with an optimal support (the diagnostic of bench_decision.py) or with arbitrary columns,
    # including duplicates of the RR seed: the same optimum and a certificate
    arbitrary = (rng.random((12, 9)) < 0.5, rng.integers(0, 4, 12))
    arbitrary[0][:, 0] = True
    arbitrary[0][:, 1] = False  # non-empty proper subsets
    rho = LIB_LP_TOL + 10 * SUPPORT_RTOL * kappa(9, 1.0)  # master values: HiGHS's own residual
    scale = float(np.abs(B).sum(axis=0).max())
    for seed in ((ref.rows, ref.actions), arbitrary, (np.eye(9, dtype=bool), np.zeros(9, int))):
        for duals in ("lagrangian", "in-out"):
            res = _colgen.column_generation(c0, B=B, seed=seed, duals=duals)
            bound = decision_lp_err(9, 1.0, 1.0, rho, "colgen") + decision_lp_err(
                9, 1.0, 1.0, rho, "enumerate"
            )
            assert res.status == 0 and within("colgen warm start vs all pairs", res.value, ref.value, bound)
            # the returned duals: the master's when no column prices below -RC_RTOL max(scale, |v|), else
            # the proven bound's (exactly dual feasible, lifted in float): the minimum recomputed
            rc_floor = RC_RTOL * max(scale, abs(res.value)) + pricing_err(B.ravel() - np.repeat(res.u, 4), c0)
            assert _colgen.min_reduced_cost(B, res.u, c0) >= -rc_floor


def _all_pairs(m, K):
    subsets = _subset_matrix(m, proper=True).astype(bool)
    return np.repeat(subsets, K, axis=0), np.tile(np.arange(K), subsets.shape[0])


def test_two_inputs_give_binary_randomized_response():
    # Corollary 3.13: the only maximal channel on two inputs is binary RR
    prob = DecisionProblem([[0.9, 0.2], [0.1, 0.8]], [[0, 1], [1, 0]])
    res = ldpopt.optimal_channel(prob, 0.8)
    # the result's rows are its weights' rows normalised (weights_residual, and e^eps c against c0 w
    # with the normalisation: (2 R_FN + n + 4) u); RR's levels (R_FN + 3) u (tests/test_mechanism.py)
    rho = weights_residual(res.weights, 2, 0.8)
    rtol = rho * (1 + 2 * rho) + (2 * R_FN + res.num_outputs + 4) * U + (R_FN + 3) * U
    a = ldpopt.canonical_form(res.mechanism).matrix
    b = ldpopt.canonical_form(ldpopt.randomized_response(2, 0.8)).matrix
    assert within_all("two inputs: binary RR", a, b, rtol * b)


def test_auto_choices_are_reported():
    rng = np.random.default_rng(403)
    assert ldpopt.optimal_channel(_random_problem(rng, 6, 3, 3), 1.0).method == "enumerate"
    assert ldpopt.optimal_channel(_random_problem(rng, 14, 3, 3), 1.0).method == "direct"
    assert ldpopt.optimal_channel(_random_problem(rng, 14, 3, 3), 1.0, risk="minimax").method == "direct"
    p0, p1 = rng.dirichlet(np.ones(24)), rng.dirichlet(np.ones(24))
    res = ldpopt.optimal_channel(FDivergenceObjective(p0, p1, "kl"), 1.0)
    spr_res = ldpopt.optimal_mechanism(p0, p1, 1.0)
    # the same partition re-evaluated through the objective (see test_f_divergence_lp_equals_spr_and_kov)
    red = _reduce(p0, p1)
    cuts = reduced_cuts(red, spr_res.partition)
    e = partition_error(red.p, red.q, 1.0, "kl", cuts) + pair_bound(red.p, red.q, 1.0, "kl", cuts)
    e += utility_bound(spr_res.mechanism.matrix, p0, p1, "kl", (R_FN + 3) * U)
    assert res.method == "spr" and within("method='spr' vs optimal_mechanism", res.value, spr_res.value, e)
    with pytest.raises(ValueError, match="group"):
        ldpopt.optimal_channel(MutualInformation(num_inputs=24), 1.0)
    sym = ldpopt.PermutationGroup.symmetric(24)
    assert ldpopt.optimal_channel(MutualInformation(num_inputs=24), 1.0, group=sym).method == "symmetry"


def test_result_fields_labels_and_immutability():
    prob = DecisionProblem(
        [[0.6, 0.1, 0.2], [0.3, 0.3, 0.2], [0.1, 0.6, 0.6]],
        [[0, 1], [1, 0], [1, 0.2]],
        labels=["lo", "mid", "hi"],
        action_labels=["keep", "flag"],
    )
    res = ldpopt.optimal_channel(prob, 1.0)
    assert res.mechanism.labels == ("lo", "mid", "hi")
    assert all(isinstance(k, frozenset) for k in res.weights)
    assert res.subsets == tuple(res.weights)
    assert res.num_outputs == len(res.weights) and res.risk == "bayes" and res.sense == "min"
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.value = 0.0
    with pytest.raises(TypeError):
        res.weights[frozenset({0})] = 1.0


def test_bad_inputs_raise_clear_errors():
    prob = DecisionProblem([[0.5, 0.5], [0.5, 0.5]], [[0, 1], [1, 0]])
    with pytest.raises(ValueError, match="risk"):
        ldpopt.optimal_channel(prob, 1.0, risk="worst")
    with pytest.raises(ValueError, match="method"):
        ldpopt.optimal_channel(prob, 1.0, method="magic")
    with pytest.raises(ValueError, match="eps"):
        ldpopt.optimal_channel(prob, math.inf)
    with pytest.raises(ValueError, match="minimax"):
        ldpopt.optimal_channel(prob, 1.0, risk="minimax", method="vertex")
    with pytest.raises(TypeError, match="DecisionProblem"):
        ldpopt.optimal_channel(np.eye(2), 1.0)
    big = DecisionProblem(np.full((19, 2), 1 / 19), [[0, 1], [1, 0]])
    with pytest.raises(ValueError, match="colgen"):
        ldpopt.optimal_channel(big, 1.0, method="enumerate")
    obj = ChannelObjective(lambda Q: 0.0, 3)
    with pytest.raises(ValueError, match="vertex"):
        ldpopt.optimal_channel(obj, 1.0, method="enumerate")
    with pytest.raises(ValueError, match="linear_pieces"):
        ldpopt.optimal_channel(MutualInformation(num_inputs=3), 1.0, method="colgen")
    with pytest.raises(ValueError, match="column 1 sums"):
        DecisionProblem([[0.5, 0.5], [0.5, 0.4]], [[0, 1], [1, 0]])
    with pytest.raises(ValueError, match="NaN"):
        DecisionProblem([[0.5, math.nan], [0.5, 0.5]], [[0, 1], [1, 0]])
    with pytest.raises(ValueError, match="one row per parameter"):
        DecisionProblem([[0.5, 0.5], [0.5, 0.5]], [[0, 1], [1, 0], [1, 1]])
    with pytest.raises(ValueError, match="prior"):
        DecisionProblem([[0.5, 0.5], [0.5, 0.5]], [[0, 1], [1, 0]], prior=[0.2, 0.2])
    # negative losses are allowed
    neg = DecisionProblem([[0.7, 0.2], [0.3, 0.8]], [[-1, 0], [0, -1]])
    assert ldpopt.optimal_channel(neg, 1.0).value < 0


@settings(max_examples=20)
@given(st.integers(0, 10**6), st.sampled_from(["bayes", "minimax"]))
def test_invariances_of_the_optimal_risk(seed, risk):
    rng = np.random.default_rng(seed)
    m, T, A = int(rng.integers(3, 6)), int(rng.integers(2, 4)), int(rng.integers(2, 4))
    eps = float(rng.uniform(0.5, 3.0))
    prob = _random_problem(rng, m, T, A)
    base = ldpopt.optimal_channel(prob, eps, risk=risk)
    value = base.value
    cmax = float(np.abs(prob.loss).max())
    err = lp_err(base, m, eps, cmax, risk)  # every exact identity below holds up to the two lp_errs
    # relabelling the inputs, the parameters and the actions changes nothing
    px, pt, pa = rng.permutation(m), rng.permutation(T), rng.permutation(A)
    perm = DecisionProblem(prob.likelihood[px][:, pt], prob.loss[pt][:, pa], prob.prior[pt])
    r = ldpopt.optimal_channel(perm, eps, risk=risk)
    assert within("invariance: relabelling", r.value, value, err + lp_err(r, m, eps, cmax, risk))
    # a positive scale of the loss scales the risk (2.5 * loss and 2.5 * value: one rounding each)
    scaled = DecisionProblem(prob.likelihood, 2.5 * prob.loss, prob.prior)
    r = ldpopt.optimal_channel(scaled, eps, risk=risk)
    bound = 2.5 * err + lp_err(r, m, eps, 2.5 * cmax, risk) + 2.5 * U * (abs(value) + cmax)
    assert within("invariance: loss scale", r.value, 2.5 * value, bound)
    # more privacy budget never hurts (Blackwell: RR_eps is a garbling of RR_eps')
    r = ldpopt.optimal_channel(prob, eps + 0.5, risk=risk)
    assert r.value <= value + err + lp_err(r, m, eps + 0.5, cmax, risk)
    # Bayes: adding b(theta) to the loss adds sum_theta lambda_theta b(theta)
    if risk == "bayes":
        b = rng.normal(size=T)
        shifted = DecisionProblem(prob.likelihood, prob.loss + b[:, None], prob.prior)
        r = ldpopt.optimal_channel(shifted, eps)
        cs = float(np.abs(shifted.loss).max())
        # prior @ b: T terms ((T + 1) u sum|lambda b|), the shifted loss rounds (u |loss + b|), the sum
        bound = (
            err + lp_err(r, m, eps, cs) + (T + 2) * U * float(prob.prior @ np.abs(b)) + U * (cs + abs(value))
        )
        assert within("invariance: loss shift", r.value, value + prob.prior @ b, bound)
    # bounded by the perfect- and the no-information risks (m and T term sums, (m + T) u cmax)
    if risk == "bayes":
        full_info = float(prob.bayes_matrix().min(axis=1).sum())
        no_info = float((prob.prior @ prob.loss).min())
        slack = err + (m + T + 2) * U * cmax
        assert full_info - slack <= value <= no_info + slack


def test_user_objective_with_linear_pieces_uses_every_lp_method():
    rng = np.random.default_rng(404)
    prob = _random_problem(rng, 6, 3, 3)
    B = prob.bayes_matrix()

    class Pieces(ldpopt.decision.objectives.RowAdditiveObjective):
        num_inputs, sense, name = 6, "min", "pieces"

        def rows(self, V):
            return (V @ B).min(axis=1)

        def linear_pieces(self):
            return B

    ref_res = ldpopt.optimal_channel(prob, 1.7, method="enumerate")
    ref = ref_res.value
    cmax = float(np.abs(prob.loss).max())  # the pieces' costs are <= the loss's column sums of B
    for method in ("enumerate", "colgen", "direct", "auto"):
        res = ldpopt.optimal_channel(Pieces(), 1.7, method=method)
        bound = lp_err(ref_res, 6, 1.7, cmax) + lp_err(res, 6, 1.7, cmax)
        assert within("linear pieces: every LP method", res.value, ref, bound), method
        if method in ("colgen", "direct"):
            assert res.decision_rule.shape == (res.num_outputs, 3)
    assert ldpopt.optimal_channel(MutualInformation(num_inputs=4), 1.0).decision_rule is None


def test_colgen_stopped_after_purging_returns_a_consistent_channel():
    # a small purge threshold forces column deletions before the iteration limit is hit
    rng = np.random.default_rng(405)
    prob = DecisionProblem(
        rng.dirichlet(np.full(40, 0.5), size=4).T, 1.0 - np.eye(4) + 0.3 * rng.random((4, 4))
    )
    B, c0 = prob.bayes_matrix(), math.exp(-1.0)
    full = _colgen.column_generation(c0, B=B, purge=1, duals="in-out")
    assert full.status == 0 and full.iterations > 5
    early = _colgen.column_generation(c0, B=B, purge=1, max_iter=full.iterations - 2, duals="in-out")
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
    cost = float(early.z @ _colgen.pair_costs(early.rows, early.actions, B, c0))
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
            "action slacks vs every subset", _colgen.action_slacks(B, u, c0), every.min(axis=0), bound
        )

        # lagrangian_point maximises L(u, h) = sum(u) + h . g(u): L is separable and concave along
        # each u_x, so no single-coordinate move to any breakpoint or nearby point improves it
        h = _random_weights(rng, K, c0)
        ustar = _colgen.lagrangian_point(B, h, c0)

        def lag(v, h=h, B=B, c0=c0):
            return v.sum() + h @ _colgen.action_slacks(B, v, c0)

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
        cert, order, rc_cert = _colgen._certify(B, u, c0)
        # the pricing it returns is the pricing at the lifted point (the shift keeps the order)
        order_ref, rc_ref = _colgen.price(B - cert[:, None], c0)
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
        prob = _random_problem(rng, int(rng.integers(2, 7)), 3, int(rng.integers(2, 5)))
        B, eps = prob.bayes_matrix(), float(rng.uniform(0.2, 3.0))
        c0 = math.exp(-eps)
        m, K = B.shape
        opt_res = ldpopt.optimal_channel(prob, eps, method="enumerate")
        opt = opt_res.value
        cmax = float(np.abs(prob.loss).max())  # B's column sums, the costs, are <= max |loss| <= 1
        for _ in range(5):
            h = _random_weights(rng, K, c0)
            u = _colgen.lagrangian_point(B, h, c0)
            D_h = u.sum() + h @ _colgen.action_slacks(B, u, c0)
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
            _, s = _colgen._inner(B, h, c0)
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
            for y, a in _colgen._layers(s):  # layers: nested level sets of each column
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
            _check_channel(res, prob, eps, "bayes")


def test_colgen_duals_argument_is_validated():
    B = np.array([[0.1, 0.5], [0.4, 0.2], [0.3, 0.3]])
    with pytest.raises(ValueError, match="duals"):
        _colgen.column_generation(0.5, B=B, duals="fast")
    with pytest.raises(ValueError, match="minimax"):
        _colgen.column_generation(0.5, P=np.full((3, 2), 1 / 3), L=np.eye(2), duals="lagrangian")


def test_colgen_master_failure_after_the_first_round_is_reported(monkeypatch):
    # a failed master solve returns no duals: the result is a clean failure (status 4, no channel)
    real = _colgen.make_master

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

    monkeypatch.setattr(_colgen, "make_master", flaky_master)
    prob = _random_problem(np.random.default_rng(404), 8, 3, 3)
    res = ldpopt.optimal_channel(prob, 1.0, risk="minimax", method="colgen")
    assert res.status == 4 and "injected failure" in res.message
    assert res.mechanism is None and math.isnan(res.value)
