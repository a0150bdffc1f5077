"""The maximal-channel polytope: S, Q_ex(c), maximality, canonical form, Blackwell order, vertices."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ldpopt
from _errmodel import HIGHS_TOL, R_FN, U, gamma, within, within_all
from ldpopt.decision import polytope
from reference import polytope_vertices_bruteforce

#: the numerics tests: CI also runs them on numpy's AVX2 and baseline loops (.ci/npy_disable.py)
pytestmark = pytest.mark.numerics

#: ldpopt.decision.polytope.BLACKWELL_TOL, repeated on purpose: the garbling LP's accepted residual
BLACKWELL_TOL = 1e-9


def vertex_solve_err(S_B, c):
    """|computed - exact| (2-norm) of a vertex c solving S_B^T c = 1 on its support by Gaussian
    elimination with partial pivoting (cddlib's pivots counted the same): the exact solution for a
    matrix within eta = 2^(n-1) gamma_n relative (Wilkinson), so ||dc|| <= ||pinv|| eta ||S_B||_F ||c||."""
    n = S_B.shape[0]
    eta = 2 ** (n - 1) * gamma(n)
    return float(np.linalg.norm(np.linalg.pinv(S_B.T), 2) * eta * np.linalg.norm(S_B) * np.linalg.norm(c))


def _rr_weights(m, eps):
    # Q_ex of randomized response: singletons with c = 1 / (e^eps + m - 1)
    return {(x,): 1.0 / (math.exp(eps) + m - 1) for x in range(m)}


def test_s_matrix_entries_and_order():
    S = polytope.s_matrix(3, 1.0)
    assert S.shape == (6, 3)
    e = math.e
    # bitmask order: {0}, {1}, {0,1}, {2}, {0,2}, {1,2}; exp(1) (R_FN) against math.e (u / 2)
    rtol = (R_FN + 1) * U
    for row, ref in ((0, [e, 1, 1]), (2, [e, e, 1]), (5, [1, e, e])):
        assert within_all("S matrix entries", S[row], ref, rtol * np.array(ref))
    assert polytope.subset_rows(4).sum() == sum(bin(h).count("1") for h in range(1, 15))


def test_subset_rows_refuses_large_m_and_points_to_other_methods():
    with pytest.raises(ValueError, match="colgen"):
        polytope.subset_rows(polytope.ENUM_MAX_M + 1)


def test_q_ex_is_column_stochastic_ldp_and_maximal():
    m, eps = 4, 0.7
    mech = polytope.q_ex(_rr_weights(m, eps), eps, m)
    rr = ldpopt.randomized_response(m, eps).matrix
    # the weights 1 / (e^eps + m - 1) (R_FN + 3), / c0 (R_FN + 1), times the scaled rows (R_FN + 1),
    # the column sums (m) and the normalisation (1); RR's levels R_FN + 3 (tests/test_mechanism.py)
    rtol = (4 * R_FN + m + 9) * U
    assert within_all("Q_ex of RR weights vs RR", mech.matrix, rr, rtol * rr)
    assert ldpopt.is_maximal(mech)
    with pytest.raises(ValueError, match="polytope"):
        polytope.q_ex({(0,): 0.5, (1,): 0.5}, eps, 3)


def test_binary_inputs_have_a_single_maximal_channel():
    # Corollary 3.13: for |X| = 2 the polytope is one point and Q_ex is binary RR
    rows, verts = polytope.polytope_vertices(2, 1.3)
    assert verts.shape == (1, 2)
    ref = 1 / (math.exp(1.3) + 1)
    # cdd's float solve of S^T c = 1 on the 2 x 2 support (vertex_solve_err), the closed form's
    # rounding (exp R_FN, + 1, /: (R_FN + 2) u)
    S = polytope.s_matrix(2, 1.3)
    bound = vertex_solve_err(S, verts[0]) + (R_FN + 2) * U * ref
    assert within_all("binary polytope vertex", verts[0], ref, bound)


@pytest.mark.parametrize("m", [3, 4])
def test_vertices_match_bruteforce_bases(m):
    eps = 0.9
    rows, verts = polytope.polytope_vertices(m, eps)
    ref = polytope_vertices_bruteforce(m, eps)
    assert verts.shape == ref.shape
    # rows of both are in bitmask order vs itertools order: compare as sets of {subset: weight}
    subs = [frozenset(np.flatnonzero(r)) for r in rows]
    import itertools

    ref_subs = [frozenset(c) for r in range(1, m) for c in itertools.combinations(range(m), r)]
    pos = [ref_subs.index(s) for s in subs]
    S = polytope.s_matrix(m, eps)
    # the same exact vertices, computed by cdd and by numpy's LU: each within vertex_solve_err of
    # the exact one (the support's own system); a one-to-one match within the sum of the two
    theirs = [v[pos] for v in ref]
    used = set()
    for v in verts:
        sup = v > 1e-12 * v.max()
        tol = 2 * vertex_solve_err(S[sup], v[sup])
        dist = [float(np.linalg.norm(v - t)) for t in theirs]
        j = int(np.argmin(dist))
        assert j not in used and within("vertex vs brute-force basis", dist[j], 0.0, tol)
        used.add(j)
    # every vertex is a point of the polytope: a backward stable solve has residual at most
    # eta |S^T| |c| (eta = 2^(m-1) gamma_m), and the product adds n u |S^T| |c|
    eta = 2 ** (m - 1) * gamma(m) + S.shape[0] * U
    assert within_all("vertex residual", verts @ S, 1.0, eta * (np.abs(verts) @ np.abs(S)))


def test_vertex_enumeration_refuses_m6():
    with pytest.raises(ValueError, match="m <= 5"):
        polytope.polytope_vertices(6, 1.0)


def test_vertex_enumeration_without_pycddlib_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "cdd", None)  # as if the optional dependency were missing
    with pytest.raises(ldpopt.MissingExtraError, match=r"ldpopt\[vertex\]") as info:
        polytope.polytope_vertices(3, 1.0)
    assert info.value.extra == "vertex" and info.value.missing == "cdd"
    assert info.value.__cause__ is None and info.value.__suppress_context__
    with pytest.raises(ImportError, match="vertex enumeration"):
        ldpopt.optimal_channel(
            ldpopt.DecisionProblem(np.eye(3)[:, :2] * 0.5 + 1 / 6, np.eye(2)), 1.0, method="vertex"
        )


def test_is_maximal_examples():
    eps = 1.0
    assert ldpopt.is_maximal(ldpopt.randomized_response(5, eps))
    assert ldpopt.is_maximal(ldpopt.binary_mechanism([0.5, 0.3, 0.2], [0.2, 0.3, 0.5], eps))
    # RR at eps = 1 claimed as eps = 2: its columns have ratio e, not e^2
    weak = ldpopt.Mechanism(ldpopt.randomized_response(3, 1.0).matrix, 2.0)
    assert not ldpopt.is_maximal(weak)
    # a column with three levels is not an extreme direction
    three = np.array([[0.5, 0.5], [0.4, 0.6], [0.3, 0.7]])
    assert not ldpopt.is_maximal(ldpopt.Mechanism(three, math.log(0.7 / 0.3) + 0.2))
    # the constant channel is not maximal
    assert not ldpopt.is_maximal(ldpopt.Mechanism(np.full((3, 2), 0.5), 1.0))
    # eps = inf: maximal iff outputs reveal the input
    assert ldpopt.is_maximal(ldpopt.Mechanism(np.eye(3), math.inf))
    assert not ldpopt.is_maximal(ldpopt.Mechanism(np.array([[1, 0], [1, 0], [0, 1.0]]), math.inf))
    with pytest.raises(ValueError, match="eps is required"):
        ldpopt.is_maximal(np.eye(2))


def test_extreme_subset_reads_the_high_set():
    c = math.exp(-0.5)
    assert polytope.extreme_subset([1, c, 1, c], 0.5) == frozenset({0, 2})
    assert polytope.extreme_subset([c, c, c], 0.5) is None
    assert polytope.extreme_subset([1, 1, 1], 0.5) is None


def test_canonical_form_of_a_plain_array_takes_its_own_privacy_level():
    rr = ldpopt.randomized_response(3, 1.0)
    canon = ldpopt.canonical_form(np.array(rr.matrix))
    assert canon.eps == pytest.approx(1.0, rel=1e-12)
    assert np.allclose(canon.matrix, ldpopt.canonical_form(rr).matrix)
    # no information: one output after merging, privacy level 0 read as eps = inf
    assert ldpopt.canonical_form(np.full((3, 2), 0.5)).eps == math.inf


def test_canonical_form_merges_splits_and_drops_zero_outputs():
    rr = ldpopt.randomized_response(3, 1.0)
    M = rr.matrix
    # split output 0 into 0.3/0.7 copies, add a zero output, shuffle
    split = np.column_stack([0.3 * M[:, 0], M[:, 2], np.zeros(3), 0.7 * M[:, 0], M[:, 1]])
    q = ldpopt.Mechanism(split, 1.0)
    a = ldpopt.canonical_form(q)
    b = ldpopt.canonical_form(rr)
    assert a.num_outputs == 3
    # 0.3 M0 + 0.7 M0 = M0 (the two products and the sum: 3u relative), the rest unchanged
    assert within_all("canonical form merges splits", a.matrix, b.matrix, 4 * U * b.matrix)


@settings(max_examples=25)
@given(st.integers(2, 4), st.integers(2, 4), st.floats(0.2, 3.0), st.integers(0, 10**6))
def test_blackwell_garbling_properties(m, n, eps, seed):
    rng = np.random.default_rng(seed)
    # a random eps-LDP channel: columns with entries in [1, e^eps], then normalised rows
    raw = rng.uniform(1.0, math.exp(eps), size=(m, n))
    base = raw / raw.sum(axis=1, keepdims=True)
    level = float(np.max(np.log(base.max(axis=0) / base.min(axis=0)))) * (1 + 1e-9) + 1e-12
    q = ldpopt.Mechanism(base, level)
    K = rng.dirichlet(np.ones(3), size=n)
    g = base @ K
    assert ldpopt.blackwell_dominates(base, g)
    assert ldpopt.blackwell_dominates(q, ldpopt.canonical_form(q))
    assert ldpopt.blackwell_dominates(ldpopt.canonical_form(q), q)
    ref = polytope.maximal_refinement(q)
    assert ldpopt.is_maximal(ref)
    assert ldpopt.blackwell_dominates(ref, base)
    # garblings really reproduce the target
    Kf = polytope.garbling(base, g)
    # the LP's residual t* <= BLACKWELL_TOL (library), its rows violated by at most HIGHS_TOL (scipy's
    # default), its negative entries (>= -HIGHS_TOL) clipped and its rows (summing to 1 within
    # HIGHS_TOL, n2 entries each) renormalised: (3 + 2 n2) HIGHS_TOL more; the products (n u)
    bound = BLACKWELL_TOL + (3 + 2 * g.shape[1]) * HIGHS_TOL + (n + 2) * U
    assert within_all("garbling reproduces the target", base @ Kf, g, bound)


def test_blackwell_order_of_randomized_responses():
    lo, hi = ldpopt.randomized_response(4, 0.5), ldpopt.randomized_response(4, 1.5)
    assert ldpopt.blackwell_dominates(hi, lo)
    assert not ldpopt.blackwell_dominates(lo, hi)
    # everything dominates the constant channel, the identity dominates everything
    const = np.full((4, 1), 1.0)
    assert ldpopt.blackwell_dominates(lo, const)
    assert ldpopt.blackwell_dominates(np.eye(4), hi)
    with pytest.raises(ValueError, match="same inputs"):
        ldpopt.blackwell_dominates(np.eye(3), np.eye(4))


def test_maximal_channels_are_not_strictly_dominated():
    # Theorem 3.10: two distinct points of S give Blackwell-incomparable channels
    rows, verts = polytope.polytope_vertices(3, 1.0)
    mechs = [
        polytope.q_ex({tuple(np.flatnonzero(rows[j])): v[j] for j in np.flatnonzero(v > 0)}, 1.0, 3)
        for v in verts
    ]
    for i, a in enumerate(mechs):
        for j, b in enumerate(mechs):
            if i != j:
                assert not ldpopt.blackwell_dominates(a, b)
    # but a non-maximal channel is dominated by its maximal refinement
    q = ldpopt.Mechanism(np.array([[0.5, 0.5], [0.4, 0.6], [0.3, 0.7]]), 1.0)
    r = polytope.maximal_refinement(q)
    assert ldpopt.blackwell_dominates(r, q) and not ldpopt.blackwell_dominates(q, r)
