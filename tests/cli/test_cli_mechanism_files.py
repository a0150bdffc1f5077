"""Every command that reads a mechanism file reads it through one loader (``load_mechanism_file``
in ``ldpopt.cli._common``): a missing or broken file is the same one-line error, exit 2, naming
the file (after ``--mechanism`` where the file is given with that option)."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from ldpopt.cli import app

runner = CliRunner()

#: (command, arguments with the mechanism file as "{m}", the option it comes with or "")
COMMANDS = [
    ("compare", ["{m}"], ""),
    ("estimate", ["--mechanism", "{m}", "--reports", "reports.csv"], "--mechanism "),
    ("test", ["--mechanism", "{m}", "--reports", "reports.csv"], "--mechanism "),
    ("privatize", ["--mechanism", "{m}", "--input", "in.csv", "--output", "out.csv"], "--mechanism "),
    ("samplesize", ["--mechanism", "{m}"], "--mechanism "),
    ("audit", ["--mechanism", "{m}"], "--mechanism "),
]


@pytest.mark.parametrize("command, args, prefix", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_a_bad_mechanism_file_is_one_line_naming_it(tmp_path, command, args, prefix):
    missing = tmp_path / "none.json"
    wrong = tmp_path / "list.json"
    wrong.write_text("[1, 2]\n")
    for path, problem in ((missing, "no such file"), (wrong, r"not a mechanism file \(the top level")):
        res = runner.invoke(app, [command, *(a.format(m=path) for a in args)])
        assert res.exit_code == 2, res.output
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1, res.stderr  # one line, no traceback
        assert re.fullmatch(rf"error: {re.escape(prefix + str(path))}: {problem}.*", lines[0]), lines[0]
