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
from ldpopt.decision import lp as _colgen
from ldpopt.decision.channel import DecisionProblem
from ldpopt.decision.objectives import ChannelObjective, FDivergenceObjective, MutualInformation
from reference import minimax_dual_lp, polytope_vertices_bruteforce, proper_subsets

TOL = 1e-8


def _random_problem(rng, m, T, A):
    P = rng.dirichlet(np.full(m, 0.7), size=T).T
    # every parameter has its own cheap action, so information about theta has value
    L = 0.6 + 0.4 * rng.random((T, A))
    L[np.arange(T), np.arange(T) % A] = 0.3 * rng.random(T)
    return DecisionProblem(P, L, rng.dirichlet(np.full(T, 2.0)))


def _check_channel(res, prob, eps, risk):
    mech = res.mechanism
    assert mech.is_ldp(eps)
    assert ldpopt.is_maximal(mech)
    direct = prob.bayes_risk(mech) if risk == "bayes" else prob.minimax_risk(mech)
    assert direct == pytest.approx(res.value, abs=TOL)
    assert res.decision_rule.shape == (mech.num_outputs, prob.num_actions)
    assert np.allclose(res.decision_rule.sum(axis=1), 1.0)
    # the decision rule achieves the value
    per_theta = prob.risk(mech, res.decision_rule)
    achieved = float(prob.prior @ per_theta) if risk == "bayes" else float(per_theta.max())
    assert achieved == pytest.approx(res.value, abs=TOL)
    # weights: c_y S_y reproduces the channel (paper orientation, rows = outputs)
    for j, (y, c) in enumerate(res.weights.items()):
        row = np.where(np.isin(np.arange(prob.num_inputs), list(y)), math.exp(eps), 1.0) * c
        assert np.allclose(row, mech.matrix[:, j], rtol=1e-9)
    cert = res.certificate
    assert cert.verified and cert.bound == pytest.approx(res.value, abs=TOL)


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
    for meth, res in results.items():
        assert res.status == 0 and res.method == meth
        assert res.value == pytest.approx(ref, abs=TOL)
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
    assert res.value == pytest.approx(dual_value, abs=TOL)
    # the certificate's prior is least favourable: its optimal Bayes risk equals the minimax risk
    lf = DecisionProblem(prob.likelihood, prob.loss, res.certificate.prior)
    assert ldpopt.optimal_channel(lf, eps, method="enumerate").value == pytest.approx(res.value, abs=TOL)
    # and Bayes risk <= minimax risk for every prior
    assert ldpopt.optimal_channel(prob, eps).value <= res.value + TOL


def test_vertex_enumeration_agrees_with_the_lp():
    rng = np.random.default_rng(300)
    for m in (3, 4, 5):
        prob = _random_problem(rng, m, 3, 3)
        eps = float(rng.uniform(0.5, 2.0))
        v = ldpopt.optimal_channel(prob, eps, method="vertex")
        assert v.method == "vertex" and "vertices" in v.message
        assert v.value == pytest.approx(ldpopt.optimal_channel(prob, eps, method="enumerate").value, abs=TOL)
        mi = MutualInformation(rng.dirichlet(np.ones(m)))
        a = ldpopt.optimal_channel(mi, eps, method="vertex")
        b = ldpopt.optimal_channel(mi, eps, method="enumerate")
        assert a.value == pytest.approx(b.value, abs=TOL) and a.sense == "max"


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
    for c in polytope_vertices_bruteforce(m, eps):
        cols = np.array(
            [
                np.where(np.isin(np.arange(m), subs[j]), math.exp(eps), 1.0) * c[j]
                for j in np.flatnonzero(c > 1e-12)
            ]
        ).T
        best = min(best, obj.func(cols))
    assert res.value == pytest.approx(best, abs=TOL)
    assert obj.evaluate(res.mechanism) == pytest.approx(res.value, abs=TOL)


