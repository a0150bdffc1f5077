"""Exact privatization: realised channel, exact-rational eps check, exact samplers."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog
from scipy.stats import chisquare

import ldpopt
from _errmodel import U, within
from _valuebounds import ldp_excess
from ldpopt import _sampler
from ldpopt.deploy import sampling as S
from ldpopt.mechanism import Mechanism
from reference import exact_exp_interval, exact_is_ldp

#: significance level of the chi-square goodness-of-fit checks (seeded): a correct sampler fails one
#: with probability <= 1e-6
GOF_ALPHA = 1e-6
#: the same for the OS CSPRNG, which cannot be seeded: a false failure has probability <= 1e-9 per run
OS_GOF_ALPHA = 1e-9
ROW_SAMPLES = 100_000
#: |realised - mechanism| of a block RR channel (units of u): the mechanism's low level is within
#: C_RR_LIB = R_FN + 3 = 6 relative of 1 / (e^eps + s - 1) (tests/test_mechanism.py), the realised one
#: is the larger of it and the float ceiling of that bound (2 more); the remainder 1 - (s - 1) low,
#: exact then rounded (1/2), moves by the sum of the lows' changes against the mechanism's high
#: level (6): 8.5u, rounded up
BLOCK_RR_CHANGE = 9 * U
#: ldpopt._sampler._MIX_WEIGHTS[0] (repeated on purpose): the first mixing weight with the
#: uniform channel when nudging single entries cannot reach exact eps-LDP
MIX_FIRST = 2.0**-44


def nudge_change(Q, eps) -> float:
    """|realised - mechanism| of a general channel: an entry is raised or lowered to the float
    nearest the exact bound (max / e^eps or min e^eps): by at most the channel's own LDP excess
    (ldp_excess, relative, on entries <= 1) plus 2u; a row's remainder absorbs the changes of its
    n - 1 other entries exactly, then rounds (u / 2), and also carries the row sum's own deviation
    |sum - 1| from 1 (computed by numpy: n u more)."""
    Q = np.asarray(Q, float)
    n = Q.shape[1]
    return n * (ldp_excess(Q, eps) + 3 * U) + float(np.max(np.abs(Q.sum(axis=1) - 1.0))) + U


# ---------------------------------------------------------------------------------------------
# independent oracles (high-precision decimal, exact fractions)
# ---------------------------------------------------------------------------------------------
def exp_interval(eps: float):
    return exact_exp_interval(eps)


def oracle_is_ldp(rows, eps: float) -> bool:
    return exact_is_ldp(rows, eps)


def maximal_channel(k: int, eps: float, seed: int) -> np.ndarray:
    """A vertex of the eps-LDP channel polytope: columns w_S * (E on S, 1 off S), found by LP.

    Rows sum to 1 and every column ratio is exactly e^eps in real arithmetic (Nam-Park-Lee):
    a general, non-block channel that sits on the privacy boundary.
    """
    E = math.exp(eps)
    patterns = [
        np.array(v, float) for v in itertools.product((1.0, E), repeat=k) if 1.0 < max(v) and min(v) < E
    ]
    A = np.array(patterns).T  # k x m
    rng = np.random.default_rng(seed)
    res = linprog(rng.normal(size=A.shape[1]), A_eq=A, b_eq=np.ones(k), bounds=(0, None), method="highs")
    assert res.status == 0
    w = res.x
    keep = w > 1e-12
    Q = A[:, keep] * w[keep]
    return Q / Q.sum(axis=1, keepdims=True)


def mechanisms():
    rng = np.random.default_rng(7)
    p0 = rng.dirichlet(np.ones(8))
    p1 = rng.dirichlet(np.ones(8))
    spr = ldpopt.optimal_mechanism(p0, p1, 1.0, method="dp").mechanism
    spr_many = ldpopt.spr_mechanism([[0, 1], [2], [3, 4, 5], [6, 7]], 8, 0.7)
    general = Mechanism(maximal_channel(3, 1.0, 1), 1.0, name="maximal")
    # a non-block LDP channel strictly inside eps
    g = rng.uniform(1.0, math.exp(0.8), size=(4, 5))
    g = g / g.sum(axis=1, keepdims=True)
    return {
        "spr_opt": spr,
        "spr_4blocks": spr_many,
        "rr": ldpopt.randomized_response(6, 0.5),
        "binary": ldpopt.binary_mechanism(p0, p1, 2.0),
        "maximal": general,
        "general_interior": Mechanism(g, 1.0, name="general"),
    }


# ---------------------------------------------------------------------------------------------
# realised channel and the exact check
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(mechanisms()))
def test_realised_channel_is_exactly_ldp_and_stochastic(name):
    mech = mechanisms()[name]
    ch = S.realise(mech)
    rows = ch.exact_matrix()
    assert all(sum(r) == 1 for r in rows)
    assert all(v >= 0 for r in rows for v in r)
    assert oracle_is_ldp(rows, mech.eps)
    assert ch.check.ok
    expected_kind = "block_rr" if name in ("spr_opt", "spr_4blocks", "rr", "binary") else "general"
    assert ch.kind == expected_kind
    bound = BLOCK_RR_CHANGE if expected_kind == "block_rr" else nudge_change(mech.matrix, mech.eps)
    assert within("realised channel: change", ch.max_change, 0.0, bound), (name, ch.max_change, bound)


@pytest.mark.parametrize(
    "k,eps", [(2, 1e-8), (3, 0.1), (5, 1.0), (17, 3.0), (4, 30.0), (100, 1.0), (3, 700.0)]
)
def test_rr_realised_exactly_at_eps_and_never_above(k, eps):
    ch = S.realise(ldpopt.randomized_response(k, eps))
    assert ch.kind == "block_rr"
    low = Fraction(ch.low)
    high = 1 - (k - 1) * low
    lo, hi = exp_interval(eps)
    assert high / low <= lo  # never above eps, exactly
    # and minimal: one float lower would violate (or reach) e^eps
    prev = Fraction(math.nextafter(ch.low, 0.0))
    assert (1 - (k - 1) * prev) / prev >= lo


def one_ulp_pair(eps: float, a: float = 0.2) -> tuple[float, float]:
    """b_ok: smallest float with a / b <= e^eps exactly; b_bad = one ulp below (violates)."""
    lo, _ = exp_interval(eps)
    b = float(Fraction(a) / lo)
    while Fraction(a) / Fraction(b) > lo:
        b = math.nextafter(b, 1.0)
    while Fraction(a) / Fraction(math.nextafter(b, 0.0)) <= lo:
        b = math.nextafter(b, 0.0)
    return b, math.nextafter(b, 0.0)


@pytest.mark.parametrize("eps", [0.3, 1.0, 2.5])
def test_exact_check_rejects_one_ulp_violation(eps):
    b_ok, b_bad = one_ulp_pair(eps)
    ok = np.array([[0.2, 0.8], [b_ok, 1 - b_ok]])
    bad = np.array([[0.2, 0.8], [b_bad, 1 - b_bad]])
    assert S.exact_ldp_check(ok, eps).ok
    res = S.exact_ldp_check(bad, eps)
    assert not res.ok and res.column == 0
    assert res.ratio == Fraction(0.2) / Fraction(b_bad)
    # the float-tolerance check cannot see the difference ...
    assert Mechanism(bad, eps).is_ldp(eps)
    # ... but privatization rounds the realised channel back inside eps: the entry becomes b_ok
    ch = S.realise(Mechanism(bad, eps))
    assert ch.check.ok and ch.adjusted >= 1
    assert ch.entries[1, 0] == b_ok
    assert oracle_is_ldp(ch.exact_matrix(), eps)


def test_exact_check_zero_entries_and_inf():
    m = np.array([[1.0, 0.0], [0.5, 0.5]])
    assert not S.exact_ldp_check(m, 5.0).ok
    assert S.exact_ldp_check(m, math.inf).ok
    assert S.exact_ldp_check(np.array([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0]]), 0.1).ok
    with pytest.raises(ValueError, match="non-negative"):
        S.exact_ldp_check(np.array([[1.5, -0.5]]), 1.0)
    with pytest.raises(ValueError, match="eps"):
        S.exact_ldp_check(np.eye(2), -1.0)


@pytest.mark.parametrize("eps", [800.0, 5000.0, 1e300])
def test_large_eps_underflow_is_realised_with_smallest_subnormal(eps):
    mech = ldpopt.randomized_response(3, eps)
    assert np.count_nonzero(mech.matrix) == 3  # low entries underflowed to 0
    ch = S.realise(mech)
    assert ch.low == 5e-324  # 2**-1074
    if eps < 1e4:
        assert oracle_is_ldp(ch.exact_matrix(), eps)
    # 2^1074 / (1 - 2 * 2^-1074) < e^744.5 <= e^eps: exactly eps-LDP
    assert (1 - 2 * Fraction(2) ** -1074) / Fraction(2) ** -1074 < Fraction(2) ** 1075
    out = mech.privatize(np.array([0, 1, 2] * 1000), rng=np.random.default_rng(0))
    assert np.array_equal(out, np.array([0, 1, 2] * 1000))  # lying has probability ~1e-323
    wide = ldpopt.spr_mechanism([[0, 1], [2]], 3, eps)
    assert S.realise(wide).check.ok


def test_eps_inf_keeps_zeros_and_is_deterministic():
    mech = ldpopt.spr_mechanism([[0, 2], [1]], 3, math.inf)
    ch = S.realise(mech)
    assert ch.low == 0.0
    out = mech.privatize(np.array([0, 1, 2, 2]), rng=np.random.default_rng(1))
    assert out.tolist() == [0, 1, 0, 0]


def test_general_channel_at_eps_is_nudged_inside():
    for seed in range(6):
        Q = maximal_channel(4, 1.3, seed)
        mech = Mechanism(Q, 1.3)
        ch = S.realise(mech)
        assert oracle_is_ldp(ch.exact_matrix(), 1.3)
        assert all(sum(r) == 1 for r in ch.exact_matrix())
        assert within("realised channel: nudge", ch.max_change, 0.0, nudge_change(Q, 1.3))


@settings(max_examples=25)
@given(
    k=st.integers(2, 9),
    eps=st.floats(0.01, 40.0),
    data=st.data(),
)
def test_property_spr_realised_channels(k, eps, data):
    labels = data.draw(st.lists(st.integers(0, k - 1), min_size=k, max_size=k))
    blocks = [sorted(i for i in range(k) if labels[i] == b) for b in sorted(set(labels))]
    mech = ldpopt.spr_mechanism(blocks, k, eps)
    ch = S.realise(mech)
    rows = ch.exact_matrix()
    assert all(sum(r) == 1 for r in rows)
    assert oracle_is_ldp(rows, eps)
    assert within("realised channel: SPR", ch.max_change, 0.0, BLOCK_RR_CHANGE)


# ---------------------------------------------------------------------------------------------
# distribution of the reports: chi-square goodness of fit, every row
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(mechanisms()))
def test_goodness_of_fit_every_row(name):
    mech = mechanisms()[name]
    rng = np.random.default_rng(sum(map(ord, name)))
    k, n_out = mech.matrix.shape
    x = np.repeat(np.arange(k), ROW_SAMPLES)
    y = mech.privatize(x, rng=rng)
    assert y.dtype.kind == "i" and y.min() >= 0 and y.max() < n_out
    for row in range(k):
        counts = np.bincount(y[x == row], minlength=n_out)
        expected = mech.matrix[row] / mech.matrix[row].sum() * ROW_SAMPLES
        p = chisquare(counts, expected).pvalue
        assert p > GOF_ALPHA, (name, row, p)


def test_goodness_of_fit_os_csprng():
    # the production path (OS CSPRNG) cannot be seeded; alpha 1e-9 makes a false failure negligible
    mech = ldpopt.spr_mechanism([[0], [1, 2], [3]], 4, 1.0)
    x = np.repeat(np.arange(4), ROW_SAMPLES)
    y = mech.privatize(x)
    for row in range(4):
        counts = np.bincount(y[x == row], minlength=3)
        assert chisquare(counts, mech.matrix[row] * ROW_SAMPLES).pvalue > OS_GOF_ALPHA


def test_block_and_general_samplers_agree_in_law():
    # the same realised RR channel through the general (inversion) sampler
    rr = ldpopt.randomized_response(4, 1.0)
    ch = S.realise(rr)
    assert ch.kind == "block_rr"
    forced = S.RealisedChannel(
        eps=ch.eps,
        entries=ch.entries,
        remainder=ch.remainder,
        kind="general",
        low=None,
        max_change=0.0,
        adjusted=0,
        check=ch.check,
        _rem_scaled=ch._rem_scaled,
    )
    x = np.repeat(np.arange(4), ROW_SAMPLES)
    src = S.bit_source(np.random.default_rng(5))
    y = S.sample_indices(forced, x, src)
    for row in range(4):
        counts = np.bincount(y[x == row], minlength=4)
        assert chisquare(counts, rr.matrix[row] * ROW_SAMPLES).pvalue > GOF_ALPHA


# ---------------------------------------------------------------------------------------------
# exactness of the bit-level machinery (deterministic bit sources)
# ---------------------------------------------------------------------------------------------
class ScriptedBits(S.BitSource):
    def __init__(self, words):
        self.queue = [int(w) for w in words]

    def words(self, m):
        out, self.queue = self.queue[:m], self.queue[m:]
        assert len(out) == m, "script exhausted"
        return np.array(out, dtype=np.uint64)


def test_tie_resolution_draws_more_bits():
    # boundaries 0.25 (exact in 64 bits) and 0.25 + 2^-100 (needs a second word)
    row = np.array([[0.25, 2.0**-100, 0.75]])
    ch = _sampler.realise_matrix(row, 1.0)
    assert ch.kind == "general"
    first = 1 << 62  # U starts with exactly the first 64 bits of both boundaries
    cases = [((1 << 28) - 1, 1), (1 << 28, 2), ((1 << 28) + 1, 2)]
    for second, expected in cases:
        out = S.sample_indices(ch, np.array([0]), ScriptedBits([first, second]))
        assert out.tolist() == [expected]
    # first word below / above decides at once (no second word consumed)
    assert S.sample_indices(ch, np.array([0]), ScriptedBits([first - 1])).tolist() == [0]
    assert S.sample_indices(ch, np.array([0]), ScriptedBits([first + 1])).tolist() == [2]


def test_bernoulli_exact_threshold():
    p = 0.5 + 2.0**-52  # first word 2^63 + 2^12, exact in 64 bits
    t = (1 << 63) + (1 << 12)
    assert S.bernoulli(p, ScriptedBits([t - 1]))
    assert not S.bernoulli(p, ScriptedBits([t]))
    q = 2.0**-70  # below 2^-64: first word 0 is a tie resolved by the next word
    assert not S.bernoulli(q, ScriptedBits([1]))
    assert S.bernoulli(q, ScriptedBits([0, (1 << 58) - 1]))
    assert not S.bernoulli(q, ScriptedBits([0, 1 << 58]))
    assert S.bernoulli(1.0, ScriptedBits([]))
    assert not S.bernoulli(0.0, ScriptedBits([0]))


def test_block_sampler_threshold_and_uniform_other_label():
    mech = ldpopt.randomized_response(4, 1.0)
    ch = S.realise(mech)
    b = 3 * Fraction(ch.low)  # probability of reporting another label
    t = math.floor(b * 2**64)
    assert Fraction(t, 2**64) == b  # 3 * low has 55 significant bits: exact in one word
    assert S.sample_indices(ch, np.array([1]), ScriptedBits([t])).tolist() == [1]  # U >= b: keep
    # U just below the boundary -> move; the other label uses the top 2 bits of the next word
    for top, expected in [(0, 0), (1, 2), (2, 3)]:
        out = S.sample_indices(ch, np.array([1]), ScriptedBits([t - 1, top << 62]))
        assert out.tolist() == [expected]
    # top bits 3 are rejected (no modulo bias), the next word decides
    assert S.sample_indices(ch, np.array([1]), ScriptedBits([t - 1, 3 << 62, 0])).tolist() == [0]
    assert S.sample_indices(ch, np.array([1]), ScriptedBits([t + 1])).tolist() == [1]
    # eps = 30: 3 * low ~ 2.8e-13 has bits below 2^-64, so U equal to its first word is a tie
    ch30 = S.realise(ldpopt.randomized_response(4, 30.0))
    b30 = 3 * Fraction(ch30.low)
    t30 = math.floor(b30 * 2**64)
    rest = b30 * 2**64 - t30
    assert 0 < rest < 1
    second = math.floor(rest * 2**64)
    assert S.sample_indices(ch30, np.array([2]), ScriptedBits([t30, second - 1, 0])).tolist() == [0]
    assert S.sample_indices(ch30, np.array([2]), ScriptedBits([t30, second + 1])).tolist() == [2]


def test_uniform_below_is_unbiased_by_enumeration():
    # all 2^3 top-bit patterns for m = 5: accepted values appear exactly once each, 5..7 are rejected
    pats = [v << 61 for v in (5, 0, 6, 1, 7, 2, 3, 4)]
    src = ScriptedBits(pats)
    got = []
    for _ in range(5):
        got.extend(_sampler._uniform_below(5, 1, src).tolist())
    assert sorted(got) == [0, 1, 2, 3, 4]
    assert src.queue == []  # 5, 6, 7 were rejected along the way


# ---------------------------------------------------------------------------------------------
# symbols, labels, randomness sources
# ---------------------------------------------------------------------------------------------
def test_labels_in_and_out():
    p0 = {"a": 0.5, "b": 0.3, "c": 0.2}
    p1 = {"c": 0.6, "a": 0.1, "b": 0.3}
    mech = ldpopt.optimal_mechanism(p0, p1, 1.0, method="dp").mechanism
    assert mech.labels == ("a", "b", "c")
    rng = np.random.default_rng(0)
    out_labels = mech.privatize(["a", "c", "b"], rng=np.random.default_rng(3))
    out_ints = mech.privatize([0, 2, 1], rng=np.random.default_rng(3))
    assert out_labels.tolist() == out_ints.tolist()
    with pytest.raises(ValueError, match="unknown input symbol 'z'"):
        mech.privatize(["a", "z"], rng=rng)
    with pytest.raises(ValueError, match="range"):
        mech.privatize([0, 3], rng=rng)
    named = Mechanism(mech.matrix, 1.0, labels=("a", "b", "c"), output_labels=("lo", "hi"))
    y = named.privatize(np.array(["a"] * 50), rng=rng)
    assert set(y.tolist()) <= {"lo", "hi"}
    int_labels = ldpopt.randomized_response(3, 1.0, labels=[10, 20, 30])
    y = int_labels.privatize([10, 30], rng=rng)
    assert set(y.tolist()) <= {10, 20, 30}
    with pytest.raises(ValueError, match="unknown input symbol 0"):
        int_labels.privatize([0], rng=rng)


def test_pandas_series_and_empty_input():
    import pandas as pd

    mech = ldpopt.randomized_response(3, 1.0, labels=["x", "y", "z"])
    out = mech.privatize(pd.Series(["x", "y", "z", "x"]), rng=np.random.default_rng(0))
    assert out.shape == (4,)
    assert mech.privatize([], rng=np.random.default_rng(0)).shape == (0,)


def test_bad_inputs():
    mech = ldpopt.randomized_response(3, 1.0)
    with pytest.raises(TypeError, match="rng"):
        mech.privatize([0], rng=42)
    with pytest.raises(ValueError, match="integer"):
        mech.privatize([0.5], rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="1-D"):
        mech.privatize([[0, 1]], rng=np.random.default_rng(0))
    with pytest.raises(TypeError):
        mech.privatize("abc", rng=np.random.default_rng(0))


def test_seeded_generator_is_reproducible_and_os_source_varies():
    mech = ldpopt.randomized_response(10, 0.5)
    x = np.arange(10).repeat(100)
    a = mech.privatize(x, rng=np.random.default_rng(11))
    b = mech.privatize(x, rng=np.random.default_rng(11))
    assert np.array_equal(a, b)
    c = mech.privatize(x)
    d = mech.privatize(x)
    assert not np.array_equal(c, d)  # 1000 reports agreeing by chance: probability < 1e-100


def test_realise_is_cached_per_mechanism():
    mech = ldpopt.randomized_response(3, 1.0)
    assert S.realise(mech) is S.realise(mech)


def test_mixing_fallback_when_both_extremes_are_remainders():
    # row 0 uniform (its remainder is the column-0 minimum), row 1 puts e * 0.25 on column 0
    # (its own remainder, the maximum): nudging single floats cannot help, mixing with the
    # uniform channel by 2^-44 does
    e = math.e
    for scale in (1.0, 1 + 1e-15, 1 - 1e-16):
        r1 = [0.25 * e * scale] + [(1 - 0.25 * e * scale) / 3] * 3
        M = np.array([[0.25] * 4, r1])
        ch = _sampler.realise_matrix(M, 1.0)
        assert ch.check.ok and oracle_is_ldp(ch.exact_matrix(), 1.0)
        assert all(sum(r) == 1 for r in ch.exact_matrix())
        # the first mixing weight moves every entry by t |m - 1/n| <= t, then the nudges of the mix
        bound = MIX_FIRST + nudge_change((1 - MIX_FIRST) * M + MIX_FIRST / 4, 1.0)
        assert within("realised channel: mixing", ch.max_change, 0.0, bound)


def test_deploy_entry_points_take_a_mechanism_or_a_result():
    res = ldpopt.optimal_mechanism([0.5, 0.3, 0.2], [0.2, 0.3, 0.5], 1.0, method="dp")
    assert S.realise(res) is S.realise(res.mechanism)
    assert S.privatize(res, [0, 1, 2], rng=np.random.default_rng(0)).shape == (3,)
    with pytest.raises(TypeError, match="mech must be a Mechanism"):
        S.privatize(res.mechanism.matrix, [0, 1])
    with pytest.raises(TypeError, match="mech must be a Mechanism"):
        S.realise("spr")


def test_symbols_are_matched_like_dictionary_keys():
    mech = ldpopt.randomized_response(3, 1.0, labels=[10, 20, 30])
    rng = np.random.default_rng(0)
    assert mech.privatize(np.array([10.0, 20.0]), rng=rng).shape == (2,)  # 10.0 == 10
    assert mech.privatize(np.array([np.int32(30)]), rng=rng).shape == (1,)
    obj = np.empty(2, dtype=object)
    obj[:] = [[1], 10]  # an unhashable entry is an unknown symbol
    with pytest.raises(ValueError, match=r"unknown input symbol \[1\]"):
        mech.privatize(obj, rng=rng)
