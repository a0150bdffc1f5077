r"""The unit of work of a sweep: a chunk, how the sweep is cut into chunks, and how one is computed.

A **chunk** is a block of consecutive instances times the whole grid (every eps, divergence,
budget and baseline).  :func:`plan_chunks` sizes the blocks by a fixed cost model for about
0.5-2 s of work, so scheduling overhead stays small and the layout depends on the configuration
only (never on the machine or the scheduler).  :func:`run_chunk` computes one :class:`ChunkTask`
into a :class:`ChunkOutcome` holding an Arrow table of rows (schema
:data:`ldpopt.sweeps.store.SCHEMA`) or the error; it is the same function on the same inputs
whatever the scheduler, so results are bit-identical across schedulers.

The optimal rows come from :func:`ldpopt.sweep` (SPR paper, eq. 3/4, solved exactly); the binary
mechanism and k-ary randomized response are the closed forms of SPR eq. 30, vectorised over eps;
``kov_lp`` is the Kairouz-Oh-Viswanath staircase LP.  A mechanism's blocks are stored as a compact
partition string (:func:`partition_string` / :func:`parse_partition`).
"""

from __future__ import annotations

import math
import os
import time
import traceback
from dataclasses import KW_ONLY, dataclass
from typing import Any

import numpy as np

from ldpopt._extras import require
from ldpopt._numerics import rescale, rescale_array
from ldpopt._validation import check_distribution_pair
from ldpopt.divergences import (
    CODE_POWER_DOWN,
    CODE_POWER_UP,
    chernoff_curve,
    get_divergence,
    is_chernoff,
    renyi_value,
)
from ldpopt.spr.grid import size_class, sweep, table_path_pairs
from ldpopt.spr.kov import kov_lp
from ldpopt.sweeps.config import InstanceSpec, SweepConfig, dirichlet_pair
from ldpopt.sweeps.store import FEATURE, SCHEMA

pa = require("pyarrow", FEATURE, "sweeps")

__all__ = [
    "ChunkTask",
    "ChunkOutcome",
    "plan_chunks",
    "estimated_work",
    "make_tasks",
    "warmup_task",
    "run_chunk",
    "compute_chunk",
    "limit_threads",
    "faults_from_env",
    "partition_string",
    "parse_partition",
    "FAULT_ENV",
    "TARGET_CHUNK_S",
    "MIN_CHUNK_S",
    "MIN_CHUNKS",
]

#: environment variable with test-only fault injection ("raise:ID", "die_once:ID:MARKER", "sleep:S")
FAULT_ENV = "LDPOPT_SWEEP_FAULT"

# Chunk sizing: a cost model measured once (single thread, 2-core x86-64, numba 0.68; the
# numbers are in docs/sweeps.md, "Chunks"), so the chunk layout depends on the configuration only.
#: upper bound of the estimated work of one chunk, seconds (progress and retries stay fine-grained)
TARGET_CHUNK_S = 1.0
#: lower bound of the estimated work of one chunk, seconds: the driver's store write of a chunk
#: (Parquet + fsync + rename, 3-15 ms) stays under ~10% of it
MIN_CHUNK_S = 0.1
#: a sweep is cut into at least this many chunks while they keep >= MIN_CHUNK_S each, so every
#: worker of a pool (up to 8 per machine, 2 chunks each) gets work from the start and the last
#: chunks finish together
MIN_CHUNKS = 16
#: fixed seconds per instance and divergence: drawing/validating the pair, the likelihood-ratio
#: reduction and prefix sums, the rows of the table (measured 2.7e-4 to 3.9e-4 s at k <= 30 with
#: one eps, where the solve itself is negligible)
_INSTANCE_S = 3e-4
#: seconds of the first (cold) solve of an instance: a + b k^p (measured 3e-4 s at k = 100,
#: 1.6e-3 s at 300, 8e-3 to 1.2e-2 s at 1000)
_COLD_A, _COLD_B, _COLD_P = 1e-5, 2.5e-7, 1.55
#: seconds of each further eps of the same instance, warm-started from its neighbour: a + b k^p
#: (measured on a 101-value grid: 1.1e-5 s at k = 10, 1.9e-5 at 30, 5.5e-5 at 100, 2.4e-4 at
#: 300, 1.4e-3 at 1000)
_WARM_A, _WARM_B, _WARM_P = 8e-6, 5.9e-8, 1.45
#: large eps costs more (more outputs, weaker pruning): factor 1 + _EPS_SLOPE max(eps - 2, 0)
#: (eps = 10 measured 1.4-2x eps = 2 at k = 1000)
_EPS_SLOPE = 0.1
#: an output budget below k costs about this factor more (the budgeted program)
_BUDGET_FACTOR = 1.5
#: estimated seconds per cell of the vectorised binary / RR baselines: a + b k
_BASE_A = 5e-6
_BASE_B = 1e-7
#: estimated seconds per KOV LP solve (HiGHS): a + b 2^k
_LP_A = 5e-3
_LP_B = 8e-5


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


