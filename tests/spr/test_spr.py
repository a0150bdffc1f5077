"""The SPR solver against independent optima: KOV LP, vertex enumeration, brute force, closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ldpopt
from _errmodel import R_FN, R_TANH, U, fdiv_bound, naive_bound, within, within_all
from _valuebounds import (
    brute_force_agreement,
    dp_value_bound,
    eval_bound,
    kov_bound,
    ldp_excess,
    pair_bound,
    partition_error,
    transform_bound,
    user_hellinger_error,
    utility_bound,
    vertex_bound,
)
from ldpopt.spr.reduction import _reduce, likelihood_ratio_reduction
from ldpopt.spr.reference import _dp_readable, spr_value
from reference import (
    brute_force_argmax,
    kl_spr_value_decimal,
    ldp_channel_vertices,
    naive_divergence,
    reduced_cuts,
    vertex_enumeration_optimum,
)

#: the numerics tests: CI also runs them on numpy's AVX2 and baseline loops (.ci/npy_disable.py)
pytestmark = pytest.mark.numerics

BUILTINS = ["kl", "reverse_kl", "tv", "chi2", "hellinger", "js"]
#: relative error of an entry of the library's RR levels, units of u (tests/test_mechanism.py)
C_RR_LIB = R_FN + 3.0


def dp_raw(p, q, eps, div, l=None):
    """The readable program's raw optimum (the value before the Renyi transform)."""
    red = _reduce(np.asarray(p, float), np.asarray(q, float))
    return _dp_readable(red.p, red.q, eps, div, red.k if l is None else min(l, red.k))[0]


def decimal_error(k: int, n: int, eps: float, ref: float) -> float:
    """|kl_spr_value_decimal - exact| (60 significant digits): the k-term block sums (k roundings of
    10^-59 relative each), about 10 operations per block (10^-59 each), on n terms m0 ln(m0 / m1)
    with |ln(m0 / m1)| <= eps, sum m0 = 1: at most (k + 10 n) 10^-59 (eps + 2) absolute; then the
    float() conversion (u / 2 |ref|)."""
    return (k + 10 * n) * 1e-59 * (eps + 2.0) + 0.5 * U * abs(ref)


def random_pair(rng, k, conc=1.0):
    return rng.dirichlet(np.full(k, conc)), rng.dirichlet(np.full(k, conc))


# ---------------------------------------------------------------------------------------------
# 1. DP equals the KOV LP (>= 200 instances, every built-in divergence)
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("divergence", BUILTINS)
def test_dp_equals_kov_lp(divergence):
    rng = np.random.default_rng(20261130 + BUILTINS.index(divergence))
    for _ in range(200):
        k = int(rng.integers(1, 9))
        p, q = random_pair(rng, k, conc=float(rng.choice([0.3, 1.0, 3.0])))
        eps = float(rng.uniform(0.05, 8.0))
        dp = ldpopt.optimal_mechanism(p, q, eps, divergence, method="dp")
        lp = ldpopt.kov_lp(p, q, eps, divergence)
        assert lp.status == 0
        # both within their bounds of the exact optimum: the DP's rounding (dp_value_bound), the
        # LP's HiGHS tolerance and rounding (kov_bound, _valuebounds.py)
        bound = dp_value_bound(p, q, eps, divergence) + kov_bound(p, q, eps, divergence)
        assert within("DP vs KOV LP", dp.value, lp.value, bound), (k, eps, dp.value, lp.value, bound)


@pytest.mark.parametrize("divergence", ["egamma:1.0", "egamma:2.5", "renyi:2", "renyi:0.5", "renyi:3.5"])
def test_dp_equals_kov_lp_factories(divergence):
    rng = np.random.default_rng(7)
    for _ in range(40):
        k = int(rng.integers(2, 8))
        p, q = random_pair(rng, k)
        eps = float(rng.uniform(0.05, 6.0))
        dp = ldpopt.optimal_mechanism(p, q, eps, divergence, method="dp")
        lp = ldpopt.kov_lp(p, q, eps, divergence)
        # raw bounds as in test_dp_equals_kov_lp, mapped through the Renyi transform
        raw = dp_raw(p, q, eps, ldpopt.get_divergence(divergence))
        err = dp_value_bound(p, q, eps, divergence) + kov_bound(p, q, eps, divergence)
        bound = transform_bound(divergence, raw, err)
        assert within("DP vs KOV LP (factories)", dp.value, lp.value, bound), (k, eps, dp.value, lp.value)


