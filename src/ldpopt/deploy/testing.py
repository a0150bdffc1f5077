r"""Server-side inference from privatized reports: likelihood-ratio tests, SPRT, sample sizes.

n i.i.d. reports :math:`Y_1,\dots,Y_n` are drawn from :math:`M_\nu = Q^\top P_\nu` (the
mechanism's output distributions, SPR paper Section 2).  The per-report log-likelihood ratio
is :math:`\lambda(y) = \log M_1(y) - \log M_0(y)` and the Neyman-Pearson test rejects
:math:`H_0: P_0` for large :math:`\Lambda_n=\sum_i\lambda(Y_i)`.  The output distributions
are computed from the *realised* channel (:func:`ldpopt.deploy.sampling.realise`), the law the
reports really have.

How the threshold is computed (``method`` of a :class:`TestDesign`)
-----------------------------------------------------------------
``"exact-binomial"``
    :math:`\lambda` takes two values (binary mechanism, any 2-output channel): :math:`\Lambda_n`
    is an affine function of a binomial count, whose law is exact for every n.
``"exact-lattice"``
    :math:`\lambda` takes three or more values and :math:`n \le` ``exact_max_n`` (default
    4000).  The statistic is the *lattice LLR* :math:`\tilde\Lambda_n = n\lambda_{\min} +
    \delta\sum_i z(Y_i)` with :math:`z(y)=\mathrm{round}((\lambda(y)-\lambda_{\min})/\delta)`,
    :math:`\delta=(\lambda_{\max}-\lambda_{\min})/` ``lattice_size`` (so
    :math:`|\tilde\Lambda_n-\Lambda_n|\le n\delta/2`).  Its law under :math:`P_0` and
    :math:`P_1` is computed exactly -- the n-fold convolution of the lattice law by FFT,
    exponentially tilted towards the point of interest so that tail probabilities keep
    their relative accuracy (absolute error ~1e-15 of the tilted mass).  The size of the test
    *as implemented* is therefore exact; its power is that of the most powerful test based on
    :math:`\tilde\Lambda_n` (indistinguishable from the exact NP test for ``lattice_size``
    >= a few hundred).
``"saddlepoint"``
    :math:`n >` ``exact_max_n``: Lugannani-Rice saddlepoint approximation of the tails of
    :math:`\Lambda_n` (relative error :math:`O(1/n)`, Daniels 1987), threshold solved for
    :math:`P_0(\Lambda_n>t)=\alpha`.

By default tests are **non-randomised**: reject iff the statistic exceeds the threshold; the
exact size is then :math:`\le\alpha` (reported as ``size``).  ``randomized=True`` rejects with
probability :math:`\gamma` when the statistic equals the threshold, which gives size exactly
:math:`\alpha` (the boundary coin is an exact Bernoulli from the OS CSPRNG unless an ``rng`` is
given).

Sample sizes (:func:`sample_size`) are exact where the exact test is used and otherwise
come from the saddlepoint approximation (the default beyond ``exact_max_n``), the Chernoff
bound (a guaranteed sufficient n for a threshold test, typically 1.5-2x the optimum) or
Stein's lemma with Strassen's second-order term; the result's ``method`` says which, and the
Chernoff and Stein numbers are always reported alongside.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ldpopt._validation import check_positive_int, is_real

__all__ = [
    "BayesDecision",
    "LikelihoodRatioTest",
    "SampleSizeResult",
    "SequentialResult",
    "SequentialTest",
    "TestDesign",
    "TestResult",
    "sample_size",
]

#: n above which the lattice test gives way to the saddlepoint approximation
DEFAULT_EXACT_MAX_N = 4000
#: number of lattice steps spanning [lambda_min, lambda_max]
DEFAULT_LATTICE_SIZE = 512
#: FFT values below this fraction of the peak are treated as round-off (log-pmf = -inf)
_FFT_FLOOR = 1e-14
#: re-tilt the lattice law when the threshold is further than this many sd from the tilt point
_RECENTRE_SD = 0.5
#: a cached tilted law serves p-values where its tilted log-pmf is within this of the tilt point
_TAIL_WINDOW_LOG = 4.0
#: |w| below which the Lugannani-Rice formula is replaced by its limit at the mean
_LR_SMALL_W = 1e-5


def _check_level(value: Any, name: str) -> float:
    if not is_real(value):
        raise TypeError(f"{name} must be a real number in (0, 1), got {name}={value!r}")
    v = float(value)
    if not 0.0 < v < 1.0:
        raise ValueError(f"{name} must be in (0, 1), got {name}={value!r}")
    return v


# ---------------------------------------------------------------------------------------------
# The law of the per-report LLR
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class _LLRLaw:
    m0: np.ndarray  # output distributions (realised channel)
    m1: np.ndarray
    llr: np.ndarray  # per output; nan where M0 = M1 = 0
    values: np.ndarray  # distinct LLR values, ascending
    a: np.ndarray  # P0 of each value
    b: np.ndarray  # P1 of each value
    cls: np.ndarray  # output -> index into values (-1: impossible output)

    @property
    def kl(self) -> float:
        """D(M0 || M1) = -E0[lambda]."""
        return float(-np.dot(self.a, self.values))

    def moments(self, which: int) -> tuple[float, float]:
        w = self.a if which == 0 else self.b
        mu = float(np.dot(w, self.values))
        var = float(np.dot(w, (self.values - mu) ** 2))
        return mu, var


def _llr_law(mech: Any, p0: Any, p1: Any) -> _LLRLaw:
    from ldpopt.deploy.sampling import realise

    u, v = mech._pair(p0, p1)
    R = realise(mech).entries
    m0 = R.T @ u
    m1 = R.T @ v
    m0 = np.clip(m0, 0.0, None)
    m1 = np.clip(m1, 0.0, None)
    diff = (m0 > 0) != (m1 > 0)
    if np.any(diff):
        j = int(np.flatnonzero(diff)[0])
        raise ValueError(
            f"output {j} has probability {m0[j]!r} under P0 but {m1[j]!r} under P1: the likelihood-ratio "
            "tests need both hypotheses to give every output positive probability (use a finite eps)"
        )
    live = m0 > 0
    llr = np.full(m0.shape, np.nan)
    llr[live] = np.log(m1[live]) - np.log(m0[live])
    values, inv = np.unique(llr[live], return_inverse=True)
    cls = np.full(m0.shape, -1, dtype=np.int64)
    cls[live] = inv
    a = np.bincount(inv, weights=m0[live], minlength=values.size)
    b = np.bincount(inv, weights=m1[live], minlength=values.size)
    a, b = a / a.sum(), b / b.sum()
    return _LLRLaw(m0=m0, m1=m1, llr=llr, values=values, a=a, b=b, cls=cls)


# ---------------------------------------------------------------------------------------------
# Exact lattice laws by tilted FFT convolution
# ---------------------------------------------------------------------------------------------
def _logsumexp(x: np.ndarray) -> float:
    m = float(np.max(x))
    if not math.isfinite(m):
        return m
    return m + math.log(float(np.sum(np.exp(x - m))))


def _solve_tilt(z: np.ndarray, logw: np.ndarray, target: float) -> float:
    """theta with E_theta[z] = target (z integers, tilted law w e^{theta z})."""
    lo_z, hi_z = float(z.min()), float(z.max())
    span = hi_z - lo_z
    target = min(max(target, lo_z + 1e-9 * span), hi_z - 1e-9 * span)
    return _saddle_theta(z.astype(float), logw, target)


def _saddle_theta(values: np.ndarray, logw: np.ndarray, x: float, lower: float | None = None) -> float:
    """Root of K'(theta) = x (K the cumulant generating function of ``values`` under ``exp(logw)``).

    K' is increasing; safeguarded Newton (K'' is the tilted variance) inside a doubling bracket.
    """
    span = float(values.max() - values.min())
    a = -1.0 / span if lower is None else lower
    b = 1.0 / span
    if lower is None:
        while _cgf(values, logw, a)[1] > x:
            a *= 2.0
    while _cgf(values, logw, b)[1] < x:
        b *= 2.0
    th = 0.5 * (a + b) if lower is None or a < 0 else a
    for _ in range(200):
        _, m1, m2 = _cgf(values, logw, th)
        g = m1 - x
        if abs(g) <= 1e-13 * span:
            break
        if g > 0:
            b = th
        else:
            a = th
        step = th - g / m2 if m2 > 0 else 0.5 * (a + b)
        th = step if a < step < b else 0.5 * (a + b)
        if b - a <= 1e-15 * max(1.0, abs(th)):
            break
    return th


def _int_power(f: np.ndarray, n: int) -> np.ndarray:
    """f**n by repeated squaring (complex multiplications are ~10x cheaper than complex pow)."""
    result: np.ndarray | None = None
    base = f
    while n:
        if n & 1:
            result = base.copy() if result is None else result * base
        n >>= 1
        if n:
            base = base * base
    assert result is not None  # n >= 1 (a number of reports)
    return result


def _lattice_logpmf(z: np.ndarray, w: np.ndarray, n: int, centre: float, with_tilted: bool = False):
    """log P(sum of n draws = t), t = 0..n*max(z), accurate near ``centre`` and in the tail away from it.

    With ``with_tilted`` also returns the log of the tilted pmf, whose drop from its value at
    ``centre`` bounds the loss of relative accuracy (FFT round-off is relative to its peak).
    """
    from scipy import fft

    with np.errstate(divide="ignore"):
        logw = np.log(w)
    zmax = int(z.max())
    theta = _solve_tilt(z, logw, centre / n)
    lw = logw + theta * z
    lse = _logsumexp(lw)
    q = np.zeros(zmax + 1)
    np.add.at(q, z, np.exp(lw - lse))
    length = n * zmax + 1
    size = fft.next_fast_len(length, real=True)
    f = fft.rfft(q, size)
    qn = fft.irfft(_int_power(f, n), size)[:length]
    qn[qn <= _FFT_FLOOR * float(qn.max())] = 0.0  # round-off, not probability
    with np.errstate(divide="ignore"):
        logq = np.log(qn)
    t = np.arange(length, dtype=float)
    logpmf = logq + n * lse - theta * t
    return (logpmf, logq) if with_tilted else logpmf


def _log_cumsum(logp: np.ndarray) -> np.ndarray:
    """log of the running sums of exp(logp), scaled by the peak (sums of positive terms keep
    their relative accuracy; terms more than ~700 nats below the peak underflow to 0)."""
    m = float(np.max(logp))
    if not math.isfinite(m):
        return np.full(logp.shape, -np.inf)
    with np.errstate(divide="ignore"):
        return np.log(np.cumsum(np.exp(logp - m))) + m


def _upper_tail(logpmf: np.ndarray) -> np.ndarray:
    """log P(T >= t) for every t."""
    return _log_cumsum(logpmf[::-1])[::-1]


def _lower_tail(logpmf: np.ndarray) -> np.ndarray:
    """log P(T <= t) for every t."""
    return _log_cumsum(logpmf)


# ---------------------------------------------------------------------------------------------
# Saddlepoint (Lugannani-Rice)
# ---------------------------------------------------------------------------------------------
def _cgf(values: np.ndarray, logw: np.ndarray, theta: float) -> tuple[float, float, float]:
    lw = logw + theta * values
    k = _logsumexp(lw)
    p = np.exp(lw - k)
    m1 = float(np.dot(p, values))
    m2 = float(np.dot(p, (values - m1) ** 2))
    return k, m1, m2


def _lr_upper(values: np.ndarray, w: np.ndarray, n: int, s: float) -> float:
    """Lugannani-Rice approximation of P(sum of n draws >= s)."""
    from scipy.special import ndtr

    x = s / n
    if x <= values[0]:
        return 1.0
    if x >= values[-1]:
        return 0.0 if x > values[-1] else float(w[-1] ** n)
    with np.errstate(divide="ignore"):
        logw = np.log(w)
    th = _saddle_theta(values, logw, x)
    k, _, k2 = _cgf(values, logw, th)
    arg = max(2.0 * n * (th * x - k), 0.0)
    wv = math.copysign(math.sqrt(arg), th)
    if abs(wv) < _LR_SMALL_W:
        _, mu, var = _cgf(values, logw, 0.0)
        k3 = float(np.dot(w, (values - mu) ** 3))
        return 0.5 - k3 / (6.0 * math.sqrt(2.0 * math.pi * n) * var**1.5)
    u = th * math.sqrt(n * k2)
    phi = math.exp(-0.5 * wv * wv) / math.sqrt(2.0 * math.pi)
    return float(min(1.0, max(0.0, ndtr(-wv) + phi * (1.0 / u - 1.0 / wv))))


def _lr_lower(values: np.ndarray, w: np.ndarray, n: int, s: float) -> float:
    """Lugannani-Rice approximation of P(sum of n draws <= s) (upper tail of the negated law)."""
    return _lr_upper(-values[::-1], w[::-1], n, -s)


# ---------------------------------------------------------------------------------------------
# Designs
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TestDesign:
    r"""The level-:math:`\alpha` likelihood-ratio test for n reports.

    Attributes
    ----------
    n : int
    alpha : float
        Target type-I error.
    threshold : float
        On the LLR scale :math:`\sum_i \log M_1(Y_i)/M_0(Y_i)`: reject when the statistic is
        above it (with probability ``gamma`` when equal, for randomised tests).
    gamma : float
        Rejection probability at the boundary (0 for non-randomised tests).
    size : float
        Type-I error of the test as implemented (exact for exact methods).
    type_ii : float
        Type-II error :math:`P_1(\text{accept } H_0)`; ``power = 1 - type_ii``.
    method : {"exact-binomial", "exact-lattice", "saddlepoint", "uninformative"}
    exact : bool
    randomized : bool
    lattice_step : float or None
        :math:`\delta` of the lattice LLR (``"exact-lattice"`` only).
    """

    n: int
    alpha: float
    threshold: float
    gamma: float
    size: float
    type_ii: float
    method: str
    exact: bool
    randomized: bool
    lattice_step: float | None = None
    _stat_threshold: float = 0.0

    @property
    def power(self) -> float:
        """1 - type_ii."""
        return 1.0 - self.type_ii


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
    ):
        self.mechanism = mech
        self.alpha = _check_level(alpha, "alpha")
        self.randomized = bool(randomized)
        self.exact_max_n = check_positive_int(exact_max_n, "exact_max_n")
        self.lattice_size = check_positive_int(lattice_size, "lattice_size")
        self._law = _llr_law(mech, p0, p1)
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
        from ldpopt.deploy.sampling import encode_outputs

        idx = encode_outputs(self.mechanism, reports)
        return np.bincount(idx, minlength=self.mechanism.num_outputs)

    def _check_counts(self, counts: Any) -> np.ndarray:
        c = np.asarray(counts)
        if c.ndim != 1 or c.shape[0] != self.mechanism.num_outputs:
            raise ValueError(
                f"counts must have one entry per output ({self.mechanism.num_outputs}), got shape {c.shape}"
            )
        if c.dtype.kind not in "iu" or np.any(c < 0):
            raise ValueError("counts must be non-negative integers")
        bad = np.flatnonzero((c > 0) & (self._law.cls < 0))
        if bad.size:
            raise ValueError(f"output {int(bad[0])} has probability 0 under both hypotheses but was reported")
        return c.astype(np.int64)

    def llr(self, reports: Any) -> float:
        """:math:`\\sum_i \\log M_1(Y_i)/M_0(Y_i)`."""
        return self._llr_counts(self._check_counts(self.counts(reports)))

    def _llr_counts(self, c: np.ndarray) -> float:
        live = c > 0
        return math.fsum((c[live] * self._law.llr[live]).tolist())

    # --- designs ---------------------------------------------------------------------------
    def _lattice_law(self):
        if self._lattice is None:
            v = self._law.values
            delta = (v[-1] - v[0]) / self.lattice_size
            z = np.rint((v - v[0]) / delta).astype(np.int64)
            self._lattice = (z, delta)
        return self._lattice

    def design(self, n: int) -> TestDesign:
        """The level-alpha test for ``n`` reports (cached)."""
        n = check_positive_int(n, "n")
        d = self._designs.get(n)
        if d is None:
            d = _design(self._law, n, self.alpha, self.randomized, self.exact_max_n, self._lattice_law)
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
            from scipy.stats import binom

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
            p_value = _lr_upper(law.values, law.a, n, llr)
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
            lp, lq = _lattice_logpmf(z, a, n, float(query), with_tilted=True)
            ok = lq >= lq[query] - _TAIL_WINDOW_LOG
            lo = query - int(np.argmin(ok[query::-1])) + 1 if not ok[: query + 1].all() else 0
            hi = query + int(np.argmin(ok[query:])) - 1 if not ok[query:].all() else lq.size - 1
            up, low = _upper_tail(lp), _lower_tail(lp)
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
        from scipy.special import expit

        pi1 = _check_level(prior1, "prior1")
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


def _coin(gamma: float, rng: Any) -> bool:
    from ldpopt.deploy.sampling import bernoulli, bit_source

    return bernoulli(float(min(1.0, max(0.0, gamma))), bit_source(rng))


def _design(
    law: _LLRLaw, n: int, alpha: float, randomized: bool, exact_max_n: int, lattice_law
) -> TestDesign:
    v = law.values
    if v.size == 1:
        # M0 = M1: the reports carry no information; only a coin can spend alpha
        g = alpha if randomized else 0.0
        return TestDesign(
            n,
            alpha,
            math.inf if not randomized else n * float(v[0]),
            g,
            g,
            1.0 - g,
            "uninformative",
            True,
            randomized,
        )
    if v.size == 2:
        return _design_binomial(law, n, alpha, randomized)
    if n <= exact_max_n:
        z, delta = lattice_law()
        return _design_lattice(law, z, delta, n, alpha, randomized)
    return _design_saddlepoint(law, n, alpha, randomized)


def _design_binomial(law: _LLRLaw, n: int, alpha: float, randomized: bool) -> TestDesign:
    from scipy.stats import binom

    p0, p1 = float(law.a[1]), float(law.b[1])
    t = int(binom.isf(alpha, n, p0))
    while t > 0 and binom.sf(t - 1, n, p0) <= alpha:
        t -= 1
    while binom.sf(t, n, p0) > alpha:
        t += 1
    above = float(binom.sf(t, n, p0))
    gamma = 0.0
    if randomized:
        at = float(binom.pmf(t, n, p0))
        gamma = min(1.0, (alpha - above) / at) if at > 0 else 0.0
    size = above + gamma * float(binom.pmf(t, n, p0))
    type_ii = float(binom.cdf(t - 1, n, p1)) + (1.0 - gamma) * float(binom.pmf(t, n, p1))
    thr = n * float(law.values[0]) + t * float(law.values[1] - law.values[0])
    return TestDesign(n, alpha, thr, gamma, size, type_ii, "exact-binomial", True, randomized, None, t)


def _design_lattice(
    law: _LLRLaw, z: np.ndarray, delta: float, n: int, alpha: float, randomized: bool
) -> TestDesign:
    from scipy.special import ndtri

    a, b = law.a, law.b
    mu0 = float(np.dot(a, z))
    sd0 = math.sqrt(max(float(np.dot(a, (z - mu0) ** 2)), 1e-300))
    mean0 = n * mu0
    # upper tails are accurate when tilted at max(t, mean): the bulk is then never cut off
    centre = max(mean0, mean0 + float(ndtri(1.0 - alpha)) * sd0 * math.sqrt(n))
    t = 0
    lp0 = None
    for _ in range(4):
        lp0 = _lattice_logpmf(z, a, n, centre)
        up = _upper_tail(lp0)
        # smallest t with P0(T > t) = P0(T >= t + 1) <= alpha
        ok = np.flatnonzero(np.append(up[1:], -np.inf) <= math.log(alpha))
        t = int(ok[0])
        new_centre = max(float(t), mean0)
        if abs(new_centre - centre) <= _RECENTRE_SD * sd0 * math.sqrt(n):
            break
        centre = new_centre  # relative accuracy of a tail is best when tilted at its start
    assert lp0 is not None  # the loop above runs at least once
    up = _upper_tail(lp0)
    above = math.exp(up[t + 1]) if t + 1 < up.size else 0.0
    at = math.exp(lp0[t])
    gamma = 0.0
    if randomized and at > 0:
        gamma = min(1.0, max(0.0, (alpha - above) / at))
    size = above + gamma * at
    mean1 = n * float(np.dot(b, z))
    lp1 = _lattice_logpmf(z, b, n, min(float(t), mean1))  # lower tails: tilt at min(t, mean)
    low = _lower_tail(lp1)
    below = math.exp(low[t - 1]) if t > 0 else 0.0
    type_ii = min(1.0, below + (1.0 - gamma) * math.exp(lp1[t]))
    thr = n * float(law.values[0]) + float(delta) * t
    return TestDesign(n, alpha, thr, gamma, size, type_ii, "exact-lattice", True, randomized, float(delta), t)


def _design_saddlepoint(law: _LLRLaw, n: int, alpha: float, randomized: bool) -> TestDesign:
    from scipy.optimize import brentq

    v, a, b = law.values, law.a, law.b
    lo, hi = n * float(v[0]), n * float(v[-1])
    eps_s = 1e-9 * (hi - lo)
    thr = brentq(lambda s: _lr_upper(v, a, n, s) - alpha, lo + eps_s, hi - eps_s, xtol=1e-12 * (hi - lo))
    size = _lr_upper(v, a, n, thr)
    type_ii = _lr_lower(v, b, n, thr)
    return TestDesign(
        n, alpha, float(thr), 0.0, size, type_ii, "saddlepoint", False, randomized, None, float(thr)
    )


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
    ):
        self.mechanism = mech
        self.alpha = _check_level(alpha, "alpha")
        self.beta = _check_level(beta, "beta")
        if self.alpha + self.beta >= 1.0:
            raise ValueError(f"alpha + beta must be < 1, got alpha={alpha!r}, beta={beta!r}")
        self.max_n = check_positive_int(max_n, "max_n", allow_none=True)
        self._law = _llr_law(mech, p0, p1)
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
        from ldpopt.deploy.sampling import encode_outputs

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


# ---------------------------------------------------------------------------------------------
# Sample size
# ---------------------------------------------------------------------------------------------
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
    kl: float
    chernoff_n: int = 0
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
    """
    alpha = _check_level(alpha, "alpha")
    beta = _check_level(beta, "beta")
    if alpha + beta >= 1.0:
        raise ValueError(
            f"alpha + beta must be < 1 (otherwise n = 0 suffices), got alpha={alpha!r}, beta={beta!r}"
        )
    methods = ("auto", "exact", "chernoff", "saddlepoint", "stein")
    if method not in methods:
        raise ValueError(f"method must be one of {methods}, got method={method!r}")
    exact_max_n = check_positive_int(exact_max_n, "exact_max_n")
    test = LikelihoodRatioTest(
        mech, p0, p1, alpha, randomized=randomized, exact_max_n=exact_max_n, lattice_size=lattice_size
    )
    law = test._law
    if law.values.size == 1:
        raise ValueError(
            "the mechanism's output distributions under p0 and p1 are equal: "
            "no number of reports can tell the hypotheses apart"
        )
    extra = {
        "chernoff_n": _chernoff(law, alpha, beta, randomized).n,
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
        law.kl,
        message="smallest n for the exact test",
        **extra,
    )


