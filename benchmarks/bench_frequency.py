"""Benchmark of ``ldpopt.frequency.optimal_mechanism`` (the exact optimum of the l2 error).

Workloads, eps = 1 and 4 (``variance_uniform``; ``worst_case`` has the same optimum):

1. k = 4..16 (18 without ``--quick``): ours (the symmetric reduction, ``method="symmetric"``) vs the
   LP over all 2^k - 2 maximal columns (``method="lp"``, HiGHS, no symmetry assumed) in the same run;
2. k = 20..50, 10^4 and 2^20 (the largest k accepted): ours vs a readable reference that tries every
   subset size s = 1..k-1 in mpmath (50 digits; in float64 numpy at 2^20);
3. the closed forms of GRR and OUE (per-bit estimator and the best unbiased estimator for OUE's
   channel) as ratios to the optimum at k in {4, 16, 64}, eps in {0.5, 1, 2, 4};
4. the gap table of every deployed mechanism (``ldpopt.frequency.compare``: its standard
   estimator's variance_uniform over the optimum's) at the same (k, eps), and the time of one
   ``compare(k, eps)`` call.

Every timing line prints ours, the reference, their ratio and the relative difference of the values.

Run:  python benchmarks/bench_frequency.py            (about two minutes: the LP at k = 18 takes most)
      python benchmarks/bench_frequency.py --quick    (LP up to k = 14)
"""

from __future__ import annotations

import argparse
import math
import time


def timed(fn, repeat: int = 1):
    best, out = math.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def fmt(t: float) -> str:
    return f"{t * 1e6:.0f} us" if t < 1e-3 else (f"{t * 1e3:.1f} ms" if t < 1 else f"{t:.2f} s")


def all_sizes_mp(k: int, eps: float) -> float:
    """min over s of (k-1)^2 (s e + k - s)^2 / (k (e - 1)^2 s (k - s)), every s tried, 50 digits."""
    import mpmath

    with mpmath.workdps(50):
        e = mpmath.exp(mpmath.mpf(eps))
        best = min((s * e + k - s) ** 2 / (s * (k - s)) for s in range(1, k))
        return float((k - 1) ** 2 * best / (k * (e - 1) ** 2))


def all_sizes_np(k: int, eps: float) -> float:
    """The same over every size in float64 numpy (rescaled by e^-eps, no overflow)."""
    import numpy as np

    c, s = math.exp(-eps), np.arange(1, k, dtype=float)
    gam = (s / (s + (k - s) * c)) * ((k - s) / (s + (k - s) * c))
    return (k - 1) ** 2 / (k * (1 - c) ** 2 * float(gam.max()))


def grr(k: int, eps: float) -> float:
    e = math.exp(eps)
    return (k - 1) * (e + k - 1) ** 2 / (k * (e - 1) ** 2)


def oue_per_bit(k: int, eps: float) -> float:
    p, q = 0.5, 1 / (math.exp(eps) + 1)
    qq = q + (p - q) / k
    return k * qq * (1 - qq) / (p - q) ** 2


def oue_best(k: int, eps: float) -> float:
    """OUE's channel with its best unbiased estimator: its outputs are subsets (the 1-bits), so
    V = (k-1)^2 / (k (e-1)^2 sum_s P(|S| = s) s (k-s) / (s e + k - s)^2)."""
    e = math.exp(eps)
    q = 1 / (e + 1)
    acc = 0.0
    for s in range(1, k):
        prob = 0.5 * math.comb(k - 1, s - 1) * q ** (s - 1) * (1 - q) ** (k - s)
        prob += 0.5 * math.comb(k - 1, s) * q**s * (1 - q) ** (k - 1 - s)
        acc += prob * s * (k - s) / (s * e + k - s) ** 2
    return (k - 1) ** 2 / (k * (e - 1) ** 2 * acc)


def line(name: str, ours: float, ref: float, ref_name: str, diff: float, extra: str = "") -> None:
    ratio = ref / ours if ours > 0 else math.inf
    print(f"| {name} | {fmt(ours)} | {fmt(ref)} ({ref_name}) | {ratio:,.0f}x | {diff:.1e} | {extra} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    from ldpopt.frequency import optimal_mechanism

    optimal_mechanism(4, 1.0, method="lp")  # imports (scipy, HiGHS) outside the timings
    print("| workload | ours (symmetric) | reference | ratio (ref / ours) | relative value diff | notes |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    lp_ks = list(range(4, 15, 2)) if args.quick else list(range(4, 17, 2))
    for eps in (1.0, 4.0):
        for k in lp_ks + ([18] if eps == 1.0 and not args.quick else []):
            t_ours, ours = timed(lambda k=k, eps=eps: optimal_mechanism(k, eps), repeat=3)
            t_lp, lp = timed(lambda k=k, eps=eps: optimal_mechanism(k, eps, method="lp"))
            diff = abs(ours.value - lp.value) / ours.value
            line(
                f"k = {k}, eps = {eps:g}",
                t_ours,
                t_lp,
                f"LP over {2**k - 2} columns",
                diff,
                f"s = {ours.sizes}",
            )
        for k in (20, 30, 40, 50, 10**4, 2**20):
            t_ours, ours = timed(lambda k=k, eps=eps: optimal_mechanism(k, eps), repeat=3)
            ref_fn, ref_name = (
                (all_sizes_mp, "every size in mpmath")
                if k <= 10**4
                else (all_sizes_np, "every size in numpy")
            )
            t_ref, ref = timed(lambda k=k, eps=eps, ref_fn=ref_fn: ref_fn(k, eps))
            diff = abs(ours.value - ref) / ref
            gap = ours.gap / ours.value
            line(
                f"k = {k}, eps = {eps:g}",
                t_ours,
                t_ref,
                ref_name,
                diff,
                f"s = {ours.sizes}, gap {gap:.0e}",
            )
    print()
    print("Deployed closed forms as ratios to the optimum (variance_uniform, one report):")
    print()
    print("| k | eps | optimum | best size | GRR | OUE, per-bit estimator | OUE, best unbiased estimator |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for k in (4, 16, 64):
        for eps in (0.5, 1.0, 2.0, 4.0):
            opt = optimal_mechanism(k, eps)
            print(
                f"| {k} | {eps:g} | {opt.value:.6g} | {opt.sizes[0]} | {grr(k, eps) / opt.value:.4f} | "
                f"{oue_per_bit(k, eps) / opt.value:.4f} | {oue_best(k, eps) / opt.value:.4f} |"
            )
    gap_table()


def gap_table() -> None:
    """Every deployed mechanism against the optimum (docs/frequency.md's table), and compare's cost."""
    from ldpopt.experiments.frequency import DOC_EPS, DOC_KS, gap_table_markdown
    from ldpopt.frequency import compare

    print()
    print("Gap table: each deployed mechanism's standard estimator, variance_uniform / the optimum's")
    print("(subset selection at both roundings of its best size d):")
    print()
    print(gap_table_markdown())
    cost = [timed(lambda k=k, e=e: compare(k, e), repeat=3)[0] for k in DOC_KS for e in DOC_EPS]
    print(f"compare(k, eps) for these {len(cost)} (k, eps): {fmt(min(cost))} to {fmt(max(cost))} per call")


if __name__ == "__main__":
    main()
