"""Benchmark of the Chernoff-optimal solver on the Figure-1b workload, against KL in the same run.

Run from the repository root::

    python benchmarks/bench_chernoff.py             # T = 100 pairs (about two minutes)
    python benchmarks/bench_chernoff.py --trials 10 # a tenth of it

Workload (Figure 1b of the SPR paper): k = 100, T pairs (P0, P1) ~ Dirichlet(1_k) drawn as
``rng = np.random.default_rng(0); P0 = rng.dirichlet(ones, T); P1 = rng.dirichlet(ones, T)``,
eps in {0, 0.1, ..., 10.0} (101 points; eps = 0 is the trivial column, every mechanism has value 0,
and is not solved), no budget.  Ours: ``ldpopt.sweep(..., divergence="chernoff")``; reference:
the same sweep with ``divergence="kl"`` (the compiled, multi-threaded exact solver), in the same
process; the two alternate ``--repeats`` times and the shortest time of each is compared.
Printed: both times, their ratio, the mean number of SPR solves per Chernoff optimum
(points and tangents of the branch and bound), the largest certificate gap and the largest gain
of the Chernoff-optimal design over the KL-optimal one, both scored in Chernoff information.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

import ldpopt
from ldpopt.spr.chernoff import solve_reduced
from ldpopt.spr.reduction import likelihood_ratio_reduction


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3, help="interleaved KL / Chernoff timings (min)")
    args = ap.parse_args()
    T, k = args.trials, 100
    rng = np.random.default_rng(0)
    P0 = rng.dirichlet(np.ones(k), size=T)
    P1 = rng.dirichlet(np.ones(k), size=T)
    grid = np.arange(1, 101) / 10.0  # the 100 eps > 0 of {0, 0.1, ..., 10}
    for div in ("kl", "chernoff"):  # compile / load the kernels first
        ldpopt.sweep(P0[:1], P1[:1], grid[:2], div, progress=False)

    # KL and Chernoff alternate, each timed `repeats` times: the shortest of each is compared
    # (on a shared machine the load changes between two runs of several seconds)
    t_kl, t_ch, ratios = math.inf, math.inf, []
    for _ in range(args.repeats):
        t = time.perf_counter()
        kl = ldpopt.sweep(P0, P1, grid, "kl", return_partitions=True, progress=False)
        dk = time.perf_counter() - t
        t = time.perf_counter()
        ch = ldpopt.sweep(P0, P1, grid, "chernoff", progress=False)
        dc = time.perf_counter() - t
        t_kl, t_ch = min(t_kl, dk), min(t_ch, dc)
        ratios.append(dc / dk)
    cells = T * grid.size
    print(f"Figure-1b workload: k = {k}, T = {T}, 101 eps (100 solved), no budget: {cells} cells")
    print(
        f"KL sweep        {t_kl:9.3f} s  ({1e6 * t_kl / cells:8.1f} us per cell; shortest of {args.repeats})"
    )
    print(
        f"Chernoff sweep  {t_ch:9.3f} s  ({1e6 * t_ch / cells:8.1f} us per cell; shortest of {args.repeats})"
    )
    print(f"ratio Chernoff / KL: {t_ch / t_kl:.1f}x (per repeat: {', '.join(f'{r:.1f}' for r in ratios)})")

    # solves per optimum and certificate gaps (the same cells, one solve_reduced each)
    solves, gaps = [], []
    for t_ in range(T):
        red = likelihood_ratio_reduction(P0[t_], P1[t_])
        for eps in grid:
            sol = solve_reduced(red.p, red.q, float(eps), red.k)
            solves.append(sol.solves)
            gaps.append((sol.upper_bound - sol.value) / max(1.0, sol.value))
    print(f"SPR solves per Chernoff optimum: mean {np.mean(solves):.1f}, max {np.max(solves)}")
    print(f"largest certificate gap (upper_bound - value) / max(1, value): {np.max(gaps):.2e}")

    # the KL-optimal partitions scored in Chernoff information
    gain = np.ones((T, grid.size))
    for t_ in range(T):
        for e, eps in enumerate(grid):
            m = ldpopt.spr_mechanism(kl.partitions[t_][e], k, float(eps))
            c_kl = ldpopt.chernoff_information(*m.output_distributions(P0[t_], P1[t_])).value
            gain[t_, e] = ch.values[t_, e] / c_kl if c_kl > 0 else 1.0
    t_, e = np.unravel_index(int(np.argmax(gain)), gain.shape)
    print(
        f"Chernoff-optimal / KL-optimal (in Chernoff): mean {np.mean(gain):.5f}, "
        f"max {gain[t_, e]:.4f} (pair {t_}, eps {grid[e]:g})"
    )


if __name__ == "__main__":
    main()
