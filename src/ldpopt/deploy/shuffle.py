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
    :math:`\varepsilon_0 \le \log\bigl(n / (16\log(4/\delta))\bigr)`; refused outside.

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
    :data:`PMF_REL_ERR`).  The smallest eps with :math:`\delta(\varepsilon) \le \delta` is found
    by bisection, returning the upper end of the final bracket (rounded up).  **Valid for** every
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

Every result is at most eps0 (the shuffled reports of an eps0-LDP randomizer are eps0-DP).
:func:`local_epsilon_for` inverts a method: the largest eps0 (up to the bisection tolerance,
rounded down) whose central bound meets a target.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from ldpopt._validation import check_eps, check_positive_int, is_integer
from ldpopt.deploy.testing import check_level
from ldpopt.mechanism import as_mechanism

__all__ = [
    "SHUFFLE_METHODS",
    "ShuffleBound",
    "LocalEpsilon",
    "central_epsilon",
    "local_epsilon_for",
    "closed_form_validity",
    "rr_outputs",
    "clone_delta",
]

#: the accounting methods of :func:`central_epsilon`
SHUFFLE_METHODS = ("numerical", "closed_form", "rr")
#: each tail of Bin(n-1, p) left out of the sum carries at most this fraction of the target delta
#: (its whole mass is added to the bound, so leaving it out costs at most 2 * 2^-20 of delta)
TAIL_FRACTION = 2.0**-20
#: relative error allowed for one binomial CDF value (scipy's ``binom.cdf``, Boost's regularised
#: incomplete beta): spot checks against 200-bit mpmath gave at most 5.4e-14 (c = 10^4, six
#: standard deviations into the lower tail); 1e-11 leaves a margin of 180
CDF_REL_ERR = 1e-11
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
    if method == "closed_form":
        return
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
    return f"any eps0-LDP randomizer, replacement neighbours; {_NUMERICAL_RANGE}"


def closed_form_validity(n: Any, delta: Any) -> float:
    """Largest eps0 for which the closed form of :func:`central_epsilon` is proved: log(n / (16 log(4/delta)))
    (negative when n is too small for any eps0)."""
    n = check_positive_int(n, "n")
    delta = check_level(delta, "delta")
    ratio = n / (16.0 * math.log(4.0 / delta))
    return math.log(ratio)


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


def clone_delta(
    eps: float, eps0: float, n: int, *, p_clone: float, weight: float = 1.0, tail: float = 0.0
) -> float:
    r"""Upper bound on :math:`w\,D_{e^\varepsilon}(P\|Q)` of the clone pair (module docstring).

    ``p_clone`` is the probability that each of the other n - 1 users is a clone, ``weight`` the
    factor w, ``tail`` the mass of Bin(n - 1, p_clone) that may be left out on each side (added in
    full).  Includes the rounding allowance :data:`CDF_REL_ERR`.
    """
    if eps >= eps0:
        return 0.0
    c0 = math.exp(-eps0)
    alpha, alpha_bar = 1.0 / (1.0 + c0), c0 / (1.0 + c0)
    gamma = math.exp(eps)
    # P/Q > e^eps on the first coordinate a exactly when a < beta (c + 1)
    beta = -math.expm1(eps - eps0) / ((1.0 + gamma) * -math.expm1(-eps0))
    m = n - 1
    law = stats.binom(m, p_clone)
    if tail > 0.0 and m > 0:
        lo = max(int(law.ppf(tail)) - 1, 0)
        hi = min(int(law.isf(tail)) + 1, m)
    else:
        lo, hi = 0, m
    c = np.arange(lo, hi + 1, dtype=np.float64)
    pmf = law.pmf(c)
    t = np.ceil(beta * (c + 1.0)) - 1.0
    f_t = stats.binom.cdf(t, c, 0.5)
    f_t1 = stats.binom.cdf(t - 1.0, c, 0.5)
    p_le = alpha * f_t + alpha_bar * f_t1
    q_le = alpha_bar * f_t + alpha * f_t1
    hs = np.maximum(p_le - gamma * q_le, 0.0)
    body = float(np.dot(pmf, hs))
    rounding = CDF_REL_ERR * float(np.dot(pmf, p_le + gamma * q_le)) + PMF_REL_ERR * body
    left_out = (float(law.cdf(lo - 1)) if lo > 0 else 0.0) + (float(law.sf(hi)) if hi < m else 0.0)
    return min(weight * (body + rounding) + left_out, 1.0)


