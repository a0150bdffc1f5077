"""The one-call small solve (ldpopt.spr._small, ``optimal_mechanism`` for n <= 1024 symbols).

* its reduction and prefix table are ``reduction._reduce`` and ``reduction._Prefix`` bit for bit;
* its optimum, partition and method are those of the sweeps' compiled driver
  ``_kernels.solve_ws`` with a fresh score cache, bit for bit (the same kernels: the same ties);
* against the readable program (``method="dp"``) to the error model of tests/_valuebounds.py
  (``test_kernels.assert_same_optimum`` runs every equivalence instance through this path too);
* its input divergence (libm terms, ``math.fsum``) against ``div(u, v)`` (numpy terms) to the
  forward-error bound of tests/_errmodel.py;
* a user's ``FDivergence`` in ``ldpopt.sweep`` takes the table path: the readable program's
  value and partition exactly, with the readable program as the fallback above 1024 symbols.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ldpopt
from _errmodel import EXACT_CODES, U, score_bound, within
from _valuebounds import dinkelbach_slack, pair_bound
from ldpopt._validation import check_distribution_pair
from ldpopt.divergences import get_divergence
from ldpopt.errors import LdpoptWarning
from ldpopt.mechanism import Mechanism, spr_mechanism_from_assignment
from ldpopt.spr import _fast, _policy, _small
from ldpopt.spr import _kernels as K
from ldpopt.spr import grid as spr_grid
from ldpopt.spr.reduction import _NEAR_TIE_RTOL, _Prefix, _reduce
from ldpopt.spr.reference import _dp_readable, spr_value
from reference import reduced_cuts

pytestmark = pytest.mark.numerics

DIVERGENCES = ["kl", "reverse_kl", "tv", "chi2", "hellinger", "js", "egamma:1.5", "renyi:0.5", "renyi:2"]
EPS = [1e-6, 0.3, 2.0, 9.0, 40.0, math.inf]


def instance(rng, k):
    """A pair with zeros under one or both distributions, exactly tied ratios or coarse masses."""
    conc = float(rng.choice([0.1, 1.0, 5.0]))
    p, q = rng.dirichlet(np.full(k, conc)), rng.dirichlet(np.full(k, conc))
    r = rng.random()
    if k >= 3 and r < 0.2:
        p[rng.integers(k)] = 0.0
        q[rng.integers(k)] = 0.0
        j = rng.integers(k)
        p[j] = q[j] = 0.0  # a symbol of mass 0 under both: dropped, joins block 0
    elif k >= 3 and r < 0.35:
        i, j = rng.choice(k, 2, replace=False)
        q[j] = q[i] * p[j] / p[i]  # exactly (or nearly) tied ratios: the exact reduction
    elif r < 0.45:
        p, q = np.round(p, 2) + 1e-3, np.round(q, 2) + 1e-3
    if p.sum() == 0 or q.sum() == 0:
        p, q = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
    return p / p.sum(), q / q.sum()


def has_near_ties(u, v) -> bool:
    """Two sorted log-ratios within the reduction's near-tie tolerance (``reduction._reduce``)."""
    keep = (u > 0) | (v > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        key = np.sort(np.log(u[keep]) - np.log(v[keep]))
        a, b = key[:-1], key[1:]
        scale = np.maximum(1.0, np.maximum(np.abs(a), np.abs(b)))
        fin = np.isfinite(a) & np.isfinite(b)
        return bool(np.any((a == b) | (fin & (np.abs(b - a) <= _NEAR_TIE_RTOL * np.where(fin, scale, 1.0)))))


@pytest.mark.nojit
def test_prefix_table_is_the_readable_table_bit_for_bit():
    rng = np.random.default_rng(60)
    cases = [(np.array([1.0]), np.array([1.0])), (np.array([0.0, 1.0]), np.array([1.0, 0.0]))]
    cases.append((np.array([5e-324, 1e-300, 1.0 - 1e-300]), np.array([0.5, 0.5 - 1e-17, 1e-17])))
    for k in (2, 3, 7, 30):
        cases.append(instance(rng, k))
    for p, q in cases:
        assert np.array_equal(_small.prefix_table(p, q), _Prefix(p, q).table), (p, q)


def test_block_sums_are_the_kernels_bit_for_bit():
    """``_small.sums_tables`` (branch hoisted out of the loop, its switch point found by
    bisection) is ``_kernels.sums_tables``."""
    rng = np.random.default_rng(66)
    for n in range(80):
        p, q = instance(rng, int(rng.integers(1, 50)) if n % 8 else int(rng.integers(100, 300)))
        if n % 4 == 0:  # masses near 1e-300 at one end: the prefix/suffix choice flips early
            p = np.concatenate(([1e-300, 1e-290], p))
            q = np.concatenate(([0.5, 0.25], 0.25 * q))
        elif n % 4 == 1 and p.shape[0] > 2:  # runs of zero masses: plateaus of the suffix sums
            p[rng.random(p.shape[0]) < 0.5] = 0.0
            p = p / p.sum() if p.sum() > 0 else q.copy()
        red = _reduce(p, q)
        pre = _Prefix(red.p, red.q).table
        got = _small.sums_tables(pre, red.k)
        ref = K.sums_tables(pre, np.arange(red.k + 1))
        assert np.array_equal(got[0], ref[0]) and np.array_equal(got[1], ref[1]), n


def test_small_solve_is_the_cached_solve_ws_bit_for_bit():
    """The same reduction as ``_reduce`` and the same optimum, cuts and method as ``solve_ws``
    with a fresh cache (what the sweeps run), on ties, zeros, budgets, eps = 1e-6 .. inf; the
    mechanism of the solver's own blocks is ``spr_mechanism_from_assignment``'s."""
    rng = np.random.default_rng(61)
    solved = grouped = 0
    for n in range(150):
        k = int(rng.integers(1, 30)) if n % 10 else int(rng.integers(30, 90))
        u, v = instance(rng, k)
        eps = EPS[n % len(EPS)]
        div = get_divergence(DIVERGENCES[n % len(DIVERGENCES)])
        l_user = None if n % 3 else int(rng.integers(1, 4))
        out = _fast.solve_small(u, v, eps, div, l_user)
        if out is None:
            assert has_near_ties(u, v), (n, u, v)  # only near-ties leave it to the exact reduction
            continue
        solved += 1
        raw, _, method, _, block_of, grouping, reduced = out
        red, cuts = reduced()
        if grouping is not None:  # (None: the budget program reassigned the symbols)
            # the mechanism built from the solver's own blocks is the checked constructor's
            mine = Mechanism._spr_grouped(block_of, *grouping, eps, None)
            ref_mech = spr_mechanism_from_assignment(block_of, eps)
            assert mine.partition == ref_mech.partition == tuple(red.lift_blocks(cuts)), n
            assert np.array_equal(mine.matrix, ref_mech.matrix) and not mine.matrix.flags.writeable, n
            grouped += 1
        ref = _reduce(u, v)
        assert np.array_equal(red.members, ref.members) and np.array_equal(red.starts, ref.starts)
        assert np.array_equal(red.p, ref.p) and np.array_equal(red.q, ref.q) and red.dropped == ref.dropped
        kk = ref.k
        ll = kk if l_user is None else min(l_user, kk)
        pre = _Prefix(ref.p, ref.q).table
        sp, sq, val, state = K._new_cache(pre, np.arange(kk + 1))
        bounds = np.zeros(kk + 1, dtype=np.int64)
        sc = (int(div.code), float(div.param), *ldpopt._numerics.rescale(eps))
        ref_raw, nb, code = K.solve_ws(
            pre,
            np.int64(kk),
            np.int64(ll),
            sc,
            bounds,
            np.int64(0),
            sp,
            sq,
            val,
            state,
            np.empty(0, dtype=np.int64),
        )
        ref_cuts = [(int(bounds[j]), int(bounds[j + 1])) for j in range(int(nb))]
        info = (n, k, eps, div.name, l_user)
        assert (raw == ref_raw or (math.isnan(raw) and math.isnan(ref_raw))) and cuts == ref_cuts, info
        assert method == _policy.METHOD_NAMES[int(code)], info
    assert solved >= 100 and grouped >= 50, (solved, grouped)


def test_small_path_is_optimal_mechanisms_and_near_the_readable_optimum():
    """``optimal_mechanism`` reports the small solve; its partition's readable value is within the
    error model of the readable optimum (a different partition only on a tie within the bound)."""
    rng = np.random.default_rng(62)
    for n in range(60):
        k = int(rng.integers(2, 25))
        u, v = instance(rng, k)
        eps = EPS[n % len(EPS)]
        name = DIVERGENCES[n % 7]  # not Renyi: its far-from-1 re-solve is tested in test_kernels
        l_user = None if n % 2 else int(rng.integers(1, 4))
        res = ldpopt.optimal_mechanism(u, v, eps, name, l_user)
        div = get_divergence(name)
        red = _reduce(*check_distribution_pair(u, v))  # the arrays the solvers see
        ll = red.k if l_user is None else min(l_user, red.k)
        ref_raw, ref_cuts = _dp_readable(red.p, red.q, eps, div, ll)
        cuts = reduced_cuts(red, res.partition)
        mine = spr_value(red.p, red.q, eps, div, cuts)
        info = (n, k, eps, name, l_user, res.value, ref_raw)
        if not (math.isfinite(ref_raw) and math.isfinite(mine)):
            assert mine == ref_raw, info
            continue
        assert mine <= ref_raw, info  # the readable program maximises its own sums exactly
        pb = pair_bound(red.p, red.q, eps, div, cuts)
        assert within("small path: value of its partition", res.value, div.transform(mine), pb), info
        if cuts != ref_cuts:
            tie = (
                pb
                + pair_bound(red.p, red.q, eps, div, ref_cuts)
                + dinkelbach_slack(red.p, red.q, eps, div, ref_raw)
            )
            assert within("small path: optimum (a tie)", ref_raw, mine, tie), info


@pytest.mark.parametrize(
    "name", ["kl", "reverse_kl", "js", "tv", "chi2", "hellinger", "egamma:1.5", "renyi:2"]
)
def test_input_divergence_is_the_readable_one_within_its_bound(name):
    """libm terms summed by ``math.fsum`` vs numpy's terms summed by ``math.fsum``: each term within
    ``2 score_bound`` (two implementations), each sum correctly rounded (1/2 ulp of the result each);
    exact codes and Renyi (``renyi_value`` itself) give the same bits."""
    rng = np.random.default_rng(63)
    div = get_divergence(name)
    for _ in range(20):
        u, v = instance(rng, int(rng.integers(2, 40)))
        res = ldpopt.optimal_mechanism(u, v, 2.0, name)
        u, v = check_distribution_pair(u, v)  # the arrays the solvers see
        ref = div(u, v)
        if div.code in EXACT_CODES or name.startswith("renyi") or not math.isfinite(ref):
            assert res.input_divergence == ref, (name, res.input_divergence, ref)
            continue
        err = float(np.sum(2.0 * score_bound(div.code, div.param, u, v, u - v))) + 2.0 * U * abs(ref)
        assert within("input divergence", res.input_divergence, ref, err), (name, res.input_divergence, ref)


# ---------------------------------------------------------------------------------------------
# A user's divergence in a sweep: the table path, the readable program as the stated fallback
# ---------------------------------------------------------------------------------------------
def _user_sweep_cells(res, p0s, p1s, grid, user, l):
    for t in range(len(p0s)):
        for e, eps in enumerate(grid):
            ref = ldpopt.optimal_mechanism(p0s[t], p1s[t], eps, user, l, method="dp")
            # the table path scores every block by the user's own vectorised perspective (the
            # readable program's call on the same block sums) and sums as it does: the same bits
            assert res.values[t, e] == ref.value and res.partitions[t][e] == ref.partition, (t, eps)


@pytest.mark.nojit
def test_user_divergence_sweep_takes_the_table_path():
    user = ldpopt.FDivergence(lambda t: t * np.log(np.maximum(t, 1e-300)) - t + 1.0, name="my-kl")
    rng = np.random.default_rng(64)
    p0s, p1s = zip(*(instance(rng, k) for k in (1, 4, 9, 17)), strict=True)
    grid = [0.5, 3.0, 40.0, math.inf]
    for l in (None, 2):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no fallback warning
            res = ldpopt.sweep(p0s, p1s, grid, user, l, return_partitions=True, progress=False)
        assert res.method == "fast"
        _user_sweep_cells(res, p0s, p1s, grid, user, l)


@pytest.mark.nojit
def test_user_divergence_sweep_falls_back_to_the_readable_program_above_the_table(monkeypatch):
    monkeypatch.setattr(_policy, "USER_TABLE_MAX_K", 5)
    monkeypatch.setattr(spr_grid, "_warned_user_divergence", False)
    user = ldpopt.FDivergence(lambda t: (np.sqrt(t) - 1.0) ** 2, name="my-hellinger")
    rng = np.random.default_rng(65)
    p0s, p1s = zip(*(instance(rng, k) for k in (3, 8)), strict=True)
    with pytest.warns(LdpoptWarning, match="more than 5 reduced symbols"):
        res = ldpopt.sweep(p0s, p1s, [1.0, 4.0], user, return_partitions=True, progress=False)
    assert res.method == "dp"
    _user_sweep_cells(res, p0s, p1s, [1.0, 4.0], user, None)


def test_compiled_fsum_is_math_fsum_bit_for_bit():
    """``_small.fsum`` (the input divergence's sum in the kernel) is CPython's ``math.fsum``: on
    sums that cancel, span the exponent range, sit on half-way cases between partials (the
    half-even fix-up) or hold zeros; non-finite entries and intermediate overflow are left to
    ``math.fsum`` (``exact`` false)."""
    rng = np.random.default_rng(64)
    cases = [
        [],
        [0.0, -0.0],
        [1e-16, 1.0, 1e16],  # half-even rounding across partials
        [1.0, 1e100, 1.0, -1e100],
        [2.0**53, 1.0, 2.0**-60],
        [2.0**53, -1.0, -(2.0**-60)],
        [0.1] * 10,
        [5e-324, 5e-324, -1e-320],
    ]
    for _ in range(3000):
        n = int(rng.integers(1, 60))
        kind = rng.integers(4)
        if kind == 0:
            x = rng.random(n)
        elif kind == 1:  # wide exponents, both signs
            x = rng.standard_normal(n) * 2.0 ** rng.integers(-1070, 1000, n)
        elif kind == 2:  # cancellation: pairs of opposite terms perturbed by an ulp
            a = rng.standard_normal(n) * 2.0 ** rng.integers(-30, 30, n)
            x = np.concatenate((a, -np.nextafter(a, rng.choice([-np.inf, np.inf], n)), rng.random(2) * 1e-20))
        else:  # integers near 2^53 and halves: exact ties
            x = rng.integers(-(2**54), 2**54, n).astype(float) + rng.choice([0.0, 0.5, 0.25], n)
        cases.append(rng.permutation(x).tolist())
    for x in cases:
        got, exact = _small.fsum(np.array(x, dtype=float))
        want = math.fsum(x)
        assert exact and got == want and math.copysign(1.0, got) == math.copysign(1.0, want), x
    for bad in ([1.0, math.inf], [math.nan], [-math.inf, 1.0], [1.5e308, 1.5e308]):
        assert not _small.fsum(np.array(bad))[1], bad
