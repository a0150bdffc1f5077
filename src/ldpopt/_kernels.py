r"""Compiled (numba) kernels of the exact SPR solvers.

Only arrays and scalars go in and out; validation, the likelihood-ratio reduction and the
result objects live in :mod:`ldpopt._fast` and :mod:`ldpopt.batch`.  Every kernel is
``@njit(cache=True)`` without ``fastmath`` so that its floating-point operations are the
ones of the readable reference :func:`ldpopt.spr._dp_readable`:

* the perspective :func:`perspective` mirrors :func:`ldpopt.divergences._perspective_scalar`
  (same branches, same boundary conventions, same ``(x, y, d)`` stable forms);
* interval sums come from the same compensated (Neumaier hi/lo) prefix and suffix sums (the
  smaller side, floored at the largest endpoint term) and the score of ``[a, b)`` is
  ``g(c + A dP, c + A dQ, A (dP - dQ))`` with ``c = e^{-eps}``, ``A = -expm1(-eps)``
  (SPR eq. 31 divided by :math:`e^\varepsilon`);
* partition sums are accumulated left to right, as ``F[s, i] = F[s-1, t] + mu'[t:i)`` does.

Solvers (see ``docs/fast.md`` for the exactness arguments):

* :func:`dinkelbach` - the unconstrained optimum of
  :math:`\max_\pi \sum_t \mu'(B_t) / ((1-c) + s c)` by Dinkelbach's iteration; every step is
  the 1-D partition program :func:`penalized_pass` (per-block penalty ``lambda c``).
* :func:`budget_dp` - the O(l k^2) program of Prop. 3.3 for an output budget, O(l k) memory.
* :func:`solve` - both, with the budget logic; :func:`sweep_cells` - many (instance, eps) cells
  in parallel (``prange``).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

# Keep in sync with ldpopt.divergences.CODE_*
CODE_KL = 0
CODE_REVERSE_KL = 1
CODE_TV = 2
CODE_CHI2 = 3
CODE_HELLINGER = 4
CODE_JS = 5
CODE_EGAMMA = 6
CODE_POWER_UP = 7
CODE_POWER_DOWN = 8

#: below this many reduced symbols the interval scores are computed once and kept
#: (k (k + 1) / 2 doubles, 16.8 MB at the threshold); above it they are recomputed from
#: the prefix sums on every pass, so memory stays O(k)
SCORE_CACHE_MAX_K = 2048
#: Dinkelbach never needs more steps than there are partitions with distinct ratios; this
#: cap only guards against a floating-point cycle (each accepted step strictly increases lambda)
MAX_DINKELBACH_STEPS = 200
#: below this c = e^{-eps} (eps > 27.6) the Dinkelbach penalty lambda c is lost in rounding,
#: so optimal partitions with different block counts tie in floating point
TIE_C = 1e-12
#: ... and the tie is then settled by the budget program when nb k^2 is at most this
TIE_WORK = 30_000_000
#: solves with more reduced symbols than this are warm-started from a coarsened alphabet
COARSEN_MIN_K = 4096
#: number of groups of the coarsened alphabet
COARSE_GROUPS = 1024


# ---------------------------------------------------------------------------------------------
# Perspective g(x, y) = y f(x / y) (mirror of divergences._perspective_scalar)
# ---------------------------------------------------------------------------------------------
@njit(cache=True)
def log_ratio(x, y, d):
    """log(x / y): log1p(d / y) when x and y are close, else a difference of logs."""
    if abs(d) < 0.5 * y:
        return math.log1p(d / y)
    return math.log(x) - math.log(y)


@njit(cache=True)
def perspective(code, param, x, y, d, log_floor):
    """Scalar perspective for built-in ``code``; ``d`` = x - y known accurately.

    ``log_floor`` is the log of a lower bound of x and y that survives their underflow to 0
    (``-inf`` for a true zero), exactly as in the readable version.
    """
    if x == 0.0 and y == 0.0:
        return 0.0
    if code == CODE_TV:
        return 0.5 * abs(d)
    if code == CODE_EGAMMA:
        v = d - (param - 1.0) * y
        return v if v > 0.0 else 0.0
    if code == CODE_KL:
        if x == 0.0:
            return 0.0
        if y == 0.0:
            return x * (math.log(x) - log_floor)
        return x * log_ratio(x, y, d)
    if code == CODE_REVERSE_KL:
        if y == 0.0:
            return 0.0
        if x == 0.0:
            return y * (math.log(y) - log_floor)
        return -y * log_ratio(x, y, d)
    if code == CODE_CHI2:
        if y == 0.0:
            return math.inf
        return d * d / y
    if code == CODE_HELLINGER:
        s = math.sqrt(x) + math.sqrt(y)
        return d * d / (s * s)
    if code == CODE_JS:
        # 2x/s = 1 + d/s and 2y/s = 1 - d/s: log1p while x, y are comparable, plain logs otherwise
        s = x + y
        close = abs(d) < 0.5 * s
        a = 0.0
        if x > 0.0:
            a = x * (math.log1p(d / s) if close else math.log(2.0 * x / s))
        b = 0.0
        if y > 0.0:
            b = y * (math.log1p(-d / s) if close else math.log(2.0 * y / s))
        return 0.5 * (a + b)
    if code == CODE_POWER_UP:
        if y == 0.0:
            return math.inf
        if x == 0.0:
            return -y
        return y * math.expm1(param * log_ratio(x, y, d))
    if code == CODE_POWER_DOWN:
        if y == 0.0:
            return 0.0
        if x == 0.0:
            return y
        return -y * math.expm1(param * log_ratio(x, y, d))
    return math.nan


# ---------------------------------------------------------------------------------------------
# Prefix sums and interval scores
# ---------------------------------------------------------------------------------------------
@njit(cache=True)
def _compensated_into(x, hi, lo):
    # Neumaier summation, operation for operation as spr.compensated_prefix
    s = 0.0
    comp = 0.0
    hi[0] = 0.0
    lo[0] = 0.0
    for i in range(x.shape[0]):
        v = x[i]
        t = s + v
        if abs(s) >= abs(v):
            comp += (s - t) + v
        else:
            comp += (v - t) + s
        s = t
        hi[i + 1] = s
        lo[i + 1] = comp


# rows of the prefix table built by prefix_table
_PH, _PL, _QH, _QL, _SPH, _SPL, _SQH, _SQL, _PX, _QX = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9


@njit(cache=True)
def prefix_table(p, q):
    """(10, k+1) table of what the interval sums need, as ``spr._Prefix`` keeps it.

    Rows: compensated prefix sums (hi, lo) of p and q, compensated suffix sums (hi, lo) of p
    and q (``S[i] = sum_{j >= i}``), and p, q themselves (for the endpoint floor).
    """
    k = p.shape[0]
    pre = np.zeros((10, k + 1))
    _compensated_into(p, pre[_PH], pre[_PL])
    _compensated_into(q, pre[_QH], pre[_QL])
    rev = np.empty(k)
    hi = np.empty(k + 1)
    lo = np.empty(k + 1)
    for r, x in ((_SPH, p), (_SQH, q)):
        for i in range(k):
            rev[i] = x[k - 1 - i]
        _compensated_into(rev, hi, lo)
        for i in range(k + 1):
            pre[r, i] = hi[k - i]
            pre[r + 1, i] = lo[k - i]
    for i in range(k):
        pre[_PX, i] = p[i]
        pre[_QX, i] = q[i]
    return pre


@njit(cache=True, inline="always")
def _interval(pre, rh, rl, rsh, rsl, rx, a, b):
    # sum over [a, b) from the side with the smaller partial sums, never below its largest
    # endpoint term (spr._Prefix._interval)
    if pre[rh, b] <= pre[rsh, a]:
        total = (pre[rh, b] - pre[rh, a]) + (pre[rl, b] - pre[rl, a])
    else:
        total = (pre[rsh, a] - pre[rsh, b]) + (pre[rsl, a] - pre[rsl, b])
    floor = max(pre[rx, a], pre[rx, b - 1])
    return total if total >= floor else floor


@njit(cache=True, inline="always")
def block_sums(pre, a, b):
    """(dP, dQ) over the reduced symbols a..b-1."""
    dp = _interval(pre, _PH, _PL, _SPH, _SPL, _PX, a, b)
    dq = _interval(pre, _QH, _QL, _SQH, _SQL, _QX, a, b)
    return dp, dq


@njit(cache=True, inline="always")
def score(pre, a, b, code, param, c, A, lf):
    """Rescaled interval score mu'[a:b) = g(c + A dP, c + A dQ, A (dP - dQ)) (eq. 31 over e^eps)."""
    dp, dq = block_sums(pre, a, b)
    return perspective(code, param, c + A * dp, c + A * dq, A * (dp - dq), lf)


