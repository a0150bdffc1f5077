r"""Optimal LDP channels for general statistical decision problems (Nam, Park, Lee, Sec. 2-3).

A decision problem :math:`(\Theta,\mathcal X,P_{X|\vartheta},\mathcal A,l)` with finite sets is given
by the likelihood matrix ``P[x, theta]`` (columns sum to 1), the loss ``L[theta, a]`` and a prior
:math:`\lambda`.  The data x is privatised by an :math:`\varepsilon`-LDP channel Q and the decision
maker sees only the output y.  :func:`optimal_channel` computes

* the optimal Bayes risk :math:`\min_Q R^*_{\rm B}(Q;\lambda)` (paper eq. 5-6), or
* the optimal minimax risk :math:`\min_Q R^*_{\rm M}(Q)` (eq. 7-8),

or the optimum of any row-additive objective (:mod:`ldpopt.decision.objectives`), over all
:math:`\varepsilon`-LDP channels with arbitrary finite output alphabets.  By Theorem 3.7 and Theorem
3.10 the optimum is attained on a maximal channel :math:`Q_{\rm ex}^{(c)}`, one output per non-empty
proper subset y with weights :math:`c\in\mathcal S_{\mathcal X,\varepsilon}`; a row-additive objective is
linear in c, and the minimax risk is linear in :math:`z_{y,a}=c_y\delta(a|y)` plus an epigraph
variable.  Methods (``method=``):

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

Orientation: the paper writes channels column-stochastic (rows = outputs); :class:`~ldpopt.Mechanism`
keeps rows = inputs.  Everything here converts once, when the mechanism is built.
"""

from __future__ import annotations

import dataclasses
import math
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from ldpopt._validation import as_real_array, check_eps, check_positive_int, check_real
from ldpopt.decision import lp as cg
from ldpopt.decision.objectives import (
    BayesRisk,
    ChannelObjective,
    FDivergenceObjective,
    RowAdditiveObjective,
)
from ldpopt.decision.polytope import (
    ENUM_MAX_M,
    VERTEX_MAX_M,
    _decompose,
    _scale,
    scaled_rows,
    subset_rows,
)
from ldpopt.mechanism import Mechanism

__all__ = ["DecisionProblem", "ChannelResult", "LPCertificate", "optimal_channel", "METHODS", "RISKS"]

RISKS = ("bayes", "minimax")
METHODS = ("auto", "enumerate", "colgen", "direct", "vertex", "symmetry", "spr")
#: tolerance on |sum_x P(x|theta) - 1|
LIKELIHOOD_TOL = 1e-9
#: "auto" enumerates all subsets up to this m for objectives with linear pieces, then uses "direct"
AUTO_ENUM_MAX_M = 10
#: full minimax enumeration is limited to this many (subset, action) columns
ENUM_MAX_PAIRS = 2**21
#: a certificate is accepted when its minimum reduced cost is >= -CERT_RTOL * scale
CERT_RTOL = 1e-8


# --------------------------------------------------------------------------------------------
# the decision problem
# --------------------------------------------------------------------------------------------


def _real_matrix(value: Any, name: str) -> np.ndarray:
    arr = np.array(as_real_array(value, name, "a 2-D array of real numbers"))  # an own copy
    if arr.ndim != 2 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 2-D array, got shape {arr.shape}")
    if np.any(np.isnan(arr)):
        raise ValueError(f"{name} must not contain NaN")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite numbers")
    return arr


def _labels(value: Any, size: int, name: str) -> tuple | None:
    if value is None:
        return None
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of labels, got {value!r}")
    lab = tuple(value)
    if len(lab) != size:
        raise ValueError(f"{name} must have {size} entries, got {len(lab)}")
    if len(set(lab)) != len(lab):
        raise ValueError(f"{name} must be distinct, got {lab!r}")
    return lab


