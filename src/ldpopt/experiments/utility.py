r"""Figures 1 and 6 of the SPR paper: normalised KL utility of LDP mechanisms versus :math:`\varepsilon`.

Setup (Appendix E.2): for each alphabet size k draw T pairs :math:`(P_0^{(t)}, P_1^{(t)})` from
:math:`\mathrm{Dirichlet}(\mathbf 1_k)\otimes\mathrm{Dirichlet}(\mathbf 1_k)` once, with

.. code-block:: python

    rng = numpy.random.default_rng(seed)            # seed = 0, one fresh generator per k
    p0s = rng.dirichlet(numpy.ones(k), size=T)      # all P0 first ...
    p1s = rng.dirichlet(numpy.ones(k), size=T)      # ... then all P1

and evaluate every mechanism on the same pairs at every :math:`\varepsilon` of the grid
:math:`\{0, 0.1, \dots, 10\}`.  Curves are means over the trials of

.. math:: D_{kl}(Q^\top P_0 \| Q^\top P_1) / D_{kl}(P_0\|P_1),

skipping trials whose denominator is 0 (or infinite).  At :math:`\varepsilon = 0` every mechanism is
input-independent, so every utility is 0; the solvers (which require :math:`\varepsilon > 0`) are not
called there.

Mechanisms: the SPR optimum (:func:`ldpopt.sweep` when :mod:`ldpopt.spr.grid` provides it, else a loop over
:func:`ldpopt.optimal_mechanism`; both exact), the binary mechanism (:func:`ldpopt.binary_mechanism`),
k-ary randomized response (:func:`ldpopt.randomized_response`) and, for ``k <= 10``, the KOV staircase
LP (:func:`ldpopt.kov_lp`).  Bootstrap bands (Figure 6) resample the valid trials with replacement,
with one index matrix shared by every mechanism so the paired design is kept.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, cast

import numpy as np

from ldpopt._extras import require
from ldpopt._validation import check_positive_int, is_integer, is_real
from ldpopt.divergences import get_divergence
from ldpopt.mechanism import binary_mechanism, randomized_response
from ldpopt.spr.kov import kov_lp
from ldpopt.spr.solve import optimal_mechanism

__all__ = [
    "MECHANISMS",
    "MECHANISM_LABELS",
    "FIG1_EPS_GRID",
    "LP_MAX_K",
    "UtilityCurves",
    "BootstrapBands",
    "UtilityExperiment",
    "draw_pairs",
    "utility_curves",
    "progress_total",
    "bootstrap_bands",
    "curves_frame",
    "fig1",
    "fig6",
]

#: mechanism keys in plotting order
MECHANISMS = ("kov_lp", "spr", "binary", "rr")
#: legend labels used in the paper's Figure 1
MECHANISM_LABELS = {
    "kov_lp": "optimal (KOV LP)",
    "spr": "SPR mechanism (DP, ours)",
    "binary": "binary mechanism",
    "rr": "k-ary randomized response",
}
#: the paper's grid {0, 0.1, ..., 10} (i / 10 is the correctly rounded decimal)
FIG1_EPS_GRID = np.arange(101) / 10.0
#: the KOV LP (2^k - 1 variables) is run only up to this alphabet size
LP_MAX_K = 10
#: eps at which the summary reports RR / SPR, and the plateau / parity thresholds (Appendix E.2)
RATIO_EPS = 0.5
PLATEAU_EPS = 5.0
PARITY_REL = 0.05

ProgressFn = Callable[[int], None]


def draw_pairs(k: int, trials: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The T Dirichlet(1_k) pairs: ``rng = default_rng(seed)``, ``p0s = rng.dirichlet(ones(k), T)``,
    then ``p1s``."""
    k = check_positive_int(k, "k")
    trials = check_positive_int(trials, "trials")
    rng = np.random.default_rng(seed)
    p0s = rng.dirichlet(np.ones(k), size=trials)
    p1s = rng.dirichlet(np.ones(k), size=trials)
    return p0s, p1s


