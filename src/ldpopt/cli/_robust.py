"""``ldpopt design --robust SPEC [--from-counts]``: the robust design next to the plug-in one.

SPEC is ``MODEL:R0,R1`` (``tv``, ``contamination`` or ``kl``; one radius = both sides), or,
with ``--from-counts`` (P0 and P1 are then category counts), ``tv`` or ``kl`` alone: the radii
come from the finite-sample confidence bound at ``--confidence``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import typer
from rich.table import Table

from ldpopt.cli._common import console, fail, fail_api, fmt

__all__ = ["CONFIDENCE", "FROM_COUNTS", "ROBUST", "prepare", "report"]

ROBUST = typer.Option(
    None,
    "--robust",
    help="Robust design over uncertainty sets: tv:R0,R1, contamination:D0,D1 or kl:R0,R1 "
    "(with --from-counts: tv or kl, radii from the counts).",
)
FROM_COUNTS = typer.Option(False, "--from-counts", help="P0 and P1 are category counts (robust design).")
CONFIDENCE = typer.Option(0.95, "--confidence", help="Joint coverage of the --from-counts confidence set.")

_MODELS = {"tv": "total_variation", "contamination": "contamination", "kl": "kl_ball"}


def _values(x: Any) -> tuple[np.ndarray, tuple | None]:
    if isinstance(x, dict):
        return np.array(list(x.values()), dtype=float), tuple(x)
    return np.asarray(x, dtype=float), None


def _relabel(p: np.ndarray, labels: tuple | None) -> Any:
    return p if labels is None else dict(zip(labels, p.tolist(), strict=True))


#: ``uncertainty.from_counts``'s argument names in the command line's words (its P0 and P1 counts)
_COUNTS_NAMES = {"counts0": "P0", "counts1": "P1", "confidence": "--confidence"}


def prepare(a: Any, b: Any, spec: str | None, from_counts: bool, confidence: float, divergence: str):
    """(p0, p1, uncertainty or None): the estimates (the counts normalised with ``--from-counts``)
    and the parsed uncertainty sets; exit 2 with one line on bad input."""
    from ldpopt.robust import uncertainty as unc

    if spec is None:
        if from_counts:
            fail("--from-counts needs --robust tv or --robust kl")
        return a, b, None
    from ldpopt.divergences import get_divergence
    from ldpopt.robust.design import check_divergence

    try:
        check_divergence(get_divergence(divergence))
    except (ValueError, TypeError) as exc:
        fail(f"--robust: {exc}")
    model, _, radii = spec.strip().lower().partition(":")
    if model not in _MODELS:
        fail(f"--robust: unknown model {model!r}; use tv, contamination or kl")
    try:
        if from_counts:
            if radii:
                fail(
                    "--robust with --from-counts takes the model only (tv or kl): "
                    "the radii come from the counts"
                )
            if isinstance(a, dict) and isinstance(b, dict) and set(a) == set(b):
                b = {k: b[k] for k in a}
            (ca, la), (cb, _) = _values(a), _values(b)
            try:
                u = unc.from_counts(ca, cb, confidence=confidence, model=model)
            except ValueError as exc:  # the API names the counts counts0 / counts1
                fail_api(exc, _COUNTS_NAMES, context="--from-counts: ")
            assert u.p0_hat is not None and u.p1_hat is not None
            return _relabel(u.p0_hat, la), _relabel(u.p1_hat, la), u
        parts = [t for t in radii.split(",") if t.strip()]
        if len(parts) not in (1, 2):
            fail(f"--robust: expected {model}:R0,R1 (one or two radii), got {spec!r}")
        r = [float(t) for t in parts]
        return a, b, getattr(unc, _MODELS[model])(r[0], r[-1])
    except ValueError as exc:
        fail(f"--robust: {exc}")


def report(p0: Any, p1: Any, eps: float, divergence: str, max_outputs: int | None, u) -> dict:
    """Solve, print the plug-in vs robust table, return the JSON block (empty without --robust)."""
    if u is None:
        return {}
    from ldpopt.robust import robust_mechanism

    try:
        res = robust_mechanism(p0, p1, eps, u, divergence, max_outputs)
    except (ValueError, TypeError) as exc:
        fail(f"--robust: {exc}")
    t = Table(title=f"Worst case over {u.describe()} ({'certified' if res.certified else 'NOT certified'})")
    t.add_column("mechanism")
    t.add_column("worst-case utility", justify="right")
    t.add_column("nominal utility", justify="right")
    t.add_row("plug-in (SPR at the estimates)", fmt(res.plug_in.value), fmt(res.plug_in.nominal))
    t.add_row("robust", fmt(res.value), fmt(res.mechanism.utility(p0, p1, divergence)))
    t.add_row("upper bound (no mechanism does better)", fmt(res.upper_bound), "-")
    console.print(t)
    blocks = " | ".join(",".join(map(str, b)) for b in res.partition) if res.partition else "a mixture"
    console.print(f"robust partition: {blocks}   ({res.message})")
    return {
        "robust": {
            "uncertainty": {"model": u.model, "r0": u.r0, "r1": u.r1, "confidence": u.confidence},
            "value": res.value,
            "upper_bound": res.upper_bound,
            "gap": res.gap,
            "certified": res.certified,
            "partition": None if res.partition is None else [list(b) for b in res.partition],
            "matrix": res.mechanism.matrix.tolist(),
            "least_favourable": [res.least_favourable[0].tolist(), res.least_favourable[1].tolist()],
            "plug_in_worst_case": res.plug_in.value,
            "dp_solves": res.dp_solves,
            "message": res.message,
        }
    }
