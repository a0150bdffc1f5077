"""minimum_epsilon_for_frequency_width over every frequency mechanism and the optimum: forward
calls on both sides of each answer, monotone grids, closed-form variances written out here, the
estimator's own interval widths, and a fixed-seed simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import ldpopt
from ldpopt.deploy.target import (
    FREQUENCY_MECHANISMS,
    UnreachableTargetError,
    minimum_epsilon_for_frequency_width,
)
from ldpopt.frequency import estimate, grr, optimal_mechanism, oue

K, N = 8, 20000


def z_bonferroni(k: int, confidence: float) -> float:
    return float(stats.norm.ppf(1.0 - (1.0 - confidence) / (2 * k)))


def grr_width_uniform(k: int, eps: float, n: int, z: float) -> float:
    """k-RR at the uniform distribution, closed form: p = e^eps/(e^eps+k-1), q = 1/(e^eps+k-1),
    pi = q + (p - q)/k = 1/k, Var = pi(1 - pi)/(p - q)^2 = (k - 1)(e^eps + k - 1)^2/(k^2 (e^eps - 1)^2)."""
    e = math.exp(eps)
    var = (k - 1) * (e + k - 1) ** 2 / (k**2 * (e - 1) ** 2)
    return z * math.sqrt(var / n)


def oue_width_uniform(k: int, eps: float, n: int, z: float) -> float:
    """OUE at the uniform distribution: p = 1/2, q = 1/(e^eps+1), pi = q + (1/2 - q)/k."""
    q = 1.0 / (math.exp(eps) + 1.0)
    pi = q + (0.5 - q) / k
    return z * math.sqrt(pi * (1 - pi) / (0.5 - q) ** 2 / n)


@pytest.mark.parametrize(
    "mechanism, closed",
    [("grr", grr_width_uniform), ("oue", oue_width_uniform)],
)
def test_closed_forms_both_sides(mechanism, closed):
    z = z_bonferroni(K, 0.95)
    w = 0.03
    r = minimum_epsilon_for_frequency_width(K, n=N, width=w, theta="uniform", mechanism=mechanism)
    assert closed(K, r.eps, N, z) <= w < closed(K, r.eps_below, N, z)
    assert r.eps - r.eps_below <= r.xtol * r.eps
    # the value reported is the closed form at eps (both are a few roundings of the same formula)
    assert abs(r.value - closed(K, r.eps, N, z)) <= 1e-12 * w
    grid = [closed(K, e, N, z) for e in np.linspace(r.eps / 3, 3 * r.eps, 25)]
    assert all(a > b for a, b in zip(grid, grid[1:], strict=False))


def test_estimate_reports_the_targeted_width():
    """At the answer, ldpopt.frequency.estimate's own interval on the expected counts (its plug-in
    standard error at the true support probabilities) has the targeted half-width."""
    th = np.array([0.3, 0.2, 0.1, 0.1, 0.1, 0.1, 0.05, 0.05])
    n = 10**6
    r = minimum_epsilon_for_frequency_width(K, n=n, width=0.004, theta=th, mechanism="grr", xtol=1e-2)
    for eps, ok in ((r.eps, True), (r.eps_below, False)):
        m = grr(K, eps)
        counts = np.round(n * (th @ m.channel().matrix)).astype(int)  # rounding: relative 1e-6
        est = estimate(m, counts=counts, confidence=0.95)
        half = float(np.max((est.upper - est.lower) / 2))
        assert (half <= 0.004) == ok


def test_simulated_widths_match():
    """Fixed seed: estimate's half-widths on simulated OUE reports (uniform inputs, n = 4000),
    averaged over items and 200 data sets, agree with the value targeted within 4 standard errors
    (of the per-data-set means) plus the delta method's second-order bias of the plug-in square
    root, at most value / (n pi (1 - pi)) relative to first order."""
    n, reps = 4000, 200
    r = minimum_epsilon_for_frequency_width(K, n=n, width=0.06, theta="uniform", mechanism="oue")
    m = oue(K, r.eps)
    rng = np.random.default_rng(20261207)
    means = []
    for _ in range(reps):
        x = rng.integers(0, K, size=n)
        est = estimate(m, m.privatize(x, rng), confidence=0.95)
        means.append(float(np.mean((est.upper - est.lower) / 2)))
    q = 1.0 / (math.exp(r.eps) + 1.0)
    pi = q + (0.5 - q) / K
    se = float(np.std(means, ddof=1)) / math.sqrt(reps)
    assert abs(float(np.mean(means)) - r.value) <= 4 * se + r.value / (n * pi * (1 - pi))


@pytest.mark.parametrize("mechanism", [m for m in FREQUENCY_MECHANISMS if m != "hadamard"])
def test_every_mechanism_both_sides_and_grid(mechanism):
    w = 0.03
    r = minimum_epsilon_for_frequency_width(K, n=N, width=w, theta="uniform", mechanism=mechanism)
    assert r.value <= w and r.frequency_mechanism is not None
    # forward on both sides through the public objects
    for eps, ok in ((r.eps, True), (r.eps_below, False)):
        half = _width(mechanism, eps, N)
        assert (half <= w) == ok
    grid = [_width(mechanism, e, N) for e in np.linspace(r.eps / 2, 2 * r.eps, 9)]
    assert all(a >= b for a, b in zip(grid, grid[1:], strict=False))


def _width(mechanism: str, eps: float, n: int) -> float:
    z = z_bonferroni(K, 0.95)
    if mechanism == "optimal":
        # the optimal channel's best unbiased estimator: its per-item variance at uniform from
        # the channel itself (B = unbiased_estimator, Var_x = sum_y B_yx^2 Q(y|.) u - 1/k^2)
        q = optimal_mechanism(K, eps).mechanism.matrix
        b = ldpopt.frequency.unbiased_estimator(q)
        u = np.full(K, 1.0 / K)
        var = (b**2).T @ (u @ q) - u**2
        return z * math.sqrt(float(var.max()) / n)
    kind = "basic_rappor" if mechanism == "rappor" else mechanism
    m = ldpopt.frequency.mechanisms.make(kind, K, eps)
    return z * math.sqrt(float(m.variance(np.full(K, 1.0 / K)).max()) / n)


def test_optimum_beats_or_ties_deployed_and_worst_case():
    w = 0.03
    opt = minimum_epsilon_for_frequency_width(K, n=N, width=w, theta="uniform", mechanism="optimal")
    for kind in ("grr", "sue", "oue", "subset", "olh"):
        r = minimum_epsilon_for_frequency_width(K, n=N, width=w, theta="uniform", mechanism=kind)
        assert opt.eps <= r.eps * (1 + 2 * r.xtol)
    # worst case over the simplex (from the channel, closed form of the 1-D maximum) is no easier
    worst = minimum_epsilon_for_frequency_width(K, n=N, width=w, mechanism="optimal")
    assert worst.eps >= opt.eps
    # and it is the maximum over vertices and points mixing two items on a fine grid
    q = optimal_mechanism(K, worst.eps).mechanism.matrix
    b = ldpopt.frequency.unbiased_estimator(q)
    best = 0.0
    for t in np.linspace(0, 1, 2001):
        f = np.zeros(K)
        f[0], f[1] = t, 1 - t
        best = max(best, float(((b**2).T @ (f @ q) - f**2).max()))
    z = z_bonferroni(K, 0.95)
    assert abs(z * math.sqrt(best / N) - worst.value) <= 1e-6 * worst.value
    # no point of the simplex does worse (random Dirichlet points, fixed seed)
    f = np.random.default_rng(7).dirichlet(np.full(K, 0.3), size=2000)
    var = f @ ((b**2).T @ q.T).T - f**2  # var[i, x] = sum_y B_yx^2 (f_i Q)(y) - f_ix^2
    assert float(var.max()) <= best * (1 + 1e-12)


def test_defaults_and_bad_input():
    # the default stays k-RR in the worst case; old keyword calls keep working
    r = minimum_epsilon_for_frequency_width(4, n=10**5, width=0.02)
    assert isinstance(r.frequency_mechanism, ldpopt.frequency.FrequencyMechanism)
    assert r.frequency_mechanism.kind == "grr"
    with pytest.raises(ValueError, match="mechanism must be one of"):
        minimum_epsilon_for_frequency_width(4, n=10, width=0.1, mechanism="xyz")
    with pytest.raises(ValueError, match="interval must be"):
        minimum_epsilon_for_frequency_width(4, n=10, width=0.1, interval="both")
    with pytest.raises(ValueError, match="theta must be"):
        minimum_epsilon_for_frequency_width(4, n=10, width=0.1, theta="worst")
    with pytest.raises(ValueError, match="size applies to olh and subset"):
        minimum_epsilon_for_frequency_width(4, n=10, width=0.1, size=3)
    with pytest.raises(UnreachableTargetError, match="not reached even at eps = 64"):
        minimum_epsilon_for_frequency_width(16, n=10000, width=0.01, mechanism="hadamard")


def test_grr_worst_case_closed_form_both_sides():
    """k-RR's worst case over the simplex, written out: an item's support probability pi ranges
    over [q, p] and pi(1 - pi) is largest at 1/2 when q <= 1/2 <= p."""

    def worst(eps: float, n: int, z: float) -> float:
        e = math.exp(eps)
        p, q = e / (e + K - 1), 1.0 / (e + K - 1)
        top = 0.25 if q <= 0.5 <= p else max(p * (1 - p), q * (1 - q))
        return z * math.sqrt(top / (p - q) ** 2 / n)

    n, w = 10**5, 0.02
    for interval, z in (("simultaneous", z_bonferroni(K, 0.9)), ("per-item", float(stats.norm.ppf(0.95)))):
        r = minimum_epsilon_for_frequency_width(K, n=n, width=w, confidence=0.9, interval=interval)
        assert worst(r.eps, n, z) <= w < worst(r.eps_below, n, z)
        grid = [worst(e, n, z) for e in np.linspace(r.eps / 3, 3 * r.eps, 25)]
        assert all(a >= b for a, b in zip(grid, grid[1:], strict=False))
