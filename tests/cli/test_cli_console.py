"""The console after a command that wrote its JSON to stdout (``--json -``): it follows standard
output again, whatever stream was standard output while the command ran (typer's CliRunner
replaces it for each invocation and closes it afterwards)."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

from rich.file_proxy import FileProxy
from typer.testing import CliRunner

from ldpopt.cli import app
from ldpopt.cli._common import console, report_to_stderr_if_json_on_stdout

DESIGN = ["design", "--p0", "0.5,0.3,0.2", "--p1", "0.2,0.3,0.5", "--eps", "1"]


def test_commands_after_json_on_stdout_write_to_their_own_stdout():
    runner = CliRunner()
    first = runner.invoke(app, [*DESIGN, "--json", "-"])
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["num_outputs"] >= 1  # the JSON alone on stdout
    for _ in range(2):  # later commands in the same process: their output, no closed stream
        later = runner.invoke(app, DESIGN)
        assert later.exit_code == 0 and later.exception is None, later.output
        assert "Optimal 1-LDP mechanism" in later.stdout


def test_console_is_left_unset_whatever_stdout_was(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    # stdout replaced while the command runs (as a runner's invocation ends) ...
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    with report_to_stderr_if_json_on_stdout(Path("-")):
        console.print("to stderr")
        monkeypatch.setattr(sys, "stdout", io.StringIO())
    # ... and stdout proxied by a live display (rich resolves the proxy to the stream beneath)
    monkeypatch.setattr(sys, "stdout", FileProxy(console, io.StringIO()))
    with report_to_stderr_if_json_on_stdout(Path("-")):
        console.print("to stderr too")
    now = io.StringIO()
    monkeypatch.setattr(sys, "stdout", now)
    console.print("after")
    assert err.getvalue() == "to stderr\nto stderr too\n"
    assert now.getvalue() == "after\n"  # the console follows sys.stdout again
    # an explicitly set file is kept
    mine = io.StringIO()
    console.file = mine
    try:
        with report_to_stderr_if_json_on_stdout(Path("-")):
            console.print("during")
        console.print("mine")
    finally:
        console.file = None  # type: ignore[assignment]  # unset: rich follows sys.stdout
    assert mine.getvalue() == "mine\n" and err.getvalue().endswith("during\n")