def _with(res: SampleSizeResult, **changes: Any) -> SampleSizeResult:
    from dataclasses import replace

    return replace(res, **changes)


def _normal_n(law: _LLRLaw, alpha: float, beta: float) -> int:
    from scipy.special import ndtri

    mu0, v0 = law.moments(0)
    mu1, v1 = law.moments(1)
    gap = mu1 - mu0
    if gap <= 0:
        return 1
    s = (float(ndtri(1 - alpha)) * math.sqrt(v0) + float(ndtri(1 - beta)) * math.sqrt(v1)) / gap
    return max(1, int(math.ceil(s * s)))


def _exact_search(test: LikelihoodRatioTest, alpha: float, beta: float, guess: int, limit: int | None):
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
            d = cache[n] = _design(law, n, alpha, True, test.exact_max_n, test._lattice_law)
        return d.type_ii <= beta

    # bracket around the normal-approximation guess with small geometric steps (few FFTs)
    n0 = max(1, guess if limit is None else min(guess, limit))
    if rok(n0):
        hi, lo = n0, int(n0 * 0.95)
        while lo >= 1 and rok(lo):
            hi, lo = lo, int(lo * 0.8)
    else:
        lo, hi = n0, int(math.ceil(n0 * 1.05)) + 1
        while True:
            if limit is not None:
                if lo >= limit:
                    return None
                hi = min(hi, limit)
            if rok(hi):
                break
            lo, hi = hi, int(math.ceil(hi * 1.25)) + 1
    while hi - lo > 1:  # rok(lo) is False (or lo == 0), rok(hi) is True
        mid = (lo + hi) // 2
        if rok(mid):
            hi = mid
        else:
            lo = mid
    n = hi
    if test.randomized:
        return n
    scan_end = 2 * n + 64
    while test.design(n).type_ii > beta:
        n += 1
        if (limit is not None and n > limit) or n > scan_end:
            return None
    return n


