"""``ldpopt reproduce NAME``: rerun the SPR paper's experiments and write figures, CSV and a summary.

Each subcommand (fig1, fig3, fig5, fig6, runtimes, chernoff) writes into ``--out`` (default
``./ldpopt-out/NAME/``) ``NAME.png``, ``NAME.svg``, ``NAME.csv`` (the plotted numbers) and
``summary.json`` (the headline numbers), and prints the summary as a table.  ``--quick`` runs a
reduced version (for CI); the summary, the CSV and the figure title say so.  Heavy imports happen
inside the commands so ``ldpopt --help`` stays fast.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from ldpopt._progress import ProgressBar
from ldpopt.cli._common import (
    FromOpt,
    JsonOpt,
    LabelColOpt,
    NormalizeOpt,
    P0ColOpt,
    P1ColOpt,
    app,
    console,
    fail,
    fmt,
    json_safe,
    load_pair,
    need,
    one_eps,
    report_to_stderr_if_json_on_stdout,
    write_json,
)

reproduce_app = typer.Typer(
    name="reproduce",
    help=(
        "Reproduce the SPR paper's experiments (fig1, fig3, fig5, fig6, runtimes), the robust design "
        "study (robust), the Chernoff experiment (chernoff) and the frequency-oracle gaps (frequency) "
        "as figures + CSV + summary.json."
    ),
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(reproduce_app, name="reproduce")

#: the full runs of fig1/fig6: Dirichlet pairs, eps grid step, bootstrap resamples (fig6)
TRIALS = 100
EPS_STEP = 0.1
RESAMPLES = 5000
#: reduced sizes used by --quick
QUICK_TRIALS = 10
QUICK_EPS_STEP = 0.5
QUICK_RESAMPLES = 500
QUICK_SAMPLES = 20_000
QUICK_LP_KS = (4, 6, 8)
QUICK_SPR_KS = (4, 8, 16, 32, 64)
QUICK_BUDGET_S = 5.0
#: the finest eps grid (10,001 points on [0, 10]); finer grids are refused before any allocation
MIN_EPS_STEP = 1e-3

#: chernoff --quick: five pairs on the grid {0, 2.5, ..., 10}, 200 bootstrap resamples (a few seconds)
CHERNOFF_QUICK_TRIALS = 5
CHERNOFF_QUICK_EPS_STEP = 2.5
CHERNOFF_QUICK_RESAMPLES = 200
#: the default chernoff run: 100 pairs on {0, 0.5, ..., 10} for k = 6 and 100, 1000 resamples
CHERNOFF_EPS_STEP = 0.5
CHERNOFF_RESAMPLES = 1000

# Options shared by the subcommands (typer reads these singletons afresh for each command), and
# the makers of those whose defaults, named in the help, differ between subcommands.
OutOpt = typer.Option(None, "--out", help="Output directory (default ./ldpopt-out/NAME/).")
QuickOpt = typer.Option(False, "--quick", help="Reduced run for CI (clearly labelled in every output).")
KOpt: Any = typer.Option(None, "--k", help="Alphabet size; repeat for several panels (default 6 and 100).")
DirichletSeedOpt: Any = typer.Option(0, "--seed", help="NumPy seed of the Dirichlet draws.")
SprSolverOpt: Any = typer.Option(
    "auto", "--spr-solver", help="auto (ldpopt.sweep if available), sweep or loop."
)
PaperP0Opt: Any = typer.Option(
    None, "--p0", help="P0: comma-separated numbers or label=value pairs (default: the paper's p)."
)
PaperP1Opt: Any = typer.Option(
    None, "--p1", help="P1: comma-separated numbers or label=value pairs (default: the paper's q)."
)


def _trials_opt(default: int, quick: int) -> Any:
    return typer.Option(
        None, "--trials", help=f"Dirichlet pairs T (default {default}; {quick} with --quick)."
    )


def _eps_step_opt(default: float, quick: float) -> Any:
    return typer.Option(
        None, "--eps-step", help=f"Grid step on [0, 10] (default {default:g}; {quick:g} with --quick)."
    )


def _resamples_opt(default: int, quick: int) -> Any:
    return typer.Option(
        None, "--resamples", help=f"Bootstrap resamples (default {default}; {quick} with --quick)."
    )


TrialsOpt: Any = _trials_opt(TRIALS, QUICK_TRIALS)
EpsStepOpt: Any = _eps_step_opt(EPS_STEP, QUICK_EPS_STEP)


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------
def _outdir(out: Path | None, name: str) -> Path:
    d = Path(out) if out is not None else Path("ldpopt-out") / name
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"cannot create --out {d}: {exc.strerror or exc}")
    return d


def _write_outputs(
    outdir: Path, name: str, fig, frame, summary: dict, extra: dict | None = None
) -> list[Path]:
    from ldpopt.plots import save_figure

    paths = save_figure(fig, outdir / name)
    csv = outdir / f"{name}.csv"
    frame.to_csv(csv, index=False)
    paths.append(csv)
    for fname, df in (extra or {}).items():
        path = outdir / fname
        df.to_csv(path, index=False)
        paths.append(path)
    sj = outdir / "summary.json"
    write_json(sj, summary, announce=False)  # listed with the other outputs below
    paths.append(sj)
    return paths


def _print_summary(title: str, summary: dict, paths: list[Path], json_out: Path | None = None) -> None:
    """The summary as tables (on standard error with ``--json -``) and, with ``--json``, as JSON
    (the same document as ``summary.json``)."""
    with report_to_stderr_if_json_on_stdout(json_out):
        _print_summary_tables(title, summary, paths)
    if json_out is not None:
        write_json(json_out, summary)


def _print_summary_tables(title: str, summary: dict, paths: list[Path]) -> None:
    from rich.text import Text

    table = Table(title=Text(title + ("  (QUICK RUN)" if summary.get("quick") else "")))
    table.add_column("key")
    table.add_column("value", overflow="fold")
    for key, val in summary.items():
        if isinstance(val, dict):
            for k2, v2 in val.items():
                table.add_row(Text(f"{key}[{k2}]"), Text(fmt(v2)))
        elif key == "panels":
            continue
        else:
            table.add_row(Text(key), Text(fmt(val)))
    console.print(table)
    if "panels" in summary:
        n = summary["panels"][0]["samples"] if summary["panels"] else 0
        pt = Table(title=f"Monte-Carlo panels, N = {n:,} proposals each (paper: Appendix E.1, Figure 5)")
        for c in ("eps", "proposal", "accepted", "rate", "paper", "extreme", "paper", "outside"):
            pt.add_column(c, justify="right")

        def pct(x):
            return "-" if x is None else f"{100 * x:.3f}%"

        for pn in summary["panels"]:
            pt.add_row(
                fmt(pn["eps"]),
                pn["proposal"],
                f"{pn['accepted']:,}",
                pct(pn["acceptance_rate"]),
                pct(pn.get("paper_acceptance_rate")),
                f"{pn['extreme_count']}/{pn['candidate_count']}",
                fmt(pn.get("paper_extreme_count")),
                str(pn["outside_hull"]),
            )
        console.print(pt)
    console.print(Text("wrote " + ", ".join(str(p) for p in paths)))


def _needs_extras() -> None:
    """Figures need matplotlib (``plots``), the CSV tables pandas (``sweeps``): a one-line error
    before any work when either is missing."""
    need("matplotlib", "ldpopt reproduce", "plots")
    need("pandas", "ldpopt reproduce", "sweeps")


def _eps_grid(step: float):
    import numpy as np

    if not (math.isfinite(step) and MIN_EPS_STEP <= step <= 10.0):
        fail(f"--eps-step must be a number in [{MIN_EPS_STEP:g}, 10] that divides 10, got {step!r}")
    n = int(round(10.0 / step))
    if n < 1 or abs(n * step - 10.0) > 1e-9:
        fail(f"--eps-step must divide 10, got {step!r}")
    # (10 i) / n is one correctly rounded division: the grid points are exactly 0.1, 0.2, ...
    return np.arange(n + 1) * 10.0 / n


# ---------------------------------------------------------------------------------------------
# fig1 / fig6
# ---------------------------------------------------------------------------------------------
def _utility_command(
    name: str,
    k: list[int] | None,
    trials: int | None,
    seed: int,
    eps_step: float | None,
    *,
    resamples: int | None,
    spr_solver: str,
    out: Path | None,
    quick: bool,
    json_out: Path | None = None,
) -> None:
    from ldpopt import experiments as ex
    from ldpopt.experiments.utility import progress_total
    from ldpopt.plots import plot_utility_curves

    ks = list(k) if k else [6, 100]
    trials = trials if trials is not None else (QUICK_TRIALS if quick else TRIALS)
    step = eps_step if eps_step is not None else (QUICK_EPS_STEP if quick else EPS_STEP)
    grid = _eps_grid(step)
    _needs_extras()
    outdir = _outdir(out, name)
    total = sum(progress_total(kk, trials) for kk in ks)
    try:
        with ProgressBar(total, f"{name}: k = {', '.join(map(str, ks))}, T = {trials}") as bar:
            if name == "fig6":
                res = resamples if resamples is not None else (QUICK_RESAMPLES if quick else RESAMPLES)
                exp = ex.fig6(
                    ks,
                    trials,
                    seed,
                    grid,
                    resamples=res,
                    spr_solver=spr_solver,
                    quick=quick,
                    progress=bar.advance,
                )
            else:
                exp = ex.fig1(
                    ks, trials, seed, grid, spr_solver=spr_solver, quick=quick, progress=bar.advance
                )
    except (ValueError, TypeError) as exc:
        fail(str(exc))
    fig = plot_utility_curves(exp)
    summary = exp.summary()
    paths = _write_outputs(outdir, name, fig, exp.to_frame(), summary)
    _print_summary(f"{name}: normalised KL utility vs eps", json_safe(summary), paths, json_out)


@reproduce_app.command("fig1")
def fig1_cmd(
    *,
    k: list[int] | None = KOpt,
    trials: int | None = TrialsOpt,
    seed: int = DirichletSeedOpt,
    eps_step: float | None = EpsStepOpt,
    spr_solver: str = SprSolverOpt,
    out: Path | None = OutOpt,
    quick: bool = QuickOpt,
    json_out: Path | None = JsonOpt,
) -> None:
    """Figure 1: normalised KL utility vs eps of SPR, binary, k-RR and (k <= 10) the KOV LP."""
    _utility_command(
        "fig1",
        k,
        trials,
        seed,
        eps_step,
        resamples=None,
        spr_solver=spr_solver,
        out=out,
        quick=quick,
        json_out=json_out,
    )


@reproduce_app.command("fig6")
def fig6_cmd(
    *,
    k: list[int] | None = KOpt,
    trials: int | None = TrialsOpt,
    seed: int = DirichletSeedOpt,
    eps_step: float | None = EpsStepOpt,
    resamples: int | None = _resamples_opt(RESAMPLES, QUICK_RESAMPLES),
    spr_solver: str = SprSolverOpt,
    out: Path | None = OutOpt,
    quick: bool = QuickOpt,
    json_out: Path | None = JsonOpt,
) -> None:
    """Figure 6: Figure 1 with 95% percentile-bootstrap bands (same resample indices for every mechanism)."""
    _utility_command(
        "fig6",
        k,
        trials,
        seed,
        eps_step,
        resamples=resamples,
        spr_solver=spr_solver,
        out=out,
        quick=quick,
        json_out=json_out,
    )


# ---------------------------------------------------------------------------------------------
# fig3
# ---------------------------------------------------------------------------------------------
def _paper_pair(pair: Any) -> Any:
    """P0, P1 as given (``load_pair``: inline or by --from FILE; plain arrays in the given order),
    else the paper's."""
    import numpy as np

    from ldpopt.experiments import PAPER_P, PAPER_Q

    if pair is None:
        return PAPER_P, PAPER_Q
    return tuple(np.array(list(v.values()) if isinstance(v, dict) else v, dtype=float) for v in pair)


