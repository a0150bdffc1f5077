"""The l2 objectives of a channel: best unbiased estimator, variance at uniform, minimax worst case."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import reference as ref
from ldpopt import Mechanism, randomized_response
from ldpopt.frequency.objectives import (
    WORST_CASE_RTOL,
    total_variance,
    unbiased_estimator,
    variance_at,
    variance_uniform,
    worst_case,
    worst_case_solution,
)

# float64 evaluation of a k x k trace of an inverse with condition number kappa: relative error
# ~ k * kappa * 2^-52; the channels below have kappa < 1e4 and k <= 16, so 1e-9 bounds it
REL = 1e-9


def _random_channel(rng, k, m):
    q = rng.random((k, m)) + 0.05
    return q / q.sum(axis=1, keepdims=True)


@pytest.mark.numerics
@pytest.mark.parametrize("k", [2, 3, 5, 16])
@pytest.mark.parametrize("eps", [0.1, 1.0, 4.0, 8.0])
def test_grr_matches_the_closed_form_in_high_precision(k, eps):
    e = math.exp(eps)
    closed = (k - 1) * (e + k - 1) ** 2 / (k * (e - 1) ** 2)
    mp = ref.grr_variance_uniform_mp(k, eps)
    assert closed == pytest.approx(mp, rel=1e-12)
    mech = randomized_response(k, eps)
    assert variance_uniform(mech) == pytest.approx(mp, rel=REL)
    # a symmetric channel: the minimax error is the error at uniform
    assert worst_case(mech) == pytest.approx(mp, rel=REL)


@pytest.mark.numerics
@pytest.mark.parametrize("k", [2, 4, 6])
@pytest.mark.parametrize("eps", [0.5, 2.0, 6.0])
def test_oue_best_estimator_and_per_bit_estimator(k, eps):
    Q = ref.oue_channel(k, eps)
    best = ref.symmetric_maximal_variance_mp(k, eps, ref.oue_size_probs(k, eps))
    assert variance_uniform(Q) == pytest.approx(best, rel=REL)
    assert worst_case(Q) == pytest.approx(best, rel=REL)
    # the usual per-bit estimator (b_x - q)/(p - q) is unbiased; its variance q'(1-q')/(p-q)^2 per item
    # (q' = q + (p - q)/k at uniform; 4e^eps/(e^eps-1)^2 per item as f -> 0) is not below the best one
    p, q = 0.5, 1 / (math.exp(eps) + 1)
    per_bit = np.array([[(b - q) / (p - q) for b in o] for o in itertools.product([0, 1], repeat=k)])
    np.testing.assert_allclose(Q @ per_bit, np.eye(k), atol=1e-12)
    qq = q + (p - q) / k
    closed = k * qq * (1 - qq) / (p - q) ** 2
    u = np.full(k, 1 / k)
    assert total_variance(Q, per_bit, u) == pytest.approx(closed, rel=1e-12)
    assert variance_uniform(Q) <= closed * (1 + REL)


@pytest.mark.parametrize("seed", range(6))
def test_estimator_matches_the_kkt_reference(seed):
    rng = np.random.default_rng(seed)
    k, m = int(rng.integers(2, 6)), int(rng.integers(6, 12))
    Q = _random_channel(rng, k, m)
    p = rng.dirichlet(np.ones(k))
    for point in (None, p):
        at = np.full(k, 1 / k) if point is None else point
        B = unbiased_estimator(Q, point)
        Bref = ref.least_norm_estimator_kkt(Q, at)
        np.testing.assert_allclose(B, Bref, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(Q @ B, np.eye(k), atol=1e-10)
        value = ref.estimator_total_variance(Q, Bref, at)
        got = variance_uniform(Q) if point is None else variance_at(Q, point)
        assert got == pytest.approx(value, rel=1e-8)
        assert total_variance(Q, B, at) == pytest.approx(value, rel=1e-8)
        # optimality: no unbiased perturbation B + D (Q D = 0) does better
        null = np.linalg.svd(Q)[2][k:].T  # m x (m - k), Q @ null = 0
        for _ in range(5):
            D = null @ rng.normal(size=(m - k, k)) * 0.1
            assert ref.estimator_total_variance(Q, B + D, at) >= value * (1 - 1e-12)


def test_zero_columns_are_dropped_and_rank_deficiency_is_infinite():
    Q = np.array([[0.7, 0.0, 0.3], [0.2, 0.0, 0.8]])
    B = unbiased_estimator(Q)
    assert np.all(B[1] == 0)
    assert variance_uniform(Q) == pytest.approx(variance_uniform(Q[:, [0, 2]]), rel=1e-12)
    assert variance_uniform(np.full((3, 2), 0.5)) == math.inf
    assert worst_case(np.full((3, 2), 0.5)) == math.inf
    with pytest.raises(ValueError, match="rank"):
        unbiased_estimator(np.full((3, 2), 0.5))


@pytest.mark.parametrize("seed", range(3))
def test_worst_case_is_the_max_over_p_and_certified(seed):
    rng = np.random.default_rng(10 + seed)
    Q = _random_channel(rng, 3, 5)
    sol = worst_case_solution(Q)
    assert sol.status == "optimal"
    assert sol.upper - sol.lower <= WORST_CASE_RTOL * sol.upper
    # the lower bound is V at the least favourable p, recomputed by the KKT reference
    assert ref.estimator_total_variance(Q, ref.least_norm_estimator_kkt(Q, sol.p), sol.p) == pytest.approx(
        sol.lower, rel=1e-9
    )
    # the estimator is unbiased and its variance over a dense grid of the simplex never exceeds upper
    np.testing.assert_allclose(Q @ sol.estimator, np.eye(3), atol=1e-10)
    grid = [np.array([a, b, 1 - a - b]) / 1 for a in np.linspace(0, 1, 41) for b in np.linspace(0, 1 - a, 41)]
    worst_grid = max(ref.estimator_total_variance(Q, sol.estimator, p) for p in grid)
    assert worst_grid <= sol.upper * (1 + 1e-12)
    # and max over the grid of V(p) (best estimator per p) is a lower bound close to it
    best_grid = max(variance_at(Q, p) for p in grid if np.all(p @ Q > 0))
    assert best_grid <= sol.upper * (1 + 1e-12)
    assert best_grid >= sol.upper * (1 - 1e-2)
    # any other unbiased estimator has a worst case at least the lower bound (weak duality)
    null = np.linalg.svd(Q)[2][3:].T
    other = sol.estimator + null @ rng.normal(size=(2, 3)) * 0.2
    assert max(ref.estimator_total_variance(Q, other, p) for p in grid) >= sol.lower * (1 - 1e-12)


def test_inputs_are_validated():
    mech = randomized_response(3, 1.0)
    assert variance_uniform(mech) == variance_uniform(mech.matrix)
    assert isinstance(Mechanism(mech.matrix, 1.0), Mechanism)
    with pytest.raises(ValueError, match="Q"):
        variance_uniform(np.array([[0.5, 0.6]]))
    with pytest.raises(TypeError, match="Q"):
        variance_uniform("abc")
    with pytest.raises(ValueError, match="p"):
        variance_at(mech, [0.5, 0.5])
    with pytest.raises(ValueError, match="p"):
        unbiased_estimator(mech, [0.5, 0.6, 0.1])
    with pytest.raises(ValueError, match="estimator"):
        total_variance(mech, np.zeros((2, 3)), [1 / 3] * 3)
    with pytest.raises(ValueError, match="rtol"):
        worst_case_solution(mech, rtol=-1)
    with pytest.raises(ValueError, match="p"):
        variance_at(np.array([[1.0, 0.0], [0.0, 1.0]]), [1.0, 0.0])


def test_simulated_error_matches_the_variance():
    """Monte Carlo, fixed seed: one report per draw, its estimate B[y], the squared error |B[y] - p|^2;
    the mean of 400,000 draws is within 5 standard errors of the exact total variance (a z-test
    that fails by chance with probability ~6e-7)."""
    rng = np.random.default_rng(2024)
    Q = ref.subset_selection_channel(6, 2, 1.0)
    p = np.array([0.4, 0.25, 0.15, 0.1, 0.06, 0.04])
    B = unbiased_estimator(Q, p)
    ys = rng.choice(Q.shape[1], size=400_000, p=p @ Q)
    err = np.sum((B[ys] - p) ** 2, axis=1)
    z = (err.mean() - variance_at(Q, p)) / (err.std() / math.sqrt(err.size))
    assert abs(z) < 5
    # at the uniform distribution every report of subset selection errs by the same amount (the
    # channel is symmetric), so the error is the variance exactly, report by report
    u = np.full(6, 1 / 6)
    err_u = np.sum((unbiased_estimator(Q) - u) ** 2, axis=1)
    np.testing.assert_allclose(err_u, variance_uniform(Q), rtol=1e-12)


@given(
    k=st.integers(2, 5),
    m=st.integers(5, 9),
    seed=st.integers(0, 2**32 - 1),
)
def test_invariances_and_data_processing(k, m, seed):
    rng = np.random.default_rng(seed)
    Q = _random_channel(rng, k, m)
    v = variance_uniform(Q)
    perm_in, perm_out = rng.permutation(k), rng.permutation(m)
    # relabelling inputs (uniform p is invariant) or outputs leaves the error unchanged
    assert variance_uniform(Q[perm_in][:, perm_out]) == pytest.approx(v, rel=1e-9)
    # merging two outputs is a garbling: the error can only grow (data processing)
    merged = np.column_stack([Q[:, 0] + Q[:, 1], Q[:, 2:]])
    assert variance_uniform(merged) >= v * (1 - 1e-12)
    assert worst_case(Q) >= v * (1 - 1e-12)
