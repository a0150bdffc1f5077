"""``ldpopt frequency --target-width W --n N``: the smallest eps per frequency mechanism
(:func:`ldpopt.minimum_epsilon_for_frequency_width`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table

from ldpopt.cli._common import console, fail, fail_api, fmt, report_to_stderr_if_json_on_stdout, write_json
from ldpopt.deploy.target import (
    FREQUENCY_MECHANISMS,
    UnreachableTargetError,
    minimum_epsilon_for_frequency_width,
)

__all__ = ["frequency_width_cmd"]

_OPTIONS = {
    "k": "--k",
    "n": "--n",
    "width": "--target-width",
    "confidence": "--confidence",
    "mechanism": "--mechanism",
    "theta": "--at",
}


def _row(kind: str, k: int, n: int, width: float, confidence: float, at: str | None) -> dict[str, Any]:
    """One mechanism's answer; ``computed`` False when it is unreachable (UnreachableTargetError)."""
    try:
        r = minimum_epsilon_for_frequency_width(
            k, n=n, width=width, theta=at, confidence=confidence, mechanism=kind
        )
    except UnreachableTargetError as exc:
        return _missing(kind, str(exc), computed=True)
    return {
        "mechanism": kind,
        "computed": True,
        "reached": True,
        "eps": r.eps,
        "eps_below": r.eps_below,
        "half_width": r.value,
        "message": r.message,
    }


def _missing(kind: str, message: str, *, computed: bool) -> dict[str, Any]:
    return {
        "mechanism": kind,
        "computed": computed,
        "reached": False,
        "eps": None,
        "eps_below": None,
        "half_width": None,
        "message": message,
    }


def _rows(kinds: tuple[str, ...], k: int, n: int, width: float, confidence: float, at: str | None) -> list:
    """The table's rows.  In the full table the optimum's worst case needs its channel: when that is
    too large to build, its row says so (the rows before it have validated the input)."""
    rows = []
    for kind in kinds:
        try:
            rows.append(_row(kind, k, n, width, confidence, at))
        except ValueError as exc:
            if kind != "optimal" or len(kinds) == 1:
                raise
            rows.append(_missing(kind, str(exc), computed=False))
    return rows


def frequency_width_cmd(
    k: int,
    n: int | None,
    width: float,
    mechanism: str | None,
    confidence: float,
    at: str,
    json_out: Path | None,
) -> None:
    """The smallest eps table (module docstring); exit 1 when no mechanism asked reaches it."""
    if n is None:
        fail("--target-width needs --n N (the number of reports)")
    if at not in ("worst", "uniform"):
        fail(f"--at must be 'worst' or 'uniform', got {at!r}", verbatim=True)
    theta = None if at == "worst" else "uniform"
    kinds = FREQUENCY_MECHANISMS if mechanism is None else (mechanism,)
    try:
        rows = _rows(kinds, k, n, width, confidence, theta)
    except (ValueError, TypeError) as exc:
        fail_api(exc, _OPTIONS)
    with report_to_stderr_if_json_on_stdout(json_out):
        t = Table(
            title=f"k = {k}, n = {n}: smallest eps for a half-width <= {width:g} "
            f"({100 * confidence:g}% simultaneous intervals, {at} case)"
        )
        for name in ("mechanism", "smallest eps", "half-width"):
            t.add_column(name, justify="left" if name == "mechanism" else "right")
        for r in rows:
            missed = "unreachable" if r["computed"] else "not computed"
            t.add_row(
                r["mechanism"],
                fmt(r["eps"]) if r["reached"] else missed,
                fmt(r["half_width"]) if r["reached"] else "-",
            )
        console.print(t)
    if json_out is not None:
        write_json(
            json_out,
            {
                "k": k,
                "n": n,
                "width": width,
                "confidence": confidence,
                "at": at,
                "interval": "simultaneous",
                "rows": rows,
            },
        )
    if not any(r["reached"] for r in rows):
        fail(
            rows[0]["message"]
            if len(rows) == 1
            else f"no mechanism reaches a half-width <= {width:g} with {n} reports even at eps = 64",
            code=1,
        )
