"""sample_size at the edges: tiny error targets, pairs too close to size, the saw-tooth scan's
bound — each a number or a one-line error naming the cause, never a crash or a hang."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

import ldpopt
from ldpopt.deploy.sizing import MAX_REPORTS

P0, P1 = [0.5, 0.3, 0.2], [0.1, 0.3, 0.6]


@pytest.mark.parametrize("alpha, beta", [(1e-17, 0.05), (0.05, 1e-17), (1e-300, 1e-300)])
def test_tiny_error_targets_give_a_size(alpha, beta):
    mech = ldpopt.optimal_mechanism(P0, P1, 1.0).mechanism
    res = ldpopt.sample_size(mech, P0, P1, alpha=alpha, beta=beta, method="chernoff")
    # the Chernoff count is a guarantee: both achieved bounds meet the targets
    assert res.n >= 1 and res.size <= alpha * (1 + 1e-9) and res.type_ii <= beta * (1 + 1e-9)
    stein = ldpopt.sample_size(mech, P0, P1, alpha=alpha, beta=beta, method="stein")
    assert 1 <= stein.n < MAX_REPORTS


@pytest.mark.parametrize(
    "p0, p1, eps",
    [
        (P0, P1, 1e-12),  # every report carries KL ~ 1e-25
        ([0.2, 0.3, 0.5], [0.2000001, 0.3, 0.4999999], 0.01),
        ([0.5000001, 0.4999999], [0.4999999, 0.5000001], 1.0),  # used to scan for hours
    ],
)
@pytest.mark.parametrize("method", ["auto", "exact", "chernoff", "saddlepoint", "stein"])
def test_pairs_beyond_the_cap_are_refused_by_name(p0, p1, eps, method):
    mech = ldpopt.optimal_mechanism(p0, p1, eps).mechanism
    with pytest.raises(ValueError, match=re.escape(f"more than {MAX_REPORTS:.0e} reports")):
        ldpopt.sample_size(mech, p0, p1, alpha=0.05, beta=0.05, method=method)


def test_cli_reports_the_cap_in_one_line():
    r = subprocess.run(
        [sys.executable, "-m", "ldpopt", "samplesize", "--p0", "0.5,0.3,0.2", "--p1", "0.1,0.3,0.6"]
        + ["--eps", "1e-12"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and "reports would be needed" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
