"""Where the chunks of a sweep run: in this process, a local process pool, or Dask.

* ``"inline"``: in this process, one chunk after another;
* ``"threads"``: in this process, one chunk per thread at a time (the compiled solver releases
  the GIL; no worker start-up);
* ``"processes"``: a local process pool (spawned workers, one per core);
* ``"dask-local"``: a ``dask.distributed.LocalCluster`` on 127.0.0.1;
* ``"tcp://HOST:PORT"``: an existing Dask scheduler (``pip install 'ldpopt[dask]'``; the
  workers need the same ldpopt version installed).

(``"auto"``, the default of :func:`~ldpopt.sweeps.runner.run_sweep`, is resolved by the runner to
``"threads"`` or ``"processes"``.)  Every scheduler runs :func:`ldpopt.sweeps.chunks.run_chunk`
on the same tasks and yields the outcomes as they finish; only the driver writes the store.  A
worker that dies is handled here: the process pool reruns the chunks it lost one at a time (a
chunk that kills its worker ``MAX_WORKER_DEATHS`` times is recorded as failed); Dask reschedules
them itself.
"""

from __future__ import annotations

import ast
import atexit
import contextlib
import gc
import logging
import multiprocessing as mp
import os
import queue
import sys
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from types import FrameType
from typing import TYPE_CHECKING, Protocol

from ldpopt.errors import SchedulerError
from ldpopt.sweeps._lifeline import follow_parent, ignore_interrupts
from ldpopt.sweeps.chunks import (
    ChunkOutcome,
    ChunkTask,
    compute_chunk,
    failed_outcome,
    limit_threads,
    run_chunk,
)
from ldpopt.sweeps.config import InstanceSpec
from ldpopt.sweeps.store import SweepStore

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

__all__ = [
    "Scheduler",
    "parse_scheduler",
    "make_scheduler",
    "check_spawnable",
    "MAX_WORKER_DEATHS",
    "CONNECT_TIMEOUT_S",
    "SCHEDULERS",
]

log = logging.getLogger("ldpopt.sweep")

#: a chunk that kills its worker this many times is recorded as failed
MAX_WORKER_DEATHS = 3
#: seconds to wait for a tcp:// Dask scheduler before reporting it unreachable
CONNECT_TIMEOUT_S = 10.0
#: seconds a worker waits for the driver to fill the compiled-kernel cache before it warms up anyway
READY_TIMEOUT_S = 600.0
#: seconds an interrupted run gives its workers to exit after SIGTERM before SIGKILL
STOP_GRACE_S = 2.0


class Scheduler(Protocol):
    """What the runner needs of a scheduler."""

    #: shown in the manifest and the log
    name: str
    #: number of worker processes (1 for inline)
    workers: int
    #: the chunks run in worker processes (they limit the solver to one thread, faults may kill them)
    in_worker: bool

    def run(self, tasks: list[ChunkTask], store: SweepStore) -> Iterator[ChunkOutcome]:
        """Compute the tasks, yielding each outcome as it finishes (any order)."""
        ...

    def close(self, abort: bool = False) -> None:
        """Release the workers (idempotent); ``abort``: stop them at once (an interrupted run)."""
        ...


#: the scheduler names (besides ``tcp://HOST:PORT``)
SCHEDULERS = ("auto", "threads", "processes", "inline", "dask-local")


def parse_scheduler(scheduler: str) -> tuple[str, str | None]:
    """A scheduler name (:data:`SCHEDULERS`) or ``"tcp://HOST:PORT"`` -> (kind, address)."""
    if not isinstance(scheduler, str):
        raise SchedulerError(f"scheduler must be a string, got {scheduler!r}")
    s = scheduler.strip()
    if s in SCHEDULERS:
        return s, None
    if s.startswith("tcp://"):
        host, sep, port = s[len("tcp://") :].rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise SchedulerError(f"scheduler address must look like tcp://HOST:PORT, got {scheduler!r}")
        return "tcp", s
    names = ", ".join(f"'{n}'" for n in SCHEDULERS)
    raise SchedulerError(f"unknown scheduler={scheduler!r}; use {names} or 'tcp://HOST:PORT'")


