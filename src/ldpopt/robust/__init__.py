"""Robust design when P0 and P1 are estimated: certified max-min mechanisms over uncertainty sets.

* :mod:`~ldpopt.robust.uncertainty` - the sets (``contamination``, ``total_variation``,
  ``kl_ball``, ``from_counts``), exposed as ``ldpopt.uncertainty``;
* :mod:`~ldpopt.robust.design` - :func:`robust_mechanism` and :func:`worst_case`;
* :mod:`~ldpopt.robust._inner` - the inner convex problems and their certificates;
* :mod:`~ldpopt.robust._piecewise` - the same for the piecewise-linear TV and E_gamma.
"""

from ldpopt.robust.design import RobustResult, WorstCaseResult, robust_mechanism, worst_case
from ldpopt.robust.uncertainty import Uncertainty

__all__ = ["RobustResult", "Uncertainty", "WorstCaseResult", "robust_mechanism", "worst_case"]
