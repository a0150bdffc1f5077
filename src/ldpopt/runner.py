r"""Sweeps at scale: optimal values over (instance, eps, divergence, budget) grids, resumable.

:func:`run_sweep` evaluates the optimal :math:`\varepsilon`-LDP utility (SPR paper, eq. 3/4,
solved exactly by :func:`ldpopt.sweep` / :func:`ldpopt.optimal_mechanism`) and, optionally, the
binary mechanism, k-ary randomized response and the Kairouz-Oh-Viswanath LP on every cell of
a grid described by a TOML configuration (``docs/sweeps.md``), and stores one Parquet row per
(instance, eps, divergence, budget, mechanism).

Work is cut into **chunks**: a block of instances times the whole grid, sized by a fixed cost
model for about 0.5-2 s of work, so scheduling overhead stays small and the layout depends on
the configuration only (never on the machine or the scheduler).  Chunks run on one of the
schedulers

* ``"inline"``: in this process;
* ``"processes"`` (default): a local process pool (spawned workers, one per core);
* ``"dask-local"``: a ``dask.distributed.LocalCluster`` on 127.0.0.1;
* ``"tcp://HOST:PORT"``: an existing Dask scheduler (``pip install 'ldpopt[dask]'``; the
  workers need the same ldpopt version installed).

Each chunk is computed by the same function on the same inputs whatever the scheduler, so the
results are bit-identical across schedulers (the ``solve_time`` column aside).  Each finished
chunk is written atomically by the driver (:mod:`ldpopt._sweep_store`), so a run killed at any
moment and started again over the same directory computes exactly the missing chunks.
"""

from __future__ import annotations

import logging
import math
import multiprocessing as mp
import os
import sys
import time
import traceback
import uuid
import warnings
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ldpopt._sweep_config import (
    InstanceSpec,
    SweepConfig,
    SweepConfigError,
    dirichlet_pair,
    load_config,
)
from ldpopt._sweep_store import (
    COLUMNS,
    SCHEMA,
    StoreError,
    SweepStore,
    read_manifest,
    read_results,
)
from ldpopt._validation import check_distribution_pair
from ldpopt._warnings import LdpoptWarning
from ldpopt.divergences import CODE_POWER_DOWN, CODE_POWER_UP, _renyi_value

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
    "MAX_ROWS_IN_MEMORY",
]

log = logging.getLogger("ldpopt.sweep")

#: run_sweep returns the dataset directory instead of a DataFrame above this many rows
MAX_ROWS_IN_MEMORY = 20_000_000
#: a chunk that kills its worker this many times is recorded as failed
MAX_WORKER_DEATHS = 3
#: seconds to wait for a tcp:// Dask scheduler before reporting it unreachable
CONNECT_TIMEOUT_S = 10.0
#: environment variable with test-only fault injection ("raise:ID", "die_once:ID:MARKER", "sleep:S")
FAULT_ENV = "LDPOPT_SWEEP_FAULT"

# Chunk sizing (a fixed cost model, so the chunk layout depends on the configuration only).
#: target estimated work per chunk, seconds
TARGET_CHUNK_S = 2.0
#: chunks are not made smaller than this estimated work to spread a small sweep
MIN_CHUNK_S = 0.5
#: a sweep is spread over at least this many chunks when that keeps chunks >= MIN_CHUNK_S
MIN_CHUNKS = 8
#: estimated seconds of one optimal solve on one core: a + b k^2 (ldpopt.sweep with partitions,
#: one thread, 101 eps, measured at k = 10..300: 6e-6 s at k <= 30, 3.0e-5 at 100, 2.6e-4 at 300)
_COST_A = 1e-5
_COST_B = 3e-9
#: an output budget below k costs about this factor more (the O(l k^2) program after Dinkelbach)
_BUDGET_FACTOR = 1.5
#: estimated seconds per cell of the vectorised binary / RR baselines: a + b k
_BASE_A = 5e-6
_BASE_B = 1e-7
#: estimated seconds per KOV LP solve (HiGHS): a + b 2^k
_LP_A = 5e-3
_LP_B = 8e-5


class SchedulerError(ValueError):
    """The scheduler name is invalid, Dask is missing, or the scheduler address is unreachable."""


# ---------------------------------------------------------------------------------------------
# Partitions as compact strings
# ---------------------------------------------------------------------------------------------
def partition_string(blocks) -> str:
    """``((0, 3), (1,), (2, 4))`` -> ``"0,3|1|2,4"`` (blocks in output order, original indices)."""
    return "|".join([",".join(map(str, b.tolist() if hasattr(b, "tolist") else map(int, b))) for b in blocks])


