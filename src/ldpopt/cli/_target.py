"""``ldpopt design --target-n N --alpha A --beta B`` (or ``--target-width W``): the smallest eps.

Instead of designing at a given ``--eps``, search the smallest eps whose optimal mechanism lets
the level-A likelihood-ratio test reach type-II error <= B with N reports
(:func:`ldpopt.minimum_epsilon`), or whose interval for the mixing proportion has expected
half-width <= W with N reports (:func:`ldpopt.minimum_epsilon_for_width`, at ``--pi``, 95%).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from ldpopt.cli._common import console, fail, fail_api, fmt, report_to_stderr_if_json_on_stdout, write_json

__all__ = ["ALPHA", "BETA", "PI", "TARGET_N", "TARGET_WIDTH", "Target", "run"]

TARGET_N = typer.Option(
    None,
    "--target-n",
    help="Instead of --eps: the smallest eps reaching --alpha/--beta (or --target-width) with N reports.",
)
ALPHA = typer.Option(0.05, "--alpha", help="With --target-n: type-I error of the test.")
BETA = typer.Option(0.05, "--beta", help="With --target-n: type-II error to reach.")
TARGET_WIDTH = typer.Option(
    None, "--target-width", help="With --target-n: expected 95% half-width W for the mixing proportion."
)
PI = typer.Option(0.5, "--pi", help="With --target-width: the anticipated mixing proportion.")


@dataclass(frozen=True)
class Target:
    """What ``--target-n`` asks for."""

    n: int | None
    alpha: float
    beta: float
    width: float | None
    pi: float

    @property
    def wanted(self) -> bool:
        return self.n is not None or self.width is not None


_OPTIONS = {"alpha": "--alpha", "beta": "--beta", "n": "--target-n", "width": "--target-width", "pi": "--pi"}


def _search(pair: tuple, t: Target, n: int, divergence: str, max_outputs: int | None) -> Any:
    from ldpopt.deploy.target import UnreachableTargetError, minimum_epsilon, minimum_epsilon_for_width

    a, b = pair
    try:
        if t.width is not None:
            return minimum_epsilon_for_width(
                a, b, n=n, width=t.width, pi=t.pi, divergence=divergence, max_outputs=max_outputs
            )
        return minimum_epsilon(
            a, b, n=n, alpha=t.alpha, beta=t.beta, divergence=divergence, max_outputs=max_outputs
        )
    except UnreachableTargetError as exc:  # a failure, not bad input
        fail(str(exc), code=1)
    except (ValueError, TypeError) as exc:
        fail_api(exc, _OPTIONS)


def _print(res: Any) -> None:
    mech = res.mechanism
    what = "type-II error" if res.kind == "test" else "expected half-width"
    console.print(
        f"[bold]smallest eps = {res.eps:.6g}[/] (eps in ({res.eps_below:.6g}, {res.eps:.6g}]): "
        f"{what} {fmt(res.value)} <= {fmt(res.target)} with n = {res.n} reports",
        highlight=False,
    )
    names = (
        [str(x) for x in mech.labels] if mech.labels is not None else [str(i) for i in range(mech.num_inputs)]
    )
    t = Table(title=f"Optimal mechanism at eps = {res.eps:.6g}: Q(y | x)")
    t.add_column("x")
    for j in range(mech.num_outputs):
        t.add_column(f"y={j}", justify="right")
    for name, row in zip(names, mech.matrix, strict=True):
        t.add_row(name, *(f"{v:.4f}" for v in row))
    console.print(t)
    if res.kind == "test":
        console.print(f"test: size {fmt(res.size)}, method {res.method}", highlight=False)


def run(
    pair: tuple | None,
    t: Target,
    conflicts: dict[str, Any],
    divergence: str,
    max_outputs: int | None,
    json_out: Path | None,
) -> None:
    """The ``--target-n`` mode of ``ldpopt design``; ``conflicts`` maps the options it excludes
    (``--eps``, ``--shuffle``, ``--robust``) to their values."""
    given = [opt for opt, val in conflicts.items() if val]
    if given:
        fail(f"--target-n searches eps itself: drop {', '.join(given)}")
    if t.n is None:
        fail("--target-width needs --target-n N (the number of reports)")
    if pair is None:
        fail("give --p0 and --p1, or --from FILE")
    res = _search(pair, t, t.n, divergence, max_outputs)
    with report_to_stderr_if_json_on_stdout(json_out):
        _print(res)
    if json_out is not None:
        mech = res.mechanism
        write_json(
            json_out,
            {
                "target": res.kind,
                "eps": res.eps,
                "eps_below": res.eps_below,
                "xtol": res.xtol,
                "n": res.n,
                "alpha": t.alpha if res.kind == "test" else None,
                "beta": t.beta if res.kind == "test" else None,
                "width": t.width,
                "pi": t.pi if t.width is not None else None,
                "value": res.value,
                "size": None if math.isnan(res.size) else res.size,
                "method": res.method,
                "divergence": divergence,
                "labels": None if mech.labels is None else [str(x) for x in mech.labels],
                "matrix": mech.matrix.tolist(),
                "evaluations": res.evaluations,
                "message": res.message,
            },
        )
