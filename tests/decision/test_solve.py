"""optimal_channel: enumeration, column generation, the channel LP and vertex enumeration agree;
the returned channel is eps-LDP, maximal, and its directly computed risk equals the value."""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pytest
from decision_cases import check_channel, random_problem
from hypothesis import given, settings
from hypothesis import strategies as st

import ldpopt
from _errmodel import (
    LIB_LP_TOL,
    R_FN,
    U,
    dual_value_err,
    gamma,
    kappa,
    lp_err,
    minimax_dual_lp_err,
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
from ldpopt.decision.objectives import ChannelObjective, FDivergenceObjective, MutualInformation
from ldpopt.decision.polytope import polytope_vertices, s_matrix
from ldpopt.decision.problem import DecisionProblem
from ldpopt.spr.reduction import likelihood_ratio_reduction
from reference import minimax_dual_lp, polytope_vertices_bruteforce, reduced_cuts

#: the numerics tests: CI also runs them on numpy's AVX2 and baseline loops (.ci/npy_disable.py)
pytestmark = pytest.mark.numerics


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
    rows, verts = polytope_vertices(m, eps)
    S = s_matrix(m, eps)
    eta = 2 ** (m - 1) * gamma(m)
    worst = 0.0
    for v in verts:
        sup = v > 1e-12 * v.max()  # the support as the library reads it (methods.vertex._polytope_vertices)
        M = S[sup].T
        dc = np.linalg.norm(np.linalg.pinv(M), 2) * eta * np.linalg.norm(M) * np.linalg.norm(v[sup])
        worst = max(worst, math.sqrt(int(sup.sum())) * dc)
    return worst * m * math.exp(eps) * sens


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("risk", ["bayes", "minimax"])
def test_enumeration_colgen_and_channel_lp_agree(seed, risk):
    rng = np.random.default_rng(100 + seed)
    m = int(rng.integers(3, 11))
    T, A = int(rng.integers(2, 7)), int(rng.integers(2, 7))
    eps = float(rng.uniform(1.0, 4.0))
    prob = random_problem(rng, m, T, A)
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
        check_channel(res, prob, eps, risk)
    if risk == "bayes":
        assert results["enumerate"].num_outputs <= m  # an optimal vertex has at most m outputs


@pytest.mark.parametrize("seed", range(4))
def test_minimax_epigraph_lp_equals_least_favourable_prior_lp(seed):
    rng = np.random.default_rng(200 + seed)
    m, T, A = int(rng.integers(3, 6)), int(rng.integers(2, 5)), int(rng.integers(2, 5))
    eps = float(rng.uniform(0.5, 2.5))
    prob = random_problem(rng, m, T, A)
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
        prob = random_problem(rng, m, 3, 3)
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
        red = likelihood_ratio_reduction(p0, p1)
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
        check_channel(res, big, eps, risk)


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
        check_channel(res, prob, 1.5, "bayes")
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
    assert ldpopt.optimal_channel(random_problem(rng, 6, 3, 3), 1.0).method == "enumerate"
    assert ldpopt.optimal_channel(random_problem(rng, 14, 3, 3), 1.0).method == "direct"
    assert ldpopt.optimal_channel(random_problem(rng, 14, 3, 3), 1.0, risk="minimax").method == "direct"
    p0, p1 = rng.dirichlet(np.ones(24)), rng.dirichlet(np.ones(24))
    res = ldpopt.optimal_channel(FDivergenceObjective(p0, p1, "kl"), 1.0)
    spr_res = ldpopt.optimal_mechanism(p0, p1, 1.0)
    # the same partition re-evaluated through the objective (see test_f_divergence_lp_equals_spr_and_kov)
    red = likelihood_ratio_reduction(p0, p1)
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
    assert res.status == 0 and res.success and res.message.startswith("optimal")
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.value = 0.0
    with pytest.raises(TypeError):
        res.weights[frozenset({0})] = 1.0


def test_method_table_and_auto_choice():
    # one solver per method name; "auto" is not a method but a choice among them
    assert tuple(ldpopt.decision.METHODS) == ("enumerate", "colgen", "direct", "vertex", "symmetry", "spr")
    assert ldpopt.decision.RISKS == ("bayes", "minimax")
    prob = DecisionProblem([[0.5, 0.5], [0.5, 0.5]], [[0, 1], [1, 0]])
    names = "('auto', 'enumerate', 'colgen', 'direct', 'vertex', 'symmetry', 'spr')"
    with pytest.raises(ValueError, match=re.escape(f"method must be one of {names}, got method='magic'")):
        ldpopt.optimal_channel(prob, 1.0, method="magic")
    for method in (
        "enumerate",
        "colgen",
        "direct",
        "vertex",
    ):  # symmetry and spr need a group, an f-divergence
        assert ldpopt.optimal_channel(prob, 1.0, method=method).method == method


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
    prob = random_problem(rng, m, T, A)
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
    prob = random_problem(rng, 6, 3, 3)
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
