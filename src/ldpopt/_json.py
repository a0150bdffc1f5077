"""The one strict JSON reader of the library's input files (mechanism files, problem files, instances).

:func:`loads_strict` is :func:`json.loads` that refuses what is not JSON or cannot be a number
here, each with a one-line ``ValueError`` naming the document:

* the non-standard constants ``NaN``, ``Infinity`` and ``-Infinity`` that Python's reader accepts;
* number literals beyond the range of a float (``1e400``, which Python reads as infinity, and
  integers beyond it or beyond Python's digit limit for ``int``);
* documents nested too deeply for the parser (``RecursionError``);
* plain syntax errors, with line and column.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["in_memory_file", "loads_strict"]


class _Refused(Exception):
    """A literal the strict reader refuses (raised from the parser's hooks)."""


def _refuse_constant(name: str) -> Any:
    raise _Refused(f"non-standard constant {name}; NaN and infinities are not allowed")


def _parse_int(text: str) -> int:
    try:
        value = int(text)
        float(value)
    except (OverflowError, ValueError):
        raise _Refused(
            f"integer literal of {len(text.lstrip('-'))} digits is beyond the float range"
        ) from None
    return value


def _parse_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _Refused(f"number literal {text[:40]} is beyond the float range")
    return value


def loads_strict(text: str, what: Any) -> Any:
    """Parse JSON ``text``; ``what`` (a path or a description) starts every error message.

    Raises ``ValueError`` with one line ``"{what}: not valid JSON (...)"`` for a syntax error,
    ``NaN``/``Infinity``/``-Infinity``, a number literal beyond the float range, or a
    document nested too deeply to parse.
    """
    try:
        return json.loads(
            text, parse_constant=_refuse_constant, parse_int=_parse_int, parse_float=_parse_float
        )
    except json.JSONDecodeError as exc:
        reason = f"line {exc.lineno}, column {exc.colno}: {exc.msg}"
    except _Refused as exc:
        reason = str(exc)
    except RecursionError:
        reason = "nested too deeply"
    raise ValueError(f"{what}: not valid JSON ({reason})")


def in_memory_file(source: Any, filename: Any) -> tuple[str, bytes] | None:
    """``(name, content)`` of an input file given in memory (``bytes`` or a binary file object,
    named by ``filename`` or the object's ``name``); None when ``source`` is not (a path).

    The readers of input files take either a path or such content (the studio reads uploads
    without writing them to disk); ``name`` is the file's base name, for the format and messages.
    """
    if not (isinstance(source, (bytes, bytearray, memoryview)) or hasattr(source, "read")):
        if filename is not None:
            raise TypeError(f"filename names in-memory content only, got filename={filename!r} with a path")
        return None
    name = filename if filename is not None else getattr(source, "name", None)
    if not isinstance(name, str) or not name:
        raise TypeError(
            f"filename must name the content's file (its suffix gives the format), got filename={name!r}"
        )
    short = name.replace("\\", "/").rpartition("/")[2]
    data = source.read() if hasattr(source, "read") else bytes(source)
    if not isinstance(data, bytes):
        raise TypeError(f"{short}: the file object must be opened in binary mode, got {type(data).__name__}")
    return short, data
