r"""Figure 5 of the SPR paper: Monte-Carlo check that random 2-output LDP channels stay in the SPR hull.

Sampling (Appendix E.1).  A binary-output channel on k inputs is its first column
:math:`z_x = Q(1|x)` (the second is :math:`1 - z_x`).  Proposals draw the k entries of z i.i.d. from
U[0, 1] (``proposal="uniform"``, used at :math:`\varepsilon = 0.4`) or from Beta(0.3, 0.3)
(``proposal="beta"``, corner-seeking, used at :math:`\varepsilon \in \{2, 5\}`), and a proposal is kept
when both columns satisfy :math:`\min_x Q(y|x) \ge e^{-\varepsilon}\max_x Q(y|x)`.  One generator
``numpy.random.default_rng(20260503)`` is consumed panel after panel (eps = 0.4, 2, 5), each panel
drawing ``rng.random((N, k))`` or ``rng.beta(0.3, 0.3, (N, k))`` (chunked: chunking does not change
the stream).  With N = 2,000,000 this reproduces the paper's acceptance rates 0.147%, 1.675% and
26.336% to every printed digit.  (The appendix's wording, "rows sampled on [0, 1]^2 and renormalised",
would instead give about 1.17%, 8.19% and 41.77%, so the paper's code evidently drew one entry per row.)

Every accepted channel's image :math:`(z^\top p, z^\top q)` is compared with the hull of the
:math:`2(k-1)+2` SPR candidates (:func:`ldpopt.joint_range`); Theorem 3.1 says none lies outside.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ldpopt._extras import require
from ldpopt._numerics import rescale
from ldpopt._validation import check_eps, check_labelled_pair, check_positive_int
from ldpopt.experiments.joint_range import PAPER_EXTREME_COUNTS, PAPER_P, PAPER_Q, _is_paper_instance
from ldpopt.spr.joint_range import HULL_TOL, JointRange, joint_range

__all__ = [
    "FIG5_SEED",
    "FIG5_EPS",
    "FIG5_SAMPLES",
    "PAPER_ACCEPTANCE_RATES",
    "BETA_SHAPE",
    "HullPanel",
    "HullCheck",
    "default_proposal",
    "sample_first_columns",
    "ldp_accept",
    "hull_check",
]

FIG5_SEED = 20260503
FIG5_EPS = (0.4, 2.0, 5.0)
FIG5_SAMPLES = 2_000_000
#: acceptance rates printed in Appendix E.1
PAPER_ACCEPTANCE_RATES = {0.4: 0.00147, 2.0: 0.01675, 5.0: 0.26336}
#: both shape parameters of the corner-seeking proposal
BETA_SHAPE = 0.3
#: proposals generated per vectorised step (memory ~ 2 * chunk * k doubles)
DEFAULT_CHUNK = 250_000
#: accepted points kept per panel for plotting (the first ones: an unbiased subsample)
DEFAULT_MAX_CLOUD = 200_000


def default_proposal(eps: float) -> str:
    """The paper's choice: uniform rows for small eps (0.4), Beta(0.3, 0.3) rows otherwise (eps >= 1)."""
    return "uniform" if eps < 1.0 else "beta"


def sample_first_columns(rng: np.random.Generator, n: int, k: int, proposal: str) -> np.ndarray:
    """Draw ``n`` proposals ``z`` (shape (n, k)), ``z[i, x] = Q(1 | x)`` of channel i."""
    if proposal == "uniform":
        return rng.random((n, k))
    if proposal == "beta":
        return rng.beta(BETA_SHAPE, BETA_SHAPE, (n, k))
    raise ValueError(f"proposal must be 'uniform' or 'beta', got proposal={proposal!r}")


def ldp_accept(z: np.ndarray, eps: float) -> np.ndarray:
    r"""Rows of ``z`` whose channel :math:`[z, 1 - z]` is eps-LDP: :math:`\min \ge e^{-\varepsilon}\max`
    per column."""
    c = rescale(eps).c
    w = 1.0 - z
    return (z.min(axis=1) >= c * z.max(axis=1)) & (w.min(axis=1) >= c * w.max(axis=1))


@dataclass(frozen=True, eq=False)
class HullPanel:
    """One panel of Figure 5.

    Attributes
    ----------
    eps : float
    proposal : str
    samples, accepted : int
    acceptance_rate : float
    outside_hull : int
        Accepted channels farther than ``HULL_TOL`` (1e-12) outside the predicted hull.
    max_outside_distance : float
        Largest signed distance of an accepted point outside the hull (negative: all strictly inside).
    joint_range : JointRange
    cloud : ndarray, shape (m, 2)
        The first ``max_cloud`` accepted image points (for plotting).
    """

    eps: float
    proposal: str
    samples: int
    accepted: int
    outside_hull: int
    max_outside_distance: float
    joint_range: JointRange = field(repr=False)
    cloud: np.ndarray = field(repr=False)

    @property
    def acceptance_rate(self) -> float:
        """accepted / samples."""
        return self.accepted / self.samples if self.samples else math.nan

    @property
    def extreme_count(self) -> int:
        """Extreme SPR candidates at this eps."""
        return self.joint_range.num_extreme


