"""Reproductions of the SPR paper's experiments, as data (plotting lives in :mod:`ldpopt.plots`).

===========================  ===============================================================
:func:`fig1`                 normalised KL utility vs eps, k = 6 and 100 (Figure 1)
:func:`fig6`                 the same with 95% percentile-bootstrap bands (Figure 6)
:func:`fig3`                 the joint range R_2(p, q) and its SPR candidates (Figure 3)
:func:`hull_check`           Monte-Carlo check of the hull at eps = 0.4, 2, 5 (Figure 5)
:func:`runtimes`             time per solve, SPR solver vs KOV LP (Appendix E.2)
===========================  ===============================================================

Each returns a frozen result with ``summary()`` (the JSON headline numbers) and ``to_frame()``
(the plotted numbers).  The command ``ldpopt reproduce NAME`` runs them and writes the figures.
"""

from ldpopt.experiments.joint_range import (
    PAPER_EPS,
    PAPER_EXTREME_COUNTS,
    PAPER_P,
    PAPER_Q,
    JointRangeFigure,
    fig3,
)
from ldpopt.experiments.montecarlo import (
    FIG5_EPS,
    FIG5_SAMPLES,
    FIG5_SEED,
    PAPER_ACCEPTANCE_RATES,
    HullCheck,
    HullPanel,
    hull_check,
)
from ldpopt.experiments.runtimes import LP_KS, SPR_KS, RuntimeRow, RuntimeTable, runtimes
from ldpopt.experiments.utility import (
    FIG1_EPS_GRID,
    MECHANISM_LABELS,
    MECHANISMS,
    BootstrapBands,
    UtilityCurves,
    UtilityExperiment,
    bootstrap_bands,
    draw_pairs,
    fig1,
    fig6,
    utility_curves,
)

fig5 = hull_check

__all__ = [
    "FIG1_EPS_GRID",
    "FIG5_EPS",
    "FIG5_SAMPLES",
    "FIG5_SEED",
    "LP_KS",
    "MECHANISMS",
    "MECHANISM_LABELS",
    "PAPER_ACCEPTANCE_RATES",
    "PAPER_EPS",
    "PAPER_EXTREME_COUNTS",
    "PAPER_P",
    "PAPER_Q",
    "SPR_KS",
    "BootstrapBands",
    "HullCheck",
    "HullPanel",
    "JointRangeFigure",
    "RuntimeRow",
    "RuntimeTable",
    "UtilityCurves",
    "UtilityExperiment",
    "bootstrap_bands",
    "draw_pairs",
    "fig1",
    "fig3",
    "fig5",
    "fig6",
    "hull_check",
    "runtimes",
    "utility_curves",
]
