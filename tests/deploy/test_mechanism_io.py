"""Versioned mechanism files: lossless round trips, tampered and malformed files refused."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import ldpopt
from ldpopt.deploy.files import (
    FORMAT_VERSION,
    MechanismFileError,
    content_digest,
    distribution_digest,
    load_mechanism,
    save_mechanism,
)
from ldpopt.mechanism import Mechanism

P0 = {
    "page": 0.31,
    "search": 0.14,
    "cart": 0.11,
    "checkout": 0.06,
    "login": 0.08,
    "reset": 0.012,
    "profile": 0.028,
    "gift": 0.01,
    "address": 0.02,
    "review": 0.09,
    "help": 0.09,
    "api": 0.05,
}
P1 = {
    "page": 0.12,
    "search": 0.06,
    "cart": 0.07,
    "checkout": 0.11,
    "login": 0.05,
    "reset": 0.09,
    "profile": 0.08,
    "gift": 0.15,
    "address": 0.10,
    "review": 0.03,
    "help": 0.04,
    "api": 0.10,
}


@pytest.fixture
def designed(tmp_path):
    res = ldpopt.optimal_mechanism(P0, P1, 1.0, "kl", method="dp")
    path = tmp_path / "m.json"
    save_mechanism(res, path, p0=P0, p1=P1)
    return res, path


def rewrite(path, mutate, fix_digest=True):
    payload = json.loads(path.read_text())
    mutate(payload)
    if fix_digest:
        payload["content_sha256"] = content_digest(payload)
    path.write_text(json.dumps(payload))


def test_round_trip_is_lossless(designed):
    res, path = designed
    f = load_mechanism(path)
    m = f.mechanism
    assert np.array_equal(m.matrix, res.mechanism.matrix)  # bit-identical floats
    assert m.eps == res.eps and m.name == res.mechanism.name
    assert m.labels == tuple(P0) and m.partition == res.partition
    assert f.divergence == "kl" and f.value == res.value
    assert np.array_equal(f.p0, np.array(list(P0.values())))
    assert np.array_equal(f.p1, np.array([P1[k] for k in P0]))
    assert f.format_version == FORMAT_VERSION and f.library_version == ldpopt.__version__
    assert f.matches(P0, P1) and not f.matches(P1, P0)
    # and it behaves the same
    assert m.utility(P0, P1) == res.mechanism.utility(P0, P1)
    assert Mechanism.from_json(path).labels == m.labels
    # saving the loaded mechanism again gives the same file
    again = path.with_name("again.json")
    save_mechanism(m, again, p0=f.p0, p1=f.p1, divergence=f.divergence, value=f.value)
    assert again.read_text() == path.read_text()


@pytest.mark.parametrize("eps", [1e-6, 0.7, 30.0, 900.0, math.inf])
def test_round_trip_various_mechanisms(tmp_path, eps):
    rng = np.random.default_rng(3)
    p0, p1 = rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6))
    mechs = [
        ldpopt.optimal_mechanism(p0, p1, eps, method="dp").mechanism,
        ldpopt.randomized_response(4, eps, labels=[7, 3, 11, 0]),
        ldpopt.binary_mechanism(p0, p1, eps),
    ]
    for i, mech in enumerate(mechs):
        path = tmp_path / f"m{i}.json"
        mech.to_json(path)
        back = Mechanism.from_json(path)
        assert np.array_equal(back.matrix, mech.matrix)
        assert (
            back.eps == mech.eps and back.labels == mech.labels and back.output_labels == mech.output_labels
        )
        assert back.partition == mech.partition


def test_output_labels_and_no_distributions(tmp_path):
    mech = Mechanism(
        [[0.6, 0.4], [0.4, 0.6]], 1.0, labels=("no", "yes"), output_labels=("N", "Y"), name="custom"
    )
    path = tmp_path / "c.json"
    mech.to_json(path, p0=[0.5, 0.5], p1=[0.2, 0.8], include_distributions=False)
    f = load_mechanism(path)
    assert f.p0 is None and f.p1 is None
    assert f.p0_sha256 == distribution_digest([0.5, 0.5])
    assert f.matches([0.5, 0.5], [0.2, 0.8])
    assert f.mechanism.output_labels == ("N", "Y") and f.mechanism.name == "custom"
    assert json.loads(path.read_text())["p0"] is None


def test_writes_atomically(tmp_path, designed):
    res, path = designed
    before = path.read_text()
    with pytest.raises(TypeError, match="labels"):
        save_mechanism(Mechanism([[1.0]], 1.0, labels=((1, 2),)), path)
    assert path.read_text() == before  # the old file is untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]  # no temporary left behind


# --- tampering --------------------------------------------------------------------------------
def test_edit_without_digest_is_refused(designed):
    _, path = designed
    rewrite(path, lambda d: d["matrix"][0].__setitem__(0, d["matrix"][0][0] + 1e-3), fix_digest=False)
    with pytest.raises(MechanismFileError, match="digest mismatch"):
        load_mechanism(path)


def test_text_edit_is_refused(designed):
    _, path = designed
    text = path.read_text().replace('"eps": 1.0', '"eps": 2.0')
    path.write_text(text)
    with pytest.raises(MechanismFileError, match="digest mismatch"):
        load_mechanism(path)


def test_tampered_channel_with_recomputed_digest_is_refused(designed):
    _, path = designed

    def leak(d):  # raise the high entry of row 0 and renormalise: rows fine, eps-LDP broken
        row = d["matrix"][0]
        j = int(np.argmax(row))
        row[j] += 0.05
        other = 1 - j
        row[other] = 1.0 - row[j]

    rewrite(path, leak)
    with pytest.raises(MechanismFileError, match="not eps-LDP"):
        load_mechanism(path)


def test_claimed_eps_lowered_is_refused(designed):
    _, path = designed
    rewrite(path, lambda d: d.__setitem__("eps", 0.5))
    with pytest.raises(MechanismFileError, match="not eps-LDP"):
        load_mechanism(path)


@pytest.mark.parametrize(
    "mutate,match",
    [
        (lambda d: d["matrix"][1].__setitem__(0, d["matrix"][1][0] * 0.9), "sum to 1"),
        (lambda d: d["matrix"].append([0.5]), "equally long"),
        (lambda d: d["matrix"].__setitem__(0, "x"), "equally long"),
        (lambda d: d.__setitem__("eps", -1.0), "eps"),
        (lambda d: d.__setitem__("eps", "big"), "eps"),
        (lambda d: d.__setitem__("labels", ["a"]), "labels"),
        (lambda d: d.__setitem__("labels", [1.5] * 12), "labels"),
        (lambda d: d.__setitem__("partition", [[0, 1], [1]]), "partition"),
        (lambda d: d.__setitem__("partition", [[0], [1]]), "partition"),
        (lambda d: d.__setitem__("p0", [1.0] + [0.0] * 11), "p0 does not match"),
        (lambda d: d.__setitem__("p1", [0.5] * 12), "p1"),
        (lambda d: d.__setitem__("format_version", FORMAT_VERSION + 1), "newer"),
        (lambda d: d.__setitem__("format_version", "1"), "format_version"),
        (lambda d: d.__setitem__("format", "something.else"), "not a mechanism file"),
        (lambda d: d.pop("divergence"), "missing field"),
        (lambda d: d.__setitem__("extra", 1), "unknown field"),
        (lambda d: d.__setitem__("value", "high"), "value"),
        (lambda d: d.__setitem__("name", 3), "name"),
    ],
)
def test_malformed_fields_are_refused(designed, mutate, match):
    _, path = designed
    rewrite(path, mutate)
    with pytest.raises(MechanismFileError, match=match) as info:
        load_mechanism(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize(
    "text,match",
    [
        ("", "empty"),
        ("{not json", "not valid JSON"),
        ('{"format": NaN}', "not valid JSON"),
        ('{"format": "ldpopt.mechanism", "eps": Infinity}', "non-standard constant Infinity"),
        ('{"format_version": 1' + "0" * 400 + "}", "beyond the float range"),
        ('{"matrix": [[1e400]]}', "beyond the float range"),
        ("[" * 100_000, "nested too deeply"),
        ("[1, 2]", "top level"),
        ('{"format": "ldpopt.mechanism"}', "format_version"),
    ],
)
def test_malformed_files_are_refused(tmp_path, text, match):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(MechanismFileError, match=match):
        load_mechanism(path)


def test_missing_file(tmp_path):
    with pytest.raises(MechanismFileError, match="no such file"):
        load_mechanism(tmp_path / "nope.json")


def test_save_argument_checks(tmp_path):
    mech = ldpopt.randomized_response(3, 1.0)
    with pytest.raises(ValueError, match="both"):
        save_mechanism(mech, tmp_path / "x.json", p0=[0.2, 0.3, 0.5])
    with pytest.raises(TypeError, match="Mechanism"):
        save_mechanism("not a mechanism", tmp_path / "x.json")
    with pytest.raises(ValueError, match="p0"):
        save_mechanism(mech, tmp_path / "x.json", p0=[0.5, 0.5], p1=[0.5, 0.5])
    assert not (tmp_path / "x.json").exists()


def test_pandas_labels_survive_design_file_and_privatize(tmp_path):
    import pandas as pd

    p0 = pd.Series([0.5, 0.3, 0.2], index=["x", "y", "z"])
    p1 = pd.Series([0.6, 0.3, 0.1], index=["z", "y", "x"])  # other order: aligned by label
    res = ldpopt.optimal_mechanism(p0, p1, 2.0, method="dp")
    assert res.labels == ("x", "y", "z")
    path = tmp_path / "s.json"
    save_mechanism(res, path, p0=p0, p1=p1)
    f = load_mechanism(path)
    assert f.mechanism.labels == ("x", "y", "z")
    assert np.array_equal(f.p1, np.array([0.1, 0.3, 0.6]))
    assert (
        tuple(tuple(f.mechanism.labels[i] for i in b) for b in f.mechanism.partition)
        == res.labelled_partition
    )
    assert f.mechanism.privatize(["z", "x"], rng=np.random.default_rng(0)).shape == (2,)


def test_partition_contradicting_the_matrix_is_refused(designed):
    res, path = designed
    assert len(res.partition) >= 2
    original = path.read_text()
    # the blocks in another order (a valid partition with the right number of blocks): the outputs
    # would be labelled with the wrong symbols
    rewrite(path, lambda d: d.__setitem__("partition", d["partition"][::-1]))
    with pytest.raises(MechanismFileError, match=r"partition block 0 \(.*\) contradicts matrix: output 0"):
        load_mechanism(path)

    # one symbol moved to another block: its row is not the row of its new block
    def move(d):
        d["partition"][1].append(d["partition"][0].pop())

    path.write_text(original)
    rewrite(path, move)
    with pytest.raises(MechanismFileError, match=r"partition block 1 \(.*\) contradicts matrix: rows"):
        load_mechanism(path)


def test_load_from_bytes_equals_load_from_file(designed):
    _, path = designed
    on_disk = load_mechanism(path)
    in_memory = load_mechanism(path.read_bytes(), filename="upload/M.json")
    assert np.array_equal(on_disk.mechanism.matrix, in_memory.mechanism.matrix)
    assert on_disk.mechanism.eps == in_memory.mechanism.eps
    with pytest.raises(ldpopt.MechanismFileError, match=r"^M\.json: the file is empty"):
        load_mechanism(b"  ", filename="M.json")
    with pytest.raises(ldpopt.MechanismFileError, match=r"^M\.json: cannot read the file"):
        load_mechanism(b"\xff\xfe", filename="M.json")
