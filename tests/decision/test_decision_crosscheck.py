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
from _errmodel import (
    R_FN,
    U,
    cert_err,
    channel_err,
    channel_lp_ref_err,
    circular_err,
    lp_err,
    mi_err,
    minimax_dual_lp_err,
    minimax_risk_err,
    pricing_err,
    within,
)
from _valuebounds import dp_value_bound, kov_bound, kov_mu_max
from ldpopt.decision import lp, problems
from ldpopt.decision.objectives import FDivergenceObjective, MutualInformation

#: the numerics tests: CI also runs them on numpy's AVX2 and baseline loops (.ci/npy_disable.py)
pytestmark = pytest.mark.numerics


def direct_err(m, T, cmax):
    """bayes_risk_direct's rounding: P^T Q (m terms), lam *, L^T @ (T terms), the min and the sum
    over outputs: (m + T + 3) u cmax (the joint masses sum to 1)."""
    return (m + T + 3) * U * cmax


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
    cmax = float(np.abs(L).max())
    ref_err = channel_lp_ref_err(m, A, eps, cmax)  # the reference LP at HiGHS's default tolerance
    for method in ("enumerate", "colgen"):
        res = ldpopt.optimal_channel(prob, eps, risk="bayes", method=method)
        assert within("Bayes LP vs LP over all channels", res.value, ref, lp_err(res, m, eps, cmax) + ref_err)
        Q = res.mechanism.matrix
        assert res.mechanism.is_ldp(eps)
        assert ldpopt.is_maximal(res.mechanism)
        # the same channel (its weights' rows normalised) evaluated from the definition
        bound = channel_err(res, m, eps, cmax, m + T + 4) + direct_err(m, T, cmax)
        assert within(
            "Bayes risk of the channel from the definition", bayes_risk_direct(Q, P, L, lam), res.value, bound
        )


def test_minimax_methods_agree_and_bound_bayes():
    rng = np.random.default_rng(11)
    for _ in range(4):
        P, L, lam = random_problem(rng, 4, 3, 3)
        prob = ldpopt.DecisionProblem(likelihood=P, loss=L, prior=lam)
        eps = 1.0
        res = {
            meth: ldpopt.optimal_channel(prob, eps, risk="minimax", method=meth)
            for meth in ("enumerate", "colgen")
        }
        vals = {meth: r.value for meth, r in res.items()}
        cmax = float(np.abs(L).max())
        errs = {meth: lp_err(r, 4, eps, cmax, "minimax") for meth, r in res.items()}
        assert within("minimax: enumerate vs colgen", vals["enumerate"], vals["colgen"], sum(errs.values()))
        # minimax risk >= Bayes risk for every prior (exactly; the values within their lp_err)
        bayes = ldpopt.optimal_channel(prob, eps, risk="bayes")
        assert vals["enumerate"] >= bayes.value - errs["enumerate"] - lp_err(bayes, 4, eps, cmax)


def test_fdivergence_objective_equals_spr_and_kov():
    rng = np.random.default_rng(5)
    for _ in range(8):
        k = int(rng.integers(2, 7))
        p, q = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
        eps = float(rng.uniform(0.2, 4))
        for div in ("kl", "tv", "hellinger"):
            res = ldpopt.optimal_channel(FDivergenceObjective(p, q, div), eps)
            spr = ldpopt.optimal_mechanism(p, q, eps, div, method="dp").value
            # the LP's costs are the KOV scores (cmax = their largest magnitude); the readable DP within
            # dp_value_bound, the KOV LP within kov_bound
            err = lp_err(res, k, eps, kov_mu_max(p, q, eps, div))
            assert within(
                "f-divergence objective vs SPR", res.value, spr, err + dp_value_bound(p, q, eps, div)
            )
            kov = ldpopt.kov_lp(p, q, eps, div).value
            assert within("f-divergence objective vs KOV LP", res.value, kov, err + kov_bound(p, q, eps, div))


def test_mary_testing_symmetric_closed_form_and_equalizer():
    for m, gamma, eps in [(4, 0.5, 1.0), (5, 0.8, 2.0), (6, 0.3, 0.5)]:
        prob = problems.mary_testing(m, gamma)
        b_res = ldpopt.optimal_channel(prob, eps, risk="bayes", method="enumerate")
        mm_res = ldpopt.optimal_channel(prob, eps, risk="minimax", method="enumerate")
        bayes, minimax = b_res.value, mm_res.value
        b_err, mm_err = lp_err(b_res, m, eps, 1.0), lp_err(mm_res, m, eps, 1.0, "minimax")  # loss 0/1
        assert within("m-ary testing: minimax = Bayes", minimax, bayes, b_err + mm_err)
        # independent: best subset-selection channel, risk from the definition (its entries (R_FN + 3) u
        # relative: tests/test_mechanism.py; the loss is in [0, 1])
        P, L = prob.likelihood, prob.loss
        lam = np.full(m, 1.0 / m)
        best = min(
            bayes_risk_direct(ldpopt.subset_selection(m, eps, s).matrix, P, L, lam) for s in range(1, m)
        )
        bound = b_err + direct_err(m, m, 1.0) + (R_FN + 3) * U
        assert within("m-ary testing: LP vs best subset selection", bayes, best, bound)


