"""optimal_channel: enumeration, column generation, the channel LP and vertex enumeration agree;
the returned channel is eps-LDP, maximal, and its directly computed risk equals the value."""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pytest
from decision_cases import TOL, check_channel, random_problem
from hypothesis import given, settings
from hypothesis import strategies as st

import ldpopt
from ldpopt.decision.objectives import ChannelObjective, FDivergenceObjective, MutualInformation
from ldpopt.decision.problem import DecisionProblem
from reference import minimax_dual_lp, polytope_vertices_bruteforce


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
    for meth, res in results.items():
        assert res.status == 0 and res.method == meth
        assert res.value == pytest.approx(ref, abs=TOL)
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
    assert res.value == pytest.approx(dual_value, abs=TOL)
    # the certificate's prior is least favourable: its optimal Bayes risk equals the minimax risk
    lf = DecisionProblem(prob.likelihood, prob.loss, res.certificate.prior)
    assert ldpopt.optimal_channel(lf, eps, method="enumerate").value == pytest.approx(res.value, abs=TOL)
    # and Bayes risk <= minimax risk for every prior
    assert ldpopt.optimal_channel(prob, eps).value <= res.value + TOL


def test_vertex_enumeration_agrees_with_the_lp():
    rng = np.random.default_rng(300)
    for m in (3, 4, 5):
        prob = random_problem(rng, m, 3, 3)
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
        check_channel(res, big, eps, risk)


def test_colgen_m64_random_bayes_matches_channel_lp_with_certificate():
    rng = np.random.default_rng(401)
    for _ in range(2):
        prob = DecisionProblem(
            rng.dirichlet(np.ones(64), size=5).T, 1.0 - np.eye(5, 4) + 0.4 * rng.random((5, 4))
        )
        res = ldpopt.optimal_channel(prob, 1.5, method="colgen")
        direct = ldpopt.optimal_channel(prob, 1.5, method="direct")
        assert res.value == pytest.approx(direct.value, abs=TOL)
        check_channel(res, prob, 1.5, "bayes")
        # the dual certificate, checked by an independent pricing: sort d = B_a - u per action
        u, B, c0 = res.certificate.dual, prob.bayes_matrix(), math.exp(-1.5)
        for a in range(4):
            d = np.sort(B[:, a] - u)
            prefix = np.cumsum(d)[:-1]
            assert np.min(c0 * d.sum() + (1 - c0) * prefix) >= -1e-9
        assert u.sum() == pytest.approx(res.value, abs=TOL)


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
    assert ldpopt.optimal_channel(random_problem(rng, 6, 3, 3), 1.0).method == "enumerate"
    assert ldpopt.optimal_channel(random_problem(rng, 14, 3, 3), 1.0).method == "direct"
    assert ldpopt.optimal_channel(random_problem(rng, 14, 3, 3), 1.0, risk="minimax").method == "direct"
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
    prob = random_problem(rng, 6, 3, 3)
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
