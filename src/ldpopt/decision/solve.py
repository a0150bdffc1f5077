r"""Optimal LDP channels for general statistical decision problems (Nam, Park, Lee, Sec. 2-3).

:func:`optimal_channel` computes, for a :class:`~ldpopt.decision.problem.DecisionProblem`,

* the optimal Bayes risk :math:`\min_Q R^*_{\rm B}(Q;\lambda)` (paper eq. 5-6), or
* the optimal minimax risk :math:`\min_Q R^*_{\rm M}(Q)` (eq. 7-8),

or the optimum of any row-additive objective (:mod:`ldpopt.decision.objectives`), over all
:math:`\varepsilon`-LDP channels with arbitrary finite output alphabets.  By Theorem 3.7 and Theorem
3.10 the optimum is attained on a maximal channel :math:`Q_{\rm ex}^{(c)}`, one output per non-empty
proper subset y with weights :math:`c\in\mathcal S_{\mathcal X,\varepsilon}`; a row-additive objective is
linear in c, and the minimax risk is linear in :math:`z_{y,a}=c_y\delta(a|y)` plus an epigraph
variable.

A call goes through four steps: **parse** (validate the arguments into a
:class:`~ldpopt.decision.problem.Task`), **choose** the method (``method="auto"``), **solve** with
``METHODS[name]`` (one module per method in :mod:`ldpopt.decision.methods`) and **build** the
:class:`~ldpopt.decision.result.ChannelResult`.  Methods (``method=``):

``"enumerate"``
    the LP over all :math:`2^m-2` subsets (m <= 18; minimax: all (subset, action) pairs) with HiGHS;
``"colgen"``
    column generation for Bayes and minimax risk, exact for any m: pricing is separable per action
    (:mod:`ldpopt.decision.lp`); the result carries the dual certificate;
``"direct"``
    the polynomial LP over channels X -> A followed by a decomposition into extreme rows and a
    re-solve over those columns (exact for any m; the fastest for decision problems);
``"vertex"``
    vertex enumeration of :math:`\mathcal S_{\mathcal X,\varepsilon}` with pycddlib (m <= 5) or of the reduced
    polytope of a symmetry group, for concave objectives (Remark 3.11);
``"symmetry"``
    the reduced LP over orbit weights of a permutation group, closed form for a transitive group
    (Theorem 3.15, Corollary 3.17; :mod:`ldpopt.decision.symmetry`);
``"spr"``
    the Sort-Partition-Randomize dynamic program, for the f-divergence objective between two distributions;
``"auto"``
    picks one of the above (the chosen one is ``result.method``).

Invalid input raises ``ValueError``/``TypeError``; a solver that fails returns a result with
``status != 0`` (``success`` False), no mechanism and a message naming the cause.

Orientation: the paper writes channels column-stochastic (rows = outputs); :class:`~ldpopt.Mechanism`
keeps rows = inputs.  Everything here converts once, when the mechanism is built.
"""

from __future__ import annotations

import math
import types
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ldpopt._numerics import min_positive_c
from ldpopt._validation import check_eps, check_positive_int, check_real
from ldpopt.decision import lp
from ldpopt.decision.methods import colgen, direct, spr, symmetry, vertex
from ldpopt.decision.methods import enumerate as enumeration
from ldpopt.decision.objectives import (
    BayesRisk,
    ChannelObjective,
    FDivergenceObjective,
    RowAdditiveObjective,
    support_value,
)
from ldpopt.decision.polytope import ENUM_MAX_M, scaled_rows
from ldpopt.decision.problem import DecisionProblem, Task
from ldpopt.decision.result import ChannelResult, Solution, upscaled
from ldpopt.decision.symmetry import PermutationGroup
from ldpopt.mechanism import Mechanism

__all__ = ["optimal_channel", "METHODS", "RISKS", "AUTO_ENUM_MAX_M", "choose_method"]

RISKS = ("bayes", "minimax")
#: method name -> solver, ``(task) -> Solution``; ``method="auto"`` picks one (:func:`choose_method`)
METHODS: Mapping[str, Callable[[Task], Solution]] = types.MappingProxyType(
    {
        "enumerate": enumeration.solve,
        "colgen": colgen.solve,
        "direct": direct.solve,
        "vertex": vertex.solve,
        "symmetry": symmetry.solve,
        "spr": spr.solve,
    }
)
#: "auto" enumerates all subsets up to this m for objectives with linear pieces, then uses "direct"
AUTO_ENUM_MAX_M = 10


