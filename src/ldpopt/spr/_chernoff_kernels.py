r"""Compiled (numba) branch and bound over lambda of :mod:`ldpopt.spr.chernoff`.

:func:`sweep_pair` runs the search of :class:`ldpopt.spr.chernoff._Search` for one reduced
instance at many eps, step for step (the same points, bounds, splits, tangent chords, stopping
rule and rounding margin; the constants are passed in from :mod:`ldpopt.spr.chernoff`), with
the GIL released so that pairs of a sweep run in parallel threads.  It covers the cells where
every block has positive output masses x and y (every finite eps without underflow); the
others are flagged and run by the Python search.

Differences from the Python search, none of which touches the certificate (each bound is still
a bound of the exact SPR optimum up to the rounding margin): sums are Neumaier-compensated
instead of ``math.fsum``; a curve's maximiser is found by Newton steps inside a shrinking
bracket, to the width of ``brentq``'s ``xtol``; the partitions whose curves were maximised are
remembered in a small ring (a forgotten one is maximised again: time only); block terms are
formed as ``y e^(lam log(x/y) - K)`` (no log y per block) and log(x/y) is the log of the ratio
where that is far from 1 (the accurate log1p form near it); a point's block terms are kept and
rescaled for its tangents (at lambda = 0 and 1 they are y and x themselves); and each solve
starts Dinkelbach from the partitions known at the interval's ends when they beat the best
two blocks (fewer passes to the same optimum).

The SPR solves are those of :func:`ldpopt.spr._fast.solve_scores` (best two blocks, Dinkelbach
over the table with :func:`ldpopt.spr._kernels.table_pass`, the budget program
:func:`ldpopt.spr._kernels.table_budget_dp` where :mod:`ldpopt.spr._policy` says so).
"""

from __future__ import annotations

import math
import os

import numba
import numpy as np
from numba import njit

from ldpopt.divergences import CODE_POWER_DOWN, R_MAX, R_MIN, RENYI_NEAR_MAX
from ldpopt.spr import _policy
from ldpopt.spr._kernels import MAX_DINKELBACH_STEPS, log_ratio, perspective, table_budget_dp, table_pass

__all__ = ["sweep_pair", "threads", "STATUS_DONE", "STATUS_FALLBACK", "STATUS_GAP"]

#: cell solved and certified
STATUS_DONE = 0
#: some block has a zero output mass at this eps: the Python search answers
STATUS_FALLBACK = 1
#: solved, but the split budget ran out before the gap target (the caller warns)
STATUS_GAP = 2

#: capacity of the point list (3 + MAX_SPLITS * (1 + 8 Newton steps) <= 3603 for 400 splits)
_POINTS_CAP = 4096
#: capacity of the tangent cache (two per interval ever bounded)
_TANGENTS_CAP = 16384
#: the partitions whose curves were maximised are remembered in a ring of this many
_SEEN_CAP = 32
#: the block terms exp(log y + lam log(x/y) - K) of a point are kept for its tangents, for at
#: most this many points per cell and at most _EROWS_WORDS floats in all
_EROWS_MAX = 48
_EROWS_WORDS = 2_000_000
#: a point's kept terms are rescaled for a tangent when their scale K is within this of the
#: point's log G: the terms lost to underflow are then below e^(50 - 708) of the tangent's
#: scale (~1), far below the rounding margin
_EROWS_RESCALE_MAX = 50.0
#: block log-ratios with |x / y - 1| below this come from log1p(d / y), the others from
#: log(x / y): the rounded ratio then costs at most u / (2 log(1 + 1/4)) < 3 u relative
_RATIO_NEAR = 0.25
#: y e^t is formed as such (no log y) while |t| <= L + |K| stays below this (e^700 ~ 1e304)
_EXP_SAFE = 700.0
#: bracket width of a curve's maximiser (``divergences._LAMBDA_XTOL``)
_LAMBDA_XTOL = 1e-14
#: the curve slope is summed in the centred form below this |log-ratio| (divergences)
_CENTRED_SLOPE_MAX = 1.0

_start = njit(cache=True, error_model="numpy")(_policy.start)
_settle = njit(cache=True, error_model="numpy")(_policy.settle)


