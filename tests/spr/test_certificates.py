"""Dominance certificates (SPR Theorem 3.1 as code): Lemma A.1, Examples A.3 and B.2, Prop. 4.3, and
hundreds of seeded mechanisms whose certificates are re-checked here without the library's code."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

import ldpopt
from ldpopt.decision.problem import DecisionProblem
from ldpopt.spr.certificates import (
    RESIDUAL_TOL,
    dominance,
    layer_decomposition,
    spr_decomposition,
    staircase_refinement,
    verify_certificate,
)

U = 2.0**-53
#: an SPR entry e^eps/(e^eps+s-1) computed here (exp, +, /) and in the library (from c = e^-eps:
#: exp, *, +, /) is within ~4 ulp of the exact value each way: 8 u relative, times 2 for safety
ENTRY_RTOL = 16 * U


# ---------------------------------------------------------------------------------------------
# independent checks (no library code)
# ---------------------------------------------------------------------------------------------
def lr_key(a, b):
    return (1, Fraction(0)) if b == 0 else (0, Fraction(float(a)) / Fraction(float(b)))


def spr_channel(blocks, slots, k, m, eps):
    """The paper's eq. (11), e^eps form: e^eps/(e^eps+s-1) on the own block, 1/(e^eps+s-1) else."""
    s = len(blocks)
    ee = math.exp(eps)
    out = np.zeros((k, m))
    for b, j in zip(blocks, slots, strict=True):
        out[:, j] = 1.0 / (ee + s - 1)
        out[list(b), j] = ee / (ee + s - 1)
    return out


def check_certificate(dec, Q, p0, p1, eps):
    """Everything the certificate claims, recomputed from scratch."""
    k, m = Q.shape
    w = np.asarray(dec.weights)
    assert np.all(w >= 0) and abs(math.fsum(w) - 1.0) <= 4 * len(w) * U
    assert 1 <= len(w) <= 2 * m - 1
    P = np.column_stack([p0, p1])
    mix = sum(wt * (np.asarray(c).T @ P) for wt, c in zip(w, dec.components, strict=True))
    assert np.max(np.abs(mix - Q.T @ P)) <= RESIDUAL_TOL
    for blocks, slots, comp in zip(dec.index_partitions, dec.placements, dec.components, strict=True):
        assert sorted(i for b in blocks for i in b) == list(range(k))
        assert len(set(slots)) == len(slots) == len(blocks)
        # LR-contiguous: blocks in increasing likelihood-ratio order (zero-mass symbols ignored)
        keys = [[lr_key(p0[i], p1[i]) for i in b if p0[i] > 0 or p1[i] > 0] for b in blocks]
        keys = [kk for kk in keys if kk]
        for a, b in itertools.pairwise(keys):
            assert max(a) <= min(b)
        if math.isfinite(eps) and eps < 700:
            want = spr_channel(blocks, slots, k, m, eps)
            assert np.all(np.abs(np.asarray(comp) - want) <= ENTRY_RTOL * np.abs(want))


#: value <= mixture: the mixture is exact for the pair sum_t w_t C_t^T P, which differs from Q's
#: pair by the residual r <= 1e-12 per entry; on eps-LDP pairs (ratios in [e^-eps, e^eps]) the
#: perspective y f(x/y) of every built-in divergence has partial derivatives below
#: e^(2 eps) + eps + 2 (chi^2: |f - t f'| = |1 - t^2|; KL: |f'| = |log t + 1|), so the values
#: differ by at most 2 m r (e^(2 eps) + eps + 2); the evaluations' own rounding is below
#: 64 m u (1 + value).  The same bound covers E_2 (|f'| <= 1, |f - t f'| <= 2) and Renyi of
#: orders 2 and 1/2 (D = log S / (a - 1): |dS| <= e^(2 eps) with S >= 1 for a = 2; |dS| <= e^(eps/2) / 2
#: with S >= e^(-eps/2) for a = 1/2, so |dD| <= e^eps).
def div_slack(m, eps, value):
    return 2 * m * RESIDUAL_TOL * (math.exp(2 * eps) + eps + 2) + 64 * m * U * (1 + abs(value))


