"""LDP audit: the lower bound never exceeds the true eps, and a buggy sampler is caught."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ldpopt
from _errmodel import R_FN, U
from ldpopt.deploy.audit import audit
from ldpopt.mechanism import Mechanism

#: the numerics tests: CI also runs them on numpy's AVX2 and baseline loops (.ci/npy_disable.py)
pytestmark = pytest.mark.numerics

#: P(lower bound > true eps) per audit: the audit's Clopper-Pearson bounds at this level (seeded)
AUDIT_ALPHA = 1e-6


def correct_mechanisms():
    rng = np.random.default_rng(2)
    p0, p1 = rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6))
    g = rng.uniform(1.0, math.exp(0.9), size=(3, 4))
    return {
        "rr2": ldpopt.randomized_response(2, 1.0),
        "rr5": ldpopt.randomized_response(5, 2.0),
        "spr": ldpopt.optimal_mechanism(p0, p1, 1.5, method="dp").mechanism,
        "binary": ldpopt.binary_mechanism(p0, p1, 0.5),
        "general": Mechanism(g / g.sum(axis=1, keepdims=True), 1.0),
    }


@pytest.mark.parametrize("name", sorted(correct_mechanisms()))
def test_lower_bound_never_exceeds_true_eps(name):
    mech = correct_mechanisms()[name]
    true_eps = mech.privacy_level()
    for seed in range(3):
        res = audit(mech, n=60_000, alpha=AUDIT_ALPHA, rng=np.random.default_rng(seed))
        # privacy_level of an RR-type channel is eps up to log(hi) - log(lo)'s rounding
        # (tests/test_mechanism.py: the levels (R_FN + 3) u, numpy's log R_FN u |log|, the difference)
        k = mech.num_outputs
        pl_err = U * (2 * (R_FN + 3) + R_FN * (2 * math.log(k) + mech.eps) + mech.eps)
        assert res.eps_lower <= true_eps <= mech.eps + pl_err
        assert not res.violation
        # the audit reports mech.privacy_level() itself: the same function, the same bits
        assert res.claimed_eps == mech.eps and res.model_eps == true_eps
        assert "no violation" in res.message


def test_lower_bound_is_tight_with_many_reports():
    mech = ldpopt.randomized_response(2, 1.0)
    res = audit(mech, n=400_000, alpha=1e-3, rng=np.random.default_rng(9))
    assert 0.9 < res.eps_lower <= 1.0


def buggy_rr(k: int, eps: float, rng: np.random.Generator):
    """RR whose lie is drawn from ALL k labels, so the lie can equal the truth."""
    high = math.exp(eps) / (math.exp(eps) + k - 1)

    def sampler(x):
        keep = rng.random(x.size) < high
        lie = rng.integers(0, k, size=x.size)
        return np.where(keep, x, lie)

    # its real channel: Q(x|x) = high + (1 - high)/k, Q(y|x) = (1 - high)/k
    true_eps = math.log((high + (1 - high) / k) / ((1 - high) / k))
    return sampler, true_eps


@pytest.mark.parametrize("k,eps", [(2, 1.0), (4, 1.0), (8, 2.0)])
def test_buggy_rr_is_flagged(k, eps):
    mech = ldpopt.randomized_response(k, eps)
    sampler, true_eps = buggy_rr(k, eps, np.random.default_rng(k))
    assert true_eps > eps
    res = audit(mech, n=200_000, alpha=AUDIT_ALPHA, sampler=sampler)
    assert res.violation and "VIOLATION" in res.message
    assert eps < res.eps_lower <= true_eps
    assert res.counts[0] > res.counts[1]


def test_labels_in_result_and_sampler_checks():
    mech = ldpopt.randomized_response(3, 1.0, labels=["a", "b", "c"])
    res = audit(mech, n=5_000, rng=np.random.default_rng(0))
    assert set(res.inputs) <= {"a", "b", "c"} and res.output in {
        "a",
        "b",
        "c",
    }  # RR: outputs are labelled too
    with pytest.raises(ValueError, match="sampler returned"):
        audit(mech, n=1_000, sampler=lambda x: x[:-1])
    with pytest.raises(ValueError, match="sampler returned invalid reports"):
        audit(mech, n=1_000, sampler=lambda x: x + 5)
    with pytest.raises(ValueError, match="alpha"):
        audit(mech, n=1_000, alpha=2.0)
    with pytest.raises(ValueError, match="n"):
        audit(mech, n=0)


def test_trivial_mechanisms():
    res = audit(Mechanism([[1.0], [1.0]], 1.0), n=100, rng=np.random.default_rng(0))
    assert res.eps_lower == 0.0 and not res.violation


def test_top_level_name_is_the_function():
    import ldpopt.deploy.audit as module

    mech = ldpopt.randomized_response(2, 1.0)
    assert ldpopt.audit(mech, n=2_000, rng=np.random.default_rng(1)).claimed_eps == 1.0
    assert module.audit is audit and isinstance(ldpopt.audit(mech, n=1_000), module.AuditResult)


def test_integer_output_labels():
    mech = ldpopt.randomized_response(3, 1.0, labels=[10, 20, 30])
    res = audit(mech, n=20_000, rng=np.random.default_rng(4))
    assert res.output in (10, 20, 30) and set(res.inputs) <= {10, 20, 30}

    def labelled_sampler(x):  # a black box answering with labels, like Mechanism.privatize
        return mech.privatize(np.array([10, 20, 30])[x], rng=np.random.default_rng(5))

    assert not audit(mech, n=20_000, sampler=labelled_sampler, alpha=AUDIT_ALPHA).violation
