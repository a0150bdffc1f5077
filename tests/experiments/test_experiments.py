"""Tests of ldpopt.experiments (reduced versions of the SPR paper's Figures 1, 3, 5, 6 and runtimes)."""

from __future__ import annotations

import functools
import json
import math

import numpy as np
import pytest

import ldpopt
from _errmodel import R_FN, U, fdiv_bound, naive_bound, within
from _valuebounds import brute_force_bound, fast_spr_err, formula_partials, kov_bound, utility_bound
from ldpopt import experiments as ex
from ldpopt.experiments import montecarlo, utility
from reference import binary_rejection_acceptance, brute_force_optimum, naive_divergence, set_partitions

#: the numerics tests: CI also runs them on numpy's AVX2 and baseline loops (.ci/npy_disable.py)
pytestmark = pytest.mark.numerics

#: relative error of an entry of the library's RR levels, units of u (tests/test_mechanism.py)
C_RR_LIB = R_FN + 3.0


@functools.cache
def _cell_errs(curve_id, k, p_bytes, q_bytes, eps):
    """(|SPR value - exact|, |KOV LP value - exact|) of one cell (fast path: fast_spr_err)."""
    p, q = np.frombuffer(p_bytes), np.frombuffer(q_bytes)
    return fast_spr_err(p, q, eps, "kl"), kov_bound(p, q, eps, "kl") if k <= 10 else math.inf


def cell_errs(c, t, j):
    return _cell_errs(id(c), c.k, c.p0s[t].tobytes(), c.p1s[t].tobytes(), float(c.eps_grid[j]))


def baseline_err(c, m, t, j):
    """|baseline value - its exact utility|: the channel's entries (C_RR_LIB u) through utility_bound;
    the RR curve sums its perspectives with np.sum (k u of the absolute terms, not fsum's u)."""
    p, q, e = c.p0s[t], c.p1s[t], float(c.eps_grid[j])
    mech = ldpopt.randomized_response(c.k, e) if m == "rr" else ldpopt.binary_mechanism(p, q, e)
    m0, m1 = mech.matrix.T @ p, mech.matrix.T @ q
    extra = (
        c.k * U * float(np.sum(np.abs(ldpopt.get_divergence("kl").perspective(m0, m1)))) if m == "rr" else 0
    )
    return utility_bound(mech.matrix, p, q, "kl", C_RR_LIB * U) + extra


# the quadrature takes ~0.5 s per call; two tests need the same three values
_acceptance = functools.lru_cache(maxsize=None)(binary_rejection_acceptance)

GRID = np.array([0.0, 0.5, 1.0, 2.5, 5.0, 9.0])


def _kl(u, v):
    return naive_divergence(u, v, "kl")


def textbook_err(a, b, rel):
    """|naive KL of masses (a, b) computed within ``rel`` relative - exact|: naive_bound at the float
    masses, and the masses' own errors through the formula's partials."""
    fx, fy, fd = formula_partials("kl", a, b, a - b)
    return naive_bound("kl", 0.0, a, b) + rel * float(np.sum(fx * a + fy * b + fd * (a + b)))


def max_spr_lp_err(c):
    """The largest per-cell bound of |SPR - KOV LP| of a curve (what max_abs_spr_minus_lp maximises)."""
    return max(sum(cell_errs(c, t, j)) for t in range(c.trials) for j in range(1, len(c.eps_grid)))


#: Monte Carlo counts: a normal deviation beyond 6 sd has two-sided probability 2e-9
MC_Z = 6.0
#: the paper's rates: beyond 4 sd, 6.3e-5 (three rates, one run)
PAPER_Z = 4.0


@pytest.fixture(scope="module")
def small_fig6():
    return ex.fig6(ks=(4, 12), trials=6, seed=0, eps_grid=GRID, resamples=300, quick=True)


# --------------------------------------------------------------------------------------------
# Figure 1 / 6
# --------------------------------------------------------------------------------------------
def test_pairs_are_the_documented_generator_calls():
    p0s, p1s = ex.draw_pairs(5, 3, seed=0)
    rng = np.random.default_rng(0)
    assert np.array_equal(p0s, rng.dirichlet(np.ones(5), size=3))
    assert np.array_equal(p1s, rng.dirichlet(np.ones(5), size=3))


