"""Chernoff-information-optimal mechanisms: brute force, vertices, certificate, invariances."""

from __future__ import annotations

import itertools
import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ldpopt
from _errmodel import U
from reference import ldp_channel_vertices

#: the numerics tests: CI also runs them on numpy's AVX2 and baseline loops (.ci/npy_disable.py)
pytestmark = pytest.mark.numerics

#: the issue's promise: upper_bound - value <= CERT_GAP * max(1, value)
CERT_GAP = 1e-9


def value_bound(value: float, k: int, eps: float) -> float:
    """Error bound of a reported Chernoff value against the exact value of its partition.

    The value is (1 - lam) D_lam of the outputs (``renyi_value``) at the maximising lam:
    * near S = 1 (centred form): each of the s <= k block terms is a nonnegative centred power
      term within ~8 R_FN u = 24u of itself (log1p, exp/expm1 and a few products), their
      compensated sum adds s u, log1p 3u and the (1 - lam) factor and division 2u; the block sums
      and d enter with <= 4u and the centred term is quadratic in d (8u): < (k + 40) 24u relative;
    * far from S = 1 (log-sum-exp): the log terms log y + lam log(x/y) are of size <= max(1, eps)
      (every output mass is >= e^-eps / (1 + (s-1) e^-eps)), each within 4u of that size, so
      log S is within ~8 (k + 2) u max(1, eps) absolute.
    * the data: float p and q sum to 1 only within ~k u each, and the centred form (which assumes
      sum x = sum y) then differs from -log S of the float inputs by up to A |sum p - sum q|
      <= 2 k u A, A = 1 - e^-eps <= min(1, eps): an absolute term that dominates at tiny eps
      (C ~ eps^2: the relative precision there is ~u / eps, as for KL in ``docs/spr.md``).
    The maximiser is bracketed to 1e-14 and the curve is flat there (second order, < 1e-26).
    All parts are bounded together; the sum is far below the issue's 1e-10.
    """
    scale = 1.0 if not math.isfinite(eps) else max(1.0, min(eps, 800.0))
    data = 4 * (k + 2) * U * min(1.0, eps)
    return (k + 40) * 24 * U * abs(value) + 8 * (k + 2) * U * scale * min(1.0, 8.0 * abs(value)) + data


# ---------------------------------------------------------------------------------------------
# independent references (mpmath; no library code)
# ---------------------------------------------------------------------------------------------
def _mp_curve_max(xs, ys, total) -> mp.mpf:
    """max over lam in [0, 1] of -log(sum x^lam y^(1-lam) / total), golden section (concave)."""

    def h(lam):
        s = mp.fsum(x**lam * y ** (1 - lam) for x, y in zip(xs, ys, strict=True) if x > 0 and y > 0)
        return mp.inf if s == 0 else -mp.log(s / total)

    lo, hi = mp.mpf(0), mp.mpf(1)
    g = (mp.sqrt(5) - 1) / 2
    a, b = hi - g * (hi - lo), lo + g * (hi - lo)
    ha, hb = h(a), h(b)
    for _ in range(90):  # 0.618^90 ~ 1e-19: the value is flat to ~1e-38 there
        if ha < hb:
            lo, a, ha = a, b, hb
            b = lo + g * (hi - lo)
            hb = h(b)
        else:
            hi, b, hb = b, a, ha
            a = hi - g * (hi - lo)
            ha = h(a)
    return max(ha, hb, h(mp.mpf(0)), h(mp.mpf(1)))


def brute_force(p, q, eps: float, l: int | None = None) -> float:
    """Max over every contiguous partition of the LR-sorted alphabet (at most l blocks) of the
    SPR mechanism's Chernoff information, in 40-digit arithmetic."""
    mp.mp.dps = 40
    order = sorted(range(len(p)), key=lambda i: math.inf if q[i] == 0 else p[i] / q[i])
    P = [mp.mpf(float(p[i])) for i in order]
    Q = [mp.mpf(float(q[i])) for i in order]
    k = len(P)
    c = mp.e ** (-mp.mpf(eps)) if math.isfinite(eps) else mp.mpf(0)
    best = mp.mpf(0)
    for s in range(1, (l or k) + 1):
        for cut in itertools.combinations(range(1, k), s - 1):
            b = [0, *cut, k]
            xs = [c + (1 - c) * mp.fsum(P[b[j] : b[j + 1]]) for j in range(s)]
            ys = [c + (1 - c) * mp.fsum(Q[b[j] : b[j + 1]]) for j in range(s)]
            best = max(best, _mp_curve_max(xs, ys, 1 + (s - 1) * c))
    return float(best)


