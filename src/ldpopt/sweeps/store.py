"""The result store of a sweep: one Parquet file per finished chunk plus ``manifest.json``.

Layout of a store directory ``DIR``::

    DIR/manifest.json                  config, library version, progress, chunk errors
    DIR/chunks/chunk-000000.parquet    rows of chunk 0 (one file per finished chunk)
    DIR/chunks/chunk-000001.parquet
    ...

Crash safety: every file is written to a hidden temporary file in the same directory, flushed
and fsync'ed, then moved into place with :func:`os.replace` (atomic on POSIX and Windows).  A
chunk file therefore either exists complete or not at all, whatever moment the process is
killed at; leftover temporaries (names starting with ``.``, ignored by pyarrow datasets) are
removed when the store is opened again.  The chunk files are the source of truth for what is
finished; the manifest is progress information and may lag behind them by one chunk.
"""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ldpopt._atomic import atomic_write
from ldpopt._extras import require
from ldpopt.errors import StoreError

__all__ = [
    "SweepStore",
    "StoreError",
    "SCHEMA",
    "COLUMNS",
    "MANIFEST_NAME",
    "CHUNK_DIR",
    "FORMAT",
    "read_manifest",
    "read_results",
    "load_results",
]

#: what a missing pandas / pyarrow is reported for (``MissingExtraError``)
FEATURE = "ldpopt.sweeps"
pa = require("pyarrow", FEATURE, "sweeps")
pq = require("pyarrow.parquet", FEATURE, "sweeps")

FORMAT = "ldpopt-sweep/1"
MANIFEST_NAME = "manifest.json"
CHUNK_DIR = "chunks"
_CHUNK_PREFIX = "chunk-"
_CHUNK_SUFFIX = ".parquet"
#: the manifest is rewritten at most this often while chunks stream in (always on errors and at the end)
MANIFEST_INTERVAL_S = 1.0
#: Parquet compression of chunk files
COMPRESSION = "zstd"

#: One row per (instance, eps, divergence, budget, mechanism).
SCHEMA = pa.schema(
    [
        pa.field("instance", pa.string(), nullable=False),
        pa.field("instance_index", pa.int64(), nullable=False),
        pa.field("k", pa.int64(), nullable=False),
        pa.field("eps", pa.float64(), nullable=False),
        pa.field("divergence", pa.string(), nullable=False),
        pa.field("budget", pa.int64(), nullable=False),
        pa.field("mechanism", pa.string(), nullable=False),
        pa.field("value", pa.float64()),
        pa.field("normalized_utility", pa.float64()),
        pa.field("num_outputs", pa.int64()),
        pa.field("partition", pa.string()),
        pa.field("solve_time", pa.float64()),
    ]
)
COLUMNS = tuple(SCHEMA.names)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def read_manifest(directory: str | os.PathLike) -> dict:
    """The parsed ``manifest.json`` of a sweep directory."""
    path = Path(directory) / MANIFEST_NAME
    if not path.is_file():
        raise StoreError(f"{str(directory)!r} is not a sweep directory (no {MANIFEST_NAME})")
    try:
        return json.loads(path.read_text())
    except ValueError as exc:
        raise StoreError(f"{str(path)!r} is not valid JSON: {exc}") from None


def chunk_files(directory: str | os.PathLike) -> dict[int, Path]:
    """Finished chunk files of a store, by chunk id."""
    cdir = Path(directory) / CHUNK_DIR
    out = {}
    if cdir.is_dir():
        for p in cdir.iterdir():
            name = p.name
            if name.startswith(_CHUNK_PREFIX) and name.endswith(_CHUNK_SUFFIX):
                core = name[len(_CHUNK_PREFIX) : -len(_CHUNK_SUFFIX)]
                if core.isdigit():
                    out[int(core)] = p
    return out


def read_results(directory: str | os.PathLike, columns: list[str] | None = None) -> Any:
    """All finished rows of a store as one Arrow table (``pyarrow.Table``), in chunk order
    (deterministic)."""
    files = chunk_files(directory)
    tables = [pq.read_table(files[c], columns=columns) for c in sorted(files)]
    if not tables:
        schema = SCHEMA if columns is None else pa.schema([SCHEMA.field(c) for c in columns])
        return schema.empty_table()
    return pa.concat_tables(tables)


