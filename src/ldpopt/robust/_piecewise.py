r"""Worst cases for the piecewise-linear divergences (TV and :math:`E_\gamma`), with certificates.

For channels :math:`M_1,\dots,M_n` (k x m_i) and a pair P = (P0, P1) write
:math:`z_i(P) = M_i^\top P_0 - \gamma M_i^\top P_1` (:math:`\gamma = 1` for TV) and
:math:`G_i(P) = \sum_y z_{i,y}(P)^+`.  On distributions :math:`G_i` is the divergence itself:
:math:`E_\gamma` by definition, and TV because :math:`\sum_y z_{i,y} = 0` there, so
:math:`\sum_y z^+ = \tfrac12\sum_y|z|`.  The problem solved is

.. math:: V = \min_{P\in U_0\times U_1}\ \max_i G_i(P)

(n = 1: the worst case W of one channel; n > 1: the restricted master of the outer search).

**Lower bound (proven for any multipliers).**  For :math:`\mu \ge 0`, :math:`\sum_i\mu_i\le 1`
and :math:`0\le\Lambda_{i,y}\le\mu_i`, every P has
:math:`\sum_{i,y}\Lambda_{i,y}z_{i,y}(P)\le\sum_i\mu_iG_i(P)\le\max_iG_i(P)`, and the left side
is linear in P, so

.. math:: V \ \ge\ \sum_{j=0,1}\min_{s\in U_j}\langle g_j, s\rangle,\qquad
   g_0=\textstyle\sum_iM_i\Lambda_i,\ g_1=-\gamma\sum_iM_i\Lambda_i,

evaluated with the sets' exact linear minimisation oracles.  The multipliers come from a
solver (projected onto the constraints above first), so the bound holds whatever the solver
returned; only its tightness depends on it.  **Upper bound**: the divergence at a point of the
sets (repaired).

**Solvers.**  Polytope sets (total variation, contamination): the epigraph LP (one variable per
output and channel) by ``scipy.optimize.linprog`` (HiGHS); its duals are :math:`(\Lambda,\mu)`.
KL balls (not polytopes): Kelley's cutting planes on the concave dual
:math:`h(\Lambda,\mu) = \min_{P\in U}\sum\Lambda_{i,y}z_{i,y}(P)` (an LP master over the
points the LMO returned; the master's duals mix those points into a primal point of the
convex sets), stopped at a relative gap or an iteration cap: it may end uncertified.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ldpopt.divergences import CODE_EGAMMA, CODE_TV, FDivergence
from ldpopt.robust.uncertainty import Neighbourhood

__all__ = ["PIECEWISE", "PiecewiseSolution", "gamma_of", "solve_piecewise"]

PIECEWISE = (CODE_TV, CODE_EGAMMA)
#: Kelley's method stops when its proven gap is below this, relative (100 times tighter than
#: the 1e-8 of a certified design, so the outer bounds keep a margin) ...
_KELLEY_RTOL = 1e-10
#: ... or after this many LMO points (each adds one cut to an LP in sum(m_i) + n + 1 variables)
_KELLEY_MAXITER = 300
#: SLSQP on the KL-ball epigraph problem (linear objective scaled to order 1): its final steps
#: are superlinear; the bounds do not depend on it (re-derived from the point and multipliers)
_SLSQP_FTOL = 1e-15
_SLSQP_MAXITER = 400
#: lower bound of a KL-ball variable on the support of the centre (log needs P > 0)
_KL_FLOOR = 1e-300


def gamma_of(div: FDivergence) -> float:
    """The gamma of the hinge form: 1 for TV, the divergence's own for E_gamma."""
    return 1.0 if div.code == CODE_TV else float(div.param)


@dataclass(frozen=True)
class PiecewiseSolution:
    """``lower <= min_P max_i G_i(P) <= upper``; ``pair`` (in the sets) attains ``upper``;
    ``weights`` the multipliers mu (the mixture optimal against ``pair``)."""

    lower: float
    upper: float
    pair: tuple[np.ndarray, np.ndarray]
    weights: np.ndarray


