"""Deployment commands: ``ldpopt export``, ``privatize``, ``test`` and ``samplesize``.

Registered on :data:`ldpopt.cli._common.app` by :mod:`ldpopt.cli`. Heavy libraries
(pandas, scipy) are imported inside the commands.  Every failure is one line on stderr and
exit code 2; outputs are written to a temporary file in the target folder and renamed, so a
failed run never leaves a half-written file.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import typer
from rich.table import Table

from ldpopt._atomic import is_stdout
from ldpopt.cli._common import (
    FromOpt,
    JsonOpt,
    LabelColOpt,
    NormalizeOpt,
    P0ColOpt,
    P1ColOpt,
    app,
    console,
    err_console,
    fail,
    fail_api,
    fmt,
    load_mechanism_file,
    load_pair,
    one_eps,
    one_stdout,
    partition_table,
    plural,
    report_to_stderr_if_json_on_stdout,
    solve,
    write_json,
)
from ldpopt.cli._tables import Frame, pick_column, read_table, table_format, write_table


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------
def _align(dist: Any, mech: Any, name: str) -> Any:
    """A CLI dict (string keys) aligned with the mechanism's labels, compared as strings."""
    if not isinstance(dist, dict) or mech.labels is None:
        if isinstance(dist, dict):
            fail(f"--{name} has labels but the mechanism has none; give plain probabilities")
        return dist
    by_str = {str(lab): lab for lab in mech.labels}
    unknown = [key for key in dist if key not in by_str]
    if unknown:
        fail(f"--{name} has unknown label {unknown[0]!r}; the mechanism's labels are {', '.join(by_str)}")
    return {by_str[key]: val for key, val in dist.items()}


def _read_column(path: Path, column: str | None, option: str, default: str | None = None):
    """Read one column as strings; returns (values, column name)."""
    df = read_table(path, option)
    col = pick_column(df, path, column, option, default)
    return df.strings(col), col


def _symbols_to_indices(
    values: np.ndarray, labels: tuple | None, size: int, column: str, path: Path, what: str
) -> np.ndarray:
    """Map CSV strings to indices: by str(label) when there are labels, else as integers."""
    if labels is not None:
        keys = [str(lab) for lab in labels]
        if len(set(keys)) != len(keys):
            fail(f"the mechanism's {what} labels are not distinct as text: {', '.join(keys)}")
        where = {key: j for j, key in enumerate(keys)}
        idx = np.array([where.get(v, -1) for v in values.tolist()], dtype=np.int64)
        known = ", ".join(keys[:10]) + (", ..." if len(keys) > 10 else "")
    else:
        idx = np.full(values.shape[0], -1, dtype=np.int64)
        for i, v in enumerate(values):
            s = v.strip()
            if s.lstrip("+-").isdigit():
                j = int(s)
                if 0 <= j < size:
                    idx[i] = j
        known = f"integers 0..{size - 1}"
    bad = np.flatnonzero(idx < 0)
    if bad.size:
        i = int(bad[0])
        fail(
            f"unknown {what} {str(values[i])!r} in column {column!r} of {path} (data row {i + 1}); "
            f"expected {known}"
        )
    return idx.astype(np.int64)


def _report_indices(values: np.ndarray, mech: Any, column: str, path: Path) -> np.ndarray:
    """Map a reports column to output indices: the reports as ``privatize`` writes them (output
    labels, else integers), or what they mean (the block names of its ``report_block`` column or
    ``--labels`` file)."""
    names = _block_names(mech)
    shown = [str(x) for x in (mech.output_labels or range(mech.num_outputs))]
    if set(values.tolist()) <= set(shown) or len(set(names)) != len(names):
        return _symbols_to_indices(values, mech.output_labels, mech.num_outputs, column, path, "report")
    where = {name: j for j, name in enumerate(names)}
    where.update({key: j for j, key in enumerate(shown)})
    idx = np.array([where.get(v.strip(), -1) for v in values.tolist()], dtype=np.int64)
    bad = np.flatnonzero(idx < 0)
    if bad.size:
        i = int(bad[0])
        known = ", ".join(shown[:10]) + (", ..." if len(shown) > 10 else "")
        fail(
            f"unknown report {str(values[i])!r} in column {column!r} of {path} (data row {i + 1}); "
            f"expected {known} or a block ({', '.join(names[:3])}{', ...' if len(names) > 3 else ''})"
        )
    return idx