def load_results(directory: str | os.PathLike, columns: list[str] | None = None) -> Any:
    """The finished rows of a sweep directory as a pandas DataFrame, in chunk order.

    Parameters
    ----------
    directory : path
        A directory written by :func:`~ldpopt.sweeps.runner.run_sweep` / ``ldpopt sweep``.
    columns : list of str, optional
        Read only these columns.
    """
    if columns is not None:
        unknown = [c for c in columns if c not in COLUMNS]
        if unknown:
            raise ValueError(f"columns {unknown} are not sweep columns; available: {', '.join(COLUMNS)}")
    read_manifest(directory)  # a clear error for a directory that is not a sweep
    require("pandas", FEATURE, "sweeps")  # pyarrow's to_pandas needs it
    return read_results(directory, columns).to_pandas()


class SweepStore:
    """Writer side of a store directory (single writer: the driver process).

    Parameters
    ----------
    root : path
        The store directory (created if missing).
    fingerprint : str
        Identity of the sweep (config + chunking).
    num_chunks : int
        Number of chunks of the sweep.
    rows_per_chunk : list of int
        Expected row count of every chunk (a finished file with another count is recomputed).
    resume : bool
        Keep finished chunks of the same sweep (``True``) or start over (``False``).
    manifest_base : dict
        Static manifest fields (config, resolved config, version...).
    """

    def __init__(
        self,
        root: str | os.PathLike,
        fingerprint: str,
        num_chunks: int,
        rows_per_chunk: list[int],
        cells_per_chunk: list[int],
        resume: bool,
        manifest_base: dict[str, Any],
    ):
        self.root = Path(root)
        self.chunk_dir = self.root / CHUNK_DIR
        self.fingerprint = fingerprint
        self.num_chunks = num_chunks
        self.rows_per_chunk = rows_per_chunk
        self.cells_per_chunk = cells_per_chunk
        self._last_manifest = 0.0
        self.write_seconds = 0.0
        self.interrupted = False
        if self.root.exists() and not self.root.is_dir():
            raise StoreError(f"output path {str(self.root)!r} exists and is not a directory")
        try:
            self.chunk_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"cannot create the output directory {str(self.root)!r}: {exc.strerror or exc}"
            ) from None
        if not os.access(self.chunk_dir, os.W_OK):
            raise StoreError(f"output directory {str(self.root)!r} is not writable")
        previous = self._previous_manifest()
        existing = chunk_files(self.root)
        if previous is None and existing:
            raise StoreError(
                f"{str(self.root)!r} holds chunk files but no {MANIFEST_NAME}; "
                "refusing to mix them with a new sweep"
            )
        same = previous is not None and previous.get("fingerprint") == fingerprint
        if previous is not None and not same and resume:
            raise StoreError(
                f"{str(self.root)!r} holds a different sweep (its configuration or chunking differs); "
                "use another --out directory, or --no-resume to overwrite it"
            )
        self._keep = same and resume
        self._previous = previous
        self.errors: dict[str, dict] = {}
        self.retries: dict[str, int] = {}
        self.runs: list[dict] = []
        self.created = _now()
        self.done: set[int] = set()
        self.base = dict(manifest_base)
        self.base.update(format=FORMAT, fingerprint=fingerprint)

    def prepare(self) -> None:
        """Side effects of opening, once every check passed: drop stale files, find finished chunks."""
        existing = chunk_files(self.root)
        if self._keep:
            prev = self._previous
            assert prev is not None  # _keep is only set with a previous manifest
            self.errors = dict(prev.get("chunk_errors", {}))
            self.retries = dict(prev.get("worker_retries", {}))
            self.runs = list(prev.get("runs", []))
            self.created = prev.get("created", self.created)
        else:
            for path in existing.values():
                path.unlink()
            existing = {}
        self._clean_temporaries()
        for cid, path in existing.items():
            if cid >= self.num_chunks or not self._valid(cid, path):
                path.unlink()  # out of plan or unreadable: recompute
            else:
                self.done.add(cid)
        for cid in self.done:
            self.errors.pop(str(cid), None)

    # --- opening ---------------------------------------------------------------------------
    def _previous_manifest(self) -> dict | None:
        path = self.root / MANIFEST_NAME
        if not path.exists():
            return None
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise StoreError(
                f"{str(path)!r} exists but cannot be read ({exc}); remove it or choose another --out"
            ) from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise StoreError(f"{str(path)!r} is not an ldpopt sweep manifest ({FORMAT})")
        return data

    def _clean_temporaries(self) -> None:
        for d in (self.root, self.chunk_dir):
            for p in d.glob(".*.tmp"):
                try:
                    p.unlink()
                except OSError:
                    pass

    def _valid(self, cid: int, path: Path) -> bool:
        try:
            meta = pq.read_metadata(path)
        except Exception:  # corrupt or foreign file: recompute the chunk
            return False
        return meta.num_rows == self.rows_per_chunk[cid] and meta.schema.to_arrow_schema().names == list(
            COLUMNS
        )

    # --- writing ---------------------------------------------------------------------------
    def chunk_path(self, cid: int) -> Path:
        return self.chunk_dir / f"{_CHUNK_PREFIX}{cid:06d}{_CHUNK_SUFFIX}"

    def write_chunk(self, cid: int, table: Any) -> float:
        """Atomically write one finished chunk; returns the seconds spent."""
        t0 = time.perf_counter()
        if table.num_rows != self.rows_per_chunk[cid]:
            raise StoreError(f"chunk {cid} has {table.num_rows} rows, expected {self.rows_per_chunk[cid]}")
        table = table.cast(SCHEMA) if table.schema != SCHEMA else table
        # serialised in memory first: Arrow releases the GIL there (writing through a Python file
        # object takes it back for every page), then one write
        buf = pa.BufferOutputStream()
        pq.write_table(table, buf, compression=COMPRESSION)
        data = buf.getvalue()
        atomic_write(self.chunk_path(cid), lambda fh: fh.write(data))
        self.done.add(cid)
        self.errors.pop(str(cid), None)
        dt = time.perf_counter() - t0
        self.write_seconds += dt
        return dt

    def record_error(self, cid: int, error: str, tb: str | None, attempts: int = 1) -> None:
        """Note a failed chunk (the caller writes the manifest)."""
        self.errors[str(cid)] = {"error": error, "traceback": tb, "attempts": attempts, "time": _now()}

    def record_retry(self, cid: int) -> None:
        self.retries[str(cid)] = self.retries.get(str(cid), 0) + 1

    @property
    def cells_done(self) -> int:
        return sum(self.cells_per_chunk[c] for c in self.done)

    @property
    def rows_done(self) -> int:
        return sum(self.rows_per_chunk[c] for c in self.done)

    def status(self, running: bool) -> str:
        """``complete``, ``running``, ``interrupted`` (stopped by Ctrl-C / SIGTERM), ``failed``
        (chunks failed) or ``incomplete``."""
        if len(self.done) == self.num_chunks:
            return "complete"
        if running:
            return "running"
        if self.interrupted:
            return "interrupted"
        return "failed" if self.errors else "incomplete"

    def manifest(self, running: bool, run: dict | None = None) -> dict:
        data = dict(self.base)
        data.update(
            created=self.created,
            updated=_now(),
            status=self.status(running),
            chunks={"total": self.num_chunks, "done": len(self.done), "failed": len(self.errors)},
            cells={"total": sum(self.cells_per_chunk), "done": self.cells_done},
            rows={"total": sum(self.rows_per_chunk), "done": self.rows_done},
            chunk_errors=dict(sorted(self.errors.items(), key=lambda kv: int(kv[0]))),
            worker_retries=dict(sorted(self.retries.items(), key=lambda kv: int(kv[0]))),
            runs=self.runs + ([run] if run is not None else []),
            columns=list(COLUMNS),
        )
        return data

    def write_manifest(self, running: bool = True, run: dict | None = None, force: bool = True) -> None:
        now = time.monotonic()
        if not force and now - self._last_manifest < MANIFEST_INTERVAL_S:
            return
        t0 = time.perf_counter()
        payload = json.dumps(self.manifest(running, run), indent=2, allow_nan=False, default=str).encode()
        atomic_write(self.root / MANIFEST_NAME, lambda fh: fh.write(payload))
        self._last_manifest = now
        self.write_seconds += time.perf_counter() - t0

    def finish(self, run: dict) -> dict:
        """Append ``run`` to the run history and write the final manifest (status ``interrupted``
        when ``run["interrupted"]``)."""
        self.interrupted = bool(run.get("interrupted"))
        self.runs.append(run)
        self.write_manifest(running=False, force=True)
        return self.manifest(running=False)
