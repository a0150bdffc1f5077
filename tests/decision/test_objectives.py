"""Row-additive objectives: each built-in against its textbook formula, homogeneity, validation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ldpopt
from _errmodel import R_FN, U, entropy_diff_err, mi_err, naive_bound, within, within_all
from _valuebounds import transform_bound, utility_bound
from ldpopt.decision.objectives import (
    BayesRisk,
    ChannelObjective,
    FDivergenceObjective,
    FisherInformation,
    MutualInformation,
    RowObjective,
)
from reference import fisher_information_naive, mutual_information_naive, naive_divergence

#: the numerics tests: CI also runs them on numpy's AVX2 and baseline loops (.ci/npy_disable.py)
pytestmark = pytest.mark.numerics


def fisher_err(Q, pmf, d):
    """|a Fisher information sum_y (d . Q_y)^2 / (pmf . Q_y) computed in float - exact| (either path):
    d . Q_y has mixed signs: within (m + 1) u sum_x |d_x| Q_xy absolute; pmf . Q_y (m + 1) u relative;
    the square, the quotient and the sum over n outputs ((n + 3) u relative)."""
    Q = np.asarray(Q, float)
    m, n = Q.shape
    num = d @ Q
    den = pmf @ Q
    a = (m + 1) * U * (np.abs(d) @ Q)
    t = num * num / den
    return float(np.sum((2 * np.abs(num) * a) / den + (m + n + 4) * U * t))


def contrib_err(obj, V):
    """Bound of |contributions(V') - phi(V)| for V' within u relative of V (one evaluation, m inputs):
    Bayes risk min_a V B_a (m + 2) u sum_x v_x max_a |B_xa|; mutual information (mi_err's terms per
    row, log R_FN); Fisher information (fisher_err per row); KL objective (the perspective of
    x = v.p0, y = v.p1, d = v.(p0 - p1): (m + 2) u relative inputs, score_bound and the partials)."""
    from _errmodel import score_bound
    from _valuebounds import formula_partials

    V = np.asarray(V, float)
    m = V.shape[1]
    if isinstance(obj, BayesRisk):
        return (m + 2) * U * (V @ np.abs(obj.linear_pieces()).max(axis=1))
    if isinstance(obj, MutualInformation):
        s = V @ obj.prior
        L = np.abs(np.log(V / s[:, None]))
        return U * ((V * ((m + 3) + (R_FN + 4) * L)) @ obj.prior)
    if isinstance(obj, FisherInformation):
        return np.array([fisher_err(row[:, None], obj.pmf, obj.derivative[:, 0]) for row in V])
    div = obj.divergence
    x, y, d = V @ obj.p0, V @ obj.p1, V @ (obj.p0 - obj.p1)
    fx, fy, fd = formula_partials(div, x, y, d)
    err_in = (m + 2) * U * (fx * x + fy * y + fd * (V @ np.abs(obj.p0 - obj.p1)))
    return score_bound(div.code, div.param, x, y, d) + err_in


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
    # every path sums per output min_a sum_theta lambda py L (m + T terms and the products: (m + T + 3) u
    # of the absolute terms; the min is 1-Lipschitz); L has mixed signs, so against sum of |terms|
    S_abs = float(np.sum((py * prior[None, :]) @ np.abs(L).max(axis=1)))
    bound = 2 * (5 + 3 + 3) * U * S_abs
    assert within("Bayes risk objective vs textbook", obj.evaluate(mech), expected, bound)
    assert within("Bayes risk vs textbook", prob.bayes_risk(mech), expected, bound)
    dec = obj.decisions(mech.matrix.T)
    # one-hot rows: exact sums
    assert np.array_equal(dec.sum(axis=1), np.ones(dec.shape[0])) and set(np.unique(dec)) <= {0.0, 1.0}
    # linear_pieces is DecisionProblem.bayes_matrix: P @ (prior[:, None] * L) of the validated prior;
    # the products of K = 3 terms against this one (prior renormalised: within 2u), (T + 2) u of |terms|
    ref = P @ (prior[:, None] * L)
    assert within_all(
        "Bayes linear pieces", obj.linear_pieces(), ref, 2 * (3 + 4) * U * (P @ (prior[:, None] * np.abs(L)))
    )


def test_bayes_risk_needs_a_decision_problem():
    for other in (MutualInformation(num_inputs=3), np.eye(3), None):
        with pytest.raises(TypeError, match="problem must be a DecisionProblem"):
            BayesRisk(other)


def test_mutual_information_matches_entropies():
    rng = np.random.default_rng(2)
    for _ in range(5):
        prior = rng.dirichlet(np.ones(6))
        mech = _random_mechanism(rng, 6, 4, 2.0)
        # the objective's sum_x p_x v_x log(v_x / s) (mi_err) against H(Y) - H(Y|X) (entropy_diff_err)
        ours, ref = MutualInformation(prior).evaluate(mech), mutual_information_naive(mech.matrix, prior)
        bound = mi_err(mech.matrix, prior) + entropy_diff_err(mech.matrix, prior)
        assert within("mutual information vs entropies", ours, ref, bound)
    np.testing.assert_array_equal(MutualInformation(num_inputs=4).prior, np.full(4, 0.25))  # 1 / 4 exactly


def test_fisher_information_matches_definition():
    rng = np.random.default_rng(3)
    pmf = rng.dirichlet(np.ones(5))
    d = rng.normal(size=5)
    d -= d.mean()
    mech = _random_mechanism(rng, 5, 3, 1.5)
    ours, ref = FisherInformation(pmf, d).evaluate(mech), fisher_information_naive(mech.matrix, pmf, d)
    assert within("Fisher information vs definition", ours, ref, 2 * fisher_err(mech.matrix, pmf, d))
    # vector parameter: trace of the Fisher matrix
    D = rng.normal(size=(5, 2))
    D -= D.mean(axis=0)
    tr = sum(fisher_information_naive(mech.matrix, pmf, D[:, j]) for j in range(2))
    bound = sum(2 * fisher_err(mech.matrix, pmf, D[:, j]) for j in range(2)) + 2 * U * tr
    assert within("Fisher trace vs definition", FisherInformation(pmf, D).evaluate(mech), tr, bound)
    with pytest.raises(ValueError, match="sum to 0"):
        FisherInformation(pmf, np.ones(5))


@pytest.mark.parametrize("name", ["kl", "tv", "chi2", "hellinger", "js"])
def test_f_divergence_objective_is_the_output_divergence(name):
    rng = np.random.default_rng(4)
    p0, p1 = rng.dirichlet(np.ones(5)), rng.dirichlet(np.ones(5))
    mech = _random_mechanism(rng, 5, 4, 1.0)
    obj = FDivergenceObjective(p0, p1, name)
    m0, m1 = mech.matrix.T @ p0, mech.matrix.T @ p1
    # each path evaluates D at output masses within k u of the exact ones: utility_bound each (the
    # objective's d = V @ (p0 - p1) is no less accurate than m0 - m1); the textbook loop naive_bound
    ub = utility_bound(mech.matrix, p0, p1, name)
    ref = naive_divergence(m0, m1, name)
    assert within(
        "f-divergence objective vs textbook", obj.evaluate(mech), ref, 2 * ub + naive_bound(name, 0.0, m0, m1)
    )
    assert within("f-divergence objective vs utility", obj.evaluate(mech), mech.utility(p0, p1, name), 2 * ub)


def test_renyi_objective_reports_transformed_value():
    rng = np.random.default_rng(5)
    p0, p1 = rng.dirichlet(np.ones(4)), rng.dirichlet(np.ones(4))
    mech = _random_mechanism(rng, 4, 3, 1.0)
    obj = FDivergenceObjective(p0, p1, "renyi:2")
    div = ldpopt.get_divergence("renyi:2")
    raw = div.raw(mech.matrix.T @ p0, mech.matrix.T @ p1)
    bound = transform_bound(div, raw, 2 * utility_bound(mech.matrix, p0, p1, div))
    assert within("Renyi objective vs utility", obj.evaluate(mech), mech.utility(p0, p1, "renyi:2"), bound)


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
    # phi(t v) = t phi(v) exactly; t * V rounds each entry (u relative), and each evaluation rounds:
    # per objective, a bound of one evaluation of phi(v) at v within u relative (contrib_err), at V and
    # t V, plus the product t phi (u)
    for obj in objs:
        a, b = obj.contributions(t * V), t * obj.contributions(V)
        bound = t * contrib_err(obj, V) * 2 + U * np.abs(b)
        assert within_all("contributions are 1-homogeneous", a, b, bound), obj.name


def test_user_objectives_and_validation():
    obj = RowObjective(lambda V: V.max(axis=1) - V.min(axis=1), 3, sense="max", name="spread")
    mech = ldpopt.randomized_response(3, 1.0)
    expected = sum(col.max() - col.min() for col in mech.matrix.T)
    # the same differences, summed by fsum against left to right (2 roundings of 3 terms)
    assert within("row objective vs its sum", obj.evaluate(mech), expected, 2 * U * expected)
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
    assert ch.evaluate(mech) == mech.matrix[:, 0].sum()  # func of the same matrix: the same bits
