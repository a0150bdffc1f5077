r"""Server-side inference from privatized reports: the likelihood-ratio test, Bayes decisions, the SPRT.

n i.i.d. reports :math:`Y_1,\dots,Y_n` are drawn from :math:`M_\nu = Q^\top P_\nu` (the
mechanism's output distributions, SPR paper Section 2).  The per-report log-likelihood ratio
is :math:`\lambda(y) = \log M_1(y) - \log M_0(y)` and the Neyman-Pearson test rejects
:math:`H_0: P_0` for large :math:`\Lambda_n=\sum_i\lambda(Y_i)`.  The output distributions
are computed from the *realised* channel (:func:`ldpopt.deploy.sampling.realise`), the law the
reports really have.

The law of the statistic and the thresholds (``method`` of a :class:`TestDesign`: exact
binomial, exact lattice, saddlepoint) are in :mod:`ldpopt.deploy.llr`; sample sizes in
:mod:`ldpopt.deploy.sizing`.

By default tests are **non-randomised**: reject iff the statistic exceeds the threshold; the
exact size is then :math:`\le\alpha` (reported as ``size``).  ``randomized=True`` rejects with
probability :math:`\gamma` when the statistic equals the threshold, which gives size exactly
:math:`\alpha` (the boundary coin is an exact Bernoulli from the OS CSPRNG unless an ``rng`` is
given).
"""

from __future__ import annotations

import math
from dataclasses import KW_ONLY, dataclass
from typing import Any

import numpy as np
from scipy.special import expit
from scipy.stats import binom

from ldpopt._validation import check_bool, check_counts, check_positive_int, is_real
from ldpopt.deploy.llr import (
    DEFAULT_EXACT_MAX_N,
    DEFAULT_LATTICE_SIZE,
    TestDesign,
    design_test,
    lattice_logpmf,
    lattice_steps,
    llr_law,
    lower_tail,
    lr_upper,
    upper_tail,
)
from ldpopt.deploy.sampling import bernoulli, bit_source, encode_outputs, report_counts
from ldpopt.mechanism import as_mechanism

__all__ = [
    "BayesDecision",
    "LikelihoodRatioTest",
    "SequentialResult",
    "SequentialTest",
    "TestDesign",
    "TestResult",
    "check_level",
]

#: a cached tilted law serves p-values where its tilted log-pmf is within this of its peak (FFT
#: round-off is relative to the peak)
_TAIL_WINDOW_LOG = 4.0


def check_level(value: Any, name: str) -> float:
    """A probability level strictly between 0 and 1 (alpha, beta, a prior)."""
    if not is_real(value):
        raise TypeError(f"{name} must be a real number in (0, 1), got {name}={value!r}")
    v = float(value)
    if not 0.0 < v < 1.0:
        raise ValueError(f"{name} must be in (0, 1), got {name}={value!r}")
    return v


@dataclass(frozen=True)
class TestResult:
    """Decision of a :class:`LikelihoodRatioTest` on n reports.

    Attributes
    ----------
    decision : int
        1 = reject H0 (the reports look like P1), 0 = keep H0.
    llr : float
        :math:`\\sum_i \\log M_1(Y_i)/M_0(Y_i)` (exact float sum).
    statistic : float
        The value compared with ``threshold`` (``llr`` itself, or the lattice LLR for
        ``"exact-lattice"``).
    threshold : float
    p_value : float
        :math:`P_0(\\text{statistic} \\ge \\text{observed})`.
    n : int
    alpha : float
    size, power : float
        Type-I error and power of the test used (see :class:`TestDesign`).
    method : str
    exact : bool
    randomized : bool
    boundary : bool
        True when the statistic fell on the threshold (the coin decided for randomised tests).
    """

    decision: int
    llr: float
    statistic: float
    threshold: float
    p_value: float
    n: int
    alpha: float
    size: float
    _: KW_ONLY
    power: float
    method: str
    exact: bool
    randomized: bool
    boundary: bool = False


