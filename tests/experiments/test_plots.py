"""Headless tests of ldpopt.plots."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from ldpopt import experiments as ex
from ldpopt import plots

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def fig6_small():
    return ex.fig6(ks=(4, 12), trials=4, eps_grid=[0.0, 1.0, 3.0, 6.0], resamples=50, quick=True)


def _check_saved(fig, tmp_path, stem):
    png, svg = plots.save_figure(fig, tmp_path / stem, dpi=40)
    assert png.read_bytes()[:8] == PNG_MAGIC
    text = svg.read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text
    return text


def _texts(fig):
    out = [t.get_text() for t in fig.texts]
    if fig._suptitle is not None:
        out.append(fig._suptitle.get_text())
    for ax in fig.axes:
        out += [ax.get_title(), ax.get_xlabel(), ax.get_ylabel()] + [t.get_text() for t in ax.texts]
        leg = ax.get_legend()
        if leg is not None:
            out += [t.get_text() for t in leg.get_texts()]
    for leg in fig.legends:
        out += [t.get_text() for t in leg.get_texts()]
    return out


def test_utility_curves_plot(fig6_small, tmp_path):
    fig = plots.plot_utility_curves(fig6_small)
    assert len(fig.axes) == 2
    texts = _texts(fig)
    assert any("optimal (KOV LP)" in t for t in texts)  # the LP only in the k = 4 panel
    assert sum("SPR mechanism (DP, ours)" in t for t in texts) == 2
    assert any(plots.QUICK_NOTE in t for t in texts)  # quick runs are labelled
    ax = fig.axes[0]
    spr = [ln for ln in ax.get_lines() if ln.get_label() == "SPR mechanism (DP, ours)"][0]
    # the plot draws c.mean("spr") itself: the same values
    assert np.array_equal(spr.get_ydata(), fig6_small.curves[0].mean("spr"))
    assert len(ax.collections) == 4  # one bootstrap band per mechanism
    _check_saved(fig, tmp_path, "fig6")
    # without bands
    fig1 = plots.plot_utility_curves(fig6_small, bands=False)
    assert len(fig1.axes[0].collections) == 0


def test_joint_range_plot(tmp_path):
    res = ex.fig3()
    fig = plots.plot_joint_range(res)
    ax = fig.axes[0]
    texts = [t.get_text() for t in ax.texts]
    assert len(texts) == 10
    assert sum(t.endswith("(interior)") for t in texts) == 4
    filled, hollow = ax.collections[0], ax.collections[1]
    assert len(filled.get_offsets()) == 6 and len(hollow.get_offsets()) == 4
    assert not any(plots.QUICK_NOTE in t for t in _texts(fig))
    svg = _check_saved(fig, tmp_path, "fig3")
    assert "interior" in svg


def test_joint_range_plot_degenerate_segment(tmp_path):
    import ldpopt

    jr = ldpopt.joint_range([0.5, 0.5], [0.5, 0.5], 1.0)
    _check_saved(plots.plot_joint_range(jr), tmp_path, "seg")


def test_hull_check_plot(tmp_path):
    res = ex.hull_check(samples=2000, quick=True)
    fig = plots.plot_hull_check(res)
    assert len(fig.axes) == 3
    assert any("outside hull: 0" in ax.get_title() for ax in fig.axes)
    assert any(plots.QUICK_NOTE in t for t in _texts(fig))
    _check_saved(fig, tmp_path, "fig5")


def test_runtimes_plot(tmp_path):
    res = ex.runtimes(lp_ks=(4,), spr_ks=(4, 8), repeats=1)
    fig = plots.plot_runtimes(res)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    _check_saved(fig, tmp_path, "rt")


def test_dispatch_and_errors(fig6_small):
    assert len(plots.plot(fig6_small).axes) == 2
    assert len(plots.plot(ex.fig3().joint_range).axes) == 1
    with pytest.raises(TypeError, match="result"):
        plots.plot(42)


def test_headless_in_a_fresh_process(tmp_path):
    # no display, no MPLBACKEND: plotting works and never imports pyplot
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "MPLBACKEND", "WAYLAND_DISPLAY")}
    code = (
        "import sys; from ldpopt import experiments as ex, plots\n"
        f"plots.save_figure(plots.plot_joint_range(ex.fig3()), {str(tmp_path / 'x')!r})\n"
        "assert 'matplotlib.pyplot' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=120)
    assert (tmp_path / "x.png").exists() and (tmp_path / "x.svg").exists()


ROBUST_MECHS = ("robust", "plug_in", "binary", "rr")


def test_robust_plot_has_radius_and_n_panels(tmp_path):
    from ldpopt.experiments.robust import RobustExperiment, robust_experiment

    fams, sizes = ("paper", "dirichlet k=6"), (100, 1000)
    exp = robust_experiment(fams, radii=(0.0, 0.05), eps=(2.0,), sizes=sizes, trials=2)
    fig = plots.plot_robust(exp)
    assert len(fig.axes) == 2 * len(fams)  # a row of radius panels over a row of n panels
    radius_axes, n_axes = fig.axes[: len(fams)], fig.axes[len(fams) :]
    for ax in radius_axes:
        assert ax.get_xscale() == "linear" and "radius" in ax.get_xlabel()
        assert len(ax.get_lines()) == len(ROBUST_MECHS)
    for fam, ax in zip(fams, n_axes, strict=True):
        assert fam in ax.get_title() and "against n" in ax.get_title()
        assert ax.get_xscale() == "log" and "true pair" in ax.get_ylabel()
        lines = {ln.get_label(): ln for ln in ax.get_lines()}
        assert sorted(lines) == sorted(m.replace("_", "-") for m in ROBUST_MECHS)
        for mech in ROBUST_MECHS:
            # the rows themselves, averaged here over the trials (2 for the Dirichlet family)
            rows = [
                r
                for r in exp.rows
                if r["family"] == fam and r["mechanism"] == mech and r["normalized_by"] == "truth"
            ]
            assert len(rows) == len(sizes) * (1 if fam == "paper" else 2)
            want = [np.mean([r["normalized"] for r in rows if r["n"] == n]) for n in sizes]
            line = lines[mech.replace("_", "-")]
            assert np.array_equal(line.get_xdata(), sizes)
            # a mean of at most 2 values, pandas vs numpy: at most one rounding apart
            assert np.allclose(line.get_ydata(), want, rtol=4e-16, atol=0)
    _check_saved(fig, tmp_path, "robust")
    # a run without the n curves: the radius row only
    radius_only = RobustExperiment(rows=tuple(r for r in exp.rows if r["n"] is None))
    assert len(plots.plot_robust(radius_only).axes) == len(fams)
