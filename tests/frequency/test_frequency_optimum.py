"""The exact optimum for frequency estimation: checked against the LP over all columns, brute force over
the polytope's vertices, subset selection in high precision, closed forms and block designs; the
certificate re-checked in mpmath against every subset."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import reference as ref
from ldpopt import randomized_response
from ldpopt.decision.polytope import polytope_vertices
from ldpopt.frequency import optimal_mechanism
from ldpopt.frequency.objectives import variance_uniform, worst_case

# the closed form is a handful of float operations (relative error < 1e-15); the channel-based
# evaluation of a k x k trace of an inverse has relative error ~ k * cond * 2^-52 < 1e-11 for k <= 12
REL = 1e-9
EPS_GRID = [0.1, 0.5, 1.0, 2.0, 4.0, 8.0]


@pytest.mark.numerics
@pytest.mark.parametrize("k", [2, 3, 5, 8, 12])
@pytest.mark.parametrize("eps", EPS_GRID)
def test_value_matches_every_subset_size_in_high_precision(k, eps):
    res = optimal_mechanism(k, eps)
    assert res.status == "optimal"
    assert res.value == pytest.approx(ref.frequency_optimum_mp(k, eps), rel=REL)
    assert res.lower_bound == pytest.approx(ref.frequency_lower_bound_mp(res.dual), rel=1e-13)
    assert abs(res.gap) <= REL * res.value
    # the channel it returns has that value, by the generic trace formula
    assert variance_uniform(res.mechanism) == pytest.approx(res.value, rel=REL)


@pytest.mark.parametrize("k", [2, 3, 4, 6, 9])
@pytest.mark.parametrize("eps", [0.1, 1.0, 8.0])
def test_certificate_is_dual_feasible_against_every_subset(k, eps):
    res = optimal_mechanism(k, eps)
    assert ref.frequency_dual_slack(eps, res.dual) >= -1e-12
    lp = optimal_mechanism(k, eps, method="lp")
    assert ref.frequency_dual_slack(eps, lp.dual) >= -1e-12
    assert lp.lower_bound <= res.value * (1 + 1e-12)


@pytest.mark.numerics
@pytest.mark.parametrize("k", [3, 4, 7, 10])
@pytest.mark.parametrize("eps", [0.1, 0.7, 3.0, 8.0])
def test_lp_over_all_columns_agrees(k, eps):
    lp = optimal_mechanism(k, eps, method="lp")
    sym = optimal_mechanism(k, eps)
    # the simplex returns a basic solution: exact to the rounding of a k x k solve (~1e-13 here),
    # HiGHS's 1e-7 tolerances only decide which basis is optimal
    assert lp.value == pytest.approx(sym.value, rel=1e-8)
    assert lp.status == "optimal"
    assert variance_uniform(lp.mechanism) == pytest.approx(lp.value, rel=1e-8)


def _cdd_vertex_channels(k, eps):
    """The polytope's vertices by cdd (ldpopt.decision, the [vertex] extra) as k x n channels."""
    rows, weights = polytope_vertices(k, eps)
    S = np.where(rows, math.exp(eps), 1.0)  # (n, k), the paper's rows S_y
    return [(w[w > 0][:, None] * S[w > 0]).T for w in weights]