class _Strings:
    """The distinct strings of a column and a code for each (the column is an array of codes into
    them, -1 for null): neighbouring eps often share the optimal partition, so each distinct one is
    formatted and stored once."""

    def __init__(self, values: tuple | list = ()):
        self.values: list[str] = list(values)
        self._codes: dict = {v: i for i, v in enumerate(self.values)}

    def code(self, text: str | None) -> int:
        if text is None:
            return -1
        c = self._codes.get(text)
        if c is None:
            c = self._codes[text] = len(self.values)
            self.values.append(text)
        return c

    def partition_codes(self, partitions: list, names: list[str]) -> list[int]:
        """The codes of a list of partitions given as blocks of symbol indices (``names[i]`` is
        ``str(i)``).

        Keyed by object identity: :meth:`ldpopt.spr.reduction.LRReduction.lift_many` (where the
        partitions of one instance come from) returns one tuple for each distinct partition and for
        each distinct block, so every partition and block is formatted once, without hashing its
        symbols (neighbouring eps share most of them).  Equal partitions that are distinct objects
        are formatted twice and still get one code (by their text).  ``held`` keeps every keyed
        object alive while its id is a key: a tuple holds its blocks, other containers are copied
        into tuples first.
        """
        held = [p if isinstance(p, tuple) else tuple(map(tuple, p)) for p in partitions]
        by_id: dict[int, int] = {}
        block_text: dict[int, str] = {}
        codes = []
        for blocks in held:
            c = by_id.get(id(blocks))
            if c is None:
                texts = []
                for b in blocks:
                    t = block_text.get(id(b))
                    if t is None:
                        t = block_text[id(b)] = ",".join([names[i] for i in b])
                    texts.append(t)
                c = by_id[id(blocks)] = self.code("|".join(texts))
            codes.append(c)
        return codes


# ---------------------------------------------------------------------------------------------
# Baselines, vectorised over the eps grid
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Scale:
    """A chunk's eps grid rescaled once (:func:`ldpopt._numerics.rescale`): ``c`` and ``A`` of
    every eps, and ``lf`` = log c where c underflowed (else -inf)."""

    eps: np.ndarray
    c: np.ndarray
    A: np.ndarray
    lf: np.ndarray

    @classmethod
    def of(cls, eps: np.ndarray) -> _Scale:
        c, A = rescale_array(eps)
        return cls(eps, c, A, np.array([rescale(float(e)).log_floor for e in eps]))


