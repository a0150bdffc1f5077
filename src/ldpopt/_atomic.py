"""Atomic file writes: nothing half-written is ever visible under the final name.

The data goes to a temporary file in the destination folder, is flushed and fsync'ed, gets the
mode a plain ``open()`` would have given it (``mkstemp`` creates 0600), and is moved into place
with :func:`os.replace` (atomic on POSIX and Windows).  On any error the temporary file is removed.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

__all__ = ["atomic_write", "atomic_write_text"]


def _default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def atomic_write(
    path: str | os.PathLike,
    writer: Callable[[IO], object],
    *,
    binary: bool = True,
    newline: str | None = None,
) -> Path:
    """Call ``writer(fileobj)`` on a temporary file beside ``path``, then move it onto ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        mode = "wb" if binary else "w"
        kwargs: dict[str, Any] = {} if binary else {"encoding": "utf-8", "newline": newline}
        with os.fdopen(fd, mode, **kwargs) as fh:
            writer(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _default_mode())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    return atomic_write(path, lambda fh: fh.write(text), binary=False)
