r"""Mechanism-specific shuffle accounting: clone pairs read off a channel, and explicit lower bounds.

**Upper bound (blanket / clone decomposition).**  Fix two inputs x, x' of the differing user and
write :math:`Q_x = Q(\cdot\mid x)`.  Every other user's report law contains a common part

.. math::  Q_z \ge p\,(Q_x + Q_{x'}) \quad\text{for every input } z,\qquad
           p = \min_z \min_y \frac{Q(y\mid z)}{Q(y\mid x) + Q(y\mid x')},

so each other user is, with probability 2p, a *clone* drawing from :math:`(Q_x + Q_{x'})/2`
(the rest is revealed to the adversary: post-processing).  The pair :math:`(Q_x, Q_{x'})` is a
post-processing K of binary randomized response at :math:`\varepsilon_{xx'} = \max_y
|\log Q(y\mid x)/Q(y\mid x')|`, and the same K maps a fair coin to :math:`(Q_x + Q_{x'})/2`; so
the shuffled reports are a post-processing of the clone pair of Feldman, McMillan and Talwar
with local level :math:`\varepsilon_{xx'}` and clone probability 2p
(:func:`ldpopt.deploy.shuffle.clone_delta`).  When :math:`Q_x` and :math:`Q_{x'}` agree exactly on a
set :math:`Y_0` of outputs (k-RR, SPR mechanisms), the differing user's report falls in
:math:`Y_0` with the same probability :math:`1 - w` and the same law under both inputs; joint
convexity of the hockey-stick divergence gives the bound :math:`w\,D_{e^\varepsilon}` of the clone
pair restricted to the other outputs (clone probability :math:`2p'`, p' computed with
:math:`Q_x, Q_{x'}` renormalised off :math:`Y_0`).  For k-RR this is the "stronger clones" pair
of the ``"rr"`` method.  Both hold for every dataset of the other users, so

.. math::  \delta(\varepsilon) \le \max_{x \ne x'} \min(\text{both pairs, the generic pair}).

**Lower bound.**  For explicit neighbouring datasets (all other users hold z; the differing user
holds x or x') and the post-processing "number of reports in S" (S a level set of
:math:`Q_x/Q_{x'}`), the two laws are :math:`\mathrm{Bin}(n-1, Q_z(S)) + \mathrm{Bern}(Q_x(S))`
and the same with :math:`Q_{x'}(S)`; :math:`P(T) - e^\varepsilon Q(T)` for any set T is a lower
bound on the true delta of these datasets, evaluated at upper sets of the count with binomial
tail functions and rounded down by the allowance :data:`~ldpopt.deploy.shuffle.CDF_REL_ERR`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = [
    "ClonePair",
    "LowerPair",
    "BinaryWorstCase",
    "clone_pairs",
    "lower_pairs",
    "lower_delta",
    "binary_worst_case",
    "binary_exact_delta",
    "SmallWorstCase",
    "small_worst_case",
    "small_exact_delta",
    "RATIO_SLACK",
]

#: relative slack on a pair's local level (raised) and clone probability (lowered): each is a
#: log, a ratio or a minimum of ratios of stored entries, a few roundings of relative size 2^-53;
#: 1e-12 covers them with a margin above 1000
RATIO_SLACK = 1e-12
#: relative error allowed for one term (a binomial pmf times a CDF difference: PMF_REL_ERR + CDF_REL_ERR
#: of the clone bound, 1e-9 + 1e-11, doubled)
TAIL_REL_ERR = 2e-9
#: relative error allowed on the lower bound's sum of non-negative terms (at most LOWER_MAX_TERMS
#: = 2^12 of them): summation errs by at most (12 + 2) u = 1.6e-15 relative (blocked/pairwise) and
#: each term's products add a few u; 1e-12 leaves a margin above 300
_LOWER_SUM_REL_ERR = 1e-12
#: absolute allowance for terms that underflow: each of at most 2^12 terms loses less than the
#: smallest normal float (2.2e-308) when it is subnormal, 9.1e-305 in all; 1e-300 leaves a margin of 1e4
_LOWER_UNDERFLOW = 1e-300
#: the lower bound sums at most this many values of the count M (the central ones): beyond
#: n ~ 10^8 the window of M is cut and the lower bound is a little weaker, never invalid
LOWER_MAX_TERMS = 4096
#: at most this many explicit datasets are tried for the lower bound
MAX_LOWER_CANDIDATES = 24


@dataclass(frozen=True)
class ClonePair:
    """A dominating clone pair: delta <= weight * clone_delta(eps, eps0, n, p_clone)."""

    eps0: float
    p_clone: float
    weight: float


@dataclass(frozen=True)
class LowerPair:
    """Explicit datasets: every other user holds z, the differing user x or x'.  Outputs are
    grouped into S1 (Q_x > Q_x'), S2 (Q_x < Q_x') and S0 (equal): ``rest`` = (Q_z(S1), Q_z(S2)),
    ``a`` = (Q_x(S1), Q_x(S2)), ``b`` = (Q_x'(S1), Q_x'(S2))."""

    rest: tuple[float, float]
    a: tuple[float, float]
    b: tuple[float, float]


def _columns(matrix: np.ndarray) -> np.ndarray:
    """The channel without its all-zero columns (outputs no input can produce)."""
    return matrix[:, matrix.max(axis=0) > 0.0]


def _pair_level(qx: np.ndarray, qy: np.ndarray) -> float:
    """max_y |log qx / qy|, raised by RATIO_SLACK (inf when one is zero and the other is not)."""
    both = (qx > 0) & (qy > 0)
    if np.any(both != ((qx > 0) | (qy > 0))):
        return math.inf
    lr = np.abs(np.log(qx[both]) - np.log(qy[both]))
    return float(lr.max()) * (1.0 + RATIO_SLACK) if lr.size else 0.0


def _clone_probability(m: np.ndarray, qx: np.ndarray, qy: np.ndarray) -> float:
    """2 min_z min_y Q(y|z) / (qx + qy), lowered by RATIO_SLACK, capped at 1."""
    denom = qx + qy
    ratio = np.min(m / denom[None, :])
    return min(2.0 * float(ratio) * (1.0 - RATIO_SLACK), 1.0)


def _pair_candidates(m: np.ndarray, i: int, j: int) -> list[ClonePair]:
    qx, qy = m[i], m[j]
    level = _pair_level(qx, qy)
    if level == 0.0 or not math.isfinite(level):
        return [ClonePair(level, 0.0, 1.0)]
    out = [ClonePair(level, _clone_probability(m, qx, qy), 1.0)]
    common = qx == qy
    if np.any(common):
        w = float(1.0 - qx[common].sum())
        rest = ~common
        # clones relative to the informative part A + B = (qx + qy)|rest / w: p' = w min Q / (qx + qy)
        p_rest = _clone_probability(m[:, rest], qx[rest], qy[rest]) * w * (1.0 - RATIO_SLACK)
        out.append(ClonePair(level, min(p_rest, 1.0), min(w * (1.0 + RATIO_SLACK), 1.0)))
    return out


def clone_pairs(matrix: np.ndarray) -> list[tuple[ClonePair, ...]]:
    """For every unordered pair of distinct rows, its dominating clone pairs (deduplicated).

    The shuffled delta at eps is at most the max over the returned groups of the min over a
    group's pairs of ``weight * clone_delta(eps, eps0, n, p_clone)``.
    """
    m = _columns(np.asarray(matrix, dtype=np.float64))
    rows = np.unique(m, axis=0)
    groups: set[tuple[ClonePair, ...]] = set()
    for i in range(len(rows)):
        for j in range(i + 1, len(rows)):
            groups.add(tuple(_pair_candidates(rows, i, j)))
    return sorted(groups, key=lambda g: (-g[0].eps0, g[0].p_clone))


def lower_pairs(matrix: np.ndarray) -> list[LowerPair]:
    """Explicit dataset pairs for the lower bound: for the rows x, x' of largest ratio (both
    orders), the other users all at one row z (every distinct row, at most
    :data:`MAX_LOWER_CANDIDATES` in all)."""
    m = _columns(np.asarray(matrix, dtype=np.float64))
    rows = np.unique(m, axis=0)
    scored = sorted(
        ((_pair_level(rows[i], rows[j]), i, j) for i in range(len(rows)) for j in range(len(rows)) if i != j),
        key=lambda t: -t[0],
    )
    out: list[LowerPair] = []
    for _, i, j in scored[:4]:
        s1, s2 = rows[i] > rows[j], rows[i] < rows[j]
        for z in range(len(rows)):
            cand = LowerPair(
                (float(rows[z, s1].sum()), float(rows[z, s2].sum())),
                (float(rows[i, s1].sum()), float(rows[i, s2].sum())),
                (float(rows[j, s1].sum()), float(rows[j, s2].sum())),
            )
            if cand not in out:
                out.append(cand)
    return out[:MAX_LOWER_CANDIDATES]


def _window(law, m: int, tail: float) -> tuple[int, int]:
    """The values of Bin(m, .) outside tails of mass ``tail``, at most :data:`LOWER_MAX_TERMS` of them
    around the median (dropping terms only lowers a lower bound)."""
    if tail <= 0.0 or m == 0:
        lo, hi = 0, m
    else:
        lo, hi = max(int(law.ppf(tail)) - 1, 0), min(int(law.isf(tail)) + 1, m)
    if hi - lo + 1 > LOWER_MAX_TERMS:
        mid = int(law.median())
        lo, hi = max(mid - LOWER_MAX_TERMS // 2, lo), min(mid + LOWER_MAX_TERMS // 2, hi)
    return lo, hi


def lower_delta(eps: float, n: int, pair: LowerPair, tail: float = 0.0) -> float:
    r"""A lower bound on the hockey-stick divergence of the explicit pair at eps.

    With M the number of reports in S1 u S2 and H the number in S1: the other users give
    M ~ Bin(n-1, s), H | M ~ Bin(M, pi).  For each M, P - e^eps Q at H = h is
    :math:`\beta'_h (A \rho_h + B)` with :math:`\rho_h` increasing in h, so the positive set is
    an upper or a lower set of h, summed with binomial CDFs; only M in a window (tails of mass
    ``tail``) are summed and negative M-terms are dropped: every step can only lower the sum.
    """
    g = math.exp(eps)
    (r1, r2), (a1, a2), (b1, b2) = pair.rest, pair.a, pair.b
    s = min(r1 + r2, 1.0)
    pi = r1 / s if s > 0 else 0.5
    a0, b0 = max(1.0 - a1 - a2, 0.0), max(1.0 - b1 - b2, 0.0)
    m_others = n - 1
    law = stats.binom(m_others, s)
    lo, hi = _window(law, m_others, tail)
    mm = np.arange(lo, hi + 2, dtype=np.float64)  # M = number of reports in S1 u S2, <= n
    pmf = law.pmf(np.arange(lo - 1, hi + 2, dtype=np.float64))
    g_m1 = pmf[:-1]  # others contribute M - 1 (the differing user is in S1 u S2)
    g_m = pmf[1:]  # others contribute M (the differing user is in S0)
    coef_a = g_m1 * (a1 - g * b1) + g_m * pi * (a0 - g * b0)
    coef_b = g_m1 * (a2 - g * b2) + g_m * (1.0 - pi) * (a0 - g * b0)
    # rho_h = h (1 - pi) / ((M - h) pi) = beta / beta'; positive where A rho + B > 0
    safe_a = np.where(coef_a != 0.0, coef_a, 1.0)
    rho_star = np.where(coef_a != 0.0, -coef_b / safe_a, 0.0)
    rho_pos = np.maximum(rho_star, 0.0)
    den = (1.0 - pi) + rho_pos * pi
    h_star = np.where(den > 0.0, rho_pos * pi * mm / np.where(den > 0.0, den, 1.0), 0.0)
    # A > 0: the upper set h >= h*; A < 0: the lower set h <= h* (empty when rho* <= 0); A = 0: all
    h_cut = np.where(coef_a > 0.0, np.ceil(h_star), 0.0)
    lower_top = np.where(rho_star > 0.0, np.floor(h_star), -1.0)
    h_top = np.where(coef_a < 0.0, lower_top, mm)
    h_cut, h_top = np.clip(h_cut, 0.0, mm), np.clip(h_top, -1.0, mm)

    def mass(k: np.ndarray, shift: float) -> np.ndarray:
        # P(shift + Bin(k, pi) in [h_cut, h_top]) for k = M - 1
        k = np.maximum(k, 0.0)
        return stats.binom.cdf(h_top - shift, k, pi) - stats.binom.cdf(h_cut - shift - 1.0, k, pi)

    m1 = mass(mm - 1.0, 1.0)
    m2 = mass(mm - 1.0, 0.0)
    # Bin(M, pi) = Bin(M - 1, pi) + Bern(pi): the M-trial mass is a convex combination of the two
    # (M - 1)-trial masses, so it carries their error allowance (plus one rounding)
    m0 = (1.0 - pi) * m2 + pi * m1
    if lo == 0:  # M = 0: both laws are the point 0 (k = M - 1 is clipped to 0 above)
        m0[0] = m2[0]
    p_set = g_m1 * (a1 * m1 + a2 * m2) + g_m * a0 * m0
    q_set = g_m1 * (b1 * m1 + b2 * m2) + g_m * b0 * m0
    terms = p_set - g * q_set - TAIL_REL_ERR * (p_set + g * q_set)
    return max(float(np.sum(np.maximum(terms, 0.0))) * (1.0 - _LOWER_SUM_REL_ERR) - _LOWER_UNDERFLOW, 0.0)


# ---------------------------------------------------------------------------------------------
# two-output channels at small n: the exact worst case
# ---------------------------------------------------------------------------------------------
#: largest n for which the worst case of a two-output channel is computed exactly (n laws of
#: n + 1 counts, each a direct convolution: about n^3 / 6 multiply-adds)
EXACT_BINARY_MAX_N = 500
#: relative error of one count law entry: two binomial weights (PMF_REL_ERR = 1e-9 each, see
#: the clone bound) and a direct convolution of non-negative terms (n u <= 1.2e-13): 2.1e-9, doubled
EXACT_LAW_REL_ERR = 4.2e-9


@dataclass(frozen=True)
class BinaryWorstCase:
    """For a channel with two outputs: ``laws[j]`` is the law of the count of output 0 among the
    other n - 1 users when j of them hold the row with the largest P(output 0) (``p_max``) and the
    rest the row with the smallest (``p_min``)."""

    p_min: float
    p_max: float
    laws: np.ndarray


def binary_worst_case(matrix: np.ndarray, n: int) -> BinaryWorstCase | None:
    """The extreme datasets of a two-output channel (None for more outputs or n too large).

    The shuffled output is the count K of output 0: the differing user's Bern(a) plus the other
    users' independent Bern(p_i).  The hockey-stick divergence is convex in each p_i and in the
    pair (a, b) (every law is affine in each of them), so its maximum over all datasets is at
    p_i in {p_min, p_max} and (a, b) in {(p_max, p_min), (p_min, p_max)}: n datasets in all.
    """
    m = _columns(np.asarray(matrix, dtype=np.float64))
    if m.shape[1] != 2 or n > EXACT_BINARY_MAX_N:
        return None
    p_min, p_max = float(m[:, 0].min()), float(m[:, 0].max())
    others = n - 1
    laws = np.zeros((others + 1, n))
    for j in range(others + 1):
        high = stats.binom.pmf(np.arange(j + 1), j, p_max)
        low = stats.binom.pmf(np.arange(others - j + 1), others - j, p_min)
        laws[j] = np.convolve(high, low)
    return BinaryWorstCase(p_min, p_max, laws)


def binary_exact_delta(eps: float, worst: BinaryWorstCase) -> tuple[float, float]:
    """(upper, lower) bounds on the exact worst-case delta at eps: the largest hockey-stick
    divergence over the extreme datasets, plus / minus the rounding allowance."""
    g = math.exp(eps)
    f = worst.laws
    prev = np.pad(f, ((0, 0), (1, 0)))  # f(k - 1), k = 0..n
    here = np.pad(f, ((0, 0), (0, 1)))  # f(k)
    best, slack = 0.0, 0.0
    for a, b in ((worst.p_max, worst.p_min), (worst.p_min, worst.p_max)):
        ca, cb = a - g * b, (1.0 - a) - g * (1.0 - b)  # P(k) - g Q(k) = ca f(k-1) + cb f(k)
        d = np.maximum(ca * prev + cb * here, 0.0).sum(axis=1)
        best = max(best, float(d.max()))
        slack = max(slack, EXACT_LAW_REL_ERR * (abs(ca) + abs(cb)) + 4 * f.shape[1] * 2.0**-53 * (1 + g))
    return min(best + slack, 1.0), max(best - slack, 0.0)


# ---------------------------------------------------------------------------------------------
# three-output channels at small n: the exact worst case by enumerating the datasets
# ---------------------------------------------------------------------------------------------
#: work budget of the enumeration: datasets x (n + 1)^2 cells x ordered row pairs
SMALL_EXACT_BUDGET = 10_000_000
#: and at most this many users (the laws kept in memory: rows x datasets x (n + 1)^2 floats)
SMALL_EXACT_MAX_N = 100


@dataclass(frozen=True)
class SmallWorstCase:
    """For a channel with three outputs: ``laws[z, d]`` is the law of the counts of outputs 0 and 1
    of all n users for dataset d of the other n - 1 (a multiset of the distinct rows) when the
    differing user holds row z."""

    laws: np.ndarray


def _add_user(law: np.ndarray, row: np.ndarray) -> np.ndarray:
    """One more user with report law ``row`` (three outputs) on the grid of (count 0, count 1)."""
    out = row[2] * law
    out[..., 1:, :] += row[0] * law[..., :-1, :]
    out[..., :, 1:] += row[1] * law[..., :, :-1]
    return out


def small_worst_case(matrix: np.ndarray, n: int) -> SmallWorstCase | None:
    """Every dataset of a three-output channel (None beyond :data:`SMALL_EXACT_BUDGET`).

    The divergence is convex in each other user's report law (the shuffled law is affine in
    it), so over all datasets it is largest when every other user holds one of the rows: the
    multisets of the distinct rows.  Their count laws are built by adding one user at a time
    (non-negative sums: relative error at most 3 (n + 1) u per entry).
    """
    m = _columns(np.asarray(matrix, dtype=np.float64))
    if m.shape[1] != 3 or n > SMALL_EXACT_MAX_N:
        return None
    rows = np.unique(m, axis=0)
    r = len(rows)
    datasets = math.comb(n - 1 + r - 1, r - 1)
    if datasets * (n + 1) ** 2 * max(r * (r - 1), 1) > SMALL_EXACT_BUDGET:
        return None
    start = np.zeros((n + 1, n + 1))
    start[0, 0] = 1.0
    # layer s: the laws of every multiset of s users, keyed by the row counts (non-decreasing
    # last row index: each multiset is built once)
    layer: dict[tuple[int, ...], np.ndarray] = {(0,) * r: start}
    for _ in range(n - 1):
        nxt: dict[tuple[int, ...], np.ndarray] = {}
        for counts, law in layer.items():
            last = max((i for i, c in enumerate(counts) if c), default=0)
            for z in range(last, r):
                key = tuple(c + (i == z) for i, c in enumerate(counts))
                nxt[key] = _add_user(law, rows[z])
        layer = nxt
    others = np.array(list(layer.values()))
    return SmallWorstCase(np.array([_add_user(others, row) for row in rows]))


def small_exact_delta(eps: float, worst: SmallWorstCase) -> tuple[float, float]:
    """(upper, lower) bounds on the exact worst-case delta at eps over the datasets and ordered
    pairs of distinct rows, plus / minus the rounding allowance."""
    g = math.exp(eps)
    user = worst.laws
    best = 0.0
    for i in range(len(user)):
        for j in range(len(user)):
            if i != j:
                best = max(best, float(np.maximum(user[i] - g * user[j], 0.0).sum(axis=(1, 2)).max()))
    cells = user.shape[2] * user.shape[3]
    n = user.shape[2] - 1
    # laws: 3 (n + 2) u relative per entry; the sum of `cells` terms of size <= P + g Q: cells u
    slack = (3.0 * (n + 2) + cells + 4.0) * 2.0**-53 * (1.0 + g) * 4.0
    return min(best + slack, 1.0), max(best - slack, 0.0)
