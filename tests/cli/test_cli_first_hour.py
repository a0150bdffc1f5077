"""A new user's first hour with the CLI, each behaviour run through the real ``ldpopt`` command in a
subprocess: what ``test`` says when H0 is rejected, ``estimate``'s options, one refusal of an eps
list where one eps is answered and a table for a list where several are, the reason for an
infinite D_f(P0||P1), the labels of the reports, ``shuffle``."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import ldpopt
from cli_subprocess import ldpopt_cmd
from ldpopt.deploy.files import load_mechanism
from ldpopt.deploy.shuffle import central_epsilon
from ldpopt.deploy.testing import LikelihoodRatioTest

LABELS = ["page", "search", "cart", "checkout", "login", "reset"]
P0 = [0.40, 0.20, 0.15, 0.10, 0.10, 0.05]
P1 = [0.10, 0.10, 0.15, 0.25, 0.15, 0.25]


def spec(p) -> str:
    return ",".join(f"{lab}={v}" for lab, v in zip(LABELS, p, strict=True))


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """A mechanism file and 20,000 reports of users 80% from P0 and 20% from P1."""
    folder = tmp_path_factory.mktemp("first_hour")
    r = ldpopt_cmd("export", "--p0", spec(P0), "--p1", spec(P1), "--eps", 2, "--output", "M.json", cwd=folder)
    assert r.returncode == 0, r.stderr
    mech = load_mechanism(folder / "M.json").mechanism
    rng = np.random.default_rng(5)
    x = rng.choice(LABELS, size=20_000, p=0.8 * np.array(P0) + 0.2 * np.array(P1))
    reports = mech.privatize(x, rng=rng)
    (folder / "reports.csv").write_text("report\n" + "\n".join(map(str, reports)) + "\n")
    return folder, mech, reports


def test_a_rejected_h0_is_not_consistent_with_p0_and_the_llr_direction_is_told(mixed):
    folder, mech, reports = mixed
    # the library's own test on the same reports: H0 rejected while the reports fit P0 better
    p0, p1 = dict(zip(LABELS, P0, strict=True)), dict(zip(LABELS, P1, strict=True))
    lrt = LikelihoodRatioTest(mech, p0, p1, 0.05).decide(reports)
    m0, m1 = mech.output_distributions(p0, p1)
    counts = np.bincount(reports, minlength=mech.num_outputs)
    llr = float(np.sum(counts * np.log(m1 / m0)))  # by hand, not through the test's kernel
    assert lrt.decision == 1 and llr < 0
    r = ldpopt_cmd("test", "--mechanism", "M.json", "--reports", "reports.csv", cwd=folder)
    assert r.returncode == 0, r.stderr
    assert "decision: 1 (reject H0: the reports are not consistent with P0)" in r.stdout
    assert "look like P1" not in r.stdout
    assert "< 0: the reports fit P0 better than P1, yet are not consistent with P0" in r.stdout
    assert "ldpopt estimate --mechanism" in r.stdout  # the mixture question's command


def test_estimate_takes_options_and_the_positional_form_still_works_deprecated(mixed):
    folder, _, _ = mixed
    new = ldpopt_cmd(
        "estimate", "--mechanism", "M.json", "--reports", "reports.csv", "--json", "-", cwd=folder
    )
    assert new.returncode == 0 and new.stderr == "", new.stderr
    old = ldpopt_cmd("estimate", "M.json", "reports.csv", "--json", "-", cwd=folder)
    assert old.returncode == 0, old.stderr
    assert json.loads(old.stdout) == json.loads(new.stdout)
    lines = old.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("warning:") and "deprecated" in lines[0]
    assert "--mechanism M.json --reports reports.csv" in lines[0]
    both = ldpopt_cmd("estimate", "M.json", "reports.csv", "--mechanism", "M.json", cwd=folder)
    assert both.returncode == 2 and both.stderr.startswith("error:")


@pytest.mark.parametrize(
    "argv",
    [
        ["export", "--p0", "0.5,0.5", "--p1", "0.2,0.8", "--output", "x.json"],
        ["compare", "M.json"],
        ["decide", "problem.json"],
        ["reproduce", "fig3", "--quick"],
        ["reproduce", "fig5", "--quick"],  # several eps, as repeated --eps
    ],
    ids=lambda a: a[0],
)
def test_an_eps_list_is_refused_with_one_message_where_one_eps_is_answered(mixed, argv):
    folder = mixed[0]
    r = ldpopt_cmd(*argv, "--eps", "0.5,1,2", cwd=folder)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr
    assert lines[0].startswith(
        "error: Invalid value for '--eps': '0.5,1,2' is a list, and --eps takes one number here"
    ), lines[0]
    assert not (folder / "x.json").exists()


def test_design_answers_an_eps_list_with_one_table_and_one_json_array(tmp_path):
    pair = ["--p0", "0.1,0.2,0.7", "--p1", "0.3,0.3,0.4"]
    r = ldpopt_cmd("design", *pair, "--eps", "0.5,1,inf", "--json", "-", cwd=tmp_path)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    docs = json.loads(r.stdout)
    assert [d["eps"] for d in docs] == [0.5, 1.0, "inf"]
    for d, e in zip(docs, (0.5, 1.0, math.inf), strict=True):
        ref = ldpopt.optimal_mechanism([0.1, 0.2, 0.7], [0.3, 0.3, 0.4], e, method="dp")  # the CLI's solver
        assert d["value"] == ref.value and d["num_outputs"] == ref.num_outputs
    one = ldpopt_cmd("design", *pair, "--eps", "1", "--json", "-", cwd=tmp_path)
    assert json.loads(one.stdout) == docs[1]  # each element is the single-eps document
    table = ldpopt_cmd("design", *pair, "--eps", "0.5,1,inf", cwd=tmp_path).stdout.splitlines()
    assert table[1] == "eps,mechanism,outputs,value,normalised" and len(table) == 2 + 3 * 3


def test_samplesize_answers_an_eps_list_in_one_json_array(mixed):
    folder = mixed[0]
    r = ldpopt_cmd("samplesize", "--mechanism", "M.json", "--eps", "0.5,1,2", "--json", "-", cwd=folder)
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)["rows"]
    assert sorted({row["eps"] for row in rows}) == [0.5, 1.0, 2.0]


def test_an_infinite_input_divergence_is_explained_once(tmp_path):
    (tmp_path / "counts.csv").write_text("category,normal,fraud\na,3,1\nb,0,5\nc,9,0\nd,4,4\n")
    src = ["--from", "counts.csv", "--p0-col", "normal", "--p1-col", "fraud", "--label-col", "category"]
    r = ldpopt_cmd("design", *src, "--normalize", "--eps", 1, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    notes = [line for line in r.stdout.splitlines() if line.startswith("note: D_kl(P0||P1) = inf")]
    # KL(P0||P1) is infinite through c (P1 = 0 < P0) only: b (P0 = 0) keeps it finite
    assert len(notes) == 1 and "P1 is 0 where P0 is not (c)" in notes[0] and "(b)" not in notes[0], r.stdout
    rev = ldpopt_cmd("design", *src, "--normalize", "--eps", 1, "--divergence", "reverse_kl", cwd=tmp_path)
    assert "P0 is 0 where P1 is not (b)" in rev.stdout and "(c)" not in rev.stdout
    finite = ldpopt_cmd("design", "--p0", "0.5,0.5", "--p1", "0.2,0.8", "--eps", 1, cwd=tmp_path)
    assert "note:" not in finite.stdout


def test_privatize_says_what_each_report_means(mixed, tmp_path):
    folder, mech, _ = mixed
    (tmp_path / "in.csv").write_text("user,x\n" + "".join(f"u{i},{lab}\n" for i, lab in enumerate(LABELS)))
    m = str(folder / "M.json")
    r = ldpopt_cmd("privatize", "--mechanism", m, "--input", "in.csv", "--column", "x", "--output", "r.csv",
                   "--labels", "labels.csv", "--seed", 1, cwd=tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "r.csv").read_text().splitlines()[0] == "user,report"  # the labels are aside
    sidecar = (tmp_path / "labels.csv").read_text().splitlines()
    blocks = ['"{' + ", ".join(LABELS[i] for i in b) + '}"' for b in mech.partition]
    assert sidecar == ["report,block"] + [f"{j},{blocks[j]}" for j in range(mech.num_outputs)]


def test_shuffle_gives_the_central_eps_of_a_mechanism_file(mixed):
    folder, mech, _ = mixed
    r = ldpopt_cmd(
        "shuffle", "--mechanism", "M.json", "--n", 2000, "--delta", 1e-6, "--json", "-", cwd=folder
    )
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    generic = central_epsilon(mech.eps, 2000, 1e-6)
    s = mech.num_outputs  # an SPR mechanism is s-ary randomized response on its block label
    rr = central_epsilon(mech.eps, 2000, 1e-6, "rr", outputs=s)
    tight = central_epsilon(mech, 2000, 1e-6, "tight")
    assert [b["central_eps"] for b in data["bounds"]] == [generic.value, rr.value, tight.value]
    assert data["central_eps"] == min(generic.value, rr.value, tight.value) < mech.eps
    assert 0 < data["central_eps_lower"] == tight.lower <= data["central_eps"]
    assert data["local_eps"] == mech.eps and data["n"] == 2000 and data["delta"] == 1e-6
    assert math.isfinite(data["central_eps"])
