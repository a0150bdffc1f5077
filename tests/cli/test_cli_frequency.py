"""CLI: ``ldpopt frequency`` (the gap table), ``ldpopt estimate --frequency`` and ``ldpopt reproduce
frequency``, each run as the real command in a subprocess."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import ldpopt
from ldpopt.deploy.target import FREQUENCY_MECHANISMS
from ldpopt.frequency import estimate
from ldpopt.frequency import mechanisms as M
from ldpopt.frequency.compare import compare
from ldpopt.frequency.files import read_frequency_mechanism, write_frequency_mechanism


def ldpopt_cmd(*args, cwd, hide=()) -> subprocess.CompletedProcess:
    """``ldpopt ARGS`` in a fresh interpreter (modules in ``hide`` made unimportable)."""
    code = textwrap.dedent(
        f"""
        import sys
        for name in {list(hide)!r}:
            sys.modules[name] = None
        sys.argv = ["ldpopt", *{[str(a) for a in args]!r}]
        from ldpopt.cli import main
        main()
        """
    )
    src = str(Path(ldpopt.__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]))
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=cwd, env=env
    )


def one_line_error(res, *words):
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "Traceback" not in res.stderr
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), res.stderr
    for w in words:
        assert w in lines[0], lines[0]


def test_gap_table_json_and_plot(tmp_path):
    res = ldpopt_cmd(
        "frequency", "--k", 6, "--eps", "1,2", "--json", "-", "--plot", "gaps.png", "--verbose", cwd=tmp_path
    )
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
    assert [t["eps"] for t in doc["tables"]] == [1.0, 2.0]
    for table, e in zip(doc["tables"], (1.0, 2.0), strict=True):
        api = compare(6, e)
        assert table["reference"] == api.reference
        assert [r["mechanism"] for r in table["rows"]] == [r.mechanism for r in api.rows]
        grr = next(r for r in table["rows"] if r["kind"] == "grr")
        ex = np.exp(e)
        assert grr["variance_uniform"] == pytest.approx(5 * (ex + 5) ** 2 / (6 * (ex - 1) ** 2), rel=1e-12)
    assert (tmp_path / "gaps.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "GRR" in res.stderr  # with --verbose, the table went to standard error
    quiet = ldpopt_cmd("frequency", "--k", 6, "--eps", "1", "--json", "-", cwd=tmp_path)
    assert quiet.returncode == 0 and quiet.stderr == ""  # without it, only the JSON


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--k", 1, "--eps", "1"), ("--k", ">= 2")),
        (("--k", 4, "--eps", "1,x"), ("--eps", "'x'")),
        (("--k", 4, "--eps", "0"), ("--eps", "> 0")),
    ],
)
def test_gap_table_bad_input(tmp_path, args, words):
    one_line_error(ldpopt_cmd("frequency", *args, cwd=tmp_path), *words)


def test_plot_without_matplotlib(tmp_path):
    res = ldpopt_cmd(
        "frequency", "--k", 4, "--eps", "1", "--plot", "g.png", cwd=tmp_path, hide=["matplotlib"]
    )
    one_line_error(res, "optional dependency 'matplotlib'", 'pip install "ldpopt[plots]"')
    assert not (tmp_path / "g.png").exists()


def test_estimate_frequency(tmp_path):
    rng = np.random.default_rng(4)
    mech = M.olh(5, 2.0)
    x = rng.choice(5, 400, p=[0.4, 0.3, 0.1, 0.1, 0.1])
    rep = mech.privatize(x, rng)
    write_frequency_mechanism(mech, tmp_path / "olh.json")
    assert read_frequency_mechanism(tmp_path / "olh.json") == mech
    (tmp_path / "r.csv").write_text("seed,value\n" + "".join(f"{s},{v}\n" for s, v in rep))
    res = ldpopt_cmd(
        "estimate",
        "--frequency",
        "--mechanism",
        "olh.json",
        "--reports",
        "r.csv",
        "--json",
        "-",
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    api = estimate(mech, rep)
    assert doc["value"] == api.value.tolist() and doc["upper"] == api.upper.tolist()
    assert doc["mle"] == api.mle.tolist() and doc["interval_method"] == "bonferroni"
    # a channel mechanism file (ldpopt.mechanism format) named by its kind, unary reports as bits
    oue = M.oue(4, 1.0)
    oue.channel().to_json(tmp_path / "oue.json")
    bits = oue.privatize(rng.integers(0, 4, 300), rng)
    (tmp_path / "b.csv").write_text("report\n" + "".join("".join(map(str, b)) + "\n" for b in bits))
    res = ldpopt_cmd(
        "estimate",
        "--frequency",
        "--mechanism",
        "oue.json",
        "--reports",
        "b.csv",
        "--json",
        "-",
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["value"] == estimate(oue, bits).value.tolist()
    # errors: a reports file that does not fit, a file that is no mechanism
    (tmp_path / "bad.csv").write_text("report\n0101\n011\n")
    one_line_error(
        ldpopt_cmd(
            "estimate", "--frequency", "--mechanism", "oue.json", "--reports", "bad.csv", cwd=tmp_path
        ),
        "--reports",
        "'011'",
    )
    res = ldpopt_cmd(
        "estimate",
        "--frequency",
        "--mechanism",
        "oue.json",
        "--reports",
        "b.csv",
        "--confidence",
        "1.5",
        cwd=tmp_path,
    )
    one_line_error(res, "--confidence")
    one_line_error(
        ldpopt_cmd(
            "estimate",
            "--frequency",
            "--mechanism",
            "oue.json",
            "--reports",
            "b.csv",
            "--p0",
            "0.5,0.5",
            cwd=tmp_path,
        ),
        "--p0",
    )
    (tmp_path / "junk.json").write_text('{"format": "other"}')
    one_line_error(
        ldpopt_cmd("estimate", "--frequency", "--mechanism", "junk.json", "--reports", "b.csv", cwd=tmp_path),
        "--mechanism",
        "format",
    )


def test_reproduce_frequency_quick(tmp_path):
    res = ldpopt_cmd("reproduce", "frequency", "--quick", "--out", "o", "--json", "-", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    assert summary["quick"] is True and summary["ks"] == [4, 16]
    for name in ("frequency.png", "frequency.svg", "frequency.csv", "summary.json"):
        assert (tmp_path / "o" / name).stat().st_size > 0


def test_target_width_table_json_matches_api(tmp_path):
    res = ldpopt_cmd(
        "frequency",
        "--k",
        8,
        "--n",
        20000,
        "--target-width",
        0.03,
        "--at",
        "uniform",
        "--json",
        "-",
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""  # the table is quiet without --verbose when JSON goes to stdout
    doc = json.loads(res.stdout, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
    kinds = [r["mechanism"] for r in doc["rows"]]
    assert kinds == list(FREQUENCY_MECHANISMS)
    for row in doc["rows"]:
        if not row["reached"]:
            continue
        api = ldpopt.minimum_epsilon_for_frequency_width(
            8, n=20000, width=0.03, theta="uniform", mechanism=row["mechanism"]
        )
        assert row["eps"] == api.eps and row["half_width"] <= 0.03


def test_target_width_unreachable_and_bad_input(tmp_path):
    res = ldpopt_cmd(
        "frequency", "--k", 16, "--n", 10000, "--target-width", 0.01, "--mechanism", "oue", cwd=tmp_path
    )
    assert res.returncode == 1 and "not reached even at eps = 64" in res.stderr
    one_line_error(
        ldpopt_cmd(
            "frequency", "--k", 16, "--n", 100, "--target-width", 0.1, "--mechanism", "foo", cwd=tmp_path
        ),
        "--mechanism",
    )
    one_line_error(ldpopt_cmd("frequency", "--k", 16, "--target-width", 0.1, cwd=tmp_path), "--n")
    one_line_error(
        ldpopt_cmd("frequency", "--k", 16, "--n", 100, "--target-width", -1, cwd=tmp_path), "--target-width"
    )
    one_line_error(ldpopt_cmd("frequency", "--k", 16, cwd=tmp_path), "--eps")


def test_target_width_optimum_not_built_in_worst_case(tmp_path):
    """k = 64 in the worst case: the optimum's channel is not built, its row says so; the others
    are computed and the command succeeds."""
    res = ldpopt_cmd(
        "frequency", "--k", 64, "--n", 10**6, "--target-width", 0.005, "--json", "-", cwd=tmp_path
    )
    assert res.returncode == 0, res.stderr
    rows = {r["mechanism"]: r for r in json.loads(res.stdout)["rows"]}
    assert rows["optimal"]["computed"] is False and "too large to build" in rows["optimal"]["message"]
    sue = ldpopt.minimum_epsilon_for_frequency_width(64, n=10**6, width=0.005, mechanism="sue")
    assert rows["sue"]["reached"] and rows["sue"]["eps"] == sue.eps


def test_gap_table_at_large_eps(tmp_path):
    # at eps 17 GRR's off-diagonal entry was computed as 1.0 - p and the channel refused
    res = ldpopt_cmd("frequency", "--k", 3, "--eps", "17", "--json", "-", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    grr = next(r for r in doc["tables"][0]["rows"] if r["kind"] == "grr")
    ex = math.exp(17.0)
    # closed form: (k-1)(e + k-1)^2 / (k (e-1)^2)
    assert grr["variance_uniform"] == pytest.approx(2 * (ex + 2) ** 2 / (3 * (ex - 1) ** 2), rel=1e-12)


def test_gap_table_with_astronomical_output_counts(tmp_path):
    # 2^1100 outputs: formatting the exact int as a float overflowed ("unexpected failure")
    res = ldpopt_cmd("frequency", "--k", 1100, "--eps", "1", "--json", "-", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    rows = {r["kind"]: r for r in json.loads(res.stdout)["tables"][0]["rows"]}
    assert rows["sue"]["outputs"] is None
    assert rows["sue"]["log10_outputs"] == pytest.approx(1100 * math.log10(2), rel=1e-15)
    assert rows["grr"]["outputs"] == 1100


def test_gap_table_refuses_k_above_k_max(tmp_path):
    # ran forever before
    one_line_error(ldpopt_cmd("frequency", "--k", 100000000, "--eps", "1", cwd=tmp_path), "k=100000000")


def test_n_without_target_width_is_refused(tmp_path):
    # was silently ignored
    res = ldpopt_cmd("frequency", "--k", 4, "--eps", "1", "--n", 1000, cwd=tmp_path)
    one_line_error(res, "--n", "--target-width")


def test_bad_plot_suffix_is_refused_before_the_tables(tmp_path):
    res = ldpopt_cmd("frequency", "--k", 4, "--eps", "1", "--plot", "x.txt", cwd=tmp_path)
    one_line_error(res, "--plot", ".png")
    assert res.stdout == ""  # no table printed before the error
