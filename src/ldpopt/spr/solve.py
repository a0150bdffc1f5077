r"""Sort-Partition-Randomize: the likelihood-ratio reduction, the exact dynamic program, closed forms.

Specification: "Sort, Partition, Randomize" (Ghazi, Nasser, Calmon, Issa), Sections 2, 3 and 5.

For an LR-contiguous partition :math:`\pi=(B_1,\dots,B_s)` of the sorted alphabet the SPR
mechanism (eq. 11) has utility (eq. 30)

.. math:: D_f\big(Q_\pi^\top p \,\|\, Q_\pi^\top q\big) = \frac{\sum_t \mu(B_t)}{e^\varepsilon+s-1},
   \qquad \mu[a:b] = g\big(1+(e^\varepsilon-1)\Delta P,\ 1+(e^\varepsilon-1)\Delta Q\big)

with :math:`g(x,y)=yf(x/y)` and :math:`\Delta P = P_b-P_{a-1}` from prefix sums (eq. 31).
Because g is 1-homogeneous we divide numerator and denominator by :math:`e^\varepsilon` and
work with :math:`c=e^{-\varepsilon}`, :math:`A = 1-c` (``-expm1(-eps)``):

.. math:: \mu'[a:b] = g\big(c + A\Delta P,\ c + A\Delta Q\big),\qquad
   \text{value} = \frac{\sum_t \mu'(B_t)}{1+(s-1)c},

which never overflows, is accurate for tiny eps (the difference ``A (dP - dQ)`` is passed
to g separately) and is the deterministic likelihood-ratio quantizer at ``eps = inf``.
"""

from __future__ import annotations

import math
import types
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from ldpopt._validation import check_eps, check_labelled_pair, check_positive_int, is_real
from ldpopt.divergences import (
    CODE_POWER_DOWN,
    CODE_POWER_UP,
    RENYI_NEAR_MAX,
    FDivergence,
    egamma,
    get_divergence,
    logsumexp,
    power_log_terms,
    renyi_value,
)
from ldpopt.mechanism import Mechanism, _two_set_mechanism, spr_mechanism

__all__ = [
    "OptimalMechanismResult",
    "LRReduction",
    "likelihood_ratio_reduction",
    "optimal_mechanism",
    "egamma_mechanism",
    "lr_distance_mechanism",
    "interval_scores",
    "spr_value",
]

#: keys closer than this (relative, on the log-ratio) are ordered/merged with exact rational arithmetic
_NEAR_TIE_RTOL = 1e-9
#: a block's difference from the sums of p - q is kept within this times (dP + dQ) of dP - dQ
#: (dP and dQ are each within ~2 ulp, so the true difference is within ~4 ulp of dP - dQ)
_DIFF_CLIP = 8 * 2.0**-52
#: Renyi far from S = 1 (``_solve_power_far``): a solve on S e^{-K} is redone with the scale of
#: the partition it found when that partition's log S is more than this below K (its blocks
#: may then have underflowed; e^{-600} is still ~1e43 times the smallest normal number)
_RESCALE_GAP = 600.0
#: at most this many rescaled solves: each lowers K by > _RESCALE_GAP and log S >= -eps/2
_MAX_RESCALES = 8


