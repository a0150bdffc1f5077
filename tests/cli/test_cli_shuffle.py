"""CLI: ``ldpopt shuffle`` refuses out-of-range input with exit status 2 and a one-line error."""

from __future__ import annotations

import os

from typer.testing import CliRunner

from ldpopt.cli import app

runner = CliRunner()


def _export(folder):
    old = os.getcwd()
    os.chdir(folder)
    try:
        args = ["export", "--p0", "a=0.5,b=0.5", "--p1", "a=0.2,b=0.8", "--eps", "2", "--output", "M.json"]
        r = runner.invoke(app, args)
        assert r.exit_code == 0, r.output
    finally:
        os.chdir(old)
    return folder / "M.json"


def test_shuffle_huge_n_closed_form_is_bad_input(tmp_path):
    mech = _export(tmp_path)
    huge = "1" + "0" * 300
    args = ["shuffle", "--mechanism", str(mech), "--n", huge, "--delta", "1e-6", "--method", "closed_form"]
    r = runner.invoke(app, args)
    assert r.exit_code == 2, r.output
    assert "unexpected" not in r.output
    assert "n" in r.output
