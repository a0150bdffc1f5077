"""The real ``ldpopt`` command in a subprocess, for the CLI tests: one definition of how it is run
(this checkout's sources first on the path) and of strict JSON reading."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import ldpopt

#: the sources the tests import, put first on the child's path
SRC = str(Path(ldpopt.__file__).resolve().parents[1])


def ldpopt_cmd(*args: Any, cwd: Any = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m ldpopt ARGS`` (each argument as ``str``), its stdout and stderr as text."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")]))
    return subprocess.run(
        [sys.executable, "-m", "ldpopt", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=env,
    )


def strict_json(text: str) -> Any:
    """``json.loads`` that refuses the non-standard constants NaN, Infinity and -Infinity."""

    def refuse(name: str) -> None:
        raise ValueError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)
