"""OpenDP round trip and randomized-response parameters.

The OpenDP measurement is checked through OpenDP's own interface (``map``, ``check``, calling
it) and its outputs by a chi-square test (fixed seed, alpha = 1e-6).  OpenDP's native randomized
response samples from OpenDP's own generator, which cannot be seeded: its chi-square test uses
alpha = 1e-6, a false alarm once in a million runs.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import opendp.prelude as dp
import pytest
from scipy import stats

import ldpopt
from ldpopt.interop import from_opendp_rr, rr_parameters, to_opendp

ALPHA = 1e-6
DRAWS = 3000

#: the two ways to build the measurement: the Mechanism method and the interop function
ENTRY_POINTS = {
    "method": lambda mech, **kw: mech.to_opendp(**kw),
    "function": to_opendp,
}
entry_points = pytest.mark.parametrize("build", ENTRY_POINTS.values(), ids=ENTRY_POINTS.keys())


def _chisquare_ok(observed_counts: np.ndarray, probs: np.ndarray) -> bool:
    expected = probs * observed_counts.sum()
    return stats.chisquare(observed_counts, expected).pvalue > ALPHA


@entry_points
def test_measurement_map_check_and_outputs(build):
    p0 = {"low": 0.6, "mid": 0.3, "high": 0.1}
    p1 = {"low": 0.2, "mid": 0.3, "high": 0.5}
    mech = ldpopt.optimal_mechanism(p0, p1, 1.0).mechanism
    meas = build(mech, rng=np.random.default_rng(7))
    assert meas.map(1) == mech.eps == 1.0
    assert meas.map(0) == 0.0
    assert meas.map(3) >= 3 * mech.eps
    assert meas.check(1, mech.eps)
    assert not meas.check(1, math.nextafter(mech.eps, 0.0))
    outs = [meas("high") for _ in range(DRAWS)]
    idx = np.array(outs, dtype=np.int64)  # no output labels: indices
    counts = np.bincount(idx, minlength=mech.num_outputs)
    row = mech.matrix[mech.labels.index("high")]
    assert _chisquare_ok(counts, row)


@entry_points
def test_measurement_refuses_unknown_inputs_and_bad_rng(build):
    mech = ldpopt.randomized_response(3, 1.0, labels=["a", "b", "c"])
    meas = build(mech)
    assert meas("a") in ("a", "b", "c")
    with pytest.raises(Exception, match="unknown|not"):
        meas("z")
    with pytest.raises(TypeError, match="rng"):
        build(mech, rng=7)  # refused when the measurement is built, not at its first call


def test_function_is_the_method_and_takes_a_design_result():
    assert ldpopt.to_opendp is to_opendp
    res = ldpopt.optimal_mechanism([0.7, 0.2, 0.1], [0.1, 0.3, 0.6], 0.5)
    meas = to_opendp(res)
    assert meas.map(1) == res.mechanism.eps == 0.5
    assert meas(2) in range(res.mechanism.num_outputs)


def test_from_opendp_rr_matches_opendp():
    cats, prob = ["x", "y", "z", "w"], 0.55
    ours = from_opendp_rr(cats, prob)
    native = dp.m.make_randomized_response(cats, prob)
    # eps rounded up: never below OpenDP's, and only by the documented slack
    assert native.map(1) <= ours.eps <= native.map(1) * (1 + 1e-14)
    counts = np.zeros(4, dtype=np.int64)
    for _ in range(DRAWS):
        counts[cats.index(native("y"))] += 1
    assert _chisquare_ok(counts, ours.matrix[1])
    with pytest.raises(ValueError, match="keep"):
        from_opendp_rr(cats, 0.2)  # below 1/k: not a randomized response
    with pytest.raises(ValueError, match="categories"):
        from_opendp_rr(["x", "x"], 0.9)


# ---------------------------------------------------------------------------------------------
# rr_parameters: exact values by mpmath, rounding towards privacy
# ---------------------------------------------------------------------------------------------
@pytest.mark.numerics
@pytest.mark.parametrize("s", [2, 3, 12, 1000])
@pytest.mark.parametrize("eps", [1e-6, 0.1, 1.0, 4.0, 30.0])
def test_rr_parameters_round_towards_privacy(eps, s):
    mpmath.mp.prec = 200
    e = mpmath.mpf(eps)
    keep_exact = mpmath.e**e / (mpmath.e**e + s - 1)
    noise_exact = s / (mpmath.e**e + s - 1)
    par = rr_parameters(eps=eps, outputs=s)
    assert par.eps == eps
    assert par.keep <= keep_exact and par.noise >= noise_exact
    assert (
        abs(par.keep - keep_exact) <= 1e-14 * keep_exact
        and abs(par.noise - noise_exact) <= 1e-14 * noise_exact
    )
    from_keep = rr_parameters(keep=par.keep, outputs=s)
    k = mpmath.mpf(par.keep)
    assert from_keep.eps >= mpmath.log(k * (s - 1) / (1 - k))
    # the keep was rounded down, so only eps's own upward slack (16u times the sum of the magnitudes
    # of its three log terms, each below log(s) + 1 here) and a 1-ulp step can put it above eps
    assert from_keep.eps <= eps + 16 * 2.0**-53 * 3 * (math.log(s) + 1) + math.ulp(eps)
    if par.noise < 1:
        from_noise = rr_parameters(noise=par.noise, outputs=s)
        g = mpmath.mpf(par.noise)
        assert from_noise.eps >= mpmath.log1p(s * (1 - g) / g)
        assert from_noise.keep <= 1 - g + g / s


def test_rr_parameters_refusals():
    with pytest.raises(ValueError, match="exactly one"):
        rr_parameters(eps=1.0, keep=0.7, outputs=2)
    with pytest.raises(ValueError, match="outputs"):
        rr_parameters(eps=1.0, outputs=1)
    with pytest.raises(ValueError, match="keep"):
        rr_parameters(keep=1.0, outputs=3)
    with pytest.raises(ValueError, match="noise"):
        rr_parameters(noise=0.0, outputs=3)
    assert rr_parameters(eps=math.inf, outputs=3).keep == 1.0
    assert rr_parameters(eps=np.float64(1.0), outputs=np.int64(3)) == rr_parameters(eps=1.0, outputs=3)