@dataclass(frozen=True)
class BayesDecision:
    """Bayes decision: decide 1 iff
    ``llr > threshold = log(prior0 * cost_false_alarm / (prior1 * cost_miss))``.

    ``posterior1`` is :math:`P(H_1 \\mid \\text{reports})`.
    """

    decision: int
    posterior1: float
    llr: float
    threshold: float
    prior1: float
    n: int


class LikelihoodRatioTest:
    r"""Neyman-Pearson test of :math:`H_0: P_0` against :math:`H_1: P_1` from privatized reports.

    Parameters
    ----------
    mech : Mechanism
        The mechanism the devices applied.
    p0, p1 : array_like, dict or pandas Series
        The hypotheses on the input alphabet (dicts/Series aligned with ``mech.labels``).
    alpha : float
        Target type-I error.
    randomized : bool
        Randomise at the boundary for size exactly alpha (exact methods); default: a
        deterministic test of size <= alpha.
    exact_max_n : int
        Largest n handled by the exact lattice computation; beyond it the saddlepoint
        approximation is used (two-valued LLRs are exact for every n).
    lattice_size : int
        Number of lattice steps across the LLR range for the exact lattice method.

    Examples
    --------
    >>> test = LikelihoodRatioTest(mech, p0, p1, alpha=0.05)   # doctest: +SKIP
    >>> test.decide(mech.privatize(x)).decision                 # doctest: +SKIP
    """

    def __init__(
        self,
        mech: Any,
        p0: Any,
        p1: Any,
        alpha: float = 0.05,
        *,
        randomized: bool = False,
        exact_max_n: int = DEFAULT_EXACT_MAX_N,
        lattice_size: int = DEFAULT_LATTICE_SIZE,
        normalize: bool = False,
    ):
        self.mechanism = mech = as_mechanism(mech, "mech")
        self.alpha = check_level(alpha, "alpha")
        self.randomized = bool(randomized)
        self.exact_max_n = check_positive_int(exact_max_n, "exact_max_n")
        self.lattice_size = check_positive_int(lattice_size, "lattice_size")
        self._law = llr_law(mech, p0, p1, normalize=check_bool(normalize, "normalize"))
        self._designs: dict[int, TestDesign] = {}
        self._pvalues: dict[tuple[int, int], float] = {}
        self._ptails: dict[int, list] = {}
        self._lattice: tuple[np.ndarray, float] | None = None

    # --- per-report quantities -------------------------------------------------------------
    @property
    def per_report_llr(self) -> np.ndarray:
        """:math:`\\log M_1(y)/M_0(y)` per output (nan for outputs impossible under both)."""
        return self._law.llr.copy()

    @property
    def output_distributions(self) -> tuple[np.ndarray, np.ndarray]:
        """(M0, M1) of the realised channel."""
        return self._law.m0.copy(), self._law.m1.copy()

    def counts(self, reports: Any) -> np.ndarray:
        """Reports (output labels or indices) -> counts per output."""
        return report_counts(self.mechanism, reports)

    def _check_counts(self, counts: Any) -> np.ndarray:
        # no reports at all is a valid histogram here: a Bayes decision without data is the prior's
        c = check_counts(counts, "counts", self.mechanism.num_outputs, what="output", observed=False)
        bad = np.flatnonzero((c > 0) & (self._law.cls < 0))
        if bad.size:
            raise ValueError(f"output {int(bad[0])} has probability 0 under both hypotheses but was reported")
        return c

    def llr(self, reports: Any) -> float:
        """:math:`\\sum_i \\log M_1(Y_i)/M_0(Y_i)`."""
        return self._llr_counts(self._check_counts(self.counts(reports)))

    def _llr_counts(self, c: np.ndarray) -> float:
        live = c > 0
        return math.fsum((c[live] * self._law.llr[live]).tolist())

    # --- designs ---------------------------------------------------------------------------
    def _lattice_law(self) -> tuple[np.ndarray, float]:
        if self._lattice is None:
            self._lattice = lattice_steps(self._law.values, self.lattice_size)
        return self._lattice

    def design(self, n: int) -> TestDesign:
        """The level-alpha test for ``n`` reports (cached)."""
        n = check_positive_int(n, "n")
        d = self._designs.get(n)
        if d is None:
            d = design_test(self._law, n, self.alpha, self.randomized, self.exact_max_n, self._lattice_law)
            self._designs[n] = d
        return d

    # --- decisions -------------------------------------------------------------------------
    def decide(self, reports: Any, rng: Any = None) -> TestResult:
        """Decide between P0 (0) and P1 (1) from a sequence of reports.

        ``rng`` only matters for randomised tests whose statistic lands on the threshold.
        """
        return self.decide_counts(self.counts(reports), rng=rng)

    def decide_counts(self, counts: Any, rng: Any = None) -> TestResult:
        """Same as :meth:`decide` from the histogram of reports (one count per output)."""
        c = self._check_counts(counts)
        n = int(c.sum())
        if n == 0:
            raise ValueError("reports must not be empty")
        d = self.design(n)
        llr = self._llr_counts(c)
        law = self._law
        boundary = False
        p_value: float | None
        if d.method == "uninformative":
            stat = llr
            boundary = True
            decision = int(d.randomized and _coin(d.gamma, rng))
            p_value = 1.0
        elif d.method == "exact-binomial":
            t = int(c[law.cls == 1].sum())
            stat = n * law.values[0] + t * (law.values[1] - law.values[0])
            boundary = t == d._stat_threshold
            decision = int(t > d._stat_threshold or (boundary and d.gamma > 0 and _coin(d.gamma, rng)))
            key = (n, t)
            p_value = self._pvalues.get(key)
            if p_value is None:
                p_value = self._pvalues[key] = float(binom.sf(t - 1, n, law.a[1]))
        elif d.method == "exact-lattice":
            z, delta = self._lattice_law()
            live = c > 0
            t = int(np.dot(c[live], z[law.cls[live]]))
            stat = n * law.values[0] + delta * t
            boundary = t == d._stat_threshold
            decision = int(t > d._stat_threshold or (boundary and d.gamma > 0 and _coin(d.gamma, rng)))
            key = (n, t)
            p_value = self._pvalues.get(key)
            if p_value is None:
                p_value = self._pvalues[key] = self._lattice_pvalue(n, t)
        else:
            stat = llr
            decision = int(llr > d.threshold)
            p_value = lr_upper(law.values, law.a, n, llr)
        return TestResult(
            decision=decision,
            llr=llr,
            statistic=float(stat),
            threshold=d.threshold,
            p_value=float(min(1.0, max(0.0, p_value))),
            n=n,
            alpha=self.alpha,
            size=d.size,
            power=d.power,
            method=d.method,
            exact=d.exact,
            randomized=d.randomized,
            boundary=bool(boundary),
        )

    def _lattice_pvalue(self, n: int, t: int) -> float:
        """P0(T >= t) for the lattice statistic; tilted FFT laws are cached with the window of t
        where they keep full relative accuracy, so a batch of decisions costs few FFTs."""
        z, _ = self._lattice_law()
        a = self._law.a
        mean = n * float(np.dot(a, z))
        query = t if t >= mean else t - 1  # upper tail at t, or 1 - lower tail at t - 1
        if query < 0:
            return 1.0
        windows = self._ptails.setdefault(n, [])
        for lo, hi, up, low in windows:  # noqa: B007 - up, low are used after the break
            if lo <= query <= hi:
                break
        else:
            lp, lq = lattice_logpmf(z, a, n, float(query), with_tilted=True)
            lo, hi = _tail_window(lq, query)
            up, low = upper_tail(lp), lower_tail(lp)
            windows.append((lo, hi, up, low))
        if t >= mean:
            return float(math.exp(min(0.0, up[t])))
        return float(1.0 - math.exp(min(0.0, low[t - 1])))

    def bayes_decide(
        self, reports: Any, prior1: float = 0.5, cost_false_alarm: float = 1.0, cost_miss: float = 1.0
    ) -> BayesDecision:
        r"""Bayes decision with prior :math:`\pi_1=P(H_1)` and costs (exact LLR).

        Decide 1 iff :math:`\Lambda_n > \log\frac{\pi_0 c_{FA}}{\pi_1 c_{M}}`, the rule that
        minimises the expected cost; the posterior is :math:`\sigma(\Lambda_n+\log\pi_1/\pi_0)`.
        """
        return self.bayes_decide_counts(self.counts(reports), prior1, cost_false_alarm, cost_miss)

    def bayes_decide_counts(
        self, counts: Any, prior1: float = 0.5, cost_false_alarm: float = 1.0, cost_miss: float = 1.0
    ) -> BayesDecision:
        """Same as :meth:`bayes_decide` from the histogram of reports (one count per output)."""
        pi1 = check_level(prior1, "prior1")
        for name, val in (("cost_false_alarm", cost_false_alarm), ("cost_miss", cost_miss)):
            if not is_real(val):
                raise TypeError(f"{name} must be a finite number > 0, got {name}={val!r}")
            if not val > 0 or not math.isfinite(val):
                raise ValueError(f"{name} must be a finite number > 0, got {name}={val!r}")
        c = self._check_counts(counts)
        llr = self._llr_counts(c)
        thr = math.log1p(-pi1) - math.log(pi1) + math.log(cost_false_alarm) - math.log(cost_miss)
        post = float(expit(llr + math.log(pi1) - math.log1p(-pi1)))
        return BayesDecision(
            decision=int(llr > thr), posterior1=post, llr=llr, threshold=thr, prior1=pi1, n=int(c.sum())
        )