def test_user_divergence_matches_builtin_and_lp():
    # a user's generator for the squared Hellinger distance without the built-in code
    user = ldpopt.FDivergence(lambda t: (np.sqrt(t) - 1.0) ** 2, name="my-hellinger")
    rng = np.random.default_rng(3)
    for _ in range(20):
        p, q = random_pair(rng, 6)
        eps = float(rng.uniform(0.1, 5))
        a = ldpopt.optimal_mechanism(p, q, eps, user)
        b = ldpopt.optimal_mechanism(p, q, eps, "hellinger", method="dp")
        c = ldpopt.kov_lp(p, q, eps, user)
        # a user generator takes the table path: its own vectorised formula scores every block
        # with the readable program's operations, so value and partition are the readable
        # program's exactly; against the built-in: its bounds plus that formula's error per
        # score (user_hellinger_error)
        r = ldpopt.optimal_mechanism(p, q, eps, user, method="dp")
        assert a.method != "dp" and a.value == r.value and a.partition == r.partition
        user_dp = dp_value_bound(p, q, eps, "hellinger", extra=user_hellinger_error)
        bound = user_dp + dp_value_bound(p, q, eps, "hellinger")
        assert within("user generator vs built-in (DP)", a.value, b.value, bound), (a.value, b.value)
        bound = user_dp + kov_bound(p, q, eps, "hellinger", extra=user_hellinger_error)
        assert within("user generator: DP vs KOV LP", a.value, c.value, bound), (a.value, c.value)


# ---------------------------------------------------------------------------------------------
# 2. Output budget: vertex enumeration of the l-output channel polytope, brute force
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("k,l", [(3, 2), (4, 2), (4, 3), (5, 2), (5, 3)])
def test_budget_equals_vertex_enumeration(k, l):
    rng = np.random.default_rng(100 * k + l)
    for eps in (0.3, 1.0, 2.5):
        verts = ldp_channel_vertices(k, l, eps)
        for divergence in ("kl", "tv", "chi2", "hellinger"):
            div = ldpopt.get_divergence(divergence)
            for _ in range(3):
                p, q = random_pair(rng, k, conc=0.7)
                ours = ldpopt.optimal_mechanism(p, q, eps, divergence, max_outputs=l, method="dp")
                ref = vertex_enumeration_optimum(p, q, eps, div, l, vertices=verts)
                # the DP's rounding (dp_value_bound bounds every partition, so the budget's too), the
                # float vertices' a posteriori distance from the polytope (vertex_bound); the DP's
                # partition is optimal up to twice its bound
                dpb = dp_value_bound(p, q, eps, div)
                bound = dpb + vertex_bound(p, q, eps, div, verts, ours.mechanism.matrix, 2 * dpb)
                assert within("DP vs vertex enumeration", ours.value, ref, bound), (k, l, eps, divergence)
                assert ours.num_outputs <= l


def test_budget_equals_brute_force_over_all_set_partitions():
    rng = np.random.default_rng(11)
    for _ in range(40):
        k = int(rng.integers(2, 8))
        p, q = random_pair(rng, k)
        eps = float(rng.choice([0.2, 1.0, 3.0, math.inf]))
        l = int(rng.integers(1, k + 1))
        for divergence in ("kl", "js"):
            div = ldpopt.get_divergence(divergence)
            ours = ldpopt.optimal_mechanism(p, q, eps, divergence, max_outputs=l, method="dp")
            ref, ref_part = brute_force_argmax(p, q, eps, div, max_blocks=l)
            # the readable program maximises its own float sums exactly: no slack
            bound = brute_force_agreement(p, q, eps, div, l, ours.value, ours.partition, ref, ref_part)
            assert within("readable vs brute force over set partitions", ours.value, ref, bound), (
                k,
                l,
                eps,
                ours.value,
                ref,
                bound,
            )


