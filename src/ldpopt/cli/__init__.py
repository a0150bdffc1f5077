"""Command-line interface (typer + rich): ``ldpopt COMMAND``.

One module per command group registers its commands on :data:`ldpopt.cli._common.app`:
:mod:`~ldpopt.cli.design` (design, demo), :mod:`~ldpopt.cli.deploy` (export, privatize, test,
samplesize), :mod:`~ldpopt.cli.decide`, :mod:`~ldpopt.cli.estimate`, :mod:`~ldpopt.cli.reproduce`,
:mod:`~ldpopt.cli.sweep`, :mod:`~ldpopt.cli.certify` (compare, verify-certificate),
:mod:`~ldpopt.cli.studio` and :mod:`~ldpopt.cli.warmup`.
"""

from __future__ import annotations

import gc
import os
import sys

from ldpopt.cli import certify, decide, deploy, design, estimate, reproduce, studio, sweep, warmup
from ldpopt.cli._common import app, command, err_console

__all__ = ["app", "main"]
_COMMAND_GROUPS = (design, deploy, decide, estimate, reproduce, sweep, certify, studio, warmup)


def main() -> None:  # pragma: no cover - exercised through the console script
    """Console-script entry point."""
    try:
        args = sys.argv[1:]
        command(help_requested=not args or "-h" in args or "--help" in args)(prog_name="ldpopt")
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)
    except Exception as exc:  # the safety net: a one-line error, never a traceback
        if os.environ.get("LDPOPT_DEBUG"):
            raise
        err_console.print(
            f"error: {type(exc).__name__}: {exc} (an unexpected failure; LDPOPT_DEBUG=1 shows the traceback)",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        sys.exit(1)
    finally:
        # the process ends here: leave the objects alive now out of the interpreter's last
        # garbage collection, which would tear numba's compiled-kernel objects down one by one
        # (0.4-1.5 s after any command that loaded a kernel)
        gc.freeze()
