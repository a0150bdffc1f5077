"""The worked examples of Appendix C: closed forms against the LPs over all channels."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ldpopt
from ldpopt.decision import problems as examples

TOL = 1e-8


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
            if gamma > 0:
                assert cf == pytest.approx(_paper_mary(m, gamma, eps), rel=1e-12)
            bayes = ldpopt.optimal_channel(prob, eps, method="enumerate")
            minimax = ldpopt.optimal_channel(prob, eps, risk="minimax", method="enumerate")
            assert bayes.value == pytest.approx(cf, abs=TOL)
            assert minimax.value == pytest.approx(cf, abs=TOL)  # equalizer rule: minimax = Bayes
            assert prob.minimax_risk(bayes.mechanism) == pytest.approx(cf, abs=TOL)
            # subset selection of the predicted size attains it
            ss = ldpopt.subset_selection(m, eps, prob.closed_form_size(eps))
            assert prob.bayes_risk(ss) == pytest.approx(cf, abs=TOL)
            assert prob.minimax_risk(ss) == pytest.approx(cf, abs=TOL)
    assert examples.mary_testing(5, 0.6).closed_form_size(1.0) == 1
    assert examples.mary_testing(5, -0.2).closed_form_size(1.0) == 4


@pytest.mark.parametrize("m", [3, 4, 5, 6, 7, 8, 9])
def test_circular_estimation_closed_form_equals_the_lp(m):
    for gamma in (1.0, 0.6):
        obj = examples.circular_estimation(m, gamma)
        for eps in (0.5, 1.5, 4.0):
            cf = obj.closed_form(eps)
            assert cf == pytest.approx(_paper_circular(m, gamma, eps), rel=1e-12)
            res = ldpopt.optimal_channel(obj, eps, method="enumerate")
            assert res.value == pytest.approx(cf, abs=TOL)
            assert obj.evaluate(res.mechanism) == pytest.approx(cf, abs=TOL)


@pytest.mark.parametrize("m", [3, 4, 5, 6])
def test_circular_estimation_on_grids_minimax_equals_bayes(m):
    obj = examples.circular_estimation(m, 0.8)
    prob = obj.as_decision_problem()
    eps = 1.2
    bayes = ldpopt.optimal_channel(prob, eps, method="enumerate")
    minimax = ldpopt.optimal_channel(prob, eps, risk="minimax", method="enumerate")
    assert bayes.value == pytest.approx(obj.closed_form(eps), abs=TOL)
    assert minimax.value == pytest.approx(obj.closed_form(eps), abs=TOL)
    # the arc channel of the predicted length is an equalizer: constant risk over the grid
    k = obj.closed_form_size(eps)
    arcs = {tuple(sorted((s + i) % m for i in range(k))) for s in range(m)}
    c = 1.0 / (k * math.exp(eps) + m - k)
    mech = ldpopt.decision.polytope.q_ex({y: c for y in arcs}, eps, m)
    assert prob.minimax_risk(mech) == pytest.approx(obj.closed_form(eps), abs=TOL)


def test_circular_decisions_are_arc_midpoints():
    m = 8
    obj = examples.circular_estimation(m, 0.9)
    c0 = math.exp(-1.0)
    arc = np.where(np.isin(np.arange(m), [2, 3, 4]), 1.0, c0)[None, :]
    assert obj.decisions(arc)[0] == pytest.approx(2 * math.pi * 3 / m)
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
    for method in ("enumerate", "colgen", "direct"):
        for risk in ("bayes", "minimax"):
            assert ldpopt.optimal_channel(mt, eps, risk=risk, method=method).value == pytest.approx(
                mt.closed_form(eps), abs=TOL
            )
            assert ldpopt.optimal_channel(grid, eps, risk=risk, method=method).value == pytest.approx(
                circ.closed_form(eps), abs=TOL
            )
    sym = ldpopt.optimal_channel(mt, eps, group=ldpopt.PermutationGroup.symmetric(6))
    assert sym.value == pytest.approx(mt.closed_form(eps), abs=TOL)
    cyc = ldpopt.optimal_channel(circ, eps, group=ldpopt.PermutationGroup.cyclic(6))
    assert cyc.value == pytest.approx(circ.closed_form(eps), abs=TOL)
    assert {len(y) for y in cyc.weights} == {circ.closed_form_size(eps)}