def _tail_window(lq: np.ndarray, query: int) -> tuple[int, int]:
    """The lattice points a law tilted at ``query`` serves: the run of t around ``query`` where its
    tilted log-pmf ``lq`` is within ``_TAIL_WINDOW_LOG`` of its peak.

    Empty (``lo > hi``) when ``query`` itself is not: in particular when ``query`` is a lattice sum
    that cannot occur (``lq[query] = -inf``), so the law serves that query only.
    """
    ok = lq >= float(np.max(lq)) - _TAIL_WINDOW_LOG
    if not ok[query]:
        return query + 1, query - 1
    below = np.flatnonzero(~ok[:query])
    above = np.flatnonzero(~ok[query + 1 :])
    lo = int(below[-1]) + 1 if below.size else 0
    hi = query + int(above[0]) if above.size else lq.size - 1
    return lo, hi


def _coin(gamma: float, rng: Any) -> bool:
    return bernoulli(float(min(1.0, max(0.0, gamma))), bit_source(rng))


# ---------------------------------------------------------------------------------------------
# Sequential probability ratio test
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SequentialResult:
    """State of a :class:`SequentialTest` after an update.

    Attributes
    ----------
    decision : int or None
        1 (accept P1), 0 (accept P0), or None (no boundary crossed yet).
    n : int
        Reports used so far (reports after the stopping time are not used).
    llr : float
        Running :math:`\\sum\\log M_1(Y_i)/M_0(Y_i)`.
    lower, upper : float
        Wald's boundaries :math:`\\log\\frac{\\beta}{1-\\alpha}` and :math:`\\log\\frac{1-\\beta}{\\alpha}`.
    unused : int
        Reports of the last update that came after the decision.
    truncated : bool
        True when the decision was forced at ``max_n``.
    """

    decision: int | None
    n: int
    llr: float
    lower: float
    upper: float
    unused: int = 0
    truncated: bool = False

    @property
    def stopped(self) -> bool:
        """True once a decision has been taken."""
        return self.decision is not None


