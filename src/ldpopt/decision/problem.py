r"""The finite statistical decision problem (Nam, Park, Lee, Sec. 2.2) and the validated call of
:func:`~ldpopt.decision.solve.optimal_channel`.

A decision problem :math:`(\Theta,\mathcal X,P_{X|\vartheta},\mathcal A,l)` with finite sets is given
by the likelihood matrix ``P[x, theta]`` (columns sum to 1), the loss ``L[theta, a]`` and a prior
:math:`\lambda`.  The data x is privatised by an :math:`\varepsilon`-LDP channel Q and the decision
maker sees only the output y.  :class:`DecisionProblem` holds the problem and evaluates the risks of
a given channel; :class:`Task` is one call of ``optimal_channel`` after validation, as every method
of :mod:`ldpopt.decision.methods` receives it.
"""

from __future__ import annotations

import math
from dataclasses import KW_ONLY, dataclass
from typing import Any, cast

import numpy as np
from scipy import optimize

from ldpopt._json import in_memory_file, loads_strict
from ldpopt._validation import as_real_array, check_distribution, is_real
from ldpopt.decision.objectives import BayesRisk
from ldpopt.mechanism import as_channel_matrix

__all__ = ["DecisionProblem", "Task", "LIKELIHOOD_TOL", "PROBLEM_KEYS"]

#: keys of a problem file (named like the arguments of :class:`DecisionProblem`)
PROBLEM_KEYS = ("likelihood", "loss", "prior", "labels", "parameter_labels", "action_labels", "name")
#: the older grouped form of the labels: ``"labels": {"inputs": ..., "parameters": ..., "actions": ...}``
_GROUPED_LABELS = {"inputs": "labels", "parameters": "parameter_labels", "actions": "action_labels"}

#: tolerance on |sum_x P(x|theta) - 1|
LIKELIHOOD_TOL = 1e-9


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


def _json_matrix(value: Any, key: str, where: str) -> list:
    if not isinstance(value, list) or not value or not all(isinstance(r, list) for r in value):
        raise ValueError(f"{where}: {key!r} must be a non-empty list of rows (lists of numbers)")
    widths = {len(r) for r in value}
    if len(widths) != 1 or 0 in widths:
        raise ValueError(
            f"{where}: {key!r} rows must all have the same non-zero length, got lengths {sorted(widths)}"
        )
    for i, row in enumerate(value):
        for j, v in enumerate(row):
            if not is_real(v):
                raise ValueError(f"{where}: {key}[{i}][{j}] must be a number, got {v!r}")
    return value


def _json_labels(value: Any, key: str, where: str) -> list:
    if not isinstance(value, list) or not all(isinstance(v, (str, int, float)) for v in value):
        raise ValueError(f"{where}: {key} must be a list of strings or numbers")
    return value


def _grouped_labels(labels: Any, where: str) -> dict:
    """``labels``: a list (the inputs' labels) or the grouped object of the older form."""
    if labels is None:
        return {}
    if not isinstance(labels, dict):
        return {"labels": _json_labels(labels, "labels", where)}
    bad = [k for k in labels if k not in _GROUPED_LABELS]
    if bad:
        raise ValueError(f"{where}: unknown labels key {bad[0]!r}; allowed: inputs, parameters, actions")
    return {_GROUPED_LABELS[k]: _json_labels(v, f"labels.{k}", where) for k, v in labels.items()}