def _rng(seed: int | None):
    if seed is None:
        return None
    if seed < 0:  # numpy's own message ("expected non-negative integer") names no option
        fail(f"--seed must be >= 0, got {seed}")
    return np.random.default_rng(seed)


def _block_names(mech: Any) -> list[str]:
    """Per output: the input symbols of its block (SPR) or the output label / index."""
    names = []
    labels = mech.labels or tuple(range(mech.num_inputs))
    for j in range(mech.num_outputs):
        if mech.output_labels is not None:
            names.append(str(mech.output_labels[j]))
        elif mech.partition is not None and len(mech.partition) == mech.num_outputs:
            names.append("{" + ", ".join(str(labels[i]) for i in mech.partition[j]) + "}")
        else:
            names.append(str(j))
    return names


#: privatize's column of what each report means (the block of input symbols behind it)
BLOCK_COLUMN = "report_block"


# ---------------------------------------------------------------------------------------------
# export
# ---------------------------------------------------------------------------------------------
#: the mechanisms ``export --mechanism`` can write
EXPORT_KINDS = ("optimal", "binary", "rr")


@app.command("export")
def export_cmd(
    *,
    p0: str | None = typer.Option(None, "--p0", help="P0: '0.5,0.3,0.2' or 'a=0.5,b=0.3,c=0.2' (labels)."),
    p1: str | None = typer.Option(None, "--p1", help="P1, same form as --p0."),
    eps: float = typer.Option(..., "--eps", parser=one_eps, help="Privacy level eps > 0."),
    output: Path = typer.Option(..., "--output", help="Mechanism file to write (JSON)."),
    divergence: str = typer.Option("kl", "--divergence", help="Utility divergence of the design."),
    max_outputs: int | None = typer.Option(None, "--max-outputs", help="Output budget (optimal only)."),
    kind: str = typer.Option(
        "optimal",
        "--mechanism",
        help="Mechanism to write: optimal, binary or rr (k-ary randomized response).",
    ),
    distributions: bool = typer.Option(
        True,
        "--distributions/--no-distributions",
        help="Store p0/p1 in the file (their digests are always stored).",
    ),
    source: Path | None = FromOpt,
    p0_col: str = P0ColOpt,
    p1_col: str = P1ColOpt,
    label_col: str | None = LabelColOpt,
    normalize: bool = NormalizeOpt,
    json_out: Path | None = JsonOpt,
) -> None:
    """Design an eps-LDP mechanism for P0 vs P1 (the optimum, or a baseline) and write it as a
    versioned mechanism file."""
    import ldpopt
    from ldpopt.deploy.files import save_mechanism

    if kind not in EXPORT_KINDS:
        fail(f"--mechanism must be one of {', '.join(EXPORT_KINDS)}, got {kind!r}")
    if kind != "optimal" and max_outputs is not None:
        fail("--max-outputs applies to --mechanism optimal only")
    one_stdout({"--output": output, "--json": json_out})
    pair = load_pair(p0, p1, source, p0_col, p1_col, label_col, normalize)
    if pair is None:
        fail("give --p0 and --p1, or --from FILE")
    a, b = pair
    try:
        res = solve(a, b, eps, divergence, max_outputs)
        obj: Any = res
        if kind == "binary":
            obj = ldpopt.binary_mechanism(a, b, eps)
        elif kind == "rr":
            obj = ldpopt.randomized_response(len(a), eps, labels=res.labels)
        mech = obj if kind != "optimal" else res.mechanism
        value = res.value if kind == "optimal" else mech.utility(a, b, divergence)
    except (ValueError, TypeError) as exc:
        fail(str(exc))
    try:
        save_mechanism(
            obj,
            output,
            p0=a,
            p1=b,
            divergence=res.divergence,
            value=value,
            include_distributions=distributions,
        )
    except OSError as exc:
        fail(f"cannot write --output {output}: {exc.strerror or exc}")
    with (
        report_to_stderr_if_json_on_stdout(json_out),
        report_to_stderr_if_json_on_stdout(output, quiet=False),
    ):
        if kind == "optimal":
            console.print(
                partition_table(
                    res, f"Optimal {res.eps:g}-LDP mechanism ({res.divergence} = {fmt(res.value)})"
                )
            )
            if max_outputs is not None and res.num_outputs < max_outputs:
                console.print(
                    f"output budget {max_outputs} is non-binding: the optimum uses "
                    f"{plural(res.num_outputs, 'output')}"
                )
        else:
            console.print(
                f"{mech.name} mechanism, eps = {mech.eps:g}, {plural(mech.num_outputs, 'output')}: "
                f"{res.divergence} = {fmt(value)} (optimum {fmt(res.value)})"
            )
        if not is_stdout(output):
            console.print(f"wrote {output}")
    if json_out is not None:
        write_json(
            json_out,
            {
                "output": str(output),
                "mechanism": kind,
                "name": mech.name,
                "eps": mech.eps,
                "num_inputs": mech.num_inputs,
                "num_outputs": mech.num_outputs,
                "divergence": res.divergence,
                "value": value,
                "optimal_value": res.value,
                "max_outputs": max_outputs,
                "labels": None if mech.labels is None else [str(x) for x in mech.labels],
                "matrix": mech.matrix.tolist(),
            },
            announce=False,
        )


