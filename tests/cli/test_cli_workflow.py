"""The shell workflow of docs/deployment.md, end to end in subprocesses: a CSV of 30 categories
with zero counts -> design -> export -> privatize (with a user_id column) -> test -> samplesize."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import ldpopt
from ldpopt.deploy.files import load_mechanism

K = 30
#: ``test --exit-code``: H0 rejected
EXIT_REJECT = 10


#: the source tree under test, first on the subprocesses' path (they run in other directories)
SRC = str(Path(ldpopt.__file__).resolve().parents[1])
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")]))


def run(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "ldpopt", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=cwd,
        env=ENV,
    )


def strict_json(text):
    def refuse(name):
        raise ValueError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """counts.csv: category, normal, fraud counts (zeros in both columns), and two user files."""
    d = tmp_path_factory.mktemp("workflow")
    rng = np.random.default_rng(7)
    normal = rng.integers(0, 200, K)
    fraud = rng.integers(0, 200, K)
    normal[[0, 5]] = 0  # categories never seen among normal users
    fraud[[1, 7, 9]] = 0  # ... or among fraudulent ones
    cats = [f"cat_{i:02d}" for i in range(K)]
    with open(d / "counts.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["category", "normal", "fraud", "comment"])
        w.writerows([c, int(a), int(b), "x"] for c, a, b in zip(cats, normal, fraud, strict=True))
    for name, counts in (("fraud_users.csv", fraud), ("normal_users.csv", normal)):
        draws = rng.choice(K, size=500, p=counts / counts.sum())
        with open(d / name, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["user_id", "category"])
            w.writerows([f"u{j}", cats[i]] for j, i in enumerate(draws))
    exact = {
        col: {c: Fraction(int(v), int(arr.sum())) for c, v in zip(cats, arr, strict=True)}
        for col, arr in (("p0", normal), ("p1", fraud))
    }
    return d, cats, exact


FROM = ["--from", "counts.csv", "--p0-col", "normal", "--p1-col", "fraud", "--label-col", "category"]


def test_design_json_dash_from_counts(workdir):
    d, cats, exact = workdir
    r = run("design", *FROM, "--normalize", "--eps", "1", "--json", "-", cwd=d)
    assert r.returncode == 0, r.stderr
    data = strict_json(r.stdout)  # stdout is the JSON document alone
    # the same problem through the API, from probabilities computed exactly from the counts
    p0 = {c: float(exact["p0"][c]) for c in cats}
    p1 = {c: float(exact["p1"][c]) for c in cats}
    ref = ldpopt.optimal_mechanism(p0, p1, 1.0)
    assert data["value"] == pytest.approx(ref.value, rel=1e-12)
    assert sorted(x for b in data["labelled_partition"] for x in b) == sorted(cats)
    assert data["input_divergence"] is None  # KL(P0||P1) is infinite: strict JSON writes null
    # without --normalize the counts are refused, naming the flag
    r = run("design", *FROM, "--eps", "1", cwd=d)
    assert r.returncode == 2 and "--normalize" in r.stderr and "Traceback" not in r.stderr


def test_export_privatize_test_samplesize(workdir):
    d, cats, exact = workdir
    r = run("export", *FROM, "--normalize", "--eps", "1", "--output", "mech.json", cwd=d)
    assert r.returncode == 0, r.stderr
    mf = load_mechanism(d / "mech.json")
    assert mf.mechanism.labels == tuple(cats)
    assert mf.p0.tolist() == [float(exact["p0"][c]) for c in cats]
    # the baselines too
    r = run("export", *FROM, "--normalize", "--eps", "1", "--output", "rr.json", "--mechanism", "rr", cwd=d)
    assert r.returncode == 0, r.stderr
    assert load_mechanism(d / "rr.json").mechanism.num_outputs == K

    for seed, (users, expected) in enumerate((("fraud_users.csv", EXIT_REJECT), ("normal_users.csv", 0))):
        out = f"reports_{users}"
        r = run(
            "privatize",
            "--mechanism",
            "mech.json",
            "--input",
            users,
            "--column",
            "category",
            "--output",
            out,
            "--seed",
            str(seed),
            cwd=d,
        )
        assert r.returncode == 0, r.stderr
        with open(d / users) as fh:
            ids = [row["user_id"] for row in csv.DictReader(fh)]
        with open(d / out) as fh:
            rows = list(csv.DictReader(fh))
        assert [row["user_id"] for row in rows] == ids  # each user next to its report
        # the raw category is not written out; what each report means is
        assert set(rows[0]) == {"user_id", "report", "report_block"}
        # 500 reports: the level-0.01 test has size <= 0.01 and power > 0.9999 here, so a wrong
        # decision has probability below 0.01; the reports' seed is fixed (the OS CSPRNG would make
        # this a 1-in-100 failure of the H0 case)
        r = run(
            "test",
            "--mechanism",
            "mech.json",
            "--reports",
            out,
            "--alpha",
            "0.01",
            "--exit-code",
            "--json",
            "-",
            cwd=d,
        )
        assert r.returncode == expected, r.stderr
        data = strict_json(r.stdout)
        assert data["reject_h0"] is (expected == EXIT_REJECT)
        assert sum(o["count"] for o in data["outputs"]) == 500
        if expected:  # without --exit-code the decision does not change the status
            r = run("test", "--mechanism", "mech.json", "--reports", out, "--alpha", "0.01", cwd=d)
            assert r.returncode == 0 and "reject H0" in r.stdout, r.stderr

    r = run("samplesize", "--mechanism", "mech.json", "--json", "-", cwd=d)
    assert r.returncode == 0, r.stderr
    rows = {row["mechanism"]: row for row in strict_json(r.stdout)["rows"]}
    # the file holds the KL-optimal mechanism at the file's eps: the same sample size
    assert rows["file mech.json"]["n"] == rows["optimal (SPR, KL)"]["n"] > 0


def test_plain_help_and_stdout_outputs(workdir):
    d, cats, _ = workdir
    for cmd in (["decide", "-h"], ["design", "--help"], ["-h"]):
        r = run(*cmd, cwd=d)
        assert r.returncode == 0 and r.stdout.startswith("Usage: ldpopt")
        assert "<bool>" not in r.stdout and "{problem}" not in r.stdout and "<float>" not in r.stdout
    r = run("export", *FROM, "--normalize", "--eps", "1", "--output", "-", cwd=d)
    assert r.returncode == 0, r.stderr
    assert strict_json(r.stdout)["labels"] == cats  # the mechanism file alone on stdout