@reproduce_app.command("fig3")
def fig3_cmd(
    *,
    p0: str | None = PaperP0Opt,
    p1: str | None = PaperP1Opt,
    eps: float = typer.Option(2.0, "--eps", parser=one_eps, help="Privacy level."),
    source: Path | None = FromOpt,
    p0_col: str = P0ColOpt,
    p1_col: str = P1ColOpt,
    label_col: str | None = LabelColOpt,
    normalize: bool = NormalizeOpt,
    out: Path | None = OutOpt,
    quick: bool = QuickOpt,
    json_out: Path | None = JsonOpt,
) -> None:
    """Figure 3: the joint range R_2(p, q), its 2(k-1)+2 SPR candidates and which are extreme."""
    from ldpopt import experiments as ex
    from ldpopt.plots import plot_joint_range

    a, b = _paper_pair(load_pair(p0, p1, source, p0_col, p1_col, label_col, normalize))
    _needs_extras()
    outdir = _outdir(out, "fig3")
    try:
        res = ex.fig3(a, b, eps, quick=quick)
    except (ValueError, TypeError) as exc:
        fail(str(exc))
    summary = res.summary()
    paths = _write_outputs(outdir, "fig3", plot_joint_range(res), res.to_frame(), summary)
    _print_summary("fig3: joint range for l = 2", json_safe(summary), paths, json_out)