def optimal_channel(
    problem: Any,
    eps: float,
    risk: str = "bayes",
    method: str = "auto",
    *,
    group: Any = None,
    max_iter: int = 20000,
    time_limit: float | None = None,
    check_invariance: bool = True,
) -> ChannelResult:
    r"""Optimal :math:`\varepsilon`-LDP channel for a decision problem or a row-additive objective.

    Solves :math:`\min_{Q}R^*(Q)` over all :math:`\varepsilon`-LDP channels (any finite output alphabet)
    for the Bayes or minimax risk of a :class:`DecisionProblem`, or optimises a
    :class:`~ldpopt.decision.objectives.RowAdditiveObjective` (minimised or maximised by its ``sense``) or a
    concave :class:`~ldpopt.decision.objectives.ChannelObjective` (vertex enumeration).  By Theorems 3.7 and
    3.10 of Nam-Park-Lee the optimum is a maximal channel :math:`Q_{\rm ex}^{(c)}`,
    :math:`c\in\mathcal S_{\mathcal X,\varepsilon}` (eq. 22), found by an LP over c (Remark 3.11).

    A decision problem is solved with its loss scaled by a power of two to :math:`\max|l|\in(1/2,1]`
    (the optimal channel does not depend on the scale) and the value and certificate are scaled
    back, so any finite loss works.

    Parameters
    ----------
    problem : DecisionProblem, RowAdditiveObjective or ChannelObjective
    eps : float
        Finite privacy level > 0.
    risk : {"bayes", "minimax"}
        For a DecisionProblem.  Objectives carry their own criterion (leave ``"bayes"``).
    method : {"auto", "enumerate", "colgen", "direct", "vertex", "symmetry", "spr"}
        See the module docstring; ``"auto"`` picks one and reports it in ``result.method``.
    group : PermutationGroup, optional
        Symmetry of the objective (for ``"symmetry"``/``"vertex"``; ``"auto"`` then uses it).
    max_iter, time_limit :
        Limits of column generation.
    check_invariance : bool
        With a group, spot-check numerically that the objective is invariant.

    Returns
    -------
    ChannelResult
        ``status`` 0 = optimal (``success``), 1 = iteration/time limit; on an LP failure ``mechanism``
        is ``None``, ``value`` is NaN and ``message`` says what failed and why.
    """
    task = _parse(problem, eps, risk, method, group, max_iter, time_limit, check_invariance)
    name = choose_method(task) if method == "auto" else method
    _check_applies(task, name)
    return _build(task, METHODS[name](task))


# --------------------------------------------------------------------------------------------
# 1. parse: the arguments -> a Task
# --------------------------------------------------------------------------------------------


def _parse(
    problem: Any,
    eps: Any,
    risk: Any,
    method: Any,
    group: Any,
    max_iter: Any,
    time_limit: Any,
    check_invariance: bool,
) -> Task:
    eps = check_eps(eps, allow_inf=False)
    c0 = min_positive_c(eps)
    if risk not in RISKS:
        raise ValueError(f"risk must be one of {RISKS}, got risk={risk!r}")
    if method != "auto" and method not in METHODS:
        raise ValueError(f"method must be one of {('auto', *METHODS)}, got method={method!r}")
    max_iter = check_positive_int(max_iter, "max_iter")
    time_limit = _check_time_limit(time_limit)
    solved, obj, sense, name, exponent = _criterion(problem, risk)
    m = solved.num_inputs
    if m < 2:
        raise ValueError(f"an LDP channel design needs at least 2 inputs, got m={m}")
    _check_group(group, m)
    return Task(
        solved,
        obj,
        risk,
        sense,
        name,
        exponent,
        eps,
        c0,
        group=group,
        max_iter=max_iter,
        time_limit=time_limit,
        check_invariance=check_invariance,
    )


