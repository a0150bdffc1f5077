"""``ldpopt decide``: problem files, output, JSON result and one-line errors for malformed files."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

import ldpopt
from _errmodel import U, channel_err, lp_err, minimax_risk_err, support_vertex_err, within, within_all
from ldpopt.cli import app

runner = CliRunner()

PROBLEM = {
    "name": "triage",
    "likelihood": [[0.5, 0.1], [0.3, 0.2], [0.2, 0.7]],
    "loss": [[0, 1], [3, 0]],
    "prior": [0.7, 0.3],
    "labels": {
        "inputs": ["low", "mid", "high"],
        "parameters": ["normal", "fraud"],
        "actions": ["pass", "review"],
    },
}


class _Written:
    """The weights of a written result ({frozenset(input indices): weight}), for the error model."""

    def __init__(self, data, labels):
        pos = {lab: i for i, lab in enumerate(labels)}
        self.weights = {frozenset(pos[x] for x in o["subset"]): o["weight"] for o in data["outputs"]}
        self.method = data["method"]


def _write(tmp_path, doc, name="problem.json"):
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def _run(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.mark.parametrize("risk", ["bayes", "minimax"])
def test_decide_prints_and_writes_the_optimum(tmp_path, risk):
    path = _write(tmp_path, PROBLEM)
    out = tmp_path / "res" / "out.json"
    r = _run("decide", path, "--eps", 1.5, "--risk", risk, "--json", out)
    assert r.exit_code == 0, r.output
    assert "triage" in r.output and "review" in r.output and "verified" in r.output
    data = json.loads(out.read_text())
    prob = ldpopt.DecisionProblem(
        np.array(PROBLEM["likelihood"]), np.array(PROBLEM["loss"]), PROBLEM["prior"]
    )
    ref = ldpopt.optimal_channel(prob, 1.5, risk=risk, method="enumerate")
    # "auto" picks "enumerate" at m = 3: the same solve, its value through json (exact)
    assert data["method"] == "enumerate" and data["value"] == ref.value
    assert data["risk"] == risk and data["input_labels"] == ["low", "mid", "high"]
    assert data["num_outputs"] == len(data["outputs"]) == len(data["matrix"][0])
    for o in data["outputs"]:
        assert set(o["subset"]) <= {"low", "mid", "high"} and o["weight"] > 0
        # Bayes rules are one-hot (exact); a minimax rule's z_a / sum(z) (A = 2: 4u)
        assert within("decide: decision rows", sum(o["decision"].values()), 1.0, 4 * U)
        assert set(o["decision"]) <= {"pass", "review"}
    # the written channel reproduces the value: the same channel through its normalised rows
    # (channel_err; loss max 3), minimax_risk an LP at HiGHS's default tolerance
    direct = (
        prob.bayes_risk(np.array(data["matrix"]))
        if risk == "bayes"
        else prob.minimax_risk(np.array(data["matrix"]))
    )
    w = _Written(data, data["input_labels"])
    bound = channel_err(w, 3, 1.5, 3.0, 3 + 2 + 4)
    if risk == "minimax":
        bound += minimax_risk_err(data["num_outputs"], 3.0)
    assert within("decide: written channel vs value", direct, data["value"], bound)
    assert data["certificate"]["verified"]


def test_decide_methods_and_defaults(tmp_path):
    doc = {"likelihood": PROBLEM["likelihood"], "loss": [[-1, 0], [0, -2]]}  # negative losses are allowed
    path = _write(tmp_path, doc)
    values, errs = [], []
    for method in ("auto", "enumerate", "colgen", "direct", "vertex"):
        out = tmp_path / f"{method}.json"
        r = _run("decide", path, "--eps", 1, "--method", method, "--json", out)
        assert r.exit_code == 0, r.output
        data = json.loads(out.read_text())
        values.append(data["value"])
        # each within its lp_err of the optimum (loss max |l| = 2); the vertex method's pick and polish
        w = _Written(data, list(range(3)) if data["input_labels"] is None else data["input_labels"])
        err = lp_err(w, 3, 1.0, 2.0, method="enumerate" if method == "vertex" else None)
        errs.append(err + (2 * support_vertex_err(w, 3, 1.0, 2.0) if method == "vertex" else 0.0))
    assert (
        within_all("decide: every method agrees", values, values[0], np.array(errs) + errs[0])
        and values[0] < 0
    )


@pytest.mark.parametrize(
    "doc, message",
    [
        ("{not json", "not valid JSON"),
        ('{"likelihood": [[0.5, NaN], [0.5, 0.5]], "loss": [[0, 1], [1, 0]]}', "NaN"),
        ({"likelihood": [[0.5, 0.5], [0.5, 0.4]], "loss": [[0, 1], [1, 0]]}, "column 1 sums"),
        ({"likelihood": [[0.5, 0.5], [0.5, 0.5]], "loss": [[0, 1], [1, 0], [1, 1]]}, "one row per parameter"),
        ({"likelihood": [[0.5, 0.5], [0.5]], "loss": [[0, 1], [1, 0]]}, "same non-zero length"),
        ({"likelihood": [[0.5, "a"], [0.5, 0.5]], "loss": [[0, 1], [1, 0]]}, "must be a number"),
        ({"loss": [[0, 1], [1, 0]]}, "missing key 'likelihood'"),
        ({"likelihood": [[1.0, 1.0]], "loss": [[0, 1], [1, 0]]}, "at least 2 inputs"),
        ({"likelihood": [[0.5, 0.5], [0.5, 0.5]], "loss": [[0, 1], [1, 0]], "prior": [0.5]}, "prior"),
        (
            {"likelihood": [[0.5, 0.5], [0.5, 0.5]], "loss": [[0, 1], [1, 0]], "extra": 1},
            "unknown key 'extra'",
        ),
        (
            {"likelihood": [[0.5, 0.5], [0.5, 0.5]], "loss": [[0, 1], [1, 0]], "labels": {"inputs": ["a"]}},
            "labels",
        ),
        ([1, 2], "top level"),
    ],
)
def test_malformed_problem_files_fail_with_one_line(tmp_path, doc, message):
    path = _write(tmp_path, doc)
    r = _run("decide", path, "--eps", 1)
    assert r.exit_code == 2
    assert message in r.output
    assert "Traceback" not in r.output


def test_bad_options_and_missing_file(tmp_path):
    path = _write(tmp_path, PROBLEM)
    assert "no such file" in _run("decide", tmp_path / "nope.json", "--eps", 1).output
    assert _run("decide", path, "--eps", 0).exit_code == 2
    r = _run("decide", path, "--eps", 1, "--risk", "worst")
    assert r.exit_code == 2 and "--risk" in r.output
    r = _run("decide", path, "--eps", 1, "--method", "magic")
    assert r.exit_code == 2 and "--method" in r.output
    r = _run("decide", path, "--eps", 1, "--risk", "minimax", "--method", "vertex")
    assert r.exit_code == 2 and "minimax" in r.output


def run_process(*args):
    """The real command in a subprocess (exit status, stdout and stderr as a user sees them)."""
    return subprocess.run(
        [sys.executable, "-m", "ldpopt", *map(str, args)], capture_output=True, text=True, timeout=120
    )


def test_mechanism_out_on_stdout_is_the_mechanism_file_alone(tmp_path):
    """--mechanism-out -: standard output is the mechanism file (the tables go to stderr), the same
    document --mechanism-out FILE writes; with --json - as well it is a one-line error (exit 2)."""
    path = tmp_path / "p.json"
    path.write_text(json.dumps(PROBLEM))
    r = run_process("decide", path, "--eps", 1, "--mechanism-out", "-")
    assert r.returncode == 0, r.stderr
    mfile = tmp_path / "m.json"
    assert run_process("decide", path, "--eps", 1, "--mechanism-out", mfile).returncode == 0
    assert r.stdout == mfile.read_text()
    assert "optimal 1-LDP channel" in r.stderr and "wrote" not in r.stderr
    r = run_process("decide", path, "--eps", 1, "--mechanism-out", "-", "--json", "-")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip() == (
        "error: --json and --mechanism-out both name standard output ('-'); give a file for all but one"
    )