def test_spr_dominates_every_baseline_and_matches_lp(small_fig6):
    for c in small_fig6.curves:
        spr = c.raw["spr"]
        T, E = spr.shape
        # exactly: a baseline's utility <= the optimum; each value within its error (per cell)
        slack = np.zeros((T, E))
        for t in range(T):
            for j in range(1, E):
                slack[t, j] = cell_errs(c, t, j)[0] + max(baseline_err(c, m, t, j) for m in ("binary", "rr"))
        for m in ("binary", "rr"):
            assert np.all(c.raw[m] <= spr + slack), m
            # the means of the normalised values: each cell's slack / D(p||q), the means' rounding (T u)
            dkl = c.input_divergence[c.valid]
            mslack = (slack[c.valid] / dkl[:, None]).mean(axis=0) + 2 * T * U * c.mean("spr")
            assert np.all(c.mean(m) <= c.mean("spr") + mslack), m
        # normalised utilities lie in [0, 1] (data processing inequality): spr <= D exactly, so the
        # ratio exceeds 1 by at most (its error + D's fdiv_bound) / D and the division (u)
        norm = c.normalized("spr")
        d_err = np.array([fdiv_bound(0, 0.0, a, b) for a, b in zip(c.p0s, c.p1s, strict=True)])[c.valid]
        top = 1 + (slack[c.valid] + d_err[:, None]) / c.input_divergence[c.valid][:, None] + 2 * U
        assert np.all(norm >= 0) and np.all(norm <= top)
        # eps = 0: every mechanism is input independent
        for m in c.mechanisms:
            assert np.all(c.raw[m][:, 0] == 0.0)
    c4 = small_fig6.curves[0]
    assert "kov_lp" in c4.raw and "kov_lp" not in small_fig6.curves[1].raw  # LP only for k <= 10
    # per cell: the fast SPR value and the KOV LP each within their bound of the optimum
    for t in range(c4.trials):
        for j in range(1, len(GRID)):
            err = sum(cell_errs(c4, t, j))
            assert within("Figure 1: SPR vs KOV LP", c4.raw["spr"][t, j], c4.raw["kov_lp"][t, j], err)
    assert c4.max_abs_spr_minus_lp() <= max_spr_lp_err(c4)
    assert c4.lp_failures == 0


def test_spr_values_against_brute_force_over_all_set_partitions(small_fig6):
    c = small_fig6.curves[0]  # k = 4: 15 set partitions
    for t in range(3):
        for j in (1, 3, 5):
            p, q, e = c.p0s[t], c.p1s[t], float(GRID[j])
            ref = brute_force_optimum(p, q, e, _kl)
            # the brute force maximises its own float values: within the largest brute_force_bound
            # over the set partitions of the exact optimum, which the fast SPR value is within
            # fast_spr_err of
            bf_err = max(brute_force_bound(p, q, e, "kl", part) for part in set_partitions(range(c.k)))
            err = cell_errs(c, t, j)[0] + bf_err
            assert within("Figure 1: SPR vs brute force", c.raw["spr"][t, j], ref, err)


def test_baseline_values_from_textbook_channels(small_fig6):
    c = small_fig6.curves[1]  # k = 12
    k = c.k
    for t in (0, 5):
        p, q = c.p0s[t], c.p1s[t]
        for j in (1, 4):
            e = math.exp(GRID[j])
            rr = np.full((k, k), 1.0 / (e + k - 1))
            np.fill_diagonal(rr, e / (e + k - 1))
            # the textbook channel's entries C_RR_ENTRY = R_FN + 5 (reference.rr_on_blocks' model), the
            # product (k u) and the textbook KL (naive_bound); the library's within baseline_err
            a, b = rr.T @ p, rr.T @ q
            err = baseline_err(c, "rr", t, j) + textbook_err(a, b, (R_FN + 5 + k) * U)
            assert within("Figure 1: RR vs textbook", c.raw["rr"][t, j], _kl(a, b), err)
            h = p >= q
            m0 = np.array([(e * p[h].sum() + p[~h].sum()), (p[h].sum() + e * p[~h].sum())]) / (e + 1)
            m1 = np.array([(e * q[h].sum() + q[~h].sum()), (q[h].sum() + e * q[~h].sum())]) / (e + 1)
            # these masses: e (R_FN, sensitivity <= 1), the sums (k u), the product, the sum and the
            # division: (R_FN + k + 4) u relative
            err = baseline_err(c, "binary", t, j) + textbook_err(m0, m1, (R_FN + k + 4) * U)
            assert within("Figure 1: binary vs textbook", c.raw["binary"][t, j], _kl(m0, m1), err)
        err = fdiv_bound(0, 0.0, p, q) + naive_bound("kl", 0.0, p, q)
        assert within("Figure 1: input KL vs textbook", c.input_divergence[t], _kl(p, q), err)


