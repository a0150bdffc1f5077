r"""Dispatcher of the compiled exact solvers (used by :func:`ldpopt.optimal_mechanism`).

:func:`ldpopt.spr.solve._solve_reduced` calls :func:`solve` for ``method="auto"``/``"fast"`` when
:func:`ldpopt.spr._policy.use_compiled` says so.  The inputs are already validated and reduced (the
strictly likelihood-ratio-sorted alphabet of :class:`ldpopt.LRReduction`), so this module
only converts to the kernels' array/scalar arguments and back.  Two paths, the same optimum:

* **table path** (k <= ``TABLE_MAX_K``): every interval score is computed once, by numpy,
  with the readable program's own operations (:func:`score_table`); Dinkelbach's iteration
  runs here in Python over one small compiled pass (:func:`ldpopt.spr._kernels.table_pass`), and
  a binding budget over the compiled O(l k^2) program on the same table
  (:func:`ldpopt.spr._kernels.table_budget_dp`).  It exists for the compile time: its three
  kernels compile in about a second in a fresh process, while the pruned solvers take
  10-15 s (``docs/fast.md``, section 6);
* **pruned path** (larger k): Dinkelbach's iteration (:func:`ldpopt.spr._kernels.dinkelbach_ws`),
  O(k^2) per step with exact pruning of split points, O(k) memory above
  ``SCORE_CACHE_MAX_K`` symbols, and the pruned O(l k^2) program for a binding budget.

Both take the decisions of :mod:`ldpopt.spr._policy` (where Dinkelbach starts, when the budget
program settles the answer) and return exactly the optimum of the readable program
:func:`ldpopt.spr.reference._dp_readable` (see ``docs/fast.md``).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterator

import numpy as np

from ldpopt._numerics import rescale
from ldpopt.divergences import CODE_POWER_DOWN, CODE_POWER_UP, FDivergence, is_chernoff, perspective_array
from ldpopt.spr import _chernoff_kernels as CK
from ldpopt.spr import _kernels as K
from ldpopt.spr import _policy, _small
from ldpopt.spr._policy import METHOD_NAMES
from ldpopt.spr.reduction import PX, QX, LRReduction, _Prefix

__all__ = [
    "supports",
    "solve",
    "solve_scores",
    "score_table",
    "small_path",
    "score_cache_ready",
    "pruned_ready",
    "pruned_path",
    "cold_table",
    "PRUNED_PATH",
    "PRUNED_PATHS",
    "COLD_TABLE_MAX_BYTES",
    "COLD_TABLE_MAX_BUDGET",
    "TIER_UP_SECONDS",
    "solve_small",
    "METHOD_NAMES",
    "TABLE_MAX_K",
    "PATHS",
]

#: ``path="auto"`` takes the table path for a built-in divergence up to this many reduced
#: symbols: none by default (0).  The pruned path with a score cache (``_small.cached_solve``,
#: k <= ``SCORE_CACHE_MAX_K``) is several times faster from k ~ 20 on: it scores only the blocks
#: its bounds cannot rule out (libm scores, within the error model of the readable program's),
#: where the table path scores all k (k + 1) / 2 blocks with numpy (the readable program's scores
#: bit for bit).  A user's divergence always takes the table path (up to
#: ``_policy.USER_TABLE_MAX_K``); tests raise this to route built-ins through it too.
TABLE_MAX_K = 0
#: the table's scores are evaluated by numpy in chunks of this many blocks, which bounds the
#: temporaries of the vectorised perspective (and keeps them in cache)
TABLE_CHUNK = 1 << 15
#: ``solve(path=...)``: ``"auto"`` picks by size; the other two force a path (tests, benchmarks)
PATHS = ("auto", "table", "pruned")
#: the kernels' traceback as a plain function (it is one already with NUMBA_DISABLE_JIT)
_TRACEBACK = getattr(K._traceback, "py_func", K._traceback)
#: the coarse start's refinement width as a plain function (scalar arithmetic, not worth a compile)
_REFINE_WIDTH = getattr(K._refine_width, "py_func", K._refine_width)


def supports(div: FDivergence) -> bool:
    """True when the kernels evaluate ``div`` natively (every built-in divergence and factory)."""
    return bool(div.is_builtin)


def solve(p: np.ndarray, q: np.ndarray, eps: float, div: FDivergence, l: int, path: str = "auto"):
    r"""Optimum over SPR mechanisms of the reduced instance ``(p, q)`` with at most ``l`` blocks.

    Parameters
    ----------
    p, q : ndarray
        Reduced, strictly likelihood-ratio-sorted distributions (length k >= 1).
    eps : float
        Privacy level (> 0, ``inf`` allowed).
    div : FDivergence
        A built-in divergence (``supports(div)``).
    l : int
        Effective budget, ``1 <= l <= k``.
    path : {"auto", "table", "pruned"}
        ``"auto"``: the table path up to ``TABLE_MAX_K`` symbols, and while the pruned
        kernels of this size are not ready (:func:`pruned_ready`) and the table fits
        (:func:`cold_table`); the pruned kernels otherwise.

    Returns
    -------
    raw : float
        Optimal raw (untransformed) value :math:`\max_\pi \sum_t \mu'(B_t)/(1+(s-1)c)`.
    cuts : list of (int, int)
        Half-open reduced intervals ``[(0, a), (a, b), ..., (z, k)]`` as ``_dp_readable``.
    method : str
        ``"dinkelbach"``, ``"budget_dp"`` or ``"single_block"``.
    """
    if path not in PATHS:
        raise ValueError(f"path must be one of {PATHS}, got path={path!r}")
    p = np.ascontiguousarray(p, dtype=np.float64)
    q = np.ascontiguousarray(q, dtype=np.float64)
    k = int(p.shape[0])
    l = int(min(max(int(l), 1), k))
    c, A, lf = rescale(float(eps))
    if not div.is_builtin:  # a user's divergence: only the table path can score it
        if k > _policy.USER_TABLE_MAX_K or path == "pruned":
            raise ValueError(f"a user divergence takes the table path, k <= {_policy.USER_TABLE_MAX_K}")
        S = score_table(p, q, c, A, lf, int(div.code), float(div.param), div)
        raw, bounds, code = _solve_score_table(S, k, l, c)
        nb = len(bounds) - 1
    elif path == "table" or (path == "auto" and k <= TABLE_MAX_K):
        raw, bounds, code = _solve_table(p, q, k, l, int(div.code), float(div.param), c, A, lf)
        nb = len(bounds) - 1
    elif path == "auto" and cold_table(k, l) and not pruned_ready(k, int(div.code)):
        t0 = time.perf_counter()
        raw, bounds, code = _solve_table(p, q, k, l, int(div.code), float(div.param), c, A, lf)
        nb = len(bounds) - 1
        charge_table(time.perf_counter() - t0)
    else:
        raw, bounds, nb, code = _solve_pruned(p, q, k, l, int(div.code), float(div.param), c, A, lf)
    cuts = [(int(bounds[j]), int(bounds[j + 1])) for j in range(int(nb))]
    return float(raw), cuts, METHOD_NAMES[int(code)]


def _solve_pruned(p, q, k, l, code, param, c, A, lf):
    pre = _Prefix(p, q).table
    bounds = np.zeros(k + 1, dtype=np.int64)
    if k > K.SCORE_CACHE_MAX_K:
        # kernels specialised to the divergence: a first large solve compiles its branch alone
        raw, nb, code = _solve_uncached(pre, k, l, K.scoring(code, param, c, A, lf), bounds)
        return raw, bounds, nb, code
    # k <= SCORE_CACHE_MAX_K: the score cache (the compiled drivers of _kernels.solve_ws are not
    # needed: _small.cached_solve takes its decisions, compiling only the cached kernels)
    raw, nb, code = _cached(pre, k, l, (code, param, c, A, lf), bounds)
    return raw, bounds, nb, code


def _cached(pre, k, l, sc, bounds):
    """``_kernels.solve_ws`` with a score cache and no warm start (``_small.cached_solve``, then the
    budget program when ``_policy.settle`` asks for it): ``(raw, nb, method)``."""
    raw, nb, code, budget = _small.cached_solve(pre, np.int64(k), np.int64(l), sc, bounds)
    if budget > 0:
        raw, nb = K.budget_dp(pre, np.int64(k), np.int64(budget), sc, bounds)
    return float(raw), int(nb), int(code)


# ---------------------------------------------------------------------------------------------
# Small single solves: one compiled call from the validated pair to the optimum
# ---------------------------------------------------------------------------------------------
#: when the pruned kernels answer a solve ``path="auto"`` could give the table path (the small
#: one-call path and the score-cache solve of up to ``SCORE_CACHE_MAX_K`` symbols, the large
#: solve's kernels above; :func:`pruned_ready`): ``"ready"`` once they are compiled in this
#: process or stored in numba's on-disk cache (by :func:`ldpopt.warm_up`, ``ldpopt warmup``, or any
#: earlier process that compiled them), or once the table path has cost this process
#: ``TIER_UP_SECONDS``; ``"always"`` (compile them at the first solve: several seconds once per
#: installation; the test suite's setting); ``"never"`` (the table path wherever it fits).
#: Until then the table path answers: its few kernels compile in well under a second.
PRUNED_PATH = "ready"
PRUNED_PATHS = ("ready", "always", "never")
#: the table path stands in for pruned kernels that are not ready while its memory (the packed
#: table, k (k + 1) / 2 scores, and the budget program's two (l + 1) x (k + 1) tables) stays
#: within this many bytes: k <= 5784 without a binding budget (128 MiB; a first large pruned solve
#: compiles 5-7 s on 2 cores, the table path's kernels ~0.7 s, and its O(k^2) numpy scores cost
#: ~0.7 s at k = 5000) ...
COLD_TABLE_MAX_BYTES = 1 << 27
#: ... and only for a budget of at most this many blocks (its program is O(l k^2) on the table)
COLD_TABLE_MAX_BUDGET = 8
#: ski rental: once the table path, taken because the pruned kernels were not ready, has cost this
#: process this many seconds (about what compiling the pruned kernels costs on a 2-core machine,
#: benchmarks/README.md), the next solves compile them and take them.  A process then never
#: spends much more than twice what the better of the two choices would have cost in hindsight.
TIER_UP_SECONDS = 5.0
_table_seconds = 0.0
#: the kernels each pruned path compiles: (those specialised to the divergence, the shared ones)
_SMALL_KERNELS = ((), (_small.small_solve, _small.cached_solve))
_LARGE_KERNELS = ((K.uncached_pass, K.best_two_blocks, K.partition_ratio), (K.group_sums, K.super_sums))
#: what this process read of numba's on-disk cache index, per (path, divergence code)
_on_disk: dict = {}
#: the (path, divergence code) keys found ready in this process: compiled kernels stay compiled,
#: and the disk is read once, so a solve need not look again (reading a dispatcher's signatures
#: hashes numba types, ~10 us)
_found_ready: set = set()


@contextlib.contextmanager
def pruned_path(mode: str) -> Iterator[None]:
    """Set :data:`PRUNED_PATH` to ``mode`` for the duration of a ``with`` block (``warm_up``
    compiles the pruned kernels under ``"always"``)."""
    global PRUNED_PATH
    if mode not in PRUNED_PATHS:
        raise ValueError(f"mode must be one of {PRUNED_PATHS}, got {mode!r}")
    saved, PRUNED_PATH = PRUNED_PATH, mode
    try:
        yield
    finally:
        PRUNED_PATH = saved


def _literal(code: int | None) -> str:
    return "" if code is None else f"Literal[int]({code})"


def _cached_on_disk(dispatchers, code: int | None = None) -> bool:
    """True when numba's cache index of every dispatcher holds an overload that this process
    would load: the index is read and checked against the source file's stamp as numba's own
    load does, and an entry counts only if it was compiled for this target (numba's codegen
    "magic tuple": OS, architecture, CPU name and features) from this bytecode, the rest of the
    key numba looks entries up by (an image warmed on another CPU is cold here), and, with
    ``code``, for that divergence (a kernel specialised by ``_kernels.scoring``)."""
    for disp in dispatchers:
        try:
            cache = disp._cache
            entries = cache._cache_file._load_index()
            want = cache._index_key(None, disp.targetctx.codegen())[1:]
        except Exception:  # not a caching dispatcher, an unreadable index, internals changed
            return False
        if not any(key[1:] == want and _literal(code) in str(key[0]) for key in entries):
            return False
    return True


def _compiled(dispatchers, code: int | None = None) -> bool:
    """True when every dispatcher has an overload in this process (for ``code``, if given)."""
    return all(any(_literal(code) in str(sig) for sig in d.signatures) for d in dispatchers)


def _ready(kernels, code: int) -> bool:
    specialised, shared = kernels
    key = (id(kernels), code if specialised else None)
    if key in _found_ready:
        return True
    if not all(hasattr(d, "signatures") for d in specialised + shared):  # NUMBA_DISABLE_JIT
        return True
    if _compiled(specialised, code) and _compiled(shared):
        _found_ready.add(key)
        return True
    if key not in _on_disk:  # read once per process: a cache filled later is used by the next one
        _on_disk[key] = _cached_on_disk(specialised, code) and _cached_on_disk(shared)
    if _on_disk[key]:
        _found_ready.add(key)
    return _on_disk[key]


def tiered_up() -> bool:
    """Whether this process has spent ``TIER_UP_SECONDS`` on paths that stand in for kernels
    that were not ready (ski rental: the next solve compiles them)."""
    return _table_seconds >= TIER_UP_SECONDS


#: while the compiled Chernoff search is neither compiled in this process nor in numba's on-disk
#: cache, a single solve of at most this many reduced symbols takes the Python search over the
#: compiled table solver instead (its kernels compile in ~1 s, the search's ~13 kernels in
#: 10-17 s on 2 cores): measured 1-10 ms per solve up to k = 200 and ~0.25 s at k = 1000 on 2
#: cores.  The time so spent counts towards TIER_UP_SECONDS, as the table path's does.
COLD_SEARCH_MAX_K = 1000
#: the compiled Chernoff search's entry point (the kernels it calls are linked into its entry)
_SEARCH_KERNELS = ((), (CK.sweep_pair,))


def chernoff_search_ready(k: int) -> bool:
    """Whether the compiled Chernoff search answers a single solve of ``k`` reduced symbols now
    (:data:`PRUNED_PATH`, :data:`COLD_SEARCH_MAX_K`, the ski rental of :func:`pruned_ready`)."""
    if PRUNED_PATH != "ready":
        return PRUNED_PATH == "always"
    if k > COLD_SEARCH_MAX_K or tiered_up():
        return True
    return _ready(_SEARCH_KERNELS, 0)


def pruned_ready(k: int, code: int) -> bool:
    """Whether the pruned kernels answer a solve of ``k`` reduced symbols of the built-in
    divergence ``code`` now (see :data:`PRUNED_PATH`)."""
    if PRUNED_PATH != "ready":
        return PRUNED_PATH == "always"
    if tiered_up():
        return True
    return _ready(_SMALL_KERNELS if k <= K.SCORE_CACHE_MAX_K else _LARGE_KERNELS, code)


def score_cache_ready() -> bool:
    """Whether the score-cache kernels answer small solves now (:func:`pruned_ready`)."""
    return pruned_ready(1, 0)


def cold_table(k: int, l: int) -> bool:
    """Whether the table path of ``k`` reduced symbols with effective budget ``l`` fits the
    bounds under which it stands in for pruned kernels that are not ready
    (``COLD_TABLE_MAX_BYTES``, ``COLD_TABLE_MAX_BUDGET``)."""
    if k <= K.SCORE_CACHE_MAX_K:
        return True
    if k > l > COLD_TABLE_MAX_BUDGET:
        return False
    # without a binding budget the program still runs for ties at eps > 27.6 (at most
    # TIE_WORK / k^2 blocks) and for an overflowing score (3 blocks): a few rows
    rows = l if l < k else 3 + _policy.TIE_WORK // (k * k)
    return 8 * (k * (k + 1) // 2) + 16 * (rows + 1) * (k + 1) <= COLD_TABLE_MAX_BYTES


def charge_table(seconds: float) -> None:
    """Count ``seconds`` of the table path taken in place of pruned kernels (ski rental)."""
    global _table_seconds
    _table_seconds += seconds


def small_path(div: FDivergence, n: int) -> bool:
    """True when ``optimal_mechanism`` solves a pair of ``n`` symbols by :func:`solve_small`: a
    built-in f-divergence, ``n <= _small.SMALL_MAX_K``, the score-cache kernels ready
    (:func:`pruned_ready`) and ``path="auto"`` would not take the table path anyway (it
    never does unless a test raises ``TABLE_MAX_K``)."""
    return (
        bool(div.is_builtin)
        and not is_chernoff(div)
        and n <= _small.SMALL_MAX_K
        and TABLE_MAX_K < 1
        and score_cache_ready()
    )


def solve_small(u: np.ndarray, v: np.ndarray, eps: float, div: FDivergence, l_user: int | None):
    r"""The optimum of a validated pair by one compiled call, or ``None``.

    :func:`ldpopt.spr._small.small_solve` (reduction, prefix table, the cached solve and the terms
    of :math:`D_f(u\|v)`), then the budget program when it asks for it.  Returns ``None`` when two
    likelihood ratios are within the reduction's near-tie tolerance (the caller reduces exactly
    and solves by :func:`solve`), else ``(raw, nb, method, input divergence, block_of, grouping,
    reduced)``: ``block_of`` the output of every original symbol, ``grouping`` (unless the budget
    program ran, else ``None``) the lists ``(grouped, ends)``: the symbols block by block, ascending
    in each, and where each block ends in ``grouped``; ``reduced()`` the reduction and the cuts
    (built on demand).  Same result as ``solve(reduction.p, reduction.q, eps, div, l)`` (the same
    kernels on the same prefix table).  The input divergence is the sum of the kernel's terms by
    ``math.fsum`` (as ``FDivergence.raw``; libm terms; summed in the kernel by ``_small.fsum``, the
    same bits) for every built-in but Renyi, whose reported value is ``renyi_value``'s.
    """
    c, A, lf = rescale(float(eps))
    code = int(div.code)
    renyi = code in (CODE_POWER_UP, CODE_POWER_DOWN)
    l_arg = 0 if l_user is None else int(l_user)
    status, raw, nb, method, budget, terms, total, ints, floats = _small.small_solve(
        u, v, l_arg, code, float(div.param), c, A, lf, not renyi
    )
    if status != _small.SOLVED:
        return None
    n = int(u.shape[0])
    nt = 0 if renyi else n
    block_of = ints[n : 2 * n]
    grouping = None
    if budget > 0:
        order, _, _, _, bounds, _, pre = _small.unpack(n, nt, ints, floats)
        k = pre.shape[1] - 1
        raw, nb = K.budget_dp(pre, np.int64(k), np.int64(budget), (code, float(div.param), c, A, lf), bounds)
        block_of[:] = 0
        block_of[order[:k]] = np.repeat(np.arange(nb), np.diff(bounds[: nb + 1]))
    else:
        grouping = ints[2 * n : 3 * n].tolist(), ints[3 * n : 3 * n + nb].tolist()
    if renyi:
        input_div = div(u, v)
    elif terms == _small.TERMS_INF:
        input_div = math.inf
    else:
        if terms == _small.TERMS_PYTHON:
            total = math.fsum(floats[:nt].tolist())
        input_div = div.transform(max(total, 0.0))
    nb = int(nb)

    def reduced():
        order, _, _, _, bounds, _, pre = _small.unpack(n, nt, ints, floats)
        k = pre.shape[1] - 1
        red = LRReduction(
            p=pre[PX, :k],
            q=pre[QX, :k],
            members=order[:k],
            starts=np.arange(k + 1, dtype=np.int64),
            dropped=tuple(order[k:].tolist()),
            k_original=n,
        )
        b = bounds[: nb + 1].tolist()
        return red, [(b[j], b[j + 1]) for j in range(nb)]

    return float(raw), nb, METHOD_NAMES[int(method)], input_div, block_of, grouping, reduced


# ---------------------------------------------------------------------------------------------
# Large single solves (k > SCORE_CACHE_MAX_K): _kernels.solve_ws without a score cache, driven
# from Python so that a fresh process compiles only the uncached pass and the scoring kernels
# ---------------------------------------------------------------------------------------------
def _solve_uncached(pre, k, l, sc, bounds):
    """``_kernels.solve_ws`` with no score cache and no warm start, step for step.

    Every pass is ``_kernels.uncached_pass`` (the coarse start included: over its <= 1024
    positions it returns exactly what ``cached_pass`` returns, same maximiser and ties), so the
    result is the compiled ``solve_ws``'s; only the loops around the passes run as Python (a
    handful of calls per solve).  Returns ``(raw, nb, method)``.
    """
    c = sc[2]
    first = _policy.start(k, l, c)
    if first == _policy.START_SINGLE:
        bounds[0], bounds[1] = 0, k
        return K.score(pre, np.int64(0), np.int64(k), sc) / 1.0, 1, _policy.SINGLE
    if first == _policy.START_UNPENALISED:
        nb = 1
        bounds[0], bounds[1] = 0, k
    else:
        nb = int(K.best_two_blocks(pre, np.int64(k), sc, bounds))
        if k > K.COARSEN_MIN_K:
            alt = np.empty(k + 1, dtype=np.int64)
            nb_alt = _coarse_start(pre, k, sc, alt)
            if K.partition_ratio(pre, alt, np.int64(nb_alt), sc) > K.partition_ratio(
                pre, bounds, np.int64(nb), sc
            ):
                nb = nb_alt
                bounds[: nb + 1] = alt[: nb + 1]
    raw, nb = _dinkelbach_uncached(pre, np.arange(k + 1, dtype=np.int64), sc, bounds, nb)
    budget, method = _policy.settle(raw, nb, k, l, c)
    if budget > 0:
        raw, nb = K.budget_dp(pre, np.int64(k), np.int64(budget), sc, bounds)
    return float(raw), int(nb), method


def _coarse_start(pre, k, sc, bounds) -> int:
    """``_kernels._coarse_start`` (the optimum over a coarse grid of cuts, then refined)."""
    g = min(K.COARSE_GROUPS, k)
    pos = (np.arange(g + 1, dtype=np.int64) * k) // g
    bounds[0], bounds[1] = 0, k
    nb = 1
    for rnd in range(K.COARSE_REFINES + 1):
        prev = bounds[: nb + 1].copy()
        nb = _dinkelbach_uncached(pre, pos, sc, bounds, nb)[1]
        if rnd > 0 and np.array_equal(bounds[: nb + 1], prev):
            break
        w = int(_REFINE_WIDTH(k, g, nb))
        if rnd == K.COARSE_REFINES or w < 1:
            break
        # refine: allow every cut within w of a cut
        mark = np.zeros(k + 1, dtype=bool)
        mark[0] = mark[k] = True
        for j in range(1, nb):
            mark[max(0, bounds[j] - w) : min(k, bounds[j] + w) + 1] = True
        pos = np.flatnonzero(mark).astype(np.int64)
    return nb


def _dinkelbach_uncached(pre, pos, sc, bounds, nb):
    """``_kernels.dinkelbach_ws`` without a score cache or hints, step for step: ``(raw, nb)``."""
    c = sc[2]
    m = pos.shape[0] - 1
    H = np.empty(m + 1)
    cnt = np.empty(m + 1, dtype=np.int64)
    par = np.empty(m + 1, dtype=np.int64)
    cand = np.empty(m + 1, dtype=np.int64)
    GH = np.empty(m // K.GROUP + 1)
    SH = np.empty(GH.shape[0] // K.GROUP + 1)
    GS = np.empty((2, m + 1))
    GR = np.empty((4, GH.shape[0]))
    K.group_sums(pre, pos, GS)
    K.super_sums(pre, pos, GS, GR)
    hinted = False
    if c == 0.0:
        # every partition has denominator 1: one unpenalised pass is the optimum
        K.uncached_pass(pre, pos, sc, 0.0, H, cnt, par, hinted, GH, SH, GS, GR)
        nb = int(_TRACEBACK(pos, par, cnt, bounds))
        return float(K.partition_ratio(pre, bounds, np.int64(nb), sc)), nb
    lam = float(K.partition_ratio(pre, bounds, np.int64(nb), sc))
    passes = 0
    while passes < K.MAX_DINKELBACH_STEPS and not math.isinf(lam):
        K.uncached_pass(pre, pos, sc, lam * c, H, cnt, par, hinted, GH, SH, GS, GR)
        passes += 1
        hinted = True  # the previous pass's split points
        nb2 = int(_TRACEBACK(pos, par, cnt, cand))
        r = float(K.partition_ratio(pre, cand, np.int64(nb2), sc))
        if not r >= lam:
            break
        # r == lam: the pass's maximiser (fewest blocks, smallest cuts) replaces an equal one
        improved = r > lam
        lam = r
        nb = nb2
        bounds[: nb + 1] = cand[: nb + 1]
        if not improved:
            break
    return lam, nb


# ---------------------------------------------------------------------------------------------
# The table path (k <= TABLE_MAX_K): same decisions as _kernels.solve_ws, over exact tables
# ---------------------------------------------------------------------------------------------
def score_table(
    p: np.ndarray,
    q: np.ndarray,
    c: float,
    A: float,
    lf: float,
    code: int,
    param: float,
    user: FDivergence | None = None,
) -> np.ndarray:
    r"""Every interval score :math:`\mu'[t:i)`, 0 <= t < i <= k, packed at ``i (i - 1) / 2 + t``.

    The block sums are ``reduction._Prefix.sums`` (compiled: :func:`ldpopt.spr._kernels.table_args`)
    and the scores ``divergences.perspective_array`` of ``(c + A dP, c + A dQ, A (dP - dQ))``:
    the operations by which ``reference._dp_readable`` scores the same blocks, so every entry equals
    the readable program's score bit for bit.  ``user``: a user's divergence, scored by its own
    vectorised ``perspective`` (the readable program's call) instead of the built-in ``code``.
    """
    k = p.shape[0]
    pre = _Prefix(p, q).table
    S = np.empty(k * (k + 1) // 2)
    m = min(S.shape[0], TABLE_CHUNK + k)  # a chunk of end points holds at most this many blocks
    x = np.empty(m)
    y = np.empty(m)
    d = np.empty(m)
    i0 = 1
    while i0 <= k:
        # end points i0 .. i1-1: their blocks fill S[j0:j1]
        j0 = i0 * (i0 - 1) // 2
        # the largest i1 with i1 (i1 - 1) / 2 <= j0 + TABLE_CHUNK, at least one end point
        i1 = min(k + 1, max(i0 + 1, (1 + math.isqrt(1 + 8 * (j0 + TABLE_CHUNK))) // 2))
        n = i1 * (i1 - 1) // 2 - j0
        K.table_args(pre, c, A, i0, i1, x, y, d)
        if user is None:
            S[j0 : j0 + n] = perspective_array(code, param, x[:n], y[:n], d[:n], lf)
        else:
            S[j0 : j0 + n] = user.perspective(x[:n], y[:n], d[:n], log_floor=lf)
        i0 = i1
    return S


def _at(a: int, b: int) -> int:
    """Index of the block [a, b) in a packed score table."""
    return b * (b - 1) // 2 + a


def _ratio(S: np.ndarray, bounds: list, c: float) -> float:
    """``_kernels.partition_ratio`` over the table: scores summed left to right, / (1 + (s-1) c)."""
    total = float(S[_at(bounds[0], bounds[1])])
    for j in range(1, len(bounds) - 1):
        total = total + float(S[_at(bounds[j], bounds[j + 1])])
    return total / (1.0 + (len(bounds) - 2) * c)


def _traceback(par: np.ndarray, cnt: np.ndarray, k: int) -> list:
    """Boundaries of the pass's optimal partition: ``_kernels._traceback`` run as Python (O(blocks);
    compiling it would only add to the first call's compile time)."""
    out = np.empty(k + 1, dtype=np.int64)
    nb = _TRACEBACK(np.arange(k + 1), par, cnt, out)
    return [int(b) for b in out[: nb + 1]]


def _best_two_blocks(S: np.ndarray, k: int, c: float) -> list:
    """``_kernels.best_two_blocks`` over the table (the first t of the largest two-block value
    above the one-block value; NaNs never win)."""
    best = float(S[_at(0, k)])
    t = np.arange(1, k)
    with np.errstate(all="ignore"):
        v = (S[t * (t - 1) // 2] + S[k * (k - 1) // 2 + t]) / (1.0 + c)
    v = np.where(np.isnan(v), -np.inf, v)
    j = int(np.argmax(v))
    if v[j] > best:
        return [0, j + 1, k]
    return [0, k]


def _dinkelbach_table(S: np.ndarray, k: int, c: float, bounds: list):
    """``_kernels.dinkelbach_ws`` over the table: same start, steps and stopping rule."""
    H = np.empty(k + 1)
    cnt = np.empty(k + 1, dtype=np.int64)
    par = np.empty(k + 1, dtype=np.int64)
    if c == 0.0:
        # every partition has denominator 1: one unpenalised pass is the optimum
        K.table_pass(S, k, 0.0, H, cnt, par)
        bounds = _traceback(par, cnt, k)
        return _ratio(S, bounds, c), bounds
    lam = _ratio(S, bounds, c)
    passes = 0
    while passes < K.MAX_DINKELBACH_STEPS and not math.isinf(lam):
        K.table_pass(S, k, lam * c, H, cnt, par)
        passes += 1
        cand = _traceback(par, cnt, k)
        r = _ratio(S, cand, c)
        if not r >= lam:
            break
        # r == lam: the pass's maximiser (fewest blocks, smallest cuts) replaces an equal one
        improved = r > lam
        lam = r
        bounds = cand
        if not improved:
            break
    return lam, bounds


def _budget_table(S: np.ndarray, k: int, l: int, c: float):
    F = np.full((l + 1, k + 1), -np.inf)
    par = np.zeros((l + 1, k + 1), dtype=np.int64)
    bounds = np.zeros(l + 1, dtype=np.int64)
    raw, nb = K.table_budget_dp(S, k, l, c, F, par, bounds)
    return float(raw), [int(b) for b in bounds[: nb + 1]]


def _solve_table(p, q, k, l, code, param, c, A, lf):
    """``(raw, bounds, method code)``: the decisions of ``_kernels.solve_ws``, over exact tables."""
    return _solve_score_table(score_table(p, q, c, A, lf, code, param), k, l, c)


def solve_scores(S: np.ndarray, k: int, l: int, c: float):
    r"""``(raw, cuts)``: the optimum over partitions with at most ``l`` blocks of
    :math:`\sum_t S[B_t] / (1 + (s-1) c)` for a given packed score table ``S`` (as
    :func:`score_table`), by the table path (used for Renyi far from S = 1, ``solve._solve_power_far``).
    """
    raw, bounds, _ = _solve_score_table(np.ascontiguousarray(S, dtype=np.float64), k, min(max(l, 1), k), c)
    return float(raw), [(int(bounds[j]), int(bounds[j + 1])) for j in range(len(bounds) - 1)]


def _solve_score_table(S, k, l, c):
    """``(raw, bounds, method code)`` over a score table, with the decisions of ``_policy``."""
    first = _policy.start(k, l, c)
    if first == _policy.START_SINGLE:
        return float(S[_at(0, k)]) / 1.0, [0, k], _policy.SINGLE
    bounds = [0, k] if first == _policy.START_UNPENALISED else _best_two_blocks(S, k, c)
    raw, bounds = _dinkelbach_table(S, k, c, bounds)
    budget, method = _policy.settle(raw, len(bounds) - 1, k, l, c)
    if budget > 0:
        raw, bounds = _budget_table(S, k, budget, c)
    return raw, bounds, method
