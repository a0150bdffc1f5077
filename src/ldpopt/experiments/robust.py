r"""Robust design vs plug-in design: worst-case utility over total-variation neighbourhoods.

For the paper's instance and Dirichlet(1) pairs at k = 6 and 100, and eps in (1, 2, 5): the
certified worst-case KL utility of the robust design, the plug-in SPR design, the binary
mechanism and k-ary RR, against the TV radius (both sides), and against the number of samples n
behind the estimates (``from_counts``, 95% confidence, eps = 2), for every family.

Normalisers (the CSV's ``normalizer`` column; ``normalized_by`` names it):

* radius curves (``normalized_by = "estimate"``): :math:`D_{KL}(\hat P_0\|\hat P_1)`, the
  divergence of the centres (here the instance itself);
* n curves (``normalized_by = "truth"``): :math:`D_{KL}(P_0\|P_1)` of the true pair the counts
  were drawn from.  The empirical pair's divergence is infinite as soon as a cell is empty in
  :math:`\hat P_1` but not in :math:`\hat P_0` (common at k = 100 with a few thousand
  samples).  With probability >= 0.95 the set contains the true pair, and then
  :math:`W(Q)\le D_{KL}(QP_0\|QP_1)\le D_{KL}(P_0\|P_1)`: the curve is the fraction (<= 1) of
  the true pair's divergence that the guarantee secures.

k-ary RR's worst case is not attained at Huber's pair; it is solved by the separable barrier
method of the robust package (fast at k = 100, empty cells included), certified like every
other curve."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ldpopt._extras import require
from ldpopt.divergences import f_divergence
from ldpopt.experiments.joint_range import PAPER_P, PAPER_Q
from ldpopt.mechanism import binary_mechanism, randomized_response
from ldpopt.robust import uncertainty as unc
from ldpopt.robust.design import robust_mechanism, worst_case

__all__ = ["RADII", "EPS", "SAMPLE_SIZES", "RobustExperiment", "robust_experiment"]

RADII = (0.0, 0.01, 0.02, 0.05, 0.1)
EPS = (1.0, 2.0, 5.0)
SAMPLE_SIZES = (100, 300, 1000, 3000, 10000)
#: Dirichlet pairs per family in the default run
TRIALS = 2
QUICK_RADII = (0.0, 0.05)
QUICK_EPS = (2.0,)
QUICK_SIZES = (1000,)


@dataclass(frozen=True)
class RobustExperiment:
    """Rows of the experiment (one per instance x eps x radius or n x mechanism) and its settings."""

    rows: tuple = field(repr=False)
    quick: bool = False

    def summary(self) -> dict:
        """``certified_fraction``, ``max_gap`` (relative) and ``max_robust_gain`` (robust worst case /
        plug-in worst case), over the robust designs."""
        robust = [r for r in self.rows if r["mechanism"] == "robust"]
        plug = {
            (r["family"], r["trial"], r["eps"], r["radius"], r["n"]): r
            for r in self.rows
            if r["mechanism"] == "plug_in"
        }
        gains = []
        for r in robust:
            p = plug.get((r["family"], r["trial"], r["eps"], r["radius"], r["n"]))
            if p is not None and p["worst_case"] > 0:
                gains.append(r["worst_case"] / p["worst_case"])
        gaps = [r["gap"] / r["upper_bound"] if r["upper_bound"] > 0 else 0.0 for r in robust]
        return {
            "experiment": "robust",
            "quick": self.quick,
            "divergence": "kl",
            "model": "tv",
            "designs": len(robust),
            "certified_fraction": sum(r["certified"] for r in robust) / max(len(robust), 1),
            "max_gap": max(gaps, default=0.0),
            "max_robust_gain": max(gains, default=math.nan),
            "dp_solves": sum(r["dp_solves"] for r in robust),
        }

    def to_frame(self):
        """The rows as a pandas DataFrame."""
        pd = require("pandas", "to_frame (ldpopt.experiments)", "sweeps")
        return pd.DataFrame(list(self.rows)).assign(quick=self.quick)


def _instances(families, trials: int, seed: int):
    rng = np.random.default_rng(seed)
    out = []
    for fam in families:
        if fam == "paper":
            out.append(("paper", 0, np.array(PAPER_P), np.array(PAPER_Q)))
            continue
        k = int(fam.split("=")[1])
        for t in range(trials):
            out.append((fam, t, rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))))
    return out


def _rows_for(fam, trial, p0, p1, eps, u, radius, n, *, truth=None):
    """The four mechanisms' rows at the centres (p0, p1); normalised by the divergence of
    ``truth`` (the pair the counts came from) when given, else of the centres."""
    q0, q1 = truth if truth is not None else (p0, p1)
    base = f_divergence(q0, q1, "kl")
    res = robust_mechanism(p0, p1, eps, u, "kl")
    common = {
        "family": fam,
        "k": p0.size,
        "trial": trial,
        "eps": eps,
        "radius": radius,
        "n": n,
        "normalizer": base,
        "normalized_by": "estimate" if truth is None else "truth",
    }

    def row(name, lo, up, ok, dp=0):
        norm = lo / base if base > 0 else math.nan
        gap = max(up - lo, 0.0)
        return {
            **common,
            "mechanism": name,
            "worst_case": lo,
            "upper_bound": up,
            "gap": gap,
            "certified": ok,
            "normalized": norm,
            "dp_solves": dp,
        }

    rows = [
        row("robust", res.value, res.upper_bound, res.certified, res.dp_solves),
        row("plug_in", res.plug_in.value, res.plug_in.upper_bound, res.plug_in.certified),
    ]
    mechs = [("binary", binary_mechanism(p0, p1, eps)), ("rr", randomized_response(p0.size, eps))]
    for name, m in mechs:
        w = worst_case(m, p0, p1, u, "kl")
        rows.append(row(name, w.value, w.upper_bound, w.certified))
    return rows


def robust_experiment(
    families=("paper", "dirichlet k=6", "dirichlet k=100"),
    *,
    radii=RADII,
    eps=EPS,
    sizes=SAMPLE_SIZES,
    trials: int = TRIALS,
    seed: int = 0,
    quick: bool = False,
    progress=None,
) -> RobustExperiment:
    """Run the experiment (``quick``: the paper's instance, radii 0 and 0.05, eps 2, n = 1000)."""
    if quick:
        families, radii, eps, sizes, trials = ("paper",), QUICK_RADII, QUICK_EPS, QUICK_SIZES, 1
    rows: list[dict] = []
    rng = np.random.default_rng(seed + 1)
    for fam, trial, p0, p1 in _instances(families, trials, seed):
        for e in eps:
            for r in radii:
                rows += _rows_for(fam, trial, p0, p1, e, unc.total_variation(r, r), r, None)
                if progress is not None:
                    progress(1)
        for n in sizes:
            u = unc.from_counts(rng.multinomial(n, p0), rng.multinomial(n, p1), 0.95, "tv")
            assert u.p0_hat is not None and u.p1_hat is not None
            rows += _rows_for(fam, trial, u.p0_hat, u.p1_hat, 2.0, u, u.r0, n, truth=(p0, p1))
            if progress is not None:
                progress(1)
    return RobustExperiment(rows=tuple(rows), quick=quick)
