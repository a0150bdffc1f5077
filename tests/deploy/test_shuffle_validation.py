"""Shuffle accounting: bad or out-of-range input is refused with an error naming the argument."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ldpopt
from ldpopt.deploy.shuffle import (
    N_MAX_NUMERICAL,
    TAIL_FRACTION,
    central_epsilon,
    channel_level,
    clone_delta,
    closed_form_validity,
    local_epsilon_for,
    tight_delta,
)

HUGE_N = 10**300


def test_closed_form_validity_is_finite_for_huge_n():
    # log(n) - log(16 log(4/delta)) computed directly (n / ... would overflow a float)
    expected = 300 * math.log(10) - math.log(16 * math.log(4e6))
    assert closed_form_validity(HUGE_N, 1e-6) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("method", ["closed_form", "numerical", "rr"])
def test_every_method_refuses_n_above_the_documented_range(method):
    outputs = 2 if method == "rr" else None
    with pytest.raises(ValueError, match=r"n <= 10000000000, got n="):
        central_epsilon(1.0, N_MAX_NUMERICAL + 1, 1e-6, method, outputs=outputs)
    with pytest.raises(ValueError, match=r"\bn\b"):
        central_epsilon(1.0, HUGE_N, 1e-6, method, outputs=outputs)
    with pytest.raises(ValueError, match=r"\bn\b"):
        local_epsilon_for(0.5, HUGE_N, 1e-6, method, outputs=outputs)


def test_closed_form_refuses_eps0_beyond_the_numerical_range():
    with pytest.raises(ValueError, match="eps0"):
        central_epsilon(800.0, 10**6, 1e-6, "closed_form")


def test_closed_form_mechanism_at_huge_n_is_a_value_error():
    with pytest.raises(ValueError, match=r"\bn\b"):
        central_epsilon(ldpopt.randomized_response(2, 1.0), HUGE_N, 1e-6, "closed_form")


def test_tight_delta_of_a_number_is_a_type_error_naming_mech():
    with pytest.raises(TypeError, match="mech"):
        tight_delta(1.0, 0.5, 100, 1e-6)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"p_clone": 3.0}, "p_clone"),
        ({"p_clone": -0.1}, "p_clone"),
        ({"p_clone": 0.5, "n": 10.5}, "n"),
        ({"p_clone": 0.5, "n": 0}, "n"),
        ({"p_clone": 0.5, "weight": 2.0}, "weight"),
        ({"p_clone": 0.5, "tail": -1.0}, "tail"),
        ({"p_clone": 0.5, "eps": math.nan}, "eps"),
        ({"p_clone": 0.5, "eps0": -1.0}, "eps0"),
        ({"p_clone": 0.5, "eps0": 800.0}, "eps0"),
        ({"p_clone": "x"}, "p_clone"),
    ],
)
def test_clone_delta_validates_its_arguments(kwargs, name):
    args = {"eps": 0.5, "eps0": 1.0, "n": 100} | kwargs
    eps, eps0, n = args.pop("eps"), args.pop("eps0"), args.pop("n")
    with pytest.raises((ValueError, TypeError), match=rf"\b{name}="):
        clone_delta(eps, eps0, n, **args)


def test_clone_delta_accepts_numpy_scalars():
    a = clone_delta(np.float64(0.5), np.float64(1.0), np.int64(100), p_clone=np.float64(math.exp(-1.0)))
    b = clone_delta(0.5, 1.0, 100, p_clone=math.exp(-1.0))
    assert a == b


def test_channel_level_errors_name_matrix():
    with pytest.raises(ValueError, match="matrix"):
        channel_level([[0.5, 0.6], [0.5, 0.5]])


def test_rr_outputs_compares_with_ldp_rtol(monkeypatch):
    import ldpopt.deploy.shuffle as shuffle

    rr = ldpopt.randomized_response(3, 1.0).matrix.copy()
    rr[0, 0] *= 1.0 + 1e-6
    rr[0, 1] = 1.0 - rr[0, 0] - rr[0, 2]
    assert shuffle.rr_outputs(ldpopt.Mechanism(rr, 1.0 + 1e-5)) is None
    monkeypatch.setattr(shuffle, "LDP_RTOL", 1e-4)
    assert shuffle.rr_outputs(ldpopt.Mechanism(rr, 1.0 + 1e-5)) == 3


def test_numerical_sums_blocks_of_clone_counts(monkeypatch):
    import ldpopt.deploy.shuffle as shuffle

    kernel = shuffle._clone_delta

    def blocked_only(*args, **kwargs):
        assert kwargs.get("max_terms") is not None, "an unblocked sum: ~10^5 terms per call at n = 1e9"
        return kernel(*args, **kwargs)

    monkeypatch.setattr(shuffle, "_clone_delta", blocked_only)
    for method, outputs in (("numerical", None), ("rr", 3)):
        b = central_epsilon(1.0, 10**9, 1e-6, method, outputs=outputs)
        assert 0.0 < b.value < 1.0


def test_blocked_numerical_is_still_an_upper_bound():
    # at n = 10^6 the window (~5000 counts) is cut into blocks: the exact (unblocked) sum at the
    # returned eps must be within delta as well
    n, delta = 10**6, 1e-6
    b = central_epsilon(1.0, n, delta)
    exact = clone_delta(b.value, 1.0, n, p_clone=math.exp(-1.0), tail=TAIL_FRACTION * delta)
    assert exact <= b.delta_bound <= delta
