r"""Certified max-min mechanisms over uncertainty sets: :func:`robust_mechanism`, :func:`worst_case`.

.. math:: \max_{Q\ \varepsilon\text{-LDP}}\ W(Q),\qquad
   W(Q)=\min_{P_0\in U_0,\,P_1\in U_1} D_f(QP_0\|QP_1).

* Lower bound (the guarantee, ``value``): W of the returned mechanism, bounded from below by
  the tangent-plane certificate of :mod:`ldpopt.robust._inner` (valid whatever point it is
  evaluated at; for TV and E_gamma its dual form in :mod:`ldpopt.robust._piecewise`).
* Upper bound (``upper_bound``): :math:`S(P_0,P_1)=\max_Q D_f(QP_0\|QP_1)` is the SPR optimum
  (the dynamic program); for every feasible pair, :math:`S(P_0,P_1)\ge\max_Q W(Q)`, so S at the
  best pair found (evaluated by the DP, not by a model) bounds every mechanism's guarantee.
* The search is cutting planes on the convex function S with the DP as oracle, each cut kept
  as the exact convex piece :math:`F_i(P)=D_f(Q_iP_0\|Q_iP_1)\le S(P)` of the channel :math:`Q_i`
  the DP returned: the restricted master :math:`\min_{P\in U}\max_i F_i(P)` gives the next pair
  and, through its dual weights :math:`\lambda` (recomputed at its point, not read from
  SLSQP), the mechanism.  When several channels are active the mechanism is their *mixture
  with disjoint outputs* (report channel i's output with probability :math:`\lambda_i`),
  whose utility is :math:`\sum_i\lambda_iF_i(P)`, linear in :math:`\lambda`: by the minimax
  theorem the max-min over such mixtures equals :math:`\min_P S(P)`, so the certificate can
  close even without a saddle point in single SPR channels.  With ``max_outputs`` set, only
  single channels are returned.
* Start: Huber's censored-likelihood-ratio pair for contamination and total variation (the
  least-favourable pair of the sets themselves), the estimates for KL balls.
"""

from __future__ import annotations

import math
from dataclasses import KW_ONLY, dataclass
from typing import Any

import numpy as np

from ldpopt._validation import check_eps, check_labelled_pair, check_positive_int
from ldpopt.divergences import FDivergence, get_divergence
from ldpopt.mechanism import Mechanism, as_channel_matrix, spr_mechanism
from ldpopt.robust._inner import (
    Certified,
    check_divergence,
    max_min_weights,
    objective,
    solve_inner,
    solve_master,
)
from ldpopt.robust.uncertainty import Uncertainty, check_uncertainty, huber_pair
from ldpopt.spr.solve import optimal_mechanism

__all__ = [
    "CERT_RTOL",
    "RobustResult",
    "check_divergence",
    "WorstCaseResult",
    "robust_mechanism",
    "worst_case",
]

#: ``certified`` when gap <= CERT_RTOL * upper_bound (the bounds are proven up to the rounding
#: of their compensated sums, ~1e-15 relative)
CERT_RTOL = 1e-8
#: outer iterations (DP solves) at most
MAX_ITER = 40
#: a bound "moved" when it improved by more than this, relative: far above the rounding of the
#: compensated sums (~1e-15) and far below CERT_RTOL
_PROGRESS_RTOL = 1e-12
#: inner solves of one refinement of the mixture weights at most
_REFINE_MAXITER = 20
#: first half-width of the box around the best weights in that refinement
_REFINE_BOX = 1e-2
#: a mixture weight below this is dropped (the mechanism's own W is what is reported)
_MIN_WEIGHT = 1e-9