# ---------------------------------------------------------------------------------------------
# mechanism families
# ---------------------------------------------------------------------------------------------
def rr(k, eps):
    return np.asarray(ldpopt.randomized_response(k, eps).matrix)


def interior(rng, k, m, eps):
    """Random eps-LDP channel: pre-processing S, k-ary RR, post-processing T (both row-stochastic)."""
    S = rng.dirichlet(np.ones(k), size=k)
    T = rng.dirichlet(np.full(m, 0.5), size=k)
    return S @ rr(k, eps) @ T


def vertex(rng, k, m, eps):
    """A vertex of the eps-LDP channel polytope: a basic optimum of a random linear objective (HiGHS)."""
    n = k * m
    rows, rhs = [], []
    ee = math.exp(eps)
    for j in range(m):
        for a in range(k):
            for b in range(k):
                if a != b:
                    r = np.zeros(n)
                    r[a * m + j] = 1.0
                    r[b * m + j] = -ee
                    rows.append(r)
                    rhs.append(0.0)
    A_eq = np.kron(np.eye(k), np.ones(m))
    res = linprog(
        rng.normal(size=n),
        A_ub=np.array(rows) if rows else None,
        b_ub=np.array(rhs) if rows else None,
        A_eq=A_eq,
        b_eq=np.ones(k),
        bounds=(0, None),
        method="highs-ds",
    )
    Q = np.maximum(res.x.reshape(k, m), 0.0)
    Q = Q / Q.sum(axis=1, keepdims=True)
    # the LP's rounding may exceed e^eps by ~1e-15 relative: certify at the channel's own level
    return Q


def unary(k, eps):
    """Symmetric unary encoding: bit i is 1 w.p. e^(eps/2)/(1+e^(eps/2)) when x = i, else the
    complement; outputs are the 2^k bit vectors (eps-LDP)."""
    hi = math.exp(eps / 2) / (1 + math.exp(eps / 2))
    out = np.ones((k, 2**k))
    for y, bits in enumerate(itertools.product((0, 1), repeat=k)):
        for x in range(k):
            for i, bit in enumerate(bits):
                pr = hi if i == x else 1 - hi
                out[x, y] *= pr if bit else 1 - pr
    return out


def merged_spr(rng, k, m, eps, p0, p1):
    order = np.argsort(np.asarray(p0) / np.asarray(p1), kind="stable")
    s = int(rng.integers(1, k + 1))
    cuts = sorted(rng.choice(np.arange(1, k), size=s - 1, replace=False)) if s > 1 else []
    blocks = [order[a:b].tolist() for a, b in zip([0, *cuts], [*cuts, k], strict=True)]
    Qs = np.asarray(ldpopt.spr_mechanism(blocks, k, eps).matrix)
    tau = rng.integers(0, m, size=s)
    out = np.zeros((k, m))
    for j in range(s):
        out[:, tau[j]] += Qs[:, j]
    return out


def decision_channel(rng, k, eps):
    T = int(rng.integers(2, 4))
    prob = DecisionProblem(rng.dirichlet(np.ones(k), size=T).T, rng.uniform(0, 1, size=(T, T)))
    return np.asarray(ldpopt.optimal_channel(prob, eps).mechanism.matrix)


#: the built-in divergences
DIVS = ("kl", "reverse_kl", "tv", "chi2", "hellinger", "js")


def certify_and_check(Q, p0, p1, eps, divergences=DIVS):
    res = dominance(Q, p0, p1, eps, divergences)
    dec = res.decomposition
    assert dec.success, dec.message
    check_certificate(dec, Q, p0, p1, eps)
    assert verify_certificate(dec.to_dict()).valid
    m = Q.shape[1]
    for row in res.rows:
        assert row.value <= row.mixture + div_slack(m, eps, row.value), row
        assert row.mixture <= row.best_value + div_slack(1, eps, row.best_value), row
        assert row.best_value <= row.optimum + div_slack(1, eps, row.optimum), row
    return dec


