r"""Closed-form optimal mechanisms (SPR Thm 3.6, Prop. 3.8): binary RR on one likelihood-ratio set."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ldpopt._numerics import rescale
from ldpopt._validation import check_eps, check_labelled_pair, is_real
from ldpopt.divergences import egamma
from ldpopt.mechanism import two_set_mechanism
from ldpopt.spr.solve import OptimalMechanismResult

__all__ = ["egamma_mechanism", "lr_distance_mechanism"]


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
    c = rescale(eps).c
    t = 1.0 if math.isinf(eps) else math.tanh(eps / 2.0)
    value = max(0.0, t * e_in + (1.0 - g) * c / (1.0 + c))
    mech = two_set_mechanism(in_s, eps, labels, "egamma")
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
    mech = two_set_mechanism(u >= v, eps, labels, "binary")
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
