"""The peers' channel builders refuse bad input naming the argument (no peer library needed)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from ldpopt.interop.peers import PEER_EPS_MAX, multi_freq_channel, opendp_rr_channel


@pytest.mark.parametrize("protocol", ["GRR", "UE", "LH"])
def test_multi_freq_refuses_k_below_2(protocol):
    with pytest.raises(ValueError, match="k="):
        multi_freq_channel(protocol, 1, 1.0)


@pytest.mark.parametrize("protocol", ["GRR", "UE", "LH"])
@pytest.mark.parametrize("eps", [800.0, math.inf, 0.0, -1.0, math.nan])
def test_multi_freq_refuses_eps_outside_the_peer_range(protocol, eps):
    with pytest.raises(ValueError, match="eps="):
        multi_freq_channel(protocol, 4, eps)


def test_multi_freq_refuses_a_fractional_k_and_unknown_protocol():
    with pytest.raises((ValueError, TypeError), match="k="):
        multi_freq_channel("GRR", 2.5, 1.0)
    with pytest.raises(ValueError, match="protocol="):
        multi_freq_channel("XYZ", 4, 1.0)


def test_peer_eps_max_is_where_exp_overflows():
    assert math.isfinite(math.exp(PEER_EPS_MAX * (1 - 2**-52)))
    with pytest.raises(OverflowError):
        math.exp(math.nextafter(PEER_EPS_MAX, math.inf) + 1e-12)


def test_multi_freq_grr_near_the_limit_is_built():
    ch = multi_freq_channel("GRR", 3, 700.0)
    assert ch is not None


@pytest.mark.parametrize("prob", [1.5, -0.1, math.nan, "x"])
def test_opendp_rr_refuses_prob_outside_0_1(prob):
    with pytest.raises((ValueError, TypeError), match="prob"):
        opendp_rr_channel(["a", "b", "c"], prob, 1.0)


def test_opendp_rr_refuses_a_single_category():
    with pytest.raises(ValueError, match="categories"):
        opendp_rr_channel(["a"], 0.5, 1.0)


def test_opendp_rr_exact_level():
    # keep 3/4 of 3 categories: other = 1/8, ratio 6 exactly
    ch = opendp_rr_channel(["a", "b", "c"], 0.75, math.log(6))
    assert ch.params["other"] == Fraction(1, 8)