def _float_chernoff(m0, m1) -> float:
    """Chernoff information by scipy's bounded Brent on a float evaluation (vertices)."""
    from scipy.optimize import minimize_scalar

    pos = (m0 > 0) & (m1 > 0)

    def neg_h(lam):
        return math.log(float(np.sum(m0[pos] ** lam * m1[pos] ** (1 - lam))))

    r = minimize_scalar(neg_h, bounds=(0.0, 1.0), method="bounded", options={"xatol": 1e-12})
    return max(-float(r.fun), -neg_h(0.0), -neg_h(1.0))


def _instance(rng, k, zeros=False):
    p, q = rng.dirichlet(np.ones(k) * 0.8), rng.dirichlet(np.ones(k) * 0.8)
    if zeros and k >= 3:
        p[0] = 0.0
        q[1] = 0.0
        p, q = p / p.sum(), q / q.sum()
    return p, q


def _check_against(res, ref: float, k: int, eps: float) -> None:
    assert abs(res.value - ref) <= value_bound(ref, k, eps), (res.value, ref)
    # the certificate bounds every mechanism, in particular the brute-force optimum
    assert res.upper_bound >= ref
    assert res.upper_bound - res.value <= CERT_GAP * max(1.0, res.value)


# ---------------------------------------------------------------------------------------------
# exactness
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("k", "eps", "zeros", "budget"),
    [
        (2, 1e-8, False, None),
        (3, 0.5, False, None),
        (4, 2.0, True, None),
        (5, 1.0, False, 2),
        (5, 7.0, False, None),
        (6, math.inf, True, None),
        (6, 3.0, False, 3),
        (7, 1e3, False, None),
        (7, 0.05, False, None),
    ],
)
def test_equals_brute_force_over_partitions(k, eps, zeros, budget):
    rng = np.random.default_rng(1000 + k)
    p, q = _instance(rng, k, zeros)
    res = ldpopt.optimal_mechanism(p, q, eps, "chernoff", max_outputs=budget)
    _check_against(res, brute_force(p, q, eps, budget), k, eps)
    assert budget is None or res.num_outputs <= budget
    # the value is the returned mechanism's own Chernoff information
    m0, m1 = res.mechanism.output_distributions(p, q)
    assert abs(ldpopt.chernoff_information(m0, m1).value - res.value) <= 2 * value_bound(res.value, k, eps)


@pytest.mark.parametrize(("k", "l", "eps"), [(3, 3, 0.7), (3, 3, 2.5), (4, 3, 1.5)])
def test_equals_every_vertex_of_the_channel_polytope(k, l, eps):
    # C is convex in the channel, so its maximum over eps-LDP channels is at a vertex
    rng = np.random.default_rng(2000 + 10 * k + l)
    p, q = _instance(rng, k)
    best = max(_float_chernoff(Q.T @ p, Q.T @ q) for Q in ldp_channel_vertices(k, l, eps))
    res = ldpopt.optimal_mechanism(p, q, eps, "chernoff", max_outputs=l)
    # the vertex values are floats from cdd's vertices (~1e-15) and a 1e-12 bracket (flat: 1e-24)
    assert abs(res.value - best) <= 1e-12
    assert res.upper_bound >= best - 1e-12


