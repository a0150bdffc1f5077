"""``ldpopt studio``: start the local web page (the optional extra ``studio``)."""

from __future__ import annotations

import os
import sys
from typing import NoReturn

import typer

from ldpopt.cli._common import EXIT_INTERRUPTED, app, console, err_console, fail
from ldpopt.errors import MissingExtraError


@app.command()
def studio(
    port: int = typer.Option(8765, "--port", help="TCP port to listen on."),
    host: str = typer.Option(
        "127.0.0.1", "--host", help="Address to bind (default: this machine only; 0.0.0.0 exposes it)."
    ),
    open_browser: bool = typer.Option(False, "--open", help="Open the page in the default browser."),
) -> None:
    """Start ldpopt studio, a local web page to design, compare and export mechanisms."""
    from ldpopt.studio import check_installed

    try:
        check_installed()
    except MissingExtraError as exc:
        fail(str(exc))
    if not 0 < port < 65536:
        fail(f"--port must be between 1 and 65535, got {port}")
    from ldpopt.studio.app import StudioStopped, page_url, serve

    console.print(f"ldpopt studio on {page_url(host, port)} (Ctrl-C stops it)", highlight=False)
    try:
        serve(host, port, open_browser)
    except OSError as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}", code=1)
    except StudioStopped as exc:  # SIGTERM, SIGHUP: a requested stop, status 0
        console.print(f"ldpopt studio stopped ({exc})", highlight=False)
        _end(0)
    except KeyboardInterrupt:
        err_console.print("ldpopt studio stopped (Ctrl-C)", highlight=False)
        _end(EXIT_INTERRUPTED)


def _end(code: int) -> NoReturn:
    """End the process now: a computation the page asked for may still run in a worker thread
    (a batched solve's pool), which the interpreter's exit would wait for; the studio keeps no
    state and writes no file, so nothing is lost."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