def _delta_bound(eps: float, eps0: float, n: int, delta: float, outputs: int | None) -> float:
    """The method's upper bound on delta at eps (for s-ary RR the smaller of its two bounds)."""
    tail = TAIL_FRACTION * delta
    generic = clone_delta(eps, eps0, n, p_clone=math.exp(-eps0), tail=tail)
    if outputs is None:
        return generic
    p_clone, weight = _clone_parameters(eps0, outputs)
    return min(generic, clone_delta(eps, eps0, n, p_clone=p_clone, weight=weight, tail=tail))


def _numerical(eps0: float, n: int, delta: float, outputs: int | None) -> tuple[float, float]:
    def dl(eps: float) -> float:
        return _delta_bound(eps, eps0, n, delta, outputs)

    d0 = dl(0.0)
    if d0 <= delta:
        return 0.0, d0
    lo, hi = 0.0, eps0  # dl(lo) > delta, dl(eps0) = 0
    d_hi = 0.0
    for _ in range(_MAX_BISECT):
        if hi - lo <= EPS_TOL:
            break
        mid = 0.5 * (lo + hi)
        d_mid = dl(mid)
        if d_mid <= delta:
            hi, d_hi = mid, d_mid
        else:
            lo = mid
    return hi, d_hi


def _central(eps0: float, n: int, delta: float, method: str, outputs: int | None) -> tuple[float, float]:
    if method == "closed_form":
        return min(_closed_form(eps0, n, delta), eps0), delta
    return _numerical(eps0, n, delta, outputs)


# ---------------------------------------------------------------------------------------------
# public functions
# ---------------------------------------------------------------------------------------------
def central_epsilon(
    eps0: Any, n: Any, delta: Any, method: str = "numerical", *, outputs: int | None = None
) -> ShuffleBound:
    """Central eps at ``delta`` of ``n`` shuffled reports of an ``eps0``-LDP randomizer.

    Parameters
    ----------
    eps0 : float
        Local privacy level (finite, > 0).
    n : int
        Number of users (reports), >= 1.
    delta : float
        Target delta in (0, 1).
    method : {"numerical", "closed_form", "rr"}
        See the module docstring; ``"rr"`` needs ``outputs``.
    outputs : int, optional
        s, the number of outputs of the s-ary randomized response (``method="rr"`` only).

    Raises
    ------
    ValueError
        Outside the method's validity range (the closed form's eps0 limit), or bad input.
    """
    eps0 = check_eps(eps0, "eps0", allow_inf=False)
    n = check_positive_int(n, "n")
    delta = check_level(delta, "delta")
    method, s = _check_method(method, outputs)
    _check_numerical_range(method, n, eps0=eps0)
    if method == "closed_form":
        limit = closed_form_validity(n, delta)
        if not eps0 <= limit:
            raise ValueError(
                f"the closed form is proved only for eps0 <= log(n / (16 log(4/delta))) = {limit:.6g} "
                f"(n={n}, delta={delta!r}), got eps0={eps0!r}; use method='numerical'"
            )
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

    Compared with a relative tolerance of ``LDP_RTOL``-size (1e-9): the mechanism is stored in floats.
    """
    m = as_mechanism(mech, "mech")
    s = m.num_outputs
    if s < 2 or not math.isfinite(m.eps):
        return None
    t = math.exp(-m.eps)  # 1 / (e^eps + s - 1) without overflowing e^eps
    q = t / (1.0 + (s - 1) * t)
    hi = 1.0 - (s - 1) * q
    mat = m.matrix
    is_hi = np.isclose(mat, hi, rtol=1e-9, atol=0.0)
    is_lo = np.isclose(mat, q, rtol=1e-9, atol=0.0)
    if not np.all(is_hi | is_lo) or not np.all(is_hi.sum(axis=1) == 1):
        return None
    return s