@pytest.mark.parametrize(
    ("k", "eps", "vertices"), [(3, 0.3, "brute"), (4, 1.5, "brute"), (5, 1.0, "cdd"), (5, 4.0, "cdd")]
)
def test_brute_force_over_polytope_vertices(k, eps, vertices):
    """tr M - k is linear in the column weights, so its max over the polytope is at a vertex and gives
    the lower bound (k-1)^2 / max; every vertex is a channel whose value is at least the optimum."""
    res = optimal_mechanism(k, eps)
    vertices = ref.ldp_vertex_channels(k, eps) if vertices == "brute" else _cdd_vertex_channels(k, eps)
    traces = []
    for Q in vertices:
        w = Q.mean(axis=0)
        traces.append(float(np.trace((Q / w) @ Q.T)) - k)
        if np.linalg.matrix_rank(Q) < k:  # a degenerate vertex: no unbiased estimator, V = inf
            continue
        B = ref.least_norm_estimator_kkt(Q, np.full(k, 1 / k))
        assert ref.estimator_total_variance(Q, B, np.full(k, 1 / k)) >= res.value * (1 - 1e-9)
    assert (k - 1) ** 2 / max(traces) == pytest.approx(res.value, rel=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_random_ldp_channels_respect_the_lower_bound(seed):
    rng = np.random.default_rng(seed)
    k, m, eps = int(rng.integers(2, 7)), int(rng.integers(7, 20)), float(rng.uniform(0.2, 4))
    R = np.exp(rng.uniform(0, eps / 2, size=(k, m)))  # column ratios <= e^(eps/2), row sums within e^(eps/2)
    Q = R / R.sum(axis=1, keepdims=True)
    res = optimal_mechanism(k, eps)
    assert variance_uniform(Q) >= res.lower_bound * (1 - 1e-12)
    assert worst_case(Q) >= res.lower_bound * (1 - 1e-12)


@pytest.mark.parametrize("k", [3, 4, 6])
@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_subset_selection_and_worst_case(k, eps):
    res = optimal_mechanism(k, eps, objective="worst_case")
    s = res.sizes[0]
    assert variance_uniform(ref.subset_selection_channel(k, s, eps)) == pytest.approx(res.value, rel=REL)
    assert worst_case(res.mechanism) == pytest.approx(res.value, rel=REL)
    assert res.value == optimal_mechanism(k, eps).value


@pytest.mark.parametrize("k", [2, 5, 16])
@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0, 4.0])
def test_deployed_closed_forms_are_not_below_the_optimum(k, eps):
    res = optimal_mechanism(k, eps)
    assert ref.grr_variance_uniform_mp(k, eps) >= res.value * (1 - 1e-12)
    if k <= 5:
        oue = ref.symmetric_maximal_variance_mp(k, eps, ref.oue_size_probs(k, eps))
        assert oue >= res.value * (1 - 1e-12)
    # GRR is subset selection with s = 1: optimal exactly when s = 1 is the best size
    if res.sizes == (1,):
        assert ref.grr_variance_uniform_mp(k, eps) == pytest.approx(res.value, rel=REL)
        assert variance_uniform(randomized_response(k, eps)) == pytest.approx(res.value, rel=REL)


@pytest.mark.parametrize(
    ("k", "eps", "size"),
    [(7, 0.3, 3), (11, 0.18, 5), (13, 0.81, 4)],  # Fano plane, Paley (11, 5, 2), projective plane of order 3
)
def test_difference_sets_are_exactly_optimal_with_k_outputs(k, eps, size):
    full = optimal_mechanism(k, eps)
    assert full.sizes == (size,)
    res = optimal_mechanism(k, eps, max_outputs=k)
    assert res.status == "optimal"
    assert res.num_outputs == k
    assert len(res.base_blocks[0]) == size and res.design_group == "cyclic"
    assert ref.difference_set_multiplicity(k, res.base_blocks[0]) is not None
    assert res.value == pytest.approx(full.value, rel=REL)
    assert variance_uniform(res.mechanism) == pytest.approx(full.value, rel=REL)


def test_xor_difference_set_is_exactly_optimal_with_k_outputs():
    """k = 16: a (16, 6, 2) difference set exists in Z_2^4 (a Menon-Hadamard design), none in Z_16."""
    full = optimal_mechanism(16, 0.5)
    assert full.sizes == (6,)
    res = optimal_mechanism(16, 0.5, max_outputs=16)
    assert res.status == "optimal" and res.design_group == "xor"
    base = res.base_blocks[0]
    diffs = [a ^ b for a in base for b in base if a != b]
    assert sorted(set(diffs)) == list(range(1, 16)) and all(diffs.count(d) == 2 for d in range(1, 16))
    assert res.value == pytest.approx(full.value, rel=REL)
    assert variance_uniform(res.mechanism) == pytest.approx(full.value, rel=REL)
    assert worst_case(res.mechanism) == pytest.approx(full.value, rel=REL)


def test_max_outputs_without_a_design_has_a_certified_gap():
    res = optimal_mechanism(7, 1.0, max_outputs=7)
    assert res.status == "feasible"
    assert res.gap > 0
    assert variance_uniform(res.mechanism) == pytest.approx(res.value, rel=REL)
    assert res.lower_bound == pytest.approx(optimal_mechanism(7, 1.0).value, rel=1e-12)
    # and it is no worse than GRR, the obvious 7-output channel
    assert res.value <= variance_uniform(randomized_response(7, 1.0)) * (1 + 1e-12)
    bad = optimal_mechanism(5, 1.0, max_outputs=4)
    assert bad.status == "infeasible" and bad.value == math.inf and bad.mechanism is None
    enough = optimal_mechanism(5, 1.0, max_outputs=100)
    assert enough.status == "optimal" and enough.value == optimal_mechanism(5, 1.0).value


@pytest.mark.numerics
@pytest.mark.parametrize("eps", [0.1, 1.0, 8.0])
def test_large_k_is_exact_and_compact(eps):
    k = 50
    res = optimal_mechanism(k, eps)
    assert res.value == pytest.approx(ref.frequency_optimum_mp(k, eps), rel=1e-12)
    assert res.gap <= 1e-12 * res.value
    # the dual point is constant: feasibility depends on |S| only, one subset per size suffices
    assert np.all(res.dual == res.dual[0])
    assert ref.frequency_dual_slack(eps, res.dual, [tuple(range(s)) for s in range(1, k)]) >= -1e-12
    s = res.sizes[0]
    assert res.num_outputs == math.comb(k, s)
    assert res.log10_num_outputs == pytest.approx(math.log10(math.comb(k, s)), rel=1e-12)
    if k * math.comb(k, s) > 2**22:
        assert res.mechanism is None
    huge = optimal_mechanism(10**5, eps)
    assert huge.num_outputs is None and math.isfinite(huge.value) and huge.value > 0