@dataclass(frozen=True, eq=False)
class DecisionProblem:
    r"""A finite statistical decision problem (paper Sec. 2.2).

    Parameters
    ----------
    likelihood : array_like, shape (m, T)
        ``likelihood[x, theta]`` = :math:`P(x|\theta)`; every column sums to 1.  m >= 2.
    loss : array_like, shape (T, A)
        ``loss[theta, a]`` = :math:`l(\theta, a)`; any finite real numbers (negative losses allowed).
    prior : array_like, shape (T,), optional
        Prior :math:`\lambda` for the Bayes risk (default uniform).  Ignored by the minimax risk.
    labels, parameter_labels, action_labels : sequence, optional
        Names of the inputs x, the parameters :math:`\theta` and the actions a.
    name : str
    """

    likelihood: np.ndarray
    loss: np.ndarray
    prior: np.ndarray | None = None
    labels: tuple | None = None
    parameter_labels: tuple | None = None
    action_labels: tuple | None = None
    name: str = "decision problem"

    def __post_init__(self) -> None:
        P = _real_matrix(self.likelihood, "likelihood")
        L = _real_matrix(self.loss, "loss")
        m, T = P.shape
        if m < 2:
            raise ValueError(f"likelihood must have at least 2 inputs (rows), got {m}")
        if np.any(P < 0):
            raise ValueError(f"likelihood must be non-negative, found {P[P < 0][0]!r}")
        sums = P.sum(axis=0)
        bad = np.flatnonzero(np.abs(sums - 1.0) > LIKELIHOOD_TOL)
        if bad.size:
            raise ValueError(
                f"likelihood columns must sum to 1 (P(x|theta) over x), column {int(bad[0])} sums to "
                f"{sums[bad[0]]!r}"
            )
        if L.shape[0] != T:
            raise ValueError(
                f"loss must have one row per parameter: likelihood has T={T} columns, "
                f"loss has shape {L.shape}"
            )
        if self.prior is None:
            prior = np.full(T, 1.0 / T)
        else:
            from ldpopt._validation import check_distribution

            prior = check_distribution(self.prior, "prior")
            if prior.shape[0] != T:
                raise ValueError(f"prior must have T={T} entries, got {prior.shape[0]}")
        for arr in (P, L, prior):
            arr.setflags(write=False)
        object.__setattr__(self, "likelihood", P)
        object.__setattr__(self, "loss", L)
        object.__setattr__(self, "prior", prior)
        object.__setattr__(self, "labels", _labels(self.labels, m, "labels"))
        object.__setattr__(self, "parameter_labels", _labels(self.parameter_labels, T, "parameter_labels"))
        object.__setattr__(self, "action_labels", _labels(self.action_labels, L.shape[1], "action_labels"))

    @property
    def num_inputs(self) -> int:
        """m = |X|."""
        return self.likelihood.shape[0]

    @property
    def num_parameters(self) -> int:
        r"""T = :math:`|\Theta|`."""
        return self.likelihood.shape[1]

    @property
    def num_actions(self) -> int:
        """A = number of decisions."""
        return self.loss.shape[1]

    def bayes_matrix(self, prior: Any = None) -> np.ndarray:
        r""":math:`B_{x,a}=\sum_\theta\lambda_\theta P(x|\theta)l(\theta,a)`, shape (m, A)."""
        # self.prior is an array once __post_init__ has run
        lam = cast(np.ndarray, self.prior) if prior is None else np.asarray(prior, dtype=float)
        return self.likelihood @ (lam[:, None] * self.loss)

    def objective(self) -> BayesRisk:
        """The Bayes risk as a row-additive objective."""
        return BayesRisk(self)

    # --- risks of a given channel ----------------------------------------------------------
    def _output_likelihood(self, mechanism: Any) -> np.ndarray:
        matrix = mechanism.matrix if isinstance(mechanism, Mechanism) else np.asarray(mechanism, dtype=float)
        if matrix.ndim != 2 or matrix.shape[0] != self.num_inputs:
            raise ValueError(f"mechanism must have {self.num_inputs} inputs (rows), got shape {matrix.shape}")
        return matrix.T @ self.likelihood  # (n, T): P(y | theta)

    def risk(self, mechanism: Any, decision_rule: Any) -> np.ndarray:
        r"""Risk :math:`R(\theta,Q,\delta)` for every :math:`\theta` (paper eq. 4), shape (T,).

        ``decision_rule`` is (n_outputs, A) row-stochastic, :math:`\delta(a|y)`.
        """
        py = self._output_likelihood(mechanism)
        rule = np.asarray(decision_rule, dtype=float)
        if rule.shape != (py.shape[0], self.num_actions):
            raise ValueError(
                f"decision_rule must have shape ({py.shape[0]}, {self.num_actions}), got {rule.shape}"
            )
        return np.einsum("yt,ya,ta->t", py, rule, self.loss)

    def bayes_risk(self, mechanism: Any, prior: Any = None) -> float:
        r"""Optimal Bayes risk :math:`R^*_{\rm B}(Q;\lambda)` of a channel (Bayes decoder per output)."""
        # self.prior is an array once __post_init__ has run
        lam = cast(np.ndarray, self.prior) if prior is None else np.asarray(prior, dtype=float)
        py = self._output_likelihood(mechanism)
        per_action = (py * lam[None, :]) @ self.loss  # (n, A)
        return math.fsum(per_action.min(axis=1).tolist())

    def minimax_risk(self, mechanism: Any) -> float:
        r"""Minimax risk :math:`R^*_{\rm M}(Q)=\min_\delta\max_\theta R(\theta,Q,\delta)` of a channel
        (LP over :math:`\delta`)."""
        from scipy.optimize import linprog

        py = self._output_likelihood(mechanism)
        n, T = py.shape
        A = self.num_actions
        # variables delta[y, a] (row-major) and t
        coef = np.einsum("yt,ta->tya", py, self.loss).reshape(T, n * A)
        A_ub = np.hstack([coef, -np.ones((T, 1))])
        A_eq = np.hstack([np.kron(np.eye(n), np.ones((1, A))), np.zeros((n, 1))])
        c = np.zeros(n * A + 1)
        c[-1] = 1.0
        res = linprog(
            c,
            A_ub=A_ub,
            b_ub=np.zeros(T),
            A_eq=A_eq,
            b_eq=np.ones(n),
            bounds=[(0, None)] * (n * A) + [(None, None)],
            method="highs",
        )
        if res.status != 0:  # pragma: no cover - the LP is always feasible and bounded
            raise RuntimeError(f"minimax LP failed: {res.message}")
        return float(res.fun)

    def __repr__(self) -> str:
        return (
            f"DecisionProblem(name={self.name!r}, inputs={self.num_inputs}, "
            f"parameters={self.num_parameters}, actions={self.num_actions})"
        )