# ---------------------------------------------------------------------------------------------
# 3. The returned mechanism is what it claims to be
# ---------------------------------------------------------------------------------------------
def test_mechanism_is_consistent_with_value():
    rng = np.random.default_rng(5)
    for _ in range(60):
        k = int(rng.integers(1, 15))
        p, q = random_pair(rng, k, conc=0.5)
        if rng.random() < 0.3:  # zeros and infinite likelihood ratios
            p[rng.integers(k)] = 0.0
            q[rng.integers(k)] = 0.0
            if p.sum() == 0 or q.sum() == 0:
                continue
            p, q = p / p.sum(), q / q.sum()
        eps = float(rng.choice([0.01, 0.5, 2.0, 9.0]))
        l = None if rng.random() < 0.5 else int(rng.integers(1, k + 1))
        for divergence in ("kl", "tv", "hellinger", "renyi:2"):
            res = ldpopt.optimal_mechanism(p, q, eps, divergence, max_outputs=l, method="dp")
            M = res.mechanism.matrix
            s = res.num_outputs
            assert M.shape == (k, s)
            # s entries, each C_RR_LIB u relative, summing exactly to 1; np.sum (s - 1) u
            assert within_all("SPR matrix row sums", M.sum(axis=1), 1.0, (C_RR_LIB + s) * U)
            assert res.mechanism.is_ldp(eps)
            # log(hi) - log(lo) = eps exactly for the exact levels (tests/test_mechanism.py)
            pl_err = U * (2 * C_RR_LIB + R_FN * (2 * math.log(s) + eps) + eps) if s > 1 else 0.0
            assert res.mechanism.privacy_level() <= eps + pl_err
            # the utility of the SPR mechanism of P is R(P): the matrix product path (utility_bound)
            # against the readable evaluation of P (partition_error), on the raw scale
            div = ldpopt.get_divergence(divergence)
            red = _reduce(p, q)
            cuts = reduced_cuts(red, res.partition)
            raw = spr_value(red.p, red.q, eps, div, cuts)
            err = utility_bound(M, p, q, div, C_RR_LIB * U) + partition_error(red.p, red.q, eps, div, cuts)
            bound = transform_bound(div, raw, err)
            assert within(
                "utility of the mechanism vs its value", res.mechanism.utility(p, q, div), res.value, bound
            )
            if l is not None:
                assert res.num_outputs <= l
            covered = sorted(i for b in res.partition for i in b)
            assert covered == list(range(k))
            # the mechanism is the SPR mechanism of the partition (eq. 11)
            again = ldpopt.spr_mechanism(res.partition, k, eps)
            np.testing.assert_array_equal(again.matrix, M)  # the solver builds it by this function


def test_paper_figure3_instance_two_blocks():
    # at eps = 2 with l = 2 the optimum is one of the paper's candidate partitions; check against
    # the brute force over every 2-output channel vertex
    p = np.array([0.04, 0.09, 0.22, 0.47, 0.18])
    q = np.array([0.25, 0.49, 0.13, 0.10, 0.03])
    res = ldpopt.optimal_mechanism(p, q, 2.0, "kl", max_outputs=2)
    verts = ldp_channel_vertices(5, 2, 2.0)
    ref = vertex_enumeration_optimum(p, q, 2.0, ldpopt.get_divergence("kl"), 2, vertices=verts)
    # the fast path's value of its partition is the readable one up to pair_bound and optimal up to
    # Dinkelbach's slack (tests/spr/test_kernels.py); both far below the readable bound used here
    dpb = dp_value_bound(p, q, 2.0, "kl")
    bound = 2 * dpb + vertex_bound(p, q, 2.0, "kl", verts, res.mechanism.matrix, 3 * dpb)
    assert within("Figure 3 instance vs vertex enumeration", res.value, ref, bound), (res.value, ref, bound)
    # contiguous in the LR order: symbols sorted by p/q are 1, 0, 2, 3, 4
    assert res.partition in (((0, 1), (2, 3, 4)), ((0, 1, 2), (3, 4)), ((1,), (0, 2, 3, 4)))