def _outputs_value(div, x: np.ndarray, y: np.ndarray, d: np.ndarray, scale: _Scale) -> np.ndarray:
    r"""Utility of s-ary RR on a block label, :math:`D(\sum_t g(x_t, y_t)/(1 + (s-1)c))` per eps
    (SPR eq. 30).

    ``x, y, d`` (E, s) are the rescaled output masses ``c + A P_t``, ``c + A Q_t`` and
    ``A (P_t - Q_t)`` of the s blocks at each eps.  Every value is >= 0 (a divergence of two
    distributions; the built-in terms are >= 0); Renyi is evaluated as ``optimal_mechanism``
    reports it (log domain far from S = 1: no overflow).
    """
    denom = 1.0 + (x.shape[1] - 1) * scale.c
    lf = scale.lf
    E = scale.eps.shape[0]
    if is_chernoff(div):  # the curve of the s-ary RR's outputs, maximised over lambda
        return np.array([chernoff_curve(x[e], y[e], d[e], denom[e], lf[e]).value for e in range(E)])
    if div.code in (CODE_POWER_UP, CODE_POWER_DOWN):
        return np.array(
            [renyi_value(div.code, div.param, x[e], y[e], d[e], denom[e], lf[e]) for e in range(E)]
        )
    terms = div.perspective(x, y, d)
    for e in np.flatnonzero(lf > -np.inf):  # e^{-eps} underflowed: keep log(e^{-eps}) = -eps
        terms[e] = div.perspective(x[e], y[e], d[e], log_floor=float(lf[e]))
    raw = terms.sum(axis=1) / denom
    out = raw if div.value_transform is None else np.array([div.transform(float(r)) for r in raw])
    return np.where(out < 0.0, 0.0, out)


def _blocks_value(div, sums: list[tuple[float, float, float]], scale: _Scale) -> np.ndarray:
    r"""Utility of s-ary RR on a block label: :math:`\sum_t g(c + A P_t, c + A Q_t)/(1 + (s-1)c)`
    (SPR eq. 30)."""
    c, A = scale.c[:, None], scale.A[:, None]
    P, Q, D = (np.array([s[j] for s in sums], dtype=float) for j in range(3))
    return _outputs_value(div, c + A * P, c + A * Q, A * D, scale)


def _baseline_binary(u, v, scale: _Scale, div):
    """Binary mechanism (Kairouz et al.): RR on 1{P0(x) >= P1(x)} = SPR with blocks (H, H^c)."""
    high = u >= v
    sums = [
        (math.fsum(u[m].tolist()), math.fsum(v[m].tolist()), math.fsum((u[m] - v[m]).tolist()))
        for m in (high, ~high)
    ]
    part = partition_string((np.flatnonzero(high), np.flatnonzero(~high)))
    return _blocks_value(div, sums, scale), np.full(scale.eps.shape, 2, dtype=np.int64), part


def _baseline_rr(u, v, scale: _Scale, div):
    """k-ary randomized response = SPR with singleton blocks; every symbol is its own output."""
    c, A = scale.c[:, None], scale.A[:, None]
    value = _outputs_value(div, c + A * u[None, :], c + A * v[None, :], A * (u - v)[None, :], scale)
    return value, np.full(scale.eps.shape, u.shape[0], dtype=np.int64), None


def _baseline_kov_lp(u, v, scale: _Scale, div):
    """The Kairouz-Oh-Viswanath staircase LP (independent exact optimum, k <= 10)."""
    eps = scale.eps
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
# Tasks and outcomes
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
    _: KW_ONLY  # at most 8 positional fields; the rest by keyword
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
    #: the process that computed it
    pid: int = 0
    _: KW_ONLY  # at most 8 positional fields; the rest by keyword
    #: the thread of the ``threads`` scheduler that computed it (1, 2, ...; 0 elsewhere)
    thread: int = 0


def failed_outcome(chunk_id: int, exc: BaseException) -> ChunkOutcome:
    """The outcome of a chunk whose computation raised ``exc`` (call inside the ``except``)."""
    return ChunkOutcome(chunk_id, error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc())


def limit_threads() -> None:
    """One solver thread: in a worker the parallelism comes from the chunks, and the solver's own
    threads would oversubscribe the cores."""
    try:
        import numba

        if numba.get_num_threads() != 1:
            numba.set_num_threads(1)
    except Exception:  # numba missing or its threading layer unavailable: nothing to limit
        pass


