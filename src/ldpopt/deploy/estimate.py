r"""Estimates from privatized reports: the mixing proportion of two hypotheses and input frequencies.

:func:`mixture_proportion`
    The reports come from a population whose inputs follow :math:`(1-\pi)P_0 + \pi P_1`; each
    report has the law :math:`M_\pi = (1-\pi)M_0 + \pi M_1` with :math:`M_\nu = Q^\top P_\nu`.  The
    log-likelihood :math:`\ell(\pi) = \sum_y N_y \log M_\pi(y)` is concave, so the maximum-likelihood
    estimate on [0, 1] is the root of the decreasing score (or an end point).  The confidence set
    inverts the likelihood-ratio test of :math:`\pi = \pi_0`,
    :math:`\Lambda(\pi_0) = 2(\ell(\hat\pi) - \ell(\pi_0))` with :math:`\hat\pi` constrained to [0, 1]:

    * for an interior :math:`\pi_0`, :math:`\Lambda \to \chi^2_1` (Wilks): accept when
      :math:`\Lambda \le \chi^2_{1,1-\alpha}`;
    * at a boundary :math:`\pi_0 \in \{0, 1\}` the constrained statistic is the chi-bar-square
      mixture :math:`\tfrac12\chi^2_0 + \tfrac12\chi^2_1` (Self and Liang 1987), whose
      :math:`1-\alpha` quantile is :math:`\chi^2_{1,1-2\alpha}`: accept when
      :math:`\Lambda \le \chi^2_{1,1-2\alpha}`.

    The accepted set is an interval (:math:`\Lambda` is convex) whose end at 0 (or 1) is closed
    when the boundary itself is accepted, and open when only the points next to it are
    (``lower_closed`` / ``upper_closed``; :meth:`MixtureEstimate.covers` applies the test).  Using
    the interior critical value at the boundary would over-cover there (97.5% for a 95% interval).

:func:`frequencies`
    Unbiased inverse-channel estimates of the input distribution's mass on each block of inputs
    with identical channel rows (the SPR blocks; single inputs for k-RR).  With the observed
    output frequencies :math:`\hat f = N/n`, :math:`E\hat f = \theta Q_B` (rows of :math:`Q_B` =
    distinct rows of the channel), so

    * s-ary randomized response on a label (SPR, k-RR): the closed form
      :math:`\hat\theta_j = (\hat f_j - q)/(e^\varepsilon q - q)`,
      :math:`q = 1/(e^\varepsilon+s-1)` (the two levels read from the channel matrix), one
      estimate per output (an empty SPR block has true mass 0);
    * any other channel whose distinct rows are linearly independent: the least-squares solution
      :math:`\hat\theta = \hat f Q_B^{+}` (:math:`Q_B Q_B^{+} = I`, hence unbiased);

    standard errors from the plug-in multinomial covariance
    :math:`(\operatorname{diag}\hat f - \hat f\hat f^\top)/n` pushed through the linear map.  The
    estimates may be negative; ``projected`` is their Euclidean projection onto the simplex, a
    proper distribution but **biased** (towards the interior).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import KW_ONLY, dataclass
from typing import Any

import numpy as np
from scipy import optimize, special, stats

from ldpopt._validation import check_counts, is_real
from ldpopt.deploy.sampling import report_counts
from ldpopt.deploy.shuffle import rr_outputs
from ldpopt.deploy.testing import check_level
from ldpopt.errors import LdpoptDeprecationWarning
from ldpopt.frequency.consistent import project_to_simplex
from ldpopt.mechanism import as_mechanism

__all__ = [
    "MixtureEstimate",
    "FrequencyEstimate",
    "mixture_proportion",
    "frequencies",
    "report_counts",
    "project_to_simplex",
]

#: the score is treated as zero within this many ulps of its scale (|dl/dpi| <= sum N |m1-m0|/m)
_ROOT_XTOL = 2.0**-50
#: stands in for an infinite likelihood-ratio statistic in the root search (above every critical value)
_BIG = 1e300


@dataclass(frozen=True)
class MixtureEstimate:
    """Maximum-likelihood estimate of the mixing proportion pi and its profile-likelihood interval.

    ``value`` is the estimate, ``(lower, upper)`` the interval; an end at 0 or 1 is excluded when
    ``lower_closed`` / ``upper_closed`` is False (only points next to it are accepted).
    """

    value: float
    lower: float
    upper: float
    lower_closed: bool
    upper_closed: bool
    confidence: float
    n: int
    log_likelihood: float
    _: KW_ONLY
    critical_value: float
    boundary_critical_value: float
    counts: np.ndarray
    m0: np.ndarray
    m1: np.ndarray

    def statistic(self, pi: float) -> float:
        """The likelihood-ratio statistic 2 (l(pi_hat) - l(pi))."""
        return max(2.0 * (self.log_likelihood - _loglik(pi, self.counts, self.m0, self.m1)), 0.0)

    def covers(self, pi: Any) -> bool:
        """Whether ``pi`` is in the confidence set (the test of pi, with the boundary critical value
        at 0 and 1)."""
        if not is_real(pi) or not 0.0 <= float(pi) <= 1.0:
            raise ValueError(f"pi must be a number in [0, 1], got pi={pi!r}")
        p = float(pi)
        crit = self.boundary_critical_value if p in (0.0, 1.0) else self.critical_value
        return self.statistic(p) <= crit


@dataclass(frozen=True)
class FrequencyEstimate:
    """Inverse-channel estimates of the input mass on each block of inputs with identical rows.

    ``blocks[j]`` lists the inputs (labels, or indices when the mechanism has none) of block j;
    ``value[j]`` is its estimated mass, unbiased; ``standard_error`` and ``covariance`` are plug-in;
    ``projected`` is the Euclidean projection of ``value`` onto the simplex (biased).
    ``method`` is ``"rr_closed_form"`` or ``"least_squares"``.
    """

    value: np.ndarray
    standard_error: np.ndarray
    covariance: np.ndarray
    blocks: tuple
    projected: np.ndarray
    n: int
    method: str


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------
def _mixture(pi: float, m0: np.ndarray, m1: np.ndarray) -> np.ndarray:
    return (1.0 - pi) * m0 + pi * m1


def _loglik(pi: float, counts: np.ndarray, m0: np.ndarray, m1: np.ndarray) -> float:
    with np.errstate(divide="ignore"):
        return float(np.sum(special.xlogy(counts, _mixture(pi, m0, m1))))


def _score(pi: float, counts: np.ndarray, m0: np.ndarray, m1: np.ndarray) -> float:
    m = _mixture(pi, m0, m1)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = counts * (m1 - m0) / m
    if np.any(np.isnan(terms)):
        return math.nan
    return float(np.sum(terms))


def _mle(counts: np.ndarray, m0: np.ndarray, m1: np.ndarray) -> float:
    if _score(0.0, counts, m0, m1) <= 0.0:
        return 0.0
    if _score(1.0, counts, m0, m1) >= 0.0:
        return 1.0
    return float(optimize.brentq(_score, 0.0, 1.0, args=(counts, m0, m1), xtol=_ROOT_XTOL))


def _check_confidence(confidence: Any) -> float:
    """A confidence level: a probability level (:func:`check_level`) above one half."""
    message = f"confidence must be a number in (0.5, 1), got confidence={confidence!r}"
    try:
        conf = check_level(confidence, "confidence")
    except ValueError:  # nan, <= 0 or >= 1: the one range this level has, not check_level's (0, 1)
        raise ValueError(message) from None
    if not conf > 0.5:
        raise ValueError(message)
    return conf


# ---------------------------------------------------------------------------------------------
# mixing proportion
# ---------------------------------------------------------------------------------------------
def _old_order(reports: Any, old: tuple, p0: Any, p1: Any, confidence: Any) -> tuple[Any, Any, Any, Any]:
    """(reports, p0, p1, confidence) of a call in the first releases' order ``(mech, p0, p1,
    reports[, confidence])``: told apart from the new one by its third positional argument (the
    new order has at most two), with a :class:`~ldpopt.errors.LdpoptDeprecationWarning`."""
    if p0 is not None or p1 is not None or len(old) > 3:
        raise TypeError(
            "mixture_proportion takes (mech, reports, *, p0, p1, confidence=0.95, counts=None); "
            f"got {2 + len(old)} positional arguments"
        )
    warnings.warn(
        "mixture_proportion(mech, p0, p1, reports) is deprecated: call "
        "mixture_proportion(mech, reports, p0=p0, p1=p1) (reports second, as in frequencies)",
        LdpoptDeprecationWarning,
        stacklevel=3,
    )
    return (old[1] if len(old) > 1 else None), reports, old[0], (old[2] if len(old) > 2 else confidence)


def mixture_proportion(
    mech: Any,
    reports: Any = None,
    *old: Any,
    p0: Any = None,
    p1: Any = None,
    confidence: float = 0.95,
    counts: Any = None,
) -> MixtureEstimate:
    """MLE of pi in (1 - pi) P0 + pi P1 from the reports, with a profile-likelihood interval.

    Parameters
    ----------
    mech : Mechanism
        The mechanism that privatized the reports.
    reports : sequence
        Output labels (or output indices); ``None`` when ``counts`` is given.
    p0, p1 : distributions on the mechanism's inputs (keyword-only, required)
    confidence : float
        Nominal coverage in (0.5, 1).
    counts : array_like, optional
        Counts per output instead of ``reports``.

    The first releases' order ``mixture_proportion(mech, p0, p1, reports[, confidence])`` still
    works, with a :class:`~ldpopt.errors.LdpoptDeprecationWarning`.

    Raises
    ------
    ValueError
        When P0 and P1 induce the same output law (pi is not identifiable), or a report is
        impossible under both.
    """
    if old:
        reports, p0, p1, confidence = _old_order(reports, old, p0, p1, confidence)
    if p0 is None or p1 is None:
        raise TypeError("mixture_proportion needs p0= and p1= (keyword arguments)")
    m = as_mechanism(mech, "mech")
    conf = _check_confidence(confidence)
    m0, m1 = m.output_distributions(p0, p1)
    n_y = _counts(m, reports, counts)
    if np.array_equal(m0, m1):
        raise ValueError("P0 and P1 induce the same output distribution: pi is not identifiable")
    impossible = (n_y > 0) & (m0 == 0) & (m1 == 0)
    if np.any(impossible):
        raise ValueError(
            f"output {int(np.flatnonzero(impossible)[0])} was reported but has probability 0 under P0 and P1"
        )
    seen = n_y > 0  # unobserved outputs add nothing to the likelihood or its score
    pi_hat = _mle(n_y[seen], m0[seen], m1[seen])
    l_hat = _loglik(pi_hat, n_y, m0, m1)
    alpha = 1.0 - conf
    crit = float(stats.chi2.ppf(conf, 1))
    crit_b = float(stats.chi2.ppf(1.0 - 2.0 * alpha, 1))

    def excess(pi: float) -> float:
        # an impossible report at an end point makes the statistic +inf; brentq needs a finite sign
        return min(2.0 * (l_hat - _loglik(pi, n_y, m0, m1)), _BIG) - crit

    ends = []
    for edge in (0.0, 1.0):
        lam = 2.0 * (l_hat - _loglik(edge, n_y, m0, m1))
        if lam <= crit:
            ends.append((edge, lam <= crit_b))
        else:
            lo, hi = sorted((edge, pi_hat))
            ends.append((float(optimize.brentq(excess, lo, hi, xtol=_ROOT_XTOL)), True))
    (lower, lower_closed), (upper, upper_closed) = ends
    return MixtureEstimate(
        pi_hat,
        lower,
        upper,
        lower_closed,
        upper_closed,
        conf,
        int(n_y.sum()),
        l_hat,
        critical_value=crit,
        boundary_critical_value=crit_b,
        counts=n_y,
        m0=m0,
        m1=m1,
    )


def _counts(m: Any, reports: Any, counts: Any) -> np.ndarray:
    if (reports is None) == (counts is None):
        raise ValueError("give exactly one of reports and counts")
    if counts is not None:
        return check_counts(counts, "counts", m.num_outputs, what="output")
    n_y = report_counts(m, reports)
    if n_y.sum() == 0:
        raise ValueError("no reports: the estimate needs at least one")
    return n_y


# ---------------------------------------------------------------------------------------------
# frequencies
# ---------------------------------------------------------------------------------------------
def _rr_blocks(m: Any) -> list[list[int]]:
    high = np.argmax(m.matrix, axis=1)
    return [np.flatnonzero(high == j).tolist() for j in range(m.num_outputs)]


def _distinct_rows(m: Any) -> tuple[list[list[int]], np.ndarray]:
    rows, inverse = np.unique(m.matrix, axis=0, return_inverse=True)
    inverse = np.asarray(inverse).reshape(-1)
    first = [int(np.flatnonzero(inverse == b)[0]) for b in range(rows.shape[0])]
    order = np.argsort(first)
    blocks = [np.flatnonzero(inverse == b).tolist() for b in order]
    return blocks, rows[order]


def frequencies(mech: Any, reports: Any = None, *, counts: Any = None) -> FrequencyEstimate:
    """Unbiased estimates of the input mass on each block of inputs with identical channel rows.

    See the module docstring for the estimators.  ``reports`` are output labels or indices
    (or give ``counts`` per output).

    Raises
    ------
    ValueError
        When the distinct rows of the channel are linearly dependent (the masses are then not
        identifiable from the reports).
    """
    m = as_mechanism(mech, "mech")
    n_y = _counts(m, reports, counts)
    n = int(n_y.sum())
    f = n_y / n
    sigma = (np.diag(f) - np.outer(f, f)) / n
    s = rr_outputs(m)
    if s is not None:
        blocks = _rr_blocks(m)
        # the channel's own two levels (e^eps q and q up to the 1e-9 of rr_outputs' check): the
        # estimate is unbiased for the stored channel, whatever rounding its eps went through
        hi, q = float(m.matrix.max()), float(m.matrix.min())
        scale = 1.0 / (hi - q)
        value = (f - q) * scale
        cov = sigma * scale**2
        method = "rr_closed_form"
    else:
        blocks, rows = _distinct_rows(m)
        if np.linalg.matrix_rank(rows) < rows.shape[0]:
            raise ValueError(
                f"the {rows.shape[0]} distinct rows of the channel are linearly dependent: "
                "the input masses are not identifiable from the reports"
            )
        g = np.linalg.pinv(rows)  # (outputs, blocks): rows @ g = I
        value = f @ g
        cov = g.T @ sigma @ g
        method = "least_squares"
    names = m.labels
    labelled = tuple(tuple(names[i] if names is not None else i for i in b) for b in blocks)
    se = np.sqrt(np.maximum(np.diag(cov), 0.0))
    return FrequencyEstimate(value, se, cov, labelled, project_to_simplex(value), n, method)