@njit(cache=True)
def partition_ratio(pre, bounds, nb, code, param, c, A, lf):
    """Raw value of the partition with boundaries ``bounds[0] = 0 < ... < bounds[nb] = k``.

    The scores are summed left to right (as the readable program's F[s, k]) and divided by
    ``1 + (s - 1) c``.
    """
    total = score(pre, bounds[0], bounds[1], code, param, c, A, lf)
    for j in range(1, nb):
        total = total + score(pre, bounds[j], bounds[j + 1], code, param, c, A, lf)
    return total / (1.0 + (nb - 1) * c)


# ---------------------------------------------------------------------------------------------
# Cheap upper bounds of the scores (exact pruning of split points, docs/fast.md)
# ---------------------------------------------------------------------------------------------
#: relative slack added to every bound (the bound and the score are each computed to a few ulp)
BOUND_SLACK_REL = 1e-12
#: slack relative to the block mass for the difference-of-logs forms, whose absolute rounding
#: error is at most ~ulp (|log x| + |log y|) x <= 1490 ulp x ~ 3.3e-13 x
BOUND_SLACK_FAR = 1e-11
#: slack relative to |d| for JS near x = y, where a + b cancels down to ~d^2/s
BOUND_SLACK_JS = 1e-13
_LN2 = math.log(2.0)
_SQRT_HALF = math.sqrt(0.5)
#: _log_ub_far is used for normal numbers well inside this range
_Z_MIN = 1e-300
_Z_MAX = 1e300


