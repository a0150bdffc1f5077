r"""Empirical LDP audit: a statistical lower bound on the privacy a sampler really gives.

A mechanism claims :math:`\varepsilon`; its *implementation* (the sampler that produces
reports) may leak more -- a classic bug is randomized response that draws the "lie" from all
k labels, so the lie can equal the truth.  :func:`audit` treats the sampler as a black box,
in the style of published LDP auditing (e.g. Arcolezi & Gambs, "Revealing the True Cost of
Locally Differentially Private Protocols: An Auditing Perspective", 2023, and the
Clopper-Pearson approach of Jagielski et al. 2020 for central DP):

1. *Selection*: ``n_select`` reports for every input; for every output y take the input
   pair (x_hi, x_lo) with the largest and smallest empirical frequency of y, and keep the
   ``candidates`` triples (y, x_hi, x_lo) with the largest empirical log-ratio.
2. *Estimation*, on fresh reports (``n`` per audited input): a one-sided Clopper-Pearson
   lower bound :math:`L` on :math:`Q(y|x_{hi})` and upper bound :math:`U` on
   :math:`Q(y|x_{lo})`, each at level :math:`\alpha/(2m)` (Bonferroni over the m candidates).

Then :math:`\hat\varepsilon_{lo}=\max(0,\max\log(L/U))` satisfies
:math:`P(\hat\varepsilon_{lo} > \varepsilon_{true}) \le \alpha`, where
:math:`\varepsilon_{true}=\max_{y,x,x'}\log Q(y|x)/Q(y|x')` is the true level of the sampler
(eq. 1 of the SPR paper): the selection stage is independent of the estimation stage, and
on the event that every interval covers, each log-ratio bound is below a true log-ratio.
A lower bound above the claimed eps is a **violation** (with confidence 1 - alpha).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from typing import Any

import numpy as np
from scipy.stats import beta

from ldpopt._validation import check_positive_int
from ldpopt.deploy.sampling import bit_source, encode_outputs, realise, sample_indices
from ldpopt.deploy.testing import check_level
from ldpopt.mechanism import Mechanism, as_mechanism

__all__ = ["AuditResult", "audit"]

#: largest n (and n_select): the reports of one stage are drawn and held in memory at once
#: (16 bytes per report and audited input), so 10^8 is ~1.6 GB per input
MAX_REPORTS = 10**8

#: a draw: int64 input indices -> int64 output indices, one report each
Draw = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class AuditResult:
    r"""Outcome of :func:`audit`.

    Attributes
    ----------
    eps_lower : float
        Lower confidence bound on the sampler's true eps (confidence ``1 - alpha``).
    claimed_eps : float
        The mechanism's eps.
    model_eps : float
        Privacy level of the mechanism's matrix (:meth:`Mechanism.privacy_level`).
    violation : bool
        ``eps_lower > claimed_eps``: the sampler provably (at level alpha) leaks more than claimed.
    alpha : float
    n, n_select : int
        Reports per audited input in the estimation / selection stage.
    output : label or int
        Output y of the worst audited triple.
    inputs : tuple
        (x_hi, x_lo) of that triple (labels when the mechanism has them); this and the
        following fields are keyword-only.
    counts : tuple of int
        Estimation-stage counts of y for x_hi and x_lo.
    candidates : int
        Number of triples tested (the Bonferroni factor).
    method : str
    message : str
    """

    eps_lower: float
    claimed_eps: float
    model_eps: float
    violation: bool
    alpha: float
    n: int
    n_select: int
    output: Any
    _: KW_ONLY
    inputs: tuple
    counts: tuple
    candidates: int
    method: str = "clopper-pearson"
    message: str = ""


def _cp_lower(c: np.ndarray, n: int, level: float) -> np.ndarray:
    """One-sided Clopper-Pearson lower bounds on the success probabilities behind counts ``c``."""
    c = np.asarray(c, dtype=float)
    out = np.zeros_like(c)
    pos = c > 0
    out[pos] = beta.ppf(level, c[pos], n - c[pos] + 1)
    return out


def _cp_upper(c: np.ndarray, n: int, level: float) -> np.ndarray:
    """One-sided Clopper-Pearson upper bounds on the success probabilities behind counts ``c``."""
    c = np.asarray(c, dtype=float)
    out = np.ones_like(c)
    below = c < n
    out[below] = beta.ppf(1.0 - level, c[below] + 1, n - c[below])
    return out


def _drawer(mech: Mechanism, sampler: Callable[[np.ndarray], Any] | None, rng: Any) -> Draw:
    """The audited sampler as a draw: this library's exact sampler, or ``sampler`` with its
    reports checked and encoded as output indices."""
    if sampler is not None and not callable(sampler):
        raise TypeError(f"sampler must be callable, got {sampler!r}")
    ch = realise(mech) if sampler is None else None
    source = bit_source(rng)
    if ch is not None:
        return lambda x: sample_indices(ch, x, source)  # output indices already

    def draw(x: np.ndarray) -> np.ndarray:
        assert sampler is not None  # the default sampler is handled above
        out = sampler(x)
        try:
            idx = encode_outputs(mech, out, name="sampler output")
        except (TypeError, ValueError) as exc:
            raise ValueError(f"sampler returned invalid reports: {exc}") from None
        if idx.shape != x.shape:
            raise ValueError(f"sampler returned {idx.shape[0]} reports for {x.shape[0]} inputs")
        return idx

    return draw


def _histogram(draw: Draw, inputs: np.ndarray, reps: int, n_out: int) -> np.ndarray:
    """Counts of every output for ``reps`` reports of each input, shape (inputs.size, n_out)."""
    x = np.repeat(inputs, reps)
    y = draw(x)
    flat = np.bincount(np.repeat(np.arange(inputs.size), reps) * n_out + y, minlength=inputs.size * n_out)
    return flat.reshape(inputs.size, n_out)


def _select(counts: np.ndarray, m_cand: int) -> list[tuple[int, int, int]]:
    """The ``m_cand`` most revealing triples (output y, x_hi, x_lo) of the selection counts."""
    hi = np.argmax(counts, axis=0)
    lo = np.argmin(counts, axis=0)
    cols = np.arange(counts.shape[1])
    score = np.log((counts[hi, cols] + 0.5) / (counts[lo, cols] + 0.5))
    order = [int(j) for j in np.argsort(-score, kind="stable") if hi[j] != lo[j]][:m_cand]
    return [(j, int(hi[j]), int(lo[j])) for j in order]


def _message(violation: bool, eps_lower: float, claimed: float, alpha: float) -> str:
    conf = f"{100 * (1 - alpha):.6g}%"
    if violation:
        return (
            f"VIOLATION: with {conf} confidence the sampler's eps is at least {eps_lower:.4g}, "
            f"above the claimed {claimed:.4g}"
        )
    return f"no violation detected: eps >= {eps_lower:.4g} with {conf} confidence, claimed {claimed:.4g}"


def _nothing_to_audit(claimed: float, model: float, alpha: float, n: int, n_select: int) -> AuditResult:
    return AuditResult(
        0.0,
        claimed,
        model,
        False,
        alpha,
        n,
        n_select,
        None,
        inputs=(),
        counts=(),
        candidates=0,
        message="a single input or output: nothing to audit (eps_lower = 0)",
    )


def audit(
    mech: Any,
    n: int = 100_000,
    *,
    alpha: float = 0.05,
    n_select: int | None = None,
    candidates: int = 8,
    sampler: Callable[[np.ndarray], Any] | None = None,
    rng: Any = None,
) -> AuditResult:
    r"""Statistical lower bound on the true eps of ``mech``'s sampler, next to the claimed eps.

    Parameters
    ----------
    mech : Mechanism
        The mechanism whose claim is audited (or a design result holding one).
    n : int
        Reports per audited input in the estimation stage.
    alpha : float
        :math:`P(\text{eps\_lower} > \text{true eps}) \le \alpha`.
    n_select : int, optional
        Reports per input in the selection stage (default ``max(1000, n // 10)``).
    candidates : int
        Number of (output, input pair) triples carried to the estimation stage.
    sampler : callable, optional
        ``sampler(x)`` maps an int64 array of input indices to reports (output indices, or
        output labels); default: this library's exact sampler (:meth:`Mechanism.privatize`).
    rng : None or numpy.random.Generator
        Randomness of the default sampler (``None`` = OS CSPRNG).

    Returns
    -------
    AuditResult
    """
    mech = as_mechanism(mech, "mech")
    n = check_positive_int(n, "n")
    n_select = check_positive_int(n_select, "n_select", allow_none=True) or max(1000, n // 10)
    m_cand = check_positive_int(candidates, "candidates")
    alpha = check_level(alpha, "alpha")
    for name, value in (("n", n), ("n_select", n_select)):
        if value > MAX_REPORTS:
            raise ValueError(
                f"{name} must be <= {MAX_REPORTS:.0e} (the reports are held in memory), got {name}={value}"
            )
    k, n_out = mech.num_inputs, mech.num_outputs
    draw = _drawer(mech, sampler, rng)
    claimed = float(mech.eps)
    model = float(mech.privacy_level())
    if k < 2 or n_out < 2:
        return _nothing_to_audit(claimed, model, alpha, n, n_select)
    # stage 1: select the most revealing (output, x_hi, x_lo) triples
    trip = _select(_histogram(draw, np.arange(k), n_select, n_out).astype(float), m_cand)
    if not trip:
        return _nothing_to_audit(claimed, model, alpha, n, n_select)

    # stage 2: fresh reports for the audited inputs, Bonferroni-corrected Clopper-Pearson
    inputs = np.array(sorted({x for _, a, b in trip for x in (a, b)}), dtype=np.int64)
    pos = {int(x): i for i, x in enumerate(inputs)}
    c2 = _histogram(draw, inputs, n, n_out)
    level = alpha / (2 * len(trip))
    c_hi = np.array([c2[pos[a], j] for j, a, _ in trip])
    c_lo = np.array([c2[pos[b], j] for j, _, b in trip])
    with np.errstate(divide="ignore"):
        bounds = np.log(_cp_lower(c_hi, n, level)) - np.log(_cp_upper(c_lo, n, level))
    best = int(np.argmax(bounds))
    eps_lower = max(0.0, float(bounds[best]))
    j, a, b = trip[best]
    lab, out_lab = mech.labels, mech.output_labels
    return AuditResult(
        eps_lower=eps_lower,
        claimed_eps=claimed,
        model_eps=model,
        violation=eps_lower > claimed,
        alpha=alpha,
        n=n,
        n_select=n_select,
        output=j if out_lab is None else out_lab[j],
        inputs=(a, b) if lab is None else (lab[a], lab[b]),
        counts=(int(c_hi[best]), int(c_lo[best])),
        candidates=len(trip),
        message=_message(eps_lower > claimed, eps_lower, claimed, alpha),
    )
