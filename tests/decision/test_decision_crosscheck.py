"""Cross-checks of the decision framework against independent methods (lead's integration tests).

Every optimum of `ldpopt.optimal_channel` is compared with something it does not share code with:
the SPR dynamic program and KOV LP (binary testing), a direct LP over ALL eps-LDP channels with a
fixed number of outputs, and the closed forms of the paper's examples.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.optimize import linprog

import ldpopt
from ldpopt.decision.objectives import FDivergenceObjective, MutualInformation


def random_problem(rng, m, T, A):
    P = rng.dirichlet(np.ones(m), size=T).T  # (m, T), columns sum to 1
    L = rng.random((T, A))
    lam = rng.dirichlet(np.ones(T))
    return P, L, lam


def bayes_risk_direct(Q: np.ndarray, P: np.ndarray, L: np.ndarray, lam: np.ndarray) -> float:
    """Bayes risk of channel Q (rows = inputs) with the optimal decoder, from the definition."""
    joint = lam[:, None] * (P.T @ Q)  # (T, n): lam_theta P(y | theta)
    return float(np.sum(np.min(L.T @ joint, axis=0)))  # per output: min_a sum_theta ...


def bayes_lp_all_channels(P, L, lam, eps, n_out):
    """min Bayes risk over ALL eps-LDP channels with n_out outputs and randomized decoders.

    Variables z[x, y, a] = Q(y|x) delta(a|y) would be bilinear; instead use the standard fact that
    with n_out >= |A| outputs one may take one output per action (deterministic decoder y -> a), so
    the problem is the LP over Q with outputs labelled by actions: min sum_{x,a} Q(a|x) r_a(x).
    """
    m = P.shape[0]
    A = L.shape[1]
    assert n_out == A
    r = (P * lam[None, :]) @ L  # r[x, a] = sum_theta lam P(x|theta) L(theta, a)
    E = math.exp(eps)
    nv = m * A
    idx = lambda x, a: x * A + a  # noqa: E731 - a one-line index map, read like the formula
    A_eq = np.zeros((m, nv))
    for x in range(m):
        for a in range(A):
            A_eq[x, idx(x, a)] = 1.0
    rows = []
    for a in range(A):
        for x in range(m):
            for x2 in range(m):
                if x != x2:
                    row = np.zeros(nv)
                    row[idx(x, a)] = 1.0
                    row[idx(x2, a)] = -E
                    rows.append(row)
    res = linprog(
        r.reshape(-1),
        A_ub=np.array(rows),
        b_ub=np.zeros(len(rows)),
        A_eq=A_eq,
        b_eq=np.ones(m),
        bounds=(0, None),
        method="highs",
    )
    assert res.status == 0
    return float(res.fun)


@pytest.mark.parametrize("seed", range(6))
def test_bayes_risk_equals_lp_over_all_channels(seed):
    rng = np.random.default_rng(seed)
    m, T, A = int(rng.integers(2, 6)), int(rng.integers(2, 5)), int(rng.integers(2, 5))
    P, L, lam = random_problem(rng, m, T, A)
    eps = float(rng.uniform(0.2, 3.0))
    prob = ldpopt.DecisionProblem(likelihood=P, loss=L, prior=lam)
    ref = bayes_lp_all_channels(P, L, lam, eps, A)
    for method in ("enumerate", "colgen"):
        res = ldpopt.optimal_channel(prob, eps, risk="bayes", method=method)
        assert res.value == pytest.approx(ref, rel=1e-8, abs=1e-10), method
        Q = res.mechanism.matrix
        assert res.mechanism.is_ldp(eps)
        assert ldpopt.is_maximal(res.mechanism)
        assert bayes_risk_direct(Q, P, L, lam) == pytest.approx(res.value, rel=1e-8, abs=1e-10)


def test_minimax_methods_agree_and_bound_bayes():
    rng = np.random.default_rng(11)
    for _ in range(4):
        P, L, lam = random_problem(rng, 4, 3, 3)
        prob = ldpopt.DecisionProblem(likelihood=P, loss=L, prior=lam)
        eps = 1.0
        vals = {
            meth: ldpopt.optimal_channel(prob, eps, risk="minimax", method=meth).value
            for meth in ("enumerate", "colgen")
        }
        assert vals["enumerate"] == pytest.approx(vals["colgen"], rel=1e-8, abs=1e-10)
        # minimax risk >= Bayes risk for every prior
        bayes = ldpopt.optimal_channel(prob, eps, risk="bayes").value
        assert vals["enumerate"] >= bayes - 1e-9


def test_fdivergence_objective_equals_spr_and_kov():
    rng = np.random.default_rng(5)
    for _ in range(8):
        k = int(rng.integers(2, 7))
        p, q = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
        eps = float(rng.uniform(0.2, 4))
        for div in ("kl", "tv", "hellinger"):
            res = ldpopt.optimal_channel(FDivergenceObjective(p, q, div), eps)
            spr = ldpopt.optimal_mechanism(p, q, eps, div, method="dp").value
            assert res.value == pytest.approx(spr, rel=1e-8)
            assert res.value == pytest.approx(ldpopt.kov_lp(p, q, eps, div).value, rel=1e-8)


def test_mary_testing_symmetric_closed_form_and_equalizer():
    for m, gamma, eps in [(4, 0.5, 1.0), (5, 0.8, 2.0), (6, 0.3, 0.5)]:
        prob = ldpopt.decision.problems.mary_testing(m, gamma)
        bayes = ldpopt.optimal_channel(prob, eps, risk="bayes", method="enumerate").value
        minimax = ldpopt.optimal_channel(prob, eps, risk="minimax", method="enumerate").value
        assert minimax == pytest.approx(bayes, rel=1e-8)
        # independent: best subset-selection channel, risk from the definition
        P, L = prob.likelihood, prob.loss
        lam = np.full(m, 1.0 / m)
        best = min(
            bayes_risk_direct(ldpopt.subset_selection(m, eps, s).matrix, P, L, lam) for s in range(1, m)
        )
        assert bayes == pytest.approx(best, rel=1e-8)


def test_circular_estimation_matches_closed_form():
    for m, gamma, eps in [(5, 0.7, 1.0), (6, 0.5, 2.0), (8, 0.9, 0.7)]:
        obj = ldpopt.decision.problems.circular_estimation(m, gamma)
        res = ldpopt.optimal_channel(obj, eps)
        ks = np.arange(1, m)
        E = math.exp(eps)
        cf = 1 - gamma * (E - 1) * np.sin(np.pi * ks / m) / (2 * (ks * E + m - ks) * np.sin(np.pi / m))
        assert res.value == pytest.approx(float(cf.min()), rel=1e-8)
        assert obj.closed_form(eps) == pytest.approx(float(cf.min()), rel=1e-10)


def test_mutual_information_maximised_by_subset_selection():
    from ldpopt.decision.symmetry import mi_optimal_size

    for m, eps in [(4, 1.0), (5, 0.5), (6, 2.0)]:
        res = ldpopt.optimal_channel(MutualInformation(num_inputs=m), eps, method="enumerate")
        prior = np.full(m, 1.0 / m)

        def mi(Q, prior=prior):
            out = prior @ Q
            with np.errstate(divide="ignore", invalid="ignore"):
                t = prior[:, None] * Q * np.log(Q / out[None, :])
            return float(np.nansum(t))

        sizes = {s: mi(ldpopt.subset_selection(m, eps, s).matrix) for s in range(1, m)}
        best = max(sizes, key=sizes.get)
        assert res.value == pytest.approx(sizes[best], rel=1e-8)
        assert sizes[mi_optimal_size(m, eps)] == pytest.approx(sizes[best], rel=1e-10)


def test_blackwell_and_canonical_form():
    rr = ldpopt.randomized_response(3, 1.0)
    binary = ldpopt.binary_mechanism([0.5, 0.3, 0.2], [0.2, 0.3, 0.5], 1.0)
    # post-processing: merging RR outputs gives a garbling of RR
    W = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    merged = ldpopt.Mechanism(rr.matrix @ W, 1.0)
    assert ldpopt.blackwell_dominates(rr, merged)
    assert not ldpopt.blackwell_dominates(merged, rr)
    # duplicated proportional outputs collapse in the canonical form
    dup = ldpopt.Mechanism(np.hstack([binary.matrix * 0.5, binary.matrix * 0.5]), 1.0)
    canon = ldpopt.canonical_form(dup)
    assert canon.num_outputs == 2
    assert ldpopt.blackwell_dominates(canon, dup) and ldpopt.blackwell_dominates(dup, canon)


def test_bad_inputs():
    with pytest.raises(ValueError, match="likelihood"):
        ldpopt.DecisionProblem(likelihood=[[0.5, 0.7], [0.5, 0.7]], loss=[[0, 1], [1, 0]])
    with pytest.raises(ValueError):
        ldpopt.DecisionProblem(likelihood=[[0.5, 0.5], [0.5, 0.5]], loss=[[0, np.nan], [1, 0]])
    prob = ldpopt.decision.problems.mary_testing(3, 0.5)
    with pytest.raises(ValueError, match="risk"):
        ldpopt.optimal_channel(prob, 1.0, risk="worst")
    with pytest.raises(ValueError, match="eps"):
        ldpopt.optimal_channel(prob, -1.0)


# ---------------------------------------------------------------------------------------------
# losses at extreme scales: the LPs are solved at unit scale and the value is scaled back
# ---------------------------------------------------------------------------------------------
#: measured: value vs scale * (unit-scale value) within 4e-15, optimality vs the independent LPs
#: within 7e-15 (7 problems x 3 eps x 6 scales x 3 methods x 2 risks)
SCALE_RTOL = 1e-12


def _scale_cases():
    # the reproducer: P(x | theta) for two hypotheses, columns sum to 1
    yield (
        np.array([[0.2, 0.5], [0.3, 0.3], [0.5, 0.2]]),
        np.array([[0.0, 1.0], [1.0, 0.0]]),
        np.array([0.7, 0.3]),
    )
    rng = np.random.default_rng(41)
    for _ in range(2):
        yield random_problem(rng, int(rng.integers(3, 6)), 3, int(rng.integers(2, 4)))


@pytest.mark.parametrize("scale", [1e-300, 1e-17, 1e17, 1e300])
@pytest.mark.parametrize("risk", ["bayes", "minimax"])
def test_losses_at_extreme_scales_give_the_scaled_optimum(scale, risk):
    from reference import minimax_dual_lp

    eps = 1.0
    for P, L, lam in _scale_cases():
        unit = ldpopt.DecisionProblem(P, L, lam)
        if risk == "bayes":
            ref = bayes_lp_all_channels(P, L, lam, eps, L.shape[1])
        else:
            ref = minimax_dual_lp(P, L, eps)[0]
        big = ldpopt.DecisionProblem(P, L * scale, lam)
        for method in ("auto", "enumerate", "colgen", "direct"):
            res = ldpopt.optimal_channel(big, eps, risk=risk, method=method)
            base = ldpopt.optimal_channel(unit, eps, risk=risk, method=method)
            assert res.status == 0 and math.isfinite(res.value), (method, res.message)
            assert abs(res.value - scale * base.value) <= SCALE_RTOL * scale * abs(base.value), method
            # the returned channel is optimal: its risk (evaluated on the unit-scale problem, from
            # the definition) equals the optimum of an LP that shares no code with the library
            direct = unit.bayes_risk(res.mechanism) if risk == "bayes" else unit.minimax_risk(res.mechanism)
            assert direct == pytest.approx(ref, rel=SCALE_RTOL), method
            assert res.value / scale == pytest.approx(ref, rel=SCALE_RTOL), method
            # the certificate is scaled back too
            cert = res.certificate
            assert cert.verified
            assert cert.bound == pytest.approx(scale * base.certificate.bound, rel=SCALE_RTOL)
            assert np.allclose(cert.dual, scale * base.certificate.dual, rtol=1e-9, atol=0)


def test_objective_with_extreme_linear_pieces_gives_the_scaled_optimum():
    from ldpopt.decision.objectives import RowAdditiveObjective

    B0 = np.array([[0.0, 1.0], [1.0, 0.0], [0.5, 0.4]])

    class Pieces(RowAdditiveObjective):
        sense = "min"
        num_inputs = 3

        def __init__(self, scale):
            self.B = B0 * scale
            self.name = f"pieces x {scale:g}"

        def rows(self, V):
            return (V @ self.B).min(axis=1)

        def linear_pieces(self):
            return self.B

    for method in ("enumerate", "colgen", "direct"):
        base = ldpopt.optimal_channel(Pieces(1.0), 1.0, method=method)
        for scale in (1e-300, 1e300):
            res = ldpopt.optimal_channel(Pieces(scale), 1.0, method=method)
            assert res.status == 0, res.message
            assert res.value == pytest.approx(scale * base.value, rel=SCALE_RTOL)
            assert res.certificate.verified


def test_lp_failure_names_its_cause(monkeypatch, tmp_path):
    import scipy.optimize
    from typer.testing import CliRunner

    from ldpopt.cli._common import app

    def failing(*args, **kwargs):
        return scipy.optimize.OptimizeResult(
            status=4, success=False, message="(HiGHS Status 4: Numerical error)", x=None, fun=None
        )

    monkeypatch.setattr(scipy.optimize, "linprog", failing)
    prob = ldpopt.DecisionProblem([[0.2, 0.5], [0.3, 0.3], [0.5, 0.2]], [[0, 1], [1e-12, 0]], [0.7, 0.3])
    res = ldpopt.optimal_channel(prob, 1.0, method="enumerate")
    assert res.status == 4 and not res.success and res.mechanism is None and math.isnan(res.value)
    assert res.message.startswith("enumerate: the LP solver failed")
    assert "numerical difficulties" in res.message and "ratio 1e+12" in res.message
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"likelihood": prob.likelihood.tolist(), "loss": [[0, 1], [1, 0]]}))
    out = CliRunner().invoke(app, ["decide", str(path), "--eps", "1", "--method", "direct"])
    text = " ".join(out.output.split())  # the console may wrap the line
    assert out.exit_code != 0
    assert "the LP solver failed" in text and "numerical difficulties" in text
