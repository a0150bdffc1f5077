"""Exact eps of a channel (certify_epsilon) against an independent mpmath / Fraction oracle that
compares every input pair of every output, on random and adversarial matrices."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import ldpopt
from ldpopt.deploy.certify import FLOAT_REL_ERR, certify_epsilon, exp_at_least

pytestmark = pytest.mark.numerics

#: digits of the oracle; the levels compared are at most ~1500 and differ from a float by >= 1e-30
mpmath.mp.dps = 60


def oracle(m):
    """(level, exact largest ratio or None, the set of worst (y, x, x')) by brute force over every
    output and ordered input pair: log in mpmath, ratios as Fractions (no column max/min)."""
    m = np.asarray(m, dtype=float)
    k, n = m.shape
    best, best_r, worst = mpmath.mpf(0), Fraction(1), set()
    for y in range(n):
        for a in range(k):
            for b in range(k):
                qa, qb = Fraction(float(m[a, y])), Fraction(float(m[b, y]))
                if qa == 0:
                    continue
                if qb == 0:
                    if best_r is not None:
                        worst = set()
                    best, best_r = mpmath.inf, None
                    worst.add((y, a, b))
                    continue
                if best_r is None:
                    continue
                r = qa / qb
                if r > best_r:
                    best_r, worst = r, {(y, a, b)}
                    best = mpmath.log(mpmath.mpf(qa.numerator) / qa.denominator) - mpmath.log(
                        mpmath.mpf(qb.numerator) / qb.denominator
                    )
                elif r == best_r and r > 1:
                    worst.add((y, a, b))
    return best, best_r, worst


def check_against_oracle(m):
    c = certify_epsilon(m)
    level, ratio, worst = oracle(m)
    if ratio is None:
        assert c.epsilon == c.epsilon_upper == math.inf and c.max_ratio is None
        assert not c.satisfies(1e300)
    else:
        assert c.max_ratio == ratio
        # the floating-point level within its error bound; the upper bound proven and tight
        assert abs(mpmath.mpf(c.epsilon) - level) <= FLOAT_REL_ERR * level
        assert mpmath.mpf(c.epsilon_upper) >= level
        assert mpmath.mpf(c.epsilon_upper) - level <= 2 * FLOAT_REL_ERR * level + mpmath.mpf(2) ** -1074
        assert c.satisfies(c.epsilon_upper)
        if level > 0:
            below = float(np.nextafter(float(level), 0))  # the float below the exact level
            assert not c.satisfies(below)
    if worst:
        assert (c.output, *c.inputs) in worst
    return c


def random_matrix(rng, k, n, zeros=0.0, span=300):
    m = 10.0 ** rng.uniform(-span, 0, size=(k, n))
    m[rng.random((k, n)) < zeros] = 0.0
    m[:, 0] += 1.0  # no zero row
    return m / m.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("seed", range(12))
def test_random_matrices_match_the_oracle(seed):
    rng = np.random.default_rng(seed)
    k, n = rng.integers(1, 6, size=2)
    span = [0.5, 3, 30, 300][seed % 4]
    m = random_matrix(rng, int(k), int(n), zeros=0.15 if seed % 3 == 0 else 0.0, span=span)
    check_against_oracle(m)


@pytest.mark.parametrize(
    "m",
    [
        [[1e-300, 1 - 1e-300], [1e-301, 1 - 1e-301]],  # tiny entries: logs, not ratios
        [[5e-324, 1.0], [1e-300, 1.0]],  # the smallest subnormal
        [[1.0, 0.0], [1.0 - 1e-310, 1e-310]],  # ratio 1e310 overflows a float
        [[0.0, 1.0], [0.5, 0.5]],  # a zero beside a positive entry: inf
        [[0.5, 0.5, 0.0], [0.25, 0.75, 0.0]],  # an all-zero column is never produced: level 0
        [[0.5 + 2.0**-53, 0.5 - 2.0**-53], [0.5, 0.5]],  # ratio 1 + 2^-52: log1p keeps it
        [[0.3, 0.7]],  # one input: level 0
        [[0.5, 0.5], [0.5, 0.5]],
        [[0.2, 0.3, 0.5], [0.4, 0.35, 0.25], [0.6, 0.1, 0.3]],  # worst pair in the middle column
    ],
)
def test_adversarial_matrices_match_the_oracle(m):
    check_against_oracle(m)


def test_equal_columns_and_rr():
    rr = ldpopt.randomized_response(5, 2.0)
    c = check_against_oracle(rr.matrix)
    assert c.candidates >= 1
    assert c.satisfies(2.0 * (1 + 1e-12)) and not c.satisfies(2.0 * (1 - 1e-12))


def test_large_matrix():
    # 10^4 x 10^4: one pass of numpy, exact work on one column (time: benchmarks/bench_certify.py)
    k = 10_000
    m = np.full((k, k), 1e-4)
    m[7, 17] += 5e-5
    m[7, 18] -= 5e-5
    c = certify_epsilon(m)
    assert c.output == 18 and c.inputs[1] == 7
    assert c.max_ratio == Fraction(1e-4) / Fraction(1e-4 - 5e-5)
    level = mpmath.log(mpmath.mpf(1e-4)) - mpmath.log(mpmath.mpf(1e-4 - 5e-5))
    assert mpmath.mpf(c.epsilon_upper) >= level >= mpmath.mpf(c.epsilon_upper) * (1 - 2 * FLOAT_REL_ERR)


@pytest.mark.parametrize("seed", range(4))
def test_exp_at_least_against_mpmath(seed):
    # ratios within a few ulps of e^x, and far from it (the bit-length shortcut), against mpmath
    rng = np.random.default_rng(seed)
    mpmath.mp.dps = 400
    try:
        for x in rng.uniform(0, 50, 20).tolist() + [1e-300, 2.0**-30, 700.0, 1500.0, 1e6]:
            e = mpmath.exp(mpmath.mpf(x))
            for shift in (-3, -1, 1, 3):
                f = math.exp(x) if x < 700 else 1e300
                r = Fraction(f) * (1 + Fraction(shift, 2**52))
                assert exp_at_least(x, r) == (e >= mpmath.mpf(r.numerator) / r.denominator)
    finally:
        mpmath.mp.dps = 60


def test_exp_at_least_decides_near_ties():
    # the float nearest log 3 and its neighbours, against 400-digit mpmath
    x = math.log(3)
    mpmath.mp.dps = 400
    try:
        for e in (float(np.nextafter(x, 0)), x, float(np.nextafter(x, 4))):
            assert exp_at_least(e, Fraction(3)) == (mpmath.exp(mpmath.mpf(e)) >= 3)
    finally:
        mpmath.mp.dps = 60
    assert exp_at_least(0.0, Fraction(1)) and not exp_at_least(0.0, Fraction(3, 2))


def test_labels_and_mechanisms():
    mech = ldpopt.randomized_response(3, 1.0, labels=["a", "b", "c"])
    c = certify_epsilon(mech)
    assert set(c.inputs) <= {"a", "b", "c"} and c.inputs[0] != c.inputs[1]
    c = certify_epsilon([[0.75, 0.25], [0.25, 0.75]], labels=["x", "y"], output_labels=["no", "yes"])
    assert c.inputs == ("x", "y") and c.output == "no"


def test_normalize():
    c = certify_epsilon([[3, 1], [1, 3]], normalize=True)
    assert c.max_ratio == 3
    with pytest.raises(ValueError, match="rows must sum to 1, row 0 .*normalize=True"):
        certify_epsilon([[3, 1], [1, 3]])


@pytest.mark.parametrize(
    "bad, exc, match",
    [
        ([[0.5, 0.5], [1.5, -0.5]], ValueError, "non-negative"),
        ([[0.5, np.nan], [0.5, 0.5]], ValueError, "finite"),
        ([0.5, 0.5], ValueError, "2-D"),
        ([["a", "b"]], TypeError, "matrix must be"),
        (np.zeros((0, 2)), ValueError, "non-empty"),
    ],
)
def test_bad_input(bad, exc, match):
    with pytest.raises(exc, match=match):
        certify_epsilon(bad)


def test_bad_claims_and_labels():
    c = certify_epsilon([[0.75, 0.25], [0.25, 0.75]])
    with pytest.raises(ValueError, match="eps must be >= 0"):
        c.satisfies(-1.0)
    with pytest.raises(TypeError, match="eps must be a real number"):
        c.satisfies("1")
    assert c.satisfies(np.float64(math.inf)) and c.satisfies(np.float32(1.1))
    with pytest.raises(ValueError, match="labels must name the 2 rows"):
        certify_epsilon([[0.75, 0.25], [0.25, 0.75]], labels=["a"])
