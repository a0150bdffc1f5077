r"""Uncertainty sets around estimated distributions: ``contamination``, ``total_variation``,
``kl_ball`` and the finite-sample confidence sets of ``from_counts``.

An :class:`Uncertainty` describes one neighbourhood of each estimate :math:`\hat P_0`,
:math:`\hat P_1`; the robust design (:func:`ldpopt.robust_mechanism`) guarantees its utility
for every pair :math:`P_0 \in U_0`, :math:`P_1 \in U_1`:

* ``contamination(d0, d1)``: :math:`U_i = \{(1-\delta_i)\hat P_i + \delta_i H : H \text{ a
  distribution}\}` (Huber's gross-error model), a polytope;
* ``total_variation(r0, r1)``: :math:`U_i = \{P : \tfrac12\|P-\hat P_i\|_1 \le r_i\}`, a polytope;
* ``kl_ball(r0, r1)``: :math:`U_i = \{P : D_{KL}(\hat P_i \| P) \le r_i\}` (the estimate first,
  as in the method-of-types bound), a convex set;
* ``from_counts(counts0, counts1, confidence, model)``: the centres are the empirical
  distributions and the radii make :math:`P_0 \in U_0` and :math:`P_1 \in U_1` hold together
  with probability at least ``confidence`` (each side at :math:`1-\alpha/2`, union bound):

  - ``model="tv"``: the L1 deviation inequality of Weissman, Ordentlich, Seroussi, Verdu and
    Weinberger (2003), :math:`\Pr(\|\hat P_n-P\|_1\ge t)\le(2^k-2)e^{-nt^2/2}`, so
    :math:`r=\tfrac12\sqrt{2(\log(2^k-2)+\log(2/\alpha))/n}`;
  - ``model="kl"``: the method of types (Cover and Thomas, Thm 11.2.1, with the exact number
    of types :math:`\binom{n+k-1}{k-1}`), :math:`\Pr(D(\hat P_n\|P)\ge r)\le\binom{n+k-1}{k-1}
    e^{-nr}`, so :math:`r=(\log\binom{n+k-1}{k-1}+\log(2/\alpha))/n`.

Each side is a :class:`Neighbourhood` (centre + radius) with the pieces the solvers need: the
linear minimisation oracle (:meth:`Neighbourhood.lmo`), a membership test and a repair that
moves a nearly feasible point into the set.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ldpopt._validation import check_counts, check_distribution, check_real, short_repr

__all__ = [
    "MODELS",
    "Neighbourhood",
    "Uncertainty",
    "contamination",
    "from_counts",
    "kl_ball",
    "total_variation",
]

MODELS = ("contamination", "tv", "kl")
#: membership slack: a pair counts as inside a set when the constraint holds within this much
#: (absolute, in probability units); repaired points satisfy the constraints to ~k ulp
MEMBERSHIP_TOL = 1e-12
#: bisection steps of the KL-ball LMO and repair: each halves a bracket of width <= 1 in
#: log-space (the LMO) or in [0, 1] (the repair); 200 steps reach the float64 resolution
_BISECT_STEPS = 200


@dataclass(frozen=True)
class Neighbourhood:
    """One uncertainty set: ``model`` ("contamination", "tv" or "kl") of ``radius`` around ``center``."""

    model: str
    center: np.ndarray
    radius: float

    # -- membership ------------------------------------------------------------------------
    def distance(self, p: np.ndarray) -> float:
        """How far ``p`` is from the centre in the set's own measure (contamination: the smallest
        delta with p >= (1 - delta) center)."""
        c = self.center
        if self.model == "tv":
            return 0.5 * math.fsum(np.abs(p - c).tolist())
        if self.model == "kl":
            return _kl(c, p)
        pos = c > 0
        if not pos.any():
            return 0.0
        return max(0.0, 1.0 - float(np.min(p[pos] / c[pos])))

    def contains(self, p: np.ndarray, tol: float = MEMBERSHIP_TOL) -> bool:
        """``p`` is a distribution of the set (within ``tol``)."""
        p = np.asarray(p, dtype=float)
        if p.shape != self.center.shape or np.any(p < -tol) or abs(math.fsum(p.tolist()) - 1.0) > tol:
            return False
        return self.distance(p) <= self.radius + tol

    # -- linear minimisation oracle -----------------------------------------------------------
    def lmo(self, g: np.ndarray) -> np.ndarray:
        """A point of the set minimising <g, s> (exact for the polytopes; the KL ball solves its
        1-D dual to float precision)."""
        g = np.asarray(g, dtype=float)
        c, r = self.center, self.radius
        if r == 0.0:
            return c.copy()
        if self.model == "contamination":
            s = (1.0 - r) * c
            s[int(np.argmin(g))] += r
            return s
        if self.model == "tv":
            return _tv_lmo(g, c, r)
        return _kl_lmo(g, c, r)

    # -- repair ---------------------------------------------------------------------------------
    def repair(self, p: np.ndarray) -> np.ndarray:
        """A point of the set next to a nearly feasible ``p`` (a solver's iterate): clipped,
        renormalised and, if still outside, moved towards the centre until inside."""
        c, r = self.center, self.radius
        p = np.clip(np.asarray(p, dtype=float), 0.0, None)
        p = p / math.fsum(p.tolist())
        if r == 0.0:
            return c.copy()
        if self.model == "contamination":
            h = np.clip(p - (1.0 - r) * c, 0.0, None)
            h = h / math.fsum(h.tolist()) if h.sum() > 0 else c
            return (1.0 - r) * c + r * h
        if self.distance(p) <= r:
            return p
        if self.model == "tv":
            return c + (p - c) * (r / self.distance(p))
        lo, hi = 0.0, 1.0  # KL(c || c + t (p - c)) is convex in t, 0 at t = 0
        for _ in range(_BISECT_STEPS):
            mid = 0.5 * (lo + hi)
            if _kl(c, c + mid * (p - c)) <= r:
                lo = mid
            else:
                hi = mid
            if hi - lo <= 1e-17:
                break
        return c + lo * (p - c)


def _kl(c: np.ndarray, p: np.ndarray) -> float:
    """KL(c || p), +inf where p = 0 < c."""
    pos = c > 0
    if np.any(p[pos] <= 0):
        return math.inf
    return max(0.0, math.fsum((c[pos] * np.log(c[pos] / p[pos])).tolist()))


def _tv_lmo(g: np.ndarray, c: np.ndarray, r: float) -> np.ndarray:
    """min <g, s> over 1/2 ||s - c||_1 <= r: move up to r of mass from the largest g to the smallest."""
    s = c.copy()
    j = int(np.argmin(g))
    budget = r
    for i in np.argsort(-g, kind="stable"):
        if budget <= 0.0 or g[i] <= g[j]:
            break
        if i == j:
            continue
        take = min(s[i], budget)
        s[i] -= take
        s[j] += take
        budget -= take
    return s


def _kl_lmo(g: np.ndarray, c: np.ndarray, r: float) -> np.ndarray:
    r"""min <g, s> over KL(c || s) <= r by its dual (KKT): on the support S of c,
    :math:`s_i=\lambda c_i/(g_i+\mu)`; off S, mass only on the smallest g and only when
    :math:`\mu=-\min_{\notin S} g`.  The multiplier :math:`\mu` solves a 1-D monotone equation
    (bisection on :math:`\log(g_i+\mu)` offsets)."""
    S = c > 0
    gs, cs = g[S], c[S]
    gmin = float(gs.min())
    if float(gs.max()) == gmin:
        # <g, s> is constant on the support: the centre is optimal unless g is lower off the support
        out = ~S
        if out.any() and float(g[out].min()) < gmin:
            return _kl_lmo_off_support(g, c, r)
        return c.copy()

    gap = gs - gmin  # exact 0 at the minimum: g_i + mu = gap_i + e^t

    def kl_of(e: float) -> float:  # KL(c || s) with sum s = 1 at mu = -gmin + e; decreasing in e
        d = gap + e
        return math.fsum((cs * np.log(d)).tolist()) + math.log(math.fsum((cs / d).tolist()))

    # bracket mu = gmin * (-1) + e^t; t from log(tiny spread) up to where KL < r
    spread = float(gs.max()) - gmin
    lo_t, hi_t = math.log(spread) - 60.0, math.log(spread) + 60.0
    if kl_of(math.exp(lo_t)) <= r:
        hi_t = lo_t  # r beyond reach: (near) all mass on the argmin of g
    for _ in range(_BISECT_STEPS):
        mid = 0.5 * (lo_t + hi_t)
        if kl_of(math.exp(mid)) > r:
            lo_t = mid
        else:
            hi_t = mid
        if hi_t - lo_t <= 1e-15 * max(1.0, abs(hi_t)):
            break
    e = math.exp(hi_t)
    out = ~S
    if out.any() and float(g[out].min()) < gmin - e:  # mu = -gmin + e below -min g off the support
        return _kl_lmo_off_support(g, c, r)
    s = np.zeros_like(c)
    w = cs / (gap + e)
    s[S] = w / math.fsum(w.tolist())
    return s


def _kl_lmo_off_support(g: np.ndarray, c: np.ndarray, r: float) -> np.ndarray:
    """The KL-ball LMO when the smallest g lies off the support of c: mu = -g_j, the support
    gets s_i = lam c_i / (g_i - g_j) with KL(c || s) = r, the rest of the mass goes to j."""
    S = c > 0
    out_idx = np.flatnonzero(~S)
    j = int(out_idx[np.argmin(g[out_idx])])
    d = g[S] - g[j]
    log_lam = math.fsum((c[S] * np.log(d)).tolist()) - r
    s = np.zeros_like(c)
    s[S] = np.exp(log_lam) * c[S] / d
    total = math.fsum(s[S].tolist())
    if total > 1.0:  # cannot happen at the optimum (mu would be larger); keep s a distribution
        s[S] /= total
        total = 1.0
    s[j] = 1.0 - total
    return s


@dataclass(frozen=True)
class Uncertainty:
    """Uncertainty sets of radii ``r0`` (around P0) and ``r1`` (around P1) of one ``model``.

    ``p0_hat``/``p1_hat`` are set by :func:`from_counts` (the empirical distributions); the
    other constructors leave them ``None`` and the centres are the estimates given to the solver.
    """

    model: str
    r0: float
    r1: float
    p0_hat: np.ndarray | None = field(default=None, repr=False)
    p1_hat: np.ndarray | None = field(default=None, repr=False)
    confidence: float | None = None
    n0: int | None = None
    n1: int | None = None

    def sides(self, p0: np.ndarray, p1: np.ndarray) -> tuple[Neighbourhood, Neighbourhood]:
        """The two neighbourhoods around the estimates ``p0``, ``p1``."""
        return Neighbourhood(self.model, p0, self.r0), Neighbourhood(self.model, p1, self.r1)

    def describe(self) -> str:
        """``"tv:0.02,0.05"``-style text (the CLI's own spelling)."""
        return f"{self.model}:{self.r0:g},{self.r1:g}"


def _radius(value: Any, name: str, upper: float | None) -> float:
    r = check_real(value, name)
    if not (r >= 0.0 and math.isfinite(r)):
        raise ValueError(f"{name} must be a finite number >= 0, got {name}={value!r}")
    if upper is not None and r > upper:
        raise ValueError(f"{name} must be <= {upper:g}, got {name}={value!r}")
    return r


def contamination(delta0: float, delta1: float) -> Uncertainty:
    """epsilon-contamination: P_i = (1 - delta_i) P_hat_i + delta_i H_i for any distribution H_i."""
    return Uncertainty("contamination", _radius(delta0, "delta0", 1.0), _radius(delta1, "delta1", 1.0))


def total_variation(r0: float, r1: float) -> Uncertainty:
    """Total-variation balls: 1/2 ||P_i - P_hat_i||_1 <= r_i."""
    return Uncertainty("tv", _radius(r0, "r0", 1.0), _radius(r1, "r1", 1.0))


def kl_ball(r0: float, r1: float) -> Uncertainty:
    """KL balls: D_KL(P_hat_i || P_i) <= r_i (the estimate first, as in the method of types)."""
    return Uncertainty("kl", _radius(r0, "r0", None), _radius(r1, "r1", None))


def _tv_radius(k: int, n: int, alpha: float) -> float:
    """TV radius r with Pr(1/2 ||P_hat_n - P||_1 >= r) <= alpha (Weissman et al. 2003)."""
    if k < 2:
        return 0.0
    log_terms = k * math.log(2.0) + math.log1p(-(2.0 ** (1 - k)))  # log(2^k - 2)
    return min(1.0, 0.5 * math.sqrt(2.0 * (log_terms + math.log(1.0 / alpha)) / n))


def _kl_radius(k: int, n: int, alpha: float) -> float:
    """KL radius r with Pr(D(P_hat_n || P) >= r) <= alpha (method of types)."""
    log_types = math.lgamma(n + k) - math.lgamma(k) - math.lgamma(n + 1)  # log C(n+k-1, k-1)
    return (log_types + math.log(1.0 / alpha)) / n


def from_counts(counts0: Any, counts1: Any, confidence: float = 0.95, model: str = "tv") -> Uncertainty:
    """A confidence set for (P0, P1) from category counts of independent samples.

    Centres are the empirical distributions (``.p0_hat``, ``.p1_hat``); the radii make
    both true distributions lie in their sets with probability >= ``confidence`` (each side at
    1 - alpha/2; module docstring for the bounds).
    """
    c0 = check_counts(counts0, "counts0")
    c1 = check_counts(counts1, "counts1")
    if c0.shape != c1.shape:
        raise ValueError(f"counts0 and counts1 must have the same length, got {c0.size} and {c1.size}")
    conf = check_real(confidence, "confidence")
    if not 0.0 < conf < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got confidence={confidence!r}")
    if model not in ("tv", "kl"):
        raise ValueError(f"model must be 'tv' or 'kl', got model={model!r}")
    alpha = (1.0 - conf) / 2.0
    k = int(c0.size)
    n0, n1 = int(c0.sum()), int(c1.sum())
    radius = _tv_radius if model == "tv" else _kl_radius
    return Uncertainty(
        model,
        radius(k, n0, alpha),
        radius(k, n1, alpha),
        p0_hat=check_distribution(c0 / n0, "counts0", normalize=True),
        p1_hat=check_distribution(c1 / n1, "counts1", normalize=True),
        confidence=conf,
        n0=n0,
        n1=n1,
    )


def check_uncertainty(value: Any) -> Uncertainty:
    """``value`` must be an :class:`Uncertainty`."""
    if not isinstance(value, Uncertainty):
        raise TypeError(
            "uncertainty must be an ldpopt.uncertainty set (contamination, total_variation, kl_ball or "
            f"from_counts), got uncertainty={short_repr(value)}"
        )
    return value


# ---------------------------------------------------------------------------------------------
# Huber's least-favourable pairs (censored likelihood ratio) at the input
# ---------------------------------------------------------------------------------------------
def huber_pair(model: str, p0: np.ndarray, p1: np.ndarray, r0: float, r1: float):
    r"""The least-favourable pair of two contamination or TV neighbourhoods (Huber 1965; the
    Huber-Strassen pair minimises every f-divergence over the two sets), or ``None`` for the KL
    balls.  Its likelihood ratio :math:`\rho = q_0/q_1` is :math:`\rho = p_0/p_1` censored to
    :math:`[T_{lo}, T_{hi}]`; when the sets intersect, a common point (divergence 0).

    The solvers only use it as a starting point: every bound they report is certified
    independently of it.
    """
    if model == "contamination":
        return _huber_contamination(p0, p1, r0, r1)
    if model == "tv":
        return _huber_tv(p0, p1, r0, r1)
    return None  # a KL ball has no censored-likelihood-ratio pair: the caller starts elsewhere


def _huber_contamination(p0, p1, d0, d1):
    # common point: q >= (1 - d0) p0 and q >= (1 - d1) p1 with total <= 1
    low = np.maximum((1.0 - d0) * p0, (1.0 - d1) * p1)
    if math.fsum(low.tolist()) <= 1.0:
        q = low.copy()
        q[int(np.argmax(low))] += 1.0 - math.fsum(low.tolist())
        return q, q.copy()
    q0 = _raise_to_ratio(p0, p1, d0)
    q1 = _raise_to_ratio(p1, p0, d1)
    return q0, q1


def _raise_to_ratio(a: np.ndarray, b: np.ndarray, d: float) -> np.ndarray:
    """(1 - d) max(a, b / c) with the c that makes it a distribution (Huber's censoring of the
    ratio b / a at c; c -> inf leaves (1 - d) a, whose total 1 - d is too small)."""
    if d == 0.0:
        return a.copy()
    target = 1.0 / (1.0 - d) if d < 1.0 else math.inf
    if math.isinf(target):
        out = np.zeros_like(a)
        out[int(np.argmax(b))] = 1.0
        return out
    # total(c) = sum max(a, b / c) decreases in c; find c with total = target on the sorted ratios
    ratio = np.where(a > 0, b / np.where(a > 0, a, 1.0), np.inf)
    order = np.argsort(-ratio, kind="stable")
    sa, sb = a[order], b[order]
    rest_a = np.concatenate([np.cumsum(sa[::-1])[::-1], [0.0]])  # sum of a over positions >= j
    head_b = np.concatenate([[0.0], np.cumsum(sb)])  # sum of b over positions < j
    for j in range(1, a.size + 1):
        # top j symbols censored: head_b[j] / c + rest_a[j] = target
        need = target - rest_a[j]
        if need <= 0:
            continue
        c = head_b[j] / need
        nxt = ratio[order[j]] if j < a.size else -math.inf
        if c > 0 and ratio[order[j - 1]] >= c >= nxt:
            return (1.0 - d) * np.maximum(a, b / c)
    return a.copy()


def _huber_tv(p0, p1, r0, r1):
    tv = 0.5 * math.fsum(np.abs(p0 - p1).tolist())
    if tv <= r0 + r1:
        w = r0 / (r0 + r1) if r0 + r1 > 0 else 0.0
        q = p0 + w * (p1 - p0)
        return q, q.copy()
    q0, q1 = p0.copy(), p1.copy()
    for sign in (1, -1):  # sign 1: the symbols favouring P0 (ratio p0/p1 high); -1: favouring P1
        a, b, ra, rb = (p0, p1, r0, r1) if sign == 1 else (p1, p0, r1, r0)
        region = _censored_region(a, b, ra, rb)
        if region is None:
            continue
        idx, T = region
        # inside: a' = T b', a' <= a, b' >= b, totals a(R) - ra and b(R) + rb
        head = a[idx] / T - b[idx]
        theta = rb / math.fsum(head.tolist()) if head.sum() > 0 else 0.0
        nb = b[idx] + theta * head
        na = T * nb
        if sign == 1:
            q0[idx], q1[idx] = na, nb
        else:
            q1[idx], q0[idx] = na, nb
    return q0 / math.fsum(q0.tolist()), q1 / math.fsum(q1.tolist())


def _censored_region(a, b, ra, rb):
    """The symbols with the highest ratio a / b whose ratio is lowered to a common T by taking
    ``ra`` from a and giving ``rb`` to b: T = (a(R) - ra) / (b(R) + rb), R = {a / b > T}."""
    ratio = np.where(b > 0, a / np.where(b > 0, b, 1.0), np.inf)
    ratio = np.where(a > 0, ratio, 0.0)
    order = np.argsort(-ratio, kind="stable")
    ca = np.cumsum(a[order])
    cb = np.cumsum(b[order])
    for j in range(1, a.size + 1):
        top = ca[j - 1] - ra
        if top <= 0:
            continue
        T = top / (cb[j - 1] + rb)
        nxt = ratio[order[j]] if j < a.size else 0.0
        if ratio[order[j - 1]] > T >= nxt:
            return order[:j], T
    return None
