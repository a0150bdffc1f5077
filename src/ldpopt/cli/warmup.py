"""``ldpopt warmup``: compile the solver's kernels into numba's on-disk cache ahead of use."""

from __future__ import annotations

from pathlib import Path

import typer

from ldpopt.cli._common import JsonOpt, app, console, fail_api, report_to_stderr_if_json_on_stdout, write_json

__all__ = ["warmup_cmd"]


@app.command("warmup")
def warmup_cmd(
    divergence: list[str] = typer.Option(
        ["kl"], "--divergence", "-d", help="A divergence whose kernels to compile (repeat for several)."
    ),
    path: list[str] = typer.Option(
        ["small", "large", "sweep"],
        "--path",
        help="Solver path to compile: small, large or sweep (repeatable).",
    ),
    json_out: Path | None = JsonOpt,
) -> None:
    """Compile the solver's kernels once, for every later process on this machine.

    For a container image's build or a CI job's set-up: later processes load the kernels from
    numba's cache (NUMBA_CACHE_DIR, else next to the package) instead of compiling them at their
    first call, and small single solves take their fastest path.
    """
    from ldpopt.spr.warmup import warm_up

    try:
        res = warm_up(divergence, paths=path)
    except (ValueError, TypeError) as exc:
        fail_api(exc, {"paths": "--path", "divergences": "--divergence"})
    where = res.cache_dir or "next to the package's sources"
    with report_to_stderr_if_json_on_stdout(json_out):
        console.print(
            f"compiled {res.compiled} kernel{'s' if res.compiled != 1 else ''} in {res.seconds:.1f} s "
            f"({', '.join(res.paths)}; {', '.join(res.divergences)}); numba's cache: {where}"
        )
        if json_out is not None:
            write_json(
                json_out,
                {
                    "seconds": res.seconds,
                    "compiled": res.compiled,
                    "divergences": list(res.divergences),
                    "paths": list(res.paths),
                    "cache_dir": res.cache_dir,
                },
            )
