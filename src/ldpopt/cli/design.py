"""``ldpopt design`` and ``ldpopt demo``: the optimal mechanism next to the binary mechanism and k-ary RR."""

from __future__ import annotations

import math
from pathlib import Path

import typer
from rich.table import Table

from ldpopt.cli import _robust, _target
from ldpopt.cli._chernoff import certificate_fields, chernoff_vs_kl, print_certificate, print_chernoff_vs_kl
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
    load_pair,
    partition_table,
    plural,
    report_to_stderr_if_json_on_stdout,
    solve,
    write_json,
)
from ldpopt.cli._eps_lists import eps_or_list, over_eps_lists
from ldpopt.cli._shuffle import (
    design_central,
    parse_central,
    plan_shuffle,
    print_central,
    print_shuffle,
    shuffle_summary,
)
from ldpopt.cli._zero import infinite_divergence_note

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

    res = solve(p0, p1, eps, divergence, max_outputs)
    assert res.mechanism is not None  # the SPR solvers always return their mechanism
    k = len(res.mechanism.matrix)
    rows = [("optimal (SPR)", res.value, res.num_outputs)]
    b = ldpopt.binary_mechanism(p0, p1, eps)
    rows.append(("binary", b.utility(p0, p1, divergence), 2))
    rr = ldpopt.randomized_response(k, eps)
    rows.append(("k-ary RR", rr.utility(p0, p1, divergence), k))
    return res, rows


def _method_text(method: str) -> str:
    """The solver's name for people ("dp" reads as differential privacy)."""
    return {"dp": "dynamic program", "single_block": "single block"}.get(method, method)


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
        f"{plural(res.num_outputs, 'output')}, method {_method_text(res.method)}"
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
@over_eps_lists
def design(
    *,
    p0: str | None = typer.Option(None, "--p0", help="P0: probabilities '0.5,0.5' or label=prob pairs."),
    p1: str | None = typer.Option(None, "--p1", help="P1, same form as --p0."),
    eps: float | None = typer.Option(
        None, "--eps", parser=eps_or_list, help="Privacy level eps > 0 ('inf' for none), or a list '0.5,1,2'."
    ),
    divergence: str = typer.Option(
        "kl", "--divergence", help="kl, reverse_kl, tv, chi2, hellinger, js, egamma:G, renyi:A, chernoff."
    ),
    max_outputs: int | None = typer.Option(None, "--max-outputs", help="Output budget l."),
    source: Path | None = FromOpt,
    p0_col: str = P0ColOpt,
    p1_col: str = P1ColOpt,
    label_col: str | None = LabelColOpt,
    normalize: bool = NormalizeOpt,
    json_out: Path | None = JsonOpt,
    shuffle: str | None = typer.Option(
        None,
        "--shuffle",
        help="n=N,delta=D,eps=E: instead of --eps, the largest local eps whose N shuffled reports "
        "are (E, D)-DP.",
    ),
    central: str | None = typer.Option(
        None,
        "--central",
        help="EPS,DELTA,N: instead of --eps, the best mechanism whose N shuffled reports are (EPS,DELTA)-DP.",
    ),
    robust: str | None = _robust.ROBUST,
    from_counts: bool = _robust.FROM_COUNTS,
    confidence: float = _robust.CONFIDENCE,
    target_n: int | None = _target.TARGET_N,
    alpha: float = _target.ALPHA,
    beta: float = _target.BETA,
    target_width: float | None = _target.TARGET_WIDTH,
    pi: float = _target.PI,
) -> None:
    """Design the optimal eps-LDP mechanism for P0 vs P1 and compare with binary and k-RR."""
    target = _target.Target(target_n, alpha, beta, target_width, pi)
    if target.wanted:  # the smallest eps for a target instead (ldpopt.cli._target)
        pair = load_pair(p0, p1, source, p0_col, p1_col, label_col, normalize)
        conflicts = {"--eps": eps is not None, "--shuffle": shuffle, "--robust": robust, "--central": central}
        return _target.run(pair, target, conflicts, divergence, max_outputs, json_out)
    central_target = parse_central(central, shuffle, eps)
    eps, plan = plan_shuffle(shuffle, 1.0 if central_target else eps)
    pair = load_pair(p0, p1, source, p0_col, p1_col, label_col, normalize, counts=from_counts)
    if pair is None:
        fail("give --p0 and --p1, or --from FILE")
    a, b, uncertainty = _robust.prepare(*pair, robust, from_counts, confidence, divergence)
    central_info = None
    if central_target is not None:
        eps, max_outputs, central_info = design_central(a, b, central_target, divergence, max_outputs)
    try:
        res, rows = _comparison_rows(a, b, eps, divergence, max_outputs)
    except (ValueError, TypeError) as exc:
        fail(str(exc))
    with report_to_stderr_if_json_on_stdout(json_out):
        _print_design(res, rows, labels=None if res.labels is None else [str(x) for x in res.labels])
        console.print(
            f"value = {fmt(res.value)}   D_f(P0||P1) = {fmt(res.input_divergence)}   "
            f"normalised = {fmt(res.normalized_value)}"
        )
        zero = infinite_divergence_note(res, a, b)
        if zero:
            console.print(zero, highlight=False)
        print_certificate(res)
        shuffled = shuffle_summary(plan, res.mechanism) if plan is not None else None
        if shuffled is not None:
            print_shuffle(shuffled)
        if central_info is not None:
            print_central(central_info)
        note = budget_note(res)
        if note:
            console.print(note)
        extra = _robust.report(a, b, eps, divergence, max_outputs, uncertainty)
    if shuffled is not None:
        extra["shuffle"] = shuffled
    if central_info is not None:
        extra["central"] = central_info
    if json_out is not None:
        write_json(json_out, {**_result_dict(res, rows), **extra})


