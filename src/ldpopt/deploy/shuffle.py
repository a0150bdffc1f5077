r"""Shuffle-model accounting: the central (eps, delta) of n shuffled reports of an eps0-LDP randomizer.

A trusted shuffler hands the collector the multiset of the n reports, not who sent which.  For
neighbouring datasets that differ in one user's input, the shuffled reports are
:math:`(\varepsilon, \delta)`-DP with an :math:`\varepsilon` far below the local
:math:`\varepsilon_0` when n is large ("amplification by shuffling").

Methods (``method=``), each an upper bound on the central eps at the given delta:

``"closed_form"``
    Feldman, McMillan and Talwar, *Hiding among the clones* (FOCS 2021), Theorem 3.1, in the form
    their reference implementation evaluates:
    :math:`\varepsilon = \log\bigl(1 + \tfrac{1 - e^{-\varepsilon_0}}
    {1 + e^{-\varepsilon_0 - e'}}(a + b)\bigr)`
    with :math:`a = 8\sqrt{e^{\varepsilon_0}\log(4/\delta)/n}`, :math:`b = 8e^{\varepsilon_0}/n`,
    :math:`e' = \log(1 + a + b)`.  **Valid only for**
    :math:`\varepsilon_0 \le \log\bigl(n / (16\log(4/\delta))\bigr)`, in the range of
    ``"numerical"`` (``1 <= n <= 10^10``, ``eps0 <= 700``); refused outside.

``"numerical"``
    The same paper's reduction, evaluated exactly instead of bounded in closed form: the shuffled
    reports of two neighbouring datasets are a post-processing of the pair
    :math:`P = (A + \Delta,\; C - A + 1 - \Delta)`, :math:`Q = (A + 1 - \Delta,\; C - A + \Delta)`
    with :math:`C \sim \mathrm{Bin}(n-1, e^{-\varepsilon_0})` clones,
    :math:`A \sim \mathrm{Bin}(C, 1/2)` and
    :math:`\Delta \sim \mathrm{Bern}(e^{\varepsilon_0}/(e^{\varepsilon_0}+1))`, so
    :math:`\delta(\varepsilon) \le D_{e^\varepsilon}(P\|Q)` (hockey-stick divergence).  Reflecting
    the first coordinate given C swaps P and Q, so both directions have the same divergence.
    Given C = c the likelihood ratio is monotone in the first coordinate, so the divergence is a
    difference of two binomial CDFs at one cut-off.  It is summed over c in a window of
    :math:`\mathrm{Bin}(n-1, \cdot)` whose two tails (mass at most :data:`TAIL_FRACTION` times
    delta each) are added in full, plus rounding allowances (:data:`CDF_REL_ERR`,
    :data:`PMF_REL_ERR`); a window wider than :data:`TIGHT_MAX_TERMS` values is cut into that many
    blocks, each charged its whole mass times the divergence at its smallest c (an upper bound:
    the divergence is non-increasing in c).  The smallest eps with
    :math:`\delta(\varepsilon) \le \delta` is found by a bracketing search (Brent's points, exact
    sides: :func:`_search`), returning the upper end of the final bracket (rounded up).  **Valid
    for** every
    eps0-LDP randomizer (replacement neighbours), ``0 < eps0 <= 700``, ``1 <= n <= 10^10``,
    ``0 < delta < 1``.

``"rr"``
    The clone reduction specialised to s-ary randomized response (``outputs=s``; an SPR mechanism
    with s outputs is s-ary RR applied to its block label, so it qualifies - :func:`rr_outputs`).
    Each other user's report has the law :math:`2q\,U + (1-2q)\,L_z` with
    :math:`q = 1/(e^{\varepsilon_0}+s-1)`, U a fair coin between the labels of the two inputs
    of the differing user and :math:`L_z` a law that depends on the user's own input z only
    (the "stronger clones" of Feldman, McMillan and Talwar, SODA 2023, for k-RR); and the
    differing user's own report lands on one of those two labels with probability
    :math:`w = (e^{\varepsilon_0}+1)q`, the same under both datasets, and is uninformative
    otherwise.  Hence (post-processing and joint convexity of the hockey-stick divergence)
    :math:`\delta(\varepsilon) \le w\,D_{e^\varepsilon}(P_{2q}\|Q_{2q})` with
    :math:`C \sim \mathrm{Bin}(n-1, 2q)`.  The clone probability 2q exceeds the generic
    :math:`e^{-\varepsilon_0}` only when :math:`e^{\varepsilon_0} > s - 1`, so at every eps the
    smaller of this delta and the generic one is used (both bound the same delta): never looser
    than ``"numerical"``.  **Valid for** s-ary RR (and SPR mechanisms) with ``s >= 2`` outputs
    only, in the range of ``"numerical"``.

``"tight"``
    Reads the mechanism itself (a Mechanism, a design result or any channel matrix): for every
    pair of inputs, the channel's own clone pairs (:mod:`ldpopt.deploy.blanket`: the pair's
    local level, its clone probability ``min_z min_y Q(y|z) / (Q(y|x) + Q(y|x'))`` and, where
    the two rows agree on some outputs, the informative weight), the same exact sums with blocks
    of clone counts (:func:`clone_delta` with ``max_terms``); never above ``"numerical"``.  For
    two-output channels with ``n <= EXACT_BINARY_MAX_N`` the exact worst case over all datasets.
    ``lower``: explicit datasets (every other user at one input).  ``rounds=T``: the pessimistic
    PLD composition of :mod:`ldpopt.deploy.pld`.  ``docs/shuffle.md`` has the details.

Every result is at most eps0 (the shuffled reports of an eps0-LDP randomizer are eps0-DP).
:func:`local_epsilon_for` inverts a method: the largest eps0 (up to the bisection tolerance,
rounded down) whose central bound meets a target.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
from scipy import optimize, stats

from ldpopt._validation import check_eps, check_positive_int, check_real, is_integer, is_real
from ldpopt.deploy.blanket import (
    RATIO_SLACK,
    BinaryWorstCase,
    ClonePair,
    LowerPair,
    binary_exact_delta,
    binary_worst_case,
    clone_pairs,
    lower_delta,
    lower_pairs,
    small_exact_delta,
    small_worst_case,
)
from ldpopt.deploy.pld import CDF_REL_ERR, clone_pld, compose, explicit_pld, pld_delta, pld_delta_lower
from ldpopt.deploy.testing import check_level
from ldpopt.mechanism import LDP_RTOL, Mechanism, as_mechanism, check_channel_matrix

__all__ = [
    "SHUFFLE_METHODS",
    "ShuffleBound",
    "LocalEpsilon",
    "central_epsilon",
    "local_epsilon_for",
    "closed_form_validity",
    "rr_outputs",
    "clone_delta",
    "channel_level",
    "tight_delta",
]

#: the accounting methods of :func:`central_epsilon`
SHUFFLE_METHODS = ("numerical", "closed_form", "rr", "tight")
#: each tail of Bin(n-1, p) left out of the sum carries at most this fraction of the target delta
#: (its whole mass is added to the bound, so leaving it out costs at most 2 * 2^-20 of delta)
TAIL_FRACTION = 2.0**-20
#: relative error allowed for the Bin(n-1, p) weights (scipy's ``binom.pmf``): spot checks against
#: mpmath gave at most 2e-12 for n up to 10^10; 1e-9 leaves a margin of 500
PMF_REL_ERR = 1e-9
#: largest n of the numerical methods (the sum has ~15 sqrt(n p (1-p)) terms per evaluation)
N_MAX_NUMERICAL = 10**10
#: largest eps0 of the numerical methods (e^-eps0 and e^eps stay normal floats; beyond it no
#: realistic n has a clone and the central eps is eps0)
EPS0_MAX_NUMERICAL = 700.0
_NUMERICAL_RANGE = "0 < eps0 <= 700, 1 <= n <= 1e10, 0 < delta < 1"
#: bisection stops when the bracket on eps (or eps0) is this narrow
EPS_TOL = 1e-9
#: largest local eps0 searched by :func:`local_epsilon_for` (e^-64 clones per user: no amplification
#: for any realistic n)
EPS0_SEARCH_MAX = 64.0
_MAX_BISECT = 200
#: ``"tight"`` stops its bisections when the bracket is this fraction of its upper end (upper
#: rounded up, lower rounded down: both stay bounds)
TIGHT_REL_TOL = 1e-6
#: the lower bound of ``"tight"`` stops its bisection when the bracket is this fraction of its upper end
LOWER_REL_TOL = 1e-4
#: loss grid of the composition (each round's loss rounded up to it: the composed eps is at most
#: rounds * PLD_GRID above the exact PLD value)
PLD_GRID = 1e-4
#: the composition's grid is never finer than eps0 / PLD_MAX_CELLS (the one-round PLD's array has
#: about twice this many cells: 64 MB)
PLD_MAX_CELLS = 2**22
#: composed losses below -PLD_FLOOR are raised to it (pessimistic; keeps the grid short)
PLD_FLOOR = 64.0
#: every method but the closed form sums at most this many blocks of clone counts
#: (``clone_delta(max_terms=...)``: each block charged its whole mass times the divergence at its
#: smallest count, an upper bound; at n = 10^9, eps0 = 1 it raises eps by a relative 1e-7 and
#: cuts the work from ~10^5 terms per evaluation to 2048)
TIGHT_MAX_TERMS = 2048


@dataclass(frozen=True)
class ShuffleBound:
    """Central privacy of n shuffled reports: ``(value, delta)``-DP, ``value <= eps0``.

    ``delta_bound`` is the method's upper bound on delta at ``value`` (<= ``delta``; equal to
    ``delta`` for the closed form).  ``validity`` states the range in which the method is proved.
    """

    value: float
    eps0: float
    n: int
    delta: float
    method: str
    outputs: int | None
    delta_bound: float
    validity: str
    #: a lower bound on the central eps of the worst neighbouring datasets (``"tight"``: from
    #: explicit datasets; the other methods: 0, the trivial bound)
    lower: float = field(default=0.0, kw_only=True)
    #: the upper bound (= ``value``)
    upper: float = field(default=math.nan, kw_only=True)
    #: rounds of reports composed (``"tight"`` only; each user reports once per round)
    rounds: int = field(default=1, kw_only=True)

    def __post_init__(self) -> None:
        if math.isnan(self.upper):
            object.__setattr__(self, "upper", self.value)

    @property
    def gap(self) -> float:
        """``upper - lower``: how far the true central eps can be from ``value``."""
        return self.upper - self.lower


@dataclass(frozen=True)
class LocalEpsilon:
    """The largest local eps0 (rounded down) whose shuffled central eps is at most ``central_eps``.

    ``central`` is the method's bound at ``value`` (<= ``central_eps``).
    """

    value: float
    central_eps: float
    n: int
    delta: float
    method: str
    outputs: int | None
    central: float


# ---------------------------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------------------------
def _check_method(method: Any, outputs: Any) -> tuple[str, int | None]:
    if method not in SHUFFLE_METHODS:
        raise ValueError(f"method must be one of {SHUFFLE_METHODS}, got method={method!r}")
    if method == "rr":
        if outputs is None:
            raise ValueError("method='rr' needs outputs=s, the number of outputs of the s-ary RR")
        if not is_integer(outputs) or int(outputs) < 2:
            raise ValueError(f"outputs must be an integer >= 2, got outputs={outputs!r}")
        return method, int(outputs)
    if outputs is not None:
        raise ValueError(
            f"outputs is used by method='rr' only, got outputs={outputs!r} with method={method!r}"
        )
    return method, None


def _check_numerical_range(method: str, n: int, eps0: float | None = None) -> None:
    if n > N_MAX_NUMERICAL:
        raise ValueError(f"method={method!r} is implemented for n <= {N_MAX_NUMERICAL}, got n={n}")
    if eps0 is not None and eps0 > EPS0_MAX_NUMERICAL:
        raise ValueError(
            f"method={method!r} is implemented for eps0 <= {EPS0_MAX_NUMERICAL} (no clones beyond: the "
            f"central eps is eps0), got eps0={eps0!r}"
        )


def _validity(method: str, n: int, delta: float) -> str:
    if method == "closed_form":
        return f"eps0 <= log(n / (16 log(4/delta))) = {closed_form_validity(n, delta):.6g}"
    if method == "rr":
        return f"s-ary randomized response (or SPR with s outputs); {_NUMERICAL_RANGE}"
    if method == "tight":
        return f"the given channel (all neighbouring datasets), replacement neighbours; {_NUMERICAL_RANGE}"
    return f"any eps0-LDP randomizer, replacement neighbours; {_NUMERICAL_RANGE}"


def closed_form_validity(n: Any, delta: Any) -> float:
    """Largest eps0 for which the closed form of :func:`central_epsilon` is proved: log(n / (16 log(4/delta)))
    (negative when n is too small for any eps0)."""
    n = check_positive_int(n, "n")
    delta = check_level(delta, "delta")
    # in logs: n / (16 log(4/delta)) overflows a float for n beyond ~1e308
    return math.log(n) - math.log(16.0 * math.log(4.0 / delta))


# ---------------------------------------------------------------------------------------------
# kernels
# ---------------------------------------------------------------------------------------------
def _closed_form(eps0: float, n: int, delta: float) -> float:
    a = 8.0 * math.sqrt(math.exp(eps0) * math.log(4.0 / delta) / n)
    b = 8.0 * math.exp(eps0) / n
    e_prime = math.log1p(a + b)
    factor = -math.expm1(-eps0) / (1.0 + math.exp(-eps0 - e_prime))
    return math.log1p(factor * (a + b))


def _clone_parameters(eps0: float, outputs: int) -> tuple[float, float]:
    """s-ary RR: (probability that another user is a clone, weight of the informative branch)."""
    c0 = math.exp(-eps0)
    denom = 1.0 + (outputs - 1) * c0  # q = 1 / (e^eps0 + s - 1) = c0 / denom, w = (e^eps0 + 1) q
    return 2.0 * c0 / denom, (1.0 + c0) / denom


def _clone_hs(eps: float, eps0: float, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Given C = c clones: (hockey-stick divergence of the clone pair, P(S) + e^eps Q(S) of its set)."""
    c0 = math.exp(-eps0)
    alpha, alpha_bar = 1.0 / (1.0 + c0), c0 / (1.0 + c0)
    gamma = math.exp(eps)
    # P/Q > e^eps on the first coordinate a exactly when a < beta (c + 1)
    beta = -math.expm1(eps - eps0) / ((1.0 + gamma) * -math.expm1(-eps0))
    t = np.ceil(beta * (c + 1.0)) - 1.0
    f_t = stats.binom.cdf(t, c, 0.5)
    f_t1 = stats.binom.cdf(t - 1.0, c, 0.5)
    p_le = alpha * f_t + alpha_bar * f_t1
    q_le = alpha_bar * f_t + alpha * f_t1
    return np.maximum(p_le - gamma * q_le, 0.0), p_le + gamma * q_le


