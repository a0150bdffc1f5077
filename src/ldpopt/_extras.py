"""Optional dependencies: import one, or say which extra installs it.

The core install is numpy, scipy, numba, typer and rich; pandas and pyarrow come with the
``sweeps`` extra, matplotlib with ``plots``.  A module that needs one of them imports it through
:func:`require`, so a missing one is a :class:`~ldpopt.errors.MissingExtraError` naming the extra
(``pip install "ldpopt[sweeps]"``) instead of a bare ``ModuleNotFoundError``.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ldpopt.errors import MissingExtraError

__all__ = ["require"]


def require(module: str, feature: str, extra: str) -> ModuleType:
    """``import module`` and return it; raise :class:`MissingExtraError` ``(feature, extra, top-level
    package)`` when that package is not installed.

    A missing dependency *of* an installed package (a broken installation) keeps its own
    ``ModuleNotFoundError``: installing the extra is not what fixes it.
    """
    top = module.partition(".")[0]
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.partition(".")[0] != top:
            raise
        raise MissingExtraError(feature, extra, top) from None