# ---------------------------------------------------------------------------------------------
# 4. Closed forms: E_gamma (Thm 3.6) and l_r (Prop. 3.8)
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("gamma", [1.0, 1.3, 2.0, 5.0])
def test_egamma_dp_equals_closed_form(gamma):
    rng = np.random.default_rng(int(gamma * 10))
    for _ in range(30):
        k = int(rng.integers(2, 12))
        p, q = random_pair(rng, k)
        eps = float(rng.uniform(0.05, 8))
        dp = ldpopt.optimal_mechanism(p, q, eps, ldpopt.egamma(gamma), method="dp")
        cf = ldpopt.egamma_mechanism(p, q, eps, gamma)
        # eq. (17) written out independently
        e_in = naive_divergence(p, q, "egamma", gamma)
        E = math.exp(eps)
        bound = max(0.0, (E - 1) / (E + 1) * e_in + (1 - gamma) / (E + 1))
        # its rounding: (E - 1) / (E + 1) moves by R_FN u 2E / (E^2 - 1) relative through E, plus the
        # subtraction, the sum and the division (3u); e_in within naive_bound; the product (u);
        # (1 - gamma) / (E + 1): 1 - gamma, E + 1 (R_FN) and the division, (R_FN + 3) u; the sum (u);
        # the clamp at 0 is 1-Lipschitz
        t_rel = R_FN * 2 * E / (E * E - 1) + 3.0
        t1, t2 = (E - 1) / (E + 1) * e_in, (1 - gamma) / (E + 1)
        cf_err = (t_rel + 1) * U * abs(t1) + (E - 1) / (E + 1) * naive_bound("egamma", gamma, p, q)
        cf_err += (R_FN + 3.0) * U * abs(t2) + U * abs(t1 + t2)
        dpb = dp_value_bound(p, q, eps, ldpopt.egamma(gamma))
        assert within("E_gamma DP vs eq. (17)", dp.value, bound, dpb + cf_err), (dp.value, bound)
        # the library's eq. (17): t = tanh(eps / 2) (R_TANH), e_in = f_divergence (fdiv_bound, and
        # fl(gamma - 1): u |gamma - 1| sum(q)), the product; c (R_FN), c / (1 + c) (2 more), 1 - gamma,
        # the product; the sum
        lib_err = (R_TANH + 1) * U * abs(t1) + math.tanh(eps / 2) * (
            fdiv_bound(6, gamma, p, q) + U * abs(gamma - 1) * float(np.sum(q))
        )
        lib_err += (R_FN + 4.0) * U * abs(t2) + U * abs(t1 + t2)
        assert within("E_gamma closed form vs eq. (17)", cf.value, bound, lib_err + cf_err), (cf.value, bound)
        util = cf.mechanism.utility(p, q, ldpopt.egamma(gamma))
        u_err = utility_bound(cf.mechanism.matrix, p, q, ldpopt.egamma(gamma), C_RR_LIB * U)
        assert within("E_gamma mechanism utility vs eq. (17)", util, bound, u_err + cf_err), (util, bound)
        assert cf.mechanism.num_outputs == 2 and cf.mechanism.is_ldp(eps)


@pytest.mark.parametrize("r", [1.0, 1.5, 2.0, 3.0, math.inf])
def test_lr_distance_bound_holds_and_is_attained(r):
    rng = np.random.default_rng(42)
    for _ in range(20):
        k = int(rng.integers(2, 7))
        p, q = random_pair(rng, k)
        eps = float(rng.uniform(0.1, 4))
        res = ldpopt.lr_distance_mechanism(p, q, eps, r)
        tv = 0.5 * np.abs(p - q).sum()
        bound = (1.0 if math.isinf(r) else 2 ** (1 / r)) * math.tanh(eps / 2) * tv
        # the same factor and tanh, multiplied in the same order; tv by fsum against np.sum: the
        # k differences (u each) and the sums ((k - 1) u and u): k u relative, + 2 products
        assert within("l_r closed form vs eq. (19)", res.value, bound, (k + 2) * U * bound), (
            res.value,
            bound,
        )
        # the exact bound's own rounding: tanh R_TANH, tv k u, 2 ** (1 / r) (1 / r: u, ** R_FN), products
        b_err = (R_TANH + k + R_FN + 3.0) * U * bound
        m0, m1 = res.mechanism.output_distributions(p, q)
        # m0 - m1 = +-(hi - lo)(P(S) - Q(S)) exactly, norm 2^(1/r) tanh(eps / 2) tv: the masses within
        # delta = (C_RR_LIB + k) u relative, the difference u; the norm (|x|^r summed, ^(1/r)) within
        # (2 R_FN + 3) u relative
        delta = (C_RR_LIB + k) * U
        d_err = float(np.sum(delta * (m0 + m1) + U * np.abs(m0 - m1)))
        nrm = float(np.linalg.norm(m0 - m1, ord=r))
        n_err = d_err + (2 * R_FN + 3.0) * U * nrm + b_err
        assert within("l_r mechanism vs eq. (19)", nrm, bound, n_err), (nrm, bound, n_err)
        # no eps-LDP channel beats it: every vertex of the 3-output polytope obeys (19); a computed
        # vertex at LDP excess rho is within relative 2 rho of an eps-LDP channel (ldp_excess): the
        # norm moves by 2 rho || |Q|^T |p - q| ||_1 at most; Q^T (p - q) within k u of that, the norm
        for Q in ldp_channel_vertices(k, 3, eps) if k <= 4 else []:
            Q = np.clip(Q, 0, None)
            Q /= Q.sum(axis=1, keepdims=True)
            spread = float(np.sum(Q.T @ np.abs(p - q)))
            slack = (2 * ldp_excess(Q, eps) + (k + 1) * U) * spread + b_err
            val = np.linalg.norm(Q.T @ (p - q), ord=r)
            assert val <= (bound + slack) * (1 + (2 * R_FN + 3.0) * U), (val, bound, slack)


