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
from _errmodel import EGAMMA, KL, R_FN, U, fdiv_bound, mirror_bound, naive_bound, naive_term_bounds, within
from _valuebounds import _grad_terms, transform_bound
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
    # infinite exactly when a mass faces a zero (KL, chi^2: u > 0 = v; reverse KL: v > 0 = u)
    zero_v, zero_u = bool(np.any((u > 0) & (v == 0))), bool(np.any((v > 0) & (u == 0)))
    if {"kl": zero_v, "chi2": zero_v, "reverse_kl": zero_u}.get(name, False):
        assert math.isinf(ours) and math.isinf(ref)
    elif math.isinf(ref):
        # a finite divergence the textbook loop cannot evaluate: its quotient a / b overflowed (a
        # subnormal mass against a normal one); the library takes log(a) - log(b) there
        assert math.isfinite(ours)
    else:
        # two evaluations of the same sum, each within its own error model of the exact divergence
        # of the float inputs: the library's perspectives + fsum, the textbook loop of reference.py
        div = ldpopt.get_divergence(name)
        bound = fdiv_bound(div.code, div.param, u, v) + naive_bound(name, 0.0, u, v)
        assert within("f_divergence vs textbook", ours, ref, bound), (name, ours, ref, bound)


def scipy_js_bound(u, v) -> float:
    """|jensenshannon(u, v) ** 2 - JS(u || v)| (scipy 1.x, read from its source).

    scipy renormalises p = u / sum(u): a relative change of each mass by at most
    delta = |sum(u) - 1| (exact, from fsum, +u) + (n - 1) u (np.sum) + u (the division), which moves JS
    by at most delta sum(x |dg/dx|) (``_valuebounds._grad_terms``).  Then m = (p + q) / 2 (u
    relative: an absolute u in each log), rel_entr(p, m) = p log(p / m) (the quotient u, log R_FN,
    the product u), two sums of n terms ((n - 1) u), their sum (u), the halving (exact), sqrt (u)
    and the square (2u + u): 3u relative.
    """
    n = len(u)
    delta = max(abs(math.fsum(w) - 1.0) for w in (u, v)) + (n + 1) * U
    m = 0.5 * (u + v)
    gx, gy = _grad_terms("js", u, v)
    terms, err = [], []
    for w in (u, v):
        L = np.abs(np.log(w / m))
        terms.append(w * L)
        err.append(U * w * (2.0 + (R_FN + 1.0) * L))
    js = 0.5 * float(np.sum(terms[0]) + np.sum(terms[1]))
    sums = float(np.sum(err)) + (n - 1) * U * float(np.sum(terms)) + U * 2.0 * js
    return delta * float(np.sum(gx + gy)) + 0.5 * sums + 3.0 * U * js


def test_against_scipy():
    rng = np.random.default_rng(0)
    js_code = ldpopt.get_divergence("js").code
    for _ in range(50):
        u, v = rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6))
        ours, ref = ldpopt.f_divergence(u, v, "kl"), rel_entr(u, v).sum()
        # scipy's rel_entr is the textbook x log(x / y) term, summed by np.sum: naive_bound's model
        bound = fdiv_bound(KL, 0.0, u, v) + naive_bound("kl", 0.0, u, v)
        assert within("f_divergence vs scipy rel_entr", ours, ref, bound), (ours, ref, bound)
        ours, ref = ldpopt.f_divergence(u, v, "js"), jensenshannon(u, v) ** 2
        bound = fdiv_bound(js_code, 0.0, u, v) + scipy_js_bound(u, v)
        assert within("f_divergence vs scipy jensenshannon", ours, ref, bound), (ours, ref, bound)


@given(probs, probs, st.floats(1.0, 10.0))
def test_egamma_is_sup_over_events(a, b, gamma):
    n = min(len(a), len(b))
    u, v = dist(a[:n]), dist(b[:n])
    ours, ref = ldpopt.f_divergence(u, v, ldpopt.egamma(gamma)), egamma_sup(u, v, gamma)
    # the library evaluates max(d - g1 y, 0) with g1 = fl(gamma - 1) (exact for gamma <= 2, else u
    # relative: u |gamma - 1| sum(v) on the exact sum_i max(u_i - gamma v_i, 0) = sup_A); egamma_sup
    # sums |A| <= n masses left to right twice ((n - 1) u each, sums <= 1), multiplies (u gamma) and
    # subtracts (u |f|, |f| <= 1 + gamma): the max over subsets is within the largest of these
    sup_err = U * ((n - 1) * (1.0 + gamma) + gamma + 1.0 + gamma)
    bound = fdiv_bound(EGAMMA, gamma, u, v) + U * abs(gamma - 1.0) * float(np.sum(v)) + sup_err
    assert within("E_gamma vs sup over events", ours, ref, bound), (ours, ref, bound)


