r"""The inner problem for block randomized-response channels: separable, solved by a barrier method.

A channel is *block randomized response* when every input x reports its block label
:math:`\beta(x)\in\{1,\dots,l\}` through l-ary randomized response: :math:`Q(y|x)=h` if
:math:`y=\beta(x)`, else :math:`\ell` (k-ary RR: l = k, every block a single symbol; the binary
mechanism and every SPR mechanism are of this form).  Then :math:`M^\top P = aP_B+b` with
:math:`a=h-\ell`, :math:`b=\ell` and :math:`P_B` the block masses, so

.. math:: F(P_0,P_1)=\sum_{B} g(aP_{0,B}+b,\ aP_{1,B}+b),\qquad g(x,y)=yf(x/y),

a sum of jointly convex functions of one block's two masses.  Every uncertainty model maps to
the same model on the block masses (contamination and TV: the image of the set under
aggregation is the set around the aggregated centre; KL ball: data processing gives one
inclusion and the proportional lift :math:`P_i=P_Bc_i/c_B` the other, with equal divergence),
and every set is separable except for a few coupling constraints: the two sums to one, the TV
budget, the KL radius.  The problem is solved on the block masses by a primal log-barrier
method: Newton steps whose Hessian is block diagonal (one small block per symbol) plus a
rank-one term per coupling constraint and the equality rows, solved through a Schur complement
of size <= 4 (Jacobi-scaled, with iterative refinement), so one step costs O(l).  The block
masses are lifted back to a pair in the original sets.  Further candidates, produced only while
the caller's gap is open: Newton on the face of the solution (polytopes) and, for TV balls, the
same problem on the orthant of the solution (the signed form, and the exact-budget form when
the budget is used up; see :class:`_Side`).

This module only *finds* the pair.  The caller certifies it exactly as any other point, on the
original channel: the tangent-plane lower bound and F at the repaired pair
(:func:`ldpopt.robust._inner.lower_bound`), so a wrong detection or an inaccurate solve could
only make the bounds looser, never wrong.  The barrier method leaves a duality gap of at most
(number of barrier terms)/t; it stops when that is below :data:`_GAP_RTOL` of the objective.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from ldpopt.divergences import (
    CODE_CHI2,
    CODE_HELLINGER,
    CODE_JS,
    CODE_KL,
    CODE_POWER_UP,
    CODE_REVERSE_KL,
    FDivergence,
)
from ldpopt.robust.uncertainty import Neighbourhood

__all__ = ["BlockRR", "block_rr", "derivatives", "solve_block_rr"]

#: two entries of a channel count as the same level when they differ by at most this, relative
#: (the library builds both levels by one formula, so they are bit-identical; a file's matrix
#: may carry its decimal rounding).  Detection only decides which solver proposes the pair.
_LEVEL_RTOL = 1e-12
#: the barrier method stops when its duality-gap bound m/t is below this fraction of the
#: objective: 100 times tighter than the 1e-10 the caller accepts without another solve
_GAP_RTOL = 1e-12
#: ... or when the objective falls below this fraction of its start: the transformed sets meet
#: (a relative gap cannot close at F* = 0; the caller reports the bounds uncertified)
_ZERO_RTOL = 1e-20
#: the split solve's TV budget counts as used up when its slack is below this fraction of r
_BUDGET_ACTIVE = 1e-4
#: t grows by this factor per centring (the number of Newton steps per centring grows like
#: log of it; 20 is in the flat middle of the usual 10..100 range)
_MU = 20.0
#: a centring stops when the Newton decrement lambda^2 / 2 is below this (quadratic convergence:
#: the step that reaches it is followed by one at the float resolution) ...
_NEWTON_TOL = 1e-14
#: ... or below this fraction of the barrier value (its rounding: the excess it bounds is then
#: ~1e-14 / t of the scaled objective, far below the duality-gap bound m / t) ...
_CENTER_RTOL = 1e-14
#: ... or after this many Newton steps; and the whole solve after this many centrings
_NEWTON_MAXITER = 60
_OUTER_MAXITER = 40
#: the face of the barrier solution: bounds and couplings within this (probability units) are
#: taken as tight; the final barrier leaves active slacks ~1e-12..1e-10 and inactive ones
#: >> 1e-6, and a degenerate optimum blurs the line, so each value gives a candidate
_ACTIVE_TOLS = (1e-9, 1e-11, 1e-7)
#: Newton steps on that face (quadratic convergence from the barrier's ~1e-9 point) and the
#: relative singular-value cutoff of its (Jacobi-scaled) least-squares KKT solve
_POLISH_STEPS = 8
_POLISH_RCOND = 1e-13
#: ... which stop early after a full step that moved no variable by more than this, relative to
#: the largest: Newton converges quadratically, so the following step would move by ~its square
#: (1e-26), below the float resolution; the steps after a converged one measure ~10 ulp
_POLISH_MOVE_RTOL = 1e-13
#: iterative-refinement steps of each Newton system (its conditioning reaches ~1e20 at the end)
_REFINE = 2
#: fraction of the step to the boundary of the barrier's domain that is taken at most
_TO_BOUNDARY = 0.99
#: Armijo constant and the slack of its comparison (barrier values reach ~1e14 at the end;
#: their rounding is ~1e-16 of that)
_ARMIJO = 1e-4
_ARMIJO_SLACK = 1e-13
_BACKTRACK = 0.5
_BACKTRACK_MAX = 60


def derivatives(div: FDivergence, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(f'(t), f(t) - t f'(t), f''(t)) of a smooth built-in generator (normalised to f'(1) = 0), t > 0."""
    code, a = div.code, div.param
    if code == CODE_KL:  # t log t - t + 1
        return np.log(t), 1.0 - t, 1.0 / t
    if code == CODE_REVERSE_KL:  # t - 1 - log t
        return 1.0 - 1.0 / t, -np.log(t), 1.0 / (t * t)
    if code == CODE_CHI2:  # (t - 1)^2
        return 2.0 * (t - 1.0), (1.0 - t) * (1.0 + t), np.full_like(t, 2.0)
    if code == CODE_HELLINGER:  # (sqrt t - 1)^2
        r = np.sqrt(t)
        return 1.0 - 1.0 / r, 1.0 - r, 0.5 / (t * r)
    if code == CODE_JS:  # (t log t - (1 + t) log((1 + t) / 2)) / 2
        return 0.5 * np.log(2.0 * t / (1.0 + t)), 0.5 * np.log(2.0 / (1.0 + t)), 0.5 / (t * (1.0 + t))
    ta = t**a
    if code == CODE_POWER_UP:  # t^a - 1 - a (t - 1)
        return a * (ta / t - 1.0), (1.0 - a) * (ta - 1.0), a * (a - 1.0) * ta / (t * t)
    # CODE_POWER_DOWN: 1 - t^a + a (t - 1)
    return a * (1.0 - ta / t), (1.0 - a) * (1.0 - ta), a * (1.0 - a) * ta / (t * t)


