"""`ldpopt design` and `ldpopt demo` through typer's test runner."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import version

import numpy as np
import pytest
from typer.testing import CliRunner

import ldpopt
from _errmodel import within
from _valuebounds import fast_spr_err
from ldpopt.cli import app
from ldpopt.cli.design import DEMO_EVENTS

runner = CliRunner()


def test_design_prints_and_writes_json(tmp_path):
    out = tmp_path / "res.json"
    r = runner.invoke(
        app, ["design", "--p0", "0.1,0.2,0.7", "--p1", "0.3,0.3,0.4", "--eps", "1", "--json", str(out)]
    )
    assert r.exit_code == 0, r.output
    assert "Partition" in r.output and "binary" in r.output and "k-ary RR" in r.output
    data = json.loads(out.read_text())
    # the CLI calls optimal_mechanism with the same floats (the readable program at this size,
    # cli._common.CLI_READABLE_MAX_K) and writes res.value through json (repr round-trips
    # exactly): the same bits; likewise the matrix and value / input_divergence
    ref = ldpopt.optimal_mechanism([0.1, 0.2, 0.7], [0.3, 0.3, 0.4], 1.0, method="dp")
    assert data["value"] == ref.value
    assert data["partition"] == [list(b) for b in ref.partition]
    assert np.array_equal(data["matrix"], ref.mechanism.matrix)
    assert set(data["baselines"]) == {"optimal (SPR)", "binary", "k-ary RR"}
    assert data["normalized_value"] == ref.value / ref.input_divergence


def test_design_budget_and_divergence():
    r = runner.invoke(
        app,
        [
            "design",
            "--p0",
            "0.1,0.2,0.3,0.4",
            "--p1",
            "0.4,0.3,0.2,0.1",
            "--eps",
            "3",
            "--divergence",
            "tv",
            "--max-outputs",
            "2",
        ],
    )
    assert r.exit_code == 0, r.output
    assert "2 outputs" in r.output


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--p0", "0.1,0.2,0.7", "--p1", "0.3,0.3,0.5", "--eps", "1"], "sum to 1"),
        (["--p0", "0.1,x,0.7", "--p1", "0.3,0.3,0.4", "--eps", "1"], "--p0"),
        (["--p0", "0.1,0.2,0.7", "--p1", "0.3,0.3,0.4", "--eps", "-1"], "eps"),
        (["--p0", "0.1,0.2,0.7", "--p1", "0.3,0.3,0.4", "--eps", "1", "--divergence", "foo"], "divergence"),
        (["--p0", "0.1,0.2,0.7", "--p1", "0.3,0.7", "--eps", "1"], "same length"),
        (["--p0", "0.1,0.2,0.7", "--p1", "0.3,0.3,0.4", "--eps", "1", "--max-outputs", "0"], "max_outputs"),
    ],
)
def test_design_errors_are_one_line(args, needle):
    r = runner.invoke(app, ["design", *args])
    assert r.exit_code != 0
    assert needle in r.output
    assert "Traceback" not in r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)


def test_demo_runs_and_compares():
    r = runner.invoke(app, ["demo"])
    assert r.exit_code == 0, r.output
    assert "gift_card_purchase" in r.output and "k-ary RR" in r.output
    assert 8 <= len(DEMO_EVENTS) <= 12
    p0 = np.array([v[0] for v in DEMO_EVENTS.values()])
    p1 = np.array([v[1] for v in DEMO_EVENTS.values()])
    # 12 three-decimal probabilities summing to 1 exactly in decimal: each literal within u / 2
    # relative, the float sum (11 roundings): |sum - 1| <= (6 + 11) u
    assert abs(p0.sum() - 1) <= 17 * 2.0**-53 and abs(p1.sum() - 1) <= 17 * 2.0**-53


def test_design_with_labels_and_normalize():
    r = runner.invoke(
        app, ["design", "--p0", "a=1,b=2,c=7", "--p1", "c=4,b=3,a=3", "--eps", "1", "--normalize"]
    )
    assert r.exit_code == 0, r.output
    ref = ldpopt.optimal_mechanism([0.1, 0.2, 0.7], [0.3, 0.3, 0.4], 1.0)
    assert f"{ref.value:.6g}" in r.output
    assert "a, b" in r.output  # the low-ratio block, shown by label


def test_version_from_package_metadata():
    """``ldpopt --version`` and ``python -m ldpopt --version`` print the installed version."""
    expected = version("ldpopt")
    assert ldpopt.__version__ == expected
    r = subprocess.run(
        [sys.executable, "-m", "ldpopt", "--version"], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"ldpopt {expected}"
    h = subprocess.run([sys.executable, "-m", "ldpopt", "-h"], capture_output=True, text=True, timeout=60)
    assert h.returncode == 0 and "Usage" in h.stdout


PAIR = ["--p0", "0.1,0.9", "--p1", "0.5,0.5"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["design", *PAIR, "--eps", "1", "--bogus"], "No such option: --bogus"),
        (["design", *PAIR, "--eps", "abc"], "Invalid value for '--eps'"),
        (["decide", "problem.json"], "Missing option '--eps'"),
        (["sweep"], "Missing argument 'config'"),
        (["no-such-command"], "No such command 'no-such-command'"),
    ],
)
def test_usage_errors_are_one_line_with_status_2(args, message, tmp_path):
    """A bad option, value or command is bad input like any other: one line naming it and where
    the command's help is, exit status 2, nothing on stdout (not click's usage block)."""
    r = subprocess.run(
        [sys.executable, "-m", "ldpopt", *args], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert r.returncode == 2, r.stderr
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], r.stderr
    command = "ldpopt" if args[0] == "no-such-command" else f"ldpopt {args[0]}"
    assert lines[0].endswith(f"(see '{command} -h')"), r.stderr


#: the relative precision of every built-in divergence's value (README, "Design an optimal
#: mechanism": measured <= 1e-14 against 60-digit arithmetic, stated as 2e-13)
DOC_REL = 2e-13


def test_demo_writes_its_designs_as_json(tmp_path):
    """``ldpopt demo --json - --verbose``: stdout is the strict JSON alone (the tables on stderr), with the
    designs the tables show; each design is optimal for its own exponent."""
    r = subprocess.run(
        [sys.executable, "-m", "ldpopt", "demo", "--json", "-", "--verbose"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout, parse_constant=lambda c: pytest.fail(f"non-strict JSON token {c}"))
    assert "Designed for KL vs for Chernoff" in r.stderr
    p0 = {k: v[0] for k, v in DEMO_EVENTS.items()}
    p1 = {k: v[1] for k, v in DEMO_EVENTS.items()}
    assert doc["p0"] == p0 and doc["p1"] == p1
    u, v = np.array(list(p0.values())), np.array(list(p1.values()))
    for d in doc["designs"]:
        res = ldpopt.optimal_mechanism(p0, p1, d["eps"], "kl")
        # the command may take another of the solver's paths (a fresh process): each is within
        # fast_spr_err of the exact optimum
        assert within(
            "cli demo vs optimal_mechanism", d["value"], res.value, 2 * fast_spr_err(u, v, d["eps"], "kl")
        )
        assert d["num_outputs"] == res.num_outputs
        # the matrix is the channel of the labelled partition it reports
        mech = ldpopt.spr_mechanism(d["partition"], len(p0), d["eps"])
        assert np.array_equal(mech.matrix, np.array(d["matrix"]))
    assert doc["budget_3_eps_2"]["num_outputs"] <= 3
    by_eps: dict = {}
    for row in doc["kl_vs_chernoff"]:
        by_eps.setdefault(row["eps"], {})[row["design"]] = row
    assert sorted(by_eps) == sorted(d["eps"] for d in doc["designs"])
    for eps, rows in by_eps.items():
        kl, ch = rows["KL-optimal"], rows["Chernoff-optimal"]
        # each design wins on its own exponent: the KL design's KL is the optimum (within its
        # error bound, plus the channel evaluation's), and no mechanism's Chernoff information
        # exceeds the Chernoff solver's certified upper bound
        bound = fast_spr_err(u, v, eps, "kl") + DOC_REL * kl["kl"]
        assert kl["kl"] >= ch["kl"] - bound, (eps, kl, ch)
        certified = ldpopt.optimal_mechanism(p0, p1, eps, "chernoff").upper_bound
        assert kl["chernoff"] <= certified * (1 + DOC_REL), (eps, kl, certified)


def test_demo_in_a_fresh_environment_compiles_nothing(tmp_path):
    """``ldpopt demo`` is the Quickstart's first command: with an empty numba cache (a fresh
    install) it answers from the readable solvers, the Chernoff comparison too, and compiles no
    kernel (the compiled Chernoff search alone is ~13 kernels, 10-17 s on 2 cores)."""
    cache = tmp_path / "numba-cache"
    cache.mkdir()
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    r = subprocess.run(
        [sys.executable, "-m", "ldpopt", "demo"], capture_output=True, text=True, timeout=300, env=env
    )
    assert r.returncode == 0, r.stderr
    assert "Designed for KL vs for Chernoff" in r.stdout
    assert [p.name for p in cache.rglob("*.nbi")] == []
