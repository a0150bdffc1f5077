"""``ldpopt sweep`` and ``ldpopt sweep-report`` (registered on the CLI app by :mod:`ldpopt.cli`).

Heavy imports (pandas, pyarrow, dask, matplotlib) happen inside the commands; a missing optional
dependency is a one-line error naming the extra that installs it (exit code 2).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer
from rich.markup import escape

from ldpopt._atomic import is_stdout
from ldpopt.cli._common import (
    app,
    console,
    err_console,
    fail,
    interrupted,
    report_to_stderr_if_json_on_stdout,
    write_json,
)
from ldpopt.errors import MissingExtraError

#: default parent of a sweep's output directory (``./ldpopt-out/sweep-<config stem>``)
DEFAULT_OUT_ROOT = Path("ldpopt-out")
#: the logger of :mod:`ldpopt.sweeps.runner`
SWEEP_LOGGER = "ldpopt.sweep"


@contextmanager
def _log_lines(enabled: bool) -> Iterator[None]:
    """With ``--quiet``: the sweep logger's INFO lines, with timestamps, on this invocation's stderr."""
    if not enabled:
        yield
        return
    log = logging.getLogger(SWEEP_LOGGER)
    old_level, old_propagate = log.level, log.propagate
    handler = logging.StreamHandler()  # bound to this invocation's stderr
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
    try:
        yield
    finally:
        log.removeHandler(handler)
        log.setLevel(old_level)
        log.propagate = old_propagate


@app.command("sweep")
def sweep_command(
    config: Path = typer.Argument(..., help="Sweep configuration (TOML); see docs/sweeps.md."),
    out: Path | None = typer.Option(
        None, "--out", metavar="DIR", help="Result directory (default ./ldpopt-out/sweep-<config name>)."
    ),
    scheduler: str = typer.Option(
        "auto",
        "--scheduler",
        help="auto (threads, or processes for a long sweep) | threads | processes | inline | "
        "dask-local | tcp://HOST:PORT.",
    ),
    resume: bool = typer.Option(
        True,
        "--resume/--no-resume",
        help="Keep finished chunks in DIR (default) or start over, deleting them.",
    ),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bar: log lines per chunk on stderr."),
    workers: int | None = typer.Option(
        None, "--workers", min=1, help="Threads or worker processes (default: all cores)."
    ),
) -> None:
    """Run (or resume) a sweep of optimal LDP utilities into a Parquet dataset with a manifest."""
    import time
    import warnings

    if out is None:
        out = DEFAULT_OUT_ROOT / f"sweep-{config.stem}"
    t0 = time.perf_counter()
    try:
        from ldpopt.sweeps.runner import run_sweep  # needs the sweeps extra

        with _log_lines(quiet), warnings.catch_warnings(record=True):
            warnings.simplefilter("always")  # failed chunks are printed below, not warned about
            run_sweep(
                config,
                out,
                scheduler=scheduler,
                resume=resume,
                quiet=quiet,
                workers=workers,
                max_rows_in_memory=0,
            )
    except (ValueError, TypeError, MissingExtraError) as exc:  # all before any work
        # config, scheduler and store errors, or a missing extra
        fail(str(exc))
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: finished chunks are kept
        _interrupted(out)
    wall = time.perf_counter() - t0
    from ldpopt.sweeps.store import read_manifest

    manifest = read_manifest(out)
    _print_summary(manifest, out, wall)
    if manifest["chunk_errors"]:
        raise typer.Exit(1)


def _interrupted(out: Path) -> None:
    """One line on stderr: what is kept and how to resume; exit 130."""
    from ldpopt.sweeps.store import StoreError, read_manifest

    try:
        m = read_manifest(out)
        kept = f"{m['chunks']['done']} of {m['chunks']['total']} chunks are finished in {out}"
    except (StoreError, KeyError, TypeError):
        kept = f"nothing was written to {out} yet"
    interrupted(f"interrupted: {kept}; run the same command again to resume (finished chunks are kept)")


def _print_summary(manifest: dict, out: Path, wall: float) -> None:
    from rich.table import Table

    run = manifest["runs"][-1] if manifest["runs"] else {}
    computed = run.get("chunks_computed", 0)
    t = Table(title=escape(f"sweep {manifest['status']}: {out}"), show_header=False)
    t.add_row(
        "chunks",
        f"{manifest['chunks']['done']}/{manifest['chunks']['total']} done "
        f"({computed} this run, {manifest['chunks']['failed']} failed)",
    )
    t.add_row("cells", f"{manifest['cells']['done']:,}/{manifest['cells']['total']:,}")
    t.add_row("rows", f"{manifest['rows']['done']:,}")
    n = run.get("workers", "-")
    t.add_row("scheduler", f"{run.get('scheduler', '-')} ({n} worker{'' if n == 1 else 's'})")
    solve = run.get("solve_seconds") or 0.0
    t.add_row("time", f"{wall:.3g} s wall, {solve:.3g} s solving")
    console.print(t)
    for cid, err in manifest["chunk_errors"].items():
        console.print(
            f"[bold red]chunk {cid} failed[/] ({err.get('attempts', 1)} attempt(s)): {escape(err['error'])}",
            highlight=False,
        )
    if manifest["chunk_errors"]:
        console.print("rerun the same command to retry the failed chunks")


#: the ``format`` field of ``sweep-report --json`` (schema in docs/sweeps.md)
REPORT_JSON_FORMAT = "ldpopt-sweep-report/1"


@app.command("sweep-report")
def sweep_report_command(
    directory: Path = typer.Argument(..., help="A directory written by 'ldpopt sweep'."),
    out: Path | None = typer.Option(
        None, "--out", metavar="DIR", help="Report directory (default DIRECTORY/report)."
    ),
    resamples: int = typer.Option(1000, "--resamples", min=0, help="Bootstrap resamples (0: no bands)."),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of the bootstrap resample indices."),
    formats: str = typer.Option(
        "png,svg", "--format", help="Comma-separated figure formats (png, svg, pdf)."
    ),
    json_out: Path | None = typer.Option(
        None, "--json", help="Also write the summary as JSON to FILE ('-': standard output alone)."
    ),
) -> None:
    """Summarise a sweep: mean utility per eps and mechanism with bootstrap bands, and plots."""
    fmts = tuple(f.strip().lower() for f in formats.split(",") if f.strip())
    bad = [f for f in fmts if f not in ("png", "svg", "pdf")]
    if not fmts or bad:
        fail(f"--format must list png, svg or pdf, got {formats!r}")
    with report_to_stderr_if_json_on_stdout(json_out):
        try:
            from ldpopt.sweeps.report import store_info, write_report

            summary, paths = write_report(directory, out, resamples=resamples, seed=seed, formats=fmts)
            info = store_info(directory)
        except (ValueError, MissingExtraError) as exc:  # not a sweep directory, no rows yet; a missing extra
            fail(str(exc))
        except OSError as exc:  # e.g. a report directory that cannot be written
            fail(f"cannot write the report to {out or directory / 'report'}: {exc.strerror or exc}")
        if info.partial:  # a notice: on stderr too when the JSON alone is on stdout
            (err_console if json_out is not None and is_stdout(json_out) else console).print(
                f"[bold yellow]partial store:[/] {info.cells_done:,} of {info.cells_total:,} cells "
                f"({info.chunks_done} of {info.chunks_total} chunks, status {info.status}) are "
                "finished; the summary covers those",
                highlight=False,
                soft_wrap=True,
            )
        console.print(_summary_table(summary, resamples, info.title()))
        for p in paths:
            console.print(f"wrote {escape(str(p))}", highlight=False, soft_wrap=True)
        if json_out is not None:
            write_json(json_out, _report_payload(directory, info, summary, resamples, seed, paths))


def _report_payload(directory: Path, info, summary, resamples: int, seed: int, paths) -> dict:
    """The ``sweep-report --json`` document (schema in docs/sweeps.md; non-finite numbers -> null)."""
    rows = [
        {col: (v.item() if hasattr(v, "item") else v) for col, v in zip(summary.columns, rec, strict=True)}
        for rec in summary.itertuples(index=False, name=None)
    ]
    return {
        "format": REPORT_JSON_FORMAT,
        "directory": str(directory),
        "status": info.status,
        "partial": info.partial,
        "cells": {"done": info.cells_done, "total": info.cells_total},
        "chunks": {"done": info.chunks_done, "total": info.chunks_total},
        "instances": {
            "family": info.family,
            "k_min": info.k_min,
            "k_max": info.k_max,
            "done": info.instances_done,
            "total": info.instances_total,
        },
        "bootstrap": {"resamples": resamples, "seed": seed, "level": 0.95},
        "summary": rows,
        "files": [str(p) for p in paths],
    }


def _summary_table(summary, resamples: int, title: str):
    """Mean normalised utility at the first, middle and last eps, with bands and the optimum's outputs."""
    from rich.table import Table

    eps_all = sorted(summary["eps"].unique())
    picks = sorted({eps_all[0], eps_all[len(eps_all) // 2], eps_all[-1]})
    band_note = f"{resamples} bootstrap resamples, 95% band" if resamples else "no bands"
    t = Table(title=escape(f"{title}: mean normalised utility ({band_note}; mean outputs of the optimum)"))
    for col in ("divergence", "budget", "mechanism", *(f"eps = {e:g}" for e in picks)):
        t.add_column(col, justify="left" if col in ("divergence", "mechanism") else "right")
    for (div, budget, mech), g in summary.groupby(["divergence", "budget", "mechanism"], sort=False):
        g = g.set_index("eps")
        t.add_row(str(div), str(budget), str(mech), *(_summary_cell(g, e, mech) for e in picks))
    return t


def _summary_cell(g, e: float, mech: str) -> str:
    if e not in g.index:
        return "-"
    r = g.loc[e]
    text = f"{r['mean_normalized']:.4g}"
    if r["lo"] == r["lo"]:
        text += f" [{r['lo']:.3g}, {r['hi']:.3g}]"
    if mech == "optimal":
        text += f" ({r['mean_num_outputs']:.3g})"
    return text