def clone_delta(
    eps: float,
    eps0: float,
    n: int,
    *,
    p_clone: float,
    weight: float = 1.0,
    tail: float = 0.0,
    max_terms: int | None = None,
) -> float:
    r"""Upper bound on :math:`w\,D_{e^\varepsilon}(P\|Q)` of the clone pair (module docstring).

    ``p_clone`` is the probability that each of the other n - 1 users is a clone, ``weight`` the
    factor w, ``tail`` the mass of Bin(n - 1, p_clone) that may be left out on each side (added in
    full).  Includes the rounding allowance :data:`CDF_REL_ERR`.  With ``max_terms``, a window of
    more values of C is cut into that many blocks, each charged its whole mass times the
    divergence at its smallest C (the divergence given C = c is non-increasing in c: one more
    clone is a data-independent fair coin added to the pair, a post-processing).
    """
    eps = check_real(eps, "eps")
    if not 0.0 <= eps < math.inf:
        raise ValueError(f"eps must be a finite number >= 0, got eps={eps!r}")
    eps0 = check_eps(eps0, "eps0", allow_inf=False)
    if eps0 > EPS0_MAX_NUMERICAL:
        raise ValueError(f"eps0 must be <= {EPS0_MAX_NUMERICAL} (e^eps stays finite), got eps0={eps0!r}")
    n = check_positive_int(n, "n")
    p_clone = _check_unit(p_clone, "p_clone")
    weight = _check_unit(weight, "weight")
    tail = _check_unit(tail, "tail")
    if max_terms is not None:
        max_terms = check_positive_int(max_terms, "max_terms")
    return _clone_delta(eps, eps0, n, p_clone=p_clone, weight=weight, tail=tail, max_terms=max_terms)


