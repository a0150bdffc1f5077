"""Speed benchmarks of the fast exact solvers, ours vs a reference in the same run.

Run from the repository root::

    python benchmarks/bench_fast.py            # everything, about 2 minutes on 2 cores
    python benchmarks/bench_fast.py --skip-1e5 # without the k = 100000 solve

Every line prints our time, the reference time measured in the same run, their ratio and the
largest relative difference of the optimal values.  Workloads:

1. Figure 1b of the SPR paper: k = 100, T = 100 pairs (P0, P1) ~ Dirichlet(1_k), drawn as
   ``rng = np.random.default_rng(0); P0 = rng.dirichlet(ones, T); P1 = rng.dirichlet(ones, T)``,
   eps in {0.1, 0.2, ..., 10.0}, KL, no budget: 10,000 solves.  Ours: ``ldpopt.sweep`` (all
   cores).  Reference: the vectorised NumPy O(l k^2) program written the paper's way
   (``numpy_reference.spr_dp_numpy``: one NumPy call per block count over the (k+1) x (k+1)
   score matrix), one solve per cell.
2. Single unconstrained solves, KL, eps = 2, k = 1e3, 1e4, 1e5 (``optimal_mechanism``), each
   in a fresh subprocess to report its peak resident memory (ru_maxrss, which includes the
   ~150 MB of Python + NumPy + numba itself; the baseline after imports is printed too).
   Reference: the NumPy program at k = 1e3 (at 1e4 its (k+1)^2 matrix alone is 800 MB).
   k = 1e3 takes the table path (exact score table, ``docs/fast.md`` section 6), larger k
   the pruned kernels.
3. Budget l = 8 at k = 1e4, KL, eps = 10 (the free optimum has ~30 outputs, so the budget
   binds and the compiled O(l k^2) program runs).  Reference: ldpopt's readable program
   (``optimal_mechanism(method="dp")``, O(l k) memory).
4. First call in a fresh process: ``import ldpopt`` alone, then the first
   ``optimal_mechanism`` (k = 3 toy; k = 1000 Dirichlet(1) pair; the same pair with a binding
   budget; each in its own process) and, after the toy, the first ``sweep`` - with numba's
   on-disk cache filled (the normal case after the first use) and with an empty cache (JIT
   compilation included).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import ldpopt  # noqa: E402 - after the sys.path insert
from numpy_reference import spr_dp_numpy  # noqa: E402 - lives next to this script


def rel_diff(a, b) -> float:
    a = np.asarray(a, float)
    b = np.asarray(b, float)
    return float(np.max(np.abs(a - b) / np.maximum(np.maximum(np.abs(a), np.abs(b)), 1e-300)))


def line(name, ours, ref, diff):
    ratio = f"{ref / ours:8.1f}x" if ref is not None else "      n/a"
    ref_s = f"{ref:9.3f} s" if ref is not None else "      n/a"
    diff_s = f"{diff:.1e}" if diff is not None else "n/a"
    print(
        f"{name:<44} ours {ours:9.3f} s   reference {ref_s}   ratio {ratio}   max rel diff {diff_s}",
        flush=True,
    )


def figure_1b():
    T, k = 100, 100
    rng = np.random.default_rng(0)
    P0 = rng.dirichlet(np.ones(k), size=T)
    P1 = rng.dirichlet(np.ones(k), size=T)
    grid = np.round(np.arange(1, 101) * 0.1, 10)
    ldpopt.sweep(P0[:2], P1[:2], grid[:3], progress=False)  # compile / load the kernels first
    t = time.perf_counter()
    res = ldpopt.sweep(P0, P1, grid, progress=False)
    ours = time.perf_counter() - t
    ref_vals = np.empty((T, grid.size))
    t = time.perf_counter()
    for i in range(T):
        for e, eps in enumerate(grid):
            ref_vals[i, e] = spr_dp_numpy(P0[i], P1[i], eps)[0]
    ref = time.perf_counter() - t
    line("Figure 1b: k=100, T=100, 100 eps, KL", ours, ref, rel_diff(res.values, ref_vals))
    return ours, ref


def _child_single(k: int, eps: float, l: int | None, reference: str | None):
    """Runs in a subprocess: one solve, its time and the process's peak RSS."""
    import resource

    rng = np.random.default_rng(1)
    # warm-up: load (or compile) every kernel the timed solve may use
    ldpopt.optimal_mechanism(rng.dirichlet(np.ones(30)), rng.dirichlet(np.ones(30)), 9.0, max_outputs=2)
    ldpopt.optimal_mechanism(rng.dirichlet(np.ones(30)), rng.dirichlet(np.ones(30)), 2.0)
    ldpopt.optimal_mechanism(rng.dirichlet(np.ones(5000)), rng.dirichlet(np.ones(5000)), 2.0)
    p, q = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t = time.perf_counter()
    res = ldpopt.optimal_mechanism(p, q, eps, max_outputs=l)
    ours = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out = dict(ours=ours, value=res.value, outputs=res.num_outputs, method=res.method, base=base, peak=peak)
    if reference == "numpy":
        t = time.perf_counter()
        out["ref_value"] = spr_dp_numpy(p, q, eps, l)[0]
        out["ref"] = time.perf_counter() - t
    elif reference == "readable":
        t = time.perf_counter()
        out["ref_value"] = ldpopt.optimal_mechanism(p, q, eps, max_outputs=l, method="dp").value
        out["ref"] = time.perf_counter() - t
    print(json.dumps(out))


