"""ldpopt.sweep: many pairs x an eps grid, against looping optimal_mechanism(method="dp").

The reference is the readable O(l k^2) program run cell by cell; ``sweep`` shares the sort,
the prefix sums and the block sums across eps, warm-starts every eps from its neighbour and
carries score bounds down the grid, so agreement here checks all of that.  Tests marked
``nojit`` also run with NUMBA_DISABLE_JIT=1.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ldpopt
from _errmodel import U, fdiv_bound, ratio_bound, score_bound, within
from _valuebounds import (
    block_inputs,
    dinkelbach_slack,
    dp_value_bound,
    pair_bound,
    partition_scores,
    transform_bound,
)
from ldpopt._numerics import rescale
from ldpopt.divergences import get_divergence
from ldpopt.errors import LdpoptWarning
from ldpopt.spr import _policy
from ldpopt.spr import grid as spr_grid
from ldpopt.spr._policy import power_far as _power_far
from ldpopt.spr.reduction import _Prefix, _reduce
from ldpopt.spr.reference import _dp_readable, spr_value
from ldpopt.spr.solve import _partition_value, _solve_power_far
from reference import lr_reduction_exact, reduced_cuts

#: the numerics tests: CI also runs them on numpy's AVX2 and baseline loops (.ci/npy_disable.py)
pytestmark = pytest.mark.numerics
#: Renyi far from S = 1: the documented precision of every value (docs/spr.md, "Precision")
FAR_REL = 2e-13


@pytest.fixture(autouse=True)
def _batched_kernels(monkeypatch):
    """These tests are about the batched kernels: small sweeps go through them too (by default a
    sweep of a few cells x k^2 is solved cell by cell by the single solver, tested below)."""
    monkeypatch.setattr(spr_grid, "SMALL_SWEEP_WORK", 0)


def test_small_sweeps_are_the_single_solvers_answers(monkeypatch):
    monkeypatch.setattr(spr_grid, "SMALL_SWEEP_WORK", 250_000)
    rng = np.random.default_rng(41)
    p0s, p1s = random_pairs(rng, 3, [4, 9, 20])
    grid = [0.3, 2.0, 9.0, math.inf]
    for divergence, l in (("kl", None), ("tv", 2), ("renyi:2", None), ("js", 3)):
        res = ldpopt.sweep(p0s, p1s, grid, divergence, l, return_partitions=True, progress=False)
        assert res.method == "fast"
        for t in range(3):
            for eps in grid:
                # the single solver's cell and the sweep's cell (the same kernels, but the value's
                # last step may round differently across numpy versions, e.g. at eps = inf where
                # the value is the input divergence) are both within the error model of the
                # readable program's optimum (check_cell), which is what "the same answer" means
                one = ldpopt.optimal_mechanism(p0s[t], p1s[t], eps, divergence, l)
                check_cell(one.value, one.partition, p0s[t], p1s[t], eps, divergence, l)
        assert_matches_loop(res, p0s, p1s, grid, divergence, l)


def check_cell(value, partition, p0, p1, eps, divergence, l, normalize=False, fast=True):
    """One sweep cell against ``optimal_mechanism(method="dp")`` (tests/_valuebounds.py model).

    The sweep runs the compiled kernels (libm scores), the reference the readable program
    (numpy scores).  With R_r(P) the readable evaluation of a partition (``spr_value``, the
    readable program's own operations):

    * ``R_r(P_sweep) <= ref_raw`` exactly (the readable program maximises its own float sums);
    * the cell's value is within ``pair_bound(P_sweep)`` (mapped through the value transform)
      of ``R_r(P_sweep)``;
    * a different partition must tie: ``ref_raw - R_r(P_sweep) <= pair_bound(P_ref) +
      pair_bound(P_sweep) + dinkelbach_slack`` (the slack covers the budget program too, whose
      own slack is 0: a cell does not report which of the two solved it).

    A user divergence makes the sweep run the readable program itself (``fast=False``): the
    same function, so the same value and partition.
    """
    div = get_divergence(divergence)
    ref = ldpopt.optimal_mechanism(p0, p1, eps, divergence, l, normalize=normalize, method="dp")
    info = (eps, divergence, l, value, ref.value, partition, ref.partition)
    if not fast:
        assert value == ref.value and partition == ref.partition, info
        return
    red = ldpopt.likelihood_ratio_reduction(p0, p1, normalize=normalize)
    ll = red.k if l is None else min(l, red.k)
    ref_raw, ref_cuts = _dp_readable(red.p, red.q, eps, div, ll)
    if _power_far(div, ref_raw):
        # Renyi far from S = 1: both solve again on the scaled Renyi sum (the same numpy table,
        # the compiled table path or the readable program) and report D_alpha of their
        # partition, to the documented precision (docs/spr.md, "Precision")
        far = _solve_power_far(red.p, red.q, eps, div, ll, ref_cuts, False)
        assert red.lift_blocks(far) == ref.partition, info
        cuts = reduced_cuts(red, partition)
        assert value == _partition_value(red.p, red.q, eps, div, cuts, math.nan), info
        assert value == pytest.approx(ref.value, rel=FAR_REL), info
        return
    ref_value = _partition_value(red.p, red.q, eps, div, ref_cuts, ref_raw)
    assert ref_value == ref.value and red.lift_blocks(ref_cuts) == ref.partition, info
    cuts = reduced_cuts(red, partition)
    mine = spr_value(red.p, red.q, eps, div, cuts)
    if not (math.isfinite(ref_raw) and math.isfinite(mine)):
        assert value == ref.value and mine == ref_raw, info
        return
    assert mine <= ref_raw, (info, mine, ref_raw)
    pb = pair_bound(red.p, red.q, eps, div, cuts)
    bound = transform_bound(div, mine, pb)
    assert within("sweep vs readable: value of the sweep partition", value, div.transform(mine), bound), (
        info,
        mine,
        bound,
    )
    if cuts == ref_cuts:
        assert mine == ref_raw, info
        return
    tie = (
        pair_bound(red.p, red.q, eps, div, ref_cuts) + pb + dinkelbach_slack(red.p, red.q, eps, div, ref_raw)
    )
    assert within("sweep vs readable: optimum (a tie)", ref_raw, mine, tie), (info, mine, tie)


def assert_matches_loop(res, p0s, p1s, grid, divergence, l):
    """Every cell agrees with optimal_mechanism(..., method="dp") (:func:`check_cell`).

    ``res`` must carry partitions: a sweep without them is compared with the same sweep with
    them (bit for bit: the same kernels, the partitions are only recorded).
    """
    assert res.values.shape == (len(p0s), len(grid)) == res.num_outputs.shape
    for t, (a, b) in enumerate(zip(p0s, p1s, strict=True)):
        for e, eps in enumerate(grid):
            part = res.partitions[t][e]
            assert len(part) == res.num_outputs[t, e]
            if l is not None:
                assert res.num_outputs[t, e] <= l
            check_cell(res.values[t, e], part, a, b, eps, divergence, l, fast=res.method == "fast")


def user_vs_builtin_hellinger(red, eps, cuts) -> float:
    """Bound of |R_user(P) - R_builtin(P)| for the user generator f(t) = (sqrt(t) - 1)^2.

    The user path computes y * f(x / y): t = x / y (1 rounding), sqrt (1, and half the input's),
    r = sqrt(t) - 1 (absolute error 1.5u sqrt(t) + u |r|), r * r (relative 2 |err r| / |r| + u)
    and the product with y (1): |error| <= u y (3 sqrt(t) |r| + 4 r^2).  The built-in d^2 / s^2
    is within ``score_bound`` (7u relative).  Then two left-to-right sums and two divisions.
    """
    x, y, d, lf = block_inputs(red.p, red.q, eps, cuts)
    div = get_divergence("hellinger")
    t = x / y
    r = np.sqrt(t) - 1.0
    e_user = U * y * (3.0 * np.sqrt(t) * np.abs(r) + 4.0 * r * r)
    e_builtin = score_bound(div.code, div.param, x, y, d, lf)
    s = partition_scores(red.p, red.q, eps, div, cuts)
    c = math.exp(-eps)
    den = 1.0 + (len(cuts) - 1) * c
    return ratio_bound(e_user + e_builtin, s, den, float(np.sum(s)) / den)


def random_pairs(rng, T, ks, conc=1.0):
    p0s, p1s = [], []
    for t in range(T):
        k = int(ks[t % len(ks)])
        p0s.append(rng.dirichlet(np.full(k, conc)))
        p1s.append(rng.dirichlet(np.full(k, conc)))
    return p0s, p1s


# ---------------------------------------------------------------------------------------------
# 1. sweep == loop of optimal_mechanism(method="dp")
# ---------------------------------------------------------------------------------------------
@pytest.mark.nojit
@pytest.mark.parametrize(
    "divergence,l",
    [
        ("kl", None),
        ("js", 2),
        ("tv", None),
        ("renyi:2", None),
        ("egamma:1.5", 3),
        ("reverse_kl", None),
        ("chi2", 2),
    ],
)
def test_sweep_equals_loop_small(divergence, l):
    rng = np.random.default_rng(20)
    p0s, p1s = random_pairs(rng, 4, [1, 3, 6, 8], conc=0.4)
    p0s[2][1] = 0.0  # a zero: an infinite likelihood ratio
    p0s[2] /= p0s[2].sum()
    grid = [2.0, 1e-6, 0.3, math.inf, 5.0, 2.0, 60.0, 800.0]  # unsorted, a duplicate, inf, e^-eps = 0
    res = ldpopt.sweep(p0s, p1s, grid, divergence, l, return_partitions=True, progress=False)
    assert res.method == "fast"
    assert_matches_loop(res, p0s, p1s, grid, divergence, l)


@pytest.mark.parametrize("divergence", ["kl", "js", "hellinger", "renyi:0.5"])
def test_sweep_equals_loop_figure1_like(divergence):
    """Dirichlet(1) pairs on a fine eps grid: warm starts and carried bounds are exercised."""
    rng = np.random.default_rng(21)
    p0s, p1s = random_pairs(rng, 6, [30, 45])
    grid = np.round(np.arange(1, 41) * 0.25, 10)
    res = ldpopt.sweep(np.array(p0s[::2]), np.array(p1s[::2]), grid, divergence, progress=False)
    with_parts = ldpopt.sweep(p0s[::2], p1s[::2], grid, divergence, return_partitions=True, progress=False)
    assert res.partitions is None
    assert np.array_equal(res.values, with_parts.values)  # the same kernels on the same inputs
    assert_matches_loop(with_parts, p0s[::2], p1s[::2], grid, divergence, None)
    res = ldpopt.sweep(p0s, p1s, grid[::3], divergence, return_partitions=True, progress=False)
    assert_matches_loop(res, p0s, p1s, grid[::3], divergence, None)


def test_sweep_with_budget_and_large_alphabet():
    """k above the score-cache threshold (items split over eps), budget below the free optimum."""
    rng = np.random.default_rng(22)
    k = 1100
    p0s, p1s = random_pairs(rng, 1, [k])
    grid = [6.0, 0.5, 2.0]
    res = ldpopt.sweep(p0s, p1s, grid, "kl", max_outputs=3, return_partitions=True, progress=False)
    assert_matches_loop(res, p0s, p1s, grid, "kl", 3)


@pytest.mark.nojit
def test_sweep_accepts_labelled_pairs_and_normalize():
    p0s = [{"a": 0.5, "b": 0.3, "c": 0.2}, {"x": 2.0, "y": 1.0}]
    p1s = [{"c": 0.5, "b": 0.3, "a": 0.2}, {"y": 1.0, "x": 1.0}]
    res = ldpopt.sweep(p0s, p1s, [1.0, 3.0], return_partitions=True, progress=False, normalize=True)
    for t in range(2):
        for e, eps in enumerate([1.0, 3.0]):
            check_cell(
                res.values[t, e], res.partitions[t][e], p0s[t], p1s[t], eps, "kl", None, normalize=True
            )
    # the sweep evaluates D_f(P0||P1) by the function f_divergence calls (``div(u, v)``) on the
    # same validated arrays: the same bits ([2, 1] / 3 is the normalised pair's rounding)
    assert list(res.input_divergence) == [
        ldpopt.f_divergence([0.5, 0.3, 0.2], [0.2, 0.3, 0.5]),
        ldpopt.f_divergence(np.array([2.0, 1.0]) / 3.0, [0.5, 0.5]),
    ]


@pytest.mark.nojit
def test_user_divergence_falls_back_with_one_warning(monkeypatch):
    # above the table path's size a user's divergence runs the readable program (lowered here
    # so that pairs of 5 symbols take it; tests/spr/test_small.py tests the table path itself)
    monkeypatch.setattr(_policy, "USER_TABLE_MAX_K", 4)
    monkeypatch.setattr(spr_grid, "_warned_user_divergence", False)
    user = ldpopt.FDivergence(lambda t: (np.sqrt(t) - 1.0) ** 2, name="my-hellinger")
    rng = np.random.default_rng(23)
    p0s, p1s = random_pairs(rng, 2, [5])
    with pytest.warns(LdpoptWarning, match="my-hellinger"):
        res = ldpopt.sweep(p0s, p1s, [0.5, 2.0], user, return_partitions=True, progress=False)
    assert res.method == "dp"
    assert_matches_loop(res, p0s, p1s, [0.5, 2.0], user, None)
    builtin = ldpopt.sweep(p0s, p1s, [0.5, 2.0], "hellinger", return_partitions=True, progress=False)
    for t in range(2):
        red = _reduce(p0s[t], p1s[t])
        for e, eps in enumerate([0.5, 2.0]):
            pu = reduced_cuts(red, res.partitions[t][e])
            pb = reduced_cuts(red, builtin.partitions[t][e])
            # the readable program maximises the user's float sums exactly (v_u >= R_u(P_b)), the
            # kernels the built-in's up to Dinkelbach's slack D, so
            # -E(P_b) <= v_u - v_b <= E(P_u) + D with E the two formulas' disagreement on a partition
            vu, vb = res.values[t, e], builtin.values[t, e]
            hi = user_vs_builtin_hellinger(red, eps, pu) + dinkelbach_slack(
                red.p, red.q, eps, "hellinger", vb
            )
            lo = user_vs_builtin_hellinger(red, eps, pb)
            assert within("user generator vs built-in hellinger", vu, vb, hi if vu >= vb else lo), (
                vu,
                vb,
                hi,
                lo,
            )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ldpopt.sweep(p0s, p1s, [1.0], user, progress=False)  # one-time: no second warning


# ---------------------------------------------------------------------------------------------
# 2. Result object, laziness, progress
# ---------------------------------------------------------------------------------------------
@pytest.mark.nojit
def test_result_is_frozen_and_read_only():
    res = ldpopt.sweep([[0.6, 0.4]], [[0.3, 0.7]], [1.0, 2.0], progress=False)
    assert isinstance(res, ldpopt.SweepResult)
    assert ldpopt.sweep is spr_grid.sweep
    assert res.shape == (1, 2) and res.partitions is None and res.divergence == "kl"
    with pytest.raises(AttributeError):
        res.values = None
    with pytest.raises(ValueError):
        res.values[0, 0] = 1.0
    # normalized_values is this same division (the same bits)
    assert np.array_equal(res.normalized_values, res.values / res.input_divergence[:, None])
    assert list(res.eps_grid) == [1.0, 2.0] and res.num_outputs.dtype.kind == "i"


def test_progress_bar_modes(capsys):
    rng = np.random.default_rng(24)
    p0s, p1s = random_pairs(rng, 3, [6])
    a = ldpopt.sweep(p0s, p1s, [0.5, 1.0], progress=True)
    b = ldpopt.sweep(p0s, p1s, [0.5, 1.0], progress=False)
    assert np.array_equal(a.values, b.values)
    capsys.readouterr()


# ---------------------------------------------------------------------------------------------
# 3. Validation: every bad input names its argument
# ---------------------------------------------------------------------------------------------
@pytest.mark.nojit
@pytest.mark.parametrize(
    "kwargs,exc,match",
    [
        (dict(p0s=np.array([0.5, 0.5])), ValueError, "p0s must be 2-D"),
        (dict(p0s=[0.5, 0.5]), ValueError, "p0s must be a sequence of distributions"),
        (dict(p0s="abc"), TypeError, "p0s"),
        (dict(p0s=[]), ValueError, "p0s must contain"),
        (dict(p1s=[[0.5, 0.5], [0.5, 0.5]]), ValueError, "same number"),
        (dict(p1s=[[0.5, 0.6]]), ValueError, "p1s\\[0\\] must sum to 1"),
        (dict(p1s=[[0.5, 0.25, 0.25]]), ValueError, "same length"),
        (dict(p0s=[[-0.5, 1.5]]), ValueError, "p0s\\[0\\] must be non-negative"),
        (dict(eps_grid=[1.0, -2.0]), ValueError, "eps_grid\\[1\\]"),
        (dict(eps_grid=[1.0, float("nan")]), ValueError, "eps_grid\\[1\\]"),
        (dict(eps_grid=[]), ValueError, "eps_grid must contain"),
        (dict(eps_grid=1.0), TypeError, "eps_grid"),
        (dict(eps_grid=np.ones((2, 2))), ValueError, "eps_grid must be 1-D"),
        (dict(eps_grid=["a"]), TypeError, "eps_grid\\[0\\]"),
        (dict(divergence="nope"), ValueError, "divergence"),
        (dict(divergence=3), TypeError, "divergence"),
        (dict(max_outputs=0), ValueError, "max_outputs"),
        (dict(max_outputs=1.5), ValueError, "max_outputs"),
        (dict(return_partitions="yes"), TypeError, "return_partitions"),
        (dict(progress="yes"), TypeError, "progress"),
    ],
)
def test_validation(kwargs, exc, match):
    args = dict(p0s=[[0.5, 0.5]], p1s=[[0.2, 0.8]], eps_grid=[1.0])
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        ldpopt.sweep(**args)


# ---------------------------------------------------------------------------------------------
# 4. Properties
# ---------------------------------------------------------------------------------------------
@settings(max_examples=25)
@given(
    st.integers(1, 4),
    st.integers(2, 9),
    st.integers(0, 10_000),
    st.sampled_from(["kl", "js", "tv", "chi2", "renyi:2"]),
)
def test_property_values_nondecreasing_in_eps(T, k, seed, divergence):
    """More privacy budget never hurts: the optimum is nondecreasing in eps (an independent fact)."""
    rng = np.random.default_rng(seed)
    p0s, p1s = random_pairs(rng, T, [k], conc=0.5)
    grid = np.sort(rng.uniform(0.01, 12.0, size=6))
    res = ldpopt.sweep(p0s, p1s, grid, divergence, progress=False)
    div = get_divergence(divergence)

    def fast_err(t, eps):
        """|sweep cell - exact optimum| (raw): above, R_f(P_f) <= R(P_f) + pair_bound(P_f) + e(P_f);
        below, the cell is within pair_bound(P_ref) + pair_bound(P_f) + Dinkelbach's slack of the
        readable optimum, itself within e(P*) of the exact one.  Over all partitions:
        pair_bound(P) <= sum_t (2 b_t + 2 (k + 1) u |s_t|) (ratio_bound, den >= 1), so
        dp_value_bound with 4 b_t + 4 (k + 1) u |s_t| added per score, plus the slack."""
        k = len(p0s[t])

        def pairs(x, y, d):
            return 4 * score_bound(div.code, div.param, x, y, d) + 4 * (k + 1) * U * np.abs(
                div.perspective(x, y, d)
            )

        red = _reduce(p0s[t], p1s[t])
        raw = _dp_readable(red.p, red.q, eps, div, red.k)[0]
        err = dp_value_bound(p0s[t], p1s[t], eps, div, extra=pairs) + dinkelbach_slack(
            red.p, red.q, eps, div, raw
        )
        return raw, err

    # more budget never hurts in exact arithmetic: a decrease is at most the two cells' errors
    for t in range(T):
        for e in range(len(grid)):
            nxt = min(e + 1, len(grid) - 1)
            lo, hi = res.values[t, e], res.values[t, nxt]
            if hi < lo:
                (r1, e1), (r2, e2) = fast_err(t, grid[e]), fast_err(t, grid[nxt])
                bound = transform_bound(div, r1, e1) + transform_bound(div, r2, e2)
                assert within("sweep: nondecreasing in eps", lo, hi, bound), (lo, hi, bound)
            # data processing: no mechanism beats the non-private divergence (within fdiv_bound)
            top = res.input_divergence[t]
            if res.values[t, e] > top:
                raw, err = fast_err(t, grid[e])
                slack = transform_bound(div, raw, err) + transform_bound(
                    div, div.raw(p0s[t], p1s[t]), fdiv_bound(div.code, div.param, p0s[t], p1s[t])
                )
                assert within("sweep: data processing", res.values[t, e], top, slack)


@pytest.mark.nojit
def test_reduction_equals_the_exact_rational_one():
    # exact ties, near ties (1 ulp apart), zeros and rounded masses; large k with a few ties
    # exercises the vectorised sort with runs merged one at a time
    rng = np.random.default_rng(25)
    for trial in range(300):
        k = int(rng.integers(1, 20)) if trial % 30 else 2000
        u, v = rng.dirichlet(np.full(k, 0.3)), rng.dirichlet(np.full(k, 0.3))
        r = rng.random()
        if r < 0.2:
            u[rng.integers(k)] = 0.0
        elif r < 0.4 and k > 2:
            v[1] = u[1] * v[0] / u[0]
        elif r < 0.5:
            u, v = np.round(u, 2), np.round(v, 2)
        elif r < 0.6 and k > 3:
            u[2] = np.nextafter(v[2] * u[3] / v[3], 1.0)  # a near tie that is not a tie
            v[[0, 1]] = 0.0
        if u.sum() == 0 or v.sum() == 0:
            continue
        a = _reduce(u, v)
        classes, p, q, dropped = lr_reduction_exact(u, v)
        assert a.classes == classes and a.dropped == dropped and a.k_original == k
        assert np.array_equal(a.p, p) and np.array_equal(a.q, q)
        assert a.members.tolist() == [i for c in classes for i in c]


# ---------------------------------------------------------------------------------------------
# 5. The kernel variants: a sweep compiles only the parts of the solver its cells can need
# ---------------------------------------------------------------------------------------------
def _parts(ks, ls, grid, divergence):
    return spr_grid.sweep_parts(
        np.array(ks, dtype=np.int64),
        np.array(ls, dtype=np.int64),
        np.array(grid, float),
        get_divergence(divergence),
    )


@pytest.mark.nojit
def test_sweep_parts_are_what_the_cells_can_need():
    none = spr_grid.SweepParts(coarse=False, uncached=False, budget=False)
    # the Figure-1b sweep: k = 100, eps 0.1 .. 10.1, no budget: the score-cache kernel alone
    assert _parts([100] * 3, [100] * 3, np.arange(1, 102) * 0.1, "kl") == none
    assert none.kernel_args() == (None, None, None)
    assert spr_grid.SweepParts(True, False, True).kernel_args() == (True, None, True)
    assert none.with_budget() == spr_grid.SweepParts(False, False, True)
    # a budget can bind when 1 < l < k (l = 1: one block; l = k: no constraint)
    assert _parts([100, 5], [100, 3], [1.0], "kl").budget
    assert not _parts([100, 5], [100, 1], [1.0], "kl").budget
    assert not _parts([100, 5], [100, 5], [1.0], "kl").budget
    # c = e^-eps < TIE_C = 1e-12 (near-ties settled by the budget program) iff eps > 12 ln 10 = 27.63
    assert not _parts([100], [100], [27.6], "kl").budget
    assert _parts([100], [100], [1.0, 27.7], "kl").budget
    assert _parts([100], [100], [1.0, math.inf], "kl").budget
    # Renyi of order a > 1 scores up to about e^((a - 1) eps): may overflow once that passes e^700
    assert not _parts([100], [100], [20.0], "renyi:2").budget
    assert _parts([100], [100], [25.0], "renyi:30").budget  # 29 * 25 = 725
    assert not _parts([100], [100], [25.0], "renyi:0.5").budget  # a < 1: bounded scores
    # the alphabet sizes: the pass without a score cache above 1024 symbols, the coarse start above 4096
    K = spr_grid._compiled().K
    sizes = {
        K.SCORE_CACHE_MAX_K: (False, False),
        K.SCORE_CACHE_MAX_K + 1: (False, True),
        K.COARSEN_MIN_K: (False, True),
        K.COARSEN_MIN_K + 1: (True, True),
    }
    for k, (coarse, uncached) in sizes.items():
        parts = _parts([10, k], [10, k], [1.0], "kl")
        assert (parts.coarse, parts.uncached) == (coarse, uncached), k
        assert spr_grid.size_class(k) == int(coarse) + int(uncached)


def _spy_items(monkeypatch):
    """Record what every ``solve_item`` call returned (False: the variant lacked a part)."""
    K = spr_grid._compiled().K
    calls = []
    real = K.solve_item

    def spy(*args):
        ok = real(*args)
        calls.append((bool(ok), args[-3:]))
        return ok

    monkeypatch.setattr(K, "solve_item", spy)
    return calls


@pytest.mark.parametrize(
    "divergence,l,grid",
    [
        ("kl", 2, [0.5, 3.0, 8.0]),  # a binding budget
        ("js", None, [2.0, 30.0, math.inf]),  # c < TIE_C: near-ties settled by the budget program
        ("renyi:100", None, [10.0, 2.0]),  # an overflowing score (infinite raw optimum)
    ],
)
def test_reduced_variant_falls_back_to_the_budget_program(monkeypatch, divergence, l, grid):
    """The kernel without the budget program, forced on cells that need it: those items are solved
    again with it, so the sweep equals the full kernel's bit for bit and the readable program."""
    rng = np.random.default_rng(26)
    p0s, p1s = random_pairs(rng, 3, [12, 25, 40])
    p1s[0][:3] = 0.0  # symbols only P0 has: infinite likelihood ratios (overflows for Renyi)
    p1s[0] /= p1s[0].sum()
    full = spr_grid.SweepParts(coarse=True, uncached=True, budget=True)
    monkeypatch.setattr(spr_grid, "sweep_parts", lambda *a: full)
    ref = ldpopt.sweep(p0s, p1s, grid, divergence, l, return_partitions=True, progress=False)
    reduced = spr_grid.SweepParts(coarse=False, uncached=False, budget=False)
    monkeypatch.setattr(spr_grid, "sweep_parts", lambda *a: reduced)
    calls = _spy_items(monkeypatch)
    res = ldpopt.sweep(p0s, p1s, grid, divergence, l, return_partitions=True, progress=False)
    assert any(not ok for ok, _ in calls), calls  # the fallback ran ...
    assert all(ok for ok, parts in calls if parts[2] is not None)  # ... and the budget variant solved
    assert all(parts == (None, None, None) or parts == (None, None, True) for _, parts in calls)
    assert np.array_equal(res.values, ref.values, equal_nan=True)
    assert np.array_equal(res.num_outputs, ref.num_outputs) and res.partitions == ref.partitions
    assert_matches_loop(res, p0s, p1s, grid, divergence, l)


def test_reduced_variant_reports_the_parts_it_lacks():
    """``solve_ws`` built without a part returns NEEDS_FULL where a cell needs it, never a value."""
    K = spr_grid._compiled().K
    rng = np.random.default_rng(27)
    empty = np.empty(0, dtype=np.int64)
    cases = (
        (K.SCORE_CACHE_MAX_K + 8, 1.0, None, (True, None, True)),  # no cache and no uncached pass
        (K.COARSEN_MIN_K + 8, 1.0, None, (None, True, True)),  # the coarse start is left out
        (40, 8.0, 2, (None, None, None)),  # a budget below the free optimum's blocks (checked)
        (40, math.inf, None, (None, None, None)),  # c = 0 < TIE_C
    )
    for k, eps, l, parts in cases:
        p, q = rng.dirichlet(np.full(k, 0.3)), rng.dirichlet(np.full(k, 0.3))
        red = _reduce(p, q)
        pre = _Prefix(red.p, red.q).table
        if red.k <= K.SCORE_CACHE_MAX_K:
            sp, sq, val, state = K._new_cache(pre, np.arange(red.k + 1))
        else:
            sp = sq = val = np.empty(0)
            state = np.empty(0, dtype=np.uint8)
        sc = K.scoring(get_divergence("kl").code, 0.0, *rescale(eps))
        ll = red.k if l is None else l
        bounds = np.zeros(red.k + 1, dtype=np.int64)
        args = (pre, np.int64(red.k), np.int64(ll), sc, bounds, np.int64(0), sp, sq, val, state, empty)
        _, _, method = K.solve_ws(*args, *parts)
        assert method == K.NEEDS_FULL, (k, eps, l, parts)
        _, nb, method = K.solve_ws(*args, *(True if x is None else x for x in parts))
        assert method != K.NEEDS_FULL and nb >= 1
        if l is not None:  # the budget binds: the free optimum has more blocks
            free = (pre, np.int64(red.k), np.int64(red.k), *args[3:])
            assert K.solve_ws(*free)[1] > l


_COLD_SWEEP = """
import json
import numpy as np
from numba.core import event
import ldpopt

rng = np.random.default_rng(5)
P, Q = rng.dirichlet(np.ones(100), size=4), rng.dirichlet(np.ones(100), size=4)
grid = np.arange(1, 41) * 0.25
used = {}
for name, l in (("free", None), ("budget", 3)):
    with event.install_recorder("numba:compile") as rec:
        ldpopt.sweep(P, Q, grid, "kl", max_outputs=l, progress=False)
    used[name] = sorted({ev.data["dispatcher"].py_func.__name__ for _, ev in rec.buffer if ev.is_start})
print(json.dumps(used))
"""


def test_a_cold_sweep_compiles_only_what_its_cells_can_need(tmp_path):
    """In a fresh process with an empty cache, a Figure-1-like sweep (k = 100, eps <= 10, KL, no
    budget) compiles neither the budget program, nor the pass without a score cache, nor the coarse
    start; a second sweep with a budget adds the budget program alone."""
    env = {key: val for key, val in os.environ.items() if key != "NUMBA_DISABLE_JIT"}
    env["NUMBA_CACHE_DIR"] = str(tmp_path)
    out = subprocess.run(
        [sys.executable, "-c", _COLD_SWEEP], capture_output=True, text=True, check=True, env=env
    )
    used = json.loads(out.stdout.strip().splitlines()[-1])
    large = {"budget_dp", "_budget_row", "uncached_pass", "_uncached_row", "_chunk_prunes", "_coarse_start"}
    assert "solve_item" in used["free"] and "cached_pass" in used["free"]
    assert not large & set(used["free"])
    # the KL kernel alone: no other divergence's perspective
    assert "_g_kl" in used["free"] and not {"_g_js", "_g_power_up", "_perspective_any"} & set(used["free"])
    assert {"solve_item", "budget_dp"} <= set(used["budget"])
    assert not {"uncached_pass", "_coarse_start", "cached_pass"} & set(used["budget"])