# ---------------------------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------------------------
@njit(cache=True, error_model="numpy", inline="always")
def _at(a, b):
    return b * (b - 1) // 2 + a


@njit(cache=True, error_model="numpy")
def _log_sum(y, lr, bounds, nb, lam, c):
    """log S of a partition at lam: log-sum-exp of its blocks minus log(1 + (s - 1) c)."""
    m = -math.inf
    for j in range(nb):
        i = _at(bounds[j], bounds[j + 1])
        t = math.log(y[i]) + lam * lr[i]
        if t > m:
            m = t
    if math.isinf(m):
        return m - math.log1p((nb - 1) * c)
    s = 0.0
    comp = 0.0
    for j in range(nb):
        i = _at(bounds[j], bounds[j + 1])
        v = math.exp(math.log(y[i]) + lam * lr[i] - m)
        t = s + v
        comp += (s - t) + v if abs(s) >= abs(v) else (v - t) + s
        s = t
    return m + math.log(s + comp) - math.log1p((nb - 1) * c)


@njit(cache=True, error_model="numpy")
def _traceback(par, cnt, k, out):
    nb = cnt[k]
    i = k
    out[nb] = k
    for j in range(nb - 1, -1, -1):
        i = par[i]
        out[j] = i
    return nb


@njit(cache=True, error_model="numpy")
def _ratio(S, bounds, nb, c):
    total = S[_at(bounds[0], bounds[1])]
    for j in range(1, nb):
        total = total + S[_at(bounds[j], bounds[j + 1])]
    return total / (1.0 + (nb - 1) * c)