@dataclass(frozen=True, eq=False)
class UtilityCurves:
    r"""Raw and normalised KL utilities of every mechanism on T trials x the eps grid, for one k.

    Attributes
    ----------
    k, trials, seed : int
    eps_grid : ndarray, shape (E,)
    p0s, p1s : ndarray, shape (T, k)
    raw : dict str -> ndarray (T, E)
        :math:`D_{kl}(M_0\|M_1)` of each mechanism (keys from :data:`MECHANISMS`; ``kov_lp`` only when run).
    input_divergence : ndarray, shape (T,)
        :math:`D_{kl}(P_0\|P_1)`.
    valid : ndarray of bool, shape (T,)
        Trials with a finite, positive denominator.
    spr_runtime_s : float
        Wall time of the SPR computation alone (all trials, all eps > 0).
    spr_method : str
        ``"ldpopt.sweep"`` or ``"optimal_mechanism"``.
    lp_runtime_s : float
        Wall time of the KOV LP solves (nan when not run).
    lp_failures : int
        LP solves that did not return status 0 (their values are nan).
    """

    k: int
    trials: int
    seed: int
    eps_grid: np.ndarray
    p0s: np.ndarray = field(repr=False)
    p1s: np.ndarray = field(repr=False)
    raw: dict = field(repr=False)
    input_divergence: np.ndarray = field(repr=False)
    _: KW_ONLY  # at most 8 positional fields; the rest by keyword
    valid: np.ndarray = field(repr=False)
    spr_runtime_s: float = math.nan
    spr_method: str = ""
    lp_runtime_s: float = math.nan
    lp_failures: int = 0

    @property
    def mechanisms(self) -> tuple:
        """Mechanism keys present, in plotting order."""
        return tuple(m for m in MECHANISMS if m in self.raw)

    @property
    def trials_skipped(self) -> int:
        """Trials with :math:`D_{kl}(P_0\\|P_1) \\in \\{0, \\infty\\}` (excluded from every curve)."""
        return int(np.count_nonzero(~self.valid))

    def normalized(self, mechanism: str) -> np.ndarray:
        """Normalised utilities of the valid trials, shape (T_valid, E)."""
        return self.raw[mechanism][self.valid] / self.input_divergence[self.valid, None]

    def mean(self, mechanism: str) -> np.ndarray:
        """Mean normalised utility per eps (the Figure-1 curve)."""
        vals = self.normalized(mechanism)
        if vals.shape[0] == 0:
            return np.full(self.eps_grid.shape, math.nan)
        return vals.mean(axis=0)

    def max_abs_spr_minus_lp(self) -> float:
        r""":math:`\max_{t,\varepsilon} |V_{SPR} - V_{KOV}|` of the raw KL values (nan without the LP)."""
        if "kov_lp" not in self.raw:
            return math.nan
        diff = np.abs(self.raw["spr"] - self.raw["kov_lp"])
        return float(np.nanmax(diff)) if np.any(np.isfinite(diff)) else math.nan

    def _at(self, eps: float) -> int | None:
        hit = np.flatnonzero(np.isclose(self.eps_grid, eps, rtol=0, atol=1e-9))
        return int(hit[0]) if hit.size else None

    def binary_plateau(self, eps_min: float = PLATEAU_EPS) -> float:
        """Mean of the binary-mechanism curve over grid points eps >= ``eps_min``."""
        sel = self.eps_grid >= eps_min - 1e-12
        return float(np.mean(self.mean("binary")[sel])) if np.any(sel) else math.nan

    def ratio(self, eps: float = RATIO_EPS, num: str = "rr", den: str = "spr") -> float:
        """Ratio of two mean curves at a grid point (nan when eps is not on the grid)."""
        i = self._at(eps)
        if i is None:
            return math.nan
        d = self.mean(den)[i]
        return float(self.mean(num)[i] / d) if d > 0 else math.nan

    def within_eps(self, mechanism: str = "rr", reference: str = "spr", rel: float = PARITY_REL) -> float:
        """Smallest grid eps > 0 where ``mean(mechanism) >= (1 - rel) * mean(reference)`` (nan if never)."""
        a = self.mean(mechanism)
        b = self.mean(reference)
        ok = (self.eps_grid > 0) & (b > 0) & (a >= (1.0 - rel) * b)
        hit = np.flatnonzero(ok)
        return float(self.eps_grid[hit[0]]) if hit.size else math.nan

    def dominance_gap(self) -> float:
        """Largest amount by which any baseline exceeds SPR on any trial and eps (<= ~1e-12 expected)."""
        spr = self.raw["spr"]
        gaps = [np.nanmax(self.raw[m] - spr) for m in self.mechanisms if m not in ("spr", "kov_lp")]
        return float(max(gaps)) if gaps else math.nan

    def to_frame(self):
        """Long table ``k, eps, mechanism, label, mean, n_trials`` (pandas)."""
        pd = require("pandas", "to_frame (ldpopt.experiments)", "sweeps")

        rows = []
        nvalid = int(np.count_nonzero(self.valid))
        for m in self.mechanisms:
            mean = self.mean(m)
            for e, v in zip(self.eps_grid, mean, strict=False):
                rows.append(
                    {
                        "k": self.k,
                        "eps": float(e),
                        "mechanism": m,
                        "label": MECHANISM_LABELS[m],
                        "mean": float(v),
                        "n_trials": nvalid,
                    }
                )
        return pd.DataFrame(rows)


