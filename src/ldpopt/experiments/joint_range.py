r"""Figure 3 of the SPR paper: the joint range :math:`\mathcal R_2(p, q)` and its SPR-induced candidates."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ldpopt._extras import require
from ldpopt._validation import check_labelled_pair
from ldpopt.spr.joint_range import JointRange, joint_range

__all__ = ["PAPER_P", "PAPER_Q", "PAPER_EPS", "PAPER_EXTREME_COUNTS", "JointRangeFigure", "fig3"]

#: the instance of Figures 3 and 5
PAPER_P = (0.04, 0.09, 0.22, 0.47, 0.18)
PAPER_Q = (0.25, 0.49, 0.13, 0.10, 0.03)
PAPER_EPS = 2.0
#: extreme candidates (of 10) the paper reports for this instance (Figure 3 and Figure 5 captions)
PAPER_EXTREME_COUNTS = {0.4: 4, 2.0: 6, 5.0: 10}


@dataclass(frozen=True, eq=False)
class JointRangeFigure:
    """Data of Figure 3: the instance and its :class:`~ldpopt.JointRange`."""

    p0: np.ndarray
    p1: np.ndarray
    eps: float
    joint_range: JointRange
    quick: bool = False

    def summary(self) -> dict:
        """``candidate_count``, ``extreme_count`` and the extreme / dominated labels."""
        jr = self.joint_range
        out = {
            "experiment": "fig3",
            "quick": self.quick,
            "p0": [float(x) for x in self.p0],
            "p1": [float(x) for x in self.p1],
            "eps": float(self.eps),
            "candidate_count": jr.num_candidates,
            "extreme_count": jr.num_extreme,
            "extreme": [lab for lab, e in zip(jr.labels, jr.is_extreme, strict=False) if e],
            "dominated": [lab for lab, e in zip(jr.labels, jr.is_extreme, strict=False) if not e],
        }
        if _is_paper_instance(self.p0, self.p1):
            for e, n in PAPER_EXTREME_COUNTS.items():
                if np.isclose(self.eps, e, rtol=0, atol=1e-12):
                    out["paper_extreme_count"] = n
        return out

    def to_frame(self):
        """One row per candidate: ``label, x, y, extreme, hull_order`` (-1 when not a hull vertex)."""
        return candidates_frame(self.joint_range, quick=self.quick)


def candidates_frame(jr: JointRange, quick: bool = False):
    """Table of the candidates of a :class:`~ldpopt.JointRange` (pandas)."""
    pd = require("pandas", "to_frame (ldpopt.experiments)", "sweeps")

    order = np.full(jr.num_candidates, -1)
    order[jr.hull_indices] = np.arange(jr.hull_indices.size)
    return pd.DataFrame(
        {
            "eps": jr.eps,
            "label": list(jr.labels),
            "x_p0_output1": jr.points[:, 0],
            "y_p1_output1": jr.points[:, 1],
            "extreme": jr.is_extreme,
            "hull_order": order,
            "quick": quick,
        }
    )


def _is_paper_instance(p0, p1) -> bool:
    return (
        len(p0) == len(PAPER_P)
        and np.allclose(p0, PAPER_P, rtol=0, atol=1e-12)
        and np.allclose(p1, PAPER_Q, rtol=0, atol=1e-12)
    )


def fig3(
    p0: Any = PAPER_P, p1: Any = PAPER_Q, eps: float = PAPER_EPS, *, quick: bool = False
) -> JointRangeFigure:
    """Figure 3: :func:`ldpopt.joint_range` at the paper's instance (or any other pair)."""
    u, v, _ = check_labelled_pair(p0, p1)
    jr = joint_range(p0, p1, eps, 2)
    return JointRangeFigure(p0=u, p1=v, eps=jr.eps, joint_range=jr, quick=quick)