@dataclass(frozen=True)
class WorstCaseResult:
    """Worst-case utility of a mechanism over the uncertainty sets.

    Attributes
    ----------
    value : float
        A proven lower bound on W(Q) (the guarantee).
    upper_bound : float
        D_f at ``worst_pair`` (a pair in the sets): a proven upper bound on W(Q).
    gap, certified
        ``upper_bound - value`` and ``gap <= 1e-8 * upper_bound``.
    worst_pair : tuple of two arrays
    nominal : float
        The mechanism's utility at the estimates.
    """

    value: float
    upper_bound: float
    gap: float
    certified: bool
    worst_pair: tuple
    nominal: float
    divergence: str
    _: KW_ONLY
    mechanism: Mechanism | None = None


@dataclass(frozen=True)
class RobustResult:
    """Result of :func:`robust_mechanism`.

    Attributes
    ----------
    value : float
        The guarantee: a proven lower bound on W of ``mechanism``.
    upper_bound : float
        U*, a proven upper bound on the max-min (S at ``least_favourable``, by the DP).
    gap : float
        ``upper_bound - value``.
    certified : bool
        ``gap <= 1e-8 * upper_bound``: ``mechanism`` is robust-optimal.
    least_favourable : tuple of two arrays
        The pair in the sets where S is smallest among those visited.
    mechanism : Mechanism
        The robust mechanism (an SPR mechanism, or a mixture of SPR mechanisms with disjoint
        outputs when one channel does not close the gap).
    partition : tuple or None
        The SPR partition of ``mechanism``; ``None`` for a mixture.
    plug_in : WorstCaseResult
        The SPR design for the estimates themselves, with its own worst case.
    """

    value: float
    upper_bound: float
    gap: float
    certified: bool
    least_favourable: tuple
    mechanism: Mechanism
    partition: tuple | None
    plug_in: WorstCaseResult
    _: KW_ONLY
    eps: float
    divergence: str
    uncertainty: Uncertainty
    worst_pair: tuple
    weights: tuple = (1.0,)
    dp_solves: int = 0
    iterations: int = 0
    status: int = 0
    message: str = "certified"

    @property
    def success(self) -> bool:
        """A mechanism and both bounds were computed (``status == 0``; ``certified`` says whether
        they meet)."""
        return self.status == 0


def _check_inputs(p0_hat, p1_hat, uncertainty, divergence):
    u = check_uncertainty(uncertainty)
    p0, p1, labels = check_labelled_pair(p0_hat, p1_hat, names=("p0_hat", "p1_hat"))
    for name, given, own in (("p0_hat", p0, u.p0_hat), ("p1_hat", p1, u.p1_hat)):
        if own is not None and (own.shape != given.shape or not np.allclose(own, given, rtol=0, atol=1e-12)):
            raise ValueError(
                f"{name} differs from the centre of the confidence set built by from_counts; pass "
                f"uncertainty.{name}"
            )
    div = get_divergence(divergence)
    check_divergence(div)
    return u, p0, p1, labels, div


def _report(div: FDivergence, raw: float) -> float:
    return div.transform(raw) if raw > 0.0 else 0.0


def _certificate(div, lower_raw, upper_raw):
    # lower <= upper holds exactly; the two float sums can cross by rounding (~1e-16): keep the order
    lo, up = _report(div, min(lower_raw, upper_raw)), _report(div, upper_raw)
    gap = max(0.0, up - lo)
    return lo, up, gap, gap <= CERT_RTOL * up


def _used_matrix(mech_matrix: np.ndarray, name: str) -> np.ndarray:
    m = np.asarray(mech_matrix, dtype=float)
    used = m.max(axis=0) > 0
    m = m[:, used]
    if np.any(m <= 0):
        raise ValueError(
            f"{name}: every used output must have positive probability from every input (a finite "
            "eps); the worst case of a deterministic output is not supported"
        )
    return m


