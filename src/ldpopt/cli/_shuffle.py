"""``ldpopt design --shuffle n=N,delta=D,eps=E``: design for a shuffled deployment.

The local eps0 is the largest one whose n shuffled reports are (E, D)-DP by the numerical clone
bound (:func:`ldpopt.deploy.shuffle.local_epsilon_for`, rounded down); the optimal mechanism is
designed at eps0, and its own central eps is reported by the generic bound and, for an SPR
mechanism (s-ary randomized response on its block label), by the tighter s-ary RR bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ldpopt.cli._common import console, fail, fmt

__all__ = ["ShufflePlan", "plan_shuffle", "shuffle_summary", "print_shuffle"]

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