def test_summary_keys_and_values(small_fig6):
    s = small_fig6.summary()
    for key in (
        "max_abs_spr_minus_lp",
        "binary_plateau",
        "rr_over_spr_at_0_5",
        "rr_within_5pct_eps",
        "spr_runtime_s",
        "trials_skipped",
    ):
        assert key in s
    assert s["quick"] is True and s["experiment"] == "fig6"
    assert s["max_abs_spr_minus_lp"] <= max_spr_lp_err(small_fig6.curves[0])
    assert set(s["binary_plateau"]) == {"4", "12"}
    for k in ("4", "12"):
        assert 0 < s["binary_plateau"][k] < 1
        assert 0 <= s["rr_over_spr_at_0_5"][k] <= 1
        assert s["rr_within_5pct_eps"][k] is None or s["rr_within_5pct_eps"][k] > 0
        assert s["spr_runtime_s"][k] > 0
        assert s["trials_skipped"][k] == 0
    c = small_fig6.curves[0]
    # the plateau is the mean of the binary curve over eps >= 5; the ratio is the curves' ratio at 0.5:
    # the summary computes exactly these expressions (the grid points are exact): the same bits
    assert s["binary_plateau"]["4"] == np.mean(c.mean("binary")[GRID >= 5])
    assert s["rr_over_spr_at_0_5"]["4"] == c.mean("rr")[1] / c.mean("spr")[1]
    json.dumps(s, allow_nan=False)


def test_within_eps_is_the_first_grid_point():
    c = ex.utility_curves(6, trials=4, eps_grid=np.arange(0, 11, 1.0), include_lp=False)
    e = c.within_eps("rr", "spr", 0.05)
    rr, spr = c.mean("rr"), c.mean("spr")
    i = int(np.flatnonzero(c.eps_grid == e)[0])
    assert rr[i] >= 0.95 * spr[i] and e > 0
    assert all(rr[j] < 0.95 * spr[j] for j in range(1, i))


def test_bootstrap_bands_share_indices_and_match_a_loop(small_fig6):
    c = small_fig6.curves[0]
    b = small_fig6.bands[0]
    # the LP and SPR curves agree per trial, so with shared resample indices their bands coincide: a
    # resampled mean moves by at most the largest per-trial difference (|spr - lp| / D), percentiles
    # (order statistics, interpolated) are 1-Lipschitz, and each W @ U rounds (n u of max |U|)
    n = int(c.valid.sum())
    diff = np.zeros(len(GRID))
    for j in range(1, len(GRID)):
        diff[j] = max(sum(cell_errs(c, t, j)) / c.input_divergence[t] for t in np.flatnonzero(c.valid))
    rnd = 2 * (n + 4) * U * max(float(np.max(np.abs(c.normalized(m)))) for m in c.mechanisms)
    for side in ("lower", "upper"):
        band = getattr(b, side)
        assert np.all(np.abs(band["spr"] - band["kov_lp"]) <= diff + rnd), side
    # a percentile band contains the mean (not exact for every sample, but for these curves) up to
    # the two computations of the means (W @ U against mean: (n + 4) u each)
    for m in c.mechanisms:
        assert np.all(b.lower[m] <= c.mean(m) + rnd) and np.all(c.mean(m) <= b.upper[m] + rnd)
    # independent loop implementation of the percentile bootstrap
    n = int(c.valid.sum())
    idx = np.random.default_rng(b.seed).integers(0, n, size=(b.resamples, n))
    for m in ("spr", "rr"):
        vals = c.normalized(m)
        means = np.array([vals[row].mean(axis=0) for row in idx])
        lo, hi = np.percentile(means, [2.5, 97.5], axis=0)
        # the same resamples: means by a loop (n terms) and by W @ U, (n + 4) u of max |U| each;
        # percentiles are 1-Lipschitz in the samples
        rnd = 2 * (n + 4) * U * float(np.max(np.abs(vals)))
        assert np.all(np.abs(lo - b.lower[m]) <= rnd) and np.all(np.abs(hi - b.upper[m]) <= rnd)