def _value(mats, div: FDivergence, pair) -> float:
    """max_i D_f(M_i^T P0 || M_i^T P1), each a compensated sum of the divergence's own terms."""
    return max(max(0.0, math.fsum(div.perspective(pair[0] @ M, pair[1] @ M).tolist())) for M in mats)


def _dual_bound(mats, gamma, sides, lam_blocks, mu) -> float:
    """The proven lower bound of the module docstring at multipliers (Lambda, mu), projected first."""
    mu = np.clip(np.nan_to_num(np.asarray(mu, dtype=float)), 0.0, None)
    total = mu.sum()
    if total > 1.0:
        mu = mu / total * (1.0 - 1e-16)  # sum mu <= 1 after the division's rounding
    g = np.zeros(mats[0].shape[0])
    for M, lam, mi in zip(mats, lam_blocks, mu, strict=True):
        g = g + M @ np.clip(np.nan_to_num(np.asarray(lam, dtype=float)), 0.0, mi)
    g0, g1 = g, -gamma * g
    s0, s1 = sides[0].lmo(g0), sides[1].lmo(g1)
    return math.fsum(np.concatenate([g0 * s0, g1 * s1]).tolist())


def _hinge_multipliers(mats, gamma, pair):
    """Multipliers read off a point: the indicator of z > 0 on the largest G_i there."""
    zs = [pair[0] @ M - gamma * (pair[1] @ M) for M in mats]
    best = int(np.argmax([math.fsum(np.clip(z, 0.0, None).tolist()) for z in zs]))
    lam = [np.where(z > 0, 1.0, 0.0) if i == best else np.zeros(z.size) for i, z in enumerate(zs)]
    mu = np.zeros(len(mats))
    mu[best] = 1.0
    return lam, mu


def solve_piecewise(mats: list[np.ndarray], div: FDivergence, sides, start) -> PiecewiseSolution:
    """min over the sets of max_i D_f(M_i^T P0 || M_i^T P1) for TV / E_gamma, with proven bounds."""
    gamma = gamma_of(div)
    if sides[0].model != "kl":
        return _lp(mats, div, gamma, sides, start)
    first = _epigraph_slsqp(mats, div, gamma, sides, start)
    if first.upper - first.lower <= _KELLEY_RTOL * first.upper:
        return first
    second = _kelley(mats, div, gamma, sides, first.pair)
    lower = max(first.lower, second.lower)
    chosen = second if second.upper < first.upper else first
    return PiecewiseSolution(min(lower, chosen.upper), chosen.upper, chosen.pair, chosen.weights)


# ---------------------------------------------------------------------------------------------
# polytopes: the epigraph LP
# ---------------------------------------------------------------------------------------------
def _side_rows(nb: Neighbourhood, col: int, ecol: int, nvar: int):
    """Constraints of one side on P (columns col..col+k) and, for TV, e >= |P - c| (ecol..)."""
    k, c, r = nb.center.size, nb.center, nb.radius
    a_ub: list[np.ndarray] = []
    b_ub: list[float] = []
    a_eq = np.zeros((1, nvar))
    a_eq[0, col : col + k] = 1.0
    bounds = [(0.0, 1.0)] * k
    if r == 0.0:
        bounds = [(float(ci), float(ci)) for ci in c]
    elif nb.model == "contamination":  # P = (1 - r) c + r h  <=>  P >= (1 - r) c, sum P = 1
        bounds = [(float((1.0 - r) * ci), 1.0) for ci in c]
    elif nb.model == "tv":  # -e <= P - c <= e, sum e <= 2 r
        for x in range(k):
            row = np.zeros(nvar)
            row[col + x], row[ecol + x] = 1.0, -1.0
            a_ub.append(row)
            b_ub.append(c[x])
            row = np.zeros(nvar)
            row[col + x], row[ecol + x] = -1.0, -1.0
            a_ub.append(row)
            b_ub.append(-c[x])
        row = np.zeros(nvar)
        row[ecol : ecol + k] = 1.0
        a_ub.append(row)
        b_ub.append(2.0 * r)
    return a_ub, b_ub, a_eq, bounds


