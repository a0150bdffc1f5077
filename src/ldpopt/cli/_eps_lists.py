"""``--eps 0.5,1,2`` for a command that answers for one eps at a time (``design``): the command runs
once per eps, its JSON documents are gathered, and the answer is one table (a row per eps and
mechanism) and, with ``--json``, one JSON array of the per-eps documents.

:func:`eps_or_list` is the option's parser (a number, or a tuple of them for a list);
:func:`over_eps_lists` wraps the command (typer reads the wrapped signature), so the command itself
only ever sees one eps.
"""

from __future__ import annotations

import functools
import io
import json
import math
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from ldpopt.cli._common import console, fmt, one_eps, report_to_stderr_if_json_on_stdout, write_json

__all__ = ["eps_or_list", "over_eps_lists"]


def eps_or_list(text: Any) -> float | tuple[float, ...]:
    """One eps (a number, ``inf``), or a comma-separated list of them (a tuple, in the given order)."""
    if not isinstance(text, str) or ("," not in text and ";" not in text):
        return one_eps(text)
    parts = [t.strip() for t in text.replace(";", ",").split(",") if t.strip()]
    if not parts:
        raise typer.BadParameter(f"{text!r} has no number")
    values = tuple(one_eps(t) for t in parts)
    return values[0] if len(values) == 1 else values


def _number(value: Any) -> float:
    """A JSON number back as a float (``null`` and ``"inf"``: infinite)."""
    return math.inf if value is None or value == "inf" else float(value)


def _table(docs: list[dict]) -> Table:
    t = Table(title="Utility per eps: the optimum next to the binary mechanism and k-RR")
    for name in ("eps", "mechanism", "outputs", "value", "normalised"):
        t.add_column(name, justify="left" if name == "mechanism" else "right")
    for doc in docs:
        denom = _number(doc["input_divergence"])
        k = len(doc["matrix"])
        outputs = {"optimal (SPR)": doc["num_outputs"], "binary": 2}
        for name, value in doc["baselines"].items():
            v = _number(value)
            norm = min(max(v / denom, 0.0), 1.0) if 0 < denom < math.inf and math.isfinite(v) else None
            t.add_row(fmt(_number(doc["eps"])), name, str(outputs.get(name, k)), fmt(v), fmt(norm))
    return t


def over_eps_lists(command: Callable[..., None]) -> Callable[..., None]:
    """The command, answering an ``eps`` list by one run per eps (see the module docstring)."""

    @functools.wraps(command)
    def run(**kwargs: Any) -> None:
        eps = kwargs.get("eps")
        if not isinstance(eps, tuple):
            return command(**kwargs)
        json_out = kwargs.get("json_out")
        docs: list[dict] = []
        notes: list[str] = []
        with tempfile.TemporaryDirectory() as tmp:
            for i, e in enumerate(eps):
                path = Path(tmp) / f"{i}.json"
                shown = io.StringIO()
                with console.redirect(shown):
                    command(**{**kwargs, "eps": e, "json_out": path})
                docs.append(json.loads(path.read_text()))
                notes += [
                    n for n in shown.getvalue().splitlines() if n.startswith("note:") and n not in notes
                ]
        with report_to_stderr_if_json_on_stdout(json_out):
            console.print(_table(docs))
            for note in notes:  # said once, not once per eps
                console.print(note, highlight=False, markup=False)
        if json_out is not None:
            write_json(json_out, docs)
        return None

    return run
