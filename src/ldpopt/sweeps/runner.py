r"""Sweeps at scale: optimal values over (instance, eps, divergence, budget) grids, resumable.

:func:`run_sweep` evaluates the optimal :math:`\varepsilon`-LDP utility (SPR paper, eq. 3/4,
solved exactly by :func:`ldpopt.sweep` / :func:`ldpopt.optimal_mechanism`) and, optionally, the
binary mechanism, k-ary randomized response and the Kairouz-Oh-Viswanath LP on every cell of
a grid described by a TOML configuration (``docs/sweeps.md``), and stores one Parquet row per
(instance, eps, divergence, budget, mechanism).

The run is a pipeline over the modules of :mod:`ldpopt.sweeps`: the configuration
(:mod:`~ldpopt.sweeps.config`) is cut into chunks (:mod:`~ldpopt.sweeps.chunks`), a scheduler
(:mod:`~ldpopt.sweeps.schedulers`: inline, processes, Dask) computes them, and the driver writes
each finished chunk atomically into the store (:mod:`~ldpopt.sweeps.store`), so a run killed at
any moment and started again over the same directory computes exactly the missing chunks.  The
results are bit-identical across schedulers (the ``solve_time`` column aside).

The names of the pipeline that callers use (:func:`load_results`, :func:`plan_chunks`,
:func:`parse_partition`, :func:`parse_scheduler`, :func:`summarize_sweep`, :func:`write_report`
...) are importable from here too.
"""

from __future__ import annotations

import logging
import os
import sys
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ldpopt._extras import require
from ldpopt._progress import ProgressBar
from ldpopt._validation import check_positive_int, is_integer, is_real
from ldpopt.errors import LdpoptWarning, SchedulerError
from ldpopt.sweeps._lifeline import sigterm_as_interrupt
from ldpopt.sweeps.chunks import (
    FAULT_ENV,
    ChunkTask,
    estimated_work,
    faults_from_env,
    make_tasks,
    parse_partition,
    partition_string,
    plan_chunks,
    warmup_task,
)
from ldpopt.sweeps.config import SweepConfig, SweepConfigError, load_config
from ldpopt.sweeps.report import summarize_sweep, write_report
from ldpopt.sweeps.schedulers import (
    CONNECT_TIMEOUT_S,
    Scheduler,
    check_spawnable,
    make_scheduler,
    parse_scheduler,
)
from ldpopt.sweeps.store import COLUMNS, FEATURE, StoreError, SweepStore, load_results, read_manifest

__all__ = [
    "run_sweep",
    "load_results",
    "summarize_sweep",
    "write_report",
    "read_manifest",
    "plan_chunks",
    "parse_partition",
    "partition_string",
    "parse_scheduler",
    "SweepConfigError",
    "SchedulerError",
    "StoreError",
    "COLUMNS",
    "FAULT_ENV",
    "MAX_ROWS_IN_MEMORY",
]

if TYPE_CHECKING:
    from concurrent.futures import Future

log = logging.getLogger("ldpopt.sweep")

#: run_sweep returns the dataset directory instead of a DataFrame above this many rows
MAX_ROWS_IN_MEMORY = 20_000_000
#: seconds to start one worker process and load the compiled kernels in it (measured 1.2-2 s on 2
#: cores); with the default worker count, a sweep whose estimated work is below this times the
#: number of workers is computed in the driver with the solver's own threads instead (as fast, and
#: no start-up)
WORKER_START_S = 1.5
#: the manifest's scheduler name of such a run
SMALL_SWEEP_SCHEDULER = "in-process (small sweep)"
#: share of a chunk's time spent holding the GIL (everything but the compiled solver, which
#: releases it: pairs, reduction, partitions, baselines, the chunk's table); measured 0.55-0.6 on
#: the Figure-1b grid (k = 100, where the solver is cheapest next to the rest; smaller at larger
#: k).  With ``threads`` a sweep of W seconds of one-core work takes about max(share W, W / n) on
#: n cores, with a pool of n processes about WORKER_START_S + W / n: ``auto`` picks the smaller
GIL_SHARE = 0.6


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def _check_arguments(workers: Any, connect_timeout: Any, max_rows_in_memory: Any) -> int | None:
    """Validate the keyword arguments of :func:`run_sweep`; returns ``workers`` checked."""
    if workers is not None:
        workers = check_positive_int(workers, "workers")
    if not (is_real(connect_timeout) and connect_timeout > 0):
        raise ValueError(f"connect_timeout must be a positive number of seconds, got {connect_timeout!r}")
    if not is_integer(max_rows_in_memory) or max_rows_in_memory < 0:
        raise ValueError(f"max_rows_in_memory must be an integer >= 0, got {max_rows_in_memory!r}")
    if max_rows_in_memory > 0:  # the rows may come back as a DataFrame: say so before any work
        require("pandas", FEATURE, "sweeps")
    return workers


