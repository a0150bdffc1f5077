r"""Design backwards: the smallest eps that reaches a target with n reports.

* :func:`minimum_epsilon` - the smallest eps at which the optimal eps-LDP mechanism
  (:func:`ldpopt.optimal_mechanism` for ``divergence``) lets the level-alpha likelihood-ratio
  test (:class:`ldpopt.LikelihoodRatioTest`, exact up to ``exact_max_n`` reports) reach type-II
  error <= beta with n reports;
* :func:`minimum_epsilon_for_width` - the smallest eps at which the optimal mechanism's expected
  interval half-width for the mixing proportion pi (:func:`ldpopt.mixture_proportion`) with n
  reports is <= ``width``;
* :func:`minimum_epsilon_for_frequency_width` - the same for the item frequencies estimated from
  a frequency mechanism (:mod:`ldpopt.frequency.mechanisms`, default k-ary randomized response,
  or the optimum of :func:`ldpopt.frequency.optimal_mechanism`): the largest half-width of
  :func:`ldpopt.frequency.estimate`'s simultaneous intervals, from exact variances per eps.

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
:math:`z_{(1+c)/2}` standard errors (normal approximation), the largest over j; every frequency
mechanism's item x has the exact variance :math:`V_x` of its estimate, and the simultaneous
(Bonferroni) half-width :math:`z_{1-(1-c)/(2k)}\sqrt{V_x/n}` of :func:`ldpopt.frequency.estimate`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from typing import Any

import numpy as np
from scipy import stats
from scipy.special import ndtri

from ldpopt._validation import check_eps, check_labelled_pair, check_positive_int, is_real
from ldpopt.deploy.llr import DEFAULT_EXACT_MAX_N
from ldpopt.deploy.testing import LikelihoodRatioTest, check_level
from ldpopt.frequency import mechanisms as freqmech
from ldpopt.frequency.objectives import unbiased_estimator
from ldpopt.frequency.optimum import FrequencyOptimum
from ldpopt.frequency.optimum import optimal_mechanism as optimal_frequency_mechanism
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
    "FREQUENCY_MECHANISMS",
    "frequency_quantile",
]

#: the largest eps searched: beyond it e^-eps < 1e-27 and every mechanism is deterministic to
#: double precision in all but its smallest entries
EPS_MAX = 64.0
#: the mechanisms :func:`minimum_epsilon_for_frequency_width` searches over
FREQUENCY_MECHANISMS = (*freqmech.KINDS, "optimal")
FREQUENCY_ALIASES = {"rappor": "basic_rappor"}
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
    mechanism : Mechanism or None
        The mechanism at ``eps`` (the optimal one for ``divergence``; for frequencies the channel
        of the frequency mechanism, None when it is too large to build).
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
    frequency_mechanism : FrequencyMechanism or FrequencyOptimum or None
        For frequency widths: the mechanism at ``eps`` (None for the other targets).
    """

    eps: float
    eps_below: float
    mechanism: Mechanism | None
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
    frequency_mechanism: Any = None


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
    return n, float(width), _check_confidence(confidence)


def _check_confidence(confidence: Any) -> float:
    if not is_real(confidence) or not 0.5 < float(confidence) < 1.0:
        raise ValueError(f"confidence must be a number in (0.5, 1), got confidence={confidence!r}")
    return float(confidence)


def _check_k(k: Any) -> int:
    k = check_positive_int(k, "k")
    if k < 2:
        raise ValueError(f"k must be >= 2, got k={k}")
    return k


#: the interval kinds of :func:`frequency_quantile`
_FREQUENCY_INTERVALS = ("simultaneous", "per-item")


def _check_interval(interval: Any) -> str:
    if not isinstance(interval, str) or interval not in _FREQUENCY_INTERVALS:
        raise ValueError(f"interval must be 'simultaneous' or 'per-item', got interval={interval!r}")
    return interval


def _check_size(size: Any, kind: str, k: int) -> int | None:
    """OLH's g (>= 2) or subset selection's d (1 <= d <= k - 1); None elsewhere."""
    if size is None:
        return None
    if kind not in ("olh", "subset"):
        raise ValueError(f"size applies to olh and subset only, got size={size!r} for mechanism={kind!r}")
    size = check_positive_int(size, "size")
    lo, hi = (2, None) if kind == "olh" else (1, k - 1)
    if size < lo or (hi is not None and size > hi):
        what = "OLH's hash range g, >= 2" if kind == "olh" else f"subset selection's d, in [1, {hi}]"
        raise ValueError(f"size is {what}, got size={size}")
    return size


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
    """Largest per-item normal-approximation half-width of k-RR's unbiased frequency estimates
    with n reports (module text); ``theta`` the anticipated input distribution (None: the worst
    case)."""
    k = _check_k(k)
    eps = check_eps(eps, "eps", allow_inf=False)
    n = check_positive_int(n, "n")
    confidence = _check_confidence(confidence)
    th = _check_theta(theta, k)
    if isinstance(th, str):
        th = np.full(k, 1.0 / k)
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    return z * math.sqrt(_deployed_variance(freqmech.grr(k, eps), th) / n)


