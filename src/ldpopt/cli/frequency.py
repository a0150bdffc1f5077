"""``ldpopt frequency``: the gap table of the deployed frequency oracles; and the work of
``ldpopt estimate --frequency`` (frequencies from the reports of a frequency mechanism file).

Reports files (CSV or Parquet, one report per row), by mechanism kind:

* ``grr``, ``hadamard``: a column ``report`` (or ``--column``) of output indices;
* ``sue``, ``oue``, ``basic_rappor``: a column ``report`` of k-character 0/1 strings (character i
  is item i's bit);
* ``subset``: a column ``report`` of the d items, separated by spaces or ``;``;
* ``olh``: columns ``seed`` and ``value``.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import typer
from rich.table import Table

from ldpopt._atomic import atomic_write
from ldpopt.cli._common import (
    JsonOpt,
    app,
    console,
    fail,
    fail_api,
    fmt,
    need,
    one_stdout,
    report_to_stderr_if_json_on_stdout,
    write_json,
)
from ldpopt.cli._freqwidth import frequency_width_cmd
from ldpopt.cli._tables import pick_column, read_table
from ldpopt.errors import MechanismFileError
from ldpopt.frequency.optimum import count_text

__all__ = ["estimate_frequency", "frequency_cmd"]

_OPTIONS = {"k": "--k", "eps": "--eps", "confidence": "--confidence"}


def _parse_eps(text: str) -> list[float]:
    values = []
    for part in (t.strip() for t in text.split(",")):
        try:
            v = float(part)
        except ValueError:
            fail(
                f"--eps must be a comma-separated list of numbers > 0, got {part!r} in {text!r}",
                verbatim=True,
            )
        if not (math.isfinite(v) and v > 0):
            fail(f"--eps values must be finite numbers > 0, got {part!r}", verbatim=True)
        values.append(v)
    return values


def _table(res: Any) -> Table:
    t = Table(
        title=f"k = {res.k}, eps = {res.eps:g}: ratio to the {res.reference} "
        f"(variance_uniform {fmt(res.optimum_uniform)}; n = 1)"
    )
    cols = (
        "mechanism",
        "outputs",
        "variance_uniform",
        "worst_case",
        "ratio",
        "ratio (worst)",
        "bits",
        "best estimator",
    )
    for name in cols:
        t.add_column(name, justify="left" if name == "mechanism" else "right")
    for r in res.rows:
        outputs = (
            str(r.outputs) if r.outputs is not None and r.outputs < 10**9 else count_text(r.log10_outputs)
        )
        t.add_row(
            r.mechanism,
            outputs,
            fmt(r.variance_uniform),
            fmt(r.worst_case),
            fmt(r.ratio_uniform),
            fmt(r.ratio_worst_case),
            str(r.bits_per_report),
            fmt(r.best_variance_uniform),
        )
    return t


def _plot_format(path: Path) -> str:
    """--plot's format from its suffix (no suffix: png), checked before any work."""
    need("matplotlib", "ldpopt frequency --plot", "plots")
    fmt_name = path.suffix.lstrip(".").lower() or "png"
    if fmt_name not in ("png", "svg", "pdf"):
        fail(f"--plot {path}: the file name must end in .png, .svg or .pdf")
    return fmt_name


def _write_plot(results: list, path: Path, fmt_name: str) -> None:
    from ldpopt.plots import plot_frequency_table

    fig = plot_frequency_table(results)
    try:
        atomic_write(path, lambda fh: fig.savefig(fh, format=fmt_name, dpi=150))
    except OSError as exc:
        fail(f"cannot write --plot {path}: {exc.strerror or exc}")


@app.command("frequency")
def frequency_cmd(
    *,
    k: int = typer.Option(..., "--k", help="Number of items k >= 2."),
    eps: str | None = typer.Option(None, "--eps", help="Privacy level(s): a number or a list '1,2,4'."),
    plot: Path | None = typer.Option(
        None, "--plot", help="Draw the ratios against eps to FILE (.png/.svg/.pdf)."
    ),
    target_width: float | None = typer.Option(
        None, "--target-width", help="Instead of --eps: the smallest eps for this interval half-width."
    ),
    n: int | None = typer.Option(None, "--n", help="Reports (with --target-width)."),
    mechanism: str | None = typer.Option(
        None, "--mechanism", help="With --target-width: one kind (grr, oue, ..., optimal); default all."
    ),
    confidence: float = typer.Option(0.95, "--confidence", help="Simultaneous coverage (--target-width)."),
    at: str = typer.Option(
        "worst", "--at", help="With --target-width: the worst case or the uniform distribution."
    ),
    json_out: Path | None = JsonOpt,
) -> None:
    """Gap table: the deployed frequency oracles' error against the optimum at (k, eps); with
    --target-width, the smallest eps of each for that half-width with --n reports."""
    from ldpopt.frequency.compare import compare

    one_stdout({"--json": json_out, "--plot": plot})
    if target_width is not None:
        if eps is not None or plot is not None:
            fail("--target-width searches eps itself: drop --eps and --plot")
        frequency_width_cmd(k, n, target_width, mechanism, confidence, at, json_out)
        return
    if eps is None:
        fail("give --eps EPS (the gap table) or --target-width W --n N")
    if n is not None:
        fail("--n applies with --target-width only (the gap table is for one report)")
    plot_format = None if plot is None else _plot_format(plot)
    eps_values = _parse_eps(eps)
    try:
        results = [compare(k, e) for e in eps_values]
    except (ValueError, TypeError) as exc:
        fail_api(exc, _OPTIONS)
    with report_to_stderr_if_json_on_stdout(json_out):
        for res in results:
            console.print(_table(res))
    if plot is not None and plot_format is not None:
        _write_plot(results, plot, plot_format)
    if json_out is not None:
        write_json(json_out, {"k": k, "tables": [r.to_dict() for r in results]})


