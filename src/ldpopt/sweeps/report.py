r"""Summaries and plots of a sweep: mean curves with percentile-bootstrap bands.

For every divergence, budget, mechanism and eps the summary gives the mean over instances of
the normalised utility :math:`D_f(M_0\|M_1)/D_f(P_0\|P_1)` (instances whose input divergence is
0 or infinite are skipped and counted) with a percentile-bootstrap band: the instances are
resampled with replacement ``resamples`` times, the SAME resample indices for every mechanism,
budget and eps of a divergence, so the paired structure of the sweep is kept in the bands (as
in the SPR paper's Appendix E / Figure 6).  The same is done for the number of outputs of the
optimal mechanism.  Plotting uses matplotlib's Agg canvas directly (no display, no global
backend switch).
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import KW_ONLY, dataclass
from pathlib import Path

import numpy as np

from ldpopt._extras import require
from ldpopt._validation import check_positive_int, is_real
from ldpopt.sweeps.store import FEATURE, load_results, read_manifest

__all__ = [
    "summarize",
    "summarize_sweep",
    "plot_summary",
    "write_report",
    "store_info",
    "StoreInfo",
    "SUMMARY_COLUMNS",
]

SUMMARY_COLUMNS = (
    "divergence",
    "budget",
    "mechanism",
    "eps",
    "n",
    "skipped",
    "mean_value",
    "mean_normalized",
    "lo",
    "hi",
    "mean_num_outputs",
    "outputs_lo",
    "outputs_hi",
)
#: resampled values held in memory at once while bootstrapping (B x T x columns)
_BOOT_BATCH = 20_000_000
_MECH_ORDER = {"optimal": 0, "kov_lp": 1, "binary": 2, "rr": 3}
_MECH_LABEL = {"optimal": "optimal (SPR)", "kov_lp": "KOV LP", "binary": "binary", "rr": "k-ary RR"}


def _boot_band(M: np.ndarray, idx: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile band of the column means (NaN entries skipped) over the bootstrap resamples ``idx``."""
    B, T = idx.shape
    C = M.shape[1]
    lo = np.full(C, np.nan)
    hi = np.full(C, np.nan)
    step = max(1, _BOOT_BATCH // max(1, B * T))
    q = (100 * (1 - level) / 2, 100 * (1 + level) / 2)
    for a in range(0, C, step):
        block = M[:, a : a + step]
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN resamples
            means = np.nanmean(block[idx], axis=1)  # (B, c)
            lo[a : a + step], hi[a : a + step] = np.nanpercentile(means, q, axis=0)
    return lo, hi


def summarize(df, resamples: int = 1000, seed: int = 0, level: float = 0.95):
    """Mean curves and bootstrap bands of a sweep's rows (a DataFrame from :func:`ldpopt.run_sweep`).

    Parameters
    ----------
    df : pandas.DataFrame
        Sweep rows (columns as in ``docs/sweeps.md``).
    resamples : int
        Bootstrap resamples of the instances (0: no bands).
    seed : int
        Seed of the resample indices (``numpy.random.default_rng``).
    level : float
        Coverage of the percentile band, in (0, 1).

    Returns
    -------
    pandas.DataFrame
        One row per (divergence, budget, mechanism, eps), columns :data:`SUMMARY_COLUMNS`.
    """
    pd = require("pandas", FEATURE, "sweeps")
    if resamples != 0:
        resamples = check_positive_int(resamples, "resamples")
    if not (is_real(level) and 0 < level < 1):
        raise ValueError(f"level must be a float in (0, 1), got level={level!r}")
    rows = []
    for div, sub in df.groupby("divergence", sort=False):
        instances = np.sort(sub["instance_index"].unique())
        T = instances.shape[0]
        rng = np.random.default_rng(seed)
        idx = rng.integers(0, T, size=(resamples, T)) if resamples else None
        keys = sub[["budget", "mechanism", "eps"]].drop_duplicates()
        keys = keys.assign(_m=keys["mechanism"].map(lambda m: _MECH_ORDER.get(m, 9)))
        keys = keys.sort_values(["_m", "budget", "eps"]).drop(columns="_m")
        pos = {i: j for j, i in enumerate(instances)}
        col = {tuple(k): j for j, k in enumerate(keys.itertuples(index=False, name=None))}
        C = len(col)
        norm = np.full((T, C), np.nan)
        val = np.full((T, C), np.nan)
        outs = np.full((T, C), np.nan)
        r = sub["instance_index"].map(pos).to_numpy()
        c = np.array(
            [col[k] for k in zip(sub["budget"], sub["mechanism"], sub["eps"], strict=False)], dtype=np.int64
        )
        norm[r, c] = sub["normalized_utility"].to_numpy(float)
        val[r, c] = sub["value"].to_numpy(float)
        outs[r, c] = sub["num_outputs"].to_numpy(float)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # columns without finite entries
            n = np.sum(np.isfinite(norm), axis=0)
            mean_norm = np.nanmean(norm, axis=0)
            mean_val = np.nanmean(np.where(np.isfinite(val), val, np.nan), axis=0)
            mean_out = np.nanmean(outs, axis=0)
        if idx is not None:
            lo, hi = _boot_band(norm, idx, level)
            olo, ohi = _boot_band(outs, idx, level)
        else:
            lo = hi = olo = ohi = np.full(C, np.nan)
        for (budget, mech, eps), j in col.items():
            rows.append(
                (
                    div,
                    int(budget),
                    mech,
                    float(eps),
                    int(n[j]),
                    int(T - n[j]),
                    mean_val[j],
                    mean_norm[j],
                    lo[j],
                    hi[j],
                    mean_out[j],
                    olo[j],
                    ohi[j],
                )
            )
    return pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))


