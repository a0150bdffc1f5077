"""Tests of ldpopt.experiments (reduced versions of the SPR paper's Figures 1, 3, 5, 6 and runtimes)."""

from __future__ import annotations

import functools
import json
import math

import numpy as np
import pytest

import ldpopt
from ldpopt import experiments as ex
from ldpopt.experiments import montecarlo, utility
from reference import binary_rejection_acceptance, brute_force_optimum, naive_divergence

# the quadrature takes ~0.5 s per call; two tests need the same three values
_acceptance = functools.lru_cache(maxsize=None)(binary_rejection_acceptance)

GRID = np.array([0.0, 0.5, 1.0, 2.5, 5.0, 9.0])
REL = 1e-12


def _kl(u, v):
    return naive_divergence(u, v, "kl")


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
        for m in ("binary", "rr"):
            assert np.all(c.raw[m] <= spr * (1 + REL) + 1e-15), m
            assert np.all(c.mean(m) <= c.mean("spr") * (1 + REL) + 1e-15), m
        # normalised utilities lie in [0, 1] (data processing inequality)
        norm = c.normalized("spr")
        assert np.all(norm >= 0) and np.all(norm <= 1 + 1e-12)
        # eps = 0: every mechanism is input independent
        for m in c.mechanisms:
            assert np.all(c.raw[m][:, 0] == 0.0)
    c4 = small_fig6.curves[0]
    assert "kov_lp" in c4.raw and "kov_lp" not in small_fig6.curves[1].raw  # LP only for k <= 10
    assert c4.max_abs_spr_minus_lp() <= 1e-9
    assert c4.lp_failures == 0


def test_spr_values_against_brute_force_over_all_set_partitions(small_fig6):
    c = small_fig6.curves[0]  # k = 4: 15 set partitions
    for t in range(3):
        for j in (1, 3, 5):
            ref = brute_force_optimum(c.p0s[t], c.p1s[t], float(GRID[j]), _kl)
            assert c.raw["spr"][t, j] == pytest.approx(ref, rel=1e-10, abs=1e-14)


def test_baseline_values_from_textbook_channels(small_fig6):
    c = small_fig6.curves[1]  # k = 12
    k = c.k
    for t in (0, 5):
        p, q = c.p0s[t], c.p1s[t]
        for j in (1, 4):
            e = math.exp(GRID[j])
            rr = np.full((k, k), 1.0 / (e + k - 1))
            np.fill_diagonal(rr, e / (e + k - 1))
            assert c.raw["rr"][t, j] == pytest.approx(_kl(rr.T @ p, rr.T @ q), rel=1e-10)
            h = p >= q
            m0 = np.array([(e * p[h].sum() + p[~h].sum()), (p[h].sum() + e * p[~h].sum())]) / (e + 1)
            m1 = np.array([(e * q[h].sum() + q[~h].sum()), (q[h].sum() + e * q[~h].sum())]) / (e + 1)
            assert c.raw["binary"][t, j] == pytest.approx(_kl(m0, m1), rel=1e-10)
        assert c.input_divergence[t] == pytest.approx(_kl(p, q), rel=1e-12)


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
    assert s["max_abs_spr_minus_lp"] <= 1e-9
    assert set(s["binary_plateau"]) == {"4", "12"}
    for k in ("4", "12"):
        assert 0 < s["binary_plateau"][k] < 1
        assert 0 <= s["rr_over_spr_at_0_5"][k] <= 1
        assert s["rr_within_5pct_eps"][k] is None or s["rr_within_5pct_eps"][k] > 0
        assert s["spr_runtime_s"][k] > 0
        assert s["trials_skipped"][k] == 0
    c = small_fig6.curves[0]
    # the plateau is the mean of the binary curve over eps >= 5; the ratio is the curves' ratio at 0.5
    assert s["binary_plateau"]["4"] == pytest.approx(np.mean(c.mean("binary")[GRID >= 5]))
    assert s["rr_over_spr_at_0_5"]["4"] == pytest.approx(c.mean("rr")[1] / c.mean("spr")[1])
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
    # the LP and SPR curves agree per trial, so with shared resample indices their bands coincide
    assert np.max(np.abs(b.lower["spr"] - b.lower["kov_lp"])) < 1e-9
    assert np.max(np.abs(b.upper["spr"] - b.upper["kov_lp"])) < 1e-9
    for m in c.mechanisms:
        assert np.all(b.lower[m] <= c.mean(m) + 1e-12) and np.all(c.mean(m) <= b.upper[m] + 1e-12)
    # independent loop implementation of the percentile bootstrap
    n = int(c.valid.sum())
    idx = np.random.default_rng(b.seed).integers(0, n, size=(b.resamples, n))
    for m in ("spr", "rr"):
        vals = c.normalized(m)
        means = np.array([vals[row].mean(axis=0) for row in idx])
        lo, hi = np.percentile(means, [2.5, 97.5], axis=0)
        assert np.allclose(lo, b.lower[m], rtol=0, atol=1e-12)
        assert np.allclose(hi, b.upper[m], rtol=0, atol=1e-12)


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
    assert np.allclose(a.raw["spr"], b.raw["spr"], rtol=1e-12, atol=0)
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
        assert pn.accepted > 0 and pn.max_outside_distance <= 1e-12
        assert pn.cloud.shape == (pn.accepted, 2)
    json.dumps(s, allow_nan=False)


def test_fig5_acceptance_rates_against_the_exact_integral(quick_fig5):
    # binomial counts against the exact acceptance probability: |count - N p| <= 6 sd (alpha ~ 2e-9)
    for pn in quick_fig5.panels:
        prob = _acceptance(pn.eps, 5, pn.proposal)
        sd = math.sqrt(pn.samples * prob * (1 - prob))
        assert abs(pn.accepted - pn.samples * prob) <= 6 * sd + 1, (pn.eps, pn.accepted, pn.samples * prob)


def test_fig5_paper_rates_are_consistent_with_the_exact_integral():
    # the paper's printed rates (N = 2e6) are within 4 sd of the exact acceptance probability
    for eps, rate in ex.PAPER_ACCEPTANCE_RATES.items():
        prob = _acceptance(eps, 5, montecarlo.default_proposal(eps))
        sd = math.sqrt(prob * (1 - prob) / ex.FIG5_SAMPLES)
        assert abs(rate - prob) <= 4 * sd + 5e-6, (eps, rate, prob)


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
    assert s["max_abs_spr_minus_lp"] is not None and s["max_abs_spr_minus_lp"] <= 1e-9
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