# --------------------------------------------------------------------------------------------
# results
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class LPCertificate:
    r"""LP optimality certificate (dual solution) of :func:`optimal_channel`.

    The LP is written in minimisation form over the rescaled columns :math:`\tilde S_y=e^{-\varepsilon}S_y`
    (a maximised objective is negated).  ``dual`` is :math:`u\in\mathbb R^m` for the rows
    :math:`\sum_y\tilde c_y\tilde S_{y,x}=1`; for the minimax risk ``prior`` holds the duals
    :math:`\lambda` of the risk rows (a least-favourable prior, summing to 1).  The certificate holds
    when every (subset, decision) column has non-negative reduced cost
    :math:`\tilde S_y\cdot(B^\lambda_{:,a}-u)` (for a general objective
    :math:`\pm\phi(\tilde S_y)-\tilde S_y\cdot u`); ``min_reduced_cost`` is that minimum over
    **all** :math:`2^m-2` subsets (exact pricing), and ``bound`` =
    :math:`\sum_x u_x+\kappa\min(0,\text{min\_reduced\_cost})`, :math:`\kappa=m/(1+(m-1)e^{-\varepsilon})`,
    is a proven lower bound of the minimisation form (reported with the objective's sign, before
    any value transform).
    """

    dual: np.ndarray
    prior: np.ndarray | None
    dual_value: float
    min_reduced_cost: float
    bound: float
    verified: bool


@dataclass(frozen=True, eq=False)
class ChannelResult:
    r"""Result of :func:`optimal_channel`.

    Attributes
    ----------
    value : float
        Optimal risk (or objective value), computed from the returned channel's weights.
    mechanism : Mechanism or None
        The optimal maximal channel, rows = inputs, one column per used subset (``None`` on failure).
    weights : mapping
        ``{frozenset(subset): c_y}``: the paper's weights (row y of the channel is :math:`c_yS_y`),
        subsets as frozensets of input indices, in the mechanism's column order.
    decision_rule : ndarray or None
        ``(num_outputs, A)`` row-stochastic :math:`\delta(a|y)` for decision problems (the Bayes rule
        is deterministic; the minimax rule may randomise); objective-specific decisions for other
        objectives (e.g. estimated angles), ``None`` when the objective has none.
    eps : float
    risk : str
        ``"bayes"``, ``"minimax"`` or the objective's name.
    sense : str
        ``"min"`` or ``"max"``.
    method, status, message :
        Solver used, 0 = optimal (1 = iteration/time limit, other = LP failure), and a message.
    certificate : LPCertificate or None
        Dual certificate for the LP methods.
    iterations : int
        Column-generation rounds (1 for single LPs).
    """

    value: float
    mechanism: Mechanism | None
    weights: Mapping[frozenset, float]
    decision_rule: np.ndarray | None
    eps: float
    risk: str
    sense: str
    method: str
    status: int = 0
    message: str = "optimal"
    certificate: LPCertificate | None = field(default=None, repr=False)
    iterations: int = 1

    @property
    def num_outputs(self) -> int:
        """Number of outputs of the optimal channel."""
        return 0 if self.mechanism is None else self.mechanism.num_outputs

    @property
    def subsets(self) -> tuple:
        """The used subsets (frozensets of input indices), in the mechanism's column order."""
        return tuple(self.weights)