@dataclass(frozen=True)
class OptimalMechanismResult:
    """Result of an optimal-mechanism computation.

    Attributes
    ----------
    value : float
        Optimal utility :math:`D_f(M_0\\|M_1)` (Renyi divergence itself for ``renyi``).
    mechanism : Mechanism or None
        A mechanism attaining ``value``; rows are the user's original symbols (``None`` when the
        solver failed).
    partition : tuple of tuple of int, or None
        Blocks of original symbol indices, in likelihood-ratio order; output j of the mechanism
        is block j.  Symbols with zero mass under both distributions join the first block.
        ``None`` for mechanisms that are not given by a partition (``kov_lp``).
    num_outputs : int
        Number of outputs (blocks) of the mechanism.
    eps : float
    divergence : str
        Name of the utility divergence.
    max_outputs : int or None
        The output budget asked for.
    input_divergence : float
        :math:`D_f(P_0\\|P_1)`, the non-private value (for normalised utility).
    method : str
        ``"dp"``, ``"dinkelbach"``, ``"closed_form"``, ``"kov_lp"``...
    status : int
        0 on success.
    message : str
    """

    value: float
    mechanism: Mechanism | None
    partition: tuple | None
    num_outputs: int
    eps: float
    divergence: str
    max_outputs: int | None = None
    input_divergence: float = math.nan
    method: str = "dp"
    status: int = 0
    message: str = "optimal"
    labels: tuple | None = field(default=None, repr=False)

    @property
    def normalized_value(self) -> float:
        """``value / input_divergence`` in [0, 1] (nan when the denominator is 0 or infinite).

        A mechanism never increases a divergence (data processing), so the ratio is clipped
        to [0, 1]: outside it only by rounding.
        """
        d = self.input_divergence
        if d == 0 or not math.isfinite(d) or not math.isfinite(self.value):
            return math.nan
        return min(max(self.value / d, 0.0), 1.0)

    @property
    def labelled_partition(self) -> tuple | None:
        """``partition`` with symbol labels instead of indices (indices when there are no labels)."""
        if self.labels is None or self.partition is None:
            return self.partition
        return tuple(tuple(self.labels[i] for i in block) for block in self.partition)


# ---------------------------------------------------------------------------------------------
# Likelihood-ratio reduction (Section 2)
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LRReduction:
    """The reduced, strictly LR-sorted alphabet (SPR Section 2, "reduction of ties").

    Attributes
    ----------
    p, q : ndarray
        Reduced distributions, :math:`p_1/q_1 < \\dots < p_k/q_k` (``q = 0`` meaning +inf).
    classes : tuple of tuple of int
        Original symbols merged into each reduced symbol (ascending indices).
    dropped : tuple of int
        Original symbols with zero mass under both distributions.
    k_original : int
    """

    p: np.ndarray
    q: np.ndarray
    classes: tuple
    dropped: tuple
    k_original: int

    @property
    def k(self) -> int:
        """Size of the reduced alphabet."""
        return len(self.classes)

    def lift_blocks(self, cuts: list[tuple[int, int]]) -> tuple:
        """Map reduced intervals ``[a, b)`` to blocks of original symbols; dropped symbols join block 0."""
        blocks = []
        for j, (a, b) in enumerate(cuts):
            members = [i for cls in self.classes[a:b] for i in cls]
            if j == 0:
                members.extend(self.dropped)
            blocks.append(tuple(sorted(members)))
        return tuple(blocks)


def _exact_ratio_key(p: float, q: float) -> tuple[int, Fraction]:
    if q == 0.0:
        return (1, Fraction(0))
    return (0, Fraction(p) / Fraction(q))


def likelihood_ratio_reduction(p0: Any, p1: Any, normalize: bool = False) -> LRReduction:
    """Sort by :math:`P_0/P_1`, drop symbols with zero mass under both, merge exactly tied ratios.

    Sorting uses :math:`\\log P_0 - \\log P_1` (stable for probabilities down to subnormals);
    runs of keys within ``1e-9`` relative are re-sorted and merged with exact rational
    comparison of the float inputs, so ties are merged exactly and never by rounding.
    """
    u, v, _ = check_labelled_pair(p0, p1, normalize=normalize)
    return _reduce(u, v)