def _check_unit(value: Any, name: str) -> float:
    """A real number in [0, 1]; errors name ``name``."""
    v = check_real(value, name)
    if not 0.0 <= v <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {name}={value!r}")
    return v


def _clone_delta(
    eps: float,
    eps0: float,
    n: int,
    *,
    p_clone: float,
    weight: float = 1.0,
    tail: float = 0.0,
    max_terms: int | None = None,
) -> float:
    """:func:`clone_delta` without the validation (the callers here pass checked values)."""
    if eps >= eps0:
        return 0.0
    m = n - 1
    law = stats.binom(m, p_clone)
    if tail > 0.0 and m > 0:
        lo = max(int(law.ppf(tail)) - 1, 0)
        hi = min(int(law.isf(tail)) + 1, m)
    else:
        lo, hi = 0, m
    left_out = (float(law.cdf(lo - 1)) if lo > 0 else 0.0) + (float(law.sf(hi)) if hi < m else 0.0)
    if max_terms is not None and hi - lo + 1 > max_terms:
        edges = np.unique(np.linspace(lo, hi + 1, max_terms + 1).astype(np.int64)).astype(np.float64)
        c = edges[:-1]
        cdf = law.cdf(edges - 1.0)
        # block masses as CDF differences: each CDF value within CDF_REL_ERR, plus a unit roundoff
        mass = np.maximum(np.diff(cdf), 0.0) + CDF_REL_ERR * (cdf[1:] + cdf[:-1]) + 2.0**-52
    else:
        c = np.arange(lo, hi + 1, dtype=np.float64)
        mass = law.pmf(c)
    hs, both = _clone_hs(eps, eps0, c)
    body = float(np.dot(mass, hs))
    rounding = CDF_REL_ERR * float(np.dot(mass, both)) + PMF_REL_ERR * body
    return min(weight * (body + rounding) + left_out, 1.0)