@dataclass
class _Solution:
    """Internal: support rows, scaled weights and decisions before building the public result."""

    rows: np.ndarray
    w: np.ndarray
    decisions: np.ndarray | None
    value: float
    method: str
    status: int = 0
    message: str = "optimal"
    certificate: LPCertificate | None = None
    iterations: int = 1


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def _merge_pairs(rows: np.ndarray, actions: np.ndarray, z: np.ndarray, K: int):
    """Merge pair columns (y, a) with the same subset into one output with a randomised decision."""
    keys: dict[bytes, int] = {}
    out_rows: list[np.ndarray] = []
    out_w: list[float] = []
    out_rule: list[np.ndarray] = []
    for r, a, w in zip(rows, actions, z, strict=False):
        key = r.tobytes()
        if key not in keys:
            keys[key] = len(out_rows)
            out_rows.append(r)
            out_w.append(0.0)
            out_rule.append(np.zeros(K))
        j = keys[key]
        out_w[j] += float(w)
        out_rule[j][int(a)] += float(w)
    W = np.array(out_w)
    rule = np.array(out_rule) / W[:, None]
    return np.array(out_rows, dtype=bool).reshape(-1, rows.shape[1]), W, rule


def _polish(rows: np.ndarray, w: np.ndarray, c0: float) -> np.ndarray:
    r"""Re-solve :math:`\sum_j \tilde c_j\tilde S_{y_j}=\mathbf 1` on the support so the channel is exact
    to round-off."""
    if rows.shape[0] == 0 or rows.shape[0] > rows.shape[1]:
        return w
    S = scaled_rows(rows, c0).T  # (m, n)
    sol, *_ = np.linalg.lstsq(S, np.ones(S.shape[0]), rcond=None)
    if np.all(sol > 0) and np.max(np.abs(S @ sol - 1.0)) < 1e-13:
        return sol
    return w


def _certificate(
    u: np.ndarray, prior: np.ndarray | None, rcmin: float, c0: float, sign: float, scale: float
) -> LPCertificate:
    m = u.shape[0]
    dual_value = float(u.sum())
    bound = dual_value + cg.column_bound(m, c0) * min(0.0, rcmin)
    return LPCertificate(
        dual=np.asarray(u, dtype=float).copy(),
        prior=None if prior is None else np.asarray(prior).copy(),
        dual_value=dual_value,
        min_reduced_cost=float(rcmin),
        bound=sign * bound,
        verified=bool(rcmin >= -CERT_RTOL * max(scale, 1e-300)),
    )


def _scale_of(B: np.ndarray) -> float:
    return float(np.abs(B).sum(axis=0).max()) or 1.0


def _unit_exponent(values: Any) -> int:
    r"""The e with :math:`\max|v|/2^e\in(1/2,1]` (0 for zeros): HiGHS's tolerances are absolute (about
    1e-9) and it gives up on coefficients above about 1e15, so LP data are passed at unit scale."""
    arr = np.asarray(values, dtype=float)
    top = float(np.abs(arr).max()) if arr.size else 0.0
    if top == 0.0 or not math.isfinite(top):
        return 0
    mant, exponent = math.frexp(top)
    return exponent - 1 if mant == 0.5 else exponent


def _times_pow2(x: Any, exponent: int) -> Any:
    """``x * 2**exponent`` (exact; inf past the float range), for floats and arrays."""
    with np.errstate(over="ignore"):
        out = np.ldexp(x, exponent)
    return out if isinstance(x, np.ndarray) else float(out)


def _upscaled(cert: LPCertificate | None, exponent: int) -> LPCertificate | None:
    """The certificate of an LP solved with its costs divided by ``2**exponent``, at the original scale."""
    if cert is None or exponent == 0:
        return cert
    return dataclasses.replace(
        cert,
        dual=_times_pow2(cert.dual, exponent),
        dual_value=_times_pow2(cert.dual_value, exponent),
        min_reduced_cost=_times_pow2(cert.min_reduced_cost, exponent),
        bound=_times_pow2(cert.bound, exponent),
    )


# --------------------------------------------------------------------------------------------
# solvers
# --------------------------------------------------------------------------------------------


def _row_additive_enumerate(obj: RowAdditiveObjective, c0: float) -> _Solution:
    m = obj.num_inputs
    R = subset_rows(m)
    V = scaled_rows(R, c0)
    phi = obj.contributions(V)
    if not np.all(np.isfinite(phi)):
        raise ValueError(f"objective {obj.name!r} is infinite on some extreme row; the LP is not defined")
    sign = 1.0 if obj.sense == "min" else -1.0
    costs = sign * phi
    k = _unit_exponent(costs)
    res = cg.solve_pair_lp(R, np.zeros(R.shape[0], dtype=int), c0, costs=np.ldexp(costs, -k))
    if res.status != 0:
        return _Solution(R[:0], np.zeros(0), None, math.nan, "enumerate", res.status, res.message)
    u = np.ldexp(res.u, k)
    rcmin = float((costs - V @ u).min())
    cert = _certificate(u, None, rcmin, c0, sign, float(np.abs(costs).max()))
    w = _polish(res.rows, res.z, c0)
    return _Solution(
        res.rows, w, None, math.nan, "enumerate", 0, "optimal (HiGHS over all 2^m - 2 subsets)", cert
    )


