"""``ldpopt compare`` and ``ldpopt verify-certificate``, run as real commands in a subprocess: the
certificate written is re-checked here by matrix products, ``--json -`` is strict JSON alone on
stdout, a tampered or malformed certificate fails with exit 1 / 2 and one line."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

import ldpopt

LABELS = ["a", "b", "c", "d", "e"]
P0 = [0.05, 0.3, 0.1, 0.4, 0.15]
P1 = [0.3, 0.1, 0.25, 0.05, 0.3]


#: the source tree of the ldpopt under test, for the subprocesses (they run in a temporary folder)
SRC = str(Path(ldpopt.__file__).resolve().parents[1])


def run(*args, cwd=None):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-m", "ldpopt", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env=env,
    )


def strict(text):
    def refuse(name):
        raise ValueError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


def mechanism_file(tmp_path, eps=1.0):
    """A unary-encoding-like hand-made channel (not SPR): k-ary RR post-processed by a random merge."""
    rng = np.random.default_rng(11)
    rr = np.asarray(ldpopt.randomized_response(5, eps).matrix)
    T = rng.dirichlet(np.ones(4), size=5)
    mech = ldpopt.Mechanism(rr @ T, eps, labels=LABELS, name="hand-made")
    path = tmp_path / "M.json"
    mech.to_json(path, p0=dict(zip(LABELS, P0, strict=True)), p1=dict(zip(LABELS, P1, strict=True)))
    return path, mech


def recheck(cert):
    Q = np.array(cert["matrix"])
    P = np.column_stack([cert["p0"], cert["p1"]])
    mix = sum(w * (np.array(c).T @ P) for w, c in zip(cert["weights"], cert["components"], strict=True))
    return float(np.max(np.abs(mix - Q.T @ P)))


def test_compare_writes_a_certificate_that_verifies(tmp_path):
    path, mech = mechanism_file(tmp_path)
    r = run("compare", path, "--json", "cert.json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "mixture" in r.stdout and "optimum" in r.stdout
    cert = strict((tmp_path / "cert.json").read_text())
    assert np.allclose(cert["matrix"], mech.matrix, rtol=0, atol=0)
    assert recheck(cert) <= 1e-12
    assert 1 <= len(cert["weights"]) <= 2 * 4 - 1
    for row in cert["dominance"]:
        assert row["value"] <= row["optimum"] + 1e-12
    opt = ldpopt.optimal_mechanism(P0, P1, 1.0, "kl")
    kl = next(row for row in cert["dominance"] if row["divergence"] == "kl")
    assert kl["optimum"] == opt.value
    v = run("verify-certificate", "cert.json", cwd=tmp_path)
    assert v.returncode == 0, v.stderr
    assert "valid" in v.stdout
    # tampering: move weight from one component to another (or scale the only one)
    w = cert["weights"]
    if len(w) > 1:
        w[0], w[1] = w[0] + 0.01, w[1] - 0.01
    else:
        cert["components"][0][0][0] += 0.01
    (tmp_path / "bad.json").write_text(json.dumps(cert))
    b = run("verify-certificate", "bad.json", cwd=tmp_path)
    assert b.returncode == 1 and "invalid" in b.stdout
    # the verdict as JSON: on stdout alone with --json - (--verbose: the messages on stderr), or a file
    vj = run("verify-certificate", "cert.json", "--json", "-", "--verbose", cwd=tmp_path)
    assert vj.returncode == 0 and "valid" in vj.stderr
    verdict = strict(vj.stdout)
    assert verdict["valid"] is True and verdict["problems"] == [] and verdict["residual"] <= 1e-12
    assert verdict["num_components"] == len(cert["weights"])
    bj = run("verify-certificate", "bad.json", "--json", "bad_verdict.json", cwd=tmp_path)
    assert bj.returncode == 1 and "invalid" in bj.stdout
    bad_verdict = strict((tmp_path / "bad_verdict.json").read_text())
    assert bad_verdict["valid"] is False and len(bad_verdict["problems"]) >= 1
    assert all(f"invalid: {p}" in " ".join(bj.stdout.split()) for p in bad_verdict["problems"])
    (tmp_path / "junk.json").write_text('{"format": "ldpopt.spr_certificate", "eps": 1}')
    j = run("verify-certificate", "junk.json", cwd=tmp_path)
    assert j.returncode == 2 and j.stderr.strip().count("\n") == 0 and "missing key" in j.stderr


def test_compare_json_dash_inline_distributions_and_refusals(tmp_path):
    path, _ = mechanism_file(tmp_path)
    spec0 = ",".join(f"{a}={p}" for a, p in zip(LABELS, [0.2] * 5, strict=True))
    spec1 = ",".join(f"{a}={p}" for a, p in zip(LABELS, P1, strict=True))
    r = run("compare", path, "--p0", spec0, "--p1", spec1, "--divergence", "tv", "--json", "-", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    cert = strict(r.stdout)
    assert cert["p0"] == [0.2] * 5 and [row["divergence"] for row in cert["dominance"]] == ["tv"]
    assert recheck(cert) <= 1e-12
    # a privacy level the channel does not meet: refused, naming the entries
    e = run("compare", path, "--eps", "0.5", cwd=tmp_path)
    assert e.returncode == 2 and "is not eps-LDP for eps=0.5" in e.stderr and "] = " in e.stderr
    assert e.stderr.strip().count("\n") == 0


def test_paper_example_b2_certificate_verifies(tmp_path):
    """Example B.2's three SPR channels and weights (eps = 1, D = 17 + 14e), written as floats."""
    e = math.e
    D = 17 + 14 * e
    theta = [10, 4, 3, 7, 7]
    intervals = [(0, 0), (0, 1), (1, 1), (1, 4), (2, 4)]
    Q = np.array(
        [
            [t * (e if a <= i <= b else 1) for t, (a, b) in zip(theta, intervals, strict=True)]
            for i in range(5)
        ]
    )
    Q = Q / D
    layers = [((0, 3), 7), ((1, 4), 4), ((0, 2, 4), 3)]
    comps, parts, weights = [], [], []
    for outs, lam in layers:
        s = len(outs)
        C = np.zeros((5, 5))
        blocks = []
        for y in outs:
            a, b = intervals[y]
            C[:, y] = 1 / (e + s - 1)
            C[a : b + 1, y] = e / (e + s - 1)
            blocks.append(list(range(a, b + 1)))
        comps.append(C.tolist())
        parts.append(blocks)
        weights.append(lam * (e + s - 1) / D)
    cert = {
        "format": "ldpopt.spr_certificate",
        "format_version": 1,
        "eps": 1.0,
        "p0": [0.05, 0.1, 0.2, 0.3, 0.35],
        "p1": [0.35, 0.3, 0.2, 0.1, 0.05],
        "matrix": Q.tolist(),
        "weights": weights,
        "partitions": parts,
        "placements": [list(outs) for outs, _ in layers],
        "components": comps,
    }
    (tmp_path / "b2.json").write_text(json.dumps(cert))
    v = run("verify-certificate", "b2.json", cwd=tmp_path)
    assert v.returncode == 0, v.stdout + v.stderr


