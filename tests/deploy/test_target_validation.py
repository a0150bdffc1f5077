"""The frequency-width helpers of ldpopt.deploy.target refuse bad input naming the argument."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from ldpopt.deploy.target import frequency_quantile, krr_half_width, minimum_epsilon_for_frequency_width


def test_frequency_quantile_refuses_an_unknown_interval():
    with pytest.raises(ValueError, match="interval="):
        frequency_quantile(4, 0.95, "bogus")


@pytest.mark.parametrize("confidence", [2.0, 0.3, math.nan, "x"])
def test_frequency_quantile_refuses_a_confidence_outside_the_range(confidence):
    with pytest.raises(ValueError, match="confidence="):
        frequency_quantile(4, confidence, "per-item")


def test_frequency_quantile_values():
    # Bonferroni and per-item quantiles from scipy's normal law
    assert frequency_quantile(4, 0.95, "per-item") == pytest.approx(stats.norm.isf(0.025), rel=1e-12)
    assert frequency_quantile(4, 0.95, "simultaneous") == pytest.approx(stats.norm.isf(0.05 / 8), rel=1e-12)


@pytest.mark.parametrize(
    ("args", "name"),
    [
        ((4, 1.0, 0, 0.95, None), "n"),
        ((4, 1.0, 100, 2.0, None), "confidence"),
        ((1, 1.0, 100, 0.95, None), "k"),
    ],
)
def test_krr_half_width_validates(args, name):
    with pytest.raises(ValueError, match=rf"\b{name}="):
        krr_half_width(*args)


def test_krr_half_width_value():
    # k-RR's worst case: p = e^2/(e^2+3) >= 1/2 >= q = 1/(e^2+3), so the largest variance of
    # (hat pi - q)/(p - q) is (1/4)/(p - q)^2 per report
    k, eps, n = 4, 2.0, 100
    p, q = math.exp(eps) / (math.exp(eps) + k - 1), 1 / (math.exp(eps) + k - 1)
    expected = stats.norm.isf(0.025) * math.sqrt(0.25 / (p - q) ** 2 / n)
    assert krr_half_width(k, eps, n, 0.95, None) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(("mechanism", "size"), [("olh", 1), ("subset", 0), ("subset", 4), ("olh", 2.5)])
def test_size_is_named_in_the_error(mechanism, size):
    with pytest.raises((ValueError, TypeError), match="size"):
        minimum_epsilon_for_frequency_width(4, n=1000, width=0.1, mechanism=mechanism, size=size)