@pytest.mark.numerics
def test_random_mechanisms_are_certified():
    rng = np.random.default_rng(20260502)
    count = 0
    for _ in range(60):
        k = int(rng.integers(2, 9))
        eps = float(rng.uniform(0.1, 3.0))
        p0, p1 = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
        m = int(rng.integers(1, 9))
        family = [
            interior(rng, k, m, eps),
            merged_spr(rng, k, m, eps, p0, p1),
            rr(k, eps),
            decision_channel(rng, k, eps),
        ]
        if k * m <= 24:
            family.append(vertex(rng, k, m, eps))
        for Q in family:
            active = Q.max(axis=0) > 0
            e = max(eps, float(np.log(Q.max(0)[active] / Q.min(0)[active]).max()))  # vertices: own level
            certify_and_check(Q, p0, p1, e)
            count += 1
    for k in (2, 3):
        for eps in (0.3, 1.0, 2.5):
            p0, p1 = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
            certify_and_check(unary(k, eps), p0, p1, eps)
            count += 1
    assert count >= 250


@pytest.mark.numerics
def test_all_divergences_on_a_few_mechanisms():
    rng = np.random.default_rng(7)
    for _ in range(10):
        k, m = int(rng.integers(2, 7)), int(rng.integers(2, 7))
        eps = float(rng.uniform(0.2, 2.0))
        p0, p1 = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
        certify_and_check(interior(rng, k, m, eps), p0, p1, eps, (*DIVS, "egamma:2", "renyi:2", "renyi:0.5"))


# ---------------------------------------------------------------------------------------------
# the paper's examples
# ---------------------------------------------------------------------------------------------
A3 = np.array([[0.3124, 0.6876], [0.4017, 0.5983], [0.2865, 0.7135], [0.3588, 0.6412], [0.4279, 0.5721]])


@pytest.mark.numerics
def test_example_a3_refinement():
    ref = staircase_refinement(A3, 1.0)
    assert np.round(ref.coefficients, 4).tolist() == [
        0.2042, 0.0151, 0.0270, 0.0250, 0.0152,
        0.4898, 0.0152, 0.0250, 0.0270, 0.0151,
    ]  # fmt: skip
    # the paper's 1-based high sets {1,2,4,5} > {2,4,5} > {2,5} > {5}; {1,2,3,4} > {1,3,4} > {1,3} > {3}
    first = ((), (0, 1, 3, 4), (1, 3, 4), (1, 4), (4,))
    second = ((), (0, 1, 2, 3), (0, 2, 3), (0, 2), (2,))
    assert ref.high_sets == first + second
    assert ref.merge.tolist() == [0] * 5 + [1] * 5
    # staircase: every fine column takes two values, ratio e; merging reproduces Q
    for t, H in enumerate(ref.high_sets):
        col = ref.matrix[:, t]
        lo = ref.coefficients[t]
        want = np.where(np.isin(np.arange(5), H), lo * math.e, lo)
        assert np.allclose(col, want, rtol=8 * U, atol=0)
    merged = np.zeros_like(A3)
    for t, y in enumerate(ref.merge):
        merged[:, y] += ref.matrix[:, t]
    assert np.max(np.abs(merged - A3)) <= 16 * U
    assert np.allclose(ref.merged(), merged, rtol=0, atol=16 * U)


def test_refinement_refuses_non_ldp_and_handles_eps_zero():
    with pytest.raises(ValueError, match=r"Q\[4, 0\] = 0\.4279 > e\^eps \* Q\[2, 0\]"):
        staircase_refinement(A3, 0.3)
    ref = staircase_refinement(np.full((3, 2), 0.5), 0.0)
    assert ref.high_sets == ((), ()) and np.allclose(ref.coefficients, 0.5)


