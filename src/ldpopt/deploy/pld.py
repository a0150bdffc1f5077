r"""Composition of shuffled rounds through the privacy loss distribution (PLD) of a clone pair.

Each round's shuffled reports are a post-processing of a clone pair (:mod:`ldpopt.deploy.blanket`):
the count C of clones among the other n - 1 users and the first coordinate of
:math:`P_C = (A + \Delta, C - A + 1 - \Delta)` (or its mirror Q), optionally mixed with an
uninformative branch of weight 1 - w.  T rounds with fresh randomness are a post-processing of T
independent copies, whose delta is
:math:`\delta_T(\varepsilon) = E_{P^T}[(1 - e^{\varepsilon - L_1 - \dots - L_T})_+]`
with :math:`L = \log dP/dQ` (the pair is symmetric under the mirror: one direction suffices).

Pessimistic discretisation (every step can only raise :math:`\delta_T`):

* C is coarsened to the left end of blocks of clone counts: fewer clones is a pair of which the
  true one is a post-processing (add data-independent fair coins), so the blocked mixture dominates;
* the tails of C and of A given C that are left out go to an atom of loss :math:`+\infty`;
* every loss is rounded **up** to the grid :math:`h\mathbb{Z}` (the functional is increasing in each
  loss), and losses below the floor ``-floor`` are raised to it;
* the T-fold convolution is an FFT convolution; its rounding error is bounded per entry by
  :data:`FFT_ERR_FACTOR` :math:`\cdot u \log_2 L \sqrt{L}\,\|a\|_2\|b\|_2` (Higham, *Accuracy and
  Stability of Numerical Algorithms*, 2nd ed., Sec. 24.1, with a margin) and the sum of these
  bounds over the grid is **added** to delta; negative entries are clipped to 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import signal, stats

__all__ = [
    "LossDistribution",
    "clone_pld",
    "compose",
    "pld_delta",
    "explicit_pld",
    "pld_delta_lower",
    "FFT_ERR_FACTOR",
    "CDF_REL_ERR",
]

#: relative error allowed for one binomial CDF value (scipy's ``binom.cdf``, Boost's regularised
#: incomplete beta): spot checks against 200-bit mpmath gave at most 5.4e-14 (c = 10^4, six
#: standard deviations into the lower tail); 1e-11 leaves a margin of 180
CDF_REL_ERR = 1e-11
#: upward nudge of loss / h before it is rounded up to the grid (downward for the lower bound),
#: relative part: loss / h is two logs, a subtraction and a division, each rounded within u = 2^-53
#: of its magnitude, so without cancellation within 8u = 9e-16 relative; 1e-12 leaves a margin of 1000
_GRID_REL_NUDGE = 1e-12
#: the same nudge's absolute part (grid cells), for the cancellation in log P - log Q: its error is
#: at most 2u (|log P| + |log Q|) <= 2.4e-14 nats for masses above e^-53 (A is kept within A_SDS
#: standard deviations), i.e. <= 1e-9 cells for a grid h >= 2.4e-5 (PLD_GRID = 1e-4: margin 4)
_GRID_ABS_NUDGE = 1e-9
#: relative error allowed on a sum of non-negative terms (E[(1 - e^(eps - L))_+] over at most
#: 2^23 cells, a mass total): blocked/pairwise summation errs by at most (log2(2^23) + 2) u
#: = 2.8e-15 relative, expm1 and the product add 2u; 1e-12 leaves a margin above 300
_SUM_REL_ERR = 1e-12

#: factor on u log2(L) sqrt(L) ||a||_2 ||b||_2 bounding one entry's FFT-convolution error (Higham's
#: bound has about 5 log2(L) u for a forward plus an inverse transform; 20 leaves a margin of 4)
FFT_ERR_FACTOR = 20.0
_U = 2.0**-53
#: clone-count blocks (left ends) of the dominating pair
PLD_BLOCKS = 256
#: standard deviations of A | C kept on each side (beyond: the +inf atom, mass < 1e-18)
A_SDS = 9.0


@dataclass(frozen=True)
class LossDistribution:
    """Mass on the loss grid ``offset + h * i`` (i = 0..len(mass)-1), ``inf`` at +infinity, and
    ``err`` an upper bound on the total absolute error of ``mass`` (from the FFT convolutions)."""

    mass: np.ndarray
    offset: int
    h: float
    inf: float
    err: float


def _block_edges(law, m: int, tail: float) -> tuple[np.ndarray, float]:
    lo, hi = (max(int(law.ppf(tail)) - 1, 0), min(int(law.isf(tail)) + 1, m)) if m > 0 else (0, 0)
    left_out = (float(law.cdf(lo - 1)) if lo > 0 else 0.0) + (float(law.sf(hi)) if hi < m else 0.0)
    edges = np.unique(np.linspace(lo, hi + 1, min(PLD_BLOCKS, hi - lo + 1) + 1).astype(np.int64))
    return edges, left_out


#: a block of C clones whose window of A has more than this many values per loss cell it spans
#: is binned by thresholds on A (binomial CDFs at the cell edges) instead of value by value
CELL_BINNING_RATIO = 8
#: cell edges are placed this fraction of a cell below their grid value (the computed loss
#: threshold has a relative error of a few units of roundoff: far inside it), so every A is
#: charged a loss at least its own
EDGE_MARGIN = 1e-6


def _a_window(c: float) -> tuple[int, int]:
    sd = 0.5 * math.sqrt(c) if c > 0 else 0.0
    return max(int(c / 2 - A_SDS * sd) - 1, 0), min(int(c / 2 + A_SDS * sd) + 2, int(c) + 1)


def _values_hist(
    c: float, a_lo: int, a_hi: int, alpha: float, h: float, top: int
) -> tuple[np.ndarray, np.ndarray]:
    """(cell index, P mass) of every A in the window: P(A = a) = alpha b(a-1) + (1-alpha) b(a)."""
    alpha_bar = 1.0 - alpha
    a = np.arange(a_lo - 1, a_hi + 1, dtype=np.float64)
    b = stats.binom.pmf(a, c, 0.5)
    b_prev, b_here = b[:-1], b[1:]
    p = alpha * b_prev + alpha_bar * b_here
    q = alpha_bar * b_prev + alpha * b_here
    with np.errstate(divide="ignore"):
        loss = np.log(p) - np.log(q)
    grid = loss / h
    idx = (
        np.clip(np.ceil(grid + np.abs(grid) * _GRID_REL_NUDGE + _GRID_ABS_NUDGE), -top, top).astype(np.int64)
        + top
    )
    return idx, p


def _cells_hist(
    c: float, a_lo: int, a_hi: int, alpha: float, h: float, top: int
) -> tuple[np.ndarray, np.ndarray, float] | None:
    """The same binned by cells: the loss of A = a is log((alpha r + ab) / (ab r + alpha)) with
    r = a / (c - a + 1), increasing in a, so the A charged cell k (loss <= k h) are an interval
    whose upper end solves for r; its P mass is a difference of Bin(c, 1/2) CDFs.  None when
    the window is too short for this to pay."""
    alpha_bar = 1.0 - alpha

    def loss_of(a: float) -> float:
        if a > c:  # A = c + 1: only the differing user's report, the loss is eps0
            return math.log(alpha / alpha_bar)
        r = a / (c - a + 1.0)
        return math.log(alpha * r + alpha_bar) - math.log(alpha_bar * r + alpha)

    k_lo = math.ceil(loss_of(a_lo) / h) - 1
    k_hi = math.ceil(loss_of(a_hi) / h) + 1
    if (a_hi - a_lo + 1) < CELL_BINNING_RATIO * (k_hi - k_lo + 1) or not -top < k_lo < k_hi < top:
        return None
    ks = np.arange(k_lo, k_hi + 1, dtype=np.float64)
    e_l = np.exp((ks - EDGE_MARGIN) * h)
    # loss(r) <= L  <=>  r <= (alpha e^L - ab) / (alpha - ab e^L)  <=>  a <= (c + 1) t with
    # t = r / (1 + r) = (alpha e^L - ab) / ((alpha - ab)(1 + e^L)) (>= 1 when L >= eps0: all a)
    t = (alpha * e_l - alpha_bar) / ((alpha - alpha_bar) * (1.0 + e_l))
    ends = np.clip(np.floor((c + 1.0) * t), a_lo - 1, a_hi)
    ends[-1] = a_hi  # the last cell was chosen above loss(a_hi): it takes the rest
    cuts = np.concatenate(([a_lo - 1.0], ends))
    # P(A <= e) = alpha F(e - 1) + (1 - alpha) F(e), F the Bin(c, 1/2) CDF; above the median
    # from the survival function (the smaller side there, so its relative error is on it)
    low = cuts < 0.5 * c
    lc, hc = cuts[low], cuts[~low]
    below = alpha * stats.binom.cdf(lc - 1.0, c, 0.5) + alpha_bar * stats.binom.cdf(lc, c, 0.5)
    above = alpha * stats.binom.sf(hc - 1.0, c, 0.5) + alpha_bar * stats.binom.sf(hc, c, 0.5)
    le = np.concatenate((below, 1.0 - above))
    mass = np.maximum(np.diff(le), 0.0)
    # each value within CDF_REL_ERR of its smaller side plus a roundoff, used in two
    # differences; doubled
    err = 4.0 * (CDF_REL_ERR * float(below.sum() + above.sum()) + 2.0 * len(le) * _U)
    return ks.astype(np.int64) + top, mass, err


def clone_pld(eps0: float, n: int, p_clone: float, weight: float, h: float, tail: float) -> LossDistribution:
    """The pessimistic PLD of one round of the clone pair (local level eps0, clone probability
    p_clone, informative weight ``weight``) on the grid h."""
    c0 = math.exp(-eps0)
    alpha = 1.0 / (1.0 + c0)
    m = n - 1
    law = stats.binom(m, p_clone)
    edges, inf_mass = _block_edges(law, m, tail)
    cdf = law.cdf(edges.astype(np.float64) - 1.0)
    block_mass = np.maximum(np.diff(cdf), 0.0)
    top = math.ceil(eps0 / h) + 1
    hist = np.zeros(2 * top + 1)  # index i <-> loss (i - top) h
    hist[top] += 1.0 - weight  # the uninformative branch: loss 0
    cells_err = 0.0
    for c, w_c in zip(edges[:-1], block_mass, strict=True):
        a_lo, a_hi = _a_window(float(c))
        binned = _cells_hist(float(c), a_lo, a_hi, alpha, h, top)
        if binned is None:
            idx, p = _values_hist(float(c), a_lo, a_hi, alpha, h, top)
        else:
            idx, p, cell_err = binned
            cells_err += weight * w_c * cell_err
        np.add.at(hist, idx, weight * w_c * p)
        inf_mass += weight * w_c * max(1.0 - float(p.sum()), 0.0)  # A outside its window
    # each block mass is a CDF difference (CDF values within CDF_REL_ERR relative): twice it
    err = 2.0 * CDF_REL_ERR * float(block_mass.sum()) + 4.0 * len(edges) * _U + cells_err
    return LossDistribution(hist, -top, h, min(inf_mass, 1.0), err)


def _trim(pld: LossDistribution) -> LossDistribution:
    """The same law without the exact zeros at either end of its grid (the FFT error bound grows
    with the length: a one-round PLD at large n occupies a few cells of a grid sized for eps0)."""
    nz = np.flatnonzero(pld.mass)
    if nz.size == 0 or (nz[0] == 0 and nz[-1] == len(pld.mass) - 1):
        return pld
    first, last = int(nz[0]), int(nz[-1])
    return LossDistribution(pld.mass[first : last + 1], pld.offset + first, pld.h, pld.inf, pld.err)


def _convolve(
    a: LossDistribution, b: LossDistribution, floor: int, *, lower: bool = False
) -> LossDistribution:
    size = len(a.mass) + len(b.mass) - 1
    small = min(len(a.mass), len(b.mass)) <= 64
    out = np.convolve(a.mass, b.mass) if small else signal.fftconvolve(a.mass, b.mass)
    fresh = FFT_ERR_FACTOR * _U * math.log2(max(size, 2)) * math.sqrt(size)
    fresh *= float(np.linalg.norm(a.mass) * np.linalg.norm(b.mass)) * size
    out = np.maximum(out, 0.0)
    offset = a.offset + b.offset
    if offset < floor:
        cut = floor - offset
        # upper bound: raise losses below the floor to it; lower bound: drop them (to -inf)
        head = [out[: cut + 1].sum()] if not lower else [out[cut]]
        out = np.concatenate((head, out[cut + 1 :]))
        offset = floor
    inf = 1.0 - (1.0 - a.inf) * (1.0 - b.inf)
    return LossDistribution(out, offset, a.h, inf, a.err + b.err + fresh)


def compose(
    pld: LossDistribution, rounds: int, floor_loss: float, *, lower: bool = False
) -> LossDistribution:
    """The T-fold composition (binary powering), losses below ``-floor_loss`` raised to it (or,
    for a lower-bound PLD, dropped)."""
    floor = -math.ceil(floor_loss / pld.h)
    result: LossDistribution | None = None
    base = _trim(pld)
    t = rounds
    while t:
        if t & 1:
            result = base if result is None else _convolve(result, base, floor, lower=lower)
        t >>= 1
        if t:
            base = _convolve(base, base, floor, lower=lower)
    assert result is not None
    return result


def pld_delta(pld: LossDistribution, eps: float) -> float:
    """Upper bound on delta(eps): E[(1 - e^(eps - L))_+] + the +inf atom + the error bound."""
    losses = (pld.offset + np.arange(len(pld.mass))) * pld.h
    keep = losses > eps
    body = float(np.dot(pld.mass[keep], -np.expm1(eps - losses[keep])))
    return min(body * (1.0 + _SUM_REL_ERR) + pld.inf + pld.err, 1.0)


def explicit_pld(p: np.ndarray, q: np.ndarray, h: float, top_loss: float) -> LossDistribution:
    """The PLD of an explicit pair of laws (P, Q on the same atoms) for a **lower** bound: losses
    rounded down to the grid h (and down to ``top_loss`` at most; atoms with Q = 0 count there),
    atoms with P = 0 dropped; ``err`` covers the mass total's rounding (a relative ``_SUM_REL_ERR``)."""
    top = math.ceil(top_loss / h) + 1
    keep = p > 0.0
    with np.errstate(divide="ignore"):
        loss = np.where(
            q[keep] > 0.0, np.log(p[keep]) - np.log(np.where(q[keep] > 0.0, q[keep], 1.0)), np.inf
        )
    grid = np.minimum(loss / h, float(top))
    idx = (
        np.clip(np.floor(grid - np.abs(grid) * _GRID_REL_NUDGE - _GRID_ABS_NUDGE), -top, top).astype(np.int64)
        + top
    )
    hist = np.zeros(2 * top + 1)
    np.add.at(hist, idx, p[keep])
    return LossDistribution(hist, -top, h, 0.0, _SUM_REL_ERR * float(p.sum()))


def pld_delta_lower(pld: LossDistribution, eps: float) -> float:
    """Lower bound on delta(eps) from a lower-bound PLD (rounded down, errors subtracted)."""
    losses = (pld.offset + np.arange(len(pld.mass))) * pld.h
    keep = losses > eps
    body = float(np.dot(pld.mass[keep], -np.expm1(eps - losses[keep])))
    return max(body * (1.0 - _SUM_REL_ERR) - pld.err, 0.0)