# ---------------------------------------------------------------------------------------------
# 5. eps = inf: the optimal deterministic likelihood-ratio quantizer
# ---------------------------------------------------------------------------------------------
def test_eps_inf_is_best_deterministic_quantizer():
    rng = np.random.default_rng(8)
    for _ in range(30):
        k = int(rng.integers(2, 8))
        p, q = random_pair(rng, k)
        l = int(rng.integers(1, k + 1))
        for divergence in ("kl", "tv", "hellinger"):
            div = ldpopt.get_divergence(divergence)
            res = ldpopt.optimal_mechanism(p, q, math.inf, divergence, max_outputs=l, method="dp")
            assert set(np.unique(res.mechanism.matrix)) <= {0.0, 1.0}
            ref, ref_part = brute_force_argmax(p, q, math.inf, div, max_blocks=l)
            bound = brute_force_agreement(p, q, math.inf, div, l, res.value, res.partition, ref, ref_part)
            assert within("readable vs brute force, eps = inf", res.value, ref, bound), (
                divergence,
                res.value,
                ref,
                bound,
            )
    p = np.array([0.2, 0.3, 0.5])
    q = np.array([0.5, 0.5, 0.0])
    assert ldpopt.optimal_mechanism(p, q, math.inf, "kl").value == math.inf
    # TV of the finest quantizer: 0.5 (0.3 + 0.2 + 0.5) exactly; the readable program within its bound
    tv_inf = ldpopt.optimal_mechanism(p, q, math.inf, "tv").value
    assert within("TV at eps = inf", tv_inf, 0.5, dp_value_bound(p, q, math.inf, "tv")), tv_inf


# ---------------------------------------------------------------------------------------------
# 6. Numerics: tiny and huge eps, tiny probabilities and zeros, large alphabets
# ---------------------------------------------------------------------------------------------
def test_tiny_eps_matches_high_precision():
    rng = np.random.default_rng(13)
    for eps in (1e-8, 1e-6, 1e-3):
        for _ in range(5):
            k = int(rng.integers(2, 7))
            p, q = random_pair(rng, k)
            res = ldpopt.optimal_mechanism(p, q, eps, "kl", method="dp")
            ref_own = kl_spr_value_decimal(p, q, eps, res.partition)
            # the float path's rounding of this partition (partition_error: the shared rounding of c
            # and A and the log1p branch keep it relative to the value, ~u / (eps |dP - dQ|)) and
            # the 60-digit reference's (decimal_error)
            red = _reduce(p, q)
            cuts = reduced_cuts(red, res.partition)
            err = partition_error(red.p, red.q, eps, "kl", cuts)
            bound = err + decimal_error(k, len(cuts), eps, ref_own)
            assert res.value > 0 and within("tiny eps: DP vs 60 digits", res.value, ref_own, bound)
            # optimal among all partitions, evaluated in high precision: the DP is within
            # dp_value_bound of the exact optimum over LR-contiguous partitions, which is the optimum
            from reference import set_partitions

            best = max(kl_spr_value_decimal(p, q, eps, part) for part in set_partitions(range(k)))
            bound = dp_value_bound(p, q, eps, "kl") + decimal_error(k, k, eps, best)
            assert within("tiny eps: DP optimum vs 60 digits", res.value, best, bound)


def test_huge_eps_is_finite_and_tends_to_no_privacy():
    rng = np.random.default_rng(14)
    p, q = random_pair(rng, 6)
    for eps in (50.0, 700.0, 1e3):
        res = ldpopt.optimal_mechanism(p, q, eps, "kl", method="dp")
        assert math.isfinite(res.value)
        assert res.mechanism.is_ldp(eps)
        # D(p||q) >= v*(eps) >= D(RR_eps outputs), whose masses are within c k of p, q (|x_i - p_i| =
        # c |1 - k p_i| / den): v* is within c k sum_i (|log(p_i / q_i)| + 1 + p_i / q_i) of D(p||q)
        c = math.exp(-eps)
        model = c * len(p) * float(np.sum(np.abs(np.log(p / q)) + 1 + p / q))
        bound = dp_value_bound(p, q, eps, "kl") + naive_bound("kl", 0.0, p, q) + model
        assert within("huge eps vs no privacy", res.value, naive_divergence(p, q, "kl"), bound)
    # e^-1000 underflows to 0 (A = 1, no zero mass: the log floor is unused): eps = 1e3 and eps = inf
    # run the same float program
    assert ldpopt.optimal_mechanism(p, q, 1e3, "kl").value == ldpopt.optimal_mechanism(p, q, math.inf).value


