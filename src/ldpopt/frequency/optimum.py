r"""The eps-LDP channel with the smallest l2 error for frequency estimation, with a certificate.

Objectives (:mod:`ldpopt.frequency.objectives`, one report): ``variance_uniform`` = total variance of
the best unbiased estimator at the uniform distribution, ``worst_case`` = the minimax total variance
over the simplex.  The optimum over every eps-LDP channel on k inputs (any number of outputs) is, for
both objectives,

.. math:: V^*(k,\varepsilon) = \frac{(k-1)^2}{kA^2\gamma^*},\qquad
          \gamma^* = \max_{1\le s\le k-1}\frac{s(k-s)}{(s+(k-s)c)^2},\quad c = e^{-\varepsilon},\ A = 1-c,

attained by subset selection with the best subset size :math:`s^*\in\{\lfloor k/(e^\varepsilon+1)\rfloor,
\lceil k/(e^\varepsilon+1)\rceil\}`.

**Certificate (valid over all channels).** For any channel, :math:`M = QW^{-1}Q^T` (``W = diag(uQ)``)
satisfies :math:`M\mathbf 1 = k\mathbf 1`; with :math:`\lambda_1..\lambda_{k-1}` its other eigenvalues,
:math:`V = \sum_i 1/\lambda_i \ge (k-1)^2/(\operatorname{tr}M - k)` (arithmetic-harmonic means).
:math:`\operatorname{tr}M = k\sum_y \lVert q_y\rVert^2/\mathbf 1^Tq_y` is a sum of convex 1-homogeneous
functions of the columns, so splitting every column into maximal columns :math:`t_S v_S` (1 on S,
c off, rescaled) only increases it, and then :math:`\operatorname{tr}M - k = \sum_S t_S a_S` under
:math:`\sum_S t_S v_S = \mathbf 1`.  Any ``dual`` vector y with :math:`y^Tv_S\ge a_S` for every
non-empty proper S bounds it by :math:`\mathbf 1^Ty` (LP weak duality), hence
``lower_bound`` :math:`= (k-1)^2/\mathbf 1^Ty \le V(Q)` for every eps-LDP channel Q, and
:math:`\text{worst\_case}(Q)\ge V(Q)`.  The symmetric dual point is :math:`y = A^2\gamma^*\mathbf 1`
(:math:`a_S = A^2\,\gamma_{|S|}\,\mathbf 1^Tv_S`); a test re-checks it against every subset.

Methods (``method=``): ``"symmetric"`` (default; the closed form above, any k), ``"lp"`` (the LP over
all :math:`2^k-2` maximal columns by HiGHS, its dual as the certificate, k <= 18; no symmetry assumed),
``"designs"`` (the default with ``max_outputs``: subset selection and group designs with at most that
many outputs, :mod:`ldpopt.frequency._optimum_designs`).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ldpopt._numerics import rescale
from ldpopt._validation import check_eps, check_positive_int, is_integer, short_repr
from ldpopt.frequency import _optimum_designs, _optimum_lp, _optimum_symmetric
from ldpopt.mechanism import Mechanism

__all__ = [
    "FrequencyOptimum",
    "K_MAX",
    "count_text",
    "MATRIX_MAX_ENTRIES",
    "METHODS",
    "OBJECTIVES",
    "OPTIMAL_RTOL",
    "optimal_mechanism",
]

OBJECTIVES = ("variance_uniform", "worst_case")
METHODS = ("symmetric", "lp", "designs")
#: the mechanism's matrix is built when k * (number of outputs) is at most this (32 MiB of floats);
#: above, the result carries the symmetric description (sizes, size_weights) and ``mechanism`` is None
MATRIX_MAX_ENTRIES = 2**22
#: a channel whose value is within this relative distance of the lower bound is reported "optimal":
#: both are evaluated with relative error below ~1e-13 (closed forms / FFT of a k-vector), so a
#: design that is not exactly optimal but this close cannot be told apart in float64 anyway
OPTIMAL_RTOL = 1e-9
#: most orbits of a group design combined within max_outputs (k outputs each)
MAX_ORBITS = 16
#: largest k for the LP over all 2^k - 2 columns
LP_MAX_K = 18
#: largest k accepted (the certificate holds a dual vector of k floats: 8 MiB at this size)
K_MAX = 2**20


@dataclass(frozen=True, eq=False, kw_only=True)
class FrequencyOptimum:
    """The optimal channel for frequency estimation at (k, eps), with its certificate.

    ``value`` is the objective of ``mechanism`` (one report; divide by n for n reports),
    ``lower_bound`` = (k-1)^2 / sum(``dual``) bounds the objective of every eps-LDP channel (with at
    most ``max_outputs`` outputs or not) and ``gap = value - lower_bound``.  The channel reports a
    subset S of the k inputs of size ``sizes[i]`` with probability ``size_weights[i]``, the subset
    drawn with probability proportional to e^eps on S and 1 off S: all C(k, s) subsets of each size
    (subset selection), or for ``base_blocks`` the k translates of each block (orbits used with
    equal weights), in ``design_group`` ("cyclic": ``base + i mod k``; "xor": ``base XOR i``, k a
    power of 2).  ``mechanism`` (built on first access) is None when its matrix would exceed
    :data:`MATRIX_MAX_ENTRIES` entries; ``num_outputs`` is None when the count reaches 2^63
    (``log10_num_outputs`` always holds its log10).  ``status``: "optimal" (value meets the lower
    bound within :data:`OPTIMAL_RTOL`), "feasible" (best channel found, gap certified),
    "infeasible" (no channel within ``max_outputs`` has an unbiased estimator).
    """

    k: int
    eps: float
    objective: str
    method: str
    value: float
    lower_bound: float
    gap: float
    dual: np.ndarray = field(repr=False)
    sizes: tuple[int, ...]
    size_weights: tuple[float, ...]
    base_blocks: tuple[tuple[int, ...], ...] | None
    design_group: str | None
    num_outputs: int | None
    log10_num_outputs: float
    status: str
    message: str

    @functools.cached_property
    def mechanism(self) -> Mechanism | None:
        """The channel as a :class:`~ldpopt.Mechanism`, built on first access (subset selection at
        k = 20 has 184,756 outputs: 0.2 s), or None above :data:`MATRIX_MAX_ENTRIES` entries or
        when there is no channel (``status="infeasible"``)."""
        return _build(self)


class _Raw:
    """What a method returns: value, certificate, description, status and message."""

    def __init__(
        self,
        value: float,
        dual: np.ndarray,
        sizes: dict[int, float],
        base: tuple[str, tuple[tuple[int, ...], ...]] | None,
        status: str,
        message: str,
    ) -> None:
        self.value, self.dual, self.sizes, self.base = value, dual, sizes, base
        self.status, self.message = status, message


def _log10_comb(k: int, s: int) -> float:
    return (math.lgamma(k + 1) - math.lgamma(s + 1) - math.lgamma(k - s + 1)) / math.log(10)


def count_text(log10: float, exact: int | None = None) -> str:
    """A count of ``log10`` digits (log10 of it): ``exact`` written out when given and below
    10^15, else scientific notation from ``log10`` alone (no float conversion of a huge int)."""
    if exact is not None and log10 < 15:
        return str(exact)
    return f"~{10 ** (log10 % 1):.3f}e{int(log10)}"


def _count_text(k: int, s: int) -> str:
    """C(k, s) written out up to 15 digits, else in scientific notation from log-gamma."""
    log10 = _log10_comb(k, s)
    return count_text(log10, math.comb(k, s) if log10 < 15 else None)


def _symmetric_dual(k: int, A: float, top: float) -> np.ndarray:
    return np.full(k, A * A * top)


def _lower_bound(k: int, dual: np.ndarray) -> float:
    return ((k - 1) / float(np.sum(dual))) * (k - 1)


def _solve_symmetric(k: int, eps: float, max_outputs: int | None) -> _Raw:
    c, A, _ = rescale(eps)
    sizes, top = _optimum_symmetric.best_sizes(k, c)
    s = sizes[0]
    tie = f"; sizes {sizes[0]} and {sizes[1]} tie (both optimal)" if len(sizes) > 1 else ""
    msg = (
        f"subset selection with subset size {s} ({_count_text(k, s)} outputs) meets the certified "
        f"lower bound{tie}"
    )
    return _Raw(
        _optimum_symmetric.value(k, c, A, top), _symmetric_dual(k, A, top), {s: 1.0}, None, "optimal", msg
    )


def _solve_lp(k: int, eps: float, max_outputs: int | None) -> _Raw:
    if k > LP_MAX_K:
        raise ValueError(
            f"method='lp' enumerates all 2^k - 2 columns and is limited to k <= {LP_MAX_K}, got k={k}"
        )
    c, _, _ = rescale(eps)
    lp = _optimum_lp.solve(k, c)
    if lp.status != 0:
        return _Raw(math.nan, lp.dual, {}, None, "failed", f"HiGHS: {lp.message}")
    value = ((k - 1) / lp.trace_bound) * (k - 1)
    msg = f"LP over all {2**k - 2} maximal columns (HiGHS), optimum symmetrised; certificate from its dual"
    status = "optimal" if value - _lower_bound(k, lp.dual) <= OPTIMAL_RTOL * value else "feasible"
    return _Raw(value, lp.dual, lp.size_weights, None, status, msg)


def _fits(k: int, s: int, max_outputs: int) -> bool:
    """C(k, s) <= max_outputs, without writing out a C(k, s) of millions of digits (log-gamma first:
    its error is far below the 0.5 margin in log10)."""
    if _log10_comb(k, s) > math.log10(max_outputs) + 0.5:
        return False
    return math.comb(k, s) <= max_outputs


def _complete_candidates(k: int, c: float, A: float, max_outputs: int) -> list[tuple[float, int]]:
    """(value, s) of subset selection for every size whose C(k, s) outputs fit (C(k, s) grows up to
    s = k/2 and is symmetric, so the sizes that fit are the ends of 1..k-1)."""
    fit: set[int] = set()
    for sizes in (range(1, k), range(k - 1, 0, -1)):
        for s in sizes:
            if not _fits(k, s, max_outputs):
                break
            fit.add(s)
    return [(_optimum_symmetric.value(k, c, A, _optimum_symmetric.gamma(k, s, c)), s) for s in sorted(fit)]


def _solve_designs(k: int, eps: float, max_outputs: int | None) -> _Raw:
    c, A, _ = rescale(eps)
    sizes, top = _optimum_symmetric.best_sizes(k, c)
    dual = _symmetric_dual(k, A, top)
    lower = _lower_bound(k, dual)
    if max_outputs is None or _fits(k, sizes[0], max_outputs):
        return _solve_symmetric(k, eps, max_outputs)
    if max_outputs < k:
        msg = f"a channel with {max_outputs} < k = {k} outputs has rank < k: no unbiased estimator exists"
        return _Raw(math.inf, dual, {}, None, "infeasible", msg)
    complete = _complete_candidates(k, c, A, max_outputs)
    orbits = min(max_outputs // k, MAX_ORBITS)
    order = sorted(range(1, k), key=lambda s: -_optimum_symmetric.gamma(k, s, c))[:2]
    designs = [
        _optimum_designs.best_design(k, s, c, A, group, orbits)
        for s in order
        for group in _optimum_designs.groups(k)
    ]
    best = min(designs, key=lambda d: d.value)
    best_complete = min(complete, default=(math.inf, 0))
    searched = ", ".join(
        f"{d.group} size {d.size}: {d.searched} base blocks" + (" (all)" if d.exhaustive else " (random)")
        for d in designs
    )
    base: tuple[str, tuple[tuple[int, ...], ...]] | None
    if best_complete[0] < best.value:
        value, chosen, base = best_complete[0], {best_complete[1]: 1.0}, None
        what = f"subset selection with size {best_complete[1]}"
    else:
        value, chosen, base = best.value, {best.size: 1.0}, (best.group, best.bases)
        shown = str(best.bases[0]) if len(best.bases[0]) <= 12 else f"of size {best.size}"
        what = (
            f"the {best.group} design with base block {shown}"
            if len(best.bases) == 1
            else f"the union of {len(best.bases)} {best.group} orbits of size-{best.size} blocks"
        )
    optimal = value - lower <= OPTIMAL_RTOL * value
    verdict = (
        "it meets the unconstrained lower bound (a difference set)"
        if optimal
        else f"certified gap {value - lower:.3g}"
    )
    msg = f"best of subset selection within {max_outputs} outputs and group designs ({searched}): "
    msg += f"{what}; {verdict}"
    return _Raw(value, dual, chosen, base, "optimal" if optimal else "feasible", msg)


_METHODS: dict[str, Callable[[int, float, int | None], _Raw]] = {
    "symmetric": _solve_symmetric,
    "lp": _solve_lp,
    "designs": _solve_designs,
}


def _symmetric_matrix(k: int, sizes: dict[int, float], c: float) -> np.ndarray:
    """All subsets of each size s, weight u_s: column v_S * u_s / (C(k-1,s-1) + C(k-1,s) c)."""
    blocks = []
    for s, u in sorted(sizes.items()):
        combos = np.array(list(itertools.combinations(range(k), s)), dtype=np.int64)
        ind = np.zeros((k, combos.shape[0]), dtype=bool)
        ind[combos.T, np.arange(combos.shape[0])[None, :]] = True
        z = math.comb(k - 1, s - 1) + math.comb(k - 1, s) * c
        blocks.append(np.where(ind, 1.0, c) * (u / z))
    return np.concatenate(blocks, axis=1)


def _num_outputs(k: int, raw: _Raw) -> tuple[int | None, float]:
    """(exact count when below 2^63 else None, its log10): C(k, s) has ~k log10(2) digits, and
    writing it out exactly costs seconds at k = 10^6 and minutes at 10^7."""
    if raw.base is not None:
        return k * len(raw.base[1]), math.log10(k * len(raw.base[1]))
    if not raw.sizes:
        return 0, -math.inf
    logs = [_log10_comb(k, s) for s in raw.sizes]
    top = max(logs)
    log10 = top + math.log10(sum(10 ** (v - top) for v in logs))
    if log10 > 18.5:  # 2^63 ~ 9.2e18; lgamma's error is far below 0.3 in log10 here
        return None, log10
    exact = sum(math.comb(k, s) for s in raw.sizes)
    return (exact, math.log10(exact)) if exact < 2**63 else (None, math.log10(exact))


def _build(res: FrequencyOptimum) -> Mechanism | None:
    k, eps, n_out = res.k, res.eps, res.num_outputs
    if not res.sizes or n_out is None or n_out * k > MATRIX_MAX_ENTRIES or not math.isfinite(res.value):
        return None
    c, _, _ = rescale(eps)
    if res.base_blocks is not None and res.design_group is not None:
        group, bases = res.design_group, res.base_blocks
        mat = _optimum_designs.design_matrix(k, bases, c, group)
        name = f"{group} design {bases[0]}" if len(bases) == 1 else f"{group} design, {len(bases)} orbits"
        return Mechanism(mat, eps, name=name)
    sizes = dict(zip(res.sizes, res.size_weights, strict=True))
    mat = _symmetric_matrix(k, sizes, c)
    label = "+".join(str(s) for s in res.sizes)
    return Mechanism(mat / mat.sum(axis=1, keepdims=True), eps, name=f"subset selection (s={label})")


def _check_choice(value: Any, name: str, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(
            f"{name} must be one of {', '.join(map(repr, allowed))}, got {name}={short_repr(value)}"
        )
    return value


def optimal_mechanism(
    k: int,
    eps: float,
    *,
    objective: str = "variance_uniform",
    max_outputs: int | None = None,
    method: str | None = None,
) -> FrequencyOptimum:
    r"""The eps-LDP channel on k inputs minimising the l2 error of the best unbiased estimator.

    Parameters
    ----------
    k : int
        Number of values (>= 2).
    eps : float
        Privacy level (finite, > 0).
    objective : {"variance_uniform", "worst_case"}
        Total variance at the uniform distribution, or its minimax over the simplex (one report).
        Both have the same optimum and the same optimal channels here: the channels returned are
        invariant under a transitive group of permutations of the inputs, for which the minimax
        equals the error at uniform, and every channel's worst case is at least its error at uniform.
    max_outputs : int, optional
        Only channels with at most this many outputs.  Exactly optimal when subset selection with
        the best size fits or a difference set of that size is found (cyclic or, k a power of 2,
        XOR); otherwise the best channel found, ``status="feasible"`` and the certified ``gap``.
    method : {"symmetric", "lp", "designs"}, optional
        See the module text; default "symmetric", or "designs" with ``max_outputs``.

    Returns
    -------
    FrequencyOptimum
    """
    if not is_integer(k):
        raise TypeError(f"k must be an integer, got k={short_repr(k)}")
    k = check_positive_int(k, "k")
    if not 2 <= k <= K_MAX:
        raise ValueError(f"k must be in 2..{K_MAX} (one value needs no estimation), got k={k}")
    eps = check_eps(eps, allow_inf=False)
    objective = _check_choice(objective, "objective", OBJECTIVES)
    if max_outputs is not None and not is_integer(max_outputs):
        raise TypeError(f"max_outputs must be an integer, got max_outputs={short_repr(max_outputs)}")
    max_outputs = check_positive_int(max_outputs, "max_outputs", allow_none=True)
    if method is None:
        method = "symmetric" if max_outputs is None else "designs"
    method = _check_choice(method, "method", METHODS)
    if max_outputs is not None and method != "designs":
        raise ValueError(f"max_outputs is solved by method='designs' only, got method={method!r}")
    raw = _METHODS[method](k, eps, max_outputs)
    raw.dual.setflags(write=False)
    lower = _lower_bound(k, raw.dual)
    n_out, log10_out = _num_outputs(k, raw)
    message = raw.message
    if objective == "worst_case":
        message += (
            "; worst_case equals variance_uniform for this channel (invariant under a transitive group)"
        )
    return FrequencyOptimum(
        k=k,
        eps=eps,
        objective=objective,
        method=method,
        value=raw.value,
        lower_bound=lower,
        gap=raw.value - lower,
        dual=raw.dual,
        sizes=tuple(sorted(raw.sizes)),
        size_weights=tuple(raw.sizes[s] for s in sorted(raw.sizes)),
        base_blocks=None if raw.base is None else raw.base[1],
        design_group=None if raw.base is None else raw.base[0],
        num_outputs=n_out,
        log10_num_outputs=log10_out,
        status=raw.status,
        message=message,
    )
