"""Figures in the style of the SPR paper (matplotlib, headless).

Every function builds a :class:`matplotlib.figure.Figure` with the Agg canvas directly (no
``pyplot``, no global backend switch, no display needed) and returns it; :func:`save_figure`
writes PNG and SVG.  The data come from :mod:`ldpopt.experiments` / :func:`ldpopt.joint_range`.
Needs matplotlib (the ``plots`` extra): without it every figure raises
:class:`~ldpopt.errors.MissingExtraError` naming the extra.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ldpopt._extras import require

__all__ = [
    "new_figure",
    "save_figure",
    "plot_utility_curves",
    "plot_joint_range",
    "plot_hull_check",
    "plot_runtimes",
    "plot",
    "plot_robust",
    "plot_frequency_gaps",
    "plot_frequency_table",
]

#: what a missing matplotlib is reported for (``MissingExtraError``)
FEATURE = "ldpopt.plots"
#: line styles per mechanism, after the paper's Figure 1
STYLES: dict[str, dict[str, Any]] = {
    "kov_lp": dict(color="0.55", lw=4.0, ls="-", alpha=0.6, zorder=2),
    "spr": dict(color="tab:red", lw=1.8, ls="--", zorder=4),
    "binary": dict(color="tab:blue", lw=1.6, ls="-.", zorder=3),
    "rr": dict(color="tab:green", lw=1.6, ls=":", zorder=3),
}
HULL_STYLE = dict(facecolor="tab:blue", alpha=0.15, edgecolor="none")
HULL_EDGE = dict(color="tab:blue", lw=1.5)
POINT_COLOR = "tab:red"
QUICK_NOTE = "QUICK RUN (reduced size for CI, not the paper's setting)"


def new_figure(width: float = 6.4, height: float = 4.8):
    """A Figure attached to an Agg canvas (safe without a display and without pyplot)."""
    require("matplotlib", FEATURE, "plots")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def save_figure(fig, stem: str | Path, dpi: int = 150) -> list[Path]:
    """Write ``stem.png`` and ``stem.svg``; returns the two paths."""
    matplotlib = require("matplotlib", FEATURE, "plots")

    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_name(stem.name + ".png"), stem.with_name(stem.name + ".svg")]
    fig.savefig(paths[0], dpi=dpi)
    # the layout is settled by the first draw; reuse it rather than re-solving it for the SVG
    engine = fig.get_layout_engine()
    fig.set_layout_engine("none")
    try:
        # text stays text in the SVG (smaller, editable, searchable)
        with matplotlib.rc_context({"svg.fonttype": "none"}):
            fig.savefig(paths[1])
    finally:
        fig.set_layout_engine(engine)
    return paths


def _finish(fig, title: str | None, quick: bool) -> None:
    """Set the figure title; a quick run says so in it."""
    if quick:
        title = f"{title}\n{QUICK_NOTE}" if title else QUICK_NOTE
    if title:
        fig.suptitle(title, fontsize=9.5)


def plot_utility_curves(experiment, bands: bool | None = None):
    r"""Figure 1 (or Figure 6 with ``bands``): one panel per k of mean normalised KL utility vs eps.

    Parameters
    ----------
    experiment : ldpopt.experiments.UtilityExperiment
    bands : bool, optional
        Shade the bootstrap bands (default: when the experiment has them).
    """
    from ldpopt.experiments.utility import MECHANISM_LABELS

    curves = experiment.curves
    if bands is None:
        bands = bool(experiment.bands)
    n = len(curves)
    fig = new_figure(5.0 * n, 4.2)
    axes = fig.subplots(1, n, squeeze=False)[0]
    for i, (ax, c) in enumerate(zip(axes, curves, strict=False)):
        for m in c.mechanisms:
            st = dict(STYLES[m])
            label = MECHANISM_LABELS[m] if m != "rr" else f"{c.k}-ary randomized response"
            ax.plot(c.eps_grid, c.mean(m), label=label, **st)
            if bands and experiment.bands:
                b = experiment.bands[i]
                ax.fill_between(
                    c.eps_grid,
                    b.lower[m],
                    b.upper[m],
                    color=st["color"],
                    alpha=0.18,
                    lw=0,
                    zorder=st["zorder"] - 1,
                )
        ax.set_xlabel(r"$\varepsilon$")
        ax.set_ylabel(r"$D_{kl}(M_0\,\|\,M_1)\;/\;D_{kl}(P_0\,\|\,P_1)$")
        ax.set_xlim(float(c.eps_grid.min()), float(c.eps_grid.max()))
        ax.set_ylim(0.0, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=8, frameon=True)
        ntr = int(np.count_nonzero(c.valid))
        ax.set_title(f"({chr(97 + i)}) k = {c.k}  (T = {ntr} pairs)", fontsize=10)
    title = None
    if bands and experiment.bands:
        b = experiment.bands[0]
        title = (
            f"mean over trials with {100 * b.level:g}% percentile-bootstrap bands "
            f"({b.resamples} resamples, shared indices)"
        )
    _finish(fig, title, experiment.quick)
    return fig


def _draw_joint_range(ax, jr, annotate: bool, point_size: float = 36.0, legend: bool = True) -> None:
    from matplotlib.patches import Polygon

    hull = np.asarray(jr.hull)
    if hull.shape[0] >= 3:
        ax.add_patch(Polygon(hull, closed=True, **HULL_STYLE))
        closed = np.vstack([hull, hull[:1]])
        ax.plot(closed[:, 0], closed[:, 1], label="predicted polytope (Thm. 3.1)", **HULL_EDGE)
    else:
        ax.plot(hull[:, 0], hull[:, 1], label="predicted polytope (Thm. 3.1)", **HULL_EDGE)
    pts = np.asarray(jr.points)
    ext = np.asarray(jr.is_extreme)
    ax.scatter(
        pts[ext, 0], pts[ext, 1], s=point_size, color=POINT_COLOR, zorder=5, label="SPR-induced extreme point"
    )
    ax.scatter(
        pts[~ext, 0],
        pts[~ext, 1],
        s=point_size,
        facecolors="white",
        edgecolors=POINT_COLOR,
        linewidths=1.4,
        zorder=5,
        label="SPR-induced interior point (dominated)",
    )
    if annotate:
        center = hull.mean(axis=0)
        for (x, y), lab, e in zip(pts, jr.labels, ext, strict=False):
            d = np.array([x, y]) - center
            nrm = float(np.hypot(*d))
            d = d / nrm if nrm > 1e-12 else np.array([0.0, 1.0])
            off = 18.0 * d
            text = lab if e else f"{lab} (interior)"
            ax.annotate(
                text,
                (x, y),
                xytext=(off[0], off[1]),
                textcoords="offset points",
                fontsize=6.5,
                ha="left" if d[0] >= 0 else "right",
                va="bottom" if d[1] >= 0 else "top",
                color="0.15",
                zorder=6,
                arrowprops=dict(arrowstyle="-", lw=0.5, color="0.6", shrinkA=0, shrinkB=3),
            )
    ax.set_aspect("equal")
    ax.grid(alpha=0.3)


def plot_joint_range(jr, annotate: bool = True, title: str | None = None, quick: bool = False):
    r"""Figure 3: candidates (filled = extreme, hollow = dominated), labels and the shaded hull.

    Parameters
    ----------
    jr : ldpopt.JointRange or ldpopt.experiments.JointRangeFigure
    """
    if hasattr(jr, "joint_range"):
        quick = quick or jr.quick
        jr = jr.joint_range
    fig = new_figure(7.0, 6.4)
    ax = fig.subplots()
    _draw_joint_range(ax, jr, annotate)
    ax.set_xlim(-0.2, 1.2)
    ax.set_ylim(-0.2, 1.2)
    ax.set_xlabel(r"$\langle Q^\top p, e_1\rangle$ (probability output 1 under $p$)")
    ax.set_ylabel(r"$\langle Q^\top q, e_1\rangle$ (probability output 1 under $q$)")
    ax.set_title(
        title
        or (
            f"joint range $\\mathcal{{R}}_2(p, q)$, k = {jr.k}, $\\varepsilon$ = {jr.eps:g}: "
            f"{jr.num_extreme} of {jr.num_candidates} SPR candidates extreme"
        ),
        fontsize=10,
    )
    ax.legend(loc="lower right", fontsize=7.5)
    _finish(fig, None, quick)
    return fig


def plot_hull_check(check, annotate: bool = False):
    """Figure 5: per eps, the Monte-Carlo cloud (gray), the SPR candidates and the predicted hull."""
    panels = check.panels
    n = len(panels)
    fig = new_figure(4.6 * n, 5.0)
    axes = fig.subplots(1, n, squeeze=False)[0]
    for ax, pn in zip(axes, panels, strict=False):
        cl = pn.cloud
        if cl.shape[0]:
            ax.scatter(
                cl[:, 0],
                cl[:, 1],
                s=1.0,
                color="0.6",
                alpha=0.35,
                lw=0,
                rasterized=True,
                zorder=1,
                label=r"random $\varepsilon$-LDP channel (Monte Carlo)",
            )
        _draw_joint_range(ax, pn.joint_range, annotate, point_size=28.0)
        ax.set_xlim(-0.4, 1.4)
        ax.set_ylim(-0.4, 1.4)
        ax.set_xlabel(r"$\langle Q^\top p, e_1\rangle$")
        ax.set_title(
            f"$\\varepsilon$ = {pn.eps:g}: {pn.extreme_count}/{pn.joint_range.num_candidates} extreme, "
            f"acceptance {100 * pn.acceptance_rate:.3f}%, outside hull: {pn.outside_hull}",
            fontsize=8.5,
        )
    axes[0].set_ylabel(r"$\langle Q^\top q, e_1\rangle$")
    from matplotlib.lines import Line2D

    handles, labels = axes[0].get_legend_handles_labels()
    cloud_label = r"random $\varepsilon$-LDP channel (Monte Carlo)"
    if cloud_label in labels:
        handles[labels.index(cloud_label)] = Line2D([], [], ls="none", marker="o", ms=4, color="0.6")
    fig.legend(handles, labels, loc="outside lower center", ncol=4, fontsize=8, markerscale=1.5)
    p = ", ".join(f"{x:g}" for x in check.p0)
    q = ", ".join(f"{x:g}" for x in check.p1)
    _finish(
        fig,
        f"Joint range $\\mathcal{{R}}_2(p, q)$ for k = {len(check.p0)}, m = 2 across "
        f"{n} privacy levels; p = ({p}), q = ({q})",
        check.quick,
    )
    return fig


def plot_runtimes(table):
    """Runtimes: seconds per solve vs k, log-log, SPR solver and KOV LP, with k^2 / k^3 guides."""
    fig = new_figure(6.4, 4.6)
    ax = fig.subplots()
    ks, ts = table.series("spr")
    lk, lt = table.series("kov_lp")
    if lk.size:
        ax.plot(lk, lt, "s-", color="0.3", lw=1.5, ms=5, label=r"KOV staircase LP ($2^k-1$ variables, HiGHS)")
    if ks.size:
        ax.plot(
            ks, ts, "o-", color=POINT_COLOR, lw=1.5, ms=5, label=f"SPR solver ({table.spr_method or 'dp'})"
        )
        # k^2 / k^3 guides through the largest SPR measurement, kept within the data's time range
        k0, t0 = float(ks[-1]), float(ts[-1])
        ymin = float(min(ts.min(), lt.min() if lt.size else np.inf))
        if k0 > ks.min():
            for power, ls in ((2, (0, (4, 3))), (3, (0, (1, 2)))):
                kmin = max(float(ks.min()), k0 * (ymin / t0) ** (1.0 / power))
                grid = np.geomspace(kmin, k0, 50)
                ax.plot(
                    grid, t0 * (grid / k0) ** power, ls=ls, color="0.6", lw=1, label=rf"$\propto k^{power}$"
                )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("alphabet size k")
    ax.set_ylabel("seconds per solve (median)")
    ax.set_title(f"KL, $\\varepsilon$ = {table.eps:g}, no output budget", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())
    _finish(fig, None, table.quick)
    return fig


def plot(result: Any):
    """Dispatch on the experiment result type."""
    from ldpopt.experiments import HullCheck, JointRangeFigure, RuntimeTable, UtilityExperiment
    from ldpopt.experiments.chernoff import ChernoffExperiment
    from ldpopt.spr.joint_range import JointRange

    if isinstance(result, UtilityExperiment):
        return plot_utility_curves(result)
    if isinstance(result, (JointRange, JointRangeFigure)):
        return plot_joint_range(result)
    if isinstance(result, HullCheck):
        return plot_hull_check(result)
    if isinstance(result, RuntimeTable):
        return plot_runtimes(result)
    if isinstance(result, ChernoffExperiment):
        return plot_chernoff_curves(result)
    raise TypeError(f"result must be an ldpopt.experiments result, got {type(result).__name__}")


#: line styles of the robust experiment (``ldpopt reproduce robust``), in drawing order
ROBUST_STYLES: dict[str, dict[str, Any]] = {
    "robust": STYLES["spr"],
    "plug_in": dict(color="black", lw=1.4, ls="-", zorder=3),
    "binary": STYLES["binary"],
    "rr": STYLES["rr"],
}


def _robust_panel(ax, sub, x: str) -> None:
    """One line per mechanism of ``sub``: the mean over the trials of ``normalized`` against ``x``."""
    for mech, st in ROBUST_STYLES.items():
        m = sub[sub["mechanism"] == mech].groupby(x)["normalized"].mean()
        if len(m):
            ax.plot(m.index, m.values, marker="o", ms=3, label=mech.replace("_", "-"), **st)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)


def plot_robust(experiment):
    """Robust design: worst-case normalised KL utility, one column per instance family, one line
    per mechanism (means over the trials).

    Top row: against the TV radius (both sides) at eps = 2 (or the run's middle eps), normalised
    by the centres' divergence.  Bottom row: against the number of samples n behind the
    ``from_counts`` estimates (log axis), normalised by the true pair's divergence.  A row without
    rows in the run is left out."""
    frame = experiment.to_frame()
    radius = frame[frame["n"].isna()]
    by_n = frame[frame["n"].notna() & (frame["normalized_by"] == "truth")]
    eps_values = sorted(radius["eps"].unique())
    eps = 2.0 if 2.0 in eps_values else (eps_values[len(eps_values) // 2] if eps_values else None)
    fams = list(dict.fromkeys(frame["family"]))
    panels = [p for p, sub in (("radius", radius), ("n", by_n)) if len(sub)]
    fig = new_figure(4.6 * len(fams), 4.0 * len(panels))
    axes = fig.subplots(len(panels), len(fams), squeeze=False)
    for row, panel in zip(axes, panels, strict=True):
        for ax, fam in zip(row, fams, strict=True):
            if panel == "radius":
                sub = radius[(radius["family"] == fam) & (radius["eps"] == eps)]
                _robust_panel(ax, sub, "radius")
                ax.set_xlabel("TV radius (both sides)")
                ax.set_ylabel("worst-case D_kl / D_kl(P0_hat || P1_hat)")
                ax.set_title(f"{fam}, eps = {eps:g}: against the radius", fontsize=10)
            else:
                sub = by_n[by_n["family"] == fam]
                _robust_panel(ax, sub, "n")
                ax.set_xscale("log")
                ax.set_xlabel("samples n per distribution (95% TV confidence sets)")
                ax.set_ylabel("worst-case D_kl / D_kl(P0 || P1) (true pair)")
                eps_n = ", ".join(f"{e:g}" for e in sorted(sub["eps"].unique()))
                ax.set_title(f"{fam}, eps = {eps_n}: against n", fontsize=10)
    _finish(fig, "certified worst-case utility over total-variation neighbourhoods", experiment.quick)
    return fig


#: line styles of the Chernoff experiment (``ldpopt reproduce chernoff``)
CHERNOFF_STYLES: dict[str, dict[str, Any]] = {
    "chernoff": dict(color="tab:red", lw=1.8, ls="-", zorder=4),
    "kl": dict(color="tab:purple", lw=1.6, ls="--", zorder=5),  # on top: the curves nearly coincide
    "binary": STYLES["binary"],
    "rr": STYLES["rr"],
}


def plot_chernoff_curves(experiment):
    r"""One panel per k: mean normalised Chernoff information :math:`C(M_0,M_1)/C(P_0,P_1)` vs eps of
    the Chernoff-optimal and KL-optimal designs and the baselines, with the bootstrap bands."""
    from ldpopt.experiments.chernoff import CHERNOFF_LABELS

    curves = experiment.curves
    fig = new_figure(5.0 * len(curves), 4.2)
    axes = fig.subplots(1, len(curves), squeeze=False)[0]
    for i, (ax, c) in enumerate(zip(axes, curves, strict=True)):
        for m in c.mechanisms:
            st = CHERNOFF_STYLES[m]
            ax.plot(c.eps_grid, c.mean(m), label=CHERNOFF_LABELS[m], **st)
            if experiment.bands:
                b = experiment.bands[i]
                ax.fill_between(c.eps_grid, b.lower[m], b.upper[m], color=st["color"], alpha=0.18, lw=0)
        ax.set_xlabel(r"$\varepsilon$")
        ax.set_ylabel(r"$C(M_0, M_1)\;/\;C(P_0, P_1)$")
        ax.set_ylim(0.0, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=8, frameon=True)
        ax.set_title(f"({chr(97 + i)}) k = {c.k}  (T = {int(np.count_nonzero(c.valid))} pairs)", fontsize=10)
    _finish(fig, "Chernoff information (Bayes-error exponent) of each design", experiment.quick)
    return fig


#: one colour per deployed frequency oracle (subset selection's two roundings share one, dashed)
FREQUENCY_COLORS = {
    "grr": "tab:blue",
    "sue": "tab:orange",
    "oue": "tab:green",
    "basic_rappor": "tab:olive",
    "olh": "tab:red",
    "subset": "tab:purple",
    "hadamard": "tab:brown",
}


def _frequency_panel(ax, records: list[dict], title: str) -> None:
    """Ratio to the reference (log scale) against eps, one line per mechanism; subset selection's
    two roundings as one 'floor'/'ceil' pair of lines (their d changes with eps)."""
    lines: dict[str, list[tuple[float, float]]] = {}
    for r in records:
        key = r["kind"]
        if key == "basic_rappor":  # the same mechanism as SUE (one hash, f = 2/(e^(eps/2)+1))
            continue
        if key == "sue":
            key = "sue = basic_rappor"
        if key == "subset":
            same = sorted(x["mechanism"] for x in records if x["kind"] == "subset" and x["eps"] == r["eps"])
            key = "subset (floor d)" if r["mechanism"] == same[0] else "subset (ceil d)"
        lines.setdefault(key, []).append((r["eps"], r["ratio_uniform"]))
    for key, pts in lines.items():
        pts.sort()
        kind = key.split(" ")[0]
        ax.plot(
            [p[0] for p in pts],
            [p[1] for p in pts],
            marker="o",
            ms=3,
            lw=1.3,
            ls="--" if "ceil" in key else "-",
            color=FREQUENCY_COLORS.get(kind, "black"),
            label=key,
        )
    ax.set_yscale("log")
    ax.set_xlabel(r"$\varepsilon$")
    ax.grid(alpha=0.3, which="both")
    ax.set_title(title, fontsize=10)


#: what each reference of the gap table is, in a legend
_REFERENCE_TEXT = {
    "optimum": "the exact optimum",
    "lower bound": "a certified lower bound on the optimum",
    "best deployed": "the best deployed mechanism",
}


def _reference_note(records: list[dict]) -> str:
    refs = sorted({r["reference"] for r in records})
    return "ratio to " + " / ".join(_REFERENCE_TEXT.get(x, x) for x in refs)


def plot_frequency_gaps(experiment):
    """One panel per k: each deployed frequency oracle's variance_uniform over the reference's
    (the exact optimum, a certified lower bound, or the best deployed mechanism; the legend says
    which) against eps."""
    ks = experiment.ks
    fig = new_figure(4.2 * len(ks), 4.0)
    axes = fig.subplots(1, len(ks), squeeze=False)[0]
    for i, (ax, k) in enumerate(zip(axes, ks, strict=True)):
        recs = [r for r in experiment.records if r["k"] == k]
        _frequency_panel(ax, recs, f"({chr(97 + i)}) k = {k}")
        ax.set_ylabel("variance_uniform / reference")
        ax.legend(fontsize=7, title=_reference_note(recs), title_fontsize=7)
    _finish(fig, "Frequency estimation: deployed mechanisms against the optimum", experiment.quick)
    return fig


def plot_frequency_table(results):
    """The gap table of ``ldpopt frequency`` (one CompareResult per eps at one k) as one panel."""
    records = [
        {
            "k": res.k,
            "eps": res.eps,
            "mechanism": row.mechanism,
            "kind": row.kind,
            "ratio_uniform": row.ratio_uniform,
            "reference": res.reference,
        }
        for res in results
        for row in res.rows
    ]
    fig = new_figure(6.0, 4.2)
    ax = fig.subplots()
    _frequency_panel(ax, records, f"k = {results[0].k}")
    ax.set_ylabel("variance_uniform / reference")
    ax.legend(fontsize=7, title=_reference_note(records), title_fontsize=7)
    return fig