# polynomials in e with rational coefficients (e transcendental: equality of polynomials)
def pmul(a, b):
    out = [Fraction(0)] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            out[i + j] += x * y
    return out


def padd(a, b):
    n = max(len(a), len(b))
    return [(a[i] if i < len(a) else 0) + (b[i] if i < len(b) else 0) for i in range(n)]


def ptrim(a):
    a = list(a)
    while len(a) > 1 and a[-1] == 0:
        a.pop()
    return a


E = [Fraction(0), Fraction(1)]  # the polynomial "e"


def const(x):
    return [Fraction(x)]


# Example B.2 (1-based intervals in the paper): weights theta * D and intervals
B2_THETA = (10, 4, 3, 7, 7)
B2_INTERVALS = ((0, 0), (0, 1), (1, 1), (1, 4), (2, 4))
B2_LAYERS = (((0, 3), 1), ((1, 4), 1), ((0, 2, 4), 2))  # (outputs of the layer, s - 1)
B2_LAMBDA = (7, 4, 3)  # times 1/D


def b2_numerators():
    """Q * D entrywise as polynomials in e."""
    return [
        [
            pmul(const(th), E) if a <= i <= b else const(th)
            for th, (a, b) in zip(B2_THETA, B2_INTERVALS, strict=True)
        ]
        for i in range(5)
    ]


def test_example_b2_paper_certificate_exact():
    # Q = sum_t beta_t Qhat_t, beta_t = lambda_t (e + s_t - 1) / D, Qhat_t entries (e or 1) / (e + s_t - 1):
    # times D this is Q * D = sum_t lambda_t * (e or 1 or 0), an identity of polynomials in e
    Qn = b2_numerators()
    for i in range(5):
        for y in range(5):
            total = const(0)
            for (outs, _), lam in zip(B2_LAYERS, B2_LAMBDA, strict=True):
                if y in outs:
                    a, b = B2_INTERVALS[y]
                    total = padd(total, pmul(const(lam), E if a <= i <= b else const(1)))
            assert ptrim(total) == ptrim(Qn[i][y])
    # weights sum to 1: sum_t lambda_t (e + s_t - 1) = D = 17 + 14 e
    total = const(0)
    for (_, s1), lam in zip(B2_LAYERS, B2_LAMBDA, strict=True):
        total = padd(total, pmul(const(lam), padd(E, const(s1))))
    assert ptrim(total) == [17, 14]
    # each row of Q sums to D (row-stochastic)
    for i in range(5):
        row = const(0)
        for y in range(5):
            row = padd(row, Qn[i][y])
        assert ptrim(row) == [17, 14]


def b2_float():
    e = math.e
    D = 17 + 14 * e
    Q = np.array([[float(np.polyval(c[::-1], e)) for c in row] for row in b2_numerators()]) / D
    weights = [lam * (e + s1) / D for (_, s1), lam in zip(B2_LAYERS, B2_LAMBDA, strict=True)]
    parts, places, comps = [], [], []
    for outs, _ in B2_LAYERS:
        blocks = [list(range(B2_INTERVALS[y][0], B2_INTERVALS[y][1] + 1)) for y in outs]
        parts.append(blocks)
        places.append(list(outs))
        comps.append(spr_channel(blocks, outs, 5, 5, 1.0))
    return Q, weights, parts, places, comps


#: p0/p1 with likelihood ratios increasing along 0..4 (the paper's order)
B2_P0 = np.array([0.05, 0.1, 0.2, 0.3, 0.35])
B2_P1 = np.array([0.35, 0.3, 0.2, 0.1, 0.05])