def faults_from_env() -> tuple:
    """The test-only faults of :data:`FAULT_ENV` (``;``-separated)."""
    text = os.environ.get(FAULT_ENV, "").strip()
    return tuple(s.strip() for s in text.split(";") if s.strip())


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
            limit_threads()
        _apply_faults(task)
        table, solve_s, build_s = compute_chunk(task)
        return ChunkOutcome(
            task.chunk_id, table=table, solve_seconds=solve_s, build_seconds=build_s, pid=os.getpid()
        )
    except Exception as exc:
        return failed_outcome(task.chunk_id, exc)


# ---------------------------------------------------------------------------------------------
# Computing a chunk
# ---------------------------------------------------------------------------------------------
@dataclass
class _Cells:
    """Results of a chunk per (instance, group, eps); a group is (divergence, mechanism, budget)."""

    values: np.ndarray
    num_outputs: np.ndarray
    #: codes into ``partition_strings`` (-1: no partition)
    partitions: np.ndarray
    seconds: np.ndarray
    partition_strings: _Strings

    @classmethod
    def empty(cls, n: int, G: int, E: int) -> _Cells:
        return cls(
            values=np.full((n, G, E), np.nan),
            num_outputs=np.zeros((n, G, E), dtype=np.int64),
            partitions=np.full((n, G, E), -1, dtype=np.int64),
            seconds=np.zeros((n, G, E)),
            partition_strings=_Strings(),
        )


def _groups(task: ChunkTask) -> list[tuple[int, str, int]]:
    """(divergence index, mechanism, budget) in row order: the optimum per budget, then the baselines."""
    groups = []
    for di in range(len(task.divergences)):
        groups += [(di, "optimal", b) for b in task.budgets]
        groups += [(di, m, 0) for m in task.baselines]
    return groups


def _solve_optimal(
    pairs, by_k: dict, eps: np.ndarray, name: str, budget: int, cells: _Cells, g: int, inputs: np.ndarray
) -> list:
    """Optimal values of group ``g`` for all pairs, one batched :func:`ldpopt.sweep` per alphabet
    size, and their input divergences into ``inputs``; returns the partitions as (alphabet size,
    positions, partitions) per batch."""
    results = []
    for k, pos in by_k.items():
        res = sweep(
            np.vstack([pairs[i][0] for i in pos]),
            np.vstack([pairs[i][1] for i in pos]),
            eps,
            divergence=name,
            max_outputs=None if budget == 0 else budget,
            return_partitions=True,
            progress=False,
        )
        cells.values[pos, g, :] = np.asarray(res.values, dtype=float)
        cells.num_outputs[pos, g, :] = np.asarray(res.num_outputs, dtype=np.int64)
        inputs[pos] = res.input_divergence
        assert res.partitions is not None  # return_partitions=True
        results.append((k, pos, res.partitions))
    return results


def _store_partitions(results: list, cells: _Cells, g: int) -> None:
    codes = cells.partition_strings.partition_codes
    for k, pos, partitions in results:
        names = [str(i) for i in range(k)]
        for j, i in enumerate(pos):
            cells.partitions[i, g, :] = codes(partitions[j], names)


# ``pyarrow.array`` imports pandas on its first call (a check for pandas inputs) and
# ``Array.take`` pyarrow.compute: 0.1-0.3 s of the start-up of every process that builds chunks.
# The columns are built from their buffers instead.
def _number_column(values: np.ndarray, dtype, arrow_type):
    """A null-free Arrow column of ``values`` (float64 / int64), sharing their memory."""
    arr = np.ascontiguousarray(values, dtype=dtype).ravel()
    return pa.Array.from_buffers(arrow_type, arr.shape[0], [None, pa.py_buffer(arr)])


def _string_column(strings: _Strings, codes: np.ndarray):
    """The Arrow string column ``strings.values[codes]`` (null where a code is -1)."""
    encoded = [s.encode() for s in strings.values]
    encoded.append(b"")  # code -1
    codes = np.ascontiguousarray(codes, dtype=np.int64).ravel()
    sizes = np.array([len(b) for b in encoded], dtype=np.int64)[codes]
    offsets = np.zeros(codes.shape[0] + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    if offsets[-1] > np.iinfo(np.int32).max:
        raise ValueError(f"a chunk holds {offsets[-1]} bytes of strings in one column (at most 2**31 - 1)")
    missing = codes < 0
    n_missing = int(np.count_nonzero(missing))
    valid = pa.py_buffer(np.packbits(~missing, bitorder="little")) if n_missing else None
    data = b"".join([encoded[c] for c in codes.tolist()])
    buffers = [valid, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)]
    return pa.Array.from_buffers(pa.string(), codes.shape[0], buffers, null_count=n_missing)