def _open_store(cfg: SweepConfig, ipc: int, probe: list[ChunkTask], out, resume: bool) -> SweepStore:
    import ldpopt

    base = {
        "ldpopt_version": ldpopt.__version__,
        "python": sys.version.split()[0],
        "config_source": cfg.source,
        "config": cfg.raw,
        "resolved": dict(cfg.resolved(), instances_per_chunk=ipc),
    }
    return SweepStore(
        out,
        cfg.fingerprint(ipc),
        len(probe),
        [t.num_rows for t in probe],
        [t.num_cells for t in probe],
        resume,
        base,
    )


class _Writer:
    """Writes finished chunks into the store in a background thread, one at a time: writing chunk
    n (Parquet, fsync, rename: a few ms, ~10% of a small chunk) overlaps computing chunk n + 1.
    The store's state is read only after :meth:`settle`."""

    def __init__(self, store: SweepStore):
        from concurrent.futures import ThreadPoolExecutor

        self.store = store
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ldpopt-store")
        self._pending: Future | None = None

    def settle(self) -> None:
        """Wait for the write in flight (its error is raised here)."""
        fut, self._pending = self._pending, None
        if fut is not None:
            fut.result()

    def write(self, cid: int, table: Any) -> None:
        self.settle()
        self._pending = self._pool.submit(self.store.write_chunk, cid, table)

    def close(self) -> None:
        try:
            self.settle()
        finally:
            self._pool.shutdown(wait=True)


def _compute(
    scheduler: Scheduler,
    tasks: list[ChunkTask],
    store: SweepStore,
    probe: list[ChunkTask],
    bar: ProgressBar,
    run_info: dict,
) -> tuple[float, float]:
    """Write each finished chunk and record each failed one as they come; returns the seconds
    spent solving and building tables."""
    solve_s = build_s = 0.0
    by_worker: dict[tuple[int, int], int] = {}
    writer = _Writer(store)
    try:
        for outcome in scheduler.run(tasks, store):
            cid = outcome.chunk_id
            writer.settle()  # the store's state is complete up to the previous chunk
            if outcome.error is None:
                if store.done:  # progress so far (the final manifest follows the last chunk)
                    store.write_manifest(running=True, run=run_info, force=False)
                writer.write(cid, outcome.table)
                solve_s += outcome.solve_seconds
                build_s += outcome.build_seconds
                run_info["chunks_computed"] += 1
                worker = (outcome.pid, outcome.thread)
                by_worker[worker] = by_worker.get(worker, 0) + 1
                # how the chunks spread over the worker processes or threads (busiest first)
                run_info["chunks_per_worker"] = sorted(by_worker.values(), reverse=True)
                cells = probe[cid].num_cells
                bar.advance(cells)
                log.info(
                    "chunk %d done: %d cells in %.3g s (%d/%d chunks)",
                    cid,
                    cells,
                    outcome.solve_seconds,
                    len(store.done) + 1,
                    len(probe),
                )
            else:
                run_info["chunks_failed"] += 1
                store.record_error(cid, outcome.error, outcome.traceback, outcome.attempts)
                store.write_manifest(running=True, run=run_info)
                bar.print(f"chunk {cid}: {outcome.error}", prefix="chunk failed:")
                log.warning("chunk %d: %s", cid, outcome.error)
                log.info("chunk %d failed", cid)
    finally:
        writer.close()  # an interrupted run keeps the chunk being written
    return solve_s, build_s


