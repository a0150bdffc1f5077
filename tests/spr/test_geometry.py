"""Tests of ldpopt.spr.joint_range (the l = 2 joint range, SPR paper Figure 3 / Theorem 3.1)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ldpopt
from _errmodel import HIGHS_TOL, R_FN, U, within, within_all
from _valuebounds import ldp_excess
from ldpopt.spr.joint_range import HULL_TOL, JointRange, _exact_hull, joint_range
from reference import binary_channel_support, extreme_margin, ldp_channel_vertices

#: the numerics tests: CI also runs them on numpy's AVX2 and baseline loops (.ci/npy_disable.py)
pytestmark = pytest.mark.numerics

#: relative error of a candidate's coordinate (c + A m) / (1 + c), units of u: c and A (R_FN each;
#: the coordinate's sensitivity to each is at most 1), c / (1 + c) in the denominator (R_FN), the
#: block mass m (compensated prefix, 2), A * m, + c, 1 + c and the division (1 each)
C_POINT = 2 * R_FN + 6.0
#: relative error of an output mass of a k-input SPR channel, units of u, plus k: its entries
#: (R_FN + 3, tests/test_mechanism.py) and the dot product (k: any order, the products included)
C_OUTPUT = R_FN + 3.0
#: error of outside_distance at a point of [0, 1]^2 (absolute): ((px - ax) dy - (py - ay) dx) / L,
#: each product of two differences (3 roundings) is at most L (|px - ax| <= 1, |dy| <= L), the
#: difference (1), the division and hypot (1 + 1 relative to the distance, <= 1)
OUTSIDE_ERR = 9.0 * U

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
    ref = np.array([(e * pb + 1 - pb) / (e + 1), (e * qb + 1 - qb) / (e + 1)])
    # the same exact value; the closed form's rounding: e (R_FN, sensitivity <= 1), pb (1), e * pb,
    # + 1, - pb (the last with an amplification (e pb + 1) / (e pb + 1 - pb) <= 2), e + 1 and the
    # division: (R_FN + 8) u relative; the library's C_POINT u
    assert within_all("joint range point vs closed form", jr.points[i], ref, (C_POINT + R_FN + 8) * U * ref)


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
    E = math.exp(eps)
    for w in rng.normal(size=(3, 2)):
        ours = float(np.max(jr.points @ w))
        # the exact support is the max over the exact candidates (Theorem 3.1): ours within
        # (|w0| + |w1|) C_POINT u (coordinates <= 1) and the dot product (2u).  The LP (HiGHS, default
        # tolerance HIGHS_TOL, z in [0, 1]^k, objective a = w0 p + w1 q): its reduced costs are within
        # tol, so at most tol ||z*||_1 <= tol k below; a point violating the rows (and E's rounding,
        # R_FN u E) by tau is made feasible by mixing it with z = 1/2 (slack (E - 1) / 2 in every
        # row, 1/2 in the bounds): theta = 2 tau max(1, 1 / (E - 1)), the objective moves by at most
        # theta ||a||_1 / 2: at most tau ||a||_1 max(1, 1 / (E - 1)) above
        a1 = float(np.sum(np.abs(w[0] * p + w[1] * q)))
        tau = HIGHS_TOL + R_FN * U * E
        lp_err = HIGHS_TOL * k + tau * a1 * max(1.0, 1.0 / (E - 1.0))
        bound = (abs(w[0]) + abs(w[1])) * (C_POINT + 2) * U + lp_err
        ref = binary_channel_support(p, q, eps, w)
        assert within("joint range support vs LP", ours, ref, bound), (ours, ref, bound)


def jr_reduced_k(p, q) -> int:
    return ldpopt.likelihood_ratio_reduction(p, q).k


@settings(max_examples=15)
@given(instances)
def test_extremality_matches_lp_margin(inst):
    seed, k, alpha, eps = inst
    p, q = _pair(seed, k, alpha)
    jr = joint_range(p, q, eps)
    # the LP margin (HiGHS, default tolerance; variables w in [-1, 1]^2 and t, |t| <= 2): at most
    # HIGHS_TOL (|w0| + |w1| + |t|) <= 4 HIGHS_TOL off through the reduced costs, and a (w, t)
    # violating a row by tau stays feasible with t - tau: HIGHS_TOL more; the float points move
    # w . (x_i - x_j) by at most 2 * 2 C_POINT u.  The exact margin is 0 for a non-vertex
    margin_err = 5 * HIGHS_TOL + 4 * C_POINT * U
    ambiguous = 0
    for i in range(jr.num_candidates):
        margin = extreme_margin(jr.points, i)  # > 0 iff vertex, exactly 0 otherwise (w = 0)
        if margin > margin_err:
            assert jr.is_extreme[i], (jr.labels[i], margin)
        elif jr.is_extreme[i]:  # a vertex whose margin the LP cannot resolve: the exact test decides
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
    # cddlib's float vertices, a posteriori: within relative 2 rho (rows summing to 1 within s) of
    # eps-LDP channels, whose images are in the exact hull; each image coordinate moves by at most
    # 2 rho + s and the product rounds (4u: 4 inputs); our hull vertices are within C_POINT u
    rho = max(ldp_excess(np.clip(Q, 0.0, None), eps) for Q in verts)
    s = float(np.max(np.abs(verts.sum(axis=2) - 1.0)))
    img_err = math.sqrt(2) * (2 * rho + s + 4 * U + C_POINT * U)
    outside = np.maximum(jr.outside_distance(img), 0.0)  # one-sided: inside is fine
    assert within_all("channel vertex images inside the hull", outside, 0.0, img_err + OUTSIDE_ERR)
    hull = ConvexHull(img)
    vimg = img[hull.vertices]
    # same vertex set both ways (the exact vertex sets are equal)
    for v in vimg:
        assert within("hull vertex vs image vertex", np.min(np.hypot(*(jr.hull - v).T)), 0.0, img_err)
    for v in jr.hull:
        assert within("hull vertex vs image vertex", np.min(np.hypot(*(vimg - v).T)), 0.0, img_err)


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
        # the same exact masses: C_POINT u against (C_OUTPUT + k) u relative - relative to the larger
        # of a coordinate and its complement, since a candidate's coordinate may be formed as 1 minus
        # the other output's mass (block sums from the suffix side), which keeps the error absolute:
        # |fl(1 - z) - (1 - z)| <= C u z <= C u max(ref, 1 - ref)
        ref = np.array([m0[0], m1[0]])
        scale = np.maximum(ref, 1.0 - ref)
        assert within_all(
            "candidate vs its mechanism", jr.points[i], ref, (C_POINT + C_OUTPUT + k) * U * scale
        )


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
        ref = np.array([m0[0], m1[0]])
        assert within_all("candidate vs its mechanism", jr.points[i], ref, (C_POINT + C_OUTPUT + 4) * U * ref)


def test_eps_infinite_gives_deterministic_quantizers():
    p, q = _pair(5, 5)
    jr = joint_range(p, q, math.inf)
    # every LR-threshold quantizer is extreme when there is no privacy (strictly concave ROC)
    assert jr.num_extreme == jr.num_candidates
    red = ldpopt.likelihood_ratio_reduction(p, q)
    # candidate 0 sends the lowest-ratio symbol alone to output 1: c = 0, A = 1 and the first prefix
    # sum is the mass itself, (0 + 1 * m) / (1 + 0) = m exactly
    np.testing.assert_array_equal(jr.points[0], [red.p[0], red.q[0]])


def test_small_eps_keeps_only_binary_mechanism_and_constants():
    p, q = _pair(11, 7)
    jr = joint_range(p, q, 1e-6)
    assert jr.num_extreme == 4
    b = ldpopt.binary_mechanism(p, q, 1e-6)
    m0, m1 = b.output_distributions(p, q)
    # the binary mechanism is one of the candidates: C_POINT u against (C_OUTPUT + 7) u per coordinate
    dist = np.min(np.hypot(*(jr.points[jr.is_extreme] - [m0[0], m1[0]]).T))
    assert within(
        "binary mechanism among the extreme candidates",
        dist,
        0.0,
        math.sqrt(2) * (C_POINT + C_OUTPUT + 7) * U,
    )


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
    # the candidates are in the hull of themselves: the computed signed distance is at most its
    # rounding (the hull's vertices are the candidates' own floats)
    outside = np.maximum(jr.outside_distance(jr.points), 0.0)
    assert within_all("candidates inside their own hull", outside, 0.0, OUTSIDE_ERR)
    rng = np.random.default_rng(0)
    w = rng.dirichlet(np.ones(jr.num_candidates), size=200)
    # a convex combination of n = 10 candidates rounds by at most n u per coordinate (weights sum to 1
    # within n u): the library's HULL_TOL (1e-12) is far above (n + 2) u + OUTSIDE_ERR
    assert (jr.num_candidates + 2) * U * math.sqrt(2) + OUTSIDE_ERR <= HULL_TOL
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
