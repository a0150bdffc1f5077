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

import ldpopt
from ldpopt.spr import _fast
from ldpopt.spr import _kernels as K
from ldpopt.divergences import _perspective_array, _perspective_scalar, get_divergence
from ldpopt.spr.solve import _dp_readable, _Prefix, _reduce, interval_scores, spr_value
from reference import brute_force_optimum, reduced_cuts

#: relative agreement required between fast and readable optimal values (issue 3)
REL = 1e-12
#: perspective / score mirror tolerance: the kernels call libm, the readable path numpy's
#: vectorised log/log1p, which may differ in the last ulp
MIRROR_REL = 1e-13

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


def close(a: float, b: float, rel: float = REL) -> bool:
    if math.isinf(a) or math.isinf(b) or math.isnan(a) or math.isnan(b):
        return a == b
    return a == b or abs(a - b) <= rel * max(abs(a), abs(b))


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


def assert_same_optimum(p, q, eps, divergence, l, rel=REL, paths=PATHS):
    """Both fast paths give the readable value; different partitions only when tied to ``rel``.

    The table path scores every block with the readable program's own operations, so with
    the same partition its value is the readable one bit for bit.  Returns ``{path: result}``.
    """
    ref = ldpopt.optimal_mechanism(p, q, eps, divergence, l, method="dp")
    out = {}
    for path in paths:
        with solver_path(path):
            fast = ldpopt.optimal_mechanism(p, q, eps, divergence, l, method="fast")
        info = (path, len(p), eps, divergence, l, fast.value, ref.value, fast.method)
        assert close(fast.value, ref.value, rel), info
        if l is not None:
            assert fast.num_outputs <= l
        if fast.partition != ref.partition:
            # a different partition is only allowed when it is optimal too (a tie): evaluate it
            # with the readable code
            red = _reduce(np.asarray(p, float), np.asarray(q, float))
            cuts = reduced_cuts(red, fast.partition)
            div = get_divergence(divergence)
            other = div.transform(spr_value(red.p, red.q, eps, div, cuts))
            assert close(other, ref.value, rel), (info, fast.partition, ref.partition, other)
        elif path == "table":
            assert fast.value == ref.value or (math.isnan(fast.value) and math.isnan(ref.value)), info
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
        arr = _perspective_array(div.code, div.param, xs, ys, ds, lf)
        for (x, y, d), a in zip(pts, arr, strict=False):
            ours = K.perspective(div.code, div.param, x, y, d, lf)
            assert close(ours, float(a), MIRROR_REL), (divergence, x, y, d, lf, ours, a)
            try:  # the scalar reference follows Python's math (it raises where numpy gives inf)
                ref = _perspective_scalar(div.code, div.param, x, y, d, lf)
            except (OverflowError, ValueError, ZeroDivisionError):
                continue
            assert close(ours, ref, MIRROR_REL), (divergence, x, y, d, lf, ours, ref)


@pytest.mark.nojit
def test_prefix_table_and_block_sums_are_the_readable_ones():
    rng = np.random.default_rng(2)
    for _ in range(20):
        k = int(rng.integers(1, 25))
        p = rng.dirichlet(np.full(k, 0.2)) ** 3
        q = rng.dirichlet(np.full(k, 0.2))
        pre = K.prefix_table(p / p.sum(), q)
        ref = _Prefix(p / p.sum(), q)
        for row, arr in (
            (K._PH, ref.P[0]),
            (K._PL, ref.P[1]),
            (K._QH, ref.Q[0]),
            (K._QL, ref.Q[1]),
            (K._SPH, ref.SP[0]),
            (K._SPL, ref.SP[1]),
            (K._SQH, ref.SQ[0]),
            (K._SQL, ref.SQ[1]),
        ):
            assert np.array_equal(pre[row], arr)
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
        pre = K.prefix_table(red.p, red.q)
        for eps in (1e-6, 0.7, 9.0, math.inf):
            c, A, lf = _fast.rescale(eps)
            for b in range(1, red.k + 1):
                ref = interval_scores(red.p, red.q, eps, div, np.arange(b), b)
                for a in range(b):
                    ours = K.score(pre, a, b, div.code, div.param, c, A, lf)
                    assert close(ours, float(ref[a]), MIRROR_REL), (divergence, eps, a, b, ours, ref[a])


@pytest.mark.nojit
@pytest.mark.parametrize("chunk", [1, 7, 1 << 15])
def test_score_table_is_the_readable_scores_bit_for_bit(chunk, monkeypatch):
    """The table path's packed scores are the readable program's scores, chunked or not."""
    monkeypatch.setattr(_fast, "TABLE_CHUNK", chunk)
    rng = np.random.default_rng(13)
    for n in range(12):
        k = int(rng.integers(1, 12))
        p, q = random_instance(rng, k, [0.05, 0.5, 5.0][n % 3])
        red = _reduce(p, q)
        for divergence in DIVERGENCES[n % 4 :: 4]:
            div = get_divergence(divergence)
            for eps in (1e-6, 0.7, 9.0, 800.0, math.inf):
                c, A, lf = _fast.rescale(eps)
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
from ldpopt.spr import _kernels as K
rng = np.random.default_rng(0)
p, q = rng.dirichlet(np.ones(40)), rng.dirichlet(np.ones(40))
for eps, l in ((2.0, None), (9.0, 2), (float("inf"), None), (40.0, None)):
    ldpopt.optimal_mechanism(p, q, eps, "kl", l)