def test_circular_estimation_matches_closed_form():
    for m, gamma, eps in [(5, 0.7, 1.0), (6, 0.5, 2.0), (8, 0.9, 0.7)]:
        obj = problems.circular_estimation(m, gamma)
        res = ldpopt.optimal_channel(obj, eps)
        ks = np.arange(1, m)
        E = math.exp(eps)
        cf = 1 - gamma * (E - 1) * np.sin(np.pi * ks / m) / (2 * (ks * E + m - ks) * np.sin(np.pi / m))
        # the objective's costs phi(v) = (sum v - gamma |Z| / 2) / m are at most 1 in magnitude
        bound = lp_err(res, m, eps, 1.0) + circular_err(m, gamma, eps)
        assert within("circular estimation: LP vs closed form", res.value, float(cf.min()), bound)
        # the library's c0 form and this E form, each within circular_err
        assert within(
            "circular closed forms", obj.closed_form(eps), float(cf.min()), 2 * circular_err(m, gamma, eps)
        )


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

        mats = {s: ldpopt.subset_selection(m, eps, s).matrix for s in range(1, m)}
        sizes = {s: mi(mat) for s, mat in mats.items()}
        best = max(sizes, key=sizes.get)
        # the LP (costs: MI contributions, at most eps in magnitude) against the textbook MI of the
        # optimal subset selection (mi_err, its entries (R_FN + 3) u relative)
        err = mi_err(mats[best], prior, (R_FN + 3) * U)
        assert within(
            "MI: LP vs best subset selection", res.value, sizes[best], lp_err(res, m, eps, eps) + err
        )
        # the predicted size attains the maximum: the same function of two matrices (equal bits when
        # it is the same size, else a tie within the two evaluations' errors)
        k = mi_optimal_size(m, eps)
        err = mi_err(mats[k], prior, (R_FN + 3) * U) + mi_err(mats[best], prior, (R_FN + 3) * U)
        assert within("MI: predicted subset size", sizes[k], sizes[best], err)


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
    prob = problems.mary_testing(3, 0.5)
    with pytest.raises(ValueError, match="risk"):
        ldpopt.optimal_channel(prob, 1.0, risk="worst")
    with pytest.raises(ValueError, match="eps"):
        ldpopt.optimal_channel(prob, -1.0)


# ---------------------------------------------------------------------------------------------
# losses at extreme scales: the LPs are solved at unit scale and the value is scaled back
# ---------------------------------------------------------------------------------------------
# The library divides the loss by a power of two (exact), so L * scale (rounded: u relative, L >= 0
# here) is solved as a unit-scale LP whose data differ from the unit problem's by u relative: its
# exact optimum is within u |v| of scale times the unit one (the optimum is monotone and 1-homogeneous
# in a nonnegative loss); each solve within its lp_err (tests/_errmodel.py).


def scaled_err(res, base, m, eps, scale, cmax, risk):
    """|res.value - scale * base.value| for the problems L * scale and L."""
    return (
        lp_err(res, m, eps, scale * cmax, risk)
        + scale * lp_err(base, m, eps, cmax, risk)
        + 3 * U * abs(res.value)
    )


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
        m, T = P.shape
        cmax = float(np.abs(L).max())
        # the reference LP at HiGHS's default tolerance
        ref_err = (
            channel_lp_ref_err(m, L.shape[1], eps, cmax)
            if risk == "bayes"
            else minimax_dual_lp_err(m, eps, cmax)
        )
        for method in ("auto", "enumerate", "colgen", "direct"):
            res = ldpopt.optimal_channel(big, eps, risk=risk, method=method)
            base = ldpopt.optimal_channel(unit, eps, risk=risk, method=method)
            assert res.status == 0 and math.isfinite(res.value), (method, res.message)
            bound = scaled_err(res, base, m, eps, scale, cmax, risk)
            assert within("extreme loss scale: value", res.value, scale * base.value, bound), method
            # the returned channel is optimal: its risk (evaluated on the unit-scale problem, from
            # the definition) equals the optimum of an LP that shares no code with the library; the
            # channel is optimal for L (1 + u) within lp_err / scale, its risk under L within 2u more,
            # evaluated through its normalised rows (channel_err; minimax_risk is an LP at HIGHS_TOL)
            direct = unit.bayes_risk(res.mechanism) if risk == "bayes" else unit.minimax_risk(res.mechanism)
            own = lp_err(res, m, eps, scale * cmax, risk) / scale + 3 * U * abs(direct)
            d_err = channel_err(res, m, eps, cmax, m + T + 4)
            if risk == "minimax":
                d_err += minimax_risk_err(res.mechanism.num_outputs, cmax)
            assert within("extreme loss scale: optimality", direct, ref, own + d_err + ref_err), method
            assert within("extreme loss scale: value vs reference", res.value / scale, ref, own + ref_err), (
                method
            )
            # the certificate is scaled back too: its bound within cert_err of its value, and its dual
            # divided by scale certifies the unit problem (reduced costs scale with the loss, up to the
            # loss's rounding and the division: pricing_err on |d| and 2u |d|)
            cert = res.certificate
            assert cert.verified
            bound = cert_err(res, m, eps, scale * cmax, risk) + scale * cert_err(base, m, eps, cmax, risk)
            bound += scaled_err(res, base, m, eps, scale, cmax, risk)
            assert within(
                "extreme loss scale: certificate bound", cert.bound, scale * base.certificate.bound, bound
            )
            c0 = math.exp(-eps)
            u_back = cert.dual / scale
            Beff = unit.bayes_matrix() if risk == "bayes" else lp.effective_B(P, L, cert.prior)
            rc = lp.min_reduced_cost(Beff, u_back, c0)
            d = (Beff - u_back[:, None]).ravel()
            assert rc >= min(0.0, cert.min_reduced_cost) / scale - pricing_err(d, c0) - 2 * U * float(
                np.abs(d).sum()
            )


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
            # the pieces' costs are at most 1 (B0's column sums... the extreme rows' costs <= max|B0| = 1)
            bound = scaled_err(res, base, 3, 1.0, scale, 1.0, "bayes")
            assert within("extreme piece scale: value", res.value, scale * base.value, bound)
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