def _reduce(u: np.ndarray, v: np.ndarray) -> LRReduction:
    k0 = u.shape[0]
    keep = (u > 0) | (v > 0)
    dropped = tuple(int(i) for i in np.flatnonzero(~keep))
    idx = np.flatnonzero(keep)
    with np.errstate(divide="ignore"):
        key = np.log(u[idx]) - np.log(v[idx])  # -inf for p = 0, +inf for q = 0
    order = idx[np.argsort(key, kind="stable")]
    skey = np.sort(key, kind="stable")
    # split the sorted list into runs of (near-)equal keys; each run is ordered exactly
    classes: list[list[int]] = []
    start = 0
    n = order.shape[0]
    while start < n:
        end = start + 1
        while end < n and _near(skey[end - 1], skey[end]):
            end += 1
        run = [int(i) for i in order[start:end]]
        if len(run) == 1:
            classes.append(run)
        else:
            run.sort(key=lambda i: (_exact_ratio_key(float(u[i]), float(v[i])), i))
            prev = None
            for i in run:
                kk = _exact_ratio_key(float(u[i]), float(v[i]))
                if prev is not None and kk == prev:
                    classes[-1].append(i)
                else:
                    classes.append([i])
                prev = kk
        start = end
    cls = tuple(tuple(sorted(c)) for c in classes)
    p = np.array([math.fsum(u[list(c)].tolist()) for c in cls]) if cls else np.zeros(0)
    q = np.array([math.fsum(v[list(c)].tolist()) for c in cls]) if cls else np.zeros(0)
    return LRReduction(p=p, q=q, classes=cls, dropped=dropped, k_original=k0)


def _near(a: float, b: float) -> bool:
    if a == b:
        return True
    if math.isinf(a) or math.isinf(b):
        return False
    return abs(b - a) <= _NEAR_TIE_RTOL * max(1.0, abs(a), abs(b))


