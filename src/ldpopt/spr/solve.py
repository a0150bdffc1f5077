r"""Sort-Partition-Randomize: :func:`optimal_mechanism` = validate -> reduce -> policy -> solve -> result.

Specification: "Sort, Partition, Randomize" (Ghazi, Nasser, Calmon, Issa), Sections 2, 3 and 5.

For an LR-contiguous partition :math:`\pi=(B_1,\dots,B_s)` of the sorted alphabet the SPR
mechanism (eq. 11) has utility (eq. 30)

.. math:: D_f\big(Q_\pi^\top p \,\|\, Q_\pi^\top q\big) = \frac{\sum_t \mu(B_t)}{e^\varepsilon+s-1},
   \qquad \mu[a:b] = g\big(1+(e^\varepsilon-1)\Delta P,\ 1+(e^\varepsilon-1)\Delta Q\big)

with :math:`g(x,y)=yf(x/y)` and :math:`\Delta P = P_b-P_{a-1}` from prefix sums (eq. 31).
Because g is 1-homogeneous we divide numerator and denominator by :math:`e^\varepsilon` and
work with :math:`c=e^{-\varepsilon}`, :math:`A = 1-c` (``-expm1(-eps)``):

.. math:: \mu'[a:b] = g\big(c + A\Delta P,\ c + A\Delta Q\big),\qquad
   \text{value} = \frac{\sum_t \mu'(B_t)}{1+(s-1)c},

which never overflows, is accurate for tiny eps (the difference ``A (dP - dQ)`` is passed
to g separately) and is the deterministic likelihood-ratio quantizer at ``eps = inf``.

Modules: :mod:`~ldpopt.spr.reduction` (the likelihood-ratio reduction and block sums),
:mod:`~ldpopt.spr._policy` (which solver answers), :mod:`~ldpopt.spr.reference` (the readable
program) and :mod:`~ldpopt.spr._fast` (the compiled solvers, loaded on first use: they import
numba).
"""

from __future__ import annotations

import math
import time
import types
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import Any

import numpy as np

from ldpopt._numerics import rescale
from ldpopt._validation import check_eps, check_labelled_pair, check_positive_int
from ldpopt.divergences import (
    CODE_POWER_DOWN,
    CODE_POWER_UP,
    FDivergence,
    get_divergence,
    is_chernoff,
    logsumexp,
    power_log_terms,
    renyi_value,
)
from ldpopt.mechanism import Mechanism, spr_mechanism, spr_mechanism_from_assignment
from ldpopt.spr import _policy, chernoff
from ldpopt.spr.reduction import LRReduction, _Prefix, _reduce
from ldpopt.spr.reference import _dp_readable

__all__ = ["OptimalMechanismResult", "optimal_mechanism"]

#: Renyi far from S = 1 (``_solve_power_far``): a solve on S e^{-K} is redone with the scale of
#: the partition it found when that partition's log S is more than this below K (its blocks
#: may then have underflowed; e^{-600} is still ~1e43 times the smallest normal number)
_RESCALE_GAP = 600.0
#: at most this many rescaled solves: each lowers K by > _RESCALE_GAP and log S >= -eps/2
_MAX_RESCALES = 8


