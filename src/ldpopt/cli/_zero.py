"""Why a design's normalised values are ``-``: a zero probability that makes D_f(P0||P1) infinite
(a zero count of a ``--from`` file with ``--normalize``), said once."""

from __future__ import annotations

import math
from typing import Any

from ldpopt._validation import check_labelled_pair
from ldpopt.cli._common import solve

__all__ = ["infinite_divergence_note"]


def _names(where: Any, labels: tuple | None) -> str:
    names = [str(labels[i]) if labels is not None else str(i) for i in where]
    return ", ".join(names[:5]) + (f", ... ({len(names)} symbols)" if len(names) > 5 else "")


def _infinite(p0: list[float], p1: list[float], divergence: Any) -> bool:
    return not math.isfinite(solve(p0, p1, 1.0, divergence).input_divergence)


def infinite_divergence_note(res: Any, p0: Any, p1: Any) -> str | None:
    """One line saying why ``D_f(P0||P1)`` is infinite (and so the normalised values undefined),
    naming the symbols with a zero probability under one hypothesis only; None when it is finite."""
    if math.isfinite(res.input_divergence):
        return None
    a, b, labels = check_labelled_pair(p0, p1)
    only0 = [i for i in range(a.size) if a[i] > 0 and b[i] == 0]
    only1 = [i for i in range(a.size) if b[i] > 0 and a[i] == 0]
    why = []
    # which kind of zero this divergence cannot take: D_f of a two-symbol pair with that zero alone
    if only0 and _infinite([0.5, 0.5], [1.0, 0.0], res.divergence):
        why.append(f"P1 is 0 where P0 is not ({_names(only0, labels)})")
    if only1 and _infinite([1.0, 0.0], [0.5, 0.5], res.divergence):
        why.append(f"P0 is 0 where P1 is not ({_names(only1, labels)})")
    reason = " and ".join(why) if why else "of the distributions' extreme ratios"
    return (
        f"note: D_{res.divergence}(P0||P1) = inf because {reason} (a zero count?): the normalised "
        "values (value / D) are undefined, shown as '-'"
    )