class BlockRR:
    """A detected block-RR channel: ``block[x]`` the output of input x; levels ``a`` = h - l, ``b`` = l."""

    def __init__(self, block: np.ndarray, l: int, a: float, b: float):
        self.block, self.l, self.a, self.b = block, l, a, b

    def aggregate(self, p: np.ndarray) -> np.ndarray:
        """Block masses of a distribution on the inputs."""
        return np.bincount(self.block, weights=p, minlength=self.l)

    def lift(self, q: np.ndarray, center: np.ndarray) -> np.ndarray:
        """A distribution on the inputs with block masses ``q``, proportional to ``center``
        inside each block (uniform in a block the centre does not charge)."""
        cb = self.aggregate(center)
        size = np.bincount(self.block, minlength=self.l).astype(float)
        share = np.where(cb[self.block] > 0, center / np.where(cb > 0, cb, 1.0)[self.block], 0.0)
        share = np.where(cb[self.block] > 0, share, 1.0 / size[self.block])
        return q[self.block] * share


def block_rr(M: np.ndarray) -> BlockRR | None:
    """The block-RR structure of a channel (module docstring), or None."""
    k, l = M.shape
    if l < 2:
        return None
    hi_idx = np.argmax(M, axis=1)
    hi = M[np.arange(k), hi_idx]
    lo_mask = np.ones_like(M, dtype=bool)
    lo_mask[np.arange(k), hi_idx] = False
    h, lo = float(hi[0]), float(M[lo_mask].min())
    tol = _LEVEL_RTOL * h
    if not (h - lo > tol and lo > 0):
        return None
    if np.any(np.abs(hi - h) > tol) or np.any(np.abs(M[lo_mask] - lo) > tol):
        return None
    if np.any(np.bincount(hi_idx, minlength=l) == 0):  # an output no input favours: not a block
        return None
    return BlockRR(hi_idx.astype(np.intp), l, h - lo, lo)