@dataclass(frozen=True)
class OptimalMechanismResult:
    """Result of an optimal-mechanism computation.

    Attributes
    ----------
    value : float
        Optimal utility :math:`D_f(M_0\\|M_1)` (Renyi divergence itself for ``renyi``).
    mechanism : Mechanism or None
        A mechanism attaining ``value``; rows are the user's original symbols (``None`` when the
        solver failed).
    partition : tuple of tuple of int, or None
        Blocks of original symbol indices, in likelihood-ratio order; output j of the mechanism
        is block j.  Symbols with zero mass under both distributions join the first block.
        ``None`` for mechanisms that are not given by a partition (``kov_lp``).
    num_outputs : int
        Number of outputs (blocks) of the mechanism.
    eps : float
    divergence : str
        Name of the utility divergence.
    max_outputs : int or None
        The output budget asked for.
    input_divergence : float
        :math:`D_f(P_0\\|P_1)`, the non-private value (for normalised utility).
    method : str
        ``"dp"``, ``"dinkelbach"``, ``"closed_form"``, ``"kov_lp"``...
    status : int
        0: optimal.  Invalid input raises instead of returning a result; the exact solvers do
        not fail numerically, so ``optimal_mechanism`` and the closed forms always report 0
        (``kov_lp`` reports HiGHS' status, ``ChannelResult``'s convention: not 0 = no mechanism,
        NaN value).
    success : bool
        ``status == 0``.
    message : str
        ``"optimal"``, or why the solver failed.
    lam : float
        Chernoff only (``divergence="chernoff"``): the lambda at which the returned mechanism's
        Chernoff information is attained; nan for the f-divergences.
    upper_bound : float
        Chernoff only: a certified upper bound on the Chernoff information of every eps-LDP
        mechanism within the budget, ``upper_bound - value <= 1e-9 max(1, value)``
        (``docs/chernoff.md``); nan for the f-divergences, whose optimum is exact.
    """

    value: float
    mechanism: Mechanism | None
    partition: tuple | None
    num_outputs: int
    eps: float
    divergence: str
    max_outputs: int | None = None
    input_divergence: float = math.nan
    _: KW_ONLY  # at most 8 positional fields; the rest by keyword
    method: str = "dp"
    status: int = 0
    message: str = "optimal"
    labels: tuple | None = field(default=None, repr=False)
    lam: float = math.nan
    upper_bound: float = math.nan

    @property
    def success(self) -> bool:
        """True when ``mechanism`` is optimal (``status == 0``)."""
        return self.status == 0

    @property
    def normalized_value(self) -> float:
        """``value / input_divergence`` in [0, 1] (nan when the denominator is 0 or infinite).

        A mechanism never increases a divergence (data processing), so the ratio is clipped
        to [0, 1]: outside it only by rounding.
        """
        d = self.input_divergence
        if d == 0 or not math.isfinite(d) or not math.isfinite(self.value):
            return math.nan
        return min(max(self.value / d, 0.0), 1.0)

    @property
    def labelled_partition(self) -> tuple | None:
        """``partition`` with symbol labels instead of indices (indices when there are no labels)."""
        if self.labels is None or self.partition is None:
            return self.partition
        return tuple(tuple(self.labels[i] for i in block) for block in self.partition)


def optimal_mechanism(
    p0: Any,
    p1: Any,
    eps: float,
    divergence: str | FDivergence = "kl",
    max_outputs: int | None = None,
    *,
    normalize: bool = False,
    method: str = "auto",
) -> OptimalMechanismResult:
    r"""Exactly optimal :math:`\varepsilon`-LDP mechanism for telling :math:`P_0` from :math:`P_1`.

    Solves :math:`\max_{Q} D_f(Q^\top P_0\|Q^\top P_1)` over all :math:`\varepsilon`-LDP channels
    with at most ``max_outputs`` outputs (eq. 3/4).  By Corollary 3.2 an SPR mechanism is
    optimal, found by the dynamic program of Prop. 3.3.

    Parameters
    ----------
    p0, p1 : array_like, dict or pandas Series
        The two distributions on the same finite alphabet (dict/Series keep their labels).
    eps : float
        Privacy level, > 0; ``math.inf`` means no privacy (the optimal deterministic
        likelihood-ratio quantizer into at most ``max_outputs`` cells).
    divergence : str or FDivergence
        ``"kl"``, ``"reverse_kl"``, ``"tv"``, ``"chi2"``, ``"hellinger"``, ``"js"``,
        ``"egamma:G"``, ``"renyi:A"``, ``"chernoff"`` (the Chernoff information, maximised by a
        certified search over lambda: ``docs/chernoff.md``) or an :class:`~ldpopt.FDivergence`.
    max_outputs : int, optional
        Output budget l; ``None`` means no budget (l = k).
    normalize : bool
        Rescale p0 and p1 to sum to 1 instead of rejecting them.
    method : {"auto", "dp", "fast"}
        ``"dp"`` runs the readable O(l k^2) program; ``"fast"``/``"auto"`` the compiled
        solvers when available (same optimum).

    Returns
    -------
    OptimalMechanismResult
    """
    u, v, labels = check_labelled_pair(p0, p1, normalize=normalize)
    eps = check_eps(eps)
    div = get_divergence(divergence)
    l_user = check_positive_int(max_outputs, "max_outputs", allow_none=True)
    if method not in ("auto", "dp", "fast"):
        raise ValueError(f"method must be 'auto', 'dp' or 'fast', got method={method!r}")
    fast = _compiled() if method != "dp" else None
    if fast is not None and fast.small_path(div, u.shape[0]):
        # small alphabets: reduction, prefix sums and solve in one compiled call (None: the
        # likelihood ratios have near-ties, which the exact reduction below merges)
        small = fast.solve_small(u, v, eps, div, l_user)
        if small is not None:
            return _small_result(small, u, v, eps, div, l_user, labels)
    red = _reduce(u, v)
    l = red.k if l_user is None else min(l_user, red.k)
    if is_chernoff(div):
        sol = _solve_chernoff(red, eps, l, fast)
        res = _build_result(red, sol.value, sol.cuts, eps, div, l_user, u, v, labels, "branch_and_bound")
        return replace(res, lam=sol.lam, upper_bound=sol.upper_bound)
    raw, cuts, used = _solve_reduced(red.p, red.q, eps, div, l, method)
    return _build_result(red, raw, cuts, eps, div, l_user, u, v, labels, used)


