"""ldpopt: exactly optimal local-differential-privacy mechanisms.

* Binary hypothesis testing (Sort-Partition-Randomize): :func:`optimal_mechanism`.
* Baselines and closed forms: :func:`randomized_response`, :func:`binary_mechanism`,
  :func:`egamma_mechanism`, :func:`lr_distance_mechanism`, :func:`kov_lp`.
"""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version

from ldpopt.divergences import FDivergence, egamma, f_divergence, get_divergence, renyi
from ldpopt.lp import kov_lp
from ldpopt.mechanism import Mechanism, binary_mechanism, randomized_response, spr_mechanism
from ldpopt.spr import (
    LRReduction,
    OptimalMechanismResult,
    egamma_mechanism,
    likelihood_ratio_reduction,
    lr_distance_mechanism,
    optimal_mechanism,
)

# Names provided by modules with heavier imports are resolved on first access (PEP 562),
# so ``import ldpopt`` stays fast.  name -> module.
_LAZY = {
    # fast batched solver
    "sweep": "ldpopt.batch",
    "SweepResult": "ldpopt.batch",
    # experiments / geometry
    "joint_range": "ldpopt.geometry",
    "JointRange": "ldpopt.geometry",
    "experiments": "ldpopt.experiments",
    "plots": "ldpopt.plots",
    # decision problems over the maximal-channel polytope
    "DecisionProblem": "ldpopt.decision",
    "optimal_channel": "ldpopt.decision",
    "ChannelResult": "ldpopt.decision",
    "is_maximal": "ldpopt.polytope",
    "canonical_form": "ldpopt.polytope",
    "blackwell_dominates": "ldpopt.polytope",
    "PermutationGroup": "ldpopt.symmetry",
    "subset_selection": "ldpopt.symmetry",
    "examples": "ldpopt.examples",
    # deployment
    "LikelihoodRatioTest": "ldpopt.inference",
    "SequentialTest": "ldpopt.inference",
    "sample_size": "ldpopt.inference",
    "audit": "ldpopt.auditing",
    # sweeps at scale
    "run_sweep": "ldpopt.runner",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ldpopt' has no attribute {name!r}")
    import importlib

    mod = importlib.import_module(module)
    value = mod if module.endswith("." + name) else getattr(mod, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


try:
    __version__ = _version("ldpopt")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

__all__ = [
    "FDivergence",
    "LRReduction",
    "Mechanism",
    "OptimalMechanismResult",
    "binary_mechanism",
    "egamma",
    "egamma_mechanism",
    "f_divergence",
    "get_divergence",
    "kov_lp",
    "likelihood_ratio_reduction",
    "lr_distance_mechanism",
    "optimal_mechanism",
    "randomized_response",
    "renyi",
    "spr_mechanism",
    *sorted(_LAZY),
]