print(json.dumps(sorted(n for n in dir(K) if getattr(getattr(K, n), "signatures", None))))
"""


def test_small_single_solves_touch_only_the_table_kernels():
    """The first solve of a small problem compiles three small kernels, none of the pruned ones.

    This is what keeps a first call with an empty numba cache at about a second (the pruned
    kernels take 10-15 s to compile; benchmarks/bench_fast.py measures it).  Run in a fresh
    process: it lists every kernel that was compiled or loaded from the on-disk cache.
    """
    env = {key: val for key, val in os.environ.items() if key != "NUMBA_DISABLE_JIT"}
    out = (
        subprocess.run(
            [sys.executable, "-c", _COMPILED_KERNELS], capture_output=True, text=True, check=True, env=env
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    assert json.loads(out) == ["table_args", "table_budget_dp", "table_pass"]


# ---------------------------------------------------------------------------------------------
# 2. The pruning bounds are upper bounds of the computed scores
# ---------------------------------------------------------------------------------------------
@pytest.mark.nojit
def test_log_upper_bound_is_valid_and_tight():
    zs = np.concatenate([np.geomspace(1e-299, 1e299, 4001), np.linspace(0.5, 2.0, 3001)])
    worst = 0.0
    for z in zs:
        ub = K._log_ub_far(float(z))
        # an upper bound in exact arithmetic; rounding (e log 2) may put it a few ulp below,
        # far inside the slack that score_bound adds (1e-11 per unit of mass)
        assert ub + 1e-14 * max(1.0, abs(ub)) >= math.log(z), z
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
        c, A, lf = _fast.rescale(eps)
        x, y, d = c + A * dp, c + A * dq, A * (dp - dq)
        v, exact = K.score_bound(div.code, div.param, x, y, d, lf)
        s = K.perspective(div.code, div.param, x, y, d, lf)
        if exact:
            assert v == s or (math.isnan(v) and math.isnan(s))
        else:
            assert v >= s, (divergence, x, y, d, v, s)
            assert v - s <= 1e-2 * (x + y) + 1e-9 * abs(s)  # tight enough to prune


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
        pre = K.prefix_table(red.p, red.q)
        pos = np.arange(red.k + 1, dtype=np.int64)
        sp, sq = K.sums_tables(pre, pos)
        e0 = float(rng.uniform(0.01, 30))
        e1 = float(e0 * rng.choice([1.0, 0.9, 0.5, 1e-3]))
        c0, A0, _ = _fast.rescale(e0)
        c1, A1, lf = _fast.rescale(e1)
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
            ref = brute_force_optimum(p, q, eps, div, max_blocks=l)
            for path in PATHS:
                with solver_path(path):
                    fast = ldpopt.optimal_mechanism(p, q, eps, divergence, l, method="fast")
                # the brute force multiplies out matrices: agreement to 1e-9 (absolute 1e-12 near 0)
                assert abs(fast.value - ref) <= max(1e-12, 1e-9 * abs(ref)), (
                    path,
                    k,
                    eps,
                    l,
                    divergence,
                    fast.value,
                    ref,
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
                raw, cuts, _ = _fast.solve(red.p, red.q, eps, div, red.k, path=path)
                assert close(raw, ref_raw), (path, eps, divergence, raw, ref_raw)


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
    assert close(raw, ref_raw) and cuts == ref_cuts
    # between the thresholds: no score cache, no coarse start
    k = K.SCORE_CACHE_MAX_K + 200
    p, q = rng.dirichlet(np.full(k, 0.3)), rng.dirichlet(np.full(k, 0.3))
    red = _reduce(p, q)
    raw, cuts, _ = _fast.solve(red.p, red.q, 1.5, div, red.k)
    ref_raw, ref_cuts = _dp_readable(red.p, red.q, 1.5, div, len(cuts) + 1)
    assert close(raw, ref_raw) and cuts == ref_cuts


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
            pre = K.prefix_table(red.p, red.q)
            pos = np.arange(red.k + 1, dtype=np.int64)
            for eps in (0.1, 3.0, 12.0, math.inf):
                c, A, lf = _fast.rescale(eps)
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
                        div.code,
                        div.param,
                        c,
                        A,
                        lf,
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
    """The optimum ignores the order of the symbols and is nondecreasing in eps (independent facts)."""
    rng = np.random.default_rng(seed)
    p, q = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
    perm = rng.permutation(k)
    prev = -math.inf
    for eps in (0.1, 0.5, 1.0, 3.0, 10.0):
        a = ldpopt.optimal_mechanism(p, q, eps, divergence).value
        b = ldpopt.optimal_mechanism(p[perm], q[perm], eps, divergence).value
        assert close(a, b)
        assert a >= prev * (1 - 1e-12)
        prev = a