def _solve_chernoff(red, eps: float, l: int, fast) -> chernoff.ChernoffSolution:
    """The Chernoff search of a reduced instance: over the readable program (``fast`` None:
    ``method="dp"``), else compiled where the compiled search is ready
    (``_fast.chernoff_search_ready``), else in Python over the compiled table solver, whose time
    is charged to the solve policy's ski rental."""
    if fast is None:
        return chernoff.solve_reduced(red.p, red.q, eps, l, fast=False)
    if fast.chernoff_search_ready(red.k):
        return chernoff.solve_reduced(red.p, red.q, eps, l)
    t0 = time.perf_counter()
    sol = chernoff.solve_reduced(red.p, red.q, eps, l, compiled=False)
    fast.charge_table(time.perf_counter() - t0)
    return sol


def _small_result(small, u, v, eps, div, l_user, labels) -> OptimalMechanismResult:
    """The result of ``_fast.solve_small``'s optimum: the partition and the mechanism from the
    solver's assignment of symbols to outputs (the blocks ``red.lift_blocks(cuts)`` would give:
    ascending symbols, those of mass 0 in block 0); Renyi through the reduction (its value is
    evaluated from the blocks, far from S = 1 after a second solve)."""
    raw, nb, used, input_div, block_of, grouping, reduced = small
    if div.code in (CODE_POWER_UP, CODE_POWER_DOWN):
        red, cuts = reduced()
        if _policy.power_far(div, raw):
            l = red.k if l_user is None else min(l_user, red.k)
            cuts = _solve_power_far(red.p, red.q, eps, div, l, cuts, True)
        return _build_result(red, raw, cuts, eps, div, l_user, u, v, labels, used, input_div)
    if grouping is None:
        mech = spr_mechanism_from_assignment(block_of, eps, labels=labels)
    else:
        # the solver's own assignment and blocks (valid by construction; checked in the tests)
        grouped, ends = grouping
        mech = Mechanism._spr_grouped(block_of, grouped, ends, eps, labels)
    return OptimalMechanismResult(
        value=_partition_value(None, None, eps, div, None, raw),
        mechanism=mech,
        partition=mech.partition,
        num_outputs=nb,
        eps=eps,
        divergence=div.name,
        max_outputs=l_user,
        input_divergence=input_div,
        method=used,
        labels=labels,
    )


def _solve_reduced(p, q, eps, div, l, method):
    """``(raw, cuts, method name)`` of the reduced instance: the compiled solvers or the readable
    program (:func:`_policy.use_compiled`), then Renyi far from S = 1 solved again
    (:func:`_policy.power_far`)."""
    fast = _policy.use_compiled(method, div, p.shape[0])
    if fast:
        raw, cuts, name = _compiled().solve(p, q, eps, div, l)
    else:
        raw, cuts = _dp_readable(p, q, eps, div, l)
        name = "dp"
    if _policy.power_far(div, raw):
        cuts = _solve_power_far(p, q, eps, div, l, cuts, fast)
    return raw, cuts, name


_FAST: types.ModuleType | None = None


def _compiled() -> types.ModuleType:
    """The compiled solvers (:mod:`ldpopt.spr._fast`), imported on first use: importing them
    imports numba (about half a second), which ``import ldpopt`` and a readable design do not
    need.  (A deferred import of a heavy dependency, not a dodge: ``_fast`` does not import this
    module, and lint-imports sees the edge.)  Kept after the first call: a solve of 100 symbols
    takes tens of microseconds, of which an import statement would be one."""
    global _FAST
    if _FAST is None:
        from ldpopt.spr import _fast

        _FAST = _fast
    return _FAST