def _delta_bound(eps: float, eps0: float, n: int, delta: float, outputs: int | None) -> float:
    """The method's upper bound on delta at eps (for s-ary RR the smaller of its two bounds)."""
    tail = TAIL_FRACTION * delta
    terms = TIGHT_MAX_TERMS
    generic = _clone_delta(eps, eps0, n, p_clone=math.exp(-eps0), tail=tail, max_terms=terms)
    if outputs is None:
        return generic
    p_clone, weight = _clone_parameters(eps0, outputs)
    return min(
        generic, _clone_delta(eps, eps0, n, p_clone=p_clone, weight=weight, tail=tail, max_terms=terms)
    )


#: dl values are floored here before their log is taken by the root finder (0 is a valid delta)
_LOG_FLOOR = 1e-300
#: brentq's smallest relative tolerance (4 units of roundoff)
_BRENT_RTOL = 4.0 * 2.0**-52


def _search(
    dl: Callable[[float], float], delta: float, ends: tuple[float, float, float, float], rel: float
) -> tuple[float, float, float, float]:
    """Shrink a bracket (lo, dl(lo) > delta, hi, dl(hi) <= delta) until hi - lo <= max(EPS_TOL,
    rel * hi).

    Brent's method on log dl - log delta (delta(eps) is close to log-linear near the answer:
    a handful of evaluations instead of a bisection's twenty) proposes the points; only the side
    of delta on which each evaluated point falls is used, so the ends keep their meaning whatever
    the root finder does, and a bisection finishes the bracket if it is still too wide."""
    lo, d_lo, hi, d_hi = ends
    seen: list[tuple[float, float]] = []

    def f(x: float) -> float:
        # positive exactly when dl(x) > delta (a value at delta maps to a tiny negative number)
        if x <= lo or x >= hi:
            d = d_lo if x <= lo else d_hi
        else:
            d = dl(x)
            seen.append((x, d))
        value = math.log(max(d, _LOG_FLOOR) / delta)
        return value if d > delta else min(value, -_LOG_FLOOR)

    tol = max(EPS_TOL, rel * hi)
    if hi - lo > tol and d_lo > delta >= d_hi:  # (callers may pass an upper end above delta)
        optimize.brentq(f, lo, hi, xtol=0.5 * EPS_TOL, rtol=_BRENT_RTOL + 0.5 * rel, maxiter=_MAX_BISECT)
    for x, d in seen:
        if d <= delta and x < hi:
            hi, d_hi = x, d
        elif d > delta and x > lo:
            lo, d_lo = x, d
    for _ in range(_MAX_BISECT):
        if hi - lo <= max(EPS_TOL, rel * hi):
            break
        mid = 0.5 * (lo + hi)
        d_mid = dl(mid)
        if d_mid <= delta:
            hi, d_hi = mid, d_mid
        else:
            lo, d_lo = mid, d_mid
    return lo, d_lo, hi, d_hi


