r"""Linear programs over staircase channels.

:func:`kov_lp` is the Kairouz-Oh-Viswanath staircase LP (SPR paper, Section 1 and
Appendix E.2): one variable :math:`\theta_H\ge0` per non-empty high set :math:`H\subseteq[k]`,
column pattern :math:`z_H = c\mathbf 1 + A\mathbf 1_H` (rescaled by :math:`e^{-\varepsilon}`),

.. math:: \max_\theta \sum_H \theta_H\, g(p^\top z_H, q^\top z_H)
   \quad\text{s.t.}\quad \sum_H \theta_H z_H(i) = 1\ \ (i\in[k]).

It is exponential in k and serves as the independent check of the SPR dynamic program.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ldpopt._validation import check_eps, check_labelled_pair
from ldpopt.divergences import FDivergence, get_divergence
from ldpopt.mechanism import Mechanism

__all__ = ["kov_lp", "KOV_MAX_K"]

#: largest alphabet the 2^k - 1 variable LP is attempted for
KOV_MAX_K = 20
#: HiGHS feasibility tolerances; the support is then re-solved exactly (polish)
_LP_TOL = 1e-10
#: weights below this (relative) are treated as zero when reading the LP support
_SUPPORT_TOL = 1e-12


def _subset_sums(x: np.ndarray) -> np.ndarray:
    """sums[h] = sum of x[j] over bits j of h, for h in 0 .. 2^k - 1 (doubling construction)."""
    sums = np.zeros(1)
    for xj in x:
        sums = np.concatenate([sums, sums + xj])
    return sums


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
    from scipy.optimize import linprog

    from ldpopt.spr.solve import OptimalMechanismResult

    u, v, labels = check_labelled_pair(p0, p1, normalize=normalize)
    eps = check_eps(eps, allow_inf=False)
    div = get_divergence(divergence)
    k = u.shape[0]
    if k > KOV_MAX_K:
        raise ValueError(
            f"kov_lp enumerates 2^k - 1 high sets and is limited to k <= {KOV_MAX_K}; got k={k}. "
            "Use ldpopt.optimal_mechanism (exact, polynomial) instead."
        )
    c = math.exp(-eps)
    A = -math.expm1(-eps)
    ph = _subset_sums(u)[1:]
    qh = _subset_sums(v)[1:]
    dh = _subset_sums(u - v)[1:]
    mu = div.perspective(c + A * ph, c + A * qh, A * dh)
    if not np.all(np.isfinite(mu)):
        raise ValueError(
            f"kov_lp: infinite objective coefficients at eps={eps!r} (eps too large for float64)"
        )
    h = np.arange(1, 2**k, dtype=np.int64)
    member = ((h[None, :] >> np.arange(k, dtype=np.int64)[:, None]) & 1).astype(float)  # (k, 2^k-1)
    Z = c + A * member
    res = linprog(
        -mu,
        A_eq=Z,
        b_eq=np.ones(k),
        bounds=(0, None),
        method="highs",
        options={"primal_feasibility_tolerance": _LP_TOL, "dual_feasibility_tolerance": _LP_TOL},
    )
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
    theta = np.asarray(res.x)
    support = np.flatnonzero(theta > _SUPPORT_TOL * max(1.0, theta.max()))
    # polish: re-solve the row constraints on the support so the value is exact to round-off
    sol, *_ = np.linalg.lstsq(Z[:, support], np.ones(k), rcond=None)
    if np.all(sol >= 0) and np.max(np.abs(Z[:, support] @ sol - 1.0)) < 1e-12:
        theta_s = sol
    else:
        theta_s = theta[support]
    value_raw = math.fsum((theta_s * mu[support]).tolist())
    matrix = Z[:, support] * theta_s[None, :]
    matrix = matrix / matrix.sum(axis=1, keepdims=True)
    mech = Mechanism(matrix, eps, labels=labels, name="kov_lp")
    return OptimalMechanismResult(
        value=div.transform(value_raw),
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