def _chernoff_rates(law: _LLRLaw, tau: float) -> tuple[float, float]:
    v = law.values
    with np.errstate(divide="ignore"):
        logw = np.log(law.a)
    th = _saddle_theta(v, logw, tau, lower=0.0) if _cgf(v, logw, 0.0)[1] < tau else 0.0
    i0 = th * tau - _cgf(v, logw, th)[0]
    return max(i0, 0.0), max(i0 - tau, 0.0)


def _chernoff(law: _LLRLaw, alpha: float, beta: float, randomized: bool) -> SampleSizeResult:
    from scipy.optimize import brentq

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
        law.kl,
        message=f"Chernoff bound: the test 'reject iff LLR >= n*{tau:.6g}' meets both targets",
    )


def _saddle_n(law: _LLRLaw, alpha: float, beta: float, randomized: bool) -> SampleSizeResult:
    def t2(n: int) -> TestDesign:
        return _design_saddlepoint(law, n, alpha, randomized)

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
        law.kl,
        message="Lugannani-Rice saddlepoint approximation",
    )


def _stein(law: _LLRLaw, alpha: float, beta: float, randomized: bool) -> SampleSizeResult:
    from scipy.special import ndtri

    D = law.kl
    _, V = law.moments(0)
    z = float(ndtri(1 - alpha))
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
        D,
        message="Stein's lemma with Strassen's second-order term (asymptotic)",
    )
