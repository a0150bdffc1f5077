"""Regenerate the tables of numbers in ``docs/experiments.md`` from the commands that produce them.

Each table sits between two markers in the page::

    <!-- generated: NAME -->
    ...
    <!-- end generated: NAME -->

and is rebuilt from the files that ``ldpopt reproduce ...`` writes (``summary.json`` and the
CSV), run here at full size in a temporary directory.  Usage::

    python docs/generate_tables.py                 # rewrite every table
    python docs/generate_tables.py fig6-points     # only these tables
    python docs/generate_tables.py --check         # exit 1 if a deterministic table is stale

``--check`` compares only the tables whose numbers do not depend on the machine (seeded
results printed to a few digits); the timing tables are rewritten but never checked.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "experiments.md"


# --------------------------------------------------------------------------------------------
# runs
# --------------------------------------------------------------------------------------------
class Runs:
    """Runs each ``ldpopt reproduce NAME`` once (full size) and caches its outputs."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self._done: dict[str, Path] = {}

    def out(self, name: str) -> Path:
        if name not in self._done:
            out = self.workdir / name
            cmd = [sys.executable, "-m", "ldpopt", "reproduce", name, "--out", str(out)]
            print("running:", " ".join(cmd[2:]), file=sys.stderr)
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            self._done[name] = out
        return self._done[name]

    def summary(self, name: str) -> dict:
        return json.loads((self.out(name) / "summary.json").read_text())

    def rows(self, name: str, file: str | None = None) -> list[dict[str, str]]:
        with open(self.out(name) / (file or f"{name}.csv"), newline="") as fh:
            return list(csv.DictReader(fh))


def _curve(rows: list[dict[str, str]], k: int, mechanism: str) -> dict[float, dict[str, float]]:
    return {
        float(r["eps"]): {key: float(r[key]) for key in ("mean", "lower", "upper")}
        for r in rows
        if int(r["k"]) == k and r["mechanism"] == mechanism
    }


def _within(rows: list[dict[str, str]], k: int, rel: float) -> float:
    """Smallest grid eps > 0 at which k-RR reaches (1 - rel) of the SPR curve."""
    spr, rr = _curve(rows, k, "spr"), _curve(rows, k, "rr")
    return min(e for e in sorted(spr) if e > 0 and rr[e]["mean"] >= (1 - rel) * spr[e]["mean"])


