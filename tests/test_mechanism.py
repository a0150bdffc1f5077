"""Mechanism validation, privacy level, baselines."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ldpopt
from reference import rr_on_blocks


def test_randomized_response_matches_definition():
    for k in (1, 2, 5, 30):
        for eps in (0.1, 1.0, 5.0):
            m = ldpopt.randomized_response(k, eps)
            ref = rr_on_blocks([[i] for i in range(k)], k, eps)
            np.testing.assert_allclose(m.matrix, ref, rtol=1e-14)
            assert m.privacy_level() == pytest.approx(eps if k > 1 else 0.0, abs=1e-12)
            assert m.is_ldp(eps) and (k == 1 or not m.is_ldp(eps * 0.999))


def test_binary_mechanism_high_set():
    p = [0.1, 0.5, 0.4]
    q = [0.3, 0.2, 0.5]
    m = ldpopt.binary_mechanism(p, q, 1.0)
    assert m.partition == ((1,), (0, 2))
    e = math.e
    np.testing.assert_allclose(m.matrix[1], [e / (1 + e), 1 / (1 + e)])
    np.testing.assert_allclose(m.matrix[0], [1 / (1 + e), e / (1 + e)])


def test_spr_mechanism_eq11_and_validation():
    m = ldpopt.spr_mechanism([[0, 1], [2, 3, 4], [5]], 6, 2.0)
    np.testing.assert_allclose(m.matrix, rr_on_blocks([[0, 1], [2, 3, 4], [5]], 6, 2.0))
    with pytest.raises(ValueError, match="twice"):
        ldpopt.spr_mechanism([[0, 1], [1, 2]], 3, 1.0)
    with pytest.raises(ValueError, match="cover"):
        ldpopt.spr_mechanism([[0, 1]], 3, 1.0)
    with pytest.raises(ValueError, match="outside"):
        ldpopt.spr_mechanism([[0, 1, 5]], 3, 1.0)
    with pytest.raises(ValueError, match="empty"):
        ldpopt.spr_mechanism([[0, 1, 2], []], 3, 1.0)


def test_privacy_level_and_zero_columns():
    m = ldpopt.Mechanism([[1.0, 0.0], [0.0, 1.0]], math.inf)
    assert math.isinf(m.privacy_level())
    assert m.is_ldp(math.inf) and not m.is_ldp(50.0)
    z = ldpopt.Mechanism([[0.5, 0.5, 0.0], [0.25, 0.75, 0.0]], math.log(2) + 1e-12)
    assert z.privacy_level() == pytest.approx(math.log(2))


def test_constructor_rejects_bad_channels():
    with pytest.raises(ValueError, match="sum to 1"):
        ldpopt.Mechanism([[0.5, 0.6]], 1.0)
    with pytest.raises(ValueError, match="non-negative"):
        ldpopt.Mechanism([[1.5, -0.5]], 1.0)
    with pytest.raises(ValueError, match="not eps-LDP"):
        ldpopt.Mechanism([[0.9, 0.1], [0.1, 0.9]], 1.0)
    with pytest.raises(ValueError, match="2-D"):
        ldpopt.Mechanism([0.5, 0.5], 1.0)
    with pytest.raises(ValueError, match="finite"):
        ldpopt.Mechanism([[np.nan, 1.0]], 1.0)
    with pytest.raises(ValueError, match="eps"):
        ldpopt.Mechanism([[1.0]], 0.0)
    with pytest.raises(ValueError, match="labels"):
        ldpopt.Mechanism([[1.0]], 1.0, labels=("a", "b"))


def test_matrix_is_read_only():
    m = ldpopt.randomized_response(3, 1.0)
    with pytest.raises(ValueError):
        m.matrix[0, 0] = 1.0


def test_large_eps_underflow_accepted():
    m = ldpopt.randomized_response(4, 1000.0)
    assert m.matrix[0, 1] == 0.0  # e^-1000 underflows
    assert m.is_ldp(1000.0)
    assert not m.is_ldp(700.0)


def test_utility_and_output_distributions():
    p = np.array([0.2, 0.3, 0.5])
    q = np.array([0.5, 0.3, 0.2])
    m = ldpopt.randomized_response(3, 1.0)
    m0, m1 = m.output_distributions(p, q)
    np.testing.assert_allclose(m0, m.matrix.T @ p)
    ref = float(np.sum(m0 * np.log(m0 / m1)))
    assert m.utility(p, q, "kl") == pytest.approx(ref, rel=1e-12)
    with pytest.raises(ValueError, match="inputs"):
        m.utility([0.5, 0.5], [0.5, 0.5])


def test_labelled_utility_aligns_by_label():
    m = ldpopt.randomized_response(3, 1.0, labels=("a", "b", "c"))
    u1 = m.utility({"a": 0.2, "b": 0.3, "c": 0.5}, {"c": 0.2, "b": 0.3, "a": 0.5})
    u2 = m.utility([0.2, 0.3, 0.5], [0.5, 0.3, 0.2])
    assert u1 == pytest.approx(u2)


def test_baseline_argument_errors():
    with pytest.raises(ValueError, match="k"):
        ldpopt.randomized_response(0, 1.0)
    with pytest.raises(ValueError, match="eps"):
        ldpopt.randomized_response(3, -1.0)
    with pytest.raises(ValueError, match="same length"):
        ldpopt.binary_mechanism([0.5, 0.5], [1.0], 1.0)