# ---------------------------------------------------------------------------------------------
# fig5
# ---------------------------------------------------------------------------------------------
@reproduce_app.command("fig5")
def fig5_cmd(
    *,
    p0: str | None = PaperP0Opt,
    p1: str | None = PaperP1Opt,
    eps: list[float] | None = typer.Option(
        None, "--eps", parser=one_eps, help="Privacy level per panel; repeat (default 0.4, 2, 5)."
    ),
    samples: int | None = typer.Option(
        None, "--samples", help="Proposals per panel (default 2,000,000; 20,000 with --quick)."
    ),
    seed: int = typer.Option(
        20260503, "--seed", help="Seed of numpy.random.default_rng (shared by the panels)."
    ),
    chunk_size: int = typer.Option(
        250_000, "--chunk-size", help="Proposals per vectorised step (bounds memory)."
    ),
    source: Path | None = FromOpt,
    p0_col: str = P0ColOpt,
    p1_col: str = P1ColOpt,
    label_col: str | None = LabelColOpt,
    normalize: bool = NormalizeOpt,
    out: Path | None = OutOpt,
    quick: bool = QuickOpt,
    json_out: Path | None = JsonOpt,
) -> None:
    """Figure 5: rejection-sampled random eps-LDP channels vs the predicted SPR hull."""
    from ldpopt import experiments as ex
    from ldpopt.plots import plot_hull_check

    a, b = _paper_pair(load_pair(p0, p1, source, p0_col, p1_col, label_col, normalize))
    eps_values = list(eps) if eps else list(ex.FIG5_EPS)
    n = samples if samples is not None else (QUICK_SAMPLES if quick else ex.FIG5_SAMPLES)
    _needs_extras()
    outdir = _outdir(out, "fig5")
    try:
        with ProgressBar(n * len(eps_values), f"fig5: {len(eps_values)} panels x {n:,} proposals") as bar:
            res = ex.hull_check(
                a, b, eps_values, n, seed, chunk_size=chunk_size, quick=quick, progress=bar.advance
            )
    except (ValueError, TypeError) as exc:
        fail(str(exc))
    summary = res.summary()
    paths = _write_outputs(
        outdir,
        "fig5",
        plot_hull_check(res),
        res.to_frame(),
        summary,
        extra={"fig5_cloud.csv": res.cloud_frame()},
    )
    _print_summary("fig5: Monte-Carlo check of the joint range", json_safe(summary), paths, json_out)


