"""The one reader of distribution pairs from files: ``ldpopt.read_pair`` (and the sweep config's
multi-instance files through :func:`read_pair_records`).

Formats (chosen by the suffix: ``.csv``, ``.parquet``/``.pq``, ``.json``):

* **CSV / Parquet**, one row per symbol: a P0 column and a P1 column (default names ``p0`` and
  ``p1``), optionally a label column. The first row of a CSV file is always the header (the column
  names); other columns are ignored. Values are counts or probabilities (``normalize=True`` rescales
  counts); zeros are allowed.
* **JSON**: an object ``{"p0": [...], "p1": [...]}`` (lists, or ``{label: value}`` objects; with a
  label key, its list names the symbols), or a list of row objects
  ``[{"label": "a", "p0": 3, "p1": 0}, ...]``, the JSON form of the table.

A distribution typed in (the CLI's ``--p0``, the studio's paste boxes) is read by
:func:`parse_distribution_text`: ``"0.5, 0.3, 0.2"`` or ``"a=3, b=5"``, items separated by commas,
semicolons or line breaks.

Multi-instance files (the sweep's ``[instances] file``) add an instance column (a table in long
format, one row per instance and symbol) or are a JSON list of ``{"id", "p0", "p1"}`` objects.

The file is a path, or its content in memory (``bytes`` or a binary file object) with
``filename=`` naming it (its suffix gives the format): the studio reads uploads this way, without
writing them to disk.

CSV and JSON need nothing beyond the standard library; Parquet needs pyarrow (the ``sweeps`` extra).
Every problem is a ``ValueError`` (or ``TypeError``) whose message starts with the file's name.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ldpopt._extras import require
from ldpopt._json import in_memory_file, loads_strict
from ldpopt._validation import check_bool, check_labelled_pair, is_real

__all__ = [
    "LabelledPair",
    "PairColumns",
    "pair_columns",
    "read_pair",
    "read_pair_records",
    "parse_distribution_text",
    "PAIR_FORMATS",
]

#: recognised suffixes -> format
PAIR_FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".json": "json"}
#: a record: (instance id or None, p0, p1, labels or None) with p0/p1 lists of floats
Record = tuple[str | None, list[float], list[float], list[str] | None]


@dataclass(frozen=True)
class LabelledPair:
    """Two distributions on the same alphabet, checked (non-negative, finite, summing to 1).

    ``labels`` names the symbols (a tuple of strings) or is None when the file has no label column;
    ``p0`` and ``p1`` are float arrays in the order of ``labels``.
    """

    labels: tuple[str, ...] | None
    p0: np.ndarray
    p1: np.ndarray

    @property
    def k(self) -> int:
        """Alphabet size."""
        return int(self.p0.shape[0])

    def as_dicts(self) -> tuple[Any, Any]:
        """``(p0, p1)`` as ``{label: probability}`` dicts (plain arrays without labels), the form
        every function of the library accepts."""
        if self.labels is None:
            return self.p0, self.p1
        return (
            dict(zip(self.labels, self.p0.tolist(), strict=True)),
            dict(zip(self.labels, self.p1.tolist(), strict=True)),
        )


def read_pair(
    path: Any,
    p0: str = "p0",
    p1: str = "p1",
    label: str | None = None,
    *,
    normalize: bool = False,
    optional_label: bool = False,
    filename: str | None = None,
) -> LabelledPair:
    """Read one distribution pair from a CSV, Parquet or JSON file (format by suffix).

    Parameters
    ----------
    path : path-like, bytes or binary file object
        The file; see the module documentation for the layouts.  Its content in memory (``bytes``
        or an object with ``read()`` returning bytes) is read as the file ``filename``.
    p0, p1 : str
        Names of the P0 and P1 columns (JSON: keys).
    label : str, optional
        Name of the label column (JSON: key); None reads the pair without labels.
    normalize : bool
        Rescale each column to sum to 1 (for counts). Without it a column must sum to 1.
    optional_label : bool
        Read the labels only when the file has the ``label`` column (key); without it a missing
        label column is an error.
    filename : str, optional
        The file's name when ``path`` is its content (required then, unless the file object has a
        ``name``): its suffix gives the format and messages start with it.

    Returns
    -------
    LabelledPair
        Frozen ``(labels, p0, p1)``.
    """
    for name, value in (("p0", p0), ("p1", p1)):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a column name (str), got {name}={value!r}")
    if label is not None and not isinstance(label, str):
        raise TypeError(f"label must be a column name (str) or None, got label={label!r}")
    normalize = check_bool(normalize, "normalize")
    optional_label = check_bool(optional_label, "optional_label")
    src = _source(path, filename)
    records = _records(src, p0, p1, label, None, optional_label, True)
    _, a, b, labels = records[0]
    try:
        u, v, _ = check_labelled_pair(a, b, names=(f"column {p0!r}", f"column {p1!r}"), normalize=normalize)
    except (ValueError, TypeError) as exc:
        raise type(exc)(f"{src.name}: {exc}") from None
    return LabelledPair(labels=None if labels is None else tuple(labels), p0=u, p1=v)


@dataclass(frozen=True)
class _Source:
    """A file's name (for messages), its format and how to get its bytes."""

    name: str
    fmt: str
    path: Path | None
    data: bytes | None

    def read(self) -> bytes:
        if self.data is not None:
            return self.data
        assert self.path is not None  # one of the two is set by _source
        try:
            return self.path.read_bytes()
        except OSError as exc:
            raise ValueError(f"{self.path} cannot be read: {exc.strerror or exc}") from None


