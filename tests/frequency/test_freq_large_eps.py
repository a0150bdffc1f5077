"""Deployed frequency oracles at large eps: the off-support probabilities 1 - p*, 1 - q* come
from closed forms in c = e^-eps, so the channels stay eps-LDP (``1.0 - p`` loses the e^-eps term
once p* rounds to 1: GRR from eps = 17)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldpopt.frequency import mechanisms as M
from ldpopt.frequency.files import read_frequency_mechanism, write_frequency_mechanism

U = 2.0**-53
#: the verified level is the log of a ratio of two channel entries; a unary encoding's entry is
#: the exp of a sum of k + 1 logs, each within u (|log| + 1) <= u (eps + 1) of exact, so the level
#: is within 2 (k + 2) u (eps + 1) of eps; k = 3 here: 10 u (eps + 1), rounded up to 16 u (eps + 1)
LEVEL_BOUND_ULPS = 16


@pytest.mark.numerics
@pytest.mark.parametrize("eps", [17.0, 17.5, 18.25, 20.0, 33.75, 40.0, 50.0])
@pytest.mark.parametrize("kind", M.KINDS)
def test_channel_builds_and_its_level_is_eps(kind, eps):
    # OLH's default g = round(e^eps + 1) is refused above eps 40: give one
    m = M.make(kind, 3, eps, 4 if kind == "olh" and eps > 40.0 else None)
    ch = m.channel()  # raised "matrix is not eps-LDP" before
    assert np.all(ch.matrix > 0)
    bound = LEVEL_BOUND_ULPS * U * (eps + 1.0)
    assert abs(m.privacy_level - eps) <= bound
    a, b = m.column_levels()
    assert b > 0 and abs(math.log(a) - math.log(b) - eps) <= bound


@pytest.mark.numerics
@pytest.mark.parametrize("eps", [17.0, 40.0, 50.0])
def test_grr_low_level_is_the_closed_form(eps):
    # independent: Pr[report y != x] = 1/(e^eps + k - 1) computed in exact rational arithmetic
    # (math.exp(eps) is a float, its rounding is relative u; the closed form adds a few more)
    k = 3
    exact = 1.0 / (math.exp(eps) + (k - 1))
    _, b = M.grr(k, eps).column_levels()
    assert abs(b - exact) <= 8 * U * exact


@pytest.mark.numerics
@pytest.mark.parametrize("kind", ["sue", "basic_rappor", "oue"])
def test_unary_channels_at_eps_80(kind):
    # math.log1p(-p) raised "math domain error" once p rounded to 1 (eps >~ 75)
    m = M.make(kind, 3, 80.0)
    assert abs(m.privacy_level - 80.0) <= LEVEL_BOUND_ULPS * U * 81.0
    assert math.isfinite(m.best_variance_uniform())


@pytest.mark.parametrize("kind", ["grr", "sue", "subset", "hadamard"])
def test_channel_file_round_trip_at_large_eps(tmp_path, kind):
    m = M.make(kind, 4, 20.0)
    path = write_frequency_mechanism(m, tmp_path / f"{kind}.json")
    assert read_frequency_mechanism(path) == m


def test_olh_g_is_capped_where_privatize_works():
    # g = 10**30 was accepted, then privatize failed
    with pytest.raises(ValueError, match=r"g must be >= 2 and <= \d+, got g=1000000000000000000000000000000"):
        M.olh(5, 1.0, g=10**30)
    m = M.olh(5, 1.0, g=M.OLH_G_MAX)  # the largest g still privatizes and reads back
    reports = m.privatize(np.array([0, 1, 2, 3, 4]), rng=1)
    assert reports.shape == (5, 2) and np.all((reports[:, 1] >= 0) & (reports[:, 1] < M.OLH_G_MAX))
    assert m.supports(reports).shape == (5, 5)