def test_large_alphabet_with_tiny_masses_and_zeros():
    rng = np.random.default_rng(15)
    k = 10_000
    p = rng.dirichlet(np.full(k, 0.3))
    q = rng.dirichlet(np.full(k, 0.3))
    p[:50] = 1e-300
    q[50:100] = 1e-300
    p[100:120] = 0.0
    q[120:140] = 0.0
    p[140:150] = 0.0
    q[140:150] = 0.0
    p /= p.sum()
    q /= q.sum()
    for eps in (1e-8, 1.0, 1e3):
        res = ldpopt.optimal_mechanism(p, q, eps, "kl", max_outputs=3)
        assert math.isfinite(res.value) and res.value > 0
        assert res.mechanism.matrix.shape == (k, res.num_outputs)
        assert res.mechanism.is_ldp(eps)
        # the value of the returned partition, recomputed with 60 significant digits: the fast path's
        # value is the readable one's up to pair_bound (tests/spr/test_kernels.py), that within
        # partition_error of the exact value
        red = _reduce(p, q)
        cuts = reduced_cuts(red, res.partition)
        ref = kl_spr_value_decimal(p, q, eps, res.partition)
        err = partition_error(red.p, red.q, eps, "kl", cuts) + pair_bound(red.p, red.q, eps, "kl", cuts)
        bound = err + decimal_error(k, len(cuts), eps, ref)
        assert within("large alphabet vs 60 digits", ref, res.value, bound), (eps, ref, res.value, bound)
        if eps < 700:  # beyond, e^-eps underflows in the float64 matrix itself
            # the product Q^T p over k = 10^4 inputs (utility_bound: k u relative per mass)
            u_err = utility_bound(res.mechanism.matrix, p, q, "kl", C_RR_LIB * U) + err
            util = res.mechanism.utility(p, q, "kl")
            assert within("large alphabet: utility vs value", util, res.value, u_err), (eps, util, u_err)
    # binary (l = 2) optimum is at least the binary mechanism's utility: the binary partition is a
    # 2-block LR-contiguous one, so the DP's value is >= its readable value R_c(P_b) >= R(P_b) - e(P_b),
    # and the utility path is within utility_bound of R(P_b)
    binary = ldpopt.binary_mechanism(p, q, 1.0)
    b = binary.utility(p, q, "kl")
    red = _reduce(p, q)
    cuts = reduced_cuts(red, [blk for blk in binary.partition if blk])
    slack = partition_error(red.p, red.q, 1.0, "kl", cuts) + utility_bound(
        binary.matrix, p, q, "kl", C_RR_LIB * U
    )
    assert ldpopt.optimal_mechanism(p, q, 1.0, "kl", max_outputs=2, method="dp").value >= b - slack


# ---------------------------------------------------------------------------------------------
# 7. Likelihood-ratio reduction
# ---------------------------------------------------------------------------------------------
def test_reduction_sorts_merges_and_drops():
    p = np.array([0.1, 0.0, 0.2, 0.3, 0.0, 0.4])
    q = np.array([0.2, 0.0, 0.4, 0.1, 0.3, 0.0])
    red = likelihood_ratio_reduction(p, q)
    # classes: ratio 0 -> {4}; ratio 0.5 -> {0, 2} (tie merged); ratio 3 -> {3}; inf -> {5}; dropped {1}
    assert red.classes == ((4,), (0, 2), (3,), (5,))
    assert red.dropped == (1,)
    # class masses are the correctly rounded sums (math.fsum) of their members' masses
    np.testing.assert_array_equal(red.p, [0.0, math.fsum([0.1, 0.2]), 0.3, 0.4])
    np.testing.assert_array_equal(red.q, [0.3, math.fsum([0.2, 0.4]), 0.1, 0.0])


def test_reduction_merges_exact_ties_only():
    # 0.1/0.3 and 0.2/0.6 are equal as rationals of the float inputs? not necessarily: check exactly
    from fractions import Fraction

    p = np.array([0.1, 0.2, 0.35, 0.35])
    q = np.array([0.3, 0.6, 0.05, 0.05])
    red = _reduce(p, q)
    tied = Fraction(0.1) / Fraction(0.3) == Fraction(0.2) / Fraction(0.6)
    assert ((0, 1) in red.classes) == tied
    assert (2, 3) in red.classes
    # nearly tied but different ratios stay apart and are ordered exactly
    p2 = np.array([0.5, 0.5 * (1 + 2**-50)]) / (1 + 0.5 * (1 + 2**-50) - 0.5 + 0.5)
    q2 = np.array([0.5, 0.5])
    red2 = _reduce(p2, q2)
    assert red2.k == 2 and red2.classes == ((0,), (1,))


def test_identical_distributions_value_zero():
    p = np.array([0.25, 0.25, 0.5])
    res = ldpopt.optimal_mechanism(p, p, 1.0, "kl")
    assert res.value == 0.0 and res.num_outputs == 1
    assert res.mechanism.is_ldp(1e-12)