@dataclass(frozen=True, eq=False)
class BootstrapBands:
    """Percentile-bootstrap confidence bands of the mean curves (Figure 6).

    Attributes
    ----------
    k : int
    eps_grid : ndarray (E,)
    level : float
        Coverage (0.95).
    resamples : int
    seed : int
        Seed of ``default_rng(seed).integers(0, T_valid, size=(resamples, T_valid))``, the index matrix
        shared by every mechanism.
    lower, upper : dict str -> ndarray (E,)
    """

    k: int
    eps_grid: np.ndarray
    level: float
    resamples: int
    seed: int
    lower: dict = field(repr=False)
    upper: dict = field(repr=False)


def _spr_values(
    p0s: np.ndarray, p1s: np.ndarray, eps_pos: np.ndarray, solver: str, progress: ProgressFn | None
) -> tuple[np.ndarray, str, float]:
    """Raw optimal KL values, shape (T, len(eps_pos)), the solver used and its wall time.

    One untimed warm-up solve comes first, so imports and JIT compilation are not timed.
    """
    sweep: Callable[..., Any] | None = None
    if solver in ("auto", "sweep"):
        try:
            from ldpopt.spr.grid import sweep  # fast batched solver, optional
        except ImportError:
            sweep = None
        if sweep is None and solver == "sweep":
            raise ValueError("spr_solver='sweep' needs ldpopt.batch.sweep, which is not available")
    if sweep is not None:
        import inspect

        kwargs: dict[str, Any] = {"divergence": "kl"}
        if "progress" in inspect.signature(sweep).parameters:
            kwargs["progress"] = False
        sweep(p0s[:1], p1s[:1], eps_pos[:1], **kwargs)
        t0 = time.perf_counter()
        res = sweep(p0s, p1s, eps_pos, **kwargs)
        seconds = time.perf_counter() - t0
        if progress is not None:
            progress(p0s.shape[0])
        return np.asarray(res.values, dtype=float), "ldpopt.sweep", seconds
    out = np.empty((p0s.shape[0], eps_pos.shape[0]))
    optimal_mechanism(p0s[0], p1s[0], float(eps_pos[0]), "kl")
    seconds = 0.0
    for t in range(p0s.shape[0]):
        t0 = time.perf_counter()
        for j, e in enumerate(eps_pos):
            out[t, j] = optimal_mechanism(p0s[t], p1s[t], float(e), "kl").value
        seconds += time.perf_counter() - t0
        if progress is not None:
            progress(1)
    return out, "optimal_mechanism", seconds


