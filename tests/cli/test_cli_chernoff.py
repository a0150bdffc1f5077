"""The Chernoff objective on the command line: design, demo, reproduce, sweep configs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

import ldpopt
from ldpopt.cli import app
from ldpopt.cli._common import solve
from ldpopt.cli.design import DEMO_EPS, DEMO_EVENTS
from ldpopt.sweeps.config import dirichlet_pair, parse_config

runner = CliRunner()
SRC = str(Path(__file__).resolve().parents[2] / "src")


def test_design_chernoff_json_on_stdout():
    env = {**os.environ, "PYTHONPATH": SRC}
    args = ["design", "--p0", "0.1,0.2,0.3,0.4", "--p1", "0.4,0.3,0.2,0.1", "--eps", "1"]
    r = subprocess.run(
        [sys.executable, "-m", "ldpopt", *args, "--divergence", "chernoff", "--json", "-", "--verbose"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    # the command line's own solver call (cli._common.solve: the readable program for small k),
    # so the same floats, written by repr: the same bits
    ref = solve([0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1], 1.0, "chernoff")
    assert data["value"] == ref.value and data["upper_bound"] == ref.upper_bound and data["lam"] == ref.lam
    assert data["divergence"] == "chernoff"
    assert "certified gap" in r.stderr


def test_demo_shows_the_chernoff_design_next_to_kl():
    r = runner.invoke(app, ["demo"])
    assert r.exit_code == 0, r.output
    assert "Chernoff-optimal" in r.output and "KL-optimal" in r.output
    p0 = {k: v[0] for k, v in DEMO_EVENTS.items()}
    p1 = {k: v[1] for k, v in DEMO_EVENTS.items()}
    best = ldpopt.optimal_mechanism(p0, p1, DEMO_EPS[-1], "chernoff")
    assert f"{best.value:.6g}" in r.output


def test_reproduce_chernoff_quick(tmp_path):
    r = runner.invoke(
        app, ["reproduce", "chernoff", "--quick", "--k", "6", "--trials", "3", "--out", str(tmp_path)]
    )
    assert r.exit_code == 0, r.output
    for suffix in (".png", ".svg", ".csv"):
        assert (tmp_path / f"chernoff{suffix}").stat().st_size > 0
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["quick"] is True
    # the Chernoff-optimal design is never beaten by the KL-optimal one (up to the certificate)
    assert s["max_gain_over_kl_design"]["ratio"] >= 1.0 - 1e-9
    assert 0.0 <= s["max_certificate_gap"] <= 1e-9
    assert s["solves_per_instance"]["6"] >= 1


def test_sweep_config_runs_chernoff(tmp_path):
    cfg = {
        "instances": {"generator": "dirichlet", "k": 4, "trials": 2, "seed": 1},
        "grid": {
            "eps": [1.0, 3.0],
            "divergences": ["chernoff"],
            "max_outputs": [0, 2],
            "baselines": ["binary", "rr"],
        },
    }
    assert parse_config(cfg).divergences == ("chernoff",)
    df = ldpopt.run_sweep(cfg, tmp_path, scheduler="inline", quiet=True)
    spec = parse_config(cfg).instances.spec
    for row in df.itertuples():
        p, q = dirichlet_pair(spec, int(row.instance_index))
        budget = None if row.budget == 0 else int(row.budget)
        if row.mechanism == "optimal":
            ref = ldpopt.optimal_mechanism(p, q, row.eps, "chernoff", max_outputs=budget).value
        elif row.mechanism == "binary":
            ref = ldpopt.binary_mechanism(p, q, row.eps).utility(p, q, "chernoff")
        else:
            ref = ldpopt.randomized_response(4, row.eps).utility(p, q, "chernoff")
        # the same curve maximisation of the same outputs (block sums in another order: ~1e-16)
        assert abs(row.value - ref) <= 1e-13 * max(1.0, ref), row
