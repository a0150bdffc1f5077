"""Benchmark of ``ldpopt.run_sweep`` on the Figure-1b grid.

Workload: k = 100, T = 100 Dirichlet(1_k) pairs, 101 eps values (0.1, 0.2, ..., 10.1), KL, no
output budget (10,100 optimal solves = cells), plus the binary and k-ary RR baselines of
Figure 1b.  For each scheduler it prints the wall time of ``run_sweep`` (worker start-up, solving,
Parquet store and manifest included), cells per second, the store overhead (building the Arrow
table + writing Parquet and the manifest, over the solve time reported by the chunks), and
compares with the reference measured in the same run: one direct ``ldpopt.sweep`` call over the
whole grid in this process (all cores, no store, no baselines), and the largest relative
difference of the optimal values (0: the same code path).

Run:  python benchmarks/bench_sweep.py            (Figure-1b grid)
      python benchmarks/bench_sweep.py --quick    (T = 20, for a smoke test)
      python benchmarks/bench_sweep.py --trials 400   (a longer sweep: worker start-up amortised)
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np


def config(trials: int) -> dict:
    return {
        "instances": {"generator": "dirichlet", "k": 100, "trials": trials, "alpha": 1.0, "seed": 0},
        "grid": {
            "eps": {"start": 0.1, "stop": 10.1, "step": 0.1},
            "divergences": ["kl"],
            "max_outputs": [0],
            "baselines": ["binary", "rr"],
        },
    }


def reference(cfg: dict):
    """One direct ldpopt.sweep call over the whole grid (this process, all cores, no store)."""
    import ldpopt
    from ldpopt.sweeps.config import parse_config

    parsed = parse_config(cfg)
    pairs = parsed.instances.get(0, parsed.num_instances)
    p0s = np.vstack([u for u, _ in pairs])
    p1s = np.vstack([v for _, v in pairs])
    ldpopt.sweep(
        p0s[:1], p1s[:1], parsed.eps[:2], "kl", progress=False
    )  # JIT / cache load outside the timing
    t0 = time.perf_counter()
    res = ldpopt.sweep(p0s, p1s, parsed.eps, "kl", return_partitions=True, progress=False)
    return time.perf_counter() - t0, res.values, parsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="T = 20 instead of 100")
    ap.add_argument("--trials", type=int, default=None, help="T (default 100, the Figure-1b grid)")
    ap.add_argument("--skip-dask", action="store_true", help="only the local process pool")
    args = ap.parse_args()
    from ldpopt.sweeps import chunks, runner

    trials = args.trials or (20 if args.quick else 100)
    cfg = config(trials)
    cores = os.cpu_count()
    t_ref, ref_values, parsed = reference(cfg)
    cells = parsed.num_cells
    ipc = chunks.plan_chunks(parsed)
    print(
        f"Figure-1b grid: k = 100, T = {trials}, {len(parsed.eps)} eps, KL, no budget: {cells} cells "
        f"(+ binary and RR rows); {-(-trials // ipc)} chunks of {ipc} instances; {cores} cores"
    )
    print(
        f"reference: direct ldpopt.sweep over the grid, in-process: {t_ref:.3f} s = "
        f"{cells / t_ref:,.0f} cells/s"
    )
    schedulers = [("processes", 2), ("inline", 1)]
    if not args.skip_dask:
        schedulers.insert(1, ("dask-local", 2))
    header = (
        f"{'scheduler':<12} {'workers':>7} {'wall s':>8} {'cells/s':>9} {'solve s':>8} {'table s':>8} "
        f"{'store s':>8} {'store %':>8} {'overhead':>9} {'wall/ref':>9} {'max rel diff':>13}"
    )
    print(header)
    print("-" * len(header))
    for name, workers in schedulers:
        out = Path(tempfile.mkdtemp(prefix=f"bench-sweep-{name}-"))
        try:
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # a failed chunk must not pass silently
                df = runner.run_sweep(cfg, out, scheduler=name, workers=workers, quiet=True)
            wall = time.perf_counter() - t0
            run = runner.read_manifest(out)["runs"][-1]
        finally:
            shutil.rmtree(out, ignore_errors=True)
        opt = df[df.mechanism == "optimal"].sort_values(["instance_index", "eps"])
        vals = opt["value"].to_numpy().reshape(ref_values.shape)
        with np.errstate(all="ignore"):
            rel = np.nanmax(np.abs(vals - ref_values) / np.maximum(np.abs(ref_values), 1e-300))
        solve, table, store = run["solve_seconds"], run["build_seconds"], run["store_seconds"]
        print(
            f"{name:<12} {workers:>7} {wall:>8.3f} {cells / wall:>9,.0f} {solve:>8.3f} {table:>8.3f} "
            f"{store:>8.3f} {100 * store / solve:>7.1f}% {100 * (table + store) / solve:>8.1f}% "
            f"{wall / t_ref:>9.2f} {rel:>13.1e}"
        )
    print(
        "solve = solver + baselines time summed over chunks; "
        "table = partition strings + Arrow table (workers);"
    )
    print(
        "store = atomic Parquet chunk files + manifest (driver); store % = store / solve (target < 10%); "
        "overhead = (table + store) / solve"
    )


if __name__ == "__main__":
    main()