@pytest.mark.parametrize("div", ["kl", "tv", "chi2", "hellinger", "js", "renyi:2", "egamma:1.5"])
def test_f_divergence_lp_equals_spr_and_kov(div):
    rng = np.random.default_rng(sum(map(ord, div)))
    for _ in range(3):
        k = int(rng.integers(3, 8))
        p0, p1 = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
        eps = float(rng.uniform(0.2, 3.0))
        obj = FDivergenceObjective(p0, p1, div)
        lp = ldpopt.optimal_channel(obj, eps, method="enumerate")
        spr = ldpopt.optimal_mechanism(p0, p1, eps, div).value
        assert lp.value == pytest.approx(spr, rel=1e-8, abs=1e-12)
        assert lp.value == pytest.approx(ldpopt.kov_lp(p0, p1, eps, div).value, rel=1e-8, abs=1e-12)
        assert ldpopt.optimal_channel(obj, eps, method="spr").value == pytest.approx(spr, rel=1e-12)
        assert lp.mechanism.utility(p0, p1, div) == pytest.approx(lp.value, rel=1e-8, abs=1e-12)
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
    for risk in ("bayes", "minimax"):
        ref = ldpopt.optimal_channel(small, eps, risk=risk, method="enumerate").value
        res = ldpopt.optimal_channel(big, eps, risk=risk, method="colgen")
        assert res.status == 0 and res.value == pytest.approx(ref, abs=TOL)
        _check_channel(res, big, eps, risk)


def test_colgen_m64_random_bayes_matches_channel_lp_with_certificate():
    rng = np.random.default_rng(401)
    for _ in range(2):
        prob = DecisionProblem(
            rng.dirichlet(np.ones(64), size=5).T, 1.0 - np.eye(5, 4) + 0.4 * rng.random((5, 4))
        )
        res = ldpopt.optimal_channel(prob, 1.5, method="colgen")
        direct = ldpopt.optimal_channel(prob, 1.5, method="direct")
        assert res.value == pytest.approx(direct.value, abs=TOL)
        _check_channel(res, prob, 1.5, "bayes")
        # the dual certificate, checked by an independent pricing: sort d = B_a - u per action
        u, B, c0 = res.certificate.dual, prob.bayes_matrix(), math.exp(-1.5)
        for a in range(4):
            d = np.sort(B[:, a] - u)
            prefix = np.cumsum(d)[:-1]
            assert np.min(c0 * d.sum() + (1 - c0) * prefix) >= -1e-9
        assert u.sum() == pytest.approx(res.value, abs=TOL)


def test_colgen_backends_and_iteration_limit():
    rng = np.random.default_rng(402)
    prob = _random_problem(rng, 9, 4, 4)
    B = prob.bayes_matrix()
    c0 = math.exp(-1.0)
    for duals in ("lagrangian", "in-out"):
        a = _colgen.column_generation(c0, B=B, backend="linprog", duals=duals)
        b = _colgen.column_generation(c0, B=B, backend="auto", duals=duals)
        assert a.status == 0 and a.value == pytest.approx(b.value, abs=TOL)
    full = ldpopt.optimal_channel(prob, 2.0, risk="minimax", method="colgen")
    assert full.iterations > 1
    capped = ldpopt.optimal_channel(prob, 2.0, risk="minimax", method="colgen", max_iter=1)
    # stopped early: still a feasible eps-LDP maximal channel and a valid dual bound
    assert capped.status == 1 and "iteration limit" in capped.message
    assert capped.value >= full.value - TOL
    assert capped.certificate.bound <= full.value + TOL
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
    for seed in ((ref.rows, ref.actions), arbitrary, (np.eye(9, dtype=bool), np.zeros(9, int))):
        for duals in ("lagrangian", "in-out"):
            res = _colgen.column_generation(c0, B=B, seed=seed, duals=duals)
            assert res.status == 0 and res.value == pytest.approx(ref.value, abs=TOL)
            assert _colgen.min_reduced_cost(B, res.u, c0) >= -1e-9


def _all_pairs(m, K):
    subsets = _subset_matrix(m, proper=True).astype(bool)
    return np.repeat(subsets, K, axis=0), np.tile(np.arange(K), subsets.shape[0])


def test_two_inputs_give_binary_randomized_response():
    # Corollary 3.13: the only maximal channel on two inputs is binary RR
    prob = DecisionProblem([[0.9, 0.2], [0.1, 0.8]], [[0, 1], [1, 0]])
    res = ldpopt.optimal_channel(prob, 0.8)
    assert np.allclose(
        ldpopt.canonical_form(res.mechanism).matrix,
        ldpopt.canonical_form(ldpopt.randomized_response(2, 0.8)).matrix,
    )