def _minimax_enumerate(problem: DecisionProblem, c0: float) -> _Solution:
    m, A = problem.num_inputs, problem.num_actions
    if m > ENUM_MAX_M or (2**m - 2) * A > ENUM_MAX_PAIRS:
        raise ValueError(
            f"full enumeration of the minimax LP needs (2^m - 2) * A = {(2**m - 2) * A} columns, "
            f"above the limit {ENUM_MAX_PAIRS} (m <= {ENUM_MAX_M}); use method='colgen' or method='direct'"
        )
    R = subset_rows(m)
    n = R.shape[0]
    rows = np.repeat(R, A, axis=0)
    acts = np.tile(np.arange(A), n)
    P, L = problem.likelihood, problem.loss
    res = cg.solve_pair_lp(rows, acts, c0, risks=cg.pair_risks(rows, acts, P, L, c0))
    if res.status != 0:
        return _Solution(R[:0], np.zeros(0), None, math.nan, "enumerate", res.status, res.message)
    assert res.prior is not None  # a minimax LP always has the duals of its theta-rows
    Beff = cg.effective_B(P, L, res.prior)
    cert = _certificate(res.u, res.prior, cg.min_reduced_cost(Beff, res.u, c0), c0, 1.0, _scale_of(Beff))
    rws, w, rule = _merge_pairs(res.rows, res.actions, res.z, A)
    return _Solution(
        rws, w, rule, math.nan, "enumerate", 0, "optimal (HiGHS over all (subset, action) pairs)", cert
    )


def _pieces(problem: Any, risk: str) -> tuple[dict, int]:
    """Linear data for colgen/direct, ``({'B': ...} (Bayes) or {'P': ..., 'L': ...} (minimax), e)``.

    An objective's pieces are divided by ``2**e`` (:func:`_unit_exponent`); a decision problem's loss
    is already at unit scale (:func:`_unit_loss`), e = 0.
    """
    if isinstance(problem, DecisionProblem):
        if risk == "minimax":
            return {"P": problem.likelihood, "L": problem.loss}, 0
        return {"B": problem.bayes_matrix()}, 0
    B = problem.linear_pieces() if isinstance(problem, RowAdditiveObjective) else None
    if B is None or problem.sense != "min":
        raise ValueError(
            f"this method needs a decision problem or an objective with linear_pieces() (sense 'min'); "
            f"{getattr(problem, 'name', problem)!r} has none; use method='enumerate', 'vertex' or 'symmetry'"
        )
    B = np.asarray(B, dtype=float)
    k = _unit_exponent(B)
    return {"B": np.ldexp(B, -k)}, k


def _colgen_solve(problem: Any, risk: str, c0: float, max_iter: int, time_limit: float | None) -> _Solution:
    data, k = _pieces(problem, risk)
    res = cg.column_generation(c0, max_iter=max_iter, time_limit=time_limit, **data)
    K = data["L"].shape[1] if "L" in data else data["B"].shape[1]
    if res.rows.shape[0] == 0:
        return _Solution(
            res.rows,
            np.zeros(0),
            None,
            math.nan,
            "colgen",
            res.status or 4,
            res.message,
            iterations=res.iterations,
        )
    # a minimax master always has the duals of its theta-rows
    Beff = cg.effective_B(data["P"], data["L"], cast(np.ndarray, res.prior)) if "P" in data else data["B"]
    cert = _upscaled(
        _certificate(res.u, res.prior, cg.min_reduced_cost(Beff, res.u, c0), c0, 1.0, _scale_of(Beff)), k
    )
    rws, w, rule = _merge_pairs(res.rows, res.actions, res.z, K)
    if "B" in data:
        w = _polish(rws, w, c0)
    msg = f"{res.message}; {res.iterations} rounds, {res.columns} columns in the master"
    return _Solution(rws, w, rule, math.nan, "colgen", res.status, msg, cert, res.iterations)