@njit(cache=True)
def _log_ub_far(z):
    r"""Upper bound of log z for a normal z > 0, tight to ~4e-4, without calling log.

    Write :math:`z = m 2^e` (``frexp``, exact) with :math:`m \in [1/\sqrt2, \sqrt2)`; then
    :math:`\log z = e\log 2 + \log m` and :math:`\log m \le (m-1)(m+5)/(4m+2)` for every
    m > 0 (the difference has derivative :math:`4(m-1)^3 / (m(4m+2)^2)`, so its minimum is
    0 at m = 1).
    """
    m, e = math.frexp(z)
    if m < _SQRT_HALF:
        m = 2.0 * m
        e -= 1
    return e * _LN2 + (m - 1.0) * (m + 5.0) / (4.0 * m + 2.0)


@njit(cache=True)
def score_bound(code, param, x, y, d, lf):
    r"""``(v, exact)``: the score itself when it is cheap (``exact``), else a bound it cannot exceed.

    KL, reverse KL and JS bound every logarithm of :func:`perspective` on the same argument
    and branch: near x = y (the ``log1p(u)`` forms) by the Pade-type inequality
    :math:`\log(1+u) \le u(6+u)/(6+4u)` written in d so it stays accurate for tiny u, away
    from it by :func:`_log_ub_far`.  A slack larger than the rounding errors of both
    evaluations is added, so the *computed* score never exceeds ``v``.  Everything else
    (cheap divergences, power divergences, zero masses, extreme ratios) is evaluated exactly.
    """
    if x > 0.0 and y > 0.0:
        if code == CODE_KL:
            if abs(d) < 0.5 * y:
                v = x * d * (6.0 * y + d) / (y * (6.0 * y + 4.0 * d))
                return v + BOUND_SLACK_REL * abs(v), False
            z = x / y
            if _Z_MIN < z < _Z_MAX:
                v = x * _log_ub_far(z)
                return v + BOUND_SLACK_REL * abs(v) + BOUND_SLACK_FAR * x, False
        elif code == CODE_REVERSE_KL:
            if abs(d) < 0.5 * y:
                # -log1p(u) = log1p(v), v = -d / (y + d)
                v = -y * d * (6.0 * y + 5.0 * d) / ((y + d) * (6.0 * y + 2.0 * d))
                return v + BOUND_SLACK_REL * abs(v), False
            z = y / x
            if _Z_MIN < z < _Z_MAX:
                v = y * _log_ub_far(z)
                return v + BOUND_SLACK_REL * abs(v) + BOUND_SLACK_FAR * y, False
        elif code == CODE_JS:
            s = x + y
            if abs(d) < 0.5 * s:
                a = x * d * (6.0 * s + d) / (s * (6.0 * s + 4.0 * d))
                b = -y * d * (6.0 * s - d) / (s * (6.0 * s - 4.0 * d))
                v = 0.5 * (a + b)
                return v + BOUND_SLACK_REL * abs(v) + BOUND_SLACK_JS * abs(d), False
            z1 = 2.0 * x / s
            z2 = 2.0 * y / s
            if _Z_MIN < z1 < _Z_MAX and _Z_MIN < z2 < _Z_MAX:
                v = 0.5 * (x * _log_ub_far(z1) + y * _log_ub_far(z2))
                return v + BOUND_SLACK_REL * abs(v) + BOUND_SLACK_FAR * s, False
    return perspective(code, param, x, y, d, lf), True


