r"""Chernoff-information-optimal eps-LDP mechanisms, with a certificate.

The Chernoff information of the output distributions of a channel Q,

.. math:: C(M_0, M_1) = \max_{\lambda\in[0,1]} h_Q(\lambda),\qquad
   h_Q(\lambda) = -\log \sum_y M_0(y)^\lambda M_1(y)^{1-\lambda},

is not an f-divergence, but for a fixed lambda maximising :math:`h_Q(\lambda)` over channels is
maximising the f-divergence with :math:`f_\lambda(t) = 1 - t^\lambda` (the power divergence of
order lambda < 1 that ``renyi(lambda)`` solves), so the SPR dynamic program gives
:math:`H(\lambda) = \max_Q h_Q(\lambda)` exactly, and

.. math:: C^* = \max_Q C(M_0, M_1) = \max_{\lambda} H(\lambda)

(the two maxima commute), attained by the SPR mechanism optimal at the maximising lambda.

**Branch and bound over lambda.**  ``H`` is the maximum over partitions of concave curves,
not concave itself.  The search keeps points :math:`\lambda_i` where H is known exactly (one
SPR solve each), and for every partition it meets maximises that partition's own concave curve
exactly (:func:`ldpopt.divergences.chernoff_curve`): the best of these is the value, and its
maximiser is evaluated next (a Newton-like step: a partition optimal at its own maximiser
is a local optimum of H).  Every interval :math:`[a, b]` between points carries an upper
bound on H, the smaller of

* Piyavskii-Shubert: every curve's slope is a weighted mean of the output log-ratios
  :math:`\log(M_0(y)/M_1(y))`, which lie in :math:`[-L, L]` with
  :math:`L \le \varepsilon` (the largest |log-ratio| of any block), so
  :math:`H \le (H(a) + H(b))/2 + L (b - a)/2` on the interval;
* tangents of the sum: :math:`S_\pi(\lambda) = e^{-h_\pi(\lambda)}` is convex in lambda for every
  partition, so :math:`S_\pi(\lambda) \ge S_\pi(a) + (\lambda - a) S_\pi'(a)`, and
  :math:`T_a(\lambda) = \min_\pi [S_\pi(a) + (\lambda - a) S_\pi'(a)]` is one more SPR solve (the
  scores are additive over blocks) and concave in lambda: on [a, b] it is above its chord,
  and with the chord from b, :math:`\min_\pi S_\pi \ge \max(\text{chord}_a, \text{chord}_b)`.
  This bound is second order in the interval width, and exact where one partition is optimal
  at both ends with zero slope.

The interval of the largest bound is split until the largest bound is within
:data:`GAP_TARGET` ``* max(1, value)`` of the value; the largest bound (plus a rounding
margin) is ``upper_bound``.  ``docs/chernoff.md`` has the measured solve counts.

Scores are kept in the log domain: block terms :math:`x^\lambda y^{1-\lambda}` are
``exp(log y + lambda log(x/y) - K)`` with K the log of the current optimum (no under- or
overflow for eps up to 1e3 or masses near 1e-300), and for small log-ratios the partition at a
point is chosen on the centred power scores of ``renyi(lambda)`` (relative accuracy where
C ~ eps^2).  Memory is O(k^2): every block's sums are tabulated once per instance.

The search runs compiled (:mod:`ldpopt.spr._chernoff_kernels`, step for step this one) where
every block has positive output masses; :class:`_Search` answers the other cells and
``method="dp"`` (over the readable program).
"""

from __future__ import annotations

import math
import types
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from ldpopt._numerics import rescale
from ldpopt.divergences import (
    CODE_POWER_DOWN,
    ChernoffInformation,
    chernoff_curve,
    get_divergence,
    log_ratio_array,
    logsumexp,
    perspective_array,
)
from ldpopt.errors import LdpoptWarning
from ldpopt.spr.reduction import _Prefix
from ldpopt.spr.reference import _dp_readable

__all__ = ["ChernoffSolution", "solve_reduced", "sweep_cells", "GAP_TARGET", "MAX_SPLITS"]

