"""ldpopt.read_pair: one labelled pair from CSV, Parquet or JSON, counts or probabilities."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ldpopt
from ldpopt.deploy.pairs import LabelledPair, parse_distribution_text, read_pair

COUNTS = {"a": (3, 0), "b": (0, 5), "c": (7, 5)}


def _csv(tmp_path, text, name="pair.csv"):
    p = tmp_path / name
    p.write_text(text)
    return p


def _expected(col):
    total = sum(Fraction(v[col]) for v in COUNTS.values())
    return [float(Fraction(v[col]) / total) for v in COUNTS.values()]


def test_csv_counts_with_labels_and_zero_counts(tmp_path):
    p = _csv(tmp_path, "cat,normal,fraud,note\na,3,0,x\nb,0,5,y\nc,7,5,z\n")
    pair = ldpopt.read_pair(p, p0="normal", p1="fraud", label="cat", normalize=True)
    assert isinstance(pair, LabelledPair)
    assert pair.labels == ("a", "b", "c")
    # counts / total, each correctly rounded (3/10, 0, 7/10 and 0, 1/2, 1/2)
    assert pair.p0.tolist() == _expected(0)
    assert pair.p1.tolist() == _expected(1)
    d0, d1 = pair.as_dicts()
    assert d0 == dict(zip("abc", _expected(0), strict=True)) and list(d1) == ["a", "b", "c"]
    with pytest.raises(AttributeError):
        pair.labels = None  # frozen


def test_counts_without_normalize_are_refused(tmp_path):
    p = _csv(tmp_path, "p0,p1\n3,0\n0,5\n7,5\n")
    with pytest.raises(ValueError, match=r"pair.csv: column 'p0' must sum to 1.*normalize=True"):
        read_pair(p)
    pair = read_pair(p, normalize=True)
    assert pair.labels is None and pair.k == 3


def test_same_pair_from_parquet_and_json(tmp_path):
    csv_pair = read_pair(_csv(tmp_path, "p0,p1,s\n0.25,0.5,x\n0.75,0.5,y\n"), label="s")
    pq = tmp_path / "pair.parquet"
    pd.DataFrame({"s": ["x", "y"], "p0": [0.25, 0.75], "p1": [0.5, 0.5]}).to_parquet(pq)
    obj = tmp_path / "obj.json"
    # p1 given in the other label order: aligned by label
    obj.write_text(json.dumps({"p0": {"x": 0.25, "y": 0.75}, "p1": {"y": 0.5, "x": 0.5}}))
    rows = tmp_path / "rows.json"
    rows.write_text(json.dumps([{"s": "x", "p0": 0.25, "p1": 0.5}, {"s": "y", "p0": 0.75, "p1": 0.5}]))
    for pair in (read_pair(pq, label="s"), read_pair(obj), read_pair(rows, label="s")):
        assert pair.labels == csv_pair.labels == ("x", "y")
        assert pair.p0.tolist() == csv_pair.p0.tolist() == [0.25, 0.75]
        assert pair.p1.tolist() == [0.5, 0.5]


@pytest.mark.parametrize(
    ("text", "kwargs", "match"),
    [
        ("p0,p1\n", {}, "header but no data rows"),
        ("", {}, "is empty"),
        ("p0,p1\n1,x\n", {}, r"column 'p1', data row 1: 'x' is not a number"),
        ("p0,p1\n1,\n", {}, "an empty cell is not a number"),
        ("p0,q\n1,1\n", {}, r"missing column\(s\) p1"),
        ("p0,p1,l\n0.5,0.5,a\n0.5,0.5,a\n", {"label": "l"}, "label 'a' appears twice"),
        ("p0,p1\n1,1,1\n", {}, "row 2 has 3 fields"),
        ("p0,p0,p1\n1,1,1\n", {}, "column 'p0' appears twice"),
        ("p0,p1\n-1,1\n2,0\n", {}, "must be non-negative"),
        ("p0,p1\nnan,1\n", {}, "finite"),
        ("p0,p1\n0,1\n0,0\n", {"normalize": True}, "positive total mass"),
    ],
)
def test_bad_tables_name_the_file(tmp_path, text, kwargs, match):
    with pytest.raises(ValueError, match=match):
        read_pair(_csv(tmp_path, text), **kwargs)


def test_bad_arguments_and_json(tmp_path):
    with pytest.raises(TypeError, match="path must be a file path"):
        read_pair(3)
    with pytest.raises(TypeError, match="p0 must be a column name"):
        read_pair(tmp_path / "x.csv", p0=1)
    with pytest.raises(ValueError, match="unknown format '.txt'"):
        read_pair(tmp_path / "x.txt")
    with pytest.raises(ValueError, match="no such file"):
        read_pair(tmp_path / "x.csv")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100000 + "]" * 100000)
    with pytest.raises(ValueError, match="nested too deeply"):
        read_pair(deep)
    big = tmp_path / "big.json"
    big.write_text('{"p0": [1' + "0" * 400 + '], "p1": [1]}')
    with pytest.raises(ValueError, match="beyond the float range"):
        read_pair(big)
    bad = tmp_path / "bad.json"
    bad.write_text('{"p0": [1, "a"], "p1": [1, 0]}')
    with pytest.raises(ValueError, match=r"p0\[1\] must be a number"):
        read_pair(bad)
    bad.write_text('{"p0": {"a": 1}, "p1": {"b": 1}}')
    with pytest.raises(ValueError, match="different labels"):
        read_pair(bad)


@given(
    st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)), min_size=1, max_size=12).filter(
        lambda rows: sum(r[0] for r in rows) > 0 and sum(r[1] for r in rows) > 0
    )
)
def test_csv_counts_roundtrip(tmp_path_factory, rows):
    """Integer counts written as CSV read back as counts / total (to within one rounding per entry:
    the reader divides the float counts, exact below 2^53, by their exact sum)."""
    path = tmp_path_factory.mktemp("p") / "c.csv"
    path.write_text("p0,p1\n" + "".join(f"{a},{b}\n" for a, b in rows))
    pair = read_pair(path, normalize=True)
    for col, arr in ((0, pair.p0), (1, pair.p1)):
        total = sum(r[col] for r in rows)
        assert arr.tolist() == [float(Fraction(r[col], total)) for r in rows]
    assert np.all(pair.p0 >= 0)


@given(st.text(alphabet=st.sampled_from('p01,.-e\n"ab x\t;'), max_size=60))
def test_hostile_csv_text_is_a_clean_error_or_a_pair(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("h") / "h.csv"
    path.write_text("p0,p1\n" + text)
    try:
        pair = read_pair(path, normalize=True)
    except ValueError as exc:
        assert str(exc).startswith("h.csv")  # names the file
    else:
        assert abs(pair.p0.sum() - 1) < 1e-9 and np.all(pair.p1 >= 0)


json_values = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8,
)


@given(st.fixed_dictionaries({"p0": json_values, "p1": json_values}))
def test_hostile_json_is_a_clean_error_or_a_pair(tmp_path_factory, doc):
    path = tmp_path_factory.mktemp("j") / "j.json"
    path.write_text(json.dumps(doc))
    try:
        read_pair(path, normalize=True)
    except (ValueError, TypeError) as exc:
        assert "j.json" in str(exc)


def _files(tmp_path):
    """The same labelled counts as CSV, Parquet and JSON files."""
    csv_path = _csv(tmp_path, "label,p0,p1\na,3,0\nb,0,5\nc,7,5\n")
    pq = tmp_path / "pair.parquet"
    pd.DataFrame({"label": list(COUNTS), "p0": [3, 0, 7], "p1": [0, 5, 5]}).to_parquet(pq)
    js = tmp_path / "pair.json"
    js.write_text(
        json.dumps({"p0": {k: v[0] for k, v in COUNTS.items()}, "p1": {k: v[1] for k, v in COUNTS.items()}})
    )
    return [csv_path, pq, js]


def test_in_memory_content_reads_as_the_file(tmp_path):
    import io

    for path in _files(tmp_path):
        ref = read_pair(path, label="label", normalize=True, optional_label=True)
        assert ref.labels == ("a", "b", "c") and ref.p0.tolist() == _expected(0)
        data = path.read_bytes()
        for source in (data, bytearray(data), memoryview(data), io.BytesIO(data)):
            got = read_pair(source, label="label", normalize=True, optional_label=True, filename=path.name)
            assert got.labels == ref.labels
            assert got.p0.tolist() == ref.p0.tolist() and got.p1.tolist() == ref.p1.tolist()
        with path.open("rb") as fh:  # a file object names itself
            got = read_pair(fh, label="label", normalize=True, optional_label=True)
        assert got.p1.tolist() == ref.p1.tolist()
    # the same messages, naming the file
    bad = b"label,p0,p1\na,1,2\nb,x,3\n"
    with pytest.raises(ValueError, match=r"^up.csv: column 'p0', data row 2: 'x' is not a number$"):
        read_pair(bad, label="label", filename="dir/up.csv")


def test_optional_label_and_in_memory_argument_errors(tmp_path):
    import io

    unlabelled = b"p0,p1\n0.5,0.25\n0.5,0.75\n"
    assert read_pair(unlabelled, label="label", optional_label=True, filename="u.csv").labels is None
    with pytest.raises(ValueError, match=r"u.csv: missing column\(s\) label"):
        read_pair(unlabelled, label="label", filename="u.csv")
    rows = json.dumps([{"p0": 0.5, "p1": 0.25}, {"p0": 0.5, "p1": 0.75}]).encode()
    assert read_pair(rows, label="label", optional_label=True, filename="r.json").labels is None
    with pytest.raises(TypeError, match="filename must name"):
        read_pair(unlabelled)  # bytes without a name: no format
    with pytest.raises(TypeError, match="binary mode"):
        read_pair(io.StringIO("p0,p1\n1,1\n"), filename="t.csv")
    with pytest.raises(TypeError, match="filename names in-memory content only"):
        read_pair(_csv(tmp_path, "p0,p1\n1,1\n"), filename="other.csv")
    with pytest.raises(ValueError, match=r"x.txt: unknown format '.txt'"):
        read_pair(unlabelled, filename="x.txt")
    with pytest.raises(TypeError, match="optional_label"):
        read_pair(unlabelled, filename="u.csv", optional_label="yes")


def test_decision_problem_from_bytes_is_the_file(tmp_path):
    import io

    doc = {"likelihood": [[0.5, 0.1], [0.5, 0.9]], "loss": [[0, 1], [1, 0]], "labels": ["u", "v"]}
    path = tmp_path / "toy.json"
    path.write_text(json.dumps(doc))
    ref = ldpopt.DecisionProblem.from_json(path)
    for source in (path.read_bytes(), io.BytesIO(path.read_bytes())):
        got = ldpopt.DecisionProblem.from_json(source, filename="toy.json")
        assert got.name == ref.name == "toy" and got.labels == ref.labels
        assert np.array_equal(got.likelihood, ref.likelihood) and np.array_equal(got.loss, ref.loss)
    bad = json.dumps({**doc, "likelihood": [[0.5, 0.1], [0.6, 0.9]]}).encode()
    (tmp_path / "bad.json").write_bytes(bad)
    with pytest.raises(ValueError) as on_disk:
        ldpopt.DecisionProblem.from_json(tmp_path / "bad.json")
    with pytest.raises(ValueError) as in_memory:
        ldpopt.DecisionProblem.from_json(bad, filename="bad.json")
    assert str(in_memory.value) == str(on_disk.value).replace(str(tmp_path / "bad.json"), "bad.json")
    assert "bad.json:" in str(in_memory.value)
    with pytest.raises(ValueError, match="b.json cannot be read"):
        ldpopt.DecisionProblem.from_json(b"\xff\xfe", filename="b.json")


# ---------------------------------------------------------------------------------------------
# a distribution typed as text (the CLI's --p0/--p1, the studio's paste boxes)
# ---------------------------------------------------------------------------------------------
def test_parse_distribution_text_grammar():
    plain = parse_distribution_text(" 0.5, 0.25;0.25 ,", "p")
    assert isinstance(plain, np.ndarray) and plain.tolist() == [0.5, 0.25, 0.25]
    assert parse_distribution_text("3\n5\n\n1e1", "p").tolist() == [3.0, 5.0, 10.0]
    labelled = parse_distribution_text("x = 30, y=50\nz=2e1 ;", "p")
    assert labelled == {"x": 30.0, "y": 50.0, "z": 20.0} and list(labelled) == ["x", "y", "z"]


@pytest.mark.parametrize(
    "text, error, message",
    [
        ("", ValueError, "p is empty: give numbers or label=value pairs"),
        (" , ;\n", ValueError, "p is empty"),
        (None, ValueError, "p is empty"),
        (3, TypeError, "p must be text, got int"),
        ("0.5, x", ValueError, "p: 'x' is not a number"),
        ("a=1, b", ValueError, "p: expected label=value, got 'b'"),
        ("a=1, =2", ValueError, "p: expected label=value, got '=2'"),
        ("a=1, a=2", ValueError, "p: label 'a' appears twice"),
        ("a=1, b=x", ValueError, "p: 'x' is not a number (in 'b=x')"),
        ("a=1=2", ValueError, "p: '1=2' is not a number (in 'a=1=2')"),
    ],
)
def test_parse_distribution_text_refusals(text, error, message):
    with pytest.raises(error) as info:
        parse_distribution_text(text, "p")
    assert str(info.value).startswith(message)


@pytest.mark.parametrize(
    "name, body, expected",
    [
        (
            "c.csv",
            b"category,normal,fraud\na,1,2\nb,3,0\n",
            (("category", "normal", "fraud"), "category", "normal", "fraud"),
        ),
        ("c.csv", b"p1,x,p0,label\n1,a,2,q\n", (("p1", "x", "p0", "label"), "label", "p0", "p1")),
        ("c.csv", b"a,b\n1,x\n", (("a", "b"), "b", "a", None)),
        (
            "c.json",
            b'{"label": ["a", "b"], "p0": [1, 2], "p1": [2, 1]}',
            (("label", "p0", "p1"), "label", "p0", "p1"),
        ),
        (
            "c.json",
            b'[{"s": "a", "n": 1, "f": 2}, {"s": "b", "n": 0, "f": 1}]',
            (("s", "n", "f"), "s", "n", "f"),
        ),
    ],
)
def test_pair_columns_guess(name, body, expected):
    from ldpopt.deploy.pairs import pair_columns

    cols = pair_columns(body, filename=name)
    assert (cols.columns, cols.label, cols.p0, cols.p1) == expected


def test_pair_columns_guess_reads_with_read_pair(tmp_path):
    from ldpopt.deploy.pairs import pair_columns

    path = tmp_path / "counts.csv"
    path.write_text("category,normal,fraud\na,1,2\nb,3,0\n")
    cols = pair_columns(path)
    pair = ldpopt.read_pair(path, cols.p0, cols.p1, cols.label, normalize=True)
    assert pair.labels == ("a", "b") and pair.p0.tolist() == [0.25, 0.75]
