"""Benchmark of ``ldpopt.optimal_channel`` for decision problems.

Workloads (random problems from ``np.random.default_rng(seed)``: likelihood columns
Dirichlet(0.5) over the m inputs, loss 1 - I + 0.3 U(0, 1), uniform prior, eps = 1):

1. full enumeration, m = 14, T = A = 6 (Bayes: 16,382 subset columns; minimax: 98,292 pairs);
   reference in the same run: the channel LP (``method="direct"``) and column generation;
2. column generation, m = 256, T = A = 8 (Bayes, eps = 1 and 3), priced at Lagrangian dual points
   (the default); references: column generation priced at the master's duals (in-out) and the
   channel LP;
3. a symmetric problem, m = 200: circular estimation (App. C.2) on grids (T = 200, A = 400) by
   column generation, reference: the Corollary 3.17 closed form;
4. vertex enumeration (pycddlib), m = 5, reference: the LP over all subsets.

Every line prints ours, the reference, their ratio and the largest difference of the values.

Run:  python benchmarks/bench_decision.py            (all workloads, about a minute or two)
      python benchmarks/bench_decision.py --quick    (m = 12 and m = 128)
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np


def problem(m: int, T: int, A: int, seed: int):
    import ldpopt

    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.full(m, 0.5), size=T).T
    L = 1.0 - np.eye(T, A) + 0.3 * rng.random((T, A))
    return ldpopt.DecisionProblem(P, L)


def seeded_colgen(prob, eps, opt):
    """Column generation whose first master already holds the columns of the optimum ``opt``."""
    from ldpopt.decision import lp

    M = opt.mechanism.matrix
    rows = M > M.min(axis=0) * (1.0 + 1e-9)  # the subset of each extreme output column
    acts = np.argmax(np.asarray(opt.decision_rule), axis=1)
    return lp.column_generation(math.exp(-eps), B=prob.bayes_matrix(), seed=(rows.T, acts), duals="in-out")


def timed(fn, repeat: int = 1):
    best, out = math.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def line(name: str, ours: float, ref: float, ref_name: str, diff: float, extra: str = "") -> None:
    ratio = ref / ours if ours > 0 else math.inf
    print(f"| {name} | {ours:.3f} s | {ref:.3f} s ({ref_name}) | {ratio:.2f}x | {diff:.1e} | {extra} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    import ldpopt
    from ldpopt.decision import problems as examples

    m_enum, m_cg = (12, 128) if args.quick else (14, 256)
    eps = 1.0
    ldpopt.optimal_channel(problem(4, 2, 2, 0), eps)  # imports (scipy, HiGHS) outside the timings
    print("| workload | ours | reference | ratio (ref / ours) | value diff | notes |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")

    prob = problem(m_enum, 6, 6, 1)
    for risk in ("bayes", "minimax"):
        t_enum, r_enum = timed(
            lambda risk=risk: ldpopt.optimal_channel(prob, eps, risk=risk, method="enumerate")
        )
        t_dir, r_dir = timed(lambda risk=risk: ldpopt.optimal_channel(prob, eps, risk=risk, method="direct"))
        t_cg, r_cg = timed(lambda risk=risk: ldpopt.optimal_channel(prob, eps, risk=risk, method="colgen"))
        line(
            f"enumeration, m = {m_enum}, T = A = 6, {risk}",
            t_enum,
            t_dir,
            "channel LP",
            abs(r_enum.value - r_dir.value),
            f"{r_enum.num_outputs} outputs",
        )
        line(
            f"column generation, m = {m_enum}, T = A = 6, {risk}",
            t_cg,
            t_enum,
            "enumeration",
            abs(r_cg.value - r_enum.value),
            f"{r_cg.iterations} rounds",
        )

    from ldpopt.decision import lp

    for eps_cg in (eps, 3.0):
        prob = problem(m_cg, 8, 8, 2)
        t_dir, r_dir = timed(
            lambda prob=prob, eps_cg=eps_cg: ldpopt.optimal_channel(prob, eps_cg, method="direct")
        )
        t_cg, r_cg = timed(
            lambda prob=prob, eps_cg=eps_cg: ldpopt.optimal_channel(
                prob, eps_cg, method="colgen", time_limit=600
            )
        )
        t_io, r_io = timed(
            lambda prob=prob, eps_cg=eps_cg: lp.column_generation(
                math.exp(-eps_cg), B=prob.bayes_matrix(), duals="in-out", time_limit=600
            )
        )
        line(
            f"column generation, m = {m_cg}, T = A = 8, bayes, eps = {eps_cg:g}",
            t_cg,
            t_io,
            "colgen priced at the master's duals (in-out)",
            abs(r_cg.value - r_io.value),
            f"{r_cg.iterations} rounds vs {r_io.iterations}; status {r_cg.status}, "
            f"{r_cg.num_outputs} outputs",
        )
        line(
            f"channel LP, m = {m_cg}, T = A = 8, bayes, eps = {eps_cg:g}",
            t_dir,
            t_cg,
            "column generation",
            abs(r_cg.value - r_dir.value),
            "LP over X -> A + re-solve on the decomposition",
        )

    # diagnostic: why pricing at the master's own duals is slow.  Seed the master with the optimal
    # support found by the channel LP; in-out colgen must still prove that no other column helps
    for m_seed in (64, 128):
        prob = problem(m_seed, 8, 8, 2)
        r_dir = ldpopt.optimal_channel(prob, eps, method="direct")
        t_io, r_io = timed(
            lambda prob=prob: lp.column_generation(math.exp(-eps), B=prob.bayes_matrix(), duals="in-out")
        )
        t_seed, r_seed = timed(lambda prob=prob, r_dir=r_dir: seeded_colgen(prob, eps, r_dir))
        line(
            f"in-out colgen seeded with the optimal support, m = {m_seed} (diagnostic)",
            t_seed,
            t_io,
            "in-out colgen from RR",
            abs(r_seed.value - r_dir.value),
            f"{r_seed.iterations} rounds seeded vs {r_io.iterations} from RR",
        )

    circ = examples.circular_estimation(200, 0.9)
    dp = circ.as_decision_problem()
    t_cf, cf = timed(lambda: circ.closed_form(eps), repeat=5)
    t_cg, r_cg = timed(lambda: ldpopt.optimal_channel(dp, eps, method="colgen"))
    line(
        "circular estimation m = 200 (T = 200, A = 400), colgen",
        t_cg,
        t_cf,
        "closed form",
        abs(r_cg.value - cf),
        f"{r_cg.iterations} rounds, arcs of length {circ.closed_form_size(eps)}",
    )
    mt = examples.mary_testing(200, -0.3 / 199)
    t_sym, r_sym = timed(
        lambda: ldpopt.optimal_channel(mt, eps, group=ldpopt.PermutationGroup.symmetric(200)), 3
    )
    t_cg, r_cg = timed(lambda: ldpopt.optimal_channel(mt, eps, method="colgen"))
    line(
        "m-ary testing m = 200, gamma < 0, symmetry (Cor. 3.17)",
        t_sym,
        t_cg,
        "colgen",
        abs(r_sym.value - r_cg.value),
        f"k = {mt.closed_form_size(eps)}",
    )

    prob5 = problem(5, 3, 3, 3)
    t_v, r_v = timed(lambda: ldpopt.optimal_channel(prob5, eps, method="vertex"), 3)
    t_e, r_e = timed(lambda: ldpopt.optimal_channel(prob5, eps, method="enumerate"), 3)
    line(
        "vertex enumeration (pycddlib), m = 5",
        t_v,
        t_e,
        "enumeration LP",
        abs(r_v.value - r_e.value),
        r_v.message.split("(")[1].split(",")[0],
    )


if __name__ == "__main__":
    main()
