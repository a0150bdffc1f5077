"""CLI: ``ldpopt estimate`` and ``ldpopt design --shuffle``.

The JSON-on-stdout check runs the real command in a subprocess; the others use typer's runner
(same code path, without a new interpreter per call)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from typer.testing import CliRunner

from cli_subprocess import ldpopt_cmd
from ldpopt.cli import app
from ldpopt.deploy.estimate import frequencies, mixture_proportion
from ldpopt.deploy.files import load_mechanism
from ldpopt.deploy.shuffle import central_epsilon

LABELS = ["page", "search", "cart", "checkout", "login", "reset"]
P0 = [0.40, 0.20, 0.15, 0.10, 0.10, 0.05]
P1 = [0.10, 0.10, 0.15, 0.25, 0.15, 0.25]


def spec(p):
    return ",".join(f"{lab}={v}" for lab, v in zip(LABELS, p, strict=True))


runner = CliRunner()


def run(*args, cwd):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return runner.invoke(app, [str(a) for a in args])
    finally:
        os.chdir(old)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("estimate")
    r = run("export", "--p0", spec(P0), "--p1", spec(P1), "--eps", 2.0, "--output", "M.json", cwd=folder)
    assert r.exit_code == 0, r.output
    mech = load_mechanism(folder / "M.json").mechanism
    rng = np.random.default_rng(0)
    x = rng.choice(LABELS, size=600, p=0.7 * np.array(P0) + 0.3 * np.array(P1))
    reports = mech.privatize(x, rng=rng)
    (folder / "reports.csv").write_text("report\n" + "\n".join(map(str, reports)) + "\n")
    return folder, mech, reports


def test_estimate_writes_json_to_stdout(files):
    folder, mech, reports = files
    r = ldpopt_cmd("estimate", "--mechanism", "M.json", "--reports", "reports.csv", "--json", "-", cwd=folder)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    p0 = dict(zip(LABELS, P0, strict=True))
    p1 = dict(zip(LABELS, P1, strict=True))
    mix = mixture_proportion(mech, reports, p0=p0, p1=p1)
    assert data["mixture_proportion"]["value"] == pytest.approx(mix.value, abs=1e-12)
    assert data["mixture_proportion"]["lower"] <= mix.value <= data["mixture_proportion"]["upper"]
    freq = frequencies(mech, reports)
    assert data["frequencies"]["value"] == pytest.approx(freq.value.tolist(), abs=1e-12)
    assert data["n"] == 600


def test_estimate_prints_a_table_and_fails_cleanly(files):
    folder, _, _ = files
    r = run("estimate", "--mechanism", "M.json", "--reports", "reports.csv", "--confidence", 0.9, cwd=folder)
    assert r.exit_code == 0 and "Mixing proportion" in r.stdout and "90%" in r.stdout
    bad = run("estimate", "--mechanism", "M.json", "--reports", "missing.csv", cwd=folder)
    assert bad.exit_code == 2 and "Traceback" not in bad.stderr and "missing.csv" in bad.stderr
    bad = run("estimate", "--mechanism", "M.json", "--reports", "reports.csv", "--confidence", 2, cwd=folder)
    assert bad.exit_code == 2 and "confidence" in bad.stderr


def test_design_shuffle_designs_at_the_largest_local_eps(tmp_path):
    r = run(
        "design", "--p0", spec(P0), "--p1", spec(P1), "--shuffle", "n=100000,delta=1e-6,eps=0.5",
        "--json", "design.json", cwd=tmp_path,
    )  # fmt: skip
    # a file, not "-": under typer's runner, "--json -" would pin the shared console to the
    # runner's (later closed) stdout for the rest of the test session
    assert r.exit_code == 0, r.output
    assert "Shuffled deployment" in r.stdout
    data = json.loads((tmp_path / "design.json").read_text())
    sh = data["shuffle"]
    assert data["eps"] == sh["local_eps"] > 0.5
    assert sh["central_eps"] <= 0.5
    assert central_epsilon(sh["local_eps"], 100_000, 1e-6).value <= 0.5 + 1e-9
    assert sh["rr_outputs"] == data["num_outputs"] and sh["central_eps_rr"] <= sh["central_eps"]
    both = run(
        "design",
        "--p0",
        spec(P0),
        "--p1",
        spec(P1),
        "--eps",
        1,
        "--shuffle",
        "n=10,delta=1e-6,eps=1",
        cwd=tmp_path,
    )
    assert both.exit_code == 2 and "exactly one" in both.stderr
    bad = run("design", "--p0", spec(P0), "--p1", spec(P1), "--shuffle", "n=10,eps=1", cwd=tmp_path)
    assert bad.exit_code == 2 and "delta" in bad.stderr and "Traceback" not in bad.stderr


def test_estimate_from_file_equals_inline_and_keeps_stdout_json(files):
    folder, mech, reports = files
    q0 = [0.30, 0.20, 0.15, 0.15, 0.10, 0.10]  # not the stored P0: a warning, on stderr
    lines = [f"{lab},{a},{b}" for lab, a, b in zip(LABELS, q0, P1, strict=True)]
    (folder / "q.csv").write_text("label,p0,p1\n" + "\n".join(lines) + "\n")
    r = ldpopt_cmd("estimate", "--mechanism", "M.json", "--reports", "reports.csv", "--from", "q.csv",
                   "--label-col", "label", "--json", "-", cwd=folder)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "digest mismatch" in r.stderr
    data = json.loads(r.stdout)
    mix = mixture_proportion(
        mech, reports, p0=dict(zip(LABELS, q0, strict=True)), p1=dict(zip(LABELS, P1, strict=True))
    )
    assert data["mixture_proportion"]["value"] == pytest.approx(mix.value, abs=1e-12)
    inline = run("estimate", "--mechanism", "M.json", "--reports", "reports.csv", "--p0", spec(q0),
                 "--p1", spec(P1), "--json", "i.json", cwd=folder)  # fmt: skip
    assert inline.exit_code == 0, inline.output
    assert json.loads((folder / "i.json").read_text()) == data
    bad = run("estimate", "--mechanism", "nowhere.json", "--reports", "reports.csv", cwd=folder)
    assert bad.exit_code == 2 and "--mechanism nowhere.json: no such file" in bad.stderr


@pytest.mark.parametrize("confidence", ["0.4", "nan", "1", "0"])
def test_a_confidence_out_of_range_names_its_range(files, confidence):
    """Every refused --confidence gets the one range it has, (0.5, 1); never the (0, 1) of a plain
    probability level, which would call 0.4 valid."""
    folder = files[0]
    r = ldpopt_cmd(
        "estimate",
        "--mechanism",
        "M.json",
        "--reports",
        "reports.csv",
        "--confidence",
        confidence,
        cwd=folder,
    )
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines() == [
        f"error: --confidence must be a number in (0.5, 1), got --confidence={float(confidence)!r}"
    ]