def _warn_failures(store: SweepStore, num_chunks: int, out) -> None:
    if store.errors:
        first = min(map(int, store.errors))
        warnings.warn(
            f"{len(store.errors)} of {num_chunks} chunks failed (first: chunk {first}: "
            f"{store.errors[str(first)]['error']}); see {Path(out) / 'manifest.json'}; "
            "rerun to retry them",
            LdpoptWarning,
            stacklevel=3,
        )


def run_sweep(
    config: Any,
    out: str | os.PathLike,
    scheduler: str = "auto",
    resume: bool = True,
    quiet: bool = False,
    *,
    workers: int | None = None,
    connect_timeout: float = CONNECT_TIMEOUT_S,
    max_rows_in_memory: int = MAX_ROWS_IN_MEMORY,
):
    """Run (or resume) a sweep and return its rows.

    Parameters
    ----------
    config : path, dict or SweepConfig
        A TOML file (``docs/sweeps.md``) or the same structure as nested dicts.
    out : path
        The store directory (created; Parquet chunk files + ``manifest.json``).
    scheduler : str
        ``"auto"`` (default), ``"threads"``, ``"processes"``, ``"inline"``, ``"dask-local"`` or
        ``"tcp://HOST:PORT"``.  ``"auto"`` is ``"threads"`` unless the cost model expects a
        process pool to finish first (a long sweep; see :data:`GIL_SHARE`).  ``"processes"`` with
        the default worker count computes a sweep whose estimated work is below
        ``WORKER_START_S`` per worker in this process instead (the solver's threads).
    resume : bool
        ``True`` (default): finished chunks in ``out`` are kept and only the missing ones computed;
        ``out`` must then hold nothing or the same sweep.  ``False``: start over, deleting the
        chunk files in ``out``.
    quiet : bool
        No progress bar; progress goes to the ``ldpopt.sweep`` logger (INFO per chunk).
    workers : int, optional
        Threads for ``threads``, worker processes for ``processes``/``dask-local`` (default
        ``[run] workers`` or all cores).
    connect_timeout : float
        Seconds to wait for a ``tcp://`` scheduler.
    max_rows_in_memory : int
        Above this many rows the dataset directory is returned instead of a DataFrame
        (default 20 million, about 2 GB in memory).

    Returns
    -------
    pandas.DataFrame or pathlib.Path
        All finished rows in chunk order, columns :data:`COLUMNS` (see ``docs/sweeps.md``);
        for a dataset with more than ``max_rows_in_memory`` rows, the path of the Parquet
        dataset directory (``out/chunks``), to be read with :func:`load_results`,
        ``pandas.read_parquet`` or ``pyarrow.dataset`` by columns or filters.

    Raises
    ------
    SweepConfigError, SchedulerError, StoreError
        (all ``ValueError``) before any work starts.
    MissingExtraError
        Before any work, when pandas is missing and the rows may be returned as a DataFrame
        (``max_rows_in_memory > 0``), or an instance file needs it (``pip install "ldpopt[sweeps]"``).
    SchedulerError
        Also before any work, when ``processes``/``dask-local`` is called from the top level of a
        script outside an ``if __name__ == "__main__":`` block (the workers re-import the script).
    KeyboardInterrupt
        On Ctrl-C, or SIGTERM (in the main thread, unless the program handles SIGTERM itself):
        the workers are stopped, finished chunks are kept and the manifest's status is
        ``interrupted``; running again over ``out`` resumes.

    Warns
    -----
    LdpoptWarning
        When chunks failed; their errors are in ``manifest.json`` (``chunk_errors``) and a rerun
        retries them.
    """
    cfg = load_config(config)
    kind, address = parse_scheduler(scheduler)
    workers = _check_arguments(workers, connect_timeout, max_rows_in_memory)
    n_workers = workers or cfg.workers or os.cpu_count() or 1
    if kind == "auto":
        kind = _auto_scheduler(cfg, n_workers)
    if kind in ("processes", "dask-local"):  # a script that cannot run a pool fails before any work
        check_spawnable(kind)
    ipc = plan_chunks(cfg)
    probe = make_tasks(cfg, ipc)
    store = _open_store(cfg, ipc, probe, out, resume)
    with sigterm_as_interrupt():  # SIGTERM stops the run the way Ctrl-C does
        t_start = time.perf_counter()
        small = _small_sweep(kind, cfg, n_workers, explicit=bool(workers or cfg.workers))
        executor = make_scheduler(
            "inline" if small else kind, address, n_workers, float(connect_timeout), warmup_task(cfg)
        )
        if small:
            executor.name = SMALL_SWEEP_SCHEDULER
        try:
            store.prepare()
        except BaseException:
            executor.close()
            raise
        limit = max_rows_in_memory
        return _drive(cfg, ipc, probe, store, executor, quiet=quiet, out=out, max_rows=limit, t_start=t_start)


