"""Shuffle-model accounting: published values, an independent brute-force oracle, exact lower bounds.

The oracle builds the clone pair (P, Q) of Feldman, McMillan and Talwar by convolving the users
one at a time on the grid of (count of label 1, count of label 2) and sums max(P - e^eps Q, 0)
over the whole grid: no cut-off, no binomial CDF, no window.  The lower bounds are the exact
shuffled histograms of randomized response on fixed datasets (any valid upper bound must be at
least as large).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import ldpopt
from ldpopt.deploy.shuffle import (
    CDF_REL_ERR,
    EPS_TOL,
    PMF_REL_ERR,
    TAIL_FRACTION,
    central_epsilon,
    clone_delta,
    closed_form_validity,
    local_epsilon_for,
    rr_outputs,
)

U = 2.0**-53

# The authors' reference implementation (apple/ml-shuffling-amplification, README) publishes, for
# n = 100000 reports of 4-LDP randomizers and delta = 1e-6: closed form 0.5378040242374512;
# numerical analysis between 0.1675385583317841 (lower) and 0.172790550755978 (upper), from 10
# bisection steps on [0, 0.5378...] (so the lower value is within 0.5378 / 2^10 of a lower bound).
PUBLISHED_CLOSED = 0.5378040242374512
PUBLISHED_LOWER = 0.1675385583317841
PUBLISHED_UPPER = 0.172790550755978
PUBLISHED_RESOLUTION = PUBLISHED_CLOSED / 2**10


def _bisect_eps(delta_of, delta: float, hi: float, tol: float = 1e-10) -> float:
    lo = 0.0
    if delta_of(0.0) <= delta:
        return 0.0
    while hi - lo > tol:
        mid = (lo + hi) / 2
        if delta_of(mid) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


def _hockey(p: np.ndarray, q: np.ndarray, eps: float) -> float:
    g = math.exp(eps)
    return max(float(np.maximum(p - g * q, 0).sum()), float(np.maximum(q - g * p, 0).sum()))


def _oracle_pair(eps0: float, n: int, p_clone: float) -> tuple[np.ndarray, np.ndarray]:
    """(P, Q) on the grid (a, b), a, b <= n, by convolving the n users one by one."""
    alpha = math.exp(eps0) / (1 + math.exp(eps0))
    rest = np.zeros((n + 1, n + 1))
    rest[0, 0] = 1.0
    for _ in range(n - 1):
        new = (1 - p_clone) * rest
        new[1:, :] += p_clone / 2 * rest[:-1, :]
        new[:, 1:] += p_clone / 2 * rest[:, :-1]
        rest = new
    p = np.zeros_like(rest)
    q = np.zeros_like(rest)
    p[1:, :] += alpha * rest[:-1, :]
    p[:, 1:] += (1 - alpha) * rest[:, :-1]
    q[1:, :] += (1 - alpha) * rest[:-1, :]
    q[:, 1:] += alpha * rest[:, :-1]
    return p, q


def _rr_histogram(eps0: float, s: int, inputs: list[int]) -> np.ndarray:
    """Exact law of the counts (of outputs 0 and 1; the rest is their complement) of s-ary RR."""
    n = len(inputs)
    q = 1 / (math.exp(eps0) + s - 1)
    law = np.zeros((n + 1, n + 1))
    law[0, 0] = 1.0
    for x in inputs:
        row = np.full(s, q)
        row[x] = 1 - (s - 1) * q
        new = (1 - row[0] - row[1]) * law
        new[1:, :] += row[0] * law[:-1, :]
        new[:, 1:] += row[1] * law[:, :-1]
        law = new
    return law


# ---------------------------------------------------------------------------------------------
# published values
# ---------------------------------------------------------------------------------------------
@pytest.mark.numerics
def test_closed_form_reproduces_the_published_value():
    # a dozen correctly rounded operations and libm calls (each <= 3u): 64u is generous
    got = central_epsilon(4, 100_000, 1e-6, "closed_form").value
    assert abs(got - PUBLISHED_CLOSED) <= 64 * U * PUBLISHED_CLOSED


def test_numerical_lies_in_the_published_bracket():
    got = central_epsilon(4, 100_000, 1e-6, "numerical").value
    assert PUBLISHED_LOWER - PUBLISHED_RESOLUTION <= got <= PUBLISHED_UPPER


def test_methods_are_ordered_and_never_looser_than_eps0():
    for eps0, n, delta in ((0.5, 10_000, 1e-6), (2.0, 50_000, 1e-8), (4.0, 100_000, 1e-6)):
        num = central_epsilon(eps0, n, delta).value
        rr2 = central_epsilon(eps0, n, delta, "rr", outputs=2).value
        rr9 = central_epsilon(eps0, n, delta, "rr", outputs=9).value
        assert rr2 <= num <= eps0 and rr9 <= num
        if math.exp(eps0) > 2:  # 2q > e^-eps0 for s = 2: strictly tighter
            assert rr2 < num
        if eps0 <= closed_form_validity(n, delta):
            assert num <= central_epsilon(eps0, n, delta, "closed_form").value <= eps0
    assert central_epsilon(1.0, 1, 1e-6).value <= 1.0
    assert central_epsilon(30.0, 10, 1e-6).value <= 30.0


# ---------------------------------------------------------------------------------------------
# independent oracle
# ---------------------------------------------------------------------------------------------
@pytest.mark.numerics
@pytest.mark.parametrize(("eps0", "n"), [(0.5, 40), (1.0, 60), (2.5, 50)])
def test_clone_delta_matches_the_brute_force_pair(eps0, n):
    p, q = _oracle_pair(eps0, n, math.exp(-eps0))
    for eps in (0.0, 0.1, 0.3, 0.6 * eps0):
        g = math.exp(eps)
        want = _hockey(p, q, eps)
        got = clone_delta(eps, eps0, n, p_clone=math.exp(-eps0))
        # oracle: (n+1)^2 terms, each built by <= 3n roundings of non-negative terms: n^3 * 8u;
        # library: its own documented allowances CDF_REL_ERR * (1 + e^eps) and PMF_REL_ERR * delta
        bound = 8 * n**3 * U + 2 * CDF_REL_ERR * (1 + g) + 2 * PMF_REL_ERR * want
        assert want - 8 * n**3 * U <= got <= want + bound


def test_numerical_eps_matches_the_oracle_eps():
    eps0, n, delta = 1.0, 60, 1e-3
    p, q = _oracle_pair(eps0, n, math.exp(-eps0))
    want = _bisect_eps(lambda e: _hockey(p, q, e), delta, eps0)
    got = central_epsilon(eps0, n, delta).value
    # the library's delta is at most 2 * TAIL_FRACTION * delta + allowance above the oracle's, which
    # moves eps by far less than the bisection tolerances
    assert want - 1e-9 <= got <= want + EPS_TOL + 1e-6


@pytest.mark.parametrize(("eps0", "s"), [(1.0, 2), (2.0, 3), (0.7, 4)])
def test_rr_bound_matches_its_oracle_and_exceeds_exact_shuffled_rr(eps0, s):
    n = 40
    q = 1 / (math.exp(eps0) + s - 1)
    p_pair, q_pair = _oracle_pair(eps0, n, 2 * q)
    weight = (math.exp(eps0) + 1) * q
    datasets = [[0] * (n - 1), [1] * (n - 1), [s - 1] * (n - 1), [i % s for i in range(n - 1)]]
    for eps in (0.05, 0.2, 0.5 * eps0):
        bound = clone_delta(eps, eps0, n, p_clone=2 * q, weight=weight)
        want = weight * _hockey(p_pair, q_pair, eps)
        assert abs(bound - want) <= 8 * n**3 * U + 4 * CDF_REL_ERR + 2 * PMF_REL_ERR * want
        for rest in datasets:
            exact = _hockey(_rr_histogram(eps0, s, [0, *rest]), _rr_histogram(eps0, s, [1, *rest]), eps)
            assert exact <= bound + 8 * n**3 * U


def test_generic_bound_is_above_the_exact_shuffled_binary_rr():
    eps0, n, delta = 1.5, 80, 1e-4
    rest = [0] * ((n - 1) // 2) + [1] * (n - 1 - (n - 1) // 2)
    h0, h1 = _rr_histogram(eps0, 2, [0, *rest]), _rr_histogram(eps0, 2, [1, *rest])
    lower = _bisect_eps(lambda e: _hockey(h0, h1, e), delta, eps0)
    assert central_epsilon(eps0, n, delta, "rr", outputs=2).value >= lower - 1e-9
    assert central_epsilon(eps0, n, delta).value >= lower - 1e-9


# ---------------------------------------------------------------------------------------------
# inversion, structure, validity
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("method", "outputs"), [("numerical", None), ("rr", 5), ("closed_form", None)])
def test_local_epsilon_is_the_largest_meeting_the_target(method, outputs):
    target, n, delta = 0.4, 200_000, 1e-7
    res = local_epsilon_for(target, n, delta, method, outputs=outputs)
    assert res.value >= target and res.central <= target
    assert central_epsilon(res.value, n, delta, method, outputs=outputs).value <= target + EPS_TOL
    above = res.value + 1e-6
    if method != "closed_form" or above <= closed_form_validity(n, delta):
        assert central_epsilon(above, n, delta, method, outputs=outputs).value > target


def test_closed_form_inversion_stops_at_its_validity_limit():
    res = local_epsilon_for(3.0, 1000, 1e-6, "closed_form")
    assert res.value == 3.0  # the closed form is not proved at any eps0 >= 3 here


def test_rr_outputs_recognises_spr_and_krr():
    p0, p1 = np.array([0.5, 0.2, 0.2, 0.1]), np.array([0.1, 0.2, 0.3, 0.4])
    spr = ldpopt.optimal_mechanism(p0, p1, 2.0).mechanism
    assert rr_outputs(spr) == spr.num_outputs
    assert rr_outputs(ldpopt.randomized_response(5, 1.0)) == 5
    general = ldpopt.Mechanism(np.array([[0.5, 0.3, 0.2], [0.3, 0.4, 0.3]]), 1.0)
    assert rr_outputs(general) is None


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: central_epsilon(8, 1000, 1e-6, "closed_form"), "proved only for eps0"),
        (lambda: central_epsilon(1, 1000, 1e-6, "rr"), "outputs"),
        (lambda: central_epsilon(1, 1000, 1e-6, "numerical", outputs=3), "outputs"),
        (lambda: central_epsilon(1, 1000, 1e-6, "rr", outputs=1), "outputs"),
        (lambda: central_epsilon(1, 1000, 1.5), "delta"),
        (lambda: central_epsilon(1, 0, 1e-6), "n"),
        (lambda: central_epsilon(-1, 10, 1e-6), "eps0"),
        (lambda: central_epsilon(math.inf, 10, 1e-6), "eps0"),
        (lambda: central_epsilon(800, 10, 1e-6), "eps0"),
        (lambda: central_epsilon(1, 10**11, 1e-6, "rr", outputs=3), "n <="),
        (lambda: central_epsilon(1, 10, 1e-6, "bogus"), "method"),
        (lambda: local_epsilon_for(0, 10, 1e-6), "central_eps"),
    ],
)
def test_refuses_inputs_outside_the_validity_range(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_numpy_scalars_are_accepted():
    a = central_epsilon(np.float32(1.0), np.int64(10_000), np.float64(1e-6))
    b = central_epsilon(1.0, 10_000, 1e-6)
    assert a.value == b.value and TAIL_FRACTION > 0
