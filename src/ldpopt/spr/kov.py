r"""Linear programs over staircase channels.

:func:`kov_lp` is the Kairouz-Oh-Viswanath staircase LP (SPR paper, Section 1 and
Appendix E.2): one variable :math:`\theta_H\ge0` per non-empty high set :math:`H\subseteq[k]`,
column pattern :math:`z_H = c\mathbf 1 + A\mathbf 1_H` (rescaled by :math:`e^{-\varepsilon}`),

.. math:: \max_\theta \sum_H \theta_H\, g(p^\top z_H, q^\top z_H)
   \quad\text{s.t.}\quad \sum_H \theta_H z_H(i) = 1\ \ (i\in[k]).

It is exponential in k and serves as the independent check of the SPR dynamic program.

Numerics.  The objective coefficients are the built-in centred perspectives (of order
:math:`A^2` for small eps, every one >= 0) and are divided by their maximum before HiGHS sees
them: unscaled they fall below its optimality tolerance (1e-10 absolute) for eps below ~1e-4.
The constraints are rewritten exactly as their sum, :math:`\sum_H \theta_H (kc + A|H|) = k`,
and the differences of rows i and 1 divided by A, :math:`\sum_H \theta_H (1_H(i) - 1_H(1)) = 0`:
no coefficient falls below HiGHS's tolerances, neither c at large eps nor the differences
between the columns :math:`z_H \to \mathbf 1` at small eps.  The optimal support is re-solved exactly
on those equations and the value is summed from it (Renyi: evaluated as
:func:`ldpopt.f_divergence` does, from the mechanism's outputs).  A vertex is optimal to
HiGHS's tolerance, so the value is that of the true optimum to ~1e-10 relative, unless two
vertices tie to that precision (then either is optimal to it): ``tests/spr/test_lp.py`` checks
agreement with :func:`ldpopt.optimal_mechanism` to 1e-9 relative for 1e-8 <= eps <= 700,
k <= 8 (``docs/spr.md``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ldpopt._numerics import rescale
from ldpopt._validation import check_eps, check_labelled_pair
from ldpopt.divergences import (
    CODE_POWER_DOWN,
    CODE_POWER_UP,
    RENYI_NEAR_MAX,
    FDivergence,
    get_divergence,
    power_log_terms,
    renyi_value,
)
from ldpopt.mechanism import Mechanism
from ldpopt.spr.solve import OptimalMechanismResult

__all__ = ["kov_lp", "KOV_MAX_K"]

#: largest alphabet the 2^k - 1 variable LP is attempted for
KOV_MAX_K = 20
#: HiGHS feasibility and optimality tolerances (its smallest allowed values); the objective
#: is scaled to max 1 and the support is then re-solved exactly (polish)
_LP_TOL = 1e-10
#: weights below this (relative) are treated as zero when reading the LP support
_SUPPORT_TOL = 1e-12
#: the polished support solution is accepted when it reproduces the equations to this
#: (they have O(1) coefficients and right-hand side; the solve is exact to ~k ulp)
_POLISH_TOL = 1e-12


def _subset_sums(*xs: np.ndarray) -> np.ndarray:
    """sums[h] = sum over bits j of h of x[j] for each array x of ``xs`` (e.g. ``(p, -q)`` for the
    differences), h in 0 .. 2^k - 1, by doubling with error-free additions (hi + lo pairs): each
    sum keeps ~1 ulp of itself, also where the terms cancel."""
    hi = np.zeros(1)
    lo = np.zeros(1)
    for j in range(xs[0].shape[0]):
        s_hi, s_lo = hi, lo
        for x in xs:
            t = float(x[j])
            s = s_hi + t
            bb = s - s_hi
            s_lo = s_lo + ((s_hi - (s - bb)) + (t - bb))  # TwoSum: s_hi + t = s + error exactly
            s_hi = s
        hi = np.concatenate([hi, s_hi])
        lo = np.concatenate([lo, s_lo])
    return hi + lo


def _solve_lp(mu: np.ndarray, M: np.ndarray, rhs: np.ndarray):
    """``(res, theta on the support, support)``: HiGHS on max mu.theta, M theta = rhs, theta >= 0,
    with mu scaled to max |mu| = 1, then the support's equations solved again (polish)."""
    from scipy.optimize import linprog

    scale = float(np.max(np.abs(mu)))
    res = linprog(
        -(mu / scale if scale > 0 else mu),
        A_eq=M,
        b_eq=rhs,
        bounds=(0, None),
        method="highs",
        options={"primal_feasibility_tolerance": _LP_TOL, "dual_feasibility_tolerance": _LP_TOL},
    )
    if res.status != 0:
        return res, None, None
    theta = np.asarray(res.x)
    support = np.flatnonzero(theta > _SUPPORT_TOL * max(1.0, theta.max()))
    sol, *_ = np.linalg.lstsq(M[:, support], rhs, rcond=None)
    if np.all(sol >= 0) and np.max(np.abs(M[:, support] @ sol - rhs)) < _POLISH_TOL:
        return res, sol, support
    return res, theta[support], support


