"""``ldpopt design --shuffle n=N,delta=D,eps=E`` and ``--central EPS,DELTA,N``: shuffled deployments.

The local eps0 is the largest one whose n shuffled reports are (E, D)-DP by the numerical clone
bound (:func:`ldpopt.deploy.shuffle.local_epsilon_for`, rounded down); the optimal mechanism is
designed at eps0, and its own central eps is reported by the generic bound and, for an SPR
mechanism (s-ary randomized response on its block label), by the tighter s-ary RR bound.

``--central EPS,DELTA,N`` designs for the central target directly: the most useful SPR mechanism
whose N shuffled reports are (EPS, DELTA)-DP by the tight bound, searched over eps0 and the output
budget (:func:`ldpopt.deploy.central.optimal_for_central`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ldpopt.cli._common import console, fail, fmt

__all__ = [
    "ShufflePlan",
    "plan_shuffle",
    "shuffle_summary",
    "print_shuffle",
    "parse_central",
    "design_central",
    "print_central",
]

_KEYS = ("n", "delta", "eps")


@dataclass(frozen=True)
class ShufflePlan:
    """The shuffled deployment asked for and the local eps0 that meets it."""

    n: int
    delta: float
    central_eps: float
    eps0: float
    central: float


def _parse(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in (t.strip() for t in text.split(",") if t.strip()):
        key, sep, val = part.partition("=")
        key = key.strip()
        if not sep or key not in _KEYS:
            fail(f"--shuffle expects n=N,delta=D,eps=E, got {part!r} in {text!r}")
        if key in out:
            fail(f"--shuffle: {key} appears twice in {text!r}")
        out[key] = val.strip()
    missing = [k for k in _KEYS if k not in out]
    if missing:
        fail(f"--shuffle needs n, delta and eps; missing {', '.join(missing)} in {text!r}")
    return out


def plan_shuffle(shuffle: str | None, eps: float | None) -> tuple[float, ShufflePlan | None]:
    """(local eps to design at, the plan) from ``--shuffle`` and ``--eps`` (exactly one given)."""
    if (shuffle is None) == (eps is None):
        fail("give exactly one of --eps and --shuffle n=N,delta=D,eps=E")
    if shuffle is None:
        assert eps is not None
        return eps, None
    from ldpopt.deploy.shuffle import local_epsilon_for

    raw = _parse(shuffle)
    try:
        n_f = float(raw["n"])
        n = int(n_f) if n_f.is_integer() else raw["n"]
        res = local_epsilon_for(float(raw["eps"]), n, float(raw["delta"]))
    except ValueError as exc:
        fail(f"--shuffle: {exc}")
    return res.value, ShufflePlan(res.n, res.delta, res.central_eps, res.value, res.central)


def shuffle_summary(plan: ShufflePlan, mech: Any) -> dict:
    """The plan and the designed mechanism's central eps (generic and, when it applies, s-ary RR)."""
    from ldpopt.deploy.shuffle import central_epsilon, rr_outputs

    # designed at eps0: the generic bound is the one local_epsilon_for certified
    generic = plan.central if mech.eps == plan.eps0 else central_epsilon(mech.eps, plan.n, plan.delta).value
    s = rr_outputs(mech)
    rr = central_epsilon(mech.eps, plan.n, plan.delta, "rr", outputs=s).value if s is not None else None
    return {
        "n": plan.n,
        "delta": plan.delta,
        "central_eps_target": plan.central_eps,
        "local_eps": plan.eps0,
        "central_eps": generic,
        "central_eps_rr": rr,
        "rr_outputs": s,
    }


def print_shuffle(summary: dict) -> None:
    """One paragraph for the console."""
    line = (
        f"[bold]Shuffled deployment[/]: n = {summary['n']}, delta = {summary['delta']:g}: local eps0 = "
        f"{fmt(summary['local_eps'])} (largest meeting central eps {fmt(summary['central_eps_target'])}, "
        f"rounded down); central eps of this mechanism {fmt(summary['central_eps'])} "
        "(any eps0-LDP randomizer)"
    )
    if summary["central_eps_rr"] is not None and math.isfinite(summary["central_eps_rr"]):
        line += f", {fmt(summary['central_eps_rr'])} (as {summary['rr_outputs']}-ary randomized response)"
    console.print(line)


def parse_central(
    central: str | None, shuffle: str | None, eps: float | None
) -> tuple[float, float, int] | None:
    """``(eps, delta, n)`` from ``--central EPS,DELTA,N`` (None without it); not with --eps/--shuffle."""
    if central is None:
        return None
    if eps is not None or shuffle is not None:
        fail("--central replaces --eps and --shuffle: give only one of them")
    parts = [t.strip() for t in central.split(",")]
    if len(parts) != 3:
        fail(f"--central expects EPS,DELTA,N, got {central!r}")
    try:
        e, d, n_f = float(parts[0]), float(parts[1]), float(parts[2])
    except ValueError:
        fail(f"--central expects three numbers EPS,DELTA,N, got {central!r}")
    if not n_f.is_integer():
        fail(f"--central: N must be a whole number of users, got {parts[2]!r}")
    return e, d, int(n_f)


def design_central(
    p0: Any, p1: Any, target: tuple[float, float, int], divergence: str, max_outputs: int | None
) -> tuple[float, int | None, dict]:
    """(local eps0, output budget, summary) of the design for the central target."""
    from ldpopt.deploy.central import optimal_for_central

    try:
        found = optimal_for_central(p0, p1, target, divergence, max_outputs)
    except (ValueError, TypeError) as exc:
        fail(f"--central: {exc}")
    budget = next(b for b, e0, v in found.candidates if e0 == found.eps0 and v == found.result.value)
    bound = found.central
    summary = {
        "central_eps_target": found.central_eps,
        "delta": found.delta,
        "n": found.n,
        "local_eps": found.eps0,
        "max_outputs": budget,
        "central_eps": bound.value,
        "central_eps_lower": bound.lower,
        "gap": bound.gap,
        "families": [{"max_outputs": b, "local_eps": e0, "value": v} for b, e0, v in found.candidates],
    }
    return found.eps0, budget, summary


def print_central(summary: dict) -> None:
    """One paragraph for the console."""
    budget = (
        "no output budget" if summary["max_outputs"] is None else f"at most {summary['max_outputs']} outputs"
    )
    console.print(
        f"[bold]Central target[/] eps = {fmt(summary['central_eps_target'])}, delta = {summary['delta']:g}, "
        f"n = {summary['n']}: local eps0 = {fmt(summary['local_eps'])} ({budget}; the largest meeting the "
        f"target by the tight shuffle bound, rounded down); shuffled central eps between "
        f"{fmt(summary['central_eps_lower'])} and {fmt(summary['central_eps'])} (gap {fmt(summary['gap'])})"
    )
