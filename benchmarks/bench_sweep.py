"""Benchmark of ``ldpopt.run_sweep`` on the Figure-1b grid.

Workload: k = 100, T = 100 Dirichlet(1_k) pairs, 101 eps values (0.1, 0.2, ..., 10.1), KL, no
output budget (10,100 optimal solves = cells), plus the binary and k-ary RR baselines of
Figure 1b.  For each scheduler it prints the wall time of ``run_sweep`` (worker start-up, solving,
Parquet store and manifest included), cells per second, the store overhead (building the Arrow
table + writing Parquet and the manifest, over the solve time reported by the chunks), and
compares with the reference measured in the same run: one direct ``ldpopt.sweep`` call over the
whole grid in this process (all cores, no store, no baselines), and the largest relative
difference of the optimal values (0: the same code path).

``--cli`` measures what a user of ``ldpopt sweep`` feels instead: the command in a fresh process
on the same grid, warm (numba cache filled; the rows' runs interleaved) and cold (an empty
``NUMBA_CACHE_DIR``, a fresh temporary directory), with the default scheduler (``auto``: threads
of the driver for a sweep this small), ``inline`` and a pool of 2 worker processes.  The
reference, in the same run, is the sweep's solving work on one core: every chunk computed one
after the other in this process (the "solving time" of the goal wall <= 1.5x solving).  Cold
runs set ``NUMBA_DEBUG_CACHE=1`` and count the kernels saved to the cache twice (a worker
compiling what the driver already compiled): 0 expected.

Run:  python benchmarks/bench_sweep.py            (Figure-1b grid)
      python benchmarks/bench_sweep.py --quick    (T = 20, for a smoke test)
      python benchmarks/bench_sweep.py --trials 400   (a longer sweep: worker start-up amortised)
      python benchmarks/bench_sweep.py --cli      (the command: warm / cold, threads / inline / pool)
      python benchmarks/bench_sweep.py --cli --no-cold   (warm runs only)

``--cli`` prints a Markdown table (``benchmarks/run.py`` puts it in the README's
``bench_sweep_cli`` section) with the two goals of the command and its floor: the same command
on a 30-cell grid, warm and cold, what it costs with nothing to solve.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
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


def one_core_solve(cfg: dict) -> float:
    """Seconds to compute every chunk of the sweep one after the other in this process, one solver
    thread, kernels loaded beforehand (the sweep's solving work on one core)."""
    from ldpopt.sweeps import chunks
    from ldpopt.sweeps.config import parse_config

    parsed = parse_config(cfg)
    tasks = chunks.make_tasks(parsed, chunks.plan_chunks(parsed))
    chunks.limit_threads()
    chunks.compute_chunk(chunks.warmup_task(parsed))
    t0 = time.perf_counter()
    for task in tasks:
        chunks.compute_chunk(task)
    return time.perf_counter() - t0


def toml(cfg: dict) -> str:
    inst, grid = cfg["instances"], cfg["grid"]
    eps = grid["eps"]
    return (
        f'[instances]\ngenerator = "dirichlet"\nk = {inst["k"]}\ntrials = {inst["trials"]}\n'
        f"alpha = {inst['alpha']}\nseed = {inst['seed']}\n[grid]\n"
        f"eps = {{start = {eps['start']}, stop = {eps['stop']}, step = {eps['step']}}}\n"
        f"divergences = {json.dumps(grid['divergences'])}\nmax_outputs = {grid['max_outputs']}\n"
        f"baselines = {json.dumps(grid['baselines'])}\n"
    )


def cli_run(config_path: Path, cache_dir: Path, extra: list[str], debug_cache: bool) -> dict:
    """``ldpopt sweep`` in a fresh process: wall seconds, the manifest's run record, recompiles.

    The process writes Python's bytecode cache as an installed package does
    (``PYTHONDONTWRITEBYTECODE`` is dropped from its environment): a user's second run does not
    compile ldpopt's modules from source again, and neither do the warm runs here."""
    out = Path(tempfile.mkdtemp(prefix="bench-sweep-cli-"))
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if debug_cache:
        env["NUMBA_DEBUG_CACHE"] = "1"
    cmd = [sys.executable, "-m", "ldpopt", "sweep", str(config_path), "--out", str(out), "--quiet", *extra]
    try:
        t0 = time.perf_counter()
        res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
        wall = time.perf_counter() - t0
        if res.returncode != 0:
            raise SystemExit(f"ldpopt sweep failed: {res.stderr[-2000:]}")
        run = json.loads((out / "manifest.json").read_text())["runs"][-1]
    finally:
        shutil.rmtree(out, ignore_errors=True)
    saved = Counter(re.findall(r"data saved to '([^']+)'", res.stdout + res.stderr))
    twice = sum(c - 1 for c in saved.values())
    return {"wall": wall, "run": run, "saved": sum(saved.values()), "twice": twice}


#: the --cli rows: label, extra arguments, whether to also run it with an empty cache
CLI_ROWS = (
    ("default", [], True),
    ("--scheduler inline", ["--scheduler", "inline"], False),
    ("--scheduler processes --workers 2", ["--scheduler", "processes", "--workers", "2"], True),
)
#: the goals of the two rows a user feels (the default scheduler): the warm command's wall over
#: the sweep's one-core solving, the cold command's wall over the warm one's
WARM_GOAL, COLD_GOAL = 1.5, 2.0
#: the floor grid: one pair, eps = 0.1 ... 3.0 (30 cells: past grid.SMALL_SWEEP_WORK, so the
#: command loads, or compiles, the same kernels as the Figure-1b grid, for ~1 ms of solving)
FLOOR_EPS = {"start": 0.1, "stop": 3.0, "step": 0.1}


def _median_run(runs: list[dict]) -> dict:
    return {
        "wall": statistics.median(r["wall"] for r in runs),
        "run": statistics.median(r["run"]["wall_seconds"] for r in runs),
        "store": statistics.median(r["run"]["store_seconds"] / r["run"]["solve_seconds"] for r in runs),
        "busy": "/".join(map(str, runs[0]["run"].get("chunks_per_worker", []))),
        "sched": runs[0]["run"]["scheduler"],
    }


def _measure_cli(path: Path, floor_path: Path, repeats: int, cold: bool) -> tuple[dict, dict, dict]:
    """Cold runs (each row's own empty cache, also filling it), then warm runs interleaved (a
    change of the machine's load hits every row), and the floor grid cold and warm."""
    labels = [label for label, _, _ in CLI_ROWS] + ["floor"]
    caches = {label: Path(tempfile.mkdtemp(prefix="bench-numba-cold-")) for label in labels}
    rows = [*CLI_ROWS, ("floor", [], True)]
    try:
        colds = {}
        for label, extra, with_cold in rows:
            grid = floor_path if label == "floor" else path
            colds[label] = cli_run(grid, caches[label], extra, debug_cache=with_cold and cold)
        warm: dict[str, list] = {label: [] for label in labels}
        for _ in range(repeats):
            for label, extra, _ in rows:
                grid = floor_path if label == "floor" else path
                warm[label].append(cli_run(grid, caches[label], extra, debug_cache=False))
    finally:
        for d in caches.values():
            shutil.rmtree(d, ignore_errors=True)
    return colds, {label: _median_run(runs) for label, runs in warm.items()}, warm


def _met(ok: bool) -> str:
    return "**yes**" if ok else "no"


def cli_main(trials: int, repeats: int, cold: bool) -> None:
    """The ``ldpopt sweep`` command, warm (runs of the rows interleaved) and cold, with the default
    scheduler, inline and a pool of 2 worker processes, and the command's fixed cost: the same
    command on a 30-cell grid, warm and cold."""
    cfg = config(trials)
    floor_cfg = config(1)
    floor_cfg["grid"]["eps"] = FLOOR_EPS
    from ldpopt.sweeps.config import parse_config

    cells = parse_config(cfg).num_cells
    work = Path(tempfile.mkdtemp(prefix="bench-sweep-cli-"))
    path, floor_path = work / "fig1b.toml", work / "floor.toml"
    path.write_text(toml(cfg))
    floor_path.write_text(toml(floor_cfg))
    try:
        solve = statistics.median(one_core_solve(cfg) for _ in range(repeats))
        colds, warm, _ = _measure_cli(path, floor_path, repeats, cold)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"`ldpopt sweep`, k = 100, T = {trials} (Figure-1b grid): {cells} cells; {os.cpu_count()} cores; "
        f"{repeats} warm run(s) per row (median). Reference: the sweep's solving work on one core "
        f"(every chunk in sequence in the benchmark's process, kernels loaded): **{solve:.3f} s**."
    )
    print()
    print(
        "| run | scheduler | busy | wall | run (after imports) | wall / solving | cold / warm | store % "
        "| kernels saved (twice) | goal | met? |"
    )
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |")
    for label, _, with_cold in CLI_ROWS:
        w = warm[label]
        goal, met = "", ""
        if label == "default":
            busy_all = all(int(b) > 0 for b in w["busy"].split("/")) if w["busy"] else False
            goal = f"wall <= {WARM_GOAL}x solving, every worker busy"
            met = _met(w["wall"] <= WARM_GOAL * solve and busy_all)
        print(
            f"| warm, {label} | {w['sched']} | {w['busy']} | {w['wall']:.2f} s | {w['run']:.2f} s "
            f"| {w['wall'] / solve:.2f}x | | {100 * w['store']:.1f}% | | {goal} | {met} |"
        )
        if with_cold and cold:
            c = colds[label]
            goal, met = "", ""
            if label == "default":
                goal, met = f"<= {COLD_GOAL}x warm", _met(c["wall"] <= COLD_GOAL * w["wall"])
            print(
                f"| cold (empty cache), {label} | {w['sched']} | | {c['wall']:.2f} s "
                f"| {c['run']['wall_seconds']:.2f} s | {c['wall'] / solve:.2f}x "
                f"| {c['wall'] / w['wall']:.2f}x "
                f"| | {c['saved']} ({c['twice']}) | {goal} | {met} |"
            )
    f, fc = warm["floor"], colds["floor"]
    print(
        f"| floor: the same command on 30 cells (T = 1), warm | {f['sched']} | {f['busy']} "
        f"| {f['wall']:.2f} s "
        f"| {f['run']:.2f} s | {f['wall'] / solve:.2f}x | | | | fixed cost of a warm run | |"
    )
    if cold:
        print(
            f"| floor, cold (empty cache) | {f['sched']} | | {fc['wall']:.2f} s "
            f"| {fc['run']['wall_seconds']:.2f} s | | {fc['wall'] / f['wall']:.2f}x | "
            f"| {fc['saved']} ({fc['twice']}) | fixed cost of a cold run | |"
        )
    print()
    print(
        f"The floor rows are what the command costs with (almost) nothing to solve: starting Python, "
        f"importing numpy, numba (whose first cache load imports scipy.linalg), typer and pyarrow, "
        f"loading the kernels from numba's cache (warm) or compiling them (cold), writing the store. "
        f"The warm floor alone is {f['wall'] / solve:.2f}x the solving time (goal for the whole run: "
        f"{WARM_GOAL}x)"
        + (
            f"; the cold floor exceeds the warm one by {fc['wall'] - f['wall']:.2f} s of compiling, "
            f"{(fc['wall'] - f['wall']) / warm['default']['wall']:.1f}x the warm Figure-1b run (goal for "
            f"the whole cold run: {COLD_GOAL}x it)."
            if cold
            else "."
        )
    )
    print()
    print(
        "wall = the command's process, start to exit; run = the manifest's wall_seconds (after imports); "
        "busy = chunks computed by each worker process or thread; store % = the manifest's store seconds "
        "over its solve seconds (the store writes overlap the solving); kernels saved = kernels written "
        "to the empty cache, twice = of them, saved again by another process (a worker recompiling): "
        "0 expected."
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="T = 20 instead of 100")
    ap.add_argument("--trials", type=int, default=None, help="T (default 100, the Figure-1b grid)")
    ap.add_argument("--skip-dask", action="store_true", help="only the local process pool")
    ap.add_argument("--cli", action="store_true", help="the ldpopt sweep command, warm and cold")
    ap.add_argument("--repeats", type=int, default=3, help="warm runs per row (median), with --cli")
    ap.add_argument("--no-cold", action="store_true", help="with --cli: only the warm runs")
    args = ap.parse_args()
    from ldpopt.sweeps import chunks, runner

    trials = args.trials or (20 if args.quick else 100)
    if args.cli:
        cli_main(trials, args.repeats, cold=not args.no_cold)
        return
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
    schedulers = [("processes", 2), ("threads", 2), ("inline", 1)]
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
        "store = atomic Parquet chunk files + manifest (driver, a background thread: it overlaps the "
        "next chunk); store % = store / solve; overhead = (table + store) / solve"
    )


if __name__ == "__main__":
    main()