def kov_lp(p0: Any, p1: Any, eps: float, divergence: str | FDivergence = "kl", *, normalize: bool = False):
    r"""Exact optimum by the Kairouz-Oh-Viswanath staircase LP over all :math:`2^k-1` high sets (HiGHS).

    Parameters
    ----------
    p0, p1 : array_like
        Distributions on ``k <= 20`` symbols.
    eps : float
        Finite privacy level > 0.
    divergence : str or FDivergence

    Returns
    -------
    OptimalMechanismResult
        ``method="kov_lp"``; ``partition`` is ``None`` (the LP optimum need not be a partition);
        ``status``/``message`` carry HiGHS' outcome.
    """
    u, v, labels = check_labelled_pair(p0, p1, normalize=normalize)
    eps = check_eps(eps, allow_inf=False)
    div = get_divergence(divergence)
    k = u.shape[0]
    if k > KOV_MAX_K:
        raise ValueError(
            f"kov_lp enumerates 2^k - 1 high sets and is limited to k <= {KOV_MAX_K}; got k={k}. "
            "Use ldpopt.optimal_mechanism (exact, polynomial) instead."
        )
    c, A, lf = rescale(eps)
    ph = _subset_sums(u)[1:]
    qh = _subset_sums(v)[1:]
    dh = _subset_sums(u, -v)[1:]
    x, y, d = c + A * ph, c + A * qh, A * dh
    mu = div.perspective(x, y, d, log_floor=lf)
    power = div.code in (CODE_POWER_UP, CODE_POWER_DOWN)
    # the log of each column's Renyi term (read for the power divergences only)
    log_terms = power_log_terms(div.param, x, y, d, lf) if power else np.zeros(0)
    if power and div.code == CODE_POWER_UP and not np.all(np.isfinite(mu)) and np.all(np.isfinite(log_terms)):
        # Renyi, alpha > 1, whose terms overflow: maximise the Renyi sum, scaled, instead
        mu = np.exp(log_terms - np.max(log_terms))
    if not np.all(np.isfinite(mu)):
        raise ValueError(
            f"kov_lp: infinite objective coefficients at eps={eps!r} for {div.name} "
            "(eps too large for float64, or an infinite divergence)"
        )
    h = np.arange(1, 2**k, dtype=np.int64)
    member = ((h[None, :] >> np.arange(k, dtype=np.int64)[:, None]) & 1).astype(float)  # (k, 2^k-1)
    Z = c + A * member
    # the sum of the rows (coefficients k c + A |H| >= A: none below HiGHS's tolerances, unlike
    # the c of a single row at large eps) and (row i - row 1) / A (0/+-1 for every eps)
    M = np.vstack([k * c + A * member.sum(axis=0)[None, :], member[1:] - member[:1]])
    rhs = np.zeros(k)
    rhs[0] = float(k)
    res, theta_s, support = _solve_lp(mu, M, rhs)
    if res.status == 0 and power and div.code == CODE_POWER_DOWN:
        near = math.fsum((theta_s * mu[support]).tolist())
        if near > RENYI_NEAR_MAX:
            # Renyi, alpha < 1, with a small Renyi sum S: minimise S itself, scaled by the found one
            s_terms = theta_s * np.exp(log_terms[support] - np.max(log_terms[support]))
            scale = np.max(log_terms[support]) + math.log(math.fsum(s_terms.tolist()))
            res, theta_s, support = _solve_lp(-np.exp(log_terms - scale), M, rhs)
    if res.status != 0:
        return OptimalMechanismResult(
            value=math.nan,
            mechanism=None,
            partition=None,
            num_outputs=0,
            eps=eps,
            divergence=div.name,
            input_divergence=div(u, v),
            method="kov_lp",
            status=int(res.status),
            message=str(res.message),
            labels=labels,
        )
    if power:
        w = theta_s
        value = renyi_value(div.code, div.param, w * x[support], w * y[support], w * d[support], 1.0, lf)
    else:  # >= 0: the built-in terms are, and a user's D_f of two distributions is (Jensen)
        value = max(div.transform(math.fsum((theta_s * mu[support]).tolist())), 0.0)
    matrix = Z[:, support] * theta_s[None, :]
    matrix = matrix / matrix.sum(axis=1, keepdims=True)
    mech = Mechanism(matrix, eps, labels=labels, name="kov_lp")
    return OptimalMechanismResult(
        value=value,
        mechanism=mech,
        partition=None,
        num_outputs=int(support.size),
        eps=eps,
        divergence=div.name,
        input_divergence=div(u, v),
        method="kov_lp",
        status=0,
        message=str(res.message),
        labels=labels,
    )
