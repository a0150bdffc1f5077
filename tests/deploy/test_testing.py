"""Likelihood-ratio test, SPRT and Bayes decisions: error rates by simulation, streaming, validation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binomtest

import ldpopt
from _errmodel import R_FN, U, within
from ldpopt.deploy.sizing import sample_size
from ldpopt.deploy.testing import LikelihoodRatioTest, SequentialTest

#: the numerics tests: CI also runs them on numpy's AVX2 and baseline loops (.ci/npy_disable.py)
pytestmark = pytest.mark.numerics

#: significance level of every statistical check: an exact binomial test's p-value is below it with
#: probability <= 1e-6 when the model is right (the seeds are fixed, so a pass is reproducible; a
#: failure would mean a 1e-6 event or a wrong rate)
CI_ALPHA = 1e-6


# ---------------------------------------------------------------------------------------------
# simulated error rates (privatize -> decide)
# ---------------------------------------------------------------------------------------------
def simulated_rejections(test, mech, p, n, reps, rng):
    k = mech.num_inputs
    x = rng.choice(k, size=n * reps, p=p)
    y = mech.privatize(x, rng=rng).reshape(reps, n)
    s = mech.num_outputs
    counts = np.zeros((reps, s), dtype=np.int64)
    np.add.at(counts, (np.repeat(np.arange(reps), n), y.ravel()), 1)
    return sum(test.decide_counts(c, rng=rng).decision for c in counts)


@pytest.mark.parametrize("case", ["binomial", "lattice", "lattice-randomized", "saddlepoint"])
def test_empirical_errors_match_design(case, hypotheses):
    p0, p1 = hypotheses(6, 21)
    rng = np.random.default_rng(sum(map(ord, case)))
    reps = 3000 if case != "saddlepoint" else 2000
    if case == "binomial":
        mech, n, kw = ldpopt.binary_mechanism(p0, p1, 1.0), 40, {}
    elif case == "lattice":
        mech, n, kw = ldpopt.randomized_response(6, 1.5), 30, {}
    elif case == "lattice-randomized":
        mech, n, kw = ldpopt.randomized_response(6, 1.5), 30, {"randomized": True}
    else:
        mech, n, kw = ldpopt.randomized_response(6, 1.5), 150, {"exact_max_n": 20}
    test = LikelihoodRatioTest(mech, p0, p1, 0.05, **kw)
    d = test.design(n)
    expected = {
        "binomial": "exact-binomial",
        "lattice": "exact-lattice",
        "lattice-randomized": "exact-lattice",
        "saddlepoint": "saddlepoint",
    }[case]
    assert d.method == expected
    r0 = simulated_rejections(test, mech, p0, n, reps, rng)
    r1 = simulated_rejections(test, mech, p1, n, reps, rng)
    assert binomtest(r0, reps, d.size).pvalue > CI_ALPHA
    assert binomtest(r1, reps, d.power).pvalue > CI_ALPHA
    # exact designs choose the threshold on their own computed tails: the binomial size is the very
    # binom.sf value tested <= alpha; a lattice size exp(up) with up <= log(alpha) (exp and log: 2 R_FN
    # relative), a randomised one alpha within 4u
    assert d.size <= 0.05 * (1 + (2 * R_FN + 4) * U) or case == "saddlepoint"


# ---------------------------------------------------------------------------------------------
# SPRT
# ---------------------------------------------------------------------------------------------
def test_sprt_stops_and_errs_at_designed_rates(hypotheses):
    p0, p1 = hypotheses(6, 4)
    mech = ldpopt.optimal_mechanism(p0, p1, 1.0, method="dp").mechanism
    alpha, beta = 0.05, 0.1
    sprt = SequentialTest(mech, p0, p1, alpha, beta)
    e0, e1 = sprt.expected_sample_size
    rng = np.random.default_rng(99)
    reps, horizon = 2000, int(20 * max(e0, e1))
    outcomes = {}
    for h, p in ((0, p0), (1, p1)):
        x = rng.choice(6, size=(reps, horizon), p=p)
        y = mech.privatize(x.ravel(), rng=rng).reshape(reps, horizon)
        res = [sprt.run(row) for row in y]
        assert all(r.stopped and not r.truncated for r in res)
        outcomes[h] = (np.array([r.decision for r in res]), np.array([r.n for r in res]))
    wrong0 = int(np.sum(outcomes[0][0] == 1))
    wrong1 = int(np.sum(outcomes[1][0] == 0))
    # Wald: alpha' <= alpha / (1 - beta), beta' <= beta / (1 - alpha), alpha' + beta' <= alpha + beta
    assert binomtest(wrong0, reps, alpha / (1 - beta), alternative="greater").pvalue > CI_ALPHA
    assert binomtest(wrong1, reps, beta / (1 - alpha), alternative="greater").pvalue > CI_ALPHA
    assert wrong0 / reps + wrong1 / reps <= alpha + beta + 4 * math.sqrt((alpha + beta) / reps)
    # errors are not far below the design either (overshoot only shaves a little off)
    assert wrong0 / reps > 0.3 * alpha and wrong1 / reps > 0.3 * beta
    # sample sizes: Wald's approximation ignores overshoot, so the truth is a bit larger
    for h, e in ((0, e0), (1, e1)):
        mean_n = outcomes[h][1].mean()
        assert 0.9 * e <= mean_n <= 2.0 * e


def test_sprt_streaming_api(hypotheses):
    p0, p1 = hypotheses(5, 6)
    mech = ldpopt.randomized_response(5, 1.0)
    sprt = SequentialTest(mech, p0, p1, 0.05, 0.05)
    rng = np.random.default_rng(1)
    y = mech.privatize(rng.choice(5, size=5000, p=p1), rng=rng)
    whole = sprt.run(y)
    sprt.reset()
    for chunk in np.array_split(y, 50):
        last = sprt.update(chunk)
        if last.stopped:
            break
    assert last.decision == whole.decision and last.n == whole.n
    test_llr = LikelihoodRatioTest(mech, p0, p1).per_report_llr
    # the running sums of the same n LLRs in chunks against at once, and against np.sum: each within
    # (n + 1) u sum|lambda_i| of the exact sum (any order)
    mag = float(np.sum(np.abs(test_llr[y[: whole.n]])))
    assert within("SPRT: chunked vs whole", last.llr, whole.llr, 2 * (whole.n + 1) * U * mag)
    assert whole.unused == y.size - whole.n
    ref = float(np.sum(test_llr[y[: whole.n]]))
    assert within("SPRT: llr vs numpy sum", whole.llr, ref, 2 * (whole.n + 1) * U * mag)
    path = np.cumsum(test_llr[y[: whole.n]])
    assert np.all((path[:-1] > whole.lower) & (path[:-1] < whole.upper))
    after = sprt.update(y[:10])
    assert after.decision == whole.decision and after.unused == 10
    trunc = SequentialTest(mech, p0, p1, 1e-6, 1e-6, max_n=5).run(y)
    assert trunc.truncated and trunc.n == 5 and trunc.decision == int(trunc.llr > 0)


# ---------------------------------------------------------------------------------------------
# degenerate hypotheses and argument checks
# ---------------------------------------------------------------------------------------------
def test_uninformative_and_validation():
    p = np.array([0.2, 0.3, 0.5])
    mech = ldpopt.randomized_response(3, 1.0)
    with pytest.raises(ValueError, match="equal"):
        sample_size(mech, p, p)
    test = LikelihoodRatioTest(mech, p, p, 0.05)
    d = test.design(10)
    assert d.method == "uninformative" and d.size == 0.0
    assert LikelihoodRatioTest(mech, p, p, 0.05, randomized=True).design(10).size == 0.05
    with pytest.raises(ValueError, match="alpha"):
        LikelihoodRatioTest(mech, p, p[::-1], 1.5)
    with pytest.raises(ValueError, match="alpha \\+ beta"):
        sample_size(mech, p, p[::-1], 0.6, 0.5)
    with pytest.raises(ValueError, match="empty"):
        LikelihoodRatioTest(mech, p, p[::-1]).decide([])
    with pytest.raises(ValueError, match="counts"):
        LikelihoodRatioTest(mech, p, p[::-1]).decide_counts([1, 2])
    with pytest.raises(ValueError, match="output index 3"):
        LikelihoodRatioTest(mech, p, p[::-1]).decide([0, 3])
    with pytest.raises(ValueError, match="method"):
        sample_size(mech, p, p[::-1], method="magic")
    inf_mech = ldpopt.spr_mechanism([[0], [1, 2]], 3, math.inf)
    with pytest.raises(ValueError, match="probability"):
        LikelihoodRatioTest(inf_mech, [1.0, 0.0, 0.0], [0.0, 0.5, 0.5])


# ---------------------------------------------------------------------------------------------
# Bayes decision and labels
# ---------------------------------------------------------------------------------------------
def test_bayes_decision_matches_direct_posterior(hypotheses):
    p0, p1 = hypotheses(4, 17)
    mech = ldpopt.randomized_response(4, 1.0)
    test = LikelihoodRatioTest(mech, p0, p1)
    m0, m1 = test.output_distributions
    reports = np.array([0, 1, 1, 3, 2, 2, 2])
    for prior1, cfa, cm in ((0.5, 1, 1), (0.1, 1, 1), (0.9, 5, 1), (0.3, 1, 4)):
        res = test.bayes_decide(reports, prior1=prior1, cost_false_alarm=cfa, cost_miss=cm)
        like0 = (1 - prior1) * np.prod(m0[reports])
        like1 = prior1 * np.prod(m1[reports])
        # sigma(llr + log pi1 - log pi0) against the product form: the llr (fsum of 7 logs: R_FN u |.|
        # each), the prior's logs, expit (R_FN); the products (8 roundings each) and the quotient;
        # the posterior's sensitivity to its logit is post (1 - post) <= 1/4... relative 1 - post <= 1
        ref = like1 / (like0 + like1)
        lam = np.abs(np.log(m1[reports]) - np.log(m0[reports]))
        logit_err = U * (R_FN * float(np.sum(np.abs(np.log(m1[reports])) + np.abs(np.log(m0[reports])))) + 8)
        logit_err += U * float(lam.sum()) + R_FN * U * (abs(math.log(prior1)) + abs(math.log1p(-prior1)))
        bound = ref * ((1 - ref) * logit_err + (R_FN + 20) * U)
        assert within("Bayes posterior vs product form", res.posterior1, ref, bound)
        assert res.decision == int(cm * like1 > cfa * like0)
    with pytest.raises(ValueError, match="prior1"):
        test.bayes_decide(reports, prior1=0.0)


def test_labelled_hypotheses_and_reports(hypotheses):
    labels = ["x", "y", "z", "w"]
    p0, p1 = hypotheses(4, 18)
    d0 = dict(zip(labels, p0, strict=False))
    d1 = {lab: p1[i] for i, lab in reversed(list(enumerate(labels)))}
    res = ldpopt.optimal_mechanism(d0, d1, 1.0, method="dp")
    mech = res.mechanism
    assert mech.labels == tuple(labels)
    a = LikelihoodRatioTest(mech, d0, d1).design(50)
    b = LikelihoodRatioTest(mech, p0, p1).design(50)
    assert a.threshold == b.threshold and a.type_ii == b.type_ii
    named = ldpopt.Mechanism(
        ldpopt.randomized_response(4, 1.0).matrix, 1.0, labels=labels, output_labels=("A", "B", "C", "D")
    )
    t = LikelihoodRatioTest(named, d0, d1)
    assert t.decide(["A", "B", "B"]).n == 3
    with pytest.raises(ValueError, match="unknown output 'E'"):
        t.decide(["A", "E"])


# ---------------------------------------------------------------------------------------------
# module paths
# ---------------------------------------------------------------------------------------------
def test_old_inference_path_and_package_names():
    import importlib
    import sys

    import ldpopt.deploy as deploy
    from ldpopt.deploy import sizing, testing

    assert deploy.sample_size is sizing.sample_size and deploy.SampleSizeResult is sizing.SampleSizeResult
    assert deploy.LikelihoodRatioTest is testing.LikelihoodRatioTest
    assert deploy.TestDesign is testing.TestDesign
    assert ldpopt.sample_size is sizing.sample_size
    sys.modules.pop("ldpopt.inference", None)
    with pytest.warns(DeprecationWarning, match="ldpopt.inference moved to ldpopt.deploy"):
        old = importlib.import_module("ldpopt.inference")
    for name in ("LikelihoodRatioTest", "SequentialTest", "SequentialResult", "TestResult", "BayesDecision"):
        assert getattr(old, name) is getattr(testing, name)
    assert old.sample_size is sizing.sample_size and old.SampleSizeResult is sizing.SampleSizeResult
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = deploy.nothing