def test_zero_denominator_trials_are_skipped(monkeypatch):
    real = utility.draw_pairs

    def fake(k, trials, seed=0):
        p0s, p1s = real(k, trials, seed)
        p1s = p1s.copy()
        p1s[1] = p0s[1]  # D(P0 || P1) = 0 in trial 1
        return p0s, p1s

    monkeypatch.setattr(utility, "draw_pairs", fake)
    c = ex.utility_curves(4, trials=3, eps_grid=[0.0, 1.0], include_lp=False)
    assert c.trials_skipped == 1 and c.valid.tolist() == [True, False, True]
    assert c.normalized("spr").shape == (2, 2)
    assert np.all(np.isfinite(c.mean("spr")))
    exp = utility.UtilityExperiment(curves=(c,))
    assert exp.summary()["trials_skipped"] == {"4": 1}


def test_loop_and_auto_solvers_agree():
    a = ex.utility_curves(5, trials=3, eps_grid=[0.0, 0.7, 3.0], include_lp=False, spr_solver="loop")
    b = ex.utility_curves(5, trials=3, eps_grid=[0.0, 0.7, 3.0], include_lp=False, spr_solver="auto")
    # two fast paths (optimal_mechanism and sweep), each within fast_spr_err of the optimum
    for t in range(3):
        for j in (1, 2):
            err = 2 * cell_errs(a, t, j)[0]
            assert within("loop vs sweep solver", a.raw["spr"][t, j], b.raw["spr"][t, j], err)
    assert a.spr_method == "optimal_mechanism"


def test_utility_validation():
    with pytest.raises(ValueError, match="eps_grid"):
        ex.utility_curves(4, trials=2, eps_grid=[-1.0])
    with pytest.raises(ValueError, match="spr_solver"):
        ex.utility_curves(4, trials=2, eps_grid=[1.0], spr_solver="nope")
    with pytest.raises(ValueError, match="trials"):
        ex.utility_curves(4, trials=0)
    with pytest.raises(ValueError, match="resamples"):
        ex.bootstrap_bands(ex.utility_curves(3, trials=2, eps_grid=[1.0], include_lp=False), resamples=0)


# --------------------------------------------------------------------------------------------
# Figure 3
# --------------------------------------------------------------------------------------------
def test_fig3_summary_at_the_paper_instance():
    s = ex.fig3().summary()
    assert s["candidate_count"] == 10 and s["extreme_count"] == 6 == s["paper_extreme_count"]
    assert len(s["extreme"]) == 6 and len(s["dominated"]) == 4
    s2 = ex.fig3([0.5, 0.5], [0.25, 0.75], 1.0).summary()
    assert s2["candidate_count"] == 4 and "paper_extreme_count" not in s2
    df = ex.fig3().to_frame()
    assert (
        len(df) == 10
        and df["extreme"].sum() == 6
        and sorted(df["hull_order"][df["extreme"]]) == list(range(6))
    )


# --------------------------------------------------------------------------------------------
# Figure 5
# --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def quick_fig5():
    return ex.hull_check(samples=30_000, quick=True)


def test_fig5_quick_hull_contains_every_sample(quick_fig5):
    s = quick_fig5.summary()
    assert [p["eps"] for p in s["panels"]] == [0.4, 2.0, 5.0]
    assert [p["extreme_count"] for p in s["panels"]] == [4, 6, 10]
    assert [p["outside_hull"] for p in s["panels"]] == [0, 0, 0]
    for pn in quick_fig5.panels:
        # an accepted z passes min >= e^-eps max in float ((R_FN + 2) u relative: within that of an
        # eps-LDP channel, whose image is in the hull); the image (5 products and sums: 5u), the hull's
        # vertices (C_POINT = 2 R_FN + 6, tests/spr/test_geometry.py) and outside_distance (9u)
        bound = math.sqrt(2) * (2 * (R_FN + 2) + 5 + 2 * R_FN + 6) * U + 9 * U
        assert pn.accepted > 0 and pn.max_outside_distance <= bound
        assert pn.cloud.shape == (pn.accepted, 2)
    json.dumps(s, allow_nan=False)


