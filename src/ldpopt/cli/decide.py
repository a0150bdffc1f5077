"""``ldpopt decide PROBLEM.json``: the optimal eps-LDP channel of a decision problem.

Registered on :data:`ldpopt.cli._common.app` by :mod:`ldpopt.cli`. scipy is imported inside the
command.  The problem file format is documented in ``docs/decision.md``::

    {
      "likelihood": [[P(x_0|t_0), P(x_0|t_1), ...], ...],   m rows (inputs) x T columns, columns sum to 1
      "loss":       [[l(t_0,a_0), l(t_0,a_1), ...], ...],   T rows x A columns, any finite numbers
      "prior":      [lambda_0, ..., lambda_{T-1}],          optional, default uniform
      "labels":     {"inputs": [...], "parameters": [...], "actions": [...]},   optional
      "name":       "..."                                   optional
    }
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
    JsonOpt,
    app,
    console,
    fail,
    fmt,
    one_eps,
    one_stdout,
    report_to_stderr_if_json_on_stdout,
    write_json,
)

#: the channel table is printed only up to this many inputs/outputs
_MAX_TABLE = 12


def load_problem(path: Path):
    """Read and validate a problem file (:meth:`DecisionProblem.from_json`); every problem is
    reported with ``fail`` (exit code 2)."""
    from ldpopt.decision import DecisionProblem

    try:
        return DecisionProblem.from_json(path)
    except (ValueError, TypeError) as exc:
        fail(str(exc))


def _file_mechanism(mech: Any) -> Any:
    """The channel with outputs named as text ("{a, b}": the subset of high inputs), as a
    mechanism file stores them."""
    import dataclasses

    outs = mech.output_labels
    if outs is None or all(isinstance(o, (str, int)) for o in outs):
        return mech
    names = ["{" + ", ".join(map(str, o)) + "}" if isinstance(o, tuple) else str(o) for o in outs]
    if len(set(names)) != len(names):
        names = [str(j) for j in range(len(outs))]
    labels = mech.labels
    if labels is not None and not all(isinstance(x, (str, int)) for x in labels):
        labels = tuple(str(x) for x in labels)
    return dataclasses.replace(mech, output_labels=tuple(names), labels=labels)


def _subset_text(subset, labels) -> str:
    names = [str(labels[i]) if labels is not None else str(i) for i in sorted(subset)]
    return "{" + ", ".join(names) + "}"


def _decision_text(row: np.ndarray, actions) -> str:
    names = [str(a) for a in actions] if actions is not None else [str(a) for a in range(row.size)]
    used = np.flatnonzero(row > 1e-12)
    if used.size == 1:
        return names[used[0]]
    return ", ".join(f"{names[a]}: {row[a]:.4g}" for a in used)


def _result_payload(prob, res) -> dict:
    names = [str(a) for a in (prob.action_labels or range(prob.num_actions))]
    cert = res.certificate
    outputs = []
    for j, (subset, weight) in enumerate(res.weights.items()):
        rule = res.decision_rule[j]
        outputs.append(
            {
                "subset": [prob.labels[i] if prob.labels is not None else int(i) for i in sorted(subset)],
                "weight": weight,
                "decision": {names[a]: float(rule[a]) for a in np.flatnonzero(rule > 0)},
            }
        )
    return {
        "name": prob.name,
        "risk": res.risk,
        "eps": res.eps,
        "value": res.value,
        "method": res.method,
        "status": res.status,
        "message": res.message,
        "num_outputs": res.num_outputs,
        "input_labels": list(prob.labels) if prob.labels is not None else None,
        "outputs": outputs,
        "matrix": res.mechanism.matrix.tolist(),
        "certificate": None
        if cert is None
        else {
            "dual": cert.dual.tolist(),
            "prior": None if cert.prior is None else cert.prior.tolist(),
            "min_reduced_cost": cert.min_reduced_cost,
            "bound": cert.bound,
            "verified": cert.verified,
        },
    }


@app.command("decide")
def decide(
    problem: Path | None = typer.Argument(
        None,
        metavar="PROBLEM.json",
        help="Problem file (JSON: likelihood, loss, optional prior, labels, parameter_labels, "
        "action_labels, name). Required.",
        show_default=False,
    ),
    eps: float = typer.Option(..., "--eps", parser=one_eps, help="Privacy level eps > 0 (finite)."),
    risk: str = typer.Option("bayes", "--risk", help="bayes or minimax."),
    method: str = typer.Option("auto", "--method", help="auto, enumerate, colgen, direct or vertex."),
    json_out: Path | None = JsonOpt,
    mechanism_out: Path | None = typer.Option(
        None, "--mechanism-out", help="Write the optimal channel as a mechanism file (for privatize)."
    ),
) -> None:
    """Optimal eps-LDP channel (maximal, one output per subset) for a finite decision problem."""
    from ldpopt.decision import optimal_channel

    if problem is None:
        fail("give the problem file: ldpopt decide PROBLEM.json --eps EPS")
    if risk not in ("bayes", "minimax"):
        fail(f"--risk must be 'bayes' or 'minimax', got {risk!r}")
    if method not in ("auto", "enumerate", "colgen", "direct", "vertex"):
        fail(f"--method must be one of auto, enumerate, colgen, direct, vertex; got {method!r}")
    if not (eps > 0) or math.isinf(eps):
        fail(f"--eps must be a finite number > 0, got {eps!r}")
    one_stdout({"--json": json_out, "--mechanism-out": mechanism_out})
    prob = load_problem(problem)
    try:
        res = optimal_channel(prob, eps, risk=risk, method=method)
    except (ValueError, TypeError) as exc:
        fail(str(exc))
    if res.mechanism is None:
        fail(f"the solver failed: {res.message}")
    assert res.decision_rule is not None  # a decision problem's channel comes with its decision rule
    # tables go to stderr while standard output holds the JSON result or the mechanism file
    with (
        report_to_stderr_if_json_on_stdout(json_out),
        report_to_stderr_if_json_on_stdout(mechanism_out, quiet=False),
    ):
        _print_channel(prob, res, eps, risk)
    if mechanism_out is not None:
        from ldpopt.deploy.files import save_mechanism

        try:
            save_mechanism(_file_mechanism(res.mechanism), mechanism_out)
        except OSError as exc:
            fail(f"cannot write --mechanism-out {mechanism_out}: {exc.strerror or exc}")
        except ValueError as exc:
            fail(f"--mechanism-out: {exc}")
        if not is_stdout(mechanism_out):
            with report_to_stderr_if_json_on_stdout(json_out):
                console.print(f"wrote {mechanism_out}")
    if json_out is not None:
        write_json(json_out, _result_payload(prob, res))


def _print_channel(prob: Any, res: Any, eps: float, risk: str) -> None:
    """The result as tables: summary line, outputs with their subsets and decisions, the channel."""
    console.print(
        f"[bold]{prob.name}[/]: optimal {eps:g}-LDP channel, {risk} risk = [bold]{fmt(res.value)}[/] "
        f"({res.num_outputs} outputs, method {res.method})"
    )
    if res.status != 0:
        console.print(f"[yellow]warning:[/] {res.message}")
    out = Table(title="Outputs y = c_y * S_y (S_y(x) = e^eps on the subset, 1 elsewhere)")
    out.add_column("output")
    out.add_column("subset (high inputs)")
    out.add_column("weight c_y", justify="right")
    out.add_column("decision")
    for j, (subset, weight) in enumerate(res.weights.items()):
        out.add_row(
            str(j),
            _subset_text(subset, prob.labels),
            f"{weight:.6g}",
            _decision_text(res.decision_rule[j], prob.action_labels),
        )
    console.print(out)
    if prob.num_inputs <= _MAX_TABLE and res.num_outputs <= _MAX_TABLE:
        ch = Table(title="Channel Q(y | x)")
        ch.add_column("x")
        for j in range(res.num_outputs):
            ch.add_column(f"y={j}", justify="right")
        names = prob.labels or tuple(range(prob.num_inputs))
        for i, row in enumerate(res.mechanism.matrix):
            ch.add_row(str(names[i]), *(f"{v:.4f}" for v in row))
        console.print(ch)
    if res.certificate is not None:
        cert = res.certificate
        console.print(
            f"dual certificate: bound {fmt(cert.bound)}, min reduced cost {cert.min_reduced_cost:.3g} "
            f"({'verified' if cert.verified else 'NOT verified'})"
        )