# ---------------------------------------------------------------------------------------------
# one side's variables: per symbol nv in {0, 1, 2} variables with bounds, one equality row and
# (TV, KL) one coupling inequality s(v) >= 0
# ---------------------------------------------------------------------------------------------
class _Side:
    """One side's variables on the block alphabet: per symbol ``nv`` in {0, 1, 2} variables with
    bounds, x = base + sum(jac * v); one equality row and, for TV and KL, one coupling s(v) >= 0.

    TV has two forms: ``signs=None`` the split x = c + u - w (u >= 0, 0 <= w <= c, coupling
    2r - sum(u + w) >= 0), and ``signs`` given the signed form x = c + sign * v on one orthant
    (v >= 0, v <= c where the sign is -1; coupling 2r - sum v >= 0).  The split form is
    degenerate (u and w can both grow), which limits how far the barrier can be pushed in
    floating point; the signed form, on the orthant the split solve found, is not, and is a
    subset of the ball, so its minimiser is feasible whatever the signs."""

    def __init__(
        self, nb: Neighbourhood, c: np.ndarray, col: int, signs: np.ndarray | None = None, exact: bool = False
    ):
        self.model, self.c, self.r, self.col = nb.model, c, nb.radius, col
        k = c.size
        self.signs, self.exact = signs, exact
        if self.r == 0.0:
            self.nv = 0
        else:
            self.nv = 2 if self.model == "tv" and signs is None else 1
        self.lo = np.zeros((k, self.nv))
        self.hi = np.full((k, self.nv), math.inf)
        self.base = c
        self.jac = np.ones((k, self.nv))
        self.eqs: list[tuple[np.ndarray, float]] = []  # rows sum(coef * v) = rhs
        if self.nv == 0:
            return
        if self.model == "contamination":  # x = (1 - r) c + v, v >= 0
            self.base = (1.0 - min(self.r, 1.0)) * c
            self.eqs = [(self.jac, 1.0 - math.fsum(self.base.tolist()))]
        elif self.model == "tv" and signs is not None:  # x = c + sign v
            self.jac[:, 0] = signs
            self.hi[:, 0] = np.where(signs < 0, c, math.inf)
            if exact:  # exactly r moved: sum over each sign = r
                self.eqs = [((signs > 0)[:, None] * 1.0, self.r), ((signs < 0)[:, None] * 1.0, self.r)]
            else:
                self.eqs = [(self.jac, 0.0)]
        elif self.model == "tv":  # x = c + u - w
            self.jac[:, 1] = -1.0
            self.hi[:, 1] = c
            self.eqs = [(self.jac, 0.0)]
        else:  # kl: x = v >= 0
            self.base = np.zeros(k)
            self.eqs = [(self.jac, 1.0)]

    def x(self, V: np.ndarray) -> np.ndarray:
        return self.base + np.sum(V[:, self.col : self.col + self.nv] * self.jac, axis=1)

    def start(self) -> np.ndarray:
        """A strictly feasible point."""
        k, c, r = self.c.size, self.c, self.r
        if self.model == "contamination":
            return np.full((k, 1), self.eqs[0][1] / k)
        if self.model == "tv" and self.signs is not None:
            down = self.signs < 0
            up = ~down
            if self.exact:
                cd = math.fsum(c[down].tolist())
                return np.where(down, c * (r / cd), r / max(int(up.sum()), 1))[:, None]
            theta = min(0.5, r / 2.0 / max(math.fsum(c[down].tolist()), 1e-300))
            v = np.where(down, theta * c, theta * math.fsum(c[down].tolist()) / max(int(up.sum()), 1))
            return v[:, None]
        if self.model == "tv":
            theta = min(r, 1.0) / 2.0
            return np.stack([np.full(k, theta / k), theta * c], axis=1)
        s = -math.expm1(-r / 2.0)  # x >= (1 - s) c, so KL(c || x) <= -log(1 - s) = r / 2
        return ((1.0 - s) * c + s / k)[:, None]

    def coupling(self, V: np.ndarray):
        """(s, ds/dv (k, nv), d2s/dv2 diagonal (k, nv) or None) of the coupling s >= 0, or None."""
        if self.nv == 0 or self.model == "contamination" or self.exact:
            return None
        v = V[:, self.col : self.col + self.nv]
        if self.model == "tv":  # 2 r - sum |x - c| (sum (u + w) in the split form)
            return 2.0 * self.r - math.fsum(v.ravel().tolist()), -np.ones_like(v), None
        c = self.c
        pos = c > 0
        x = v[:, 0]
        with np.errstate(divide="ignore", invalid="ignore"):
            kl = math.fsum((c[pos] * np.log(c[pos] / x[pos])).tolist()) if np.all(x[pos] > 0) else math.inf
            grad = np.where(pos, c / np.where(pos, x, 1.0), 0.0)
            hess = -np.where(pos, grad / np.where(pos, x, 1.0), 0.0)
        return self.r - kl, grad[:, None], hess[:, None]