def _bisect_upper(
    dl: Callable[[float], float], delta: float, hi: float, rel: float = 0.0, lo: float = 0.0
) -> tuple[float, float]:
    """Smallest eps in [0, hi] with dl(eps) <= delta (dl non-increasing, dl(hi) <= delta assumed):
    the upper end of the final bracket, with dl there."""
    d0 = dl(lo)
    if d0 <= delta:
        return lo, d0
    _, _, hi, d_hi = _search(dl, delta, (lo, d0, hi, dl(hi)), rel)
    return hi, d_hi


def _bisect_lower(
    dl: Callable[[float], float], delta: float, hi: float, rel: float = 0.0, lo: float = 0.0
) -> float:
    """Largest eps in [0, hi] known to have dl(eps) > delta (dl a lower bound on delta): the lower
    end of the final bracket (0 when dl(0) <= delta)."""
    d_lo = dl(lo)
    if d_lo <= delta:
        return lo
    d_hi = dl(hi)
    if d_hi > delta:
        return hi
    return _search(dl, delta, (lo, d_lo, hi, d_hi), rel)[0]


def _numerical(eps0: float, n: int, delta: float, outputs: int | None) -> tuple[float, float]:
    return _bisect_upper(lambda eps: _delta_bound(eps, eps0, n, delta, outputs), delta, eps0)


def _central(eps0: float, n: int, delta: float, method: str, outputs: int | None) -> tuple[float, float]:
    if method == "closed_form":
        return min(_closed_form(eps0, n, delta), eps0), delta
    return _numerical(eps0, n, delta, outputs)


# ---------------------------------------------------------------------------------------------
# public functions
# ---------------------------------------------------------------------------------------------
def channel_level(matrix: Any) -> float:
    """The LDP level of a channel matrix: max over outputs of log(max_x Q / min_x Q), raised by
    the rounding slack of :data:`~ldpopt.deploy.blanket.RATIO_SLACK` (inf when a column has a zero
    next to a positive entry; all-zero columns are ignored)."""
    m = check_channel_matrix(matrix, "matrix")
    m = m[:, m.max(axis=0) > 0.0]
    lo = m.min(axis=0)
    if np.any(lo <= 0.0):
        return math.inf
    return float(np.max(np.log(m.max(axis=0)) - np.log(lo))) * (1.0 + RATIO_SLACK)


def _as_local(local: Any) -> tuple[float, Mechanism | None]:
    """(eps0, mechanism or None) from a number, a Mechanism / design result or a channel matrix."""
    if is_real(local):
        return check_eps(local, "eps0", allow_inf=False), None
    given = isinstance(local, Mechanism) or isinstance(getattr(local, "mechanism", None), Mechanism)
    matrix = as_mechanism(local, "mech").matrix if given else check_channel_matrix(local, "mech")
    level = channel_level(matrix)
    if not math.isfinite(level):
        raise ValueError(
            "mech must be eps0-LDP with a finite eps0 (no zero next to a positive entry in a column)"
        )
    if given:
        mech = as_mechanism(local, "mech")
        return max(min(level, mech.eps), 0.0), mech
    # identical rows (level 0): a Mechanism needs eps > 0; the shuffled bound is 0 (central_epsilon)
    return max(level, 0.0), Mechanism(matrix, max(level, 2.0**-52))


def _pair_delta(eps: float, *, pair: ClonePair, n: int, tail: float) -> float:
    return pair.weight * _clone_delta(
        eps, pair.eps0, n, p_clone=pair.p_clone, tail=tail, max_terms=TIGHT_MAX_TERMS
    )


def _lower_at(eps: float, *, pair: LowerPair, n: int, tail: float) -> float:
    return lower_delta(eps, n, pair, tail)


def _group_delta(eps: float, group: tuple[ClonePair, ...], n: int, tail: float) -> float:
    out = 1.0
    for c in group:
        if c.eps0 <= 0.0:
            return 0.0
        if c.eps0 <= EPS0_MAX_NUMERICAL and c.p_clone > 0.0:
            out = min(out, _pair_delta(eps, pair=c, n=n, tail=tail))
    return out


def tight_delta(mech: Any, eps: Any, n: Any, delta: Any, *, stop_above: float | None = None) -> float:
    """The ``"tight"`` upper bound on delta at ``eps`` of n shuffled reports of ``mech``.

    ``delta`` is the target (the binomial tails left out, added in full, are
    :data:`TAIL_FRACTION` times it each).  The smallest eps with ``tight_delta <= delta`` is the
    ``value`` of :func:`central_epsilon` (up to its bisection tolerance; for a two-output channel
    with ``n <= EXACT_BINARY_MAX_N`` that value comes from the exact worst case and can be
    smaller).  With ``stop_above``,
    the scan over pairs of inputs stops at the first pair whose bound exceeds it (the value
    returned is then that pair's bound: still > ``stop_above``, no longer the maximum).
    """
    eps0, m = _as_local(mech)
    if m is None:
        raise TypeError(
            f"mech must be a Mechanism, a design result or a channel matrix (the tight bound reads the "
            f"channel), got mech={mech!r}"
        )
    eps = check_eps(eps, "eps", allow_inf=False)
    n = check_positive_int(n, "n")
    tail = TAIL_FRACTION * check_level(delta, "delta")
    generic = _clone_delta(eps, eps0, n, p_clone=math.exp(-eps0), tail=tail, max_terms=TIGHT_MAX_TERMS)
    if stop_above is not None and generic <= stop_above:
        return generic  # no pair can do worse than the generic bound
    worst = 0.0
    for group in clone_pairs(m.matrix):
        worst = max(worst, _group_delta(eps, group, n, tail))
        if worst >= generic:
            return generic
        if stop_above is not None and worst > stop_above:
            return worst
    return worst


