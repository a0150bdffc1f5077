"""Binary hypothesis testing under eps-LDP: the Sort-Partition-Randomize (SPR) optimum.

* :mod:`~ldpopt.spr.solve` - :func:`optimal_mechanism` (validate -> reduce -> policy -> solve ->
  result) and :class:`OptimalMechanismResult`;
* :mod:`~ldpopt.spr.reduction` - the likelihood-ratio reduction and the compensated block sums;
* :mod:`~ldpopt.spr.reference` - the readable dynamic program (the specification);
* :mod:`~ldpopt.spr._policy` - the one solve policy (which algorithm answers, and when);
* :mod:`~ldpopt.spr._fast`, :mod:`~ldpopt.spr._kernels` - the compiled exact solvers;
* :mod:`~ldpopt.spr.closed_forms` - ``egamma_mechanism``, ``lr_distance_mechanism``;
* :mod:`~ldpopt.spr.grid` - :func:`sweep`, a batched grid of instances x eps;
* :mod:`~ldpopt.spr.kov` - :func:`kov_lp`, the exponential staircase LP (an independent check);
* :mod:`~ldpopt.spr.joint_range` - ``joint_range``, the geometry of binary-output channels;
* :mod:`~ldpopt.spr.certificates` - ``spr_decomposition``, ``dominance``: Theorem 3.1 for a given
  mechanism, as a certificate checked by matrix products.

A function named like its module (``joint_range``) is not re-exported here, so that
``import ldpopt.spr.joint_range`` keeps meaning the module; it is ``ldpopt.joint_range``.
"""

from ldpopt.spr.closed_forms import egamma_mechanism, lr_distance_mechanism
from ldpopt.spr.grid import SweepResult, sweep
from ldpopt.spr.joint_range import JointRange
from ldpopt.spr.kov import kov_lp
from ldpopt.spr.reduction import LRReduction, likelihood_ratio_reduction
from ldpopt.spr.solve import OptimalMechanismResult, optimal_mechanism

__all__ = [
    "JointRange",
    "LRReduction",
    "OptimalMechanismResult",
    "SweepResult",
    "egamma_mechanism",
    "kov_lp",
    "likelihood_ratio_reduction",
    "lr_distance_mechanism",
    "optimal_mechanism",
    "sweep",
]
