"""Permutation groups, orbits of subsets, the reduced polytope, Corollary 3.17 and subset selection."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ldpopt
from _errmodel import (
    R_FN,
    U,
    channel_err,
    circular_err,
    entropy_diff_err,
    lp_err,
    mary_err,
    mi_err,
    ss_mi_err,
    support_vertex_err,
    weights_residual,
    within,
    within_all,
)
from ldpopt.decision import problems as examples
from ldpopt.decision.objectives import MutualInformation, RowObjective
from ldpopt.decision.problem import DecisionProblem
from ldpopt.decision.symmetry import (
    PermutationGroup,
    cyclic,
    dihedral,
    mi_optimal_size,
    subset_selection,
    subset_selection_mutual_information,
    symmetric,
)
from reference import bracelet_count, mutual_information_naive, necklace_count

#: the numerics tests: CI also runs them on numpy's AVX2 and baseline loops (.ci/npy_disable.py)
pytestmark = pytest.mark.numerics


def test_group_construction_and_validation():
    assert symmetric(5).order() == 120 and cyclic(7).order() == 7 and dihedral(6).order() == 12
    assert PermutationGroup(symmetric(5).generators).order() == 120  # by enumeration
    assert PermutationGroup(dihedral(5).generators).order() == 10
    assert PermutationGroup.cyclic(6).is_transitive()
    g = PermutationGroup([[1, 0, 2, 3, 4]])
    assert g.point_orbits() == ((0, 1), (2,), (3,), (4,)) and not g.is_transitive()
    with pytest.raises(ValueError, match="not a permutation"):
        PermutationGroup([[0, 0, 1]])
    with pytest.raises(ValueError, match="length"):
        PermutationGroup([[1, 0], [0, 1, 2]])
    with pytest.raises(ValueError, match="needs m"):
        PermutationGroup([])
    assert PermutationGroup([], m=3).point_orbits() == ((0,), (1,), (2,))


@pytest.mark.parametrize("m", range(3, 11))
def test_orbit_counts_match_burnside(m):
    cy, di = cyclic(m).subset_orbits(), dihedral(m).subset_orbits()
    assert len(cy) == necklace_count(m) - 2  # minus the empty and the full set
    assert len(di) == bracelet_count(m) - 2
    for orbits in (cy, di, symmetric(m).subset_orbits()):
        assert sum(o.size for o in orbits) == 2**m - 2
        for o in orbits:
            assert len(o.representative) == o.k
            # transitive group: every point lies in |O| k / m members (B.5)
            assert o.counts[0] * m == o.size * o.k


def test_symmetric_orbits_without_enumeration_match_the_sweep():
    m = 7
    closed = symmetric(m).subset_orbits()
    swept = PermutationGroup(symmetric(m).generators).subset_orbits()  # kind "custom": sweeps 2^m masks
    assert [(o.k, o.size, o.counts) for o in closed] == [(o.k, o.size, o.counts) for o in swept]
    big = symmetric(300).subset_orbits()
    assert len(big) == 299 and big[9].size == math.comb(300, 10)
    with pytest.raises(ValueError, match="m <= 20"):
        cyclic(21).subset_orbits()


@pytest.mark.parametrize("m", [4, 6, 8])
def test_corollary_3_17_closed_form_equals_full_enumeration(m):
    for eps in (0.5, 1.5, 3.0):
        mi = MutualInformation(num_inputs=m)
        full = ldpopt.optimal_channel(mi, eps, method="enumerate")
        sym = ldpopt.optimal_channel(mi, eps, group=symmetric(m))
        assert sym.method == "symmetry" and "Corollary 3.17" in sym.message
        # mutual information costs are at most eps in magnitude; each value within its lp_err
        bound = lp_err(full, m, eps, eps) + lp_err(sym, m, eps, eps, method="enumerate")
        assert within("Corollary 3.17 vs full enumeration", sym.value, full.value, bound)
        assert sym.certificate.verified
        # the same channel through its normalised rows (mi_err with the weights' residual)
        rho = weights_residual(sym.weights, m, eps)
        n = sym.mechanism.num_outputs
        err = mi_err(sym.mechanism.matrix, mi.prior, rho * (1 + 2 * rho) + (2 * R_FN + n + 4) * U)
        err += lp_err(sym, m, eps, eps, method="enumerate")
        assert within("Corollary 3.17: objective of the channel", mi.evaluate(sym.mechanism), sym.value, err)
        circ = examples.circular_estimation(m, 0.7)
        ref_res = ldpopt.optimal_channel(circ, eps, method="enumerate")
        ref = ref_res.value
        ref_err = lp_err(ref_res, m, eps, 1.0)  # circular costs are at most 1 in magnitude
        for group in (cyclic(m), dihedral(m)):
            res = ldpopt.optimal_channel(circ, eps, group=group)
            bound = ref_err + lp_err(res, m, eps, 1.0, method="enumerate")
            assert within("reduced LP vs full enumeration (circular)", res.value, ref, bound)
            assert ldpopt.is_maximal(res.mechanism)
            v = ldpopt.optimal_channel(circ, eps, group=group, method="vertex")
            # the reduced polytope's vertex, picked and polished (support_vertex_err twice, the
            # circular objective moves by at most 1 per unit of channel mass)
            bound = ref_err + lp_err(v, m, eps, 1.0, method="vertex") + 2 * support_vertex_err(v, m, eps, 1.0)
            assert within("reduced vertices vs full enumeration (circular)", v.value, ref, bound)


def test_reduced_lp_for_an_intransitive_group_equals_enumeration():
    # a decision problem invariant under swapping inputs 0 <-> 1 and parameters 0 <-> 1
    rng = np.random.default_rng(7)
    m, eps = 5, 1.2
    base = rng.dirichlet(np.ones(m), size=1)[0]
    swapped = base[[1, 0, 2, 3, 4]]
    third = rng.dirichlet(np.ones(m))
    third[[0, 1]] = third[[0, 1]].mean()
    P = np.column_stack([base, swapped, third])
    L = np.array([[0.0, 1.0, 0.8], [1.0, 0.0, 0.8], [0.9, 0.9, 0.0]])
    prob = DecisionProblem(P, L)
    group = PermutationGroup([[1, 0, 2, 3, 4]])
    res = ldpopt.optimal_channel(prob, eps, group=group)
    assert "reduced LP" in res.message and res.certificate.verified
    en = ldpopt.optimal_channel(prob, eps, method="enumerate")
    res_err = lp_err(res, m, eps, 1.0, method="enumerate")  # loss in [0, 1]
    assert within(
        "reduced LP vs enumeration (intransitive)", res.value, en.value, res_err + lp_err(en, m, eps, 1.0)
    )
    bound = channel_err(res, m, eps, 1.0, 2 * m + 4)
    assert within("reduced LP: risk of the channel", prob.bayes_risk(res.mechanism), res.value, bound)
    v = ldpopt.optimal_channel(prob, eps, group=group, method="vertex")
    bound = res_err + lp_err(v, m, eps, 1.0, method="vertex") + 2 * support_vertex_err(v, m, eps, 1.0)
    assert within("reduced vertices vs reduced LP (intransitive)", v.value, res.value, bound)


def test_non_invariant_objective_is_refused():
    obj = RowObjective(lambda V: V[:, 0] - V[:, 1], 4, sense="max", name="asym")
    with pytest.raises(ValueError, match="not invariant"):
        ldpopt.optimal_channel(obj, 1.0, group=cyclic(4))


def test_subset_selection_mechanism():
    m, eps = 6, 1.3
    for k in range(1, m):
        ss = subset_selection(m, eps, k)
        assert ss.num_outputs == math.comb(m, k)
        assert ss.is_ldp(eps) and ldpopt.is_maximal(ss)
        # Q(y|x) = e^eps / (C(m-1,k-1) e^eps + C(m-1,k)) for x in y
        hi = math.exp(eps) / (math.comb(m - 1, k - 1) * math.exp(eps) + math.comb(m - 1, k))
        # the library's 1 / (C + C' c0) against E / (C E + C'): (R_FN + 3) u each
        assert within("subset selection high level", ss.matrix.max(), hi, (2 * R_FN + 6) * U * hi)
        prior = np.full(m, 1 / m)
        ours, ref = subset_selection_mutual_information(m, eps, k), mutual_information_naive(ss.matrix, prior)
        bound = (
            ss_mi_err(m, eps, k)
            + entropy_diff_err(ss.matrix, prior)
            + mi_err(ss.matrix, prior, (R_FN + 3) * U)
        )
        assert within("subset selection MI: closed form vs entropies", ours, ref, bound)
    # SS(m, 1) is RR: both levels (R_FN + 3) u relative; canonical_form orders and keeps them
    a = ldpopt.canonical_form(subset_selection(m, eps, 1)).matrix
    b = ldpopt.canonical_form(ldpopt.randomized_response(m, eps)).matrix
    assert within_all("SS(m, 1) is RR", a, b, (2 * R_FN + 6) * U * b)
    with pytest.raises(ValueError, match="size"):
        subset_selection(m, eps, m)


@pytest.mark.parametrize("m", [5, 7, 9])
def test_mutual_information_is_maximised_by_subset_selection_of_the_predicted_size(m):
    for eps in (0.3, 1.0, 2.5):
        k = mi_optimal_size(m, eps)
        # brute force over the sizes with the textbook MI formula
        direct = [
            mutual_information_naive(subset_selection(m, eps, j).matrix, np.full(m, 1 / m))
            for j in range(1, m)
        ]
        assert k == 1 + int(np.argmax(direct))
        # and over ALL eps-LDP channels (LP over every subset, no symmetry used)
        lp = ldpopt.optimal_channel(MutualInformation(num_inputs=m), eps, method="enumerate")
        ss = subset_selection(m, eps, k).matrix
        bound = (
            lp_err(lp, m, eps, eps)
            + entropy_diff_err(ss, np.full(m, 1 / m))
            + mi_err(ss, np.full(m, 1 / m), (R_FN + 3) * U)
        )
        assert within("MI: LP vs subset selection", lp.value, direct[k - 1], bound)


def test_m200_symmetric_problems_by_column_generation_match_the_closed_forms():
    for gamma in (0.5, -0.3 / 199):  # optimum at k = 1 (RR) and at k = m - 1
        mt = examples.mary_testing(200, gamma)
        res = ldpopt.optimal_channel(mt, 1.0, method="colgen")
        bound = lp_err(res, 200, 1.0, 1.0) + mary_err(200, gamma, 1.0)
        assert res.status == 0 and within(
            "m = 200 m-ary: colgen vs closed form", res.value, mt.closed_form(1.0), bound
        )
        assert {len(y) for y in res.weights} == {mt.closed_form_size(1.0)}
    circ = examples.circular_estimation(200, 0.9)
    prob = circ.as_decision_problem()
    res = ldpopt.optimal_channel(prob, 1.0, method="colgen")
    # the grid loss 1 - cos <= 2; the grid problem's own rounding as in tests/decision/test_examples.py
    # (P: (0.9 (10 pi + R_FN) + 2) u per unit mass, L: (10 pi + R_FN + 2) u)
    grid = 4 * (0.9 * (10 * math.pi + R_FN) + 2) * U + (10 * math.pi + R_FN + 2) * U
    bound = lp_err(res, 200, 1.0, 2.0) + circular_err(200, 0.9, 1.0) + grid
    assert within("m = 200 circular grid: colgen vs closed form", res.value, circ.closed_form(1.0), bound)
    bound = channel_err(res, 200, 1.0, 2.0, 200 + 200 + 4)
    assert within(
        "m = 200 circular grid: risk of the channel", prob.bayes_risk(res.mechanism), res.value, bound
    )
    # the symmetry method on the same decision problem (orbits of the symmetric group: sizes)
    mt = examples.mary_testing(200, 0.5)
    sym = ldpopt.optimal_channel(mt, 1.0, group=symmetric(200))
    bound = lp_err(sym, 200, 1.0, 1.0, method="enumerate") + mary_err(200, 0.5, 1.0)
    assert within("m = 200 m-ary: symmetry vs closed form", sym.value, mt.closed_form(1.0), bound)


def test_large_subset_selection_optimum_uses_an_equally_optimal_cyclic_design():
    m, eps = 40, 1.0
    mi = MutualInformation(num_inputs=m)
    res = ldpopt.optimal_channel(mi, eps, group=symmetric(m))
    k = mi_optimal_size(m, eps)
    assert math.comb(m, k) > 200_000 and "cyclic design" in res.message
    assert res.num_outputs == m and all(len(y) == k for y in res.weights)
    # the cyclic design has the same MI as SS(m, k) (exactly): the textbook evaluation of its channel
    # (its weights' rows normalised) against the closed form
    prior = np.full(m, 1 / m)
    rho = weights_residual(res.weights, m, eps)
    Q = res.mechanism.matrix
    rel = rho * (1 + 2 * rho) + (2 * R_FN + res.num_outputs + 4) * U
    bound = entropy_diff_err(Q, prior) + mi_err(Q, prior, rel) + ss_mi_err(m, eps, k)
    assert within(
        "cyclic design MI vs SS closed form",
        mutual_information_naive(Q, prior),
        subset_selection_mutual_information(m, eps, k),
        bound,
    )
    # the value from the weights (lp_err's rounding and residual terms bound it; MI costs <= eps)
    bound = lp_err(res, m, eps, eps, method="enumerate") + ss_mi_err(m, eps, k)
    assert within(
        "cyclic design: value vs SS closed form",
        res.value,
        subset_selection_mutual_information(m, eps, k),
        bound,
    )