# ---------------------------------------------------------------------------------------------
# privatize
# ---------------------------------------------------------------------------------------------
def _header_is_a_symbol(name: str, mech: Any) -> bool:
    """Whether a CSV header could be an input symbol (then the file may have no header)."""
    if mech.labels is not None:
        return name in {str(lab) for lab in mech.labels}
    text = name.strip()
    return text.lstrip("+-").isdigit() and 0 <= int(text) < mech.num_inputs


@app.command("privatize")
def privatize_cmd(
    *,
    mechanism: Path = typer.Option(..., "--mechanism", help="Mechanism file (JSON)."),
    input: Path = typer.Option(
        ...,
        "--input",
        help="CSV or Parquet file, one input symbol per row; a CSV's first row is its header.",
    ),
    output: Path = typer.Option(
        ...,
        "--output",
        help="CSV or Parquet file to write: the input's columns with the symbol column replaced by "
        "'report' and 'report_block' (the input symbols behind each report; see --labels).",
    ),
    column: str | None = typer.Option(None, "--column", help="Input column (if several)."),
    no_header: bool = typer.Option(
        False, "--no-header", help="The CSV has no header row: every row is a symbol."
    ),
    keep_input: bool = typer.Option(
        False, "--keep-input", help="Keep the input column next to 'report' (never for real users' data)."
    ),
    seed: int | None = typer.Option(
        None,
        "--seed",
        help="Seeded PRNG for reproducible EXPERIMENTS ONLY (predictable: "
        "never for real users). Default: the OS CSPRNG.",
    ),
    labels: Path | None = typer.Option(
        None,
        "--labels",
        help="Write what each report means (columns report, block) to this CSV or Parquet file "
        "instead of a 'report_block' column next to 'report'.",
    ),
) -> None:
    """Privatize every row of a column with an eps-LDP mechanism file (exact sampling); the other
    columns (a user id, ...) are kept next to each report."""
    from ldpopt.deploy.sampling import bit_source, decode_outputs, realise, sample_indices

    mf = load_mechanism_file(mechanism, "--mechanism")
    mech = mf.mechanism
    one_stdout({"--output": output, "--labels": labels})
    df = read_table(input, "--input", header=not no_header)
    col = pick_column(df, input, column, "--input")
    if not no_header and column is None and table_format(input) == "csv" and _header_is_a_symbol(col, mech):
        fail(
            f"the first row of --input {input} ({col!r}) is an input symbol of the mechanism, but a CSV's "
            f"first row is its header: pass --no-header if the file has none, or --column {col} to confirm"
        )
    idx = _symbols_to_indices(df.strings(col), mech.labels, mech.num_inputs, col, input, "input symbol")
    try:
        reports = sample_indices(realise(mech), idx, bit_source(_rng(seed)))
    except ValueError as exc:
        fail(str(exc))
    out = decode_outputs(mech, reports).tolist()
    names = _block_names(mech)
    pos = df.columns.index(col)
    added = ["report"] if labels is not None else ["report", BLOCK_COLUMN]
    for name in added:
        if name in df.columns and col != name:
            fail(f"--input {input} already has a column named {name!r}")
    df.insert(pos + 1, "report", out)
    if labels is None:  # what each report means, next to it
        df.insert(pos + 2, BLOCK_COLUMN, [names[j] for j in reports.tolist()])
    if not keep_input:
        df.drop(col)
    shown = decode_outputs(mech, np.arange(mech.num_outputs)).tolist()
    if labels is not None:
        write_table(labels, Frame(["report", "block"], {"report": shown, "block": names}), "--labels")
    write_table(output, df, "--output")
    counts = np.bincount(reports, minlength=mech.num_outputs)
    t = Table(title=f"{plural(idx.size, 'report')}, eps = {mech.eps:g}")
    t.add_column("report")
    t.add_column("block / label")
    t.add_column("count", justify="right")
    for j, name in enumerate(names):
        t.add_row(str(shown[j]), name, str(int(counts[j])))
    source = f"seeded PRNG (seed {seed}, not for production)" if seed is not None else "OS CSPRNG"
    # --output - (or --labels -): that file alone on stdout, the summary on stderr
    on_stdout = labels if labels is not None and is_stdout(labels) else output
    with report_to_stderr_if_json_on_stdout(on_stdout, quiet=False):
        console.print(t)
        console.print(f"wrote {output} ({plural(idx.size, 'report')}, randomness: {source})")
        if labels is not None and not is_stdout(labels):
            console.print(f"wrote {labels} (what each report means)")


