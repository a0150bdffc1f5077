"""Worker processes that never outlive the sweep that started them, and a driver that stops on SIGTERM.

* :func:`follow_parent` (called in every worker): the worker exits by itself within
  :data:`PARENT_POLL_S` seconds once the driver is gone, however the driver ended (``kill -9``
  included).  On Linux the kernel sends the worker SIGKILL the moment its parent dies
  (``prctl(PR_SET_PDEATHSIG)``, which works even while a compiled kernel holds the GIL); everywhere a
  daemon thread also polls the parent pid and exits the process when it changed (the worker was
  re-parented).
* :func:`ignore_interrupts` (workers): Ctrl-C reaches the whole process group; the driver alone
  decides what happens (it stops the workers itself), so the workers do not print tracebacks.
* :func:`sigterm_as_interrupt` (driver): SIGTERM stops a sweep the way Ctrl-C does (a
  ``KeyboardInterrupt`` in the main thread: finished chunks are kept, the manifest is marked
  interrupted).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator

__all__ = ["PARENT_POLL_S", "follow_parent", "ignore_interrupts", "sigterm_as_interrupt"]

#: seconds between two checks of the parent pid in a worker
PARENT_POLL_S = 0.5
#: prctl option number (linux/prctl.h)
_PR_SET_PDEATHSIG = 1


def _exit_with_parent_linux() -> None:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux only; best effort)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except Exception:  # no libc prctl (unusual builds): the polling thread remains
        pass


def _poll(parent_pid: int) -> None:
    import time

    while True:
        if os.getppid() != parent_pid:
            os._exit(1)  # the driver is gone: nothing will ever read our results
        time.sleep(PARENT_POLL_S)


def follow_parent(parent_pid: int) -> None:
    """Make this (worker) process exit when the process ``parent_pid`` (its parent) ends.

    Idempotent: a second call in the same process does nothing.
    """
    if getattr(follow_parent, "_started", None) == os.getpid():
        return
    follow_parent._started = os.getpid()  # type: ignore[attr-defined]
    _exit_with_parent_linux()
    if os.getppid() != parent_pid:  # the parent died before the kernel could be asked
        os._exit(1)
    threading.Thread(target=_poll, args=(parent_pid,), name="ldpopt-parent-watch", daemon=True).start()


def ignore_interrupts() -> None:
    """Workers ignore SIGINT: the driver handles Ctrl-C and stops them itself."""
    with contextlib.suppress(ValueError):  # not the main thread of the worker (Dask): nothing to do
        signal.signal(signal.SIGINT, signal.SIG_IGN)


class _Terminated(KeyboardInterrupt):
    """Raised in the driver's main thread on SIGTERM (a ``KeyboardInterrupt``: stops like Ctrl-C)."""


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises ``KeyboardInterrupt`` in the main thread (once; a second
    SIGTERM terminates as usual).  Does nothing outside the main thread or when the program has
    its own SIGTERM handler."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    if previous is not signal.SIG_DFL:
        yield
        return

    def handler(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        raise _Terminated("terminated (SIGTERM)")

    signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
