r"""The inner convex problems of robust design, each with its own certificate.

For a channel matrix M (k x m; a mixture of channels is one matrix with scaled column blocks,
since :math:`g(x,y)=yf(x/y)` is 1-homogeneous) the worst-case utility is

.. math:: W(M) = \min_{P_0\in U_0,\,P_1\in U_1} F(P_0,P_1),\qquad
   F(P_0,P_1)=\sum_y g\big((M^\top P_0)_y,(M^\top P_1)_y\big),

a convex problem (g is jointly convex, :math:`M^\top P` linear).  A smooth convex F lies above
each of its tangent planes, so for ANY point P (feasible or not) and the linear minimisation
oracle (LMO) of the sets,

.. math:: W(M) \ge F(P) + \sum_{i=0,1}\min_{s\in U_i}\langle\nabla_i F(P), s-P_i\rangle

(the Frank-Wolfe duality-gap bound).  That is the proven lower bound reported as the value;
the point P only decides how tight it is.  P comes from SLSQP on a parametrisation of the sets
(``scipy.optimize``, imported on first use); F at the repaired (feasible) point is a proven
upper bound on W(M), and their difference is the certificate's gap.  For a block
randomized-response channel (k-ary RR, binary, SPR) the problem is separable and the point comes
from the barrier method of :mod:`ldpopt.robust._separable` instead (SLSQP only if that leaves a
gap), certified the same way.

The gradient of the perspective: :math:`\partial_x g = f'(t)`,
:math:`\partial_y g = f(t)-tf'(t)` with :math:`t=x/y`; both are finite because every used
output of an eps-LDP channel has probability >= e^{-eps} max_x Q(y|x) > 0 under every input
distribution.  The piecewise-linear TV and E_gamma (no gradient at t = gamma) are solved by
:mod:`ldpopt.robust._piecewise` (an LP / cutting planes with a dual certificate); user-supplied
generators have no closed-form derivative and are refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ldpopt.divergences import (
    CODE_CHI2,
    CODE_HELLINGER,
    CODE_JS,
    CODE_KL,
    CODE_POWER_DOWN,
    CODE_POWER_UP,
    CODE_REVERSE_KL,
    FDivergence,
)
from ldpopt.robust._piecewise import PIECEWISE, solve_piecewise
from ldpopt.robust._separable import block_rr, derivatives, solve_block_rr
from ldpopt.robust.uncertainty import Neighbourhood

__all__ = [
    "SUPPORTED",
    "Certified",
    "check_divergence",
    "lower_bound",
    "max_min_weights",
    "objective",
    "solve_inner",
    "solve_master",
    "tangent_weights",
]

SUPPORTED = ("kl", "reverse_kl", "chi2", "hellinger", "js", "renyi:ALPHA", "tv", "egamma:GAMMA")
_SMOOTH = (CODE_KL, CODE_REVERSE_KL, CODE_CHI2, CODE_HELLINGER, CODE_JS, CODE_POWER_UP, CODE_POWER_DOWN)
#: SLSQP stopping tolerance on the (scaled, order-1) objective: its final steps are
#: superlinear, so this is reached with the iterate within ~1e-8 of a minimiser; the reported
#: bound does not depend on it (it is re-derived from the point by the tangent-plane bound)
_SLSQP_FTOL = 1e-15
_SLSQP_MAXITER = 400
#: the start's certificate is accepted without a solve when its gap is below this, relative
#: (100 times tighter than the 1e-8 of a certified design, so the outer bounds keep a margin)
_DONE_RTOL = 1e-10
#: Kelley's method for the mixture weights stops when its LP bound is within this of the best
#: weights' value (the values are scaled to order 1; ten times below the 1e-10 of _DONE_RTOL)
_KELLEY_TOL = 1e-11
_KELLEY_MAXITER = 200
#: lower bound of a KL-ball variable on the support of the centre (log needs P > 0)
_KL_FLOOR = 1e-300


def check_divergence(div: FDivergence) -> None:
    """Raise a ValueError naming the divergence when robust design does not support it."""
    if div.code not in _SMOOTH and div.code not in PIECEWISE:
        raise ValueError(
            f"robust design needs a built-in divergence ({', '.join(SUPPORTED)}); got "
            f"divergence={div.name!r} (chernoff and user-supplied generators are not supported)"
        )


def _tangent(div: FDivergence, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(f'(t), f(t) - t f'(t)) of the generator (normalised to f'(1) = 0), t > 0."""
    fp, fv, _ = derivatives(div, t)
    return fp, fv


