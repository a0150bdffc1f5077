"""Estimates from reports: coverage and unbiasedness by simulation (fixed seeds), independent
maximisers and solvers, boundaries, refusals.

Coverage is checked at 95% +- 1.5% over 2000 repetitions (the binomial standard error of a
coverage estimate is sqrt(0.95 * 0.05 / 2000) = 0.0049, so the band is 3 standard errors).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize

import ldpopt
from ldpopt.deploy.estimate import frequencies, mixture_proportion, project_to_simplex, report_counts

U = 2.0**-53
REPS = 2000
N_REPORTS = 1500

# the fraud-detection demo pair (web-session events, normal vs fraudulent), normalised
_P0 = np.array([0.310, 0.140, 0.110, 0.060, 0.080, 0.012, 0.028, 0.010, 0.020, 0.090, 0.090, 0.050])
_P1 = np.array([0.120, 0.060, 0.070, 0.110, 0.050, 0.090, 0.080, 0.150, 0.100, 0.030, 0.040, 0.100])
P0, P1 = _P0 / _P0.sum(), _P1 / _P1.sum()


@pytest.fixture(scope="module")
def spr():
    # the optimal partition at eps = 2 has 3 blocks; built directly (no solver) for speed
    high = [i for i in range(12) if P1[i] / P0[i] > 2.0]
    low = [i for i in range(12) if P1[i] / P0[i] < 0.75]
    mid = [i for i in range(12) if i not in high and i not in low]
    return ldpopt.spr_mechanism([high, mid, low], 12, 2.0)


def _coverage(mech, pi, seed):
    m0, m1 = mech.output_distributions(P0, P1)
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(N_REPORTS, (1 - pi) * m0 + pi * m1, size=REPS)
    estimates = [mixture_proportion(mech, p0=P0, p1=P1, counts=c) for c in draws]
    covered = np.mean([e.covers(pi) for e in estimates])
    return covered, np.array([e.value for e in estimates])


@pytest.mark.parametrize(("pi", "seed"), [(0.0, 11), (0.3, 12), (1.0, 13)])
def test_interval_covers_at_the_nominal_rate(spr, pi, seed):
    covered, values = _coverage(spr, pi, seed)
    assert abs(covered - 0.95) <= 0.015
    if 0 < pi < 1:  # the MLE is unbiased to O(1/n): within 3 standard errors of the mean
        assert abs(values.mean() - pi) <= 3 * values.std() / math.sqrt(REPS)


def test_interval_end_at_the_boundary_is_closed_only_when_the_boundary_is_accepted(spr):
    m0, m1 = spr.output_distributions(P0, P1)
    at_p0 = np.round(m0 * 10_000).astype(int)
    est = mixture_proportion(spr, p0=P0, p1=P1, counts=at_p0)
    assert est.value <= 1e-3 and est.lower == 0.0 and est.lower_closed and est.covers(0.0)
    # a sample whose likelihood ratio at 0 lies between the two critical values: open at 0
    for pi in np.linspace(0.0, 0.03, 400):
        counts = np.round(((1 - pi) * m0 + pi * m1) * 100_000).astype(int)
        e = mixture_proportion(spr, p0=P0, p1=P1, counts=counts)
        lam = e.statistic(0.0)
        if e.boundary_critical_value < lam <= e.critical_value:
            assert e.lower == 0.0 and not e.lower_closed and not e.covers(0.0) and e.covers(1e-12)
            break
    else:
        pytest.fail("no sample with the statistic at 0 between the two critical values")


def test_mle_matches_an_independent_bounded_maximiser(spr):
    m0, m1 = spr.output_distributions(P0, P1)
    rng = np.random.default_rng(5)
    for pi in (0.05, 0.4, 0.9):
        counts = rng.multinomial(800, (1 - pi) * m0 + pi * m1)
        est = mixture_proportion(spr, p0=P0, p1=P1, counts=counts)

        def neg(p, c=counts):
            return -float(np.sum(c * np.log((1 - p) * m0 + p * m1)))

        ref = optimize.minimize_scalar(neg, bounds=(0, 1), method="bounded", options={"xatol": 1e-10})
        assert abs(est.value - ref.x) <= 1e-6
        # interval ends solve 2 (l(pi_hat) - l(pi)) = chi2 quantile where they are interior
        for end in (est.lower, est.upper):
            if 0 < end < 1:
                assert abs(2 * (neg(end) + est.log_likelihood) - est.critical_value) <= 1e-6


def test_reports_and_counts_give_the_same_estimate(spr):
    x = np.random.default_rng(3).choice(12, size=500, p=0.7 * P0 + 0.3 * P1)
    reports = spr.privatize(x, rng=np.random.default_rng(4))
    a = mixture_proportion(spr, reports, p0=P0, p1=P1)
    b = mixture_proportion(spr, p0=P0, p1=P1, counts=report_counts(spr, reports))
    assert (a.value, a.lower, a.upper) == (b.value, b.lower, b.upper)


def test_outputs_impossible_under_one_hypothesis():
    identity = ldpopt.Mechanism(np.eye(3), math.inf)
    p0, p1 = [1.0, 0.0, 0.0], [0.5, 0.5, 0.0]
    only_p0 = mixture_proportion(identity, p0=p0, p1=p1, counts=[40, 0, 0])
    assert only_p0.value == 0.0 and only_p0.lower == 0.0 and only_p0.lower_closed
    # l(pi) = 40 log(1 - pi/2): Lambda(pi) = -80 log(1 - pi/2) = 3.84 at the upper end
    assert only_p0.upper == pytest.approx(2 * -math.expm1(-only_p0.critical_value / 80), abs=1e-9)
    seen_p1 = mixture_proportion(identity, p0=p0, p1=p1, counts=[10, 10, 0])
    assert seen_p1.value == 1.0 and seen_p1.upper == 1.0 and seen_p1.lower > 0.0
    assert not seen_p1.covers(0.0)  # an output impossible under P0 was reported


# ---------------------------------------------------------------------------------------------
# frequencies
# ---------------------------------------------------------------------------------------------
def _simulate_frequencies(mech, theta_inputs, seed, reps=REPS, n=N_REPORTS):
    out = mech.matrix.T @ theta_inputs
    draws = np.random.default_rng(seed).multinomial(n, out, size=reps)
    return [frequencies(mech, counts=c) for c in draws]


@pytest.mark.parametrize("which", ["spr", "krr", "general"])
def test_frequencies_are_unbiased_with_honest_standard_errors(spr, which):
    if which == "spr":
        mech, theta = spr, 0.6 * P0 + 0.4 * P1
    elif which == "krr":
        mech, theta = ldpopt.randomized_response(4, 1.0), np.array([0.5, 0.3, 0.2, 0.0])
    else:
        mat = np.array([[0.5, 0.3, 0.2], [0.2, 0.5, 0.3], [0.25, 0.25, 0.5]])
        mech, theta = ldpopt.Mechanism(mat, math.log(2.5)), np.array([0.2, 0.5, 0.3])
    ests = _simulate_frequencies(mech, theta, seed=21)
    values = np.array([e.value for e in ests])
    truth = np.array([theta[list(b)].sum() for b in ests[0].blocks])
    sd = values.std(axis=0)
    # 3.5 standard errors of the mean per component (Bonferroni over <= 4 components at ~1e-3)
    assert np.all(np.abs(values.mean(axis=0) - truth) <= 3.5 * sd / math.sqrt(REPS) + 1e-12)
    # the reported (plug-in) standard error is the sampling standard deviation within 10%
    se = np.mean([e.standard_error for e in ests], axis=0)
    assert np.allclose(se, sd, rtol=0.1)
    assert ests[0].method == ("least_squares" if which == "general" else "rr_closed_form")


@pytest.mark.numerics
def test_rr_closed_form_agrees_with_solving_the_channel(spr):
    counts = np.array([300, 500, 200])
    est = frequencies(spr, counts=counts)
    rows = np.array([spr.matrix[b[0]] for b in est.blocks])
    ref = np.linalg.solve(rows.T, counts / counts.sum())
    # 3x3 solve: error <= cond * 3 * 8u relative to |f|; closed form: a few roundings
    bound = np.linalg.cond(rows) * 24 * U + 8 * U
    assert np.max(np.abs(est.value - ref)) <= bound * np.linalg.norm(ref, np.inf) * 4


def test_frequency_blocks_follow_the_partition(spr):
    est = frequencies(spr, counts=np.array([1, 2, 3]))
    assert sorted(i for b in est.blocks for i in b) == list(range(12))
    for b in est.blocks:
        assert np.all(spr.matrix[list(b)] == spr.matrix[b[0]])


def test_projection_is_onto_the_simplex_and_biased_only_when_needed():
    v = np.array([0.7, 0.5, -0.1, -0.1])
    p = project_to_simplex(v)
    assert abs(p.sum() - 1) <= 4 * U and np.all(p >= 0)
    # KKT: p = max(v - t, 0) for one threshold t
    t = (v - p)[p > 0]
    assert np.ptp(t) <= 4 * U and np.all(v[p == 0] <= t[0] + 4 * U)
    inside = np.array([0.2, 0.3, 0.5])
    assert np.allclose(project_to_simplex(inside), inside, atol=4 * U)


# ---------------------------------------------------------------------------------------------
# refusals
# ---------------------------------------------------------------------------------------------
def test_refusals(spr):
    with pytest.raises(ValueError, match="not identifiable"):
        mixture_proportion(spr, p0=P0, p1=P0, counts=[1, 2, 3])
    with pytest.raises(ValueError, match="confidence"):
        mixture_proportion(spr, p0=P0, p1=P1, confidence=0.3, counts=[1, 2, 3])
    with pytest.raises(TypeError, match="confidence must be a real number"):
        mixture_proportion(spr, p0=P0, p1=P1, confidence="0.95", counts=[1, 2, 3])
    with pytest.raises(ValueError, match="exactly one"):
        mixture_proportion(spr, [0, 1], p0=P0, p1=P1, counts=[1, 2, 3])
    with pytest.raises(ValueError, match="counts"):
        frequencies(spr, counts=[1, 2])
    with pytest.raises(ValueError, match="counts must contain at least one observation"):
        frequencies(spr, counts=[0, 0, 0])
    with pytest.raises(ValueError, match="no reports"):
        frequencies(spr, [])
    dependent = ldpopt.Mechanism(np.array([[0.5, 0.5], [0.4, 0.6], [0.45, 0.55]]), 1.0)
    with pytest.raises(ValueError, match="not identifiable"):
        frequencies(dependent, counts=[3, 4])
    identity = ldpopt.Mechanism(np.eye(3), math.inf)
    with pytest.raises(ValueError, match="probability 0"):
        mixture_proportion(identity, p0=[1.0, 0.0, 0.0], p1=[0.0, 1.0, 0.0], counts=[0, 1, 3])


def test_short_module_paths_are_the_same_modules():
    import warnings

    import ldpopt.deploy.estimate
    import ldpopt.deploy.shuffle

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no deprecation: these paths are meant to stay
        import ldpopt.estimate
        import ldpopt.shuffle
    assert ldpopt.estimate is ldpopt.deploy.estimate and ldpopt.shuffle is ldpopt.deploy.shuffle
    assert ldpopt.mixture_proportion is mixture_proportion


def test_non_finite_counts_are_refused_naming_the_argument():
    mech = ldpopt.randomized_response(3, 1.0)
    for bad in ([math.inf, math.inf, 1], [math.nan, 1, 1]):
        with pytest.raises(ValueError, match="counts must be non-negative integers"):
            frequencies(mech, counts=bad)


def test_reports_come_second_and_the_old_order_still_works_with_a_deprecation_warning():
    """mixture_proportion(mech, reports, *, p0, p1) as frequencies(mech, reports); the first
    releases' (mech, p0, p1, reports[, confidence]) gives the same estimate and says the new form."""
    spr = ldpopt.optimal_mechanism(P0, P1, 1.0).mechanism
    reports = spr.privatize(
        np.random.default_rng(4).choice(len(P0), size=300, p=P1), rng=np.random.default_rng(5)
    )
    new = mixture_proportion(spr, reports, p0=P0, p1=P1, confidence=0.9)
    with pytest.warns(ldpopt.LdpoptDeprecationWarning, match=r"mixture_proportion\(mech, reports, p0=p0"):
        old = mixture_proportion(spr, P0, P1, reports, 0.9)
    assert (old.value, old.lower, old.upper, old.n) == (new.value, new.lower, new.upper, new.n)
    assert issubclass(ldpopt.LdpoptDeprecationWarning, DeprecationWarning)
    with pytest.raises(TypeError, match="p0= and p1="):
        mixture_proportion(spr, reports)
    # reports where a distribution belongs: the message says what they look like
    with pytest.raises(ValueError, match=r"whole numbers: reports or counts where a distribution"):
        mixture_proportion(spr, reports, p0=reports[: len(P0)] + 1, p1=P1)
