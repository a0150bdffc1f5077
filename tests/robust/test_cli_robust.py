"""``ldpopt design --robust`` / ``--from-counts`` and ``ldpopt reproduce robust`` (real subprocesses)."""

from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from reference import brute_force_optimum, naive_divergence

SRC = str(Path(__file__).resolve().parents[2] / "src")
P0, P1 = ".04,.09,.22,.47,.18", ".25,.49,.13,.10,.03"


def _run(*args, cwd=None):
    env = {**os.environ, "PYTHONPATH": SRC}
    return subprocess.run(
        [sys.executable, "-m", "ldpopt", *args], capture_output=True, text=True, env=env, cwd=cwd
    )


def test_design_robust_json_on_stdout():
    r = _run("design", "--p0", P0, "--p1", P1, "--eps", "1", "--robust", "tv:0.02,0.05", "--json", "-")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)["robust"]
    assert out["certified"] and out["value"] <= out["upper_bound"]
    assert out["plug_in_worst_case"] <= out["upper_bound"]
    lf0, lf1 = (np.array(x) for x in out["least_favourable"])
    assert 0.5 * np.abs(lf0 - np.array([0.04, 0.09, 0.22, 0.47, 0.18])).sum() <= 0.02 + 1e-12
    s = brute_force_optimum(lf0, lf1, 1.0, lambda u, v: naive_divergence(u, v, "kl"))
    assert abs(s - out["upper_bound"]) <= 1e-12


def test_design_from_counts_table():
    r = _run(
        "design",
        "--p0",
        "40,90,220,470,180",
        "--p1",
        "250,490,130,100,30",
        "--eps",
        "2",
        "--robust",
        "kl",
        "--from-counts",
    )
    assert r.returncode == 0, r.stderr
    assert "plug-in" in r.stdout and "robust" in r.stdout and "Worst case over kl:" in r.stdout


def test_design_robust_bad_input_exit_2():
    for extra in (
        ["--robust", "foo:1"],
        ["--robust", "tv:2"],
        ["--robust", "tv:0.1", "--divergence", "chernoff"],
        ["--from-counts"],
        ["--robust", "tv:0.1", "--from-counts"],
    ):
        r = _run("design", "--p0", ".5,.5", "--p1", ".2,.8", "--eps", "1", *extra)
        assert r.returncode == 2, (extra, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr and r.stderr.strip().count("\n") == 0


def test_from_counts_errors_name_the_counts_and_the_option_not_the_api():
    """Counts that are not whole numbers, or a bad --confidence, are refused in one line in the
    command line's words: P0/P1 and --confidence, not the API's counts0 or a numpy repr."""
    cases = [
        (["--p0", "0.5,0.3,0.2", "--p1", "5,3,2"], "--from-counts: P0 must be non-negative integers"),
        (["--p0", "5,3,2", "--p1", "2,-3,5"], "--from-counts: P1 must be non-negative integers"),
        (["--p0", "5,3,2", "--p1", "2,3,5", "--confidence", "2"], "--confidence must be in (0, 1)"),
    ]
    for args, message in cases:
        r = _run("design", *args, "--eps", "1", "--from-counts", "--robust", "tv")
        assert r.returncode == 2, (args, r.stderr)
        line = " ".join(r.stderr.split())
        assert r.stderr.strip().count("\n") == 0 and message in line, (args, r.stderr)
        assert "counts0" not in line and "counts1" not in line and "array(" not in line, line


def test_reproduce_robust_quick(tmp_path):
    r = _run("reproduce", "robust", "--quick", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["quick"] and summary["certified_fraction"] == 1.0
    assert summary["max_gap"] <= 1e-8 and summary["max_robust_gain"] >= 1.0 - 1e-12
    for suffix in (".png", ".svg", ".csv"):
        assert (tmp_path / f"robust{suffix}").stat().st_size > 0
    # each row names its normaliser: the centres' divergence on the radius curves, the true
    # pair's on the from_counts rows (n given)
    with (tmp_path / "robust.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {(r["n"] == "", r["normalized_by"]) for r in rows} == {(True, "estimate"), (False, "truth")}
    for r in rows:  # a division and a product: two roundings (~2e-16 relative), CSV round-trips
        back = float(r["normalized"]) * float(r["normalizer"])
        assert math.isclose(back, float(r["worst_case"]), rel_tol=1e-12)


def test_design_robust_tv_divergence():
    r = _run(
        "design",
        "--p0",
        P0,
        "--p1",
        P1,
        "--eps",
        "2",
        "--robust",
        "tv:0.02,0.05",
        "--divergence",
        "tv",
        "--json",
        "-",
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)["robust"]
    assert out["certified"] and out["value"] <= out["upper_bound"]
    lf0, lf1 = (np.array(x) for x in out["least_favourable"])
    assert 0.5 * np.abs(lf1 - np.array([0.25, 0.49, 0.13, 0.10, 0.03])).sum() <= 0.05 + 1e-12
    s = brute_force_optimum(lf0, lf1, 2.0, lambda u, v: naive_divergence(u, v, "tv"))
    assert abs(s - out["upper_bound"]) <= 1e-13


def test_design_from_counts_read_from_a_file_equals_inline(tmp_path):
    """``--from FILE`` (the one pair reader) feeds ``--from-counts`` the same counts as inline."""
    counts0, counts1 = [40, 90, 220, 470, 180], [250, 490, 130, 100, 30]
    rows = ["kind,normal,fraud"] + [
        f"c{i},{a},{b}" for i, (a, b) in enumerate(zip(counts0, counts1, strict=True))
    ]
    (tmp_path / "counts.csv").write_text("\n".join(rows) + "\n")
    common = ("--eps", "2", "--robust", "tv", "--from-counts", "--json", "-")
    from_file = _run(
        "design", "--from", "counts.csv", "--p0-col", "normal", "--p1-col", "fraud", *common, cwd=tmp_path
    )
    inline = _run(
        "design",
        "--p0",
        ",".join(map(str, counts0)),
        "--p1",
        ",".join(map(str, counts1)),
        *common,
        cwd=tmp_path,
    )
    assert from_file.returncode == 0 and inline.returncode == 0, from_file.stderr + inline.stderr
    a, b = json.loads(from_file.stdout)["robust"], json.loads(inline.stdout)["robust"]
    # the same counts through the same solver: the same numbers
    assert a["value"] == b["value"] and a["upper_bound"] == b["upper_bound"]
    assert a["uncertainty"] == b["uncertainty"] and a["certified"]