def parse_distribution_text(text: Any, name: str) -> np.ndarray | dict[str, float]:
    """A distribution typed as text: ``"0.5, 0.3, 0.2"`` -> float array, ``"a=3, b=5"`` -> dict
    label -> value (counts or probabilities, checked by the caller's validator).

    Items are separated by commas, semicolons or line breaks (blank items are skipped); once one
    item has an ``=``, every item must be ``label=value`` with distinct labels.  Every problem is a
    ``ValueError`` starting with ``name`` (a ``TypeError`` when ``text`` is not a string).
    """
    if text is not None and not isinstance(text, str):
        raise TypeError(f"{name} must be text, got {type(text).__name__}")
    items = [t.strip() for t in (text or "").replace(";", ",").replace("\n", ",").split(",")]
    items = [t for t in items if t]
    if not items:
        raise ValueError(f"{name} is empty: give numbers or label=value pairs")
    if not any("=" in t for t in items):
        return np.array([_text_number(t, t, name) for t in items])
    out: dict[str, float] = {}
    for item in items:
        key, sep, value = (part.strip() for part in item.partition("="))
        if not sep or not key:
            raise ValueError(f"{name}: expected label=value, got {item!r}")
        if key in out:
            raise ValueError(f"{name}: label {key!r} appears twice")
        out[key] = _text_number(value, item, name)
    return out


def _text_number(text: str, item: str, name: str) -> float:
    try:
        return float(text)
    except ValueError:
        where = "" if text == item else f" (in {item!r})"
        raise ValueError(f"{name}: {text!r} is not a number{where}") from None


def _format(name: str, suffix: str, fmt: str | None) -> str:
    fmt = fmt or PAIR_FORMATS.get(suffix.lower())
    if fmt is None:
        raise ValueError(f"{name}: unknown format {suffix!r}; use one of {', '.join(PAIR_FORMATS)}")
    return fmt


def _source(path: Any, filename: str | None, fmt: str | None = None) -> _Source:
    """A path, or bytes / a binary file object read as ``filename``."""
    content = in_memory_file(path, filename)
    if content is None:
        file = _as_path(path)
        src = _Source(file.name, _format(file.name, file.suffix, fmt), file, None)
        if not file.is_file():
            raise ValueError(f"{file}: no such file")
        return src
    name, data = content
    return _Source(name, _format(name, Path(name).suffix, fmt), None, data)


def _as_path(path: Any) -> Path:
    if isinstance(path, (str, Path)) or hasattr(path, "__fspath__"):
        return Path(path)
    raise TypeError(f"path must be a file path, bytes or a binary file object, got path={path!r}")


