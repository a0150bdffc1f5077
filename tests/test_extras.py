"""ldpopt._extras.require: an optional dependency, or a MissingExtraError naming the extra."""

from __future__ import annotations

import json
import sys

import pytest

from ldpopt._extras import require
from ldpopt.errors import MissingExtraError


def test_installed_module_is_returned():
    assert require("json", "reading", "sweeps") is json


def test_missing_module_names_feature_extra_and_module(monkeypatch):
    for name in ("pyarrow", "pyarrow.parquet"):  # as if not installed (other tests may have imported it)
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(MissingExtraError) as info:
        require("pyarrow.parquet", "ldpopt.sweeps", "sweeps")
    err = info.value
    assert (err.feature, err.extra, err.missing) == ("ldpopt.sweeps", "sweeps", "pyarrow")
    assert str(err) == "ldpopt.sweeps needs the optional dependency 'pyarrow': pip install \"ldpopt[sweeps]\""
    assert isinstance(err, ImportError) and err.name == "pyarrow"
    assert err.__cause__ is None and err.__suppress_context__  # raised `from None`


def test_broken_installation_keeps_its_own_error(monkeypatch, tmp_path):
    # a package that is installed but misses one of its own dependencies: not the extra's fault
    (tmp_path / "ldpopt_fake_pkg.py").write_text("import ldpopt_fake_missing_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError) as info:
        require("ldpopt_fake_pkg", "a feature", "sweeps")
    assert not isinstance(info.value, MissingExtraError)
    assert info.value.name == "ldpopt_fake_missing_dependency"