def _auto_scheduler(cfg: SweepConfig, n_workers: int) -> str:
    """``threads`` or ``processes``, whichever the cost model expects to finish first (see
    :data:`GIL_SHARE`); ``threads`` also where worker processes cannot be spawned (a script
    without a ``__main__`` guard)."""
    # the KOV LP (scipy's HiGHS, driven from Python) is counted as holding the GIL throughout
    share = 1.0 if "kov_lp" in cfg.baselines else GIL_SHARE
    work = estimated_work(cfg)
    kind = "threads"
    if n_workers > 1 and (share - 1.0 / n_workers) * work > WORKER_START_S:
        try:
            check_spawnable("processes")
            kind = "processes"
        except SchedulerError:
            pass
    log.info("sweep: about %.2g s of work on one core: scheduler %s with %d workers", work, kind, n_workers)
    return kind


def _small_sweep(kind: str, cfg: SweepConfig, n_workers: int, explicit: bool) -> bool:
    """Whether a default-sized process pool is replaced by this process (the sweep's estimated work
    is smaller than starting the workers)."""
    if kind != "processes" or explicit or n_workers < 2:
        return False
    work = estimated_work(cfg)
    if work >= WORKER_START_S * n_workers:
        return False
    log.info(
        "sweep: about %.2g s of work, less than starting %d worker processes: computed in this "
        "process with the solver's threads",
        work,
        n_workers,
    )
    return True


def _drive(
    cfg: SweepConfig,
    ipc: int,
    probe: list[ChunkTask],
    store: SweepStore,
    executor: Scheduler,
    *,
    quiet: bool,
    out,
    max_rows: int,
    t_start: float,
):
    """Compute the missing chunks with ``executor`` and write them; the rows (or the dataset path)."""
    run_info: dict[str, Any] = {
        "started": _now(),
        "scheduler": executor.name,
        "workers": executor.workers,
        "chunks_computed": 0,
        "chunks_failed": 0,
    }
    write_before = store.write_seconds
    try:
        store.write_manifest(running=True, run=run_info)
        tasks = [
            t
            for t in make_tasks(cfg, ipc, faults_from_env(), executor.in_worker)
            if t.chunk_id not in store.done
        ]
        log.info(
            "sweep: %d chunks (%d instances each), %d cells to compute, %d chunks already done, scheduler %s",
            len(probe),
            ipc,
            sum(t.num_cells for t in tasks),
            len(store.done),
            executor.name,
        )
        bar = ProgressBar(
            cfg.num_cells,
            "sweep",
            enabled=not quiet,
            completed=store.cells_done,
            unit="cells",
            transient=False,
        )
        with bar:
            solve_s, build_s = _compute(executor, tasks, store, probe, bar, run_info)
    except BaseException as exc:
        run_info.update(finished=_now(), interrupted=True)
        try:
            executor.close(abort=True)
        finally:
            store.finish(run_info)
        if isinstance(exc, KeyboardInterrupt):
            log.info(
                "sweep interrupted: %d of %d chunks are finished in %s; run it again with the "
                "same configuration and directory to compute the rest",
                len(store.done),
                len(probe),
                out,
            )
        raise
    executor.close()
    wall = time.perf_counter() - t_start
    run_info.update(
        finished=_now(),
        wall_seconds=round(wall, 6),
        solve_seconds=round(solve_s, 6),
        build_seconds=round(build_s, 6),
        store_seconds=round(store.write_seconds - write_before, 6),
    )
    manifest = store.finish(run_info)
    log.info(
        "sweep %s: %d/%d chunks, %d cells in %.3g s",
        manifest["status"],
        manifest["chunks"]["done"],
        manifest["chunks"]["total"],
        manifest["cells"]["done"],
        wall,
    )
    _warn_failures(store, len(probe), out)
    if store.rows_done > max_rows:
        return Path(out) / "chunks"
    return load_results(out)
