r"""Design backwards: the smallest eps that reaches a target with n reports.

* :func:`minimum_epsilon` - the smallest eps at which the optimal eps-LDP mechanism
  (:func:`ldpopt.optimal_mechanism` for ``divergence``) lets the level-alpha likelihood-ratio
  test (:class:`ldpopt.LikelihoodRatioTest`, exact up to ``exact_max_n`` reports) reach type-II
  error <= beta with n reports;
* :func:`minimum_epsilon_for_width` - the smallest eps at which the optimal mechanism's expected
  interval half-width for the mixing proportion pi (:func:`ldpopt.mixture_proportion`) with n
  reports is <= ``width``;
* :func:`minimum_epsilon_for_frequency_width` - the same for the input frequencies estimated
  from k-ary randomized response (:func:`ldpopt.frequencies`), in closed form per eps.

Each is a bisection on eps of a yes/no question asked of a forward computation: ``eps_below``
fails, ``eps`` meets the target, and ``eps - eps_below <= xtol * eps``.  The bisection assumes
the answer is monotone in eps (a larger eps allows every channel a smaller one does; the optimal
mechanism for the design divergence is, in practice, at least as good for the test or the
interval); the tests check the forward calls on both sides of every answer.

Expected half-widths are first-order: the profile-likelihood interval of ``mixture_proportion``
has half-width :math:`\sqrt{\chi^2_{1,c}/(n I(\pi))}` to first order, with the Fisher
information of one report :math:`I(\pi)=\sum_y (M_1(y)-M_0(y))^2/M_\pi(y)`,
:math:`M_\pi=(1-\pi)M_0+\pi M_1`; the k-RR frequency estimate
:math:`\hat\theta_j=(\hat f_j-q)/(p-q)` has standard error
:math:`\sqrt{f_j(1-f_j)/n}/(p-q)`, :math:`f_j=q+\theta_j(p-q)`, and the half-width is
:math:`z_{(1+c)/2}` standard errors (normal approximation), the largest over j.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from typing import Any

import numpy as np
from scipy import stats

from ldpopt._validation import check_labelled_pair, check_positive_int, is_real
from ldpopt.deploy.llr import DEFAULT_EXACT_MAX_N
from ldpopt.deploy.testing import LikelihoodRatioTest, check_level
from ldpopt.mechanism import Mechanism, randomized_response
from ldpopt.spr.solve import optimal_mechanism

__all__ = [
    "MinimumEpsilonResult",
    "UnreachableTargetError",
    "minimum_epsilon",
    "minimum_epsilon_for_frequency_width",
    "minimum_epsilon_for_width",
    "krr_half_width",
    "mixture_half_width",
    "EPS_MAX",
]

#: the largest eps searched: beyond it e^-eps < 1e-27 and every mechanism is deterministic to
#: double precision in all but its smallest entries
EPS_MAX = 64.0
#: default relative tolerance of the bisection: eps - eps_below <= xtol * eps
DEFAULT_XTOL = 1e-3


@dataclass(frozen=True)
class MinimumEpsilonResult:
    r"""The smallest eps reaching a target (:func:`minimum_epsilon` and the width searches).

    Attributes
    ----------
    eps : float
        The smallest eps found that meets the target (the upper end of the final bracket).
    eps_below : float
        The largest eps found that does not (0 when none was tried): the answer lies in
        ``(eps_below, eps]`` and ``eps - eps_below <= xtol * eps``.
    mechanism : Mechanism
        The mechanism at ``eps`` (the optimal one for ``divergence``; k-RR for frequencies).
    n : int
        Reports.
    value : float
        What the target is about, at ``eps``: the type-II error of the test, or the expected
        half-width.
    target : float
        ``beta``, or ``width``.
    kind : {"test", "mixture-width", "frequency-width"}
    size : float
        Keyword-only, like the following fields.  The test's type-I error at ``eps`` (nan for widths).
    method : str
        How ``value`` was computed (the test's ``"exact-lattice"``, ``"exact-binomial"``,
        ``"saddlepoint"``; ``"fisher"``, ``"normal"`` for widths).
    evaluations : int
        Forward computations made.
    xtol : float
    message : str
    """

    eps: float
    eps_below: float
    mechanism: Mechanism
    n: int
    value: float
    target: float
    kind: str
    _: KW_ONLY
    size: float = math.nan
    method: str = ""
    evaluations: int = 0
    xtol: float = DEFAULT_XTOL
    message: str = ""


class UnreachableTargetError(ValueError):
    """The target is not met even at :data:`EPS_MAX`: more reports are needed (a ValueError)."""


#: a forward computation: eps -> (meets the target, value, mechanism, size, method)
Forward = Callable[[float], tuple[bool, float, Mechanism, float, str]]


def _check_xtol(xtol: Any) -> float:
    if not is_real(xtol) or not 0.0 < float(xtol) < 1.0:
        raise ValueError(f"xtol must be a number in (0, 1), got xtol={xtol!r}")
    return float(xtol)


def _search(forward: Forward, xtol: float, what: str) -> tuple[float, float, tuple, int]:
    """Bisection: ``(eps, eps_below, forward(eps), evaluations)`` with forward(eps) meeting the
    target, forward(eps_below) not (or eps_below = 0), and ``eps - eps_below <= xtol * eps``."""
    calls = 0

    def ask(e: float) -> tuple:
        nonlocal calls
        calls += 1
        return forward(e)

    lo, hi = 0.0, 1.0
    res = ask(hi)
    while not res[0]:
        lo, hi = hi, 2.0 * hi
        if hi > EPS_MAX:
            raise UnreachableTargetError(
                f"{what} is not reached even at eps = {EPS_MAX:g}: more reports are needed"
            )
        res = ask(hi)
    while hi - lo > xtol * hi:
        mid = 0.5 * (lo + hi)
        r = ask(mid)
        if r[0]:
            hi, res = mid, r
        else:
            lo = mid
    return hi, lo, res, calls


def minimum_epsilon(
    p0: Any,
    p1: Any,
    *,
    n: int,
    alpha: float = 0.05,
    beta: float = 0.05,
    divergence: str = "chernoff",
    max_outputs: int | None = None,
    randomized: bool = True,
    exact_max_n: int = DEFAULT_EXACT_MAX_N,
    xtol: float = DEFAULT_XTOL,
) -> MinimumEpsilonResult:
    r"""The smallest eps at which the optimal mechanism's test reaches (alpha, beta) with n reports.

    Parameters
    ----------
    p0, p1 : distributions (arrays, dicts or Series) on the same alphabet
    n : int
        Reports.
    alpha, beta : float
        Type-I and type-II error targets (alpha + beta < 1).
    divergence : {"chernoff", "kl"}
        The mechanism designed at every eps: :func:`ldpopt.optimal_mechanism` for the Chernoff
        information (both errors) or the KL divergence (Stein's exponent).
    max_outputs : int, optional
        Output budget of the design.
    randomized : bool
        Use the randomised level-alpha test (size exactly alpha, its type-II error monotone in n
        and eps; :class:`ldpopt.LikelihoodRatioTest`).
    exact_max_n : int
        Exact test up to this many reports, saddlepoint beyond (``method`` says which).
    xtol : float
        Relative tolerance: ``eps - eps_below <= xtol * eps``.

    Returns
    -------
    MinimumEpsilonResult
        ``value`` is the type-II error at ``eps``, ``size`` the type-I error.

    Examples
    --------
    >>> import ldpopt
    >>> r = ldpopt.minimum_epsilon([0.7, 0.2, 0.1], [0.1, 0.3, 0.6], n=50, alpha=0.05, beta=0.1)
    >>> r.eps_below < r.eps and r.value <= 0.1
    True
    """
    n = check_positive_int(n, "n")
    alpha, beta = check_level(alpha, "alpha"), check_level(beta, "beta")
    if alpha + beta >= 1.0:
        raise ValueError(
            f"alpha + beta must be < 1 (otherwise no report is needed), got {alpha!r} + {beta!r}"
        )
    if divergence not in ("chernoff", "kl"):
        raise ValueError(f"divergence must be 'chernoff' or 'kl', got divergence={divergence!r}")
    xtol = _check_xtol(xtol)
    check_labelled_pair(p0, p1)

    def forward(eps: float) -> tuple[bool, float, Mechanism, float, str]:
        mech = optimal_mechanism(p0, p1, eps, divergence, max_outputs).mechanism
        assert mech is not None  # the SPR solvers return their mechanism
        d = LikelihoodRatioTest(mech, p0, p1, alpha, randomized=randomized, exact_max_n=exact_max_n).design(n)
        return d.type_ii <= beta, d.type_ii, mech, d.size, d.method

    what = f"type-II error <= {beta:g} at level {alpha:g} with {n} reports"
    eps, below, (_, value, mech, size, method), calls = _search(forward, xtol, what)
    return MinimumEpsilonResult(
        eps,
        below,
        mech,
        n,
        value,
        beta,
        "test",
        size=size,
        method=method,
        evaluations=calls,
        xtol=xtol,
        message=f"eps in ({below:.6g}, {eps:.6g}]: {what}",
    )


def mixture_half_width(mech: Mechanism, p0: Any, p1: Any, n: int, pi: float, confidence: float) -> float:
    r"""First-order expected half-width of the mixing proportion's interval with n reports:
    :math:`\sqrt{\chi^2_{1,c}/(n I(\pi))}` (module text); ``inf`` when pi is not identifiable."""
    m0, m1 = mech.output_distributions(p0, p1)
    mpi = (1.0 - pi) * m0 + pi * m1
    live = mpi > 0
    info = float(np.sum((m1[live] - m0[live]) ** 2 / mpi[live]))
    if not info > 0:
        return math.inf
    return math.sqrt(float(stats.chi2.ppf(confidence, 1)) / (n * info))


def _check_width_args(n: Any, width: Any, confidence: Any) -> tuple[int, float, float]:
    n = check_positive_int(n, "n")
    if not is_real(width) or not 0.0 < float(width) < math.inf:
        raise ValueError(f"width must be a positive number, got width={width!r}")
    if not is_real(confidence) or not 0.5 < float(confidence) < 1.0:
        raise ValueError(f"confidence must be a number in (0.5, 1), got confidence={confidence!r}")
    return n, float(width), float(confidence)


def minimum_epsilon_for_width(
    p0: Any,
    p1: Any,
    *,
    n: int,
    width: float,
    pi: float = 0.5,
    confidence: float = 0.95,
    divergence: str = "chernoff",
    max_outputs: int | None = None,
    xtol: float = DEFAULT_XTOL,
) -> MinimumEpsilonResult:
    r"""The smallest eps at which the optimal mechanism's interval for the mixing proportion pi
    (:func:`ldpopt.mixture_proportion`) has expected half-width <= ``width`` with n reports.

    The half-width is the first-order one at the anticipated ``pi`` (module text: the Fisher
    information of one report); ``divergence`` (``"chernoff"``, ``"kl"``, ``"chi2"``, ...) is the
    design of :func:`ldpopt.optimal_mechanism` at every eps; ``value`` is the half-width at ``eps``.
    """
    n, width, confidence = _check_width_args(n, width, confidence)
    if not is_real(pi) or not 0.0 <= float(pi) <= 1.0:
        raise ValueError(f"pi must be a number in [0, 1], got pi={pi!r}")
    pi = float(pi)
    xtol = _check_xtol(xtol)
    check_labelled_pair(p0, p1)

    def forward(eps: float) -> tuple[bool, float, Mechanism, float, str]:
        mech = optimal_mechanism(p0, p1, eps, divergence, max_outputs).mechanism
        assert mech is not None
        w = mixture_half_width(mech, p0, p1, n, pi, confidence)
        return w <= width, w, mech, math.nan, "fisher"

    what = f"an expected half-width <= {width:g} for pi = {pi:g} with {n} reports"
    eps, below, (_, value, mech, _, _), calls = _search(forward, xtol, what)
    return MinimumEpsilonResult(
        eps,
        below,
        mech,
        n,
        value,
        width,
        "mixture-width",
        method="fisher",
        evaluations=calls,
        xtol=xtol,
        message=f"eps in ({below:.6g}, {eps:.6g}]: {what} ({100 * confidence:g}% interval)",
    )


def krr_half_width(k: int, eps: float, n: int, confidence: float, theta: np.ndarray | None) -> float:
    """Largest normal-approximation half-width of k-RR's unbiased frequency estimates with n reports
    (module text); ``theta`` the anticipated input distribution (None: the worst case)."""
    e = math.exp(-eps)  # p - q = (1 - e) / (1 + (k - 1) e), q = e / (1 + (k - 1) e): no overflow
    den = 1.0 + (k - 1) * e
    p, q = 1.0 / den, e / den
    if theta is None:
        var = 0.25 if q <= 0.5 <= p else max(p * (1 - p), q * (1 - q))
    else:
        f = q + theta * (p - q)
        var = float(np.max(f * (1 - f)))
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    return z * math.sqrt(var / n) / (p - q)


def minimum_epsilon_for_frequency_width(
    k: int,
    *,
    n: int,
    width: float,
    theta: Any = None,
    confidence: float = 0.95,
    xtol: float = DEFAULT_XTOL,
) -> MinimumEpsilonResult:
    r"""The smallest eps at which k-ary randomized response's unbiased frequency estimates
    (:func:`ldpopt.frequencies`) have half-width <= ``width`` (normal approximation, largest over
    the k symbols) with n reports; ``theta`` is the anticipated input distribution (default: the
    worst case, ``f_j = 1/2`` when reachable).  ``value`` is the half-width at ``eps``."""
    k = check_positive_int(k, "k")
    if k < 2:
        raise ValueError(f"k must be >= 2, got k={k}")
    n, width, confidence = _check_width_args(n, width, confidence)
    xtol = _check_xtol(xtol)
    th = None
    if theta is not None:
        th, _, _ = check_labelled_pair(theta, theta, names=("theta", "theta"))
        if th.shape[0] != k:
            raise ValueError(f"theta must have k = {k} entries, got {th.shape[0]}")

    def forward(eps: float) -> tuple[bool, float, Mechanism, float, str]:
        w = krr_half_width(k, eps, n, confidence, th)
        return w <= width, w, randomized_response(k, eps), math.nan, "normal"

    what = f"a frequency half-width <= {width:g} with {n} reports of k-RR on {k} symbols"
    eps, below, (_, value, mech, _, _), calls = _search(forward, xtol, what)
    return MinimumEpsilonResult(
        eps,
        below,
        mech,
        n,
        value,
        width,
        "frequency-width",
        method="normal",
        evaluations=calls,
        xtol=xtol,
        message=f"eps in ({below:.6g}, {eps:.6g}]: {what} ({100 * confidence:g}% interval)",
    )
