"""The KOV staircase LP against closed forms and the brute force over channel vertices."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ldpopt
from _errmodel import R_FN, R_TANH, U, naive_bound, within
from _valuebounds import dp_value_bound, kov_bound, kov_residual, utility_bound, vertex_bound
from reference import ldp_channel_vertices, naive_divergence, vertex_enumeration_optimum

#: the numerics tests: CI also runs them on numpy's AVX2 and baseline loops (.ci/npy_disable.py)
pytestmark = pytest.mark.numerics


def test_kov_lp_equals_egamma_closed_form():
    rng = np.random.default_rng(21)
    for _ in range(30):
        k = int(rng.integers(2, 9))
        p, q = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
        eps = float(rng.uniform(0.1, 6))
        g = float(rng.uniform(1, 3))
        lp = ldpopt.kov_lp(p, q, eps, ldpopt.egamma(g))
        e_in = naive_divergence(p, q, "egamma", g)
        t1, t2 = math.tanh(eps / 2) * e_in, (1 - g) / (math.exp(eps) + 1)
        bound = max(0.0, t1 + t2)
        # eq. (17)'s rounding: tanh (R_TANH) and the product, e_in (naive_bound); exp (R_FN), + 1,
        # 1 - g and the division; the sum; the clamp is 1-Lipschitz.  The LP: kov_bound.
        cf_err = (R_TANH + 1) * U * abs(t1) + math.tanh(eps / 2) * naive_bound("egamma", g, p, q)
        cf_err += (R_FN + 3.0) * U * abs(t2) + U * abs(t1 + t2)
        err = kov_bound(p, q, eps, ldpopt.egamma(g)) + cf_err
        assert within("KOV LP vs eq. (17)", lp.value, bound, err), (lp.value, bound, err)


def test_kov_lp_equals_vertex_enumeration_k3():
    rng = np.random.default_rng(22)
    kl = ldpopt.get_divergence("kl")
    for _ in range(10):
        p, q = rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(3))
        eps = float(rng.uniform(0.1, 4))
        lp = ldpopt.kov_lp(p, q, eps, "kl")
        # with k = 3 an optimal mechanism needs at most 3 outputs (Corollary 3.2)
        verts = ldp_channel_vertices(3, 3, eps)
        ref = vertex_enumeration_optimum(p, q, eps, kl, 3, vertices=verts)
        # the LP (kov_bound) and the float vertices (vertex_bound, its lower side through the SPR
        # optimum's channel, a vertex, optimal up to twice the readable program's bound)
        dpb = dp_value_bound(p, q, eps, kl)
        spr = ldpopt.optimal_mechanism(p, q, eps, kl, method="dp").mechanism.matrix
        bound = kov_bound(p, q, eps, kl) + vertex_bound(p, q, eps, kl, verts, spr, 2 * dpb)
        assert within("KOV LP vs vertex enumeration", lp.value, ref, bound), (lp.value, ref, bound)


def test_kov_lp_mechanism_is_valid():
    rng = np.random.default_rng(23)
    p, q = rng.dirichlet(np.ones(7)), rng.dirichlet(np.ones(7))
    res = ldpopt.kov_lp(p, q, 1.5, "chi2")
    assert res.status == 0 and res.method == "kov_lp"
    assert res.mechanism.is_ldp(1.5)
    # the channel is Z theta with its rows normalised: within relative kov_residual of the theta
    # whose value sum theta mu the LP reports (that sum's rounding: kov_bound(rounding_only))
    rho = kov_residual(7, 1.5) + 3 * U
    bound = utility_bound(res.mechanism.matrix, p, q, "chi2", rho) + kov_bound(
        p, q, 1.5, "chi2", rounding_only=True
    )
    assert within("KOV mechanism utility vs value", res.mechanism.utility(p, q, "chi2"), res.value, bound)
    assert res.num_outputs <= 7


def test_kov_lp_refuses_large_k_and_bad_eps():
    p = np.full(21, 1 / 21)
    with pytest.raises(ValueError, match="k <= 20"):
        ldpopt.kov_lp(p, p, 1.0)
    with pytest.raises(ValueError, match="eps"):
        ldpopt.kov_lp([0.5, 0.5], [0.2, 0.8], math.inf)
    with pytest.raises(ValueError, match="eps"):
        ldpopt.kov_lp([0.5, 0.5], [0.2, 0.8], 0.0)


def test_kov_lp_with_labels_has_no_partition():
    res = ldpopt.kov_lp({"a": 0.5, "b": 0.3, "c": 0.2}, {"a": 0.2, "b": 0.3, "c": 0.5}, 1.0)
    assert res.labels == ("a", "b", "c")
    assert res.partition is None and res.labelled_partition is None


#: kov_lp's documented precision as a check (docs/spr.md): HiGHS's 1e-10 tolerances on the
#: objective scaled to max 1, times the ratio (<= ~10) of that scale to the optimum
KOV_REL = 1e-9


@pytest.mark.parametrize(
    "divergence", ["kl", "reverse_kl", "js", "chi2", "hellinger", "tv", "renyi:0.5", "renyi:3"]
)
def test_kov_lp_agrees_with_spr_to_1e9_from_eps_1e6(divergence):
    """The documented precision of the LP check: 1e-9 relative for eps >= 1e-6, k <= 8 (it was
    0.0 at eps = 1e-6 and off by 2e-7 at 1e-4: the objective fell below HiGHS's tolerances)."""
    rng = np.random.default_rng(24)
    for eps in (1e-8, 1e-6, 1e-4, 1e-2, 0.5, 3.0, 20.0, 100.0, 700.0):
        for _ in range(3):
            k = int(rng.integers(2, 9))
            p, q = rng.dirichlet(np.full(k, 0.7)), rng.dirichlet(np.full(k, 0.7))
            lp = ldpopt.kov_lp(p, q, eps, divergence)
            ref = ldpopt.optimal_mechanism(p, q, eps, divergence)
            assert lp.status == 0 and lp.value >= 0
            assert lp.value == pytest.approx(ref.value, rel=KOV_REL), (k, eps, lp.value, ref.value)