def summarize_sweep(results, resamples: int = 1000, seed: int = 0, level: float = 0.95):
    """Mean curves with percentile-bootstrap bands per divergence, budget, mechanism and eps.

    ``results`` is a sweep directory or a DataFrame of its rows; see ``docs/sweeps.md``
    (``ldpopt sweep-report``) for the columns and the bootstrap (shared resample indices across
    mechanisms, as in the SPR paper's Appendix E).
    """
    df = load_results(results) if isinstance(results, (str, os.PathLike)) else results
    return summarize(df, resamples=resamples, seed=seed, level=level)


def _label(mech: str, budget: int, budgets: list) -> str:
    base = _MECH_LABEL.get(mech, mech)
    if mech == "optimal" and (budget != 0 or len(budgets) > 1):
        return f"{base}, l = {budget}" if budget else f"{base}, no budget"
    return base


def _draw_panel(ax, sub, div: str, what: str) -> None:
    """One divergence's panel: mean normalised (or raw) utility with bands, or the optimum's outputs."""
    budgets = sorted(sub.loc[sub["mechanism"] == "optimal", "budget"].unique())
    normalized = bool(np.isfinite(sub["mean_normalized"]).any())
    if what == "outputs":
        sub = sub[sub["mechanism"] == "optimal"]
    for (mech, budget), g in sub.groupby(["mechanism", "budget"], sort=False):
        g = g.sort_values("eps")
        if what == "utility":
            y = g["mean_normalized"] if normalized else g["mean_value"]
            lo, hi = g["lo"], g["hi"]
        else:
            y, lo, hi = g["mean_num_outputs"], g["outputs_lo"], g["outputs_hi"]
        best = mech == "optimal" and budget == 0
        (line,) = ax.plot(
            g["eps"],
            y,
            "--" if mech == "kov_lp" else "-",
            label=_label(mech, int(budget), budgets),
            lw=2.2 if best else 1.5,
            zorder=3 if mech == "kov_lp" else 2,
        )
        ok = np.isfinite(lo) & np.isfinite(hi)
        if (normalized or what == "outputs") and ok.any():
            ax.fill_between(g["eps"][ok], lo[ok], hi[ok], color=line.get_color(), alpha=0.18, lw=0)
    ax.set_xlabel(r"$\varepsilon$")
    if what == "utility":
        ax.set_ylabel(r"$D_f(M_0\|M_1)/D_f(P_0\|P_1)$" if normalized else r"$D_f(M_0\|M_1)$")
        ax.set_title(f"{div}: mean utility ({'normalised' if normalized else 'raw'})")
    else:
        from matplotlib.ticker import MaxNLocator

        ax.set_ylabel("optimal number of outputs")
        ax.set_title(f"{div}: outputs of the optimal mechanism")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        top = float(np.nanmax(sub["mean_num_outputs"])) if len(sub) else 2.0
        ax.set_ylim(0.8, max(2.2, top * 1.08))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)


@dataclass(frozen=True)
class StoreInfo:
    """What a sweep directory holds: the instance family, alphabet sizes, progress."""

    #: the instances, e.g. ``"Dirichlet(1)"`` or ``"pairs from fraud.csv"``
    family: str
    #: smallest and largest alphabet size among the finished rows (0, 0 without rows)
    k_min: int
    k_max: int
    _: KW_ONLY  # at most 8 positional fields; the rest by keyword
    #: instances with finished rows, and in the whole sweep
    instances_done: int
    instances_total: int
    cells_done: int
    cells_total: int
    chunks_done: int
    chunks_total: int
    #: the manifest's status (``complete``, ``running``, ``interrupted``, ``failed``, ``incomplete``)
    status: str

    @property
    def partial(self) -> bool:
        """Fewer finished cells than the sweep has."""
        return self.cells_done < self.cells_total

    @property
    def k_text(self) -> str:
        return f"{self.k_min}" if self.k_min == self.k_max else f"{self.k_min}-{self.k_max}"

    def title(self) -> str:
        """``"Dirichlet(1), k = 100, n = 100 instances"`` (+ the partial progress)."""
        text = f"{self.family}, k = {self.k_text}, n = {self.instances_done} instances"
        if self.partial:
            text += f" (partial: {self.cells_done:,} of {self.cells_total:,} cells)"
        return text


