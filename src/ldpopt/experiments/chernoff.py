r"""Chernoff-information-optimal mechanisms vs the KL-optimal design and the baselines.

Setup (the instance families of Figure 1): for each alphabet size k, T pairs
:math:`(P_0, P_1)` from :func:`ldpopt.experiments.draw_pairs` (Dirichlet(1_k), ``seed``), and an
eps grid on [0, 10].  For every pair and eps > 0 the curves are the normalised Chernoff information
:math:`C(M_0, M_1) / C(P_0, P_1)` of

* ``chernoff``: the Chernoff-optimal SPR mechanism (:func:`ldpopt.spr.chernoff.solve_reduced`,
  certified);
* ``kl``: the KL-optimal SPR mechanism, evaluated in Chernoff information;
* ``binary``: the binary mechanism; ``rr``: k-ary randomized response.

At eps = 0 every mechanism is input-independent (value 0; no solver is called).  Bands are 95%
percentile-bootstrap bands over the pairs with one index matrix for every mechanism (paired:
:func:`ldpopt.experiments.bootstrap_bands`).  The summary reports ``max_gain_over_kl_design`` (the
largest per-pair ratio Chernoff-optimal / KL-optimal, and where), ``max_certificate_gap`` (the
largest ``upper_bound - value``) and ``solves_per_instance`` (mean SPR solves per optimum).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ldpopt._extras import require
from ldpopt._validation import check_positive_int
from ldpopt.divergences import chernoff_information
from ldpopt.experiments.utility import bootstrap_bands, curves_frame, draw_pairs
from ldpopt.mechanism import binary_mechanism, randomized_response
from ldpopt.spr.chernoff import solve_reduced
from ldpopt.spr.reduction import likelihood_ratio_reduction
from ldpopt.spr.solve import optimal_mechanism

__all__ = [
    "CHERNOFF_MECHANISMS",
    "CHERNOFF_LABELS",
    "ChernoffCurves",
    "ChernoffExperiment",
    "chernoff_curves",
    "chernoff_experiment",
]

#: mechanism keys in plotting order
CHERNOFF_MECHANISMS = ("chernoff", "kl", "binary", "rr")
CHERNOFF_LABELS = {
    "chernoff": "Chernoff-optimal SPR (certified)",
    "kl": "KL-optimal SPR",
    "binary": "binary mechanism",
    "rr": "k-ary randomized response",
}
#: the default grid {0, 0.5, ..., 10}
DEFAULT_EPS_GRID = np.arange(21) / 2.0

ProgressFn = Callable[[int], None]


@dataclass(frozen=True, eq=False)
class ChernoffCurves:
    r"""Chernoff information of every mechanism on T pairs x the eps grid, for one k.

    ``raw[m]`` (T, E) is :math:`C(M_0, M_1)`; ``input_chernoff`` (T,) is :math:`C(P_0, P_1)`;
    ``gap`` (T, E) the certificate ``upper_bound - value`` of the Chernoff optimum and ``solves``
    (T, E) its SPR solves (0 at eps = 0); ``valid`` the pairs with a finite positive denominator.
    """

    k: int
    trials: int
    seed: int
    eps_grid: np.ndarray
    raw: dict = field(repr=False)
    input_chernoff: np.ndarray = field(repr=False)
    gap: np.ndarray = field(repr=False)
    solves: np.ndarray = field(repr=False)
    valid: np.ndarray = field(repr=False, kw_only=True)
    runtime_s: float = field(default=math.nan, kw_only=True)

    @property
    def mechanisms(self) -> tuple:
        return tuple(m for m in CHERNOFF_MECHANISMS if m in self.raw)

    def normalized(self, mechanism: str) -> np.ndarray:
        """Normalised values of the valid pairs, shape (T_valid, E)."""
        return self.raw[mechanism][self.valid] / self.input_chernoff[self.valid, None]

    def mean(self, mechanism: str) -> np.ndarray:
        vals = self.normalized(mechanism)
        return vals.mean(axis=0) if vals.shape[0] else np.full(self.eps_grid.shape, math.nan)

    def gain_over_kl(self) -> tuple[float, int, float]:
        """(largest ratio Chernoff-optimal / KL-optimal, its pair, its eps) over eps > 0."""
        pos = self.eps_grid > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(self.raw["kl"] > 0, self.raw["chernoff"] / self.raw["kl"], np.nan)
        r[:, ~pos] = np.nan
        if not np.any(np.isfinite(r)):
            return math.nan, -1, math.nan
        t, e = np.unravel_index(int(np.nanargmax(r)), r.shape)
        return float(r[t, e]), int(t), float(self.eps_grid[e])

    def to_frame(self):
        """Long table ``k, eps, mechanism, label, mean, n_trials`` (pandas)."""
        pd = require("pandas", "to_frame (ldpopt.experiments)", "sweeps")
        n = int(np.count_nonzero(self.valid))
        rows = [
            {
                "k": self.k,
                "eps": float(e),
                "mechanism": m,
                "label": CHERNOFF_LABELS[m],
                "mean": float(v),
                "n_trials": n,
            }
            for m in self.mechanisms
            for e, v in zip(self.eps_grid, self.mean(m), strict=True)
        ]
        return pd.DataFrame(rows)


def _cell(u, v, red, eps: float) -> tuple[dict, float, int]:
    """Chernoff information of each mechanism at one (pair, eps > 0), the certificate gap and solves."""
    sol = solve_reduced(red.p, red.q, eps, red.k)
    kl = optimal_mechanism(u, v, eps, "kl").mechanism
    assert kl is not None  # the SPR solvers always return their mechanism
    vals = {
        "chernoff": sol.value,
        "kl": chernoff_information(*kl.output_distributions(u, v)).value,
        "binary": binary_mechanism(u, v, eps).utility(u, v, "chernoff"),
        "rr": randomized_response(u.shape[0], eps).utility(u, v, "chernoff"),
    }
    return vals, sol.upper_bound - sol.value, sol.solves


def chernoff_curves(
    k: int, trials: int = 100, seed: int = 0, eps_grid: Any = None, *, progress: ProgressFn | None = None
) -> ChernoffCurves:
    """The curves of one k (``progress(1)`` after each pair)."""
    k = check_positive_int(k, "k")
    trials = check_positive_int(trials, "trials")
    grid = DEFAULT_EPS_GRID if eps_grid is None else np.asarray(eps_grid, dtype=float)
    p0s, p1s = draw_pairs(k, trials, seed)
    E = grid.shape[0]
    raw = {m: np.zeros((trials, E)) for m in CHERNOFF_MECHANISMS}
    gap = np.zeros((trials, E))
    solves = np.zeros((trials, E), dtype=np.int64)
    t0 = time.perf_counter()
    for t in range(trials):
        u, v = p0s[t], p1s[t]
        red = likelihood_ratio_reduction(u, v)
        for e, eps in enumerate(grid):
            if eps > 0:
                vals, gap[t, e], solves[t, e] = _cell(u, v, red, float(eps))
                for m, x in vals.items():
                    raw[m][t, e] = x
        if progress is not None:
            progress(1)
    inp = np.array([chernoff_information(u, v).value for u, v in zip(p0s, p1s, strict=True)])
    return ChernoffCurves(
        k,
        trials,
        seed,
        grid,
        raw,
        inp,
        gap,
        solves,
        valid=np.isfinite(inp) & (inp > 0),
        runtime_s=time.perf_counter() - t0,
    )


@dataclass(frozen=True, eq=False)
class ChernoffExperiment:
    """One :class:`ChernoffCurves` per k with its paired bootstrap bands."""

    curves: tuple
    bands: tuple = ()
    quick: bool = False
    name: str = "chernoff"

    def summary(self) -> dict:
        """Headline numbers (JSON-ready)."""
        gains = [(c.k, *c.gain_over_kl()) for c in self.curves]
        best = max(gains, key=lambda g: -math.inf if math.isnan(g[1]) else g[1]) if gains else None
        pos = [c.solves[:, c.eps_grid > 0] for c in self.curves]
        return {
            "experiment": self.name,
            "quick": self.quick,
            "trials": self.curves[0].trials if self.curves else 0,
            "seed": self.curves[0].seed if self.curves else 0,
            "eps_grid": {
                "min": float(self.curves[0].eps_grid.min()),
                "max": float(self.curves[0].eps_grid.max()),
                "size": int(self.curves[0].eps_grid.size),
            }
            if self.curves
            else None,
            "max_gain_over_kl_design": None
            if best is None or math.isnan(best[1])
            else {"ratio": best[1], "k": best[0], "trial": best[2], "eps": best[3]},
            "max_certificate_gap": max(float(np.max(c.gap)) for c in self.curves) if self.curves else None,
            "solves_per_instance": {
                str(c.k): float(np.mean(s)) if s.size else None for c, s in zip(self.curves, pos, strict=True)
            },
            "mean_gain_over_kl_design": {
                str(c.k): float(np.mean(c.mean("chernoff")[c.eps_grid > 0] / c.mean("kl")[c.eps_grid > 0]))
                for c in self.curves
            },
            "runtime_s": {str(c.k): c.runtime_s for c in self.curves},
            "trials_skipped": {str(c.k): int(np.count_nonzero(~c.valid)) for c in self.curves},
        }

    def to_frame(self):
        """Every plotted curve with its ``lower``/``upper`` band (pandas)."""
        return curves_frame(self.curves, self.bands, self.quick)


def chernoff_experiment(
    ks: Iterable[int] = (6, 100),
    trials: int = 100,
    seed: int = 0,
    eps_grid: Any = None,
    *,
    resamples: int = 1000,
    quick: bool = False,
    progress: ProgressFn | None = None,
) -> ChernoffExperiment:
    """:func:`chernoff_curves` for every k, with paired percentile-bootstrap bands."""
    curves = tuple(chernoff_curves(k, trials, seed, eps_grid, progress=progress) for k in ks)
    bands = tuple(bootstrap_bands(c, resamples) for c in curves)  # type: ignore[arg-type]  # same interface
    return ChernoffExperiment(curves=curves, bands=bands, quick=quick)
