"""Old module paths of the flat layout, kept importable with a DeprecationWarning.

The library was one flat folder until version 0.2; its public modules now live in packages
(``ldpopt.spr``, ``ldpopt.decision``, ``ldpopt.deploy``, ``ldpopt.sweeps``).  A meta-path finder
maps each old public module name to the module that holds its code now, so
``from ldpopt.runner import run_sweep`` keeps working (and warns once) until the aliases are
removed.  The names exported at the top level (``ldpopt.run_sweep`` ...) never moved.

The same finder serves the short public paths of :data:`SHORT` without a warning: ``import
ldpopt.estimate`` is the module ``ldpopt.deploy.estimate`` under a second name (one module object,
so the package's layers see one module).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
import warnings
from collections.abc import Sequence

#: old public module -> its new home
MOVED = {
    "ldpopt.batch": "ldpopt.spr.grid",
    "ldpopt.lp": "ldpopt.spr.kov",
    "ldpopt.geometry": "ldpopt.spr.joint_range",
    "ldpopt.objectives": "ldpopt.decision.objectives",
    "ldpopt.polytope": "ldpopt.decision.polytope",
    "ldpopt.symmetry": "ldpopt.decision.symmetry",
    "ldpopt.examples": "ldpopt.decision.problems",
    "ldpopt.mechanism_io": "ldpopt.deploy.files",
    "ldpopt.auditing": "ldpopt.deploy.audit",
    "ldpopt.inference": "ldpopt.deploy",
    "ldpopt.runner": "ldpopt.sweeps.runner",
}

#: short public path -> the module it names (no warning: these paths are meant to stay)
SHORT = {
    "ldpopt.estimate": "ldpopt.deploy.estimate",
    "ldpopt.shuffle": "ldpopt.deploy.shuffle",
}


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, new: str, deprecated: bool = True) -> None:
        self.new = new
        self.deprecated = deprecated

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        if self.deprecated:
            warnings.warn(
                f"{spec.name} moved to {self.new}; import it from there (the old path will be removed)",
                DeprecationWarning,
                stacklevel=2,
            )
        return importlib.import_module(self.new)

    def exec_module(self, module: types.ModuleType) -> None:
        """The module was executed under its new name."""


class _MovedModuleFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(fullname)
        if new is not None:
            return importlib.util.spec_from_loader(fullname, _AliasLoader(new))
        short = SHORT.get(fullname)
        if short is not None:
            return importlib.util.spec_from_loader(fullname, _AliasLoader(short, deprecated=False))
        return None


def install() -> None:
    """Add the finder once (``import ldpopt`` calls this)."""
    if not any(isinstance(f, _MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(_MovedModuleFinder())