# ---------------------------------------------------------------------------------------------
# Unconstrained optimum: Dinkelbach's iteration over 1-D penalised partition programs
# ---------------------------------------------------------------------------------------------
#: states of a cached score: not computed yet, an upper bound, the exact score
_EMPTY, _BOUND, _EXACT = 0, 1, 2


@njit(cache=True)
def sums_tables(pre, k):
    """(dP, dQ) of every block [t, i), 0 <= t < i <= k, packed at ``i (i - 1) / 2 + t``.

    They do not depend on eps, so a sweep computes them once per instance.
    """
    n = k * (k + 1) // 2
    sp = np.empty(n)
    sq = np.empty(n)
    j = 0
    for i in range(1, k + 1):
        for t in range(i):
            dp, dq = block_sums(pre, t, i)
            sp[j] = dp
            sq[j] = dq
            j += 1
    return sp, sq


@njit(cache=True, inline="always")
def _exact_score(pre, pos, sp, sq, base, t, b, code, param, c, A, lf):
    if sp.shape[0] > 0:
        dp = sp[base + t]
        dq = sq[base + t]
    else:
        dp, dq = block_sums(pre, pos[t], b)
    return perspective(code, param, c + A * dp, c + A * dq, A * (dp - dq), lf)


@njit(cache=True)
def penalized_pass(pre, pos, sp, sq, val, state, code, param, c, A, lf, pen, H, cnt, par, U, ex):
    r"""One Dinkelbach step: :math:`H[i] = \max_{t<i} H[t] + (\mu'[pos_t:pos_i) - pen)`.

    Only the cut points listed in ``pos`` (increasing, ``pos[0] = 0``, ``pos[-1] = k``) are
    allowed.  Ties: the largest value, then the fewest blocks, then the smallest split point,
    the order of :func:`ldpopt.spr._dp_readable`.  Fills ``H``, ``cnt`` (block count) and
    ``par`` (start of the last block, as a position index).

    Split points are pruned exactly.  For each end point, every candidate first gets a cheap
    upper bound of its value (:func:`score_bound`); the best bound is scored exactly and
    becomes the incumbent; then only candidates whose bound reaches the incumbent are scored
    exactly.  A pruned candidate's computed value is strictly below the incumbent, so it can
    neither be the maximiser nor tie with it: the result equals the unpruned program's.
    ``val``/``state`` cache bounds and exact scores across passes (packed lower triangle of
    the position space; empty: no cache, O(m) memory); ``sp``/``sq`` are precomputed block
    sums (:func:`sums_tables`, only with ``pos = 0..k``) or empty; ``U``/``ex`` (length >= m)
    are scratch.
    """
    m = pos.shape[0] - 1
    use_table = val.shape[0] > 0
    use_sums = sp.shape[0] > 0
    H[0] = 0.0
    cnt[0] = 0
    par[0] = 0
    for i in range(1, m + 1):
        b = pos[i]
        base = i * (i - 1) // 2
        # phase 1: bounds (or cached exact scores) of every candidate, and the best of them
        umax = -math.inf
        tmax = 0
        for t in range(i):
            st = _EMPTY
            if use_table:
                st = state[base + t]
            if st == _EMPTY:
                if use_sums:
                    dp = sp[base + t]
                    dq = sq[base + t]
                else:
                    dp, dq = block_sums(pre, pos[t], b)
                w, exact = score_bound(code, param, c + A * dp, c + A * dq, A * (dp - dq), lf)
                if use_table:
                    val[base + t] = w
                    state[base + t] = _EXACT if exact else _BOUND
            else:
                w = val[base + t]
                exact = st == _EXACT
            u = H[t] + (w - pen)
            U[t] = u
            ex[t] = exact
            if u > umax:
                umax = u
                tmax = t
        # the incumbent: the candidate with the best bound, scored exactly
        if not ex[tmax]:
            w = _exact_score(pre, pos, sp, sq, base, tmax, b, code, param, c, A, lf)
            if use_table:
                val[base + tmax] = w
                state[base + tmax] = _EXACT
            U[tmax] = H[tmax] + (w - pen)
        best = U[tmax]
        bc = cnt[tmax] + 1
        bt = tmax
        # phase 2: only candidates that can reach the incumbent are scored exactly
        for t in range(i):
            u = U[t]
            if t == tmax or u < best:
                continue  # a bound strictly below the incumbent: provably not the maximiser
            if not ex[t]:
                w = _exact_score(pre, pos, sp, sq, base, t, b, code, param, c, A, lf)
                if use_table:
                    val[base + t] = w
                    state[base + t] = _EXACT
                u = H[t] + (w - pen)
                if u < best:
                    continue
            n = cnt[t] + 1
            if u > best or (u == best and (n < bc or (n == bc and t < bt))):
                best = u
                bc = n
                bt = t
        H[i] = best
        cnt[i] = bc
        par[i] = bt


