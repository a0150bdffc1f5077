"""``ldpopt reproduce robust`` (experiments/robust.py): the k-ary RR curve at an alphabet size
where its worst case comes from the separable solver (above the former limit of 10), re-checked
by a test-local SLSQP on the TV balls written as constraints and by Monte Carlo inside them; a
``from_counts`` row of a Dirichlet family (empty cells in the estimates), its radius, centres and
normaliser (the true pair's divergence) rebuilt independently, its worst cases re-checked by the
same SLSQP."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize

import ldpopt
from ldpopt.experiments.robust import robust_experiment
from reference import naive_divergence

K = 12
RADIUS = 0.05
EPS = 2.0
#: SLSQP below stops at ftol 1e-15 on an order-1 objective, superlinear near the end: its end
#: point is within ~1e-8 of a minimiser and F is Lipschitz (< 50 here), so its value exceeds
#: W by < 5e-7; its end point is feasible to 1e-10, so it can be below W by < 50 * 1e-10
INDEP_ATOL = 1e-6
FEAS_SLACK = 5e-9
#: textbook KL vs the library's perspective: rounding only (test_design's EVAL_ATOL derivation)
EVAL_ATOL = 1e-12


def _kl_tv_worst_case(M, c0, c1, r):
    """min over the TV balls of KL(M^T P0 || M^T P1) on z = (P0, P1, s0, s1), -s <= P - c <= s."""
    k = c0.size

    def obj(z):
        return naive_divergence(z[:k] @ M, z[k : 2 * k] @ M, "kl")

    def grad(z):
        a, b = z[:k] @ M, z[k : 2 * k] @ M
        return np.concatenate([M @ (np.log(a / b) + 1), -M @ (a / b), np.zeros(2 * k)])

    cons = [
        {"type": "eq", "fun": lambda z: np.array([z[:k].sum() - 1, z[k : 2 * k].sum() - 1])},
        {
            "type": "ineq",
            "fun": lambda z: np.concatenate(
                [
                    z[2 * k : 3 * k] - (z[:k] - c0),
                    z[2 * k : 3 * k] + (z[:k] - c0),
                    z[3 * k :] - (z[k : 2 * k] - c1),
                    z[3 * k :] + (z[k : 2 * k] - c1),
                    [2 * r - z[2 * k : 3 * k].sum(), 2 * r - z[3 * k :].sum()],
                ]
            ),
        },
    ]
    z0 = np.concatenate([c0, c1, np.zeros(2 * k)])
    res = minimize(
        obj,
        z0,
        jac=grad,
        method="SLSQP",
        constraints=cons,
        bounds=[(0, 1)] * (4 * k),
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    z = res.x
    assert np.all(cons[1]["fun"](z) >= -1e-10) and np.all(np.abs(cons[0]["fun"](z)) <= 1e-10)
    return obj(z)


@pytest.mark.numerics
def test_rr_row_at_k_above_ten():
    exp = robust_experiment(("dirichlet k=12",), radii=(RADIUS,), eps=(EPS,), sizes=(), trials=1)
    rows = {r["mechanism"]: r for r in exp.rows}
    assert set(rows) == {"robust", "plug_in", "binary", "rr"}
    rr = rows["rr"]
    assert rr["k"] == K and rr["certified"] and rr["gap"] <= 1e-8 * rr["upper_bound"]
    # the same Dirichlet pair as the experiment (its first draw)
    rng = np.random.default_rng(0)
    p0, p1 = rng.dirichlet(np.ones(K)), rng.dirichlet(np.ones(K))
    M = np.asarray(ldpopt.randomized_response(K, EPS).matrix)
    w_ind = _kl_tv_worst_case(M, p0, p1, RADIUS)
    assert rr["worst_case"] <= w_ind + FEAS_SLACK and w_ind - rr["worst_case"] <= INDEP_ATOL
    base = naive_divergence(p0, p1, "kl")
    assert abs(rr["normalized"] - rr["worst_case"] / base) <= 1e-12
    assert rr["normalized_by"] == "estimate" and abs(rr["normalizer"] - base) <= 1e-12
    # no mechanism guarantees more than the robust upper bound
    assert rr["worst_case"] <= rows["robust"]["upper_bound"] + EVAL_ATOL
    # Monte Carlo inside the TV balls: never below the guarantee
    rs = np.random.default_rng(3)
    worst = math.inf
    for _ in range(300):
        pair = []
        for c in (p0, p1):
            d = rs.dirichlet(np.full(K, 0.5)) - c
            pair.append(c + d * min(1.0, RADIUS / (0.5 * np.abs(d).sum())) * rs.uniform())
        worst = min(worst, naive_divergence(pair[0] @ M, pair[1] @ M, "kl"))
    assert worst >= rr["worst_case"] - EVAL_ATOL


N_ROW = 300
#: two evaluations of the radius's closed form (log1p vs log, sqrt): a few ulp of r ~ 0.1
RADIUS_ATOL = 1e-15


@pytest.mark.numerics
def test_from_counts_row_of_a_dirichlet_family():
    exp = robust_experiment(("dirichlet k=6",), radii=(), eps=(), sizes=(N_ROW,), trials=1)
    rows = {r["mechanism"]: r for r in exp.rows}
    assert set(rows) == {"robust", "plug_in", "binary", "rr"}
    # the experiment's draws, repeated: the pair from seed 0, the counts from seed 1
    rng = np.random.default_rng(0)
    p0, p1 = rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6))
    rc = np.random.default_rng(1)
    h0, h1 = rc.multinomial(N_ROW, p0) / N_ROW, rc.multinomial(N_ROW, p1) / N_ROW
    assert (h0 == 0).any() and (h1 == 0).any()  # empty cells: D(p0_hat || p1_hat) is infinite
    # Weissman et al.'s radius, Pr(||P_hat - P||_1 >= 2 r) <= (2^k - 2) e^{-n (2r)^2 / 2} = 0.025
    # per side (95% for both), from its formula
    r = 0.5 * math.sqrt(2.0 * (math.log(2.0**6 - 2.0) + math.log(1.0 / 0.025)) / N_ROW)
    truth = naive_divergence(p0, p1, "kl")
    for row in rows.values():
        assert row["n"] == N_ROW and row["eps"] == 2.0 and abs(row["radius"] - r) <= RADIUS_ATOL
        assert row["normalized_by"] == "truth" and abs(row["normalizer"] - truth) <= EVAL_ATOL
        assert abs(row["normalized"] - row["worst_case"] / truth) <= EVAL_ATOL
        assert row["certified"] and row["gap"] <= 1e-8 * row["upper_bound"]
        assert row["worst_case"] <= rows["robust"]["upper_bound"] + EVAL_ATOL
    # this draw's confidence set holds the truth (the 95% event happened)
    assert 0.5 * np.abs(h0 - p0).sum() <= r and 0.5 * np.abs(h1 - p1).sum() <= r
    # k-ary RR's and the plug-in design's worst cases by the independent SLSQP
    plug = ldpopt.optimal_mechanism(h0, h1, 2.0, "kl").mechanism
    for name, mech in (("rr", ldpopt.randomized_response(6, 2.0)), ("plug_in", plug)):
        M = np.asarray(mech.matrix)
        w_ind = _kl_tv_worst_case(M[:, M.max(axis=0) > 0], h0, h1, r)
        w = rows[name]["worst_case"]
        assert w <= w_ind + FEAS_SLACK and w_ind - w <= INDEP_ATOL
    assert rows["robust"]["worst_case"] >= rows["plug_in"]["worst_case"] - EVAL_ATOL