def _family(spec: dict) -> str:
    if spec.get("generator") == "dirichlet":
        alpha = [float(a) for a in spec.get("alpha", [])]
        if alpha and all(a == alpha[0] for a in alpha):
            return f"Dirichlet({alpha[0]:g})"
        shown = ", ".join(f"{a:g}" for a in alpha[:4]) + (", ..." if len(alpha) > 4 else "")
        return f"Dirichlet([{shown}])"
    if spec.get("file"):
        return f"pairs from {Path(str(spec['file'])).name}"
    return "instances"


def store_info(directory: str | os.PathLike, df=None) -> StoreInfo:
    """The :class:`StoreInfo` of a sweep directory (``df``: its rows, when already loaded)."""
    manifest = read_manifest(directory)
    if df is None:
        df = load_results(directory, columns=["instance_index", "k"])
    resolved = manifest.get("resolved", {})
    ks = df["k"].to_numpy() if len(df) else np.zeros(1, dtype=np.int64)
    return StoreInfo(
        family=_family(resolved.get("instances", {})),
        k_min=int(ks.min()),
        k_max=int(ks.max()),
        instances_done=int(df["instance_index"].nunique()),
        instances_total=int(resolved.get("num_instances", 0)),
        cells_done=int(manifest["cells"]["done"]),
        cells_total=int(manifest["cells"]["total"]),
        chunks_done=int(manifest["chunks"]["done"]),
        chunks_total=int(manifest["chunks"]["total"]),
        status=str(manifest.get("status", "")),
    )


def plot_summary(
    summary, out_dir: str | Path, formats=("png", "svg"), *, title: str | None = None
) -> list[Path]:
    """Plot utility-vs-eps curves and the optimal number of outputs vs eps (one panel per divergence).

    Writes ``utility_vs_eps.<fmt>`` and ``outputs_vs_eps.<fmt>`` into ``out_dir``; returns the paths.
    ``title``: the figures' title (e.g. :meth:`StoreInfo.title`: instance family, k, n).
    """
    require("matplotlib", "plotting a sweep report", "plots")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    divs = list(dict.fromkeys(summary["divergence"]))
    ncol = min(3, len(divs))
    nrow = math.ceil(len(divs) / ncol)
    written = []
    for what in ("utility", "outputs"):
        fig = Figure(figsize=(5.0 * ncol, 3.8 * nrow), layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(nrow, ncol, squeeze=False).ravel()
        for ax, div in zip(axes, divs, strict=False):
            _draw_panel(ax, summary[summary["divergence"] == div], div, what)
        for ax in axes[len(divs) :]:
            ax.set_visible(False)
        if title:
            fig.suptitle(title)
        for fmt in formats:
            path = out_dir / f"{what}_vs_eps.{fmt}"
            # the title also goes into the file's metadata (PNG text chunk, SVG/PDF title)
            fig.savefig(path, dpi=150, metadata={"Title": title} if title else None)
            written.append(path)
    return written


def _check_out_dir(out_dir: Path) -> None:
    """A report directory that can be created (before any work)."""
    for parent in (out_dir, *out_dir.parents):
        if parent.exists():
            if not parent.is_dir():
                what = "the report directory" if parent == out_dir else f"a parent of {str(out_dir)!r}"
                raise ValueError(f"{str(parent)!r} ({what}) exists and is not a directory")
            return


def write_report(
    directory: str | os.PathLike,
    out_dir: str | os.PathLike | None = None,
    resamples: int = 1000,
    seed: int = 0,
    formats=("png", "svg"),
) -> tuple:
    """Summarise a sweep directory: ``summary.csv`` and the plots in ``out_dir`` (default ``DIR/report``).

    The figures' title names the instance family, the alphabet size k and the number of instances
    n, and says when the store is partial (:func:`store_info`).  Returns (summary DataFrame, list
    of written paths).

    Raises
    ------
    ValueError
        ``directory`` is not a sweep or holds no finished rows; ``out_dir`` (or a parent) exists
        and is not a directory.
    """
    if formats:  # the figures need matplotlib: say so before any work
        require("matplotlib", "plotting a sweep report", "plots")
    out_dir = Path(directory) / "report" if out_dir is None else Path(out_dir)
    _check_out_dir(out_dir)
    df = load_results(directory)
    if df.empty:
        raise ValueError(f"sweep directory {str(directory)!r} holds no finished rows yet")
    info = store_info(directory, df)
    summary = summarize(df, resamples=resamples, seed=seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    csv = out_dir / "summary.csv"
    summary.to_csv(csv, index=False)
    return summary, [csv, *plot_summary(summary, out_dir, formats, title=info.title())]
