"""The uncertainty sets: validation, linear minimisation oracles, confidence radii, coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import linprog

from ldpopt import uncertainty as unc
from ldpopt.robust.uncertainty import huber_pair

RNG_SEED = 7
#: LP optimum vs the oracle's value: both are exact up to HiGHS' feasibility/optimality
#: tolerances (1e-7 by default on data of order 1), so they agree to 1e-7 times sum |g|
LP_RTOL = 1e-7


def _lp_tv(g, c, r):
    """min <g, s> over the TV ball by an LP in (s, t): -t <= s - c <= t, sum t <= 2 r."""
    k = c.size
    cost = np.concatenate([g, np.zeros(k)])
    a_ub = np.block([[np.eye(k), -np.eye(k)], [-np.eye(k), -np.eye(k)], [np.zeros((1, k)), np.ones((1, k))]])
    b_ub = np.concatenate([c, -c, [2 * r]])
    a_eq = np.concatenate([np.ones(k), np.zeros(k)])[None, :]
    res = linprog(cost, a_ub, b_ub, a_eq, [1.0], bounds=[(0, None)] * (2 * k), method="highs")
    return res.fun


def _lp_contamination(g, c, d):
    k = c.size
    res = linprog(
        g, A_eq=np.ones((1, k)), b_eq=[1.0], bounds=[((1 - d) * ci, None) for ci in c], method="highs"
    )
    return res.fun


@pytest.mark.parametrize("model", ["tv", "contamination"])
def test_polytope_lmo_matches_linprog(model):
    rng = np.random.default_rng(RNG_SEED)
    for _ in range(20):
        k = int(rng.integers(2, 8))
        c = rng.dirichlet(np.ones(k))
        g = rng.normal(size=k)
        r = float(rng.uniform(0, 0.6))
        nb = unc.Neighbourhood(model, c, r)
        s = nb.lmo(g)
        assert nb.contains(s)
        lp = _lp_tv(g, c, r) if model == "tv" else _lp_contamination(g, c, r)
        assert abs(float(g @ s) - lp) <= LP_RTOL * np.abs(g).sum()


def test_kl_lmo_beats_every_sampled_point():
    """The KL-ball oracle's point is on the ball and no point sampled in the ball does better."""
    rng = np.random.default_rng(RNG_SEED)
    for trial in range(10):
        k = 4
        c = rng.dirichlet(np.ones(k))
        if trial % 3 == 0:
            c[0] = 0.0  # a symbol outside the support: mass there is free
            c /= c.sum()
        g = rng.normal(size=k)
        r = 0.05
        nb = unc.Neighbourhood("kl", c, r)
        s = nb.lmo(g)
        kl = sum(ci * math.log(ci / si) for ci, si in zip(c, s, strict=True) if ci > 0)
        assert kl <= r + 1e-12 and abs(s.sum() - 1) < 1e-12 and s.min() >= 0
        pts = rng.dirichlet(np.ones(k) * 0.5, size=20000)
        with np.errstate(divide="ignore"):
            kls = np.sum(np.where(c > 0, c * np.log(np.where(c > 0, c, 1) / pts), 0.0), axis=1)
        inside = pts[kls <= r]
        assert inside.shape[0] > 0
        assert float(g @ s) <= float((inside @ g).min()) + 1e-12


def test_from_counts_radii_satisfy_their_bounds():
    """The radii solve the documented tail bounds at alpha / 2 per side (recomputed directly)."""
    c0, c1 = [30, 50, 20, 0], [10, 10, 60, 20]
    for conf in (0.9, 0.95, 0.99):
        a = (1 - conf) / 2
        u = unc.from_counts(c0, c1, conf, "tv")
        k, n = 4, 100
        assert math.isclose((2**k - 2) * math.exp(-n * (2 * u.r0) ** 2 / 2), a, rel_tol=1e-12)
        v = unc.from_counts(c0, c1, conf, "kl")
        assert math.isclose(math.comb(n + k - 1, k - 1) * math.exp(-n * v.r0), a, rel_tol=1e-12)
        np.testing.assert_allclose(u.p0_hat, np.array(c0) / 100)
        assert u.confidence == conf and u.n0 == 100


@pytest.mark.parametrize("model", ["tv", "kl"])
def test_from_counts_coverage(model):
    """Statistical check (fixed seed): the joint confidence set covers the truth in at least
    `confidence` of the draws (the bounds are conservative, so far more)."""
    rng = np.random.default_rng(RNG_SEED)
    p0, p1 = np.array([0.1, 0.2, 0.3, 0.4]), np.array([0.4, 0.3, 0.2, 0.1])
    covered = 0
    draws = 300
    for _ in range(draws):
        u = unc.from_counts(rng.multinomial(50, p0), rng.multinomial(80, p1), 0.9, model)
        s0, s1 = u.sides(u.p0_hat, u.p1_hat)
        covered += s0.contains(p0) and s1.contains(p1)
    assert covered / draws >= 0.9


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda: unc.total_variation(-0.1, 0.1), ValueError, "r0"),
        (lambda: unc.total_variation(0.1, 1.5), ValueError, "r1"),
        (lambda: unc.contamination(0.1, math.nan), ValueError, "delta1"),
        (lambda: unc.kl_ball("0.1", 0.1), TypeError, "r0"),
        (lambda: unc.kl_ball(0.1, math.inf), ValueError, "r1"),
        (lambda: unc.from_counts([1, 2], [1, 2, 3]), ValueError, "same length"),
        (lambda: unc.from_counts([1, -2], [1, 2]), ValueError, "counts0"),
        (lambda: unc.from_counts([1, 2.5], [1, 2]), ValueError, "counts0"),
        (lambda: unc.from_counts([0, 0], [1, 2]), ValueError, "counts0"),
        (lambda: unc.from_counts([1, 2], [1, 2], confidence=1.0), ValueError, "confidence"),
        (lambda: unc.from_counts([1, 2], [1, 2], model="l1"), ValueError, "model"),
        (lambda: unc.from_counts([True, 2], [1, 2]), TypeError, "counts0"),
    ],
)
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_numpy_scalars_accepted():
    u = unc.total_variation(np.float32(0.25), np.int64(0))
    assert (u.r0, u.r1) == (0.25, 0.0)


@pytest.mark.parametrize("model", ["tv", "contamination"])
def test_huber_pair_lies_in_the_sets_and_censors_the_ratio(model):
    """Huber's pair is in the sets and its likelihood ratio is the estimates' ratio clipped to an
    interval (Huber 1965)."""
    rng = np.random.default_rng(RNG_SEED)
    for _ in range(20):
        k = 6
        p0, p1 = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
        r0, r1 = (float(x) for x in rng.uniform(0, 0.08, 2))
        q0, q1 = huber_pair(model, p0, p1, r0, r1)
        if model == "tv":
            assert 0.5 * np.abs(q0 - p0).sum() <= r0 + 1e-12 and 0.5 * np.abs(q1 - p1).sum() <= r1 + 1e-12
        else:
            assert np.all(q0 >= (1 - r0) * p0 - 1e-15) and np.all(q1 >= (1 - r1) * p1 - 1e-15)
        assert abs(q0.sum() - 1) < 1e-12 and abs(q1.sum() - 1) < 1e-12
        rho, orig = q0 / q1, p0 / p1
        if model == "contamination":  # the uncensored part keeps (1 - d0) p0 and (1 - d1) p1
            orig = orig * (1 - r0) / (1 - r1)
        lo, hi = rho.min(), rho.max()
        np.testing.assert_allclose(rho, np.clip(orig, lo, hi), rtol=1e-9)