def b2_certificate_dict():
    Q, weights, parts, places, comps = b2_float()
    return {
        "format": "ldpopt.spr_certificate",
        "format_version": 1,
        "eps": 1.0,
        "labels": None,
        "p0": B2_P0.tolist(),
        "p1": B2_P1.tolist(),
        "matrix": Q.tolist(),
        "weights": weights,
        "partitions": parts,
        "placements": places,
        "components": [c.tolist() for c in comps],
        "residual": None,
    }


def test_example_b2_paper_certificate_verifies_and_decomposition_is_valid():
    check = verify_certificate(b2_certificate_dict())
    assert check.valid, check.problems
    Q = b2_float()[0]
    dec = spr_decomposition(Q, B2_P0, B2_P1, 1.0)
    check_certificate(dec, Q, B2_P0, B2_P1, 1.0)
    assert verify_certificate(dec).valid
    # Q is an interval staircase channel in LR order: the certificate is the paper's layers
    assert dec.placements == tuple(outs for outs, _ in B2_LAYERS)
    assert np.allclose(dec.weights, b2_float()[1], rtol=64 * U, atol=0)  # re-solved weights: a few ulp


@pytest.mark.numerics
def test_example_b2_layers_are_the_papers():
    Q = b2_float()[0]
    lay = layer_decomposition(Q, 1.0)
    D = 17 + 14 * math.e
    # lambda = 7/D, 4/D, 3/D; layers {I1, I4}, {I2, I5}, {I1, I3, I5}
    assert np.allclose(lay.thickness * D, B2_LAMBDA, rtol=32 * U, atol=0)
    assert lay.placements == tuple(outs for outs, _ in B2_LAYERS)
    assert lay.partitions == (((0,), (1, 2, 3, 4)), ((0, 1), (2, 3, 4)), ((0,), (1,), (2, 3, 4)))
    _, weights, _, _, comps = b2_float()
    assert np.allclose(lay.weights, weights, rtol=32 * U, atol=0)
    for got, want in zip(lay.components, comps, strict=True):
        assert np.allclose(got, want, rtol=ENTRY_RTOL, atol=0)
    total = sum(w * c for w, c in zip(weights, comps, strict=True))
    assert np.max(np.abs(total - Q)) <= 16 * U


def random_interval_partition(rng, k):
    s = int(rng.integers(1, k + 1))
    cuts = sorted(rng.choice(np.arange(1, k), size=s - 1, replace=False)) if s > 1 else []
    return [tuple(range(a, b)) for a, b in zip([0, *cuts], [*cuts, k], strict=True)]


@pytest.mark.numerics
def test_layer_decomposition_of_random_interval_staircase_channels():
    rng = np.random.default_rng(42)
    done = 0
    while done < 20:
        k, m = int(rng.integers(2, 8)), int(rng.integers(2, 9))
        eps = float(rng.uniform(0.2, 3.0))
        parts = [random_interval_partition(rng, k) for _ in range(int(rng.integers(1, 4)))]
        intervals = sorted({iv for part in parts for iv in part})
        if len(intervals) > m:
            continue
        slot = dict(zip(intervals, rng.permutation(m)[: len(intervals)].tolist(), strict=True))
        # a convex combination of SPR channels in which each interval always has the same column,
        # so every column is staircase with an interval high set
        weights = rng.dirichlet(np.ones(len(parts)))
        Q = sum(
            w * spr_channel(part, [slot[iv] for iv in part], k, m, eps)
            for w, part in zip(weights, parts, strict=True)
        )
        lay = layer_decomposition(Q, eps)
        assert np.all(lay.weights > 0) and abs(math.fsum(lay.weights) - 1) <= 8 * len(lay.weights) * U
        assert len(lay.weights) <= len(intervals)  # each layer empties at least one column
        total = sum(w * c for w, c in zip(lay.weights, lay.components, strict=True))
        assert np.max(np.abs(total - Q)) <= 64 * U
        done += 1
    with pytest.raises(ValueError, match="interval high set"):
        layer_decomposition(spr_channel([[0, 2], [1]], [0, 1], 3, 2, 1.0), 1.0)


