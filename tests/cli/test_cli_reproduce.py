"""Tests of ``ldpopt reproduce`` (small, fast versions of every command)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from _valuebounds import baseline_utility_err, fast_spr_err, kov_bound
from ldpopt.cli import app
from ldpopt.experiments import draw_pairs

runner = CliRunner()
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def utility_cell_errs(k, eps, trials=4, seed=0):
    """Per trial of the quick run: (|SPR - exact|, |KOV LP - exact| (k <= 10), |baseline - exact|)."""
    out = []
    for p, q in zip(*draw_pairs(k, trials, seed), strict=True):
        spr = fast_spr_err(p, q, eps, "kl")
        lp = kov_bound(p, q, eps, "kl") if k <= 10 else float("inf")
        base = max(baseline_utility_err(p, q, eps, m) for m in ("rr", "binary"))
        out.append((spr, lp, base, float(np.sum(p * np.log(p / q)))))
    return out


def _run(args, ok=True):
    res = runner.invoke(app, ["reproduce", *args])
    if ok:
        assert res.exit_code == 0, res.output + repr(res.exception)
    return res


def _outputs(d, name):
    for suffix in (".png", ".svg", ".csv"):
        assert (d / f"{name}{suffix}").stat().st_size > 0
    assert (d / f"{name}.png").read_bytes()[:8] == PNG_MAGIC
    return json.loads((d / "summary.json").read_text())


def test_help_lists_every_experiment():
    res = _run(["--help"])
    for name in ("fig1", "fig3", "fig5", "fig6", "runtimes"):
        assert name in res.output


@pytest.mark.parametrize("name", ["fig1", "fig6"])
def test_fig1_fig6_quick(tmp_path, name):
    extra = ["--resamples", "40"] if name == "fig6" else []
    res = _run(
        [
            name,
            "--quick",
            "--k",
            "4",
            "--k",
            "11",
            "--trials",
            "4",
            "--eps-step",
            "2.5",
            "--out",
            str(tmp_path),
            *extra,
        ]
    )
    s = _outputs(tmp_path, name)
    for key in (
        "max_abs_spr_minus_lp",
        "binary_plateau",
        "rr_over_spr_at_0_5",
        "rr_within_5pct_eps",
        "spr_runtime_s",
        "trials_skipped",
    ):
        assert key in s
    assert s["quick"] is True and s["trials"] == 4
    # the same cells as this run (seed 0, 4 trials, eps 2.5 .. 10): every per-cell bound
    grid = (2.5, 5.0, 7.5, 10.0)
    errs = {k: {e: utility_cell_errs(k, e) for e in grid} for k in (4, 11)}
    lp_err = max(c[0] + c[1] for e in grid for c in errs[4][e])
    assert s["max_abs_spr_minus_lp"] <= lp_err  # k = 4 has the LP
    base_err = max(c[0] + c[2] for k in (4, 11) for e in grid for c in errs[k][e])
    assert s["max_baseline_minus_spr"] <= base_err
    assert set(s["binary_plateau"]) == {"4", "11"}
    df = pd.read_csv(tmp_path / f"{name}.csv")
    assert df["quick"].all()
    assert set(df["mechanism"]) == {"kov_lp", "spr", "binary", "rr"}
    assert set(df["eps"]) == {0.0, 2.5, 5.0, 7.5, 10.0}
    # SPR >= every baseline at every eps (mean curves)
    for k in (4, 11):
        piv = df[df["k"] == k].pivot(index="eps", columns="mechanism", values="mean")
        # means of normalised values: each cell's (SPR + baseline) error / D(p||q) (D's own rounding
        # is common to both), the means' rounding (4 terms: 6u of the mean)
        slack = {0.0: 0.0}
        for e in grid:
            cells = errs[k][e]
            slack[e] = sum((c[0] + c[2]) / c[3] for c in cells) / len(cells)
        for m in ("binary", "rr"):
            bound = piv.index.map(slack).to_numpy() + 12 * 2.0**-53 * piv["spr"].abs().to_numpy()
            assert (piv[m] <= piv["spr"] + bound).all()
    if name == "fig6":
        assert {"lower", "upper"} <= set(df.columns) and s["bootstrap"]["resamples"] == 40
    assert "QUICK RUN" in res.output and "max_abs_spr_minus_lp" in res.output


def test_fig3_default_and_custom(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = _run(["fig3"])  # default instance, default output directory ./ldpopt-out/fig3/
    d = tmp_path / "ldpopt-out" / "fig3"
    s = _outputs(d, "fig3")
    assert s["candidate_count"] == 10 and s["extreme_count"] == 6 == s["paper_extreme_count"]
    assert s["quick"] is False
    assert "{1,2} | {3,4,5} [1,2]" in res.output
    df = pd.read_csv(d / "fig3.csv")
    assert len(df) == 10 and int(df["extreme"].sum()) == 6
    _run(
        [
            "fig3",
            "--p0",
            "0.2,0.3,0.5",
            "--p1",
            "0.5,0.3,0.2",
            "--eps",
            "0.4",
            "--quick",
            "--out",
            str(tmp_path / "c"),
        ]
    )
    s = json.loads((tmp_path / "c" / "summary.json").read_text())
    assert s["candidate_count"] == 6 and s["quick"] is True and s["eps"] == 0.4


def test_fig3_bad_input_fails_cleanly(tmp_path):
    res = _run(["fig3", "--p0", "0.5,0.6", "--p1", "0.5,0.5", "--out", str(tmp_path)], ok=False)
    assert res.exit_code == 2 and "p0" in res.output
    res = _run(["fig3", "--p0", "0.5,0.5", "--out", str(tmp_path)], ok=False)
    assert res.exit_code == 2 and "--p1" in res.output


def test_fig5_quick(tmp_path):
    res = _run(["fig5", "--quick", "--samples", "4000", "--out", str(tmp_path)])
    s = _outputs(tmp_path, "fig5")
    assert s["quick"] is True
    assert [p["eps"] for p in s["panels"]] == [0.4, 2.0, 5.0]
    for p in s["panels"]:
        assert p["outside_hull"] == 0 and p["samples"] == 4000
        assert 0 <= p["acceptance_rate"] <= 1 and "extreme_count" in p
    assert [p["extreme_count"] for p in s["panels"]] == [4, 6, 10]
    assert (tmp_path / "fig5_cloud.csv").exists()
    assert "Monte-Carlo panels" in res.output


def test_runtimes_quick(tmp_path):
    _run(
        [
            "runtimes",
            "--quick",
            "--lp-max-k",
            "6",
            "--spr-max-k",
            "8",
            "--repeats",
            "1",
            "--out",
            str(tmp_path),
        ]
    )
    s = _outputs(tmp_path, "runtimes")
    assert s["quick"] is True
    assert set(s["kov_lp_seconds_per_solve"]) == {"4", "6"}
    assert set(s["spr_seconds_per_solve"]) == {"4", "6", "8"}
    # runtimes solves default_rng(0).dirichlet(ones(k), (1, 2)) at eps = 1 for k = 4, 6 with both
    err = 0.0
    for k in (4, 6):
        a, b = np.random.default_rng(0).dirichlet(np.ones(k), size=(1, 2))[0]
        err = max(err, fast_spr_err(a, b, 1.0, "kl") + kov_bound(a, b, 1.0, "kl"))
    assert s["max_abs_spr_minus_lp"] <= err


def test_shared_options_state_each_subcommands_own_defaults():
    """The option aliases of ``reproduce`` name the defaults the commands really use."""
    import typer

    from ldpopt.cli import reproduce as rp

    group = typer.main.get_command(app).commands["reproduce"]

    def helps(name):
        return {p.opts[0]: p.help for p in group.commands[name].params if p.opts[0].startswith("--")}

    fig1, fig6, chernoff = helps("fig1"), helps("fig6"), helps("chernoff")
    assert (
        fig1["--trials"]
        == fig6["--trials"]
        == f"Dirichlet pairs T (default 100; {rp.QUICK_TRIALS} with --quick)."
    )
    assert fig1["--eps-step"] == "Grid step on [0, 10] (default 0.1; 0.5 with --quick)."
    assert fig6["--resamples"] == "Bootstrap resamples (default 5000; 500 with --quick)."
    assert chernoff["--trials"] == "Dirichlet pairs T (default 100; 5 with --quick)."
    assert chernoff["--eps-step"] == "Grid step on [0, 10] (default 0.5; 2.5 with --quick)."
    assert chernoff["--resamples"] == "Bootstrap resamples (default 1000; 200 with --quick)."
    for name in ("fig1", "fig6", "chernoff"):
        assert helps(name)["--k"] == rp.KOpt.help and helps(name)["--seed"] == rp.DirichletSeedOpt.help
    assert helps("fig3")["--p0"] == helps("fig5")["--p0"] == rp.PaperP0Opt.help
