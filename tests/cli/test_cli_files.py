"""A user's own files in, machine-readable results out: --from/--normalize, privatize's columns and
header rule, export's baselines, decide --mechanism-out, --json on every computing command, CSV
tables when piped, and the reproducers that used to be tracebacks (one-line errors, exit 2)."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import ldpopt
from ldpopt.cli import app
from ldpopt.decision import DecisionProblem, optimal_channel
from ldpopt.deploy.files import load_mechanism

runner = CliRunner()


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


def ok(r):
    assert r.exit_code == 0, r.output
    return r


def bad(r, *words):
    """Exit 2, one line on stderr naming ``words``, no traceback."""
    assert r.exit_code == 2, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), r.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


def strict(text):
    def refuse(name):
        raise ValueError(name)

    return json.loads(text, parse_constant=refuse)


@pytest.fixture
def counts(tmp_path):
    p = tmp_path / "counts.csv"
    p.write_text("cat,normal,fraud\na,30,0\nb,0,50\nc,70,25\nd,0,25\n")
    return p


FROM = ["--p0-col", "normal", "--p1-col", "fraud", "--label-col", "cat", "--normalize"]
#: counts.csv as probabilities (the counts over their sums, 100 each)
P0 = {"a": 0.3, "b": 0.0, "c": 0.7, "d": 0.0}
P1 = {"a": 0.0, "b": 0.5, "c": 0.25, "d": 0.25}


def test_from_file_equals_inline(counts):
    via_file = strict(ok(run("design", "--from", counts, *FROM, "--eps", 1, "--json", "-")).stdout)
    inline = strict(
        ok(
            run(
                "design",
                "--p0",
                "a=30,b=0,c=70,d=0",
                "--p1",
                "a=0,b=50,c=25,d=25",
                "--normalize",
                "--eps",
                1,
                "--json",
                "-",
            )
        ).stdout
    )
    assert via_file == inline
    # the CLI's solver at this size is the readable program (cli._common.CLI_READABLE_MAX_K)
    assert via_file["value"] == ldpopt.optimal_mechanism(P0, P1, 1.0, method="dp").value
    bad(run("design", "--from", counts, "--p0", "0.5,0.5", *FROM, "--eps", 1), "not both")
    bad(run("design", "--from", counts, "--eps", 1), "--from", "missing column(s) p0")
    bad(run("design", "--eps", 1), "--from")


def test_non_binding_budget_is_said(counts):
    r = ok(run("design", "--from", counts, *FROM, "--eps", 1, "--max-outputs", 4))
    res = ldpopt.optimal_mechanism(P0, P1, 1.0)
    assert f"output budget 4 is non-binding: the optimum uses {res.num_outputs} outputs" in r.stdout


def test_piped_tables_are_csv_in_full(counts):
    long = {f"category_with_a_long_name_{i}": (i + 1, 10 - i) for i in range(10)}
    p0 = ",".join(f"{k}={v[0]}" for k, v in long.items())
    p1 = ",".join(f"{k}={v[1]}" for k, v in long.items())
    r = ok(run("design", "--p0", p0, "--p1", p1, "--normalize", "--eps", 1))
    assert "━" not in r.stdout and "…" not in r.stdout  # no box, no truncation
    block = r.stdout.split("# Channel Q(y | x)\n")[1].split("\n#")[0]
    rows = list(csv.reader(io.StringIO(block)))
    assert [row[0] for row in rows[1:]] == list(long)  # every label in full


def test_export_baselines_and_json(counts, tmp_path):
    for kind, ref in (
        ("binary", ldpopt.binary_mechanism(P0, P1, 1.0)),
        ("rr", ldpopt.randomized_response(4, 1.0, labels=("a", "b", "c", "d"))),
    ):
        out = tmp_path / f"{kind}.json"
        data = strict(
            ok(
                run(
                    "export",
                    "--from",
                    counts,
                    *FROM,
                    "--eps",
                    1,
                    "--output",
                    out,
                    "--mechanism",
                    kind,
                    "--json",
                    "-",
                )
            ).stdout
        )
        mech = load_mechanism(out).mechanism
        np.testing.assert_array_equal(mech.matrix, ref.matrix)
        assert data["value"] == ref.utility(P0, P1, "kl") and data["num_outputs"] == ref.num_outputs
    bad(
        run(
            "export",
            "--from",
            counts,
            *FROM,
            "--eps",
            1,
            "--output",
            tmp_path / "x.json",
            "--mechanism",
            "nope",
        ),
        "--mechanism",
    )


def test_privatize_keeps_columns_csv_and_parquet(tmp_path):
    mfile = tmp_path / "m.json"
    ok(run("export", "--p0", "a=0.5,b=0.3,c=0.2", "--p1", "a=0.1,b=0.3,c=0.6", "--eps", 1, "--output", mfile))
    src = tmp_path / "in.parquet"
    pd.DataFrame({"user_id": [7, 8, 9], "x": ["a", "b", "c"], "day": ["mon", "tue", "wed"]}).to_parquet(src)
    ok(
        run(
            "privatize",
            "--mechanism",
            mfile,
            "--input",
            src,
            "--column",
            "x",
            "--output",
            tmp_path / "o.parquet",
        )
    )
    out = pd.read_parquet(tmp_path / "o.parquet")
    assert list(out.columns) == ["user_id", "report", "report_block", "day"]
    assert out["user_id"].tolist() == [7, 8, 9] and out["day"].tolist() == ["mon", "tue", "wed"]
    mech = load_mechanism(mfile).mechanism
    assert set(out["report"]) <= set(range(mech.num_outputs))


def test_privatize_header_rule(tmp_path):
    """A CSV's first row is its header; a header that is a symbol is refused, not eaten."""
    mfile = tmp_path / "m.json"
    ok(run("export", "--p0", "a=0.5,b=0.3,c=0.2", "--p1", "a=0.1,b=0.3,c=0.6", "--eps", 1, "--output", mfile))
    bare = tmp_path / "in.csv"
    bare.write_text("a\nb\nc\n")
    bad(
        run("privatize", "--mechanism", mfile, "--input", bare, "--output", tmp_path / "o.csv"), "--no-header"
    )
    ok(run("privatize", "--mechanism", mfile, "--input", bare, "--output", tmp_path / "o.csv", "--no-header"))
    assert len(pd.read_csv(tmp_path / "o.csv")) == 3  # all three rows privatized
    ok(
        run(
            "privatize",
            "--mechanism",
            mfile,
            "--input",
            bare,
            "--column",
            "a",
            "--output",
            tmp_path / "o2.csv",
        )
    )
    assert len(pd.read_csv(tmp_path / "o2.csv")) == 2  # the header confirmed by --column