# ---------------------------------------------------------------------------------------------
# test
# ---------------------------------------------------------------------------------------------
#: ``test --exit-code``: the exit status when the test rejects H0 (0 when it keeps H0); apart from
#: 1 (failure), 2 (bad input) and 130 (interrupted)
EXIT_REJECT = 10


def _hypotheses(mf: Any, pair: tuple[Any, Any] | None):
    """(P0, P1): the ones given (checked against the file's digests), else the file's own."""
    mech = mf.mechanism
    if pair is None:
        if mf.p0 is None:
            fail("the mechanism file does not store p0/p1: give --p0 and --p1 (or --from FILE)")
        return mf.p0, mf.p1
    a = _align(pair[0], mech, "p0")
    b = _align(pair[1], mech, "p1")
    try:
        matches = mf.matches(a, b)
    except (ValueError, TypeError) as exc:
        fail(str(exc))
    if mf.p0_sha256 is not None and not matches:  # on stderr: stdout may hold the JSON result alone
        err_console.print(
            "[yellow]warning:[/] P0/P1 differ from the distributions this mechanism was "
            "designed for (digest mismatch)"
        )
    return a, b


def _test_payload(alpha: float, mech: Any, test: Any, counts: np.ndarray, res: Any, bayes: Any) -> dict:
    from dataclasses import asdict

    m0, m1 = test.output_distributions
    llr = test.per_report_llr
    names = _block_names(mech)
    return {
        "alpha": alpha,
        "decision": res.decision,
        "reject_h0": res.decision == 1,
        "result": asdict(res),
        "bayes": None if bayes is None else asdict(bayes),
        "outputs": [
            {
                "output": j,
                "block": names[j],
                "count": int(counts[j]),
                "m0": float(m0[j]),
                "m1": float(m1[j]),
                "log_ratio": float(llr[j]),
            }
            for j in range(mech.num_outputs)
        ],
    }


