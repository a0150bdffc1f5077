"""``ldpopt certify-eps``, run as a real command: the level of CSV, NPY, JSON and mechanism files
(checked against a Fraction computation here), --claim decided exactly with exit 1 naming the pair,
rows not summing to 1 refused in one line unless --normalize, --json - strict JSON alone."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest

import ldpopt
from cli_subprocess import ldpopt_cmd
from cli_subprocess import strict_json as strict


def run(*args, cwd=None):
    return ldpopt_cmd(*args, cwd=cwd, timeout=120)


M = [[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6]]
#: the largest ratio, by hand: column 0 (0.6 / 0.1) and column 2 (0.6 / 0.1)
RATIO = Fraction(0.6) / Fraction(0.1)


def test_csv_with_labels_and_claims(tmp_path):
    f = tmp_path / "m.csv"
    f.write_text(
        "x,out_a,out_b,out_c\n" + "\n".join(f"in{i}," + ",".join(map(repr, r)) for i, r in enumerate(M))
    )
    r = run("certify-eps", f, "--json", "-")
    assert r.returncode == 0, r.stderr
    doc = strict(r.stdout)
    assert Fraction(doc["max_ratio"]) == RATIO
    assert doc["epsilon_upper"] >= doc["epsilon"] and math.isclose(doc["epsilon"], math.log(6), rel_tol=1e-15)
    assert set(doc["worst_inputs"]) == {"in0", "in2"} and doc["worst_output"] in ("out_a", "out_c")
    ok = run("certify-eps", f, "--claim", doc["epsilon_upper"])
    assert ok.returncode == 0 and "holds exactly" in ok.stdout
    bad = run("certify-eps", f, "--claim", 1.79)
    assert bad.returncode == 1 and "violated" in bad.stdout and "in0" in bad.stdout and "in2" in bad.stdout


def test_npy_json_and_mechanism_files(tmp_path):
    np.save(tmp_path / "m.npy", np.array(M))
    (tmp_path / "m.json").write_text(json.dumps({"matrix": M, "labels": ["a", "b", "c"]}))
    mech = ldpopt.randomized_response(4, 1.5)
    mech.to_json(tmp_path / "mech.json")
    for name in ("m.npy", "m.json"):
        doc = strict(run("certify-eps", tmp_path / name, "--json", "-").stdout)
        assert Fraction(doc["max_ratio"]) == RATIO
    r = run("certify-eps", tmp_path / "mech.json", "--json", "-")
    doc = strict(r.stdout)
    hi, lo = max(mech.matrix[:, 0]), min(mech.matrix[:, 0])
    assert Fraction(doc["max_ratio"]) == Fraction(float(hi)) / Fraction(float(lo)) and doc["file_eps"] == 1.5


def test_a_mechanism_file_that_does_not_validate_is_checked_as_stored(tmp_path):
    mech = ldpopt.randomized_response(3, 1.0)
    mech.to_json(tmp_path / "rr.json")
    doc = json.loads((tmp_path / "rr.json").read_text())
    doc["eps"] = 0.5  # a hand edit: the matrix now breaks the stated eps (and the digest)
    (tmp_path / "edited.json").write_text(json.dumps(doc))
    r = run("certify-eps", tmp_path / "edited.json", "--json", "-")
    assert r.returncode == 0, r.stderr
    out = strict(r.stdout)
    assert out["file_eps"] == 0.5 and out["file_eps_holds"] is False
    assert "digest mismatch" in r.stderr and "checked as it is" in r.stderr
    hi, lo = float(mech.matrix[0, 0]), float(mech.matrix[1, 0])
    assert Fraction(out["max_ratio"]) == Fraction(hi) / Fraction(lo)
    r = run("certify-eps", tmp_path / "edited.json", "--claim", 0.5)
    assert r.returncode == 1 and "violated" in r.stdout


def test_infinite_level(tmp_path):
    f = tmp_path / "z.csv"
    f.write_text("1,0\n0.5,0.5\n")
    r = run("certify-eps", f, "--claim", 30, "--json", "-")
    assert r.returncode == 1
    doc = strict(r.stdout)
    assert doc["epsilon"] == "inf" and doc["max_ratio"] is None and doc["claim_holds"] is False


@pytest.mark.parametrize(
    "content, args, message",
    [
        ("3,1\n1,3\n", (), "rows must sum to 1, row 0 sums to 4.0 (pass --normalize"),
        ("0.5,0.5\n0.5\n", (), "same number of cells"),
        ("0.5,x1\n0.5,0.5\n", (), "not a number"),
        ("0.5,0.5\n1.5,-0.5\n", (), "non-negative"),
        ("0.5,0.5\n0.5,0.5\n", ("--claim", "-1"), "--claim must be a number >= 0"),
    ],
)
def test_bad_input_is_one_line(tmp_path, content, args, message):
    f = tmp_path / "bad.csv"
    f.write_text(content)
    r = run("certify-eps", f, *args)
    assert r.returncode == 2
    assert message in r.stderr and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_normalize_and_missing_file(tmp_path):
    f = tmp_path / "c.csv"
    f.write_text("3,1\n1,3\n")
    r = run("certify-eps", f, "--normalize", "--json", "-")
    assert r.returncode == 0 and Fraction(strict(r.stdout)["max_ratio"]) == 3
    r = run("certify-eps", tmp_path / "nope.csv")
    assert r.returncode == 2 and "no such file" in r.stderr
