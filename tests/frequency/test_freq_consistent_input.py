"""Bad input to the consistent estimators names the argument (it raised IndexError or was
accepted: negative counts, c = 2, mismatched shapes)."""

from __future__ import annotations

import numpy as np
import pytest

from ldpopt.frequency.consistent import project_to_simplex, support_mle

SETS = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1]])


@pytest.mark.parametrize(
    ("v", "error", "match"),
    [
        ([], ValueError, "v must"),
        ([np.nan, 1.0], ValueError, "v must"),
        ([np.inf, 1.0], ValueError, "v must"),
        ([[0.5, 0.5]], ValueError, "v must"),
        (["0.5", "0.5"], TypeError, "v"),
    ],
)
def test_project_to_simplex_bad_input(v, error, match):
    with pytest.raises(error, match=match):
        project_to_simplex(v)


@pytest.mark.parametrize(
    ("sets", "counts", "c", "match"),
    [
        (SETS, [3, -1, 2], 0.5, "counts"),
        (SETS, [3, 1.5, 2], 0.5, "counts"),
        (SETS, [3, 1], 0.5, "counts"),  # one count per support set
        (SETS, [3, 1, 2], 2.0, "c must"),
        (SETS, [3, 1, 2], 0.0, "c must"),
        (SETS, [3, 1, 2], np.nan, "c must"),
        (SETS * 2, [3, 1, 2], 0.5, "sets"),
        (np.ones(3), [3, 1, 2], 0.5, "sets"),
    ],
)
def test_support_mle_bad_input(sets, counts, c, match):
    with pytest.raises(ValueError, match=match):
        support_mle(sets, counts, c)


def test_support_mle_start_of_the_wrong_size():
    with pytest.raises(ValueError, match="start"):
        support_mle(SETS, [3, 1, 2], 0.5, start=[0.5, 0.5])


def test_support_mle_valid_input_still_solves():
    # grr-like sets with c = 1/e: the MLE of counts inside the simplex's image is the unbiased estimate
    c = float(np.exp(-3.0))
    counts = np.array([50, 30, 20])
    res = support_mle(SETS, counts, c)
    assert res.status == "converged"
    # Pr[report j] = (c + (1-c) f_j) / (1 + 2c): invert at the empirical frequencies
    freq = counts / counts.sum()
    f = (freq * (1 + 2 * c) - c) / (1 - c)
    assert np.all(f > 0)
    # certified l* - l <= 1e-8 n; l's curvature along the simplex is >= n (1-c)^2 / max Pr^2 >= n/2
    # here, so |f - f*| <= sqrt(4e-8) = 2e-4
    assert np.max(np.abs(res.value - f)) <= 2e-4