def _table(header: list[str], body: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return "\n".join(lines)


def _sci(x: float) -> str:
    return f"{x:.1e}"


# --------------------------------------------------------------------------------------------
# tables
# --------------------------------------------------------------------------------------------
def fig6_results(runs: Runs) -> str:
    s, rows = runs.summary("fig6"), runs.rows("fig6")
    spr, rr = _curve(rows, 100, "spr"), _curve(rows, 100, "rr")
    ratios = ", ".join(f"{rr[e]['mean'] / spr[e]['mean']:.2f}" for e in (4.6, 6.0, 8.0, 10.0))
    lp_fail = s["lp_failures"]["6"]
    body = [
        ["max over 100 × 101 of \\|SPR − KOV LP\\|, k = 6", _sci(s["max_abs_spr_minus_lp"]), "<= 6.1e-14"],
        ["LP failures, k = 6", f"{lp_fail} of 10,100", "–"],
        [
            "baseline above SPR (any trial, eps, k)",
            f"<= {_sci(max(s['max_baseline_minus_spr'], 0.0))} (round-off)",
            "–",
        ],
        ["binary plateau (mean over eps >= 5), k = 6", f"{s['binary_plateau']['6']:.3f}", "≈ 0.72"],
        ["binary plateau, k = 100", f"{s['binary_plateau']['100']:.3f}", "≈ 0.56"],
        ["RR / SPR at eps = 0.5, k = 6", f"{s['rr_over_spr_at_0_5']['6']:.3f}", "below 25%"],
        ["RR within 5% of SPR, k = 6", f"eps = {s['rr_within_5pct_eps']['6']:g}", "eps ≈ 4"],
        ['RR within 1% of SPR, k = 6 ("full parity")', f"eps = {_within(rows, 6, 0.01):g}", "≈ 6"],
        [
            "RR / SPR at eps = 0.5, k = 100",
            f"{s['rr_over_spr_at_0_5']['100']:.4f}",
            '"essentially uninformative"',
        ],
        ["RR / SPR at eps = 4.6 (= ln 99), 6, 8, 10, k = 100", ratios, '"catches up once e^eps ≳ k − 1"'],
        ["RR within 5% of SPR, k = 100", f"eps = {s['rr_within_5pct_eps']['100']:g}", "–"],
        ["trials skipped", str(s["trials_skipped"]["6"] + s["trials_skipped"]["100"]), "0 (measure zero)"],
    ]
    return _table(["quantity", "ours", "paper"], body)


def fig6_timing(runs: Runs) -> str:
    s = runs.summary("fig6")
    body = [
        [
            "SPR sweep, k = 100, 100 × 101 solves",
            f"{s['spr_runtime_s']['100']:.2f} s (`{s['spr_method']['100']}`)",
            "17.8 s (M3 Pro laptop)",
        ],
        ["SPR sweep, k = 6, 100 × 101 solves", f"{s['spr_runtime_s']['6']:.3f} s", "–"],
    ]
    return _table(["quantity", "ours", "paper"], body)


def fig6_points(runs: Runs) -> str:
    rows = runs.rows("fig6")
    body = []
    for k, eps_list in ((6, (0.5, 2.0, 5.0, 10.0)), (100, (2.0, 5.0, 10.0))):
        curves = [_curve(rows, k, m) for m in ("spr", "binary", "rr")]
        for eps in eps_list:
            cells = [f"{c[eps]['mean']:.3f} [{c[eps]['lower']:.3f}, {c[eps]['upper']:.3f}]" for c in curves]
            body.append([str(k), f"{eps:g}", *cells])
    return _table(["k", "eps", "SPR", "binary", "k-RR"], body)


def fig3_extreme(runs: Runs) -> str:
    s = runs.summary("fig5")
    paper_source = {0.4: "Figure 5", 2.0: "Figure 3", 5.0: "Figure 5"}
    body = []
    for panel in s["panels"]:
        eps = panel["eps"]
        body.append(
            [
                f"{eps:g}",
                f"{panel['extreme_count']} of {panel['candidate_count']}",
                f"{panel['paper_extreme_count']} ({paper_source.get(eps, '')})",
            ]
        )
    return _table(["eps", "ours (extreme candidates)", "paper"], body)


def _reference() -> object:
    spec = importlib.util.spec_from_file_location("reference", ROOT / "tests" / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fig5_acceptance(runs: Runs) -> str:
    s = runs.summary("fig5")
    reference = _reference()
    k = len(s["p0"])
    body = []
    for p in s["panels"]:
        exact = reference.binary_rejection_acceptance(p["eps"], k, p["proposal"])  # type: ignore[attr-defined]
        body.append(
            [
                f"{p['eps']:g}",
                f"{p['accepted']:,} of {p['samples']:,}",
                f"{100 * p['acceptance_rate']:.3f}%",
                f"{100 * p['paper_acceptance_rate']:.3f}%",
                f"{100 * exact:.4f}%",
                str(p["extreme_count"]),
                str(p["outside_hull"]),
                _sci(p["max_outside_distance"]),
            ]
        )
    header = [
        "eps",
        "accepted",
        "acceptance",
        "paper",
        "exact probability (quadrature)",
        "extreme",
        "outside hull",
        "max signed distance",
    ]
    return _table(header, body)


def runtimes(runs: Runs) -> str:
    rows = runs.rows("runtimes")
    med: dict[str, dict[int, float]] = {}
    for r in rows:
        if r["status"] == "ok":
            med.setdefault(r["solver"], {})[int(r["k"])] = float(r["seconds_per_solve"])
    ks = [4, 8, 12, 16, 100, 1000, 5000, 10000]
    lp = med.get("kov_lp", {})
    spr = next((v for key, v in med.items() if key != "kov_lp"), {})

    def cell(d: dict[int, float], k: int) -> str:
        return f"{d[k]:.2g}" if k in d else "–"

    body = [
        ["KOV LP (s)", *[cell(lp, k) for k in ks]],
        ["SPR solver (s)", *[cell(spr, k) for k in ks]],
        ["LP / SPR", *[f"{lp[k] / spr[k]:,.0f}" if k in lp and k in spr else "" for k in ks]],
    ]
    return _table(["k", *[f"{k:,}" for k in ks]], body)


@dataclass(frozen=True)
class Generated:
    render: Callable[[Runs], str]
    #: True when the numbers do not depend on the machine (checked by --check)
    deterministic: bool


TABLES: dict[str, Generated] = {
    "fig6-results": Generated(fig6_results, deterministic=False),  # holds round-off sized values
    "fig6-timing": Generated(fig6_timing, deterministic=False),
    "fig6-points": Generated(fig6_points, deterministic=True),
    "fig3-extreme": Generated(fig3_extreme, deterministic=True),
    "fig5-acceptance": Generated(fig5_acceptance, deterministic=True),
    "runtimes": Generated(runtimes, deterministic=False),
}


def _block(name: str) -> re.Pattern[str]:
    return re.compile(
        rf"(<!-- generated: {re.escape(name)} -->\n)(.*?)(\n<!-- end generated: {re.escape(name)} -->)",
        re.S,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"tables to rebuild (default: all): {', '.join(TABLES)}")
    parser.add_argument("--check", action="store_true", help="compare the deterministic tables only")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.names) - set(TABLES))
    if unknown:
        parser.error(f"unknown table(s): {', '.join(unknown)}")
    names = args.names or list(TABLES)
    if args.check:
        names = [n for n in names if TABLES[n].deterministic]
    page = PAGE.read_text()
    stale = []
    with tempfile.TemporaryDirectory() as tmp:
        runs = Runs(Path(tmp))
        for name in names:
            pattern = _block(name)
            match = pattern.search(page)
            if match is None:
                raise SystemExit(f"{PAGE}: no markers for table {name!r}")
            table = TABLES[name].render(runs)
            if match.group(2) != table:
                stale.append(name)
                page = pattern.sub(lambda m, t=table: m.group(1) + t + m.group(3), page)
    if args.check:
        if stale:
            print(f"stale tables in {PAGE.name}: {', '.join(stale)} (run docs/generate_tables.py)")
            return 1
        print(f"{len(names)} generated tables up to date")
        return 0
    PAGE.write_text(page)
    print(f"rewrote {len(stale)} of {len(names)} tables in {PAGE.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
