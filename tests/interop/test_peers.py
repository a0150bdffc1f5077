"""Peers' mechanisms (OpenDP, pure-LDP, multi-freq-ldpy), run from their real packages: the channel
models match their real samplers (chi-square, fixed seeds), the exact eps of the channels they
sample against the claims (and against certify_epsilon on the float matrix, an independent path),
the findings of docs/certify.md pinned, and black-box audits of the real samplers."""

from __future__ import annotations

import importlib
import importlib.util
import math
import random
import sys
import types
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np
import pytest
from scipy import stats

from ldpopt.deploy.certify import certify_epsilon
from ldpopt.interop.peers import (
    audit_peer,
    multi_freq_channel,
    multi_freq_sampler,
    opendp_rr_channel,
    opendp_sampler,
    p_at_most,
    p_below,
    pure_ldp_channel,
    pure_ldp_sampler,
)

pytest.importorskip("xxhash")
dp = pytest.importorskip("opendp.prelude")
GRR_Client = pytest.importorskip("multi_freq_ldpy.pure_frequency_oracles.GRR").GRR_Client
UE_Client = pytest.importorskip("multi_freq_ldpy.pure_frequency_oracles.UE").UE_Client
LH_Client = pytest.importorskip("multi_freq_ldpy.pure_frequency_oracles.LH").LH_Client


def pure_ldp(sub):
    """A pure-LDP frequency-oracle subpackage, without ``pure_ldp.frequency_oracles.__init__``,
    which imports the RAPPOR server and with it scikit-learn (pure-LDP 1.2.0 does not declare it)."""
    name = "pure_ldp.frequency_oracles"
    if name not in sys.modules:
        spec = importlib.util.find_spec("pure_ldp")
        if spec is None or spec.origin is None:
            pytest.skip("pure-LDP is not installed (the peers extra)")
        pkg = types.ModuleType(name)
        pkg.__path__ = [str(Path(spec.origin).parent / "frequency_oracles")]
        sys.modules[name] = pkg
    return importlib.import_module(f"{name}.{sub}")


def DEClient(*a, **kw):
    return pure_ldp("direct_encoding").DEClient(*a, **kw)


def UEClient(*a, **kw):
    return pure_ldp("unary_encoding").UEClient(*a, **kw)


def LHClient(*a, **kw):
    return pure_ldp("local_hashing").LHClient(*a, **kw)


ALPHA = 1e-6


class _Xxhash:
    """xxhash as the peers were written for (< 4: a ``str`` hashed as its UTF-8 bytes); xxhash 4
    refuses ``str`` and both peers' local-hashing clients raise TypeError (docs/certify.md)."""

    def __init__(self, real):
        self.real = real

    def xxh32(self, data, seed=0):
        return self.real.xxh32(data.encode() if isinstance(data, str) else data, seed=seed)


@pytest.fixture(autouse=True)
def xxhash_as_before_4(monkeypatch):
    import xxhash

    shim = _Xxhash(xxhash)
    monkeypatch.setattr(pure_ldp("local_hashing.lh_client"), "xxhash", shim)
    monkeypatch.setattr(importlib.import_module("multi_freq_ldpy.pure_frequency_oracles.LH"), "xxhash", shim)


def test_local_hashing_fails_with_xxhash_4(monkeypatch):
    """Finding: with xxhash >= 4 both peers' local hashing raises (they hash a str)."""
    import xxhash

    if int(xxhash.VERSION.split(".")[0]) < 4:
        pytest.skip("xxhash < 4 hashes str")
    monkeypatch.setattr(pure_ldp("local_hashing.lh_client"), "xxhash", xxhash)
    monkeypatch.setattr(
        importlib.import_module("multi_freq_ldpy.pure_frequency_oracles.LH"), "xxhash", xxhash
    )
    with pytest.raises(TypeError, match="encoded"):
        LHClient(1.0, 3).privatise(1)
    with pytest.raises(TypeError, match="encoded"):
        LH_Client(0, 3, 1.0)


def seed_all(seed):
    random.seed(seed)
    np.random.seed(seed)
    _numba_seed(seed)