# ---------------------------------------------------------------------------------------------
# Renyi far from S = 1: the scaled Renyi sum itself, in the log domain
# ---------------------------------------------------------------------------------------------
def _power_log_table(p: np.ndarray, q: np.ndarray, eps: float, alpha: float) -> np.ndarray:
    """log(x^a y^(1-a)) of every block [t, i), packed at i (i - 1) / 2 + t (k (k+1) / 2 values;
    one end point at a time, so the temporaries are O(k))."""
    k = p.shape[0]
    c, A, lf = rescale(eps)
    pre = _Prefix(p, q)
    L = np.empty(k * (k + 1) // 2)
    for i in range(1, k + 1):
        dp, dq, dd = pre.sums(np.arange(i), i)
        L[i * (i - 1) // 2 : i * (i + 1) // 2] = power_log_terms(alpha, c + A * dp, c + A * dq, A * dd, lf)
    return L


def _log_sum_of(L: np.ndarray, cuts, c: float) -> float:
    """log S of a partition from the block log terms: log-sum-exp minus log(1 + (s - 1) c)."""
    terms = np.array([L[b * (b - 1) // 2 + a] for a, b in cuts])
    return logsumexp(terms) - math.log1p((len(cuts) - 1) * c)


def _solve_power_far(p, q, eps, div, l, cuts, fast: bool):
    r"""Optimal partition for D_alpha where S is far from 1, by optimising S e^{-K} itself.

    :math:`S(\pi)=\sum_t x_t^\alpha y_t^{1-\alpha}/(1+(s-1)c)` is maximised (a > 1) or minimised
    (a < 1) over the same partitions, with every block term ``exp(log term - K)`` from the
    log domain (:func:`ldpopt.divergences.power_log_terms`): a positive scale changes no
    decision.  For a > 1, K is the largest block term (no block overflows; the optimum is at
    least a third of it, so it does not underflow); for a < 1, K is log S of the given
    partition (the centred optimum, within ~ulp of the best S), lowered while the solve's own
    partition lies more than ``_RESCALE_GAP`` below it.  ``fast`` runs the compiled table path
    (``_fast.solve_scores``), else the readable program; both take O(k^2) memory here.
    """
    L = _power_log_table(p, q, eps, div.param)
    c = rescale(eps).c
    up = div.code == CODE_POWER_UP
    solve = _table_solver(p, q, eps, div, l, fast)
    if up:
        K = float(np.max(L))
        if math.isinf(K):
            # eps = inf and a block with q = 0 < p: the optimum is inf, attained by any partition
            # with such a block (the overflowing finite blocks must not be taken for one)
            return solve(np.isposinf(L).astype(float))
    else:
        K = _log_sum_of(L, cuts, c)
        if math.isinf(K):
            return cuts  # S = 0 (eps = inf, disjoint supports): the optimum is inf
    for _ in range(_MAX_RESCALES):
        with np.errstate(over="ignore", under="ignore"):
            table = np.exp(L - K)
        if not up:
            table = -table
        cuts = solve(table)
        log_s = _log_sum_of(L, cuts, c)
        if up or not log_s < K - _RESCALE_GAP:
            break
        K = log_s
    return cuts


def _table_solver(p, q, eps, div, l, fast: bool):
    """table -> optimal cuts: the compiled table path (``fast``) or the readable program."""
    c = rescale(eps).c
    if fast:
        solve_scores = _compiled().solve_scores
        return lambda table: solve_scores(table, p.shape[0], l, c)[1]
    return lambda table: _dp_readable(p, q, eps, div, l, table)[1]


# ---------------------------------------------------------------------------------------------
# The result
# ---------------------------------------------------------------------------------------------
def _partition_value(p, q, eps, div: FDivergence, cuts, raw: float) -> float:
    """The reported value of the SPR mechanism of ``cuts``, >= 0.

    Renyi: :math:`D_\alpha` of the outputs evaluated from the blocks (near/far forms of
    :func:`ldpopt.divergences.renyi_value`); otherwise the transformed raw optimum, clipped at
    0: the divergence of two output distributions is >= 0 (Jensen), so a negative sum is
    rounding (only a user's generator, whose terms change sign, can produce one).
    """
    if div.code in (CODE_POWER_UP, CODE_POWER_DOWN):
        c, A, lf = rescale(eps)
        pre = _Prefix(np.asarray(p, float), np.asarray(q, float))
        a = np.array([ab[0] for ab in cuts])
        b = np.array([ab[1] for ab in cuts])
        dp, dq, dd = pre.sums(a, b)
        denom = 1.0 + (len(cuts) - 1) * c
        return renyi_value(div.code, div.param, c + A * dp, c + A * dq, A * dd, denom, lf)
    value = div.transform(raw)
    return value if value > 0.0 or math.isnan(value) else 0.0


def _build_result(
    red: LRReduction,
    raw: float,
    cuts,
    eps: float,
    div: FDivergence,
    l_user,
    u: np.ndarray,
    v: np.ndarray,
    labels,
    method: str,
    input_div: float | None = None,
) -> OptimalMechanismResult:
    """The result of the optimum ``(raw, cuts)`` of the reduced instance ``red`` (``input_div``:
    D_f(u || v) when the solver computed it, else ``div(u, v)``)."""
    partition = red.lift_blocks(cuts)
    mech = spr_mechanism(partition, red.k_original, eps, labels=labels)
    return OptimalMechanismResult(
        value=_partition_value(red.p, red.q, eps, div, cuts, raw),
        mechanism=mech,
        partition=partition,
        num_outputs=len(partition),
        eps=eps,
        divergence=div.name,
        max_outputs=l_user,
        input_divergence=div(u, v) if input_div is None else input_div,
        method=method,
        labels=labels,
    )