def _check_grid(eps_grid: Any) -> np.ndarray:
    try:
        grid = np.asarray(eps_grid, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise TypeError(f"eps_grid must be a sequence of numbers, got {eps_grid!r}") from None
    if grid.size == 0:
        raise ValueError("eps_grid must not be empty")
    if not np.all(np.isfinite(grid)) or np.any(grid < 0):
        raise ValueError(f"eps_grid must contain finite values >= 0, got {grid.tolist()!r}")
    return grid


def utility_curves(
    k: int,
    trials: int = 100,
    seed: int = 0,
    eps_grid: Any = None,
    *,
    include_lp: bool | None = None,
    spr_solver: str = "auto",
    progress: ProgressFn | None = None,
) -> UtilityCurves:
    r"""Compute the Figure-1 panel for one alphabet size.

    Parameters
    ----------
    k : int
        Alphabet size.
    trials : int
        Number T of Dirichlet pairs (paper: 100).
    seed : int
        NumPy seed (paper: 0); see :func:`draw_pairs` for the exact generator calls.
    eps_grid : array_like, optional
        Privacy levels >= 0 (default :data:`FIG1_EPS_GRID`).
    include_lp : bool, optional
        Run the KOV LP (default: when ``k <= LP_MAX_K``).
    spr_solver : {"auto", "sweep", "loop"}
        ``"auto"`` uses :func:`ldpopt.sweep` when available, else loops over
        :func:`ldpopt.optimal_mechanism` (``"loop"``).  Both are exact.
    progress : callable, optional
        Called with the number of finished work units; the total is ``trials`` per mechanism run
        (see :func:`progress_total`).

    Returns
    -------
    UtilityCurves
    """
    k = check_positive_int(k, "k")
    trials = check_positive_int(trials, "trials")
    grid = FIG1_EPS_GRID.copy() if eps_grid is None else _check_grid(eps_grid)
    if spr_solver not in ("auto", "sweep", "loop"):
        raise ValueError(f"spr_solver must be 'auto', 'sweep' or 'loop', got spr_solver={spr_solver!r}")
    if include_lp is None:
        include_lp = k <= LP_MAX_K
    kl = get_divergence("kl")
    p0s, p1s = draw_pairs(k, trials, seed)
    dkl = np.array([kl(a, b) for a, b in zip(p0s, p1s, strict=False)])
    valid = np.isfinite(dkl) & (dkl > 0)
    pos = grid > 0
    eps_pos = grid[pos]
    E = grid.shape[0]

    raw: dict[str, np.ndarray] = {}
    # eps = 0: every eps-LDP channel is input-independent, so M0 = M1 and the utility is exactly 0
    spr_pos, spr_method, spr_time = (
        _spr_values(p0s, p1s, eps_pos, spr_solver, progress)
        if eps_pos.size
        else (np.zeros((trials, 0)), "none", 0.0)
    )
    raw["spr"] = _embed(spr_pos, pos, trials, E)

    lp_time = math.nan
    failures = 0
    if include_lp:
        vals = np.empty((trials, eps_pos.size))
        t0 = time.perf_counter()
        for t in range(trials):
            for j, e in enumerate(eps_pos):
                res = kov_lp(p0s[t], p1s[t], float(e), "kl")
                if res.status != 0:
                    failures += 1
                vals[t, j] = res.value
            if progress is not None:
                progress(1)
        lp_time = time.perf_counter() - t0
        raw["kov_lp"] = _embed(vals, pos, trials, E)

    binv = np.empty((trials, eps_pos.size))
    rrv = np.empty((trials, eps_pos.size))
    for j, e in enumerate(eps_pos):
        rr = randomized_response(k, float(e)).matrix
        m0 = p0s @ rr
        m1 = p1s @ rr
        rrv[:, j] = kl.perspective(m0, m1).sum(axis=1)
    for t in range(trials):
        for j, e in enumerate(eps_pos):
            binv[t, j] = binary_mechanism(p0s[t], p1s[t], float(e)).utility(p0s[t], p1s[t], kl)
        if progress is not None:
            progress(1)
    raw["binary"] = _embed(binv, pos, trials, E)
    raw["rr"] = _embed(rrv, pos, trials, E)
    for arr in (*raw.values(), p0s, p1s, dkl, valid, grid):
        arr.setflags(write=False)
    return UtilityCurves(
        k=k,
        trials=trials,
        seed=seed,
        eps_grid=grid,
        p0s=p0s,
        p1s=p1s,
        raw=raw,
        input_divergence=dkl,
        valid=valid,
        spr_runtime_s=spr_time,
        spr_method=spr_method,
        lp_runtime_s=lp_time,
        lp_failures=failures,
    )


def progress_total(k: int, trials: int, include_lp: bool | None = None) -> int:
    """Number of progress units :func:`utility_curves` reports (SPR + binary [+ LP]) per k."""
    lp = (k <= LP_MAX_K) if include_lp is None else include_lp
    return trials * (3 if lp else 2)


def _embed(vals: np.ndarray, pos: np.ndarray, trials: int, E: int) -> np.ndarray:
    out = np.zeros((trials, E))
    out[:, pos] = vals
    return out


def bootstrap_bands(
    curves: UtilityCurves, resamples: int = 5000, level: float = 0.95, seed: int = 1
) -> BootstrapBands:
    r"""95% percentile-bootstrap bands of each mean curve (Appendix E.2, Figure 6).

    One index matrix ``default_rng(seed).integers(0, T_valid, size=(resamples, T_valid))`` resamples
    the valid trials with replacement and is applied to every mechanism (paired design).  The resampled
    means are computed as ``W @ U`` with W the (resamples x T_valid) count matrix divided by T_valid,
    so memory is O(resamples x E) rather than O(resamples x T x E).
    """
    resamples = check_positive_int(resamples, "resamples")
    if not (is_real(level) and 0 < level < 1):
        raise ValueError(f"level must be in (0, 1), got level={level!r}")
    n = int(np.count_nonzero(curves.valid))
    lower: dict[str, np.ndarray] = {}
    upper: dict[str, np.ndarray] = {}
    if n == 0:
        for m in curves.mechanisms:
            lower[m] = upper[m] = np.full(curves.eps_grid.shape, math.nan)
    else:
        idx = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
        W = np.zeros((resamples, n))
        np.add.at(W, (np.repeat(np.arange(resamples), n), idx.ravel()), 1.0)
        W /= n
        alpha = (1.0 - level) / 2.0
        for m in curves.mechanisms:
            means = W @ curves.normalized(m)  # (resamples, E)
            lo, hi = np.percentile(means, [100 * alpha, 100 * (1 - alpha)], axis=0)
            lower[m] = lo
            upper[m] = hi
    return BootstrapBands(
        k=curves.k,
        eps_grid=curves.eps_grid,
        level=float(level),
        resamples=resamples,
        seed=seed,
        lower=lower,
        upper=upper,
    )


@dataclass(frozen=True, eq=False)
class UtilityExperiment:
    """Figure 1 (``bands`` empty) or Figure 6 (with bands): one :class:`UtilityCurves` per k.

    ``quick`` marks a reduced run (fewer trials / a coarser grid); it is recorded in the summary.
    """

    curves: tuple
    bands: tuple = ()
    quick: bool = False
    name: str = "fig1"

    @property
    def ks(self) -> tuple:
        """Alphabet sizes, one per panel."""
        return tuple(c.k for c in self.curves)

    def summary(self) -> dict:
        """Headline numbers (JSON-ready): the documented summary keys plus run metadata."""
        lp = [c.max_abs_spr_minus_lp() for c in self.curves if "kov_lp" in c.raw]
        out = {
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
            "max_abs_spr_minus_lp": _num(max(lp)) if lp else None,
            "binary_plateau": {str(c.k): _num(c.binary_plateau()) for c in self.curves},
            "rr_over_spr_at_0_5": {str(c.k): _num(c.ratio(RATIO_EPS)) for c in self.curves},
            "rr_within_5pct_eps": {
                str(c.k): _num(c.within_eps("rr", "spr", PARITY_REL)) for c in self.curves
            },
            "spr_runtime_s": {str(c.k): _num(c.spr_runtime_s) for c in self.curves},
            "trials_skipped": {str(c.k): c.trials_skipped for c in self.curves},
            "spr_method": {str(c.k): c.spr_method for c in self.curves},
            "lp_failures": {str(c.k): c.lp_failures for c in self.curves if "kov_lp" in c.raw},
            "max_baseline_minus_spr": _num(max(c.dominance_gap() for c in self.curves))
            if self.curves
            else None,
        }
        if self.bands:
            out["bootstrap"] = {
                "resamples": self.bands[0].resamples,
                "level": self.bands[0].level,
                "seed": self.bands[0].seed,
            }
        return out

    def to_frame(self):
        """Long table of every plotted curve (plus ``lower``/``upper`` band columns for Figure 6)."""
        return curves_frame(self.curves, self.bands, self.quick)


def curves_frame(curves, bands, quick: bool):
    """The curves' ``to_frame()`` tables stacked, with their bands' ``lower``/``upper`` columns."""
    pd = require("pandas", "to_frame (ldpopt.experiments)", "sweeps")

    frames = []
    for i, c in enumerate(curves):
        df = c.to_frame()
        if bands:
            b = bands[i]
            df["lower"] = np.concatenate([b.lower[m] for m in c.mechanisms])
            df["upper"] = np.concatenate([b.upper[m] for m in c.mechanisms])
        frames.append(df)
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    df["quick"] = quick
    return df


def _num(x: float) -> float | None:
    x = float(x)
    return None if math.isnan(x) else x


def fig1(
    ks: Iterable[int] = (6, 100),
    trials: int = 100,
    seed: int = 0,
    eps_grid: Any = None,
    *,
    spr_solver: str = "auto",
    quick: bool = False,
    progress: ProgressFn | None = None,
) -> UtilityExperiment:
    """Figure 1: :func:`utility_curves` for every k (the LP is run for k <= 10)."""
    curves = tuple(
        utility_curves(k, trials, seed, eps_grid, spr_solver=spr_solver, progress=progress) for k in _ks(ks)
    )
    return UtilityExperiment(curves=curves, quick=quick, name="fig1")


def fig6(
    ks: Iterable[int] = (6, 100),
    trials: int = 100,
    seed: int = 0,
    eps_grid: Any = None,
    *,
    resamples: int = 5000,
    level: float = 0.95,
    bootstrap_seed: int = 1,
    spr_solver: str = "auto",
    quick: bool = False,
    progress: ProgressFn | None = None,
) -> UtilityExperiment:
    """Figure 6: Figure 1 plus percentile-bootstrap bands (shared resample indices)."""
    exp = fig1(ks, trials, seed, eps_grid, spr_solver=spr_solver, quick=quick, progress=progress)
    bands = tuple(bootstrap_bands(c, resamples, level, bootstrap_seed) for c in exp.curves)
    return UtilityExperiment(curves=exp.curves, bands=bands, quick=quick, name="fig6")


def _ks(ks: Iterable[int] | int) -> list[int]:
    if isinstance(ks, bool):
        raise TypeError(f"ks must be an alphabet size or a sequence of them, got ks={ks!r}")
    if is_integer(ks):
        return [check_positive_int(ks, "k")]
    out = [check_positive_int(k, "k") for k in cast(Iterable[int], ks)]
    if not out:
        raise ValueError("ks must contain at least one alphabet size")
    return out
