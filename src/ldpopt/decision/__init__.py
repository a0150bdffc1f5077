"""General decision problems: exact optima over the polytope of maximal eps-LDP channels.

* :mod:`~ldpopt.decision.channel` - :class:`DecisionProblem`, :func:`optimal_channel`,
  :class:`ChannelResult`;
* :mod:`~ldpopt.decision.objectives` - Bayes risk, mutual information, Fisher information,
  f-divergences and user objectives;
* :mod:`~ldpopt.decision.polytope` - the maximal-channel polytope, canonical forms, Blackwell order;
* :mod:`~ldpopt.decision.symmetry` - permutation groups and symmetry reductions;
* :mod:`~ldpopt.decision.lp` - the linear programs (masters, pricing, column generation);
* :mod:`~ldpopt.decision.problems` - the papers' example problems.
"""

from ldpopt.decision.channel import ChannelResult, DecisionProblem, LPCertificate, optimal_channel
from ldpopt.decision.polytope import blackwell_dominates, canonical_form, is_maximal
from ldpopt.decision.symmetry import PermutationGroup, subset_selection

__all__ = [
    "ChannelResult",
    "DecisionProblem",
    "LPCertificate",
    "PermutationGroup",
    "blackwell_dominates",
    "canonical_form",
    "is_maximal",
    "optimal_channel",
    "subset_selection",
]