def test_verify_rejects_broken_certificates():
    good = b2_certificate_dict()
    bad_w = dict(good, weights=[0.5, 0.5, 0.0])
    assert not verify_certificate(bad_w).valid
    swapped = dict(good, placements=[[3, 0], *good["placements"][1:]])
    assert not verify_certificate(swapped).valid
    wrong_order = dict(good, p0=B2_P1.tolist(), p1=B2_P0.tolist())  # reverses the LR order
    res = verify_certificate(wrong_order)
    assert not res.valid and any("LR-contiguous" in p for p in res.problems)


# ---------------------------------------------------------------------------------------------
# Proposition 4.3
# ---------------------------------------------------------------------------------------------
@pytest.mark.numerics
def test_prop_4_3_coarsened_spr_is_not_extreme():
    rng = np.random.default_rng(43)
    for _ in range(12):
        k = int(rng.integers(3, 8))
        eps = float(rng.uniform(0.3, 3.0))
        p0 = np.sort(rng.dirichlet(np.ones(k)))
        p1 = np.sort(rng.dirichlet(np.ones(k)))[::-1].copy()  # LR increasing along 0..k-1
        s = int(rng.integers(3, k + 1))
        cuts = sorted(rng.choice(np.arange(1, k), size=s - 1, replace=False))
        blocks = [list(range(a, b)) for a, b in zip([0, *cuts], [*cuts, k], strict=True)]
        t = int(rng.integers(2, s))
        tau = np.concatenate([np.arange(t), rng.integers(0, t, size=s - t)])  # onto [t], 1 < t < s
        Qs = spr_channel(blocks, range(s), k, s, eps)
        Q = np.zeros((k, t))
        for j in range(s):
            Q[:, tau[j]] += Qs[:, j]
        dec = spr_decomposition(Q, p0, p1, eps)
        check_certificate(dec, Q, p0, p1, eps)
        pts = {tuple(np.round(np.concatenate([c.T @ p0, c.T @ p1]), 12)) for c in dec.components}
        assert len(pts) >= 2
        # the proposition's own split: tau(Q_pi) = alpha R + (1 - alpha) U
        ee = math.exp(eps)
        alpha = (ee + t - 1) / (ee + s - 1)
        n = np.bincount(tau, minlength=t)
        R = np.zeros((k, t))
        for y in range(t):
            members = [i for j in range(s) if tau[j] == y for i in blocks[j]]
            R[:, y] = 1 / (ee + t - 1)
            R[members, y] = ee / (ee + t - 1)
        Uc = np.tile((n - 1) / (s - t), (k, 1))
        assert np.allclose(alpha * R + (1 - alpha) * Uc, Q, rtol=0, atol=64 * U)


# ---------------------------------------------------------------------------------------------
# degenerate inputs
# ---------------------------------------------------------------------------------------------
def test_zero_masses_and_ties():
    rng = np.random.default_rng(3)
    p0 = np.array([0.2, 0.0, 0.2, 0.1, 0.0, 0.5])
    p1 = np.array([0.1, 0.0, 0.1, 0.4, 0.3, 0.1])  # symbols 0 and 2 tie, symbol 1 has no mass
    for m in (1, 3, 6):
        Q = interior(rng, 6, m, 1.2)
        dec = certify_and_check(Q, p0, p1, 1.2)
        for blocks in dec.index_partitions:
            assert any(1 in b for b in blocks)


def test_pairs_close_together():
    """Where every SPR pair is close to every other (eps near 0; p0 close to p1 on its mass), the
    gap left by the master is below the rounding of a plain NNLS's prices: still certified."""
    p0 = np.array([9.999023946952921e-01, 9.585314694081872e-07, 9.664677323852902e-05])
    p1 = np.array([9.9968506698251003e-01, 7.3413883108090229e-08, 3.1485960360693046e-04])
    eps = 0.0018814555049859133
    certify_and_check(rr(3, eps), p0, p1, eps, ("kl", "tv"))
    Q = np.zeros((2, 6))
    Q[:, [0, 4]] = spr_channel([[1], [0]], [0, 1], 2, 2, 1.8259049811488433)
    p0 = np.array([2.107578658391768e-08, 1 - 2.107578658391768e-08])
    p1 = np.array([1.3615309260954033e-11, 1 - 1.3615309260954033e-11])
    certify_and_check(Q, p0, p1, 1.8259049811488433, ("kl", "tv"))


