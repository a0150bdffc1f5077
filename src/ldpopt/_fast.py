r"""Dispatcher of the compiled exact solvers (used by :func:`ldpopt.optimal_mechanism`).

:func:`ldpopt.spr._solve_reduced` calls :func:`solve` for ``method="auto"``/``"fast"`` when
:func:`supports` accepts the divergence.  The inputs are already validated and reduced (the
strictly likelihood-ratio-sorted alphabet of :class:`ldpopt.LRReduction`), so this module
only converts to the kernels' array/scalar arguments and back.

* no output budget binding: Dinkelbach's iteration (:func:`ldpopt._kernels.dinkelbach_ws`),
  O(k^2) per step with exact pruning of split points, a handful of steps, O(k) memory above
  ``SCORE_CACHE_MAX_K`` symbols;
* budget ``l`` below the unconstrained optimum's block count: the compiled O(l k^2) program.

Both return exactly the optimum of the readable program :func:`ldpopt.spr._dp_readable`
(see ``docs/fast.md``).
"""

from __future__ import annotations

import math

import numpy as np

from ldpopt import _kernels as K
from ldpopt.divergences import FDivergence

__all__ = ["supports", "solve", "rescale", "METHOD_NAMES"]

#: kernel method codes -> ``OptimalMechanismResult.method``
METHOD_NAMES = ("dinkelbach", "budget_dp", "single_block")


def supports(div: FDivergence) -> bool:
    """True when the kernels evaluate ``div`` natively (every built-in divergence and factory)."""
    return bool(div.is_builtin)


def rescale(eps: float) -> tuple[float, float, float]:
    """``(c, A, log_floor)``: c = e^{-eps}, A = 1 - c without cancellation, and the log floor.

    Same numbers as ``spr._rescale``/``spr._log_floor``: ``log_floor = -eps`` only when c
    underflowed to 0 at a finite eps (else ``-inf``, unused).
    """
    if math.isinf(eps):
        return 0.0, 1.0, -math.inf
    c = math.exp(-eps)
    A = -math.expm1(-eps)
    return c, A, (-eps if c == 0.0 else -math.inf)


def solve(p: np.ndarray, q: np.ndarray, eps: float, div: FDivergence, l: int):
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

    Returns
    -------
    raw : float
        Optimal raw (untransformed) value :math:`\max_\pi \sum_t \mu'(B_t)/(1+(s-1)c)`.
    cuts : list of (int, int)
        Half-open reduced intervals ``[(0, a), (a, b), ..., (z, k)]`` as ``_dp_readable``.
    method : str
        ``"dinkelbach"``, ``"budget_dp"`` or ``"single_block"``.
    """
    p = np.ascontiguousarray(p, dtype=np.float64)
    q = np.ascontiguousarray(q, dtype=np.float64)
    k = int(p.shape[0])
    l = int(min(max(int(l), 1), k))
    c, A, lf = rescale(float(eps))
    pre = K.prefix_table(p, q)
    bounds = np.zeros(k + 1, dtype=np.int64)
    if k <= K.SCORE_CACHE_MAX_K:
        sp, sq, val, state = K._new_cache(pre, np.arange(k + 1, dtype=np.int64))
    else:
        sp = sq = val = np.empty(0)
        state = np.empty(0, dtype=np.uint8)
    # ``solve_ws`` runs as Python here and calls the compiled kernels: each of them is then
    # compiled only when first needed (the budget program only if a budget binds, the coarse
    # start only for huge k), which keeps the first call short; the overhead is a few us
    solve_ws = getattr(K.solve_ws, "py_func", K.solve_ws)  # (a plain function with NUMBA_DISABLE_JIT)
    raw, nb, code = solve_ws(pre, k, l, int(div.code), float(div.param), c, A, lf, bounds, 0, sp, sq, val, state,
                              np.empty(0, dtype=np.int64))
    cuts = [(int(bounds[j]), int(bounds[j + 1])) for j in range(int(nb))]
    return float(raw), cuts, METHOD_NAMES[int(code)]