def _lp(mats, div, gamma, sides, start) -> PiecewiseSolution:
    from scipy.optimize import linprog

    k = sides[0].center.size
    n = len(mats)
    sizes = [M.shape[1] for M in mats]
    mt = sum(sizes)
    tv = sides[0].model == "tv"
    ne = k if tv else 0
    # variables: P0 (k), P1 (k), e0 (ne), e1 (ne), t (mt), theta
    o_t = 2 * k + 2 * ne
    nvar = o_t + mt + 1
    a_ub: list[np.ndarray] = []
    b_ub: list[float] = []
    off = o_t
    for M, m in zip(mats, sizes, strict=True):  # M^T P0 - gamma M^T P1 - t <= 0
        block = np.zeros((m, nvar))
        block[:, :k] = M.T
        block[:, k : 2 * k] = -gamma * M.T
        block[:, off : off + m] = -np.eye(m)
        a_ub.extend(block)
        b_ub.extend([0.0] * m)
        off += m
    off = o_t
    for m in sizes:  # sum_y t_i - theta <= 0
        row = np.zeros(nvar)
        row[off : off + m] = 1.0
        row[-1] = -1.0
        a_ub.append(row)
        b_ub.append(0.0)
        off += m
    rows0 = _side_rows(sides[0], 0, 2 * k, nvar)
    rows1 = _side_rows(sides[1], k, 2 * k + ne, nvar)
    a_ub += rows0[0] + rows1[0]
    b_ub += rows0[1] + rows1[1]
    bounds = rows0[3] + rows1[3] + [(0.0, None)] * (2 * ne + mt) + [(0.0, None)]
    cost = np.zeros(nvar)
    cost[-1] = 1.0
    res = linprog(
        cost,
        A_ub=np.asarray(a_ub),
        b_ub=np.asarray(b_ub),
        A_eq=np.vstack([rows0[2], rows1[2]]),
        b_eq=np.ones(2),
        bounds=bounds,
        method="highs",
    )
    if res.status != 0 or res.x is None:  # keep the start: its bounds are still proven
        return _from_point(mats, div, gamma, sides, start, None)
    pair = (res.x[:k], res.x[k : 2 * k])
    marg = -np.asarray(res.ineqlin.marginals, dtype=float)
    lam, off = [], 0
    for m in sizes:
        lam.append(marg[off : off + m])
        off += m
    mu = marg[mt : mt + n]
    return _from_point(mats, div, gamma, sides, pair, (lam, mu))


def _from_point(mats, div, gamma, sides, point, duals) -> PiecewiseSolution:
    """Bounds at a solver's point: upper = the divergence at its repair, lower = the best of the
    dual bounds at the solver's multipliers and at the point's own hinge pattern."""
    pair = (sides[0].repair(point[0]), sides[1].repair(point[1]))
    upper = _value(mats, div, pair)
    cands = [_hinge_multipliers(mats, gamma, pair)]
    if duals is not None:
        cands.append(duals)
    best_lower, best_mu = -math.inf, cands[0][1]
    for lam, mu in cands:
        lo = _dual_bound(mats, gamma, sides, lam, mu)
        if lo > best_lower:
            best_lower, best_mu = lo, np.asarray(mu, dtype=float)
    weights = duals[1] if duals is not None else best_mu
    weights = np.clip(np.nan_to_num(np.asarray(weights, dtype=float)), 0.0, None)
    weights = weights / weights.sum() if weights.sum() > 0 else np.full(len(mats), 1.0 / len(mats))
    return PiecewiseSolution(min(max(best_lower, 0.0), upper), upper, pair, weights)


