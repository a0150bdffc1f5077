r"""How many privatized reports a likelihood-ratio test needs: :func:`sample_size`.

Sample sizes (:func:`sample_size`) are exact where the exact test is used and otherwise
come from the saddlepoint approximation (the default beyond ``exact_max_n``), the Chernoff
bound (a guaranteed sufficient n for a threshold test, typically 1.5-2x the optimum) or
Stein's lemma with Strassen's second-order term; the result's ``method`` says which, and the
Chernoff and Stein numbers are always reported alongside.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, replace
from typing import Any

import numpy as np
from scipy.optimize import brentq
from scipy.special import ndtri

from ldpopt._validation import check_positive_int
from ldpopt.deploy.llr import (
    DEFAULT_EXACT_MAX_N,
    DEFAULT_LATTICE_SIZE,
    LLRLaw,
    TestDesign,
    cgf,
    design_saddlepoint,
    design_test,
    saddle_theta,
)
from ldpopt.deploy.testing import LikelihoodRatioTest, check_level
from ldpopt.divergences import chernoff_information

__all__ = ["SampleSizeResult", "sample_size"]

#: the most reports a sample size may be (a pair needing more is refused with its KL per report)
MAX_REPORTS = 10**12
#: the longest upward scan over the saw-tooth of a non-randomised test's error
MAX_SCAN = 10_000


@dataclass(frozen=True)
class SampleSizeResult:
    r"""Number of reports needed for type-I error <= alpha and type-II error <= beta.

    Attributes
    ----------
    n : int
    alpha, beta : float
        Targets.
    size, type_ii : float
        Errors of the test at ``n``: exact (exact methods), Chernoff upper bounds
        (``"chernoff"``), or approximations.
    method : {"exact-binomial", "exact-lattice", "chernoff", "saddlepoint", "stein"}
    exact : bool
        True when ``n`` is the exact smallest n for the test as implemented.
    randomized : bool
    kl : float
        :math:`D(M_0\|M_1)`, the Stein exponent.
    chernoff_n : int
        The Chernoff-bound sample size (guaranteed sufficient; an upper bound), for comparison.
    chernoff_information : float
        :math:`C(M_0, M_1)`, the Bayes-error exponent (both errors alike: each decays as
        :math:`e^{-nC}`), exact (:func:`ldpopt.chernoff_information`).
    stein_n : int
        Stein's-lemma estimate with Strassen's second-order term, for comparison.
    message : str
    """

    n: int
    alpha: float
    beta: float
    size: float
    type_ii: float
    method: str
    exact: bool
    randomized: bool
    _: KW_ONLY
    kl: float
    chernoff_n: int = 0
    chernoff_information: float = math.nan
    stein_n: int = 0
    message: str = ""


def sample_size(
    mech: Any,
    p0: Any,
    p1: Any,
    alpha: float = 0.05,
    beta: float = 0.05,
    *,
    method: str = "auto",
    randomized: bool = False,
    exact_max_n: int = DEFAULT_EXACT_MAX_N,
    lattice_size: int = DEFAULT_LATTICE_SIZE,
    normalize: bool = False,
) -> SampleSizeResult:
    r"""Smallest number of reports n for which the likelihood-ratio test has errors <= (alpha, beta).

    Parameters
    ----------
    mech, p0, p1 : as for :class:`LikelihoodRatioTest`
    alpha, beta : float
        Type-I and type-II error targets.
    method : {"auto", "exact", "chernoff", "saddlepoint", "stein"}
        ``"auto"``: exact when the exact test applies (two-valued LLR at any n, otherwise
        :math:`n\le` ``exact_max_n``), else ``"saddlepoint"`` -- the approximation the test
        itself uses beyond ``exact_max_n``; the Chernoff and Stein numbers are always
        reported too (``chernoff_n``, ``stein_n``).

        * ``"exact"``: smallest n with exact errors of :class:`LikelihoodRatioTest` (same
          ``randomized``/``lattice_size``) within the targets.  Found by bisection on the
          type-II error; exactly monotone in n for randomised tests on a sufficient
          statistic, then scanned upwards for the saw-tooth of non-randomised tests.
        * ``"chernoff"``: :math:`n=\min_\tau\max\{\log(1/\alpha)/I_0(\tau),\log(1/\beta)/I_1(\tau)\}`
          with the Chernoff rate functions :math:`I_0(\tau)=\sup_{\theta\ge0}\theta\tau-K_0(\theta)`,
          :math:`I_1(\tau)=I_0(\tau)-\tau`; a *guaranteed* sufficient n for the test
          "reject iff :math:`\Lambda_n\ge n\tau`" (an upper bound on the optimum).
        * ``"saddlepoint"``: smallest n whose Lugannani-Rice errors meet the targets.
        * ``"stein"``: Stein's lemma with Strassen's second-order term,
          :math:`nD-\sqrt{nV}\,\Phi^{-1}(1-\alpha)=\log(1/\beta)`, D = D(M0||M1),
          V = Var_0(lambda) (asymptotic, beta -> 0).
    normalize : bool
        Rescale ``p0`` and ``p1`` to sum to 1 (for counts).
    """
    alpha = check_level(alpha, "alpha")
    beta = check_level(beta, "beta")
    if alpha + beta >= 1.0:
        raise ValueError(
            f"alpha + beta must be < 1 (otherwise n = 0 suffices), got alpha={alpha!r}, beta={beta!r}"
        )
    methods = ("auto", "exact", "chernoff", "saddlepoint", "stein")
    if method not in methods:
        raise ValueError(f"method must be one of {methods}, got method={method!r}")
    exact_max_n = check_positive_int(exact_max_n, "exact_max_n")
    test = LikelihoodRatioTest(
        mech,
        p0,
        p1,
        alpha,
        randomized=randomized,
        exact_max_n=exact_max_n,
        lattice_size=lattice_size,
        normalize=normalize,
    )
    law = test._law
    if law.values.size == 1:
        raise ValueError(
            "the mechanism's output distributions under p0 and p1 are equal: "
            "no number of reports can tell the hypotheses apart"
        )
    _check_within_cap(law, alpha, beta)
    extra: dict[str, Any] = {
        "chernoff_n": _chernoff(law, alpha, beta, randomized).n,
        "chernoff_information": chernoff_information(*test.output_distributions).value,
        "stein_n": _stein(law, alpha, beta, randomized).n,
    }
    if method == "stein":
        return _with(_stein(law, alpha, beta, randomized), **extra)
    if method == "chernoff":
        return _with(_chernoff(law, alpha, beta, randomized), **extra)
    if method == "saddlepoint":
        return _with(_saddle_n(law, alpha, beta, randomized), **extra)
    two_valued = law.values.size == 2
    guess = _normal_n(law, alpha, beta)
    if method == "auto" and not two_valued and guess > 0.9 * exact_max_n:
        return _with(
            _saddle_n(law, alpha, beta, randomized),
            **extra,
            message=f"n ~ {guess} exceeds exact_max_n = {exact_max_n}: saddlepoint approximation",
        )
    limit = None if two_valued else exact_max_n
    n = _exact_search(test, alpha, beta, guess, limit)
    if n is None:
        if method == "exact":
            raise ValueError(
                f"the exact sample size exceeds exact_max_n={exact_max_n}; raise exact_max_n "
                "or use method='saddlepoint'/'chernoff'"
            )
        return _with(
            _saddle_n(law, alpha, beta, randomized),
            **extra,
            message=f"exact search passed exact_max_n = {exact_max_n}: saddlepoint approximation",
        )
    d = test.design(n)
    return SampleSizeResult(
        n,
        alpha,
        beta,
        d.size,
        d.type_ii,
        d.method,
        True,
        randomized,
        kl=law.kl,
        message="smallest n for the exact test",
        **extra,
    )


def _with(res: SampleSizeResult, **changes: Any) -> SampleSizeResult:
    return replace(res, **changes)


def _normal_n(law: LLRLaw, alpha: float, beta: float) -> int:
    mu0, v0 = law.moments(0)
    mu1, v1 = law.moments(1)
    gap = mu1 - mu0
    if gap <= 0:
        return 1
    # -ndtri(a) = ndtri(1 - a) without the cancellation of 1 - a (finite down to a = 1e-300)
    s = (-float(ndtri(alpha)) * math.sqrt(v0) - float(ndtri(beta)) * math.sqrt(v1)) / gap
    return max(1, int(math.ceil(s * s)))


def _exact_search(
    test: LikelihoodRatioTest, alpha: float, beta: float, guess: int, limit: int | None
) -> int | None:
    """Smallest n whose exact design meets beta (None past ``limit``).

    Bisection on the type-II error of the *randomised* test (monotone in n: a test for n
    reports can ignore one more), then, for a non-randomised test, an upward scan over the
    saw-tooth (its type-II error is never below the randomised one).
    """
    law = test._law
    cache: dict[int, TestDesign] = {}

    def rok(n: int) -> bool:
        d = cache.get(n)
        if d is None:
            d = cache[n] = design_test(law, n, alpha, True, test.exact_max_n, test._lattice_law)
        return d.type_ii <= beta

    bracket = _bracket(rok, max(1, guess if limit is None else min(guess, limit)), limit)
    if bracket is None:
        return None
    lo, hi = bracket
    while hi - lo > 1:  # rok(lo) is False (or lo == 0), rok(hi) is True
        mid = (lo + hi) // 2
        if rok(mid):
            hi = mid
        else:
            lo = mid
    n = hi
    if test.randomized:
        return n
    scan_end = min(2 * n + 64, n + MAX_SCAN)
    while test.design(n).type_ii > beta:
        n += 1
        if limit is not None and n > limit:
            return None
        if n > scan_end:
            raise ValueError(
                f"the exact non-randomised sample size was not found within {scan_end - hi} reports "
                f"above the randomised one (n = {hi}): the non-randomised error is a saw-tooth in n; "
                "use randomized=True (--randomized), whose size is exact and monotone"
            )
    return n


def _bracket(ok: Callable[[int], bool], n0: int, limit: int | None) -> tuple[int, int] | None:
    """``(lo, hi)`` with ``ok(hi)`` and not ``ok(lo)`` (or ``lo == 0``), found from ``n0`` with small
    geometric steps (few FFTs); None when ``ok`` fails up to ``limit``."""
    if ok(n0):
        hi, lo = n0, int(n0 * 0.95)
        while lo >= 1 and ok(lo):
            hi, lo = lo, int(lo * 0.8)
        return lo, hi
    lo, hi = n0, int(math.ceil(n0 * 1.05)) + 1
    while True:
        if limit is not None:
            if lo >= limit:
                return None
            hi = min(hi, limit)
        if ok(hi):
            return lo, hi
        lo, hi = hi, int(math.ceil(hi * 1.25)) + 1


def _check_within_cap(law: LLRLaw, alpha: float, beta: float) -> None:
    """Refuse, with the reason, a pair that needs more than :data:`MAX_REPORTS` reports.

    Stein's first-order count ``log(1/beta) / D`` (D = KL(M0 || M1) per report) is below every
    method's answer up to the second-order term, so a pair whose count exceeds the cap cannot be
    sized within it; the other methods' rates would also underflow there."""
    D = law.kl
    need = -math.log(beta) / D if D > 0 else math.inf
    if not need <= MAX_REPORTS:
        raise ValueError(
            f"more than {MAX_REPORTS:.0e} reports would be needed: the mechanism's output "
            f"distributions under p0 and p1 differ by KL = {max(D, 0.0):.3g} nats per report (raise eps, or "
            "use a mechanism that separates p0 and p1 more)"
        )


