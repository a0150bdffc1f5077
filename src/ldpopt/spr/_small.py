r"""Single solves of small alphabets in one compiled call (``optimal_mechanism``'s fast path).

For ``n <= SMALL_MAX_K`` symbols and a built-in divergence, :func:`small_solve` runs the whole
solve in one compiled call: the likelihood-ratio reduction (when no two likelihood ratios are
within ``reduction._NEAR_TIE_RTOL`` of each other; else the caller runs
:func:`ldpopt.spr.reduction._reduce`, whose exact rational merging this kernel does not repeat),
the compensated prefix table of :class:`ldpopt.spr.reduction._Prefix` (the same sequential
Neumaier steps, bit for bit), the block sums and score bounds of the score cache, and the
decisions of :func:`ldpopt.spr._kernels.solve_ws` over that cache (best two blocks, then
Dinkelbach's iteration with :func:`ldpopt.spr._kernels.cached_pass`), plus the terms of the
input divergence :math:`D_f(P_0\|P_1)`.  A binding budget (or an infinite score, or near-ties
between block counts: ``_policy.settle``) is finished by :func:`ldpopt.spr._kernels.budget_dp`
from Python, compiled only when a solve needs it.

Same kernels, same operations as the pruned path of :func:`ldpopt.spr._fast.solve` with a
score cache (``path="pruned"``, k <= ``SCORE_CACHE_MAX_K``), so the optimum, its partition and
the tie-breaking between equally good partitions (largest value, then fewest blocks, then
smallest split points, ``cached_pass``) are that path's, bit for bit (tested).  Only the
kernels this path calls are compiled on first use (not the cache-free passes of large k).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ldpopt.spr import _kernels as K
from ldpopt.spr import _policy
from ldpopt.spr.reduction import _NEAR_TIE_RTOL, DH, PH, PL, PRE_ROWS, PX, QH, QL, QX, SDH, SPH, SPL, SQH, SQL

__all__ = ["SMALL_MAX_K", "small_solve", "unpack", "fsum", "prefix_table", "sums_tables", "cached_solve"]

#: alphabets of at most this many symbols (before the reduction) take this path: the score
#: cache of ``_kernels.cached_pass`` holds k (k + 1) / 2 blocks (its size limit)
SMALL_MAX_K = K.SCORE_CACHE_MAX_K
#: ``small_solve``'s status: solved; near-tied ratios (the caller reduces exactly)
SOLVED, NEAR_TIES = 0, 1
#: ``small_solve``'s input divergence: the terms' sum is returned; a term is +inf; sum them in Python
TERMS_SUM, TERMS_INF, TERMS_PYTHON = 0, 1, 2


@njit(cache=True, error_model="numpy")
def fsum(x):
    """``(math.fsum(x), True)`` of finite floats, bit for bit: CPython's algorithm (Shewchuk's
    exact partials, then the correctly rounded sum of the partials with its half-even fix-up
    across partials); ``(nan, False)`` for a non-finite entry or an intermediate overflow, where
    ``math.fsum`` returns a special value or raises (the caller calls it)."""
    n = x.shape[0]
    p = np.empty(n + 1)  # the partials: non-overlapping, increasing magnitude
    m = 0
    for idx in range(n):
        xv = x[idx]
        if not math.isfinite(xv):
            return math.nan, False
        i = 0
        for j in range(m):
            y = p[j]
            if abs(xv) < abs(y):
                xv, y = y, xv
            hi = xv + y
            yr = hi - xv
            lo = y - yr
            if lo != 0.0:
                p[i] = lo
                i += 1
            xv = hi
        m = i
        if xv != 0.0:
            if not math.isfinite(xv):
                return math.nan, False  # intermediate overflow
            p[m] = xv
            m += 1
    hi = 0.0
    lo = 0.0
    if m > 0:
        m -= 1
        hi = p[m]
        while m > 0:  # sum the partials from the top while the sum stays exact
            xv = hi
            m -= 1
            y = p[m]
            hi = xv + y
            yr = hi - xv
            lo = y - yr
            if lo != 0.0:
                break
        if m > 0 and ((lo < 0.0 and p[m - 1] < 0.0) or (lo > 0.0 and p[m - 1] > 0.0)):
            y = lo * 2.0  # half-even rounding across partials
            xv = hi + y
            yr = xv - hi
            if y == yr:
                hi = xv
    return hi, True


#: the six compensated sums of ``reduction._Prefix``, one row of each array per sum: the source
#: (0: p, 1: q, 2: p - q interleaved as p[0], -q[0], p[1], ...), summed backwards (suffix sums),
#: the table row of its hi part (lo in the next row)
_SUM_SRC = np.array([0, 1, 0, 1, 2, 2], dtype=np.int64)
_SUM_BACK = np.array([0, 0, 1, 1, 0, 1], dtype=np.int64)
_SUM_ROW = np.array([PH, QH, SPH, SQH, DH, SDH], dtype=np.int64)


@njit(cache=True, error_model="numpy")
def prefix_table(p, q):
    """``reduction._Prefix(p, q).table``, bit for bit: the same sequential Neumaier steps
    (``reduction._neumaier_rows``: ``s + x``, the error of each step from its own operands, both
    sums from 0.0) of p, q, their reversals and p - q (the sums after every pair p[i], -q[i]), then
    p and q themselves.  Suffix sums are stored backwards (entry i sums symbols i..k-1)."""
    k = p.shape[0]
    t = np.zeros((PRE_ROWS, k + 1))
    for r in range(6):
        src = _SUM_SRC[r]
        back = _SUM_BACK[r] == 1
        row = _SUM_ROW[r]
        per = 2 if src == 2 else 1  # terms per symbol
        s = 0.0
        comp = 0.0
        for j in range(per * k):
            i = j // per  # the symbol of this term, in summation order
            sym = k - 1 - i if back else i
            if src == 0 or (src == 2 and j % 2 == 0):
                x = p[sym]
            elif src == 1:
                x = q[sym]
            else:
                x = -q[sym]
            tt = s + x
            if abs(s) >= abs(x):
                e = (s - tt) + x
            else:
                e = (x - tt) + s
            comp = comp + e
            s = tt
            if (j + 1) % per == 0:
                col = k - 1 - i if back else i + 1
                t[row, col] = s
                t[row + 1, col] = comp
    for i in range(k):
        t[PX, i] = p[i]
        t[QX, i] = q[i]
    return t


@njit(cache=True, error_model="numpy", inline="always")
def _side_sums(h, lo, sh, sl, x, i, base, out):
    """Sums of one distribution over the blocks [t, i), t < i, into ``out[base + t]``: those of
    ``_kernels.block_sums`` (``_interval``), bit for bit, with its branch hoisted out of the loop.
    ``h, lo, sh, sl, x`` are the rows of that distribution in the prefix table (prefix sum, its
    compensation, suffix sum, its compensation, the masses).

    ``_interval`` sums [t, i) from the prefix when ``h[i] <= sh[t]``, else from the suffix.  The
    suffix sums ``sh`` are non-increasing in t (running float sums of nonnegative masses never
    decrease), so that holds exactly for t < T and fails for t >= T: T is found by bisection, and
    two branch-free loops (which the compiler vectorises) perform the same operations.  Each loop
    indexes views from 0 (the compiler then knows no index is negative and drops numpy's
    wraparound of negative indices, which kept the loops from vectorising: ~3x slower).
    """
    hb = h[i]
    a = 0
    b = i
    while a < b:  # the first t < i with hb > sh[t], else i
        mid = (a + b) >> 1
        if hb <= sh[mid]:
            a = mid + 1
        else:
            b = mid
    T = a
    lb = lo[i]
    fb = x[i - 1]
    o = out[base : base + T]
    for t in range(T):
        tot = (hb - h[t]) + (lb - lo[t])
        fl = max(x[t], fb)
        o[t] = tot if tot >= fl else fl
    sb = sh[i]
    slb = sl[i]
    o2 = out[base + T : base + i]
    sh2 = sh[T:i]
    sl2 = sl[T:i]
    x2 = x[T:i]
    for t in range(i - T):
        tot = (sh2[t] - sb) + (sl2[t] - slb)
        fl = max(x2[t], fb)
        o2[t] = tot if tot >= fl else fl


@njit(cache=True, error_model="numpy")
def sums_tables(pre, k):
    """``_kernels.sums_tables(pre, arange(k + 1))``, bit for bit (:func:`_side_sums`): (dP, dQ) of
    every block [t, i), packed at ``i (i - 1) / 2 + t``."""
    n = k * (k + 1) // 2
    sp = np.empty(n)
    sq = np.empty(n)
    # the rows as 1-D views: contiguous loads the compiler vectorises
    ph, pl, sph, spl, px = pre[PH], pre[PL], pre[SPH], pre[SPL], pre[PX]
    qh, ql, sqh, sql, qx = pre[QH], pre[QL], pre[SQH], pre[SQL], pre[QX]
    for i in range(1, k + 1):
        base = i * (i - 1) // 2
        _side_sums(ph, pl, sph, spl, px, i, base, sp)
        _side_sums(qh, ql, sqh, sql, qx, i, base, sq)
    return sp, sq


@njit(cache=True, error_model="numpy")
def _dinkelbach_cached(pre, pos, sp, sq, val, state, sc, bounds, nb):
    """``_kernels.dinkelbach_ws`` with a fresh score cache and no hints, step for step (its
    cache-free branch is left out, so the cache-free passes are not compiled): ``(raw, nb)``."""
    c = sc[2]
    m = pos.shape[0] - 1
    H = np.empty(m + 1)
    cnt = np.empty(m + 1, dtype=np.int64)
    par = np.empty(m + 1, dtype=np.int64)
    cand = np.empty(m + 1, dtype=np.int64)
    K.fill_cache(pre, pos, sp, sq, val, state, sc)
    hinted = m < 0  # False, but not a literal: one compiled specialisation of cached_pass
    if c == 0.0:
        # every partition has denominator 1: one unpenalised pass is the optimum
        K.cached_pass(pre, pos, sp, sq, val, state, sc, 0.0, H, cnt, par, hinted)
        nb = K._traceback(pos, par, cnt, bounds)
        return K.partition_ratio(pre, bounds, nb, sc), nb
    lam = K.partition_ratio(pre, bounds, nb, sc)
    passes = 0
    while passes < K.MAX_DINKELBACH_STEPS and not math.isinf(lam):
        K.cached_pass(pre, pos, sp, sq, val, state, sc, lam * c, H, cnt, par, hinted)
        passes += 1
        hinted = True  # the previous pass's split points
        nb2 = K._traceback(pos, par, cnt, cand)
        r = K.partition_ratio(pre, cand, nb2, sc)
        if not r >= lam:
            break
        # r == lam: the pass's maximiser (fewest blocks, smallest cuts) replaces an equal one
        improved = r > lam
        lam = r
        nb = nb2
        for j in range(nb + 1):
            bounds[j] = cand[j]
        if not improved:
            break
    return lam, nb


@njit(cache=True, error_model="numpy")
def cached_solve(pre, k, l, sc, bounds):
    """``_kernels.solve_ws`` for k <= ``SCORE_CACHE_MAX_K`` with a fresh cache and no warm start,
    up to the budget program: ``(raw, nb, method, budget)``; ``budget > 0`` asks the caller for
    ``_kernels.budget_dp(pre, k, budget, sc, bounds)`` (``_policy.settle``)."""
    c = sc[2]
    first = K._start(k, l, c)
    if first == _policy.START_SINGLE:
        bounds[0] = 0
        bounds[1] = k
        return K.score(pre, np.int64(0), k, sc) / 1.0, np.int64(1), np.int64(_policy.SINGLE), np.int64(0)
    if first == _policy.START_UNPENALISED:
        nb = np.int64(1)
        bounds[0] = 0
        bounds[1] = k
    else:
        nb = K.best_two_blocks(pre, k, sc, bounds)
    pos = np.arange(k + 1)
    sp, sq = sums_tables(pre, k)  # the score cache of _kernels._new_cache
    val = np.empty(sp.shape[0])
    state = np.zeros(sp.shape[0], dtype=np.uint8)
    raw, nb = _dinkelbach_cached(pre, pos, sp, sq, val, state, sc, bounds, nb)
    budget, method = K._settle(raw, nb, k, l, c)
    return raw, nb, np.int64(method), np.int64(budget)


@njit(cache=True, error_model="numpy")
def _reduce_no_ties(u, v):
    """The reduction of ``reduction._reduce`` when it merges nothing: ``(ok, members)``, ``ok``
    false when two sorted log-ratios are within ``_NEAR_TIE_RTOL`` (the exact path decides)."""
    n = u.shape[0]
    m = 0
    for i in range(n):
        if u[i] > 0.0 or v[i] > 0.0:
            m += 1
    idx = np.empty(m, dtype=np.int64)
    key = np.empty(m)
    j = 0
    for i in range(n):
        if u[i] > 0.0 or v[i] > 0.0:
            idx[j] = i
            key[j] = np.log(u[i]) - np.log(v[i])  # -inf for p = 0, +inf for q = 0
            j += 1
    # any sort: the keys are distinct unless there are near-ties, which return below (numpy's
    # default kind compiles without the string handling of ``kind=``)
    perm = np.argsort(key)
    members = np.empty(m, dtype=np.int64)
    for j in range(m):
        members[j] = idx[perm[j]]
    for j in range(m - 1):
        a = key[perm[j]]
        b = key[perm[j + 1]]
        if a == b:
            return False, members
        if math.isfinite(a) and math.isfinite(b):
            scale = max(1.0, max(abs(a), abs(b)))
            if abs(b - a) <= _NEAR_TIE_RTOL * scale:
                return False, members
    return True, members


@njit(cache=True, error_model="numpy")
def _input_terms(u, v, code, param, terms):
    """The perspective terms of the input divergence into ``terms`` (n entries, or none), and
    ``(state, their sum)`` as :func:`small_solve` returns them."""
    state = TERMS_SUM
    for i in range(terms.shape[0]):
        terms[i] = K.perspective(code, param, u[i], v[i], u[i] - v[i], -math.inf)
        if terms[i] == math.inf:
            state = TERMS_INF
    total = 0.0
    if state == TERMS_SUM and terms.shape[0] > 0:
        total, exact = fsum(terms)
        if not exact:
            state = TERMS_PYTHON
    return state, total


@njit(cache=True, error_model="numpy")
def _group(block_of, nb, grouped, ends):
    """The symbols block by block into ``grouped``, ascending in each (a counting sort of
    ``block_of``: the blocks ``spr_mechanism_from_assignment`` finds by a stable argsort), and
    where each block ends there into ``ends[:nb]``."""
    for i in range(block_of.shape[0]):
        ends[block_of[i]] += 1
    end = 0
    for b in range(nb):  # each block's start, where its symbols go
        end += ends[b]
        ends[b] = end - ends[b]
    for i in range(block_of.shape[0]):
        b = block_of[i]
        grouped[ends[b]] = i
        ends[b] += 1  # (the block's end once its last symbol is placed)


@njit(cache=True, error_model="numpy")
def small_solve(u, v, l_user, code, param, c, A, lf, input_terms):
    """Reduction, prefix table and :func:`cached_solve` of the validated pair ``(u, v)`` in one call.

    Returns ``(status, raw, nb, method, budget, terms, total, ints, floats)``: ``status``
    ``NEAR_TIES`` means nothing was solved; ``raw``, ``nb``, ``method`` and ``budget`` as
    :func:`cached_solve`; ``terms`` ``TERMS_SUM`` when ``total`` is ``math.fsum`` of the
    perspective terms of the input divergence (``input_terms``), ``TERMS_INF`` when a term is
    +inf, ``TERMS_PYTHON`` when the caller sums them by ``math.fsum`` itself (a non-finite term
    or an intermediate overflow, which :func:`fsum` leaves to it).  The
    arrays come packed in two (each array handed back to Python costs about a microsecond; slice
    them with :func:`unpack`): ``ints`` holds ``order`` (the k reduced symbols in likelihood-ratio
    order, one original symbol each, then the symbols of mass 0 under both), ``block_of`` (the
    block of every original symbol, those of mass 0 in block 0), ``grouped`` (the original
    symbols block by block, ascending in each), ``ends`` (``ends[:nb]``: where each block ends in
    ``grouped``; n entries) and ``bounds`` (``bounds[:nb + 1]`` the block boundaries, k + 1
    entries); ``floats`` the perspective terms of the input divergence
    when ``input_terms`` (else none), then the reduced pair's prefix table (rows ``PX``, ``QX``:
    the pair), flattened (empty when nothing was solved).  ``l_user`` <= 0: no budget.
    """
    n = u.shape[0]
    nt = n if input_terms else 0
    ok, members = _reduce_no_ties(u, v)
    k = members.shape[0]
    ints = np.zeros(4 * n + k + 1, dtype=np.int64)
    z = np.int64(0)
    if not ok:
        return np.int64(NEAR_TIES), 0.0, z, z, z, np.int64(TERMS_SUM), 0.0, ints, np.empty(0)
    floats = np.empty(nt + PRE_ROWS * (k + 1))
    terms, total = _input_terms(u, v, code, param, floats[:nt])
    for j in range(k):  # (a slice assignment would compile numba's string formatting of its errors)
        ints[j] = members[j]
    j = k
    for i in range(n):
        if not (u[i] > 0.0 or v[i] > 0.0):
            ints[j] = i
            j += 1
    p = np.empty(k)
    q = np.empty(k)
    for j in range(k):
        p[j] = u[members[j]]
        q[j] = v[members[j]]
    pre = prefix_table(p, q)
    l = k if l_user <= 0 else min(l_user, k)
    bounds = np.zeros(k + 1, dtype=np.int64)
    raw, nb, method, budget = cached_solve(pre, np.int64(k), np.int64(l), (code, param, c, A, lf), bounds)
    for b in range(nb):
        for r in range(bounds[b], bounds[b + 1]):
            ints[n + members[r]] = b
    _group(ints[n : 2 * n], nb, ints[2 * n : 3 * n], ints[3 * n : 4 * n])
    for j in range(k + 1):
        ints[4 * n + j] = bounds[j]
    w = k + 1
    for r in range(PRE_ROWS):
        for j in range(w):
            floats[nt + r * w + j] = pre[r, j]
    return np.int64(SOLVED), raw, nb, method, budget, terms, total, ints, floats


def unpack(n, nt, ints, floats):
    """``(order, block_of, grouped, ends, bounds, terms, pre)``: views of :func:`small_solve`'s
    packed arrays for ``n`` original symbols and ``nt`` terms (``pre`` the (``PRE_ROWS``, k + 1)
    prefix table)."""
    k = ints.shape[0] - 4 * n - 1
    return (
        ints[:n],
        ints[n : 2 * n],
        ints[2 * n : 3 * n],
        ints[3 * n : 4 * n],
        ints[4 * n :],
        floats[:nt],
        floats[nt:].reshape(PRE_ROWS, k + 1),
    )
