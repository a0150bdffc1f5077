r"""The law of the likelihood-ratio statistic of privatized reports, and the level-alpha tests it gives.

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
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from typing import Any

import numpy as np
from scipy import fft
from scipy.optimize import brentq
from scipy.special import ndtr, ndtri
from scipy.stats import binom

from ldpopt.deploy.sampling import realise
from ldpopt.mechanism import Mechanism

__all__ = [
    "DEFAULT_EXACT_MAX_N",
    "DEFAULT_LATTICE_SIZE",
    "LLRLaw",
    "TestDesign",
    "cgf",
    "design_saddlepoint",
    "design_test",
    "lattice_logpmf",
    "lattice_steps",
    "llr_law",
    "lower_tail",
    "lr_lower",
    "lr_upper",
    "saddle_theta",
    "upper_tail",
]

#: n above which the lattice test gives way to the saddlepoint approximation
DEFAULT_EXACT_MAX_N = 4000
#: number of lattice steps spanning [lambda_min, lambda_max]
DEFAULT_LATTICE_SIZE = 512
#: FFT values below this fraction of the peak are treated as round-off (log-pmf = -inf)
_FFT_FLOOR = 1e-14
#: re-tilt the lattice law when the threshold is further than this many sd from the tilt point
_RECENTRE_SD = 0.5
#: |w| below which the Lugannani-Rice formula is replaced by its limit at the mean
_LR_SMALL_W = 1e-5


# ---------------------------------------------------------------------------------------------
# The law of the per-report LLR
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class LLRLaw:
    """The per-report LLR: its value per output and its law (distinct values, their P0/P1 masses)."""

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


def llr_law(mech: Mechanism, p0: Any, p1: Any, normalize: bool = False) -> LLRLaw:
    """The law of the per-report LLR of ``mech``'s realised channel under ``p0`` and ``p1``
    (``normalize``: rescale each to sum to 1, for counts)."""
    u, v = mech.input_pair(p0, p1, normalize=normalize)
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
    return LLRLaw(m0=m0, m1=m1, llr=llr, values=values, a=a, b=b, cls=cls)


def lattice_steps(values: np.ndarray, lattice_size: int) -> tuple[np.ndarray, float]:
    """The lattice of the LLR values: integer steps ``z`` and the step ``delta``, with
    ``values ~ values[0] + delta * z`` and ``lattice_size`` steps across the range."""
    delta = (values[-1] - values[0]) / lattice_size
    z = np.rint((values - values[0]) / delta).astype(np.int64)
    return z, float(delta)


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
    return saddle_theta(z.astype(float), logw, target)


def saddle_theta(values: np.ndarray, logw: np.ndarray, x: float, lower: float | None = None) -> float:
    """Root of K'(theta) = x (K the cumulant generating function of ``values`` under ``exp(logw)``).

    K' is increasing; safeguarded Newton (K'' is the tilted variance) inside a doubling bracket.
    """
    span = float(values.max() - values.min())
    a = -1.0 / span if lower is None else lower
    b = 1.0 / span
    if lower is None:
        while cgf(values, logw, a)[1] > x:
            a *= 2.0
    while cgf(values, logw, b)[1] < x:
        b *= 2.0
    th = 0.5 * (a + b) if lower is None or a < 0 else a
    for _ in range(200):
        _, m1, m2 = cgf(values, logw, th)
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


def lattice_logpmf(z: np.ndarray, w: np.ndarray, n: int, centre: float, with_tilted: bool = False):
    """log P(sum of n draws = t), t = 0..n*max(z), accurate near ``centre`` and in the tail away from it.

    With ``with_tilted`` also returns the log of the tilted pmf, whose drop from its value at
    ``centre`` bounds the loss of relative accuracy (FFT round-off is relative to its peak).
    """
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


def upper_tail(logpmf: np.ndarray) -> np.ndarray:
    """log P(T >= t) for every t."""
    return _log_cumsum(logpmf[::-1])[::-1]


def lower_tail(logpmf: np.ndarray) -> np.ndarray:
    """log P(T <= t) for every t."""
    return _log_cumsum(logpmf)


# ---------------------------------------------------------------------------------------------
# Saddlepoint (Lugannani-Rice)
# ---------------------------------------------------------------------------------------------
def cgf(values: np.ndarray, logw: np.ndarray, theta: float) -> tuple[float, float, float]:
    lw = logw + theta * values
    k = _logsumexp(lw)
    p = np.exp(lw - k)
    m1 = float(np.dot(p, values))
    m2 = float(np.dot(p, (values - m1) ** 2))
    return k, m1, m2


def lr_upper(values: np.ndarray, w: np.ndarray, n: int, s: float) -> float:
    """Lugannani-Rice approximation of P(sum of n draws >= s)."""
    x = s / n
    if x <= values[0]:
        return 1.0
    if x >= values[-1]:
        return 0.0 if x > values[-1] else float(w[-1] ** n)
    with np.errstate(divide="ignore"):
        logw = np.log(w)
    th = saddle_theta(values, logw, x)
    k, _, k2 = cgf(values, logw, th)
    arg = max(2.0 * n * (th * x - k), 0.0)
    wv = math.copysign(math.sqrt(arg), th)
    if abs(wv) < _LR_SMALL_W:
        _, mu, var = cgf(values, logw, 0.0)
        k3 = float(np.dot(w, (values - mu) ** 3))
        return 0.5 - k3 / (6.0 * math.sqrt(2.0 * math.pi * n) * var**1.5)
    u = th * math.sqrt(n * k2)
    phi = math.exp(-0.5 * wv * wv) / math.sqrt(2.0 * math.pi)
    return float(min(1.0, max(0.0, ndtr(-wv) + phi * (1.0 / u - 1.0 / wv))))


def lr_lower(values: np.ndarray, w: np.ndarray, n: int, s: float) -> float:
    """Lugannani-Rice approximation of P(sum of n draws <= s) (upper tail of the negated law)."""
    return lr_upper(-values[::-1], w[::-1], n, -s)


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
    _: KW_ONLY
    randomized: bool
    lattice_step: float | None = None
    _stat_threshold: float = 0.0

    @property
    def power(self) -> float:
        """1 - type_ii."""
        return 1.0 - self.type_ii


def design_test(
    law: LLRLaw,
    n: int,
    alpha: float,
    randomized: bool,
    exact_max_n: int,
    lattice: Callable[[], tuple[np.ndarray, float]],
) -> TestDesign:
    """The level-``alpha`` test for ``n`` reports: exact (binomial for a two-valued LLR, the
    lattice LLR up to ``exact_max_n``; ``lattice()`` gives its steps) or saddlepoint."""
    v = law.values
    if v.size == 1:
        # M0 = M1: the reports carry no information; only a coin can spend alpha
        g = alpha if randomized else 0.0
        thr = math.inf if not randomized else n * float(v[0])
        return TestDesign(n, alpha, thr, g, g, 1.0 - g, "uninformative", True, randomized=randomized)
    if v.size == 2:
        return _design_binomial(law, n, alpha, randomized)
    if n <= exact_max_n:
        z, delta = lattice()
        return _design_lattice(law, z, delta, n, alpha, randomized)
    return design_saddlepoint(law, n, alpha, randomized)


def _design_binomial(law: LLRLaw, n: int, alpha: float, randomized: bool) -> TestDesign:
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
    return TestDesign(
        n, alpha, thr, gamma, size, type_ii, "exact-binomial", True, randomized=randomized, _stat_threshold=t
    )


def _design_lattice(
    law: LLRLaw, z: np.ndarray, delta: float, n: int, alpha: float, randomized: bool
) -> TestDesign:
    a, b = law.a, law.b
    mu0 = float(np.dot(a, z))
    sd0 = math.sqrt(max(float(np.dot(a, (z - mu0) ** 2)), 1e-300))
    mean0 = n * mu0
    # upper tails are accurate when tilted at max(t, mean): the bulk is then never cut off
    centre = max(mean0, mean0 + float(ndtri(1.0 - alpha)) * sd0 * math.sqrt(n))
    t = 0
    lp0 = None
    for _ in range(4):
        lp0 = lattice_logpmf(z, a, n, centre)
        up = upper_tail(lp0)
        # smallest t with P0(T > t) = P0(T >= t + 1) <= alpha
        ok = np.flatnonzero(np.append(up[1:], -np.inf) <= math.log(alpha))
        t = int(ok[0])
        new_centre = max(float(t), mean0)
        if abs(new_centre - centre) <= _RECENTRE_SD * sd0 * math.sqrt(n):
            break
        centre = new_centre  # relative accuracy of a tail is best when tilted at its start
    assert lp0 is not None  # the loop above runs at least once
    up = upper_tail(lp0)
    above = math.exp(up[t + 1]) if t + 1 < up.size else 0.0
    at = math.exp(lp0[t])
    gamma = 0.0
    if randomized and at > 0:
        gamma = min(1.0, max(0.0, (alpha - above) / at))
    size = above + gamma * at
    mean1 = n * float(np.dot(b, z))
    lp1 = lattice_logpmf(z, b, n, min(float(t), mean1))  # lower tails: tilt at min(t, mean)
    low = lower_tail(lp1)
    below = math.exp(low[t - 1]) if t > 0 else 0.0
    type_ii = min(1.0, below + (1.0 - gamma) * math.exp(lp1[t]))
    thr = n * float(law.values[0]) + float(delta) * t
    return TestDesign(
        n,
        alpha,
        thr,
        gamma,
        size,
        type_ii,
        "exact-lattice",
        True,
        randomized=randomized,
        lattice_step=float(delta),
        _stat_threshold=t,
    )


def design_saddlepoint(law: LLRLaw, n: int, alpha: float, randomized: bool) -> TestDesign:
    """The level-``alpha`` threshold test for ``n`` reports from the Lugannani-Rice tails."""
    v, a, b = law.values, law.a, law.b
    lo, hi = n * float(v[0]), n * float(v[-1])
    eps_s = 1e-9 * (hi - lo)
    thr = brentq(lambda s: lr_upper(v, a, n, s) - alpha, lo + eps_s, hi - eps_s, xtol=1e-12 * (hi - lo))
    size = lr_upper(v, a, n, thr)
    type_ii = lr_lower(v, b, n, thr)
    return TestDesign(
        n,
        alpha,
        float(thr),
        0.0,
        size,
        type_ii,
        "saddlepoint",
        False,
        randomized=randomized,
        _stat_threshold=float(thr),
    )
