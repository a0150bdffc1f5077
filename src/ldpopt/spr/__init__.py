"""Binary hypothesis testing under eps-LDP: the Sort-Partition-Randomize (SPR) optimum.

* :mod:`~ldpopt.spr.solve` - :func:`optimal_mechanism` (validate -> reduce -> solve -> result) and
  the readable dynamic program;
* :mod:`~ldpopt.spr._fast`, :mod:`~ldpopt.spr._kernels` - the compiled exact solvers;
* :mod:`~ldpopt.spr.grid` - :func:`sweep`, a batched grid of instances x eps;
* :mod:`~ldpopt.spr.kov` - :func:`kov_lp`, the exponential staircase LP (an independent check);
* :mod:`~ldpopt.spr.joint_range` - ``joint_range``, the geometry of binary-output channels.

A function named like its module (``joint_range``) is not re-exported here, so that
``import ldpopt.spr.joint_range`` keeps meaning the module; it is ``ldpopt.joint_range``.
"""

from ldpopt.spr.grid import SweepResult, sweep
from ldpopt.spr.joint_range import JointRange
from ldpopt.spr.kov import kov_lp
from ldpopt.spr.solve import (
    LRReduction,
    OptimalMechanismResult,
    egamma_mechanism,
    likelihood_ratio_reduction,
    lr_distance_mechanism,
    optimal_mechanism,
)

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