class _Problem:
    """min_V t phi(V) - sum log(bound slacks) - sum log(couplings) subject to the equality rows."""

    def __init__(self, sides: tuple[_Side, _Side], a: float, b: float, div: FDivergence):
        self.sides, self.a, self.b, self.div = sides, a, b, div
        k = sides[0].c.size
        self.nb = sides[0].nv + sides[1].nv
        self.lo = np.concatenate([s.lo for s in sides], axis=1)
        self.hi = np.concatenate([s.hi for s in sides], axis=1)
        self.fixed = self.hi <= self.lo
        self.has_lo = ~self.fixed
        self.has_hi = np.isfinite(self.hi) & ~self.fixed
        # per symbol: the (2, nb) Jacobian of (x, y) w.r.t. the symbol's variables
        J = np.zeros((k, 2, self.nb))
        for i, s in enumerate(sides):
            J[:, i, s.col : s.col + s.nv] = s.jac
        self.J = J
        eq = []
        for s in sides:
            for coef, rhs in s.eqs:
                row = np.zeros((k, self.nb))
                row[:, s.col : s.col + s.nv] = coef
                eq.append((np.where(self.fixed, 0.0, row), rhs))
        self.eq = eq
        self.nu = np.zeros(len(eq))
        self.scale = 1.0
        self.m = int(self.has_lo.sum() + self.has_hi.sum()) + sum(
            1 for s in sides if s.nv and s.model != "contamination"
        )

    def xy(self, V):
        return self.sides[0].x(V), self.sides[1].x(V)

    def objective(self, V) -> float:
        x, y = self.xy(V)
        return float(np.sum(self.div.perspective(self.a * x + self.b, self.a * y + self.b)))

    def couplings(self, V):
        out = []
        for s in self.sides:
            cp = s.coupling(V)
            if cp is None:
                continue
            val, grad, hess = cp
            G = np.zeros(V.shape)
            G[:, s.col : s.col + s.nv] = grad
            H = None
            if hess is not None:
                H = np.zeros(V.shape)
                H[:, s.col : s.col + s.nv] = hess
            out.append((val, np.where(self.fixed, 0.0, G), H))
        return out

    def barrier(self, V, t: float, scale: float) -> float:
        lo_s = (V - self.lo)[self.has_lo]
        hi_s = (self.hi - V)[self.has_hi]
        cps = self.couplings(V)
        if np.any(lo_s <= 0) or np.any(hi_s <= 0) or any(not cp[0] > 0 for cp in cps):
            return math.inf
        logs = np.concatenate([np.log(lo_s), np.log(hi_s), np.log([cp[0] for cp in cps])])
        return t * scale * self.objective(V) - math.fsum(logs.tolist())

    def newton(self, V, t: float, scale: float):
        """The Newton step of the barrier function (equality rows kept) and its decrement lambda^2."""
        a, b = self.a, self.b
        x, y = self.xy(V)
        X, Y = a * x + b, a * y + b
        rho = X / Y
        fp, fv, fpp = derivatives(self.div, rho)
        ts = t * scale
        gxy = ts * a * np.stack([fp, fv], axis=1)  # (k, 2)
        g = np.einsum("ki,kiv->kv", gxy, self.J)
        # Hessian of the objective: c w w^T per symbol, on the free variables only (a fixed
        # variable, e.g. the TV decrease w of a cell the centre leaves empty, kept in w would
        # couple into the free ones and bend their step away from Newton's)
        w = np.where(self.fixed, 0.0, self.J[:, 0] - rho[:, None] * self.J[:, 1])
        cw = ts * a * a * fpp / Y
        B = cw[:, None, None] * (w[:, :, None] * w[:, None, :])
        diag = np.zeros(V.shape)
        lo_s = np.where(self.has_lo, V - self.lo, 1.0)
        hi_s = np.where(self.has_hi, self.hi - V, 1.0)
        g = g - np.where(self.has_lo, 1.0 / lo_s, 0.0) + np.where(self.has_hi, 1.0 / hi_s, 0.0)
        diag += np.where(self.has_lo, 1.0 / lo_s**2, 0.0) + np.where(self.has_hi, 1.0 / hi_s**2, 0.0)
        cols, dm = [], []
        for val, G, H in self.couplings(V):
            g = g - G / val
            if H is not None:
                diag -= H / val
            cols.append(G)
            dm.append(val * val)
        for row, nu in zip((e[0] for e in self.eq), self.nu, strict=True):
            # shift by the current equality multipliers: the step solves for their change only,
            # so it does not cancel against their large share of the gradient near the optimum
            g = g + nu * row
            cols.append(row)
            dm.append(0.0)
        diag = np.where(self.fixed, 1.0, diag)
        g = np.where(self.fixed, 0.0, g)
        B = B + diag[:, :, None] * np.eye(self.nb)[None]
        # symmetric Jacobi scaling first: the diagonal spans ~1e30 (slacks at the float floor)
        dsc = 1.0 / np.sqrt(np.einsum("kii->ki", B))
        Bs = dsc[:, :, None] * B * dsc[:, None, :]
        Gm = np.stack(cols, axis=2) if cols else np.zeros(V.shape + (0,))
        BiG = dsc[:, :, None] * np.linalg.solve(Bs, dsc[:, :, None] * Gm)
        S = np.einsum("kvi,kvj->ij", Gm, BiG) + np.diag(dm)
        dmv = np.array(dm)

        def solve(r1, r2):  # B x + Gm mu = r1, Gm^T x - diag(dm) mu = r2 (Schur complement)
            bi = dsc * np.linalg.solve(Bs, (dsc * r1)[:, :, None])[:, :, 0]
            mu = np.linalg.solve(S, np.einsum("kvi,kv->i", Gm, bi) - r2)
            return bi - BiG @ mu, mu

        dV, lam = solve(-g, np.zeros(len(dm)))
        for _ in range(_REFINE):  # iterative refinement on the residual of the full system
            r1 = -g - np.einsum("kvw,kw->kv", B, dV) - Gm @ lam
            r2 = -(np.einsum("kvi,kv->i", Gm, dV) - dmv * lam)
            ddV, dlam = solve(np.where(self.fixed, 0.0, r1), r2)
            dV, lam = dV + ddV, lam + dlam
        dV = np.where(self.fixed, 0.0, dV)
        return dV, -float(np.sum(g * dV)), lam[len(lam) - len(self.eq) :]

    def max_step(self, V, dV) -> float:
        step = math.inf
        neg = self.has_lo & (dV < 0)
        if neg.any():
            step = min(step, float(np.min((V - self.lo)[neg] / -dV[neg])))
        pos = self.has_hi & (dV > 0)
        if pos.any():
            step = min(step, float(np.min((self.hi - V)[pos] / dV[pos])))
        for val, G, H in self.couplings(V):
            if H is None:  # linear: s(V + a dV) = s + a <G, dV>
                ds = float(np.sum(G * dV))
                if ds < 0:
                    step = min(step, val / -ds)
        return step