def objective(M: np.ndarray, div: FDivergence, p0: np.ndarray, p1: np.ndarray) -> float:
    """F(P0, P1) = raw D_f(M^T P0 || M^T P1), compensated sum."""
    a, b = p0 @ M, p1 @ M
    terms = div.perspective(a, b)
    return max(0.0, math.fsum(terms.tolist()))


def _gradient(M: np.ndarray, div: FDivergence, p0: np.ndarray, p1: np.ndarray):
    a, b = p0 @ M, p1 @ M
    fp, v = _tangent(div, a / b)
    return M @ fp, M @ v


def lower_bound(M: np.ndarray, div: FDivergence, p0, p1, sides: tuple[Neighbourhood, Neighbourhood]) -> float:
    """The tangent-plane (Frank-Wolfe) lower bound on W(M) at the point (p0, p1), clipped at 0."""
    g0, g1 = _gradient(M, div, p0, p1)
    s0, s1 = sides[0].lmo(g0), sides[1].lmo(g1)
    lin = math.fsum(np.concatenate([g0 * (s0 - p0), g1 * (s1 - p1)]).tolist())
    return max(0.0, objective(M, div, p0, p1) + lin)


# ---------------------------------------------------------------------------------------------
# Parametrisations of the sets for SLSQP: P = base + L x over a box with linear/KL constraints
# ---------------------------------------------------------------------------------------------
class _Param:
    def __init__(self, nb: Neighbourhood, offset: int):
        self.nb, self.offset = nb, offset
        r, k = nb.radius, nb.center.size
        if r == 0.0:
            self.n = 0
        elif nb.model == "contamination":  # P = (1 - r) c + r h, h a distribution
            self.n = k
        elif nb.model == "tv":  # P = c + u - w, 0 <= w <= c, sum u = sum w <= r
            self.n = 2 * k
        else:  # kl: P itself
            self.n = k
        self.k = k

    def point(self, x: np.ndarray) -> np.ndarray:
        nb, k = self.nb, self.k
        if self.n == 0:
            return nb.center
        z = x[self.offset : self.offset + self.n]
        if nb.model == "contamination":
            return (1.0 - nb.radius) * nb.center + nb.radius * z
        if nb.model == "tv":
            return nb.center + z[:k] - z[k:]
        return z

    def pull(self, g: np.ndarray, out: np.ndarray) -> None:
        """Chain rule: add d/dx of <g, P(x)> into ``out``."""
        if self.n == 0:
            return
        sl = slice(self.offset, self.offset + self.n)
        if self.nb.model == "contamination":
            out[sl] += self.nb.radius * g
        elif self.nb.model == "tv":
            out[sl] += np.concatenate([g, -g])
        else:
            out[sl] += g

    def start(self, p: np.ndarray) -> np.ndarray:
        nb = self.nb
        if self.n == 0:
            return np.zeros(0)
        if nb.model == "contamination":
            return (p - (1.0 - nb.radius) * nb.center) / nb.radius
        if nb.model == "tv":
            return np.concatenate([np.clip(p - nb.center, 0.0, None), np.clip(nb.center - p, 0.0, None)])
        return np.maximum(p, np.where(nb.center > 0, _KL_FLOOR, 0.0))

    def bounds(self) -> list[tuple[float, float]]:
        nb, k = self.nb, self.k
        if self.n == 0:
            return []
        if nb.model == "contamination":
            return [(0.0, 1.0)] * k
        if nb.model == "tv":
            return [(0.0, 1.0)] * k + [(0.0, float(ci)) for ci in nb.center]
        return [(_KL_FLOOR if ci > 0 else 0.0, 1.0) for ci in nb.center]

    def constraints(self, nvar: int) -> list[dict]:
        nb, k, o, n = self.nb, self.k, self.offset, self.n
        if n == 0:
            return []

        def vec(head: np.ndarray) -> np.ndarray:
            out = np.zeros(nvar)
            out[o : o + head.size] = head
            return out

        if nb.model == "contamination":
            j = vec(np.ones(k))
            return [{"type": "eq", "fun": lambda x: np.sum(x[o : o + n]) - 1.0, "jac": lambda x: j}]
        if nb.model == "tv":
            je = vec(np.concatenate([np.ones(k), -np.ones(k)]))
            ji = vec(np.concatenate([-np.ones(k), np.zeros(k)]))
            return [
                {
                    "type": "eq",
                    "fun": lambda x: np.sum(x[o : o + k]) - np.sum(x[o + k : o + n]),
                    "jac": lambda x: je,
                },
                {"type": "ineq", "fun": lambda x: nb.radius - np.sum(x[o : o + k]), "jac": lambda x: ji},
            ]
        c = nb.center
        pos = c > 0
        j1 = vec(np.ones(k))

        def kl_fun(x):
            z = x[o : o + n]
            return nb.radius - float(np.sum(c[pos] * np.log(c[pos] / z[pos])))

        def kl_jac(x):
            z = x[o : o + n]
            head = np.zeros(k)
            head[pos] = c[pos] / z[pos]
            return vec(head)

        return [
            {"type": "eq", "fun": lambda x: np.sum(x[o : o + n]) - 1.0, "jac": lambda x: j1},
            {"type": "ineq", "fun": kl_fun, "jac": kl_jac},
        ]


