"""General decision problems: exact optima over the polytope of maximal eps-LDP channels.

Laid out like ``scipy.optimize``: one entry point, one result type, one module per method.

* :mod:`~ldpopt.decision.problem` - :class:`DecisionProblem` (likelihood, loss, prior; the risks of
  a given channel);
* :mod:`~ldpopt.decision.solve` - :func:`optimal_channel`: parse -> choose -> ``METHODS[name]`` ->
  build;
* :mod:`~ldpopt.decision.result` - :class:`ChannelResult` (``status``, ``success``, ``message``) and
  :class:`LPCertificate`;
* :mod:`~ldpopt.decision.methods` - one module per method (``enumerate``, ``colgen``, ``direct``,
  ``vertex``, ``symmetry``, ``spr``);
* :mod:`~ldpopt.decision.lp` - the linear programs (masters, pricing, column generation);
* :mod:`~ldpopt.decision.objectives` - Bayes risk, mutual information, Fisher information,
  f-divergences and user objectives;
* :mod:`~ldpopt.decision.polytope` - the maximal-channel polytope, canonical forms, Blackwell order;
* :mod:`~ldpopt.decision.symmetry` - permutation groups and symmetry reductions;
* :mod:`~ldpopt.decision.problems` - the papers' example problems.
"""

from ldpopt.decision.polytope import blackwell_dominates, canonical_form, is_maximal
from ldpopt.decision.problem import DecisionProblem
from ldpopt.decision.result import ChannelResult, LPCertificate
from ldpopt.decision.solve import METHODS, RISKS, optimal_channel
from ldpopt.decision.symmetry import PermutationGroup, subset_selection

__all__ = [
    "ChannelResult",
    "DecisionProblem",
    "LPCertificate",
    "METHODS",
    "PermutationGroup",
    "RISKS",
    "blackwell_dominates",
    "canonical_form",
    "is_maximal",
    "optimal_channel",
    "subset_selection",
]