# ---------------------------------------------------------------------------------------------
# Worker set-up
# ---------------------------------------------------------------------------------------------
def _tiny_task() -> ChunkTask:
    spec = InstanceSpec(kind="dirichlet", k=3, trials=1, alpha=(1.0, 1.0, 1.0), seed=0)
    return ChunkTask(
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


@contextlib.contextmanager
def _on_compile(callback: Callable[[], None]) -> Iterator[None]:
    """Within the block, ``callback()`` runs when numba starts a compile (a miss of the on-disk
    cache: loading a kernel from the cache is no compile), in the compiling thread; an exception
    it raises stops the compile.  Imports numba (nothing happens without it)."""
    try:
        from numba.core import event
    except ImportError:  # no numba: nothing is compiled
        yield
        return

    class _Listener(event.Listener):
        def on_start(self, ev) -> None:
            callback()

        def on_end(self, ev) -> None:
            pass

    with event.install_listener("numba:compile", _Listener()):
        yield


class _Pause:
    """What :func:`_collection_paused` did: ``paused`` the collector, and whether numba
    ``compiled`` within the block (the collector was resumed then)."""

    paused = False
    compiled = False


@contextlib.contextmanager
def _collection_paused() -> Iterator[_Pause]:
    """Within the block, no automatic garbage collection until numba starts compiling.

    A warm start (importing numba and loading the sweep's kernels from the on-disk cache)
    allocates some 150,000 long-lived objects and almost no garbage (under a thousand
    unreachable objects), but the collector, triggered by the allocations, runs two full
    collections and a few dozen younger ones over them: about 0.1 s of a 0.6 s warm start
    (measured on the Figure-1b grid).  A compile does leave garbage (about 550,000 unreachable
    objects for the kernels of that grid), so the collector is resumed at the first compile.

    Pausing alone only defers the work: the first collections after the block go over the new
    objects (as long as the full collections it avoided).  The caller freezes them
    (``gc.freeze``) when ``pause.compiled`` is false.  A program that disabled the collector
    or froze objects itself manages it: nothing is paused then (``pause.paused`` false).
    """
    pause = _Pause()
    if not gc.isenabled() or gc.get_freeze_count():
        yield pause
        return

    def resume() -> None:
        pause.compiled = True
        gc.enable()

    gc.disable()
    pause.paused = True
    try:
        with _on_compile(resume):
            yield pause
    finally:
        gc.enable()


def _warm_up(task: ChunkTask | None = None, single_thread: bool = True) -> None:
    """Run a small chunk (``task``: the sweep's :func:`~ldpopt.sweeps.chunks.warmup_task`) so that
    imports and compiled kernels are loaded before the timed work.

    In the driver this compiles what the sweep needs into the on-disk numba cache (or loads it);
    in a worker, started afterwards, it loads the same kernels from that cache.  Failures are
    ignored here: a real chunk meets them again and records them.
    """
    try:
        if single_thread:
            limit_threads()
        compute_chunk(task if task is not None else _tiny_task())
    except Exception:  # pragma: no cover - depends on the worker's environment
        pass


@contextlib.contextmanager
def _warm_in_process(task: ChunkTask | None) -> Iterator[None]:
    """:func:`_warm_up` in this process, for the chunks computed in the block (``inline`` and
    ``threads``), with the collector paused (:func:`_collection_paused`).  When everything came
    from the cache, the objects alive after it (numba, the kernels: long-lived, no garbage) are
    frozen until the block ends, so that the collections triggered by the chunks do not go over
    them (an unfrozen full collection costs 0.06-0.09 s once numba is loaded); they are unfrozen
    at the end, whatever happens: the program's collector is as before the sweep."""
    frozen = False
    try:
        with _collection_paused() as pause:
            _warm_up(task, single_thread=False)
            if pause.paused and not pause.compiled:
                gc.freeze()  # before the collector resumes (an allocation could start a collection)
                frozen = True
        yield
    finally:
        if frozen:
            gc.unfreeze()


class _WouldCompile(Exception):
    """A worker was about to compile a kernel the driver is still compiling."""


@contextlib.contextmanager
def _no_compiling_before(ready) -> Iterator[None]:
    """Within the block, a numba compile (a miss of the on-disk cache: loading from the cache is
    no compile) raises :class:`_WouldCompile` as long as ``ready`` is not set."""

    def refuse() -> None:
        if not ready.is_set():
            raise _WouldCompile

    with _on_compile(refuse):
        yield


def _worker_warm_up(task: ChunkTask | None, ready, compiler) -> None:
    """Load the sweep's kernels from the on-disk cache, all workers at once.  A kernel missing from
    the cache is compiled by one worker only (the first to take ``compiler``), which then sets
    ``ready``; the others wait for it and load the kernel from the cache."""
    limit_threads()
    try:
        with _collection_paused() as pause, _no_compiling_before(ready):
            compute_chunk(task if task is not None else _tiny_task())
            if pause.paused and not pause.compiled:
                # all from the cache, no garbage: what the worker holds now (modules, kernels)
                # lives as long as it does, and later collections need not go over it again
                gc.freeze()
        return  # everything came from the cache
    except _WouldCompile:
        pass
    except Exception:  # pragma: no cover - a real chunk meets it again and records it
        return
    if compiler.acquire(block=False):
        try:
            _warm_up(task)  # compiles what is missing, into the cache, once for the pool
        finally:
            ready.set()
    else:
        ready.wait(READY_TIMEOUT_S)
        _warm_up(task)


def _worker_init(parent_pid: int, ready, compiler, task: ChunkTask | None) -> None:
    """Pool worker set-up: exit with the driver, leave Ctrl-C to the driver, one solver thread,
    then load the sweep's kernels (see :func:`_worker_warm_up`: compiled once per machine)."""
    follow_parent(parent_pid)
    ignore_interrupts()
    # at exit, skip the worker's last garbage collection: tearing numba's kernel objects down one
    # by one would hold the pool's shutdown (and the run's end) for 0.4-2 s
    atexit.register(gc.freeze)
    # One solver thread per worker process: the parallelism comes from the chunks.
    for var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
    _worker_warm_up(task, ready, compiler)


def _dask_worker_init(parent_pid: int | None, task: ChunkTask | None) -> None:
    """Dask worker set-up (``client.run``): a ``dask-local`` worker exits with the driver."""
    if parent_pid is not None and os.getppid() == parent_pid:
        follow_parent(parent_pid)
    _warm_up(task)


def _ldpopt_version() -> str:
    import ldpopt

    return ldpopt.__version__


# ---------------------------------------------------------------------------------------------
# The schedulers
# ---------------------------------------------------------------------------------------------
class _Inline:
    name = "inline"
    in_worker = False

    def __init__(self, workers: int, warm: ChunkTask | None = None):
        self.workers = 1
        self._warm = warm

    def run(self, tasks: list[ChunkTask], store: SweepStore) -> Iterator[ChunkOutcome]:
        if not tasks:
            return
        with _warm_in_process(self._warm):  # load what the sweep needs (not more) first
            for task in tasks:
                yield run_chunk(task)

    def close(self, abort: bool = False) -> None:
        pass


class _Threads:
    """Threads of this process, each computing one chunk at a time.

    The chunks' solving happens in compiled kernels that release the GIL, so the threads use
    every core without starting, importing and warming up worker processes; the rest of a chunk
    (reduction, partitions, baselines, its Arrow table) holds the GIL.  A thread cannot be
    killed: on an interrupt the threads take no new chunk and the chunks they are computing are
    dropped (each is about a second of work by the chunk plan).
    """

    name = "threads"
    in_worker = False

    def __init__(self, workers: int, warm: ChunkTask | None = None):
        self.workers = workers
        self._warm = warm
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def _work(self, index: int, todo: deque[ChunkTask], done: queue.Queue[ChunkOutcome]) -> None:
        limit_threads()  # the parallelism is the chunk threads: one solver thread in each
        while not self._stop.is_set():
            try:
                task = todo.popleft()
            except IndexError:
                return
            try:
                outcome = run_chunk(task)  # turns an Exception into an outcome
            except BaseException as exc:  # anything else must not leave the driver waiting for it
                outcome = failed_outcome(task.chunk_id, exc)
            outcome.thread = index
            done.put(outcome)

    def run(self, tasks: list[ChunkTask], store: SweepStore) -> Iterator[ChunkOutcome]:
        if not tasks:
            return
        # load the compiled kernels once for every thread (a kernel missing from the on-disk cache
        # is compiled here, once), outside the timed chunks
        with _warm_in_process(self._warm):
            todo: deque[ChunkTask] = deque(tasks)
            done: queue.Queue[ChunkOutcome] = queue.Queue()
            self._threads = [
                threading.Thread(target=self._work, args=(i + 1, todo, done), name=f"ldpopt-sweep-{i + 1}")
                for i in range(min(self.workers, len(tasks)))
            ]
            for t in self._threads:
                t.start()
            for _ in tasks:
                yield done.get()  # interruptible: Ctrl-C / SIGTERM reach the main thread here

    def close(self, abort: bool = False) -> None:
        """Take no new chunk; without ``abort`` wait for the threads (they are done after a full
        run).  With ``abort`` return at once: the chunks in progress finish in the background
        and are dropped (the process exits once they are done)."""
        self._stop.set()
        threads, self._threads = self._threads, []
        if not abort:
            for t in threads:
                t.join()


class _Processes:
    """A spawned process pool; a chunk whose worker dies is retried, alone, up to MAX_WORKER_DEATHS times."""

    name = "processes"
    in_worker = True

    def __init__(self, workers: int, warm: ChunkTask | None = None):
        self.workers = workers
        self._warm = warm
        self._pool: ProcessPoolExecutor | None = None
        self._ctx = mp.get_context("spawn")

    def _new_pool(self) -> ProcessPoolExecutor:
        from concurrent.futures import ProcessPoolExecutor

        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        # per pool: a worker that died holding the compiler lock must not block the next pool
        ready, compiler = self._ctx.Event(), self._ctx.Lock()
        self._pool = ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=self._ctx,
            initializer=_worker_init,
            initargs=(os.getpid(), ready, compiler, self._warm),
        )
        return self._pool

    def _submit(self, pool: ProcessPoolExecutor, source: deque, limit: int, inflight: dict) -> None:
        """Move tasks from ``source`` to the pool until ``limit`` are in flight."""
        from concurrent.futures.process import BrokenProcessPool

        while source and len(inflight) < limit:
            task = source.popleft()
            try:
                fut = pool.submit(run_chunk, task)
            except BrokenProcessPool:
                # a worker died after the last wait: the pool refuses new work until it is
                # replaced; the dead worker's own chunk comes back through its future below
                source.appendleft(task)
                break
            inflight[fut] = task

    def _lost(
        self, lost: list[ChunkTask], deaths: dict[int, int], store: SweepStore, suspects: deque
    ) -> Iterator[ChunkOutcome]:
        """Chunks that were running when a worker died: retried one at a time, failed after
        MAX_WORKER_DEATHS deaths."""
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

    def run(self, tasks: list[ChunkTask], store: SweepStore) -> Iterator[ChunkOutcome]:
        from concurrent.futures import FIRST_COMPLETED, wait
        from concurrent.futures.process import BrokenProcessPool

        pending = deque(tasks)
        suspects: deque = deque()  # chunks that were running when a worker died: rerun one at a time
        deaths: dict[int, int] = {}
        inflight: dict[Future, ChunkTask] = {}
        pool = self._new_pool()
        while pending or suspects or inflight:
            source, limit = (suspects, 1) if suspects else (pending, self.workers)
            self._submit(pool, source, limit, inflight)
            if not inflight:
                pool = self._new_pool()
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
                    out = failed_outcome(task.chunk_id, exc)
                out.attempts = deaths.get(task.chunk_id, 0) + 1
                yield out
            if broken:
                lost = list(inflight.values())
                inflight.clear()
                pool = self._new_pool()
                yield from self._lost(lost, deaths, store, suspects)

    def close(self, abort: bool = False) -> None:
        """Release the workers; ``abort``: stop them now (an interrupted run), without waiting for
        the chunks they are computing."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        if not abort:
            pool.shutdown(wait=True, cancel_futures=True)
            return
        procs = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for p in procs:
            if p.is_alive():
                p.terminate()
        for p in procs:
            p.join(STOP_GRACE_S)
            if p.is_alive():
                p.kill()
                p.join(STOP_GRACE_S)


class _Dask:
    """dask.distributed: a LocalCluster on 127.0.0.1 (``dask-local``) or an existing scheduler (``tcp://``).

    Dask reschedules the task of a worker that dies (up to ``distributed.scheduler.allowed-failures``
    times); after that the chunk is recorded as failed.
    """

    in_worker = True

    def __init__(
        self, kind: str, address: str | None, workers: int, connect_timeout: float, warm: ChunkTask | None
    ):
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise SchedulerError(
                f"scheduler {address or kind!r} needs Dask: pip install 'ldpopt[dask]'"
            ) from None
        self.cluster = None
        self.name = address or kind
        parent = None
        if kind == "dask-local":
            # compile (or load) the sweep's kernels here first: the workers, started next on this
            # machine, load them from the same on-disk cache
            _warm_up(warm, single_thread=False)
            parent = os.getpid()  # the cluster's worker processes are children of this process
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
        self.client.run(_dask_worker_init, parent, warm)

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
                f"workers of {self.name} run ldpopt {sorted(set(bad.values()))}, "
                f"this process {ldpopt.__version__}; results would not be reproducible"
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
                out = failed_outcome(task.chunk_id, exc)
            fut.release()
            yield out

    def close(self, abort: bool = False) -> None:
        try:
            self.client.close()
        finally:
            if self.cluster is not None:
                self.cluster.close()
                self.cluster = None


def _is_main_test(test: ast.expr) -> bool:
    """``__name__ == "__main__"`` (either order)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    names = [x for x in sides if isinstance(x, ast.Name) and x.id == "__name__"]
    consts = [x for x in sides if isinstance(x, ast.Constant) and x.value == "__main__"]
    return len(names) == 1 and len(consts) == 1


def _unguarded_call_line(main_file: str) -> int | None:
    """The line of the main script's top-level code that (indirectly) called us, when it is not
    inside an ``if __name__ == "__main__":`` block; ``None`` otherwise (or when unknown)."""
    main = sys.modules.get("__main__")
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_globals is getattr(main, "__dict__", None) and frame.f_code.co_name == "<module>":
            break
        frame = frame.f_back
    if frame is None:
        return None
    line = frame.f_lineno
    try:
        with open(main_file, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), main_file)
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_main_test(node.test) and node.body:
            if node.body[0].lineno <= line <= (node.body[-1].end_lineno or line):
                return None
    return line


