"""CLI: ``ldpopt design --central EPS,DELTA,N`` (the real command in a subprocess)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import ldpopt
from cli_subprocess import ldpopt_cmd
from ldpopt.deploy.shuffle import central_epsilon, tight_delta

P0 = "0.5,0.2,0.2,0.1"
P1 = "0.1,0.2,0.3,0.4"


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return ldpopt_cmd(*args, cwd=cwd)


def test_design_central_meets_the_target_and_prints_the_gap(tmp_path):
    r = _run(
        "design",
        "--p0",
        P0,
        "--p1",
        P1,
        "--central",
        "0.5,1e-6,100000",
        "--json",
        "-",
        "--verbose",
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    c = data["central"]
    assert data["eps"] == c["local_eps"] > 0.5 and c["n"] == 100_000
    assert (
        c["central_eps_lower"] <= c["central_eps"] and c["gap"] == c["central_eps"] - c["central_eps_lower"]
    )
    assert "gap" in r.stderr  # with --verbose, the report goes to stderr when stdout carries the JSON
    mech = ldpopt.Mechanism(data["matrix"], data["eps"])
    assert tight_delta(mech, 0.5, 100_000, 1e-6) <= 1e-6
    assert central_epsilon(mech, 100_000, 1e-6, "tight").value == c["central_eps"]


def test_design_central_refuses_bad_input(tmp_path):
    for extra, words in (
        (["--central", "0.5,1e-6"], "EPS,DELTA,N"),
        (["--central", "0.5,1e-6,100", "--eps", "1"], "only one"),
        (["--central", "0.5,2,100"], "delta"),
        (["--central", "0.5,1e-6,10.5"], "whole number"),
    ):
        r = _run("design", "--p0", P0, "--p1", P1, *extra, cwd=tmp_path)
        assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr, (extra, r.stderr)
