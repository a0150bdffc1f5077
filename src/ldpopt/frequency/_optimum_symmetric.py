r"""The exact optimum of the l2 objectives by the symmetry reduction (closed form in the subset size).

Notation (rescaled, :mod:`ldpopt._numerics`): :math:`c = e^{-\varepsilon}`, :math:`A = 1 - c`.  A
maximal eps-LDP output is a column proportional to :math:`v_S` (1 on a subset S of the k inputs, c off
it).  For the permutation-invariant channel that reports a size-s subset with probability proportional
to :math:`v_S[x]` (subset selection), :math:`M = QW^{-1}Q^T = \alpha I + \beta J` and

.. math:: V_s = \frac{(k-1)^2}{k A^2 \gamma_s}, \qquad \gamma_s = \frac{s(k-s)}{(s + (k-s)c)^2}.

Every eps-LDP channel has :math:`V \ge (k-1)^2/(kA^2\max_s\gamma_s)` (the certificate, see
:mod:`ldpopt.frequency.optimum`), so the best size is optimal.  :math:`\gamma` as a function of a real
:math:`s\in(0,k)` has the single critical point :math:`s = k/(e^\varepsilon+1) = kc/(1+c)`, so the best
integer size is its floor or its ceiling (clipped to ``1..k-1``).
"""

from __future__ import annotations

import math

#: two sizes whose gamma agree to this relative difference are reported as a tie (both optimal); the
#: two gammas are each computed with relative error below 8 ulp, so a closer pair cannot be ordered
TIE_RTOL = 8 * 2.0**-52


def gamma(k: int, s: int, c: float) -> float:
    """:math:`s(k-s)/(s + (k-s)c)^2` (exact integers in the numerator; no overflow for any k)."""
    den = s + (k - s) * c
    return (s / den) * ((k - s) / den)


def best_sizes(k: int, c: float) -> tuple[tuple[int, ...], float]:
    """The optimal subset sizes (one, or two on a tie) and :math:`\\max_s\\gamma_s`."""
    star = k * c / (1.0 + c)
    cands = sorted({min(max(int(math.floor(star)), 1), k - 1), min(max(int(math.ceil(star)), 1), k - 1)})
    vals = [gamma(k, s, c) for s in cands]
    top = max(vals)
    sizes = tuple(s for s, v in zip(cands, vals, strict=True) if v >= top * (1.0 - TIE_RTOL))
    return sizes, top


def value(k: int, c: float, A: float, top: float) -> float:
    """:math:`(k-1)^2/(kA^2\\gamma)`, the optimal total variance for n = 1."""
    return ((k - 1) / (k * A)) * ((k - 1) / (A * top))