# ---------------------------------------------------------------------------------------------
# 8. Property-based invariances
# ---------------------------------------------------------------------------------------------
@st.composite
def instances(draw, max_k=7):
    k = draw(st.integers(2, max_k))
    w0 = draw(st.lists(st.floats(0.0, 1.0), min_size=k, max_size=k))
    w1 = draw(st.lists(st.floats(0.0, 1.0), min_size=k, max_size=k))
    p, q = np.array(w0), np.array(w1)
    if p.sum() == 0:
        p[0] = 1.0
    if q.sum() == 0:
        q[-1] = 1.0
    return p / p.sum(), q / q.sum()


eps_st = st.floats(0.01, 20.0)
div_st = st.sampled_from(BUILTINS + ["egamma:1.5", "renyi:2"])


@given(instances(), eps_st, div_st, st.randoms(use_true_random=False))
def test_permutation_invariance(inst, eps, divergence, rnd):
    p, q = inst
    perm = list(range(len(p)))
    rnd.shuffle(perm)
    a = ldpopt.optimal_mechanism(p, q, eps, divergence, method="dp")
    b = ldpopt.optimal_mechanism(p[perm], q[perm], eps, divergence, method="dp")
    # a permutation gives the same reduced alphabet bit for bit (ratios sorted, exact ties merged,
    # class masses summed by the correctly rounded math.fsum): the same program, the same value
    assert a.value == b.value


@given(instances(), st.floats(0.01, 10.0), st.floats(1.0, 3.0), div_st)
def test_monotone_in_eps(inst, eps, factor, divergence):
    p, q = inst
    res = ldpopt.optimal_mechanism(p, q, eps, divergence, method="dp")
    lo = res.value
    hi = ldpopt.optimal_mechanism(p, q, eps * factor, divergence, method="dp").value
    # a fixed partition's exact value grows with eps, so with P the optimum at eps the computed
    # values obey lo - hi <= e_eps(P) + e_eps2(P) (eval_bound; the readable program has no slack)
    bound = 0.0
    if hi < lo:
        red = _reduce(p, q)
        cuts = reduced_cuts(red, res.partition)
        div = ldpopt.get_divergence(divergence)
        raw = eval_bound(red.p, red.q, eps, div, cuts) + eval_bound(red.p, red.q, eps * factor, div, cuts)
        raw_lo = spr_value(red.p, red.q, eps, div, cuts)
        bound = transform_bound(div, raw_lo, raw)
    assert within("readable: monotone in eps", lo, min(lo, hi), bound), (lo, hi, bound)


@given(instances(), eps_st, div_st)
def test_monotone_in_budget_and_bounded_by_data_processing(inst, eps, divergence):
    p, q = inst
    div = ldpopt.get_divergence(divergence)
    values = [
        ldpopt.optimal_mechanism(p, q, eps, divergence, max_outputs=l, method="dp").value
        for l in range(1, len(p) + 1)
    ]
    for a, b in zip(values, values[1:], strict=False):
        # budget l + 1 runs the same recursion rows s <= l as budget l and maximises over a
        # superset of its ratios: never below, bit for bit
        assert b >= a
    top = div(p, q)
    # data processing: every exact value <= D(p||q); the DP within dp_value_bound of the exact
    # optimum, div(p, q) within fdiv_bound (both raw, mapped through the Renyi transform)
    if math.isfinite(top):
        raw_top = div.raw(p, q)
        err = dp_value_bound(p, q, eps, div) + fdiv_bound(div.code, div.param, p, q)
        assert values[-1] <= top + transform_bound(div, raw_top, err)
    # one block holds everything: x = c + A sum(p), y = c + A sum(q) with both sums 1 up to
    # rounding (p / p.sum() over k symbols: |sum - 1| <= (k + 1) u, the compensated prefix sum
    # adds u), so |d| <= 2 (k + 2) u; at x = y = 1 every perspective has slope |dg/dx| <= 1
    # (KL, reverse KL 1, TV 1/2, the others 0, E_gamma > 1 is 0): |value| <= 2 (k + 3) u
    if not divergence.startswith("renyi"):
        assert within("single block: zero", values[0], 0.0, 2 * (len(p) + 3) * U), values[0]