# ---------------------------------------------------------------------------------------------
# estimate --frequency
# ---------------------------------------------------------------------------------------------
def _reports(mech: Any, path: Path, column: str | None) -> np.ndarray:
    """The reports file as the mechanism's report array (module docstring)."""
    df = read_table(path, "--reports")
    if mech.kind == "olh":
        for col in ("seed", "value"):
            if col not in df.columns:
                fail(f"--reports {path}: an OLH reports file needs columns seed and value")
        cells = [df.strings("seed"), df.strings("value")]
        return np.stack(
            [_ints(c, path, name) for c, name in zip(cells, ("seed", "value"), strict=True)], axis=1
        )
    col = pick_column(df, path, column, "--reports", default="report")
    values = df.strings(col)
    if mech.kind in ("grr", "hadamard"):
        return _ints(values, path, col)
    if mech.kind == "subset":
        rows = [re.split(r"[\s;]+", v.strip()) for v in values]
        return np.array([_ints(np.array(r), path, col) for r in rows])
    bad = next((v for v in values if len(v.strip()) != mech.k or set(v.strip()) - {"0", "1"}), None)
    if bad is not None:
        fail(f"--reports {path}: column {col!r} must hold {mech.k}-character 0/1 strings, found {bad!r}")
    return np.array([[c == "1" for c in v.strip()] for v in values], dtype=np.int8)


def _ints(values: np.ndarray, path: Path, col: str) -> np.ndarray:
    out = []
    for v in values:
        s = str(v).strip()
        if not s.lstrip("+-").isdigit():
            fail(f"--reports {path}: column {col!r} must hold integers, found {s!r}")
        out.append(int(s))
    return np.array(out, dtype=np.int64)


def _estimate_table(est: Any) -> Table:
    m = est.mechanism
    t = Table(
        title=f"{m.label}, k = {m.k}, eps = {m.eps:g}, {est.n} reports: "
        f"{est.confidence:.0%} simultaneous intervals ({est.interval_method})"
    )
    for name in ("item", "estimate", "std. error", "lower", "upper", "projected", "MLE"):
        t.add_column(name, justify="right")
    for i in range(m.k):
        t.add_row(
            str(i),
            fmt(est.value[i]),
            fmt(est.standard_error[i]),
            fmt(est.lower[i]),
            fmt(est.upper[i]),
            fmt(est.projected[i]),
            fmt(est.mle[i]),
        )
    return t


def estimate_frequency(
    mechanism: Path,
    reports: Path,
    *,
    column: str | None,
    confidence: float,
    json_out: Path | None,
    unused: list[str] | None = None,
) -> None:
    """``ldpopt estimate --frequency``: read a frequency mechanism file (or a channel file named by
    a kind) and a reports file, print the estimates with simultaneous intervals.  ``unused``: the
    options given that apply to the mixture estimate only (refused)."""
    from ldpopt.frequency.estimate import estimate
    from ldpopt.frequency.files import read_frequency_mechanism

    if unused:
        fail(f"{unused[0]} does not apply with --frequency (it estimates item frequencies, not a mixture)")
    try:
        mech = read_frequency_mechanism(mechanism)
    except MechanismFileError as exc:
        fail(f"--mechanism {exc}")
    rep = _reports(mech, reports, column)
    try:
        est = estimate(mech, rep, confidence=confidence)
    except (ValueError, TypeError) as exc:
        fail_api(exc, {"confidence": "--confidence", "reports": "--reports"})
    with report_to_stderr_if_json_on_stdout(json_out):
        console.print(_estimate_table(est))
    if json_out is not None:
        m = est.mechanism
        write_json(
            json_out,
            {
                "mechanism": {"kind": m.kind, "k": m.k, "eps": m.eps, "size": m.size, "label": m.label},
                "n": est.n,
                "confidence": est.confidence,
                "interval_method": est.interval_method,
                "value": est.value.tolist(),
                "standard_error": est.standard_error.tolist(),
                "lower": est.lower.tolist(),
                "upper": est.upper.tolist(),
                "projected": est.projected.tolist(),
                "mle": est.mle.tolist(),
                "mle_gap": est.mle_gap,
                "mle_status": est.mle_status,
            },
        )