def test_fig5_acceptance_rates_against_the_exact_integral(quick_fig5):
    # binomial counts against the exact acceptance probability: |count - N p| <= MC_Z sd (+1 for the
    # counts' discreteness); the quadrature is within epsrel 1e-10 of p, far below sd / N
    for pn in quick_fig5.panels:
        prob = _acceptance(pn.eps, 5, pn.proposal)
        sd = math.sqrt(pn.samples * prob * (1 - prob))
        dev = abs(pn.accepted - pn.samples * prob)
        assert dev <= MC_Z * sd + 1, (pn.eps, pn.accepted, pn.samples * prob)


def test_fig5_paper_rates_are_consistent_with_the_exact_integral():
    # the paper's printed rates (N = 2e6) are within 4 sd of the exact acceptance probability
    for eps, rate in ex.PAPER_ACCEPTANCE_RATES.items():
        prob = _acceptance(eps, 5, montecarlo.default_proposal(eps))
        sd = math.sqrt(prob * (1 - prob) / ex.FIG5_SAMPLES)
        # PAPER_Z sd (a two-sided normal tail of 6.3e-5 per rate), and the printed rates' rounding to
        # three decimals of a percent (half a unit: 5e-6)
        assert abs(rate - prob) <= PAPER_Z * sd + 5e-6, (eps, rate, prob)


def test_fig5_chunking_does_not_change_the_stream():
    a = ex.hull_check(samples=5_000, chunk_size=997, max_cloud=10**6)
    b = ex.hull_check(samples=5_000, chunk_size=5_000, max_cloud=10**6)
    for pa, pb in zip(a.panels, b.panels, strict=False):
        assert pa.accepted == pb.accepted
        assert np.array_equal(pa.cloud, pb.cloud)


@pytest.mark.slow
def test_fig5_full_size_acceptance_reproduces_the_paper_digits():
    # Deterministic: the shared default_rng(20260503) stream at N = 2,000,000 per panel gives exactly
    # the rates printed in Appendix E.1 (0.147%, 1.675%, 26.336%, three decimals of a percent).
    rng = np.random.default_rng(ex.FIG5_SEED)
    for eps in ex.FIG5_EPS:
        acc = 0
        for _ in range(ex.FIG5_SAMPLES // 400_000):
            z = montecarlo.sample_first_columns(rng, 400_000, 5, montecarlo.default_proposal(eps))
            acc += int(np.count_nonzero(montecarlo.ldp_accept(z, eps)))
        assert round(100 * acc / ex.FIG5_SAMPLES, 3) == round(100 * ex.PAPER_ACCEPTANCE_RATES[eps], 3)


def test_fig5_validation():
    with pytest.raises(ValueError, match="proposal"):
        ex.hull_check(samples=10, eps_values=[1.0], proposals=["normal"])
    with pytest.raises(ValueError, match="proposals"):
        ex.hull_check(samples=10, eps_values=[1.0, 2.0], proposals=["beta"])
    with pytest.raises(ValueError, match="samples"):
        ex.hull_check(samples=0)


# --------------------------------------------------------------------------------------------
# runtimes
# --------------------------------------------------------------------------------------------
def test_runtimes_small():
    t = ex.runtimes(lp_ks=(4, 6), spr_ks=(4, 8, 16), repeats=2, quick=True)
    s = t.summary()
    assert set(s["kov_lp_seconds_per_solve"]) == {"4", "6"}
    assert set(s["spr_seconds_per_solve"]) == {"4", "8", "16"}
    assert all(v > 0 for v in s["spr_seconds_per_solve"].values())
    # the instances runtimes() solves at k = 4 (both solvers): default_rng(0).dirichlet(ones(4), (2, 2))
    pairs = np.random.default_rng(0).dirichlet(np.ones(4), size=(2, 2))
    err = max(fast_spr_err(a, b_, 1.0, "kl") + kov_bound(a, b_, 1.0, "kl") for a, b_ in pairs)
    assert s["max_abs_spr_minus_lp"] is not None and s["max_abs_spr_minus_lp"] <= err
    assert s["quick"] is True and s["skipped"] == []
    assert len(t.to_frame()) == 5


def test_runtimes_budget_stops_a_solver():
    t = ex.runtimes(lp_ks=(), spr_ks=(4, 8, 16), repeats=1, spr_budget_s=1e-12)
    rows = [r for r in t.rows if r.solver == "spr"]
    assert rows[0].status == "ok"
    assert all(r.status.startswith("skipped") and math.isnan(r.seconds_per_solve) for r in rows[1:])
    assert math.isnan(t.max_abs_spr_minus_lp)


def test_lazy_module_export():
    assert ldpopt.experiments is ex
