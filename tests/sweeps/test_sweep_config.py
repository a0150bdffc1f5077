"""Sweep configuration parsing: the issue's example, ranges, instance files, and every rejection."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from ldpopt.sweeps.config import (
    KOV_LP_MAX_K,
    SweepConfigError,
    dirichlet_pair,
    load_config,
    parse_config,
)

ISSUE_EXAMPLE = """
[instances]
generator = "dirichlet"   # or: file = "pairs.parquet"
k = 40
trials = 24
alpha = 1.0
seed = 3
[grid]
eps = {start = 0.1, stop = 6.0, step = 0.1}   # or an explicit list
divergences = ["kl", "tv"]                    # built-in names, or "egamma:1.5", "renyi:2"
max_outputs = [0]                             # 0 = no budget
baselines = ["binary", "rr"]
"""


def base(**over):
    cfg = {
        "instances": {"generator": "dirichlet", "k": 5, "trials": 3, "alpha": 1.0, "seed": 1},
        "grid": {"eps": [0.5, 1.0], "divergences": ["kl"], "max_outputs": [0], "baselines": []},
    }
    for dotted, value in over.items():
        sec, key = dotted.split("__")
        if value is _DELETE:
            cfg[sec].pop(key)
        else:
            cfg.setdefault(sec, {})[key] = value
    return cfg


_DELETE = object()


def test_issue_example(tmp_path):
    path = tmp_path / "cfg.toml"
    path.write_text(ISSUE_EXAMPLE)
    cfg = load_config(path)
    assert cfg.num_instances == 24 and set(cfg.instances.ks) == {40}
    assert cfg.divergences == ("kl", "tv") and cfg.budgets == (0,) and cfg.baselines == ("binary", "rr")
    # the range includes stop and every point is the float nearest the decimal written
    assert len(cfg.eps) == 60
    assert cfg.eps == tuple(float(Fraction(i, 10)) for i in range(1, 61))
    assert cfg.num_cells == 24 * 60 * 2
    assert cfg.rows_per_instance == 60 * 2 * 3
    assert cfg.source == str(path.resolve())


def test_range_rounding_and_single_point():
    cfg = parse_config(base(grid__eps={"start": 0.3, "stop": 0.3, "step": 0.1}))
    assert cfg.eps == (0.3,)
    cfg = parse_config(base(grid__eps={"start": 1, "stop": 2, "step": 0.25}))
    assert cfg.eps == (1.0, 1.25, 1.5, 1.75, 2.0)
    # stop not on the grid: the last point is the largest one <= stop
    cfg = parse_config(base(grid__eps={"start": 0.5, "stop": 1.9, "step": 0.5}))
    assert cfg.eps == (0.5, 1.0, 1.5)


def test_dirichlet_instances_are_per_index_streams():
    cfg = parse_config(base(instances__alpha=[0.5, 1, 2, 1, 1]))
    u, v = dirichlet_pair(cfg.instances.spec, 2)
    rng = np.random.default_rng([1, 2])
    a = np.array([0.5, 1, 2, 1, 1], float)
    np.testing.assert_array_equal(u, rng.dirichlet(a))
    np.testing.assert_array_equal(v, rng.dirichlet(a))
    # a block of instances is the same whichever block it is fetched with
    whole = cfg.instances.get(0, 3)
    assert all(np.array_equal(x[0], y[0]) for x, y in zip(whole[1:], cfg.instances.get(1, 3), strict=False))


def test_fingerprint_tracks_everything_that_changes_results():
    a = parse_config(base())
    assert a.fingerprint(2) == parse_config(base()).fingerprint(2)
    assert a.fingerprint(2) != a.fingerprint(3)
    for change in (
        {"grid__eps": [0.5, 1.5]},
        {"instances__seed": 2},
        {"grid__divergences": ["tv"]},
        {"grid__max_outputs": [0, 2]},
        {"grid__baselines": ["rr"]},
        {"instances__alpha": 2.0},
    ):
        assert parse_config(base(**change)).fingerprint(2) != a.fingerprint(2), change


def write_long(tmp_path, fmt, rows):
    df = pd.DataFrame(rows, columns=["instance", "symbol", "p0", "p1"])
    path = tmp_path / f"pairs.{fmt}"
    if fmt == "csv":
        df.to_csv(path, index=False)
    else:
        df.to_parquet(path, index=False)
    return path


ROWS = [
    ("a", "x", 0.5, 0.25),
    ("a", "y", 0.5, 0.75),
    ("b", "x", 0.2, 0.3),
    ("b", "y", 0.3, 0.3),
    ("b", "z", 0.5, 0.4),
]


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_long_format_files(tmp_path, fmt):
    path = write_long(tmp_path, fmt, ROWS)
    cfg = parse_config(
        {"instances": {"file": path.name}, "grid": {"eps": [1.0], "divergences": ["kl"]}}, base_dir=tmp_path
    )
    assert cfg.instances.ids == ("a", "b")
    assert list(cfg.instances.ks) == [2, 3]
    ((u, v),) = cfg.instances.get(1, 2)
    np.testing.assert_array_equal(u, [0.2, 0.3, 0.5])
    np.testing.assert_array_equal(v, [0.3, 0.3, 0.4])
    assert cfg.instances.spec.file_sha256 is not None


def test_json_file_dict_and_list_forms(tmp_path):
    path = tmp_path / "pairs.json"
    path.write_text(
        json.dumps(
            {
                "instances": [
                    {"id": "web", "p0": {"a": 0.2, "b": 0.8}, "p1": {"b": 0.4, "a": 0.6}},
                    {"p0": [0.5, 0.5], "p1": [0.1, 0.9]},
                ]
            }
        )
    )
    cfg = parse_config({"instances": {"file": str(path)}, "grid": {"eps": [1.0], "divergences": ["tv"]}})
    assert cfg.instances.ids == ("web", "1")
    (u, v), _ = cfg.instances.get(0, 2)
    np.testing.assert_array_equal(u, [0.2, 0.8])
    np.testing.assert_array_equal(v, [0.6, 0.4])  # aligned by label


def test_file_normalize_and_changed_file_changes_fingerprint(tmp_path):
    path = write_long(tmp_path, "csv", [("a", "x", 2.0, 1.0), ("a", "y", 2.0, 3.0)])
    spec = {
        "instances": {"file": str(path), "normalize": True},
        "grid": {"eps": [1.0], "divergences": ["kl"]},
    }
    cfg = parse_config(spec)
    np.testing.assert_array_equal(cfg.instances.get(0, 1)[0][0], [0.5, 0.5])
    with pytest.raises(SweepConfigError, match="instance 'a' p0 must sum to 1"):
        parse_config({**spec, "instances": {"file": str(path)}})
    fp = cfg.fingerprint(1)
    write_long(tmp_path, "csv", [("a", "x", 1.0, 1.0), ("a", "y", 3.0, 3.0)])
    assert parse_config(spec).fingerprint(1) != fp


@pytest.mark.parametrize(
    "over, message",
    [
        ({"grid__eps": []}, r"\[grid\] eps must not be empty"),
        ({"grid__divergences": []}, r"\[grid\] divergences must not be empty"),
        ({"grid__max_outputs": []}, r"\[grid\] max_outputs must not be empty"),
        ({"grid__eps": {"start": 2.0, "stop": 1.0, "step": 0.1}}, r"eps is empty: stop = 1.0 < start = 2.0"),
        ({"grid__eps": {"start": 0.1, "stop": 1.0}}, r"missing 'step'"),
        (
            {"grid__eps": {"start": 0.1, "stop": 1.0, "step": 0.1, "num": 3}},
            r"unknown key 'num' in \[grid\] eps",
        ),
        ({"grid__eps": {"start": 0.0, "stop": 1.0, "step": 0.1}}, r"eps.start must be > 0"),
        ({"grid__eps": {"start": 0.1, "stop": 1.0, "step": -0.1}}, r"eps.step must be > 0"),
        ({"grid__eps": {"start": 1e-9, "stop": 1.0, "step": 1e-9}}, r"more than 1000000"),
        ({"grid__eps": [1.0, -2.0]}, r"eps entries must be finite and > 0, got -2.0"),
        ({"grid__eps": [1.0, math.inf]}, r"finite and > 0"),
        ({"grid__eps": [1.0, 1.0]}, r"eps lists 1.0 twice"),
        ({"grid__eps": [1.0, "2"]}, r"eps entry must be a number, got '2' \(str\)"),
        ({"grid__eps": 1.0}, r"eps must be a list of numbers or a \{start, stop, step\} table"),
        ({"grid__divergences": ["kl", "hockey"]}, r"unknown divergence='hockey'"),
        ({"grid__divergences": ["egamma:0.5"]}, r"gamma must be a finite number >= 1"),
        ({"grid__divergences": "kl"}, r"divergences must be a list, got 'kl'"),
        ({"grid__divergences": ["kl", "KL"]}, r"lists 'kl' twice"),
        ({"grid__max_outputs": [0, -1]}, r"max_outputs entry must be >= 0, got -1"),
        ({"grid__max_outputs": [2.5]}, r"max_outputs entry must be an integer, got 2.5"),
        ({"grid__max_outputs": [True]}, r"must be an integer, got True"),
        (
            {"grid__baselines": ["binary", "staircase"]},
            r"baselines entries must be among 'binary', 'rr', 'kov_lp'",
        ),
        ({"grid__resolution": 3}, r"unknown key 'resolution' in \[grid\]; allowed keys: eps, divergences"),
        ({"grid__eps": _DELETE}, r"\[grid\] needs 'eps'"),
        ({"instances__k": 0}, r"\[instances\] k must be >= 1, got 0"),
        ({"instances__k": 5.0}, r"\[instances\] k must be an integer, got 5.0 \(float\)"),
        ({"instances__trials": "10"}, r"trials must be an integer, got '10'"),
        ({"instances__trials": _DELETE}, r"needs 'trials'"),
        ({"instances__alpha": 0.0}, r"alpha must be finite and > 0"),
        ({"instances__alpha": [1.0, 2.0]}, r"alpha as a list must have k = 5 entries, got 2"),
        ({"instances__seed": -1}, r"seed must be >= 0"),
        ({"instances__generator": "uniform"}, r"generator must be one of 'dirichlet', got 'uniform'"),
        ({"instances__file": "x.csv"}, r"exactly one of 'generator' or 'file'"),
        ({"instances__normalize": True}, r"normalize is only valid with 'file'"),
        ({"instances__size": 3}, r"unknown key 'size' in \[instances\]"),
        ({"run__workers": 0}, r"\[run\] workers must be >= 1"),
        ({"run__instances_per_chunk": "auto"}, r"instances_per_chunk must be an integer"),
        ({"run__scheduler": "inline"}, r"unknown key 'scheduler' in \[run\]"),
    ],
)
def test_rejections_name_key_and_value(over, message):
    with pytest.raises(SweepConfigError, match=message):
        parse_config(base(**over))


def test_structural_rejections(tmp_path):
    with pytest.raises(SweepConfigError, match=r"unknown section \[grids\]"):
        parse_config({**base(), "grids": {}})
    with pytest.raises(SweepConfigError, match=r"missing section \[grid\]"):
        parse_config({"instances": base()["instances"]})
    with pytest.raises(SweepConfigError, match=r"\[grid\] must be a table"):
        parse_config({"instances": base()["instances"], "grid": [1]})
    with pytest.raises(
        SweepConfigError, match=rf"limited to k <= {KOV_LP_MAX_K}, but instance '0' has k = 11"
    ):
        parse_config(base(instances__k=11, grid__baselines=["kov_lp"]))
    bad = tmp_path / "bad.toml"
    bad.write_text("[instances]\ngenerator = dirichlet\n")
    with pytest.raises(SweepConfigError, match="is not valid TOML"):
        load_config(bad)
    with pytest.raises(SweepConfigError, match="does not exist"):
        load_config(tmp_path / "missing.toml")
    with pytest.raises(TypeError, match="config must be a TOML path, a dict or a SweepConfig"):
        load_config(42)


def test_bad_instance_files(tmp_path):
    g = {"eps": [1.0], "divergences": ["kl"]}
    with pytest.raises(SweepConfigError, match="no such file"):
        parse_config({"instances": {"file": str(tmp_path / "nope.csv")}, "grid": g})
    with pytest.raises(SweepConfigError, match="unknown format '.txt'"):
        parse_config({"instances": {"file": "pairs.txt"}, "grid": g}, base_dir=tmp_path)
    p = tmp_path / "cols.csv"
    pd.DataFrame({"instance": ["a"], "q0": [1.0], "p1": [1.0]}).to_csv(p, index=False)
    with pytest.raises(SweepConfigError, match="missing column.s. p0"):
        parse_config({"instances": {"file": str(p)}, "grid": g})
    p = write_long(tmp_path, "csv", [("a", "x", -0.5, 0.5), ("a", "y", 1.5, 0.5)])
    with pytest.raises(SweepConfigError, match="instance 'a' p0 must be non-negative"):
        parse_config({"instances": {"file": str(p)}, "grid": g})
    p = write_long(tmp_path, "csv", [("a", "x", 0.5, 0.5), ("a", "x", 0.5, 0.5)])
    with pytest.raises(SweepConfigError, match="instance 'a' repeats a symbol"):
        parse_config({"instances": {"file": str(p)}, "grid": g})
    j = tmp_path / "bad.json"
    j.write_text('[{"id": "a", "p0": [1.0]}]')
    with pytest.raises(SweepConfigError, match="must be an object with 'p0' and 'p1'"):
        parse_config({"instances": {"file": str(j)}, "grid": g})
    j.write_text('[{"id": "a", "p0": [0.5, 0.5], "p1": [1.0]}]')
    with pytest.raises(SweepConfigError, match="must have the same length"):
        parse_config({"instances": {"file": str(j)}, "grid": g})
    j.write_text('[{"id": "a", "p0": [1.0], "p1": [1.0]}, {"id": "a", "p0": [1.0], "p1": [1.0]}]')
    with pytest.raises(SweepConfigError, match="lists 'a' twice"):
        parse_config({"instances": {"file": str(j)}, "grid": g})
    j.write_text("{not json")
    with pytest.raises(SweepConfigError, match="not valid JSON"):
        parse_config({"instances": {"file": str(j)}, "grid": g})
