r"""Batched exact solves: many pairs :math:`(P_0, P_1)` times a grid of privacy levels.

:func:`sweep` computes the optimal utility

.. math:: \max_{Q\ \varepsilon\text{-LDP},\ \le l \text{ outputs}} D_f(Q^\top P_0 \,\|\, Q^\top P_1)

(SPR paper, eq. 3/4, solved through Corollary 3.2 and Prop. 3.3) for every pair and every
eps of a grid, e.g. the Figure-1 workload (T = 100 pairs, 100 eps values).  It returns the
same numbers as looping :func:`ldpopt.optimal_mechanism`, but

* validates, sorts and reduces each pair and builds its prefix and block sums once for all eps;
* solves each pair's eps values in decreasing order in compiled code, every solve warm-started
  from its neighbour and with score bounds carried down the grid (``docs/fast.md``), the pairs
  on all cores (the kernel releases the GIL; ``NUMBA_NUM_THREADS`` threads);
* shows a rich progress bar when the sweep runs for more than a couple of seconds.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from ldpopt._numerics import rescale
from ldpopt._progress import ProgressBar
from ldpopt._validation import check_eps, check_labelled_pair, check_positive_int, is_real
from ldpopt.divergences import CODE_POWER_DOWN, CODE_POWER_UP, FDivergence, get_divergence, is_chernoff
from ldpopt.errors import LdpoptWarning
from ldpopt.spr import _policy, chernoff
from ldpopt.spr.reduction import _Prefix, _reduce
from ldpopt.spr.reference import _dp_readable
from ldpopt.spr.solve import _compiled, _partition_value, _solve_power_far

__all__ = ["SweepParts", "SweepResult", "size_class", "sweep", "sweep_parts", "table_path_pairs"]

#: the progress bar appears once a sweep has run this long (seconds) with ``progress=None``
PROGRESS_DELAY = 2.0
#: an item (one instance, consecutive eps solved with warm starts) spans at most this / k^2 eps
ITEM_WORK = 20_000_000
#: sweeps of at most this many cells x k^2 are solved cell by cell by the single solver (a few
#: ms of work; the batched kernels would cost their compilation in a fresh process)
SMALL_SWEEP_WORK = 250_000

_warned_user_divergence = False


@dataclass(frozen=True, eq=False)  # arrays: no element-wise __eq__
class SweepResult:
    """Optimal values of a grid of (pair, eps) problems.

    Attributes
    ----------
    values : ndarray, shape (T, E)
        ``values[t, e]`` is the optimal utility for pair t at ``eps_grid[e]`` (the reported
        value: the Renyi divergence itself for ``renyi``), as
        ``optimal_mechanism(p0s[t], p1s[t], eps_grid[e], divergence, max_outputs).value``.
    num_outputs : ndarray of int, shape (T, E)
        Number of outputs (blocks) of the optimal mechanism found.
    partitions : list of list of tuple, or None
        ``partitions[t][e]`` is the optimal partition (blocks of original symbol indices, in
        likelihood-ratio order, as ``OptimalMechanismResult.partition``); ``None`` unless
        ``return_partitions=True``.
    eps_grid : ndarray, shape (E,)
    divergence : str
        Name of the utility divergence.
    max_outputs : int or None
        The output budget asked for.
    input_divergence : ndarray, shape (T,)
        :math:`D_f(P_0\\|P_1)` of every pair (the non-private value).
    method : str
        ``"fast"`` (compiled kernels) or ``"dp"`` (readable program: user divergences over more
        than 1024 reduced symbols).
    """

    values: np.ndarray
    num_outputs: np.ndarray
    partitions: list | None
    eps_grid: np.ndarray
    divergence: str
    max_outputs: int | None = None
    input_divergence: np.ndarray | None = None
    method: str = "fast"

    @property
    def normalized_values(self) -> np.ndarray:
        """``values / input_divergence`` per pair, in [0, 1] (nan where that is 0 or infinite).

        Clipped to [0, 1] as ``OptimalMechanismResult.normalized_value`` (data processing).
        """
        d = np.asarray(self.input_divergence, dtype=float)[:, None]
        ok = np.isfinite(d) & (d != 0) & np.isfinite(self.values)
        with np.errstate(all="ignore"):
            return np.where(ok, np.clip(self.values / np.where(ok, d, 1.0), 0.0, 1.0), np.nan)

    @property
    def shape(self) -> tuple[int, int]:
        """(number of pairs, number of eps values)."""
        return self.values.shape


def _as_pairs(p0s: Any, p1s: Any) -> tuple[list, list]:
    out = []
    for name, ps in (("p0s", p0s), ("p1s", p1s)):
        if isinstance(ps, (str, bytes, dict)) or not hasattr(ps, "__len__"):
            raise TypeError(
                f"{name} must be a 2-D array or a sequence of distributions, got {type(ps).__name__}"
            )
        if isinstance(ps, np.ndarray) and ps.ndim != 2:
            raise ValueError(
                f"{name} must be 2-D (one distribution per row), got an array of shape {ps.shape}"
            )
        items = list(ps)
        if len(items) == 0:
            raise ValueError(f"{name} must contain at least one distribution")
        if all(is_real(x) for x in items):
            raise ValueError(f"{name} must be a sequence of distributions (for one pair use [p0] and [p1])")
        out.append(items)
    if len(out[0]) != len(out[1]):
        raise ValueError(
            f"p0s and p1s must hold the same number of distributions, got {len(out[0])} and {len(out[1])}"
        )
    return out[0], out[1]


def _as_eps_grid(eps_grid: Any) -> np.ndarray:
    if isinstance(eps_grid, (str, bytes)) or is_real(eps_grid) or not hasattr(eps_grid, "__len__"):
        raise TypeError(f"eps_grid must be a 1-D sequence of privacy levels, got {eps_grid!r}")
    if isinstance(eps_grid, np.ndarray) and eps_grid.ndim != 1:
        raise ValueError(f"eps_grid must be 1-D, got an array of shape {eps_grid.shape}")
    items = eps_grid.tolist() if isinstance(eps_grid, np.ndarray) else list(eps_grid)
    if len(items) == 0:
        raise ValueError("eps_grid must contain at least one privacy level")
    return np.array([check_eps(e, name=f"eps_grid[{j}]") for j, e in enumerate(items)], dtype=float)


def sweep(
    p0s: Any,
    p1s: Any,
    eps_grid: Sequence[float] | np.ndarray,
    divergence: str | FDivergence = "kl",
    max_outputs: int | None = None,
    return_partitions: bool = False,
    progress: bool | None = None,
    *,
    normalize: bool = False,
) -> SweepResult:
    r"""Optimal eps-LDP utilities for many pairs and a grid of privacy levels.

    For every pair :math:`(P_0^{(t)}, P_1^{(t)})` and every :math:`\varepsilon_e` of the grid,
    the exact optimum of :math:`D_f(Q^\top P_0\|Q^\top P_1)` over eps-LDP channels Q with at
    most ``max_outputs`` outputs (SPR paper eq. 3/4; Corollary 3.2, Prop. 3.3):
    ``values[t, e] == optimal_mechanism(p0s[t], p1s[t], eps_grid[e], divergence,
    max_outputs).value``.

    Parameters
    ----------
    p0s, p1s : 2-D array_like or sequence of distributions
        T pairs; pair t is ``(p0s[t], p1s[t])`` (arrays, dicts or Series, as
        :func:`ldpopt.optimal_mechanism` takes them; alphabets may differ between pairs).
    eps_grid : 1-D sequence of float
        Privacy levels, each > 0 (``math.inf`` allowed).
    divergence : str or FDivergence
        Any built-in name or factory (``"kl"``, ``"tv"``, ``"egamma:1.5"``, ``"renyi:2"``...);
        a user's Python :class:`~ldpopt.FDivergence` takes the single solver's table path (its
        own vectorised perspective scores every block, the compiled passes solve: the readable
        program's optimum exactly) up to 1024 reduced symbols per pair, and the readable solver
        above (with a one-time :class:`~ldpopt.errors.LdpoptWarning`).
    max_outputs : int, optional
        Output budget l for every cell (``None``: no budget).
    return_partitions : bool
        Also return every optimal partition (costs Python objects per cell).
    progress : bool or None
        ``None``: show a progress bar once the sweep has run for 2 s; ``True``: from the start;
        ``False``: never.
    normalize : bool
        Rescale each distribution to sum to 1 instead of rejecting it.

    Returns
    -------
    SweepResult
    """
    div = get_divergence(divergence)
    l_user = check_positive_int(max_outputs, "max_outputs", allow_none=True)
    if not isinstance(return_partitions, (bool, np.bool_)):
        raise TypeError(f"return_partitions must be True or False, got {return_partitions!r}")
    if progress is not None and not isinstance(progress, (bool, np.bool_)):
        raise TypeError(f"progress must be True, False or None, got {progress!r}")
    a_list, b_list = _as_pairs(p0s, p1s)
    grid = _as_eps_grid(eps_grid)
    pairs = [
        check_labelled_pair(a, b, names=(f"p0s[{t}]", f"p1s[{t}]"), normalize=normalize)[:2]
        for t, (a, b) in enumerate(zip(a_list, b_list, strict=False))
    ]
    reds = [_reduce(u, v) for u, v in pairs]
    input_div = np.array([div(u, v) for u, v in pairs], dtype=float)
    T, E = len(reds), grid.shape[0]
    ls = np.array([r.k if l_user is None else min(l_user, r.k) for r in reds], dtype=np.int64)

    if is_chernoff(div):
        bar = _progress_bar(T * E, progress, f"sweep {T} x {E} (chernoff)")
        try:
            raw, nb, bounds = chernoff.sweep_cells(reds, ls, grid, bool(return_partitions), bar.advance)
        finally:
            bar.close()
        method = "branch_and_bound"
    elif div.is_builtin and _small(reds, E):
        raw, nb, bounds = _sweep_small(reds, ls, grid, div, bool(return_partitions))
        method = "fast"
    elif div.is_builtin:
        raw, nb, bounds = _sweep_fast(reds, ls, grid, div, bool(return_partitions), progress)
        method = "fast"
    elif max(r.k for r in reds) <= _policy.USER_TABLE_MAX_K:
        # a user's divergence: the table path, every block scored by its own vectorised
        # perspective (optimal_mechanism's path for it: the readable program's optimum exactly)
        raw, nb, bounds = _sweep_small(reds, ls, grid, div, bool(return_partitions), progress)
        method = "fast"
    else:
        _warn_user_divergence(div)
        raw, nb, bounds = _sweep_readable(reds, ls, grid, div, bool(return_partitions), progress)
        method = "dp"

    if div.value_transform is None:
        values = raw.copy()
    else:
        values = np.array([div.transform(float(x)) for x in raw.reshape(-1)], dtype=float).reshape(T, E)
    _resolve_far_cells(reds, ls, grid, div, raw, values, nb, bounds)
    # a divergence of two output distributions is >= 0: a negative value is rounding (only a
    # user's generator, whose terms change sign, can produce one)
    values = np.where(values < 0.0, 0.0, values)
    partitions = None
    if return_partitions:
        partitions = [reds[t].lift_many(bounds[t]) for t in range(T)]
    for arr in (values, nb, grid, input_div):
        arr.setflags(write=False)
    return SweepResult(
        values=values,
        num_outputs=nb,
        partitions=partitions,
        eps_grid=grid,
        divergence=div.name,
        max_outputs=l_user,
        input_divergence=input_div,
        method=method,
    )


def _resolve_far_cells(reds, ls, grid, div, raw, values, nb, bounds) -> None:
    """Renyi cells whose centred optimum does not determine D_alpha (``_policy.power_far``: an
    overflow for alpha > 1, a Renyi sum below 1/2 for alpha < 1) are solved again as
    ``optimal_mechanism`` does, on the scaled Renyi sum (``solve._solve_power_far``); ``values``,
    ``nb`` and ``bounds`` are updated in place."""
    if div.code not in (CODE_POWER_UP, CODE_POWER_DOWN):
        return
    for t, e in zip(
        *np.nonzero([[_policy.power_far(div, float(r)) for r in row] for row in raw]), strict=True
    ):
        r = reds[t]
        eps = float(grid[e])
        cuts = _solve_power_far(
            r.p, r.q, eps, div, int(ls[t]), _near_cuts(r, bounds, t, e, eps, div, ls), True
        )
        values[t, e] = _partition_value(r.p, r.q, eps, div, cuts, float(raw[t, e]))
        nb[t, e] = len(cuts)
        if bounds is not None:
            bounds[t][e] = cuts


def _near_cuts(r, bounds, t, e, eps, div, ls):
    """The sweep's own partition of cell (t, e), or that of the single compiled solve."""
    if bounds is not None:
        return bounds[t][e]
    return _compiled().solve(r.p, r.q, eps, div, int(ls[t]))[1]


def _warn_user_divergence(div: FDivergence) -> None:
    global _warned_user_divergence
    if not _warned_user_divergence:
        _warned_user_divergence = True
        warnings.warn(
            f"divergence {div.name!r} is a Python FDivergence and a pair has more than "
            f"{_policy.USER_TABLE_MAX_K} reduced symbols; sweep falls back to the readable O(l k^2) "
            "program (same optimum, much slower). Use a built-in name or factory "
            "(kl, reverse_kl, tv, chi2, hellinger, js, egamma, renyi) for speed.",
            LdpoptWarning,
            stacklevel=3,
        )


def _progress_bar(total: int, mode: bool | None, label: str) -> ProgressBar:
    """``mode`` None: appears after PROGRESS_DELAY seconds; True: at once; False: never."""
    return ProgressBar(total, label, enabled=mode is not False, delay=0.0 if mode else PROGRESS_DELAY)


def _work_items(ks: np.ndarray, E: int, threads: int) -> list[tuple[int, int, int]]:
    """Split the (pair, eps) grid into items (t, e0, e1): pair t at the eps ranks e0..e1-1.

    An item is solved sequentially with warm starts and carried bounds, so items should be
    long; but one covers at most ITEM_WORK / k^2 eps values (progress stays live for large
    alphabets) and pairs are split further until there are >= 2 items per thread.
    """
    T = ks.shape[0]
    chunks = max(1, min(E, -(-2 * threads // T)))
    items = []
    for t in range(T):
        k = int(ks[t])
        span = max(1, min(-(-E // chunks), ITEM_WORK // max(1, k * k)))
        for e0 in range(0, E, span):
            items.append((t, e0, min(E, e0 + span)))
    return items


def _threads() -> int:
    import numba  # heavy: only once a compiled sweep runs

    # read the environment too: a worker process may set NUMBA_NUM_THREADS after numba was imported
    env = os.environ.get("NUMBA_NUM_THREADS", "")
    n = int(env) if env.isdigit() else int(numba.config.NUMBA_NUM_THREADS)  # type: ignore[attr-defined]  # numba.config sets its options at run time
    # and no more than numba's thread-local limit: a caller running sweeps in several threads of
    # its own (the `threads` scheduler of ldpopt.run_sweep) sets numba.set_num_threads(1) in each
    return max(1, min(n, numba.get_num_threads()))


def _sweep_fast(reds, ls, grid, div, keep_bounds, progress):
    K = _compiled().K  # the compiled kernels
    T, E = len(reds), grid.shape[0]
    ks = np.array([r.k for r in reds], dtype=np.int64)
    pre_off = np.zeros(T + 1, dtype=np.int64)
    pre_off[1:] = np.cumsum(K.PRE_ROWS * (ks + 1))
    pres = np.empty(int(pre_off[-1]))
    for t, r in enumerate(reds):
        table = _Prefix(r.p, r.q).table
        pres[pre_off[t] : pre_off[t + 1]] = table.reshape(-1)
    scal = [rescale(float(e)) for e in grid]
    cs = np.array([s[0] for s in scal])
    As = np.array([s[1] for s in scal])
    lfs = np.array([s[2] for s in scal])
    order = np.argsort(-grid, kind="stable").astype(np.int64)  # decreasing eps: bounds carry down
    raw = np.empty((T, E))
    nb = np.empty((T, E), dtype=np.int64)
    meth = np.empty((T, E), dtype=np.int64)
    if keep_bounds:
        sizes = np.repeat(ks + 1, E)
        bounds_off = np.zeros(T * E, dtype=np.int64)
        bounds_off[1:] = np.cumsum(sizes)[:-1]
        bounds = np.empty(int(sizes.sum()), dtype=np.int64)
        bounds_off = bounds_off.reshape(T, E)
    else:
        bounds_off = np.zeros((T, E), dtype=np.int64)
        bounds = np.empty(0, dtype=np.int64)
    # the kernel specialised to the divergence (its perspective and bound alone are compiled: a
    # cold sweep compiles less, a warm one runs ~5% faster; each divergence compiles its own)
    code, param = K.LiteralCode(div.code), float(div.param)
    threads = _threads()
    items = _work_items(ks, E, threads)
    parts = sweep_parts(ks, ls, grid, div)
    redo = []  # items that needed a part of the solver their variant was compiled without

    def solve(item, parts):
        t, e0, e1 = item
        # the kernel releases the GIL: items of different threads run on different cores
        return K.solve_item(
            pres,
            pre_off,
            ks,
            ls,
            t,
            e0,
            e1,
            order,
            code,
            param,
            cs,
            As,
            lfs,
            raw,
            nb,
            meth,
            bounds,
            bounds_off,
            *parts.kernel_args(),
        )

    def run(item):
        if not solve(item, parts):
            redo.append(item)  # list.append is atomic: safe from the pool's threads
        return item[2] - item[1]

    bar = _progress_bar(T * E, progress, f"sweep {T} x {E} ({div.name})")
    try:
        if threads == 1 or len(items) == 1:
            for item in items:
                bar.advance(run(item))
        else:
            with ThreadPoolExecutor(max_workers=threads) as pool:
                for count in pool.map(run, items):
                    bar.advance(count)
    finally:
        bar.close()
    # rare (a Renyi score that overflows, a budget that binds where none was expected): the
    # whole item again with the budget program, the same computation as the full kernel's
    full = parts.with_budget()
    for item in sorted(redo):
        if not solve(item, full):
            raise RuntimeError(f"sweep: item {item} was not solved by the kernel variant {full}")
    bounds_list = None
    if keep_bounds:
        bounds_list = []
        for t, k in enumerate(ks.tolist()):
            b0 = int(bounds_off[t, 0])  # pair t's cells: E consecutive rows of k + 1 entries
            rows = bounds[b0 : b0 + E * (k + 1)].reshape(E, k + 1)
            bounds_list.append(_cut_lists(rows, nb[t], order))
    return raw, nb, bounds_list


#: a centred power score (Renyi, alpha > 1) at privacy level eps is at most about
#: exp((alpha - 1) eps) (x <= 1, x / y <= e^eps with y >= c = e^-eps): below this exponent it
#: does not overflow (log of the largest double: 709.78; a margin for the other factors).  Only
#: a prediction of which kernel variant to compile: a cell that overflows all the same is solved
#: again with the budget program
POWER_OVERFLOW_EXP = 700.0


@dataclass(frozen=True)
class SweepParts:
    """Which optional parts of the solver a sweep's compiled kernel is built with.

    A cold sweep compiles only these (``docs/fast.md``, "What a cold sweep compiles"); a cell
    that needs a part left out is solved again with the budget program added (the k-based parts
    are exact: they depend on the alphabet sizes alone).

    Attributes
    ----------
    coarse : bool
        The coarse start (some pair has more than ``COARSEN_MIN_K`` reduced symbols).
    uncached : bool
        The pass without a score cache (some pair has more than ``SCORE_CACHE_MAX_K``).
    budget : bool
        The budget program (a budget may bind, an eps has c = e^-eps below ``_policy.TIE_C``,
        or a Renyi score of order > 1 may overflow).
    """

    coarse: bool
    uncached: bool
    budget: bool

    def kernel_args(self) -> tuple[bool | None, bool | None, bool | None]:
        """``solve_item``'s ``with_coarse, with_uncached, with_budget``: True, or None (left out)."""
        return _present(self.coarse), _present(self.uncached), _present(self.budget)

    def with_budget(self) -> SweepParts:
        """These parts and the budget program (the variant that re-solves an item)."""
        return SweepParts(self.coarse, self.uncached, True)


def _present(part: bool) -> bool | None:
    return True if part else None


def size_class(k: int) -> int:
    """The parts of the solver a pair of ``k`` reduced symbols needs: 0 the score cache alone
    (k <= ``SCORE_CACHE_MAX_K``), 1 the pass without it, 2 the coarse start too
    (k > ``COARSEN_MIN_K``).  A sweep's kernel is built for its largest class (:func:`sweep_parts`)."""
    K = _compiled().K
    return int(k > K.SCORE_CACHE_MAX_K) + int(k > K.COARSEN_MIN_K)


def sweep_parts(ks: np.ndarray, ls: np.ndarray, grid: np.ndarray, div: FDivergence) -> SweepParts:
    """The parts of the solver the compiled sweep of pairs with ``ks`` reduced symbols, budgets
    ``ls`` (``min(max_outputs, k)``) and privacy levels ``grid`` of ``div`` is built with."""
    cls = size_class(int(np.max(ks)))
    eps_max = float(np.max(grid))
    budget = bool(np.any((ls > 1) & (ls < ks)))  # l = 1 is a single block, no program
    # c = e^-eps below TIE_C (at the largest eps: c is the smallest): near-ties settled by it
    budget = budget or rescale(eps_max)[0] < _policy.TIE_C
    if div.code == CODE_POWER_UP:
        budget = budget or (float(div.param) - 1.0) * eps_max > POWER_OVERFLOW_EXP
    return SweepParts(coarse=cls >= 2, uncached=cls >= 1, budget=budget)


def _cut_lists(b: np.ndarray, nbs: np.ndarray, order: np.ndarray) -> list:
    """The cuts ``[(b0, b1), (b1, b2), ...]`` of one pair's cells: cell e's boundaries are
    ``b[e, : nbs[e] + 1]`` (the rest of the row is unused).  A cell whose boundaries equal those of
    the cell before it in ``order`` (the solve order: most neighbours on the eps grid share their
    partition) shares that cell's list, so each run of equal partitions is built once."""
    E, width = b.shape
    rows = np.where(np.arange(width) <= nbs[:, None], b, -1)[order]  # unused entries masked
    same = np.zeros(E, dtype=bool)
    same[1:] = (rows[1:] == rows[:-1]).all(axis=1)
    out: list = [None] * E
    cuts: list = []
    for e, repeat, n in zip(order.tolist(), same.tolist(), nbs[order].tolist(), strict=True):
        if not repeat:
            cell = b[e, : n + 1].tolist()
            cuts = list(zip(cell[:-1], cell[1:], strict=True))
        out[e] = cuts
    return out


def table_path_pairs(k: int, num_eps: int) -> int:
    """The most pairs a :func:`sweep` of a built-in divergence (Chernoff information aside: its
    own solver) at ``num_eps`` privacy levels solves by the table path, cell by cell with the
    single solver's small kernels, when its largest pair has ``k`` reduced symbols: at most
    ``SMALL_SWEEP_WORK`` cells x k^2, and none above ``k = 1024`` (the table path's limit).  A
    sweep of more pairs takes the batched kernels.  The results are the same either way; the
    compiled kernels differ (``ldpopt.sweeps.chunks.warmup_task`` loads the ones its chunks use).
    """
    k = check_positive_int(k, "k")
    num_eps = check_positive_int(num_eps, "num_eps")
    if k > _policy.USER_TABLE_MAX_K:
        return 0
    return SMALL_SWEEP_WORK // (num_eps * k * k)


def _small(reds, E: int) -> bool:
    """True for a sweep of at most ``SMALL_SWEEP_WORK`` cells x k^2 (every k <= the table path's)."""
    return len(reds) <= table_path_pairs(max(r.k for r in reds), E)


def _sweep_small(reds, ls, grid, div, keep_bounds, progress=False):
    """A sweep cell by cell through the table path of the single solver (``_fast.solve(...,
    path="table")``, up to 1024 symbols): small sweeps of a built-in divergence (its three small
    kernels, not the batched ones, so a first sweep in a fresh process compiles about a second
    instead of the batched kernels' 10-20 s) and every sweep of a user's divergence (scored by its
    own vectorised perspective: the readable program's optimum and partition exactly)."""
    T, E = len(reds), grid.shape[0]
    raw = np.empty((T, E))
    nb = np.empty((T, E), dtype=np.int64)
    cuts_all: list[list[Any]] | None = [[None] * E for _ in range(T)] if keep_bounds else None
    solve = _compiled().solve
    bar = _progress_bar(T * E, progress, f"sweep {T} x {E} ({div.name})")
    try:
        for t, r in enumerate(reds):
            for e, eps in enumerate(grid):
                value, cuts, _ = solve(r.p, r.q, float(eps), div, int(ls[t]), path="table")
                raw[t, e] = value
                nb[t, e] = len(cuts)
                if cuts_all is not None:
                    cuts_all[t][e] = cuts
                bar.advance(1)
    finally:
        bar.close()
    return raw, nb, cuts_all


def _sweep_readable(reds, ls, grid, div, keep_bounds, progress):
    T, E = len(reds), grid.shape[0]
    raw = np.empty((T, E))
    nb = np.empty((T, E), dtype=np.int64)
    cuts_all: list[list[Any]] | None = [[None] * E for _ in range(T)] if keep_bounds else None
    bar = _progress_bar(T * E, progress, f"sweep {T} x {E} ({div.name}, readable)")
    try:
        for t, r in enumerate(reds):
            for e, eps in enumerate(grid):
                value, cuts = _dp_readable(r.p, r.q, float(eps), div, int(ls[t]))
                raw[t, e] = value
                nb[t, e] = len(cuts)
                if cuts_all is not None:  # keep_bounds
                    cuts_all[t][e] = cuts
                bar.advance(1)
    finally:
        bar.close()
    return raw, nb, cuts_all
