"""The deployed frequency oracles: channels, verified eps, exact variances (checked against the
channel by brute force, the literature's closed forms and simulation)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ldpopt.frequency import mechanisms as M
from ldpopt.frequency import objectives

EPS = (0.5, 1.0, 2.0, 4.0)


def small_mechanisms(k, eps):
    return (*M.deployed(k, eps), M.olh(k, eps, 3), M.subset_selection(k, eps, k - 1))


def brute_support_probabilities(mech):
    """(k, k): Pr[item x' supported | input x], from the channel and its columns' supports."""
    q = mech.channel().matrix
    return q @ mech.output_supports()


@pytest.mark.parametrize("k", [2, 3, 5, 8])
@pytest.mark.parametrize("eps", EPS)
def test_channel_is_what_the_mechanism_claims(k, eps):
    for m in small_mechanisms(k, eps):
        q = m.channel().matrix
        assert np.allclose(q.sum(axis=1), 1.0, rtol=0, atol=1e-12)
        # eps verified from the matrix alone: max over columns of log(max/min)
        level = max(math.log(col.max() / col.min()) for col in q.T)
        assert level == pytest.approx(eps, rel=1e-12), m.label
        assert m.privacy_level == pytest.approx(eps, rel=1e-12)
        sup = brute_support_probabilities(m)
        assert np.allclose(np.diag(sup), m.p, rtol=1e-12, atol=0)
        assert np.allclose(sup[~np.eye(k, dtype=bool)], m.q, rtol=1e-12, atol=0)


@pytest.mark.parametrize("eps", EPS)
def test_variance_matches_the_channel(eps):
    """The exact variance formula against sum_y Pr[y] B_y^2 - f^2 for the estimator rows
    B_y = (1[x in S_y] - q*)/(p* - q*) built from the brute-force p*, q* of the channel."""
    rng = np.random.default_rng(7)
    for k in (3, 6):
        for m in small_mechanisms(k, eps):
            q = m.channel().matrix
            s = m.output_supports().astype(float)
            sup = brute_support_probabilities(m)
            p_star, q_star = sup[0, 0], sup[1, 0]
            b = (s - q_star) / (p_star - q_star)
            for f in (np.full(k, 1.0 / k), rng.dirichlet(np.ones(k))):
                law = f @ q
                cov = (b.T * law) @ b - np.outer(f, f)
                assert np.allclose(cov, m.covariance(f), rtol=1e-9, atol=1e-12), m.label
                assert np.allclose(np.diag(cov), m.variance(f), rtol=1e-9, atol=0)
            assert m.worst_case == m.variance_uniform


@pytest.mark.parametrize("k", [2, 7, 40, 300])
@pytest.mark.parametrize("eps", EPS)
def test_closed_forms(k, eps):
    """The literature's formulas (Wang et al. 2017), exact at the uniform distribution."""
    e = math.exp(eps)
    g = max(2, round(e + 1))
    for m, p, q in (
        (M.grr(k, eps), e / (e + k - 1), 1 / (e + k - 1)),
        (M.oue(k, eps), 0.5, 1 / (e + 1)),
        (M.sue(k, eps), math.exp(eps / 2) / (math.exp(eps / 2) + 1), 1 / (math.exp(eps / 2) + 1)),
        (M.olh(k, eps), e / (e + g - 1), 1 / g),
        (M.hadamard_response(k, eps), e / (e + 1), 0.5),
    ):
        assert (m.p, m.q) == pytest.approx((p, q), rel=1e-13)
        pi = q + (p - q) / k
        assert m.variance_uniform == pytest.approx(k * pi * (1 - pi) / (p - q) ** 2, rel=1e-12)
        assert m.privacy_level == pytest.approx(eps, rel=1e-12)
    # GRR: (k-1)(e+k-1)^2/(k(e-1)^2) summed at the uniform distribution
    assert M.grr(k, eps).variance_uniform == pytest.approx((k - 1) * (e + k - 1) ** 2 / (k * (e - 1) ** 2))


def test_rappor_is_sue_with_its_f():
    for eps in EPS:
        r, s = M.basic_rappor(10, eps), M.sue(10, eps)
        f = r.rappor_f
        # the permanent randomized response: a bit is 1 w.p. f/2 + (1-f) b; eps_inf = 2 ln((1-f/2)/(f/2))
        assert (r.p, r.q) == pytest.approx((1 - f / 2, f / 2), rel=1e-14)
        assert 2 * math.log((1 - f / 2) / (f / 2)) == pytest.approx(eps, rel=1e-13)
        assert r.variance_uniform == s.variance_uniform


def test_subset_sizes_and_reduction_to_grr():
    for k, eps in ((10, 1.0), (64, 0.5), (5, 4.0), (16, 2.0)):
        d = k / (math.exp(eps) + 1)
        sizes = M.subset_sizes(k, eps)
        assert set(sizes) == {min(max(math.floor(d), 1), k - 1), min(max(math.ceil(d), 1), k - 1)}
        assert M.subset_selection(k, eps).size == sizes[0]
    one, g = M.subset_selection(9, 1.5, 1), M.grr(9, 1.5)
    assert (one.p, one.q) == pytest.approx((g.p, g.q), rel=1e-14)


def test_hadamard_sets():
    for k in (2, 3, 7, 8, 20):
        m = M.hadamard_response(k, 1.0)
        big_k = m.size
        assert big_k > k and big_k & (big_k - 1) == 0 and big_k // 2 <= k
        s = m.output_supports().T.astype(int)  # (k, K)
        assert np.all(s.sum(axis=1) == big_k // 2)
        inter = s @ s.T
        assert np.all(inter[~np.eye(k, dtype=bool)] == big_k // 4)


def test_large_k_uses_the_levels():
    m = M.oue(40, 1.0)
    assert not m.has_channel and m.num_outputs == 2**40
    assert m.privacy_level == pytest.approx(1.0, rel=1e-12)
    with pytest.raises(ValueError, match="entries"):
        m.channel()
    assert M.olh(40, 2.0).bits_per_report == 3 + 32
    assert M.grr(20, 1.0).bits_per_report == 5 and M.oue(20, 1.0).bits_per_report == 20


@pytest.mark.parametrize("kind", M.KINDS)
def test_simulated_error_matches_the_exact_variance(kind):
    """Squared error of the standard estimator over 200 simulated data sets of n = 500 reports:
    its sum over items has mean sum Var; a z bound at alpha = 1e-4 on the mean of 200 draws."""
    k, eps, n, reps = 5, 1.0, 500, 200
    m = M.make(kind, k, eps)
    rng = np.random.default_rng(11)
    f = np.array([0.4, 0.3, 0.15, 0.1, 0.05])
    x = np.repeat(np.arange(k), (f * n).astype(int))
    sq = np.empty(reps)
    for r in range(reps):
        c = m.supports(m.privatize(x, rng)).sum(axis=0)
        est = (c / n - m.q) / (m.p - m.q)
        sq[r] = np.sum((est - f) ** 2)
    # x is fixed (f exactly): the per-report law is the mixture, the sum of variances of the mean
    mean_exact = float(np.sum(m.variance(f))) / n
    z = (sq.mean() - mean_exact) / (sq.std(ddof=1) / math.sqrt(reps))
    # with inputs fixed the error is smaller by the input sampling variance: bound it one-sided
    assert z < stats.norm.isf(1e-4)
    fixed = float(np.sum([(m.variance(np.eye(k)[i]) * f[i]).sum() for i in range(k)])) / n
    z_fixed = (sq.mean() - fixed) / (sq.std(ddof=1) / math.sqrt(reps))
    assert abs(z_fixed) < stats.norm.isf(1e-4 / 2)


def test_olh_hash_is_uniform():
    seeds = np.arange(20000)[:, None]
    h = M.olh_hash(seeds, np.arange(3)[None, :], 5)
    for col in h.T:
        counts = np.bincount(col, minlength=5)
        assert stats.chisquare(counts).pvalue > 1e-4
    # pairs of items collide with probability 1/g
    assert stats.binomtest(int(np.sum(h[:, 0] == h[:, 1])), h.shape[0], 0.2).pvalue > 1e-4


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: M.grr(1, 1.0), "k must be >= 2"),
        (lambda: M.grr(2.0, 1.0), "k must be an integer"),
        (lambda: M.grr(True, 1.0), "k must be an integer"),
        (lambda: M.oue(3, 0.0), "eps must be > 0"),
        (lambda: M.oue(3, math.inf), "eps must be finite"),
        (lambda: M.oue(3, math.nan), "eps must be > 0"),
        (lambda: M.oue(3, "1"), "eps must be a real number"),
        (lambda: M.sue(3, 800.0), "underflows"),
        (lambda: M.olh(3, 1.0, 1), "g must be >= 2"),
        (lambda: M.olh(3, 50.0), "give g"),
        (lambda: M.subset_selection(4, 1.0, 4), "d must be >= 1 and <= 3"),
        (lambda: M.make("rr", 3, 1.0), "kind must be one of"),
        (lambda: M.grr(3, 1.0).variance([0.5, 0.5]), "f must be a distribution"),
        (lambda: M.grr(3, 1.0).privatize([0, 3]), r"range\(3\)"),
        (lambda: M.oue(3, 1.0).supports([[0, 2, 1]]), "0/1"),
        (lambda: M.subset_selection(4, 1.0, 2).supports([[1, 1]]), "distinct"),
    ],
)
def test_bad_input_names_the_argument(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_numpy_scalars_accepted():
    a = M.olh(np.int64(6), np.float32(1.5), np.int32(4))
    b = M.olh(6, float(np.float32(1.5)), 4)
    assert a == b and isinstance(a.k, int) and isinstance(a.size, int)


@pytest.mark.parametrize("eps", EPS)
def test_against_the_objectives_module(eps):
    """The standard estimator's exact variance against objectives.total_variance (separate code),
    never below the best unbiased estimator of the same channel, and equal to it for GRR (a square
    invertible channel has one unbiased estimator)."""
    rng = np.random.default_rng(3)
    for k in (3, 5):
        for m in small_mechanisms(k, eps):
            q = m.channel()
            f = rng.dirichlet(np.ones(k))
            total = objectives.total_variance(q, m.estimator_matrix(), f)
            assert total == pytest.approx(float(np.sum(m.variance(f))), rel=1e-10)
            best = m.best_variance_uniform()
            assert best <= m.variance_uniform * (1 + 1e-10)
            if m.kind == "grr":
                assert best == pytest.approx(m.variance_uniform, rel=1e-9)


def test_the_value_object_derives_and_checks():
    assert M.FrequencyMechanism("grr", 3, 1.0) == M.grr(3, 1.0)
    assert M.FrequencyMechanism("hadamard", 5, 1.0, 8) == M.hadamard_response(5, 1.0)
    with pytest.raises(ValueError, match="size applies to olh, subset and hadamard only"):
        M.FrequencyMechanism("grr", 3, 1.0, 5)
    with pytest.raises(ValueError, match="K=8"):
        M.FrequencyMechanism("hadamard", 5, 1.0, 16)
    with pytest.raises(TypeError):
        M.FrequencyMechanism("grr", 3, 1.0, p=0.9)  # p and q are derived, never given
    m = M.oue(4, 1.0)
    with pytest.raises(AttributeError):
        m.eps = 2.0


@pytest.mark.parametrize("k", [3, 6])
def test_worst_case_is_the_uniform_point(k):
    """No distribution (vertices, edges' midpoints, random Dirichlet draws) has a larger summed
    variance of the standard estimator than the uniform one."""
    rng = np.random.default_rng(5)
    points = [*np.eye(k), *((np.eye(k)[i] + np.eye(k)[j]) / 2 for i in range(k) for j in range(i))]
    points += list(rng.dirichlet(np.full(k, 0.5), 200))
    for eps in EPS:
        for m in small_mechanisms(k, eps):
            top = max(float(np.sum(m.variance(f))) for f in points)
            assert top <= m.worst_case * (1 + 1e-12)