def _chernoff_rates(law: LLRLaw, tau: float) -> tuple[float, float]:
    v = law.values
    with np.errstate(divide="ignore"):
        logw = np.log(law.a)
    th = saddle_theta(v, logw, tau, lower=0.0) if cgf(v, logw, 0.0)[1] < tau else 0.0
    i0 = th * tau - cgf(v, logw, th)[0]
    return max(i0, 0.0), max(i0 - tau, 0.0)


def _chernoff(law: LLRLaw, alpha: float, beta: float, randomized: bool) -> SampleSizeResult:
    mu0, _ = law.moments(0)
    mu1, _ = law.moments(1)
    la, lb = -math.log(alpha), -math.log(beta)
    span = mu1 - mu0

    def h(tau: float) -> float:
        i0, i1 = _chernoff_rates(law, tau)
        return la * i1 - lb * i0  # < 0 near mu0 (i0 -> 0), > 0 near mu1 (i1 -> 0)

    a, b = mu0 + 1e-12 * span, mu1 - 1e-12 * span
    tau = brentq(h, a, b, xtol=1e-14 * span)
    i0, i1 = _chernoff_rates(law, tau)
    n = int(math.ceil(max(la / i0, lb / i1) - 1e-9))
    n = max(n, 1)
    return SampleSizeResult(
        n,
        alpha,
        beta,
        math.exp(-n * i0),
        math.exp(-n * i1),
        "chernoff",
        False,
        randomized,
        kl=law.kl,
        message=f"Chernoff bound: the test 'reject iff LLR >= n*{tau:.6g}' meets both targets",
    )


