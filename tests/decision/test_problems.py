"""The worked examples of Appendix C: closed forms against the LPs over all channels."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ldpopt
from _errmodel import (
    R_FN,
    U,
    channel_err,
    circular_err,
    lp_err,
    mary_err,
    minimax_risk_err,
    within,
)
from ldpopt.decision import problems as examples

#: the numerics tests: CI also runs them on numpy's AVX2 and baseline loops (.ci/npy_disable.py)
pytestmark = pytest.mark.numerics


def grid_err(gamma):
    """|optimum of the float grid problem (CircularEstimation.as_decision_problem) - exact|: P's
    cos(2 pi x / m - theta) (arguments within 2.5u (2 pi + 2 pi), cos R_FN: (10 pi + R_FN) u absolute)
    times gamma / m, + 1 and / m (2u relative); L = 1 - cos(theta - a) the same plus 1 - (.): within
    (10 pi + R_FN + 2) u; the risk moves by sum |dP| max L + P |dL| (max L = 2, sum P = 1)."""
    dP = (gamma * (10 * math.pi + R_FN) + 2) * U
    return 2 * 2 * dP + (10 * math.pi + R_FN + 2) * U


def _paper_mary(m, gamma, eps):
    # App. C.1 evaluated with e^eps as printed (gamma >= 0): min_k 1 - (1-g)/m - g e^eps / (k e^eps + m - k)
    e = math.exp(eps)
    return min(1 - (1 - gamma) / m - gamma * e / (k * e + m - k) for k in range(1, m))


def _paper_circular(m, gamma, eps):
    e = math.exp(eps)
    return min(
        1 - gamma * (e - 1) * math.sin(math.pi * k / m) / (2 * (k * e + m - k) * math.sin(math.pi / m))
        for k in range(1, m)
    )


@pytest.mark.parametrize("m", [3, 4, 5, 6, 7])
def test_mary_testing_closed_form_equals_bayes_and_minimax_lps(m):
    for gamma in (0.8, 0.3, -0.5 / (m - 1)):
        prob = examples.mary_testing(m, gamma)
        assert isinstance(prob, ldpopt.DecisionProblem)
        for eps in (0.4, 1.0, 2.5):
            cf = prob.closed_form(eps)
            cf_err = mary_err(m, gamma, eps)
            if gamma > 0:
                assert within("m-ary closed form vs paper", cf, _paper_mary(m, gamma, eps), 2 * cf_err)
            bayes = ldpopt.optimal_channel(prob, eps, method="enumerate")
            minimax = ldpopt.optimal_channel(prob, eps, risk="minimax", method="enumerate")
            # loss 0/1: cmax = 1
            assert within(
                "m-ary: Bayes LP vs closed form", bayes.value, cf, lp_err(bayes, m, eps, 1.0) + cf_err
            )
            # equalizer rule: minimax = Bayes
            mm_err = lp_err(minimax, m, eps, 1.0, "minimax")
            assert within("m-ary: minimax LP vs closed form", minimax.value, cf, mm_err + cf_err)
            # the Bayes channel (its support an optimal vertex: the next vertex value is far above the
            # LP's tolerance) is an equalizer: its minimax risk is the optimum; evaluated through its
            # normalised rows (channel_err) by an LP at HiGHS's default tolerance (minimax_risk_err)
            n = bayes.mechanism.num_outputs
            bound = channel_err(bayes, m, eps, 1.0, 2 * m + 4) + minimax_risk_err(n, 1.0) + cf_err
            assert within(
                "m-ary: minimax risk of the Bayes channel", prob.minimax_risk(bayes.mechanism), cf, bound
            )
            # subset selection of the predicted size attains it (its entries (R_FN + 3) u relative)
            ss = ldpopt.subset_selection(m, eps, prob.closed_form_size(eps))
            ss_err = (R_FN + 3 + 2 * m + 3) * U + cf_err
            assert within("m-ary: subset selection Bayes risk", prob.bayes_risk(ss), cf, ss_err)
            ss_mm = minimax_risk_err(ss.num_outputs, 1.0) + ss_err
            assert within("m-ary: subset selection minimax risk", prob.minimax_risk(ss), cf, ss_mm)
    assert examples.mary_testing(5, 0.6).closed_form_size(1.0) == 1
    assert examples.mary_testing(5, -0.2).closed_form_size(1.0) == 4


@pytest.mark.parametrize("m", [3, 4, 5, 6, 7, 8, 9])
def test_circular_estimation_closed_form_equals_the_lp(m):
    for gamma in (1.0, 0.6):
        obj = examples.circular_estimation(m, gamma)
        for eps in (0.5, 1.5, 4.0):
            cf = obj.closed_form(eps)
            cf_err = circular_err(m, gamma, eps)
            assert within("circular closed form vs paper", cf, _paper_circular(m, gamma, eps), 2 * cf_err)
            res = ldpopt.optimal_channel(obj, eps, method="enumerate")
            # the objective's costs (sum v - gamma |Z| / 2) / m are at most 1 in magnitude
            err = lp_err(res, m, eps, 1.0) + cf_err
            assert within("circular: LP vs closed form", res.value, cf, err)
            # the same channel through its normalised rows (channel_err; Z: m complex terms)
            err += channel_err(res, m, eps, 1.0, 2 * m + 4)
            assert within("circular: objective of the channel", obj.evaluate(res.mechanism), cf, err)


@pytest.mark.parametrize("m", [3, 4, 5, 6])
def test_circular_estimation_on_grids_minimax_equals_bayes(m):
    obj = examples.circular_estimation(m, 0.8)
    prob = obj.as_decision_problem()
    eps = 1.2
    bayes = ldpopt.optimal_channel(prob, eps, method="enumerate")
    minimax = ldpopt.optimal_channel(prob, eps, risk="minimax", method="enumerate")
    # the grid loss 1 - cos is at most 2; the grid problem's own rounding (grid_err)
    cf, cf_err = obj.closed_form(eps), circular_err(m, 0.8, eps) + grid_err(0.8)
    assert within(
        "circular grid: Bayes LP vs closed form", bayes.value, cf, lp_err(bayes, m, eps, 2.0) + cf_err
    )
    mm_err = lp_err(minimax, m, eps, 2.0, "minimax") + cf_err
    assert within("circular grid: minimax LP vs closed form", minimax.value, cf, mm_err)
    # the arc channel of the predicted length is an equalizer: constant risk over the grid; its
    # entries (q_ex: (4 R_FN + m + 9) u relative, tests/decision/test_polytope.py) move the risk by
    # that times max L = 2; minimax_risk is an LP at HiGHS's default tolerance
    k = obj.closed_form_size(eps)
    arcs = {tuple(sorted((s + i) % m for i in range(k))) for s in range(m)}
    c = 1.0 / (k * math.exp(eps) + m - k)
    mech = ldpopt.decision.polytope.q_ex({y: c for y in arcs}, eps, m)
    bound = 2 * (4 * R_FN + m + 9) * U + minimax_risk_err(m, 2.0) + cf_err
    assert within("circular grid: arc channel is an equalizer", prob.minimax_risk(mech), cf, bound)


def test_circular_decisions_are_arc_midpoints():
    m = 8
    obj = examples.circular_estimation(m, 0.9)
    c0 = math.exp(-1.0)
    arc = np.where(np.isin(np.arange(m), [2, 3, 4]), 1.0, c0)[None, :]
    # arg Z, Z = sum_x v_x e^(2 pi i x / m): the phases' arguments (2.5u relative, times 2 pi) and the
    # exponentials (R_FN), the m-term sum ((m + 1) u sum v) move Z by at most that, the angle by that
    # / |Z|, plus atan2 (R_FN) and the reference 2 pi 3 / m (2.5u)
    v = arc[0]
    Z = abs(np.sum(v * np.exp(2j * np.pi * np.arange(m) / m)))
    a = 2 * math.pi * 3 / m
    bound = U * ((2.5 * 2 * math.pi + R_FN + m + 1) * float(v.sum()) / Z + (R_FN + 2.5) * a)
    assert within("circular decision: arc midpoint", obj.decisions(arc)[0], a, bound)
    assert math.isnan(obj.decisions(np.ones((1, m)))[0])  # Z = 0: any estimate is optimal


def test_example_validation():
    with pytest.raises(ValueError, match="gamma"):
        examples.mary_testing(4, 1.5)
    with pytest.raises(ValueError, match="gamma"):
        examples.mary_testing(4, -0.5)  # below -1/(m-1)
    with pytest.raises(ValueError, match="m >= 3"):
        examples.circular_estimation(2, 0.5)
    with pytest.raises(ValueError, match="gamma"):
        examples.circular_estimation(5, -0.1)
    with pytest.raises(TypeError, match="gamma"):
        examples.mary_testing(4, "0.5")


def test_every_method_reaches_the_closed_forms():
    eps = 1.3
    mt = examples.mary_testing(6, 0.4)
    circ = examples.circular_estimation(6, 0.8)
    grid = circ.as_decision_problem()
    mt_cf, mt_err = mt.closed_form(eps), mary_err(6, 0.4, eps)
    circ_cf, circ_err = circ.closed_form(eps), circular_err(6, 0.8, eps)
    for method in ("enumerate", "colgen", "direct"):
        for risk in ("bayes", "minimax"):
            r = ldpopt.optimal_channel(mt, eps, risk=risk, method=method)
            assert within("every method: m-ary", r.value, mt_cf, lp_err(r, 6, eps, 1.0, risk) + mt_err), (
                method
            )
            r = ldpopt.optimal_channel(grid, eps, risk=risk, method=method)
            bound = lp_err(r, 6, eps, 2.0, risk) + circ_err + grid_err(0.8)
            assert within("every method: circular grid", r.value, circ_cf, bound), method
    # the symmetry method: a reduced LP (or Corollary 3.17) over orbit weights, the same error model
    sym = ldpopt.optimal_channel(mt, eps, group=ldpopt.PermutationGroup.symmetric(6))
    assert within(
        "symmetry method: m-ary", sym.value, mt_cf, lp_err(sym, 6, eps, 1.0, method="enumerate") + mt_err
    )
    cyc = ldpopt.optimal_channel(circ, eps, group=ldpopt.PermutationGroup.cyclic(6))
    bound = lp_err(cyc, 6, eps, 1.0, method="enumerate") + circ_err
    assert within("symmetry method: circular", cyc.value, circ_cf, bound)
    assert {len(y) for y in cyc.weights} == {circ.closed_form_size(eps)}