def _center(prob: _Problem, V, t: float, scale: float) -> np.ndarray:
    for _ in range(_NEWTON_MAXITER):
        try:
            dV, dec, dnu = prob.newton(V, t, scale)
        except np.linalg.LinAlgError:  # a singular system (degenerate form): keep the point
            break
        prob.nu = prob.nu + dnu
        f0 = prob.barrier(V, t, scale)
        # lambda^2 / 2 bounds the barrier value's excess over the centre's, whose rounding is
        # ~1e-16 |f0|: below either there is nothing left to gain
        if not dec > 2.0 * max(_NEWTON_TOL, _CENTER_RTOL * abs(f0)):
            break
        step = min(1.0, _TO_BOUNDARY * prob.max_step(V, dV))
        for _ in range(_BACKTRACK_MAX):
            f1 = prob.barrier(V + step * dV, t, scale)
            if f1 <= f0 - _ARMIJO * step * dec + _ARMIJO_SLACK * abs(f0):
                break
            step *= _BACKTRACK
        else:
            break
        V = V + step * dV
    return V


def _barrier(prob: _Problem, V: np.ndarray, t: float, rtol: float) -> tuple[np.ndarray, float]:
    """Centrings for t, t mu, ... until the duality-gap bound m/t is below ``rtol`` of the objective."""
    for _ in range(_OUTER_MAXITER):
        V = _center(prob, V, t, prob.scale)
        phi = prob.scale * prob.objective(V)
        if prob.m / t <= rtol * phi or phi <= _ZERO_RTOL:  # the sets (nearly) meet: F* ~ 0
            break
        t *= _MU
    return V, t


