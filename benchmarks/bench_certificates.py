"""Dominance certificates: ``spr_decomposition`` on random eps-LDP channels, and how it grows.

Run: ``python benchmarks/bench_certificates.py`` (about a minute).

Channels: ``S @ RR_k(eps) @ T`` with S (k x k) and T (k x m) random row-stochastic matrices
(Dirichlet(1) and Dirichlet(1/2) rows): pre- and post-processing of k-ary randomized response, so
eps-LDP and in general not a staircase channel.  Distributions: Dirichlet(1) pairs.  eps = 1.

The reference, in the same run, is the textbook column generation: the same exact pricing (a
readable dynamic program written here) with an LP master solved by HiGHS
(``scipy.optimize.linprog``, phase 1 with slacks, dual prices from its marginals); ours uses a
non-negative least-squares master (no LP call per round) and then polishes the weights.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy.optimize import linprog

import ldpopt
from ldpopt.spr.certificates import spr_decomposition


def channel(rng, k, m, eps):
    S = rng.dirichlet(np.ones(k), size=k)
    T = rng.dirichlet(np.full(m, 0.5), size=k)
    return S @ np.asarray(ldpopt.randomized_response(k, eps).matrix) @ T


def _price(p, q, c, A, g, h, smax):
    """Best (merged) SPR pair for the functional g.u + h.v, for each number of blocks."""
    k = p.shape[0]
    P = np.concatenate([[0.0], np.cumsum(p)])
    Qs = np.concatenate([[0.0], np.cumsum(q)])
    dP = P[None, :] - P[:, None]
    dQ = Qs[None, :] - Qs[:, None]
    S = (c + A * dP)[..., None] * g + (c + A * dQ)[..., None] * h
    J = S.argmax(-1)
    W = S.max(-1)
    W[np.tril_indices(k + 1)] = -np.inf
    F = np.full(k + 1, -np.inf)
    F[0] = 0.0
    back, out = [], []
    for s in range(1, smax + 1):
        T = F[:, None] + W
        back.append(T.argmax(0))
        F = T.max(0)
        if np.isfinite(F[k]):
            cuts, i = [], k
            for r in range(s, 0, -1):
                t = int(back[r - 1][i])
                cuts.append((t, i))
                i = t
            cuts.reverse()
            out.append((F[k] / (1 + (s - 1) * c), cuts, [int(J[a, b]) for a, b in cuts]))
    return out, dP, dQ


def reference(Q, p0, p1, eps):
    """Column generation with a HiGHS LP master; returns (rounds, columns, phase-1 objective)."""
    red = ldpopt.likelihood_ratio_reduction(p0, p1)
    p, q = red.p, red.q
    k, m = p.shape[0], Q.shape[1]
    c, A = math.exp(-eps), -math.expm1(-eps)
    target = np.concatenate([Q.T @ p0, Q.T @ p1])
    _, dP, dQ = _price(p, q, c, A, np.zeros(m), np.zeros(m), 1)
    images, seen = [], set()

    def add(cuts, slots):
        if (tuple(cuts), tuple(slots)) in seen:
            return False
        seen.add((tuple(cuts), tuple(slots)))
        s = len(cuts)
        img = np.zeros(2 * m)
        for (a, b), j in zip(cuts, slots, strict=True):
            img[j] = (c + A * dP[a, b]) / (1 + (s - 1) * c)
            img[m + j] = (c + A * dQ[a, b]) / (1 + (s - 1) * c)
        images.append(img)
        return True

    for j in range(m):
        add([(0, k)], [j])
    rounds = 0
    while True:
        rounds += 1
        X = np.array(images).T
        n = X.shape[1]
        A_eq = np.vstack([np.hstack([X, np.eye(2 * m), -np.eye(2 * m)]), np.r_[np.ones(n), np.zeros(4 * m)]])
        res = linprog(
            np.r_[np.zeros(n), np.ones(4 * m)],
            A_eq=A_eq,
            b_eq=np.r_[target, 1.0],
            bounds=(0, None),
            method="highs",
            options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10},
        )
        if res.fun <= 1e-13:
            break
        y = res.eqlin.marginals
        added = False
        for val, cuts, slots in _price(p, q, c, A, y[:m], y[m : 2 * m], min(m, k))[0]:
            if val + y[-1] > 1e-12:
                if len(set(slots)) == len(slots):
                    added |= add(cuts, slots)
                else:
                    for j in set(slots):
                        if slots.count(j) > 1:
                            added |= add([(0, k)], [j])
        if not added:
            break
    return rounds, len(images), res.fun


def timed(fn, repeat):
    best = math.inf
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def row(k, m, eps, seed, repeat):
    rng = np.random.default_rng(seed)
    p0, p1 = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
    Q = channel(rng, k, m, eps)
    ours, dec = timed(lambda: spr_decomposition(Q, p0, p1, eps), repeat)
    ref, (rounds, cols, phase1) = timed(lambda: reference(Q, p0, p1, eps), repeat)
    P = np.column_stack([p0, p1])
    mix = sum(w * (C.T @ P) for w, C in zip(dec.weights, dec.components, strict=True))
    resid = float(np.max(np.abs(mix - Q.T @ P)))  # recomputed here
    print(
        f"| k = {k}, m = {m} | {ours:.3f} s | {ref:.3f} s | {ref / ours:.1f}x | {dec.rounds} / {rounds} "
        f"| {dec.num_components} (<= {2 * m - 1}) | {resid:.1e} | {phase1:.1e} |",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    spr_decomposition(np.full((2, 2), 0.5), [0.5, 0.5], [0.3, 0.7], 1.0)  # imports, first call
    head = ("instance", "ours", "reference (LP master)", "ratio", "rounds ours / ref", "components")
    print("| " + " | ".join((*head, "residual", "ref phase-1")) + " |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    row(100, 20, 1.0, 0, args.repeat)
    for k in (25, 50, 200, 400):
        row(k, 20, 1.0, 1, args.repeat)
    for m in (5, 10, 40):
        row(100, m, 1.0, 2, args.repeat)


if __name__ == "__main__":
    main()
