"""Frequency-mechanism files (round trips, channel files checked against the named mechanism) and
the gap table."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from ldpopt.errors import MechanismFileError
from ldpopt.frequency import mechanisms as M
from ldpopt.frequency.compare import compare
from ldpopt.frequency.files import read_frequency_mechanism, write_frequency_mechanism
from ldpopt.frequency.optimum import K_MAX, optimal_mechanism
from ldpopt.mechanism import Mechanism


@pytest.mark.parametrize(
    "mech",
    [
        M.grr(5, 1.0),
        M.oue(30, 0.5),
        M.olh(7, 2.0, 5),
        M.subset_selection(9, 1.0, 3),
        M.hadamard_response(6, 4.0),
    ],
)
def test_round_trip(tmp_path, mech):
    write_frequency_mechanism(mech, tmp_path / "m.json")
    assert read_frequency_mechanism(tmp_path / "m.json") == mech


@pytest.mark.parametrize(
    "mech", [M.grr(5, 1.0), M.sue(4, 2.0), M.subset_selection(7, 1.0, 3), M.hadamard_response(5, 1.0)]
)
def test_channel_files(tmp_path, mech):
    mech.channel().to_json(tmp_path / "c.json")
    assert read_frequency_mechanism(tmp_path / "c.json") == mech


def test_refused_files(tmp_path):
    # a channel named grr whose matrix is another mechanism's
    q = M.subset_selection(5, 1.0, 1).channel().matrix
    Mechanism(q[:, ::-1].copy(), 1.0, name="grr").to_json(tmp_path / "a.json")
    with pytest.raises(MechanismFileError, match="not the GRR channel"):
        read_frequency_mechanism(tmp_path / "a.json")
    Mechanism(M.grr(3, 1.0).channel().matrix, 1.0, name="olh").to_json(tmp_path / "b.json")
    with pytest.raises(MechanismFileError, match="name must be one of"):
        read_frequency_mechanism(tmp_path / "b.json")
    bad = {"format": "ldpopt.frequency_mechanism", "format_version": 1, "library_version": "0", "kind": "oue"}
    for extra, match in (
        ({"k": 4, "eps": 1.0}, "missing field"),
        ({"k": 1, "eps": 1.0, "size": None}, "k must be >= 2"),
        ({"k": 4, "eps": "1", "size": None}, "eps must be a number"),
    ):
        (tmp_path / "c.json").write_text(json.dumps(bad | extra))
        with pytest.raises(MechanismFileError, match=match):
            read_frequency_mechanism(tmp_path / "c.json")
    (tmp_path / "d.json").write_text("{not json")
    with pytest.raises(MechanismFileError, match="d.json"):
        read_frequency_mechanism(tmp_path / "d.json")
    with pytest.raises(MechanismFileError, match="no such file"):
        read_frequency_mechanism(tmp_path / "none.json")


@pytest.mark.parametrize(("k", "eps"), [(4, 0.5), (16, 1.0), (64, 4.0)])
def test_compare_rows(k, eps):
    res = compare(k, eps)
    kinds = [r.kind for r in res.rows]
    assert kinds[:5] == ["grr", "sue", "oue", "basic_rappor", "olh"] and kinds[-1] == "hadamard"
    assert len(res.rows) == 6 + len(M.subset_sizes(k, eps))
    for row, mech in zip(res.rows, M.deployed(k, eps), strict=True):
        assert row.variance_uniform == mech.variance_uniform
        assert row.ratio_uniform == pytest.approx(mech.variance_uniform / res.optimum_uniform, rel=1e-15)
        # the optimum is a lower bound on every channel with every unbiased estimator
        assert row.ratio_uniform >= 1 - 1e-12
        if row.best_variance_uniform is not None:
            assert row.best_variance_uniform <= row.variance_uniform * (1 + 1e-10)
    doc = json.dumps(res.to_dict(), allow_nan=False)
    assert json.loads(doc)["rows"][0]["mechanism"] == "GRR"


def test_compare_validates():
    with pytest.raises(ValueError, match="k must be >= 2"):
        compare(1, 1.0)
    with pytest.raises(ValueError, match="eps must be > 0"):
        compare(4, -1.0)
    assert compare(np.int64(5), np.float64(1.0)).k == 5


@pytest.mark.parametrize(("k", "eps"), [(3, 0.5), (4, 1.0), (5, 2.0), (6, 4.0), (8, 1.0)])
def test_deployed_channels_respect_the_optimum(k, eps):
    """Every deployed channel's best unbiased estimator (objectives, on the channel we build) is no
    better than the optimum's certified lower bound, and the better subset rounding attains it."""
    opt = optimal_mechanism(k, eps, objective="variance_uniform")
    res = compare(k, eps)
    assert res.reference == "optimum" and res.optimum_uniform == opt.value
    for mech in M.deployed(k, eps):
        assert mech.best_variance_uniform() >= opt.lower_bound * (1 - 1e-9), mech.label
    best_subset = min(m.variance_uniform for m in M.deployed(k, eps) if m.kind == "subset")
    assert best_subset == pytest.approx(opt.value, rel=1e-9)


def test_compare_outputs_beyond_2_63_are_none_with_their_log10():
    res = compare(70, 1.0)
    rows = {r.kind: r for r in res.rows}
    assert rows["sue"].outputs is None  # 2^70 > 2^63
    assert rows["sue"].log10_outputs == pytest.approx(70 * math.log10(2), rel=1e-15)
    assert rows["grr"].outputs == 70 and rows["grr"].log10_outputs == pytest.approx(math.log10(70))
    sub = rows["subset"]
    size = int(sub.mechanism.split("=")[1].rstrip(")"))
    # lgamma against the exact binomial (relative error of lgamma ~ 1e-15 on values ~ 40)
    assert sub.log10_outputs == pytest.approx(math.log10(math.comb(70, size)), rel=1e-12)
    json.dumps(res.to_dict())


def test_compare_refuses_k_above_k_max():
    with pytest.raises(ValueError, match=f"k={K_MAX + 1}"):
        compare(K_MAX + 1, 1.0)
