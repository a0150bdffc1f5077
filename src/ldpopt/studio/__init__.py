"""``ldpopt studio``: a local web page to design, compare and export mechanisms.

* :mod:`ldpopt.studio.core` computes each panel's answer from a request's fields (no web, no
  state, no files), validated by the library's own validators;
* :mod:`ldpopt.studio.app` is the web application (Starlette, uvicorn) serving the page in
  ``static/`` with the plotly.js that ships inside the plotly package (works offline); it reads
  uploaded pairs in memory with the library's one reader, :func:`ldpopt.read_pair`.

The web stack is the optional extra ``studio``; :func:`check_installed` names it when a piece
is missing.  ``docs/studio.md`` explains each panel.
"""

from __future__ import annotations

from ldpopt._extras import require

__all__ = ["FEATURE", "STACK", "check_installed"]

FEATURE = "ldpopt studio"
#: the third-party modules of the studio (all from the ``studio`` extra; pyarrow reads Parquet uploads)
STACK = ("starlette", "uvicorn", "plotly", "pyarrow")


def check_installed() -> None:
    """Raise :class:`~ldpopt.errors.MissingExtraError` naming the ``studio`` extra when a module of
    the web stack is missing."""
    for module in STACK:
        require(module, FEATURE, "studio")