def test_compare_reads_the_pair_from_a_file(tmp_path):
    path, _ = mechanism_file(tmp_path)
    # counts, rows in another order than the mechanism's labels; a column that is not used
    counts0, counts1 = [1, 6, 2, 8, 3], [6, 2, 5, 1, 6]
    rows = [f"{lab},{a},{b},x" for lab, a, b in zip(LABELS, counts0, counts1, strict=True)][::-1]
    (tmp_path / "pair.csv").write_text("sym,n0,n1,note\n" + "\n".join(rows) + "\n")
    args = ["--from", "pair.csv", "--p0-col", "n0", "--p1-col", "n1", "--label-col", "sym"]
    r = run("compare", path, *args, "--normalize", "--divergence", "tv", "--json", "-", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    cert = strict(r.stdout)
    # counts / total (20 each), in the mechanism's label order
    assert cert["p0"] == [c / 20 for c in counts0] and cert["p1"] == [c / 20 for c in counts1]
    assert recheck(cert) <= 1e-12
    # counts need --normalize; inline and --from together are refused; one line, exit 2
    for bad, says in (
        (args, "--from pair.csv: column 'n0' must sum to 1"),
        ([*args, "--p0", "a=1"], "either inline (--p0/--p1) or from a file (--from), not both"),
        (["--from", "pair.csv", "--label-col", "sym"], "missing column(s) p0, p1"),
    ):
        e = run("compare", path, *bad, cwd=tmp_path)
        assert e.returncode == 2 and says in e.stderr and e.stderr.strip().count("\n") == 0, e.stderr
