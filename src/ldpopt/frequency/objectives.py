r"""The l2 error of frequency estimation through a channel, with the best unbiased estimator.

A channel :math:`Q` (``k x m``, rows = inputs, row-stochastic, as :attr:`ldpopt.Mechanism.matrix`)
turns a user's value :math:`x \in [k]` into a report :math:`y \in [m]`.  An *unbiased estimator* is an
``m x k`` matrix :math:`B` with :math:`QB = I_k` (it exists iff :math:`Q` has rank k): one report
:math:`y` estimates the histogram by the row :math:`B_y`, and :math:`E_p[B_Y] = pQB = p`.  For one
report (n = 1; with n reports every error below is divided by n) its total variance at :math:`p` is

.. math:: \operatorname{Var}_p(B) = \sum_y (pQ)_y \lVert B_y\rVert^2 - \lVert p\rVert^2 .

**Best estimator at p.** Column by column this is a weighted least-norm problem; with
:math:`W_p = \operatorname{diag}(pQ)` (outputs of probability 0 dropped) the minimiser is
:math:`B_p = W_p^{-1}Q^T M_p^{-1}`, :math:`M_p = Q W_p^{-1} Q^T`, and
:math:`V(p) = \min_B \operatorname{Var}_p(B) = \operatorname{tr} M_p^{-1} - \lVert p\rVert^2`.

**variance_uniform** is :math:`V(u)` at the uniform :math:`u`.  Because :math:`M_u\mathbf 1 = k\mathbf 1`
(the column sums of :math:`Q` are :math:`k\,uQ`), the eigenvalue k cancels the :math:`1/k`:
:math:`V(u) = \operatorname{tr}\big((U^T M_u U)^{-1}\big)` for an orthonormal basis :math:`U` of
:math:`\mathbf 1^\perp`, computed that way (no cancellation).

**worst_case** is the minimax error :math:`\min_B \max_{p\in\Delta} \operatorname{Var}_p(B)` (the
estimator may depend on the channel, not on the unknown p).  :math:`\operatorname{Var}_p(B)` is convex in
:math:`B` and concave in :math:`p`, and the simplex is compact, so by Sion's minimax theorem
:math:`\text{worst\_case} = \max_{p\in\Delta} V(p)`, a concave maximisation.  It is solved by ascent with
a two-sided certificate: every :math:`p` gives the lower bound :math:`V(p)`, and the estimator :math:`B_p`
the upper bound :math:`\max_q \operatorname{Var}_q(B_p) = \max_q c\cdot q - \lVert q\rVert^2`
(:math:`c = Q\,(\lVert B_{p,y}\rVert^2)_y`), the projection of :math:`c/2` onto the simplex.  The
iteration stops when they agree to :data:`WORST_CASE_RTOL`; :func:`worst_case` returns the upper bound
(the error of a concrete estimator).  For a channel invariant under permuting the k inputs
(GRR, unary encodings, subset selection) :math:`V` is concave and permutation-invariant, so its maximum
is at :math:`u` and worst_case = variance_uniform; the certificate confirms it at the first step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg
import scipy.optimize

from ldpopt._validation import as_real_array, check_distribution
from ldpopt.mechanism import as_channel_matrix

__all__ = [
    "WORST_CASE_RTOL",
    "WorstCaseSolution",
    "total_variance",
    "unbiased_estimator",
    "variance_at",
    "variance_uniform",
    "worst_case",
    "worst_case_solution",
]

#: rank test: an eigenvalue of the (k-1) x (k-1) matrix U^T M U below this times k * (largest
#: eigenvalue) counts as 0.  eigh's backward error is ~ k * 2^-52 * ||M||, so a channel of full rank
#: whose smallest eigenvalue is below 2^-40 * k * ||M|| cannot be told from a singular one in float64.
RANK_RTOL = 2.0**-40
#: relative gap between the certified upper and lower bounds at which the worst-case ascent stops
#: (V is evaluated with relative error ~ k * cond * 2^-52, ~1e-13 for well-conditioned channels, so the
#: line search cannot resolve much below 1e-12; 1e-10 is reached reliably and beats the 1e-9 goal)
WORST_CASE_RTOL = 1e-10
#: iterations of the worst-case ascent before it returns its (certified) bracket
_WORST_CASE_MAXITER = 500


def _helmert(k: int) -> np.ndarray:
    """An orthonormal basis (k x (k-1)) of the complement of the all-ones vector."""
    basis = scipy.linalg.null_space(np.ones((1, k)))
    return np.asarray(basis)


def _channel(Q: Any, name: str = "Q") -> tuple[np.ndarray, np.ndarray]:
    """The channel matrix and the mask of its non-zero columns (outputs that can occur)."""
    m = np.asarray(as_channel_matrix(Q, name), dtype=float)
    return m, m.sum(axis=0) > 0


def _weights(q: np.ndarray, p: np.ndarray, name: str) -> np.ndarray:
    """Output probabilities ``pQ`` of the non-zero columns ``q``; all must be positive."""
    w = p @ q
    if np.any(w <= 0):
        raise ValueError(
            f"{name} gives probability 0 to an output the channel can produce; the best unbiased "
            f"estimator is then not attained (pass a {name} with full support)"
        )
    return w


def _fisher(q: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``M = Q W^-1 Q^T`` (symmetrised against rounding)."""
    m = (q / w) @ q.T
    return (m + m.T) / 2