def _table(task: ChunkTask, ks: np.ndarray, eps: np.ndarray, groups: list, inputs: np.ndarray, cells: _Cells):
    """The chunk's rows as an Arrow table (instance-major, then group, then eps)."""
    n, E, G = ks.shape[0], eps.shape[0], len(groups)
    div_of_group = np.array([di for di, _, _ in groups], dtype=np.int64)
    denom = inputs[:, div_of_group][:, :, None]
    ok = (denom != 0) & np.isfinite(denom) & np.isfinite(cells.values)
    with np.errstate(all="ignore"):
        # in [0, 1] by data processing (outside only by rounding); nan where D(P0||P1) = 0
        normalized = np.where(ok, np.clip(cells.values / np.where(ok, denom, 1.0), 0.0, 1.0), np.nan)
    per_inst = G * E
    mechanisms = _Strings(("optimal", *task.baselines))
    group_mech = np.array([mechanisms.code(m) for _, m, _ in groups], dtype=np.int64)
    group_budget = np.array([b for _, _, b in groups], dtype=np.int64)
    i64, f64 = (np.int64, pa.int64()), (np.float64, pa.float64())
    columns = [
        _string_column(_Strings(task.ids), np.repeat(np.arange(n), per_inst)),
        _number_column(np.repeat(np.arange(task.start, task.stop), per_inst), *i64),
        _number_column(np.repeat(ks, per_inst), *i64),
        _number_column(np.tile(eps, n * G), *f64),
        _string_column(_Strings(task.divergences), np.tile(np.repeat(div_of_group, E), n)),
        _number_column(np.tile(np.repeat(group_budget, E), n), *i64),
        _string_column(mechanisms, np.tile(np.repeat(group_mech, E), n)),
        _number_column(cells.values, *f64),
        _number_column(normalized, *f64),
        _number_column(cells.num_outputs, *i64),
        _string_column(cells.partition_strings, cells.partitions),
        _number_column(cells.seconds, *f64),
    ]
    return pa.Table.from_arrays(columns, schema=SCHEMA)


def compute_chunk(task: ChunkTask) -> tuple[Any, float, float]:
    """The rows of one chunk (a ``pyarrow.Table``), the seconds spent solving and building them."""
    raw = (
        list(task.pairs)
        if task.pairs is not None
        else [dirichlet_pair(task.spec, i) for i in range(task.start, task.stop)]
    )
    # the optimum is solved from the raw pairs, which ``ldpopt.sweep`` renormalises (a Dirichlet
    # draw sums to 1 only to rounding) and whose input divergence it reports; the baselines see
    # the same rule applied once to the same pairs, so all three see the same distributions (a
    # second renormalisation of a renormalised pair could move it by an ulp)
    pairs = [check_distribution_pair(u, v, names=("p0", "p1")) for u, v in raw]
    eps = np.asarray(task.eps, dtype=float)
    groups = _groups(task)
    n, E = len(pairs), len(task.eps)
    cells = _Cells.empty(n, len(groups), E)
    inputs = np.empty((n, len(task.divergences)))
    ks = np.array([u.shape[0] for u, _ in pairs], dtype=np.int64)
    by_k = {int(k): np.flatnonzero(ks == k) for k in np.unique(ks)}
    solve_s = build_s = 0.0
    scale: _Scale | None = None
    for g, (di, mech, budget) in enumerate(groups):
        name = task.divergences[di]
        div = get_divergence(name)
        t0 = time.perf_counter()
        if mech == "optimal":
            results = _solve_optimal(raw, by_k, eps, name, budget, cells, g, inputs[:, di])
            dt = time.perf_counter() - t0
            t1 = time.perf_counter()
            _store_partitions(results, cells, g)
            build_s += time.perf_counter() - t1
        else:
            func = _BASELINE_FUNCS[mech]
            scale = scale or _Scale.of(eps)
            for i, (u, v) in enumerate(pairs):
                cells.values[i, g, :], cells.num_outputs[i, g, :], part = func(u, v, scale, div)
                cells.partitions[i, g, :] = cells.partition_strings.code(part)
            dt = time.perf_counter() - t0
        cells.seconds[:, g, :] = dt / (n * E)
        solve_s += dt
    t1 = time.perf_counter()
    table = _table(task, ks, eps, groups, inputs, cells)
    build_s += time.perf_counter() - t1
    return table, solve_s, build_s