@app.command("test")
def test_cmd(
    *,
    mechanism: Path = typer.Option(..., "--mechanism", help="Mechanism file (JSON)."),
    reports: Path = typer.Option(
        ..., "--reports", help="CSV/Parquet file of reports (column 'report' or --column)."
    ),
    alpha: float = typer.Option(0.05, "--alpha", help="Type-I error of the test."),
    p0: str | None = typer.Option(None, "--p0", help="H0 distribution (default: stored in the file)."),
    p1: str | None = typer.Option(None, "--p1", help="H1 distribution (default: stored in the file)."),
    column: str | None = typer.Option(None, "--column", help="Reports column."),
    randomized: bool = typer.Option(
        False, "--randomized", help="Randomise at the boundary (size exactly alpha)."
    ),
    prior: float | None = typer.Option(
        None, "--prior", help="Also give the Bayes decision with P(H1) = PRIOR."
    ),
    exit_code: bool = typer.Option(
        False, "--exit-code", help=f"Exit {EXIT_REJECT} when the test rejects H0, 0 when it keeps H0."
    ),
    source: Path | None = FromOpt,
    p0_col: str = P0ColOpt,
    p1_col: str = P1ColOpt,
    label_col: str | None = LabelColOpt,
    normalize: bool = NormalizeOpt,
    json_out: Path | None = JsonOpt,
) -> None:
    """Likelihood-ratio test of H0: P0 against H1: P1 from privatized reports."""
    from ldpopt.deploy.testing import LikelihoodRatioTest

    mf = load_mechanism_file(mechanism, "--mechanism")
    mech = mf.mechanism
    a, b = _hypotheses(mf, load_pair(p0, p1, source, p0_col, p1_col, label_col, normalize))
    values, col = _read_column(reports, column, "--reports", default="report")
    idx = _report_indices(values, mech, col, reports)
    try:
        test = LikelihoodRatioTest(mech, a, b, alpha, randomized=randomized)
        counts = np.bincount(idx, minlength=mech.num_outputs)
        res = test.decide_counts(counts)
        bayes = test.bayes_decide_counts(counts, prior1=prior) if prior is not None else None
    except (ValueError, TypeError) as exc:
        fail_api(exc, {"prior1": "--prior"})
    with report_to_stderr_if_json_on_stdout(json_out):
        _print_test(alpha, mech, test, counts, res)
        if bayes is not None:
            console.print(
                f"Bayes decision (P(H1) = {prior:g}): {bayes.decision}, posterior P(H1 | reports) = "
                f"{bayes.posterior1:.6g}"
            )
    if json_out is not None:
        write_json(json_out, _test_payload(alpha, mech, test, counts, res, bayes))
    if exit_code and res.decision == 1:
        raise typer.Exit(EXIT_REJECT)