def test_decide_mechanism_out_and_from_json(tmp_path):
    doc = {
        "likelihood": [[0.5, 0.1], [0.3, 0.2], [0.2, 0.7]],
        "loss": [[0, 1], [3, 0]],
        "labels": ["low", "mid", "high"],
        "action_labels": ["pass", "review"],
    }
    pfile = tmp_path / "p.json"
    pfile.write_text(json.dumps(doc))
    grouped = tmp_path / "g.json"
    grouped.write_text(
        json.dumps(
            {
                **doc,
                "labels": {"inputs": doc["labels"], "actions": doc["action_labels"]},
                "action_labels": None,
            }
        )
    )
    prob = DecisionProblem.from_json(pfile)
    assert prob.labels == ("low", "mid", "high") and prob.action_labels == ("pass", "review")
    assert prob.name == "p"
    direct = DecisionProblem(
        doc["likelihood"], doc["loss"], labels=doc["labels"], action_labels=doc["action_labels"]
    )
    np.testing.assert_array_equal(prob.bayes_matrix(), direct.bayes_matrix())
    assert DecisionProblem.from_json(grouped).action_labels == prob.action_labels
    with pytest.raises(ValueError, match="unknown key 'lables'"):
        bad_doc = tmp_path / "b.json"
        bad_doc.write_text(json.dumps({**doc, "lables": []}))
        DecisionProblem.from_json(bad_doc)
    with pytest.raises(TypeError, match="path must be a file path"):
        DecisionProblem.from_json(3)

    mout = tmp_path / "channel.json"
    data = strict(ok(run("decide", pfile, "--eps", 1, "--mechanism-out", mout, "--json", "-")).stdout)
    mech = load_mechanism(mout).mechanism
    ref = optimal_channel(prob, 1.0)
    np.testing.assert_array_equal(mech.matrix, ref.mechanism.matrix)
    assert mech.labels == ("low", "mid", "high") and data["value"] == ref.value
    x = tmp_path / "x.csv"
    x.write_text("user,x\n1,low\n2,high\n")
    ok(run("privatize", "--mechanism", mout, "--input", x, "--column", "x", "--output", tmp_path / "r.csv"))


