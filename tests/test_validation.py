"""One rule for numbers at every public entry point (``ldpopt._validation``).

numpy scalars (``np.float32``, ``np.int64``) are accepted wherever Python numbers are; booleans and
strings are refused with an error naming the argument, and so are boolean/string entries and
masked arrays where a distribution or a matrix is expected.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import ldpopt
from ldpopt._validation import (
    as_real_array,
    check_counts,
    check_real,
    coerce_distribution,
    is_integer,
    is_real,
    short_repr,
)
from ldpopt.decision import problems as examples
from ldpopt.decision.problem import DecisionProblem
from ldpopt.robust import uncertainty as unc

P = [0.5, 0.3, 0.2]
Q = [0.2, 0.3, 0.5]


def _rr():
    return ldpopt.randomized_response(3, 1.0)


def _lrt():
    return ldpopt.LikelihoodRatioTest(_rr(), P, Q)


def _problem():
    return examples.mary_testing(3, 0.5)


# (argument name in the error, kind, a valid value, call with the value in the argument's place)
ENTRIES = [
    ("eps", "real", 1.0, lambda v: ldpopt.optimal_mechanism(P, Q, v)),
    ("max_outputs", "int", 2, lambda v: ldpopt.optimal_mechanism(P, Q, 1.0, max_outputs=v)),
    ("eps", "real", 1.0, lambda v: ldpopt.binary_mechanism(P, Q, v)),
    ("k", "int", 3, lambda v: ldpopt.randomized_response(v, 1.0)),
    ("eps", "real", 1.0, lambda v: ldpopt.randomized_response(3, v)),
    ("k", "int", 3, lambda v: ldpopt.spr_mechanism([[0, 1], [2]], v, 1.0)),
    ("eps", "real", 1.0, lambda v: ldpopt.spr_mechanism([[0, 1], [2]], 3, v)),
    ("eps", "real", 1.0, lambda v: ldpopt.egamma_mechanism(P, Q, v, 1.5)),
    ("gamma", "real", 2.0, lambda v: ldpopt.egamma_mechanism(P, Q, 1.0, v)),
    ("eps", "real", 1.0, lambda v: ldpopt.lr_distance_mechanism(P, Q, v, 2.0)),
    ("r", "real", 2.0, lambda v: ldpopt.lr_distance_mechanism(P, Q, 1.0, v)),
    ("eps", "real", 1.0, lambda v: ldpopt.kov_lp(P, Q, v)),
    ("gamma", "real", 2.0, lambda v: ldpopt.egamma(v)),
    ("alpha", "real", 2.0, lambda v: ldpopt.renyi(v)),
    ("eps_grid", "real", 1.0, lambda v: ldpopt.sweep([P], [Q], [v])),
    ("max_outputs", "int", 2, lambda v: ldpopt.sweep([P], [Q], [1.0], max_outputs=v)),
    ("eps", "real", 1.0, lambda v: ldpopt.joint_range(P, Q, v)),
    ("max_outputs", "int", 2, lambda v: ldpopt.joint_range(P, Q, 1.0, max_outputs=v)),
    ("eps", "real", 1.0, lambda v: ldpopt.Mechanism(_rr().matrix, v)),
    ("eps", "real", 1.0, lambda v: _rr().is_ldp(v)),
    ("rtol", "real", 1e-9, lambda v: _rr().is_ldp(1.0, rtol=v)),
    ("eps", "real", 1.0, lambda v: ldpopt.is_maximal(_rr(), v)),
    ("rtol", "real", 1e-9, lambda v: ldpopt.is_maximal(_rr(), rtol=v)),
    ("rtol", "real", 1e-9, lambda v: ldpopt.canonical_form(_rr(), rtol=v)),
    ("tol", "real", 1e-9, lambda v: ldpopt.blackwell_dominates(_rr(), _rr(), tol=v)),
    ("eps", "real", 1.0, lambda v: ldpopt.optimal_channel(_problem(), v)),
    ("max_iter", "int", 100, lambda v: ldpopt.optimal_channel(_problem(), 1.0, method="colgen", max_iter=v)),
    (
        "time_limit",
        "real",
        10.0,
        lambda v: ldpopt.optimal_channel(_problem(), 1.0, method="colgen", time_limit=v),
    ),
    ("m", "int", 3, lambda v: ldpopt.subset_selection(v, 1.0, 1)),
    ("eps", "real", 1.0, lambda v: ldpopt.subset_selection(3, v, 1)),
    ("size", "int", 1, lambda v: ldpopt.subset_selection(3, 1.0, v)),
    ("m", "int", 3, lambda v: ldpopt.PermutationGroup([[1, 2, 0]], m=v)),
    ("m", "int", 3, lambda v: examples.mary_testing(v, 0.5)),
    ("gamma", "real", 0.5, lambda v: examples.mary_testing(3, v)),
    ("m", "int", 5, lambda v: examples.circular_estimation(v, 0.5)),
    ("gamma", "real", 0.5, lambda v: examples.circular_estimation(5, v)),
    ("alpha", "real", 0.05, lambda v: ldpopt.LikelihoodRatioTest(_rr(), P, Q, v)),
    ("exact_max_n", "int", 100, lambda v: ldpopt.LikelihoodRatioTest(_rr(), P, Q, exact_max_n=v)),
    ("lattice_size", "int", 64, lambda v: ldpopt.LikelihoodRatioTest(_rr(), P, Q, lattice_size=v)),
    ("n", "int", 20, lambda v: _lrt().design(v)),
    ("prior1", "real", 0.3, lambda v: _lrt().bayes_decide_counts([1, 2, 3], prior1=v)),
    ("cost_false_alarm", "real", 2.0, lambda v: _lrt().bayes_decide_counts([1, 2, 3], cost_false_alarm=v)),
    ("cost_miss", "real", 2.0, lambda v: _lrt().bayes_decide_counts([1, 2, 3], cost_miss=v)),
    ("alpha", "real", 0.05, lambda v: ldpopt.SequentialTest(_rr(), P, Q, alpha=v)),
    ("beta", "real", 0.05, lambda v: ldpopt.SequentialTest(_rr(), P, Q, beta=v)),
    ("max_n", "int", 50, lambda v: ldpopt.SequentialTest(_rr(), P, Q, max_n=v)),
    ("alpha", "real", 0.05, lambda v: ldpopt.sample_size(_rr(), P, Q, alpha=v)),
    ("beta", "real", 0.05, lambda v: ldpopt.sample_size(_rr(), P, Q, beta=v)),
    ("n", "int", 1000, lambda v: ldpopt.audit(_rr(), v, rng=np.random.default_rng(0))),
    ("alpha", "real", 0.05, lambda v: ldpopt.audit(_rr(), 1000, alpha=v, rng=np.random.default_rng(0))),
    ("n_select", "int", 500, lambda v: ldpopt.audit(_rr(), 1000, n_select=v, rng=np.random.default_rng(0))),
    ("candidates", "int", 3, lambda v: ldpopt.audit(_rr(), 1000, candidates=v, rng=np.random.default_rng(0))),
]
IDS = [f"{i}-{name}" for i, (name, *_) in enumerate(ENTRIES)]


def _numpy_values(kind, good):
    out = [np.float32(good), np.float64(good)] if kind == "real" else []
    if float(good).is_integer():
        out.append(np.int64(good))
    return out


@pytest.mark.parametrize("name, kind, good, call", ENTRIES, ids=IDS)
def test_numpy_scalars_are_accepted_like_python_numbers(name, kind, good, call):
    call(good)
    for value in _numpy_values(kind, good):
        call(value)


@pytest.mark.parametrize("bad", [True, np.True_, "1", b"1"], ids=["bool", "np.bool_", "str", "bytes"])
@pytest.mark.parametrize("name, kind, good, call", ENTRIES, ids=IDS)
def test_booleans_and_strings_are_refused_naming_the_argument(name, kind, good, call, bad):
    with pytest.raises((TypeError, ValueError), match=name):
        call(bad)


# ---------------------------------------------------------------------------------------------
# distributions and matrices
# ---------------------------------------------------------------------------------------------
BAD_ARRAYS = {
    "bools": [True, False],
    "numpy bools": np.array([True, False]),
    "a bool entry": [0.5, True],
    "a numpy bool entry": [0.5, np.True_],
    "numeric strings": ["0.5", "0.5"],
    "a string array": np.array(["0.5", "0.5"]),
    "a bytes entry": [b"0.5", 0.5],
    "an object array with a string": np.array([0.5, "0.5"], dtype=object),
    "complex numbers": np.array([0.5 + 0j, 0.5]),
    "a dict of bools": {"a": True, "b": False},
}


@pytest.mark.parametrize("value", list(BAD_ARRAYS.values()), ids=list(BAD_ARRAYS))
def test_distributions_refuse_booleans_strings_and_complex(value):
    with pytest.raises(TypeError, match="p0 must be a sequence of real numbers"):
        ldpopt.optimal_mechanism(value, [0.5, 0.5], 1)
    with pytest.raises(TypeError, match="p1 must be a sequence of real numbers"):
        ldpopt.binary_mechanism([0.5, 0.5], value, 1)
    with pytest.raises(TypeError, match="prior must be a sequence of real numbers"):
        DecisionProblem([[0.5, 0.2], [0.5, 0.8]], [[0, 1], [1, 0]], value)


def test_masked_arrays_are_refused():
    masked = np.ma.masked_array([0.5, 0.5, 0.0], mask=[False, False, True])
    with pytest.raises(TypeError, match=r"p0 must not be a masked array.*1 masked entries"):
        ldpopt.optimal_mechanism(masked, [0.3, 0.3, 0.4], 1)
    with pytest.raises(TypeError, match="p1 must not be a masked array"):
        ldpopt.LikelihoodRatioTest(_rr(), P, np.ma.masked_array(Q))
    with pytest.raises(TypeError, match="matrix must not be a masked array"):
        ldpopt.Mechanism(np.ma.masked_array(_rr().matrix), 1.0)
    with pytest.raises(TypeError, match="likelihood must not be a masked array"):
        DecisionProblem(np.ma.masked_array([[0.5, 0.2], [0.5, 0.8]]), [[0, 1], [1, 0]])


def test_matrices_refuse_booleans_and_strings():
    with pytest.raises(TypeError, match=r"matrix must be a 2-D array of real numbers, got the entry True"):
        ldpopt.Mechanism([[True, False], [False, True]], math.inf)
    with pytest.raises(TypeError, match="loss must be a 2-D array of real numbers, got the entry '1'"):
        DecisionProblem([[0.5, 0.2], [0.5, 0.8]], [[0, "1"], [1, 0]])
    with pytest.raises(TypeError, match="likelihood must be a 2-D array of real numbers"):
        DecisionProblem(np.array([[True, False], [False, True]]), [[0, 1], [1, 0]])


def test_numeric_arrays_of_any_numpy_type_are_accepted():
    for dtype in (np.float32, np.float64, np.int64, np.uint8):
        arr, labels = coerce_distribution(np.array([1, 3], dtype=dtype), "p")
        assert arr.dtype == float and labels is None
    arr, _ = coerce_distribution([np.float32(0.25), np.int64(1), 0.5, 2], "p")
    assert arr.tolist() == [0.25, 1.0, 0.5, 2.0]
    assert as_real_array([[1, 2], (3, np.float32(4))], "x").shape == (2, 2)
    res = ldpopt.optimal_mechanism(np.array([0.5, 0.25, 0.25], dtype=np.float32), Q, 1.0)
    assert res.value > 0


def test_the_number_predicates():
    for good in (1, 1.5, np.float32(0.5), np.float16(1), np.int64(3), np.uint8(2), np.longdouble(2)):
        assert is_real(good) and check_real(good, "x") == float(good)
    for bad in (True, np.True_, "1", b"1", 1j, np.complex64(1), None, [1.0], np.array(1.0)):
        assert not is_real(bad)
        with pytest.raises(TypeError, match="x must be a real number"):
            check_real(bad, "x")
    assert is_integer(3) and is_integer(np.int64(3)) and is_integer(np.uint8(3))
    assert not any(is_integer(v) for v in (True, np.True_, 3.0, np.float32(3), "3"))


def test_normalize_must_be_a_flag():
    with pytest.raises(TypeError, match="normalize must be True or False, got normalize='x'"):
        ldpopt.optimal_mechanism([0.5, 0.5], [0.2, 0.8], 1.0, normalize="x")


# ---------------------------------------------------------------------------------------------
# counts: one check behind every function that takes a histogram
# ---------------------------------------------------------------------------------------------
def test_check_counts_accepts_whole_numbers_of_any_numeric_type():
    for value in ([3, 0, 2], (3, 0, 2), np.array([3, 0, 2], dtype=np.uint8), [3.0, 0.0, np.float32(2)]):
        out = check_counts(value, "c")
        assert out.dtype == np.int64 and out.tolist() == [3, 0, 2]
    # integers stay exact beyond 2**53 (a float would round 2**60 + 1)
    assert check_counts(np.array([2**60 + 1, 1]), "c").tolist() == [2**60 + 1, 1]
    assert check_counts([0, 0], "c", observed=False).tolist() == [0, 0]
    assert check_counts([1, 2], "c", 2).tolist() == [1, 2]


BAD_COUNTS = [
    ([True, 2], TypeError, r"c must be a sequence of counts, got the entry True"),
    (["1", "2"], TypeError, r"c must be a sequence of counts, got the entry '1'"),
    ([], ValueError, r"c must be a non-empty 1-D sequence of counts, got c=\[\]"),
    ([[1, 2]], ValueError, r"c must be a non-empty 1-D sequence of counts"),
    (5, ValueError, r"c must be a non-empty 1-D sequence of counts, got c=5"),
    ([1, -2], ValueError, r"c must be non-negative integers, got c=\[1, -2\]"),
    ([1, 2.5], ValueError, r"c must be non-negative integers"),
    ([1, math.inf], ValueError, r"c must be non-negative integers"),
    ([1, math.nan], ValueError, r"c must be non-negative integers"),
    ([0, 0], ValueError, r"c must contain at least one observation, got c=\[0, 0\]"),
    ([2**62, 2**62], ValueError, r"c must total less than 2\*\*63 observations"),
    (np.array([2**63, 0], dtype=np.uint64), ValueError, r"c must total less than 2\*\*63"),
    ([1e19, 0.0], ValueError, r"c must total less than 2\*\*63"),
]


@pytest.mark.parametrize("value, error, message", BAD_COUNTS, ids=[m[:40] for *_, m in BAD_COUNTS])
def test_check_counts_refusals(value, error, message):
    with pytest.raises(error, match=message):
        check_counts(value, "c")


def test_check_counts_size_names_what_the_entries_are():
    with pytest.raises(ValueError, match=r"c must have one entry per output \(3\), got 2: c=\[1, 2\]"):
        check_counts([1, 2], "c", 3, what="output")
    with pytest.raises(ValueError, match=r"one entry per category \(3\)"):
        check_counts([1, 2], "c", 3)


#: bad histograms for the 3-output mechanism of _rr() (the message as check_counts gives it for "c")
BAD_HISTOGRAMS = [
    ([True, 2, 1], TypeError, r"c must be a sequence of counts, got the entry True"),
    (["1", "2", "3"], TypeError, r"c must be a sequence of counts, got the entry '1'"),
    ([[1, 2, 3]], ValueError, r"c must be a non-empty 1-D sequence of counts"),
    ([1, -2, 0], ValueError, r"c must be non-negative integers, got c=\[1, -2, 0\]"),
    ([1, 2.5, 0], ValueError, r"c must be non-negative integers"),
    ([1, math.nan, 0], ValueError, r"c must be non-negative integers"),
    ([2**62, 2**62, 0], ValueError, r"c must total less than 2\*\*63 observations"),
]


@pytest.mark.parametrize(
    "name, call",
    [
        ("counts", lambda c: ldpopt.frequencies(_rr(), counts=c)),
        ("counts", lambda c: ldpopt.mixture_proportion(_rr(), p0=P, p1=Q, counts=c)),
        ("counts", lambda c: _lrt().decide_counts(c)),
        ("counts", lambda c: _lrt().bayes_decide_counts(c)),
        ("counts1", lambda c: unc.from_counts([1, 1, 1], c)),
    ],
    ids=["frequencies", "mixture_proportion", "decide_counts", "bayes_decide_counts", "from_counts"],
)
def test_every_histogram_argument_is_checked_by_check_counts(name, call):
    """The same refusals, with the same messages, wherever counts are taken."""
    for value, error, message in BAD_HISTOGRAMS:
        with pytest.raises(error, match=message.replace("c must", f"{name} must").replace("c=", f"{name}=")):
            call(value)
    if name == "counts":
        with pytest.raises(ValueError, match=r"counts must have one entry per output \(3\), got 2"):
            call([1, 2])
    call([2.0, 1.0, 3.0])  # whole floats are counts everywhere (the test API used to refuse them)


def test_no_reports_is_an_empty_histogram_only_for_the_bayes_decision():
    assert _lrt().bayes_decide_counts([0, 0, 0]).n == 0  # the prior's decision
    with pytest.raises(ValueError, match="reports must not be empty"):
        _lrt().decide_counts([0, 0, 0])


def test_short_repr_cuts_long_values_to_80_characters():
    assert short_repr([1, 2]) == "[1, 2]"
    long = short_repr(list(range(100)))
    assert len(long) == 80 and long.endswith("...") and long.startswith("[0, 1, 2")
    with pytest.raises(TypeError, match=r"got uncertainty=\[0, 1, 2.*\.\.\.$"):
        unc.check_uncertainty(list(range(100)))