def _print_test(alpha: float, mech: Any, test: Any, counts: np.ndarray, res: Any) -> None:
    m0, m1 = test.output_distributions
    t = Table(title="Reports per output")
    t.add_column("output")
    t.add_column("block / label")
    t.add_column("count", justify="right")
    t.add_column("M0", justify="right")
    t.add_column("M1", justify="right")
    t.add_column("log M1/M0", justify="right")
    llr = test.per_report_llr
    for j, name in enumerate(_block_names(mech)):
        t.add_row(str(j), name, str(int(counts[j])), fmt(m0[j]), fmt(m1[j]), fmt(llr[j]))
    console.print(t)
    s = Table(title=f"Likelihood-ratio test, alpha = {alpha:g}")
    s.add_column("quantity")
    s.add_column("value", justify="right")
    for name, val in (
        ("reports n", str(res.n)),
        ("log-likelihood ratio", fmt(res.llr)),
        ("statistic", fmt(res.statistic)),
        ("threshold", fmt(res.threshold)),
        ("p-value", fmt(res.p_value)),
        ("size (type-I error)", fmt(res.size)),
        ("power", fmt(res.power)),
        ("method", res.method),
    ):
        s.add_row(name, val)
    console.print(s)
    verdict = "reject H0: the reports are not consistent with P0" if res.decision == 1 else "keep H0 (P0)"
    console.print(f"decision: {res.decision} ({verdict})")
    console.print(llr_direction(res.llr, res.n, res.decision))
    if res.decision == 1:
        console.print(
            "H0 is rejected, which does not make every report P1's: for a mix of P0 and P1 users, "
            "'ldpopt estimate --mechanism FILE --reports FILE' gives the share of P1-like users"
        )


def llr_direction(llr: float, n: int, decision: int) -> str:
    """Which hypothesis the reports fit better, from the sign of the log-likelihood ratio."""
    text = f"log-likelihood ratio log P1/P0 = {fmt(llr)}" + (f" ({fmt(llr / n)} per report)" if n else "")
    if llr > 0:
        return f"{text} > 0: the reports fit P1 better than P0"
    if llr == 0:
        return f"{text}: the reports fit P0 and P1 equally"
    if decision == 1:
        return (
            f"{text} < 0: the reports fit P0 better than P1, yet are not consistent with P0: "
            "they look like neither"
        )
    return f"{text} < 0: the reports fit P0 better than P1"


# ---------------------------------------------------------------------------------------------
# samplesize
# ---------------------------------------------------------------------------------------------
def _eps_list(text: str | None) -> list[float] | None:
    if text is None:
        return None
    out = []
    for t in text.replace(";", ",").split(","):
        if t.strip():
            try:
                out.append(float(t))
            except ValueError:
                fail(f"--eps must be comma-separated numbers, got {text!r}")
    if not out:
        fail("--eps must not be empty")
    return out


def _comparison_line(name: str, n: int, n_opt: int, eps: float) -> str:
    ratio = n / n_opt
    if n == n_opt:
        return f"{name} needs as many reports as the optimum at eps = {eps:g} ({n})"
    if n > n_opt:
        return f"{name} needs {ratio:.1f}x more reports than the optimum at eps = {eps:g} ({n} vs {n_opt})"
    # the KL (Stein-exponent) optimum is not always the n-optimum at finite (alpha, beta)
    return (
        f"{name} needs {ratio:.2f}x the reports of the KL-optimal mechanism at eps = {eps:g} ({n} vs {n_opt})"
    )


def _samplesize_pair(pair: tuple[Any, Any] | None, mf: Any) -> tuple[Any, Any]:
    """(P0, P1) as given (--p0/--p1 or --from), or from the mechanism file when not given."""
    if pair is None:
        if mf is None:
            fail("give --p0 and --p1, --from FILE, or --mechanism with a file that stores them")
        if mf.p0 is None:
            fail("the mechanism file does not store p0/p1: give --p0 and --p1 (or --from FILE)")
        lab = mf.mechanism.labels
        a = mf.p0 if lab is None else dict(zip(lab, mf.p0, strict=False))
        b = mf.p1 if lab is None else dict(zip(lab, mf.p1, strict=False))
        return a, b
    a, b = pair
    if mf is not None:
        a, b = _align(a, mf.mechanism, "p0"), _align(b, mf.mechanism, "p1")
    return a, b