def _variance_uniform_matrix(q: np.ndarray) -> float:
    k = q.shape[0]
    if k == 1:
        return 0.0
    w = q.mean(axis=0)
    u = _helmert(k)
    reduced = u.T @ _fisher(q, w) @ u
    lam = np.linalg.eigvalsh(reduced)
    if lam[0] <= RANK_RTOL * k * max(lam[-1], float(k)):
        return math.inf
    return float(np.sum(1.0 / lam))


def variance_uniform(Q: Any) -> float:
    r"""Total variance (sum over the k items, one report) of the best unbiased estimator at the
    uniform distribution: :math:`\operatorname{tr}\big((QW^{-1}Q^T)^{-1}\big) - 1/k`, ``W = diag(uQ)``.

    ``Q`` is a :class:`~ldpopt.Mechanism` (or a result holding one) or a row-stochastic array
    (rows = inputs).  Outputs of probability 0 are dropped; ``math.inf`` when ``Q`` has rank < k
    (no unbiased estimator exists).
    """
    q, nz = _channel(Q)
    return _variance_uniform_matrix(q[:, nz])


def _variance_p(q: np.ndarray, p: np.ndarray) -> tuple[float, np.ndarray | None]:
    """(V(p), the estimator rows of the non-zero columns) or (inf, None) when rank < k."""
    w = _weights(q, p, "p")
    m = _fisher(q, w)
    try:
        chol = scipy.linalg.cho_factor(m)
    except np.linalg.LinAlgError:
        return math.inf, None
    lam = np.linalg.eigvalsh(m)
    if lam[0] <= RANK_RTOL * q.shape[0] * lam[-1]:
        return math.inf, None
    b = scipy.linalg.cho_solve(chol, q).T / w[:, None]  # W^-1 Q^T M^-1
    value = float(np.sum(w * np.sum(b * b, axis=1)) - p @ p)
    return value, b


def _check_p(p: Any, k: int) -> np.ndarray:
    arr = check_distribution(p, "p")
    if arr.size != k:
        raise ValueError(f"p must have one entry per input of the channel ({k}), got {arr.size}")
    return arr


def variance_at(Q: Any, p: Any) -> float:
    r""":math:`V(p) = \min_{QB=I} \operatorname{Var}_p(B)`: the total variance at ``p`` of the best
    unbiased estimator for ``p`` (``math.inf`` when ``Q`` has rank < k).  Every output the channel can
    produce must have positive probability under ``p`` (always true for a finite-eps LDP channel)."""
    q, nz = _channel(Q)
    value, _ = _variance_p(q[:, nz], _check_p(p, q.shape[0]))
    return value