@pytest.mark.parametrize("alpha", [0.3, 0.5, 0.9, 1.0, 1.5, 2.0, 4.0])
def test_renyi_reports_renyi(alpha):
    rng = np.random.default_rng(1)
    for _ in range(20):
        u, v = rng.dirichlet(np.ones(5)), rng.dirichlet(np.ones(5))
        ref = naive_divergence(u, v, "kl") if alpha == 1.0 else naive_renyi(u, v, alpha)
        div = ldpopt.renyi(alpha)
        ours = ldpopt.f_divergence(u, v, div)
        if alpha == 1.0:
            bound = fdiv_bound(div.code, div.param, u, v) + naive_bound("kl", 0.0, u, v)
        else:
            # the library: raw = sum_i v_i expm1(a log(u_i / v_i)) = s - sum(v) (s = sum u^a v^(1-a))
            # within fdiv_bound, mapped by log1p(raw) / (a - 1) (transform_bound, its own rounding
            # included); that equals log(s) / (a - 1) only when sum(v) = 1: the float masses sum to
            # 1 within |fsum(v) - 1| + u, which moves it by at most that / (s |a - 1|)
            raw = div.raw(u, v)
            bound = transform_bound(div, raw, fdiv_bound(div.code, div.param, u, v))
            t, e = naive_term_bounds("renyi_sum", alpha, u, v)
            s = float(np.sum(t))
            # naive_renyi: s within sum(e) + (n - 1) u s, log(s) adds that / s + R_FN u |log s|, the
            # division and a - 1 (inexact unless 1/2 <= a <= 2) one u each, relative to |D|
            err_s = float(np.sum(e)) + (len(u) - 1) * U * s
            bound += (err_s / s + R_FN * U * abs(math.log(s))) / abs(alpha - 1.0) + 2.0 * U * abs(ref)
            bound += (abs(math.fsum(v) - 1.0) + U) / (s * abs(alpha - 1.0))
        assert within("Renyi vs textbook", ours, ref, bound), (alpha, ours, ref, bound)
    assert ldpopt.get_divergence(f"renyi:{alpha}").name.startswith("renyi" if alpha != 1 else "kl")


def test_boundary_conventions():
    # built-in generators have f'(1) = 0: KL is t log t - t + 1 (f(0) = 1), reverse KL t - 1 - log t
    kl = ldpopt.get_divergence("kl")
    out = kl.perspective([0.0, 0.0, 0.3], [0.0, 0.2, 0.0])
    assert out[0] == 0.0 and out[1] == 0.2 and math.isinf(out[2])
    rkl = ldpopt.get_divergence("reverse_kl")
    assert math.isinf(rkl.perspective([0.0], [0.2])[0]) and rkl.perspective([0.3], [0.0])[0] == 0.3
    tv = ldpopt.get_divergence("tv")
    # 0.5 |d| with d = -0.2, 0.3 exact: halving is exact and fl(0.2) / 2 = fl(0.1), fl(0.3) / 2 = fl(0.15)
    np.testing.assert_array_equal(tv.perspective([0.0, 0.3], [0.2, 0.0]), [0.1, 0.15])
    js = ldpopt.get_divergence("js")
    # 0.5 * (0.3 * log(2 * 0.3 / 0.3)): the argument is 2.0 exactly, numpy's log(2) against math.log(2)
    # (each within R_FN u), one product on each side (the halvings are exact)
    ours, ref = js.perspective([0.3], [0.0])[0], 0.3 * math.log(2) / 2
    assert within("JS boundary: numpy vs math", ours, ref, 2.0 * (R_FN + 1.0) * U * ref), (ours, ref)
    # the log floor keeps KL finite when the lower bound underflowed: x (log x - log_floor - 1) (the
    # centred generator t log t - t + 1), the same
    # formula with numpy's log and math.log (mirror_bound)
    ours, ref = kl.perspective([0.5], [0.0], log_floor=-1000.0)[0], 0.5 * (math.log(0.5) + 1000 - 1)
    bound = float(mirror_bound(KL, 0.0, 0.5, 0.0, 0.5, -1000.0))
    assert within("KL log floor: numpy vs math", ours, ref, bound), (ours, ref, bound)


def test_user_divergence_conventions_match_builtin():
    user = ldpopt.FDivergence(lambda t: t * np.log(np.where(t > 0, t, 1.0)), name="kl-user")
    assert user.f0 == 0.0  # f(0) = 0 * log(1) = 0 exactly
    assert math.isinf(user.slope_inf)
    rng = np.random.default_rng(2)
    for _ in range(20):
        u, v = rng.dirichlet(np.ones(4)), rng.dirichlet(np.ones(4))
        ours, ref = user(u, v), ldpopt.f_divergence(u, v, "kl")
        # the user path: v * f(u / v) = v * ((u / v) log(u / v)): the quotient (absolute u in the log),
        # log R_FN |L|, two products: u x (1 + (R_FN + 2) |L|) per term, then fsum (u |sum|); the
        # built-in within fdiv_bound
        L = np.abs(np.log(u / v))
        user_err = float(np.sum(U * u * (1.0 + (R_FN + 2.0) * L))) + U * abs(ours)
        bound = fdiv_bound(KL, 0.0, u, v) + user_err
        assert within("user KL generator vs built-in", ours, ref, bound), (ours, ref, bound)
    tvu = ldpopt.FDivergence(lambda t: 0.5 * np.abs(t - 1), name="tv-user")
    # f(0) = 0.5 |0 - 1| and the slope estimate f(1e16) / 1e16 = 0.5 fl(1e16 - 1) / 1e16 = 0.5 are
    # correctly rounded operations on exact values: exact, and so is 1 * 0.5 + 1 * 0.5 summed by fsum
    assert tvu.f0 == 0.5 and tvu.slope_inf == 0.5
    assert tvu([1.0, 0.0], [0.0, 1.0]) == 1.0


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