def _tight_upper(matrix: np.ndarray, eps0: float, n: int, delta: float) -> tuple[float, float]:
    """max over row pairs of the min over their clone pairs, and the generic bound: (eps, delta at eps)."""
    tail, tol, terms = TAIL_FRACTION * delta, TIGHT_REL_TOL, TIGHT_MAX_TERMS
    best = _bisect_upper(
        lambda e: _clone_delta(e, eps0, n, p_clone=math.exp(-eps0), tail=tail, max_terms=terms),
        delta,
        eps0,
        tol,
    )
    worst = (0.0, 0.0)
    for group in clone_pairs(matrix):
        if worst[0] > 0.0 and _group_delta(worst[0], group, n, tail) <= delta:
            continue  # this pair already meets delta at the running worst eps: it cannot raise it
        pair_best = (math.inf, 0.0)
        for c in group:
            if c.eps0 <= 0.0:
                pair_best = (0.0, 0.0)
                break
            if c.eps0 > EPS0_MAX_NUMERICAL or c.p_clone <= 0.0:
                cand = (c.eps0, 0.0)
            else:
                cand = _bisect_upper(partial(_pair_delta, pair=c, n=n, tail=tail), delta, c.eps0, tol)
            pair_best = min(pair_best, cand)
        worst = max(worst, pair_best)
        if worst[0] >= best[0]:  # the generic bound is the smaller: no need to look further
            return best
    return min(worst, best)


#: relative difference of local levels ignored when pruning composition candidates (the channel's
#: levels are raised by RATIO_SLACK = 1e-12 against rounding)
_LEVEL_SLACK = 1e-9


def _rounds_candidates(matrix: np.ndarray, eps0: float) -> list[ClonePair]:
    """Clone pairs each dominating every pair of inputs (for composition one pair must serve all)."""
    out = [ClonePair(eps0, math.exp(-eps0), 1.0)]
    groups = clone_pairs(matrix)
    if len(groups) == 1:
        out += [c for c in groups[0] if 0.0 < c.eps0 <= EPS0_MAX_NUMERICAL and c.p_clone > 0.0]
    elif groups:
        # the largest local level and the fewest clones of all pairs: both post-processing-monotone
        level = max(g[0].eps0 for g in groups)
        p_min = min(g[0].p_clone for g in groups)
        if 0.0 < level <= EPS0_MAX_NUMERICAL and p_min > 0.0:
            out.append(ClonePair(level, p_min, 1.0))
    # a pair with a level no higher (up to the channel levels' rounding slack), clones no rarer
    # and a weight no larger than another's is (nearly) a post-processing of it: the other's bound
    # is not computed.  Each candidate's bound is valid on its own, so leaving any out keeps the
    # minimum a bound; this only saves time (a third of it for k-RR, k >= 3)
    return [c for c in out if not any(d != c and _dominates(d, c) for d in out)]


def _dominates(d: ClonePair, c: ClonePair) -> bool:
    return d.eps0 <= c.eps0 * (1.0 + _LEVEL_SLACK) and d.p_clone >= c.p_clone and d.weight <= c.weight


def _grid(eps0: float, one_round: float) -> float:
    """The loss grid of the composition: PLD_GRID, or finer when one round's eps is small (each
    round's losses are rounded up to it, so the composed eps is at most rounds * h above exact;
    the PLDs are trimmed to their support, so a fine grid costs only where there is mass)."""
    return min(PLD_GRID, eps0 / 64.0, max(one_round / 64.0, eps0 / PLD_MAX_CELLS))


def _tight_rounds(
    matrix: np.ndarray, eps0: float, n: int, delta: float, rounds: int, one_round: float
) -> tuple[float, float]:
    """Upper bound on the central eps of ``rounds`` composed rounds: the best of the dominating
    pairs' pessimistic PLDs (:mod:`ldpopt.deploy.pld`)."""
    tail = TAIL_FRACTION * delta
    best = (rounds * eps0, 0.0)  # basic composition of the trivial bound
    for c in _rounds_candidates(matrix, eps0):
        h = _grid(c.eps0, one_round)
        one = clone_pld(c.eps0, n, c.p_clone, c.weight, h, tail)
        law = compose(one, rounds, PLD_FLOOR)
        found = _bisect_upper(partial(_composed_delta, law=law), delta, rounds * c.eps0, TIGHT_REL_TOL)
        best = min(best, found)
    return best


def _composed_delta(eps: float, *, law: Any) -> float:
    return pld_delta(law, eps)


def _composed_lower_delta(eps: float, *, law: Any) -> float:
    return pld_delta_lower(law, eps)


def _count_pair(pair: LowerPair, n: int, tail: float) -> tuple[np.ndarray, np.ndarray]:
    """Laws of the count in S1 for the explicit datasets: Bin(n-1, r1) + Bern(a1) vs + Bern(b1)
    (a post-processing of the shuffled reports), over the window of the binomial (tails dropped)."""
    (r1, _), (a1, _), (b1, _) = pair.rest, pair.a, pair.b
    law = stats.binom(n - 1, r1)
    lo, hi = (max(int(law.ppf(tail)) - 1, 0), min(int(law.isf(tail)) + 1, n - 1)) if n > 1 else (0, 0)
    k = np.arange(lo, hi + 2, dtype=np.float64)
    f_prev, f_here = law.pmf(k - 1.0), law.pmf(k)
    return a1 * f_prev + (1.0 - a1) * f_here, b1 * f_prev + (1.0 - b1) * f_here