@given(k=st.integers(2, 40), eps=st.floats(0.1, 8.0))
def test_best_size_is_the_best_of_all_sizes(k, eps):
    res = optimal_mechanism(k, eps)
    assert res.value == pytest.approx(ref.frequency_optimum_mp(k, eps), rel=1e-12)
    assert res.lower_bound <= res.value * (1 + 1e-14)


def test_inputs_are_validated():
    for bad, exc in [
        (1, ValueError),
        (1.5, TypeError),
        (True, TypeError),
        ("4", TypeError),
        (2**21, ValueError),
    ]:
        with pytest.raises(exc, match="k"):
            optimal_mechanism(bad, 1.0)
    for eps in (0, -1, math.inf, math.nan):
        with pytest.raises(ValueError, match="eps"):
            optimal_mechanism(4, eps)
    with pytest.raises(ValueError, match="objective"):
        optimal_mechanism(4, 1.0, objective="l1")
    with pytest.raises(ValueError, match="method"):
        optimal_mechanism(4, 1.0, method="simplex")
    with pytest.raises(ValueError, match="max_outputs"):
        optimal_mechanism(4, 1.0, max_outputs=0)
    with pytest.raises(ValueError, match="max_outputs"):
        optimal_mechanism(4, 1.0, max_outputs=10, method="lp")
    with pytest.raises(ValueError, match="k <= 18"):
        optimal_mechanism(19, 1.0, method="lp")
    assert optimal_mechanism(np.int64(4), np.float32(1.0)).k == 4


def test_a_tie_of_two_sizes_is_reported():
    """k = 5: gamma_1 = gamma_2 when 2 (2 + 3c) = sqrt(6) (1 + 4c), c = (4 - sqrt 6) / (4 sqrt 6 - 6)."""
    eps = -math.log((4 - math.sqrt(6)) / (4 * math.sqrt(6) - 6))
    res = optimal_mechanism(5, eps)
    assert "sizes 1 and 2 tie" in res.message
    for s in (1, 2):
        assert variance_uniform(ref.subset_selection_channel(5, s, eps)) == pytest.approx(res.value, rel=REL)


def test_max_outputs_at_large_k_stays_bounded():
    """k = 10^4 with 10^5 outputs: C(k, s*) is astronomically larger, GRR (k outputs) fits; the design
    search samples seeded random blocks within a fixed amount of work and the answer keeps its
    certified bound."""
    res = optimal_mechanism(10**4, 1.0, max_outputs=10**5)
    assert res.status == "feasible"
    assert math.isfinite(res.value) and res.gap > 0
    assert res.lower_bound == pytest.approx(optimal_mechanism(10**4, 1.0).value, rel=1e-12)
    assert res.value <= ref.grr_variance_uniform_mp(10**4, 1.0) * (1 + 1e-9)
    assert res.num_outputs <= 10**5


def test_unions_of_orbits_use_the_output_budget():
    one = optimal_mechanism(16, 1.0, max_outputs=16)
    res = optimal_mechanism(16, 1.0, max_outputs=160)
    assert res.status == "feasible" and res.num_outputs <= 160
    assert len(res.base_blocks) == res.num_outputs // 16 > 1
    assert res.lower_bound <= res.value < one.value
    assert res.mechanism.matrix.shape == (16, res.num_outputs)
    # the union's value from its own channel, by the generic trace formula and by the KKT reference
    assert variance_uniform(res.mechanism) == pytest.approx(res.value, rel=REL)
    Q = res.mechanism.matrix
    u = np.full(16, 1 / 16)
    kkt = ref.estimator_total_variance(Q, ref.least_norm_estimator_kkt(Q, u), u)
    assert kkt == pytest.approx(res.value, rel=1e-8)


@pytest.mark.parametrize("bad", [2.0, 6.0, True])
def test_max_outputs_must_be_an_integer_like_k(bad):
    # max_outputs=2.0 was accepted while k=5.0 was refused
    with pytest.raises(TypeError, match="max_outputs must be an integer"):
        optimal_mechanism(5, 1.0, max_outputs=bad)


def test_max_outputs_accepts_numpy_integers():
    a = optimal_mechanism(5, 1.0, max_outputs=np.int64(10))
    b = optimal_mechanism(5, 1.0, max_outputs=10)
    assert a.value == b.value