def _deployed_variance(fm: freqmech.FrequencyMechanism, theta: np.ndarray | None) -> float:
    """Largest per-item variance (n = 1) of a deployed oracle's standard estimator at ``theta``;
    None: its supremum over the simplex, :math:`\\max_{\\pi\\in[q^*,p^*]}\\pi(1-\\pi)/(p^*-q^*)^2`
    (item x's variance depends on f_x alone, and f_x ranges over [0, 1])."""
    if theta is not None:
        return float(np.max(fm.variance(theta)))
    p, q = fm.p, fm.q
    top = 0.25 if q <= 0.5 <= p else max(p * (1 - p), q * (1 - q))
    return top / (p - q) ** 2


def _optimal_variance(opt: FrequencyOptimum, theta: np.ndarray | str | None) -> float:
    r"""Largest per-item variance (n = 1) of the best unbiased estimator at the uniform
    distribution for the optimal channel: ``value / k`` at the uniform distribution (the channel
    is invariant under a transitive permutation group, so every item has the same variance);
    otherwise from the channel, :math:`V_x(f)=\sum_{x'} f_{x'} c_{xx'} - f_x^2` with
    :math:`c_{xx'}=\sum_y B_{yx}^2 Q(y|x')`, whose supremum over the simplex is
    :math:`\max_{t\in[0,1]} t c_{xx} + (1-t)\max_{x'\ne x} c_{xx'} - t^2` (put mass t on x and
    the rest on the best other item), at :math:`t=\mathrm{clip}((c_{xx}-m_x)/2, 0, 1)`."""
    if isinstance(theta, str):
        return opt.value / opt.k
    mech = opt.mechanism
    if mech is None:
        raise ValueError(
            f"the optimal channel at k = {opt.k} is too large to build: use theta='uniform' with "
            "mechanism='optimal'"
        )
    q = mech.matrix
    b = unbiased_estimator(q)
    c = (b**2).T @ q.T  # c[x, x'] = sum_y B[y, x]^2 Q(y | x')
    if theta is not None:
        return float(np.max(c @ theta - theta**2))
    diag = np.diag(c).copy()
    np.fill_diagonal(c, -np.inf)
    m = c.max(axis=1)
    t = np.clip((diag - m) / 2.0, 0.0, 1.0)
    return float(np.max(t * diag + (1.0 - t) * m - t**2))


def frequency_quantile(k: int, confidence: float, interval: str) -> float:
    """The normal quantile of the frequency intervals: :math:`z_{1-\\alpha/(2k)}` (Bonferroni,
    ``interval="simultaneous"``, as :func:`ldpopt.frequency.estimate`) or :math:`z_{1-\\alpha/2}`
    (``"per-item"``), :math:`\\alpha = 1 -` confidence."""
    k = _check_k(k)
    confidence = _check_confidence(confidence)
    interval = _check_interval(interval)
    alpha = 1.0 - confidence
    return -float(ndtri(alpha / (2.0 * k) if interval == "simultaneous" else alpha / 2.0))


def _frequency_forward(
    kind: str, k: int, n: int, theta: np.ndarray | str | None, z: float, size: int | None
) -> Callable[[float], tuple[float, Any]]:
    """eps -> (largest expected half-width, the frequency mechanism or optimum)."""

    def forward(eps: float) -> tuple[float, Any]:
        if kind == "optimal":
            opt = optimal_frequency_mechanism(k, eps)
            return z * math.sqrt(_optimal_variance(opt, theta) / n), opt
        if kind == "olh" and size is None and eps > freqmech.OLH_DEFAULT_G_MAX_EPS:
            return math.inf, None  # OLH's default g = round(e^eps + 1) is not built beyond
        fm = freqmech.make(kind, k, eps, size)
        th = np.full(k, 1.0 / k) if isinstance(theta, str) else theta
        return z * math.sqrt(_deployed_variance(fm, th) / n), fm

    return forward


def _channel_of(kind: str, fm: Any) -> Mechanism | None:
    """The channel of the answer: k-RR's, a deployed oracle's when it is built, the optimum's."""
    if kind == "grr":
        return randomized_response(fm.k, fm.eps)
    if kind == "optimal":
        return fm.mechanism
    return fm.channel() if fm.has_channel else None


