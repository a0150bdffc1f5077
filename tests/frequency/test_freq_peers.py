"""Other libraries' frequency oracles as oracles (the [peers] test extra): pure-LDP and
multi-freq-ldpy privatize the same data; our exact variances must match their empirical error, and
our estimator must reproduce theirs on their reports."""

from __future__ import annotations

import importlib
import math
import os
import random
import sys
import types

import numba
import numpy as np
import pytest
import xxhash
from multi_freq_ldpy.pure_frequency_oracles import GRR as MF_GRR
from multi_freq_ldpy.pure_frequency_oracles import LH as MF_LH
from multi_freq_ldpy.pure_frequency_oracles import SS as MF_SS
from multi_freq_ldpy.pure_frequency_oracles import UE as MF_UE
from scipy import stats

from ldpopt.frequency import estimate
from ldpopt.frequency import mechanisms as M
from ldpopt.frequency.consistent import MLE_GAP_TOL


def _pure_ldp_oracle(name):
    """A subpackage of pure_ldp.frequency_oracles without running that package's __init__, which
    imports every oracle, RAPPOR's server among them, and that one needs scikit-learn (not a
    dependency of pure-ldp, nor of our [peers] extra)."""
    pkg = "pure_ldp.frequency_oracles"
    if pkg not in sys.modules:
        import pure_ldp

        stub = types.ModuleType(pkg)
        stub.__path__ = [os.path.join(pure_ldp.__path__[0], "frequency_oracles")]
        sys.modules[pkg] = stub
    return importlib.import_module(f"{pkg}.{name}")


_DE = _pure_ldp_oracle("direct_encoding")
_LH = _pure_ldp_oracle("local_hashing")
_UE = _pure_ldp_oracle("unary_encoding")
DEClient, DEServer = _DE.DEClient, _DE.DEServer
LHClient, LHServer = _LH.LHClient, _LH.LHServer
UEClient, UEServer = _UE.UEClient, _UE.UEServer

_XXH32 = xxhash.xxh32


@pytest.fixture(autouse=True)
def _xxhash_takes_strings(monkeypatch):
    """Both libraries hash str(item) with xxhash.xxh32, which xxhash >= 3 refuses for a str; hash
    its UTF-8 bytes, what earlier xxhash releases did."""

    def xxh32(data, seed=0):
        return _XXH32(data.encode() if isinstance(data, str) else data, seed=seed)

    monkeypatch.setattr(xxhash, "xxh32", xxh32)


K, EPS = 5, 1.0
F = np.array([0.4, 0.3, 0.15, 0.1, 0.05])
ALPHA = 1e-4


@numba.njit
def _seed_numba(seed):
    np.random.seed(seed)


def _seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    _seed_numba(seed)


def _inputs(n):
    return np.repeat(np.arange(K), np.round(F * n).astype(int))


def _pure_ldp(kind):
    """(client, server, ours) for pure-LDP's direct encoding, UE, OUE and OLH (items 1..K)."""
    if kind == "grr":
        return DEClient(EPS, K), DEServer(EPS, K), M.grr(K, EPS)
    if kind == "sue":
        return UEClient(EPS, K), UEServer(EPS, K), M.sue(K, EPS)
    if kind == "oue":
        return UEClient(EPS, K, use_oue=True), UEServer(EPS, K, use_oue=True), M.oue(K, EPS)
    return LHClient(EPS, K, use_olh=True), LHServer(EPS, K, use_olh=True), M.olh(K, EPS)


def _their_supports(reports, g):
    """(n, K) 0/1: the items each (value, seed) report supports under their hash xxh32(str(i)) mod g."""
    rows = [[_XXH32(str(i).encode(), seed=s).intdigest() % g == y for i in range(K)] for y, s in reports]
    return np.array(rows, dtype=int)


def _fixed_input_error(mech, x):
    """Exact E sum_x (f_hat_x - f_x)^2 for the fixed inputs x: each report's support indicators
    are independent across reports with the law of a point mass at its input."""
    n = x.size
    point = np.array([np.sum(mech.variance(np.eye(K)[v])) for v in range(K)])
    return float(np.sum(point[x])) / n**2


@pytest.mark.parametrize("kind", ["grr", "sue", "oue", "olh"])
def test_pure_ldp_error_matches_our_variance(kind):
    n, reps = 200, 120
    x = _inputs(n)
    _seed(101)
    errors = np.empty(reps)
    for r in range(reps):
        client, server, mech = _pure_ldp(kind)
        for v in x:
            server.aggregate(client.privatise(int(v) + 1))
        est = np.array([server.estimate(i + 1, suppress_warnings=True) for i in range(K)]) / n
        errors[r] = np.sum((est - np.bincount(x, minlength=K) / n) ** 2)
    exact = _fixed_input_error(mech, x)
    z = (errors.mean() - exact) / (errors.std(ddof=1) / math.sqrt(reps))
    assert abs(z) < stats.norm.isf(ALPHA / 2)