@given(instances(), eps_st, st.sampled_from(["tv", "hellinger", "js", "egamma:1.0"]))
def test_symmetric_divergences_swap(inst, eps, divergence):
    p, q = inst
    a = ldpopt.optimal_mechanism(p, q, eps, divergence, method="dp").value
    b = ldpopt.optimal_mechanism(q, p, eps, divergence, method="dp").value
    # the exact optima are equal; each DP within its bound (the reversed order sums differently)
    bound = dp_value_bound(p, q, eps, divergence) + dp_value_bound(q, p, eps, divergence)
    assert within("symmetric divergence: swap", a, b, bound), (a, b, bound)


# ---------------------------------------------------------------------------------------------
# 9. Bad input
# ---------------------------------------------------------------------------------------------
GOOD_P = [0.2, 0.3, 0.5]
GOOD_Q = [0.3, 0.3, 0.4]


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(p0=[0.5, 0.5], p1=GOOD_Q), "same length"),
        (dict(p0=[[0.5, 0.5]], p1=[[0.5, 0.5]]), "1-D"),
        (dict(p0=[0.5, float("nan"), 0.5], p1=GOOD_Q), "finite"),
        (dict(p0=[0.5, float("inf"), 0.5], p1=GOOD_Q), "finite"),
        (dict(p0=[0.7, -0.2, 0.5], p1=GOOD_Q), "non-negative"),
        (dict(p0=[0.2, 0.3, 0.6], p1=GOOD_Q), "sum to 1"),
        (dict(eps=0.0), "eps"),
        (dict(eps=-1.0), "eps"),
        (dict(eps=float("nan")), "eps"),
        (dict(max_outputs=0), "max_outputs"),
        (dict(max_outputs=1.5), "max_outputs"),
        (dict(max_outputs="two"), "max_outputs"),
        (dict(divergence="kullback"), "divergence"),
        (dict(p0=[], p1=[]), "empty"),
    ],
)
def test_bad_input_raises_value_error(kwargs, match):
    args = dict(p0=GOOD_P, p1=GOOD_Q, eps=1.0, divergence="kl", max_outputs=None)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        ldpopt.optimal_mechanism(args["p0"], args["p1"], args["eps"], args["divergence"], args["max_outputs"])


def test_normalize_rescales():
    a = ldpopt.optimal_mechanism([2, 3, 5], [3, 3, 4], 1.0, normalize=True)
    b = ldpopt.optimal_mechanism(GOOD_P, GOOD_Q, 1.0)
    # [2, 3, 5] / fsum = 10 gives fl(0.2), fl(0.3), 0.5 (a correctly rounded division): the same input
    assert a.value == b.value


def test_eps_wrong_type_and_method():
    with pytest.raises(TypeError, match="eps"):
        ldpopt.optimal_mechanism(GOOD_P, GOOD_Q, "1")
    with pytest.raises(ValueError, match="method"):
        ldpopt.optimal_mechanism(GOOD_P, GOOD_Q, 1.0, method="magic")


def test_readable_dp_tie_breaking_prefers_fewer_blocks():
    # p = q: every partition has value 0; the solver must return the single block
    p = np.array([0.5, 0.5])
    raw, cuts = _dp_readable(p, np.array([0.4, 0.6]), 1.0, ldpopt.get_divergence("tv"), 2)
    assert cuts[0][0] == 0 and cuts[-1][1] == 2 and raw > 0


def test_labels_survive():
    p0 = {"a": 0.1, "b": 0.4, "c": 0.5}
    p1 = {"c": 0.2, "a": 0.5, "b": 0.3}  # different order: aligned by label
    res = ldpopt.optimal_mechanism(p0, p1, 2.0)
    ref = ldpopt.optimal_mechanism([0.1, 0.4, 0.5], [0.5, 0.3, 0.2], 2.0)
    assert res.value == ref.value  # aligned by label: the same arrays, the same program
    assert res.mechanism.labels == ("a", "b", "c")
    assert {x for b in res.labelled_partition for x in b} == {"a", "b", "c"}


def test_user_divergence_table_path_is_the_readable_program():
    # budgets, ties between block counts (eps large), one block, eps = inf: the table path over
    # the user's own scores returns the readable program's value and partition exactly
    user = ldpopt.FDivergence(lambda t: t * np.log(np.maximum(t, 1e-300)) - t + 1.0, name="my-kl")
    rng = np.random.default_rng(31)
    for trial in range(24):
        p, q = random_pair(rng, int(rng.integers(2, 40)))
        eps = [0.2, 1.0, 3.0, 30.0, math.inf][trial % 5]
        l = [None, 1, 2, 3][trial % 4]
        a = ldpopt.optimal_mechanism(p, q, eps, user, l)
        r = ldpopt.optimal_mechanism(p, q, eps, user, l, method="dp")
        assert a.method != "dp"
        assert a.value == r.value and a.partition == r.partition, (trial, eps, l, a.value, r.value)
