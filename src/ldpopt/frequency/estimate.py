r"""Frequencies from the reports of a deployed frequency oracle, with simultaneous intervals.

For a mechanism of :mod:`ldpopt.frequency.mechanisms` and n reports, :math:`C_x` of which support
item x:

* ``value``: the standard unbiased estimate :math:`\hat f_x = (C_x/n - q^*)/(p^* - q^*)` (Wang et
  al. 2017; the estimator of pure-LDP and multi-freq-ldpy);
* ``standard_error``: the plug-in :math:`\sqrt{\hat\pi_x(1-\hat\pi_x)/n}/(p^*-q^*)`,
  :math:`\hat\pi_x = C_x/n` (the exact variance :math:`\pi_x(1-\pi_x)/(n(p^*-q^*)^2)` with
  :math:`\pi_x` estimated);
* ``lower``, ``upper``: **simultaneous** intervals for all k frequencies by Bonferroni's inequality:
  :math:`\hat f_x \pm z_{1-\alpha/(2k)}\,\mathrm{se}_x` with :math:`\alpha = 1 - ` confidence.  Each
  interval has asymptotic level :math:`1 - \alpha/k`, so all k hold together with probability at
  least :math:`1-\alpha` (asymptotically; the coverage is checked by simulation in the tests).  They
  are not clipped to [0, 1];
* ``projected``: the Euclidean projection of ``value`` onto the simplex (consistent, biased);
* ``mle``: the maximum-likelihood distribution (:func:`ldpopt.frequency.consistent.support_mle`,
  its log-likelihood within ``MLE_GAP_TOL * n`` of the maximum, certified by a duality gap).

Reports come in the mechanism's own format (:mod:`ldpopt.frequency.mechanisms`), or as ``counts``
per output of its channel (column order of :meth:`~ldpopt.frequency.mechanisms.FrequencyMechanism.channel`;
for mechanisms whose channel is built), or as ``supports``: an (n, k) 0/1 array, row i the items
report i supports (reports privatized with another implementation's hash, say).
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from typing import Any

import numpy as np
from scipy.special import ndtri

from ldpopt._validation import as_real_array, check_counts, is_real, short_repr
from ldpopt.frequency.consistent import project_to_simplex, support_mle
from ldpopt.frequency.mechanisms import FrequencyMechanism

__all__ = ["HistogramEstimate", "estimate"]


@dataclass(frozen=True)
class HistogramEstimate:
    """Estimated frequencies of the k items from n reports (module docstring).

    ``interval_method`` is ``"bonferroni"``; ``mle_gap`` bounds the MLE's log-likelihood shortfall,
    ``mle_status`` is ``"converged"`` when that is within ``MLE_GAP_TOL * n``.
    """

    value: np.ndarray
    standard_error: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    confidence: float
    n: int
    _: KW_ONLY
    projected: np.ndarray
    mle: np.ndarray
    mle_gap: float
    mle_status: str
    support_counts: np.ndarray
    mechanism: FrequencyMechanism
    interval_method: str = "bonferroni"

    def covers(self, f: Any) -> bool:
        """Whether every interval holds the corresponding entry of ``f``."""
        fx = as_real_array(f, "f")
        if fx.shape != self.value.shape:
            raise ValueError(f"f must have one entry per item ({self.value.size}), got f={short_repr(f)}")
        return bool(np.all((self.lower <= fx) & (fx <= self.upper)))


def _check_confidence(confidence: Any) -> float:
    if not is_real(confidence) or not 0.5 < float(confidence) < 1.0:
        raise ValueError(f"confidence must be a number in (0.5, 1), got confidence={short_repr(confidence)}")
    return float(confidence)


def _patterns(
    mech: FrequencyMechanism, reports: Any, counts: Any, supports: Any
) -> tuple[np.ndarray, np.ndarray]:
    """(distinct support sets (m, k) bool, how often each was reported)."""
    given = [x is not None for x in (reports, counts, supports)]
    if sum(given) != 1:
        raise ValueError("give exactly one of reports, counts and supports")
    if counts is not None:
        if not mech.has_channel:
            raise ValueError(f"counts per output need the channel, too large for {mech.label} at k={mech.k}")
        sets = mech.output_supports()
        n_y = check_counts(counts, "counts", sets.shape[0], what="output of the channel")
        seen = n_y > 0
        return sets[seen], n_y[seen]
    if supports is not None:
        raw = np.asarray(supports) if isinstance(supports, np.ndarray) else None
        # a boolean array is a set-membership table: True/False stand for 1/0 here
        arr = (
            raw.astype(float)
            if raw is not None and raw.dtype == bool
            else as_real_array(supports, "supports", "an (n, k) array of 0/1 entries")
        )
        if arr.ndim != 2 or arr.shape[1] != mech.k or arr.shape[0] == 0:
            raise ValueError(f"supports must be a non-empty (n, {mech.k}) array, got shape {arr.shape}")
        if np.any((arr != 0) & (arr != 1)):
            raise ValueError("supports must hold 0/1 entries")
        sup = arr.astype(bool)
    else:
        sup = mech.supports(reports)
        if sup.shape[0] == 0:
            raise ValueError("no reports: the estimate needs at least one")
    sets, cnt = np.unique(sup, axis=0, return_counts=True)
    return sets, cnt.astype(np.int64)


def estimate(
    mech: Any,
    reports: Any = None,
    *,
    counts: Any = None,
    supports: Any = None,
    confidence: Any = 0.95,
) -> HistogramEstimate:
    """Unbiased, projected and maximum-likelihood frequencies with simultaneous intervals.

    Parameters
    ----------
    mech : FrequencyMechanism
        The mechanism that privatized the reports.
    reports : array_like, optional
        Reports in the mechanism's format (:mod:`ldpopt.frequency.mechanisms`).
    counts : array_like, optional
        Counts per output of the mechanism's channel instead.
    supports : array_like, optional
        (n, k) 0/1 rows: the items each report supports, instead.
    confidence : float
        Simultaneous coverage in (0.5, 1) of the k intervals (Bonferroni).
    """
    if not isinstance(mech, FrequencyMechanism):
        raise TypeError(f"mech must be a FrequencyMechanism, got mech={short_repr(mech)}")
    conf = _check_confidence(confidence)
    sets, cnt = _patterns(mech, reports, counts, supports)
    n = int(cnt.sum())
    support_counts = (cnt @ sets.astype(np.int64)).astype(np.int64)
    pi_hat = support_counts / n
    scale = mech.p - mech.q
    value = (pi_hat - mech.q) / scale
    se = np.sqrt(pi_hat * (1.0 - pi_hat) / n) / scale
    z = -float(ndtri((1.0 - conf) / (2.0 * mech.k)))  # the upper alpha/(2k) normal quantile
    a, b = mech.column_levels()
    from_proj = project_to_simplex(value)
    mle = support_mle(sets, cnt, b / a, start=from_proj)
    return HistogramEstimate(
        value=value,
        standard_error=se,
        lower=value - z * se,
        upper=value + z * se,
        confidence=conf,
        n=n,
        projected=from_proj,
        mle=mle.value,
        mle_gap=mle.gap,
        mle_status=mle.status,
        support_counts=support_counts,
        mechanism=mech,
    )