#: the search stops when the largest interval bound is within GAP_TARGET * max(1, value) of the
#: value; half the promised 1e-9, leaving room for the rounding margin added to the bound
GAP_TARGET = 5e-10
#: at most this many interval splits (each one SPR solve and at most four tangent solves);
#: never reached in the tests and benchmarks (``docs/chernoff.md``), a guard against a stall
MAX_SPLITS = 400
#: rounding margin of a bound, in units of u = 2^-53 per block of the table: the SPR sums of
#: at most k terms (each ~1 ulp from exp/log of arguments below ~1e3 in magnitude, times the
#: condition 1 + |Delta| L <= 1 + L of a tangent score) are accurate to ~k (1 + L) u relative,
#: and -log of a relative error r is an absolute error of ~r; 64 covers the constant factors
_ROUND_UNITS = 64.0
_U = 2.0**-53
#: every point's optimum is re-solved on the scaled sum when the partition it found lies more
#: than this below the scale (its blocks may have underflowed; e^-600 is ~1e43 above the
#: smallest normal number), at most _MAX_RESCALES times (as ``solve._solve_power_far``)
_RESCALE_GAP = 600.0
_MAX_RESCALES = 8
#: all block log-ratios below this in magnitude: the partition at a point is chosen on the
#: centred power scores (the plain sum S ~ 1 - O(eps^2) would round the choice away)
_CENTRED_MAX = 1.0
#: points closer than this in lambda are not added (the curves are L-Lipschitz: at this width
#: an interval's Piyavskii bound exceeds its end values by < L * 1e-13)
_MIN_WIDTH = 1e-13
#: an interval ending at the incumbent's maximiser is split this fraction of its width from it
_NEAR_BEST = 0.02
#: a split point is kept this fraction of the interval away from its ends
_SAFE_FRACTION = 1.0 / 16.0


@dataclass(frozen=True)
class ChernoffSolution:
    """The certified optimum of a reduced instance (:func:`solve_reduced`).

    ``value`` is the Chernoff information of the SPR mechanism of ``cuts`` at its own maximiser
    ``lam``; ``upper_bound`` bounds every eps-LDP mechanism's value; ``solves`` counts the SPR
    solves (points and tangents); ``gap_met`` is False when the split budget ran out first.
    """

    value: float
    lam: float
    upper_bound: float
    cuts: list
    solves: int
    gap_met: bool = True


class _BlockSums:
    """The eps-independent part of every block [t, i) of the reduced alphabet, packed at
    i (i - 1) / 2 + t: its sums dP, dQ and dP - dQ (computed once per pair in a sweep)."""

    def __init__(self, p: np.ndarray, q: np.ndarray):
        k = p.shape[0]
        self.k = k
        ends = np.repeat(np.arange(1, k + 1), np.arange(1, k + 1))
        starts = np.arange(ends.shape[0]) - ends * (ends - 1) // 2
        self.dp, self.dq, self.dd = _Prefix(p, q).sums(starts, ends)