# ---------------------------------------------------------------------------------------------
# runtimes
# ---------------------------------------------------------------------------------------------
@reproduce_app.command("runtimes")
def runtimes_cmd(
    *,
    lp_max_k: int | None = typer.Option(
        None, "--lp-max-k", help="Largest k for the LP (grid 4, 6, ..., default 16)."
    ),
    spr_max_k: int | None = typer.Option(
        None, "--spr-max-k", help="Largest k for the SPR solver (default 10000)."
    ),
    eps: float = typer.Option(1.0, "--eps", parser=one_eps, help="Privacy level of every solve."),
    repeats: int | None = typer.Option(
        None, "--repeats", help="Instances per k (default 5; 3 with --quick)."
    ),
    budget: float | None = typer.Option(
        None, "--budget", help="Seconds per solve after which a solver stops (default 60; 5 with --quick)."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the Dirichlet instances."),
    out: Path | None = OutOpt,
    quick: bool = QuickOpt,
    json_out: Path | None = JsonOpt,
) -> None:
    """Runtimes: seconds per solve of the SPR solver vs the KOV LP (log-log)."""
    from ldpopt import experiments as ex
    from ldpopt.experiments.runtimes import total_units
    from ldpopt.plots import plot_runtimes

    lp_ks = list(QUICK_LP_KS if quick else ex.LP_KS)
    spr_ks = list(QUICK_SPR_KS if quick else ex.SPR_KS)
    if lp_max_k is not None:
        lp_ks = list(range(4, lp_max_k + 1, 2))
    if spr_max_k is not None:
        spr_ks = [k for k in ex.SPR_KS if k <= spr_max_k] or [spr_max_k]
    reps = repeats if repeats is not None else (3 if quick else 5)
    bud = budget if budget is not None else (QUICK_BUDGET_S if quick else 60.0)
    _needs_extras()
    outdir = _outdir(out, "runtimes")
    try:
        with ProgressBar(total_units(lp_ks, spr_ks), "runtimes") as bar:
            res = ex.runtimes(
                lp_ks,
                spr_ks,
                eps,
                repeats=reps,
                seed=seed,
                lp_budget_s=bud,
                spr_budget_s=bud,
                quick=quick,
                progress=bar.advance,
            )
    except (ValueError, TypeError) as exc:
        fail(str(exc))
    summary = res.summary()
    paths = _write_outputs(outdir, "runtimes", plot_runtimes(res), res.to_frame(), summary)
    _print_summary("runtimes: seconds per solve", json_safe(summary), paths, json_out)


# ---------------------------------------------------------------------------------------------
# robust
# ---------------------------------------------------------------------------------------------
@reproduce_app.command("robust")
def robust_cmd(
    seed: int = typer.Option(0, "--seed", help="Seed of the Dirichlet pairs and the counts."),
    out: Path | None = OutOpt,
    quick: bool = QuickOpt,
    json_out: Path | None = JsonOpt,
) -> None:
    """Robust vs plug-in design: certified worst-case KL utility vs TV radius and sample size."""
    from ldpopt.experiments.robust import robust_experiment
    from ldpopt.plots import plot_robust

    _needs_extras()
    outdir = _outdir(out, "robust")
    try:
        exp = robust_experiment(seed=seed, quick=quick)
    except (ValueError, TypeError) as exc:
        fail(str(exc))
    summary = exp.summary()
    paths = _write_outputs(outdir, "robust", plot_robust(exp), exp.to_frame(), summary)
    _print_summary("robust: worst-case utility over TV neighbourhoods", json_safe(summary), paths, json_out)


# ---------------------------------------------------------------------------------------------
# chernoff
# ---------------------------------------------------------------------------------------------
@reproduce_app.command("chernoff")
def chernoff_cmd(
    k: list[int] | None = KOpt,
    trials: int | None = _trials_opt(TRIALS, CHERNOFF_QUICK_TRIALS),
    seed: int = DirichletSeedOpt,
    eps_step: float | None = _eps_step_opt(CHERNOFF_EPS_STEP, CHERNOFF_QUICK_EPS_STEP),
    resamples: int | None = _resamples_opt(CHERNOFF_RESAMPLES, CHERNOFF_QUICK_RESAMPLES),
    out: Path | None = OutOpt,
    quick: bool = QuickOpt,
    json_out: Path | None = JsonOpt,
) -> None:
    """Normalised Chernoff information C(M0,M1)/C(P0,P1) of the Chernoff- and KL-optimal SPR, binary, k-RR."""
    from ldpopt.experiments.chernoff import chernoff_experiment
    from ldpopt.plots import plot_chernoff_curves

    ks = list(k) if k else [6, 100]
    trials = trials if trials is not None else (CHERNOFF_QUICK_TRIALS if quick else TRIALS)
    step = eps_step if eps_step is not None else (CHERNOFF_QUICK_EPS_STEP if quick else CHERNOFF_EPS_STEP)
    grid = _eps_grid(step)
    res = resamples if resamples is not None else (CHERNOFF_QUICK_RESAMPLES if quick else CHERNOFF_RESAMPLES)
    _needs_extras()
    outdir = _outdir(out, "chernoff")
    try:
        with ProgressBar(len(ks) * trials, f"chernoff: k = {', '.join(map(str, ks))}, T = {trials}") as bar:
            exp = chernoff_experiment(
                ks, trials, seed, grid, resamples=res, quick=quick, progress=bar.advance
            )
    except (ValueError, TypeError) as exc:
        fail(str(exc))
    summary = exp.summary()
    paths = _write_outputs(outdir, "chernoff", plot_chernoff_curves(exp), exp.to_frame(), summary)
    _print_summary("chernoff: normalised Chernoff information vs eps", json_safe(summary), paths, json_out)


# ---------------------------------------------------------------------------------------------
# frequency
# ---------------------------------------------------------------------------------------------
@reproduce_app.command("frequency")
def frequency_cmd(
    out: Path | None = OutOpt,
    quick: bool = QuickOpt,
    json_out: Path | None = JsonOpt,
) -> None:
    """Deployed frequency oracles (GRR, SUE, OUE, RAPPOR, OLH, subset, HR): ratio to the optimum vs eps."""
    from ldpopt.experiments.frequency import GAP_EPS, GAP_KS, QUICK_GAP_EPS, QUICK_GAP_KS, frequency_gaps
    from ldpopt.plots import plot_frequency_gaps

    ks, grid = (QUICK_GAP_KS, QUICK_GAP_EPS) if quick else (GAP_KS, GAP_EPS)
    _needs_extras()
    outdir = _outdir(out, "frequency")
    try:
        with ProgressBar(len(ks) * len(grid), f"frequency: k = {', '.join(map(str, ks))}") as bar:
            exp = frequency_gaps(ks, grid, quick=quick, progress=bar.advance)
    except (ValueError, TypeError) as exc:
        fail(str(exc))
    summary = exp.summary()
    paths = _write_outputs(outdir, "frequency", plot_frequency_gaps(exp), exp.to_frame(), summary)
    _print_summary("frequency: deployed oracles against the optimum", json_safe(summary), paths, json_out)
