"""ldpopt: exactly optimal local-differential-privacy mechanisms.

* Binary hypothesis testing (Sort-Partition-Randomize): :func:`optimal_mechanism` (every
  f-divergence, Renyi, and the Chernoff information with a certificate: :func:`chernoff`).
* Dominance certificates for a given mechanism: :func:`spr_decomposition`, :func:`dominance`.
* Baselines and closed forms: :func:`randomized_response`, :func:`binary_mechanism`,
  :func:`egamma_mechanism`, :func:`lr_distance_mechanism`, :func:`kov_lp`.
"""

import importlib
from typing import Any

from ldpopt import _compat
from ldpopt._version import library_version
from ldpopt.divergences import (
    ChernoffInformation,
    FDivergence,
    chernoff,
    chernoff_information,
    egamma,
    f_divergence,
    get_divergence,
    renyi,
)
from ldpopt.errors import (
    LdpoptDeprecationWarning,
    LdpoptWarning,
    MechanismFileError,
    MissingExtraError,
    SchedulerError,
    StoreError,
    SweepConfigError,
)
from ldpopt.mechanism import Mechanism, binary_mechanism, randomized_response, spr_mechanism
from ldpopt.spr import (
    LRReduction,
    OptimalMechanismResult,
    egamma_mechanism,
    kov_lp,
    likelihood_ratio_reduction,
    lr_distance_mechanism,
)
from ldpopt.spr import optimal_mechanism as _spr_optimal_mechanism

# Names provided by modules with heavier imports are resolved on first access (PEP 562),
# so ``import ldpopt`` stays fast.  name -> (module, attribute); attribute None: the module itself.
_LAZY: dict[str, tuple[str, str | None]] = {
    # batched solver and geometry of the SPR problem
    "sweep": ("ldpopt.spr.grid", "sweep"),
    "warm_up": ("ldpopt.spr.warmup", "warm_up"),
    "WarmUpResult": ("ldpopt.spr.warmup", "WarmUpResult"),
    "SweepResult": ("ldpopt.spr.grid", "SweepResult"),
    "joint_range": ("ldpopt.spr.joint_range", "joint_range"),
    "JointRange": ("ldpopt.spr.joint_range", "JointRange"),
    # dominance certificates (Theorem 3.1 of the SPR paper for a given mechanism)
    "staircase_refinement": ("ldpopt.spr.certificates", "staircase_refinement"),
    "spr_decomposition": ("ldpopt.spr.certificates", "spr_decomposition"),
    "layer_decomposition": ("ldpopt.spr.certificates", "layer_decomposition"),
    "dominance": ("ldpopt.spr.certificates", "dominance"),
    "verify_certificate": ("ldpopt.spr.certificates", "verify_certificate"),
    "SPRDecomposition": ("ldpopt.spr.certificates", "SPRDecomposition"),
    "DominanceResult": ("ldpopt.spr.certificates", "DominanceResult"),
    "StaircaseRefinement": ("ldpopt.spr.certificates", "StaircaseRefinement"),
    # paper reproductions and figures
    "experiments": ("ldpopt.experiments", None),
    "plots": ("ldpopt.plots", None),
    # decision problems over the maximal-channel polytope
    "DecisionProblem": ("ldpopt.decision.problem", "DecisionProblem"),
    "optimal_channel": ("ldpopt.decision.solve", "optimal_channel"),
    "ChannelResult": ("ldpopt.decision.result", "ChannelResult"),
    "is_maximal": ("ldpopt.decision.polytope", "is_maximal"),
    "canonical_form": ("ldpopt.decision.polytope", "canonical_form"),
    "blackwell_dominates": ("ldpopt.decision.polytope", "blackwell_dominates"),
    "PermutationGroup": ("ldpopt.decision.symmetry", "PermutationGroup"),
    "subset_selection": ("ldpopt.decision.symmetry", "subset_selection"),
    "examples": ("ldpopt.decision.problems", None),
    # deployment
    "LikelihoodRatioTest": ("ldpopt.deploy.testing", "LikelihoodRatioTest"),
    "SequentialTest": ("ldpopt.deploy.testing", "SequentialTest"),
    "sample_size": ("ldpopt.deploy.sizing", "sample_size"),
    "audit": ("ldpopt.deploy.audit", "audit"),
    # the exact eps of any channel; inverse design (the smallest eps for a target)
    "certify_epsilon": ("ldpopt.deploy.certify", "certify_epsilon"),
    "EpsilonCertificate": ("ldpopt.deploy.certify", "EpsilonCertificate"),
    "minimum_epsilon": ("ldpopt.deploy.target", "minimum_epsilon"),
    "minimum_epsilon_for_width": ("ldpopt.deploy.target", "minimum_epsilon_for_width"),
    "minimum_epsilon_for_frequency_width": ("ldpopt.deploy.target", "minimum_epsilon_for_frequency_width"),
    "MinimumEpsilonResult": ("ldpopt.deploy.target", "MinimumEpsilonResult"),
    # the collector's side: estimates from reports, shuffle accounting
    "estimate": ("ldpopt.deploy.estimate", None),
    "shuffle": ("ldpopt.deploy.shuffle", None),
    "mixture_proportion": ("ldpopt.deploy.estimate", "mixture_proportion"),
    "frequencies": ("ldpopt.deploy.estimate", "frequencies"),
    "central_epsilon": ("ldpopt.deploy.shuffle", "central_epsilon"),
    "local_epsilon_for": ("ldpopt.deploy.shuffle", "local_epsilon_for"),
    "optimal_for_central": ("ldpopt.deploy.central", "optimal_for_central"),
    # other tools: OpenDP (the opendp extra), randomized-response parameters
    "to_opendp": ("ldpopt.interop.opendp", "to_opendp"),
    "from_opendp_rr": ("ldpopt.interop.opendp", "from_opendp_rr"),
    "rr_parameters": ("ldpopt.interop.rr", "rr_parameters"),
    "read_pair": ("ldpopt.deploy.pairs", "read_pair"),
    "LabelledPair": ("ldpopt.deploy.pairs", "LabelledPair"),
    # robust design over uncertainty sets
    "uncertainty": ("ldpopt.robust.uncertainty", None),
    "robust_mechanism": ("ldpopt.robust.design", "robust_mechanism"),
    "worst_case": ("ldpopt.robust.design", "worst_case"),
    "RobustResult": ("ldpopt.robust.design", "RobustResult"),
    # studies on disk
    "run_sweep": ("ldpopt.sweeps.runner", "run_sweep"),
}


