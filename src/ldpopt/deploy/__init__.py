"""Putting a mechanism to work: exact sampling on devices, mechanism files, audits, and tests and
sample sizes on the collected reports.

* :mod:`~ldpopt.deploy.sampling` - exact privatization from the OS CSPRNG;
* :mod:`~ldpopt.deploy.files` - versioned, self-checking mechanism files;
* :mod:`~ldpopt.deploy.audit` - a statistical lower bound on a sampler's true eps;
* :mod:`~ldpopt.deploy.certify` - the exact eps of any channel matrix, proven by rational arithmetic;
* :mod:`~ldpopt.deploy.llr` - the law of the likelihood-ratio statistic and the level-alpha tests;
* :mod:`~ldpopt.deploy.testing` - the likelihood-ratio test, Bayes decisions, the sequential test;
* :mod:`~ldpopt.deploy.sizing` - sample sizes;
* :mod:`~ldpopt.deploy.target` - the smallest eps for a target power or interval width;
* :mod:`~ldpopt.deploy.estimate` - the mixing proportion and input frequencies from reports;
* :mod:`~ldpopt.deploy.shuffle` - the central (eps, delta) of shuffled reports.
* :mod:`~ldpopt.deploy.pairs` - the reader of distribution pairs from CSV, Parquet and JSON files.

The names below are resolved on first access (PEP 562): the statistics modules import
``scipy.stats``, which a device that only privatizes does not need.  ``audit`` (named like its
module) is not re-exported here, so that ``import ldpopt.deploy.audit`` keeps meaning the module;
it is ``ldpopt.audit``.  This package also serves the old module path ``ldpopt.inference``.
"""

import importlib
from typing import Any

#: name -> module that defines it
_LAZY = {
    "AuditResult": "ldpopt.deploy.audit",
    "EpsilonCertificate": "ldpopt.deploy.certify",
    "certify_epsilon": "ldpopt.deploy.certify",
    "MinimumEpsilonResult": "ldpopt.deploy.target",
    "minimum_epsilon": "ldpopt.deploy.target",
    "minimum_epsilon_for_width": "ldpopt.deploy.target",
    "minimum_epsilon_for_frequency_width": "ldpopt.deploy.target",
    "MechanismFile": "ldpopt.deploy.files",
    "load_mechanism": "ldpopt.deploy.files",
    "save_mechanism": "ldpopt.deploy.files",
    "BayesDecision": "ldpopt.deploy.testing",
    "LikelihoodRatioTest": "ldpopt.deploy.testing",
    "SequentialResult": "ldpopt.deploy.testing",
    "SequentialTest": "ldpopt.deploy.testing",
    "TestDesign": "ldpopt.deploy.testing",
    "TestResult": "ldpopt.deploy.testing",
    "LabelledPair": "ldpopt.deploy.pairs",
    "read_pair": "ldpopt.deploy.pairs",
    "SampleSizeResult": "ldpopt.deploy.sizing",
    "sample_size": "ldpopt.deploy.sizing",
    "MixtureEstimate": "ldpopt.deploy.estimate",
    "FrequencyEstimate": "ldpopt.deploy.estimate",
    "mixture_proportion": "ldpopt.deploy.estimate",
    "frequencies": "ldpopt.deploy.estimate",
    "ShuffleBound": "ldpopt.deploy.shuffle",
    "LocalEpsilon": "ldpopt.deploy.shuffle",
    "central_epsilon": "ldpopt.deploy.shuffle",
    "local_epsilon_for": "ldpopt.deploy.shuffle",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ldpopt.deploy' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = sorted(_LAZY)