def test_eps_zero_and_infinity():
    rng = np.random.default_rng(5)
    p0, p1 = rng.dirichlet(np.ones(4)), rng.dirichlet(np.ones(4))
    row = rng.dirichlet(np.ones(3))
    Q = np.tile(row, (4, 1))
    dec = spr_decomposition(Q, p0, p1, 0.0)
    check_certificate(dec, Q, p0, p1, 0.0)
    res = dominance(Q, p0, p1, 0.0, ("kl",))
    assert res.rows[0].optimum == 0.0
    D = np.eye(4)[[0, 1, 1, 2]]  # deterministic: eps = inf
    dec = spr_decomposition(D, p0, p1, math.inf)
    check_certificate(dec, D, p0, p1, math.inf)


def test_non_ldp_matrix_is_refused_naming_entries():
    Q = np.array([[0.9, 0.1], [0.2, 0.8]])
    with pytest.raises(ValueError, match=r"mechanism\[0, 0\] = 0\.9 > e\^eps \* mechanism\[1, 0\]"):
        spr_decomposition(Q, [0.5, 0.5], [0.3, 0.7], 1.0)


def test_mechanism_input_with_labels():
    mech = ldpopt.randomized_response(3, 1.0, labels=["a", "b", "c"])
    p0 = {"a": 0.2, "b": 0.5, "c": 0.3}
    p1 = {"c": 0.6, "a": 0.3, "b": 0.1}
    dec = spr_decomposition(mech, p0, p1)
    assert dec.eps == 1.0 and dec.success
    assert all(set(x for b in part for x in b) == {"a", "b", "c"} for part in dec.partitions)
    check_certificate(dec, np.asarray(mech.matrix), np.array([0.2, 0.5, 0.3]), np.array([0.3, 0.1, 0.6]), 1.0)


@settings(max_examples=25)
@given(
    seed=st.integers(0, 2**32 - 1),
    k=st.integers(1, 6),
    m=st.integers(1, 6),
    eps=st.floats(0.05, 4.0),
)
def test_certificate_survives_relabelling_of_inputs_and_outputs(seed, k, m, eps):
    """Permuting the inputs (rows of Q and entries of p0, p1) and the outputs (columns of Q) gives
    a certificate for the permuted mechanism: every claim is re-checked on the permuted instance."""
    rng = np.random.default_rng(seed)
    p0, p1 = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
    Q = interior(rng, k, m, eps)
    rows, cols = rng.permutation(k), rng.permutation(m)
    for QQ, a, b in ((Q, p0, p1), (Q[rows][:, cols], p0[rows], p1[rows])):
        dec = spr_decomposition(QQ, a, b, eps)
        check_certificate(dec, QQ, a, b, eps)


def test_dominance_refuses_bad_divergences_naming_the_argument():
    mech = ldpopt.randomized_response(3, 1.0)
    p0, p1 = [0.2, 0.3, 0.5], [0.5, 0.3, 0.2]
    with pytest.raises(TypeError, match="divergences must be a divergence or a list"):
        ldpopt.dominance(mech, p0, p1, divergences=5)
    with pytest.raises(ValueError, match="divergences: the Chernoff information"):
        ldpopt.dominance(mech, p0, p1, divergences="chernoff")
    one = ldpopt.dominance(mech, p0, p1, divergences=iter(["kl"]))  # any iterable of names
    assert [r.divergence for r in one.rows] == ["kl"]
