"""Benchmark of ``ldpopt.robust_mechanism``: certified robust designs.

Workload (the target): k = 100, Dirichlet(1) pairs (``np.random.default_rng(seed)``, seeds
0..4), total-variation radius 0.02 on both sides, KL, eps = 2.  Each line prints the time of
the certified robust design (which includes the plug-in design and its own certified worst
case), the number of DP solves, whether it is certified, and, as the reference measured in the
same run, the time of one plain SPR design (``optimal_mechanism``) of the same instance: the
ratio is the price of robustness in solver time.  A second workload (k = 20, KL balls of radius
0.01) exercises the general path (SLSQP masters, mixtures).

Run:  python benchmarks/bench_robust.py          (about a minute)
      python benchmarks/bench_robust.py --quick  (seed 0 only, no KL-ball line)
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def timed(fn, repeat: int = 3):
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    import ldpopt
    from ldpopt import uncertainty as unc

    ldpopt.optimal_mechanism([0.5, 0.5], [0.2, 0.8], 1.0)  # numba start-up outside the timings
    rows = []
    seeds = [0] if args.quick else range(5)
    for seed in seeds:
        rng = np.random.default_rng(seed)
        p0, p1 = rng.dirichlet(np.ones(100)), rng.dirichlet(np.ones(100))
        u = unc.total_variation(0.02, 0.02)
        t_ref, _ = timed(lambda p0=p0, p1=p1: ldpopt.optimal_mechanism(p0, p1, 2.0, "kl"))
        t, res = timed(lambda p0=p0, p1=p1, u=u: ldpopt.robust_mechanism(p0, p1, 2.0, u, "kl"))
        rows.append(("k=100 TV 0.02 KL eps=2", seed, t, t_ref, res))
    if not args.quick:
        rng = np.random.default_rng(1)
        p0, p1 = rng.dirichlet(np.ones(20)), rng.dirichlet(np.ones(20))
        u = unc.kl_ball(0.01, 0.01)
        t_ref, _ = timed(lambda: ldpopt.optimal_mechanism(p0, p1, 2.0, "kl"))
        t, res = timed(lambda: ldpopt.robust_mechanism(p0, p1, 2.0, u, "kl"), repeat=1)
        rows.append(("k=20 KL-ball 0.01 KL eps=2", 1, t, t_ref, res))
    print(
        "| workload | seed | ours (robust) | reference (one SPR design) | ratio | DP solves | certified "
        "| gap | robust W / plug-in W |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |")
    for name, seed, t, t_ref, res in rows:
        gain = res.value / res.plug_in.value if res.plug_in.value > 0 else float("nan")
        print(
            f"| {name} | {seed} | {t:.3f} s | {t_ref:.4f} s | {t / t_ref:.1f}x | {res.dp_solves} | "
            f"{res.certified} | {res.gap:.1e} | {gain:.4f} |"
        )


if __name__ == "__main__":
    main()