def _params(sides):
    p0 = _Param(sides[0], 0)
    p1 = _Param(sides[1], p0.n)
    return p0, p1, p0.n + p1.n


@dataclass(frozen=True)
class Certified:
    """A worst case with its certificate: ``lower <= W(M) <= upper`` (raw f-divergence units);
    ``pair`` (in the sets) attains ``upper``."""

    lower: float
    upper: float
    pair: tuple[np.ndarray, np.ndarray]


def _certify(M, div, sides, x_pair) -> Certified:
    """Bounds from a solver's point: lower by the tangent planes at the point itself and at its
    repair (both valid), upper by F at the repaired, feasible point."""
    q0, q1 = sides[0].repair(x_pair[0]), sides[1].repair(x_pair[1])
    lo = max(lower_bound(M, div, x_pair[0], x_pair[1], sides), lower_bound(M, div, q0, q1, sides))
    up = objective(M, div, q0, q1)
    return Certified(min(lo, up), up, (q0, q1))


def _best(certs: list[Certified]) -> Certified:
    """The largest of the (all valid) lower bounds and the smallest upper bound with its pair."""
    top = min(certs, key=lambda c: c.upper)
    return Certified(min(max(c.lower for c in certs), top.upper), top.upper, top.pair)


def _slsqp(fun, jac, x0, bounds, cons):
    from scipy.optimize import minimize

    with np.errstate(all="ignore"):
        return minimize(
            fun,
            x0,
            jac=jac,
            method="SLSQP",
            bounds=bounds,
            constraints=cons,
            options={"ftol": _SLSQP_FTOL, "maxiter": _SLSQP_MAXITER},
        )


def solve_inner(M: np.ndarray, div: FDivergence, sides, start) -> Certified:
    """W(M) with its certificate, SLSQP from the pair ``start`` (TV / E_gamma: the LP or cutting
    planes of :mod:`ldpopt.robust._piecewise`)."""
    if div.code in PIECEWISE:
        sol = solve_piecewise([M], div, sides, start)
        return Certified(sol.lower, sol.upper, sol.pair)
    pa, pb, n = _params(sides)
    first = _certify(M, div, sides, start)
    if n == 0 or first.upper - first.lower <= _DONE_RTOL * first.upper:
        return first
    rr = block_rr(M)
    if rr is not None:  # k-RR, binary, SPR: the separable barrier solve proposes the pairs
        for pair in solve_block_rr(rr, div, sides):
            first = _best([first, _certify(M, div, sides, pair)])
            if first.upper - first.lower <= _DONE_RTOL * first.upper:
                return first
        start = first.pair
    scale = 1.0 / max(first.upper, 1e-300)

    def fun(x):
        return scale * objective(M, div, pa.point(x), pb.point(x))

    def jac(x):
        g0, g1 = _gradient(M, div, pa.point(x), pb.point(x))
        out = np.zeros(n)
        pa.pull(scale * g0, out)
        pb.pull(scale * g1, out)
        return out

    x0 = np.concatenate([pa.start(start[0]), pb.start(start[1])])
    res = _slsqp(fun, jac, x0, pa.bounds() + pb.bounds(), pa.constraints(n) + pb.constraints(n))
    found = _certify(M, div, sides, (pa.point(res.x), pb.point(res.x)))
    best_lower = max(first.lower, found.lower)
    if found.upper <= first.upper:
        return Certified(best_lower, found.upper, found.pair)
    return Certified(best_lower, first.upper, first.pair)