# ---------------------------------------------------------------------------------------------
# KL balls: the epigraph problem by SLSQP (linear objective and cuts, one smooth convex
# constraint per side), then, if its certificate does not close, Kelley's cutting planes
# ---------------------------------------------------------------------------------------------
def _kl_constraint(nb: Neighbourhood, col: int, nvar: int) -> list[dict]:
    c, r, k = nb.center, nb.radius, nb.center.size
    pos = np.flatnonzero(c > 0)
    j1 = np.zeros(nvar)
    j1[col : col + k] = 1.0
    cons = [{"type": "eq", "fun": lambda x: np.sum(x[col : col + k]) - 1.0, "jac": lambda x: j1}]

    def fun(x):
        z = x[col + pos]
        return r - float(np.sum(c[pos] * np.log(c[pos] / z)))

    def jac(x):
        out = np.zeros(nvar)
        out[col + pos] = c[pos] / x[col + pos]
        return out

    if r > 0.0:
        cons.append({"type": "ineq", "fun": fun, "jac": jac})
    return cons


def _epigraph_slsqp(mats, div, gamma, sides, start) -> PiecewiseSolution:
    from scipy.optimize import minimize

    k = sides[0].center.size
    n = len(mats)
    sizes = [M.shape[1] for M in mats]
    mt = sum(sizes)
    nvar = 2 * k + mt + 1  # P0, P1, t, theta
    big = np.zeros((mt, nvar))  # t - M^T P0 + gamma M^T P1 >= 0
    off = 0
    for M, m in zip(mats, sizes, strict=True):
        big[off : off + m, :k] = -M.T
        big[off : off + m, k : 2 * k] = gamma * M.T
        big[off : off + m, 2 * k + off : 2 * k + off + m] = np.eye(m)
        off += m
    top = np.zeros((n, nvar))  # theta - sum_y t_i >= 0
    off = 0
    for i, m in enumerate(sizes):
        top[i, 2 * k + off : 2 * k + off + m] = -1.0
        top[i, -1] = 1.0
        off += m
    eqs = _kl_constraint(sides[0], 0, nvar) + _kl_constraint(sides[1], k, nvar)
    cons = [e for e in eqs if e["type"] == "eq"]
    cons += [
        {"type": "ineq", "fun": lambda x: big @ x, "jac": lambda x: big},
        {"type": "ineq", "fun": lambda x: top @ x, "jac": lambda x: top},
    ]
    cons += [e for e in eqs if e["type"] == "ineq"]
    bounds: list[tuple[float, float | None]] = []
    for nb in sides:
        if nb.radius == 0.0:
            bounds += [(float(ci), float(ci)) for ci in nb.center]
        else:
            bounds += [(_KL_FLOOR if ci > 0 else 0.0, 1.0) for ci in nb.center]
    bounds += [(0.0, None)] * (mt + 1)
    zs = np.concatenate([start[0] @ M - gamma * (start[1] @ M) for M in mats])
    t0 = np.clip(zs, 0.0, None)
    theta0 = max(math.fsum(b.tolist()) for b in np.split(t0, np.cumsum(sizes)[:-1]))
    scale = 1.0 / max(theta0, 1e-12)
    cost = np.zeros(nvar)
    cost[-1] = scale
    x0 = np.concatenate([start[0], start[1], t0, [theta0]])
    with np.errstate(all="ignore"):
        res = minimize(
            lambda x: float(cost @ x),
            x0,
            jac=lambda x: cost,
            method="SLSQP",
            bounds=bounds,
            constraints=cons,
            options={"ftol": _SLSQP_FTOL, "maxiter": _SLSQP_MAXITER},
        )
    mult = np.asarray(getattr(res, "multipliers", np.zeros(0)), dtype=float).ravel() / scale
    n_eq = sum(1 for e in cons if e["type"] == "eq")
    duals = None
    if mult.size >= n_eq + mt + n:
        lam = np.split(mult[n_eq : n_eq + mt], np.cumsum(sizes)[:-1])
        duals = (lam, mult[n_eq + mt : n_eq + mt + n])
    best = _from_point(mats, div, gamma, sides, start, None)
    found = _from_point(mats, div, gamma, sides, (res.x[:k], res.x[k : 2 * k]), duals)
    chosen = found if found.upper <= best.upper else best
    return PiecewiseSolution(
        min(max(best.lower, found.lower), chosen.upper), chosen.upper, chosen.pair, chosen.weights
    )