@pytest.mark.parametrize(("seed", "eps"), [(15, 3.5), (7, 3.5)])
def test_equals_every_vertex_with_four_outputs(seed, eps):
    # k = 4 symbols, 4 outputs (904 vertices): the maximum over every eps-LDP channel of 4 symbols
    # (C is convex in the channel); instances whose optimum uses all four outputs
    rng = np.random.default_rng(seed)
    p, q = rng.dirichlet(np.ones(4) * 0.8), rng.dirichlet(np.ones(4) * 0.8)
    best = max(_float_chernoff(Q.T @ p, Q.T @ q) for Q in ldp_channel_vertices(4, 4, eps))
    res = ldpopt.optimal_mechanism(p, q, eps, "chernoff")
    assert res.num_outputs == 4
    # as above: the vertex values are within ~1e-15 of C, far inside the 1e-10
    assert abs(res.value - best) <= 1e-12
    assert res.upper_bound >= best - 1e-12


def test_tiny_and_huge_eps_and_ties():
    # two symbols: the only informative mechanism is binary RR; its C is ~eps^2 (p - q)^2 / 8 ... at
    # eps = 1e-8 the value must keep its relative precision
    p, q = np.array([0.3, 0.7]), np.array([0.6, 0.4])
    for eps in (1e-8, 1e-4):
        res = ldpopt.optimal_mechanism(p, q, eps, "chernoff")
        ref = brute_force(p, q, eps)
        assert 0 < ref < 1e-6
        assert abs(res.value - ref) <= value_bound(ref, 2, eps)
    # a swap-symmetric instance: the optimum is at lam = 1/2 and ties between mirrored partitions
    p = np.array([0.1, 0.2, 0.3, 0.4])
    res = ldpopt.optimal_mechanism(p, p[::-1], 2.0, "chernoff")
    assert abs(res.lam - 0.5) < 1e-9
    _check_against(res, brute_force(p, p[::-1], 2.0), 4, 2.0)


def test_degenerate_instances():
    p = np.array([0.2, 0.3, 0.5])
    for eps in (1e-8, 1.0, math.inf):
        res = ldpopt.optimal_mechanism(p, p, eps, "chernoff")
        assert res.value == 0.0 and res.upper_bound == 0.0
    # disjoint supports without privacy: the likelihood-ratio quantizer separates them
    res = ldpopt.optimal_mechanism([0.5, 0.5, 0, 0], [0, 0, 0.5, 0.5], math.inf, "chernoff")
    assert res.value == math.inf
    # one symbol with zero mass under both, and eps = inf with zeros: brute force above covers it
    res = ldpopt.optimal_mechanism([0.5, 0.0, 0.5], [0.25, 0.0, 0.75], 1.0, "chernoff")
    assert res.value > 0 and sorted(i for b in res.partition for i in b) == [0, 1, 2]


def test_errors_as_for_the_other_divergences():
    with pytest.raises(ValueError, match="eps"):
        ldpopt.optimal_mechanism([0.5, 0.5], [0.2, 0.8], -1.0, "chernoff")
    with pytest.raises(ValueError, match="max_outputs"):
        ldpopt.optimal_mechanism([0.5, 0.5], [0.2, 0.8], 1.0, "chernoff", max_outputs=0)
    with pytest.raises(ValueError, match="not an f-divergence"):
        ldpopt.chernoff().perspective(np.array([0.5]), np.array([0.5]))


@pytest.mark.nojit
def test_readable_and_compiled_paths_agree():
    rng = np.random.default_rng(7)
    for eps in (0.3, 4.0, math.inf):
        p, q = _instance(rng, 6)
        a = ldpopt.optimal_mechanism(p, q, eps, "chernoff", method="dp")
        b = ldpopt.optimal_mechanism(p, q, eps, "chernoff")
        assert abs(a.value - b.value) <= value_bound(a.value, 6, eps)


# ---------------------------------------------------------------------------------------------
# invariances
# ---------------------------------------------------------------------------------------------
pairs = st.integers(2, 9).flatmap(
    lambda k: st.tuples(
        st.lists(st.floats(0.01, 1.0), min_size=k, max_size=k),
        st.lists(st.floats(0.01, 1.0), min_size=k, max_size=k),
        st.permutations(range(k)),
    )
)


def _norm(x):
    x = np.asarray(x, dtype=float)
    return x / x.sum()


