"""The frequency package and its CLI import no other module's private names (helpers shared by
two modules live, public, in the module that owns them)."""

from __future__ import annotations

import ast
from pathlib import Path

import ldpopt

SRC = Path(ldpopt.__file__).resolve().parent
FILES = [
    *sorted((SRC / "frequency").glob("*.py")),
    SRC / "cli" / "frequency.py",
    SRC / "deploy" / "target.py",
]


def _private_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ldpopt"):
            for alias in node.names:
                target = f"{node.module}.{alias.name}"
                is_module = (SRC.parent / (target.replace(".", "/") + ".py")).exists()
                if alias.name.startswith("_") and not alias.name.startswith("__") and not is_module:
                    found.append(f"{path.name}: {target}")
    return found


def test_no_private_names_from_other_modules():
    assert [hit for f in FILES for hit in _private_imports(f)] == []
