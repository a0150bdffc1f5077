"""Shared cases of the decision tests: random decision problems and the checks every optimal channel
passes (independent of the solver that produced it)."""

from __future__ import annotations

import math

import numpy as np

import ldpopt
from _errmodel import R_FN, U, cert_err, channel_err, minimax_risk_err, weights_residual, within, within_all
from ldpopt.decision.problem import DecisionProblem


def random_problem(rng, m, T, A):
    P = rng.dirichlet(np.full(m, 0.7), size=T).T
    # every parameter has its own cheap action, so information about theta has value
    L = 0.6 + 0.4 * rng.random((T, A))
    L[np.arange(T), np.arange(T) % A] = 0.3 * rng.random(T)
    return DecisionProblem(P, L, rng.dirichlet(np.full(T, 2.0)))


def check_channel(res, prob, eps, risk):
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