def test_json_on_test_samplesize_audit(tmp_path):
    mfile = tmp_path / "m.json"
    ok(run("export", "--p0", "0.5,0.3,0.2", "--p1", "0.1,0.3,0.6", "--eps", 1, "--output", mfile))
    reports = tmp_path / "r.csv"
    reports.write_text("report\n" + "0\n1\n" * 20)
    t = strict(ok(run("test", "--mechanism", mfile, "--reports", reports, "--json", "-")).stdout)
    assert t["result"]["n"] == 40 and t["decision"] in (0, 1) and len(t["outputs"]) >= 2
    s = strict(ok(run("samplesize", "--mechanism", mfile, "--json", "-")).stdout)
    assert {r["mechanism"] for r in s["rows"]} >= {"optimal (SPR, KL)", "binary", "k-RR"}
    a = strict(ok(run("audit", "--mechanism", mfile, "--n", 2000, "--seed", 1, "--json", "-")).stdout)
    assert a["claimed_eps"] == 1.0 and a["eps_lower"] <= a["model_eps"] + 1e-12 and a["n"] == 2000
    bad(run("audit", "--mechanism", mfile, "--n", 0), "--n")
    s = strict(ok(run("samplesize", "--p0", "0.5,0.5", "--p1", "0.5,0.5", "--eps", 1, "--json", "-")).stdout)
    assert all(r["n"] is None for r in s["rows"])  # equal hypotheses: never


@pytest.mark.parametrize("command", ["privatize", "test", "samplesize"])
def test_hostile_mechanism_files(tmp_path, command):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100000 + "]" * 100000)
    big = tmp_path / "big.json"
    big.write_text('{"format": 1' + "0" * 400 + "}")
    inf = tmp_path / "inf.json"
    inf.write_text('{"format": 1e400}')
    extra = {
        "privatize": ["--input", tmp_path / "x.csv", "--output", tmp_path / "o.csv"],
        "test": ["--reports", tmp_path / "x.csv"],
        "samplesize": [],
    }[command]
    for f, words in (
        (deep, "nested too deeply"),
        (big, "beyond the float range"),
        (inf, "beyond the float range"),
    ):
        bad(run(command, "--mechanism", f, *extra), "--mechanism", words)


def test_decide_hostile_problem_files(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100000 + "]" * 100000)
    bad(run("decide", deep, "--eps", 1), "nested too deeply")
    big = tmp_path / "big.json"
    big.write_text('{"likelihood": [[1' + "0" * 400 + ']], "loss": [[1]]}')
    bad(run("decide", big, "--eps", 1), "beyond the float range")
    bad(run("decide", "--eps", 1), "problem file")


def test_design_normalize_of_huge_entries():
    r = ok(run("design", "--p0", "1e308,1e308", "--p1", "1,2", "--eps", 1, "--normalize", "--json", "-"))
    ref = ldpopt.optimal_mechanism([0.5, 0.5], [1 / 3, 2 / 3], 1.0)
    assert strict(r.stdout)["value"] == pytest.approx(ref.value, rel=1e-15)


