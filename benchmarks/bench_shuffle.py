"""Benchmark of the tight shuffle bound's cost against the numerical (clone) bound in the same run.

Run from the repository root::

    python benchmarks/bench_shuffle.py            # n = 1e4, 1e6, 1e8 (about a minute)
    python benchmarks/bench_shuffle.py --quick    # n = 1e4, 1e6

Workload: delta = 1e-6, eps0 in {1, 4}, binary and 3-ary randomized response.  Ours:
``ldpopt.central_epsilon(mech, n, delta, "tight")`` (upper bound, lower bound from explicit datasets);
reference: ``ldpopt.central_epsilon(eps0, n, delta, "numerical")`` (Feldman, McMillan and Talwar's
clone reduction, evaluated exactly).  The two alternate ``--repeats`` times and the shortest time
of each is reported, with the ratio ours / reference and both central eps.

Second table, composition: T = 10 rounds (each user reports once per round), eps0 = 1.  Ours:
``central_epsilon(mech, n, delta, "tight", rounds=10)`` (PLD composition of a dominating clone pair,
lower bound from an explicit pair's PLD); reference: basic composition of the numerical bound,
10 x ``central_epsilon(eps0, n, delta / 10)``.
"""

from __future__ import annotations

import argparse
import time

import ldpopt


def _best(fn, repeats: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="skip n = 1e8")
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    delta = 1e-6
    sizes = (10**4, 10**6) if args.quick else (10**4, 10**6, 10**8)
    cols = [
        "mechanism",
        "eps0",
        "n",
        "tight (s)",
        "numerical (s)",
        "ratio",
        "tight eps [lower, upper]",
        "numerical eps",
    ]
    print("| " + " | ".join(cols) + " |")
    print("|---|---|---|---|---|---|---|---|")
    for k in (2, 3):
        for eps0 in (1.0, 4.0):
            mech = ldpopt.randomized_response(k, eps0)
            for n in sizes:
                t_ours, ours = _best(
                    lambda m=mech, n=n: ldpopt.central_epsilon(m, n, delta, "tight"), args.repeats
                )
                t_ref, ref = _best(lambda e=eps0, n=n: ldpopt.central_epsilon(e, n, delta), args.repeats)
                print(
                    f"| {k}-RR | {eps0:g} | {n:.0e} | {t_ours:.3f} | {t_ref:.3f} | {t_ours / t_ref:.2f} | "
                    f"[{ours.lower:.5g}, {ours.upper:.5g}] | {ref.value:.5g} |"
                )
    composition(sizes, args.repeats)


def composition(sizes: tuple[int, ...], repeats: int, delta: float = 1e-6, rounds: int = 10) -> None:
    cols = [
        "mechanism",
        "eps0",
        "n",
        "T",
        "tight (s)",
        "basic (s)",
        "ratio",
        "tight eps [lower, upper]",
        "basic eps",
    ]
    print(f"composition: T = {rounds} rounds, eps0 = 1, delta = {delta:g}")
    print("| " + " | ".join(cols) + " |")
    print("|---|---|---|---|---|---|---|---|---|")
    eps0 = 1.0
    for k in (2, 3):
        mech = ldpopt.randomized_response(k, eps0)
        for n in sizes:
            t_ours, ours = _best(
                lambda m=mech, n=n: ldpopt.central_epsilon(m, n, delta, "tight", rounds=rounds), repeats
            )
            t_ref, ref = _best(lambda n=n: ldpopt.central_epsilon(eps0, n, delta / rounds), repeats)
            print(
                f"| {k}-RR | {eps0:g} | {n:.0e} | {rounds} | {t_ours:.3f} | {t_ref:.3f} | "
                f"{t_ours / t_ref:.2f} | "
                f"[{ours.lower:.5g}, {ours.upper:.5g}] | {rounds * ref.value:.5g} |"
            )


if __name__ == "__main__":
    main()
