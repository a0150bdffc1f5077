r"""The worked examples of Nam-Park-Lee, Appendix C, with their closed forms.

* :func:`mary_testing` -- m-ary symmetric hypothesis testing (App. C.1):
  :math:`\Theta=\mathcal A=\mathcal X=[m]`,
  :math:`P(x|\theta)=\frac{1-\gamma}m+\gamma[x=\theta]`, 0-1 loss, uniform prior.  The problem is
  Sym(m)-invariant, so subset selection is optimal (Corollary 3.17) and, with
  :math:`D_k=k+(m-k)e^{-\varepsilon}`,

  .. math:: \mathrm{PUT}_{\rm B}=\mathrm{PUT}_{\rm M}
            =\min_{1\le k<m}\ 1-\frac{1-\gamma}{m}-\frac{\max(\gamma,\gamma e^{-\varepsilon})}{D_k},

  attained at k = 1 (randomized response) for :math:`\gamma>0` and at k = m - 1 for :math:`\gamma<0`.
* :func:`circular_estimation` -- estimation of an angle from a cyclic alphabet (App. C.2):
  :math:`P(x|\theta)=\frac1m(1+\gamma\cos(\frac{2\pi x}m-\theta))`, loss :math:`1-\cos(\theta-a)`, continuous
  :math:`\theta` (uniform prior) and a, handled analytically per output row; the optimum is

  .. math:: \min_{1\le k<m}\ 1-\frac{\gamma(e^\varepsilon-1)\sin(\pi k/m)}{2(ke^\varepsilon+m-k)\sin(\pi/m)}.

The derivations are in ``docs/decision.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ldpopt._numerics import rescale
from ldpopt._validation import check_eps, check_positive_int, is_real
from ldpopt.decision.objectives import RowAdditiveObjective
from ldpopt.decision.problem import DecisionProblem

__all__ = ["mary_testing", "circular_estimation", "MaryTesting", "CircularEstimation"]


def _check_gamma(gamma, lo: float, hi: float) -> float:
    if not is_real(gamma):
        raise TypeError(f"gamma must be a real number, got {gamma!r}")
    g = float(gamma)
    if not (lo - 1e-15 <= g <= hi + 1e-15) or math.isnan(g):
        raise ValueError(f"gamma must be in [{lo:g}, {hi:g}], got gamma={gamma!r}")
    return g


@dataclass(frozen=True, eq=False)
class MaryTesting(DecisionProblem):
    r"""m-ary symmetric hypothesis testing (App. C.1); a :class:`~ldpopt.DecisionProblem` with closed
    forms."""

    gamma: float = 0.0

    def _levels(self, eps: float) -> np.ndarray:
        m = self.num_inputs
        c0 = rescale(check_eps(eps, allow_inf=False)).c
        k = np.arange(1, m)
        D = k + (m - k) * c0
        return 1.0 - (1.0 - self.gamma) / m - max(self.gamma, self.gamma * c0) / D

    def closed_form(self, eps: float, risk: str = "bayes") -> float:
        r"""Optimal Bayes (= minimax) risk:
        :math:`\min_k 1-\frac{1-\gamma}m
        -\frac{\max(\gamma,\gamma e^{-\varepsilon})}{k+(m-k)e^{-\varepsilon}}`."""
        if risk not in ("bayes", "minimax"):
            raise ValueError(f"risk must be 'bayes' or 'minimax', got {risk!r}")
        return float(self._levels(eps).min())

    def closed_form_size(self, eps: float) -> int:
        """Subset size k of an optimal subset-selection mechanism (smallest optimal k)."""
        return 1 + int(np.argmin(self._levels(eps)))


def mary_testing(m: int, gamma: float) -> MaryTesting:
    r"""The m-ary symmetric testing problem of App. C.1 as a :class:`~ldpopt.DecisionProblem`.

    :math:`P(x|\theta)=\frac{1-\gamma}m+\gamma[x=\theta]` (needs :math:`-\frac1{m-1}\le\gamma\le1`), loss
    :math:`1-[\theta=a]`, uniform prior.
    """
    m = check_positive_int(m, "m")
    if m < 2:
        raise ValueError(f"m must be >= 2, got m={m}")
    g = _check_gamma(gamma, -1.0 / (m - 1), 1.0)
    P = np.full((m, m), (1.0 - g) / m) + g * np.eye(m)
    P = np.clip(P, 0.0, None)
    L = 1.0 - np.eye(m)
    return MaryTesting(P, L, None, name=f"mary_testing(m={m}, gamma={g:g})", gamma=g)


class CircularEstimation(RowAdditiveObjective):
    r"""Bayes risk of the circular estimation problem (App. C.2) as a row-additive objective.

    For an output row v (over the m inputs), with :math:`Z(v)=\sum_x v_x e^{2\pi ix/m}`,

    .. math:: \phi(v)=\min_{a}\frac1m\sum_x v_x\Big(1-\frac\gamma2\cos(\tfrac{2\pi x}m-a)\Big)
              =\frac1m\Big(\sum_x v_x-\frac\gamma2|Z(v)|\Big),

    from :math:`\int_0^{2\pi}(1+\gamma\cos(\frac{2\pi x}m-\theta))(1-\cos(\theta-a))\frac{d\theta}{2\pi}
    =1-\frac\gamma2\cos(\frac{2\pi x}m-a)`;
    the optimal estimate is :math:`a^*=\arg Z(v)` (:meth:`decisions`, NaN when :math:`Z(v)=0`: any angle).
    The objective is invariant under the dihedral group (shifts and reflections).
    """

    sense = "min"

    def __init__(self, m: int, gamma: float):
        m = check_positive_int(m, "m")
        if m < 3:
            raise ValueError(f"circular estimation needs m >= 3, got m={m}")
        self.num_inputs = m
        self.gamma = _check_gamma(gamma, 0.0, 1.0)
        self.name = "circular_estimation"
        self._phase = np.exp(2j * np.pi * np.arange(m) / m)

    def rows(self, V: np.ndarray) -> np.ndarray:
        Z = V @ self._phase
        return (V.sum(axis=1) - 0.5 * self.gamma * np.abs(Z)) / self.num_inputs

    def decisions(self, V: np.ndarray) -> np.ndarray:
        """Bayes estimate :math:`\\arg Z(v)\\in[0,2\\pi)` per row (NaN where Z = 0)."""
        Z = V @ self._phase
        ang = np.mod(np.angle(Z), 2 * np.pi)
        ang = np.where(ang >= 2 * np.pi, 0.0, ang)
        return np.where(np.abs(Z) > 1e-12 * V.sum(axis=1), ang, np.nan)

    def _levels(self, eps: float) -> np.ndarray:
        m = self.num_inputs
        c0 = rescale(check_eps(eps, allow_inf=False)).c
        k = np.arange(1, m)
        # (e^eps - 1)/(k e^eps + m - k) = (1 - c0)/(k + (m - k) c0)
        return 1.0 - self.gamma * (1.0 - c0) * np.sin(np.pi * k / m) / (
            2.0 * (k + (m - k) * c0) * np.sin(np.pi / m)
        )

    def closed_form(self, eps: float) -> float:
        r"""Optimal Bayes (= minimax) risk
        :math:`\min_k 1-\frac{\gamma(e^\varepsilon-1)\sin(\pi k/m)}{2(ke^\varepsilon+m-k)\sin(\pi/m)}`."""
        return float(self._levels(eps).min())

    def closed_form_size(self, eps: float) -> int:
        """Arc length k of an optimal channel (cyclic shifts of {0, ..., k-1}); smallest optimal k."""
        return 1 + int(np.argmin(self._levels(eps)))

    def as_decision_problem(self) -> DecisionProblem:
        r"""An exact finite version: :math:`\theta` on the m-grid, a on the 2m-grid :math:`\{\pi i/m\}`.

        For m >= 3 the grid average of :math:`P(x|\theta)(1-\cos(\theta-a))` (a trigonometric polynomial
        of degree 2 in :math:`\theta`) equals its integral, so every Bayes risk coincides with the
        continuous one; the optimal estimates (midpoints of arcs) lie on the 2m-grid, so the optimal
        Bayes risk and the minimax risk (equalizer rule) equal :meth:`closed_form`.
        """
        m = self.num_inputs
        theta = 2 * np.pi * np.arange(m) / m
        acts = np.pi * np.arange(2 * m) / m
        x = np.arange(m)
        P = (1.0 + self.gamma * np.cos(2 * np.pi * x[:, None] / m - theta[None, :])) / m
        L = 1.0 - np.cos(theta[:, None] - acts[None, :])
        return DecisionProblem(P, L, None, name=f"circular_estimation(m={m}, gamma={self.gamma:g}) on grids")


def circular_estimation(m: int, gamma: float) -> CircularEstimation:
    """The circular estimation problem of App. C.2 (see :class:`CircularEstimation`)."""
    return CircularEstimation(m, gamma)