def parse_partition(text: str) -> tuple:
    """Inverse of :func:`partition_string`; an empty block (``"0,1|"``) parses to ``()``."""
    if not isinstance(text, str):
        raise TypeError(f"partition must be a string, got {text!r}")
    return tuple(tuple(int(i) for i in b.split(",")) if b else () for b in text.split("|"))


# ---------------------------------------------------------------------------------------------
# Baselines, vectorised over the eps grid
# ---------------------------------------------------------------------------------------------
def _rescaled(eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """c = e^{-eps}, A = 1 - e^{-eps} (no overflow, no cancellation)."""
    return np.exp(-eps), -np.expm1(-eps)


def _outputs_value(div, x: np.ndarray, y: np.ndarray, d: np.ndarray, eps: np.ndarray) -> np.ndarray:
    r"""Utility of s-ary RR on a block label, :math:`D(\sum_t g(x_t, y_t)/(1 + (s-1)c))` per eps (SPR eq. 30).

    ``x, y, d`` (E, s) are the rescaled output masses ``c + A P_t``, ``c + A Q_t`` and
    ``A (P_t - Q_t)`` of the s blocks at each eps.  Every value is >= 0 (a divergence of two
    distributions; the built-in terms are >= 0); Renyi is evaluated as ``optimal_mechanism``
    reports it (log domain far from S = 1: no overflow).
    """
    c, _ = _rescaled(eps)
    denom = 1.0 + (x.shape[1] - 1) * c
    lf = np.where((c == 0.0) & np.isfinite(eps), -eps, -np.inf)  # spr._log_floor
    if div.code in (CODE_POWER_UP, CODE_POWER_DOWN):
        return np.array(
            [
                _renyi_value(div.code, div.param, x[e], y[e], d[e], denom[e], lf[e])
                for e in range(eps.shape[0])
            ]
        )
    terms = div.perspective(x, y, d)
    for e in np.flatnonzero(lf > -np.inf):  # e^{-eps} underflowed: keep log(e^{-eps}) = -eps
        terms[e] = div.perspective(x[e], y[e], d[e], log_floor=float(lf[e]))
    raw = terms.sum(axis=1) / denom
    out = raw if div.value_transform is None else np.array([div.transform(float(r)) for r in raw])
    return np.where(out < 0.0, 0.0, out)


def _blocks_value(div, sums: list[tuple[float, float, float]], eps: np.ndarray) -> np.ndarray:
    r"""Utility of s-ary RR on a block label: :math:`\sum_t g(c + A P_t, c + A Q_t)/(1 + (s-1)c)` (SPR eq. 30)."""
    c, A = _rescaled(eps)
    P, Q, D = (np.array([s[j] for s in sums], dtype=float) for j in range(3))
    return _outputs_value(div, c[:, None] + A[:, None] * P, c[:, None] + A[:, None] * Q, A[:, None] * D, eps)


def _baseline_binary(u, v, eps, div):
    """Binary mechanism (Kairouz et al.): RR on 1{P0(x) >= P1(x)} = SPR with blocks (H, H^c)."""
    high = u >= v
    sums = [
        (math.fsum(u[m].tolist()), math.fsum(v[m].tolist()), math.fsum((u[m] - v[m]).tolist()))
        for m in (high, ~high)
    ]
    part = partition_string((np.flatnonzero(high), np.flatnonzero(~high)))
    return _blocks_value(div, sums, eps), np.full(eps.shape, 2, dtype=np.int64), part


def _baseline_rr(u, v, eps, div):
    """k-ary randomized response = SPR with singleton blocks; every symbol is its own output."""
    c, A = _rescaled(eps)
    value = _outputs_value(
        div,
        c[:, None] + A[:, None] * u[None, :],
        c[:, None] + A[:, None] * v[None, :],
        A[:, None] * (u - v)[None, :],
        eps,
    )
    return value, np.full(eps.shape, u.shape[0], dtype=np.int64), None


def _baseline_kov_lp(u, v, eps, div):
    """The Kairouz-Oh-Viswanath staircase LP (independent exact optimum, k <= 10)."""
    from ldpopt.lp import kov_lp

    vals = np.full(eps.shape, np.nan)
    nout = np.zeros(eps.shape, dtype=np.int64)
    for j, e in enumerate(eps):
        try:
            res = kov_lp(u, v, float(e), div)
        except ValueError:  # refused at this eps (e.g. infinite objective coefficients): no value
            continue
        if res.status == 0:
            vals[j] = res.value
            nout[j] = res.num_outputs
    return vals, nout, None


_BASELINE_FUNCS = {"binary": _baseline_binary, "rr": _baseline_rr, "kov_lp": _baseline_kov_lp}


# ---------------------------------------------------------------------------------------------
# Chunks
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ChunkTask:
    """Everything a worker needs to compute one chunk (picklable, no references to the driver)."""

    chunk_id: int
    start: int
    stop: int
    ids: tuple
    spec: InstanceSpec
    pairs: tuple | None
    eps: tuple
    divergences: tuple
    budgets: tuple
    baselines: tuple
    in_worker: bool = False
    faults: tuple = ()

    @property
    def num_cells(self) -> int:
        return (self.stop - self.start) * len(self.eps) * len(self.divergences) * len(self.budgets)

    @property
    def num_rows(self) -> int:
        return (
            (self.stop - self.start)
            * len(self.eps)
            * len(self.divergences)
            * (len(self.budgets) + len(self.baselines))
        )


@dataclass
class ChunkOutcome:
    """A computed chunk (``table``) or its error."""

    chunk_id: int
    table: Any = None
    error: str | None = None
    traceback: str | None = None
    solve_seconds: float = 0.0
    build_seconds: float = 0.0
    attempts: int = 1


def _limit_threads() -> None:
    # Parallelism comes from the chunks; the solver's own threads would oversubscribe the cores.
    try:
        import numba

        if numba.get_num_threads() != 1:
            numba.set_num_threads(1)
    except Exception:  # numba missing or its threading layer unavailable: nothing to limit
        pass


def _warm_up(single_thread: bool = True) -> None:
    """Run a tiny chunk so imports and compiled kernels are loaded before the timed work.

    Failures are ignored here: a real chunk meets them again and records them.
    """
    try:
        spec = InstanceSpec(kind="dirichlet", k=3, trials=1, alpha=(1.0, 1.0, 1.0), seed=0)
        if single_thread:
            _limit_threads()
        _compute_chunk(
            ChunkTask(
                chunk_id=-1,
                start=0,
                stop=1,
                ids=("w",),
                spec=spec,
                pairs=None,
                eps=(1.0,),
                divergences=("kl",),
                budgets=(0, 2),
                baselines=("binary", "rr"),
            )
        )
    except Exception:  # pragma: no cover - depends on the worker's environment
        pass


def _worker_init() -> None:
    # One solver thread per worker process: the parallelism comes from the chunks.
    for var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
    _warm_up()


def _apply_faults(task: ChunkTask) -> None:
    """Test-only fault injection (see FAULT_ENV): raise, kill the worker once, or slow down."""
    for spec in task.faults:
        kind, _, rest = spec.partition(":")
        if kind == "sleep":
            time.sleep(float(rest))
        elif kind == "raise" and int(rest) == task.chunk_id:
            raise RuntimeError(f"injected failure in chunk {task.chunk_id}")
        elif kind == "die_once" and task.in_worker:
            cid, _, marker = rest.partition(":")
            if int(cid) == task.chunk_id and not os.path.exists(marker):
                with open(marker, "w") as fh:
                    fh.write(str(os.getpid()))
                os._exit(17)


def run_chunk(task: ChunkTask) -> ChunkOutcome:
    """Compute one chunk; exceptions become an outcome with ``error`` set (the run continues)."""
    try:
        if task.in_worker:
            _limit_threads()
        _apply_faults(task)
        table, solve_s, build_s = _compute_chunk(task)
        return ChunkOutcome(task.chunk_id, table=table, solve_seconds=solve_s, build_seconds=build_s)
    except Exception as exc:
        return ChunkOutcome(
            task.chunk_id, error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc()
        )


def _compute_chunk(task: ChunkTask):
    import pyarrow as pa

    from ldpopt.divergences import get_divergence

    pairs = (
        list(task.pairs)
        if task.pairs is not None
        else [dirichlet_pair(task.spec, i) for i in range(task.start, task.stop)]
    )
    # renormalised exactly as every solver does (a Dirichlet draw sums to 1 only to rounding):
    # the input divergence, the baselines and the optimum then see the same distributions
    pairs = [check_distribution_pair(u, v, names=("p0", "p1")) for u, v in pairs]
    n, E = len(pairs), len(task.eps)
    eps = np.asarray(task.eps, dtype=float)
    groups = []  # (divergence index, mechanism, budget)
    for di in range(len(task.divergences)):
        groups += [(di, "optimal", b) for b in task.budgets]
        groups += [(di, m, 0) for m in task.baselines]
    G = len(groups)
    values = np.full((n, G, E), np.nan)
    nout = np.zeros((n, G, E), dtype=np.int64)
    parts = np.full((n, G, E), None, dtype=object)
    times = np.zeros((n, G, E))
    inputs = np.empty((n, len(task.divergences)))
    ks = np.array([u.shape[0] for u, _ in pairs], dtype=np.int64)
    by_k = {int(k): np.flatnonzero(ks == k) for k in np.unique(ks)}
    from ldpopt.batch import sweep

    solve_s = build_s = 0.0
    cache: dict = {}
    for g, (di, mech, budget) in enumerate(groups):
        name = task.divergences[di]
        div = get_divergence(name)
        t0 = time.perf_counter()
        if mech == "optimal":
            if budget == task.budgets[0]:
                inputs[:, di] = [div(u, v) for u, v in pairs]
            results = []
            for pos in by_k.values():
                res = sweep(
                    np.vstack([pairs[i][0] for i in pos]),
                    np.vstack([pairs[i][1] for i in pos]),
                    eps,
                    divergence=name,
                    max_outputs=None if budget == 0 else budget,
                    return_partitions=True,
                    progress=False,
                )
                values[pos, g, :] = np.asarray(res.values, dtype=float)
                nout[pos, g, :] = np.asarray(res.num_outputs, dtype=np.int64)
                results.append((pos, res.partitions))
            dt = time.perf_counter() - t0
            t1 = time.perf_counter()
            for pos, partitions in results:
                for j, i in enumerate(pos):
                    parts[i, g, :] = [_cached_partition_string(p, cache) for p in partitions[j]]
            build_s += time.perf_counter() - t1
        else:
            func = _BASELINE_FUNCS[mech]
            for i, (u, v) in enumerate(pairs):
                values[i, g, :], nout[i, g, :], parts[i, g, :] = func(u, v, eps, div)
            dt = time.perf_counter() - t0
        times[:, g, :] = dt / (n * E)
        solve_s += dt
    t1 = time.perf_counter()
    div_of_group = np.array([di for di, _, _ in groups], dtype=np.int64)
    denom = inputs[:, div_of_group][:, :, None]
    ok = (denom != 0) & np.isfinite(denom) & np.isfinite(values)
    with np.errstate(all="ignore"):
        # in [0, 1] by data processing (outside only by rounding); nan where D(P0||P1) = 0
        normalized = np.where(ok, np.clip(values / np.where(ok, denom, 1.0), 0.0, 1.0), np.nan)
    per_inst = G * E
    group_div = np.array([task.divergences[di] for di, _, _ in groups], dtype=object)
    group_mech = np.array([m for _, m, _ in groups], dtype=object)
    group_budget = np.array([b for _, _, b in groups], dtype=np.int64)
    columns = [
        pa.array(np.repeat(np.asarray(task.ids, dtype=object), per_inst), type=pa.string()),
        pa.array(np.repeat(np.arange(task.start, task.stop, dtype=np.int64), per_inst)),
        pa.array(np.repeat(ks, per_inst)),
        pa.array(np.tile(eps, n * G)),
        pa.array(np.tile(np.repeat(group_div, E), n), type=pa.string()),
        pa.array(np.tile(np.repeat(group_budget, E), n)),
        pa.array(np.tile(np.repeat(group_mech, E), n), type=pa.string()),
        pa.array(values.ravel()),
        pa.array(normalized.ravel()),
        pa.array(nout.ravel()),
        pa.array(parts.ravel(), type=pa.string()),
        pa.array(times.ravel()),
    ]
    table = pa.Table.from_arrays(columns, schema=SCHEMA)
    build_s += time.perf_counter() - t1
    return table, solve_s, build_s


def _cached_partition_string(blocks, cache: dict) -> str:
    # neighbouring eps often share the optimal partition: format each distinct one once
    key = blocks if isinstance(blocks, tuple) else tuple(map(tuple, blocks))
    s = cache.get(key)
    if s is None:
        s = cache[key] = "|".join([",".join(map(str, b)) for b in key])
    return s


# ---------------------------------------------------------------------------------------------
# Chunk plan
# ---------------------------------------------------------------------------------------------
def _instance_cost(cfg: SweepConfig, k: int) -> float:
    """Estimated seconds of one instance over the whole grid on one core (fixed cost model)."""
    solve = sum((_COST_A + _COST_B * k * k) * (_BUDGET_FACTOR if 0 < b < k else 1.0) for b in cfg.budgets)
    base = sum(
        _LP_A + _LP_B * 2.0 ** min(k, 30) if m == "kov_lp" else _BASE_A + _BASE_B * k for m in cfg.baselines
    )
    return len(cfg.eps) * len(cfg.divergences) * (solve + base)


def plan_chunks(cfg: SweepConfig) -> int:
    """Instances per chunk: ``[run] instances_per_chunk`` or the cost model's choice.

    The model aims at ``TARGET_CHUNK_S`` of work per chunk, but spreads a small sweep over
    ``MIN_CHUNKS`` chunks while they keep at least ``MIN_CHUNK_S`` each, and evens out the chunk
    sizes (the last chunk is never much smaller than the others).  It depends on the
    configuration only, so every machine and scheduler cuts the sweep the same way.
    """
    T = cfg.num_instances
    if cfg.instances_per_chunk is not None:
        return min(cfg.instances_per_chunk, T)
    cost = max(_instance_cost(cfg, int(cfg.instances.ks.max())), 1e-12)
    target = max(1, int(TARGET_CHUNK_S / cost))
    floor_ = max(1, math.ceil(MIN_CHUNK_S / cost))
    spread = math.ceil(T / MIN_CHUNKS)
    ipc = max(1, min(target, max(spread, floor_), T))
    # as many chunks as that, evenly sized (100 instances in chunks of 71 would leave one worker
    # idle for the last 42 of them; two chunks of 50 finish together)
    return math.ceil(T / math.ceil(T / ipc))


def _tasks(cfg: SweepConfig, ipc: int, faults: tuple, in_worker: bool) -> list[ChunkTask]:
    tasks = []
    inst = cfg.instances
    for cid, start in enumerate(range(0, cfg.num_instances, ipc)):
        stop = min(start + ipc, cfg.num_instances)
        pairs = None if inst.pairs is None else tuple(inst.pairs[start:stop])
        tasks.append(
            ChunkTask(
                chunk_id=cid,
                start=start,
                stop=stop,
                ids=inst.ids[start:stop],
                spec=inst.spec,
                pairs=pairs,
                eps=cfg.eps,
                divergences=cfg.divergences,
                budgets=cfg.budgets,
                baselines=cfg.baselines,
                in_worker=in_worker,
                faults=faults,
            )
        )
    return tasks


# ---------------------------------------------------------------------------------------------
# Schedulers
# ---------------------------------------------------------------------------------------------
def parse_scheduler(scheduler: str) -> tuple[str, str | None]:
    """``"inline" | "processes" | "dask-local" | "tcp://HOST:PORT"`` -> (kind, address)."""
    if not isinstance(scheduler, str):
        raise SchedulerError(f"scheduler must be a string, got {scheduler!r}")
    s = scheduler.strip()
    if s in ("inline", "processes", "dask-local"):
        return s, None
    if s.startswith("tcp://"):
        host, sep, port = s[len("tcp://") :].rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise SchedulerError(f"scheduler address must look like tcp://HOST:PORT, got {scheduler!r}")
        return "tcp", s
    raise SchedulerError(
        f"unknown scheduler={scheduler!r}; use 'inline', 'processes', 'dask-local' or 'tcp://HOST:PORT'"
    )


class _Inline:
    name = "inline"
    in_worker = False

    def __init__(self, workers: int):
        self.workers = 1

    def run(self, tasks: list[ChunkTask], store: SweepStore) -> Iterator[ChunkOutcome]:
        if tasks:
            _warm_up(single_thread=False)
        for task in tasks:
            yield run_chunk(task)

    def close(self) -> None:
        pass


class _Processes:
    """A spawned process pool; a chunk whose worker dies is retried, alone, up to MAX_WORKER_DEATHS times."""

    name = "processes"
    in_worker = True

    def __init__(self, workers: int):
        self.workers = workers
        self._pool = None

    def _new_pool(self):
        from concurrent.futures import ProcessPoolExecutor

        return ProcessPoolExecutor(
            max_workers=self.workers, mp_context=mp.get_context("spawn"), initializer=_worker_init
        )

    def run(self, tasks: list[ChunkTask], store: SweepStore) -> Iterator[ChunkOutcome]:
        from concurrent.futures import FIRST_COMPLETED, wait
        from concurrent.futures.process import BrokenProcessPool

        pending = deque(tasks)
        suspects: deque = deque()  # chunks that were running when a worker died: rerun one at a time
        deaths: dict[int, int] = {}
        inflight: dict = {}
        self._pool = self._new_pool()
        while pending or suspects or inflight:
            source, limit = (suspects, 1) if suspects else (pending, self.workers)
            while source and len(inflight) < limit:
                task = source.popleft()
                try:
                    fut = self._pool.submit(run_chunk, task)
                except BrokenProcessPool:
                    # a worker died after the last wait: the pool refuses new work until it is
                    # replaced; the dead worker's own chunk comes back through its future below
                    source.appendleft(task)
                    break
                inflight[fut] = task
            if not inflight:
                self._pool.shutdown(wait=False, cancel_futures=True)
                self._pool = self._new_pool()
                continue
            done, _ = wait(list(inflight), return_when=FIRST_COMPLETED)
            broken = False
            for fut in done:
                task = inflight.pop(fut)
                try:
                    out = fut.result()
                except BrokenProcessPool:
                    broken = True
                    inflight[fut] = task  # handled below with the other lost chunks
                    continue
                except Exception as exc:  # e.g. unpicklable result
                    out = ChunkOutcome(
                        task.chunk_id, error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc()
                    )
                out.attempts = deaths.get(task.chunk_id, 0) + 1
                yield out
            if broken:
                lost = list(inflight.values())
                inflight.clear()
                self._pool.shutdown(wait=False, cancel_futures=True)
                self._pool = self._new_pool()
                for task in sorted(lost, key=lambda t: t.chunk_id):
                    deaths[task.chunk_id] = deaths.get(task.chunk_id, 0) + 1
                    store.record_retry(task.chunk_id)
                    if deaths[task.chunk_id] >= MAX_WORKER_DEATHS:
                        yield ChunkOutcome(
                            task.chunk_id,
                            attempts=deaths[task.chunk_id],
                            error=f"worker process died {deaths[task.chunk_id]} times running this chunk",
                        )
                    else:
                        log.warning("a worker died; retrying chunk %d", task.chunk_id)
                        suspects.append(task)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


def _ldpopt_version() -> str:
    import ldpopt

    return ldpopt.__version__


class _Dask:
    """dask.distributed: a LocalCluster on 127.0.0.1 (``dask-local``) or an existing scheduler (``tcp://``).

    Dask reschedules the task of a worker that dies (up to ``distributed.scheduler.allowed-failures``
    times); after that the chunk is recorded as failed.
    """

    in_worker = True

    def __init__(self, kind: str, address: str | None, workers: int, connect_timeout: float):
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise SchedulerError(
                f"scheduler {address or kind!r} needs Dask: pip install 'ldpopt[dask]'"
            ) from None
        self.cluster = None
        self.name = address or kind
        if kind == "dask-local":
            try:
                self.cluster = LocalCluster(
                    n_workers=workers,
                    threads_per_worker=1,
                    processes=True,
                    host="127.0.0.1",
                    dashboard_address=None,
                    silence_logs=logging.ERROR,
                )
            except Exception as exc:  # e.g. workers that cannot start (spawned processes re-import __main__)
                raise SchedulerError(
                    f"could not start a local Dask cluster ({type(exc).__name__}: {exc})"
                ) from None
            self.client = Client(self.cluster)
            self.workers = workers
        else:
            try:
                self.client = Client(address, timeout=connect_timeout)
            except Exception as exc:  # OSError / TimeoutError for an unreachable address, ValueError...
                raise SchedulerError(
                    f"cannot reach the Dask scheduler at {address} within {connect_timeout:g} s "
                    f"({type(exc).__name__}: {exc})"
                ) from None
            self._check_workers()
        self.client.run(_warm_up)

    def _check_workers(self) -> None:
        import ldpopt

        info = self.client.scheduler_info()
        self.workers = len(info.get("workers", {}))
        if self.workers == 0:
            self.close()
            raise SchedulerError(f"the Dask scheduler at {self.name} has no workers")
        try:
            versions = self.client.run(_ldpopt_version)
        except Exception as exc:
            self.close()
            raise SchedulerError(
                f"the workers of {self.name} cannot run ldpopt ({type(exc).__name__}: {exc})"
            ) from None
        bad = {w: v for w, v in versions.items() if v != ldpopt.__version__}
        if bad:
            self.close()
            raise SchedulerError(
                f"workers of {self.name} run ldpopt {sorted(set(bad.values()))}, this process {ldpopt.__version__}; "
                "results would not be reproducible"
            )

    def run(self, tasks: list[ChunkTask], store: SweepStore) -> Iterator[ChunkOutcome]:
        from distributed import as_completed

        tag = uuid.uuid4().hex[:8]
        futures = {
            self.client.submit(run_chunk, t, key=f"ldpopt-chunk-{tag}-{t.chunk_id}", pure=False): t
            for t in tasks
        }
        for fut in as_completed(list(futures)):
            task = futures.pop(fut)
            try:
                out = fut.result()
            except Exception as exc:  # KilledWorker after repeated worker deaths, lost connection...
                out = ChunkOutcome(
                    task.chunk_id, error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc()
                )
            fut.release()
            yield out

    def close(self) -> None:
        try:
            self.client.close()
        finally:
            if self.cluster is not None:
                self.cluster.close()
                self.cluster = None


def _check_spawnable(kind: str) -> None:
    """Spawned workers re-import the main script; fail early when it is not a file (``python - <``)."""
    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    if main_file is not None and not os.path.exists(main_file):
        raise SchedulerError(
            f"scheduler {kind!r} starts worker processes that re-import the main script, but it is not a "
            f"file here ({main_file!r}); run from a script file or use scheduler='inline'"
        )


def _make_executor(kind: str, address: str | None, workers: int, connect_timeout: float):
    if kind == "inline":
        return _Inline(workers)
    if kind in ("processes", "dask-local"):
        _check_spawnable(kind)
    if kind == "processes":
        return _Processes(workers)
    return _Dask(kind, address, workers, connect_timeout)


# ---------------------------------------------------------------------------------------------
# Progress
# ---------------------------------------------------------------------------------------------
class _Progress:
    """A rich progress bar with cells/s and ETA, or (quiet) INFO log lines per chunk."""

    def __init__(self, total_cells: int, done_cells: int, total_chunks: int, quiet: bool, label: str):
        self.quiet = quiet
        self.total_chunks = total_chunks
        self._bar = None
        if not quiet:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                ProgressColumn,
                TextColumn,
                TimeElapsedColumn,
            )
            from rich.text import Text

            def _rate(task):
                # cells computed by this run over its elapsed time (rich's own speed estimate needs
                # many updates, and a sweep may have few chunks)
                done = task.completed - task.fields.get("initial", 0)
                return done / task.elapsed if task.elapsed and done > 0 else None

            class _Rate(ProgressColumn):
                def render(self, task):
                    rate = _rate(task)
                    return Text(
                        "-- cells/s" if rate is None else f"{rate:,.0f} cells/s", style="progress.data.speed"
                    )

            class _Eta(ProgressColumn):
                def render(self, task):
                    rate = _rate(task)
                    if task.finished:
                        return Text("done", style="progress.remaining")
                    if rate is None:
                        return Text("ETA -:--:--", style="progress.remaining")
                    left = int(round((task.total - task.completed) / rate))
                    return Text(
                        f"ETA {left // 3600}:{left // 60 % 60:02d}:{left % 60:02d}",
                        style="progress.remaining",
                    )

            self._bar = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                _Rate(),
                TimeElapsedColumn(),
                _Eta(),
                console=Console(stderr=True),
                transient=False,
            )
            self._task = self._bar.add_task(
                label, total=total_cells, completed=done_cells, initial=done_cells
            )

    def __enter__(self):
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc):
        if self._bar is not None:
            self._bar.stop()

    def advance(self, cells: int, message: str) -> None:
        if self._bar is not None:
            self._bar.advance(self._task, cells)
        log.info(message)

    def error(self, message: str) -> None:
        if self._bar is not None:
            from rich.markup import escape

            self._bar.console.print(f"[bold red]chunk failed:[/] {escape(message)}", highlight=False)
        log.warning(message)