def _samplesize_eps(eps: str | None, mf: Any) -> list[float]:
    """The eps values of --eps, else the mechanism file's eps."""
    eps_values = _eps_list(eps)
    if eps_values is None:
        if mf is None:
            fail("give --eps (or --mechanism)")
        eps_values = [mf.mechanism.eps]
    return eps_values


def _sizes_at(
    e: float,
    a: Any,
    b: Any,
    k: int,
    file_row: tuple[str, Any] | None,
    *,
    alpha: float,
    beta: float,
    method: str,
    randomized: bool,
) -> list[tuple[str, Any, Any]]:
    """(name, mechanism, sample size) at eps ``e`` for the optimum, binary, k-RR and ``file_row`` (the
    file's mechanism, when its eps is ``e``); the size is None when a mechanism cannot tell P0 from P1."""
    import ldpopt
    from ldpopt.deploy.sizing import SampleSizeResult, sample_size

    opt = solve(a, b, e, "kl")
    assert opt.mechanism is not None  # the SPR solvers always return their mechanism
    rows: list[tuple[str, Any]] = [
        ("optimal (SPR, KL)", opt.mechanism),
        ("binary", ldpopt.binary_mechanism(a, b, e)),
        ("k-RR", ldpopt.randomized_response(k, e, labels=opt.mechanism.labels)),
    ]
    if file_row is not None and file_row[1].eps == e:
        rows.append(file_row)
    sizes: list[tuple[str, Any, SampleSizeResult | None]] = []
    for name, mech in rows:
        try:
            r: SampleSizeResult | None = sample_size(
                mech, a, b, alpha, beta, method=method, randomized=randomized
            )
            sizes.append((name, mech, r))
        except ValueError as exc:
            if "equal" not in str(exc):
                raise
            sizes.append((name, mech, None))
    return sizes


def _add_size_rows(t: Table, lines: list[str], e: float, sizes: list[tuple[str, Any, Any]]) -> None:
    """One table row per mechanism of :func:`_sizes_at`, and its comparison with the optimum."""
    # None when even the optimum cannot tell P0 from P1 (then no mechanism can)
    n_opt = None if sizes[0][2] is None else sizes[0][2].n
    for name, mech, r in sizes:
        ratio = "-" if r is None or n_opt is None else f"{r.n / n_opt:.2f}x"
        t.add_row(
            f"{e:g}",
            name,
            str(mech.num_outputs),
            "never" if r is None else str(r.n),
            "-" if r is None else r.method,
            ratio,
        )
        if r is not None and n_opt is not None and name != sizes[0][0]:
            lines.append(_comparison_line(name, r.n, n_opt, e))
        elif r is None:
            lines.append(f"{name} cannot tell P0 from P1 at eps = {e:g}")