def _direct_solve(problem: Any, risk: str, c0: float) -> _Solution:
    data, k = _pieces(problem, risk)
    W, value, u, prior, status, message = cg.channel_lp(c0, **data)
    m = (data["B"] if "B" in data else data["P"]).shape[0]
    if status != 0:
        return _Solution(np.zeros((0, m), bool), np.zeros(0), None, math.nan, "direct", status, message)
    K = W.shape[1]
    # extreme-row decomposition of every decision column of W (exact up to the LP tolerance);
    # randomized-response columns for every action are added only if that re-solve fails
    rows, _, acts = _decompose(W, c0)
    keep = ~(rows.all(axis=1) | ~rows.any(axis=1))
    rows, acts = rows[keep], acts[keep]
    if "B" in data:
        Beff = data["B"]
    else:
        Beff = cg.effective_B(data["P"], data["L"], prior)
    eye = np.eye(m, dtype=bool)
    for attempt in range(2):
        if attempt:
            rows = np.vstack([rows, np.repeat(eye, K, axis=0)])
            acts = np.concatenate([acts, np.tile(np.arange(K), m)])
        uniq: dict = {}
        for i, (r, a) in enumerate(zip(rows, acts, strict=False)):
            uniq.setdefault((r.tobytes(), int(a)), i)
        idx = np.array(sorted(uniq.values()), dtype=int)
        rows, acts = rows[idx], acts[idx]
        if "B" in data:
            res = cg.solve_pair_lp(rows, acts, c0, costs=cg.pair_costs(rows, acts, data["B"], c0))
        else:
            res = cg.solve_pair_lp(rows, acts, c0, risks=cg.pair_risks(rows, acts, data["P"], data["L"], c0))
        if res.status == 0:
            break
    if res.status != 0:  # pragma: no cover - the decomposition is feasible by construction
        return _Solution(rows[:0], np.zeros(0), None, math.nan, "direct", res.status, res.message)
    cert = _upscaled(_certificate(u, prior, cg.min_reduced_cost(Beff, u, c0), c0, 1.0, _scale_of(Beff)), k)
    rws, w, rule = _merge_pairs(res.rows, res.actions, res.z, K)
    if "B" in data:
        w = _polish(rws, w, c0)
    return _Solution(
        rws,
        w,
        rule,
        math.nan,
        "direct",
        0,
        "optimal (LP over channels X -> A, decomposed into extreme rows)",
        cert,
    )


def _vertex_solve(obj: Any, c0: float, group: Any, check: bool) -> _Solution:
    from ldpopt.decision.polytope import cdd_vertices

    m = obj.num_inputs
    if group is not None:
        from ldpopt.decision.symmetry import check_invariance, reduced_vertices

        if check:
            check_invariance(obj, group, c0)

        candidates = reduced_vertices(group, c0)  # list of (rows, scaled weights)
    else:
        if m > VERTEX_MAX_M:
            raise ValueError(
                f"vertex enumeration of S_(X,eps) is limited to m <= {VERTEX_MAX_M}, got m={m}; "
                "pass a symmetry group (group=...) or use an LP method"
            )
        R = subset_rows(m)
        verts = cdd_vertices(scaled_rows(R, c0).T, np.ones(m))
        candidates = []
        for v in verts:
            sup = np.flatnonzero(v > 1e-12 * v.max())
            candidates.append((R[sup], v[sup]))
    best: tuple[float, np.ndarray, np.ndarray] | None = None
    for rows, w in candidates:
        val = _evaluate(obj, rows, w, c0)
        if best is None or (val < best[0] if obj.sense == "min" else val > best[0]):
            best = (val, rows, w)
    assert best is not None  # the polytope is non-empty, so there is at least one vertex
    val, rows, w = best
    w = _polish(rows, w, c0)
    where = "the reduced polytope S^G" if group is not None else "S_(X,eps)"
    return _Solution(
        rows,
        w,
        None,
        math.nan,
        "vertex",
        0,
        f"optimal (best of {len(candidates)} vertices of {where}, pycddlib)",
    )


def _evaluate(obj: Any, rows: np.ndarray, w: np.ndarray, c0: float) -> float:
    """Objective of the channel with support rows and scaled weights (raw scale for row-additive
    objectives)."""
    V = scaled_rows(rows, c0)
    if isinstance(obj, RowAdditiveObjective):
        vals = obj.contributions(V)
        return math.fsum((w * vals).tolist())
    cols = (w[:, None] * V).T
    return obj.evaluate(cols / cols.sum(axis=1, keepdims=True))


def _spr_solve(obj: FDivergenceObjective, eps: float, c0: float) -> _Solution:
    from ldpopt.spr.solve import optimal_mechanism

    res = optimal_mechanism(obj.p0, obj.p1, eps, obj.divergence)
    m = obj.num_inputs
    assert res.partition is not None  # the SPR solvers always return their partition
    blocks = [b for b in res.partition]
    if len(blocks) < 2:  # no information can be gained: any channel is optimal, return RR
        rows = np.eye(m, dtype=bool)
        w = np.full(m, 1.0 / (1.0 + (m - 1) * c0))
    else:
        rows = np.zeros((len(blocks), m), dtype=bool)
        for j, b in enumerate(blocks):
            rows[j, list(b)] = True
        w = np.full(len(blocks), 1.0 / (1.0 + (len(blocks) - 1) * c0))
    return _Solution(
        rows, w, None, math.nan, "spr", res.status, f"optimal (SPR dynamic program: {res.message})"
    )