@njit(cache=True)
def _traceback(pos, par, cnt, out):
    """Boundaries (symbol indices) of the partition ending at position m; returns the block count."""
    m = pos.shape[0] - 1
    nb = cnt[m]
    i = m
    j = nb
    out[j] = pos[m]
    while j > 0:
        i = par[i]
        j -= 1
        out[j] = pos[i]
    return nb


@njit(cache=True)
def dinkelbach_ws(pre, pos, sp, sq, code, param, c, A, lf, bounds, nb, H, cnt, par, cand, val, state):
    r"""Maximise :math:`\sum_t \mu'(B_t) / (1 + (s-1)c)` over partitions with cuts in ``pos``.

    ``bounds[:nb + 1]`` is a feasible start partition on entry and the optimum on exit;
    ``H, cnt, par, cand`` (length >= m + 1) and ``val, state`` (cache, possibly empty) are
    workspaces.  Returns ``(ratio, nb, passes)``.

    Dinkelbach: with :math:`\lambda` the ratio of the current partition, one penalised pass
    maximises :math:`N(\pi) - \lambda D(\pi) = \sum_t(\mu'(B_t) - \lambda c) - \lambda(1-c)`;
    if the maximiser's ratio is larger it becomes the current partition, otherwise no
    partition beats :math:`\lambda` and the current one is optimal (``docs/fast.md``).
    An infinite ratio is returned as soon as it appears (the caller settles it).
    """
    m = pos.shape[0] - 1
    U = np.empty(m + 1)
    ex = np.empty(m + 1, dtype=np.bool_)
    if state.shape[0] > 0:
        state[:] = _EMPTY
    if c == 0.0:
        # every partition has denominator 1: one unpenalised pass is the optimum
        penalized_pass(pre, pos, sp, sq, val, state, code, param, c, A, lf, 0.0, H, cnt, par, U, ex)
        nb = _traceback(pos, par, cnt, bounds)
        return partition_ratio(pre, bounds, nb, code, param, c, A, lf), nb, 1
    lam = partition_ratio(pre, bounds, nb, code, param, c, A, lf)
    passes = 0
    while passes < MAX_DINKELBACH_STEPS and not math.isinf(lam):
        penalized_pass(pre, pos, sp, sq, val, state, code, param, c, A, lf, lam * c, H, cnt, par, U, ex)
        passes += 1
        nb2 = _traceback(pos, par, cnt, cand)
        r = partition_ratio(pre, cand, nb2, code, param, c, A, lf)
        if r >= lam:
            # r == lam: the pass's maximiser (fewest blocks, smallest cuts) replaces an equal one
            improved = r > lam
            lam = r
            nb = nb2
            for j in range(nb + 1):
                bounds[j] = cand[j]
            if not improved:
                break
        else:
            break
    return lam, nb, passes