def _numba_seed(seed):
    # multi-freq-ldpy's UE client is compiled by numba, which keeps its own generator
    import numba

    @numba.njit
    def s(x):
        np.random.seed(x)

    s(seed)


def peers(eps):
    """(channel, sampler) of every checked peer mechanism at ``eps`` (k = 3 or 4 inputs)."""
    cats = ["a", "b", "c"]
    prob = math.exp(eps) / (math.exp(eps) + 2)
    dp.enable_features("contrib")
    meas = dp.m.make_randomized_response(cats, prob)
    out = [(opendp_rr_channel(cats, prob, meas.map(1)), opendp_sampler(meas, cats))]
    for c in (DEClient(eps, 4), UEClient(eps, 4), UEClient(eps, 4, use_oue=True), LHClient(eps, 3)):
        out.append((pure_ldp_channel(c), pure_ldp_sampler(c)))
    out.append(
        (pure_ldp_channel(LHClient(eps, 3, use_olh=True)), pure_ldp_sampler(LHClient(eps, 3, use_olh=True)))
    )
    out.append((multi_freq_channel("GRR", 4, eps), multi_freq_sampler(GRR_Client, 4, eps, protocol="GRR")))
    for opt in (True, False):
        out.append(
            (
                multi_freq_channel("UE", 4, eps, optimal=opt),
                multi_freq_sampler(UE_Client, 4, eps, protocol="UE", optimal=opt),
            )
        )
        out.append(
            (
                multi_freq_channel("LH", 3, eps, optimal=opt),
                multi_freq_sampler(LH_Client, 3, eps, protocol="LH", optimal=opt),
            )
        )
    return out


def test_realised_probabilities():
    # u = j / 2^53: P(u < p) counts the j below p 2^53; exact for p a multiple of 2^-53
    assert p_below(0.5) == Fraction(1, 2) and p_at_most(0.5) == Fraction(1, 2) + Fraction(1, 2**53)
    for p in (0.3, 1e-20, 1 - 2**-53, 0.0, 1.0):
        lo = p_below(p)
        assert lo >= Fraction(p) > lo - Fraction(1, 2**53) or (p == 0 and lo == 0)
        assert p_at_most(p) > Fraction(p) >= p_at_most(p) - Fraction(1, 2**53) or p == 1.0


def test_channel_models_match_the_real_samplers():
    """Each peer's real sampler against the channel it is modelled by (chi-square per input)."""
    seed_all(3)
    draws = 800
    for ch, draw in peers(1.0):
        m = ch.matrix
        for x in range(m.shape[0]):
            counts = np.bincount(draw(np.full(draws, x, dtype=np.int64)), minlength=m.shape[1])
            keep = m[x] > 0
            assert counts[~keep].sum() == 0, ch.name
            # merge outputs into >= 8 bins of similar probability (many UE/LH outputs are rare)
            p = m[x][keep] / m[x][keep].sum()
            order = np.argsort(p)
            bins = np.minimum((np.cumsum(p[order]) * 8).astype(int), 7)
            obs = np.bincount(bins, weights=counts[keep][order], minlength=8)
            exp = np.bincount(bins, weights=p[order], minlength=8) * draws
            ok = exp > 0
            assert stats.chisquare(obs[ok], exp[ok]).pvalue > ALPHA, ch.name


@pytest.mark.parametrize("eps", [0.5, 1.0, 4.0])
def test_exact_levels_at_ordinary_eps(eps):
    for ch, _ in peers(eps):
        # the realised level is the claim up to the rounding of the peers' parameters
        assert abs(ch.epsilon - eps) <= 1e-12 * eps, ch.name
        if ch.matrix is None:  # optimal local hashing at eps = 4: g = 56, 56^4 outputs
            continue
        # the float matrix certified by certify_epsilon (column max/min: another path)
        c = certify_epsilon(ch.matrix, normalize=True)
        assert abs(c.epsilon - ch.epsilon) <= 1e-12 * eps, ch.name


