"""The tables of ``privatize``, ``test`` and ``estimate``: CSV through the standard library's
:mod:`csv` (the core install runs the whole deployment walk-through), Parquet through pyarrow
(the ``sweeps`` extra) when a file's name ends in ``.parquet`` or ``.pq``.

A table is a :class:`Frame`: its column names and, per column, its values (strings for a CSV;
for a Parquet file the values as stored, shown as text when read as symbols).  Every problem is a
one-line error (exit 2) naming the option and the file.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ldpopt.cli._common import fail, need

__all__ = ["Frame", "pick_column", "read_table", "table_format", "write_table"]

#: what a missing pyarrow (Parquet files) is reported for
PARQUET_FEATURE = "reading and writing Parquet files"


@dataclass
class Frame:
    """Column names (in order) and the values of each column, all of one length."""

    columns: list[str]
    data: dict[str, list[Any]] = field(default_factory=dict)

    @property
    def num_rows(self) -> int:
        return len(self.data[self.columns[0]]) if self.columns else 0

    def strings(self, column: str) -> np.ndarray:
        """A column's values as text."""
        return np.array([str(v) for v in self.data[column]], dtype=str)

    def insert(self, pos: int, column: str, values: list[Any]) -> None:
        self.columns.insert(pos, column)
        self.data[column] = values

    def drop(self, column: str) -> None:
        self.columns.remove(column)
        del self.data[column]


def table_format(path: Path) -> str:
    return "parquet" if path.suffix.lower() in (".parquet", ".pq") else "csv"


def read_table(path: Path, option: str, header: bool = True) -> Frame:
    """A CSV (first row = the header, unless ``header`` is False: then one column ``symbol``) or
    Parquet file."""
    if not path.exists():
        fail(f"{option} {path}: no such file")
    if table_format(path) == "parquet":
        return _read_parquet(path, option)
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            rows = [row for row in csv.reader(fh, skipinitialspace=True) if row]
    except (csv.Error, UnicodeDecodeError, OSError) as exc:
        fail(f"{option} {path} is not a readable CSV file: {str(exc).splitlines()[0]}")
    if not rows:
        fail(f"{option} {path} is empty")
    names = [name.strip() for name in rows[0]] if header else ["symbol"]
    body = rows[1:] if header else rows
    seen = set()
    for name in names:
        if name in seen:
            fail(f"{option} {path} has two columns named {name!r}")
        seen.add(name)
    for i, row in enumerate(body):
        if len(row) != len(names):
            line = i + (2 if header else 1)
            fail(
                f"{option} {path} is not a readable CSV file: row {line} has {len(row)} fields, "
                f"expected {len(names)}"
            )
    return Frame(list(names), {name: [row[j] for row in body] for j, name in enumerate(names)})


def _read_parquet(path: Path, option: str) -> Frame:
    need("pyarrow", PARQUET_FEATURE, "sweeps")
    pq = need("pyarrow.parquet", PARQUET_FEATURE, "sweeps")
    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises many types for unreadable files
        fail(f"{option} {path} is not a readable Parquet file ({type(exc).__name__})")
    names = [str(c) for c in table.column_names]
    return Frame(names, {name: table.column(i).to_pylist() for i, name in enumerate(names)})


def _csv_text(frame: Frame) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(frame.columns)
    writer.writerows(zip(*(frame.data[c] for c in frame.columns), strict=True))
    return buf.getvalue()


def write_table(path: Path, frame: Frame, option: str) -> None:
    """Write ``frame`` as CSV or Parquet (by the name's suffix) through the atomic-write helper."""
    from ldpopt._atomic import atomic_write

    if table_format(path) == "parquet":
        pa = need("pyarrow", PARQUET_FEATURE, "sweeps")
        pq = need("pyarrow.parquet", PARQUET_FEATURE, "sweeps")
        table = pa.table({c: frame.data[c] for c in frame.columns})
        try:
            atomic_write(path, lambda fh: pq.write_table(table, fh), binary=True)
        except OSError as exc:
            fail(f"cannot write {option} {path}: {exc.strerror or exc}")
        return
    text = _csv_text(frame)
    try:
        atomic_write(path, lambda fh: fh.write(text), binary=False, newline="")
    except OSError as exc:
        fail(f"cannot write {option} {path}: {exc.strerror or exc}")


def pick_column(df: Frame, path: Path, column: str | None, option: str, default: str | None = None) -> str:
    """The column to read: ``column`` if given (must exist), else ``default`` if present, else the
    only one; fails (one line) on a file with a header but no rows."""
    cols = df.columns
    if column is not None:
        if column not in cols:
            fail(f"column {column!r} not found in {path}; columns: {', '.join(cols)}")
    elif default is not None and default in cols:
        column = default
    elif len(cols) == 1:
        column = cols[0]
    else:
        fail(f"{path} has several columns ({', '.join(cols)}): choose one with --column")
    if df.num_rows == 0:
        fail(f"{option} {path} has a header but no data rows")
    return column
