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
    with report_to_stderr_if_json_on_stdout(Path("-"), quiet=False):
        console.print("to stderr")
        monkeypatch.setattr(sys, "stdout", io.StringIO())
    # ... and stdout proxied by a live display (rich resolves the proxy to the stream beneath)
    monkeypatch.setattr(sys, "stdout", FileProxy(console, io.StringIO()))
    with report_to_stderr_if_json_on_stdout(Path("-"), quiet=False):
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
        with report_to_stderr_if_json_on_stdout(Path("-"), quiet=False):
            console.print("during")
        console.print("mine")
    finally:
        console.file = None  # type: ignore[assignment]  # unset: rich follows sys.stdout
    assert mine.getvalue() == "mine\n" and err.getvalue().endswith("during\n")


def _help_texts():
    """Every command's help as ``ldpopt CMD --help`` prints it (the command main() builds)."""
    import click

    from ldpopt.cli._common import command

    group = command(help_requested=True)
    root = click.Context(group, info_name="ldpopt")
    yield "ldpopt", group.get_help(root)
    for name, cmd in group.commands.items():
        yield name, cmd.get_help(click.Context(cmd, parent=root, info_name=name))


def test_help_is_plain_for_every_command():
    seen = 0
    for name, text in _help_texts():
        seen += 1
        usage = text.splitlines()[0]
        assert "{" not in usage and "<" not in usage, (name, usage)
        # no typer type labels anywhere ("<path>", "<int range>", "<bool>", "<list[str]>")
        labels = [w for w in ("<path>", "<int", "<float", "<bool>", "<str>", "<list", "<text>") if w in text]
        assert not labels, (name, labels)
    assert seen >= 15


def test_help_of_decide_and_sweep_in_a_subprocess(tmp_path):
    import os
    import subprocess

    import ldpopt

    src = str(Path(ldpopt.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    expect = {
        "decide": ("Usage: ldpopt decide [OPTIONS] [PROBLEM.json]", "  PROBLEM.json  Problem file"),
        "sweep": ("Usage: ldpopt sweep [OPTIONS] CONFIG", "--workers N"),
        "sweep-report": ("Usage: ldpopt sweep-report [OPTIONS] DIRECTORY", "--resamples N"),
    }
    for cmd, (usage, shown) in expect.items():
        r = subprocess.run(
            [sys.executable, "-m", "ldpopt", cmd, "--help"],
            capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env,
        )  # fmt: skip
        assert r.returncode == 0 and r.stdout.startswith(usage), r.stdout + r.stderr
        assert shown in r.stdout, r.stdout
        assert "<path>" not in r.stdout and "<int range>" not in r.stdout and "{" not in r.stdout