def test_auto_choices_are_reported():
    rng = np.random.default_rng(403)
    assert ldpopt.optimal_channel(_random_problem(rng, 6, 3, 3), 1.0).method == "enumerate"
    assert ldpopt.optimal_channel(_random_problem(rng, 14, 3, 3), 1.0).method == "direct"
    assert ldpopt.optimal_channel(_random_problem(rng, 14, 3, 3), 1.0, risk="minimax").method == "direct"
    p0, p1 = rng.dirichlet(np.ones(24)), rng.dirichlet(np.ones(24))
    res = ldpopt.optimal_channel(FDivergenceObjective(p0, p1, "kl"), 1.0)
    assert res.method == "spr" and res.value == pytest.approx(ldpopt.optimal_mechanism(p0, p1, 1.0).value)
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
    value = ldpopt.optimal_channel(prob, eps, risk=risk).value
    # relabelling the inputs, the parameters and the actions changes nothing
    px, pt, pa = rng.permutation(m), rng.permutation(T), rng.permutation(A)
    perm = DecisionProblem(prob.likelihood[px][:, pt], prob.loss[pt][:, pa], prob.prior[pt])
    assert ldpopt.optimal_channel(perm, eps, risk=risk).value == pytest.approx(value, abs=TOL)
    # a positive scale of the loss scales the risk
    scaled = DecisionProblem(prob.likelihood, 2.5 * prob.loss, prob.prior)
    assert ldpopt.optimal_channel(scaled, eps, risk=risk).value == pytest.approx(2.5 * value, abs=TOL)
    # more privacy budget never hurts (Blackwell: RR_eps is a garbling of RR_eps')
    assert ldpopt.optimal_channel(prob, eps + 0.5, risk=risk).value <= value + TOL
    # Bayes: adding b(theta) to the loss adds sum_theta lambda_theta b(theta)
    if risk == "bayes":
        b = rng.normal(size=T)
        shifted = DecisionProblem(prob.likelihood, prob.loss + b[:, None], prob.prior)
        assert ldpopt.optimal_channel(shifted, eps).value == pytest.approx(value + prob.prior @ b, abs=TOL)
    # bounded by the perfect- and the no-information risks
    if risk == "bayes":
        full_info = float(prob.bayes_matrix().min(axis=1).sum())
        no_info = float((prob.prior @ prob.loss).min())
        assert full_info - TOL <= value <= no_info + TOL


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

    ref = ldpopt.optimal_channel(prob, 1.7, method="enumerate").value
    for method in ("enumerate", "colgen", "direct", "auto"):
        res = ldpopt.optimal_channel(Pieces(), 1.7, method=method)
        assert res.value == pytest.approx(ref, abs=TOL)
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
    # the returned support is a feasible point of the polytope with the reported master value
    S = np.where(early.rows, 1.0, c0)
    assert np.allclose(early.z @ S, 1.0, atol=1e-9)
    assert float(early.z @ _colgen.pair_costs(early.rows, early.actions, B, c0)) == pytest.approx(
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
        assert np.allclose(_colgen.action_slacks(B, u, c0), every.min(axis=0), atol=1e-12)

        # lagrangian_point maximises L(u, h) = sum(u) + h . g(u): L is separable and concave along
        # each u_x, so no single-coordinate move to any breakpoint or nearby point improves it
        h = _random_weights(rng, K, c0)
        ustar = _colgen.lagrangian_point(B, h, c0)

        def lag(v, h=h, B=B, c0=c0):
            return v.sum() + h @ _colgen.action_slacks(B, v, c0)

        best = lag(ustar)
        for x in range(m):
            for cand in np.concatenate([B[x], B[x] + 1e-3, B[x] - 1e-3, [ustar[x] + 10, ustar[x] - 10]]):
                v = ustar.copy()
                v[x] = cand
                assert lag(v) <= best + 1e-12

        # _certify: exactly dual feasible over the proper subsets, and as high as possible
        cert, order, rc_cert = _colgen._certify(B, u, c0)
        # the pricing it returns is the pricing at the lifted point (the shift keeps the order)
        order_ref, rc_ref = _colgen.price(B - cert[:, None], c0)
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
        prob = _random_problem(rng, int(rng.integers(2, 7)), 3, int(rng.integers(2, 5)))
        B, eps = prob.bayes_matrix(), float(rng.uniform(0.2, 3.0))
        c0 = math.exp(-eps)
        m, K = B.shape
        opt = ldpopt.optimal_channel(prob, eps, method="enumerate").value
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
            assert D_h == pytest.approx(c0 * h @ B.sum(axis=0) + res.fun, abs=1e-10)
            assert D_h >= opt - 1e-10
            # the greedy inner solution is that LP's optimum: a channel with column maxima <= h
            _, s = _colgen._inner(B, h, c0)
            W = c0 * h[None, :] + s
            assert np.all(s >= 0) and np.all(s <= (1 - c0) * h[None, :] + 1e-15)
            assert np.allclose(W.sum(axis=1), 1.0, atol=1e-12)
            assert float((W * B).sum()) == pytest.approx(D_h, abs=1e-10)
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
