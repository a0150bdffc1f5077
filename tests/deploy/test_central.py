"""Designing for a central (eps, delta, n) target: the guarantee is met (re-checked by exact
enumeration of the shuffled histograms at small n) and the local level is the largest that meets it."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ldpopt
from ldpopt.deploy.central import EPS0_REL_TOL, optimal_for_central
from ldpopt.deploy.shuffle import tight_delta
from reference import shuffled_exact_eps, shuffled_histogram_pairs

P0 = np.array([0.5, 0.2, 0.2, 0.1])
P1 = np.array([0.1, 0.2, 0.3, 0.4])


def test_the_design_meets_the_target_by_exact_enumeration():
    eps, delta, n = 0.9, 1e-3, 30
    d = optimal_for_central(P0, P1, (eps, delta, n))
    mech = d.result.mechanism
    rows = np.unique(mech.matrix, axis=0)  # datasets are multisets of the distinct rows
    ps, qs = shuffled_histogram_pairs(rows, n)
    assert shuffled_exact_eps(ps, qs, delta, d.eps0) <= eps
    assert d.central.lower <= d.central.value and d.eps0 > eps  # amplification was used


def test_the_local_level_is_the_largest_meeting_the_target():
    eps, delta, n = 0.3, 1e-6, 20_000
    d = optimal_for_central(P0, P1, (eps, delta, n))
    budget = next(b for b, e0, v in d.candidates if e0 == d.eps0 and v == d.result.value)
    assert tight_delta(d.result, eps, n, delta) <= delta
    above = d.eps0 * (1 + 2 * EPS0_REL_TOL)
    mech = ldpopt.optimal_mechanism(P0, P1, above, max_outputs=budget).mechanism
    assert tight_delta(mech, eps, n, delta) > delta
    # every candidate family is no better than the chosen one
    assert all(v <= d.result.value for _, _, v in d.candidates)


def test_top_level_optimal_mechanism_dispatches_on_central():
    target = (0.5, 1e-6, 10_000)
    res = ldpopt.optimal_mechanism(P0, P1, central=target)
    assert math.isclose(res.value, optimal_for_central(P0, P1, target).result.value, rel_tol=0, abs_tol=0)
    assert ldpopt.optimal_mechanism(P0, P1, 1.0).value == ldpopt.spr.optimal_mechanism(P0, P1, 1.0).value
    with pytest.raises(ValueError, match="not both"):
        ldpopt.optimal_mechanism(P0, P1, 1.0, central=target)
    with pytest.raises(TypeError, match="needs eps"):
        ldpopt.optimal_mechanism(P0, P1)
    with pytest.raises(ValueError, match="central delta"):
        optimal_for_central(P0, P1, (0.5, 2.0, 100))
    with pytest.raises(TypeError, match="central"):
        optimal_for_central(P0, P1, 0.5)
