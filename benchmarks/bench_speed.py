"""Speed at every size: cold start, overhead, budgets and large alphabets, each against the sort floor.

Run from the repository root::

    python benchmarks/bench_speed.py             # every row (several minutes on 2 cores)
    python benchmarks/bench_speed.py --quick     # without the k = 1e6 and the slow budget rows

Every row runs in its own fresh subprocess (``--child ROW``) and prints one markdown table line:
our time (median of ``--repeat`` runs where a run is short), the reference measured in the same
process, their ratio, the goal, and the distance to the sort floor - the time numpy takes to
argsort the k log-likelihood ratios of the same instance, which no exact solver can beat
(O(k log k)).  Cold rows set ``NUMBA_CACHE_DIR`` to a fresh empty directory, so every kernel
they need is compiled in that process; warm rows load the kernels first.

Instances: ``rng = np.random.default_rng(0)``, ``p, q = rng.dirichlet(ones(k))`` (Dirichlet(1)),
KL unless stated.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

#: rows: name -> (description, goal, timeout of the child process in seconds)
ROWS = {
    "cold_k5000": ("first `optimal_mechanism`, k = 5000, eps = 2, **empty** numba cache", "<= 2 s", 300),
    "cold_sweep": ("first small `ldpopt.sweep` (3 pairs, k = 20, 3 eps), **empty** cache", "<= 3 s", 300),
    "solve_k100": ("one solve, k = 100, eps = 2 (`optimal_mechanism`, warm)", "<= 80 us", 300),
    "reduce_1e5": ("LR reduction + prefix table, k = 1e5", "<= 0.05 s", 300),
    "k1e5_eps1": ("k = 1e5, eps = 1, no budget", "<= 1.5 s", 300),
    "k1e5_eps5": ("k = 1e5, eps = 5, no budget", "<= 3 s", 300),
    "budget_1e5_l3": ("k = 1e5, eps = 5, budget l = 3 (binding)", "<= 5 s", 400),
    "budget_3e4_l8": ("k = 3e4, eps = 10, budget l = 8 (binding)", "<= 2 s", 400),
    "budget_1e4_l8": ("k = 1e4, eps = 10, budget l = 8: ours vs the readable DP", ">= 10x", 400),
    "user_div_1000": ("user-defined `FDivergence(f)` (KL generator), k = 1000, eps = 2", "compiled", 400),
    "k1e6_eps1": ("k = 1e6, eps = 1, no budget (peak RSS of the process)", "<= 30 s, O(k) memory", 600),
    "user_div_sweep": (
        "user-defined `FDivergence(f)` (KL generator) in `sweep`, 4 pairs x 5 eps, k = 200",
        "compiled",
        400,
    ),
}
SLOW = ("k1e6_eps1", "budget_1e5_l3")


def _pair(k: int):
    rng = np.random.default_rng(0)
    return rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))


def _sort_floor(p, q, repeat: int = 5) -> float:
    """Median time to argsort the log-likelihood ratios (the O(k log k) floor of any exact solve)."""
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        with np.errstate(divide="ignore"):
            np.argsort(np.log(p) - np.log(q), kind="stable")
        ts.append(time.perf_counter() - t)
    return float(np.median(ts))


def _timed(f, repeat: int):
    ts, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = f()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts)), out


def _warm(ldpopt) -> None:
    """Load (or compile) every kernel the timed rows may use."""
    for k in (30, 2000, 5000):
        p, q = _pair(k)
        ldpopt.optimal_mechanism(p, q, 2.0)
        ldpopt.optimal_mechanism(p, q, 9.0, max_outputs=2)


def child(row: str, repeat: int) -> dict:  # noqa: C901 - one branch per row
    t0 = time.perf_counter()
    import ldpopt
    from ldpopt.spr.reduction import _Prefix, _reduce

    out: dict = {"import": time.perf_counter() - t0}
    if row == "cold_k5000":
        p, q = _pair(5000)
        t = time.perf_counter()
        ldpopt.optimal_mechanism(p, q, 2.0)
        out["ours"] = time.perf_counter() - t
        out["ref"], _ = _timed(lambda: ldpopt.optimal_mechanism(p, q, 2.0), 3)
        out["ref_name"] = "the same call again (warm)"
        out["floor"] = _sort_floor(p, q)
        from ldpopt.spr import _fast

        t = time.perf_counter()
        with _fast.pruned_path("always"):  # what a process finds after `ldpopt warmup --path large`
            ldpopt.optimal_mechanism(p, q, 2.0)
            compile_s = time.perf_counter() - t
            t_pruned, _ = _timed(lambda: ldpopt.optimal_mechanism(p, q, 2.0), 3)
        out["note"] = (
            f"the table path, its kernels compiled: the pruned kernels were not cached; they compile "
            f"in {compile_s:.1f} s and then solve in {_fmt_t(t_pruned)}"
        )
        return out
    if row == "cold_sweep":
        rng = np.random.default_rng(0)
        P, Q = rng.dirichlet(np.ones(20), 3), rng.dirichlet(np.ones(20), 3)
        t = time.perf_counter()
        ldpopt.sweep(P, Q, [0.5, 1.0, 2.0], progress=False)
        out["ours"] = time.perf_counter() - t
        out["ref"], _ = _timed(lambda: ldpopt.sweep(P, Q, [0.5, 1.0, 2.0], progress=False), 3)
        out["ref_name"] = "the same sweep again (warm)"
        out["floor"] = _sort_floor(P[0], Q[0])
        return out
    _warm(ldpopt)
    if row == "solve_k100":
        from ldpopt.spr import _fast

        p, q = _pair(100)
        _fast.PRUNED_PATH = "never"  # the path of a process whose cache holds no score-cache kernels
        ldpopt.optimal_mechanism(p, q, 2.0)
        t_table, _ = _timed(lambda: ldpopt.optimal_mechanism(p, q, 2.0), max(repeat, 200))
        _fast.PRUNED_PATH = "ready"
        ldpopt.warm_up(paths="small")
        out["ours"], _ = _timed(lambda: ldpopt.optimal_mechanism(p, q, 2.0), max(repeat, 200))
        out["note"] = f"after `ldpopt.warm_up()`; before it (table path) {_fmt_t(t_table)}"
        rng = np.random.default_rng(0)
        P, Q = rng.dirichlet(np.ones(100), 20), rng.dirichlet(np.ones(100), 20)
        grid = np.round(np.arange(1, 51) * 0.1, 10)
        ldpopt.sweep(P[:2], Q[:2], grid[:2], progress=False)
        tsw, _ = _timed(lambda: ldpopt.sweep(P, Q, grid, progress=False), 3)
        out["ref"] = tsw / (20 * 50)
        out["ref_name"] = "one cell of a 20 x 50 `sweep` (per-cell time)"
        out["floor"] = _sort_floor(p, q, 50)
        return out
    if row == "user_div_sweep":
        rng = np.random.default_rng(0)
        P, Q = rng.dirichlet(np.ones(200), 4), rng.dirichlet(np.ones(200), 4)
        grid = [0.5, 1.0, 2.0, 4.0, 8.0]
        user = ldpopt.FDivergence(lambda t: t * np.log(t), name="user_kl")
        out["ours"], res = _timed(lambda: ldpopt.sweep(P, Q, grid, user, progress=False), repeat)

        def readable():
            return [
                [ldpopt.optimal_mechanism(P[t], Q[t], e, user, method="dp").value for e in grid]
                for t in range(4)
            ]

        out["ref"], r2 = _timed(readable, 1)
        out["ref_name"] = 'the readable DP cell by cell (`method="dp"`, the fallback)'
        out["rel_diff"] = float(np.max(np.abs(res.values - np.array(r2)) / np.abs(np.array(r2))))
        out["method"], out["outputs"] = res.method, int(res.num_outputs.max())
        out["floor"] = _sort_floor(P[0], Q[0])
        return out
    if row == "reduce_1e5":
        p, q = _pair(100_000)

        def reduce_and_prefix():
            r = _reduce(p, q)
            return _Prefix(r.p, r.q)

        out["ours"], _ = _timed(reduce_and_prefix, repeat)
        out["floor"] = _sort_floor(p, q)
        out["ref"], out["ref_name"] = out["floor"], "the sort alone"
        return out
    k, eps, l, ref = {
        "k1e5_eps1": (100_000, 1.0, None, None),
        "k1e5_eps5": (100_000, 5.0, None, None),
        "budget_1e5_l3": (100_000, 5.0, 3, None),
        "budget_3e4_l8": (30_000, 10.0, 8, None),
        "budget_1e4_l8": (10_000, 10.0, 8, "readable"),
        "user_div_1000": (1000, 2.0, None, "builtin"),
        "k1e6_eps1": (1_000_000, 1.0, None, None),
    }[row]
    p, q = _pair(k)
    div = "kl"
    if row == "user_div_1000":
        div = ldpopt.FDivergence(lambda t: t * np.log(t), name="user_kl")
    n = 1 if k >= 100_000 or ref == "readable" else repeat
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["ours"], res = _timed(lambda: ldpopt.optimal_mechanism(p, q, eps, div, l), n)
    out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["base_mb"] = base
    out["value"], out["outputs"], out["method"] = res.value, res.num_outputs, res.method
    if ref == "readable":
        out["ref"], r2 = _timed(lambda: ldpopt.optimal_mechanism(p, q, eps, div, l, method="dp"), 1)
        out["ref_name"] = 'readable DP (`method="dp"`)'
        out["rel_diff"] = abs(r2.value - res.value) / max(abs(r2.value), 1e-300)
    elif ref == "builtin":
        out["ref"], r2 = _timed(lambda: ldpopt.optimal_mechanism(p, q, eps, "kl", l), repeat)
        out["ref_name"] = 'built-in `"kl"` (compiled)'
        out["rel_diff"] = abs(r2.value - res.value) / max(abs(r2.value), 1e-300)
    out["floor"] = _sort_floor(p, q)
    return out


def _fmt_t(t) -> str:
    if t is None:
        return ""
    return f"{t * 1e6:.0f} us" if t < 1e-3 else (f"{t * 1e3:.1f} ms" if t < 1.0 else f"{t:.2f} s")


def run_row(row: str, repeat: int) -> str:
    desc, goal, timeout = ROWS[row]
    env = dict(os.environ)
    env.pop("NUMBA_DISABLE_JIT", None)
    with tempfile.TemporaryDirectory() as tmp:
        if row.startswith("cold_"):
            env["NUMBA_CACHE_DIR"] = tmp
        cmd = [sys.executable, os.path.abspath(__file__), "--child", row, "--repeat", str(repeat)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, check=True)
        except subprocess.TimeoutExpired:
            return f"| {desc} | > {timeout} s | | | {goal} | | timed out |"
        except subprocess.CalledProcessError as exc:
            last = (exc.stderr.strip().splitlines() or ["?"])[-1]
            return f"| {desc} | failed | | | {goal} | | {last} |"
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    ours, ref, floor = r["ours"], r.get("ref"), r["floor"]
    if ref is not None and row in (
        "budget_1e4_l8",
        "user_div_1000",
        "user_div_sweep",
        "solve_k100",
        "reduce_1e5",
    ):
        ratio = f"{ref / ours:.2f}x"  # reference / ours: > 1 means ours is faster
    elif ref is not None:
        ratio = f"{ours / ref:.1f}x (cold / warm)"
    else:
        ratio = ""
    notes = [r["note"]] if r.get("note") else []
    if "outputs" in r:
        notes.append(f"{r['outputs']} outputs ({r['method']})")
    if "rel_diff" in r:
        notes.append(f"values differ by {r['rel_diff']:.1e} (relative)")
    if "peak_mb" in r and r["ours"] > 0.5:
        notes.append(f"peak RSS {r['peak_mb']:.0f} MB (after imports {r['base_mb']:.0f} MB)")
    ref_s = f"{_fmt_t(ref)} ({r['ref_name']})" if ref is not None else ""
    return (
        f"| {desc} | **{_fmt_t(ours)}** | {ref_s} | {ratio} | {goal} | {ours / floor:,.0f}x "
        f"({_fmt_t(floor)}) | {'; '.join(notes)} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="skip " + ", ".join(SLOW))
    ap.add_argument("--repeat", type=int, default=5, help="runs per timed row (median)")
    ap.add_argument("--rows", nargs="*", default=None, help="only these rows")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.repeat)))
        return
    rows = args.rows or [r for r in ROWS if not (args.quick and r in SLOW)]
    print("| workload | ours | reference (same process) | ratio | goal | ours / sort floor (floor) | notes |")
    print("| --- | ---: | --- | ---: | --- | ---: | --- |")
    for row in rows:
        print(run_row(row, args.repeat), flush=True)


if __name__ == "__main__":
    main()