class _Blocks:
    """Every block at one eps: its output masses x = c + A dP, y = c + A dQ, d = A (dP - dQ),
    log y and log(x / y)."""

    def __init__(self, sums: _BlockSums, eps: float):
        self.k = sums.k
        self.eps = eps
        self.c, A, self.lf = rescale(eps)
        self.x = self.c + A * sums.dp
        self.y = self.c + A * sums.dq
        self.d = A * sums.dd
        if bool(np.all(self.x > 0)) and bool(np.all(self.y > 0)):  # (every finite eps without underflow)
            active = np.ones(self.x.shape, dtype=bool)
            self.ly = np.log(self.y)
            lr = log_ratio_array(self.x, self.y, self.d)
        else:
            with np.errstate(all="ignore"):
                lx = np.where(self.x > 0, np.log(np.where(self.x > 0, self.x, 1.0)), self.lf)
                ly = np.where(self.y > 0, np.log(np.where(self.y > 0, self.y, 1.0)), self.lf)
            active = np.isfinite(lx) & np.isfinite(ly)
            both = (self.x > 0) & (self.y > 0)
            lr = np.where(
                both,
                log_ratio_array(np.where(both, self.x, 1.0), np.where(both, self.y, 1.0), self.d),
                np.where(active, lx - ly, 0.0),
            )
            self.ly = np.where(active, ly, -np.inf)
        self.lr = lr
        #: Lipschitz constant of every partition's curve: its slope is a weighted mean of lr
        self.L = float(np.max(np.abs(lr[active]))) if active.any() else 0.0
        self.centred = bool(active.all()) and self.L < _CENTRED_MAX

    def index(self, cuts) -> np.ndarray:
        return np.array([b * (b - 1) // 2 + a for a, b in cuts], dtype=np.int64)

    def log_terms(self, lam: float) -> np.ndarray:
        """log(x^lam y^(1-lam)) of every block (-inf for an inactive one)."""
        with np.errstate(invalid="ignore"):
            return self.ly + lam * self.lr

    def log_sum(self, cuts, lam: float) -> float:
        """log S of a partition at lam: log-sum-exp of its blocks minus log(1 + (s - 1) c)."""
        j = self.index(cuts)
        with np.errstate(invalid="ignore"):
            terms = self.ly[j] + lam * self.lr[j]
        return logsumexp(terms) - math.log1p((len(cuts) - 1) * self.c)

    def curve(self, cuts) -> ChernoffInformation:
        """The partition's own curve, maximised exactly."""
        j = self.index(cuts)
        total = 1.0 + (len(cuts) - 1) * self.c
        return chernoff_curve(self.x[j], self.y[j], self.d[j], total, self.lf)


class _Search:
    """The branch and bound over lambda of one reduced instance with budget l."""

    def __init__(self, blocks: _Blocks, l: int, fast: bool):
        self.B = blocks
        self.l = l
        self.solves = 0
        self._solve_table = _table_solver(blocks, l, fast)
        self.points: dict[float, tuple[float, list]] = {}  # lam -> (log G(lam), its partition)
        self.curves: dict[tuple, ChernoffInformation] = {}
        self.best: tuple[float, float, list] = (-math.inf, 0.5, [(0, blocks.k)])
        self.tangent: dict[tuple[float, float], float] = {}  # (a, b) -> T_a(b), scaled by G(a)

    # -- SPR solves -----------------------------------------------------------------------------
    def _solve(self, table: np.ndarray):
        self.solves += 1
        return self._solve_table(table)

    def evaluate(self, lam: float) -> None:
        """H(lam) exactly: the SPR optimum at lam, and its partition's own curve maximised."""
        B = self.B
        if (lam == 0.0 or lam == 1.0) and B.c > 0.0:
            cuts = [(0, B.k)]  # every partition has S = 1 at the ends (all masses positive)
        elif B.centred and 0.0 < lam < 1.0:
            cuts = self._solve(perspective_array(CODE_POWER_DOWN, lam, B.x, B.y, B.d, B.lf))[1]
        else:
            cuts = self._solve_far(lam)
        self.points[lam] = (B.log_sum(cuts, lam), cuts)
        self._meet(cuts)

    def _solve_far(self, lam: float) -> list:
        """min over partitions of S(lam) on the scaled log-domain scores."""
        B = self.B
        L = B.log_terms(lam)
        cuts = [(0, B.k)]
        K = B.log_sum(cuts, lam)
        if math.isinf(K):
            K = float(np.max(L))
            if math.isinf(K):
                return cuts  # every block inactive: S = 0 for every partition
        for _ in range(_MAX_RESCALES):
            with np.errstate(over="ignore", under="ignore"):
                table = -np.exp(L - K)
            cuts = self._solve(table)[1]
            log_s = B.log_sum(cuts, lam)
            if not log_s < K - _RESCALE_GAP or math.isinf(log_s):
                break  # (log S = -inf: S = 0, the least possible)
            K = log_s
        return cuts

    def tangent_bound(self, a: float, b: float, exact: bool = True) -> float:
        r""":math:`T_a(b) / G(a)`: min over partitions of the tangent at a of S, taken at b.

        Not ``exact``: a lower bound without a solve when T_a is known further out on the same
        side (T_a is concave and equals 1 at a, so it lies above that chord); else the solve.
        """
        key = (a, b)
        if key in self.tangent:
            return self.tangent[key]
        if not exact:
            far = [
                t for (s, t) in self.tangent if s == a and (t - a) * (b - a) > 0 and abs(t - a) > abs(b - a)
            ]
            if far:
                t = min(far, key=lambda x: abs(x - a))
                return 1.0 + (b - a) / (t - a) * (self.tangent[(a, t)] - 1.0)
        B = self.B
        K = self.points[a][0]
        if math.isinf(K):
            self.tangent[key] = 0.0
        else:
            with np.errstate(over="ignore", under="ignore", invalid="ignore"):
                w = np.exp(B.log_terms(a) - K)
                table = np.where(w > 0, -w * (1.0 + (b - a) * B.lr), 0.0)
            self.tangent[key] = -self._solve(table)[0]
        return self.tangent[key]

    def _meet(self, cuts) -> None:
        key = tuple(cuts)
        if key in self.curves:
            return
        cur = self.B.curve(cuts)
        self.curves[key] = cur
        if cur.value > self.best[0]:
            self.best = (cur.value, cur.lam, list(cuts))

    # -- bounds ---------------------------------------------------------------------------------
    def H(self, lam: float) -> float:
        g = self.points[lam][0]
        return -g if g < 0.0 else 0.0

    def margin(self, width: float) -> float:
        return _ROUND_UNITS * _U * (self.B.k + 2) * (1.0 + self.B.L * width) * max(1.0, self.best[0])

    def interval_bound(self, a: float, b: float, need: float) -> tuple[float, float]:
        """(upper bound of H on [a, b], where to split); tangents only when Piyavskii exceeds ``need``."""
        Ha, Hb, w, L = self.H(a), self.H(b), b - a, self.B.L
        lip = 0.5 * (Ha + Hb) + 0.5 * L * w
        split = 0.5 * (a + b) + (Hb - Ha) / (2.0 * L) if L > 0.0 else 0.5 * (a + b)
        ub = lip
        for exact in (False, True):  # chords from wider tangents first (no solve), then exact
            if not (ub + self.margin(w) > need and math.isfinite(Ha) and math.isfinite(Hb)):
                break
            t_ab = self.tangent_bound(a, b, exact)  # chord from (a, 1) to (b, t_ab), units of G(a)
            t_ba = self.tangent_bound(b, a, exact)  # chord from (a, t_ba) to (b, 1), units of G(b)
            ub_t, x = _chords_bound(a, b, -Ha, -Hb, t_ab, t_ba)
            if ub_t < ub:
                ub, split = ub_t, x
        lo, hi = a + _SAFE_FRACTION * w, b - _SAFE_FRACTION * w
        split = min(max(split, lo), hi) if math.isfinite(split) else 0.5 * (a + b)
        return max(ub, Ha, Hb) + self.margin(w), split

    # -- the search -----------------------------------------------------------------------------
    def run(self, lam0: float = 0.5) -> ChernoffSolution:
        for lam in (0.0, 1.0, lam0):
            self.evaluate(lam)
        self._newton()
        splits = 0
        while True:
            if math.isinf(self.best[0]):  # disjoint output supports (eps = inf): nothing beats inf
                value, lam, cuts = self.best
                return ChernoffSolution(value, lam, value, cuts, self.solves)
            lams = sorted(self.points)
            target = GAP_TARGET * max(1.0, self.best[0])
            need = self.best[0] + target
            bounds = [
                (*self.interval_bound(a, b, need), b - a) for a, b in zip(lams[:-1], lams[1:], strict=True)
            ]
            top = max([self.best[0]] + [ub for ub, _, _ in bounds])
            open_ = [
                (ub, self._toward_best(a, b, x))
                for (ub, x, w), a, b in zip(bounds, lams[:-1], lams[1:], strict=True)
                if ub > need and w > _MIN_WIDTH
            ]
            if not open_ or splits >= MAX_SPLITS:
                value, lam, cuts = self.best
                gap_met = top - value <= 2.0 * target
                return ChernoffSolution(value, lam, max(top, value), cuts, self.solves, gap_met)
            # split the interval of the largest bound (the tangents of the others are cached)
            self.evaluate(max(open_)[1])
            self._newton()
            splits += 1

    def _toward_best(self, a: float, b: float, x: float) -> float:
        """The split point of [a, b]: next to the incumbent's maximiser when it is an end (the
        bounds there are first order in the distance to it), else ``x``."""
        lam, f = self.best[1], _NEAR_BEST
        if b == lam:
            return max(x, b - f * (b - a))
        if a == lam:
            return min(x, a + f * (b - a))
        return x

    def _newton(self) -> None:
        """Evaluate H at the maximiser of the best partition's curve until that point is known."""
        for _ in range(8):
            lam = self.best[1]
            if lam in self.points or any(abs(lam - t) < _MIN_WIDTH for t in self.points):
                return
            self.evaluate(lam)


def _chords_bound(a, b, ga, gb, t_ab, t_ba) -> tuple[float, float]:
    r"""Upper bound of H on [a, b] from the two tangent chords, and the lambda where it is taken.

    ``ga``, ``gb`` = log G at the ends; chord_a runs from (a, G(a)) to (b, t_ab G(a)) and
    chord_b from (a, t_ba G(b)) to (b, G(b)); min S >= max(chord_a, chord_b), whose minimum over
    [a, b] is at an end or where they cross.  Returns (-log of that minimum, its lambda).
    """
    m = max(ga, gb)
    if math.isinf(m):
        return math.inf, 0.5 * (a + b)
    sa, sb = math.exp(ga - m), math.exp(gb - m)
    a0, a1 = sa, sa * t_ab  # chord_a at a and b
    b0, b1 = sb * t_ba, sb  # chord_b at a and b
    cands = [(max(a0, b0), a), (max(a1, b1), b)]
    den = (a0 - a1) - (b0 - b1)
    if den != 0.0:
        s = (a0 - b0) / den  # fraction of the way from a where the chords cross
        if 0.0 < s < 1.0:
            cands.append((a0 + s * (a1 - a0), a + s * (b - a)))
    low, where = min(cands)
    if not low > 0.0:
        return math.inf, where
    return -(math.log(low) + m), where


def _compiled() -> types.ModuleType:
    """The compiled solvers, imported on first use (they import numba; see ``solve._compiled``)."""
    from ldpopt.spr import _fast

    return _fast


def _table_solver(blocks: _Blocks, l: int, fast: bool):
    """table -> (raw, cuts): the compiled table path or the readable program over a score table."""
    k, c = blocks.k, blocks.c
    if fast:
        solve_scores = _compiled().solve_scores
        return lambda table: solve_scores(table, k, l, c)
    # the readable program reads only the table (and p, q for their length)
    dummy = np.full(k, 1.0 / k)
    hellinger = get_divergence("hellinger")
    return lambda table: _dp_readable(dummy, dummy, blocks.eps, hellinger, l, table)


def solve_reduced(
    p: np.ndarray, q: np.ndarray, eps: float, l: int, fast: bool = True, compiled: bool = True
) -> ChernoffSolution:
    """The certified Chernoff optimum over SPR mechanisms of a reduced instance with at most
    ``l`` blocks (``fast``: the compiled search where ``compiled``, else the Python search over
    the compiled table solver; not ``fast``: the Python search over the readable program)."""
    p = np.ascontiguousarray(p, dtype=float)
    q = np.ascontiguousarray(q, dtype=float)
    return _solve(_BlockSums(p, q), float(eps), l, fast, compiled)


def _solve(sums: _BlockSums, eps: float, l: int, fast: bool, compiled: bool = True) -> ChernoffSolution:
    """:func:`solve_reduced` from the block sums: the compiled search (``fast`` and ``compiled``)
    where every block has positive output masses, else the Python search (``fast``: over the
    compiled table solver, else the readable program)."""
    if fast and compiled:
        sol = _compiled_cells(sums, np.array([eps]), l)[0]
        if sol is not None:
            return _warn_gap(sol)
    blocks = _Blocks(sums, eps)
    if blocks.k == 1 or blocks.L == 0.0 and bool(np.all(np.isfinite(blocks.ly))):
        # one symbol, or every block has x = y: every mechanism has C = 0
        return ChernoffSolution(0.0, 0.5, 0.0, [(0, blocks.k)], 0)
    sol = _Search(blocks, int(min(max(l, 1), blocks.k)), fast).run(0.5)
    return _warn_gap(sol)


def _warn_gap(sol: ChernoffSolution) -> ChernoffSolution:
    if not sol.gap_met:
        warnings.warn(
            f"Chernoff search stopped after {MAX_SPLITS} splits with gap "
            f"{sol.upper_bound - sol.value:.3g} (value {sol.value:.17g})",
            LdpoptWarning,
            stacklevel=4,
        )
    return sol


#: the search's constants, as the compiled search reads them
_CONSTS = np.array(
    [
        GAP_TARGET,
        MAX_SPLITS,
        _ROUND_UNITS,
        _MIN_WIDTH,
        _NEAR_BEST,
        _SAFE_FRACTION,
        _RESCALE_GAP,
        _MAX_RESCALES,
        _CENTRED_MAX,
    ]
)


def _chernoff_compiled() -> types.ModuleType:
    """The compiled search, imported on first use (it imports numba)."""
    from ldpopt.spr import _chernoff_kernels

    return _chernoff_kernels


def _rescaled(grid: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(c, A, log floor) of every eps of ``grid`` (``_numerics.rescale``), as arrays."""
    scal = [rescale(float(e)) for e in grid]
    return (np.array([x[0] for x in scal]), np.array([x[1] for x in scal]), np.array([x[2] for x in scal]))


def _run_compiled(sums: _BlockSums, scal: tuple, l: int):
    """The compiled search of one instance at every eps of ``scal`` (GIL released):
    ``(values, lams, upper_bounds, block counts, bounds, solves, status)`` per eps."""
    CK = _chernoff_compiled()
    E, k = scal[0].shape[0], sums.k
    values, lams, ubs = np.empty(E), np.empty(E), np.empty(E)
    nbs = np.zeros(E, dtype=np.int64)
    solves = np.zeros(E, dtype=np.int64)
    status = np.zeros(E, dtype=np.int64)
    bounds = np.zeros((E, k + 1), dtype=np.int64)
    cs, As, lfs = scal
    CK.sweep_pair(
        sums.dp,
        sums.dq,
        sums.dd,
        k,
        int(l),
        cs,
        As,
        lfs,
        _CONSTS,
        values,
        lams,
        ubs,
        nbs,
        bounds,
        solves,
        status,
    )
    return values, lams, ubs, nbs, bounds, solves, status


def _compiled_solution(out, e: int) -> ChernoffSolution | None:
    """Cell ``e`` of :func:`_run_compiled`'s output; ``None`` where some block has a zero output
    mass (the Python search answers those cells)."""
    CK = _chernoff_compiled()
    values, lams, ubs, nbs, bounds, solves, status = out
    if status[e] == CK.STATUS_FALLBACK:
        return None
    b = bounds[e, : nbs[e] + 1]
    cuts = [(int(b[j]), int(b[j + 1])) for j in range(int(nbs[e]))]
    ok = bool(status[e] == CK.STATUS_DONE)
    return ChernoffSolution(float(values[e]), float(lams[e]), float(ubs[e]), cuts, int(solves[e]), ok)


def _compiled_cells(sums: _BlockSums, grid: np.ndarray, l: int) -> list[ChernoffSolution | None]:
    """The compiled search of one instance at every eps of ``grid`` (see :func:`_compiled_solution`)."""
    out = _run_compiled(sums, _rescaled(grid), l)
    return [_compiled_solution(out, e) for e in range(grid.shape[0])]


def sweep_cells(reds, ls, grid: np.ndarray, keep_bounds: bool, advance=None):
    """``(values, num_outputs, cuts or None)`` of every pair x eps cell, as ``ldpopt.sweep`` lays
    them out (``advance(E)`` after each pair; the block sums of a pair are computed once, and
    pairs run in parallel threads: the compiled search releases the GIL).

    (Starting each search at the previous eps's maximiser was measured: it needs more solves,
    30 instead of 22 per optimum on the Figure-1b pairs, as the start and the maximiser are then
    two close points whose outer intervals are wide.)"""
    T, E = len(reds), grid.shape[0]
    values = np.empty((T, E))
    nb = np.empty((T, E), dtype=np.int64)
    cuts_all: list | None = [[None] * E for _ in range(T)] if keep_bounds else None
    scal = _rescaled(grid)
    CK = _chernoff_compiled()

    def run(t: int) -> int:
        r = reds[t]
        sums = _BlockSums(np.ascontiguousarray(r.p, dtype=float), np.ascontiguousarray(r.q, dtype=float))
        out = _run_compiled(sums, scal, int(ls[t]))
        values[t] = out[0]
        nb[t] = out[3]
        status = out[6]
        for e in range(E):
            if status[e] == CK.STATUS_DONE and cuts_all is None:
                continue
            sol = _compiled_solution(out, e)
            if sol is None:
                sol = _solve(sums, float(grid[e]), int(ls[t]), True, compiled=False)
                values[t, e] = sol.value
                nb[t, e] = len(sol.cuts)
            else:
                _warn_gap(sol)
            if cuts_all is not None:
                cuts_all[t][e] = sol.cuts
        return E

    n_threads = min(T, _chernoff_compiled().threads()) if T else 1
    if n_threads <= 1:
        for t in range(T):
            done = run(t)
            if advance is not None:
                advance(done)
    else:
        with ThreadPoolExecutor(max_workers=n_threads) as pool:
            for done in pool.map(run, range(T)):
                if advance is not None:
                    advance(done)
    return values, nb, cuts_all
