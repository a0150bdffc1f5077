"""``ldpopt design --target-n``: the smallest eps, run as a real command; the answer is checked by
forward calls of the library on both sides (the test's type-II error, the interval half-width)."""

from __future__ import annotations

import json

import pytest

import ldpopt
from cli_subprocess import ldpopt_cmd
from ldpopt.deploy.target import mixture_half_width

P0, P1 = "0.55,0.25,0.12,0.08", "0.1,0.2,0.3,0.4"
A, B = [0.55, 0.25, 0.12, 0.08], [0.1, 0.2, 0.3, 0.4]


def run(*args):
    return ldpopt_cmd(*args, timeout=120)


def type_ii(eps, n, alpha, divergence):
    mech = ldpopt.optimal_mechanism(A, B, eps, divergence).mechanism
    return ldpopt.LikelihoodRatioTest(mech, A, B, alpha, randomized=True).design(n).type_ii


def test_target_n_test():
    r = run("design", "--p0", P0, "--p1", P1, "--target-n", 40, "--alpha", 0.05, "--beta", 0.1, "--json", "-")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["target"] == "test" and doc["divergence"] == "kl"
    assert type_ii(doc["eps"], 40, 0.05, "kl") <= 0.1 < type_ii(doc["eps_below"], 40, 0.05, "kl")


def test_target_width():
    r = run("design", "--p0", P0, "--p1", P1, "--target-n", 2000, "--target-width", 0.05, "--pi", 0.3)
    assert r.returncode == 0, r.stderr
    assert "smallest eps" in r.stdout
    r = run(
        "design",
        "--p0",
        P0,
        "--p1",
        P1,
        "--target-n",
        2000,
        "--target-width",
        0.05,
        "--pi",
        0.3,
        "--json",
        "-",
    )
    doc = json.loads(r.stdout)
    for eps, ok in ((doc["eps"], True), (doc["eps_below"], False)):
        mech = ldpopt.optimal_mechanism(A, B, eps, "kl").mechanism
        assert (mixture_half_width(mech, A, B, 2000, 0.3, 0.95) <= 0.05) == ok


@pytest.mark.parametrize(
    "args, code, message",
    [
        (("--target-n", 40, "--beta", 1.5), 2, "--beta must be in (0, 1)"),
        (("--target-n", 40, "--eps", 1), 2, "drop --eps"),
        (("--target-width", 0.1), 2, "--target-width needs --target-n"),
        (("--target-n", 2, "--alpha", 0.01, "--beta", 0.01), 1, "not reached even at eps = 64"),
        (("--target-n", 40, "--divergence", "tv"), 2, "divergence must be 'chernoff' or 'kl'"),
    ],
)
def test_errors_are_one_line(args, code, message):
    r = run("design", "--p0", P0, "--p1", P1, *args)
    assert r.returncode == code and message in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
