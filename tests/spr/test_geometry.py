"""Tests of ldpopt.spr.joint_range (the l = 2 joint range, SPR paper Figure 3 / Theorem 3.1)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ldpopt
from ldpopt.spr.joint_range import HULL_TOL, JointRange, _exact_hull, joint_range
from reference import binary_channel_support, extreme_margin, ldp_channel_vertices

P = (0.04, 0.09, 0.22, 0.47, 0.18)
Q = (0.25, 0.49, 0.13, 0.10, 0.03)

# Figure 3 of the paper (k = 5, eps = 2): the four candidates marked "(interior)"
PAPER_INTERIOR_EPS2 = {
    "{1,2,3,4} | {5} [1,2]",
    "{1} | {2,3,4,5} [2,1]",
    "{1} | {2,3,4,5} [1,2]",
    "{1,2,3,4} | {5} [2,1]",
}
PAPER_EXTREME_EPS2 = {
    "{1,2,3,4,5} [1]",
    "{1,2,3,4,5} [2]",
    "{1,2,3} | {4,5} [1,2]",
    "{1,2} | {3,4,5} [1,2]",
    "{1,2} | {3,4,5} [2,1]",
    "{1,2,3} | {4,5} [2,1]",
}


def _pair(seed: int, k: int, alpha: float = 1.0):
    rng = np.random.default_rng(seed)
    return rng.dirichlet(np.full(k, alpha)), rng.dirichlet(np.full(k, alpha))


# --------------------------------------------------------------------------------------------
# the paper's instance
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("eps, extreme", [(0.4, 4), (2.0, 6), (5.0, 10)])
def test_paper_extreme_counts(eps, extreme):
    # Figure 3 caption (eps = 2: six of ten) and Figure 5 caption (eps = 0.4: 4, eps = 5: all 10)
    jr = joint_range(P, Q, eps)
    assert jr.num_candidates == 10 == jr.points.shape[0]
    assert jr.num_extreme == extreme


def test_paper_labels_eps2():
    jr = joint_range(P, Q, 2.0)
    extreme = {lab for lab, e in zip(jr.labels, jr.is_extreme, strict=False) if e}
    interior = {lab for lab, e in zip(jr.labels, jr.is_extreme, strict=False) if not e}
    assert extreme == PAPER_EXTREME_EPS2
    assert interior == PAPER_INTERIOR_EPS2
    # the constants sit at (0, 0) and (1, 1) exactly
    lab = list(jr.labels)
    assert tuple(jr.points[lab.index("{1,2,3,4,5} [2]")]) == (0.0, 0.0)
    assert tuple(jr.points[lab.index("{1,2,3,4,5} [1]")]) == (1.0, 1.0)
    # a hexagon, counter-clockwise
    assert jr.hull.shape == (6, 2)
    x, y = jr.hull[:, 0], jr.hull[:, 1]
    assert 0.5 * np.sum(x * np.roll(y, -1) - np.roll(x, -1) * y) > 0


def test_paper_points_closed_form():
    # {1,2} | {3,4,5} [1,2]: output 1 <=> block {1,2}; P0 prob = (e^2 P(B1) + P(B2)) / (e^2 + 1)
    jr = joint_range(P, Q, 2.0)
    i = jr.labels.index("{1,2} | {3,4,5} [1,2]")
    e = math.exp(2.0)
    pb, qb = 0.04 + 0.09, 0.25 + 0.49
    assert jr.points[i] == pytest.approx(
        [(e * pb + 1 - pb) / (e + 1), (e * qb + 1 - qb) / (e + 1)], abs=1e-15
    )


# --------------------------------------------------------------------------------------------
# independent oracles: LP support function, LP extremality margins, cdd vertex enumeration
# --------------------------------------------------------------------------------------------
instances = st.tuples(
    st.integers(0, 10**6),
    st.integers(2, 7),
    st.sampled_from([0.3, 1.0, 3.0]),
    st.sampled_from([0.05, 0.4, 1.0, 2.0, 5.0, 12.0]),
)


@settings(max_examples=15)
@given(instances)
def test_hull_is_the_joint_range_support_lp(inst):
    seed, k, alpha, eps = inst
    p, q = _pair(seed, k, alpha)
    jr = joint_range(p, q, eps)
    assert jr.num_candidates == 2 * (jr_reduced_k(p, q) - 1) + 2
    rng = np.random.default_rng(seed)
    for w in rng.normal(size=(3, 2)):
        ours = float(np.max(jr.points @ w))
        assert ours == pytest.approx(binary_channel_support(p, q, eps, w), abs=1e-9)


def jr_reduced_k(p, q) -> int:
    return ldpopt.likelihood_ratio_reduction(p, q).k


@settings(max_examples=15)
@given(instances)
def test_extremality_matches_lp_margin(inst):
    seed, k, alpha, eps = inst
    p, q = _pair(seed, k, alpha)
    jr = joint_range(p, q, eps)
    ambiguous = 0
    for i in range(jr.num_candidates):
        margin = extreme_margin(jr.points, i)  # > 0 iff vertex, exactly 0 otherwise (w = 0)
        if margin > 1e-9:
            assert jr.is_extreme[i], (jr.labels[i], margin)
        elif margin <= 1e-12:
            assert not jr.is_extreme[i], (jr.labels[i], margin)
        else:  # a vertex with a numerically tiny margin: only the exact test can decide
            ambiguous += 1
    assert ambiguous <= 1


@pytest.mark.parametrize("seed, eps", [(1, 0.7), (2, 2.0), (3, 4.0)])
def test_hull_equals_image_of_channel_polytope_vertices(seed, eps):
    # the joint range is the image of the polytope of binary eps-LDP channels: enumerate its vertices
    from scipy.spatial import ConvexHull

    p, q = _pair(seed, 4)
    jr = joint_range(p, q, eps)
    verts = ldp_channel_vertices(4, 2, eps)
    img = np.stack([verts[:, :, 0] @ p, verts[:, :, 0] @ q], axis=1)
    assert np.all(jr.outside_distance(img) <= 1e-12)
    hull = ConvexHull(img)
    vimg = img[hull.vertices]
    # same vertex set both ways
    for v in vimg:
        assert np.min(np.hypot(*(jr.hull - v).T)) < 1e-9
    for v in jr.hull:
        assert np.min(np.hypot(*(vimg - v).T)) < 1e-9


@settings(max_examples=20)
@given(instances)
def test_candidates_are_the_images_of_their_mechanisms(inst):
    seed, k, alpha, eps = inst
    p, q = _pair(seed, k, alpha)
    jr = joint_range(p, q, eps)
    for i in range(jr.num_candidates):
        mech = jr.mechanism(i)
        assert mech.num_outputs == 2 and mech.is_ldp(eps)
        m0, m1 = mech.output_distributions(p, q)
        assert jr.points[i] == pytest.approx([m0[0], m1[0]], abs=1e-14)


def test_agrees_with_scipy_on_generic_instances():
    from scipy.spatial import ConvexHull

    for seed in range(30):
        p, q = _pair(seed, 8, 0.5)
        jr = joint_range(p, q, 1.5)
        ref = set(ConvexHull(jr.points).vertices.tolist())
        assert set(np.flatnonzero(jr.is_extreme).tolist()) == ref
        assert set(jr.hull_indices.tolist()) == ref


# --------------------------------------------------------------------------------------------
# degenerate, exact and boundary cases
# --------------------------------------------------------------------------------------------
def test_identical_distributions_give_a_segment():
    p = [0.2, 0.3, 0.5]
    jr = joint_range(p, p, 1.0)
    # every symbol has ratio 1: one reduced symbol, only the two constants
    assert jr.num_candidates == 2
    assert jr.hull.shape == (2, 2)
    assert np.array_equal(jr.hull, [[0.0, 0.0], [1.0, 1.0]])
    assert jr.is_extreme.all()
    assert jr.contains([[0.5, 0.5]])[0] and not jr.contains([[0.5, 0.6]])[0]


def test_ties_are_merged_and_labelled():
    # symbols 1 and 3 have the same ratio: they are one reduced symbol
    p = [0.1, 0.5, 0.2, 0.2]
    q = [0.2, 0.25, 0.4, 0.15]
    jr = joint_range(p, q, 1.0)
    assert jr.num_candidates == 2 * (3 - 1) + 2
    assert "{1,3} | {2,4} [1,2]" in jr.labels


def test_zero_mass_symbols_and_infinite_ratios():
    p = [0.0, 0.5, 0.5, 0.0]
    q = [0.3, 0.7, 0.0, 0.0]  # symbol 4 has no mass at all, symbol 3 an infinite ratio
    jr = joint_range(p, q, 2.0)
    assert jr.num_candidates == 2 * (3 - 1) + 2
    for i in range(jr.num_candidates):
        m0, m1 = jr.mechanism(i).output_distributions(p, q)
        assert jr.points[i] == pytest.approx([m0[0], m1[0]], abs=1e-14)


def test_eps_infinite_gives_deterministic_quantizers():
    p, q = _pair(5, 5)
    jr = joint_range(p, q, math.inf)
    # every LR-threshold quantizer is extreme when there is no privacy (strictly concave ROC)
    assert jr.num_extreme == jr.num_candidates
    red = ldpopt.likelihood_ratio_reduction(p, q)
    # candidate 0 sends the lowest-ratio symbol alone to output 1
    assert jr.points[0] == pytest.approx([red.p[0], red.q[0]], abs=1e-15)


def test_small_eps_keeps_only_binary_mechanism_and_constants():
    p, q = _pair(11, 7)
    jr = joint_range(p, q, 1e-6)
    assert jr.num_extreme == 4
    b = ldpopt.binary_mechanism(p, q, 1e-6)
    m0, m1 = b.output_distributions(p, q)
    assert np.min(np.hypot(*(jr.points[jr.is_extreme] - [m0[0], m1[0]]).T)) < 1e-15


def test_exact_hull_collinear_and_duplicate_points():
    # (0.5, 0.5) is on the segment (0,0)-(1,1): not extreme; duplicates share the verdict
    pts = [(0.0, 0.0), (0.5, 0.5), (1.0, 1.0), (0.25, 0.75), (0.25, 0.75), (0.75, 0.25)]
    nf = np.array(pts)
    nx = [(Fraction(a), Fraction(b)) for a, b in pts]
    hull, ext = _exact_hull(nf, nx, 1.0)
    assert ext.tolist() == [True, False, True, True, True, True]
    assert hull.tolist() == [0, 5, 2, 3]
    # 1 ulp off the diagonal: a vertex on the side without other points, interior on the other
    tiny = 2.0**-53
    pts2 = [(0.0, 0.0), (0.5, 0.5 + tiny), (1.0, 1.0), (0.75, 0.25)]
    hull2, ext2 = _exact_hull(np.array(pts2), [(Fraction(a), Fraction(b)) for a, b in pts2], 1.0)
    assert ext2.tolist() == [True, True, True, True]
    pts3 = [(0.0, 0.0), (0.5, 0.5 + tiny), (1.0, 1.0), (0.25, 0.75)]
    hull3, ext3 = _exact_hull(np.array(pts3), [(Fraction(a), Fraction(b)) for a, b in pts3], 1.0)
    assert ext3.tolist() == [True, False, True, True]
    # all collinear: a segment
    pts4 = [(0.0, 0.0), (0.25, 0.25), (1.0, 1.0)]
    hull4, ext4 = _exact_hull(np.array(pts4), [(Fraction(a), Fraction(b)) for a, b in pts4], 1.0)
    assert hull4.tolist() == [0, 2] and ext4.tolist() == [True, False, True]


def test_outside_distance():
    jr = joint_range(P, Q, 2.0)
    assert np.all(jr.outside_distance(jr.points) <= HULL_TOL)
    rng = np.random.default_rng(0)
    w = rng.dirichlet(np.ones(jr.num_candidates), size=200)
    assert np.all(jr.contains(w @ jr.points))
    d = jr.outside_distance([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    assert d[0] > 0.1 and d[1] > 0.1 and d[2] < 0


def test_labels_from_dict_input():
    p = dict(zip("abcde", P, strict=False))
    q = dict(zip("abcde", Q, strict=False))
    jr = joint_range(p, q, 2.0)
    assert "{a,b} | {c,d,e} [1,2]" in jr.labels
    assert jr.mechanism(0).labels == tuple("abcde")


def test_validation_errors():
    with pytest.raises(ValueError, match="max_outputs"):
        joint_range(P, Q, 1.0, max_outputs=3)
    with pytest.raises(ValueError, match="eps"):
        joint_range(P, Q, 0.0)
    with pytest.raises(ValueError, match="p0"):
        joint_range([0.5, 0.6], [0.5, 0.5], 1.0)
    with pytest.raises(ValueError, match="i must be"):
        joint_range(P, Q, 1.0).mechanism(10)


def test_lazy_exports_and_immutability():
    assert ldpopt.joint_range is joint_range
    assert ldpopt.JointRange is JointRange
    jr = ldpopt.joint_range(P, Q, 2.0)
    with pytest.raises(ValueError):
        jr.points[0, 0] = 3.0
    with pytest.raises(AttributeError):
        jr.eps = 1.0  # frozen
