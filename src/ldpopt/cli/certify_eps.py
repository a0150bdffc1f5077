"""``ldpopt certify-eps FILE``: the exact eps of a channel matrix (a mechanism file, CSV, NPY or JSON).

Prints the level, its proven upper bound and the worst input pair and output
(:func:`ldpopt.certify_epsilon`); with ``--claim EPS`` decides exactly whether the channel is
EPS-LDP.  Exit codes: 0 ok, 1 the claim is violated, 2 bad input.
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
    fail,
    report_to_stderr_if_json_on_stdout,
    warn,
    write_json,
)


def _num(x: float) -> Any:
    return x if math.isfinite(x) else "inf"


def payload(cert: Any, claim: float | None, holds: bool | None, source: str, claimed: float | None) -> dict:
    """The JSON document of ``certify-eps`` (also the studio's answer)."""
    r = cert.max_ratio
    return {
        "file": source,
        "epsilon": _num(cert.epsilon),
        "epsilon_upper": _num(cert.epsilon_upper),
        "worst_inputs": list(cert.inputs),
        "worst_output": cert.output,
        "max_ratio": None if r is None else f"{r.numerator}/{r.denominator}",
        "num_inputs": cert.num_inputs,
        "num_outputs": cert.num_outputs,
        "file_eps": None if claimed is None else _num(claimed),
        "file_eps_holds": None if claimed is None else cert.satisfies(claimed),
        "claim": None if claim is None else _num(claim),
        "claim_holds": holds,
        "message": cert.message,
    }


#: an excess of the certified eps over the file's stated eps this small (relative to max(eps, 1)) is
#: the rounding of the stored floats: each entry is within u = 2^-53 relative of the exact channel's,
#: so a log-ratio moves by about 2u = 2.2e-16 (and a rounded-up eps_upper by a few u more); 1e-12
#: leaves a margin above 1000
_ROUNDING_EXCESS = 1e-12


def _file_verdict(cert: Any, stated: float) -> str:
    """What the stored floats say of a mechanism file's eps (ldpopt's own sampler realises an
    exactly eps-LDP channel from them, so an excess in the last bits is not a leak of its reports)."""
    if cert.satisfies(stated):
        return f"the mechanism file states eps = {stated:g}: holds exactly"
    excess = cert.epsilon_upper - stated
    return (
        f"the mechanism file states eps = {stated:g}: the stored floats exceed it by up to {excess:.3g}"
        + (" (rounding of the floats)" if excess <= _ROUNDING_EXCESS * max(stated, 1.0) else "")
    )


def _read(path: Path) -> Any:
    from ldpopt.deploy.certify import read_channel

    if not path.exists():
        fail(f"{path}: no such file")
    try:
        return read_channel(path)
    except (ValueError, TypeError) as exc:
        fail(str(exc))


@app.command("certify-eps")
def certify_eps_cmd(
    file: Path = typer.Argument(
        ..., help="Channel matrix: mechanism file, CSV, .npy or JSON (rows = inputs)."
    ),
    *,
    claim: float | None = typer.Option(
        None, "--claim", help="Check exactly that the channel is EPS-LDP (exit 1 when it is not)."
    ),
    normalize: bool = typer.Option(False, "--normalize", help="Rescale each row to sum to 1."),
    json_out: Path | None = JsonOpt,
) -> None:
    """The exact eps of a channel matrix, with the worst input pair; exit 1 when --claim is violated."""
    from ldpopt.deploy.certify import certify_epsilon

    if claim is not None and not claim >= 0:
        fail(f"--claim must be a number >= 0 (or inf), got --claim={claim!r}")
    ch = _read(file)
    try:
        cert = certify_epsilon(
            ch.matrix, labels=ch.labels, output_labels=ch.output_labels, normalize=normalize
        )
        holds = None if claim is None else cert.satisfies(claim)
    except (ValueError, TypeError) as exc:
        fail(f"{file}: {str(exc).replace('normalize=True', '--normalize')}")
    if ch.problem:  # a warning, shown with --json - too
        warn(f"{ch.problem}; its stored matrix is checked as it is")
    with report_to_stderr_if_json_on_stdout(json_out):
        console.print(f"eps = {cert.epsilon:.17g}", highlight=False)
        if math.isfinite(cert.epsilon):
            console.print(
                f"eps_upper = {cert.epsilon_upper:.17g} (proven: Q(y|x) <= exp(eps_upper) Q(y|x') "
                "exactly for the stored floats)",
                highlight=False,
            )
        a, b = cert.inputs
        console.print(f"worst: output {cert.output}, inputs {a} vs {b}", highlight=False, markup=False)
        if ch.claimed_eps is not None:
            console.print(_file_verdict(cert, ch.claimed_eps), highlight=False)
        if claim is not None:
            if holds:
                console.print(f"claim eps = {claim:g} holds exactly", highlight=False)
            else:
                console.print(
                    f"[red]claim eps = {claim:g} is violated:[/] Q({cert.output}|{a}) > "
                    f"exp({claim:g}) Q({cert.output}|{b}) (inputs {a} vs {b}, eps = {cert.epsilon:.6g})",
                    highlight=False,
                )
    if json_out is not None:
        write_json(json_out, payload(cert, claim, holds, str(file), ch.claimed_eps))
    if holds is False:
        raise typer.Exit(1)