def single(k: int, eps: float, l: int | None, reference: str | None, name: str):
    cmd = [sys.executable, __file__, "--child", str(k), str(eps), str(l or 0), reference or "none"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
    r = json.loads(out)
    diff = rel_diff(r["value"], r["ref_value"]) if "ref_value" in r else None
    line(name, r["ours"], r.get("ref"), diff)
    print(
        f"{'':<44} {r['outputs']} outputs ({r['method']}), peak RSS {r['peak']:.0f} MB "
        f"(baseline after imports {r['base']:.0f} MB)",
        flush=True,
    )


FIRST_CALL = """
import json, sys, time
t0 = time.perf_counter()
import numpy as np
import ldpopt
t1 = time.perf_counter()
case = sys.argv[1]
if case == "k3":
    args = ([0.5, 0.3, 0.2], [0.2, 0.3, 0.5], 1.0)
    kw = {}
else:  # k = 1000, Dirichlet(1) pair; "budget": eps = 10 (free optimum 32 outputs) with l = 4
    rng = np.random.default_rng(0)
    p, q = rng.dirichlet(np.ones(1000)), rng.dirichlet(np.ones(1000))
    args, kw = ((p, q, 2.0), {}) if case == "k1000" else ((p, q, 10.0), {"max_outputs": 4})
t2 = time.perf_counter()
res = ldpopt.optimal_mechanism(*args, **kw)
t3 = time.perf_counter()
if case == "k3":  # then the first sweep (the pruned kernels: 20 s of compilation on an empty cache)
    ldpopt.sweep([[0.5, 0.3, 0.2]], [[0.2, 0.3, 0.5]], [1.0, 2.0], progress=False)
t4 = time.perf_counter()
print(json.dumps(dict(imp=t1 - t0, om=t3 - t2, sw=t4 - t3, method=res.method, outputs=res.num_outputs)))
"""

#: the first-call cases: name -> description
FIRST_CALL_CASES = {
    "k3": "k=3 toy, KL, eps=1",
    "k1000": "k=1000 Dirichlet(1), KL, eps=2",
    "budget": "k=1000, KL, eps=10, l=4 (binding)",
}


def first_call():
    """``import ldpopt`` and the first ``optimal_mechanism`` (after the k = 3 toy also the first
    ``sweep``) in fresh processes, with numba's on-disk cache filled and with an empty cache
    (JIT compilation included; every case in its own process with its own empty cache)."""

    def run(case, env):
        out = (
            subprocess.run(
                [sys.executable, "-c", FIRST_CALL, case], capture_output=True, text=True, check=True, env=env
            )
            .stdout.strip()
            .splitlines()[-1]
        )
        return json.loads(out)

    env = dict(os.environ)
    for case in FIRST_CALL_CASES:
        run(case, env)  # make sure the regular cache is filled
    r = run("k3", env)
    print(f"{'import ldpopt (fresh process)':<44} {r['imp']:.2f} s")
    for cache in ("filled", "empty"):
        for case, name in FIRST_CALL_CASES.items():
            if cache == "empty":
                with tempfile.TemporaryDirectory() as tmp:
                    r = run(case, dict(env, NUMBA_CACHE_DIR=tmp))
            else:
                r = run(case, env)
            sweep = f"; first sweep then {r['sw']:.2f} s" if case == "k3" else ""
            print(
                f"{'first optimal_mechanism, ' + cache + ' numba cache':<44} {r['om']:5.2f} s   "
                f"{name}: {r['outputs']} outputs ({r['method']}){sweep}",
                flush=True,
            )


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip-1e5", action="store_true", help="skip the k = 100000 single solve")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        k, eps, l, ref = args.child
        _child_single(int(k), float(eps), int(l) or None, None if ref == "none" else ref)
        return
    import numba

    print(
        f"ldpopt {ldpopt.__version__}, numpy {np.__version__}, numba {numba.__version__}, "
        f"{os.cpu_count()} cores, numba threads {numba.config.NUMBA_NUM_THREADS}",
        flush=True,
    )
    figure_1b()
    single(1000, 2.0, None, "numpy", "single solve k=1e3, KL, eps=2")
    single(10_000, 2.0, None, None, "single solve k=1e4, KL, eps=2")
    if not args.skip_1e5:
        single(100_000, 2.0, None, None, "single solve k=1e5, KL, eps=2")
    single(10_000, 10.0, 8, "readable", "budget l=8, k=1e4, KL, eps=10")
    first_call()


if __name__ == "__main__":
    main()