@pytest.mark.parametrize("eps", [1e-12, 1e-3, 0.5, 1.0, 4.0, 20.0, 36.0])
def test_opendp_never_exceeds_its_map(eps):
    ch = peers(eps)[0][0]
    assert ch.name.startswith("OpenDP") and not ch.exceeds_claim
    # mpmath, from OpenDP's prob itself: the realised ratio prob (k - 1) / (1 - prob) <= e^map(1)
    prob = math.exp(eps) / (math.exp(eps) + 2)
    mpmath.mp.dps = 50
    ratio = mpmath.mpf(prob) * 2 / (1 - mpmath.mpf(prob))
    assert ratio <= mpmath.exp(mpmath.mpf(ch.claimed_eps))


def test_large_eps_grr_is_deterministic():
    """Finding: at eps = 40 pure-LDP's DE keeps the true value with probability 1.0 (p rounds to 1):
    infinite eps.  The real sampler never lies."""
    c = DEClient(40.0, 4)
    ch = pure_ldp_channel(c)
    assert ch.exceeds_claim and ch.epsilon == math.inf and c.p == 1.0
    seed_all(0)
    assert all(c.privatise(x) == x - 1 for x in (1, 2, 3, 4) for _ in range(500))  # data 1..4 -> 0..3
    mf = multi_freq_channel("GRR", 4, 40.0)
    assert mf.exceeds_claim and mf.epsilon == math.inf
    assert all(GRR_Client(x, 4, 40.0) == x for x in range(4) for _ in range(200))
    # eps = 36: the keep probability is quantised to 2^-53 steps: the level exceeds the claim
    ch36 = pure_ldp_channel(DEClient(36.0, 4))
    assert ch36.exceeds_claim and ch36.epsilon > 36.04


def test_tiny_eps_rounding_exceeds_the_claim():
    """Finding: near eps = 1e-15 the peers' rounded probabilities (steps of 2^-53) give levels well
    above the claim (OpenDP's map rounds up and stays above its sampler's level)."""
    mpmath.mp.dps = 50
    c = UEClient(3e-16, 4)
    ch = pure_ldp_channel(c)
    # independent: the client's own p and q = 1 - p (an exact float) in mpmath: 2 log(p / q)
    level = 2 * mpmath.log(mpmath.mpf(c.p) / (1 - mpmath.mpf(c.p)))
    assert ch.exceeds_claim and level > 2.5 * 3e-16
    assert abs(level - ch.epsilon) < 1e-12 * level
    de = pure_ldp_channel(DEClient(1e-15, 4))
    assert de.exceeds_claim and de.epsilon > 1.15e-15
    assert multi_freq_channel("UE", 4, 3e-16, optimal=False).epsilon > 2.5 * 3e-16
    # at 1e-12 the excess is a few 1e-5 (relative): exceeded, exactly, but immaterial
    small = pure_ldp_channel(UEClient(1e-12, 4))
    assert small.exceeds_claim and small.epsilon < 1.0001e-12


def test_audits_of_the_real_samplers():
    seed_all(5)
    for ch, draw in peers(1.0):
        res = audit_peer(ch, draw, n=4000, alpha=1e-3, rng=np.random.default_rng(1))
        assert not res.violation and res.eps_lower <= ch.epsilon, res.message
        assert "confidence" in res.message


def test_audit_catches_a_tampered_client():
    seed_all(6)
    c = DEClient(1.0, 4)
    ch = pure_ldp_channel(c)  # the channel claimed: eps = 1
    c.p = 0.9  # the sampler now keeps the value with 0.9: eps = log(0.9 * 3 / 0.1) = 3.3
    res = audit_peer(ch, pure_ldp_sampler(c), n=6000, alpha=1e-3, rng=np.random.default_rng(2))
    assert res.violation and res.eps_lower > 1.5


def test_bad_arguments():
    with pytest.raises(TypeError, match="DEClient, UEClient or LHClient"):
        pure_ldp_channel(object())
    with pytest.raises(ValueError, match="protocol must be"):
        multi_freq_channel("HE", 4, 1.0)