# --------------------------------------------------------------------------------------------
# entry point
# --------------------------------------------------------------------------------------------


def _choose(problem: Any, obj: Any, risk: str, group: Any) -> str:
    m = obj.num_inputs if obj is not None else problem.num_inputs
    if isinstance(problem, ChannelObjective):
        return "vertex"
    if risk == "minimax":
        return "enumerate" if m <= AUTO_ENUM_MAX_M else "direct"
    if group is not None:
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


@dataclass(frozen=True)
class _Task:
    """Internal: one validated call of :func:`optimal_channel`, as the solver adapters see it.

    ``problem`` is the problem as solved: a decision problem's loss is at unit scale
    (:func:`_unit_loss`); the result is multiplied back in :func:`_unscale`.
    """

    problem: Any
    obj: Any
    risk: str
    eps: float
    c0: float
    group: Any
    max_iter: int
    time_limit: float | None
    check_invariance: bool


def _unit_loss(problem: DecisionProblem) -> tuple[DecisionProblem, int]:
    r"""The problem with its loss divided by :math:`2^e`, the power of two with :math:`\max|l|/2^e\in(1/2,1]`.

    The optimal channel and decision rule do not change under a positive scaling of the loss and
    the risks scale with it; a power of two makes the division and the scaling back exact (up to
    underflow of entries far below the largest one).  HiGHS works with absolute tolerances (about
    1e-9) and rejects coefficients above about 1e15, so the LPs are always set up at unit scale.
    """
    exponent = _unit_exponent(problem.loss)
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
    from ldpopt.decision.symmetry import PermutationGroup

    if not isinstance(group, PermutationGroup):
        raise TypeError(f"group must be a PermutationGroup, got {type(group).__name__}")
    if group.m != m:
        raise ValueError(f"group acts on {group.m} points but the problem has m={m} inputs")


def _check_applies(problem: Any, risk: str, chosen: str) -> None:
    if isinstance(problem, ChannelObjective) and chosen != "vertex":
        raise ValueError(
            f"a ChannelObjective is not row-additive: only method='vertex' applies, got {chosen!r}"
        )
    if risk == "minimax" and chosen in ("vertex", "symmetry", "spr"):
        raise ValueError(
            f"method={chosen!r} does not apply to the minimax risk (it is not row-additive or concave); "
            "use 'enumerate', 'colgen' or 'direct'"
        )


# --- one adapter per method: (task) -> _Solution -----------------------------------------------


def _run_enumerate(t: _Task) -> _Solution:
    m = t.problem.num_inputs
    if m > ENUM_MAX_M:
        raise ValueError(
            f"full enumeration is limited to m <= {ENUM_MAX_M} (2^m - 2 subsets), got m={m}; use "
            "method='colgen' or method='direct' (decision problems), or a symmetry group (method='symmetry')"
        )
    if t.risk == "minimax":
        return _minimax_enumerate(t.problem, t.c0)
    return _row_additive_enumerate(t.obj, t.c0)


def _run_colgen(t: _Task) -> _Solution:
    return _colgen_solve(t.problem, t.risk, t.c0, t.max_iter, t.time_limit)


def _run_direct(t: _Task) -> _Solution:
    return _direct_solve(t.problem, t.risk, t.c0)


def _run_vertex(t: _Task) -> _Solution:
    return _vertex_solve(t.obj, t.c0, t.group, t.check_invariance)


def _run_symmetry(t: _Task) -> _Solution:
    if t.group is None:
        raise ValueError("method='symmetry' needs a group (group=ldpopt.PermutationGroup...)")
    from ldpopt.decision.symmetry import _symmetric_solve

    return _symmetric_solve(t.obj, t.group, t.c0, t.check_invariance)


def _run_spr(t: _Task) -> _Solution:
    if not isinstance(t.obj, FDivergenceObjective):
        raise ValueError("method='spr' applies only to the f-divergence objective between two distributions")
    return _spr_solve(t.obj, t.eps, t.c0)


