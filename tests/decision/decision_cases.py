"""Shared cases of the decision tests: random decision problems and the checks every optimal channel
passes (independent of the solver that produced it)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ldpopt
from ldpopt.decision.problem import DecisionProblem

TOL = 1e-8


def random_problem(rng, m, T, A):
    P = rng.dirichlet(np.full(m, 0.7), size=T).T
    # every parameter has its own cheap action, so information about theta has value
    L = 0.6 + 0.4 * rng.random((T, A))
    L[np.arange(T), np.arange(T) % A] = 0.3 * rng.random(T)
    return DecisionProblem(P, L, rng.dirichlet(np.full(T, 2.0)))


def check_channel(res, prob, eps, risk):
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