def _rounds_lower(
    matrix: np.ndarray, eps0: float, n: int, delta: float, rounds: int, bounds: tuple[float, float]
) -> float:
    """Lower bound on the composed central eps: T rounds of the best explicit count pair's PLD
    (losses rounded down, tails and the FFT error bound taken off); ``bounds`` = (the composed
    upper bound, one round's upper bound)."""
    upper, single = bounds  # the composed upper bound, one round's
    tail = TAIL_FRACTION * delta
    pairs = [_count_pair(pr, n, tail) for pr in lower_pairs(matrix)]
    if not pairs:
        return 0.0
    probe = upper / math.sqrt(rounds)  # rank by the one-round divergence at a typical scale

    def divergence(pq: tuple[np.ndarray, np.ndarray]) -> float:
        p, q = pq
        g = math.exp(probe)
        return max(float(np.maximum(p - g * q, 0).sum()), float(np.maximum(q - g * p, 0).sum()))

    p, q = max(pairs, key=divergence)
    if float(np.maximum(q - p, 0).sum()) > float(np.maximum(p - q, 0).sum()):
        p, q = q, p
    h = _grid(eps0, single)
    law = compose(explicit_pld(p, q, h, eps0), rounds, PLD_FLOOR, lower=True)
    return _bisect_lower(partial(_composed_lower_delta, law=law), delta, upper, LOWER_REL_TOL)


def _exact_at(eps: float, *, worst: Any, side: int) -> float:
    fn = binary_exact_delta if isinstance(worst, BinaryWorstCase) else small_exact_delta
    return fn(eps, worst)[side]


def _exact_small(
    matrix: np.ndarray, n: int, delta: float, upper: tuple[float, float], lower: float
) -> tuple[float, float, float]:
    """Two or three outputs and small n: the exact worst case over every dataset (plus / minus
    its rounding allowance) replaces either bound where it is better; searched inside
    [lower, upper]."""
    worst: Any = binary_worst_case(matrix, n)
    if worst is None:
        worst = small_worst_case(matrix, n)
    if worst is None:
        return upper[0], upper[1], lower
    up = _bisect_upper(partial(_exact_at, worst=worst, side=0), delta, upper[0], TIGHT_REL_TOL, lo=lower)
    value, dbound = min(upper, up)
    low = _bisect_lower(partial(_exact_at, worst=worst, side=1), delta, value, LOWER_REL_TOL, lo=lower)
    return value, dbound, max(lower, low)


def _tight_lower(matrix: np.ndarray, n: int, delta: float, upper: float) -> float:
    """The largest eps whose delta some explicit dataset pair is known to exceed (rounded down).

    Candidates are ranked by their delta at half the upper bound; the best is bisected, the others
    are tried once at the running best (any of them can only raise it)."""
    tail, tol = TAIL_FRACTION * delta, LOWER_REL_TOL
    pairs = lower_pairs(matrix)
    probe = 0.5 * upper
    ranked = sorted(pairs, key=lambda pr: -lower_delta(probe, n, pr, tail))
    best = 0.0
    for pair in ranked:
        if lower_delta(best, n, pair, tail) > delta:
            best = _bisect_lower(partial(_lower_at, pair=pair, n=n, tail=tail), delta, upper, tol)
    return best


