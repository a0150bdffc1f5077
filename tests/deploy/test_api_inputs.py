"""The deployment API on careless inputs: wrong types name the argument, ``normalize=`` where the
errors suggest it, and privatize of integers beyond int64."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ldpopt
from ldpopt.deploy.files import load_mechanism, save_mechanism
from ldpopt.deploy.testing import LikelihoodRatioTest, SequentialTest

P0, P1 = [0.5, 0.3, 0.2], [0.1, 0.3, 0.6]
C0, C1 = [5, 3, 2], [1, 3, 6]  # the same pair as counts


@pytest.mark.parametrize(
    "call",
    [
        lambda: ldpopt.sample_size("M", P0, P1),
        lambda: LikelihoodRatioTest("M", P0, P1),
        lambda: SequentialTest("M", P0, P1),
        lambda: ldpopt.audit("M"),
    ],
)
def test_wrong_mechanism_type_is_a_type_error_naming_it(call):
    with pytest.raises(TypeError, match="mech must be a Mechanism"):
        call()


def test_normalize_accepted_where_suggested(tmp_path):
    mech = ldpopt.optimal_mechanism(P0, P1, 1.0).mechanism
    with pytest.raises(ValueError, match="normalize=True"):
        ldpopt.sample_size(mech, C0, C1)
    # counts / total are the probabilities exactly here (5/10 = 0.5, ...), so the results are equal
    assert [float(Fraction(c, 10)) for c in C0] == P0
    assert ldpopt.sample_size(mech, C0, C1, normalize=True) == ldpopt.sample_size(mech, P0, P1)
    a = LikelihoodRatioTest(mech, C0, C1, normalize=True).decide_counts([3, 4])
    b = LikelihoodRatioTest(mech, P0, P1).decide_counts([3, 4])
    assert a == b
    s = SequentialTest(mech, C0, C1, normalize=True)
    assert (s.lower, s.upper) == (SequentialTest(mech, P0, P1).lower, SequentialTest(mech, P0, P1).upper)
    save_mechanism(mech, tmp_path / "m.json", p0=C0, p1=C1, normalize=True)
    assert load_mechanism(tmp_path / "m.json").p0.tolist() == P0
    with pytest.raises(TypeError, match="normalize must be True or False"):
        LikelihoodRatioTest(mech, P0, P1, normalize="yes")


@given(st.integers(min_value=-(10**40), max_value=10**40).filter(lambda v: not 0 <= v < 3))
def test_privatize_out_of_range_integers(v):
    mech = ldpopt.randomized_response(3, 1.0)
    with pytest.raises(ValueError, match=rf"index {v}, outside range\(3\)"):
        mech.privatize([v], rng=np.random.default_rng(0))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["inputs", "x"]), inner, max_size=2)
    ),
    max_leaves=10,
)


@given(
    st.dictionaries(
        st.sampled_from(["likelihood", "loss", "prior", "labels", "action_labels", "name", "extra"]),
        json_values,
        max_size=5,
    )
)
def test_decision_problem_from_hostile_json(tmp_path_factory, doc):
    import json

    from ldpopt.decision import DecisionProblem

    path = tmp_path_factory.mktemp("d") / "p.json"
    path.write_text(json.dumps(doc))
    try:
        DecisionProblem.from_json(path)
    except ValueError as exc:
        assert str(path) in str(exc)