def solve_master(mats: list[np.ndarray], div: FDivergence, sides, start):
    r"""The restricted master :math:`\min_{P\in U}\max_i F_i(P)` over the channels found so far
    (epigraph form, SLSQP).  Returns (point, weights): the weights are the multipliers of the
    epigraph constraints, normalised (the mixture that is optimal against that point)."""
    if len(mats) == 1:
        return None, np.ones(1)
    if div.code in PIECEWISE:
        sol = solve_piecewise(mats, div, sides, start)
        return sol.pair, sol.weights
    pa, pb, n = _params(sides)
    vals = [objective(M, div, start[0], start[1]) for M in mats]
    scale = 1.0 / max(max(vals), 1e-300)
    nv = n + 1

    def fun(x):
        return x[n]

    def fun_jac(x):
        g = np.zeros(nv)
        g[n] = 1.0
        return g

    def make(M):
        def con(x):
            return x[n] - scale * objective(M, div, pa.point(x), pb.point(x))

        def con_jac(x):
            g0, g1 = _gradient(M, div, pa.point(x), pb.point(x))
            out = np.zeros(nv)
            pa.pull(-scale * g0, out)
            pb.pull(-scale * g1, out)
            out[n] = 1.0
            return out

        return {"type": "ineq", "fun": con, "jac": con_jac}

    cons = [make(M) for M in mats] + pa.constraints(nv) + pb.constraints(nv)
    x0 = np.concatenate([pa.start(start[0]), pb.start(start[1]), [scale * max(vals)]])
    res = _slsqp(fun, fun_jac, x0, pa.bounds() + pb.bounds() + [(0.0, None)], cons)
    pair = (pa.point(res.x), pb.point(res.x))
    lam = tangent_weights(mats, div, sides, pair, _weights(res, len(mats), cons))
    return pair, lam


def tangent_weights(mats, div: FDivergence, sides, point, guess: np.ndarray) -> np.ndarray:
    r"""The mixture weights that maximise the tangent-plane bound at the master's point,

    .. math:: L(\lambda)=\min_{s\in U}\sum_i\lambda_i\big(F_i(P)+\langle\nabla F_i(P),s-P\rangle\big),

    concave (a minimum of functions linear in :math:`\lambda`) and, at the master's optimum P,
    maximised at the master's value (its Lagrange dual).  Computed by Kelley's cutting planes
    (an LP over the simplex per step, a cut per LMO call), so the weights do not depend on the
    multipliers SLSQP reports (absent in older scipy, e.g. 1.11); ``guess`` (the multipliers) is
    the first iterate and is returned when nothing better is found."""
    f = np.array([objective(M, div, point[0], point[1]) for M in mats])
    grads = [_gradient(M, div, point[0], point[1]) for M in mats]
    g0, g1 = np.array([g[0] for g in grads]), np.array([g[1] for g in grads])
    scale = 1.0 / max(float(f.max()), 1e-300)

    def cut(lam):
        s0, s1 = sides[0].lmo(lam @ g0), sides[1].lmo(lam @ g1)
        c = scale * (f + g0 @ (s0 - point[0]) + g1 @ (s1 - point[1]))
        return c, float(lam @ c)

    lam = np.asarray(guess, dtype=float)
    c, val = cut(lam)
    cuts, best, best_val = [c], lam, val
    for _ in range(_KELLEY_MAXITER):
        step = max_min_weights(np.array(cuts))
        if step is None:
            break
        lam, bound = step
        c, val = cut(lam)
        cuts.append(c)
        if val > best_val:
            best, best_val = lam, val
        if bound - best_val <= _KELLEY_TOL:
            break
    return best


def max_min_weights(cuts: np.ndarray, center=None, radius: float = 1.0) -> tuple[np.ndarray, float] | None:
    """max over the simplex (intersected with the box |lam - center| <= radius when a centre is
    given) of min_j <cuts[j], lam> (an LP, HiGHS): (lam, value), or None when the LP fails."""
    from scipy.optimize import linprog

    n, m = cuts.shape
    res = linprog(
        np.concatenate([np.zeros(m), [-1.0]]),
        A_ub=np.hstack([-cuts, np.ones((n, 1))]),
        b_ub=np.zeros(n),
        A_eq=np.concatenate([np.ones(m), [0.0]])[None, :],
        b_eq=[1.0],
        bounds=[(0.0, None)] * m + [(None, None)]
        if center is None
        else [(max(0.0, ci - radius), ci + radius) for ci in center] + [(None, None)],
        method="highs",
    )
    if res.status != 0:
        return None
    lam = np.clip(res.x[:m], 0.0, None)
    return lam / lam.sum(), float(-res.fun)


def _weights(res, count: int, cons: list[dict]) -> np.ndarray:
    """The epigraph multipliers (scipy lists equality multipliers first, then inequalities in order)."""
    mult = np.asarray(getattr(res, "multipliers", np.zeros(0)), dtype=float).ravel()
    n_eq = sum(1 for c in cons if c["type"] == "eq")
    lam = mult[n_eq : n_eq + count] if mult.size >= n_eq + count else np.zeros(count)
    lam = np.clip(np.nan_to_num(lam), 0.0, None)
    total = lam.sum()
    if not total > 0:
        return np.full(count, 1.0 / count)
    return lam / total