@dataclass(frozen=True, eq=False)
class HullCheck:
    """Figure 5: one :class:`HullPanel` per eps, all on the same (p0, p1)."""

    p0: np.ndarray
    p1: np.ndarray
    seed: int
    panels: tuple
    quick: bool = False

    def summary(self) -> dict:
        """``panels``: list of {eps, acceptance_rate, extreme_count, outside_hull, ...} (JSON-ready)."""
        paper = _is_paper_instance(self.p0, self.p1)
        panels = []
        for pn in self.panels:
            d = {
                "eps": pn.eps,
                "acceptance_rate": pn.acceptance_rate,
                "extreme_count": pn.extreme_count,
                "outside_hull": pn.outside_hull,
                "candidate_count": pn.joint_range.num_candidates,
                "samples": pn.samples,
                "accepted": pn.accepted,
                "proposal": pn.proposal,
                "max_outside_distance": pn.max_outside_distance,
            }
            for e, rate in PAPER_ACCEPTANCE_RATES.items():
                if paper and math.isclose(pn.eps, e):
                    d["paper_acceptance_rate"] = rate
                    d["paper_extreme_count"] = PAPER_EXTREME_COUNTS[e]
            panels.append(d)
        return {
            "experiment": "fig5",
            "quick": self.quick,
            "seed": self.seed,
            "p0": [float(x) for x in self.p0],
            "p1": [float(x) for x in self.p1],
            "hull_tolerance": HULL_TOL,
            "panels": panels,
        }

    def to_frame(self):
        """Candidate points and hull membership of every panel (pandas)."""
        pd = require("pandas", "to_frame (ldpopt.experiments)", "sweeps")

        from ldpopt.experiments.joint_range import candidates_frame

        return pd.concat(
            [candidates_frame(pn.joint_range, self.quick) for pn in self.panels], ignore_index=True
        )

    def cloud_frame(self):
        """The plotted Monte-Carlo points: ``eps, x_p0_output1, y_p1_output1`` (pandas)."""
        pd = require("pandas", "to_frame (ldpopt.experiments)", "sweeps")

        return pd.concat(
            [
                pd.DataFrame({"eps": pn.eps, "x_p0_output1": pn.cloud[:, 0], "y_p1_output1": pn.cloud[:, 1]})
                for pn in self.panels
            ],
            ignore_index=True,
        )


def hull_check(
    p0: Any = PAPER_P,
    p1: Any = PAPER_Q,
    eps_values: Sequence[float] = FIG5_EPS,
    samples: int = FIG5_SAMPLES,
    seed: int = FIG5_SEED,
    *,
    proposals: Sequence[str] | None = None,
    chunk_size: int = DEFAULT_CHUNK,
    max_cloud: int = DEFAULT_MAX_CLOUD,
    quick: bool = False,
    progress: Callable[[int], None] | None = None,
) -> HullCheck:
    r"""Rejection-sample random eps-LDP binary channels and count images outside the SPR hull.

    Parameters
    ----------
    p0, p1 : array_like
        The instance (default: the paper's Figure 3/5 pair).
    eps_values : sequence of float
        One panel per value, sampled in this order from one shared generator.
    samples : int
        Proposals N per panel (paper: 2,000,000).
    seed : int
        ``numpy.random.default_rng(seed)`` (paper: 20260503).
    proposals : sequence of str, optional
        ``"uniform"`` or ``"beta"`` per panel (default :func:`default_proposal`).
    chunk_size : int
        Proposals per vectorised step; results do not depend on it.
    max_cloud : int
        Accepted points kept per panel for plotting.
    progress : callable, optional
        Called with the number of proposals processed after each chunk.

    Returns
    -------
    HullCheck
    """
    u, v, _ = check_labelled_pair(p0, p1)
    samples = check_positive_int(samples, "samples")
    chunk_size = check_positive_int(chunk_size, "chunk_size")
    max_cloud = int(max_cloud)
    if max_cloud < 0:
        raise ValueError(f"max_cloud must be >= 0, got max_cloud={max_cloud!r}")
    eps_list = [check_eps(e, "eps_values", allow_inf=False) for e in eps_values]
    if not eps_list:
        raise ValueError("eps_values must not be empty")
    if proposals is None:
        proposals = [default_proposal(e) for e in eps_list]
    proposals = list(proposals)
    if len(proposals) != len(eps_list):
        raise ValueError(
            f"proposals must have one entry per eps value ({len(eps_list)}), got {len(proposals)}"
        )
    k = u.shape[0]
    rng = np.random.default_rng(seed)
    panels = []
    for eps, prop in zip(eps_list, proposals, strict=False):
        jr = joint_range(u, v, eps, 2)
        accepted = 0
        outside = 0
        worst = -math.inf
        cloud = []
        kept = 0
        done = 0
        while done < samples:
            n = min(chunk_size, samples - done)
            z = sample_first_columns(rng, n, k, prop)
            ok = ldp_accept(z, eps)
            zk = z[ok]
            # elementwise products and a row sum (not BLAS): bitwise independent of the chunk size
            pts = np.stack([np.sum(zk * u, axis=1), np.sum(zk * v, axis=1)], axis=1)
            accepted += pts.shape[0]
            if pts.shape[0]:
                dist = jr.outside_distance(pts)
                outside += int(np.count_nonzero(dist > HULL_TOL))
                worst = max(worst, float(dist.max()))
                if kept < max_cloud:
                    take = pts[: max_cloud - kept]
                    cloud.append(take)
                    kept += take.shape[0]
            done += n
            if progress is not None:
                progress(n)
        cl = np.concatenate(cloud) if cloud else np.zeros((0, 2))
        panels.append(
            HullPanel(
                eps=eps,
                proposal=prop,
                samples=samples,
                accepted=accepted,
                outside_hull=outside,
                max_outside_distance=worst,
                joint_range=jr,
                cloud=cl,
            )
        )
    return HullCheck(p0=u, p1=v, seed=seed, panels=tuple(panels), quick=quick)
