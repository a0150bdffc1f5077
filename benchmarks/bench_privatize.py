"""Throughput of exact privatization against numpy references, in the same run.

Usage: python benchmarks/bench_privatize.py [--reports 1000000] [--repeat 3]

For a 100-symbol optimal SPR mechanism and 100-ary randomized response (an SPR mechanism with
100 blocks, the worst case for the "uniform other label" step) it times

* ours: ``Mechanism.privatize`` (exact sampling, eps-LDP proven in exact arithmetic), with
  the OS CSPRNG (production) and with a seeded PCG64 Generator;
* reference 1: numpy ``Generator.choice(n_out, size=count, p=row)`` per input symbol (the
  usual vectorised way; float inverse-CDF, not exact);
* reference 2: a naive per-report loop with ``random.choices`` (timed on a slice, scaled).

and prints reports/s, the ratio ours / reference, and the largest |z-score| of the empirical
output frequencies against the channel (both samplers must be statistically correct).
"""

from __future__ import annotations

import argparse
import random
import time

import numpy as np

import ldpopt
from ldpopt._sampler import realise_matrix
from ldpopt.deploy.sampling import realise


def best_of(fn, repeat):
    best = float("inf")
    out = None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def numpy_choice(mech, x, rng):
    y = np.empty(x.shape[0], dtype=np.int64)
    order = np.argsort(x, kind="stable")
    counts = np.bincount(x, minlength=mech.num_inputs)
    starts = np.concatenate(([0], np.cumsum(counts)))
    for xi in np.flatnonzero(counts):
        pos = order[starts[xi] : starts[xi + 1]]
        y[pos] = rng.choice(mech.num_outputs, size=pos.size, p=mech.matrix[xi])
    return y


def naive_loop(mech, x):
    rows = [list(r) for r in mech.matrix]
    outs = list(range(mech.num_outputs))
    return np.array([random.choices(outs, weights=rows[xi])[0] for xi in x.tolist()])


def max_z(mech, x, y):
    exp = mech.matrix[x].sum(axis=0)
    obs = np.bincount(y, minlength=mech.num_outputs)
    sd = np.sqrt(np.maximum(exp * (1 - exp / x.size), 1e-12))
    return float(np.max(np.abs(obs - exp) / sd))


def _general(rng):
    """A non-block eps-LDP channel (exercises the inversion sampler)."""
    g = rng.uniform(1.0, np.exp(0.5), size=(100, 20))  # row sums differ by <= e^0.5: eps <= 1
    return g / g.sum(axis=1, keepdims=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reports", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--naive", type=int, default=100_000, help="reports for the naive loop (scaled)")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    p0, p1 = rng.dirichlet(np.ones(100)), rng.dirichlet(np.ones(100))
    cases = {
        "optimal SPR, k=100, eps=1": ldpopt.optimal_mechanism(p0, p1, 1.0, method="dp").mechanism,
        "100-ary RR (100 blocks), eps=1": ldpopt.randomized_response(100, 1.0),
        "general 100x20 channel, eps=1": ldpopt.Mechanism(_general(rng), 1.0),
    }
    n = args.reports
    x = rng.integers(0, 100, size=n)
    print(f"{n} reports, best of {args.repeat}")
    for name, mech in cases.items():
        t_real, ch = best_of(lambda mech=mech: realise_matrix(mech.matrix, mech.eps), 1)
        realise(mech)  # cached from here on
        t_os, y_os = best_of(lambda mech=mech: mech.privatize(x), args.repeat)
        t_pcg, y_pcg = best_of(lambda mech=mech: mech.privatize(x, rng=np.random.default_rng(1)), args.repeat)
        t_np, y_np = best_of(lambda mech=mech: numpy_choice(mech, x, np.random.default_rng(2)), args.repeat)
        xs = x[: args.naive]
        t_loop, y_loop = best_of(lambda mech=mech, xs=xs: naive_loop(mech, xs), 1)
        t_loop *= n / xs.size
        print(
            f"\n{name}: {mech.num_outputs} outputs, realised channel kind {ch.kind!r} "
            f"(exact check + tables {t_real * 1e3:.1f} ms, once per mechanism)"
        )
        print(
            f"  ours, OS CSPRNG          {t_os:8.3f} s  {n / t_os:12,.0f} reports/s  "
            f"max|z| {max_z(mech, x, y_os):.2f}"
        )
        print(
            f"  ours, seeded PCG64       {t_pcg:8.3f} s  {n / t_pcg:12,.0f} reports/s  "
            f"max|z| {max_z(mech, x, y_pcg):.2f}"
        )
        print(
            f"  numpy Generator.choice   {t_np:8.3f} s  {n / t_np:12,.0f} reports/s  "
            f"max|z| {max_z(mech, x, y_np):.2f}"
        )
        print(
            f"  naive random.choices     {t_loop:8.3f} s  {n / t_loop:12,.0f} reports/s  "
            f"(scaled from {xs.size})"
        )
        print(
            f"  ratio time ours(OS) / numpy choice = {t_os / t_np:.2f}, ours(PCG64) / numpy choice = "
            f"{t_pcg / t_np:.2f}, ours(OS) / naive loop = {t_os / t_loop:.3f}"
        )


if __name__ == "__main__":
    main()