def _signed_sides(sides, cs, V, old, exact: bool):
    """The signed TV form on the orthant of the split solution ``V`` (see :class:`_Side`), and a
    strictly feasible start in it: halfway between the split solution and the form's own start.
    ``exact``: where the split solution used up the budget, move exactly r instead."""
    out, starts, col = [], [], 0
    for nb, c, side in zip(sides, cs, old, strict=True):
        if side.model != "tv" or side.nv == 0:
            new = _Side(nb, c, col)
            starts.append(side.start() if new.nv else np.zeros((c.size, 0)))
        else:
            d = side.x(V) - c
            signs = np.where(d >= 0, 1.0, -1.0)
            cd = math.fsum(c[signs < 0].tolist())
            if np.all(signs > 0) or not cd > 0:
                new = _Side(Neighbourhood(nb.model, nb.center, 0.0), c, col)  # the orthant is {c}
                starts.append(np.zeros((c.size, 0)))
            elif exact and side.coupling(V)[0] <= _BUDGET_ACTIVE * side.r and side.r < cd:
                # the budget is used up: move exactly r (two equalities; the inequality form is
                # degenerate there, its gradient dependent on the sum's at the optimum)
                new = _Side(nb, c, col, signs, exact=True)
                starts.append(new.start())
            else:
                new = _Side(nb, c, col, signs)
                starts.append(0.5 * np.abs(d)[:, None] + 0.5 * new.start())
        out.append(new)
        col += new.nv
    return tuple(out), np.concatenate(starts, axis=1)