def _criterion(problem: Any, risk: str) -> tuple[Any, Any, str, str, int]:
    """``(problem as solved, objective or None, sense, name, loss exponent)``; checks the problem's type."""
    if isinstance(problem, DecisionProblem):
        unit, exponent = _unit_loss(problem)
        return unit, (BayesRisk(unit) if risk == "bayes" else None), "min", risk, exponent
    if not isinstance(problem, (RowAdditiveObjective, ChannelObjective)):
        raise TypeError(
            "problem must be a DecisionProblem, a RowAdditiveObjective or a ChannelObjective, "
            f"got {type(problem).__name__}"
        )
    if risk != "bayes":
        raise ValueError(
            f"risk={risk!r} applies to a DecisionProblem; objective {problem.name!r} has its own criterion"
        )
    check_positive_int(problem.num_inputs, "num_inputs")
    return problem, problem, problem.sense, problem.name, 0


def _unit_loss(problem: DecisionProblem) -> tuple[DecisionProblem, int]:
    r"""The problem with its loss divided by :math:`2^e`, the power of two with :math:`\max|l|/2^e\in(1/2,1]`.

    The optimal channel and decision rule do not change under a positive scaling of the loss and
    the risks scale with it; a power of two makes the division and the scaling back exact (up to
    underflow of entries far below the largest one).  HiGHS works with absolute tolerances (about
    1e-9) and rejects coefficients above about 1e15, so the LPs are always set up at unit scale.
    """
    exponent = lp.unit_exponent(problem.loss)
    if exponent == 0:
        return problem, 0
    unit = DecisionProblem(
        problem.likelihood,
        np.ldexp(problem.loss, -exponent),
        problem.prior,
        labels=problem.labels,
        parameter_labels=problem.parameter_labels,
        action_labels=problem.action_labels,
        name=problem.name,
    )
    return unit, exponent


def _check_time_limit(value: Any) -> float | None:
    if value is None:
        return None
    seconds = check_real(value, "time_limit")
    if not seconds > 0:
        raise ValueError(f"time_limit must be a number of seconds > 0 or None, got time_limit={value!r}")
    return seconds


def _check_group(group: Any, m: int) -> None:
    if group is None:
        return
    if not isinstance(group, PermutationGroup):
        raise TypeError(f"group must be a PermutationGroup, got {type(group).__name__}")
    if group.m != m:
        raise ValueError(f"group acts on {group.m} points but the problem has m={m} inputs")


# --------------------------------------------------------------------------------------------
# 2. choose the method
# --------------------------------------------------------------------------------------------


def choose_method(task: Task) -> str:
    """The method ``method="auto"`` uses for ``task`` (see the table in ``docs/decision.md``)."""
    m, problem, obj = task.num_inputs, task.problem, task.obj
    if isinstance(problem, ChannelObjective):
        return "vertex"
    if task.risk == "minimax":
        return "enumerate" if m <= AUTO_ENUM_MAX_M else "direct"
    if task.group is not None:
        return "symmetry"
    has_pieces = isinstance(problem, DecisionProblem) or obj.linear_pieces() is not None
    if has_pieces:
        return "enumerate" if m <= AUTO_ENUM_MAX_M else "direct"
    if m <= ENUM_MAX_M:
        return "enumerate"
    if isinstance(obj, FDivergenceObjective):
        return "spr"
    raise ValueError(
        f"no exact method for objective {obj.name!r} with m={m} > {ENUM_MAX_M} inputs: pass a symmetry group "
        "(group=...) or an objective with linear pieces"
    )


def _check_applies(task: Task, name: str) -> None:
    if isinstance(task.problem, ChannelObjective) and name != "vertex":
        raise ValueError(
            f"a ChannelObjective is not row-additive: only method='vertex' applies, got {name!r}"
        )
    if task.risk == "minimax" and name in ("vertex", "symmetry", "spr"):
        raise ValueError(
            f"method={name!r} does not apply to the minimax risk (it is not row-additive or concave); "
            "use 'enumerate', 'colgen' or 'direct'"
        )


# --------------------------------------------------------------------------------------------
# 4. build the result (3. is METHODS[name](task))
# --------------------------------------------------------------------------------------------


