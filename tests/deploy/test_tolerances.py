"""The shuffle accounting's rounding allowances have one definition each."""

from __future__ import annotations

import ast
import inspect

import ldpopt.deploy.blanket as blanket
import ldpopt.deploy.pld as pld
import ldpopt.deploy.shuffle as shuffle


def test_cdf_allowance_is_defined_once():
    assert shuffle.CDF_REL_ERR is pld.CDF_REL_ERR == 1e-11


def _bare_small_floats(module) -> list[float]:
    """Float literals below 1e-6 inside function bodies (named constants live at module level)."""
    tree = ast.parse(inspect.getsource(module))
    found = []
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef):
            for node in ast.walk(fn):
                if isinstance(node, ast.Constant) and isinstance(node.value, float) and 0 < node.value < 1e-6:
                    found.append(node.value)
    return found


def test_no_bare_tolerances_in_the_pld_and_blanket_kernels():
    assert _bare_small_floats(pld) == []
    assert _bare_small_floats(blanket) == []
