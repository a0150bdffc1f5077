"""Distribution pairs from uploaded bytes (CSV, Parquet or JSON; counts or probabilities).

* CSV and Parquet: one row per symbol, numeric columns ``p0`` and ``p1`` and optionally a
  ``label`` (or ``symbol``) column.
* JSON: an object ``{"p0": ..., "p1": ...}`` whose values are lists of numbers or objects
  label -> number.

The bytes are parsed in memory (nothing is written to disk); the values are returned as the file
holds them, for the library's validators to check (:func:`ldpopt.studio.core.pair_payload`).
"""

from __future__ import annotations

import io
from typing import Any

from ldpopt._extras import require
from ldpopt._json import loads_strict
from ldpopt.studio.core import as_number

__all__ = ["FORMATS", "read_upload"]

#: file name suffix -> format
FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".json": "json"}
_LABEL_COLUMNS = ("label", "symbol")


def _format(name: str) -> str:
    suffix = "." + name.rpartition(".")[2].lower() if "." in name else ""
    fmt = FORMATS.get(suffix)
    if fmt is None:
        raise ValueError(f"{name}: unknown file type {suffix or '(none)'}; use {', '.join(FORMATS)}")
    return fmt


def _read_json(data: bytes, name: str) -> tuple[Any, Any]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{name}: not a UTF-8 text file") from None
    doc = loads_strict(text, name)
    if not isinstance(doc, dict) or "p0" not in doc or "p1" not in doc:
        raise ValueError(f'{name}: expected an object {{"p0": ..., "p1": ...}}')
    extra = sorted(set(doc) - {"p0", "p1"})
    if extra:
        raise ValueError(f"{name}: unknown key {extra[0]!r}; allowed keys: p0, p1")
    for key in ("p0", "p1"):
        if not isinstance(doc[key], (list, dict)):
            raise ValueError(f"{name}: {key} must be a list of numbers or an object label -> number")
    return doc["p0"], doc["p1"]


def _read_table(data: bytes, name: str, fmt: str) -> tuple[Any, Any]:
    pd = require("pandas", "CSV and Parquet uploads in ldpopt studio", "studio")
    if fmt == "parquet":
        require("pyarrow", "Parquet uploads in ldpopt studio", "studio")
    try:
        df = pd.read_csv(io.BytesIO(data)) if fmt == "csv" else pd.read_parquet(io.BytesIO(data))
    except Exception as exc:  # pandas and pyarrow raise many types for unreadable files
        raise ValueError(f"{name}: cannot read {fmt} ({type(exc).__name__}: {exc})") from None
    missing = [c for c in ("p0", "p1") if c not in df.columns]
    if missing:
        raise ValueError(
            f"{name}: missing column(s) {', '.join(missing)}; expected columns p0, p1 and optionally label"
        )
    label = next((c for c in _LABEL_COLUMNS if c in df.columns), None)
    # a text cell that reads as a number is one; any other text stays text for the validator to name
    p0, p1 = ([as_number(x) for x in df[c].tolist()] for c in ("p0", "p1"))
    if label is None:
        return p0, p1
    labels = [str(x) for x in df[label]]
    if len(set(labels)) != len(labels):
        raise ValueError(f"{name}: column {label} repeats a label")
    return dict(zip(labels, p0, strict=True)), dict(zip(labels, p1, strict=True))


def read_upload(name: str, data: bytes) -> tuple[Any, Any]:
    """The pair ``(p0, p1)`` in an uploaded file, by its name's suffix: lists, or dicts label ->
    value when the file has labels."""
    fmt = _format(name)
    if not data:
        raise ValueError(f"{name}: the file is empty")
    if fmt == "json":
        return _read_json(data, name)
    return _read_table(data, name, fmt)