# ---------------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------------
def _faults_from_env() -> tuple:
    text = os.environ.get(FAULT_ENV, "").strip()
    return tuple(s.strip() for s in text.split(";") if s.strip())


def run_sweep(
    config: Any,
    out: str | os.PathLike,
    scheduler: str = "processes",
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
        ``"inline"``, ``"processes"`` (default), ``"dask-local"`` or ``"tcp://HOST:PORT"``.
    resume : bool
        ``True`` (default): finished chunks in ``out`` are kept and only the missing ones computed;
        ``out`` must then hold nothing or the same sweep.  ``False``: start over, deleting the
        chunk files in ``out``.
    quiet : bool
        No progress bar; progress goes to the ``ldpopt.sweep`` logger (INFO per chunk).
    workers : int, optional
        Worker processes for ``processes``/``dask-local`` (default ``[run] workers`` or all cores).
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

    Warns
    -----
    LdpoptWarning
        When chunks failed; their errors are in ``manifest.json`` (``chunk_errors``) and a rerun
        retries them.
    """
    cfg = load_config(config)
    kind, address = parse_scheduler(scheduler)
    if workers is not None:
        from ldpopt._validation import check_positive_int

        workers = check_positive_int(workers, "workers")
    n_workers = workers or cfg.workers or os.cpu_count() or 1
    if isinstance(connect_timeout, bool) or not (
        isinstance(connect_timeout, (int, float)) and connect_timeout > 0
    ):
        raise ValueError(f"connect_timeout must be a positive number of seconds, got {connect_timeout!r}")
    if (
        isinstance(max_rows_in_memory, bool)
        or not isinstance(max_rows_in_memory, int)
        or max_rows_in_memory < 0
    ):
        raise ValueError(f"max_rows_in_memory must be an integer >= 0, got {max_rows_in_memory!r}")
    ipc = plan_chunks(cfg)
    fingerprint = cfg.fingerprint(ipc)
    probe = _tasks(cfg, ipc, (), False)
    import ldpopt

    base = {
        "ldpopt_version": ldpopt.__version__,
        "python": sys.version.split()[0],
        "config_source": cfg.source,
        "config": cfg.raw,
        "resolved": dict(cfg.resolved(), instances_per_chunk=ipc),
    }
    store = SweepStore(
        out, fingerprint, len(probe), [t.num_rows for t in probe], [t.num_cells for t in probe], resume, base
    )
    t_start = time.perf_counter()
    executor = _make_executor(kind, address, n_workers, float(connect_timeout))
    try:
        store.prepare()
    except BaseException:
        executor.close()
        raise
    run_info: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "scheduler": executor.name,
        "workers": executor.workers,
        "chunks_computed": 0,
        "chunks_failed": 0,
    }
    solve_s = build_s = 0.0
    write_before = store.write_seconds
    try:
        store.write_manifest(running=True, run=run_info)
        tasks = [
            t
            for t in _tasks(cfg, ipc, _faults_from_env(), executor.in_worker)
            if t.chunk_id not in store.done
        ]
        cells_left = sum(t.num_cells for t in tasks)
        log.info(
            "sweep: %d chunks (%d instances each), %d cells to compute, %d chunks already done, scheduler %s",
            len(probe),
            ipc,
            cells_left,
            len(store.done),
            executor.name,
        )
        with _Progress(cfg.num_cells, store.cells_done, len(probe), quiet, "sweep") as progress:
            for outcome in executor.run(tasks, store):
                cells = probe[outcome.chunk_id].num_cells
                if outcome.error is None:
                    store.write_chunk(outcome.chunk_id, outcome.table)
                    solve_s += outcome.solve_seconds
                    build_s += outcome.build_seconds
                    run_info["chunks_computed"] += 1
                    progress.advance(
                        cells,
                        f"chunk {outcome.chunk_id} done: {cells} cells in "
                        f"{outcome.solve_seconds:.3g} s ({len(store.done)}/{len(probe)} chunks)",
                    )
                    if len(store.done) < len(probe):  # (the final manifest follows the last chunk)
                        store.write_manifest(running=True, run=run_info, force=False)
                else:
                    run_info["chunks_failed"] += 1
                    store.record_error(outcome.chunk_id, outcome.error, outcome.traceback, outcome.attempts)
                    store.write_manifest(running=True, run=run_info)
                    progress.error(f"chunk {outcome.chunk_id}: {outcome.error}")
                    progress.advance(0, f"chunk {outcome.chunk_id} failed")
    except BaseException:
        run_info.update(finished=time.strftime("%Y-%m-%dT%H:%M:%S%z"), interrupted=True)
        try:
            store.finish(run_info)
        finally:
            executor.close()
        raise
    executor.close()
    wall = time.perf_counter() - t_start
    run_info.update(
        finished=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
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
    if store.errors:
        warnings.warn(
            f"{len(store.errors)} of {len(probe)} chunks failed (first: chunk {min(map(int, store.errors))}: "
            f"{store.errors[str(min(map(int, store.errors)))]['error']}); see {Path(out) / 'manifest.json'}; "
            "rerun to retry them",
            LdpoptWarning,
            stacklevel=2,
        )
    if store.rows_done > max_rows_in_memory:
        return Path(out) / "chunks"
    return load_results(out)


def load_results(directory: str | os.PathLike, columns: list[str] | None = None):
    """The finished rows of a sweep directory as a pandas DataFrame, in chunk order.

    Parameters
    ----------
    directory : path
        A directory written by :func:`run_sweep` / ``ldpopt sweep``.
    columns : list of str, optional
        Read only these columns.
    """
    if columns is not None:
        unknown = [c for c in columns if c not in COLUMNS]
        if unknown:
            raise ValueError(f"columns {unknown} are not sweep columns; available: {', '.join(COLUMNS)}")
    read_manifest(directory)  # a clear error for a directory that is not a sweep
    return read_results(directory, columns).to_pandas()


def summarize_sweep(results, resamples: int = 1000, seed: int = 0, level: float = 0.95):
    """Mean curves with percentile-bootstrap bands per divergence, budget, mechanism and eps.

    ``results`` is a sweep directory or a DataFrame of its rows; see ``docs/sweeps.md``
    (``ldpopt sweep-report``) for the columns and the bootstrap (shared resample indices across
    mechanisms, as in the SPR paper's Appendix E).
    """
    from ldpopt._sweep_report import summarize

    df = load_results(results) if isinstance(results, (str, os.PathLike)) else results
    return summarize(df, resamples=resamples, seed=seed, level=level)


def write_report(
    directory: str | os.PathLike,
    out_dir: str | os.PathLike | None = None,
    resamples: int = 1000,
    seed: int = 0,
    formats=("png", "svg"),
):
    """``summary.csv`` plus utility-vs-eps and outputs-vs-eps figures for a sweep directory.

    Returns (summary DataFrame, list of written paths); ``out_dir`` defaults to ``DIR/report``.
    """
    from ldpopt._sweep_report import write_report as _write

    return _write(directory, out_dir, resamples=resamples, seed=seed, formats=formats)