class SequentialTest:
    r"""Wald's sequential probability ratio test on a stream of reports.

    Accept :math:`P_1` when :math:`\Lambda_m \ge \log\frac{1-\beta}{\alpha}`, accept :math:`P_0` when
    :math:`\Lambda_m \le \log\frac{\beta}{1-\alpha}`, else ask for the next report.  Wald's
    inequalities give type-I error :math:`\le \alpha/(1-\beta)`, type-II error
    :math:`\le\beta/(1-\alpha)` and :math:`\alpha'+\beta'\le\alpha+\beta`; overshoot makes the
    actual errors a little smaller than alpha and beta.  Expected sample sizes (Wald's
    approximations, ignoring overshoot) are in :attr:`expected_sample_size`.

    Parameters
    ----------
    mech, p0, p1 : as for :class:`LikelihoodRatioTest`
    alpha, beta : float
        Target type-I and type-II errors.
    max_n : int, optional
        Truncation: at ``max_n`` reports without a decision, decide by the sign of the LLR.
    """

    def __init__(
        self,
        mech: Any,
        p0: Any,
        p1: Any,
        alpha: float = 0.05,
        beta: float = 0.05,
        *,
        max_n: int | None = None,
        normalize: bool = False,
    ):
        self.mechanism = mech = as_mechanism(mech, "mech")
        self.alpha = check_level(alpha, "alpha")
        self.beta = check_level(beta, "beta")
        if self.alpha + self.beta >= 1.0:
            raise ValueError(f"alpha + beta must be < 1, got alpha={alpha!r}, beta={beta!r}")
        self.max_n = check_positive_int(max_n, "max_n", allow_none=True)
        self._law = llr_law(mech, p0, p1, normalize=check_bool(normalize, "normalize"))
        self.lower = math.log(self.beta) - math.log1p(-self.alpha)
        self.upper = math.log1p(-self.beta) - math.log(self.alpha)
        self.reset()

    def reset(self) -> None:
        """Forget every report seen."""
        self._n = 0
        self._llr = 0.0
        self._decision: int | None = None
        self._truncated = False

    @property
    def state(self) -> SequentialResult:
        """The current state (no reports consumed)."""
        return SequentialResult(
            self._decision, self._n, self._llr, self.lower, self.upper, 0, self._truncated
        )

    @property
    def expected_sample_size(self) -> tuple[float, float]:
        r"""Wald's approximations :math:`(E_0[N], E_1[N])`.

        :math:`E_0[N]\approx\frac{(1-\alpha)A+\alpha B}{E_0\lambda}` with A, B the lower/upper
        boundaries, and :math:`E_1[N]\approx\frac{\beta A+(1-\beta)B}{E_1\lambda}`.
        """
        mu0 = float(np.dot(self._law.a, self._law.values))
        mu1 = float(np.dot(self._law.b, self._law.values))
        A, B = self.lower, self.upper
        e0 = ((1 - self.alpha) * A + self.alpha * B) / mu0 if mu0 != 0 else math.inf
        e1 = (self.beta * A + (1 - self.beta) * B) / mu1 if mu1 != 0 else math.inf
        return e0, e1

    def update(self, reports: Any) -> SequentialResult:
        """Feed reports in arrival order; stops consuming at the first boundary crossing."""
        idx = encode_outputs(self.mechanism, reports)
        if self._decision is not None:
            return SequentialResult(
                self._decision, self._n, self._llr, self.lower, self.upper, idx.size, self._truncated
            )
        if np.any(self._law.cls[idx] < 0):
            j = int(idx[np.flatnonzero(self._law.cls[idx] < 0)[0]])
            raise ValueError(f"output {j} has probability 0 under both hypotheses but was reported")
        steps = self._law.llr[idx]
        if self.max_n is not None:
            steps = steps[: max(self.max_n - self._n, 0)]
        path = self._llr + np.cumsum(steps)
        cross = np.flatnonzero((path >= self.upper) | (path <= self.lower))
        if cross.size:
            i = int(cross[0])
            self._llr = float(path[i])
            self._n += i + 1
            self._decision = int(self._llr >= self.upper)
            return SequentialResult(
                self._decision, self._n, self._llr, self.lower, self.upper, idx.size - i - 1
            )
        if steps.size:
            self._llr = float(path[-1])
            self._n += steps.size
        if self.max_n is not None and self._n >= self.max_n:
            self._decision = int(self._llr > 0)
            self._truncated = True
        return SequentialResult(
            self._decision, self._n, self._llr, self.lower, self.upper, idx.size - steps.size, self._truncated
        )

    def run(self, reports: Any) -> SequentialResult:
        """Reset, then :meth:`update` with ``reports``."""
        self.reset()
        return self.update(reports)