def _build(task: Task, sol: Solution) -> ChannelResult:
    """The public result of a method's solution, at the problem's own loss scale."""
    if sol.rows.shape[0] == 0:
        return ChannelResult(
            math.nan,
            None,
            types.MappingProxyType({}),
            None,
            task.eps,
            task.name,
            task.sense,
            sol.method,
            status=sol.status or 4,
            message=_failure_message(task, sol),
            certificate=upscaled(sol.certificate, task.exponent),
            iterations=sol.iterations,
        )
    rows, w, c0 = sol.rows, np.asarray(sol.w, dtype=float), task.c0
    V = scaled_rows(rows, c0)  # (n, m) output rows, paper orientation
    value, rule = _value_and_rule(task, sol, V)
    cols = (w[:, None] * V).T  # rows = inputs
    labels = getattr(task.problem, "labels", None)
    if labels is not None:
        out_labels = tuple(tuple(labels[i] for i in np.flatnonzero(r)) for r in rows)
    else:
        out_labels = tuple(tuple(int(i) for i in np.flatnonzero(r)) for r in rows)
    mech = Mechanism(
        cols / cols.sum(axis=1, keepdims=True),
        task.eps,
        labels=labels,
        output_labels=out_labels,
        name=f"optimal_channel[{task.name}]",
    )
    weights = {
        frozenset(int(i) for i in np.flatnonzero(r)): float(c0 * wt) for r, wt in zip(rows, w, strict=False)
    }
    return ChannelResult(
        lp.times_pow2(float(value), task.exponent),
        mech,
        types.MappingProxyType(weights),
        rule,
        task.eps,
        task.name,
        task.sense,
        sol.method,
        status=sol.status,
        message=sol.message,
        certificate=upscaled(sol.certificate, task.exponent),
        iterations=sol.iterations,
    )


def _value_and_rule(task: Task, sol: Solution, V: np.ndarray) -> tuple[float, np.ndarray | None]:
    """The value of the channel (from its own weights) and its decision rule."""
    obj, w = task.obj, np.asarray(sol.w, dtype=float)
    if task.risk == "minimax":
        rule = sol.decisions
        assert rule is not None  # the minimax solvers return their (randomised) decision rule
        P, L, c0 = task.problem.likelihood, task.problem.loss, task.c0
        coef = c0 + (1.0 - c0) * sol.rows.astype(float) @ P  # (n, T): S~_y . P_theta
        per_theta = np.einsum("n,nt,na,ta->t", w, coef, rule, L)
        return float(per_theta.max()), rule
    if isinstance(obj, RowAdditiveObjective):
        value = obj.transform(math.fsum((w * obj.contributions(V)).tolist()))
        # the Bayes rule is recomputed per output (deterministic); pair LPs of other objectives
        # with linear pieces carry their own decisions
        if isinstance(obj, BayesRisk) or sol.decisions is None:
            return value, obj.decisions(V)
        return value, sol.decisions
    return support_value(obj, sol.rows, w, task.c0), None


def _data_span(task: Task) -> tuple[float, float] | None:
    """Smallest and largest non-zero magnitude of the LP's data (loss and likelihood, or linear pieces)."""
    problem, obj = task.problem, task.obj
    if isinstance(problem, DecisionProblem):
        vals = np.concatenate([problem.loss.ravel(), problem.likelihood.ravel()])
    elif isinstance(obj, RowAdditiveObjective) and obj.linear_pieces() is not None:
        vals = np.asarray(obj.linear_pieces(), dtype=float).ravel()
    else:
        return None
    mags = np.abs(vals[(vals != 0) & np.isfinite(vals)])
    return (float(mags.min()), float(mags.max())) if mags.size else None


def _failure_message(task: Task, sol: Solution) -> str:
    """Why an LP method returned no channel, in words (the solver's own message in parentheses)."""
    raw = sol.message.strip() or f"status {sol.status}"
    low = raw.lower()
    if sol.status == 1 or "limit" in low:
        cause = "HiGHS stopped at an iteration or time limit before it found an optimal basis"
    elif "infeasible" in low or "unbounded" in low or sol.status in (2, 3):
        cause = (
            "HiGHS declared the LP infeasible or unbounded, which it is not (every LP here is feasible "
            "and bounded): a numerical failure"
        )
    else:
        cause = "HiGHS ran into numerical difficulties"
    span, c0 = _data_span(task), task.c0
    if span is not None:
        lo, hi = span
        cause += (
            f"; the non-zero data span {lo:.3g} .. {hi:.3g} (ratio {hi / lo:.2g}) with e^-eps = {c0:.3g}, "
            "and HiGHS's tolerances are absolute (1e-9): entries far below the largest are lost"
        )
    return f"{sol.method}: the LP solver failed, no channel returned: {cause} (solver message: {raw})"