@pytest.mark.parametrize("kind", ["grr", "sue", "oue", "olh"])
def test_our_estimator_reproduces_pure_ldp(kind):
    n = 400
    x = _inputs(n)
    _seed(7)
    client, server, mech = _pure_ldp(kind)
    reports = [client.privatise(int(v) + 1) for v in x]
    for rep in reports:
        server.aggregate(rep)
    theirs = np.array([server.estimate(i + 1, suppress_warnings=True) for i in range(K)]) / n
    if kind == "grr":
        ours = estimate(mech, np.array(reports))  # their item indices, 0-based
    elif kind == "olh":
        # their hash: xxh32(str(item index), seed) mod g; the support sets of their reports
        sup = _their_supports(reports, mech.size)
        ours = estimate(mech, supports=sup)
    else:
        ours = estimate(mech, np.array(reports))
    # the same affine map of the same counts: a few ulps of the estimate's scale 1/(p - q)
    assert np.allclose(ours.value, theirs, rtol=0, atol=64 * 2.0**-52 / (mech.p - mech.q))


def _mf_reports(kind, x):
    if kind == "grr":
        return np.array([MF_GRR.GRR_Client(int(v), K, EPS) for v in x])
    if kind == "oue":
        return np.array([MF_UE.UE_Client(int(v), K, EPS, True) for v in x]).astype(int)
    if kind == "sue":
        return np.array([MF_UE.UE_Client(int(v), K, EPS, False) for v in x]).astype(int)
    if kind == "subset":
        return np.array([MF_SS.SS_Client(int(v), K, EPS) for v in x])
    return [MF_LH.LH_Client(int(v), K, EPS, True) for v in x]


def _mf_mechanism(kind):
    if kind == "subset":
        return M.subset_selection(K, EPS, int(max(1, np.rint(K / (np.exp(EPS) + 1)))))
    return M.make(kind, K, EPS)


def _mf_mi(kind, reports):
    if kind == "grr":
        return MF_GRR.GRR_Aggregator_MI(reports, K, EPS)
    if kind in ("oue", "sue"):
        return MF_UE.UE_Aggregator_MI(reports, EPS, kind == "oue")
    if kind == "subset":
        return MF_SS.SS_Aggregator_MI(reports, K, EPS)
    return MF_LH.LH_Aggregator_MI(reports, K, EPS, True)


@pytest.mark.parametrize("kind", ["grr", "sue", "oue", "subset", "olh"])
def test_our_estimator_reproduces_multi_freq_ldpy(kind):
    """multi-freq-ldpy's MI estimate is the unbiased estimate clipped at 0 and renormalised."""
    n = 300
    x = _inputs(n)
    _seed(13)
    mech = _mf_mechanism(kind)
    reports = _mf_reports(kind, x)
    theirs = _mf_mi(kind, reports)
    if kind == "olh":
        sup = _their_supports(reports, mech.size)
        ours = estimate(mech, supports=sup)
    else:
        ours = estimate(mech, reports)
    clipped = ours.value.clip(0)
    assert np.allclose(clipped / clipped.sum(), theirs, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kind", ["grr", "oue", "subset"])
def test_multi_freq_ldpy_error_matches_our_variance(kind):
    """Their client's reports, the standard estimator: mean squared error against our formula."""
    n, reps = 150, 120
    x = _inputs(n)
    _seed(29)
    mech = _mf_mechanism(kind)
    errors = np.empty(reps)
    truth = np.bincount(x, minlength=K) / n
    for r in range(reps):
        errors[r] = np.sum((estimate(mech, _mf_reports(kind, x)).value - truth) ** 2)
    exact = _fixed_input_error(mech, x)
    z = (errors.mean() - exact) / (errors.std(ddof=1) / math.sqrt(reps))
    assert abs(z) < stats.norm.isf(ALPHA / 2)


def test_mle_at_least_as_likely_as_their_ibu():
    """multi-freq-ldpy's IBU (EM on the channel) against our certified maximum likelihood."""
    n = 300
    x = _inputs(n)
    _seed(31)
    mech = M.grr(K, EPS)
    reports = _mf_reports("grr", x)
    ibu = MF_GRR.GRR_Aggregator_IBU(reports, K, EPS)
    ours = estimate(mech, reports)
    q = mech.channel().matrix
    counts = np.bincount(reports, minlength=K)
    ll_ibu, ll_ours = counts @ np.log(ibu @ q), counts @ np.log(ours.mle @ q)
    assert ll_ours >= ll_ibu - MLE_GAP_TOL * n
    assert np.allclose(ours.mle, ibu, atol=1e-4)
