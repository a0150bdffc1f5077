"""Rules of the code base that no linter checks: private names stay in their package, public
functions take at most 8 positional parameters, and ``import ldpopt`` stays light.

(The import layers, cycles and private modules are checked by ``lint-imports``; see
``[tool.importlinter]`` in pyproject.toml.)
"""

from __future__ import annotations

import ast
import inspect
import pkgutil
import subprocess
import sys
from importlib import import_module
from pathlib import Path

import pytest

import ldpopt

SRC = Path(ldpopt.__file__).resolve().parent
#: the most positional parameters a public function or constructor may take
MAX_POSITIONAL = 8


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _package_of(module: str, is_package: bool) -> str:
    return module if is_package else module.rpartition(".")[0]


def _source_modules() -> list[tuple[str, Path]]:
    return sorted((_module_name(p), p) for p in SRC.rglob("*.py"))


def test_no_module_imports_another_packages_private_names():
    """``from ldpopt.x.y import _name`` only inside package ``ldpopt.x`` (a helper two packages
    need moves to the module that owns the concept, under a public name)."""
    offences = []
    for module, path in _source_modules():
        importer_pkg = _package_of(module, path.name == "__init__.py")
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ldpopt")):
                continue
            target = node.module
            target_is_pkg = (SRC.parent / target.replace(".", "/") / "__init__.py").exists()
            target_pkg = _package_of(target, target_is_pkg)
            for alias in node.names:
                name = alias.name
                private = name.startswith("_") and not name.startswith("__")
                submodule = SRC.parent / target.replace(".", "/") / name
                if submodule.with_suffix(".py").exists() or submodule.is_dir():
                    continue  # a private module: lint-imports' private_modules contract rules it
                if private and target_pkg != importer_pkg:
                    offences.append(f"{module}: from {target} import {name}")
    assert not offences, "\n".join(offences)


def _public_modules() -> list[str]:
    names = ["ldpopt"]
    for info in pkgutil.walk_packages(ldpopt.__path__, "ldpopt."):
        if not any(part.startswith("_") for part in info.name.split(".")[1:]):
            names.append(info.name)
    return names


OPTIONAL = {"ldpopt.plots", "ldpopt.sweeps", "ldpopt.experiments", "ldpopt.cli"}


def test_public_functions_take_at_most_eight_positional_parameters():
    offences = []
    for name in _public_modules():
        module = import_module(name)
        for attr, obj in vars(module).items():
            if attr.startswith("_") or getattr(obj, "__module__", None) != name:
                continue
            target = obj.__init__ if inspect.isclass(obj) else obj
            if not callable(target) or inspect.isbuiltin(target):
                continue
            try:
                params = inspect.signature(target).parameters.values()
            except (TypeError, ValueError):
                continue
            positional = [
                p
                for p in params
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name not in ("self", "cls")
            ]
            if len(positional) > MAX_POSITIONAL:
                offences.append(f"{name}.{attr}: {len(positional)} positional parameters")
    assert not offences, "\n".join(offences)


@pytest.mark.parametrize(
    "heavy", ["matplotlib", "pandas", "pyarrow", "dask", "typer", "rich", "numba", "cdd"]
)
def test_import_ldpopt_is_light(heavy):
    """``import ldpopt`` (and a first design) loads no plotting, dataframe, distributed, CLI or
    vertex-enumeration library; numba only once a compiled solver runs."""
    code = (
        "import sys, ldpopt\n"
        f"assert {heavy!r} not in sys.modules, 'import ldpopt imported {heavy}'\n"
        "ldpopt.optimal_mechanism([.1, .2, .7], [.3, .3, .4], 1.0, method='dp')\n"
        f"assert {heavy!r} not in sys.modules, 'a readable design imported {heavy}'\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_old_module_paths_import_with_a_deprecation_warning():
    from ldpopt import _compat

    for old, new in _compat.MOVED.items():
        code = (
            "import warnings, importlib\n"
            "warnings.simplefilter('error', DeprecationWarning)\n"
            f"try:\n    importlib.import_module({old!r})\n"
            "except DeprecationWarning as w:\n    print(w)\n"
            "else:\n    raise SystemExit('no warning')\n"
        )
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and new in r.stdout, (old, r.stdout, r.stderr)
        assert import_module(new) is not None
