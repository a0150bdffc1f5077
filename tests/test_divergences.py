"""f-divergences against their textbook formulas and boundary conventions."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial.distance import jensenshannon
from scipy.special import rel_entr

import ldpopt
from _errmodel import mirror_bound, within
from ldpopt.divergences import BUILTIN_NAMES, _perspective_scalar, perspective_array
from ldpopt.spr import _kernels
from reference import egamma_sup, naive_divergence, naive_renyi

#: the compiled kernels' scalar perspective as plain Python (math / libm): the second
#: implementation the numpy one is compared with
perspective_py = getattr(_kernels.perspective, "py_func", _kernels.perspective)

#: the numerics tests: CI also runs them on numpy's AVX2 and baseline loops (.ci/npy_disable.py)
pytestmark = pytest.mark.numerics


def dist(draw_list):
    a = np.array(draw_list, float)
    if a.sum() == 0:
        a[0] = 1.0
    return a / a.sum()


probs = st.lists(st.floats(0.0, 1.0), min_size=1, max_size=8)


@given(probs, probs, st.sampled_from(BUILTIN_NAMES))
def test_builtins_match_textbook(a, b, name):
    n = min(len(a), len(b))
    u, v = dist(a[:n]), dist(b[:n])
    ours = ldpopt.f_divergence(u, v, name)
    ref = naive_divergence(u, v, name)
    if math.isinf(ref):
        assert math.isinf(ours)
    else:
        assert ours == pytest.approx(ref, rel=1e-9, abs=1e-13)


def test_against_scipy():
    rng = np.random.default_rng(0)
    for _ in range(50):
        u, v = rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6))
        assert ldpopt.f_divergence(u, v, "kl") == pytest.approx(rel_entr(u, v).sum(), rel=1e-12)
        assert ldpopt.f_divergence(u, v, "js") == pytest.approx(jensenshannon(u, v) ** 2, rel=1e-9)


@given(probs, probs, st.floats(1.0, 10.0))
def test_egamma_is_sup_over_events(a, b, gamma):
    n = min(len(a), len(b))
    u, v = dist(a[:n]), dist(b[:n])
    assert ldpopt.f_divergence(u, v, ldpopt.egamma(gamma)) == pytest.approx(
        egamma_sup(u, v, gamma), abs=1e-12
    )


@pytest.mark.parametrize("alpha", [0.3, 0.5, 0.9, 1.0, 1.5, 2.0, 4.0])
def test_renyi_reports_renyi(alpha):
    rng = np.random.default_rng(1)
    for _ in range(20):
        u, v = rng.dirichlet(np.ones(5)), rng.dirichlet(np.ones(5))
        ref = naive_divergence(u, v, "kl") if alpha == 1.0 else naive_renyi(u, v, alpha)
        assert ldpopt.f_divergence(u, v, ldpopt.renyi(alpha)) == pytest.approx(ref, rel=1e-9)
    assert ldpopt.get_divergence(f"renyi:{alpha}").name.startswith("renyi" if alpha != 1 else "kl")


def test_boundary_conventions():
    # built-in generators have f'(1) = 0: KL is t log t - t + 1 (f(0) = 1), reverse KL t - 1 - log t
    kl = ldpopt.get_divergence("kl")
    out = kl.perspective([0.0, 0.0, 0.3], [0.0, 0.2, 0.0])
    assert out[0] == 0.0 and out[1] == 0.2 and math.isinf(out[2])
    rkl = ldpopt.get_divergence("reverse_kl")
    assert math.isinf(rkl.perspective([0.0], [0.2])[0]) and rkl.perspective([0.3], [0.0])[0] == 0.3
    tv = ldpopt.get_divergence("tv")
    np.testing.assert_allclose(tv.perspective([0.0, 0.3], [0.2, 0.0]), [0.1, 0.15])
    js = ldpopt.get_divergence("js")
    assert js.perspective([0.3], [0.0])[0] == pytest.approx(0.3 * math.log(2) / 2)
    # the log floor keeps KL finite when the lower bound underflowed
    assert kl.perspective([0.5], [0.0], log_floor=-1000.0)[0] == pytest.approx(
        0.5 * (math.log(0.5) + 1000 - 1)
    )


def test_user_divergence_conventions_match_builtin():
    user = ldpopt.FDivergence(lambda t: t * np.log(np.where(t > 0, t, 1.0)), name="kl-user")
    assert user.f0 == pytest.approx(0.0, abs=1e-250)
    assert math.isinf(user.slope_inf)
    rng = np.random.default_rng(2)
    for _ in range(20):
        u, v = rng.dirichlet(np.ones(4)), rng.dirichlet(np.ones(4))
        assert user(u, v) == pytest.approx(ldpopt.f_divergence(u, v, "kl"), rel=1e-12)
    tvu = ldpopt.FDivergence(lambda t: 0.5 * np.abs(t - 1), name="tv-user")
    assert tvu.f0 == pytest.approx(0.5) and tvu.slope_inf == pytest.approx(0.5)
    assert tvu([1.0, 0.0], [0.0, 1.0]) == pytest.approx(1.0)


def test_scalar_and_array_perspectives_agree():
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.random(50), [0.0, 0.0, 0.4, 1.0]])
    y = np.concatenate([rng.random(50), [0.0, 0.3, 0.0, 1.0]])
    d = x - y
    for name in BUILTIN_NAMES + ("egamma:2", "renyi:2", "renyi:0.5"):
        div = ldpopt.get_divergence(name)
        arr = perspective_array(div.code, div.param, x, y, d)
        one = [_perspective_scalar(div.code, div.param, a, b, c) for a, b, c in zip(x, y, d, strict=False)]
        assert np.array_equal(arr, one), name  # the readable scalar is the array on one point
        sc = np.array(
            [
                perspective_py(div.code, div.param, a, b, c, -math.inf)
                for a, b, c in zip(x, y, d, strict=False)
            ]
        )
        # numpy's SIMD loops vs the kernel's scalar perspective as Python (math, libm): the
        # same formulas and inputs
        bound = mirror_bound(div.code, div.param, x, y, d)
        for a, b, bd in zip(arr, sc, bound, strict=True):
            assert within("perspective: numpy vs math", a, b, bd), (name, a, b, bd)


def test_stable_near_one():
    # x, y = 1 + tiny: the accurate difference d must be used, and the term (of order d^2)
    # must not be a difference of order-d numbers
    kl = ldpopt.get_divergence("kl")
    d = 1e-12
    x, y = 1.0 + 2 * d, 1.0 + d  # representable pair; true x - y is d up to rounding
    val = kl.perspective([x], [y], [d])[0]
    with mpmath.workdps(50):
        u = mpmath.mpf(d) / mpmath.mpf(y)
        ref = float(mpmath.mpf(y) * ((1 + u) * mpmath.log1p(u) - u))
    assert val == pytest.approx(ref, rel=1e-12)
    # numpy's and the scalar (math) evaluation of the same formula at the same inputs
    bound = float(mirror_bound(kl.code, kl.param, x, y, d))
    assert within(
        "KL near x = y: numpy vs math", val, perspective_py(kl.code, kl.param, x, y, d, -math.inf), bound
    )


@pytest.mark.parametrize(
    "bad,match",
    [
        (lambda t: t, "f\\(1\\) = 0"),
        (lambda t: -np.abs(np.asarray(t) - 1.0), "convex"),
        (lambda t: np.sin(np.asarray(t) - 1.0), "convex"),
    ],
)
def test_user_generator_checked(bad, match):
    with pytest.raises(ValueError, match=match):
        ldpopt.FDivergence(bad, name="bad")


def test_bad_names_and_parameters():
    with pytest.raises(ValueError, match="divergence"):
        ldpopt.get_divergence("kullback")
    with pytest.raises(TypeError):
        ldpopt.get_divergence(3)
    with pytest.raises(ValueError, match="gamma"):
        ldpopt.egamma(0.5)
    with pytest.raises(ValueError, match="alpha"):
        ldpopt.renyi(0.0)
    with pytest.raises(ValueError, match="alpha"):
        ldpopt.renyi(float("nan"))
    with pytest.raises(ValueError, match="parameter"):
        ldpopt.get_divergence("egamma:x")
    with pytest.raises(TypeError, match="callable"):
        ldpopt.FDivergence(3)
    with pytest.raises(ValueError, match="same length"):
        ldpopt.f_divergence([0.5, 0.5], [1.0], "kl")
    assert ldpopt.get_divergence("egamma:1.5").param == 1.5
    assert ldpopt.get_divergence("renyi(2)").param == 2.0