def read_pair_records(
    path: Any,
    *,
    p0: str = "p0",
    p1: str = "p1",
    label: str | None = None,
    instance: str | None = None,
    optional_label: bool = False,
    other_columns: bool = True,
    fmt: str | None = None,
    filename: str | None = None,
) -> list[Record]:
    """The raw pairs of a file, before their check as distributions: ``(instance id, p0, p1,
    labels)`` per instance (one record with id None when ``instance`` is None).

    ``path`` and ``filename`` as in :func:`read_pair`.  ``optional_label``: read labels only when
    the label column exists. ``other_columns=False`` refuses columns other than the named ones.
    Raises ``ValueError`` naming the file.
    """
    src = _source(path, filename, fmt)
    return _records(src, p0, p1, label, instance, optional_label, other_columns)


def _records(
    src: _Source,
    p0: str,
    p1: str,
    label: str | None,
    instance: str | None,
    optional_label: bool,
    other_columns: bool,
) -> list[Record]:
    name = src.name
    if src.fmt == "json":
        doc = _load_json(src)
        if instance is not None:
            return _json_instances(name, doc, p0, p1, instance)
        return [_json_pair(name, doc, p0, p1, label, optional_label)]
    columns, rows = _read_table(src)
    named = [c for c in (instance, label, p0, p1) if c is not None]
    missing = [c for c in named if c not in columns and not (c == label and optional_label)]
    if missing:
        raise ValueError(
            f"{name}: missing column(s) {', '.join(missing)}; its columns are {', '.join(columns)}"
        )
    if not other_columns:
        extra = [c for c in columns if c not in named]
        if extra:
            raise ValueError(f"{name}: unknown column(s) {', '.join(map(str, extra))}")
    if label is not None and label not in columns:
        label = None
    if not rows:
        raise ValueError(f"{name} has a header but no data rows")
    return _group(name, columns, rows, p0, p1, label, instance)


def _read_table(src: _Source) -> tuple[list[str], list[list[Any]]]:
    """Column names and rows of a CSV (header row first) or Parquet file."""
    name = src.name
    if src.fmt == "parquet":
        pq = require("pyarrow.parquet", "reading Parquet files", "sweeps")
        try:
            table = pq.read_table(io.BytesIO(src.read()))
        except Exception as exc:  # pyarrow raises many types for unreadable files
            raise ValueError(f"{name}: not a readable Parquet file ({type(exc).__name__})") from None
        cols = [str(c) for c in table.column_names]
        data = [table.column(i).to_pylist() for i in range(len(cols))]
        return cols, [list(r) for r in zip(*data, strict=True)]
    try:
        text = src.read().decode("utf-8-sig")
        table_rows = [r for r in csv.reader(io.StringIO(text, newline="")) if any(cell.strip() for cell in r)]
    except (UnicodeDecodeError, csv.Error) as exc:
        raise ValueError(f"{name}: not a readable CSV file ({exc})") from None
    if not table_rows:
        raise ValueError(f"{name} is empty (the first row must name the columns)")
    cols = [c.strip() for c in table_rows[0]]
    if len(set(cols)) != len(cols):
        dup = next(c for c in cols if cols.count(c) > 1)
        raise ValueError(f"{name}: column {dup!r} appears twice in the header")
    for n, r in enumerate(table_rows[1:], start=2):
        if len(r) != len(cols):
            raise ValueError(f"{name}: row {n} has {len(r)} fields, the header has {len(cols)}")
    return cols, table_rows[1:]


def _number(value: Any, name: str, column: str, row: int) -> float:
    """A cell as a float: a number, or a text that parses as one."""
    if is_real(value):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            return float(text)
        except ValueError:
            pass
    shown = "an empty cell" if value is None or value == "" else repr(value)
    raise ValueError(f"{name}: column {column!r}, data row {row}: {shown} is not a number")