def central_epsilon(
    eps0: Any, n: Any, delta: Any, method: str = "numerical", *, outputs: int | None = None, rounds: Any = 1
) -> ShuffleBound:
    """Central eps at ``delta`` of ``n`` shuffled reports of an ``eps0``-LDP randomizer.

    Parameters
    ----------
    eps0 : float, Mechanism, design result or channel matrix
        Local privacy level (finite, > 0), or the mechanism itself (rows = inputs).  A mechanism
        given to ``"numerical"``, ``"closed_form"`` or ``"rr"`` is used through its eps (and, for
        ``"rr"``, its number of outputs when it is s-ary RR on a label); ``"tight"`` needs it.
    n : int
        Number of users (reports), >= 1.
    delta : float
        Target delta in (0, 1).
    method : {"numerical", "closed_form", "rr", "tight"}
        See the module docstring; ``"rr"`` needs ``outputs`` (or an RR-shaped mechanism).
        ``"tight"``: the channel's own clone pairs (:mod:`ldpopt.deploy.blanket`), with a lower
        bound from explicit datasets in ``lower`` (never looser than ``"numerical"``).
    outputs : int, optional
        s, the number of outputs of the s-ary randomized response (``method="rr"`` only).
    rounds : int
        T >= 1 rounds of shuffled reports, each user reporting once per round with fresh
        randomness (``method="tight"`` only for T > 1): composed through the pessimistic PLD of
        a clone pair dominating every pair of inputs (:mod:`ldpopt.deploy.pld`; at most
        ``T * PLD_GRID`` above the exact PLD value of that pair).  ``lower`` is then the larger of
        the one-round lower bound and the T-fold PLD of an explicit count pair rounded down.

    Raises
    ------
    ValueError
        Outside the method's validity range (the closed form's eps0 limit), or bad input.
    """
    eps0, mech = _as_local(eps0)
    n = check_positive_int(n, "n")
    delta = check_level(delta, "delta")
    if mech is not None and method == "rr" and outputs is None:
        outputs = rr_outputs(mech)
    method, s = _check_method(method, outputs)
    rounds = check_positive_int(rounds, "rounds")
    if rounds > 1 and method != "tight":
        raise ValueError(f"rounds > 1 needs method='tight', got rounds={rounds} with method={method!r}")
    if eps0 == 0.0:  # every input has the same report law: the reports reveal nothing
        return ShuffleBound(0.0, 0.0, n, delta, method, s, 0.0, "identical rows: 0-DP", rounds=rounds)
    if method == "tight" and mech is None:
        raise ValueError(
            "method='tight' reads the mechanism's own likelihood ratios: pass the Mechanism or its "
            "channel matrix instead of eps0 (e.g. ldpopt.randomized_response(2, eps0) for binary RR)"
        )
    _check_numerical_range(method, n, eps0=eps0)
    if method == "closed_form":
        limit = closed_form_validity(n, delta)
        if not eps0 <= limit:
            raise ValueError(
                f"the closed form is proved only for eps0 <= log(n / (16 log(4/delta))) = {limit:.6g} "
                f"(n={n}, delta={delta!r}), got eps0={eps0!r}; use method='numerical'"
            )
    if method == "tight":
        assert mech is not None
        value, dbound = _tight_upper(mech.matrix, eps0, n, delta)
        lower = _tight_lower(mech.matrix, n, delta, value)
        value, dbound, lower = _exact_small(mech.matrix, n, delta, (value, dbound), lower)
        if rounds > 1:
            one_round = value
            value, dbound = _tight_rounds(mech.matrix, eps0, n, delta, rounds, one_round)
            lower = max(lower, _rounds_lower(mech.matrix, eps0, n, delta, rounds, (value, one_round)))
        valid = _validity(method, n, delta)
        return ShuffleBound(value, eps0, n, delta, method, s, dbound, valid, lower=lower, rounds=rounds)
    value, dbound = _central(eps0, n, delta, method, s)
    return ShuffleBound(value, eps0, n, delta, method, s, dbound, _validity(method, n, delta))


def local_epsilon_for(
    central_eps: Any, n: Any, delta: Any, method: str = "numerical", *, outputs: int | None = None
) -> LocalEpsilon:
    """The largest local eps0 whose n shuffled reports are (``central_eps``, ``delta``)-DP by ``method``.

    Bisection on eps0 between ``central_eps`` (always admissible: shuffling never loses privacy)
    and the first failing value; the result is the lower end of the final bracket, so it is
    **rounded down** (by less than :data:`EPS_TOL`) and always meets the target.  For the closed
    form the search stops at the method's validity limit (the result is then that limit).
    """
    target = check_eps(central_eps, "central_eps", allow_inf=False)
    n = check_positive_int(n, "n")
    delta = check_level(delta, "delta")
    method, s = _check_method(method, outputs)
    if method == "tight":
        raise ValueError(
            "method='tight' depends on the mechanism, not only on eps0: design for a central target "
            "with ldpopt.deploy.central.optimal_for_central (or ldpopt.optimal_mechanism(..., central=...))"
        )
    _check_numerical_range(method, n)
    upper = EPS0_SEARCH_MAX
    if method == "closed_form":
        upper = min(upper, closed_form_validity(n, delta))

    def ok(e0: float) -> bool:
        if method == "closed_form":
            return _closed_form(e0, n, delta) <= target
        return _delta_bound(target, e0, n, delta, s) <= delta

    lo = target
    if upper <= lo:  # the closed form is not proved at eps0 = central_eps: only the trivial bound
        return LocalEpsilon(lo, target, n, delta, method, s, lo)
    hi = upper
    if ok(hi):
        lo = hi
    else:
        for _ in range(_MAX_BISECT):
            if hi - lo <= EPS_TOL:
                break
            mid = 0.5 * (lo + hi)
            if ok(mid):
                lo = mid
            else:
                hi = mid
    # ok(lo) holds: the method's bound at central_eps is within delta, so central_eps itself is an
    # admissible central level; the recomputed bound can exceed it only by its bisection tolerance
    achieved = min(_central(lo, n, delta, method, s)[0], target)
    return LocalEpsilon(lo, target, n, delta, method, s, achieved)


def rr_outputs(mech: Any) -> int | None:
    """s when ``mech`` is s-ary randomized response on a label of its input (an SPR or k-RR
    mechanism: every column takes the values ``e^eps q`` on one set of inputs and ``q`` elsewhere,
    ``q = 1/(e^eps + s - 1)``, and every row has exactly one high entry); else None.

    Compared with a relative tolerance of :data:`~ldpopt.mechanism.LDP_RTOL`: the mechanism is stored
    in floats.
    """
    m = as_mechanism(mech, "mech")
    s = m.num_outputs
    if s < 2 or not math.isfinite(m.eps):
        return None
    t = math.exp(-m.eps)  # 1 / (e^eps + s - 1) without overflowing e^eps
    q = t / (1.0 + (s - 1) * t)
    hi = 1.0 - (s - 1) * q
    mat = m.matrix
    is_hi = np.isclose(mat, hi, rtol=LDP_RTOL, atol=0.0)
    is_lo = np.isclose(mat, q, rtol=LDP_RTOL, atol=0.0)
    if not np.all(is_hi | is_lo) or not np.all(is_hi.sum(axis=1) == 1):
        return None
    return s
