r"""Runtimes (Appendix E.2): time per solve of the SPR solver versus the KOV staircase LP.

For each alphabet size k, ``repeats`` instances are drawn with
``default_rng(seed).dirichlet(ones(k), size=(repeats, 2))`` and solved for the KL utility at
``eps`` (default 1) with no output budget; the reported time per solve is the median over the
instances (after one untimed warm-up solve per solver, so JIT compilation and imports are excluded).  The LP
(2^k - 1 variables) is run for increasing k only while a solve is predicted to finish within
``lp_budget_s``; the SPR solver likewise stops once a solve is predicted to exceed ``spr_budget_s``
(predictions extrapolate the last two measured times as a power law in k).  On every k where both run,
their optimal values are compared.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ldpopt._extras import require
from ldpopt._validation import check_eps, check_positive_int
from ldpopt.spr.kov import KOV_MAX_K, kov_lp
from ldpopt.spr.solve import optimal_mechanism

__all__ = ["LP_KS", "SPR_KS", "RuntimeRow", "RuntimeTable", "runtimes"]

#: the LP grid of the issue: k = 4, 6, ..., 16
LP_KS = tuple(range(4, 17, 2))
#: SPR alone: the LP grid, then roughly log-spaced up to 10^4
SPR_KS = LP_KS + (20, 50, 100, 200, 500, 1000, 2000, 5000, 10000)


@dataclass(frozen=True)
class RuntimeRow:
    """One (solver, k) measurement; ``status`` is ``"ok"`` or ``"skipped: ..."`` (then times are nan)."""

    solver: str
    k: int
    seconds_per_solve: float
    repeats: int
    status: str = "ok"
    method: str = ""


@dataclass(frozen=True, eq=False)
class RuntimeTable:
    """All measurements plus the SPR-vs-LP agreement on the instances both solved."""

    rows: tuple
    eps: float
    seed: int
    max_abs_spr_minus_lp: float
    lp_budget_s: float
    spr_budget_s: float
    quick: bool = False
    spr_method: str = field(default="")

    def series(self, solver: str) -> tuple[np.ndarray, np.ndarray]:
        """(k, seconds per solve) of the completed measurements of one solver."""
        rows = [r for r in self.rows if r.solver == solver and r.status == "ok"]
        return (np.array([r.k for r in rows], dtype=int), np.array([r.seconds_per_solve for r in rows]))

    def summary(self) -> dict:
        """Times per solve by solver and k, largest k reached, and the SPR/LP agreement (JSON-ready)."""
        out = {
            "experiment": "runtimes",
            "quick": self.quick,
            "eps": self.eps,
            "seed": self.seed,
            "divergence": "kl",
            "spr_method": self.spr_method,
            "lp_budget_s": self.lp_budget_s,
            "spr_budget_s": self.spr_budget_s,
        }
        for solver in ("spr", "kov_lp"):
            ks, ts = self.series(solver)
            out[f"{solver}_seconds_per_solve"] = {str(int(k)): float(t) for k, t in zip(ks, ts, strict=False)}
            out[f"{solver}_max_k"] = int(ks.max()) if ks.size else None
        lk, lt = self.series("kov_lp")
        sk, st = self.series("spr")
        common = sorted(set(lk.tolist()) & set(sk.tolist()))
        out["lp_over_spr"] = {str(k): float(lt[lk == k][0] / st[sk == k][0]) for k in common}
        out["max_abs_spr_minus_lp"] = (
            None if math.isnan(self.max_abs_spr_minus_lp) else self.max_abs_spr_minus_lp
        )
        out["skipped"] = [f"{r.solver} k={r.k}: {r.status}" for r in self.rows if r.status != "ok"]
        return out

    def to_frame(self):
        """One row per measurement (pandas)."""
        pd = require("pandas", "to_frame (ldpopt.experiments)", "sweeps")

        df = pd.DataFrame([r.__dict__ for r in self.rows])
        df["eps"] = self.eps
        df["quick"] = self.quick
        return df


def _predict(history: list[tuple[int, float]], k: int) -> float:
    """Power-law extrapolation of the last two (k, time) points (0 with < 2 points)."""
    if len(history) < 2:
        return 0.0
    (k1, t1), (k2, t2) = history[-2], history[-1]
    if t1 <= 0 or t2 <= 0 or k2 == k1:
        return t2
    slope = max(1.0, math.log(t2 / t1) / math.log(k2 / k1))
    return t2 * (k / k2) ** slope


def runtimes(
    lp_ks: Sequence[int] = LP_KS,
    spr_ks: Sequence[int] = SPR_KS,
    eps: float = 1.0,
    *,
    repeats: int = 5,
    seed: int = 0,
    lp_budget_s: float = 60.0,
    spr_budget_s: float = 60.0,
    quick: bool = False,
    progress: Callable[[int], None] | None = None,
) -> RuntimeTable:
    """Measure seconds per solve of :func:`ldpopt.optimal_mechanism` and :func:`ldpopt.kov_lp`.

    Parameters
    ----------
    lp_ks, spr_ks : sequence of int
        Alphabet sizes for the LP (k <= 20) and for the SPR solver, increasing.
    eps : float
        Privacy level of every solve.
    repeats : int
        Instances per k (median reported); large sizes use fewer so one k costs at most ~ a budget.
    lp_budget_s, spr_budget_s : float
        Stop a solver once a single solve is predicted to take longer.
    progress : callable, optional
        Called with 1 after each (solver, k).
    """
    eps = check_eps(eps, allow_inf=False)
    repeats = check_positive_int(repeats, "repeats")
    lp_ks = sorted(check_positive_int(k, "lp_ks") for k in lp_ks)
    spr_ks = sorted(check_positive_int(k, "spr_ks") for k in spr_ks)
    if lp_ks and lp_ks[-1] > KOV_MAX_K:
        raise ValueError(f"lp_ks must be <= {KOV_MAX_K}, got {lp_ks[-1]}")
    rows: list[RuntimeRow] = []
    values: dict[tuple[bool, int, int], float] = {}
    methods = set()

    def measure(solver: str, ks: list[int], budget: float) -> None:
        history: list[tuple[int, float]] = []
        stopped = None
        warm = False
        for k in ks:
            if stopped is None:
                pred = _predict(history, k)
                if pred > budget:
                    stopped = f"skipped: predicted {pred:.3g} s per solve > budget {budget:g} s"
            if stopped is not None:
                rows.append(RuntimeRow(solver, k, math.nan, 0, stopped))
                if progress is not None:
                    progress(1)
                continue
            pairs = np.random.default_rng(seed).dirichlet(np.ones(k), size=(repeats, 2))
            times = []
            method = ""
            for r in range(repeats):
                a, b = pairs[r]
                if not warm:  # one untimed warm-up per solver (imports, JIT compilation)
                    _solve(solver, a, b, eps)
                    warm = True
                t0 = time.perf_counter()
                res = _solve(solver, a, b, eps)
                times.append(time.perf_counter() - t0)
                method = res.method
                values[(solver == "spr", k, r)] = res.value
                # a solve alone beyond the budget: record it and stop adding repeats
                if sum(times) > budget:
                    break
            t = float(np.median(times))
            if solver == "spr":
                methods.add(method)
            rows.append(RuntimeRow(solver, k, t, len(times), "ok", method))
            history.append((k, t))
            if t > budget:
                stopped = f"skipped: k={k} took {t:.3g} s per solve > budget {budget:g} s"
            if progress is not None:
                progress(1)

    measure("kov_lp", lp_ks, lp_budget_s)
    measure("spr", spr_ks, spr_budget_s)
    diffs = [
        abs(values[(True, k, r)] - values[(False, k, r)])
        for (is_spr, k, r) in values
        if not is_spr and (True, k, r) in values
    ]
    gap = float(max(diffs)) if diffs else math.nan
    return RuntimeTable(
        rows=tuple(rows),
        eps=eps,
        seed=seed,
        max_abs_spr_minus_lp=gap,
        lp_budget_s=lp_budget_s,
        spr_budget_s=spr_budget_s,
        quick=quick,
        spr_method=",".join(sorted(methods)),
    )


def total_units(lp_ks: Sequence[int] = LP_KS, spr_ks: Sequence[int] = SPR_KS) -> int:
    """Progress units reported by :func:`runtimes`."""
    return len(list(lp_ks)) + len(list(spr_ks))


def _solve(solver: str, a: np.ndarray, b: np.ndarray, eps: float):
    if solver == "spr":
        return optimal_mechanism(a, b, eps, "kl")
    return kov_lp(a, b, eps, "kl")
