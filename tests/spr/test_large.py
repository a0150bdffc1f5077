"""The pruning of the large-alphabet kernels (no score cache): group, rectangle and tangent bounds.

Every bound is checked against the quantity it bounds, computed by the kernels' own scoring
(``_kernels.score``, the function every pass evaluates): a bound that prunes a range must leave
every candidate of the range strictly below the incumbent, so it may never prune at an incumbent
equal to the range's best computed candidate value.  The passes that use the bounds are then
compared with the cached pass (other pruning, the same maximiser: bit for bit) and the solves with
the readable program (``tests/spr/test_kernels.py``'s error model).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_kernels import assert_raw_optimum, random_instance

from ldpopt._numerics import rescale
from ldpopt.divergences import get_divergence
from ldpopt.spr import _fast
from ldpopt.spr import _kernels as K
from ldpopt.spr.reduction import _Prefix, _reduce
from ldpopt.spr.reference import _dp_readable

pytestmark = pytest.mark.numerics

G = K.GROUP


def _instance(seed: int, k: int, conc: float):
    rng = np.random.default_rng(seed)
    p, q = random_instance(rng, k, conc)
    red = _reduce(p, q)
    return rng, red, _Prefix(red.p, red.q).table


def _h_values(rng, n: int, scale: float) -> np.ndarray:
    """Arbitrary prefix values (the bounds hold for any H): smooth, noisy, some -inf."""
    h = np.cumsum(rng.normal(0.0, scale, n)) * rng.choice([0.0, 0.1, 1.0])
    h[rng.random(n) < 0.1] = -math.inf
    return h


@settings(max_examples=60)
@given(
    st.integers(0, 10**6),
    st.integers(2 * G + 2, 6 * G),
    st.sampled_from([0.05, 0.3, 1.0]),
    st.sampled_from([1e-3, 0.3, 1.0, 3.0, 8.0, 30.0]),
    st.sampled_from(["kl", "reverse_kl", "js", "chi2", "hellinger", "tv"]),
)
def test_rectangle_bound_never_prunes_a_reachable_incumbent(seed, k, conc, eps, divergence):
    """``_rect_prunes`` over split points ``[ta, tb]`` and end points ``[b0, b1]``: at an incumbent
    equal to the largest computed candidate value ``H[t] + (score(t, b) - pen)`` it must not prune."""
    rng, red, pre = _instance(seed, k, conc)
    if red.k < G + 2:
        return
    div = get_divergence(divergence)
    c, A, lf = rescale(eps)
    sc = (div.code, div.param, c, A, lf)
    pos = np.arange(red.k + 1, dtype=np.int64)
    g = int(rng.integers(0, (red.k - 1) // G))
    ta, tb = g * G, g * G + G - 1
    b0 = int(rng.integers(tb + 1, red.k + 1))
    b1 = int(rng.integers(b0, red.k + 1))
    H = _h_values(rng, red.k + 1, 0.01)
    pen = float(rng.choice([0.0, 0.05 * c, c]))
    u = [
        H[t] + (K.score(pre, np.int64(t), np.int64(b), sc) - pen)
        for t in range(ta, tb + 1)
        for b in range(b0, b1 + 1)
    ]
    best = max(u)
    hmax = float(np.max(H[ta : tb + 1]))
    if not best > -math.inf:
        return
    assert not K._rect_prunes(pre, pos, ta, tb, b0, b1, hmax, best, sc, pen), (seed, k, eps, divergence)
    # a range with one end point is _box_prunes
    assert not K._box_prunes(pre, pos, ta, tb, b1, hmax, max(u[b1 - b0 :: b1 - b0 + 1]), sc, pen)


_NO_EXT = np.zeros(0)


def _tangent_setup(seed, k, conc, eps):
    rng, red, pre = _instance(seed, k, conc)
    div = get_divergence("kl")
    c, A, lf = rescale(eps)
    pos = np.arange(red.k + 1, dtype=np.int64)
    GS, GR = np.zeros((2, red.k + 1)), np.zeros((4, red.k // G + 1))
    K.group_sums(pre, pos, GS)
    K.super_sums(pre, pos, GS, GR)
    return rng, red.k, pre, pos, (div.code, div.param, c, A, lf), GS, GR


def _score(pre, t, b, sc):
    return K.score(pre, np.int64(t), np.int64(b), sc)


def _adversarial(rng, pre, k, ta, tb, b, sc, mode):
    """H for a bound over split points ta..tb and the end point b: every candidate H[t] + score(t, b)
    equal up to 1e-15 (mode -1), or one candidate alone (-2; usually the first, whose block is the
    largest: the bound's second-order term is then checked against that block's score itself)."""
    if mode == -1:
        H = _h_values(rng, k + 1, 1e-3)
        for t in range(ta, tb + 1):
            H[t] = -_score(pre, t, b, sc) * (1.0 + 1e-15 * rng.random())
        return H
    H = np.full(k + 1, -math.inf)
    H[ta if rng.random() < 0.7 else int(rng.integers(ta, tb + 1))] = float(rng.normal())
    return H


@settings(max_examples=80)
@given(
    st.integers(0, 10**6),
    st.integers(2 * G + 2, 8 * G),
    st.sampled_from([0.05, 0.3, 1.0, 5.0]),
    st.sampled_from([1e-6, 1e-3, 0.3, 1.0, 3.0, 8.0, 30.0, 200.0]),
    st.sampled_from([0.0, 1e-6, 1e-2, 1.0, -1.0, -2.0]),
    st.booleans(),
)
def test_tangent_bound_never_prunes_a_reachable_incumbent(seed, k, conc, eps, hscale, chunk):
    """``_tangent_prunes`` over a group (KL): never prunes at the largest computed candidate value,
    for any H; over a chunk of end points, never when one end point's incumbent is its largest
    candidate value (the others unbounded)."""
    rng, k, pre, pos, sc, GS, GR = _tangent_setup(seed, k, conc, eps)
    if k < G + 2:
        return
    c = sc[2]
    g = int(rng.integers(0, (k - 1) // G))
    ta, tb = g * G, g * G + G - 1
    b = int(rng.integers(tb + 1, k + 1))
    H = _h_values(rng, k + 1, hscale) if hscale >= 0 else _adversarial(rng, pre, k, ta, tb, b, sc, hscale)
    GH = np.array([np.max(H[j * G : j * G + G]) for j in range(k // G + 1)])
    pen = float(rng.choice([0.0, 0.05 * c, c]))
    if not chunk:
        u = [H[t] + (_score(pre, t, b, sc) - pen) for t in range(ta, tb + 1)]
        best = max(u)
        if best > -math.inf:
            args = (H, GH, GS, GR, _NO_EXT, _NO_EXT, _NO_EXT, best, sc, pen)
            pruned, tan = K._tangent_prunes(pre, pos, ta, tb, b, *args)
            assert not pruned, (seed, k, eps)
            # the same bound for each candidate alone (used inside a group that was not pruned)
            for t in range(ta, tb + 1):
                assert K._tangent_candidate(tan, H[t], GS[0, t], GS[1, t], pen) >= u[t - ta], (seed, t)
        return
    ends = np.arange(b, min(k, b + G - 1) + 1)
    EP = np.array([0.0 if e == b else K.block_sums(pre, np.int64(b), np.int64(e))[0] for e in ends])
    EQ = np.array([0.0 if e == b else K.block_sums(pre, np.int64(b), np.int64(e))[1] for e in ends])
    j = int(rng.integers(0, len(ends)))
    INC = np.full(len(ends), math.inf)
    INC[j] = max(H[t] + (_score(pre, t, ends[j], sc) - pen) for t in range(ta, tb + 1))
    if INC[j] > -math.inf:
        args = (H, GH, GS, GR, EP, EQ, INC, float(INC[j]), sc, pen)
        assert not K._tangent_prunes(pre, pos, ta, tb, b, *args)[0], (seed, k, eps, j)


@settings(max_examples=25)
@given(
    st.integers(0, 10**6),
    st.sampled_from([0.3, 1.0, 5.0]),
    st.sampled_from([1e-3, 0.3, 1.0, 3.0, 8.0, 30.0]),
    st.sampled_from([0.0, 1e-6, 1e-2, 1.0, -1.0, -2.0]),
)
def test_super_tangent_bound_never_prunes_a_reachable_incumbent(seed, conc, eps, hscale):
    """``_tangent_prunes`` over a super group of 1024 split points (bounded from its groups' maxima
    of H and the sums of ``super_sums``): never prunes at the largest computed candidate value."""
    rng, k, pre, pos, sc, GS, GR = _tangent_setup(seed, K.SUPER + 3 * G + seed % 500, conc, eps)
    if k < K.SUPER + 2:
        return
    c = sc[2]
    b = int(rng.integers(K.SUPER, k + 1))
    S = K.SUPER
    H = _h_values(rng, k + 1, hscale) if hscale >= 0 else _adversarial(rng, pre, k, 0, S - 1, b, sc, hscale)
    GH = np.array([np.max(H[j * G : j * G + G]) for j in range(k // G + 1)])
    pen = float(rng.choice([0.0, 0.05 * c, c]))
    u = H[: K.SUPER] + (np.array([_score(pre, t, b, sc) for t in range(K.SUPER)]) - pen)
    best = float(np.max(u))
    if best > -math.inf:
        args = (H, GH, GS, GR, _NO_EXT, _NO_EXT, _NO_EXT, best, sc, pen)
        assert not K._tangent_prunes(pre, pos, 0, K.SUPER - 1, b, *args)[0], (seed, eps)


def test_tangent_bound_prunes_next_to_the_optimum_where_the_box_bound_cannot():
    """Not a vacuous bound: on a real pass (H of the penalised program at the optimal ratio), the
    tangent bound drops groups of split points next to the last cut that the box bound keeps."""
    _, k, pre, pos, sc, GS, GR = _tangent_setup(5, 4000, 1.0, 1.0)
    c = sc[2]
    lam, _ = _dinkelbach(pre, k, sc, False, 2)
    H, cnt, par = np.empty(k + 1), np.empty(k + 1, dtype=np.int64), np.empty(k + 1, dtype=np.int64)
    GH = np.empty(k // G + 1)
    SH = np.empty(GH.shape[0] // G + 1)
    K.uncached_pass(pre, pos, sc, lam * c, H, cnt, par, False, GH, SH, GS, GR)
    best = H[k]
    tangent_only = 0
    for g in range(k // G - 1):
        ta, tb = g * G, g * G + G - 1
        if ta <= par[k] <= tb:
            continue
        box = K._box_prunes(pre, pos, ta, tb, k, float(np.max(H[ta : tb + 1])), best, sc, lam * c)
        args = (H, GH, GS, GR, _NO_EXT, _NO_EXT, _NO_EXT, best, sc, lam * c)
        tangent_only += K._tangent_prunes(pre, pos, ta, tb, k, *args)[0] and not box
    assert tangent_only >= 5


def test_group_sums_are_the_block_sums_before_each_groups_last_cut():
    _, red, pre = _instance(3, 5 * G + 7, 0.5)
    pos = np.arange(red.k + 1, dtype=np.int64)
    GS = np.full((2, red.k + 1), np.nan)
    K.group_sums(pre, pos, GS)
    for t in range((red.k + 1) // G * G):
        tb = t // G * G + G - 1
        want = (0.0, 0.0) if t == tb else K.block_sums(pre, np.int64(t), np.int64(tb))
        assert (GS[0, t], GS[1, t]) == want


def _dinkelbach(pre, k, sc, cached: bool, start_blocks: int):
    pos = np.arange(k + 1, dtype=np.int64)
    if cached:
        sp, sq, val, state = K._new_cache(pre, pos)
    else:
        sp = sq = val = np.empty(0)
        state = np.empty(0, dtype=np.uint8)
    bounds = np.zeros(k + 1, dtype=np.int64)
    nb = min(start_blocks, k)
    bounds[: nb + 1] = (np.arange(nb + 1) * k) // nb
    raw, nb = K.dinkelbach_ws(
        pre, pos, sp, sq, val, state, np.empty(0, dtype=np.int64), sc, bounds, np.int64(nb)
    )
    return raw, list(bounds[: nb + 1])


@pytest.mark.parametrize("divergence", ["kl", "js", "reverse_kl"])
def test_chunked_tangent_pass_equals_cached_pass(divergence):
    """The O(k) pass (chunk, group, super-group and tangent pruning, several hinted passes from a
    poor start) returns bit for bit what the cached pass returns, with many blocks."""
    div = get_divergence(divergence)
    for seed, k, conc, eps in ((1, 1500, 1.0, 5.0), (2, 1300, 0.3, 10.0), (3, 1100, 1.0, 1.0)):
        _, red, pre = _instance(seed, k, conc)
        c, A, lf = rescale(eps)
        sc = (div.code, div.param, c, A, lf)
        for start in (1, 7):
            a = _dinkelbach(pre, red.k, sc, True, start)
            b = _dinkelbach(pre, red.k, sc, False, start)
            assert a == b, (divergence, seed, eps, start)


def test_coarse_start_mirror_and_many_blocks_against_readable():
    """Above COARSEN_MIN_K with many blocks (the refinement windows shrink to the cut budget):
    the Python mirror of the coarse start equals the compiled one, and the solve is the readable
    optimum."""
    rng = np.random.default_rng(21)
    k = K.COARSEN_MIN_K + 200
    p, q = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
    red = _reduce(p, q)
    pre = _Prefix(red.p, red.q).table
    div = get_divergence("kl")
    eps = 6.0
    c, A, lf = rescale(eps)
    sc = (div.code, div.param, c, A, lf)
    a = np.zeros(red.k + 1, dtype=np.int64)
    b = np.zeros(red.k + 1, dtype=np.int64)
    na = _fast._coarse_start(pre, red.k, sc, a)
    nb = K._coarse_start(pre, red.k, sc, b)
    assert na == nb >= 5 and list(a[: na + 1]) == list(b[: nb + 1])
    raw, cuts, method = _fast.solve(red.p, red.q, eps, div, red.k)
    assert method == "dinkelbach" and len(cuts) >= 5
    ref_raw, ref_cuts = _dp_readable(red.p, red.q, eps, div, len(cuts) + 1)
    assert_raw_optimum(red, eps, "kl", len(cuts) + 1, raw, cuts, method, "pruned", ref_raw, ref_cuts)


@pytest.mark.parametrize(("k", "eps", "l"), [(6000, 10.0, 8), (5000, 5.0, 3), (2500, 2.0, 2)])
def test_budget_program_with_super_groups_equals_readable(k, eps, l):
    """The compiled budget program above several super groups of split points (chunk, group,
    super-group and tangent pruning per row, binding budgets) against the readable program."""
    rng = np.random.default_rng(k)
    p, q = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
    red = _reduce(p, q)
    pre = _Prefix(red.p, red.q).table
    div = get_divergence("kl")
    c, A, lf = rescale(eps)
    bounds = np.zeros(red.k + 1, dtype=np.int64)
    raw, nb = K.budget_dp(pre, np.int64(red.k), np.int64(l), (div.code, div.param, c, A, lf), bounds)
    cuts = [(int(bounds[j]), int(bounds[j + 1])) for j in range(nb)]
    ref_raw, ref_cuts = _dp_readable(red.p, red.q, eps, div, l)
    assert nb == l
    assert_raw_optimum(red, eps, "kl", l, raw, cuts, "budget_dp", "pruned", ref_raw, ref_cuts)