def worst_case(
    mech: Any,
    p0_hat: Any,
    p1_hat: Any,
    uncertainty: Uncertainty,
    divergence: str | FDivergence = "kl",
) -> WorstCaseResult:
    """Certified worst-case utility of any mechanism (k-RR, binary, a file's, a design result)
    over the uncertainty sets around ``p0_hat``, ``p1_hat``."""
    u, p0, p1, _, div = _check_inputs(p0_hat, p1_hat, uncertainty, divergence)
    m = as_channel_matrix(mech, "mech")
    if m.shape[0] != p0.size:
        raise ValueError(f"mech has {m.shape[0]} inputs but p0_hat has {p0.size} symbols")
    M = _used_matrix(m, "mech")
    sides = u.sides(p0, p1)
    start = _input_lfp(div, sides, p0, p1)
    cert = solve_inner(M, div, sides, start)
    return _worst_result(div, M, cert, p0, p1, mech if isinstance(mech, Mechanism) else None)


def _worst_result(div, M, cert: Certified, p0, p1, mech) -> WorstCaseResult:
    lo, up, gap, ok = _certificate(div, cert.lower, cert.upper)
    return WorstCaseResult(
        lo, up, gap, ok, cert.pair, _report(div, objective(M, div, p0, p1)), div.name, mechanism=mech
    )


def _input_lfp(div, sides, p0, p1):
    """The least-favourable pair of the sets at the input (identity channel): Huber's pair for
    contamination and TV; the start of every search."""
    pair = huber_pair(sides[0].model, p0, p1, sides[0].radius, sides[1].radius)
    if pair is not None:
        return sides[0].repair(pair[0]), sides[1].repair(pair[1])
    return p0, p1  # KL balls: the search starts at the estimates


class _Search:
    """State of the cutting-plane search (one DP solve per step)."""

    def __init__(self, p0, p1, eps, div, l, sides):
        self.p0, self.p1, self.eps, self.div, self.l, self.sides = p0, p1, eps, div, l, sides
        self.mats: list[np.ndarray] = []
        self.parts: list[tuple] = []
        self.dp_solves = 0
        self.upper, self.lfp = math.inf, (p0, p1)
        self.lower, self.best = -math.inf, None

    def oracle(self, pair) -> bool:
        """DP at a feasible pair: S there (an upper bound) and its channel (a new cut?)."""
        res = optimal_mechanism(pair[0], pair[1], self.eps, self.div, self.l, normalize=True)
        self.dp_solves += 1
        assert res.mechanism is not None and res.partition is not None
        M = np.asarray(res.mechanism.matrix)
        s_val = objective(M, self.div, pair[0], pair[1])
        if s_val < self.upper:
            self.upper, self.lfp = s_val, pair
        if res.partition in self.parts:
            return False
        self.parts.append(res.partition)
        self.mats.append(M)
        return True

    def candidate(self, point, lam) -> None:
        """The mechanism for the master's weights: a mixture (no output budget) or the
        heaviest single channel; its own certified W."""
        start = (
            self.lfp if point is None else (self.sides[0].repair(point[0]), self.sides[1].repair(point[1]))
        )
        self._try(lam, start)

    def _try(self, lam, start) -> Certified:
        keep = np.flatnonzero(lam >= _MIN_WEIGHT) if self.l is None else np.array([int(np.argmax(lam))])
        w = lam[keep] / lam[keep].sum()
        M = np.hstack([wi * self.mats[i] for wi, i in zip(w, keep, strict=True)])
        cert = solve_inner(M, self.div, self.sides, start)
        if cert.lower > self.lower:
            self.lower, self.best = cert.lower, (M, tuple(keep.tolist()), tuple(w.tolist()), cert)
        return cert

    def refine(self) -> None:
        r"""Box-step cutting planes on the concave :math:`W(\lambda)` over mixtures of the
        channels found, for when the master's weights fall short (an inaccurate master point):
        every worst pair P seen gives the cut :math:`W(\lambda')\le\sum_i\lambda'_iF_i(P)`; the
        LP over the cuts, in a box around the best weights (shrunk after a failed step), gives
        the next weights.  Stops when the gap closes or the model promises less than
        _PROGRESS_RTOL in the box (concavity: then nowhere)."""
        if self.l is not None or len(self.mats) < 2 or self.best is None:
            return
        pairs, radius = [self.best[3].pair, self.lfp], _REFINE_BOX
        for _ in range(_REFINE_MAXITER):
            if self.closed():
                return
            center = np.zeros(len(self.mats))
            center[list(self.best[1])] = self.best[2]
            cuts = np.array([[objective(M, self.div, q[0], q[1]) for M in self.mats] for q in pairs])
            step = max_min_weights(cuts, center, radius)
            if step is None or step[1] - self.lower <= _PROGRESS_RTOL * self.upper:
                return
            before = self.lower
            pairs.append(self._try(step[0], pairs[int(np.argmin(cuts @ step[0]))]).pair)
            if self.lower <= before:
                radius /= 4.0

    def master_start(self, restart: bool):
        """The master's start: the best pair so far, or (restart) the best mixture's worst pair."""
        return self.best[3].pair if restart and self.best is not None else self.lfp

    def closed(self) -> bool:
        return self.upper - self.lower <= CERT_RTOL * self.upper


