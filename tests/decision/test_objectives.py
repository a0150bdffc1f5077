"""Row-additive objectives: each built-in against its textbook formula, homogeneity, validation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ldpopt
from ldpopt.decision.objectives import (
    BayesRisk,
    ChannelObjective,
    FDivergenceObjective,
    FisherInformation,
    MutualInformation,
    RowObjective,
)
from reference import fisher_information_naive, mutual_information_naive, naive_divergence


def _random_mechanism(rng, m, n, eps):
    raw = rng.uniform(1.0, math.exp(eps), size=(m, n))
    base = raw / raw.sum(axis=1, keepdims=True)
    level = float(np.max(np.log(base.max(axis=0) / base.min(axis=0))))
    return ldpopt.Mechanism(base, level * (1 + 1e-9) + 1e-12)


def test_bayes_risk_rows_match_the_decision_problem():
    rng = np.random.default_rng(1)
    P = rng.dirichlet(np.ones(5), size=3).T
    L = rng.normal(size=(3, 4))  # negative losses are fine
    prior = rng.dirichlet(np.ones(3))
    prob = ldpopt.DecisionProblem(P, L, prior)
    obj = BayesRisk(prob)
    mech = _random_mechanism(rng, 5, 6, 1.0)
    # textbook: sum over outputs of min over actions of the posterior-weighted loss
    py = mech.matrix.T @ P  # (n, T)
    expected = sum(
        min(sum(prior[t] * py[y, t] * L[t, a] for t in range(3)) for a in range(4)) for y in range(6)
    )
    assert obj.evaluate(mech) == pytest.approx(expected, rel=1e-12)
    assert prob.bayes_risk(mech) == pytest.approx(expected, rel=1e-12)
    dec = obj.decisions(mech.matrix.T)
    assert np.allclose(dec.sum(axis=1), 1.0) and set(np.unique(dec)) <= {0.0, 1.0}
    assert np.allclose(obj.linear_pieces(), P @ (prior[:, None] * L))


def test_bayes_risk_needs_a_decision_problem():
    for other in (MutualInformation(num_inputs=3), np.eye(3), None):
        with pytest.raises(TypeError, match="problem must be a DecisionProblem"):
            BayesRisk(other)


def test_mutual_information_matches_entropies():
    rng = np.random.default_rng(2)
    for _ in range(5):
        prior = rng.dirichlet(np.ones(6))
        mech = _random_mechanism(rng, 6, 4, 2.0)
        assert MutualInformation(prior).evaluate(mech) == pytest.approx(
            mutual_information_naive(mech.matrix, prior), rel=1e-10, abs=1e-14
        )
    assert MutualInformation(num_inputs=4).prior == pytest.approx(np.full(4, 0.25))


def test_fisher_information_matches_definition():
    rng = np.random.default_rng(3)
    pmf = rng.dirichlet(np.ones(5))
    d = rng.normal(size=5)
    d -= d.mean()
    mech = _random_mechanism(rng, 5, 3, 1.5)
    assert FisherInformation(pmf, d).evaluate(mech) == pytest.approx(
        fisher_information_naive(mech.matrix, pmf, d), rel=1e-12
    )
    # vector parameter: trace of the Fisher matrix
    D = rng.normal(size=(5, 2))
    D -= D.mean(axis=0)
    tr = sum(fisher_information_naive(mech.matrix, pmf, D[:, j]) for j in range(2))
    assert FisherInformation(pmf, D).evaluate(mech) == pytest.approx(tr, rel=1e-12)
    with pytest.raises(ValueError, match="sum to 0"):
        FisherInformation(pmf, np.ones(5))


@pytest.mark.parametrize("name", ["kl", "tv", "chi2", "hellinger", "js"])
def test_f_divergence_objective_is_the_output_divergence(name):
    rng = np.random.default_rng(4)
    p0, p1 = rng.dirichlet(np.ones(5)), rng.dirichlet(np.ones(5))
    mech = _random_mechanism(rng, 5, 4, 1.0)
    obj = FDivergenceObjective(p0, p1, name)
    m0, m1 = mech.matrix.T @ p0, mech.matrix.T @ p1
    assert obj.evaluate(mech) == pytest.approx(naive_divergence(m0, m1, name), rel=1e-10)
    assert obj.evaluate(mech) == pytest.approx(mech.utility(p0, p1, name), rel=1e-12)


def test_renyi_objective_reports_transformed_value():
    rng = np.random.default_rng(5)
    p0, p1 = rng.dirichlet(np.ones(4)), rng.dirichlet(np.ones(4))
    mech = _random_mechanism(rng, 4, 3, 1.0)
    obj = FDivergenceObjective(p0, p1, "renyi:2")
    assert obj.evaluate(mech) == pytest.approx(mech.utility(p0, p1, "renyi:2"), rel=1e-10)


@settings(max_examples=30)
@given(st.integers(0, 10**6), st.floats(0.01, 100.0))
def test_builtin_contributions_are_one_homogeneous(seed, t):
    rng = np.random.default_rng(seed)
    m = 5
    V = rng.uniform(0.1, 2.0, size=(4, m))
    P = rng.dirichlet(np.ones(m), size=3).T
    prob = ldpopt.DecisionProblem(P, rng.random((3, 2)))
    d = rng.normal(size=m)
    d -= d.mean()
    objs = [
        BayesRisk(prob),
        MutualInformation(rng.dirichlet(np.ones(m))),
        FisherInformation(rng.dirichlet(np.ones(m)), d),
        FDivergenceObjective(rng.dirichlet(np.ones(m)), rng.dirichlet(np.ones(m)), "kl"),
    ]
    for obj in objs:
        assert np.allclose(obj.contributions(t * V), t * obj.contributions(V), rtol=1e-9, atol=1e-12)


def test_user_objectives_and_validation():
    obj = RowObjective(lambda V: V.max(axis=1) - V.min(axis=1), 3, sense="max", name="spread")
    mech = ldpopt.randomized_response(3, 1.0)
    expected = sum(col.max() - col.min() for col in mech.matrix.T)
    assert obj.evaluate(mech) == pytest.approx(expected)
    with pytest.raises(ValueError, match="sense"):
        RowObjective(lambda V: V.sum(axis=1), 3, sense="up")
    with pytest.raises(TypeError, match="callable"):
        RowObjective(3, 3)
    bad = RowObjective(lambda V: np.ones(V.shape[0] + 1), 3)
    with pytest.raises(ValueError, match="returned 4 values"):
        bad.evaluate(mech)
    with pytest.raises(ValueError, match="3 inputs"):
        obj.evaluate(ldpopt.randomized_response(4, 1.0))
    ch = ChannelObjective(lambda Q: float(Q[:, 0].sum()), 3)
    assert ch.evaluate(mech) == pytest.approx(mech.matrix[:, 0].sum())