#: method name -> solver adapter (every name of METHODS except "auto")
_SOLVERS = {
    "enumerate": _run_enumerate,
    "colgen": _run_colgen,
    "direct": _run_direct,
    "vertex": _run_vertex,
    "symmetry": _run_symmetry,
    "spr": _run_spr,
}


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
        ``status`` 0 = optimal, 1 = iteration/time limit; on an LP failure ``mechanism`` is ``None``,
        ``value`` is NaN and ``message`` says what failed and why.
    """
    # 1. validate
    eps = check_eps(eps, allow_inf=False)
    c0 = _scale(eps)
    if risk not in RISKS:
        raise ValueError(f"risk must be one of {RISKS}, got risk={risk!r}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got method={method!r}")
    max_iter = check_positive_int(max_iter, "max_iter")
    time_limit = _check_time_limit(time_limit)
    solved, obj, sense, name, exponent = _criterion(problem, risk)
    m = solved.num_inputs
    if m < 2:
        raise ValueError(f"an LDP channel design needs at least 2 inputs, got m={m}")
    _check_group(group, m)
    # 2. choose the method
    chosen = _choose(solved, obj, risk, group) if method == "auto" else method
    _check_applies(solved, risk, chosen)
    # 3. dispatch
    task = _Task(solved, obj, risk, eps, c0, group, max_iter, time_limit, check_invariance)
    sol = _SOLVERS[chosen](task)
    # 4. build the result
    return _unscale(_build(solved, obj, risk, sense, name, sol, eps, c0), exponent)


def _unscale(res: ChannelResult, exponent: int) -> ChannelResult:
    """Multiply the value and the certificate of a loss-scaled solve back by ``2**exponent``."""
    if exponent == 0:
        return res
    return dataclasses.replace(
        res, value=_times_pow2(res.value, exponent), certificate=_upscaled(res.certificate, exponent)
    )


def _data_span(problem: Any, obj: Any) -> tuple[float, float] | None:
    """Smallest and largest non-zero magnitude of the LP's data (loss and likelihood, or linear pieces)."""
    if isinstance(problem, DecisionProblem):
        vals = np.concatenate([problem.loss.ravel(), problem.likelihood.ravel()])
    elif isinstance(obj, RowAdditiveObjective) and obj.linear_pieces() is not None:
        vals = np.asarray(obj.linear_pieces(), dtype=float).ravel()
    else:
        return None
    mags = np.abs(vals[(vals != 0) & np.isfinite(vals)])
    return (float(mags.min()), float(mags.max())) if mags.size else None


def _failure_message(sol: _Solution, problem: Any, obj: Any, c0: float) -> str:
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
    span = _data_span(problem, obj)
    if span is not None:
        lo, hi = span
        cause += (
            f"; the non-zero data span {lo:.3g} .. {hi:.3g} (ratio {hi / lo:.2g}) with e^-eps = {c0:.3g}, "
            "and HiGHS's tolerances are absolute (1e-9): entries far below the largest are lost"
        )
    return f"{sol.method}: the LP solver failed, no channel returned: {cause} (solver message: {raw})"


def _build(
    problem: Any, obj: Any, risk: str, sense: str, name: str, sol: _Solution, eps: float, c0: float
) -> ChannelResult:
    if sol.rows.shape[0] == 0:
        return ChannelResult(
            math.nan,
            None,
            types.MappingProxyType({}),
            None,
            eps,
            name,
            sense,
            sol.method,
            sol.status or 4,
            _failure_message(sol, problem, obj, c0),
            sol.certificate,
            sol.iterations,
        )
    rows, w = sol.rows, np.asarray(sol.w, dtype=float)
    V = scaled_rows(rows, c0)  # (n, m) output rows, paper orientation
    # value from the channel's own weights
    if risk == "minimax":
        rule = sol.decisions
        assert rule is not None  # the minimax solvers return their (randomised) decision rule
        coef = c0 + (1.0 - c0) * rows.astype(float) @ problem.likelihood  # (n, T): S~_y . P_theta
        per_theta = np.einsum("n,nt,na,ta->t", w, coef, rule, problem.loss)
        value = float(per_theta.max())
    elif isinstance(obj, RowAdditiveObjective):
        value = obj.transform(math.fsum((w * obj.contributions(V)).tolist()))
        # the Bayes rule is recomputed per output (deterministic); pair LPs of other objectives
        # with linear pieces carry their own decisions
        if isinstance(obj, BayesRisk) or sol.decisions is None:
            rule = obj.decisions(V)
        else:
            rule = sol.decisions
    else:
        value = _evaluate(obj, rows, w, c0)
        rule = None
    cols = (w[:, None] * V).T  # rows = inputs
    matrix = cols / cols.sum(axis=1, keepdims=True)
    labels = getattr(problem, "labels", None)
    if labels is not None:
        out_labels = tuple(tuple(labels[i] for i in np.flatnonzero(r)) for r in rows)
    else:
        out_labels = tuple(tuple(int(i) for i in np.flatnonzero(r)) for r in rows)
    mech = Mechanism(matrix, eps, labels=labels, output_labels=out_labels, name=f"optimal_channel[{name}]")
    weights = {
        frozenset(int(i) for i in np.flatnonzero(r)): float(c0 * wt) for r, wt in zip(rows, w, strict=False)
    }
    return ChannelResult(
        float(value),
        mech,
        types.MappingProxyType(weights),
        rule,
        eps,
        name,
        sense,
        sol.method,
        sol.status,
        sol.message,
        sol.certificate,
        sol.iterations,
    )