def _saddle_n(law: LLRLaw, alpha: float, beta: float, randomized: bool) -> SampleSizeResult:
    def t2(n: int) -> TestDesign:
        return design_saddlepoint(law, n, alpha, randomized)

    hi = max(2, _normal_n(law, alpha, beta))
    while t2(hi).type_ii > beta:
        hi *= 2
    lo = max(1, hi // 2)
    while lo > 1 and t2(lo).type_ii <= beta:
        hi, lo = lo, max(1, lo // 2)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if t2(mid).type_ii <= beta:
            hi = mid
        else:
            lo = mid
    d = t2(hi)
    return SampleSizeResult(
        hi,
        alpha,
        beta,
        d.size,
        d.type_ii,
        "saddlepoint",
        False,
        randomized,
        kl=law.kl,
        message="Lugannani-Rice saddlepoint approximation",
    )


def _stein(law: LLRLaw, alpha: float, beta: float, randomized: bool) -> SampleSizeResult:
    D = law.kl
    _, V = law.moments(0)
    z = -float(ndtri(alpha))  # = ndtri(1 - alpha), without the cancellation of 1 - alpha
    L = -math.log(beta)
    s = (math.sqrt(V) * z + math.sqrt(V * z * z + 4 * D * L)) / (2 * D)
    n = max(1, int(math.ceil(s * s)))
    return SampleSizeResult(
        n,
        alpha,
        beta,
        alpha,
        beta,
        "stein",
        False,
        randomized,
        kl=D,
        message="Stein's lemma with Strassen's second-order term (asymptotic)",
    )
