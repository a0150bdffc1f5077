"""The compiled solvers (ldpopt.spr._kernels, ldpopt.spr._fast) against the readable dynamic program.

Every optimum of the fast paths (Dinkelbach's iteration with exact split-point pruning, the
compiled budget program, the carried bounds of sweeps) is compared with
``optimal_mechanism(..., method="dp")`` (``ldpopt.spr.solve._dp_readable``, an independent O(l k^2)
implementation in NumPy) and, for tiny alphabets, with brute force over all set partitions
(tests/reference.py).  ``_fast.solve`` has two paths - the table path (exact score tables,
k <= ``_fast.TABLE_MAX_K``) and the pruned kernels (larger k, sweeps) - and every equivalence
test runs the same instances through both (:func:`solver_path`).  Tests marked ``nojit`` also
run in CI with NUMBA_DISABLE_JIT=1, where the kernels execute as plain Python, so they keep k
small.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import _errmodel
import ldpopt
from _errmodel import U, mirror_bound, within
from _valuebounds import brute_force_agreement, dinkelbach_slack, eval_bound, pair_bound
from ldpopt._numerics import rescale
from ldpopt.divergences import _perspective_scalar, get_divergence, perspective_array
from ldpopt.spr import _fast
from ldpopt.spr import _kernels as K
from ldpopt.spr._policy import power_far as _power_far
from ldpopt.spr.reduction import DH, PH, QH, SDH, SPH, SQH, _Prefix, _reduce, compensated_prefix
from ldpopt.spr.reference import _dp_readable, interval_scores, spr_value
from ldpopt.spr.solve import _partition_value, _solve_power_far
from reference import brute_force_argmax, neumaier_prefix, reduced_cuts

#: the numerics tests: CI also runs them on numpy's AVX2 and baseline loops (.ci/npy_disable.py)
pytestmark = pytest.mark.numerics

DIVERGENCES = [
    "kl",
    "reverse_kl",
    "tv",
    "chi2",
    "hellinger",
    "js",
    "egamma:1",
    "egamma:1.5",
    "egamma:4",
    "renyi:0.5",
    "renyi:2",
    "renyi:3.5",
]
EPS_CHOICES = [1e-6, 1e-3, 0.05, 0.3, 1.0, 2.0, 4.0, 8.0, 20.0, 60.0, 500.0, math.inf]
#: the two paths of ``_fast.solve``
PATHS = ("table", "pruned")


@contextlib.contextmanager
def solver_path(path):
    """Route ``optimal_mechanism(method="fast")`` through one path of ``_fast.solve`` (any k)."""
    old = _fast.TABLE_MAX_K
    _fast.TABLE_MAX_K = 10**9 if path == "table" else -1
    try:
        yield
    finally:
        _fast.TABLE_MAX_K = old


def same(a: float, b: float) -> bool:
    """Bit-level agreement of two floats computed by the same function (NaN equals NaN)."""
    return a == b or (math.isnan(a) and math.isnan(b))


def random_instance(rng, k, conc):
    """A pair on k symbols with optional zeros, infinite ratios and exactly tied ratios."""
    p = rng.dirichlet(np.full(k, conc))
    q = rng.dirichlet(np.full(k, conc))
    r = rng.random()
    if k >= 3 and r < 0.15:  # zeros under one distribution: infinite / zero likelihood ratios
        p[rng.integers(k)] = 0.0
        q[rng.integers(k)] = 0.0
    elif k >= 3 and r < 0.3:  # symbols with exactly tied ratios (merged by the reduction)
        i, j = rng.choice(k, 2, replace=False)
        q[j] = q[i] * p[j] / p[i] if p[i] > 0 else q[j]
    elif r < 0.4:  # coarse probabilities: many equal masses and ratios
        p = np.round(p, 2) + 1e-3
        q = np.round(q, 2) + 1e-3
    if p.sum() == 0 or q.sum() == 0:
        p, q = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
    return p / p.sum(), q / q.sum()


def assert_raw_optimum(red, eps, divergence, l, raw, cuts, method, path, ref_raw, ref_cuts, info=()):
    """A fast optimum ``(raw, cuts)`` against the readable one, on the raw (untransformed) scale.

    Error model (tests/_valuebounds.py): let R_r(P) be the readable evaluation of a partition
    (numpy scores, left-to-right sum; ``spr_value`` performs exactly the readable program's
    operations) and R_f(P) the fast path's.

    1. The readable program maximises its own float sums exactly (max-plus recursion, monotone
       rounding), so ``R_r(P_fast) <= ref_raw`` holds bit for bit.
    2. The table path's scores are the readable ones bit for bit (``score_table``) and its sums
       run in the same order: ``raw == R_r(P_fast)`` exactly.  The pruned path's scores come
       from libm: ``|raw - R_r(P_fast)| <= pair_bound(P_fast)``.
    3. Optimality: ``ref_raw - R_r(P_fast) <= pair_bound(P_ref) + pair_bound(P_fast) + slack``,
       slack = 0 for the budget program and a single block (exact maxima of their own float
       sums) and ``dinkelbach_slack`` for Dinkelbach's iteration.  Different partitions are thus
       accepted exactly when they tie to within the bound.
    """
    div = get_divergence(divergence)
    info = (path, red.k, eps, divergence, l, raw, ref_raw, method, *info)
    if l is not None:
        assert len(cuts) <= l, info
    mine = spr_value(red.p, red.q, eps, div, cuts)
    if not (math.isfinite(ref_raw) and math.isfinite(mine)):
        assert same(raw, ref_raw) and same(mine, ref_raw), (info, mine)
        return
    assert mine <= ref_raw, (info, cuts, ref_cuts, mine)  # 1.
    if path == "table":  # 2.
        assert same(raw, mine), (info, mine)
        pb_fast = pb_ref = 0.0
    else:
        pb_fast = pair_bound(red.p, red.q, eps, div, cuts)
        pb_ref = pb_fast if cuts == ref_cuts else pair_bound(red.p, red.q, eps, div, ref_cuts)
        assert within("fast vs readable: value of the fast partition", raw, mine, pb_fast), (
            info,
            mine,
            pb_fast,
        )
    if cuts == ref_cuts:
        assert mine == ref_raw, info  # the same partition, the same readable operations
        return
    slack = dinkelbach_slack(red.p, red.q, eps, div, raw) if method == "dinkelbach" else 0.0
    bound = pb_ref + pb_fast + slack  # 3.
    assert within("fast vs readable: optimum (a tie)", ref_raw, mine, bound), (
        info,
        cuts,
        ref_cuts,
        mine,
        bound,
    )


def reported(red, eps, div, l, raw, cuts, fast):
    """``(value, cuts)`` that ``optimal_mechanism`` reports for the centred optimum ``(raw, cuts)``:
    Renyi far from S = 1 solved again on the scaled Renyi sum (``fast``: on the table path), and
    the value of that partition (the transformed ``raw``, or D_alpha evaluated from the blocks)."""
    if _power_far(div, raw):
        cuts = _solve_power_far(red.p, red.q, eps, div, l, cuts, fast)
    return _partition_value(red.p, red.q, eps, div, cuts, raw), cuts


def assert_same_optimum(p, q, eps, divergence, l, paths=PATHS):
    """Both fast paths give the readable optimum up to :func:`assert_raw_optimum`'s bounds.

    The public API is checked to report :func:`reported` of ``_fast.solve``'s raw value and
    cuts, lifted (the same functions: exact).  Returns ``{path: result}``.
    """
    ref = ldpopt.optimal_mechanism(p, q, eps, divergence, l, method="dp")
    div = get_divergence(divergence)
    red = ldpopt.likelihood_ratio_reduction(p, q)  # of the renormalised inputs, as the solvers
    ll = red.k if l is None else min(l, red.k)
    ref_raw, ref_cuts = _dp_readable(red.p, red.q, eps, div, ll)
    ref_value, ref_reported = reported(red, eps, div, ll, ref_raw, ref_cuts, fast=False)
    assert same(ref_value, ref.value) and red.lift_blocks(ref_reported) == ref.partition
    out = {}
    for path in paths:
        with solver_path(path):
            fast = ldpopt.optimal_mechanism(p, q, eps, divergence, l, method="fast")
        raw, cuts, method = _fast.solve(red.p, red.q, eps, div, ll, path=path)
        value, fast_reported = reported(red, eps, div, ll, raw, cuts, fast=True)
        assert fast.method == method, (path, fast.method, method)
        assert fast.partition == red.lift_blocks(fast_reported), (path, fast.partition)
        assert same(fast.value, value), (path, fast.value, raw)
        if l is not None:
            assert fast.num_outputs <= l
        assert_raw_optimum(red, eps, divergence, l, raw, cuts, method, path, ref_raw, ref_cuts, (len(p),))
        out[path] = fast
    return out


# ---------------------------------------------------------------------------------------------
# 1. The kernels mirror the readable building blocks
# ---------------------------------------------------------------------------------------------
def _edge_points():
    vals = [0.0, 5e-324, 1e-300, 1e-20, 1e-8, 0.3, 0.5, 0.9999999, 1.0, 1.5, 3.0]
    pts = []
    for x in vals:
        for y in vals:
            pts.append((x, y, x - y))
    return pts


@pytest.mark.nojit
@pytest.mark.parametrize("divergence", DIVERGENCES)
def test_perspective_mirrors_readable(divergence):
    div = get_divergence(divergence)
    rng = np.random.default_rng(1)
    pts = _edge_points()
    for _ in range(300):
        x, y = rng.random(2) ** rng.integers(1, 30, size=2)
        pts.append((x, y, x - y))
    for lf in (-math.inf, -800.0):
        xs = np.array([t[0] for t in pts])
        ys = np.array([t[1] for t in pts])
        ds = np.array([t[2] for t in pts])
        arr = perspective_array(div.code, div.param, xs, ys, ds, lf)
        # kernel (libm), array (numpy's SIMD loops) and scalar (Python's math, libm) evaluate the
        # same formulas at the same inputs: within the mirror bound (tests/_errmodel.py)
        bound = mirror_bound(div.code, div.param, xs, ys, ds, lf)
        for (x, y, d), a, bd in zip(pts, arr, bound, strict=True):
            ours = K.perspective(div.code, div.param, x, y, d, lf)
            assert within("perspective: kernel vs numpy", ours, a, bd), (divergence, x, y, d, lf, ours, a, bd)
            try:  # the scalar reference follows Python's math (it raises where numpy gives inf)
                ref = _perspective_scalar(div.code, div.param, x, y, d, lf)
            except (OverflowError, ValueError, ZeroDivisionError):
                continue
            assert within("perspective: kernel vs math", ours, ref, bd), (
                divergence,
                x,
                y,
                d,
                lf,
                ours,
                ref,
                bd,
            )


def test_compensated_prefix_is_neumaiers_loop_bit_for_bit():
    # the vectorised sums (cumsum of the values and of every step's rounding error) against the
    # one-symbol-at-a-time loop: mixed signs, zeros, -0.0 and masses down to 1e-300
    rng = np.random.default_rng(11)
    for trial in range(60):
        n = int(rng.integers(0, 80))
        x = rng.dirichlet(np.full(n, 0.3)) if n else np.zeros(0)
        if trial % 3 == 0:
            x = x * 10.0 ** rng.integers(-300, 0, size=n)
        if trial % 4 == 0 and n > 1:
            x[::2] *= -1.0
            x[int(rng.integers(0, n))] = -0.0
        if trial % 5 == 0:
            x[: n // 2] = 0.0
        for ours, ref in zip(compensated_prefix(x), neumaier_prefix(x), strict=True):
            assert ours.tobytes() == ref.tobytes(), trial


def test_large_prefix_tables_are_summed_row_by_row_to_the_same_bits():
    # above _BATCH_MAX_K symbols the six sums run one row at a time: still Neumaier's loop
    rng = np.random.default_rng(12)
    k = 40_000
    p, q = rng.dirichlet(np.full(k, 0.5)), rng.dirichlet(np.full(k, 0.5))
    pre = _Prefix(p, q).table
    hi, lo = neumaier_prefix(q[::-1])
    assert np.array_equal(pre[SQH], hi[::-1]) and np.array_equal(pre[SQH + 1], lo[::-1])
    hi, lo = neumaier_prefix(np.column_stack((p, -q)).ravel())
    assert np.array_equal(pre[DH], hi[::2]) and np.array_equal(pre[DH + 1], lo[::2])


@pytest.mark.nojit
def test_prefix_table_and_block_sums_are_the_readable_ones():
    rng = np.random.default_rng(2)
    for _ in range(20):
        k = int(rng.integers(1, 25))
        p = rng.dirichlet(np.full(k, 0.2)) ** 3
        q = rng.dirichlet(np.full(k, 0.2))
        ref = _Prefix(p / p.sum(), q)
        pre = ref.table
        for row, x, rev in (
            (PH, p / p.sum(), False),
            (QH, q, False),
            (SPH, p / p.sum(), True),
            (SQH, q, True),
        ):
            hi, lo = neumaier_prefix(x[::-1] if rev else x)
            if rev:
                hi, lo = hi[::-1], lo[::-1]
            assert np.array_equal(pre[row], hi) and np.array_equal(pre[row + 1], lo)
        # p - q: Neumaier over p[0], -q[0], p[1], -q[1], ... (suffix: from the end)
        for row, a, b in ((DH, p / p.sum(), q), (SDH, (p / p.sum())[::-1], q[::-1])):
            hi, lo = neumaier_prefix(np.column_stack((a, -b)).ravel())
            hi, lo = hi[::2], lo[::2]
            if row == SDH:
                hi, lo = hi[::-1], lo[::-1]
            assert np.array_equal(pre[row], hi) and np.array_equal(pre[row + 1], lo)
        for b in range(1, k + 1):
            dp, dq, _ = ref.sums(np.arange(b), b)
            for a in range(b):
                assert K.block_sums(pre, a, b) == (dp[a], dq[a])


@pytest.mark.nojit
@pytest.mark.parametrize("divergence", ["kl", "reverse_kl", "js", "chi2", "renyi:2", "egamma:2"])
def test_interval_scores_match_readable(divergence):
    div = get_divergence(divergence)
    rng = np.random.default_rng(3)
    for _ in range(6):
        k = int(rng.integers(2, 14))
        p, q = random_instance(rng, k, 0.1)
        red = _reduce(p, q)
        pre = _Prefix(red.p, red.q).table
        for eps in (1e-6, 0.7, 9.0, math.inf):
            c, A, lf = rescale(eps)
            for b in range(1, red.k + 1):
                ref = interval_scores(red.p, red.q, eps, div, np.arange(b), b)
                # the inputs of both: the block sums are equal bit for bit (test above), and
                # x, y, d come from them by the same correctly rounded operations
                dp, dq, dd = _Prefix(red.p, red.q).sums(np.arange(b), b)
                bound = mirror_bound(div.code, div.param, c + A * dp, c + A * dq, A * dd, lf)
                for a in range(b):
                    ours = K.score(pre, a, b, (div.code, div.param, c, A, lf))
                    assert within("interval score: kernel vs readable", ours, ref[a], bound[a]), (
                        divergence,
                        eps,
                        a,
                        b,
                        ours,
                        ref[a],
                        bound[a],
                    )


@pytest.mark.nojit
@pytest.mark.parametrize("chunk", [1, 7, 1 << 15])
def test_score_table_is_the_readable_scores_bit_for_bit(chunk, monkeypatch):
    """The table path's packed scores are the readable program's scores, chunked or not.

    Exact equality: both sides call the same numpy function (``perspective_array``) on the same
    inputs in the same process, so the same SIMD loops (numpy's loops compute every element
    independently of its position and of the array length); this holds on each dispatch path
    (CI runs it with AVX-512 and AVX2 off), not between processes with different paths.
    """
    monkeypatch.setattr(_fast, "TABLE_CHUNK", chunk)
    rng = np.random.default_rng(13)
    for n in range(12):
        k = int(rng.integers(1, 12))
        p, q = random_instance(rng, k, [0.05, 0.5, 5.0][n % 3])
        red = _reduce(p, q)
        for divergence in DIVERGENCES[n % 4 :: 4]:
            div = get_divergence(divergence)
            for eps in (1e-6, 0.7, 9.0, 800.0, math.inf):
                c, A, lf = rescale(eps)
                table = _fast.score_table(red.p, red.q, c, A, lf, div.code, div.param)
                assert table.shape == (red.k * (red.k + 1) // 2,)
                for b in range(1, red.k + 1):
                    ref = interval_scores(red.p, red.q, eps, div, np.arange(b), b)
                    got = table[b * (b - 1) // 2 : b * (b + 1) // 2]
                    assert np.array_equal(got, ref, equal_nan=True), (divergence, eps, b, got, ref)


def test_unknown_solver_path_is_rejected():
    with pytest.raises(ValueError, match="path"):
        _fast.solve(np.array([0.5, 0.5]), np.array([0.2, 0.8]), 1.0, get_divergence("kl"), 2, path="fast")


_COMPILED_KERNELS = """
import json, sys
import numpy as np
import ldpopt
from ldpopt.spr import _fast, _kernels as K, _small as S
_fast.PRUNED_PATH = "always"  # (by default only once ldpopt.warm_up compiled them)
rng = np.random.default_rng(0)
p, q = rng.dirichlet(np.ones(40)), rng.dirichlet(np.ones(40))
for eps, l in ((2.0, None), (9.0, 2), (float("inf"), None), (40.0, None)):
    ldpopt.optimal_mechanism(p, q, eps, "kl", l)