def optimal_mechanism(
    p0: Any,
    p1: Any,
    eps: float | None = None,
    divergence: str | FDivergence = "kl",
    max_outputs: int | None = None,
    *,
    normalize: bool = False,
    method: str = "auto",
    central: tuple[float, float, int] | None = None,
) -> OptimalMechanismResult:
    """Exactly optimal eps-LDP mechanism for telling P0 from P1 (:func:`ldpopt.spr.optimal_mechanism`).

    With ``central=(eps, delta, n)`` instead of ``eps``: the most useful SPR mechanism whose n
    shuffled reports are (eps, delta)-DP by the tight shuffle bound, searched over the local eps0
    and the output budget (:func:`ldpopt.deploy.central.optimal_for_central`, which also returns
    the chosen eps0 and the shuffled guarantee); the result is the optimum at that eps0.
    """
    if central is None:
        if eps is None:
            raise TypeError("optimal_mechanism needs eps (or central=(eps, delta, n))")
        return _spr_optimal_mechanism(
            p0, p1, eps, divergence, max_outputs, normalize=normalize, method=method
        )
    if eps is not None:
        raise ValueError(f"give eps or central=(eps, delta, n), not both (got eps={eps!r})")
    design = importlib.import_module("ldpopt.deploy.central")  # loaded on first use: scipy.stats
    found = design.optimal_for_central(p0, p1, central, divergence, max_outputs, normalize=normalize)
    result: OptimalMechanismResult = found.result
    return result


def __getattr__(name: str) -> Any:
    if name == "__version__":  # read from the metadata on first use (see ldpopt._version)
        return library_version()
    entry = _LAZY.get(name)
    if entry is None:
        raise AttributeError(f"module 'ldpopt' has no attribute {name!r}")
    module, attribute = entry
    mod = importlib.import_module(module)
    value = mod if attribute is None else getattr(mod, attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


_compat.install()

__all__ = [
    "FDivergence",
    "LdpoptDeprecationWarning",
    "LdpoptWarning",
    "MechanismFileError",
    "MissingExtraError",
    "SchedulerError",
    "StoreError",
    "SweepConfigError",
    "LRReduction",
    "Mechanism",
    "OptimalMechanismResult",
    "binary_mechanism",
    "chernoff",
    "chernoff_information",
    "ChernoffInformation",
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
