"""The KOV staircase LP against closed forms and the brute force over channel vertices."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ldpopt
from reference import naive_divergence, vertex_enumeration_optimum


def test_kov_lp_equals_egamma_closed_form():
    rng = np.random.default_rng(21)
    for _ in range(30):
        k = int(rng.integers(2, 9))
        p, q = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
        eps = float(rng.uniform(0.1, 6))
        g = float(rng.uniform(1, 3))
        lp = ldpopt.kov_lp(p, q, eps, ldpopt.egamma(g))
        e_in = naive_divergence(p, q, "egamma", g)
        bound = max(0.0, math.tanh(eps / 2) * e_in + (1 - g) / (math.exp(eps) + 1))
        assert lp.value == pytest.approx(bound, rel=1e-9, abs=1e-12)


def test_kov_lp_equals_vertex_enumeration_k3():
    rng = np.random.default_rng(22)
    kl = ldpopt.get_divergence("kl")
    for _ in range(10):
        p, q = rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(3))
        eps = float(rng.uniform(0.1, 4))
        lp = ldpopt.kov_lp(p, q, eps, "kl")
        # with k = 3 an optimal mechanism needs at most 3 outputs (Corollary 3.2)
        assert lp.value == pytest.approx(vertex_enumeration_optimum(p, q, eps, kl, 3), rel=1e-9)


def test_kov_lp_mechanism_is_valid():
    rng = np.random.default_rng(23)
    p, q = rng.dirichlet(np.ones(7)), rng.dirichlet(np.ones(7))
    res = ldpopt.kov_lp(p, q, 1.5, "chi2")
    assert res.status == 0 and res.method == "kov_lp"
    assert res.mechanism.is_ldp(1.5)
    assert res.mechanism.utility(p, q, "chi2") == pytest.approx(res.value, rel=1e-9)
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