def _check_frequency_kind(mechanism: Any) -> str:
    kind = FREQUENCY_ALIASES.get(mechanism, mechanism) if isinstance(mechanism, str) else mechanism
    if kind not in FREQUENCY_MECHANISMS:
        raise ValueError(
            f"mechanism must be one of {', '.join(map(repr, FREQUENCY_MECHANISMS))} (or 'rappor'), "
            f"got mechanism={mechanism!r}"
        )
    return str(kind)


def _check_theta(theta: Any, k: int) -> np.ndarray | str | None:
    if theta is None or (isinstance(theta, str) and theta == "uniform"):
        return theta
    if isinstance(theta, str):
        raise ValueError(f"theta must be a distribution, 'uniform' or None, got theta={theta!r}")
    th, _, _ = check_labelled_pair(theta, theta, names=("theta", "theta"))
    if th.shape[0] != k:
        raise ValueError(f"theta must have k = {k} entries, got {th.shape[0]}")
    return th


def minimum_epsilon_for_frequency_width(
    k: int,
    *,
    n: int,
    width: float,
    theta: Any = None,
    confidence: float = 0.95,
    mechanism: str = "grr",
    interval: str = "simultaneous",
    size: int | None = None,
    xtol: float = DEFAULT_XTOL,
) -> MinimumEpsilonResult:
    r"""The smallest eps at which a frequency mechanism's interval half-width is <= ``width``
    with n reports.

    The half-width targeted is the one :func:`ldpopt.frequency.estimate` reports, at the
    anticipated input distribution: :math:`z\sqrt{V_x/n}`, largest over the k items, with
    :math:`V_x` the exact variance (one report) of item x's estimate and, by default, the
    Bonferroni quantile :math:`z = z_{1-\alpha/(2k)}`, :math:`\alpha = 1-` ``confidence``, of the
    simultaneous intervals (``interval="per-item"``: :math:`z_{1-\alpha/2}`, each interval alone).
    It is the expected half-width to first order (estimate's plug-in standard error has
    :math:`\pi_x` estimated).

    Parameters
    ----------
    k : int
        Number of items (>= 2).
    n : int
        Reports.
    width : float
        Target half-width.
    theta : distribution, "uniform" or None
        Anticipated input distribution; None (default): the worst case over the simplex.
    confidence : float
        In (0.5, 1).
    mechanism : str
        ``"grr"`` (k-ary randomized response, the default), ``"sue"``, ``"oue"``,
        ``"basic_rappor"`` (alias ``"rappor"``), ``"olh"``, ``"subset"``, ``"hadamard"``
        (:mod:`ldpopt.frequency.mechanisms`, standard estimator, exact variance) or ``"optimal"``
        (:func:`ldpopt.frequency.optimal_mechanism`'s channel with its best unbiased estimator at
        the uniform distribution; optimal for the summed variance, not necessarily for the largest
        item's; with theta None or a distribution its channel is built, so k is limited).
    size : int, optional
        OLH's g or subset selection's d (default: each one's eps-dependent default).
    xtol : float
        Relative tolerance: ``eps - eps_below <= xtol * eps``.

    Returns
    -------
    MinimumEpsilonResult
        ``value`` the half-width at ``eps``; ``mechanism`` the channel at ``eps`` when it is built
        (None otherwise: OLH's or subset selection's at large k); ``frequency_mechanism`` the
        :class:`~ldpopt.frequency.FrequencyMechanism` or
        :class:`~ldpopt.frequency.FrequencyOptimum`.
    """
    k = _check_k(k)
    n, width, confidence = _check_width_args(n, width, confidence)
    xtol = _check_xtol(xtol)
    kind = _check_frequency_kind(mechanism)
    interval = _check_interval(interval)
    size = _check_size(size, kind, k)
    th = _check_theta(theta, k)
    z = frequency_quantile(k, confidence, interval)
    fwd = _frequency_forward(kind, k, n, th, z, size)
    found: dict[float, Any] = {}

    def forward(eps: float) -> tuple[bool, float, Mechanism, float, str]:
        w, fm = fwd(eps)
        found[eps] = fm
        return w <= width, w, None, math.nan, "normal"  # type: ignore[return-value]

    where = "the worst case" if th is None else ("uniform" if isinstance(th, str) else "theta")
    what = (
        f"a frequency half-width <= {width:g} with {n} reports of {kind} on {k} items ({where}, "
        f"{interval} {100 * confidence:g}% intervals)"
    )
    eps, below, (_, value, _, _, _), calls = _search(forward, xtol, what)
    return MinimumEpsilonResult(
        eps,
        below,
        _channel_of(kind, found[eps]),
        n,
        value,
        width,
        "frequency-width",
        method="normal",
        evaluations=calls,
        xtol=xtol,
        message=f"eps in ({below:.6g}, {eps:.6g}]: {what}",
        frequency_mechanism=found[eps],
    )