def robust_mechanism(
    p0_hat: Any,
    p1_hat: Any,
    eps: float,
    uncertainty: Uncertainty,
    divergence: str | FDivergence = "kl",
    max_outputs: int | None = None,
) -> RobustResult:
    """The eps-LDP mechanism with the best guaranteed utility over the uncertainty sets, with
    proven lower (``value``) and upper (``upper_bound``) bounds on the max-min (module docstring)."""
    u, p0, p1, labels, div = _check_inputs(p0_hat, p1_hat, uncertainty, divergence)
    eps = check_eps(eps, allow_inf=False)
    l = check_positive_int(max_outputs, "max_outputs", allow_none=True)
    sides = u.sides(p0, p1)
    search = _Search(p0, p1, eps, div, l, sides)
    pair = _input_lfp(div, sides, p0, p1)
    iterations, restart = 0, False
    while iterations < MAX_ITER:
        iterations += 1
        before = (search.upper, search.lower)
        new = search.oracle(pair)
        point, lam = solve_master(search.mats, div, sides, search.master_start(restart))
        search.candidate(point, lam)
        if not new:
            search.refine()
        if search.closed():
            break
        # a known channel again: the master's point was not better than before; stop only when
        # neither proven bound moved, else re-solve the master from another start (the current
        # mixture's worst pair) so one poor SLSQP solve does not end the search
        moved = _PROGRESS_RTOL * search.upper
        progress = search.upper < before[0] - moved or search.lower > before[1] + moved
        if not new and not progress:
            break
        restart = not new
        if point is not None:
            pair = (sides[0].repair(point[0]), sides[1].repair(point[1]))
        else:
            pair = search.best[3].pair if search.best is not None else search.lfp
    plug = optimal_mechanism(p0, p1, eps, div, l)
    assert plug.mechanism is not None
    pm = _used_matrix(plug.mechanism.matrix, "plug-in mechanism")
    plug_in = _worst_result(div, pm, solve_inner(pm, div, sides, search.lfp), p0, p1, plug.mechanism)
    return _robust_result(search, u, labels, plug_in, iterations)


def _robust_result(search: _Search, u, labels, plug_in, iterations) -> RobustResult:
    div = search.div
    assert search.best is not None
    M, keep, w, cert = search.best
    lo, up, gap, ok = _certificate(div, search.lower, search.upper)
    if len(keep) == 1:
        mech = spr_mechanism(search.parts[keep[0]], search.p0.size, search.eps, labels=labels)
        partition = search.parts[keep[0]]
    else:
        mech = Mechanism(M, search.eps, labels=labels, name="robust mixture")
        partition = None
    message = (
        "certified: gap <= 1e-8 relative"
        if ok
        else f"not certified: gap {gap:.3g} after {search.dp_solves} SPR solves; both bounds are proven"
    )
    return RobustResult(
        lo,
        up,
        gap,
        ok,
        search.lfp,
        mech,
        partition,
        plug_in,
        eps=search.eps,
        divergence=div.name,
        uncertainty=u,
        worst_pair=cert.pair,
        weights=w,
        dp_solves=search.dp_solves,
        iterations=iterations,
        message=message,
    )