@settings(max_examples=25, deadline=None)
@given(pairs, st.floats(0.05, 12.0))
def test_invariant_under_permutation_and_swap(pair, eps):
    a, b, perm = pair
    p, q = _norm(a), _norm(b)
    k = len(p)
    v = ldpopt.optimal_mechanism(p, q, eps, "chernoff")
    tol = 2 * value_bound(v.value, k, eps) + CERT_GAP * max(1.0, v.value)
    perm = list(perm)
    assert abs(ldpopt.optimal_mechanism(p[perm], q[perm], eps, "chernoff").value - v.value) <= tol
    # C(M0, M1) = C(M1, M0) (lam -> 1 - lam)
    w = ldpopt.optimal_mechanism(q, p, eps, "chernoff")
    assert abs(w.value - v.value) <= tol
    assert abs(w.lam - (1.0 - v.lam)) <= 1e-6 or abs(w.value - v.value) <= tol


@settings(max_examples=15, deadline=None)
@given(pairs, st.floats(0.05, 6.0), st.floats(1.1, 3.0))
def test_monotone_in_eps_and_budget(pair, eps, factor):
    a, b, _ = pair
    p, q = _norm(a), _norm(b)
    k = len(p)
    lo = ldpopt.optimal_mechanism(p, q, eps, "chernoff")
    hi = ldpopt.optimal_mechanism(p, q, eps * factor, "chernoff")
    # a larger eps allows every channel of the smaller one: the optimum cannot decrease (the
    # certificates of the two solves bound each value from above)
    assert hi.upper_bound >= lo.value
    assert hi.value >= lo.value - CERT_GAP * max(1.0, lo.value)
    prev = 0.0
    for budget in range(1, k + 1):
        r = ldpopt.optimal_mechanism(p, q, eps, "chernoff", max_outputs=budget)
        assert r.num_outputs <= budget
        assert r.value >= prev - CERT_GAP * max(1.0, prev)
        prev = r.value


# ---------------------------------------------------------------------------------------------
# the helpers and the batched path
# ---------------------------------------------------------------------------------------------
def test_chernoff_information_and_utility():
    p, q = np.array([0.1, 0.2, 0.7]), np.array([0.5, 0.3, 0.2])
    c = ldpopt.chernoff_information(p, q)
    mp.mp.dps = 40
    ref = _mp_curve_max([mp.mpf(x) for x in p], [mp.mpf(x) for x in q], 1)
    assert abs(c.value - float(ref)) <= value_bound(float(ref), 3, math.inf)
    assert 0.0 < c.lam < 1.0
    assert ldpopt.f_divergence(p, q, "chernoff") == c.value
    rr = ldpopt.randomized_response(3, 1.0)
    assert rr.utility(p, q, "chernoff") == ldpopt.chernoff_information(*rr.output_distributions(p, q)).value
    # symmetric, zero for equal distributions, inf for disjoint supports
    assert ldpopt.chernoff_information(q, p).value == pytest.approx(c.value, rel=1e-14)
    assert ldpopt.chernoff_information(p, p).value == 0.0
    assert ldpopt.chernoff_information([1, 0], [0, 1]).value == math.inf


def test_sweep_matches_optimal_mechanism():
    rng = np.random.default_rng(3)
    p0s, p1s = rng.dirichlet(np.ones(5), 3), rng.dirichlet(np.ones(5), 3)
    grid = [0.5, 2.0, math.inf]
    res = ldpopt.sweep(p0s, p1s, grid, "chernoff", return_partitions=True, progress=False)
    for t in range(3):
        for e, eps in enumerate(grid):
            one = ldpopt.optimal_mechanism(p0s[t], p1s[t], eps, "chernoff")
            assert res.values[t, e] == one.value
            assert res.partitions[t][e] == one.partition
    ref = ldpopt.chernoff_information(p0s[0], p1s[0]).value
    assert abs(res.input_divergence[0] - ref) <= 2 * value_bound(ref, 5, math.inf)


def test_sample_size_reports_the_exact_chernoff_information():
    p, q = [0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1]
    res = ldpopt.optimal_mechanism(p, q, 1.0, "chernoff")
    size = ldpopt.sample_size(res.mechanism, p, q)
    m0, m1 = res.mechanism.output_distributions(p, q)
    assert size.chernoff_information == ldpopt.chernoff_information(m0, m1).value
