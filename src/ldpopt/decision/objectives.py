r"""Row-additive objectives over LDP channels.

An objective :math:`R(Q)` of a channel is *row-additive* (direct-sum additive, DSA, in Nam-Park-Lee,
Def. 3.5) when it is a sum of contributions of the output rows,

.. math:: R(Q) = \sum_{y} \phi(Q_{y,*}),

with :math:`\phi` positively 1-homogeneous (:math:`\phi(tv)=t\phi(v)`, :math:`t\ge0`) so that it extends
to unnormalised rows.  On the maximal channels :math:`Q_{\rm ex}^{(c)}` the objective is then
*linear* in the weights, :math:`R = \sum_y c_y\,\phi(S_y)`, and the optimum over the polytope
:math:`\mathcal S_{\mathcal X,\varepsilon}` is a linear program (paper Remark 3.11, [KOV16, Thm. 4]).

Built-ins (all DSA, Remark 3.8):

* :class:`BayesRisk` of a :class:`~ldpopt.DecisionProblem`:
  :math:`\phi(v)=\min_a \sum_x v_x B_{x,a}`,
  :math:`B_{x,a}=\sum_\theta \lambda_\theta P(x|\theta) l(\theta,a)` (minimised; concave);
* :class:`MutualInformation` :math:`I(X;Y)` for an input prior :math:`\pi`:
  :math:`\phi(v)=\sum_x \pi_x v_x\log\frac{v_x}{\sum_{x'}\pi_{x'}v_{x'}}` (maximised; convex);
* :class:`FisherInformation` of a parametric family at :math:`\theta`:
  :math:`\phi(v)=\frac{(\sum_x v_x\,\partial_\theta p_\theta(x))^2}{\sum_x v_x p_\theta(x)}` (maximised);
* :class:`FDivergenceObjective` between two input distributions:
  :math:`\phi(v)=g(v\cdot p_0, v\cdot p_1)` with the perspective :math:`g(a,b)=b f(a/b)` (maximised), so the
  KOV staircase LP of :func:`ldpopt.kov_lp` is one instance.

A user plugs in an objective by subclassing :class:`RowAdditiveObjective` (implement ``rows``) or by
wrapping a vectorised function with :class:`RowObjective`.  Objectives that are concave in the
channel but not row-additive go through :class:`ChannelObjective` (vertex enumeration only).

Rows passed to ``rows`` use the paper's orientation: one row per output, one column per input.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ldpopt._validation import check_distribution, check_distribution_pair, check_positive_int
from ldpopt.decision.polytope import scaled_rows
from ldpopt.divergences import FDivergence, get_divergence
from ldpopt.mechanism import as_channel_matrix

__all__ = [
    "RowAdditiveObjective",
    "RowObjective",
    "ChannelObjective",
    "BayesRisk",
    "MutualInformation",
    "FisherInformation",
    "FDivergenceObjective",
    "support_value",
]

_SENSES = ("min", "max")
#: tolerance on sum_x d/dtheta p_theta(x) = 0 for a Fisher-information score
SCORE_SUM_TOL = 1e-9


def _check_sense(sense: Any) -> str:
    if sense not in _SENSES:
        raise ValueError(f"sense must be 'min' or 'max', got sense={sense!r}")
    return sense


def _channel_rows(mechanism: Any, m: int) -> np.ndarray:
    """Output rows (paper orientation) of a Mechanism or a rows=inputs matrix."""
    matrix = as_channel_matrix(mechanism, "mechanism")
    if matrix.shape[0] != m:
        raise ValueError(f"mechanism must have {m} inputs (rows), got shape {matrix.shape}")
    return matrix.T


def _set_user_function(obj: Any, func: Any, num_inputs: Any, sense: Any, name: Any) -> None:
    """Validate and store the fields shared by the user-function objectives."""
    if not callable(func):
        raise TypeError(f"func must be callable, got {type(func).__name__}")
    obj.func = func
    obj.num_inputs = check_positive_int(num_inputs, "num_inputs")
    obj.sense = _check_sense(sense)
    obj.name = str(name)


class RowAdditiveObjective(abc.ABC):
    r"""Interface of a row-additive (DSA) objective :math:`R(Q)=\sum_y\phi(Q_{y,*})`
    (paper Def. 3.5, Remark 3.11).

    Subclasses set ``num_inputs`` (m), ``sense`` (``"min"`` or ``"max"``) and ``name`` and implement
    :meth:`rows`.  Optional hooks:

    * :meth:`transform` maps the raw sum to the reported value (monotone increasing; e.g. Renyi);
    * :meth:`linear_pieces` returns B with :math:`\phi(v)=\min_k v\cdot B_{:,k}` (sense ``"min"``);
      it enables column generation and the channel LP (``method="colgen"``/``"direct"``);
    * :meth:`decisions` returns the decision attached to each row (Bayes rule), or ``None``.
    """

    num_inputs: int
    sense: str = "min"
    name: str = "objective"

    @abc.abstractmethod
    def rows(self, V: np.ndarray) -> np.ndarray:
        """Contributions :math:`\\phi(v)` of a batch of non-negative rows ``V`` (shape (n, m))
        -> shape (n,)."""

    def transform(self, raw: float) -> float:
        """Reported value of a raw sum of contributions (identity by default)."""
        return raw

    def linear_pieces(self) -> np.ndarray | None:
        r"""Matrix B (m, K) with :math:`\phi(v)=\min_k v\cdot B_{:,k}`, or ``None`` if :math:`\phi` is not
        of that form."""
        return None

    def decisions(self, V: np.ndarray) -> np.ndarray | None:
        """Decision attached to each row of ``V`` (e.g. a Bayes decision rule), or ``None``."""
        return None

    def contributions(self, V: Any) -> np.ndarray:
        """Validated :meth:`rows`: checks the shape and returns a float array of length n."""
        V = np.asarray(V, dtype=float)
        if V.ndim != 2 or V.shape[1] != self.num_inputs:
            raise ValueError(f"rows must have shape (n, {self.num_inputs}), got {V.shape}")
        out = np.asarray(self.rows(V), dtype=float).reshape(-1)
        if out.shape[0] != V.shape[0]:
            raise ValueError(f"objective {self.name!r} returned {out.shape[0]} values for {V.shape[0]} rows")
        if np.any(np.isnan(out)):
            raise ValueError(f"objective {self.name!r} returned NaN")
        return out

    def evaluate(self, mechanism: Any) -> float:
        r"""The objective of a whole channel: :math:`\sum_y\phi(Q_{y,*})`, transformed (``mechanism`` has
        rows = inputs)."""
        V = _channel_rows(mechanism, self.num_inputs)
        vals = self.contributions(V)
        if np.any(np.isinf(vals)):
            return self.transform(float(np.sum(vals)))
        return self.transform(math.fsum(vals.tolist()))

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(name={self.name!r}, sense={self.sense!r}, num_inputs={self.num_inputs})"
        )


class RowObjective(RowAdditiveObjective):
    r"""A row-additive objective from a user function.

    Parameters
    ----------
    func : callable
        ``func(V) -> values``: V is (n, m) non-negative rows, the result has length n.  It must be
        positively 1-homogeneous in each row (:math:`\phi(tv)=t\phi(v)`), otherwise the LP over the
        weights does not represent the objective.
    num_inputs : int
    sense : {"min", "max"}
    name : str
    transform : callable, optional
        Monotone increasing map from the raw sum to the reported value.
    """

    func: Callable[[np.ndarray], Any]

    def __init__(
        self,
        func: Callable[[np.ndarray], Any],
        num_inputs: int,
        sense: str = "min",
        name: str = "custom",
        transform: Callable[[float], float] | None = None,
    ):
        _set_user_function(self, func, num_inputs, sense, name)
        self._transform = transform

    def rows(self, V: np.ndarray) -> np.ndarray:
        return np.asarray(self.func(V), dtype=float)

    def transform(self, raw: float) -> float:
        return raw if self._transform is None else float(self._transform(raw))


class ChannelObjective:
    r"""A general objective of the whole channel, for vertex enumeration (``method="vertex"``).

    Theorem 3.10 / Remark 3.11 of the paper: if :math:`R^*` satisfies the DPI and is concave (to be
    minimised; convex to be maximised) on :math:`\mathcal S_{\mathcal X,\varepsilon}`, its optimum is
    attained at a vertex of the polytope.  The solver evaluates ``func`` on :math:`Q_{\rm ex}^{(c)}` at
    every vertex.

    Parameters
    ----------
    func : callable
        ``func(matrix) -> float`` with ``matrix`` rows = inputs (one column per used subset).
    num_inputs : int
    sense : {"min", "max"}
    name : str
    """

    func: Callable[[np.ndarray], float]
    num_inputs: int
    sense: str
    name: str

    def __init__(
        self,
        func: Callable[[np.ndarray], float],
        num_inputs: int,
        sense: str = "min",
        name: str = "channel objective",
    ):
        _set_user_function(self, func, num_inputs, sense, name)

    def evaluate(self, mechanism: Any) -> float:
        """``func`` of the channel (``mechanism`` has rows = inputs)."""
        V = _channel_rows(mechanism, self.num_inputs)
        value = float(self.func(V.T))
        if math.isnan(value):
            raise ValueError(f"objective {self.name!r} returned NaN")
        return value

    def __repr__(self) -> str:
        return f"ChannelObjective(name={self.name!r}, sense={self.sense!r}, num_inputs={self.num_inputs})"


@runtime_checkable
class _BayesData(Protocol):
    """What :class:`BayesRisk` reads of a :class:`~ldpopt.DecisionProblem`.  The check is structural
    because :mod:`ldpopt.decision.problem` builds on this module (``DecisionProblem.objective()``),
    so this module cannot import it."""

    @property
    def num_inputs(self) -> int: ...

    def bayes_matrix(self, prior: Any = None) -> np.ndarray: ...


class BayesRisk(RowAdditiveObjective):
    r"""Optimal Bayes risk of a decision problem, row-additive form (paper eq. 5 and Prop. 3.6).

    For the channel :math:`Q` and prior :math:`\lambda`,

    .. math:: R^*_{\rm B}(Q;\lambda) = \sum_y \min_a \sum_x Q_{y,x} B_{x,a},\qquad
              B_{x,a} = \sum_\theta \lambda_\theta P(x|\theta)\, l(\theta,a),

    so :math:`\phi(v)=\min_a v\cdot B_{:,a}`; the minimising action is the Bayes decision for that output.
    """

    sense = "min"

    def __init__(self, problem: Any):
        if not isinstance(problem, _BayesData):
            raise TypeError(f"problem must be a DecisionProblem, got {type(problem).__name__}")
        self.problem = problem
        self.num_inputs = problem.num_inputs
        self.name = "bayes"
        self._B = problem.bayes_matrix()

    def rows(self, V: np.ndarray) -> np.ndarray:
        return (V @ self._B).min(axis=1)

    def linear_pieces(self) -> np.ndarray:
        return self._B

    def decisions(self, V: np.ndarray) -> np.ndarray:
        """One-hot Bayes decisions (n, A); ties go to the lowest action index."""
        best = np.argmin(V @ self._B, axis=1)
        out = np.zeros((V.shape[0], self._B.shape[1]))
        out[np.arange(V.shape[0]), best] = 1.0
        return out


class MutualInformation(RowAdditiveObjective):
    r"""Mutual information :math:`I(X;Y)` (nats) of the channel for the input prior :math:`\pi` (maximised).

    .. math:: I(X;Y)=\sum_y \phi(Q_{y,*}),\qquad
              \phi(v)=\sum_x \pi_x v_x\log\frac{v_x}{\sum_{x'}\pi_{x'}v_{x'}},

    which is 1-homogeneous and convex in v (Remark 3.8; [WHN+19]).
    """

    sense = "max"

    def __init__(self, prior: Any = None, num_inputs: int | None = None):
        if prior is None:
            m = check_positive_int(num_inputs, "num_inputs")
            prior = np.full(m, 1.0 / m)
        self.prior = check_distribution(prior, "prior")
        if num_inputs is not None and check_positive_int(num_inputs, "num_inputs") != self.prior.shape[0]:
            raise ValueError(f"prior has {self.prior.shape[0]} entries but num_inputs={num_inputs}")
        self.num_inputs = self.prior.shape[0]
        self.name = "mutual_information"

    def rows(self, V: np.ndarray) -> np.ndarray:
        s = V @ self.prior
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = V / s[:, None]
            terms = np.where(V > 0, V * np.log(np.where(V > 0, ratio, 1.0)), 0.0)
        return terms @ self.prior


class FisherInformation(RowAdditiveObjective):
    r"""Fisher information of the privatised output at :math:`\theta` (maximised; [BCO20], Remark 3.8).

    For a family :math:`p_\theta` on the inputs with score direction :math:`s=\partial_\theta p_\theta`,

    .. math:: I_Y(\theta)=\sum_y\phi(Q_{y,*}),\qquad \phi(v)=\frac{(v\cdot s)^2}{v\cdot p_\theta};

    for a vector parameter (``derivative`` of shape (m, d)) the trace
    :math:`\sum_j (v\cdot s_j)^2/(v\cdot p)` is used.

    Parameters
    ----------
    pmf : array_like, shape (m,)
        :math:`p_\theta`.
    derivative : array_like, shape (m,) or (m, d)
        :math:`\partial_\theta p_\theta(x)`; each column must sum to 0.
    """

    sense = "max"

    def __init__(self, pmf: Any, derivative: Any):
        self.pmf = check_distribution(pmf, "pmf")
        try:
            d = np.array(derivative, dtype=float)
        except (TypeError, ValueError):
            raise TypeError("derivative must be an array of real numbers") from None
        if d.ndim == 1:
            d = d[:, None]
        if d.ndim != 2 or d.shape[0] != self.pmf.shape[0]:
            raise ValueError(
                f"derivative must have shape ({self.pmf.shape[0]},) or ({self.pmf.shape[0]}, d), "
                f"got {np.shape(derivative)}"
            )
        if not np.all(np.isfinite(d)):
            raise ValueError("derivative must contain only finite numbers")
        sums = d.sum(axis=0)
        if np.any(np.abs(sums) > SCORE_SUM_TOL * max(1.0, float(np.abs(d).sum()))):
            raise ValueError(f"derivative of a pmf must sum to 0 over the inputs, got sums {sums.tolist()!r}")
        self.derivative = d
        self.num_inputs = self.pmf.shape[0]
        self.name = "fisher_information"

    def rows(self, V: np.ndarray) -> np.ndarray:
        num = ((V @ self.derivative) ** 2).sum(axis=1)
        den = V @ self.pmf
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.where(num > 0, np.inf, 0.0))
        return out


class FDivergenceObjective(RowAdditiveObjective):
    r""":math:`D_f(Q P_0\,\|\,Q P_1)` between the output distributions of two input distributions (maximised).

    .. math:: \phi(v) = g(v\cdot p_0,\ v\cdot p_1),\qquad g(a,b)=b f(a/b),

    the perspective of :math:`f` (SPR paper eq. 2).  The LP over :math:`\mathcal S_{\mathcal X,\varepsilon}`
    is the KOV staircase LP (:func:`ldpopt.kov_lp`), and its optimum equals the SPR dynamic program
    (:func:`ldpopt.optimal_mechanism`).  ``transform`` reports Renyi divergences on their own scale.
    """

    sense = "max"

    def __init__(self, p0: Any, p1: Any, divergence: str | FDivergence = "kl"):
        self.p0, self.p1 = check_distribution_pair(p0, p1)
        self.divergence = get_divergence(divergence)
        self.num_inputs = self.p0.shape[0]
        self.name = f"f-divergence:{self.divergence.name}"

    def rows(self, V: np.ndarray) -> np.ndarray:
        a = V @ self.p0
        b = V @ self.p1
        d = V @ (self.p0 - self.p1)
        return self.divergence.perspective(a, b, d)

    def transform(self, raw: float) -> float:
        return self.divergence.transform(raw)


def support_value(obj: Any, rows: np.ndarray, w: np.ndarray, c0: float) -> float:
    """Objective of the maximal channel with support ``rows`` and scaled weights ``w`` (the raw sum of
    contributions, before ``transform``, for a row-additive objective)."""
    V = scaled_rows(rows, c0)
    if isinstance(obj, RowAdditiveObjective):
        vals = obj.contributions(V)
        return math.fsum((w * vals).tolist())
    cols = (w[:, None] * V).T
    return obj.evaluate(cols / cols.sum(axis=1, keepdims=True))
