"""Permutation groups, orbits of subsets, the reduced polytope, Corollary 3.17 and subset selection."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ldpopt
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

TOL = 1e-8


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
        assert sym.value == pytest.approx(full.value, abs=TOL)
        assert sym.certificate.verified
        assert mi.evaluate(sym.mechanism) == pytest.approx(sym.value, abs=TOL)
        circ = examples.circular_estimation(m, 0.7)
        ref = ldpopt.optimal_channel(circ, eps, method="enumerate").value
        for group in (cyclic(m), dihedral(m)):
            res = ldpopt.optimal_channel(circ, eps, group=group)
            assert res.value == pytest.approx(ref, abs=TOL)
            assert ldpopt.is_maximal(res.mechanism)
            v = ldpopt.optimal_channel(circ, eps, group=group, method="vertex")
            assert v.value == pytest.approx(ref, abs=TOL)


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
    assert res.value == pytest.approx(ldpopt.optimal_channel(prob, eps, method="enumerate").value, abs=TOL)
    assert prob.bayes_risk(res.mechanism) == pytest.approx(res.value, abs=TOL)
    v = ldpopt.optimal_channel(prob, eps, group=group, method="vertex")
    assert v.value == pytest.approx(res.value, abs=TOL)


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
        assert ss.matrix.max() == pytest.approx(hi)
        assert subset_selection_mutual_information(m, eps, k) == pytest.approx(
            mutual_information_naive(ss.matrix, np.full(m, 1 / m)), rel=1e-10
        )
    assert np.allclose(
        ldpopt.canonical_form(subset_selection(m, eps, 1)).matrix,
        ldpopt.canonical_form(ldpopt.randomized_response(m, eps)).matrix,
    )
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
        assert lp.value == pytest.approx(direct[k - 1], abs=TOL)


def test_m200_symmetric_problems_by_column_generation_match_the_closed_forms():
    for gamma in (0.5, -0.3 / 199):  # optimum at k = 1 (RR) and at k = m - 1
        mt = examples.mary_testing(200, gamma)
        res = ldpopt.optimal_channel(mt, 1.0, method="colgen")
        assert res.status == 0 and res.value == pytest.approx(mt.closed_form(1.0), abs=TOL)
        assert {len(y) for y in res.weights} == {mt.closed_form_size(1.0)}
    circ = examples.circular_estimation(200, 0.9)
    prob = circ.as_decision_problem()
    res = ldpopt.optimal_channel(prob, 1.0, method="colgen")
    assert res.value == pytest.approx(circ.closed_form(1.0), abs=TOL)
    assert prob.bayes_risk(res.mechanism) == pytest.approx(res.value, abs=TOL)
    # the symmetry method on the same decision problem (orbits of the symmetric group: sizes)
    mt = examples.mary_testing(200, 0.5)
    sym = ldpopt.optimal_channel(mt, 1.0, group=symmetric(200))
    assert sym.value == pytest.approx(mt.closed_form(1.0), abs=TOL)


def test_large_subset_selection_optimum_uses_an_equally_optimal_cyclic_design():
    m, eps = 40, 1.0
    mi = MutualInformation(num_inputs=m)
    res = ldpopt.optimal_channel(mi, eps, group=symmetric(m))
    k = mi_optimal_size(m, eps)
    assert math.comb(m, k) > 200_000 and "cyclic design" in res.message
    assert res.num_outputs == m and all(len(y) == k for y in res.weights)
    assert mutual_information_naive(res.mechanism.matrix, np.full(m, 1 / m)) == pytest.approx(
        subset_selection_mutual_information(m, eps, k), rel=1e-10
    )
    assert res.value == pytest.approx(subset_selection_mutual_information(m, eps, k), rel=1e-10)
