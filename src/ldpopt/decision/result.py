r"""What :func:`~ldpopt.decision.solve.optimal_channel` returns, and what its methods hand back.

* :class:`ChannelResult` - the public result: value, optimal maximal channel, weights, decision rule,
  ``status``/``success``/``message`` and the dual certificate;
* :class:`LPCertificate` - the dual solution that proves optimality (LP methods);
* :class:`Solution` - the record every method of :mod:`ldpopt.decision.methods` returns (support
  rows, scaled weights, decisions, status), turned into a :class:`ChannelResult` by ``solve``;
* :func:`certificate`, :func:`upscaled` - build and rescale certificates.

Status policy: invalid input raises (``ValueError``/``TypeError``); a solver that stops at a limit
returns its feasible channel with ``status`` 1; a solver that fails numerically returns a result with
``status`` not 0 (``success`` False), no mechanism, a NaN value and a message naming the cause.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field

import numpy as np

from ldpopt.decision.lp import column_bound, times_pow2
from ldpopt.mechanism import Mechanism

__all__ = ["ChannelResult", "LPCertificate", "Solution", "certificate", "upscaled", "CERT_RTOL"]

#: a certificate is accepted when its minimum reduced cost is >= -CERT_RTOL * scale
CERT_RTOL = 1e-8


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
    method : str
        The method that solved the problem (the one ``method="auto"`` chose).
    status : int
        0 = optimal; 1 = stopped at an iteration or time limit (a feasible channel, not proven
        optimal); any other value = the LP solver failed (no channel: ``mechanism`` is ``None``,
        ``value`` is NaN).
    success : bool
        ``status == 0``.
    message : str
        How the optimum was found, or why the solver stopped or failed.
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
    _: KW_ONLY  # at most 8 positional fields; the rest by keyword
    status: int = 0
    message: str = "optimal"
    certificate: LPCertificate | None = field(default=None, repr=False)
    iterations: int = 1

    @property
    def success(self) -> bool:
        """True when the channel is optimal (``status == 0``)."""
        return self.status == 0

    @property
    def num_outputs(self) -> int:
        """Number of outputs of the optimal channel."""
        return 0 if self.mechanism is None else self.mechanism.num_outputs

    @property
    def subsets(self) -> tuple:
        """The used subsets (frozensets of input indices), in the mechanism's column order."""
        return tuple(self.weights)


@dataclass
class Solution:
    """What a method returns: support rows (n, m), scaled weights (n,), decisions (or ``None``),
    status and message, and the certificate; ``solve`` turns it into a :class:`ChannelResult`.

    A failed method returns no rows (:meth:`failed`).
    """

    rows: np.ndarray
    w: np.ndarray
    decisions: np.ndarray | None
    method: str
    status: int = 0
    message: str = "optimal"
    certificate: LPCertificate | None = None
    iterations: int = 1

    @classmethod
    def failed(cls, m: int, method: str, status: int, message: str, iterations: int = 1) -> Solution:
        """No channel: the solver stopped with ``status`` (not 0) and ``message``."""
        return cls(np.zeros((0, m), bool), np.zeros(0), None, method, status, message, None, iterations)


def certificate(
    u: np.ndarray, prior: np.ndarray | None, rcmin: float, c0: float, sign: float, scale: float
) -> LPCertificate:
    """The certificate of duals ``u`` (and minimax ``prior``) whose exact minimum reduced cost is ``rcmin``.

    ``sign`` is -1 for a maximised objective (the LP minimises its negation); ``scale`` sets the
    tolerance of ``verified``.
    """
    m = u.shape[0]
    dual_value = float(u.sum())
    bound = dual_value + column_bound(m, c0) * min(0.0, rcmin)
    return LPCertificate(
        dual=np.asarray(u, dtype=float).copy(),
        prior=None if prior is None else np.asarray(prior).copy(),
        dual_value=dual_value,
        min_reduced_cost=float(rcmin),
        bound=sign * bound,
        verified=bool(rcmin >= -CERT_RTOL * max(scale, 1e-300)),
    )


def upscaled(cert: LPCertificate | None, exponent: int) -> LPCertificate | None:
    """The certificate of an LP solved with its costs divided by ``2**exponent``, at the original scale."""
    if cert is None or exponent == 0:
        return cert
    return dataclasses.replace(
        cert,
        dual=times_pow2(cert.dual, exponent),
        dual_value=times_pow2(cert.dual_value, exponent),
        min_reduced_cost=times_pow2(cert.min_reduced_cost, exponent),
        bound=times_pow2(cert.bound, exponent),
    )
