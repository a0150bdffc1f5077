"""Compile the solver's kernels ahead of use, into numba's on-disk cache: :func:`warm_up`.

The compiled solvers are numba kernels, compiled on first use and cached on disk (in
``NUMBA_CACHE_DIR``, else next to the package's sources), so every later process loads them in
well under a second.  :func:`warm_up` (``ldpopt warmup``) pays that first compile at a moment
of the user's choosing - a container image's build, a CI job's set-up - instead of at the first
call.  It also switches small single solves (at most ``SCORE_CACHE_MAX_K`` symbols) to their
fastest path: the score-cache kernels answer them once they are compiled or cached; until then
the table path does, whose few kernels compile in well under a second
(``ldpopt.spr._fast.PRUNED_PATH``; large solves likewise while their table fits).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from numba.core import config, event

from ldpopt._validation import short_repr
from ldpopt.divergences import FDivergence, get_divergence, is_chernoff
from ldpopt.spr import _fast, _kernels
from ldpopt.spr.grid import SMALL_SWEEP_WORK, sweep
from ldpopt.spr.solve import optimal_mechanism

__all__ = ["PATHS", "WarmUpResult", "warm_up"]

#: what :func:`warm_up` can compile: ``small`` the single solves of at most
#: ``SCORE_CACHE_MAX_K`` symbols (with and without a binding budget), ``large`` those above it
#: (the coarse start included), ``sweep`` the batched :func:`ldpopt.sweep` of alphabets up to
#: ``SCORE_CACHE_MAX_K`` and eps up to 27.6, without and with an output budget (the two
#: variants of its kernel such a sweep takes: ``docs/fast.md``, "What a cold sweep compiles")
PATHS = ("small", "large", "sweep")
#: symbols of the instance of each path (``large``: past the coarse start's threshold)
_SMALL_K = 40
_LARGE_K = _kernels.COARSEN_MIN_K + 4
_SWEEP_PAIRS = 3
_SWEEP_K = 200
#: the warm-up sweep's output budget (< _SWEEP_K: the variant with the budget program)
_SWEEP_BUDGET = 2
#: eps grid of the warm-up sweep: enough cells to take the batched kernel, not the small-sweep path
_SWEEP_EPS = tuple(0.5 * (i + 1) for i in range(int(SMALL_SWEEP_WORK // (_SWEEP_PAIRS * _SWEEP_K**2)) + 2))


@dataclass(frozen=True)
class WarmUpResult:
    """What :func:`warm_up` did.

    Attributes
    ----------
    seconds : float
        Wall time of the warm-up.
    compiled : int
        Kernels numba compiled (0 when every one was loaded from the on-disk cache).
    divergences : tuple of str
        The divergences whose kernels were compiled.
    paths : tuple of str
        The paths compiled (see :data:`PATHS`).
    cache_dir : str
        Where numba keeps the compiled kernels (``NUMBA_CACHE_DIR``, or ``""``: next to the
        package's sources).
    """

    seconds: float
    compiled: int
    divergences: tuple[str, ...]
    paths: tuple[str, ...]
    cache_dir: str


def _divergences(divergences) -> list[FDivergence]:
    items = [divergences] if isinstance(divergences, (str, FDivergence)) else divergences
    if not isinstance(items, Iterable):
        raise TypeError(f"divergences must be a name or a sequence of names, got {short_repr(divergences)}")
    divs = [get_divergence(d) for d in items]
    if not divs:
        raise ValueError("divergences must name at least one divergence, got an empty sequence")
    for d in divs:
        if not d.is_builtin:
            raise ValueError(
                f"divergences: {d.name!r} is a user-defined divergence; warm_up compiles the built-in "
                "ones (a user's divergence takes the table path, compiled on first use)"
            )
    return divs


def _paths(paths) -> tuple[str, ...]:
    if not isinstance(paths, (str, Iterable)):
        raise TypeError(f"paths must be a name or a sequence of names from {PATHS}, got {short_repr(paths)}")
    items = (paths,) if isinstance(paths, str) else tuple(paths)
    bad = [p for p in items if p not in PATHS]
    if bad or not items:
        raise ValueError(f"paths must be a non-empty selection of {PATHS}, got {paths!r}")
    return items


def _pair(k: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    return rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))


def _small(div: FDivergence, rng: np.random.Generator) -> None:
    p, q = _pair(_SMALL_K, rng)
    if is_chernoff(div):
        optimal_mechanism(p, q, 2.0, div)
        return
    _fast.solve_small(p, q, 2.0, div, None)
    _fast.solve_small(p, q, 10.0, div, 2)  # a binding budget: the budget program
    _fast.solve(p, q, 2.0, div, _SMALL_K, path="pruned")  # the score-cache solve called from Python


def _large(div: FDivergence, rng: np.random.Generator) -> None:
    p, q = _pair(_LARGE_K, rng)
    optimal_mechanism(p, q, 2.0, div)
    optimal_mechanism(p, q, 10.0, div, 3)


def _sweep(div: FDivergence, rng: np.random.Generator) -> None:
    """The batched kernel's variants of a typical sweep (``grid.sweep_parts``): alphabets up to
    ``SCORE_CACHE_MAX_K`` and eps up to 27.6, without and with an output budget below k."""
    pairs = [_pair(_SWEEP_K, rng) for _ in range(_SWEEP_PAIRS)]
    P, Q = np.array([p for p, _ in pairs]), np.array([q for _, q in pairs])
    sweep(P, Q, _SWEEP_EPS, div, progress=False)
    sweep(P, Q, _SWEEP_EPS, div, max_outputs=_SWEEP_BUDGET, progress=False)


_RUN = {"small": _small, "large": _large, "sweep": _sweep}


def warm_up(divergences="kl", *, paths=PATHS) -> WarmUpResult:
    """Compile the kernels of ``divergences`` on ``paths`` into numba's on-disk cache.

    Parameters
    ----------
    divergences : str, FDivergence or sequence of them
        Built-in divergences (``"kl"``, ``["kl", "js"]``, ``"chernoff"``...).  The large single
        solve and the sweep compile kernels specialised to each divergence; the small path shares
        one compile.
    paths : str or sequence of str, keyword-only
        A selection of :data:`PATHS` (default: all).

    Returns
    -------
    WarmUpResult
        The wall time and the number of kernels compiled (0 when the cache already held them).

    Notes
    -----
    Later processes on the same machine (same ``NUMBA_CACHE_DIR``, same ldpopt and numba) load
    the kernels instead of compiling them, and small single solves take the score-cache kernels
    (``ldpopt.spr._fast.PRUNED_PATH``).  Solves here use fixed random instances; their results
    are discarded.
    """
    divs = _divergences(divergences)
    chosen = _paths(paths)
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    with event.install_recorder("numba:compile") as rec, _fast.pruned_path("always"):
        for path in chosen:
            for div in divs:
                _RUN[path](div, rng)
    compiled = sum(1 for _, ev in rec.buffer if ev.is_start)
    return WarmUpResult(
        seconds=time.perf_counter() - t0,
        compiled=compiled,
        divergences=tuple(d.name for d in divs),
        paths=chosen,
        cache_dir=str(config.CACHE_DIR or ""),  # type: ignore[attr-defined]  # numba.config sets its options at run time
    )