# ---------------------------------------------------------------------------------------------
# Chunk plan
# ---------------------------------------------------------------------------------------------
def _instance_cost(cfg: SweepConfig, k: int) -> float:
    """Estimated seconds of one instance of alphabet size ``k`` over the whole grid on one core
    (the measured cost model above: per instance, per cold and warm-started solve, by k, eps and
    budget, plus the baselines)."""
    eps = np.asarray(cfg.eps, dtype=float)
    eps_factor = 1.0 + _EPS_SLOPE * np.maximum(eps - 2.0, 0.0)
    cold = _COLD_A + _COLD_B * k**_COLD_P
    warm = _WARM_A + _WARM_B * k**_WARM_P
    # the first eps of each instance is solved cold, the others warm-started
    grid = float(cold * eps_factor[0] + warm * eps_factor[1:].sum())
    solve = sum(grid * (_BUDGET_FACTOR if 0 < b < k else 1.0) for b in cfg.budgets)
    base = sum(
        len(eps) * (_LP_A + _LP_B * 2.0 ** min(k, 30) if m == "kov_lp" else _BASE_A + _BASE_B * k)
        for m in cfg.baselines
    )
    return len(cfg.divergences) * (_INSTANCE_S + solve + base)


def estimated_work(cfg: SweepConfig) -> float:
    """Estimated seconds of the whole sweep on one core (the cost model of :func:`plan_chunks`)."""
    ks, counts = np.unique(cfg.instances.ks, return_counts=True)
    return float(sum(c * _instance_cost(cfg, int(k)) for k, c in zip(ks, counts, strict=True)))


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


def make_tasks(cfg: SweepConfig, ipc: int, faults: tuple = (), in_worker: bool = False) -> list[ChunkTask]:
    """The chunks of a sweep with ``ipc`` instances each, in chunk order."""
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


#: the two ways :func:`ldpopt.spr.grid.sweep` solves a chunk's instances of one alphabet size
#: (:func:`ldpopt.spr.grid.table_path_pairs`): cell by cell by the table path (the single
#: solver's small kernels) or by the batched kernels
_TABLE, _BATCHED = "table", "batched"