@njit(cache=True)
def dinkelbach(pre, pos, code, param, c, A, lf, bounds, nb):
    """:func:`dinkelbach_ws` with its own workspaces (score cache up to ``SCORE_CACHE_MAX_K`` cut points)."""
    m = pos.shape[0] - 1
    n = m * (m + 1) // 2 if m <= SCORE_CACHE_MAX_K else 0
    empty = np.empty(0)
    return dinkelbach_ws(pre, pos, empty, empty, code, param, c, A, lf, bounds, nb,
                         np.empty(m + 1), np.empty(m + 1, dtype=np.int64), np.empty(m + 1, dtype=np.int64),
                         np.empty(m + 1, dtype=np.int64), np.empty(n), np.zeros(n, dtype=np.uint8))


@njit(cache=True)
def best_two_blocks(pre, k, code, param, c, A, lf, bounds):
    """Best partition into at most two blocks, O(k): a cheap, usually good, Dinkelbach start."""
    best = score(pre, 0, k, code, param, c, A, lf)
    bt = 0
    for t in range(1, k):
        v = (score(pre, 0, t, code, param, c, A, lf) + score(pre, t, k, code, param, c, A, lf)) / (1.0 + c)
        if v > best:
            best = v
            bt = t
    bounds[0] = 0
    if bt == 0:
        bounds[1] = k
        return 1
    bounds[1] = bt
    bounds[2] = k
    return 2


# ---------------------------------------------------------------------------------------------
# Output budget: the O(l k^2) program of Prop. 3.3 (mirror of spr._dp_readable)
# ---------------------------------------------------------------------------------------------
@njit(cache=True)
def budget_dp(pre, k, l, code, param, c, A, lf, bounds):
    r"""Best partition into at most ``l`` blocks: ``F[s, i] = max_t F[s-1, t] + mu'[t:i)``.

    Same recursion, masks, accumulation order and tie-breaking (smallest split point,
    smallest block count) as :func:`ldpopt.spr._dp_readable`; O(l k) memory for ``F`` and the
    parent table, O(k) for the scores of the current end point.  Row ``l`` is only needed at
    ``i = k``, so for ``l = 2`` the program is O(k).  Returns ``(ratio, nb)``.
    """
    F = np.full((l + 1, k + 1), -math.inf)
    par = np.zeros((l + 1, k + 1), dtype=np.int64)
    sc = np.empty(k)
    for i in range(1, k + 1):
        smax = min(l, i) if i == k else min(l - 1, i)
        if smax >= 2:
            for t in range(i):
                sc[t] = score(pre, t, i, code, param, c, A, lf)
        else:
            sc[0] = score(pre, 0, i, code, param, c, A, lf)
        F[1, i] = sc[0]
        for s in range(2, smax + 1):
            best = -math.inf
            bt = 0
            prev = F[s - 1]
            for t in range(s - 1, i):
                v = prev[t] + sc[t]
                if v > best:
                    best = v
                    bt = t
            F[s, i] = best
            par[s, i] = bt
    s_star = 1
    best_ratio = -math.inf
    for s in range(1, l + 1):
        r = F[s, k] / (1.0 + (s - 1) * c)
        if r > best_ratio:
            best_ratio = r
            s_star = s
    i = k
    bounds[s_star] = k
    for s in range(s_star, 1, -1):
        i = par[s, i]
        bounds[s - 1] = i
    bounds[0] = 0
    return best_ratio, s_star