# ---------------------------------------------------------------------------------------------
# KL balls: Kelley's cutting planes on the dual
# ---------------------------------------------------------------------------------------------
def _kelley(mats, div, gamma, sides, start) -> PiecewiseSolution:
    from scipy.optimize import linprog

    n = len(mats)
    sizes = [M.shape[1] for M in mats]
    mt = sum(sizes)
    nvar = mt + n + 1  # Lambda (mt), mu (n), theta

    def zvec(pair):
        return np.concatenate([pair[0] @ M - gamma * (pair[1] @ M) for M in mats])

    first = _from_point(mats, div, gamma, sides, start, None)
    best = first
    points = [first.pair]
    lam, mu = _hinge_multipliers(mats, gamma, first.pair)
    g = sum((M @ li for M, li in zip(mats, lam, strict=True)), np.zeros(mats[0].shape[0]))
    points.append((sides[0].lmo(g), sides[1].lmo(-gamma * g)))
    # Lambda_{i,y} - mu_i <= 0
    cap = np.zeros((mt, nvar))
    cap[:, :mt] = np.eye(mt)
    off = 0
    for i, m in enumerate(sizes):
        cap[off : off + m, mt + i] = -1.0
        off += m
    a_eq = np.zeros((1, nvar))
    a_eq[0, mt : mt + n] = 1.0
    cost = np.zeros(nvar)
    cost[-1] = -1.0
    bounds = [(0.0, None)] * (mt + n) + [(None, None)]
    for _ in range(_KELLEY_MAXITER):
        cuts = np.array([np.concatenate([-zvec(p), np.zeros(n), [1.0]]) for p in points])
        res = linprog(
            cost,
            A_ub=np.vstack([cuts, cap]),
            b_ub=np.zeros(len(points) + mt),
            A_eq=a_eq,
            b_eq=np.ones(1),
            bounds=bounds,
            method="highs",
        )
        if res.status != 0 or res.x is None:
            break
        x = res.x
        lam = np.split(x[:mt], np.cumsum(sizes)[:-1])
        mu = x[mt : mt + n]
        # the master's duals on the cuts mix the points into a point of the (convex) sets
        omega = np.clip(-np.asarray(res.ineqlin.marginals[: len(points)], dtype=float), 0.0, None)
        if omega.sum() > 0:
            omega = omega / omega.sum()
            mix = (
                sum((w * p[0] for w, p in zip(omega, points, strict=True)), np.zeros_like(points[0][0])),
                sum((w * p[1] for w, p in zip(omega, points, strict=True)), np.zeros_like(points[0][1])),
            )
            cand = _from_point(mats, div, gamma, sides, mix, (lam, mu))
        else:
            cand = best
        lo = _dual_bound(mats, gamma, sides, lam, mu)
        # the LMO point of the multipliers is itself a primal candidate (on a strictly convex
        # set it is THE minimiser once the multipliers are optimal)
        g = sum(
            (M @ np.clip(li, 0.0, None) for M, li in zip(mats, lam, strict=True)), np.zeros(mats[0].shape[0])
        )
        pt = (sides[0].lmo(g), sides[1].lmo(-gamma * g))
        at_pt = _from_point(mats, div, gamma, sides, pt, (lam, mu))
        if at_pt.upper < cand.upper:
            cand = at_pt
        best = PiecewiseSolution(
            max(best.lower, cand.lower, min(lo, cand.upper)),
            min(best.upper, cand.upper),
            cand.pair if cand.upper <= best.upper else best.pair,
            cand.weights if cand.upper <= best.upper else best.weights,
        )
        if best.upper - best.lower <= _KELLEY_RTOL * best.upper:
            break
        points.append(pt)
    lower = min(max(best.lower, 0.0), best.upper)
    return PiecewiseSolution(lower, best.upper, best.pair, best.weights)