def _problem_arguments(doc: Any, where: str) -> dict:
    """The keyword arguments of :class:`DecisionProblem` in a parsed problem file."""
    if not isinstance(doc, dict):
        raise ValueError(f"{where}: the top level must be an object with 'likelihood' and 'loss'")
    unknown = [k for k in doc if k not in PROBLEM_KEYS]
    if unknown:
        raise ValueError(f"{where}: unknown key {unknown[0]!r}; allowed keys: {', '.join(PROBLEM_KEYS)}")
    for key in ("likelihood", "loss"):
        if key not in doc:
            raise ValueError(f"{where}: missing key {key!r}")
    kwargs: dict[str, Any] = {k: _json_matrix(doc[k], k, where) for k in ("likelihood", "loss")}
    prior = doc.get("prior")
    if prior is not None:
        if not isinstance(prior, list) or not all(is_real(v) for v in prior):
            raise ValueError(f"{where}: 'prior' must be a list of numbers")
        kwargs["prior"] = prior
    kwargs.update(_grouped_labels(doc.get("labels"), where))
    for key in ("parameter_labels", "action_labels"):
        if doc.get(key) is not None:
            if key in kwargs:
                raise ValueError(f"{where}: {key} is given twice (also in 'labels')")
            kwargs[key] = _json_labels(doc[key], key, where)
    if "name" in doc:
        if not isinstance(doc["name"], str):
            raise ValueError(f"{where}: 'name' must be a string")
        kwargs["name"] = doc["name"]
    return kwargs


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

    @classmethod
    def from_json(cls, path: Any, *, filename: str | None = None) -> DecisionProblem:
        """Read a problem file: a JSON object with the keys of the constructor (``likelihood``,
        ``loss``, optional ``prior``, ``labels``, ``parameter_labels``, ``action_labels``, ``name``;
        ``labels`` may also be the object ``{"inputs", "parameters", "actions"}``).  The name
        defaults to the file's stem.  ``path`` is a path, or the file's content (``bytes`` or a
        binary file object) with ``filename`` naming it.  Every problem is a ValueError (TypeError
        for a bad path) naming the file."""
        from pathlib import Path

        content = in_memory_file(path, filename)
        if content is None:
            if not isinstance(path, (str, Path)) and not hasattr(path, "__fspath__"):
                raise TypeError(f"path must be a file path, bytes or a binary file object, got path={path!r}")
            path = Path(path)
            where, stem = str(path), path.stem
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                raise ValueError(f"{path}: no such file") from None
            except OSError as exc:
                raise ValueError(f"{path} cannot be read: {exc}") from None
        else:
            where, data = content
            stem = Path(where).stem
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{where} cannot be read: {exc}") from None
        doc = loads_strict(text, where)
        kwargs = _problem_arguments(doc, where)
        kwargs.setdefault("name", stem)
        try:
            return cls(**kwargs)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{where}: {exc}") from None

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
        matrix = as_channel_matrix(mechanism, "mechanism")
        if matrix.shape[0] != self.num_inputs:
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
        py = self._output_likelihood(mechanism)
        n, T = py.shape
        A = self.num_actions
        # variables delta[y, a] (row-major) and t
        coef = np.einsum("yt,ta->tya", py, self.loss).reshape(T, n * A)
        A_ub = np.hstack([coef, -np.ones((T, 1))])
        A_eq = np.hstack([np.kron(np.eye(n), np.ones((1, A))), np.zeros((n, 1))])
        c = np.zeros(n * A + 1)
        c[-1] = 1.0
        res = optimize.linprog(
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


@dataclass(frozen=True)
class Task:
    """One validated call of :func:`~ldpopt.decision.solve.optimal_channel`, as the methods see it.

    ``problem`` is the problem as solved: a decision problem's loss is at unit scale (divided by
    ``2**exponent``; the result is multiplied back when it is built).  ``obj`` is the objective
    (``None`` for the minimax risk), ``name`` and ``sense`` are reported in the result, ``c0`` is
    :math:`e^{-\varepsilon}`.
    """

    problem: Any
    obj: Any
    risk: str
    sense: str
    name: str
    exponent: int
    eps: float
    c0: float
    _: KW_ONLY  # at most 8 positional fields; the rest by keyword
    group: Any
    max_iter: int
    time_limit: float | None
    check_invariance: bool

    @property
    def num_inputs(self) -> int:
        """m, the size of the input alphabet."""
        return self.problem.num_inputs