def _group(
    name: str,
    columns: list[str],
    rows: list[list[Any]],
    p0: str,
    p1: str,
    label: str | None,
    instance: str | None,
) -> list[Record]:
    """Rows -> records, grouped by ``instance`` (in order of first appearance)."""
    i0, i1 = columns.index(p0), columns.index(p1)
    il = None if label is None else columns.index(label)
    ii = None if instance is None else columns.index(instance)
    groups: dict[Any, tuple[list[float], list[float], list[str]]] = {}
    for n, r in enumerate(rows, start=1):
        key = None if ii is None else str(r[ii]).strip()
        a, b, labs = groups.setdefault(key, ([], [], []))
        a.append(_number(r[i0], name, p0, n))
        b.append(_number(r[i1], name, p1, n))
        if il is not None:
            labs.append("" if r[il] is None else str(r[il]).strip())
    out: list[Record] = []
    for key, (a, b, labs) in groups.items():
        if il is not None:
            seen: set[str] = set()
            for lab in labs:
                if lab in seen:
                    where = "" if key is None else f"instance {key!r} repeats a symbol: "
                    raise ValueError(f"{name}: {where}label {lab!r} appears twice in column {label!r}")
                seen.add(lab)
        out.append((key, a, b, labs if il is not None else None))
    return out


def _load_json(src: _Source) -> Any:
    try:
        text = src.read().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{src.name}: not valid JSON ({exc})") from None
    return loads_strict(text, src.name)


def _vector(value: Any, where: str) -> tuple[list[float], list[str] | None]:
    """A JSON list of numbers, or a ``{label: number}`` object."""
    if isinstance(value, Mapping):
        labels, values = [str(k) for k in value], list(value.values())
    elif isinstance(value, list):
        labels, values = None, value
    else:
        raise ValueError(f"{where} must be a list of numbers or a {{label: number}} object")
    for j, v in enumerate(values):
        if not is_real(v):
            raise ValueError(f"{where}[{j}] must be a number, got {v!r}")
    return [float(v) for v in values], labels


def _json_pair(name: str, doc: Any, p0: str, p1: str, label: str | None, optional_label: bool) -> Record:
    if optional_label and label is not None and not _has_key(doc, label):
        label = None
    if isinstance(doc, list):  # row objects, the JSON form of the table
        if not doc or not all(isinstance(r, Mapping) for r in doc):
            raise ValueError(
                f"{name}: expected a non-empty list of row objects or an object with {p0!r}, {p1!r}"
            )
        keys = [k for k in (p0, p1, label) if k is not None]
        for n, r in enumerate(doc, start=1):
            missing = [k for k in keys if k not in r]
            if missing:
                raise ValueError(f"{name}: row {n} has no key {missing[0]!r}")
        columns = keys
        rows = [[r[k] for k in keys] for r in doc]
        return _group(name, columns, rows, p0, p1, label, None)[0]
    if not isinstance(doc, Mapping):
        raise ValueError(f"{name}: expected an object with keys {p0!r} and {p1!r}, or a list of rows")
    for key in (p0, p1):
        if key not in doc:
            raise ValueError(f"{name}: missing key {key!r}; its keys are {', '.join(map(repr, doc))}")
    a, la = _vector(doc[p0], f"{name}: {p0}")
    b, lb = _vector(doc[p1], f"{name}: {p1}")
    if label is not None:
        if label not in doc:
            raise ValueError(f"{name}: missing key {label!r}")
        given = doc[label]
        if not isinstance(given, list) or len(given) != len(a):
            raise ValueError(f"{name}: {label} must be a list of {len(a)} labels")
        la = [str(x) for x in given]
    return _aligned(name, a, la, b, lb)


def _aligned(name: str, a: list[float], la: list[str] | None, b: list[float], lb: list[str] | None) -> Record:
    """One record from two vectors, the second put in the order of the first's labels."""
    if la is not None and lb is not None and la != lb:
        if set(la) != set(lb):
            odd = sorted(set(la) ^ set(lb))[:3]
            raise ValueError(f"{name}: p0 and p1 have different labels, e.g. {odd}")
        pos = {lab: j for j, lab in enumerate(lb)}
        b = [b[pos[lab]] for lab in la]
    labels = la if la is not None else lb
    if labels is not None and len(set(labels)) != len(labels):
        raise ValueError(f"{name}: duplicate labels")
    return (None, a, b, labels)


def _has_key(doc: Any, key: str) -> bool:
    """Whether a JSON pair document has ``key`` (in its first row, for a list of rows)."""
    if isinstance(doc, list):
        return bool(doc) and isinstance(doc[0], Mapping) and key in doc[0]
    return isinstance(doc, Mapping) and key in doc


