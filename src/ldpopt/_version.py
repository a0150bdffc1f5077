"""The installed ldpopt's version, read from the package metadata on first use.

``importlib.metadata`` costs about 35 ms to import, which every command-line call would pay at
``import ldpopt``; ``ldpopt.__version__`` and the mechanism files' ``library_version`` ask here
instead, when they are needed.
"""

from __future__ import annotations

import functools


@functools.cache
def library_version() -> str:
    """``ldpopt.__version__``: the installed distribution's version ("0.0.0" from a bare source tree)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ldpopt")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0.0.0"
