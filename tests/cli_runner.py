"""typer's test runner with stdout and stderr captured separately on every supported click.

click >= 8.2 always separates them; click 8.1 (what the oldest typer ldpopt admits may bring)
mixes them unless asked not to, and then ``result.stderr`` raises."""

from __future__ import annotations

from typer.testing import CliRunner


def make_runner() -> CliRunner:
    try:
        return CliRunner(mix_stderr=False)  # type: ignore[call-arg]  # click < 8.2
    except TypeError:  # click >= 8.2: no mix_stderr, stderr always separate
        return CliRunner()