# ---------------------------------------------------------------------------------------------
# one SPR solve over a score table (``_fast.solve_scores``)
# ---------------------------------------------------------------------------------------------
@njit(cache=True, error_model="numpy")
def _solve_table(S, k, l, c, H, cnt, par, cand, bounds, hint, hint_nb, hint2, hint2_nb):  # noqa: C901
    """``(raw, nb)``; the partition's boundaries in ``bounds[: nb + 1]``.

    ``hint[: hint_nb + 1]`` and ``hint2[: hint2_nb + 1]`` (``nb`` 0: none) are partitions
    Dinkelbach starts from when their ratio is larger than the best two blocks' (a warm start:
    fewer passes, the same optimum)."""
    first = _start(k, l, c)
    bounds[0] = 0
    if first == _policy.START_SINGLE:
        bounds[1] = k
        return S[_at(0, k)], 1
    nb = 1
    bounds[1] = k
    if first == _policy.START_TWO_BLOCKS:  # best two blocks (first maximum; NaNs never win)
        best = S[_at(0, k)]
        bj = -1
        bv = -math.inf
        for t in range(1, k):
            v = (S[t * (t - 1) // 2] + S[k * (k - 1) // 2 + t]) / (1.0 + c)
            if v == v and v > bv:
                bv = v
                bj = t
        if bj > 0 and bv > best:
            bounds[1] = bj
            bounds[2] = k
            nb = 2
        if hint_nb > 1 and _ratio(S, hint, hint_nb, c) > _ratio(S, bounds, nb, c):
            nb = hint_nb
            for j in range(nb + 1):
                bounds[j] = hint[j]
        if hint2_nb > 1 and _ratio(S, hint2, hint2_nb, c) > _ratio(S, bounds, nb, c):
            nb = hint2_nb
            for j in range(nb + 1):
                bounds[j] = hint2[j]
    # Dinkelbach over the table (``_fast._dinkelbach_table``)
    if c == 0.0:
        table_pass(S, k, 0.0, H, cnt, par)
        nb = _traceback(par, cnt, k, bounds)
        raw = _ratio(S, bounds, nb, c)
    else:
        raw = _ratio(S, bounds, nb, c)
        passes = 0
        while passes < MAX_DINKELBACH_STEPS and not math.isinf(raw):
            table_pass(S, k, raw * c, H, cnt, par)
            passes += 1
            nc = _traceback(par, cnt, k, cand)
            r = _ratio(S, cand, nc, c)
            if not r >= raw:
                break
            improved = r > raw
            raw = r
            nb = nc
            for j in range(nc + 1):
                bounds[j] = cand[j]
            if not improved:
                break
    budget, _method = _settle(raw, nb, k, l, c)
    if budget > 0:
        F = np.full((budget + 1, k + 1), -math.inf)
        par2 = np.zeros((budget + 1, k + 1), dtype=np.int64)
        bb = np.zeros(budget + 1, dtype=np.int64)
        raw, nb = table_budget_dp(S, k, budget, c, F, par2, bb)
        for j in range(nb + 1):
            bounds[j] = bb[j]
    return raw, nb


# ---------------------------------------------------------------------------------------------
# a partition's own curve (``divergences.chernoff_curve`` for positive masses)
# ---------------------------------------------------------------------------------------------
@njit(cache=True, error_model="numpy")
def _slope(lam, y, d, lyb, lr, idx, nb, centred):
    """(a positive multiple of S'(lam), the same multiple of S''(lam)) of the partition's sum
    (``divergences._curve_slope``; S is convex, the first is increasing in lam)."""
    s = 0.0
    comp = 0.0
    s2 = 0.0
    m = 0.0
    if not centred:
        m = -math.inf
        for j in range(nb):
            t = lyb[j] + lam * lr[idx[j]]
            if t > m:
                m = t
    for j in range(nb):
        i = idx[j]
        if centred:
            wv = y[i] * math.exp(lam * lr[i])
            v = wv * lr[i] - d[i]
        else:
            wv = math.exp(lyb[j] + lam * lr[i] - m)
            v = wv * lr[i]
        s2 += wv * lr[i] * lr[i]
        t = s + v
        comp += (s - t) + v if abs(s) >= abs(v) else (v - t) + s
        s = t
    return s + comp, s2


@njit(cache=True, error_model="numpy")
def _slope_root(y, d, ly, lr, idx, nb, centred, s0, s1):
    """The root in (0, 1) of the increasing slope (``s0 < 0 < s1`` at the ends): Newton steps
    inside a shrinking bracket (a bisection where a step leaves it), until the bracket or the
    step is below _LAMBDA_XTOL (``brentq``'s ``xtol`` in ``divergences.chernoff_curve``)."""
    lo, hi = 0.0, 1.0
    lam = s0 / (s0 - s1)  # the secant of the two ends
    for _it in range(200):
        sl, dsl = _slope(lam, y, d, ly, lr, idx, nb, centred)
        if sl < 0.0:
            lo = lam
        elif sl > 0.0:
            hi = lam
        else:
            return lam
        if hi - lo <= _LAMBDA_XTOL:
            return 0.5 * (lo + hi)
        new = lam - sl / dsl if dsl > 0.0 else 0.5 * (lo + hi)
        if not lo < new < hi:
            new = 0.5 * (lo + hi)
        if abs(new - lam) <= 0.25 * _LAMBDA_XTOL:
            return new
        lam = new
    return lam


@njit(cache=True, error_model="numpy")
def _curve(x, y, d, lr, bounds, nb, c, lf, idx):
    """(value, lambda) of the partition's curve, maximised (positive masses)."""
    amax = 0.0
    for j in range(nb):
        idx[j] = _at(bounds[j], bounds[j + 1])
        if abs(lr[idx[j]]) > amax:
            amax = abs(lr[idx[j]])
    centred = amax < _CENTRED_SLOPE_MAX
    ly = np.empty(nb)  # log y of the partition's blocks
    if not centred:
        for j in range(nb):
            ly[j] = math.log(y[idx[j]])
    s0 = _slope(0.0, y, d, ly, lr, idx, nb, centred)[0]
    if s0 >= 0.0:
        return 0.0, 0.0
    s1 = _slope(1.0, y, d, ly, lr, idx, nb, centred)[0]
    if s1 <= 0.0:
        return 0.0, 1.0
    lam = _slope_root(y, d, ly, lr, idx, nb, centred, s0, s1)
    total = 1.0 + (nb - 1) * c
    # (1 - lam) D_lam by the accurate Renyi forms (``divergences.renyi_value``)
    near = 0.0
    comp = 0.0
    for j in range(nb):
        i = idx[j]
        v = perspective(CODE_POWER_DOWN, lam, x[i], y[i], d[i], lf)
        t = near + v
        comp += (near - t) + v if abs(near) >= abs(v) else (v - t) + near
        near = t
    near = (near + comp) / total
    if near <= RENYI_NEAR_MAX:
        log_s = math.log1p(-near)
    else:
        log_s = _log_sum(y, lr, bounds, nb, lam, c)  # (log1p((s-1)c) = log(total))
    value = log_s / (lam - 1.0)
    if value < 0.0:
        value = 0.0
    return (1.0 - lam) * value, lam


# ---------------------------------------------------------------------------------------------
# the branch and bound of one cell
# ---------------------------------------------------------------------------------------------
@njit(cache=True, error_model="numpy")
def _chords_bound(a, b, ga, gb, t_ab, t_ba):
    """``chernoff._chords_bound``."""
    m = max(ga, gb)
    if math.isinf(m):
        return math.inf, 0.5 * (a + b)
    sa, sb = math.exp(ga - m), math.exp(gb - m)
    a0, a1 = sa, sa * t_ab
    b0, b1 = sb * t_ba, sb
    low, where = max(a0, b0), a
    v1 = max(a1, b1)
    if v1 < low:
        low, where = v1, b
    den = (a0 - a1) - (b0 - b1)
    if den != 0.0:
        s = (a0 - b0) / den
        if 0.0 < s < 1.0:
            v = a0 + s * (a1 - a0)
            if v < low:
                low, where = v, a + s * (b - a)
    if not low > 0.0:
        return math.inf, where
    return -(math.log(low) + m), where


@njit(cache=True, error_model="numpy")
def _block_terms(out, y, lr, L, n, lam, K, sign):
    """``out[i] = sign * x^lam y^(1-lam) e^-K`` of every block, as y e^(lam log(x/y) - K) (one
    exp; log y + lam log(x/y) - K in one exp where that exponent could overflow)."""
    if L + abs(K) <= _EXP_SAFE:
        for i in range(n):
            out[i] = sign * (y[i] * math.exp(lam * lr[i] - K))
    else:
        for i in range(n):
            out[i] = sign * math.exp(math.log(y[i]) + lam * lr[i] - K)


@njit(cache=True, error_model="numpy")
def _tangent_table(S, x, y, lr, L, n, s0, s1, K, pid, erow_of, erows, erow_K, nrows):
    """The scores of the tangent at s0 of every block's S, taken at s1, in units of G(s0) = e^K
    (``_Search.tangent_bound``): from the point's kept terms when there are; returns nrows."""
    r = erow_of[pid]
    if r < 0 and nrows < erows.shape[0]:
        r = nrows
        nrows += 1
        erow_of[pid] = r
        erow_K[r] = K
        if s0 == 0.0 or s0 == 1.0:  # x^0 y^1 = y, x^1 y^0 = x: one exp for the scale
            f = math.exp(-K)
            base = y if s0 == 0.0 else x
            for i in range(n):
                erows[r, i] = base[i] * f
        else:
            _block_terms(erows[r], y, lr, L, n, s0, K, 1.0)
    dl = s1 - s0
    if r >= 0 and abs(erow_K[r] - K) <= _EROWS_RESCALE_MAX:
        f = math.exp(erow_K[r] - K)
        row = erows[r]
        for i in range(n):
            wv = row[i] * f if f != 1.0 else row[i]
            S[i] = -wv * (1.0 + dl * lr[i]) if wv > 0.0 else 0.0
    else:
        _block_terms(S, y, lr, L, n, s0, K, 1.0)
        for i in range(n):
            wv = S[i]
            S[i] = -wv * (1.0 + dl * lr[i]) if wv > 0.0 else 0.0
    return nrows


@njit(cache=True, error_model="numpy")
def _search(x, y, d, lr, k, l, c, lf, L, centred, consts, bounds_out, ws, iws, part, erows):  # noqa: C901
    """``(value, lam, upper_bound, nb, solves, gap_met)`` of one cell (``_Search.run(0.5)``);
    ``ws``, ``iws``, ``part`` and ``erows`` are the workspace of :func:`_workspace`."""
    gap_target, max_splits, round_units, min_width, near_best, safe_fraction, rescale_gap = (
        consts[0],
        int(consts[1]),
        consts[2],
        consts[3],
        consts[4],
        consts[5],
        consts[6],
    )
    max_rescales = int(consts[7])
    u = 2.0**-53
    n = k * (k + 1) // 2
    S, H, pts_lam, pts_g, tan_a, tan_b, tan_v, erow_K = ws
    cnt, par, cand, bnd, idx, pts_id, part_nb, erow_of, seen_nb = iws
    seen = part[_POINTS_CAP:]
    nrows = 0
    npts = 0
    ntan = 0
    nseen = 0
    best_val = -math.inf
    best_lam = 0.5
    best_nb = 1
    bounds_out[0] = 0
    bounds_out[1] = k
    solves = 0
    one = np.empty(2, dtype=np.int64)
    one[0] = 0
    one[1] = k
    tt = np.empty(2)
    todo = np.empty(3)
    todo[0], todo[1], todo[2] = 0.0, 1.0, 0.5
    splits = 0
    phase = 0  # 0: the three start points; then one split point per round
    while True:
        # ---- the points of this round: the start points or the split, then Newton steps
        nfirst = 3 if phase == 0 else 1
        newton = 0
        q = 0
        while True:
            if q < nfirst:
                lam = todo[q]
                q += 1
            else:
                # Newton: the incumbent's maximiser, unless it is (next to) a known point
                if newton >= 8:
                    break
                lam = best_lam
                known = False
                for i in range(npts):
                    if pts_lam[i] == lam or abs(lam - pts_lam[i]) < min_width:
                        known = True
                        break
                if known:
                    break
                newton += 1
            if npts >= _POINTS_CAP:
                return best_val, best_lam, math.inf, best_nb, solves, False
            pid = npts  # the point's id: its row in part, erow_of
            erow_of[pid] = -1
            # ---- evaluate(lam)
            if (lam == 0.0 or lam == 1.0) and c > 0.0:
                bnd[0] = 0
                bnd[1] = k
                nb = 1
            elif centred and 0.0 < lam < 1.0:
                for i in range(n):
                    S[i] = perspective(CODE_POWER_DOWN, lam, x[i], y[i], d[i], lf)
                _raw, nb = _solve_table(S, k, l, c, H, cnt, par, cand, bnd, bounds_out, best_nb, bnd, 0)
                solves += 1
            else:  # min over partitions of S(lam) on the scaled log-domain scores
                K0 = _log_sum(y, lr, one, 1, lam, c)
                bnd[0] = 0
                bnd[1] = k
                nb = 1
                for _r in range(max_rescales):
                    _block_terms(S, y, lr, L, n, lam, K0, -1.0)
                    _raw, nb = _solve_table(S, k, l, c, H, cnt, par, cand, bnd, bounds_out, best_nb, bnd, 0)
                    solves += 1
                    log_s = _log_sum(y, lr, bnd, nb, lam, c)
                    if not log_s < K0 - rescale_gap or math.isinf(log_s):
                        break
                    K0 = log_s
                if nrows < erows.shape[0]:  # keep the terms for the point's tangents
                    erow_of[pid] = nrows
                    erow_K[nrows] = K0
                    for i in range(n):
                        erows[nrows, i] = -S[i]
                    nrows += 1
            g = _log_sum(y, lr, bnd, nb, lam, c)
            part_nb[pid] = nb
            for j in range(nb + 1):
                part[pid, j] = bnd[j]
            pos = npts  # insert, keeping the points sorted
            while pos > 0 and pts_lam[pos - 1] > lam:
                pts_lam[pos] = pts_lam[pos - 1]
                pts_g[pos] = pts_g[pos - 1]
                pts_id[pos] = pts_id[pos - 1]
                pos -= 1
            pts_lam[pos] = lam
            pts_g[pos] = g
            pts_id[pos] = pid
            npts += 1
            # ---- meet the partition: its curve maximised once
            met = False
            for r in range(min(nseen, _SEEN_CAP)):
                if seen_nb[r] == nb:
                    same = True
                    for j in range(nb + 1):
                        if seen[r, j] != bnd[j]:
                            same = False
                            break
                    if same:
                        met = True
                        break
            if not met:
                r = nseen % _SEEN_CAP
                seen_nb[r] = nb
                for j in range(nb + 1):
                    seen[r, j] = bnd[j]
                nseen += 1
                v, lm = _curve(x, y, d, lr, bnd, nb, c, lf, idx)
                if v > best_val:
                    best_val = v
                    best_lam = lm
                    best_nb = nb
                    for j in range(nb + 1):
                        bounds_out[j] = bnd[j]
        phase = 1
        # ---- bounds of every interval
        scale = max(1.0, best_val)
        target = gap_target * scale
        need = best_val + target
        top = best_val
        open_ub = -math.inf
        open_x = 0.5
        for iv in range(npts - 1):
            a, b = pts_lam[iv], pts_lam[iv + 1]
            ga, gb = pts_g[iv], pts_g[iv + 1]
            Ha = -ga if ga < 0.0 else 0.0
            Hb = -gb if gb < 0.0 else 0.0
            w = b - a
            margin = round_units * u * (k + 2) * (1.0 + L * w) * scale
            ub = 0.5 * (Ha + Hb) + 0.5 * L * w
            split = 0.5 * (a + b) + (Hb - Ha) / (2.0 * L) if L > 0.0 else 0.5 * (a + b)
            for exact in (False, True):
                if not (ub + margin > need and math.isfinite(Ha) and math.isfinite(Hb)):
                    break
                for side in range(2):
                    s0, s1 = (a, b) if side == 0 else (b, a)
                    K = ga if side == 0 else gb
                    pid = pts_id[iv] if side == 0 else pts_id[iv + 1]
                    oid = pts_id[iv + 1] if side == 0 else pts_id[iv]
                    val = math.nan
                    farv = math.nan
                    fard = math.inf
                    for i in range(ntan):
                        if tan_a[i] == s0:
                            if tan_b[i] == s1:
                                val = tan_v[i]
                                break
                            dt = tan_b[i] - s0
                            if dt * (s1 - s0) > 0 and abs(dt) > abs(s1 - s0) and abs(dt) < fard:
                                fard = abs(dt)
                                farv = 1.0 + (s1 - s0) / dt * (tan_v[i] - 1.0)
                    if val != val:
                        if not exact and farv == farv:
                            val = farv  # chord of a wider tangent: no solve, not cached
                        else:
                            if math.isinf(K):
                                val = 0.0
                            else:
                                nrows = _tangent_table(
                                    S, x, y, lr, L, n, s0, s1, K, pid, erow_of, erows, erow_K, nrows
                                )
                                raw, _nb = _solve_table(
                                    S,
                                    k,
                                    l,
                                    c,
                                    H,
                                    cnt,
                                    par,
                                    cand,
                                    bnd,
                                    part[pid],
                                    part_nb[pid],
                                    part[oid],
                                    part_nb[oid],
                                )
                                solves += 1
                                val = -raw
                            if ntan >= tan_a.shape[0]:
                                return best_val, best_lam, math.inf, best_nb, solves, False
                            tan_a[ntan] = s0
                            tan_b[ntan] = s1
                            tan_v[ntan] = val
                            ntan += 1
                    tt[side] = val
                ub_t, xt = _chords_bound(a, b, -Ha, -Hb, tt[0], tt[1])
                if ub_t < ub:
                    ub = ub_t
                    split = xt
            lo_s, hi_s = a + safe_fraction * w, b - safe_fraction * w
            split = min(max(split, lo_s), hi_s) if math.isfinite(split) else 0.5 * (a + b)
            ubm = max(ub, Ha, Hb) + margin
            if ubm > top:
                top = ubm
            if ubm > need and w > min_width:
                if b == best_lam:
                    split = max(split, b - near_best * w)
                elif a == best_lam:
                    split = min(split, a + near_best * w)
                if ubm > open_ub or (ubm == open_ub and split > open_x):
                    open_ub = ubm
                    open_x = split
        if open_ub == -math.inf or splits >= max_splits:
            ubv = top if top > best_val else best_val
            return best_val, best_lam, ubv, best_nb, solves, top - best_val <= 2.0 * target
        todo[0] = open_x
        splits += 1


@njit(cache=True, error_model="numpy")
def _workspace(k):
    """The scratch arrays of :func:`_search` for k reduced symbols (allocated once per pair)."""
    n = k * (k + 1) // 2
    ws = (
        np.empty(n),  # S: the score table
        np.empty(k + 1),  # H
        np.empty(_POINTS_CAP),  # pts_lam
        np.empty(_POINTS_CAP),  # pts_g
        np.empty(_TANGENTS_CAP),  # tan_a
        np.empty(_TANGENTS_CAP),  # tan_b
        np.empty(_TANGENTS_CAP),  # tan_v
        np.empty(_EROWS_MAX),  # erow_K
    )
    iws = (
        np.empty(k + 1, dtype=np.int64),  # cnt
        np.empty(k + 1, dtype=np.int64),  # par
        np.empty(k + 1, dtype=np.int64),  # cand
        np.empty(k + 1, dtype=np.int64),  # bnd
        np.empty(k, dtype=np.int64),  # idx
        np.empty(_POINTS_CAP, dtype=np.int64),  # pts_id
        np.empty(_POINTS_CAP, dtype=np.int64),  # part_nb
        np.empty(_POINTS_CAP, dtype=np.int64),  # erow_of
        np.empty(_SEEN_CAP, dtype=np.int64),  # seen_nb
    )
    part = np.empty((_POINTS_CAP + _SEEN_CAP, k + 1), dtype=np.int64)  # points' partitions, seen ring
    rows = max(2, min(_EROWS_MAX, _EROWS_WORDS // n))
    erows = np.empty((rows, n))
    return ws, iws, part, erows


@njit(cache=True, error_model="numpy", nogil=True)
def sweep_pair(dp, dq, dd, k, l, cs, As, lfs, consts, values, lams, ubs, nbs, bounds, solves, status):
    """Every eps of one reduced instance (block sums ``dp, dq, dd`` packed at i (i-1)/2 + t):
    row e of the outputs from ``(cs[e], As[e], lfs[e])`` (``_numerics.rescale``)."""
    n = k * (k + 1) // 2
    x = np.empty(n)
    y = np.empty(n)
    d = np.empty(n)
    lr = np.empty(n)
    ws, iws, part, erows = _workspace(k)
    for e in range(cs.shape[0]):
        c, A, lf = cs[e], As[e], lfs[e]
        positive = True
        L = 0.0
        for i in range(n):
            x[i] = c + A * dp[i]
            y[i] = c + A * dq[i]
            d[i] = A * dd[i]
            if not (x[i] > 0.0 and y[i] > 0.0):
                positive = False
                break
            # log(x / y): of the ratio where it is far from 1 (relative error <= ~3 u for
            # |x / y - 1| >= _RATIO_NEAR), else log1p(d / y) (``_kernels.log_ratio``)
            r = x[i] / y[i]
            if (r <= 1.0 - _RATIO_NEAR or r >= 1.0 + _RATIO_NEAR) and R_MIN < r < R_MAX:
                lr[i] = math.log(r)
            else:
                lr[i] = log_ratio(x[i], y[i], d[i])
            if abs(lr[i]) > L:
                L = abs(lr[i])
        if not positive:
            status[e] = STATUS_FALLBACK
            continue
        if k == 1 or L == 0.0:  # every mechanism has C = 0
            values[e] = 0.0
            lams[e] = 0.5
            ubs[e] = 0.0
            nbs[e] = 1
            solves[e] = 0
            status[e] = STATUS_DONE
            bounds[e, 0] = 0
            bounds[e, 1] = k
            continue
        v, lm, ub, nb, ns, ok = _search(
            x,
            y,
            d,
            lr,
            k,
            min(max(l, 1), k),
            c,
            lf,
            L,
            L < consts[8],
            consts,
            bounds[e],
            ws,
            iws,
            part,
            erows,
        )
        values[e] = v
        lams[e] = lm
        ubs[e] = ub
        nbs[e] = nb
        solves[e] = ns
        status[e] = STATUS_DONE if ok else STATUS_GAP


def threads() -> int:
    """Worker threads of a sweep: numba's thread count (``NUMBA_NUM_THREADS``, also when a
    worker process sets it after numba was imported)."""
    env = os.environ.get("NUMBA_NUM_THREADS", "")
    n = int(env) if env.isdigit() else int(numba.config.NUMBA_NUM_THREADS)  # type: ignore[attr-defined]  # set at run time
    return max(1, n)
