"""The linear data of a problem for the LP methods (``enumerate`` for minimax, ``colgen``, ``direct``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ldpopt.decision import lp
from ldpopt.decision.objectives import RowAdditiveObjective
from ldpopt.decision.problem import DecisionProblem
from ldpopt.decision.result import LPCertificate, certificate, upscaled


@dataclass(frozen=True)
class LinearData:
    r"""The data of a pair LP, divided by ``2**exponent`` (unit scale): the Bayes costs ``B`` (m, K)
    (a decision problem's :math:`B_{x,a}` or an objective's linear pieces), or for the minimax risk
    the likelihood ``P`` (m, T) and the loss ``L`` (T, K).  The unused arrays are ``None``."""

    num_inputs: int
    num_actions: int
    B: np.ndarray | None = None
    P: np.ndarray | None = None
    L: np.ndarray | None = None
    exponent: int = 0

    @property
    def minimax(self) -> bool:
        return self.B is None

    def costs(self, prior: np.ndarray | None) -> np.ndarray:
        r""":math:`B^\lambda`: ``B``, or :math:`P\,\mathrm{diag}(\lambda)\,L` at the minimax duals
        ``prior``."""
        if self.B is not None:
            return self.B
        assert self.P is not None and self.L is not None and prior is not None  # minimax data and duals
        return lp.effective_B(self.P, self.L, prior)

    def solve_pairs(self, rows: np.ndarray, actions: np.ndarray, c0: float) -> lp.PairLP:
        """The pair LP over the given (subset, action) columns."""
        if self.B is not None:
            return lp.solve_pair_lp(rows, actions, c0, costs=lp.pair_costs(rows, actions, self.B, c0))
        assert self.P is not None and self.L is not None  # minimax data
        return lp.solve_pair_lp(rows, actions, c0, risks=lp.pair_risks(rows, actions, self.P, self.L, c0))

    def certificate(self, u: np.ndarray, prior: np.ndarray | None, c0: float) -> LPCertificate | None:
        """The certificate of the duals ``u`` (and ``prior``), priced exactly, at the original scale."""
        costs = self.costs(prior)
        cert = certificate(u, prior, lp.min_reduced_cost(costs, u, c0), c0, 1.0, lp.data_scale(costs))
        return upscaled(cert, self.exponent)


def linear_data(problem: Any, risk: str) -> LinearData:
    """The LP data of a decision problem (its loss is already at unit scale) or of an objective with
    linear pieces (put to unit scale here); refuses any other objective."""
    if isinstance(problem, DecisionProblem):
        m, K = problem.num_inputs, problem.num_actions
        if risk == "minimax":
            return LinearData(m, K, P=problem.likelihood, L=problem.loss)
        return LinearData(m, K, B=problem.bayes_matrix())
    B = problem.linear_pieces() if isinstance(problem, RowAdditiveObjective) else None
    if B is None or problem.sense != "min":
        raise ValueError(
            f"this method needs a decision problem or an objective with linear_pieces() (sense 'min'); "
            f"{getattr(problem, 'name', problem)!r} has none; use method='enumerate', 'vertex' or 'symmetry'"
        )
    B = np.asarray(B, dtype=float)
    k = lp.unit_exponent(B)
    return LinearData(B.shape[0], B.shape[1], B=np.ldexp(B, -k), exponent=k)
