"""The one way the library writes a file the user named.

* A regular file (or a new name) is written atomically: the data goes to a temporary file in the
  destination folder, is flushed and fsync'ed, gets the mode a plain ``open()`` would have given it
  (``mkstemp`` creates 0600), and is moved into place with :func:`os.replace`, so nothing
  half-written is ever visible under the final name; on any error the temporary file is removed.
* A symbolic link is followed: the file it points to is replaced atomically and the link stays a
  link (replacing the link itself would leave its target stale).
* A target that exists and is not a regular file - a FIFO, a character device such as
  ``/dev/stdout`` or ``/dev/null``, a socket - is written through in place: it is never replaced
  by a regular file.
* ``"-"`` means standard output.

Nothing else is replaced or removed: missing parent folders of a new file are created, and a
directory is refused.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

__all__ = ["STDOUT", "atomic_write", "atomic_write_text", "is_stdout"]

#: the name that means standard output
STDOUT = "-"


def is_stdout(path: str | os.PathLike) -> bool:
    """True when ``path`` names standard output (``"-"``)."""
    return os.fspath(path) == STDOUT


def _default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _write_stdout(writer: Callable[[IO], object], binary: bool) -> None:
    stream: IO = sys.stdout.buffer if binary else sys.stdout
    writer(stream)
    stream.flush()


def _write_through(path: Path, writer: Callable[[IO], object], binary: bool, newline: str | None) -> None:
    """Write into an existing non-regular file (FIFO, device) without replacing it."""
    mode = "wb" if binary else "w"
    kwargs: dict[str, Any] = {} if binary else {"encoding": "utf-8", "newline": newline}
    with open(path, mode, **kwargs) as fh:
        writer(fh)


def _replace(path: Path, writer: Callable[[IO], object], binary: bool, newline: str | None) -> None:
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


def atomic_write(
    path: str | os.PathLike,
    writer: Callable[[IO], object],
    *,
    binary: bool = True,
    newline: str | None = None,
) -> Path:
    """Call ``writer(fileobj)`` and put what it wrote at ``path`` (see the module docstring for
    links, FIFOs, devices and ``"-"``); returns ``path``."""
    if is_stdout(path):
        _write_stdout(writer, binary)
        return Path(STDOUT)
    named = Path(path)
    target = Path(os.path.realpath(named)) if named.is_symlink() else named
    try:
        info = os.stat(target)
    except FileNotFoundError:
        info = None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(21, "Is a directory", str(named))
    if info is not None and not stat.S_ISREG(info.st_mode):
        _write_through(target, writer, binary, newline)
        return named
    target.parent.mkdir(parents=True, exist_ok=True)
    _replace(target, writer, binary, newline)
    return named


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` as :func:`atomic_write` does."""
    return atomic_write(path, lambda fh: fh.write(text), binary=False)
