r"""Other libraries' LDP mechanisms, checked: the exact channel they sample, and a black-box audit.

Adapters for OpenDP's randomized response, pure-LDP (``DEClient``, ``UEClient``, ``LHClient``)
and multi-freq-ldpy (``GRR_Client``, ``UE_Client``, ``LH_Client``).  Each ``*_channel``
function reads the peer's own parameters (the attributes its client stores, or the formulas of
its client function) and returns a :class:`PeerChannel`: the probabilities its sampler
*really* uses, as exact rationals, and the exact largest likelihood ratio, decided against the
claimed eps with :func:`ldpopt.deploy.certify.exp_at_least` (rational arithmetic, no rounding).

The realised probabilities follow the sampling primitive:

* ``random.random()``, ``numpy.random.random()`` (legacy ``RandomState``) and numba's
  ``np.random.random()`` return ``j / 2**53`` with ``j`` uniform on ``[0, 2**53)``, so
  ``u < p`` happens with probability ``ceil(p 2**53) / 2**53`` (:func:`p_below`) and
  ``u <= p`` with ``(floor(p 2**53) + 1) / 2**53`` (:func:`p_at_most`);
* ``random.randint``, ``numpy.random.randint`` and ``numpy.random.choice`` without weights are
  exactly uniform (rejection sampling);
* ``numpy.random.choice([1, 0], p=[q, 1 - q])`` picks 1 when ``u < q / (q + (1 - q))`` (the
  normalised cumulative sum, in floating point);
* ``numpy.random.binomial(1, p)`` (multi-freq-ldpy's GRR) is numpy's inversion algorithm,
  whose keep probability is ``p`` up to a few units of 2**-53: taken as ``p`` (noted);
* OpenDP samples its Bernoulli exactly (``prob`` as the rational it stores) and the other
  category uniformly.

Local hashing reports ``(y, seed)``; the seed matters only through the hash values
``(h_seed(0), ..., h_seed(k-1))`` it reveals, so the channel is taken over outputs ``(y, hash
pattern)`` (a sufficient statistic of the report for the input) with every pattern equally likely
(an ideal hash; the privacy level does not depend on the pattern weights).

:func:`audit_peer` is the black-box side: ``ldpopt.audit`` on the peer's real sampler with the
stated confidence, its lower bound compared with the claim.  The sampler helpers
(:func:`pure_ldp_sampler`, :func:`multi_freq_sampler`, :func:`opendp_sampler`) call the peers'
own code.  Findings: ``docs/certify.md``.

This module is not imported by ``import ldpopt``; it imports none of the peers (it takes their
objects and functions), except ``xxhash`` (a dependency of both hashing peers) to read a
reported seed's hash pattern (of ``str(i)`` UTF-8 encoded, as xxhash < 4 hashed a ``str``; xxhash 4
refuses ``str``, and both peers' local hashing then fails: ``docs/certify.md``), through the ``peers``
extra.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ldpopt._extras import require
from ldpopt._validation import check_eps, check_positive_int, check_real
from ldpopt.deploy.audit import AuditResult, audit
from ldpopt.deploy.certify import exp_at_least
from ldpopt.mechanism import Mechanism

__all__ = [
    "PEER_EPS_MAX",
    "PeerAudit",
    "PeerChannel",
    "audit_peer",
    "multi_freq_channel",
    "multi_freq_sampler",
    "opendp_rr_channel",
    "opendp_sampler",
    "p_at_most",
    "p_below",
    "pure_ldp_channel",
    "pure_ldp_sampler",
]

_TWO53 = 2**53
#: the largest domain whose unary-encoding channel (2**k outputs) is built as a matrix
MAX_UE_K = 12
#: the largest eps of :func:`multi_freq_channel`: log of the largest float, where the peer's
#: ``np.exp(eps)`` overflows to inf (its keep probability becomes inf / inf = nan)
PEER_EPS_MAX = math.log(float(np.finfo(np.float64).max))
#: the largest local-hashing channel (g * g**k outputs) built as a matrix
MAX_LH_OUTPUTS = 4096


def p_below(p: float) -> Fraction:
    """P(u < p) for u = j / 2**53, j uniform on [0, 2**53): ``ceil(p 2**53) / 2**53`` in [0, 1]."""
    j = math.ceil(Fraction(p) * _TWO53)
    return Fraction(min(max(j, 0), _TWO53), _TWO53)


def p_at_most(p: float) -> Fraction:
    """P(u <= p) for u = j / 2**53: ``(floor(p 2**53) + 1) / 2**53`` in [0, 1]."""
    j = math.floor(Fraction(p) * _TWO53) + 1
    return Fraction(min(max(j, 0), _TWO53), _TWO53)


@dataclass(frozen=True)
class PeerChannel:
    """A peer's mechanism as it samples.

    Attributes
    ----------
    name : str
        ``"library: protocol"``.
    claimed_eps : float
        The eps the peer was asked for (or states).
    params : dict
        The realised probabilities (exact rationals) the channel is built from.
    exact_ratio : Fraction or None
        The exact largest ``Q(y|x) / Q(y|x')``; None when infinite (a zero beside a positive).
    epsilon : float
        ``log(exact_ratio)`` in floating point (``inf`` when infinite).
    exceeds_claim : bool
        Exactly ``exact_ratio > exp(claimed_eps)``: the sampler leaks more than claimed.
    matrix : numpy.ndarray or None
        The channel (rows = inputs) rounded to floats, when small enough to build; the input of
        :func:`audit_peer`.
    note : str
    """

    name: str
    claimed_eps: float
    params: dict
    exact_ratio: Fraction | None
    epsilon: float
    exceeds_claim: bool
    matrix: np.ndarray | None
    note: str = ""


def _channel(
    name: str, claimed: float, params: dict, ratio: Fraction | None, matrix: Any, note: str
) -> PeerChannel:
    claimed = float(claimed)
    if ratio is None:
        eps, exceeds = math.inf, True
    else:
        # log1p of the exactly computed excess keeps a tiny level's relative accuracy
        eps = (
            math.log1p(float(ratio - 1))
            if ratio < 2
            else math.log(ratio.numerator) - math.log(ratio.denominator)
        )
        exceeds = not exp_at_least(claimed, ratio) if math.isfinite(claimed) else False
    return PeerChannel(name, claimed, params, ratio, eps, exceeds, matrix, note)


def _ratio(hi: Fraction, lo: Fraction) -> Fraction | None:
    """``max(hi / lo, lo / hi)`` for two positive-or-zero probabilities (None: infinite)."""
    a, b = max(hi, lo), min(hi, lo)
    if b == 0:
        return None if a > 0 else Fraction(1)
    return a / b


# ---------------------------------------------------------------------------------------------
# the three shapes: randomized response, unary encoding, local hashing
# ---------------------------------------------------------------------------------------------
def _rr(name: str, claimed: float, k: int, keep: Fraction, other: Fraction, note: str) -> PeerChannel:
    m = np.full((k, k), float(other))
    np.fill_diagonal(m, float(keep))
    return _channel(name, claimed, {"keep": keep, "other": other}, _ratio(keep, other), m, note)


def _ue(name: str, claimed: float, k: int, one_true: Fraction, one_other: Fraction, note: str) -> PeerChannel:
    """Unary encoding: bit x is 1 with ``one_true``, every other bit with ``one_other``."""
    a, b = one_true, one_other
    if 0 < a < 1 and 0 < b < 1:
        r = a * (1 - b) / ((1 - a) * b)
        ratio: Fraction | None = max(r, 1 / r)
    else:
        ratio = None if a != b else Fraction(1)
    matrix = None
    if k <= MAX_UE_K:
        bits = np.array(list(itertools.product((0, 1), repeat=k)), dtype=bool)[:, ::-1]  # output j: bits of j
        fa, fb = float(a), float(b)
        matrix = np.empty((k, bits.shape[0]))
        for x in range(k):
            p = np.where(bits, fb, 1 - fb)
            p[:, x] = np.where(bits[:, x], fa, 1 - fa)
            matrix[x] = p.prod(axis=1)
    return _channel(name, claimed, {"one_true": a, "one_other": b}, ratio, matrix, note)


def _lh(name: str, claimed: float, k: int, g: int, hit: Fraction, miss: Fraction, note: str) -> PeerChannel:
    """Local hashing over outputs (y, hash pattern): y = h(x) with ``hit``, each other value ``miss``."""
    ratio = _ratio(hit, miss) if k > 1 and g > 1 else Fraction(1)
    matrix = None
    if g * g**k <= MAX_LH_OUTPUTS:
        pats = np.array(list(itertools.product(range(g), repeat=k)), dtype=np.int64)  # (g**k, k)
        w = 1.0 / pats.shape[0]
        matrix = np.empty((k, g * pats.shape[0]))
        for x in range(k):
            hits = pats[:, x][None, :] == np.arange(g)[:, None]  # (g, patterns): output (y, pattern)
            matrix[x] = np.where(hits, float(hit) * w, float(miss) * w).T.ravel()
    return _channel(name, claimed, {"g": g, "hit": hit, "miss": miss}, ratio, matrix, note)


# ---------------------------------------------------------------------------------------------
# the peers
# ---------------------------------------------------------------------------------------------
def opendp_rr_channel(categories: Any, prob: float, claimed_eps: float) -> PeerChannel:
    """OpenDP's ``make_randomized_response(categories, prob)`` (``claimed_eps``: its ``map(1)``):
    the value kept with probability ``prob`` exactly, another category uniformly."""
    k = len(categories)
    if k < 2:
        raise ValueError(f"categories must hold at least 2 categories, got {k}")
    prob = check_real(prob, "prob")
    if not 0.0 <= prob <= 1.0:
        raise ValueError(f"prob must be in [0, 1], got prob={prob!r}")
    check_eps(claimed_eps, "claimed_eps")
    keep = Fraction(prob)
    return _rr("OpenDP: randomized response", claimed_eps, k, keep, (1 - keep) / (k - 1), "exact Bernoulli")


def pure_ldp_channel(client: Any, k: int | None = None) -> PeerChannel:
    """The channel of a pure-LDP client (``DEClient``, ``UEClient`` SUE/OUE, ``LHClient`` BLH/OLH) from
    the probabilities it stores and how its ``_perturb`` samples (module text)."""
    kind = type(client).__name__
    if kind not in ("DEClient", "UEClient", "LHClient"):
        raise TypeError(f"client must be a pure-LDP DEClient, UEClient or LHClient, got {kind}")
    d = int(client.d if k is None else k)
    eps = float(client.epsilon)
    if kind == "DEClient":  # random.random() < p, else uniform over the d - 1 others
        keep = p_below(client.p)
        return _rr("pure-LDP: DE (GRR)", eps, d, keep, (1 - keep) / (d - 1), "random.random() < p")
    if kind == "UEClient":
        # bit x: random.random() < p; other bits: np.random.choice([1, 0], p=[q, 1 - q])
        q = float(client.q)
        c0 = q / (q + (1.0 - q))  # numpy's normalised cumulative sum, in floating point
        name = "pure-LDP: OUE" if client.use_oue else "pure-LDP: SUE"
        return _ue(name, eps, d, p_below(client.p), p_below(c0), "random.random(), np.random.choice")
    if kind == "LHClient":  # keep iff u <= p - q (u = np.random.random_sample()), else uniform on g
        g = int(client.g)
        kept = p_at_most(float(client.p) - float(client.q))
        miss = (1 - kept) / g
        name = "pure-LDP: OLH" if client.use_olh else "pure-LDP: BLH"
        return _lh(name, eps, d, g, kept + miss, miss, "u <= p - q, np.random.randint")
    raise TypeError(f"client must be a pure-LDP DEClient, UEClient or LHClient, got {kind}")


def multi_freq_channel(protocol: str, k: int, eps: float, *, optimal: bool = True) -> PeerChannel:
    """The channel of multi-freq-ldpy's ``GRR_Client``, ``UE_Client`` (``optimal``: OUE, else SUE)
    or ``LH_Client`` (``optimal``: OLH, else BLH), from the formulas of those functions.

    ``k >= 2``; ``0 < eps <=`` :data:`PEER_EPS_MAX` (the peer computes e^eps in floating point,
    which overflows beyond: its own client fails there, so there is no channel to model)."""
    if protocol not in ("GRR", "UE", "LH"):
        raise ValueError(f"protocol must be 'GRR', 'UE' or 'LH', got protocol={protocol!r}")
    k = check_positive_int(k, "k")
    if k < 2:
        raise ValueError(f"k must be >= 2, got k={k}")
    eps = check_eps(eps, "eps", allow_inf=False)
    if eps > PEER_EPS_MAX:
        raise ValueError(
            f"eps must be <= {PEER_EPS_MAX:.6g}: multi-freq-ldpy computes e^eps in floating point, which "
            f"overflows beyond, got eps={eps!r}"
        )
    if protocol == "GRR":  # np.random.binomial(1, p), else np.random.choice(other values)
        p = Fraction(float(np.exp(eps) / (np.exp(eps) + k - 1)))
        return _rr(
            "multi-freq-ldpy: GRR", eps, k, p, (1 - p) / (k - 1), "keep probability p as numpy rounds it"
        )
    if protocol == "UE":  # numba's np.random.random() <= p (bit x), <= q (other bits)
        if optimal:
            one, other = 0.5, float(1 / (np.exp(eps) + 1))
        else:
            one = float(np.exp(eps / 2) / (np.exp(eps / 2) + 1))
            other = 1 - one
        name = "multi-freq-ldpy: OUE" if optimal else "multi-freq-ldpy: SUE"
        return _ue(name, eps, k, p_at_most(one), p_at_most(other), "u <= p, u <= q")
    if protocol == "LH":  # GRR_Client on the hash value in [0, g)
        g = int(round(np.exp(eps))) + 1 if optimal else 2
        keep = Fraction(float(np.exp(eps) / (np.exp(eps) + g - 1)))
        name = "multi-freq-ldpy: OLH" if optimal else "multi-freq-ldpy: BLH"
        return _lh(name, eps, k, g, keep, (1 - keep) / (g - 1), "GRR on the hash value")
    raise ValueError(f"protocol must be 'GRR', 'UE' or 'LH', got protocol={protocol!r}")


# ---------------------------------------------------------------------------------------------
# black-box: the peers' real samplers, audited
# ---------------------------------------------------------------------------------------------
Sampler = Callable[[np.ndarray], np.ndarray]


def _bits_to_index(vec: Any) -> int:
    return int(sum(1 << j for j, b in enumerate(np.asarray(vec).tolist()) if b))


def pure_ldp_sampler(client: Any, k: int | None = None) -> Sampler:
    """The client's own ``privatise`` on inputs 1..k (its default index mapper ``x - 1``), reports
    encoded as output indices of :func:`pure_ldp_channel`'s matrix."""
    kind = type(client).__name__
    d = int(client.d if k is None else k)

    def draw(x: np.ndarray) -> np.ndarray:
        out = np.empty(x.shape[0], dtype=np.int64)
        for i, v in enumerate(x.tolist()):
            r = client.privatise(v + 1)
            if kind == "UEClient":
                out[i] = _bits_to_index(r)
            elif kind == "LHClient":
                out[i] = _lh_index(int(r[0]), int(r[1]), d, int(client.g))
            else:
                out[i] = int(r)
        return out

    return draw


def _lh_index(y: int, seed: int, k: int, g: int) -> int:
    # matrix column of (y, pattern) in _lh: pattern-major, y-minor
    xxhash = require("xxhash", "auditing local hashing", "peers")
    pattern = 0
    for i in range(k):
        pattern = pattern * g + xxhash.xxh32(str(i).encode(), seed=seed).intdigest() % g
    return pattern * g + y


def multi_freq_sampler(
    client: Callable, k: int, eps: float, *, protocol: str, optimal: bool = True
) -> Sampler:
    """multi-freq-ldpy's client function (``GRR_Client(x, k, eps)``, ``UE_Client(x, k, eps, optimal)``
    or ``LH_Client(x, k, eps, optimal)``), reports encoded as output indices of
    :func:`multi_freq_channel`'s matrix."""
    g = (int(round(np.exp(eps))) + 1 if optimal else 2) if protocol == "LH" else 0

    def draw(x: np.ndarray) -> np.ndarray:
        out = np.empty(x.shape[0], dtype=np.int64)
        for i, v in enumerate(x.tolist()):
            if protocol == "GRR":
                out[i] = int(client(v, k, eps))
            elif protocol == "UE":
                out[i] = _bits_to_index(client(v, k, eps, optimal))
            else:
                y, seed = client(v, k, eps, optimal)
                out[i] = _lh_index(int(y), int(seed), k, g)
        return out

    return draw


def opendp_sampler(measurement: Any, categories: Any) -> Sampler:
    """An OpenDP measurement over ``categories`` (inputs and outputs), reports as category indices."""
    cats = list(categories)
    pos = {c: i for i, c in enumerate(cats)}

    def draw(x: np.ndarray) -> np.ndarray:
        return np.array([pos[measurement(cats[v])] for v in x.tolist()], dtype=np.int64)

    return draw


@dataclass(frozen=True)
class PeerAudit:
    """A peer's sampler audited (:func:`audit_peer`): ``eps_lower`` is a lower confidence bound on
    its true eps (confidence ``1 - alpha``); ``violation`` when it exceeds ``claimed_eps``."""

    name: str
    claimed_eps: float
    eps_lower: float
    alpha: float
    violation: bool
    result: AuditResult
    message: str


def audit_peer(
    channel: PeerChannel, sampler: Sampler, n: int = 20_000, *, alpha: float = 1e-3, rng: Any = None
) -> PeerAudit:
    """Black-box audit of a peer's real ``sampler`` (input indices -> output indices of
    ``channel.matrix``) with :func:`ldpopt.audit`; the lower bound is compared with the claim."""
    if channel.matrix is None:
        raise ValueError(f"{channel.name}: the channel is too large to audit output by output")
    m = channel.matrix / channel.matrix.sum(axis=1, keepdims=True)
    mech = Mechanism(m, math.inf, name=channel.name)
    res = audit(mech, n, alpha=alpha, sampler=sampler, rng=rng)
    viol = res.eps_lower > channel.claimed_eps
    conf = f"{100 * (1 - alpha):.6g}%"
    msg = (
        f"{channel.name}: with {conf} confidence eps >= {res.eps_lower:.4g}"
        f" ({'above' if viol else 'within'} the claimed {channel.claimed_eps:g})"
    )
    return PeerAudit(channel.name, channel.claimed_eps, res.eps_lower, alpha, viol, res, msg)