def _polish(prob: _Problem, V: np.ndarray, tol: float) -> np.ndarray:
    """Newton on the face the barrier solution lies on (linear sets only): the bounds and
    couplings within :data:`_ACTIVE_TOL` of tight become equalities, and the equality-constrained
    KKT system on the remaining variables is solved by least squares (at a degenerate optimum the
    active constraints are dependent and the objective is flat along rays).  A step leaving the
    bounds stops at the first one, which joins the face.  Only proposes a point: the caller
    certifies every candidate."""
    free = ~prob.fixed
    at_lo = free & (V - prob.lo <= tol)
    at_hi = free & prob.has_hi & (prob.hi - V <= tol)
    V = np.where(at_lo, prob.lo, np.where(at_hi, prob.hi, V))
    move = free & ~at_lo & ~at_hi
    idx = np.flatnonzero(move.ravel())
    if idx.size == 0:
        return V
    a, b = prob.a, prob.b
    rows = [(row, rhs) for row, rhs in prob.eq]
    for side in prob.sides:
        cp = side.coupling(V)
        if cp is not None and cp[0] <= tol:  # 2 r - sum v = 0
            row = np.zeros(V.shape)
            row[:, side.col : side.col + side.nv] = 1.0
            rows.append((np.where(prob.fixed, 0.0, row), 2.0 * side.r))
    sym = idx // prob.nb
    for _ in range(_POLISH_STEPS):
        x, y = prob.xy(V)
        X, Y = a * x + b, a * y + b
        rho = X / Y
        fp, fv, fpp = derivatives(prob.div, rho)
        g = np.einsum("ki,kiv->kv", a * np.stack([fp, fv], axis=1), prob.J).ravel()[idx]
        w = (prob.J[:, 0] - rho[:, None] * prob.J[:, 1]).ravel()[idx]
        cw = (a * a * fpp / Y)[sym]
        H = np.where(sym[:, None] == sym[None, :], cw[:, None] * w[:, None] * w[None, :], 0.0)
        A = np.array([row.ravel()[idx] for row, _ in rows])
        res = np.array([math.fsum((row * V).ravel().tolist()) - rhs for row, rhs in rows])
        n, m = idx.size, len(rows)
        K = np.block([[H, A.T], [A, np.zeros((m, m))]])
        dsc = 1.0 / np.sqrt(np.maximum(np.abs(np.diag(K)), np.concatenate([np.full(n, 1e-300), np.ones(m)])))
        sol = (
            dsc
            * np.linalg.lstsq(
                dsc[:, None] * K * dsc[None, :], -dsc * np.concatenate([g, res]), rcond=_POLISH_RCOND
            )[0]
        )
        cur, step = V.ravel()[idx], sol[:n]
        lo, hi = prob.lo.ravel()[idx], prob.hi.ravel()[idx]
        with np.errstate(divide="ignore", invalid="ignore"):
            room = np.where(step < 0, (lo - cur) / step, np.where(step > 0, (hi - cur) / step, np.inf))
        alpha = min(1.0, float(room.min()))
        f0 = prob.objective(V) - float(np.dot(sol[n:], res))  # merit: the Lagrangian of the face
        for _ in range(_BACKTRACK_MAX):
            new = V.ravel().copy()
            new[idx] = np.clip(cur + alpha * step, lo, hi)
            cand = new.reshape(V.shape)
            rnew = np.array([math.fsum((row * cand).ravel().tolist()) - rhs for row, rhs in rows])
            if prob.objective(cand) - float(np.dot(sol[n:], rnew)) <= f0 + _ARMIJO_SLACK * abs(f0):
                break
            alpha *= _BACKTRACK
        moved = float(np.abs(cand - V).max())
        V = cand
        if alpha == 1.0 and moved <= _POLISH_MOVE_RTOL * max(float(np.abs(V).max()), 1e-300):
            break  # converged: the next steps would only move by the rounding
        if alpha < 1.0:  # a bound blocks: it joins the face (primal active-set step)
            keep = room > alpha * (1.0 + 1e-12)
            idx, sym = idx[keep], sym[keep]
            if idx.size == 0:
                break
    return V


def solve_block_rr(
    rr: BlockRR, div: FDivergence, sides: tuple[Neighbourhood, Neighbourhood]
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(Nearly) minimising pairs of the inner problem of a block-RR channel (module docstring),
    lifted to the input alphabet, best guess first: the barrier solution and, for the polytopes,
    its polished versions; for TV balls then the same on the signed form of the solution's
    orthant and on its exact-budget form.  The caller repairs and certifies each and stops when
    one closes the gap."""
    cs = (rr.aggregate(sides[0].center), rr.aggregate(sides[1].center))
    s0 = _Side(sides[0], cs[0], 0)
    bside = (s0, _Side(sides[1], cs[1], s0.nv))
    prob = _Problem(bside, rr.a, rr.b, div)
    if prob.nb == 0:
        yield sides[0].center, sides[1].center
        return
    V = np.concatenate([s.start() for s in bside], axis=1)
    prob.scale = 1.0 / max(prob.objective(V), 1e-300)
    V, _ = _barrier(prob, V, 1.0, _GAP_RTOL)
    yield from _candidates(rr, sides, prob, V)
    if not any(s.model == "tv" and s.nv == 2 for s in bside):
        return
    for exact in (False, True):
        signed, V1 = _signed_sides(sides, cs, V, bside, exact)
        if exact and not any(side.exact for side in signed):
            return
        sub = _Problem(signed, rr.a, rr.b, div)
        sub.scale = prob.scale
        if sub.nb:
            V1, _ = _barrier(sub, V1, 1.0, _GAP_RTOL)
        yield from _candidates(rr, sides, sub, V1)


def _candidates(rr: BlockRR, sides, prob: _Problem, V: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The barrier solution, then (linear sets) its polished versions, lifted to the inputs."""
    x, y = prob.xy(V)
    yield rr.lift(x, sides[0].center), rr.lift(y, sides[1].center)
    if any(side.model == "kl" and side.nv for side in prob.sides):
        return
    for tol in _ACTIVE_TOLS:
        x, y = prob.xy(_polish(prob, V, tol))
        yield rr.lift(x, sides[0].center), rr.lift(y, sides[1].center)
