"""``ldpopt shuffle --mechanism M.json --n 2000 --delta 1e-6``: the central eps of an existing
mechanism file's reports when ``n`` of them are shuffled.

The bounds are :func:`ldpopt.deploy.shuffle.central_epsilon`'s: the generic bound at the file's
eps (any eps-LDP randomizer) with the module's default method; when the mechanism is s-ary
randomized response on its block label (an SPR or k-RR mechanism), the s-ary RR bound; and the
tight bound from the file's own channel, with a lower bound from explicit datasets (the gap
between the two is printed). ``--method`` asks for one method of
:data:`~ldpopt.deploy.shuffle.SHUFFLE_METHODS` instead.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import typer

from ldpopt.cli._common import (
    JsonOpt,
    app,
    console,
    fail_api,
    fmt,
    load_mechanism_file,
    report_to_stderr_if_json_on_stdout,
    write_json,
)

__all__ = ["shuffle_cmd"]

_OPTIONS = {"eps0": "the mechanism's eps", "n": "--n", "delta": "--delta", "method": "--method"}


def _bounds(mech: Any, n: int, delta: float, method: str | None) -> list[Any]:
    """The ShuffleBound(s) asked for: one method, or the default one, (s-ary RR) the rr bound and
    the tight bound of the mechanism's channel."""
    from ldpopt.deploy.shuffle import central_epsilon, rr_outputs

    s = rr_outputs(mech)
    if method == "tight":
        return [central_epsilon(mech, n, delta, "tight")]
    if method is not None:
        return [central_epsilon(mech.eps, n, delta, method, outputs=s if method == "rr" else None)]
    out = [central_epsilon(mech.eps, n, delta)]
    if s is not None:
        out.append(central_epsilon(mech.eps, n, delta, "rr", outputs=s))
    out.append(central_epsilon(mech, n, delta, "tight"))
    return out


def _payload(mech: Any, bounds: list[Any]) -> dict:
    return {
        "local_eps": mech.eps,
        "n": bounds[0].n,
        "delta": bounds[0].delta,
        "central_eps": min(b.value for b in bounds),
        "central_eps_lower": max(b.lower for b in bounds),
        "bounds": [
            {
                "method": b.method,
                "outputs": b.outputs,
                "central_eps": b.value,
                "lower": b.lower,
                "delta_bound": b.delta_bound,
                "validity": b.validity,
            }
            for b in bounds
        ],
    }


@app.command("shuffle")
def shuffle_cmd(
    *,
    mechanism: Path = typer.Option(..., "--mechanism", help="Mechanism file (JSON)."),
    n: int = typer.Option(..., "--n", help="Number of shuffled reports (users)."),
    delta: float = typer.Option(..., "--delta", help="Target delta of the central guarantee, in (0, 1)."),
    method: str | None = typer.Option(
        None,
        "--method",
        help="One accounting method of ldpopt.deploy.shuffle.central_epsilon (default: its default, "
        "the s-ary RR bound when the mechanism is s-ary randomized response, and 'tight').",
    ),
    json_out: Path | None = JsonOpt,
) -> None:
    """Central (eps, delta) of N shuffled reports of a mechanism file (privacy amplification by shuffling)."""
    mf = load_mechanism_file(mechanism, "--mechanism")
    mech = mf.mechanism
    if not math.isfinite(mech.eps):
        fail_api(ValueError("the mechanism has eps = inf: shuffling gives no finite central eps"), {})
    try:
        bounds = _bounds(mech, n, delta, method)
    except (ValueError, TypeError) as exc:
        fail_api(exc, _OPTIONS)
    payload = _payload(mech, bounds)
    with report_to_stderr_if_json_on_stdout(json_out):
        console.print(
            f"[bold]{n} shuffled reports[/] of {mechanism.name} (local eps = {fmt(mech.eps)}): "
            f"central eps = {fmt(payload['central_eps'])} at delta = {delta:g}"
        )
        for b in bounds:
            console.print(f"  {b.method}: {fmt(b.value)} ({b.validity})", highlight=False)
        lower = payload["central_eps_lower"]
        if lower > 0:
            console.print(
                f"  lower bound (explicit datasets): {fmt(lower)}; gap {fmt(payload['central_eps'] - lower)}",
                highlight=False,
            )
    if json_out is not None:
        write_json(json_out, payload)