def budget_note(res) -> str | None:
    """A line about the output budget: binding, or not (the optimum uses fewer outputs)."""
    if res.max_outputs is None:
        return None
    if res.num_outputs < res.max_outputs:
        return (
            f"output budget {res.max_outputs} is non-binding: the optimum uses "
            f"{plural(res.num_outputs, 'output')}"
        )
    return f"output budget {res.max_outputs} is binding"


@app.command()
def demo(
    divergence: str = typer.Option("kl", "--divergence", help="Utility divergence."),
    *,
    json_out: Path | None = JsonOpt,
) -> None:
    """Design optimal mechanisms for an embedded fraud-detection example (normal vs fraudulent sessions)."""
    labels = list(DEMO_EVENTS)
    p0 = {k: v[0] for k, v in DEMO_EVENTS.items()}
    p1 = {k: v[1] for k, v in DEMO_EVENTS.items()}
    try:
        designs = [_comparison_rows(p0, p1, eps, divergence, None) for eps in DEMO_EPS]
        budget = solve(p0, p1, 2.0, divergence, max_outputs=3)
        versus = chernoff_vs_kl(p0, p1, DEMO_EPS)
    except (ValueError, TypeError) as exc:
        fail(str(exc))
    with report_to_stderr_if_json_on_stdout(json_out):
        console.rule("[bold]ldpopt demo: web-session events, normal (P0) vs fraudulent (P1)")
        console.print(
            f"{len(labels)} event categories; each session reports one event through an eps-LDP mechanism."
        )
        for res, rows in designs:
            console.rule(f"eps = {res.eps:g}")
            console.print(
                partition_table(
                    res, f"Optimal partition ({res.num_outputs} outputs)", "events (likelihood-ratio order)"
                )
            )
            _print_comparison(res, rows)
        console.print(
            f"With an output budget of 3 at eps = 2: value {fmt(budget.value)} "
            f"(normalised {fmt(budget.normalized_value)})."
        )
        print_chernoff_vs_kl(versus)
    if json_out is not None:
        write_json(
            json_out,
            {
                "p0": p0,
                "p1": p1,
                "designs": [_result_dict(res, rows) for res, rows in designs],
                "budget_3_eps_2": _result_dict(budget, []),
                "kl_vs_chernoff": versus,
            },
        )