print(json.dumps([sorted(n for n in dir(M) if getattr(getattr(M, n), "signatures", None)) for M in (K, S)]))
"""


def test_small_single_solves_touch_only_the_small_kernels():
    """A small solve is one call of ``_small.small_solve`` (its callees come linked into it), plus
    the budget program when a budget binds: no sweep driver, no cache-free pass, no table kernel.

    Run in a fresh process: it lists every kernel that was compiled or loaded from the on-disk
    cache.
    """
    env = {key: val for key, val in os.environ.items() if key != "NUMBA_DISABLE_JIT"}
    out = (
        subprocess.run(
            [sys.executable, "-c", _COMPILED_KERNELS], capture_output=True, text=True, check=True, env=env
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    assert json.loads(out) == [["budget_dp"], ["small_solve"]]


_CACHED_RUN = """
import json
import numpy as np
from numba.core import event

compiles = []


class Count(event.Listener):
    def on_start(self, ev):
        compiles.append(ev.data["dispatcher"].__name__)

    def on_end(self, ev):
        pass


event.register("numba:compile", Count())
import ldpopt
from ldpopt.spr import _fast, _kernels as K

_fast.PRUNED_PATH = "always"  # the score-cache kernels (by default only once ldpopt.warm_up ran)

rng = np.random.default_rng(0)
p, q = rng.dirichlet(np.ones(1100)), rng.dirichlet(np.ones(1100))
ldpopt.optimal_mechanism(p, q, 2.0, "kl")  # the large single solve (no score cache)
used_kl = sorted(n for n in dir(K) if getattr(getattr(K, n), "signatures", None))
ldpopt.optimal_mechanism(p, q, 2.0, "js")  # the same kernels, specialised to another divergence
p, q = rng.dirichlet(np.ones(40)), rng.dirichlet(np.ones(40))
ldpopt.optimal_mechanism(p, q, 2.0, "kl")  # the small path (score cache, any-divergence kernels)
used = sorted(n for n in dir(K) if getattr(getattr(K, n), "signatures", None))
hits = sum(sum(getattr(K, n).stats.cache_hits.values()) for n in used)
print(json.dumps({"compiles": len(compiles), "hits": hits, "used": used, "used_kl": used_kl}))
"""


def test_a_second_process_loads_every_kernel_from_the_cache(tmp_path):
    """Two fresh processes share one empty numba cache directory: the first compiles, the
    second only loads (no ``numba:compile`` event, numba's cache hit counters > 0), also the
    kernels specialised to a second divergence.  The large single solve compiles the uncached
    pass and the scoring kernels of its divergence alone; the small solve the score-cache
    kernels; neither compiles the drivers that only sweeps need."""
    env = {key: val for key, val in os.environ.items() if key != "NUMBA_DISABLE_JIT"}
    env["NUMBA_CACHE_DIR"] = str(tmp_path)
    runs = []
    for _ in range(2):
        out = subprocess.run(
            [sys.executable, "-c", _CACHED_RUN], capture_output=True, text=True, check=True, env=env
        ).stdout
        runs.append(json.loads(out.strip().splitlines()[-1]))
    first, second = runs
    assert first["compiles"] > 0  # the directory really was empty
    assert second["compiles"] == 0 and second["hits"] > 0
    assert set(second["used"]) <= set(first["used"])  # callees come linked into their callers
    assert "uncached_pass" in first["used"]
    # the large solve's kernels are specialised to the divergence: a KL solve compiles KL's
    # perspective and bound alone, never the branches of the others (nor the any-divergence
    # perspective, which the small path's kernels use)
    assert "_g_kl" in first["used_kl"] and "_kl_ub" in first["used_kl"]
    others = {"_g_reverse_kl", "_g_js", "_g_power_up", "_g_power_down", "_g_tv", "_g_chi2"}
    others |= {"_rkl_ub", "_js_ub", "_perspective_compiled"}
    assert not others & set(first["used_kl"]), others & set(first["used_kl"])
    assert {"_g_js", "_js_ub"} <= set(first["used"])
    sweep_only = {"dinkelbach_ws", "_coarse_start", "solve_ws", "_pass", "carry_bounds", "solve_item"}
    assert not sweep_only & set(first["used"])


# ---------------------------------------------------------------------------------------------
# 2. The pruning bounds are upper bounds of the computed scores
# ---------------------------------------------------------------------------------------------
@pytest.mark.nojit
def test_log_upper_bound_is_valid_and_tight():
    zs = np.concatenate([np.geomspace(1e-299, 1e299, 4001), np.linspace(0.5, 2.0, 3001)])
    worst = 0.0
    for z in zs:
        ub = K._log_ub_far(float(z))
        # an upper bound in exact arithmetic; in floating point e * LN2 carries 2 roundings (LN2
        # itself, the product), the rational part (m - 1)(m + 5) / (4m + 2), |.| <= 0.35, 4, the
        # final sum 1 relative to |ub|, and math.log R_FN = 3 relative to |log z| <= |ub| + 1e-3:
        # the computed ub is at most u (6 |ub| + 3) below the computed log z (far inside the slack
        # that score_bound adds, 1e-11 per unit of mass)
        assert ub + U * (6.0 * abs(ub) + 3.0) >= math.log(z), z
        worst = max(worst, ub - math.log(z))
    assert worst < 5e-4  # the documented tightness


@pytest.mark.nojit
@pytest.mark.parametrize("divergence", DIVERGENCES)
def test_score_bound_dominates_computed_score(divergence):
    div = get_divergence(divergence)
    rng = np.random.default_rng(4)
    for _ in range(1500):
        dp, dq = rng.random(2) ** rng.integers(1, 12, size=2)
        eps = float(rng.choice([1e-7, 1e-3, 0.2, 1.0, 5.0, 30.0, math.inf]))
        c, A, lf = rescale(eps)
        x, y, d = c + A * dp, c + A * dq, A * (dp - dq)
        v, exact = K.score_bound(div.code, div.param, x, y, d, lf)
        s = K.perspective(div.code, div.param, x, y, d, lf)
        if exact:
            assert v == s or (math.isnan(v) and math.isnan(s))
        else:
            assert v >= s, (divergence, x, y, d, v, s)  # the library's claim, both from the kernels
            # not a comparison of two evaluations: a tightness requirement (loose enough bounds
            # would never prune), 1e-2 per unit of mass covers _log_ub_far's 4e-4 and the Pade form
            assert v - s <= 1e-2 * (x + y) + 1e-9 * abs(s)


@pytest.mark.nojit
@pytest.mark.parametrize("divergence", ["kl", "reverse_kl", "js"])
def test_carried_bounds_dominate_scores_at_smaller_eps(divergence):
    """mu'_{eps1} <= (A1/A0) mu'_{eps0} for eps1 <= eps0, with the rounding slack of carry_bounds."""
    div = get_divergence(divergence)
    rng = np.random.default_rng(5)
    for _ in range(8):
        k = int(rng.integers(2, 12))
        p, q = random_instance(rng, k, 0.3)
        red = _reduce(p, q)
        pre = _Prefix(red.p, red.q).table
        pos = np.arange(red.k + 1, dtype=np.int64)
        sp, sq = K.sums_tables(pre, pos)
        e0 = float(rng.uniform(0.01, 30))
        e1 = float(e0 * rng.choice([1.0, 0.9, 0.5, 1e-3]))
        c0, A0, _ = rescale(e0)
        c1, A1, lf = rescale(e1)
        val = np.array(
            [
                K.perspective(div.code, div.param, c0 + A0 * a, c0 + A0 * b, A0 * (a - b), lf)
                for a, b in zip(sp, sq, strict=False)
            ]
        )
        state = np.full(val.shape[0], K._EXACT, dtype=np.uint8)
        K.carry_bounds(val, state, sp, sq, c0, A0, c1, A1)
        assert np.all(state == K._CARRIED)
        now = np.array(
            [
                K.perspective(div.code, div.param, c1 + A1 * a, c1 + A1 * b, A1 * (a - b), lf)
                for a, b in zip(sp, sq, strict=False)
            ]
        )
        assert np.all(val >= now), (divergence, e0, e1)


# ---------------------------------------------------------------------------------------------
# 3. Fast optimum == readable optimum (>= 500 random instances)
# ---------------------------------------------------------------------------------------------
@pytest.mark.nojit
def test_fast_equals_readable_small_instances():
    """The pure-Python-safe subset: k <= 9, every divergence, eps 1e-6..500 and inf, budgets."""
    rng = np.random.default_rng(6)
    for n in range(160):
        k = int(rng.integers(1, 10))
        p, q = random_instance(rng, k, float(rng.choice([0.05, 0.3, 1.0, 10.0])))
        eps = float(rng.choice(EPS_CHOICES))
        l = None if n % 2 else int(rng.integers(1, k + 1))
        assert_same_optimum(p, q, eps, DIVERGENCES[n % len(DIVERGENCES)], l)


def test_fast_equals_readable_random_instances():
    """>= 500 instances: k 1..300 (mostly small), Dirichlet 0.05..10, eps 1e-6..500 and inf."""
    rng = np.random.default_rng(7)
    count = 0
    for n in range(600):
        k = int(rng.integers(1, 40)) if n % 12 else int(rng.integers(40, 121))
        conc = float(np.exp(rng.uniform(math.log(0.05), math.log(10.0))))
        p, q = random_instance(rng, k, conc)
        eps = (
            float(rng.choice(EPS_CHOICES))
            if n % 3
            else float(np.exp(rng.uniform(math.log(1e-6), math.log(500))))
        )
        l = None if n % 2 else int(rng.integers(1, max(2, k // 2) + 1))
        assert_same_optimum(p, q, eps, DIVERGENCES[n % len(DIVERGENCES)], l)
        count += 1
    for n, k in enumerate((130, 150, 180, 220, 260, 300)):  # a few large alphabets
        p, q = random_instance(rng, k, [0.1, 1.0, 5.0][n % 3])
        l = None if n % 2 else 6
        assert_same_optimum(
            p, q, [0.5, 3.0, 9.0][n % 3], ["kl", "js", "hellinger", "chi2", "tv", "reverse_kl"][n], l
        )
        count += 1
    assert count >= 600


@pytest.mark.parametrize("divergence", ["kl", "chi2", "js", "renyi:2"])
def test_budget_program_equals_readable(divergence):
    """Budgets below the unconstrained block count: the compiled O(l k^2) program."""
    rng = np.random.default_rng(8)
    hits = 0
    for _ in range(25):
        k = int(rng.integers(10, 60))
        p, q = random_instance(rng, k, 0.5)
        eps = float(rng.uniform(4.0, 12.0))
        free = ldpopt.optimal_mechanism(p, q, eps, divergence, method="fast")
        l = max(1, free.num_outputs - int(rng.integers(1, 4)))
        res = assert_same_optimum(p, q, eps, divergence, l)
        assert res["table"].method == res["pruned"].method
        hits += res["table"].method == "budget_dp"
    assert hits >= 15


@pytest.mark.nojit
def test_fast_equals_brute_force_over_all_set_partitions():
    """Independent oracle: every set partition (not only LR-contiguous ones), k <= 5."""
    rng = np.random.default_rng(9)
    for n in range(12):
        k = int(rng.integers(2, 6))
        p, q = random_instance(rng, k, 1.0)
        eps = float(rng.choice([0.2, 1.0, 3.0]))
        l = None if n % 2 else int(rng.integers(1, k + 1))
        for divergence in ("kl", "js", "hellinger"):
            div = get_divergence(divergence)
            ref, ref_part = brute_force_argmax(p, q, eps, div, max_blocks=l)
            for path in PATHS:
                with solver_path(path):
                    fast = ldpopt.optimal_mechanism(p, q, eps, divergence, l, method="fast")
                slack = 0.0
                if fast.value < ref and fast.method == "dinkelbach":
                    red = _reduce(p, q)
                    slack = dinkelbach_slack(red.p, red.q, eps, div, fast.value)
                bound = brute_force_agreement(
                    p, q, eps, div, l, fast.value, fast.partition, ref, ref_part, slack
                )
                assert within("fast vs brute force over set partitions", fast.value, ref, bound), (
                    path,
                    k,
                    eps,
                    l,
                    divergence,
                    fast.value,
                    ref,
                    bound,
                )


@pytest.mark.nojit
@pytest.mark.parametrize("path", PATHS)
def test_methods_reported(path):
    p, q = [0.5, 0.3, 0.2], [0.2, 0.3, 0.5]
    with solver_path(path):
        assert ldpopt.optimal_mechanism(p, q, 2.0).method == "dinkelbach"
        assert ldpopt.optimal_mechanism(p, q, 2.0, max_outputs=1).method == "single_block"
        assert ldpopt.optimal_mechanism(p, q, 2.0, method="dp").method == "dp"
        assert ldpopt.optimal_mechanism([1.0], [1.0], 2.0).value == 0.0
        assert (
            ldpopt.optimal_mechanism([0.7, 0.2, 0.1], [0.1, 0.2, 0.7], 9.0, max_outputs=2).method
            == "budget_dp"
        )


# ---------------------------------------------------------------------------------------------
# 4. Edge regimes
# ---------------------------------------------------------------------------------------------
@pytest.mark.nojit
@pytest.mark.parametrize("eps", [800.0, 1e4])
def test_underflowed_c_with_log_floor(eps):
    """e^{-eps} == 0 at finite eps: the kernels carry log(e^{-eps}) = -eps like the readable path."""
    rng = np.random.default_rng(10)
    for _ in range(10):
        k = int(rng.integers(2, 9))
        p, q = random_instance(rng, k, 0.3)
        red = _reduce(p, q)
        for divergence in ("kl", "reverse_kl", "js", "tv"):
            div = get_divergence(divergence)
            ref_raw, ref_cuts = _dp_readable(red.p, red.q, eps, div, red.k)
            for path in PATHS:
                raw, cuts, method = _fast.solve(red.p, red.q, eps, div, red.k, path=path)
                assert_raw_optimum(red, eps, divergence, None, raw, cuts, method, path, ref_raw, ref_cuts)


@pytest.mark.nojit
def test_overflowing_scores_and_infinite_values():
    """Renyi(3.5) at eps = 500 overflows to inf (c > 0); KL/chi2 at eps = inf with q = 0."""
    p = np.array([0.5, 0.3, 0.2 - 1e-200, 1e-200])
    q = np.array([1e-200, 0.3, 0.3, 0.4 - 1e-200])
    for divergence, eps in (("renyi:3.5", 500.0), ("chi2", 500.0), ("kl", math.inf), ("chi2", math.inf)):
        for l in (None, 2, 3):
            assert_same_optimum(p, q, eps, divergence, l)
    p0, p1 = [0.5, 0.5, 0.0], [0.0, 0.5, 0.5]
    for divergence in ("kl", "reverse_kl", "chi2"):
        res = assert_same_optimum(p0, p1, math.inf, divergence, None)
        assert all(math.isinf(r.value) for r in res.values())


def test_large_alphabets_coarse_start_and_no_cache():
    """k above the cache and coarsening thresholds: O(k) memory path, warm start from a coarse grid.

    The readable program with budget l cannot exceed the optimum and equals it whenever the
    optimum has at most l blocks.
    """
    rng = np.random.default_rng(11)
    k = K.COARSEN_MIN_K + 300
    p, q = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
    red = _reduce(p, q)
    div = get_divergence("kl")
    raw, cuts, method = _fast.solve(red.p, red.q, 0.4, div, red.k)
    assert method == "dinkelbach" and len(cuts) <= 3
    ref_raw, ref_cuts = _dp_readable(red.p, red.q, 0.4, div, 4)
    assert_raw_optimum(red, 0.4, "kl", 4, raw, cuts, method, "pruned", ref_raw, ref_cuts)
    # between the thresholds: no score cache, no coarse start
    k = K.SCORE_CACHE_MAX_K + 200
    p, q = rng.dirichlet(np.full(k, 0.3)), rng.dirichlet(np.full(k, 0.3))
    red = _reduce(p, q)
    raw, cuts, method = _fast.solve(red.p, red.q, 1.5, div, red.k)
    ref_raw, ref_cuts = _dp_readable(red.p, red.q, 1.5, div, len(cuts) + 1)
    assert_raw_optimum(red, 1.5, "kl", len(cuts) + 1, raw, cuts, method, "pruned", ref_raw, ref_cuts)


@pytest.mark.nojit
def test_uncached_pass_equals_cached_pass():
    """The O(k)-memory pass (no tables, group bounds) gives bit-identical results to the cached one."""
    rng = np.random.default_rng(12)
    for divergence in ("kl", "js", "hellinger", "renyi:2"):
        div = get_divergence(divergence)
        for n in range(4):
            k = int(rng.integers(2, 30)) if n < 2 else int(rng.integers(70, 160))  # groups of 32
            p, q = random_instance(rng, k, 0.5)
            red = _reduce(p, q)
            pre = _Prefix(red.p, red.q).table
            pos = np.arange(red.k + 1, dtype=np.int64)
            for eps in (0.1, 3.0, 12.0, math.inf):
                c, A, lf = rescale(eps)
                out = []
                for cached in (True, False):
                    if cached:
                        sp, sq, val, state = K._new_cache(pre, pos)
                    else:
                        sp = sq = val = np.empty(0)
                        state = np.empty(0, dtype=np.uint8)
                    bounds = np.zeros(red.k + 1, dtype=np.int64)
                    bounds[1] = red.k
                    raw, nb = K.dinkelbach_ws(
                        pre,
                        pos,
                        sp,
                        sq,
                        val,
                        state,
                        np.empty(0, dtype=np.int64),
                        (div.code, div.param, c, A, lf),
                        bounds,
                        np.int64(1),
                    )
                    out.append((raw, list(bounds[: nb + 1])))
                assert out[0] == out[1]


@settings(max_examples=40)
@given(
    st.lists(st.tuples(st.floats(0.0, 1.0), st.floats(0.0, 1.0)), min_size=1, max_size=12),
    st.sampled_from([0.01, 0.5, 2.0, 7.0, math.inf]),
    st.sampled_from(["kl", "tv", "js", "chi2", "hellinger", "renyi:2"]),
)
def test_property_fast_equals_readable(pairs, eps, divergence):
    p = np.array([a for a, _ in pairs])
    q = np.array([b for _, b in pairs])
    if p.sum() <= 0 or q.sum() <= 0:
        return
    assert_same_optimum(p / p.sum(), q / q.sum(), eps, divergence, None)


@settings(max_examples=30)
@given(st.integers(2, 10), st.integers(0, 10_000), st.sampled_from(["kl", "js", "reverse_kl"]))
def test_property_permutation_invariance_and_monotone_in_eps(k, seed, divergence):
    """The optimum ignores the order of the symbols and is nondecreasing in eps (independent facts).

    Permuting the symbols gives the same reduced alphabet bit for bit (ratios sorted, exact ties
    merged, class masses summed by the correctly rounded ``math.fsum``), hence the same solve and
    the same value: equality.  Monotonicity: with P_1 the optimum at eps_1 < eps_2,
    v(eps_1) = R1(P_1) <= R2(P_1) in exact arithmetic (a fixed partition's value grows with eps),
    so the computed values satisfy v_1 - v_2 <= e_1(P_1) + e_2(P_1) + D_2: the evaluation errors
    of P_1 at both eps (``eval_bound``) and Dinkelbach's float slack at eps_2.
    """
    rng = np.random.default_rng(seed)
    p, q = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
    perm = rng.permutation(k)
    red = _reduce(p, q)
    prev = None
    for eps in (0.1, 0.5, 1.0, 3.0, 10.0):
        res = ldpopt.optimal_mechanism(p, q, eps, divergence)
        a = res.value
        b = ldpopt.optimal_mechanism(p[perm], q[perm], eps, divergence).value
        assert a == b, (a, b)
        if prev is not None:
            v1, eps1, cuts1 = prev
            bound = 0.0
            if a < v1:  # the bound is needed only then
                bound = (
                    eval_bound(red.p, red.q, eps1, divergence, cuts1)
                    + eval_bound(red.p, red.q, eps, divergence, cuts1)
                    + (
                        dinkelbach_slack(red.p, red.q, eps, divergence, a)
                        if res.method == "dinkelbach"
                        else 0.0
                    )
                )
            assert within("monotone in eps (fast)", v1, min(a, v1), bound), (eps1, eps, v1, a, bound)
        prev = (a, eps, reduced_cuts(red, res.partition))


def test_tie_check_accepts_mirror_ties_and_rejects_worse_partitions():
    """The tie branch of :func:`assert_raw_optimum` (no instance above happens to need it).

    q is p reversed and JS is symmetric, so the mirror image of the optimal partition ties with
    it in exact arithmetic: it must be accepted.  A single block is worse by far more than the
    bound: it must be rejected.
    """
    p = np.array([0.03, 0.07, 0.1, 0.13, 0.17, 0.2, 0.3])
    q = p[::-1].copy()
    red = _reduce(p, q)
    div = get_divergence("js")
    for eps in (0.3, 1.0, 3.0):
        ref_raw, ref_cuts = _dp_readable(red.p, red.q, eps, div, red.k)
        mirror = [(red.k - b, red.k - a) for a, b in reversed(ref_cuts)]
        assert mirror != ref_cuts
        raw = spr_value(red.p, red.q, eps, div, mirror)
        assert_raw_optimum(red, eps, "js", None, raw, mirror, "dinkelbach", "table", ref_raw, ref_cuts)
        one = [(0, red.k)]
        saved = {key: dict(val) for key, val in _errmodel.WORST.items()}
        with pytest.raises(AssertionError):
            raw = spr_value(red.p, red.q, eps, div, one)
            assert_raw_optimum(red, eps, "js", None, raw, one, "dinkelbach", "table", ref_raw, ref_cuts)
        _errmodel.WORST.clear()  # the rejected partition is no measurement of the solvers
        _errmodel.WORST.update(saved)
