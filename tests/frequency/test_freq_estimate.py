"""Estimates from reports: the unbiased estimate, simultaneous intervals (coverage by simulation),
the simplex projection and the maximum-likelihood estimate (against an independent solver)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from scipy import optimize, stats

from ldpopt.frequency import estimate, project_to_simplex
from ldpopt.frequency import mechanisms as M
from ldpopt.frequency.consistent import MLE_GAP_TOL


@pytest.mark.parametrize("kind", ["grr", "oue", "olh", "hadamard"])
def test_simultaneous_coverage(kind):
    """Bonferroni intervals at 90% hold for all k items at once in at least 90% of 300 simulated
    data sets (one-sided binomial test, alpha = 1e-3)."""
    k, n, reps = 4, 400, 300
    m = M.make(kind, k, 1.0)
    f = np.array([0.5, 0.25, 0.15, 0.1])
    rng = np.random.default_rng(2024)
    covered = 0
    for _ in range(reps):
        x = rng.choice(k, n, p=f)
        covered += estimate(m, m.privatize(x, rng), confidence=0.9).covers(f)
    assert stats.binomtest(covered, reps, 0.9, alternative="less").pvalue > 1e-3


def test_point_estimate_and_standard_error():
    m = M.oue(5, 1.0)
    bits = np.array([[1, 0, 0, 0, 1], [0, 1, 0, 0, 0], [1, 1, 0, 1, 0], [0, 0, 0, 0, 0]])
    est = estimate(m, bits)
    c = np.array([2, 2, 0, 1, 1])
    assert np.array_equal(est.support_counts, c)
    assert np.allclose(est.value, (c / 4 - m.q) / (m.p - m.q), rtol=1e-15)
    pi = c / 4
    assert np.allclose(est.standard_error, np.sqrt(pi * (1 - pi) / 4) / (m.p - m.q), rtol=1e-15)
    z = stats.norm.ppf(1 - 0.05 / 10)
    assert np.allclose(est.upper - est.value, z * est.standard_error, rtol=1e-12)
    assert est.n == 4 and est.interval_method == "bonferroni"


def test_counts_supports_and_reports_agree():
    rng = np.random.default_rng(5)
    for m in (M.grr(4, 1.0), M.hadamard_response(5, 2.0), M.sue(4, 1.0), M.subset_selection(6, 1.0, 2)):
        x = rng.integers(0, m.k, 300)
        rep = m.privatize(x, rng)
        sup = m.supports(rep)
        table = m.output_supports()
        # the column of each report: the row of the table with its support set
        index = {tuple(row): j for j, row in enumerate(table)}
        counts = np.bincount([index[tuple(s)] for s in sup], minlength=table.shape[0])
        a, b, c = estimate(m, rep), estimate(m, counts=counts), estimate(m, supports=sup.astype(int))
        assert np.array_equal(estimate(m, supports=sup).value, c.value)
        for other in (b, c):
            assert np.array_equal(a.value, other.value)
            assert np.allclose(a.mle, other.mle, atol=1e-6)


def _channel_mle(q, counts):
    """Maximum likelihood over the simplex by SLSQP on the full channel (an independent solver)."""
    k = q.shape[0]

    def neg(f):
        return -float(counts @ np.log(f @ q))

    res = optimize.minimize(
        neg,
        np.full(k, 1.0 / k),
        method="SLSQP",
        bounds=[(1e-12, 1.0)] * k,
        constraints=[{"type": "eq", "fun": lambda f: f.sum() - 1.0}],
        options={"ftol": 1e-14, "maxiter": 1000},
    )
    return res.x, -res.fun


@pytest.mark.parametrize("kind", ["grr", "oue", "subset", "hadamard"])
def test_mle_against_an_independent_solver(kind):
    rng = np.random.default_rng(9)
    m = M.make(kind, 4, 1.0)
    f = np.array([0.6, 0.3, 0.1, 0.0])  # an item absent: the MLE sits on the boundary
    x = rng.choice(4, 500, p=f)
    rep = m.privatize(x, rng)
    est = estimate(m, rep)
    assert est.mle_status == "converged" and est.mle_gap <= MLE_GAP_TOL * 500
    q = m.channel().matrix
    table = m.output_supports()
    index = {tuple(row): j for j, row in enumerate(table)}
    counts = np.bincount([index[tuple(s)] for s in m.supports(rep)], minlength=table.shape[0])
    other, ll_other = _channel_mle(q, counts)
    ll_ours = float(counts @ np.log(est.mle @ q))
    # ours is within its certified gap of the maximum, hence not below SLSQP's by more
    assert ll_ours >= ll_other - MLE_GAP_TOL * 500 - 1e-9
    assert np.allclose(est.mle, other, atol=1e-3)
    assert abs(math.fsum(est.mle) - 1.0) < 1e-12 and np.all(est.mle >= 0)


def test_projection():
    v = np.array([0.7, 0.5, -0.1, -0.1])
    p = project_to_simplex(v)
    assert abs(p.sum() - 1) < 1e-15 and np.all(p >= 0)
    # the KKT conditions: p = max(v - t, 0) for one threshold t
    t = (v - p)[p > 0]
    assert np.ptp(t) < 1e-15 and np.all(v[p == 0] <= t[0] + 1e-15)


@given(
    st.lists(st.floats(-5, 5), min_size=2, max_size=12),
    st.lists(st.floats(0, 1), min_size=2, max_size=12),
)
def test_projection_never_moves_away_from_a_distribution(v, w):
    """The consistent (projected) estimate is at least as close in l2 to the true distribution as
    the unbiased one, report set by report set (projection onto a convex set containing p): the
    unbiased objectives bound the projected estimator's error (docs/frequency.md).  Checked by the
    projection's variational inequality, written out here, not by the solver's code."""
    k = min(len(v), len(w))
    x, p = np.array(v[:k]), np.array(w[:k])
    assume(p.sum() > 1e-3)
    p = p / p.sum()
    proj = project_to_simplex(x)
    # <x - proj, p - proj> <= 0 for every p in the simplex (up to rounding of the threshold)
    assert float((x - proj) @ (p - proj)) <= 1e-12 * (1 + np.abs(x).sum())
    assert np.linalg.norm(proj - p) <= np.linalg.norm(x - p) + 1e-12 * (1 + np.abs(x).sum())


def test_mle_is_the_unbiased_estimate_inside_the_simplex():
    """For GRR the reports' law is an affine image of f: when the unbiased estimate lies inside
    the simplex it is the maximum-likelihood estimate (small eps: the slow case of EM)."""
    m = M.grr(3, 0.2)
    est = estimate(m, counts=[3448, 3310, 3242])
    assert np.all(est.value > 0)
    assert est.mle_status == "converged"
    assert np.allclose(est.mle, est.value, atol=1e-4)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({}, "exactly one of reports, counts and supports"),
        ({"reports": [0, 1], "counts": [1, 1, 0]}, "exactly one"),
        ({"reports": [0, 1], "confidence": 1.0}, "confidence must be a number in"),
        ({"reports": [0, 1], "confidence": "0.9"}, "confidence must be a number in"),
        ({"reports": [0, 5]}, r"range\(3\)"),
        ({"counts": [1, 1]}, "counts must have one entry per output"),
        ({"supports": [[1, 0]]}, r"supports must be a non-empty \(n, 3\)"),
        ({"reports": np.zeros(0, dtype=int)}, "no reports"),
    ],
)
def test_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        estimate(M.grr(3, 1.0), **kwargs)
    with pytest.raises(TypeError, match="mech must be a FrequencyMechanism"):
        estimate("grr", [0])


def test_counts_refused_without_channel():
    with pytest.raises(ValueError, match="need the channel"):
        estimate(M.oue(30, 1.0), counts=[1, 2])


@pytest.mark.parametrize("mech", [M.grr(32, 0.5), M.oue(32, 0.5), M.olh(24, 1.0)])
def test_mle_certificate_at_small_eps(mech):
    """The slow case of EM: the duality gap, recomputed here from the support sets, is within the
    stated tolerance."""
    rng = np.random.default_rng(17)
    n = 2000
    f = rng.dirichlet(np.full(mech.k, 0.3))
    sup = mech.supports(mech.privatize(rng.choice(mech.k, n, p=f), rng))
    est = estimate(mech, supports=sup)
    assert est.mle_status == "converged"
    a, b = mech.column_levels()
    weights = np.where(sup, a, b)  # report i's likelihood under input v, up to its own factor
    grad = (weights / (weights @ est.mle)[:, None]).sum(axis=0)
    assert grad.max() - n <= MLE_GAP_TOL * n * (1 + 1e-6)
    assert np.all(est.mle >= 0) and abs(est.mle.sum() - 1) < 1e-12


def test_covers_checks_the_shape_of_f():
    # a wrong-length f raised numpy's broadcast error
    m = M.grr(4, 1.0)
    est = estimate(m, m.privatize(np.arange(200) % 4, rng=3))
    with pytest.raises(ValueError, match="f must have one entry per item"):
        est.covers([1, 2])
    assert est.covers(est.value) and not est.covers(est.upper + 1.0)
