"""Putting a mechanism to work: exact sampling on devices, mechanism files, audits, and tests and
sample sizes on the collected reports.

* :mod:`~ldpopt.deploy.sampling` - exact privatization from the OS CSPRNG;
* :mod:`~ldpopt.deploy.files` - versioned, self-checking mechanism files;
* :mod:`~ldpopt.deploy.audit` - a statistical lower bound on a sampler's true eps;
* :mod:`~ldpopt.deploy.testing` - likelihood-ratio and sequential tests, sample sizes.

``audit`` (named like its module) is not re-exported here, so that ``import ldpopt.deploy.audit``
keeps meaning the module; it is ``ldpopt.audit``.
"""

from ldpopt.deploy.audit import AuditResult
from ldpopt.deploy.files import MechanismFile, load_mechanism, save_mechanism
from ldpopt.deploy.testing import LikelihoodRatioTest, SequentialTest, sample_size

__all__ = [
    "AuditResult",
    "LikelihoodRatioTest",
    "MechanismFile",
    "SequentialTest",
    "load_mechanism",
    "sample_size",
    "save_mechanism",
]
