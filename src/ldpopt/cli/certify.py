"""``ldpopt compare`` and ``ldpopt verify-certificate``: dominance certificates for a deployed mechanism.

``compare M.json`` decomposes the mechanism's pair of output distributions into SPR mechanisms'
pairs (:func:`ldpopt.spr_decomposition`), prints for each divergence the mechanism's value, the
mixture bound, the best SPR component and the optimum, and writes the certificate as JSON;
``verify-certificate CERT.json`` re-checks such a file with matrix products alone
(:func:`ldpopt.verify_certificate`).  Exit codes: 0 ok, 1 the certificate does not hold, 2 bad input.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from ldpopt._json import loads_strict
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
    one_eps,
    report_to_stderr_if_json_on_stdout,
    write_json,
)
from ldpopt.cli.deploy import _hypotheses

#: the divergences ``compare`` reports unless ``--divergence`` is given
DEFAULT_COMPARE = ("kl", "reverse_kl", "tv", "chi2", "hellinger", "js")


def _names(dec: Any, part: tuple) -> str:
    return " | ".join(", ".join(map(str, block)) for block in part)


def _print_report(res: Any, path: Path) -> None:
    dec = res.decomposition
    t = Table(title=f"{path.name}: value <= mixture <= best SPR component <= optimum (eps = {res.eps:g})")
    for col in ("divergence", "mechanism", "mixture bound", "best SPR", "component", "optimum", "loss"):
        t.add_column(col, justify="left" if col == "divergence" else "right")
    for row in res.rows:
        t.add_row(
            row.divergence,
            fmt(row.value),
            fmt(row.mixture),
            fmt(row.best_value),
            str(row.best_index),
            fmt(row.optimum),
            fmt(row.loss),
        )
    console.print(t)
    c = Table(title=f"Certificate: {dec.num_components} SPR mechanism(s), residual {dec.residual:.3g}")
    c.add_column("component", justify="right")
    c.add_column("weight", justify="right")
    c.add_column("blocks (likelihood-ratio order)")
    c.add_column("output slots")
    for i, (w, part, slots) in enumerate(zip(dec.weights, dec.partitions, dec.placements, strict=True)):
        c.add_row(str(i), fmt(float(w)), _names(dec, part), ", ".join(map(str, slots)))
    console.print(c)


def _payload(res: Any) -> dict:
    out = res.decomposition.to_dict()
    out["dominance"] = [
        {
            "divergence": r.divergence,
            "value": r.value,
            "mixture": r.mixture,
            "best_index": r.best_index,
            "best_value": r.best_value,
            "optimum": r.optimum,
            "optimal_partition": None
            if r.optimal_partition is None
            else [list(b) for b in r.optimal_partition],
        }
        for r in res.rows
    ]
    return out


@app.command("compare")
def compare_cmd(
    mechanism: Path = typer.Argument(..., help="Mechanism file (JSON, as written by 'ldpopt export')."),
    *,
    p0: str | None = typer.Option(
        None, "--p0", help="P0 (default: --from FILE, else stored in the mechanism file)."
    ),
    p1: str | None = typer.Option(
        None, "--p1", help="P1 (default: --from FILE, else stored in the mechanism file)."
    ),
    eps: float | None = typer.Option(
        None, "--eps", parser=one_eps, help="Privacy level (default: the mechanism's)."
    ),
    divergence: list[str] | None = typer.Option(
        None, "--divergence", help="Divergence to report (repeatable; default: the built-in ones)."
    ),
    source: Path | None = FromOpt,
    p0_col: str = P0ColOpt,
    p1_col: str = P1ColOpt,
    label_col: str | None = LabelColOpt,
    normalize: bool = NormalizeOpt,
    json_out: Path | None = JsonOpt,
) -> None:
    """Is the mechanism dominated? Its SPR decomposition and what it loses per divergence."""
    from ldpopt.spr.certificates import dominance

    mf = load_mechanism_file(mechanism)
    a, b = _hypotheses(mf, load_pair(p0, p1, source, p0_col, p1_col, label_col, normalize))
    try:
        res = dominance(mf.mechanism, a, b, eps, tuple(divergence) if divergence else DEFAULT_COMPARE)
    except (ValueError, TypeError) as exc:
        fail(str(exc))
    with report_to_stderr_if_json_on_stdout(json_out):
        _print_report(res, mechanism)
        if not res.success:
            console.print(f"[red]certificate failed:[/] {res.decomposition.message}")
    if json_out is not None:
        write_json(json_out, _payload(res))
    if not res.success:
        raise typer.Exit(1)


@app.command("verify-certificate")
def verify_cmd(
    certificate: Path = typer.Argument(
        ..., help="Certificate file (JSON, as written by 'ldpopt compare --json')."
    ),
    *,
    json_out: Path | None = JsonOpt,
) -> None:
    """Re-check a dominance certificate with matrix products alone (exit 1 when it does not hold)."""
    from ldpopt.spr.certificates import verify_certificate

    if not certificate.exists():
        fail(f"{certificate}: no such file")
    try:
        doc = loads_strict(certificate.read_text(), certificate)
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"{certificate} cannot be read: {exc}")
    except ValueError as exc:
        fail(str(exc))
    if not isinstance(doc, dict):
        fail(f"{certificate}: the top level must be a JSON object (a certificate)")
    try:
        check = verify_certificate(doc)
    except (ValueError, TypeError) as exc:
        fail(f"{certificate}: {exc}")
    with report_to_stderr_if_json_on_stdout(json_out):
        if check.valid:
            console.print(
                f"[green]valid:[/] {check.num_components} SPR mechanism(s), residual {check.residual:.3g} "
                "(the mechanism's pair of output distributions is their convex combination)"
            )
        for problem in check.problems:
            console.print(f"[red]invalid:[/] {problem}", highlight=False)
    if json_out is not None:
        write_json(
            json_out,
            {
                "certificate": str(certificate),
                "valid": check.valid,
                "num_components": check.num_components,
                "residual": check.residual,
                "problems": list(check.problems),
            },
        )
    if not check.valid:
        raise typer.Exit(1)