def unbiased_estimator(Q: Any, p: Any = None) -> np.ndarray:
    r"""The best unbiased estimator at ``p`` (default: uniform), an ``m x k`` array ``B`` with
    :math:`QB = I`: a report y estimates the histogram by ``B[y]`` (average the rows of n reports).

    ``B = W^-1 Q^T (Q W^-1 Q^T)^-1``, ``W = diag(pQ)``; rows of outputs that cannot occur are 0.
    ValueError when ``Q`` has rank < k (no unbiased estimator exists).
    """
    q, nz = _channel(Q)
    k = q.shape[0]
    pv = np.full(k, 1.0 / k) if p is None else _check_p(p, k)
    value, b = _variance_p(q[:, nz], pv)
    if b is None:
        raise ValueError(f"Q has rank < {k}: no unbiased estimator of the {k} frequencies exists")
    out = np.zeros((q.shape[1], k))
    out[nz] = b
    return out


def total_variance(Q: Any, estimator: Any, p: Any) -> float:
    r""":math:`\sum_y (pQ)_y \lVert B_y\rVert^2 - \lVert p\rVert^2`: the total variance of one report's
    estimate ``estimator[y]`` at ``p`` (the estimator need not be unbiased; then this is the variance,
    not the mean squared error)."""
    q, _ = _channel(Q)
    b = as_real_array(estimator, "estimator")
    if not np.all(np.isfinite(b)):
        raise ValueError("estimator must contain only finite numbers")
    if b.shape != (q.shape[1], q.shape[0]):
        raise ValueError(
            f"estimator must have shape {(q.shape[1], q.shape[0])} (outputs x inputs), got {b.shape}"
        )
    pv = _check_p(p, q.shape[0])
    w = pv @ q
    return float(w @ np.sum(b * b, axis=1) - pv @ pv)


def _project_simplex(v: np.ndarray) -> np.ndarray:
    """Euclidean projection onto the probability simplex (sort-based, Held-Wolfe-Crowder)."""
    srt = np.sort(v)[::-1]
    cum = np.cumsum(srt) - 1.0
    idx = np.arange(1, v.size + 1)
    rho = int(np.flatnonzero(srt - cum / idx > 0)[-1])
    return np.maximum(v - cum[rho] / (rho + 1), 0.0)


@dataclass(frozen=True)
class WorstCaseSolution:
    """The minimax l2 error of a channel with its certificate.

    ``value`` (= ``upper``) is the worst-case total variance of ``estimator`` over the simplex; ``lower``
    is :math:`V(p)` at the least favourable ``p`` found, a lower bound on every unbiased estimator's
    worst case; ``upper - lower`` is the certified gap (``<= WORST_CASE_RTOL * upper`` unless ``status``
    says otherwise).
    """

    value: float
    lower: float
    upper: float
    p: np.ndarray
    estimator: np.ndarray | None
    iterations: int
    status: str
    message: str


def _upper(q: np.ndarray, b: np.ndarray) -> tuple[float, np.ndarray]:
    """max over the simplex of Var_q(B) for the fixed estimator rows ``b``, and its argmax."""
    c = q @ np.sum(b * b, axis=1)
    top = _project_simplex(c / 2)
    return float(c @ top - top @ top), top


def _value_only(q: np.ndarray, p: np.ndarray) -> float:
    """V(p) from a Cholesky factor, trace(M^-1) = |L^-1|_F^2 (no estimator, no eigenvalues): the line
    search's evaluation.  A pivot below RANK_RTOL * k times the largest (squared) counts as singular
    (-> inf, which the search avoids); the accepted point is re-evaluated by :func:`_variance_p`."""
    w = p @ q
    if np.any(w <= 0):
        return math.inf
    try:
        chol = np.linalg.cholesky(_fisher(q, w))
    except np.linalg.LinAlgError:
        return math.inf
    piv = np.diag(chol) ** 2
    if piv.min() <= RANK_RTOL * q.shape[0] * piv.max():
        return math.inf
    inv, info = scipy.linalg.lapack.dtrtri(chol, lower=1)  # solve_triangular costs 100x more at k = 20
    if info != 0:
        return math.inf
    return float(np.sum(inv * inv) - p @ p)


