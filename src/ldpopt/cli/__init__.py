"""Command-line interface (typer + rich): ``ldpopt COMMAND``.

One module per command group registers its commands on :data:`ldpopt.cli._common.app`:
:mod:`~ldpopt.cli.design` (design, demo), :mod:`~ldpopt.cli.deploy` (export, privatize, test,
samplesize), :mod:`~ldpopt.cli.decide`, :mod:`~ldpopt.cli.estimate`, :mod:`~ldpopt.cli.frequency`,
:mod:`~ldpopt.cli.shuffle`, :mod:`~ldpopt.cli.reproduce`, :mod:`~ldpopt.cli.sweep`,
:mod:`~ldpopt.cli.certify` (compare, verify-certificate), :mod:`~ldpopt.cli.certify_eps`
(certify-eps), :mod:`~ldpopt.cli.studio` and :mod:`~ldpopt.cli.warmup`.
"""

from __future__ import annotations

import gc
import os
import sys

import typer

from ldpopt.cli import (
    certify,
    certify_eps,
    decide,
    deploy,
    design,
    estimate,
    frequency,
    reproduce,
    shuffle,
    studio,
    sweep,
    warmup,
)
from ldpopt.cli._common import EXIT_INTERRUPTED, app, command, err_console, interrupt_reported

__all__ = ["app", "main"]
_COMMAND_GROUPS = (
    design,
    deploy,
    decide,
    estimate,
    frequency,
    shuffle,
    reproduce,
    sweep,
    certify,
    certify_eps,
    studio,
    warmup,
)


def main() -> None:  # pragma: no cover - exercised through the console script
    """Console-script entry point."""
    try:
        args = sys.argv[1:]
        group = command(help_requested=not args or "-h" in args or "--help" in args)
        if not args:  # bare `ldpopt`: the help and status 2, as click shows them
            group(args=[], prog_name="ldpopt")
        # not standalone: a usage error comes here instead of click's multi-line usage block
        code = group.main(args=args, prog_name="ldpopt", standalone_mode=False)
    except typer.TyperException as exc:  # click's errors (a bad option or value: status 2)
        sys.exit(_click_error(exc))
    except (KeyboardInterrupt, typer.Abort):
        err_console.print("interrupted")
        sys.exit(EXIT_INTERRUPTED)
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
    else:
        # a command's typer.Exit(n) comes back as n; a command that returns ends with status 0
        code = code if isinstance(code, int) and not isinstance(code, bool) else 0
        if code == EXIT_INTERRUPTED and not interrupt_reported():
            # typer turns a Ctrl-C into a silent typer.Exit(130): say why the command stopped
            err_console.print("interrupted")
        sys.exit(code)
    finally:
        # the process ends here: leave the objects alive now out of the interpreter's last
        # garbage collection, which would tear numba's compiled-kernel objects down one by one
        # (0.4-1.5 s after any command that loaded a kernel)
        gc.freeze()


def _click_error(exc: typer.TyperException) -> int:
    """Print an error of the command line's parser in one line (a usage error with where to find
    the command's help) and return its exit status."""
    text = f"error: {exc.format_message()}"
    if exc.exit_code == 2:  # a usage error: it knows its command
        ctx = getattr(exc, "ctx", None)
        text += f" (see '{getattr(ctx, 'command_path', 'ldpopt')} -h')"
    err_console.print(" ".join(text.split()), markup=False, highlight=False, soft_wrap=True)
    return exc.exit_code