def _paths_by_k(cfg: SweepConfig, ipc: int) -> dict[int, set[str]]:
    """The paths the chunks (``ipc`` instances each) take, per alphabet size.

    A chunk solves its instances of one alphabet size k in one :func:`ldpopt.spr.grid.sweep` per
    divergence and budget (:func:`compute_chunk`), by the table path when they are at most
    ``table_path_pairs(k, E)``.  The instance's alphabet size stands for its reduced one (which
    the sweep counts): they are equal unless symbols share a likelihood ratio or have
    probability 0 under both distributions (a Dirichlet draw: almost never).
    """
    sizes, size_of = np.unique(np.asarray(cfg.instances.ks, dtype=np.int64), return_inverse=True)
    # the instances of each (chunk, alphabet size)
    keys, counts = np.unique(
        (np.arange(size_of.shape[0]) // ipc) * sizes.shape[0] + size_of, return_counts=True
    )
    which = keys % sizes.shape[0]
    E = len(cfg.eps)
    table = counts <= np.array([table_path_pairs(k, E) for k in sizes.tolist()])[which]
    n_table = np.bincount(which[table], minlength=sizes.shape[0])
    n_batched = np.bincount(which[~table], minlength=sizes.shape[0])
    return {
        k: {path for path, n in ((_TABLE, nt), (_BATCHED, nb)) if n}
        for k, nt, nb in zip(sizes.tolist(), n_table.tolist(), n_batched.tolist(), strict=True)
    }


def _warm_groups(cfg: SweepConfig, ipc: int) -> list[tuple[int, str]]:
    """(alphabet size, path) of the warm-up's sweeps: for each size class and each path some
    chunk's sweep of an alphabet of that class takes, the smallest and the largest such alphabet."""
    members: dict[tuple[int, str], list[int]] = {}
    for k, paths in _paths_by_k(cfg, ipc).items():
        for path in paths:
            members.setdefault((size_class(k), path), []).append(k)
    return sorted({(k, path) for (_, path), ks in members.items() for k in (min(ks), max(ks))})


def _padded(pair: tuple, width: int) -> tuple:
    """``pair`` with symbols of probability 0 under both distributions appended up to ``width``
    symbols: the likelihood-ratio reduction drops them, so it is solved as the same reduced
    instance (the same kernels), but :func:`compute_chunk` solves it apart from the instances of
    its own alphabet size."""
    u, v = pair
    pad = np.zeros(width - u.shape[0])
    return np.concatenate([u, pad]), np.concatenate([v, pad])


def warmup_task(cfg: SweepConfig) -> ChunkTask:
    """A small task that runs every compiled code path the sweep's chunks run.  Run once in the
    driver before the workers start, it fills the on-disk numba cache that the workers then load
    (they never compile).

    A chunk's instances of one alphabet size k are solved together by
    :func:`ldpopt.spr.grid.sweep`, by the table path (the single solver's small kernels) when
    they are few (:func:`ldpopt.spr.grid.table_path_pairs`), else by the batched kernels, compiled
    with the parts of the solver the size class of k needs (:func:`ldpopt.spr.grid.size_class`).
    So for each size class and each path the chunks (:func:`plan_chunks`) take for alphabets of
    that class, the task solves the smallest and the largest of those alphabets by that path:
    one instance for the table path, for the batched one just enough instances of that size to
    take it (``table_path_pairs(k, E) + 1``: one for the usual grids of tens of eps values or
    more, never more than a chunk holds).  Whether a budget can bind grows with the alphabet,
    so the two ends take every variant the class's alphabets take.  An alphabet size both paths
    need has its table-path instance padded with symbols of probability 0 (:func:`_padded`), a
    size of its own in the task.  Every eps, divergence and budget is run, and the baselines but
    the KOV LP (which compiles nothing).
    """
    inst = cfg.instances
    ks = np.asarray(inst.ks)
    groups = _warm_groups(cfg, plan_chunks(cfg))
    E = len(cfg.eps)
    picks: set[int] = set()
    for k, path in groups:
        count = 1 if path == _TABLE else table_path_pairs(k, E) + 1
        picks |= set(np.flatnonzero(ks == k)[:count].tolist())
    order = sorted(picks)
    ids = [inst.ids[i] for i in order]
    pairs = [p for i in order for p in inst.get(i, i + 1)]
    sizes = {k for k, _ in groups}
    for k, path in groups:
        if path == _TABLE and (k, _BATCHED) in groups:
            i = int(np.flatnonzero(ks == k)[0])
            width = k + 1
            while width in sizes:  # a size no other instance of the task has
                width += 1
            sizes.add(width)
            ids.append(f"{inst.ids[i]}+padded")
            pairs.append(_padded(inst.get(i, i + 1)[0], width))
    return ChunkTask(
        chunk_id=-1,
        start=0,
        stop=len(pairs),
        ids=tuple(ids),
        spec=inst.spec,
        pairs=tuple(pairs),
        eps=cfg.eps,
        divergences=cfg.divergences,
        budgets=cfg.budgets,
        baselines=tuple(b for b in cfg.baselines if b != "kov_lp"),
    )