def _json_instances(name: str, doc: Any, p0: str, p1: str, ident: str) -> list[Record]:
    """A JSON list of ``{id, p0, p1}`` objects, or such a list under ``"instances"``."""
    if isinstance(doc, Mapping):
        extra = [k for k in doc if k != "instances"]
        if extra:
            raise ValueError(f"{name}: unknown key {extra[0]!r}; allowed: 'instances'")
        doc = doc.get("instances")
    if not isinstance(doc, list):
        raise ValueError(
            f'{name}: expected a list of {{{ident}, {p0}, {p1}}} objects or {{"instances": [...]}}'
        )
    out: list[Record] = []
    for j, rec in enumerate(doc):
        if not isinstance(rec, Mapping) or p0 not in rec or p1 not in rec:
            raise ValueError(f"{name}: instance #{j} must be an object with {p0!r} and {p1!r}")
        extra = [k for k in rec if k not in (ident, p0, p1)]
        if extra:
            raise ValueError(f"{name}: instance #{j}: unknown key {extra[0]!r}")
        a, la = _vector(rec[p0], f"{name}: instance #{j} {p0}")
        b, lb = _vector(rec[p1], f"{name}: instance #{j} {p1}")
        _, a, b, labels = _aligned(f"{name}: instance #{j}", a, la, b, lb)
        out.append((str(rec.get(ident, j)), a, b, labels))
    return out


# ---------------------------------------------------------------------------------------------
# which columns hold the pair: for a reader that lets its user pick them (the studio's upload)
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PairColumns:
    """The columns of a pair file (JSON: the keys of its object, or of its row objects), whether
    each holds numbers only, and a guess of the label, P0 and P1 columns for :func:`read_pair`:
    ``p0``/``p1``/``label`` when the file has them, else the first two numeric columns and the
    first other column (``category,normal,fraud`` -> label ``category``, P0 ``normal``, P1
    ``fraud``).  A guess is None where the file has no candidate."""

    columns: tuple[str, ...]
    numeric: tuple[bool, ...]
    label: str | None
    p0: str | None
    p1: str | None


def _all_numbers(values: list[Any]) -> bool:
    for v in values:
        if is_real(v):
            continue
        try:
            float(str(v).strip())
        except ValueError:
            return False
    return bool(values)


def _guess(columns: list[str], numeric: list[bool]) -> PairColumns:
    nums = [c for c, n in zip(columns, numeric, strict=True) if n]
    others = [c for c, n in zip(columns, numeric, strict=True) if not n]
    p0: str | None = "p0"
    p1: str | None = "p1"
    if not ("p0" in columns and "p1" in columns):
        p0, p1 = (nums[0] if nums else None), (nums[1] if len(nums) > 1 else None)
    label = "label" if "label" in columns else (others[0] if others else None)
    return PairColumns(tuple(columns), tuple(numeric), label, p0, p1)


def _json_columns(name: str, doc: Any) -> tuple[list[str], list[bool]]:
    if isinstance(doc, list) and doc and all(isinstance(r, Mapping) for r in doc):
        columns = list(dict.fromkeys(str(k) for r in doc for k in r))
        return columns, [_all_numbers([r.get(c) for r in doc]) for c in columns]
    if not isinstance(doc, Mapping):
        raise ValueError(f"{name}: expected a JSON object of columns or a list of row objects")
    columns = [str(k) for k in doc]
    numeric = []
    for v in doc.values():
        values = list(v.values()) if isinstance(v, Mapping) else v
        numeric.append(isinstance(values, list) and _all_numbers(values))
    return columns, numeric


def pair_columns(path: Any, *, filename: str | None = None) -> PairColumns:
    """The columns of a pair file and a guess of which hold the labels, P0 and P1 (see
    :class:`PairColumns`); ``path`` and ``filename`` as in :func:`read_pair`."""
    src = _source(path, filename)
    if src.fmt == "json":
        columns, numeric = _json_columns(src.name, _load_json(src))
    else:
        columns, rows = _read_table(src)
        numeric = [_all_numbers([r[j] for r in rows]) for j in range(len(columns))]
    return _guess(columns, numeric)