# ---------------------------------------------------------------------------------------------
# Interval scores (eq. 29/31) and the readable dynamic program (Prop. 3.3, Algorithm 1)
# ---------------------------------------------------------------------------------------------
def compensated_prefix(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Prefix sums as (hi, lo) pairs (Neumaier), so interval sums keep full precision."""
    n = x.shape[0]
    hi = np.zeros(n + 1)
    lo = np.zeros(n + 1)
    s = 0.0
    comp = 0.0
    for i in range(n):
        v = float(x[i])
        t = s + v
        if abs(s) >= abs(v):
            comp += (s - t) + v
        else:
            comp += (v - t) + s
        s = t
        hi[i + 1] = s
        lo[i + 1] = comp
    return hi, lo


def compensated_prefix_diff(p: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Prefix sums of p - q as (hi, lo) pairs: Neumaier summation of p[i] and -q[i] in turn.

    hi + lo is the exact prefix sum to ~n ulp^2 of the masses summed, so the difference of a
    block (``_Prefix.sums``) keeps about one ulp of itself even where dP and dQ nearly cancel;
    ``dP - dQ`` from the separate sums would carry ~ulp (dP + dQ).
    """
    n = p.shape[0]
    hi = np.zeros(n + 1)
    lo = np.zeros(n + 1)
    s = 0.0
    comp = 0.0
    for i in range(n):
        for v in (float(p[i]), -float(q[i])):
            t = s + v
            if abs(s) >= abs(v):
                comp += (s - t) + v
            else:
                comp += (v - t) + s
            s = t
        hi[i + 1] = s
        lo[i + 1] = comp
    return hi, lo


def _rescale(eps: float) -> tuple[float, float]:
    """(c, A) = (e^{-eps}, 1 - e^{-eps}) without cancellation."""
    if math.isinf(eps):
        return 0.0, 1.0
    return math.exp(-eps), -math.expm1(-eps)


class _Prefix:
    """Interval sums of p and q in O(1) (eq. 31), accurate for tiny blocks.

    Compensated (hi, lo) prefix AND suffix sums are kept; a block [a, b) is summed from the side
    whose partial sums are smaller (prefix when P_b <= S_a, else suffix), so blocks at either end
    of the likelihood-ratio order, where extreme ratios live, keep full relative precision even
    with masses near 1e-300.  A sum is never below its largest endpoint term, which keeps
    rounding from producing a zero or negative mass.
    """

    def __init__(self, p: np.ndarray, q: np.ndarray):
        self.p = np.asarray(p, float)
        self.q = np.asarray(q, float)
        self.P = compensated_prefix(self.p)
        self.Q = compensated_prefix(self.q)
        self.SP = _suffix(self.p)
        self.SQ = _suffix(self.q)
        self.D = compensated_prefix_diff(self.p, self.q)
        hi, lo = compensated_prefix_diff(self.p[::-1], self.q[::-1])
        self.SD = (hi[::-1].copy(), lo[::-1].copy())

    @staticmethod
    def _interval(x, pre, suf, a, b):
        ph, pl = pre
        sh, sl = suf
        from_prefix = (ph[b] - ph[a]) + (pl[b] - pl[a])
        from_suffix = (sh[a] - sh[b]) + (sl[a] - sl[b])
        use_prefix = ph[b] <= sh[a]
        total = np.where(use_prefix, from_prefix, from_suffix)
        floor = np.maximum(x[a], x[b - 1])
        return np.maximum(total, floor)

    def sums(self, a, b):
        """(dP, dQ, dP - dQ) over reduced symbols a..b-1 (arrays allowed).

        The difference comes from the compensated sums of p - q, on the side from which dP is
        summed, kept within ``_DIFF_CLIP (dP + dQ)`` of ``dP - dQ``: about one ulp of itself
        where dP and dQ nearly cancel, never worse than ``dP - dQ`` for a tiny block next to a
        side whose compensation (~n ulp^2 times its mass) is not negligible.
        """
        a = np.asarray(a)
        dp = self._interval(self.p, self.P, self.SP, a, b)
        dq = self._interval(self.q, self.Q, self.SQ, a, b)
        (dh, dl), (sdh, sdl) = self.D, self.SD
        use_prefix = self.P[0][b] <= self.SP[0][a]
        dd = np.where(use_prefix, (dh[b] - dh[a]) + (dl[b] - dl[a]), (sdh[a] - sdh[b]) + (sdl[a] - sdl[b]))
        plain = dp - dq
        e = _DIFF_CLIP * (dp + dq)
        return dp, dq, np.minimum(np.maximum(dd, plain - e), plain + e)


def _suffix(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Compensated suffix sums: S[i] = sum_{j >= i} x[j], S[n] = 0."""
    hi, lo = compensated_prefix(x[::-1])
    return hi[::-1].copy(), lo[::-1].copy()


def interval_scores(
    p: np.ndarray, q: np.ndarray, eps: float, divergence: str | FDivergence, starts, end: int
) -> np.ndarray:
    r"""Rescaled interval scores :math:`\mu'[a:b]` for blocks ``[a, end)`` of the sorted reduced alphabet.

    Readable reference used by the dynamic program and the tests (eq. 31, rescaled by
    :math:`e^{-\varepsilon}`).
    """
    div = get_divergence(divergence)
    pre = _Prefix(np.asarray(p, float), np.asarray(q, float))
    c, A = _rescale(eps)
    return _scores(pre, div, c, A, np.asarray(starts), end, _log_floor(eps, c))


def _log_floor(eps: float, c: float) -> float:
    """-eps when e^{-eps} underflowed (every score entry is still >= e^{-eps}); else -inf (unused)."""
    return -eps if (c == 0.0 and math.isfinite(eps)) else -math.inf


def _scores(
    pre: _Prefix,
    div: FDivergence,
    c: float,
    A: float,
    starts: np.ndarray,
    end: int,
    log_floor: float = -math.inf,
) -> np.ndarray:
    dp, dq, dd = pre.sums(starts, end)
    return div.perspective(c + A * dp, c + A * dq, A * dd, log_floor=log_floor)


def _dp_readable(p: np.ndarray, q: np.ndarray, eps: float, div: FDivergence, l: int, table=None):
    """The O(l k^2) dynamic program of Prop. 3.3 with traceback (Algorithm 1), O(l k) memory.

    ``F[s, i]`` is the best raw (rescaled) score of a partition of the first ``i`` sorted
    symbols into exactly ``s`` blocks; ``parent[s, i]`` the start of its last block.  Ties
    are broken towards the smallest split point and the smallest block count.  ``table``
    (optional) holds every block's score, packed as ``_fast.score_table`` (the Renyi sums of
    :func:`_solve_power_far`); by default the scores are the divergence's.
    Returns (raw value, list of (start, end) intervals).
    """
    k = p.shape[0]
    c, A = _rescale(eps)
    lf = _log_floor(eps, c)
    pre = _Prefix(p, q)
    F = np.full((l + 1, k + 1), -np.inf)
    parent = np.zeros((l + 1, k + 1), dtype=np.int64)
    for i in range(1, k + 1):
        if table is None:
            sc = _scores(pre, div, c, A, np.arange(i), i, lf)  # sc[t] = mu'[t : i)
        else:
            sc = table[i * (i - 1) // 2 : i * (i + 1) // 2]
        F[1, i] = sc[0]
        smax = min(l, i)
        if smax >= 2:
            with np.errstate(invalid="ignore"):
                cand = F[1:smax, :i] + sc[None, :]  # row r: s = r + 2, last block [t, i)
            t_idx = np.arange(i)[None, :]
            s_idx = np.arange(2, smax + 1)[:, None]
            cand = np.where(t_idx >= s_idx - 1, cand, -np.inf)
            best = np.argmax(cand, axis=1)
            F[2 : smax + 1, i] = cand[np.arange(smax - 1), best]
            parent[2 : smax + 1, i] = best
    ratios = np.array([F[s, k] / (1.0 + (s - 1) * c) for s in range(1, l + 1)])
    s_star = int(np.argmax(ratios)) + 1
    cuts = []
    i = k
    for s in range(s_star, 1, -1):
        t = int(parent[s, i])
        cuts.append((t, i))
        i = t
    cuts.append((0, i))
    cuts.reverse()
    return float(ratios[s_star - 1]), cuts


def spr_value(
    p: np.ndarray, q: np.ndarray, eps: float, divergence: str | FDivergence, cuts: list[tuple[int, int]]
) -> float:
    """Raw utility of the SPR mechanism of reduced intervals ``cuts`` (eq. 30, rescaled)."""
    div = get_divergence(divergence)
    c, A = _rescale(eps)
    pre = _Prefix(np.asarray(p, float), np.asarray(q, float))
    total = 0.0
    for a, b in cuts:
        total += float(_scores(pre, div, c, A, np.array([a]), b, _log_floor(eps, c))[0])
    return total / (1.0 + (len(cuts) - 1) * c)


# ---------------------------------------------------------------------------------------------
# Public entry
# ---------------------------------------------------------------------------------------------
def optimal_mechanism(
    p0: Any,
    p1: Any,
    eps: float,
    divergence: str | FDivergence = "kl",
    max_outputs: int | None = None,
    *,
    normalize: bool = False,
    method: str = "auto",
) -> OptimalMechanismResult:
    r"""Exactly optimal :math:`\varepsilon`-LDP mechanism for telling :math:`P_0` from :math:`P_1`.

    Solves :math:`\max_{Q} D_f(Q^\top P_0\|Q^\top P_1)` over all :math:`\varepsilon`-LDP channels
    with at most ``max_outputs`` outputs (eq. 3/4).  By Corollary 3.2 an SPR mechanism is
    optimal, found by the dynamic program of Prop. 3.3.

    Parameters
    ----------
    p0, p1 : array_like, dict or pandas Series
        The two distributions on the same finite alphabet (dict/Series keep their labels).
    eps : float
        Privacy level, > 0; ``math.inf`` means no privacy (the optimal deterministic
        likelihood-ratio quantizer into at most ``max_outputs`` cells).
    divergence : str or FDivergence
        ``"kl"``, ``"reverse_kl"``, ``"tv"``, ``"chi2"``, ``"hellinger"``, ``"js"``,
        ``"egamma:G"``, ``"renyi:A"`` or an :class:`~ldpopt.FDivergence`.
    max_outputs : int, optional
        Output budget l; ``None`` means no budget (l = k).
    normalize : bool
        Rescale p0 and p1 to sum to 1 instead of rejecting them.
    method : {"auto", "dp", "fast"}
        ``"dp"`` runs the readable O(l k^2) program; ``"fast"``/``"auto"`` the compiled
        solvers when available (same optimum).

    Returns
    -------
    OptimalMechanismResult
    """
    u, v, labels = check_labelled_pair(p0, p1, normalize=normalize)
    eps = check_eps(eps)
    div = get_divergence(divergence)
    l_user = check_positive_int(max_outputs, "max_outputs", allow_none=True)
    if method not in ("auto", "dp", "fast"):
        raise ValueError(f"method must be 'auto', 'dp' or 'fast', got method={method!r}")
    red = _reduce(u, v)
    l = red.k if l_user is None else min(l_user, red.k)
    raw, cuts, used = _solve_reduced(red.p, red.q, eps, div, l, method)
    return _build_result(red, raw, cuts, eps, div, l_user, u, v, labels, used)


def _solve_reduced(p, q, eps, div, l, method):
    raw, cuts, name = _solve_near(p, q, eps, div, l, method)
    if _power_far(div, raw):
        cuts = _solve_power_far(p, q, eps, div, l, cuts, name != "dp")
    return raw, cuts, name


def _solve_near(p, q, eps, div, l, method):
    if method != "dp":
        _fast: types.ModuleType | None
        try:
            from ldpopt.spr import _fast  # compiled solvers (optional until built)
        except ImportError:
            _fast = None
        if _fast is not None and _fast.supports(div):
            raw, cuts, name = _fast.solve(p, q, eps, div, l)
            return raw, cuts, name
    raw, cuts = _dp_readable(p, q, eps, div, l)
    return raw, cuts, "dp"


# ---------------------------------------------------------------------------------------------
# Renyi far from S = 1: the scaled Renyi sum itself, in the log domain
# ---------------------------------------------------------------------------------------------
def _power_far(div: FDivergence, raw: float) -> bool:
    """True when the optimum of the centred power f-divergence does not determine D_alpha.

    Its raw value is S - 1 (a > 1) or 1 - S (a < 1) with S the Renyi sum of the outputs.  For
    a > 1 it is accurate to a few ulp unless a score overflowed (raw = inf); for a < 1 it
    carries ~ulp absolute error, too much for log S once S is small (1 - S > 1/2).
    """
    if div.code == CODE_POWER_UP:
        return not math.isfinite(raw)
    if div.code == CODE_POWER_DOWN:
        return not raw <= RENYI_NEAR_MAX
    return False


def _power_log_table(p: np.ndarray, q: np.ndarray, eps: float, alpha: float) -> np.ndarray:
    """log(x^a y^(1-a)) of every block [t, i), packed at i (i - 1) / 2 + t (k (k+1) / 2 values;
    one end point at a time, so the temporaries are O(k))."""
    k = p.shape[0]
    c, A = _rescale(eps)
    lf = _log_floor(eps, c)
    pre = _Prefix(p, q)
    L = np.empty(k * (k + 1) // 2)
    for i in range(1, k + 1):
        dp, dq, dd = pre.sums(np.arange(i), i)
        L[i * (i - 1) // 2 : i * (i + 1) // 2] = power_log_terms(alpha, c + A * dp, c + A * dq, A * dd, lf)
    return L


def _log_sum_of(L: np.ndarray, cuts, c: float) -> float:
    """log S of a partition from the block log terms: log-sum-exp minus log(1 + (s - 1) c)."""
    terms = np.array([L[b * (b - 1) // 2 + a] for a, b in cuts])
    return logsumexp(terms) - math.log1p((len(cuts) - 1) * c)


def _solve_power_far(p, q, eps, div, l, cuts, fast: bool):
    r"""Optimal partition for D_alpha where S is far from 1, by optimising S e^{-K} itself.

    :math:`S(\pi)=\sum_t x_t^\alpha y_t^{1-\alpha}/(1+(s-1)c)` is maximised (a > 1) or minimised
    (a < 1) over the same partitions, with every block term ``exp(log term - K)`` from the
    log domain (:func:`ldpopt.divergences.power_log_terms`): a positive scale changes no
    decision.  For a > 1, K is the largest block term (no block overflows; the optimum is at
    least a third of it, so it does not underflow); for a < 1, K is log S of the given
    partition (the centred optimum, within ~ulp of the best S), lowered while the solve's own
    partition lies more than ``_RESCALE_GAP`` below it.  ``fast`` runs the compiled table path
    (``_fast.solve_scores``), else the readable program; both take O(k^2) memory here.
    """
    L = _power_log_table(p, q, eps, div.param)
    c = _rescale(eps)[0]
    up = div.code == CODE_POWER_UP
    solve = _table_solver(p, q, eps, div, l, fast)
    if up:
        K = float(np.max(L))
        if math.isinf(K):
            # eps = inf and a block with q = 0 < p: the optimum is inf, attained by any partition
            # with such a block (the overflowing finite blocks must not be taken for one)
            return solve(np.isposinf(L).astype(float))
    else:
        K = _log_sum_of(L, cuts, c)
        if math.isinf(K):
            return cuts  # S = 0 (eps = inf, disjoint supports): the optimum is inf
    for _ in range(_MAX_RESCALES):
        with np.errstate(over="ignore", under="ignore"):
            table = np.exp(L - K)
        if not up:
            table = -table
        cuts = solve(table)
        log_s = _log_sum_of(L, cuts, c)
        if up or not log_s < K - _RESCALE_GAP:
            break
        K = log_s
    return cuts


def _table_solver(p, q, eps, div, l, fast: bool):
    """table -> optimal cuts: the compiled table path (``fast``) or the readable program."""
    c = _rescale(eps)[0]
    if fast:
        from ldpopt.spr import _fast

        return lambda table: _fast.solve_scores(table, p.shape[0], l, c)[1]
    return lambda table: _dp_readable(p, q, eps, div, l, table)[1]


def _partition_value(p, q, eps, div: FDivergence, cuts, raw: float) -> float:
    """The reported value of the SPR mechanism of ``cuts``, >= 0.

    Renyi: :math:`D_\alpha` of the outputs evaluated from the blocks (near/far forms of
    :func:`ldpopt.divergences.renyi_value`); otherwise the transformed raw optimum, clipped at
    0: the divergence of two output distributions is >= 0 (Jensen), so a negative sum is
    rounding (only a user's generator, whose terms change sign, can produce one).
    """
    if div.code in (CODE_POWER_UP, CODE_POWER_DOWN):
        c, A = _rescale(eps)
        pre = _Prefix(np.asarray(p, float), np.asarray(q, float))
        a = np.array([ab[0] for ab in cuts])
        b = np.array([ab[1] for ab in cuts])
        dp, dq, dd = pre.sums(a, b)
        denom = 1.0 + (len(cuts) - 1) * c
        return renyi_value(div.code, div.param, c + A * dp, c + A * dq, A * dd, denom, _log_floor(eps, c))
    value = div.transform(raw)
    return value if value > 0.0 or math.isnan(value) else 0.0


def _build_result(
    red: LRReduction,
    raw: float,
    cuts,
    eps: float,
    div: FDivergence,
    l_user,
    u: np.ndarray,
    v: np.ndarray,
    labels,
    method: str,
) -> OptimalMechanismResult:
    partition = red.lift_blocks(cuts)
    mech = spr_mechanism(partition, red.k_original, eps, labels=labels)
    return OptimalMechanismResult(
        value=_partition_value(red.p, red.q, eps, div, cuts, raw),
        mechanism=mech,
        partition=partition,
        num_outputs=len(partition),
        eps=eps,
        divergence=div.name,
        max_outputs=l_user,
        input_divergence=div(u, v),
        method=method,
        labels=labels,
    )


# ---------------------------------------------------------------------------------------------
# Closed forms (Thm 3.6, Prop. 3.8)
# ---------------------------------------------------------------------------------------------
def egamma_mechanism(
    p0: Any, p1: Any, eps: float, gamma: float, *, normalize: bool = False
) -> OptimalMechanismResult:
    r"""Generalized binary mechanism (Def. 3.5), optimal for :math:`E_\gamma` (Thm 3.6).

    Binary RR on :math:`1\{x\in S_\gamma\}`, :math:`S_\gamma=\{x: P_0(x)\ge\gamma P_1(x)\}`, with value

    .. math:: \Big[\tanh(\varepsilon/2)\,E_\gamma(P_0\|P_1)
              + \frac{1-\gamma}{e^\varepsilon+1}\Big]_+ \quad (17).
    """
    u, v, labels = check_labelled_pair(p0, p1, normalize=normalize)
    eps = check_eps(eps)
    div = egamma(gamma)
    g = div.param
    in_s = u >= g * v
    e_in = div(u, v)
    c = 0.0 if math.isinf(eps) else math.exp(-eps)
    t = 1.0 if math.isinf(eps) else math.tanh(eps / 2.0)
    value = max(0.0, t * e_in + (1.0 - g) * c / (1.0 + c))
    mech = _two_set_mechanism(in_s, eps, labels, "egamma")
    return OptimalMechanismResult(
        value=value,
        mechanism=mech,
        partition=mech.partition,
        num_outputs=2,
        eps=eps,
        divergence=div.name,
        max_outputs=None,
        input_divergence=e_in,
        method="closed_form",
        labels=labels,
    )


def lr_distance_mechanism(
    p0: Any, p1: Any, eps: float, r: float, *, normalize: bool = False
) -> OptimalMechanismResult:
    r"""Optimal mechanism for the :math:`\ell_r` distance :math:`\|Q^\top p - Q^\top q\|_r` (Prop. 3.8).

    Binary RR on :math:`S=\{x: p_x\ge q_x\}` attains the bound
    :math:`2^{1/r}\tanh(\varepsilon/2)\,d_{TV}(p,q)` (eq. 19), :math:`2^{1/\infty}=1`.
    """
    u, v, labels = check_labelled_pair(p0, p1, normalize=normalize)
    eps = check_eps(eps)
    if not is_real(r):
        raise TypeError(f"r must be a real number >= 1, got r={r!r}")
    r = float(r)
    if math.isnan(r) or r < 1.0:
        raise ValueError(f"r must be >= 1 (math.inf allowed), got r={r!r}")
    tv = 0.5 * math.fsum(np.abs(u - v).tolist())
    t = 1.0 if math.isinf(eps) else math.tanh(eps / 2.0)
    factor = 1.0 if math.isinf(r) else 2.0 ** (1.0 / r)
    mech = _two_set_mechanism(u >= v, eps, labels, "binary")
    return OptimalMechanismResult(
        value=factor * t * tv,
        mechanism=mech,
        partition=mech.partition,
        num_outputs=2,
        eps=eps,
        divergence=f"l{r:g}",
        max_outputs=None,
        input_divergence=float(np.linalg.norm(u - v, ord=r)),
        method="closed_form",
        labels=labels,
    )