@pytest.mark.parametrize(
    "args",
    [
        ["--p0", "0.2,0.3,0.5", "--p1", "0.2000001,0.3,0.4999999", "--eps", "0.01"],
        ["--p0", "0.5000001,0.4999999", "--p1", "0.4999999,0.5000001", "--eps", "1"],
    ],
)
def test_samplesize_near_equal_hypotheses_is_a_clear_error(args):
    line = bad(run("samplesize", *args), "reports would be needed")
    assert "f(a)" not in line


def test_version_and_short_help():
    assert ok(run("--version")).stdout.strip() == f"ldpopt {ldpopt.__version__}"
    assert "Usage" in ok(run("-h")).stdout and "--from" in ok(run("test", "-h")).stdout


def test_budget_recorded_in_the_mechanism_file(counts, tmp_path):
    out = tmp_path / "m.json"
    r = ok(run("export", "--from", counts, *FROM, "--eps", 1, "--max-outputs", 4, "--output", out))
    assert "output budget 4 is non-binding" in r.stdout
    mf = load_mechanism(out)
    assert mf.max_outputs == 4 and mf.mechanism.num_outputs < 4
    ok(run("export", "--from", counts, *FROM, "--eps", 1, "--output", out))
    assert load_mechanism(out).max_outputs is None  # no budget: no field (older files read the same)
    assert '"max_outputs"' not in out.read_text()


def test_fuzz_findings(tmp_path):
    """One-line errors without numpy reprs for what a fuzzing pass found."""
    line = bad(run("design", "--p0", "-1,2", "--p1", "0.5,0.5", "--eps", 1), "found -1.0")
    assert "np." not in line
    mfile = tmp_path / "m.json"
    ldpopt.randomized_response(3, 1.0).to_json(mfile)
    bad(run("audit", "--mechanism", mfile, "--n", "99999999999999999999"), "--n must be <=")


@pytest.mark.parametrize(
    "text, message",
    [
        ("a=0.5, a=0.5", "p0: label 'a' appears twice"),
        ("a=0.5; b=x", "p0: 'x' is not a number (in 'b=x')"),
        ("a=0.5, 0.5", "p0: expected label=value, got '0.5'"),
        (" ; ", "p0 is empty: give numbers or label=value pairs"),
    ],
)
def test_typed_distributions_are_read_as_the_studio_reads_pasted_ones(text, message):
    """One grammar (ldpopt.deploy.pairs.parse_distribution_text) for --p0/--p1 and the studio's
    paste boxes: the same refusal, named by the option on the command line."""
    from ldpopt.studio import core

    bad(run("design", "--p0", text, "--p1", "0.5,0.5", "--eps", 1), f"--{message}")
    with pytest.raises(ValueError, match=re.escape(message)):
        core.parse_pasted(text, "0.5, 0.5")
    assert core.parse_pasted("a=3\nb=1", "a=1; b=3")["p0"] == [0.75, 0.25]


def test_a_numpy_looking_entry_is_quoted_back_as_typed(tmp_path):
    """The error quotes the user's text as typed: "'np.float64(0.5)' is not a number", not the
    number inside it, which would read as if '0.5' were refused."""
    csv_file = tmp_path / "pair.csv"
    csv_file.write_text("p0,p1\nnp.float64(0.5),0.2\n0.5,0.8\n")
    for args, message in (
        (("--p0", "np.float64(0.5),0.5", "--p1", "0.2,0.8"), "--p0: 'np.float64(0.5)' is not a number"),
        (("--p0", "a=np.int64(1),b=1", "--p1", "a=1,b=1"), "number (in 'a=np.int64(1)')"),
        (("--from", csv_file), "column 'p0', data row 1: 'np.float64(0.5)' is not a number"),
    ):
        r = subprocess.run(
            [sys.executable, "-m", "ldpopt", "design", *map(str, args), "--eps", "1"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 2, r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
        assert message in lines[0], lines[0]