#: the line search's step tolerance on t in [0, 1]: ~45 ulps of 1 (1e-14 / 2.2e-16), t resolved
#: nearly to float64 precision; a finer request only makes Brent's method evaluate rounding noise
_LINE_SEARCH_XATOL = 1e-14
#: with a zero in a non-zero column, iterates stop this far (in t) short of the simplex's boundary,
#: where outputs vanish and V is infinite: a step of 1e-9 moves the iterate's entries by at most
#: 1e-9, the accuracy goal of the worst case, and keeps every output's probability positive
_BOUNDARY_MARGIN = 1e-9


def _line_search(q: np.ndarray, p: np.ndarray, d: np.ndarray, t_max: float) -> float:
    """argmax over t in [0, t_max] of the concave V(p + t d) (bounded Brent)."""

    def neg(t: float) -> float:
        return -_value_only(q, p + t * d)

    res = scipy.optimize.minimize_scalar(
        neg, bounds=(0.0, t_max), method="bounded", options={"xatol": _LINE_SEARCH_XATOL}
    )
    t = float(res.x)
    return t if neg(t) <= neg(0.0) else 0.0


def _ascent(q: np.ndarray, rtol: float) -> WorstCaseSolution:
    k = q.shape[0]
    # a channel with a zero entry in a non-zero column (eps = inf) loses outputs on the boundary of
    # the simplex: keep the iterates inside it there
    t_max = 1.0 if np.all(q > 0) else 1.0 - _BOUNDARY_MARGIN
    p = np.full(k, 1.0 / k)
    lower, b = _variance_p(q, p)
    if b is None:
        return WorstCaseSolution(math.inf, math.inf, math.inf, p, None, 0, "rank_deficient", "Q has rank < k")
    for it in range(1, _WORST_CASE_MAXITER + 1):
        upper, top = _upper(q, b)
        if upper - lower <= rtol * abs(upper):
            return WorstCaseSolution(
                upper, lower, upper, p, b, it, "optimal", "certified gap within tolerance"
            )
        # direction to the maximiser for the current estimator: an ascent direction of V, since
        # grad V . d = (upper - lower) + |d|^2 > 0
        t = _line_search(q, p, top - p, t_max)
        if t == 0.0:
            return WorstCaseSolution(upper, lower, upper, p, b, it, "stalled", "line search made no progress")
        p = p + t * (top - p)
        new_lower, new_b = _variance_p(q, p)
        if new_b is None:
            return WorstCaseSolution(upper, lower, upper, p, b, it, "stalled", "iterate left the interior")
        lower, b = new_lower, new_b
    upper, _ = _upper(q, b)
    return WorstCaseSolution(
        upper, lower, upper, p, b, _WORST_CASE_MAXITER, "maxiter", "iteration limit reached"
    )


def worst_case_solution(Q: Any, *, rtol: float = WORST_CASE_RTOL) -> WorstCaseSolution:
    r"""The minimax l2 error :math:`\min_{QB=I}\max_{p\in\Delta}\operatorname{Var}_p(B)` of a channel, with
    the minimax estimator, the least favourable ``p`` and a certified bracket (see the module text)."""
    q, nz = _channel(Q)
    if not (isinstance(rtol, (int, float, np.floating)) and 0.0 <= float(rtol) < 1.0):
        raise ValueError(f"rtol must be a number in [0, 1), got rtol={rtol!r}")
    sol = _ascent(q[:, nz], float(rtol))
    if sol.estimator is None:
        return sol
    full = np.zeros((q.shape[1], q.shape[0]))
    full[nz] = sol.estimator
    return WorstCaseSolution(
        sol.value, sol.lower, sol.upper, sol.p, full, sol.iterations, sol.status, sol.message
    )


def worst_case(Q: Any) -> float:
    r"""The minimax total variance :math:`\min_{QB=I}\max_{p}\operatorname{Var}_p(B) = \max_p V(p)`
    (one report; ``math.inf`` when ``Q`` has rank < k).  Equals :func:`variance_uniform` for channels
    invariant under permutations of the inputs.  See :func:`worst_case_solution` for the certificate."""
    return worst_case_solution(Q).value
