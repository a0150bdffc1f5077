"""CLI: export -> privatize -> test -> samplesize, and clean failures that leave nothing behind."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import ldpopt
from ldpopt.cli import app
from ldpopt.deploy.files import load_mechanism
from ldpopt.deploy.sizing import sample_size
from ldpopt.deploy.testing import LikelihoodRatioTest

runner = CliRunner()

LABELS = [
    "page",
    "search",
    "cart",
    "checkout",
    "login",
    "reset",
    "profile",
    "gift",
    "address",
    "review",
    "help",
    "api",
]
P0 = [0.31, 0.14, 0.11, 0.06, 0.08, 0.012, 0.028, 0.01, 0.02, 0.09, 0.09, 0.05]
P1 = [0.12, 0.06, 0.07, 0.11, 0.05, 0.09, 0.08, 0.15, 0.10, 0.03, 0.04, 0.10]


def spec(p):
    return ",".join(f"{lab}={v}" for lab, v in zip(LABELS, p, strict=False))


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def files(tmp_path):
    mfile = tmp_path / "M.json"
    r = run("export", "--p0", spec(P0), "--p1", spec(P1), "--eps", 1.0, "--output", mfile)
    assert r.exit_code == 0, r.output
    rng = np.random.default_rng(0)
    data = tmp_path / "data.csv"
    events = rng.choice(LABELS, size=400, p=np.array(P1) / sum(P1))
    pd.DataFrame({"event": events, "user": np.arange(400)}).to_csv(data, index=False)
    return tmp_path, mfile, data, events


def no_temporaries(folder):
    return not [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_export_writes_labelled_file(files):
    tmp, mfile, _, _ = files
    f = load_mechanism(mfile)
    assert f.mechanism.labels == tuple(LABELS)
    res = ldpopt.optimal_mechanism(
        dict(zip(LABELS, P0, strict=False)), dict(zip(LABELS, P1, strict=False)), 1.0, method="dp"
    )
    assert f.mechanism.partition == res.partition
    assert np.array_equal(f.p0, np.array(P0))


def test_privatize_test_pipeline(files):
    tmp, mfile, data, events = files
    out = tmp / "reports.csv"
    r = run(
        "privatize", "--mechanism", mfile, "--input", data, "--column", "event", "--output", out, "--seed", 3
    )
    assert r.exit_code == 0, r.output
    assert "gift" in r.output  # block labels shown in the table
    reports = pd.read_csv(out)
    # the other columns are kept, the symbol column is replaced by the reports
    # and what each report means (the input symbols of its block) next to it
    assert list(reports.columns) == ["report", "report_block", "user"] and len(reports) == 400
    # the CLI's reports are the library's reports for the same seed
    mech = load_mechanism(mfile).mechanism
    expected = mech.privatize(events, rng=np.random.default_rng(3))
    assert np.array_equal(reports["report"].to_numpy(), expected)
    blocks = ["{" + ", ".join(str(mech.labels[i]) for i in b) + "}" for b in mech.partition]
    assert reports["report_block"].tolist() == [blocks[j] for j in expected]

    r = run("test", "--mechanism", mfile, "--reports", out, "--alpha", 0.05, "--prior", 0.2)
    assert r.exit_code == 0, r.output
    lrt = LikelihoodRatioTest(mech, P0, P1, 0.05).decide(expected)
    assert f"decision: {lrt.decision}" in r.output
    assert "gift" in r.output and "p-value" in r.output and "Bayes decision" in r.output
    assert lrt.decision == 1  # 400 reports drawn under P1 (power ~ 1)
    assert "not consistent with P0" in r.output and "look like P1" not in r.output
    assert "fit P1 better than P0" in r.output  # the LLR is positive here
    # the reports read back by what they mean: the same test
    by_block = run("test", "--mechanism", mfile, "--reports", out, "--column", "report_block", "--prior", 0.2)
    assert by_block.exit_code == 0 and by_block.output == r.output


def test_test_with_explicit_hypotheses_and_mismatch_warning(files, tmp_path):
    _, mfile, data, _ = files
    out = tmp_path / "r.csv"
    run("privatize", "--mechanism", mfile, "--input", data, "--column", "event", "--output", out, "--seed", 1)
    r = run("test", "--mechanism", mfile, "--reports", out, "--p0", spec(P0), "--p1", spec(P1))
    assert r.exit_code == 0 and "warning" not in r.output
    swapped = run("test", "--mechanism", mfile, "--reports", out, "--p0", spec(P1), "--p1", spec(P0))
    assert swapped.exit_code == 0 and "digest mismatch" in swapped.output


def test_test_refuses_a_file_whose_partition_contradicts_its_matrix(files, tmp_path):
    import json

    from ldpopt.deploy.files import content_digest

    _, mfile, data, _ = files
    out = tmp_path / "r.csv"
    run("privatize", "--mechanism", mfile, "--input", data, "--column", "event", "--output", out, "--seed", 1)
    payload = json.loads(mfile.read_text())
    payload["partition"] = payload["partition"][::-1]  # outputs would be labelled with the wrong symbols
    payload["content_sha256"] = content_digest(payload)
    mfile.write_text(json.dumps(payload))
    expect_failure(
        run("test", "--mechanism", mfile, "--reports", out), r"partition block 0 .* contradicts matrix"
    )


def test_samplesize_comparison_line(files):
    _, mfile, _, _ = files
    q0, q1 = "a=0.4,b=0.3,c=0.15,d=0.1,e=0.05", "a=0.1,b=0.15,c=0.2,d=0.25,e=0.3"
    r = run("samplesize", "--p0", q0, "--p1", q1, "--eps", "1", "--alpha", 0.05, "--beta", 0.05)
    assert r.exit_code == 0, r.output
    m = re.search(
        r"k-RR needs ([0-9.]+)x more reports than the optimum at eps = 1 \((\d+) vs (\d+)\)", r.output
    )
    assert m, r.output
    d0 = {"a": 0.4, "b": 0.3, "c": 0.15, "d": 0.1, "e": 0.05}
    d1 = {"a": 0.1, "b": 0.15, "c": 0.2, "d": 0.25, "e": 0.3}
    opt = ldpopt.optimal_mechanism(d0, d1, 1.0, method="dp").mechanism
    n_opt = sample_size(opt, d0, d1, 0.05, 0.05).n
    n_rr = sample_size(ldpopt.randomized_response(5, 1.0), d0, d1, 0.05, 0.05).n
    assert (int(m.group(2)), int(m.group(3))) == (n_rr, n_opt)
    # printed with :.1f: within half a unit of the last digit (0.05) of the ratio, plus its repr
    assert abs(float(m.group(1)) - n_rr / n_opt) <= 0.05 * (1 + 4 * 2.0**-53)
    # hypotheses and eps from the file
    r = run("samplesize", "--mechanism", mfile)
    assert r.exit_code == 0 and "eps = 1" in r.output and "file M.json needs as many reports" in r.output


def expect_failure(result, pattern):
    assert result.exit_code == 2, result.output
    err = result.stderr
    assert re.search(pattern, err), err
    assert len(err.strip().splitlines()) == 1  # one line, no traceback


def test_privatize_failures_leave_nothing_behind(files, tmp_path):
    _, mfile, data, _ = files
    out = tmp_path / "out" / "reports.csv"
    out.parent.mkdir()
    out.write_text("previous\n")

    bad = tmp_path / "bad.csv"
    bad.write_text("event\npage\nfoo\n")
    expect_failure(
        run("privatize", "--mechanism", mfile, "--input", bad, "--output", out),
        r"unknown input symbol 'foo' in column 'event'.*data row 2",
    )
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    expect_failure(run("privatize", "--mechanism", mfile, "--input", empty, "--output", out), "is empty")
    header = tmp_path / "header.csv"
    header.write_text("event\n")
    expect_failure(run("privatize", "--mechanism", mfile, "--input", header, "--output", out), "no data rows")
    expect_failure(
        run("privatize", "--mechanism", mfile, "--input", data, "--output", out), "several columns"
    )
    expect_failure(
        run("privatize", "--mechanism", mfile, "--input", data, "--column", "evnt", "--output", out),
        "column 'evnt' not found",
    )
    expect_failure(
        run("privatize", "--mechanism", mfile, "--input", tmp_path / "none.csv", "--output", out),
        "no such file",
    )
    broken = tmp_path / "broken.json"
    broken.write_text(mfile.read_text().replace('"eps": 1.0', '"eps": 3.0'))
    expect_failure(
        run("privatize", "--mechanism", broken, "--input", data, "--column", "event", "--output", out),
        "digest mismatch",
    )
    assert out.read_text() == "previous\n"  # untouched
    assert no_temporaries(out.parent)


def test_test_failures(files, tmp_path):
    _, mfile, data, _ = files
    reports = tmp_path / "reports.csv"
    reports.write_text("report\n0\n1\n7\n")
    expect_failure(run("test", "--mechanism", mfile, "--reports", reports), r"unknown report '7'")
    nodist = tmp_path / "nodist.json"
    assert (
        run(
            "export",
            "--p0",
            spec(P0),
            "--p1",
            spec(P1),
            "--eps",
            1.0,
            "--output",
            nodist,
            "--no-distributions",
        ).exit_code
        == 0
    )
    reports.write_text("report\n0\n1\n")
    expect_failure(run("test", "--mechanism", nodist, "--reports", reports), "does not store p0/p1")
    expect_failure(
        run("test", "--mechanism", mfile, "--reports", reports, "--p0", spec(P0)), "both --p0 and --p1"
    )
    expect_failure(
        run("test", "--mechanism", mfile, "--reports", reports, "--p0", "zzz=1", "--p1", spec(P1)),
        "unknown label 'zzz'",
    )
    expect_failure(run("test", "--mechanism", mfile, "--reports", reports, "--alpha", 2), "alpha")


def test_unlabelled_mechanism_round_trip(tmp_path):
    mfile = tmp_path / "u.json"
    assert (
        run("export", "--p0", "0.5,0.3,0.2", "--p1", "0.2,0.3,0.5", "--eps", 2, "--output", mfile).exit_code
        == 0
    )
    data = tmp_path / "d.csv"
    data.write_text("x\n0\n1\n2\n2\n")
    out = tmp_path / "r.csv"
    r = run("privatize", "--mechanism", mfile, "--input", data, "--output", out)
    assert r.exit_code == 0, r.output
    assert len(pd.read_csv(out)) == 4
    data.write_text("x\n0\n3\n")
    expect_failure(
        run("privatize", "--mechanism", mfile, "--input", data, "--output", out),
        r"unknown input symbol '3'.*integers 0\.\.2",
    )
    expect_failure(
        run("export", "--p0", "0.5,x", "--p1", "0.5,0.5", "--eps", 1, "--output", tmp_path / "z.json"), "p0"
    )
    assert not (tmp_path / "z.json").exists()


def test_integer_labels_through_the_cli(tmp_path):
    mech = ldpopt.randomized_response(3, 1.0, labels=[10, 20, 30])
    mfile = tmp_path / "rr.json"
    mech.to_json(mfile, p0=[0.6, 0.3, 0.1], p1=[0.1, 0.3, 0.6])
    data = tmp_path / "d.csv"
    data.write_text("code\n10\n30\n30\n20\n30\n")
    out = tmp_path / "r.csv"
    r = run("privatize", "--mechanism", mfile, "--input", data, "--output", out, "--seed", 0)
    assert r.exit_code == 0, r.output
    assert set(pd.read_csv(out)["report"]) <= {10, 20, 30}
    r = run("test", "--mechanism", mfile, "--reports", out, "--prior", 0.5)
    assert r.exit_code == 0, r.output
    assert "Bayes decision" in r.output
    data.write_text("code\n10\n0\n")
    expect_failure(
        run("privatize", "--mechanism", mfile, "--input", data, "--output", out),
        r"unknown input symbol '0'.*10, 20, 30",
    )


def test_samplesize_equal_hypotheses():
    # even the optimal mechanism cannot tell equal hypotheses apart: every row says "never"
    r = run("samplesize", "--p0", "a=0.5,b=0.5", "--p1", "a=0.5,b=0.5", "--eps", "1")
    assert r.exit_code == 0, r.output
    assert "optimal (SPR, KL) cannot tell P0 from P1 at eps = 1" in r.output
    assert "k-RR cannot tell P0 from P1 at eps = 1" in r.output


def run_process(*args):
    """The real command in a subprocess (exit status, stdout and stderr as a user sees them)."""
    return subprocess.run(
        [sys.executable, "-m", "ldpopt", *map(str, args)], capture_output=True, text=True, timeout=120
    )


def test_a_negative_seed_is_a_one_line_error_naming_the_option(files, tmp_path):
    _, mfile, data, _ = files
    out = tmp_path / "reports.csv"
    for args in (
        ("privatize", "--mechanism", mfile, "--input", data, "--column", "event", "--output", out),
        ("audit", "--mechanism", mfile, "--n", 100),
    ):
        r = run_process(*args, "--seed", "-1")
        assert r.returncode == 2, r.stderr
        assert "--seed must be >= 0, got -1" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_samplesize_json_writes_an_infinite_eps_as_design_does():
    """eps = inf (no privacy) is the string "inf" in the JSON, as in design's; not null, which
    reads as "no eps"."""
    pair = ("--p0", "0.5,0.3,0.2", "--p1", "0.2,0.3,0.5")
    r = run_process("samplesize", *pair, "--eps", "1,inf", "--json", "-")
    assert r.returncode == 0, r.stderr

    def refuse(name):
        raise ValueError(f"non-standard JSON constant {name}")

    rows = json.loads(r.stdout, parse_constant=refuse)["rows"]
    assert [row["eps"] for row in rows] == [1.0] * 3 + ["inf"] * 3
    # the optimum without privacy: the identity channel, sized independently of the CLI
    p0, p1 = [0.5, 0.3, 0.2], [0.2, 0.3, 0.5]
    identity = ldpopt.optimal_mechanism(p0, p1, math.inf, method="dp").mechanism
    assert rows[3]["n"] == sample_size(identity, p0, p1, 0.05, 0.05).n


def test_export_refuses_two_documents_on_stdout_and_writes_one_alone(tmp_path):
    """--output - and --json - would write two JSON documents one after the other (which parse as
    neither): a one-line error, exit 2, nothing written. --output - alone: the mechanism file."""
    pair = ("--p0", "0.5,0.3,0.2", "--p1", "0.2,0.3,0.5", "--eps", "1")
    r = run_process("export", *pair, "--output", "-", "--json", "-")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip() == (
        "error: --output and --json both name standard output ('-'); give a file for all but one"
    )
    r = run_process("export", *pair, "--output", "-")
    assert r.returncode == 0, r.stderr
    (tmp_path / "m.json").write_text(r.stdout)
    assert load_mechanism(tmp_path / "m.json").mechanism.num_inputs == 3
    assert "wrote" not in r.stderr


def test_a_bad_prior_is_named_by_its_option(files, tmp_path):
    _, mfile, data, _ = files
    out = tmp_path / "reports.csv"
    r = run("privatize", "--mechanism", mfile, "--input", data, "--column", "event", "--output", out)
    assert r.exit_code == 0, r.output
    for prior in ("nan", "2", "0"):
        p = run_process("test", "--mechanism", mfile, "--reports", out, "--prior", prior)
        assert p.returncode == 2, p.stderr
        assert p.stderr.strip().splitlines() == [
            f"error: --prior must be in (0, 1), got --prior={float(prior)!r}"
        ], p.stderr
