"""``ldpopt estimate --mechanism M.json --reports reports.csv``: the mixing proportion and the input
frequencies from reports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import typer
from rich.table import Table

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
    fail_api,
    fmt,
    load_mechanism_file,
    load_pair,
    report_to_stderr_if_json_on_stdout,
    warn,
    write_json,
)
from ldpopt.cli.deploy import _hypotheses, _read_column, _report_indices
from ldpopt.cli.frequency import estimate_frequency

__all__ = ["estimate_cmd"]


def _mixture_payload(est: Any) -> dict:
    return {
        "value": est.value,
        "lower": est.lower,
        "upper": est.upper,
        "lower_closed": est.lower_closed,
        "upper_closed": est.upper_closed,
        "confidence": est.confidence,
    }


def _frequency_payload(est: Any) -> dict:
    return {
        "blocks": [[str(x) for x in b] for b in est.blocks],
        "value": est.value.tolist(),
        "standard_error": est.standard_error.tolist(),
        "projected": est.projected.tolist(),
        "method": est.method,
    }


def _print(mix: Any, freq: Any) -> None:
    if mix is not None:
        lo = ("[" if mix.lower_closed else "(") + fmt(mix.lower)
        hi = fmt(mix.upper) + ("]" if mix.upper_closed else ")")
        console.print(
            f"[bold]Mixing proportion[/] pi of P1 in (1 - pi) P0 + pi P1: {fmt(mix.value)}, "
            f"{mix.confidence:.0%} profile-likelihood interval {lo}, {hi}"
        )
    t = Table(title=f"Input mass per block ({freq.method}, {freq.n} reports)")
    for name in ("block", "inputs", "estimate", "std. error", "projected (biased)"):
        t.add_column(name, justify="left" if name in ("block", "inputs") else "right")
    for j, block in enumerate(freq.blocks):
        t.add_row(
            str(j),
            fmt([str(x) for x in block]),
            fmt(freq.value[j]),
            fmt(freq.standard_error[j]),
            fmt(freq.projected[j]),
        )
    console.print(t)


def _files(legacy: list[Path] | None, mechanism: Path | None, reports: Path | None) -> tuple[Path, Path]:
    """The mechanism and reports files: ``--mechanism``/``--reports``, or (deprecated) the two
    positional arguments of the first releases."""
    if not legacy:
        if mechanism is None or reports is None:
            fail("give --mechanism FILE and --reports FILE")
        return mechanism, reports
    if mechanism is not None or reports is not None:
        fail("give the files as --mechanism FILE --reports FILE (not also as arguments)")
    if len(legacy) != 2:
        fail(f"give --mechanism FILE and --reports FILE (got {len(legacy)} positional argument(s))")
    warn(
        f"'ldpopt estimate {legacy[0]} {legacy[1]}' is deprecated and will stop working in a later "
        f"release: use 'ldpopt estimate --mechanism {legacy[0]} --reports {legacy[1]}'"
    )
    return legacy[0], legacy[1]


@app.command("estimate")
def estimate_cmd(
    legacy: list[Path] | None = typer.Argument(
        None, metavar="MECHANISM REPORTS", help="Deprecated: use --mechanism and --reports.", hidden=True
    ),
    *,
    mechanism: Path | None = typer.Option(None, "--mechanism", help="Mechanism file (JSON)."),
    reports: Path | None = typer.Option(
        None, "--reports", help="CSV or Parquet file of reports (column 'report' or --column)."
    ),
    p0: str | None = typer.Option(
        None, "--p0", help="P0 (default: --from FILE, else stored in the mechanism file)."
    ),
    p1: str | None = typer.Option(
        None, "--p1", help="P1 (default: --from FILE, else stored in the mechanism file)."
    ),
    column: str | None = typer.Option(None, "--column", help="Reports column."),
    confidence: float = typer.Option(
        0.95, "--confidence", help="Coverage of the interval for pi, in (0.5, 1)."
    ),
    source: Path | None = FromOpt,
    p0_col: str = P0ColOpt,
    p1_col: str = P1ColOpt,
    label_col: str | None = LabelColOpt,
    normalize: bool = NormalizeOpt,
    json_out: Path | None = JsonOpt,
    frequency: bool = typer.Option(
        False, "--frequency", help="A frequency mechanism file: item frequencies with simultaneous intervals."
    ),
) -> None:
    """Estimate the share pi of P1-like users (with a confidence interval) and the input mass per block."""
    mechanism, reports = _files(legacy, mechanism, reports)
    if frequency:
        unused = [opt for opt, val in (("--p0", p0), ("--p1", p1), ("--from", source)) if val is not None]
        return estimate_frequency(
            mechanism, reports, column=column, confidence=confidence, json_out=json_out, unused=unused
        )
    from ldpopt.deploy.estimate import frequencies, mixture_proportion

    mf = load_mechanism_file(mechanism, "--mechanism")
    mech = mf.mechanism
    given = load_pair(p0, p1, source, p0_col, p1_col, label_col, normalize)
    # without P0/P1 (given or stored) only the input frequencies are estimated
    pair = _hypotheses(mf, given) if given is not None or mf.p0 is not None else None
    values, col = _read_column(reports, column, "--reports", default="report")
    idx = _report_indices(values, mech, col, reports)
    counts = np.bincount(idx, minlength=mech.num_outputs)
    try:
        mix = (
            mixture_proportion(mech, p0=pair[0], p1=pair[1], confidence=confidence, counts=counts)
            if pair
            else None
        )
        freq = frequencies(mech, counts=counts)
    except (ValueError, TypeError) as exc:
        fail_api(exc, {"confidence": "--confidence"})
    with report_to_stderr_if_json_on_stdout(json_out):
        _print(mix, freq)
    if json_out is not None:
        payload = {
            "n": freq.n,
            "mixture_proportion": _mixture_payload(mix) if mix is not None else None,
            "frequencies": _frequency_payload(freq),
        }
        write_json(json_out, payload)
