"""``ldpopt estimate M.json reports.csv``: the mixing proportion and the input frequencies from reports."""

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
    fmt,
    load_mechanism_file,
    load_pair,
    report_to_stderr_if_json_on_stdout,
    write_json,
)
from ldpopt.cli.deploy import _hypotheses, _read_column, _symbols_to_indices
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


@app.command("estimate")
def estimate_cmd(
    mechanism: Path = typer.Argument(..., help="Mechanism file (JSON)."),
    reports: Path = typer.Argument(..., help="CSV or Parquet file of reports (column 'report' or --column)."),
    *,
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
    if frequency:
        unused = [opt for opt, val in (("--p0", p0), ("--p1", p1), ("--from", source)) if val is not None]
        return estimate_frequency(
            mechanism, reports, column=column, confidence=confidence, json_out=json_out, unused=unused
        )
    from ldpopt.deploy.estimate import frequencies, mixture_proportion

    mf = load_mechanism_file(mechanism)
    mech = mf.mechanism
    given = load_pair(p0, p1, source, p0_col, p1_col, label_col, normalize)
    # without P0/P1 (given or stored) only the input frequencies are estimated
    pair = _hypotheses(mf, given) if given is not None or mf.p0 is not None else None
    values, col = _read_column(reports, column, "reports", default="report")
    idx = _symbols_to_indices(values, mech.output_labels, mech.num_outputs, col, reports, "report")
    counts = np.bincount(idx, minlength=mech.num_outputs)
    try:
        mix = mixture_proportion(mech, pair[0], pair[1], None, confidence, counts=counts) if pair else None
        freq = frequencies(mech, counts=counts)
    except (ValueError, TypeError) as exc:
        fail(str(exc))
    with report_to_stderr_if_json_on_stdout(json_out):
        _print(mix, freq)
    if json_out is not None:
        payload = {
            "n": freq.n,
            "mixture_proportion": _mixture_payload(mix) if mix is not None else None,
            "frequencies": _frequency_payload(freq),
        }
        write_json(json_out, payload)