@app.command("samplesize")
def samplesize_cmd(
    *,
    p0: str | None = typer.Option(None, "--p0", help="P0 (default: from --mechanism)."),
    p1: str | None = typer.Option(None, "--p1", help="P1 (default: from --mechanism)."),
    eps: str | None = typer.Option(None, "--eps", help="eps, or a list '0.5,1,2' (default: the file's)."),
    alpha: float = typer.Option(0.05, "--alpha", help="Type-I error."),
    beta: float = typer.Option(0.05, "--beta", help="Type-II error."),
    mechanism: Path | None = typer.Option(None, "--mechanism", help="Also size this mechanism file."),
    method: str = typer.Option("auto", "--method", help="auto, exact, saddlepoint, chernoff or stein."),
    randomized: bool = typer.Option(False, "--randomized", help="Randomised tests (size exactly alpha)."),
    source: Path | None = FromOpt,
    p0_col: str = P0ColOpt,
    p1_col: str = P1ColOpt,
    label_col: str | None = LabelColOpt,
    normalize: bool = NormalizeOpt,
    json_out: Path | None = JsonOpt,
) -> None:
    """Reports needed for (alpha, beta): the optimal mechanism against binary and k-RR."""
    mf = load_mechanism_file(mechanism, "--mechanism") if mechanism is not None else None
    a, b = _samplesize_pair(load_pair(p0, p1, source, p0_col, p1_col, label_col, normalize), mf)
    eps_values = _samplesize_eps(eps, mf)
    file_row = None if mf is None or mechanism is None else (f"file {mechanism.name}", mf.mechanism)
    k = len(a)
    t = Table(title=f"Reports needed for type-I <= {alpha:g} and type-II <= {beta:g}")
    for name in ("eps", "mechanism", "outputs", "reports n", "method", "vs optimum"):
        t.add_column(name, justify="right" if name in ("outputs", "reports n", "vs optimum") else "left")
    lines: list[str] = []
    rows: list[dict] = []
    try:
        for e in eps_values:
            sizes = _sizes_at(
                e, a, b, k, file_row, alpha=alpha, beta=beta, method=method, randomized=randomized
            )
            _add_size_rows(t, lines, e, sizes)
            rows.extend(_size_records(e, sizes))
    except (ValueError, TypeError) as exc:
        fail(str(exc))
    with report_to_stderr_if_json_on_stdout(json_out):
        console.print(t)
        for line in lines:
            console.print(line)
    if json_out is not None:
        write_json(json_out, {"alpha": alpha, "beta": beta, "randomized": randomized, "rows": rows})


def _size_records(e: float, sizes: list[tuple[str, Any, Any]]) -> list[dict]:
    """The JSON rows of :func:`_sizes_at` (``n`` null: the mechanism cannot tell P0 from P1)."""
    out = []
    for name, mech, r in sizes:
        out.append(
            {
                "eps": e if math.isfinite(e) else "inf",  # as design writes it (JSON has no inf)
                "mechanism": name,
                "num_outputs": mech.num_outputs,
                "n": None if r is None else r.n,
                "method": None if r is None else r.method,
                "exact": None if r is None else r.exact,
                "size": None if r is None else r.size,
                "type_ii": None if r is None else r.type_ii,
                "kl": None if r is None else r.kl,
            }
        )
    return out


# ---------------------------------------------------------------------------------------------
# audit
# ---------------------------------------------------------------------------------------------
@app.command("audit")
def audit_cmd(
    *,
    mechanism: Path = typer.Option(..., "--mechanism", help="Mechanism file (JSON)."),
    n: int = typer.Option(100_000, "--n", help="Reports per audited input (estimation stage)."),
    alpha: float = typer.Option(0.05, "--alpha", help="The lower bound holds with probability 1 - alpha."),
    seed: int | None = typer.Option(None, "--seed", help="Seeded PRNG (reproducible audits)."),
    json_out: Path | None = JsonOpt,
) -> None:
    """Statistical lower bound on the true eps of the library's sampler for a mechanism file."""
    from dataclasses import asdict

    from ldpopt.deploy.audit import audit

    mf = load_mechanism_file(mechanism, "--mechanism")
    try:
        res = audit(mf.mechanism, n, alpha=alpha, rng=_rng(seed))
    except (ValueError, TypeError) as exc:
        fail(str(exc).replace("n must", "--n must").replace("alpha must", "--alpha must"))
    with report_to_stderr_if_json_on_stdout(json_out):
        console.print(
            f"claimed eps = {fmt(res.claimed_eps)}, lower bound on the true eps = {fmt(res.eps_lower)} "
            f"(confidence {1 - res.alpha:g}, {plural(res.n, 'report')} per audited input)"
        )
        console.print(res.message)
    if json_out is not None:
        payload = asdict(res)
        payload["inputs"] = [str(x) for x in res.inputs]
        payload["output"] = str(res.output)
        write_json(json_out, payload)