# ---------------------------------------------------------------------------------------------
# One solve: unconstrained first, the budget program only when it is needed
# ---------------------------------------------------------------------------------------------
@njit(cache=True)
def _coarse_start(pre, k, code, param, c, A, lf, bounds):
    """Start for large k: the optimum over cuts on a coarse grid, refined around its cuts.

    Any partition is a valid Dinkelbach start; a good one saves full O(k^2) passes.
    """
    g = min(COARSE_GROUPS, k)
    pos = np.empty(g + 1, dtype=np.int64)
    for j in range(g + 1):
        pos[j] = (j * k) // g
    bounds[0] = 0
    bounds[1] = k
    _, nb, _ = dinkelbach(pre, pos, code, param, c, A, lf, bounds, 1)
    # refine: allow every cut within two groups of a coarse cut
    w = 2 * ((k + g - 1) // g)
    mark = np.zeros(k + 1, dtype=np.bool_)
    mark[0] = True
    mark[k] = True
    for j in range(1, nb):
        lo = max(0, bounds[j] - w)
        hi = min(k, bounds[j] + w)
        for t in range(lo, hi + 1):
            mark[t] = True
    m = 0
    for t in range(k + 1):
        if mark[t]:
            m += 1
    if m - 1 > SCORE_CACHE_MAX_K:
        return nb
    pos2 = np.empty(m, dtype=np.int64)
    m = 0
    for t in range(k + 1):
        if mark[t]:
            pos2[m] = t
            m += 1
    _, nb, _ = dinkelbach(pre, pos2, code, param, c, A, lf, bounds, nb)
    return nb


@njit(cache=True)
def solve_ws(pre, k, l, code, param, c, A, lf, bounds, nwarm, sp, sq, H, cnt, par, cand, val, state):
    """Optimal raw value and partition of one reduced instance with budget ``l`` (1 <= l <= k).

    ``bounds`` (length k + 1) receives the block boundaries; on entry ``bounds[:nwarm + 1]``
    is a start partition when ``nwarm > 0`` (e.g. the optimum at a neighbouring eps).  The
    other arrays are workspaces (see :func:`dinkelbach_ws`).  Returns ``(raw, nb, method)``,
    method 0 = Dinkelbach, 1 = budget program, 2 = one block (k = 1 or l = 1).
    """
    if k == 1 or l == 1:
        bounds[0] = 0
        bounds[1] = k
        return score(pre, 0, k, code, param, c, A, lf) / 1.0, 1, 2
    if c == 0.0:
        nb = 1
        bounds[0] = 0
        bounds[1] = k
    else:
        if nwarm > 0:
            nb = nwarm
        else:
            nb = best_two_blocks(pre, k, code, param, c, A, lf, bounds)
        if k > COARSEN_MIN_K:
            alt = np.empty(k + 1, dtype=np.int64)
            nb_alt = _coarse_start(pre, k, code, param, c, A, lf, alt)
            if partition_ratio(pre, alt, nb_alt, code, param, c, A, lf) > \
                    partition_ratio(pre, bounds, nb, code, param, c, A, lf):
                nb = nb_alt
                for j in range(nb + 1):
                    bounds[j] = alt[j]
    pos = np.arange(k + 1)
    raw, nb, _ = dinkelbach_ws(pre, pos, sp, sq, code, param, c, A, lf, bounds, nb, H, cnt, par, cand, val, state)
    if math.isinf(raw) and c > 0.0:
        # an overflowing score: the readable program's answer is the first budget with an
        # infinite row, and an infinite block needs at most 3 blocks (before, it, after)
        raw, nb = budget_dp(pre, k, min(l, 3), code, param, c, A, lf, bounds)
        return raw, nb, 1
    if c < TIE_C and nb > 1 and nb * k * k <= TIE_WORK:
        # the per-block penalty lambda c is below rounding: partitions with different block
        # counts tie in floating point; settle the tie as the readable program does (its
        # smallest maximising s), which the budget program with l = nb reproduces
        raw, nb = budget_dp(pre, k, min(nb, l), code, param, c, A, lf, bounds)
        return raw, nb, 0
    if nb <= l:
        return raw, nb, 0
    raw, nb = budget_dp(pre, k, l, code, param, c, A, lf, bounds)
    return raw, nb, 1


@njit(cache=True)
def solve(pre, k, l, code, param, c, A, lf, bounds):
    """:func:`solve_ws` for a single solve (own workspaces, cold start)."""
    n = k * (k + 1) // 2 if k <= SCORE_CACHE_MAX_K else 0
    empty = np.empty(0)
    return solve_ws(pre, k, l, code, param, c, A, lf, bounds, 0, empty, empty,
                    np.empty(k + 1), np.empty(k + 1, dtype=np.int64), np.empty(k + 1, dtype=np.int64),
                    np.empty(k + 1, dtype=np.int64), np.empty(n), np.zeros(n, dtype=np.uint8))


# ---------------------------------------------------------------------------------------------
# Sweeps: many (instance, eps) cells
# ---------------------------------------------------------------------------------------------
@njit(parallel=True, cache=True)
def sweep_items(pres, pre_off, ks, ls, item_inst, item_e0, item_e1, code, param, cs, As, lfs,
                raw_out, nb_out, meth_out, bounds_out, bounds_off):
    """Solve work items in parallel; item j is instance ``item_inst[j]`` at eps ``item_e0[j]:item_e1[j]``.

    ``pres`` holds every instance's (10, k+1) prefix table flattened, instance ``t`` at
    ``pre_off[t]``.  Within an item the block sums are computed once (they do not depend on
    eps) and every solve is warm-started from the previous eps's optimum.  Results go to
    ``raw_out[t, e]``, ``nb_out[t, e]``, ``meth_out[t, e]`` and, when ``bounds_out`` is not
    empty, the block boundaries to ``bounds_out[bounds_off[t, e]:]``.
    """
    keep = bounds_out.shape[0] > 0
    for j in prange(item_inst.shape[0]):
        t = item_inst[j]
        k = ks[t]
        pre = np.empty((10, k + 1))
        o = pre_off[t]
        for r in range(10):
            for i in range(k + 1):
                pre[r, i] = pres[o + r * (k + 1) + i]
        if k <= SCORE_CACHE_MAX_K:
            n = k * (k + 1) // 2
            sp, sq = sums_tables(pre, k)
        else:
            n = 0
            sp = np.empty(0)
            sq = np.empty(0)
        H = np.empty(k + 1)
        cnt = np.empty(k + 1, dtype=np.int64)
        par = np.empty(k + 1, dtype=np.int64)
        cand = np.empty(k + 1, dtype=np.int64)
        val = np.empty(n)
        state = np.zeros(n, dtype=np.uint8)
        bounds = np.zeros(k + 1, dtype=np.int64)
        nwarm = 0
        for e in range(item_e0[j], item_e1[j]):
            raw, nb, m = solve_ws(pre, k, ls[t], code, param, cs[e], As[e], lfs[e], bounds, nwarm,
                                  sp, sq, H, cnt, par, cand, val, state)
            raw_out[t, e] = raw
            nb_out[t, e] = nb
            meth_out[t, e] = m
            nwarm = nb
            if keep:
                b0 = bounds_off[t, e]
                for i in range(nb + 1):
                    bounds_out[b0 + i] = bounds[i]
