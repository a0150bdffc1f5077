"""``ldpopt design`` and ``ldpopt demo``: the optimal mechanism next to the binary mechanism and k-ary RR."""

from __future__ import annotations

import math
from pathlib import Path

import typer
from rich.table import Table

from ldpopt.cli._chernoff import certificate_fields, print_certificate, print_chernoff_vs_kl
from ldpopt.cli._common import (
    app,
    console,
    fail,
    fmt,
    parse_distribution,
    partition_table,
    report_to_stderr_if_json_on_stdout,
    write_json,
)

#: The embedded demo: event categories of web sessions, normal (P0) vs. fraudulent (P1).
DEMO_EVENTS = {
    "page_view": (0.310, 0.120),
    "search": (0.140, 0.060),
    "add_to_cart": (0.110, 0.070),
    "checkout": (0.060, 0.110),
    "login": (0.080, 0.050),
    "password_reset": (0.012, 0.090),
    "profile_edit": (0.028, 0.080),
    "gift_card_purchase": (0.010, 0.150),
    "address_change": (0.020, 0.100),
    "review_post": (0.090, 0.030),
    "help_center": (0.090, 0.040),
    "api_token_create": (0.050, 0.100),
}
DEMO_EPS = (0.5, 1.0, 2.0, 4.0)


def _comparison_rows(p0, p1, eps, divergence, max_outputs):
    import ldpopt

    res = ldpopt.optimal_mechanism(p0, p1, eps, divergence, max_outputs)
    assert res.mechanism is not None  # the SPR solvers always return their mechanism
    k = len(res.mechanism.matrix)
    rows = [("optimal (SPR)", res.value, res.num_outputs)]
    b = ldpopt.binary_mechanism(p0, p1, eps)
    rows.append(("binary", b.utility(p0, p1, divergence), 2))
    rr = ldpopt.randomized_response(k, eps)
    rows.append(("k-ary RR", rr.utility(p0, p1, divergence), k))
    return res, rows


def _result_dict(res, rows) -> dict:
    return {
        "value": res.value,
        "normalized_value": None if math.isnan(res.normalized_value) else res.normalized_value,
        "input_divergence": res.input_divergence,
        "eps": res.eps if math.isfinite(res.eps) else "inf",
        "divergence": res.divergence,
        "max_outputs": res.max_outputs,
        "num_outputs": res.num_outputs,
        "partition": [list(b) for b in res.partition],
        "labelled_partition": [[str(x) for x in b] for b in res.labelled_partition],
        "matrix": res.mechanism.matrix.tolist(),
        "method": res.method,
        "baselines": {name: value for name, value, _ in rows},
        **certificate_fields(res),
    }


def _print_design(res, rows, labels=None) -> None:
    names = labels or [str(i) for i in range(res.mechanism.num_inputs)]
    console.print(
        f"[bold]Optimal {res.eps:g}-LDP mechanism[/] for {res.divergence}: "
        f"{res.num_outputs} output(s), method {res.method}"
    )
    console.print(partition_table(res, "Partition (blocks in likelihood-ratio order)", "symbols"))
    ch = Table(title="Channel Q(y | x)")
    ch.add_column("x")
    for j in range(res.num_outputs):
        ch.add_column(f"y={j}", justify="right")
    for i, row in enumerate(res.mechanism.matrix):
        ch.add_row(names[i], *(f"{v:.4f}" for v in row))
    console.print(ch)
    _print_comparison(res, rows)


def _print_comparison(res, rows, title: str | None = None) -> None:
    denom = res.input_divergence
    t = Table(title=title or f"Utility D_{res.divergence}(M0||M1), eps = {res.eps:g}")
    t.add_column("mechanism")
    t.add_column("outputs", justify="right")
    t.add_column("value", justify="right")
    t.add_column("normalised", justify="right")
    for name, value, n in rows:
        # in [0, 1] by data processing (outside it only by rounding), as res.normalized_value
        ok = denom and math.isfinite(denom) and math.isfinite(value)
        norm = min(max(value / denom, 0.0), 1.0) if ok else math.nan
        t.add_row(name, str(n), fmt(value), fmt(norm))
    console.print(t)


@app.command()
def design(
    p0: str = typer.Option(..., "--p0", help="P0: comma-separated probabilities or label=prob pairs."),
    p1: str = typer.Option(..., "--p1", help="P1: comma-separated probabilities or label=prob pairs."),
    eps: float = typer.Option(..., "--eps", help="Privacy level eps > 0 ('inf' for none)."),
    divergence: str = typer.Option(
        "kl", "--divergence", help="kl, reverse_kl, tv, chi2, hellinger, js, egamma:G, renyi:A, chernoff."
    ),
    max_outputs: int | None = typer.Option(None, "--max-outputs", help="Output budget l."),
    normalize: bool = typer.Option(False, "--normalize", help="Rescale p0/p1 to sum to 1."),
    json_out: Path | None = typer.Option(None, "--json", help="Write the result as JSON to FILE."),
) -> None:
    """Design the optimal eps-LDP mechanism for P0 vs P1 and compare with binary and k-RR."""
    a = parse_distribution(p0, "p0")
    b = parse_distribution(p1, "p1")
    try:
        if normalize:
            from ldpopt._validation import check_labelled_pair

            a, b, labels = check_labelled_pair(a, b, normalize=True)
            if labels is not None:
                a, b = dict(zip(labels, a, strict=False)), dict(zip(labels, b, strict=False))
        res, rows = _comparison_rows(a, b, eps, divergence, max_outputs)
    except (ValueError, TypeError) as exc:
        fail(str(exc).replace("normalize=True", "--normalize"))
    with report_to_stderr_if_json_on_stdout(json_out):
        _print_design(res, rows, labels=None if res.labels is None else [str(x) for x in res.labels])
        console.print(
            f"value = {fmt(res.value)}   D_f(P0||P1) = {fmt(res.input_divergence)}   "
            f"normalised = {fmt(res.normalized_value)}"
        )
        print_certificate(res)
    if json_out is not None:
        write_json(json_out, _result_dict(res, rows))


@app.command()
def demo(
    divergence: str = typer.Option("kl", "--divergence", help="Utility divergence."),
) -> None:
    """Design optimal mechanisms for an embedded fraud-detection example (normal vs fraudulent sessions)."""
    labels = list(DEMO_EVENTS)
    p0 = {k: v[0] for k, v in DEMO_EVENTS.items()}
    p1 = {k: v[1] for k, v in DEMO_EVENTS.items()}
    console.rule("[bold]ldpopt demo: web-session events, normal (P0) vs fraudulent (P1)")
    console.print(
        f"{len(labels)} event categories; each session reports one event through an eps-LDP mechanism."
    )
    try:
        import ldpopt

        for eps in DEMO_EPS:
            res, rows = _comparison_rows(p0, p1, eps, divergence, None)
            console.rule(f"eps = {eps:g}")
            console.print(
                partition_table(
                    res, f"Optimal partition ({res.num_outputs} outputs)", "events (likelihood-ratio order)"
                )
            )
            _print_comparison(res, rows)
        budget = ldpopt.optimal_mechanism(p0, p1, 2.0, divergence, max_outputs=3)
        console.print(
            f"With an output budget of 3 at eps = 2: value {fmt(budget.value)} "
            f"(normalised {fmt(budget.normalized_value)})."
        )
        print_chernoff_vs_kl(p0, p1, DEMO_EPS)
    except (ValueError, TypeError) as exc:
        fail(str(exc))