def check_spawnable(kind: str) -> None:
    """Spawned workers re-import the main script: fail early when it is not a file (``python - <``)
    or when it starts the sweep outside an ``if __name__ == "__main__":`` block (every worker
    would start the sweep again, and fail)."""
    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    if main_file is None:
        return
    if not os.path.exists(main_file):
        raise SchedulerError(
            f"scheduler {kind!r} starts worker processes that re-import the main script, but it is not a "
            f"file here ({main_file!r}); run from a script file or use scheduler='inline'"
        )
    line = _unguarded_call_line(main_file)
    if line is not None:
        raise SchedulerError(
            f"{main_file}, line {line}: the sweep is started outside an 'if __name__ == \"__main__\":' "
            f"block; scheduler {kind!r} starts worker processes that re-import this script, so each "
            "would start the sweep again. Put the call under 'if __name__ == \"__main__\":' "
            "(or use scheduler='inline')"
        )


def make_scheduler(
    kind: str, address: str | None, workers: int, connect_timeout: float, warm: ChunkTask | None = None
) -> Scheduler:
    """The scheduler of a parsed :func:`parse_scheduler` result (Dask clusters are started here).

    ``warm``: the sweep's :func:`~ldpopt.sweeps.chunks.warmup_task`, run in the driver before the
    local workers use the compiled kernels, and in every worker to load them.
    """
    if kind == "inline":
        return _Inline(workers, warm)
    if kind == "threads":
        return _Threads(workers, warm)
    if kind in ("processes", "dask-local"):
        check_spawnable(kind)
    if kind == "processes":
        return _Processes(workers, warm)
    return _Dask(kind, address, workers, connect_timeout, warm)
