"""Every exception and warning class ldpopt raises or emits, importable from :mod:`ldpopt`.

Bad arguments raise the built-in ``ValueError``/``TypeError`` with a message naming the argument;
the classes here mark failures of a whole input (a file, a configuration, a store) or of the
environment (a missing optional dependency).  Each derives from the built-in class a caller would
catch anyway.
"""

from __future__ import annotations

__all__ = [
    "LdpoptDeprecationWarning",
    "LdpoptWarning",
    "MechanismFileError",
    "MissingExtraError",
    "SchedulerError",
    "StoreError",
    "SweepConfigError",
]


class LdpoptWarning(UserWarning):
    """Base class of every warning ldpopt emits (filter with ``warnings.simplefilter``)."""


class LdpoptDeprecationWarning(LdpoptWarning, DeprecationWarning):
    """A call in a form that a later release will stop accepting (the message says the new form)."""


class MechanismFileError(ValueError):
    """A mechanism file is missing, malformed, tampered with or invalid."""


class SweepConfigError(ValueError):
    """A sweep configuration is malformed (message names the key and the value)."""


class StoreError(ValueError):
    """The output directory cannot hold this sweep (different sweep, foreign files, unwritable)."""


class SchedulerError(ValueError):
    """The scheduler name is invalid, Dask is missing, or the scheduler address is unreachable."""


class MissingExtraError(ImportError):
    """A feature needs an optional dependency that is not installed; the message names the extra.

    ``pip install "ldpopt[EXTRA]"`` installs it.
    """

    def __init__(self, feature: str, extra: str, missing: str) -> None:
        self.feature, self.extra, self.missing = feature, extra, missing
        super().__init__(
            f'{feature} needs the optional dependency {missing!r}: pip install "ldpopt[{extra}]"',
            name=missing,
        )
