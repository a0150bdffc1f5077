r"""Compiled (numba) kernels of the exact SPR solvers.

Only arrays and scalars go in and out; validation, the likelihood-ratio reduction and the
result objects live in :mod:`ldpopt.spr._fast` and :mod:`ldpopt.spr.grid`.  Every kernel is
``@njit(cache=True)`` without ``fastmath`` and with numpy's floating-point error model, so
that its floating-point operations are those of the readable reference
:func:`ldpopt.spr.reference._dp_readable`:

* :func:`perspective` is the one-point version of :func:`ldpopt.divergences.perspective_array`
  (same branches, constants, boundary conventions and ``(x, y, d)`` stable forms; the codes and
  constants are imported from :mod:`ldpopt.divergences`);
* interval sums come from the same compensated (Neumaier hi/lo) prefix and suffix sums (the
  side with the smaller partial sums, floored at the largest endpoint term) and the score of
  ``[a, b)`` is ``g(c + A dP, c + A dQ, A (dP - dQ))`` with ``c = e^{-eps}``,
  ``A = -expm1(-eps)`` (SPR eq. 31 divided by :math:`e^\varepsilon`);
* partition sums are accumulated left to right, as ``F[s, i] = F[s-1, t] + mu'[t:i)`` does.

The scoring kernels take one bundled argument ``sc = (code, param, c, A, lf)``: the
divergence's code and parameter (:mod:`ldpopt.divergences`) and the rescaling of one eps
(``c = e^-eps``, ``A = 1 - c``, the log floor; :func:`ldpopt._numerics.rescale`).

Solvers (``docs/fast.md`` has the exactness arguments):

* :func:`dinkelbach_ws` - the unconstrained optimum of
  :math:`\max_\pi \sum_t \mu'(B_t) / ((1-c) + s c)` by Dinkelbach's iteration; each step is
  a 1-D partition program (per-block penalty ``lambda c``) with exact pruning of split points
  by cheap score bounds (:func:`score_bound`): :func:`cached_pass` over a score cache (k up to
  ``SCORE_CACHE_MAX_K``), :func:`uncached_pass` with group bounds in O(k) memory above;
* :func:`budget_dp` - the O(l k^2) program of Prop. 3.3 for an output budget, O(l k) memory,
  pruned before any block is summed (group bounds, as the uncached pass);
* :func:`solve_ws` - one instance, with the decisions of :mod:`ldpopt.spr._policy` (compiled
  from the same functions; :mod:`ldpopt.spr._fast` runs ``solve_ws`` as Python, so each kernel
  is compiled only when first needed); :func:`solve_item` - one
  instance at many eps (GIL released: :mod:`ldpopt.spr.grid` runs items in parallel threads);
* :func:`table_args`, :func:`table_pass`, :func:`table_budget_dp` - the small-problem path
  of :mod:`ldpopt.spr._fast` (k <= 1024 single solves) over an exact score table; they call no
  other compiled function, so a fresh process compiles them in about a second instead of
  the 10-15 s of the pruned solvers (``docs/fast.md``, section 6).
"""

from __future__ import annotations

import math
import struct
from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic, overload, typeof_impl

from ldpopt.divergences import (
    CODE_CHI2,
    CODE_EGAMMA,
    CODE_HELLINGER,
    CODE_JS,
    CODE_KL,
    CODE_POWER_DOWN,
    CODE_POWER_UP,
    CODE_REVERSE_KL,
    CODE_TV,
    E_COEF,
    EXP_MAX,
    JS_NEAR_MAX,
    KL_COEF,
    LOG1P_MAX,
    R_MAX,
    R_MIN,
    RKL_COEF,
    SERIES_E_MAX,
    SERIES_U_MAX,
)
from ldpopt.spr import _policy
from ldpopt.spr.reduction import DH, DL, PH, PL, PRE_ROWS, PX, QH, QL, QX, SDH, SDL, SPH, SPL, SQH, SQL

#: up to this many cut points the block sums, score bounds and scores are cached across
#: Dinkelbach passes (packed lower triangles, 25 bytes per block, 13 MB at the threshold);
#: above it nothing of size k^2 is kept and every pass recomputes from the prefix sums with
#: group bounds, so memory stays O(k)
SCORE_CACHE_MAX_K = 1024
#: Dinkelbach never needs more steps than there are partitions with distinct ratios; this
#: cap only guards against a floating-point cycle (each accepted step strictly increases lambda)
MAX_DINKELBACH_STEPS = 200
#: solves with more reduced symbols than this start from the optimum over a coarse grid of cuts
COARSEN_MIN_K = 4096
#: number of groups of the coarse grid
COARSE_GROUPS = 1024
#: at most this many refinements of the coarse optimum, each a solve over the cuts within
#: COARSE_WINDOW_GROUPS coarse groups of the current cuts, at most COARSE_REFINE_MAX of them (a
#: start at the optimum saves a full pass; with many blocks wider windows find it more often:
#: k = 3e4, eps = 10, 33 blocks: one full pass instead of two)
COARSE_REFINES = 3
COARSE_WINDOW_GROUPS = 3
COARSE_REFINE_MAX = 2048
#: method code of :func:`solve_ws` / :func:`solve_item` for a solve that needs a part of the
#: solver its reduced variant was compiled without (the caller solves it with the full variant)
NEEDS_FULL = -1


#: the decorator of private kernels (a leading underscore) that only compiled code calls: no
#: entry points for Python (or C) callers are generated, a good part of the compile time of a
#: small kernel.  Calling one of them from Python crashes the process: every kernel that Python
#: code calls (``_fast``, ``grid``, the tests, ``solve_ws``'s Python run) keeps numba's defaults
_inner = njit(cache=True, error_model="numpy", no_cpython_wrapper=True, no_cfunc_wrapper=True)  # type: ignore[call-overload]  # options the numba stubs do not list
#: ... of a private helper typed into its callers (never compiled on its own)
_inner_inline = njit(cache=True, error_model="numpy", inline="always")
#: compile options of the functions compiled through numba's ``overload`` (not cached on their
#: own: they come compiled into their callers)
_OVERLOAD: Any = {"error_model": "numpy", "no_cfunc_wrapper": True}  # beyond the stubs' options too


# ---------------------------------------------------------------------------------------------
# Perspective g(x, y) = y f(x / y) (the one-point divergences.perspective_array)
# ---------------------------------------------------------------------------------------------
# the series coefficients of the readable perspectives (the thresholds above are theirs too),
# so both take the same branches with the same constants; padded with zeros to the 16 of
# _u_series's Estrin scheme
_KL_COEF = np.zeros(16)
_KL_COEF[: len(KL_COEF)] = KL_COEF
_RKL_COEF = np.zeros(16)
_RKL_COEF[: len(RKL_COEF)] = RKL_COEF
_E_COEF = np.zeros(16)
_E_COEF[: len(E_COEF)] = E_COEF
#: the solve policy, compiled from the very functions the table path runs as Python
_start = njit(cache=True, error_model="numpy")(_policy.start)
_settle = njit(cache=True, error_model="numpy")(_policy.settle)


@_inner
def _log_ratio_far(x, y):
    """log(x / y) of the ratio when it is a normal number, else log x - log y."""
    r = x / y
    if R_MIN < r < R_MAX:
        return math.log(r)
    return math.log(x) - math.log(y)


@njit(cache=True, error_model="numpy")
def log_ratio(x, y, d):
    """log(x / y): log1p(d / y) unless x << y, else of the ratio (divergences._log_ratio)."""
    u = d / y
    if -LOG1P_MAX < u < R_MAX:
        return math.log1p(u)
    return _log_ratio_far(x, y)


@_inner
def _exp(t):
    return math.inf if t > EXP_MAX else math.exp(t)


@_inner
def _u_series(u, coef):
    """u^2 sum_j coef[j] (-u)^j, j < 16 (divergences._u_series): Estrin's scheme, whose products
    are independent (a quarter of Horner's latency), the same sum to a few ulp."""
    v = -u
    v2 = v * v
    v4 = v2 * v2
    q0 = (coef[0] + coef[1] * v) + (coef[2] + coef[3] * v) * v2
    q1 = (coef[4] + coef[5] * v) + (coef[6] + coef[7] * v) * v2
    q2 = (coef[8] + coef[9] * v) + (coef[10] + coef[11] * v) * v2
    q3 = (coef[12] + coef[13] * v) + (coef[14] + coef[15] * v) * v2
    return u * u * ((q0 + q1 * v4) + (q2 + q3 * v4) * (v4 * v4))


@_inner
def _xe(x, b, l):
    """x E(b l) = x (e^(b l) - 1 - b l), l = log(x/y) (divergences._xe and _pow_term)."""
    z = b * l
    if abs(z) < SERIES_E_MAX:
        return x * _u_series(-z, _E_COEF)
    h = x * math.exp(z) if z < EXP_MAX else _exp(math.log(x) + z)
    return h - x * (1.0 + z)


@_inner_inline
def _kl_like(x, y, d, lf, reverse):
    """KL: x log(x/y) - d; reverse KL: d - y log(x/y) (divergences._g_kl / _g_reverse_kl).

    Inlined into :func:`_g_kl` and :func:`_g_reverse_kl`, its only callers."""
    if x > 0.0 and y > 0.0:
        u = d / y
        if abs(u) < SERIES_U_MAX:
            return y * _u_series(u, _RKL_COEF if reverse else _KL_COEF)
        lr = math.log1p(u) if -LOG1P_MAX < u < R_MAX else _log_ratio_far(x, y)
        return d - y * lr if reverse else x * lr - d
    if reverse:
        if y == 0.0:
            return x
        return max(y * (math.log(y) - lf - 1.0), 0.0)
    if x == 0.0:
        return y
    return max(x * (math.log(x) - lf - 1.0), 0.0)


@_inner
def _kl_term(x, y, d, l):
    """x log(x/y) - d for x, y > 0 given l = log(x/y) (divergences._kl_term)."""
    u = d / y
    if abs(u) < SERIES_U_MAX:
        return y * _u_series(u, _KL_COEF)
    return x * l - d


# One function per built-in divergence: its perspective term ``(param, x, y, d, log_floor)``
# for x + y > 0.  A kernel specialised to one divergence (a literal code, see ``scoring``)
# compiles that function alone.
@_inner
def _g_kl(param, x, y, d, lf):
    return _kl_like(x, y, d, lf, False)


@_inner
def _g_reverse_kl(param, x, y, d, lf):
    return _kl_like(x, y, d, lf, True)


@_inner
def _g_tv(param, x, y, d, lf):
    return 0.5 * abs(d)


@_inner
def _g_egamma(param, x, y, d, lf):
    v = d - (param - 1.0) * y
    return v if v > 0.0 else 0.0


@_inner
def _g_chi2(param, x, y, d, lf):
    if y == 0.0:
        return math.inf
    return d * d / y


@_inner
def _g_hellinger(param, x, y, d, lf):
    s = math.sqrt(x) + math.sqrt(y)
    return d * d / (s * s)


@_inner
def _g_js(param, x, y, d, lf):
    """(s/4) [2 w atanh(w) + log1p(-w^2)] near x = y, plain logs away from it (divergences._g_js)."""
    s = x + y
    w = d / s
    if abs(w) < JS_NEAR_MAX:
        return 0.25 * s * (2.0 * w * math.atanh(w) + math.log1p(-w * w))
    a = x * math.log(2.0 * x / s) if x > 0.0 else 0.0
    b = y * math.log(2.0 * y / s) if y > 0.0 else 0.0
    return 0.5 * (a + b)


@_inner
def _g_power_up(a, x, y, d, lf):
    """Centred power term, a > 1 (divergences._g_power_up)."""
    if y == 0.0:
        return _exp(a * math.log(x) - (a - 1.0) * lf) - a * x
    if x == 0.0:
        return (a - 1.0) * y
    b = a - 1.0
    l = log_ratio(x, y, d)
    return _xe(x, b, l) + b * _kl_term(x, y, d, l)


@_inner
def _g_power_down(a, x, y, d, lf):
    """Centred power term, 0 < a < 1 (divergences._g_power_down)."""
    if y == 0.0:
        return a * x
    if x == 0.0:
        return (1.0 - a) * y
    b = 1.0 - a
    l = log_ratio(x, y, d)
    if l <= 1.0:
        return b * _kl_term(x, y, d, l) - _xe(x, -b, l)
    return x * (b * math.expm1(-l) - math.expm1(-b * l))


_G = {
    CODE_KL: _g_kl,
    CODE_REVERSE_KL: _g_reverse_kl,
    CODE_TV: _g_tv,
    CODE_EGAMMA: _g_egamma,
    CODE_CHI2: _g_chi2,
    CODE_HELLINGER: _g_hellinger,
    CODE_JS: _g_js,
    CODE_POWER_UP: _g_power_up,
    CODE_POWER_DOWN: _g_power_down,
}


def _perspective_any(code, param, x, y, d, log_floor):
    """:func:`perspective` for a code known only at run time: every divergence's branch."""
    if x == 0.0 and y == 0.0:
        return 0.0
    if code == CODE_KL:
        return _g_kl(param, x, y, d, log_floor)
    if code == CODE_REVERSE_KL:
        return _g_reverse_kl(param, x, y, d, log_floor)
    if code == CODE_TV:
        return _g_tv(param, x, y, d, log_floor)
    if code == CODE_EGAMMA:
        return _g_egamma(param, x, y, d, log_floor)
    if code == CODE_CHI2:
        return _g_chi2(param, x, y, d, log_floor)
    if code == CODE_HELLINGER:
        return _g_hellinger(param, x, y, d, log_floor)
    if code == CODE_JS:
        return _g_js(param, x, y, d, log_floor)
    if code == CODE_POWER_UP:
        return _g_power_up(param, x, y, d, log_floor)
    if code == CODE_POWER_DOWN:
        return _g_power_down(param, x, y, d, log_floor)
    return math.nan


#: the perspective of every divergence, compiled, for Python callers
_perspective_compiled = njit(cache=True, error_model="numpy")(_perspective_any)


def perspective(code, param, x, y, d, log_floor):
    """Scalar perspective for built-in ``code``; ``d`` = x - y known accurately.

    ``log_floor`` is the log of a lower bound of x and y that survives their underflow to 0
    (``-inf`` for a true zero), exactly as in the readable version.  The generators are those
    of :mod:`ldpopt.divergences` (f'(1) = 0: every term >= 0, no cancellation).  Compiled
    code whose ``code`` is a literal (``scoring``) compiles that divergence's function alone;
    called from Python, this runs the compiled version for any code.
    """
    return _perspective_compiled(code, param, x, y, d, log_floor)


def _one_divergence(g):
    """:func:`perspective` for the one divergence whose function is ``g``."""

    def perspective_of(code, param, x, y, d, log_floor):
        if x == 0.0 and y == 0.0:
            return 0.0
        return g(param, x, y, d, log_floor)

    return perspective_of


def _perspective_dispatch(code, param, x, y, d, log_floor):
    return _perspective_compiled(code, param, x, y, d, log_floor)


@overload(perspective, prefer_literal=True, jit_options=_OVERLOAD)
def _perspective_typed(code, param, x, y, d, log_floor):
    # a literal code: only its divergence's function; any other code: the compiled perspective
    # of every divergence (one dispatcher, compiled once whatever its callers' options)
    if isinstance(code, types.IntegerLiteral) and code.literal_value in _G:
        return _one_divergence(_G[code.literal_value])
    return _perspective_dispatch


class LiteralCode(int):
    """A divergence code that numba types as its literal value (``Literal[int](code)``).

    Compiled code called with one (alone, or in the ``sc`` tuple) is specialised to that
    divergence: ``perspective`` and ``_bound_one`` compile its branch alone, which is what a
    first call pays for.  A plain int code still works (every branch is compiled).  Large
    single solves (``_fast``) and the batched sweep (``grid``, :func:`solve_item`) use it: each
    specialisation recompiles every kernel that takes ``sc`` (a second divergence in a process
    costs its own compile, ~6 s on 2 cores, against ~0.1 s with the plain code), but the first
    compiles ~1.5 s less and runs ~5% faster; the small path keeps the plain code.
    """

    __slots__ = ()


@typeof_impl.register(LiteralCode)
def _typeof_literal_code(val, c):
    return types.literal(int(val))


def scoring(code, param, c, A, lf):
    """The scoring argument ``sc = (code, param, c, A, lf)`` of the kernels, specialised to the
    divergence ``code`` (see :class:`LiteralCode`)."""
    return (LiteralCode(code), float(param), float(c), float(A), float(lf))


# ---------------------------------------------------------------------------------------------
# Prefix sums and interval sums
# ---------------------------------------------------------------------------------------------
# rows of the prefix table (``reduction._Prefix.table``, built by numpy)
_PH, _PL, _QH, _QL, _SPH, _SPL, _SQH, _SQL, _PX, _QX = PH, PL, QH, QL, SPH, SPL, SQH, SQL, PX, QX
_DH, _DL, _SDH, _SDL = DH, DL, SDH, SDL
#: a block's difference from the sums of p - q is kept within this times (dP + dQ) of dP - dQ:
#: dP and dQ are each within ~2 ulp of themselves, so the true difference is within ~4 ulp of
#: dP - dQ; 8 ulp leaves a margin (shared with reduction._Prefix.sums)
DIFF_CLIP = 8 * 2.0**-52


@_inner_inline
def _interval(pre, rh, rl, rsh, rsl, rx, a, b):
    # sum over [a, b) from the side with the smaller partial sums, never below its largest
    # endpoint term (reduction._Prefix._interval)
    if pre[rh, b] <= pre[rsh, a]:
        total = (pre[rh, b] - pre[rh, a]) + (pre[rl, b] - pre[rl, a])
    else:
        total = (pre[rsh, a] - pre[rsh, b]) + (pre[rsl, a] - pre[rsl, b])
    floor = max(pre[rx, a], pre[rx, b - 1])
    return total if total >= floor else floor


@njit(cache=True, error_model="numpy")
def block_sums(pre, a, b):
    """(dP, dQ) over the reduced symbols a..b-1."""
    dp = _interval(pre, _PH, _PL, _SPH, _SPL, _PX, a, b)
    dq = _interval(pre, _QH, _QL, _SQH, _SQL, _QX, a, b)
    return dp, dq


@njit(cache=True, error_model="numpy")
def block_diff(pre, a, b, dp, dq):
    """dP - dQ over the reduced symbols a..b-1, given their sums dp, dq (reduction._Prefix.sums).

    From the compensated sums of p - q, on the side from which dP is summed, kept within
    DIFF_CLIP (dp + dq) of dp - dq: about one ulp of itself where dP and dQ nearly cancel, and
    never worse than dp - dq where that side's compensation (~n ulp^2 times its mass) is not
    negligible next to a tiny block.
    """
    if pre[_PH, b] <= pre[_SPH, a]:
        dd = (pre[_DH, b] - pre[_DH, a]) + (pre[_DL, b] - pre[_DL, a])
    else:
        dd = (pre[_SDH, a] - pre[_SDH, b]) + (pre[_SDL, a] - pre[_SDL, b])
    plain = dp - dq
    e = DIFF_CLIP * (dp + dq)
    return min(max(dd, plain - e), plain + e)


@njit(cache=True, error_model="numpy")
def score(pre, a, b, sc):
    """Rescaled interval score mu'[a:b) = g(c + A dP, c + A dQ, A (dP - dQ)) (eq. 31 over e^eps)."""
    code, param, c, A, lf = sc
    dp, dq = block_sums(pre, a, b)
    return perspective(code, param, c + A * dp, c + A * dq, A * block_diff(pre, a, b, dp, dq), lf)


@njit(cache=True, error_model="numpy")
def diff_table(pre, pos, sp, sq):
    """dP - dQ of every block [pos[t], pos[i]) whose sums are ``sp, sq`` (:func:`sums_tables`)."""
    m = pos.shape[0] - 1
    sd = np.empty(m * (m + 1) // 2)
    j = 0
    for i in range(1, m + 1):
        for t in range(i):
            sd[j] = block_diff(pre, pos[t], pos[i], sp[j], sq[j])
            j += 1
    return sd


@njit(cache=True, error_model="numpy")
def partition_ratio(pre, bounds, nb, sc):
    """Raw value of the partition with boundaries ``bounds[0] = 0 < ... < bounds[nb] = k``.

    The scores are summed left to right (as the readable program's F[s, k]) and divided by
    ``1 + (s - 1) c``.
    """
    c = sc[2]
    total = score(pre, bounds[0], bounds[1], sc)
    for j in range(1, nb):
        total = total + score(pre, bounds[j], bounds[j + 1], sc)
    return total / (1.0 + (nb - 1) * c)


@njit(cache=True, error_model="numpy")
def sums_tables(pre, pos):
    """(dP, dQ) of every block [pos[t], pos[i]), t < i, packed at ``i (i - 1) / 2 + t``.

    They do not depend on eps: a sweep computes them once per instance.
    """
    m = pos.shape[0] - 1
    n = m * (m + 1) // 2
    sp = np.empty(n)
    sq = np.empty(n)
    j = 0
    for i in range(1, m + 1):
        b = pos[i]
        for t in range(i):
            dp, dq = block_sums(pre, pos[t], b)
            sp[j] = dp
            sq[j] = dq
            j += 1
    return sp, sq


# ---------------------------------------------------------------------------------------------
# Cheap upper bounds of the scores (exact pruning of split points, docs/fast.md)
# ---------------------------------------------------------------------------------------------
#: relative slack added to every bound (the bound and the score are each computed to a few ulp;
#: the centred near-x = y scores cancel by at most a factor 20, ~45 ulp = 1e-14)
BOUND_SLACK_REL = 1e-12
#: slack relative to the block mass for the difference-of-logs forms, whose absolute rounding
#: error is at most ~ulp (|log x| + |log y|) x <= 1490 ulp x ~ 3.3e-13 x
BOUND_SLACK_FAR = 1e-11
#: states of a cached score: not computed yet, an upper bound, the exact score, and an upper
#: bound carried over from a larger eps (:func:`carry_bounds`)
_EMPTY, _BOUND, _EXACT, _CARRIED = 0, 1, 2, 3
_LN2 = math.log(2.0)
_SQRT2 = math.sqrt(2.0)
#: _log_ub_far is used for normal numbers well inside this range
_Z_MIN = 1e-300
_Z_MAX = 1e300


# pure-Python fallbacks of the two bit casts below
if numba.config.DISABLE_JIT:  # type: ignore[attr-defined]  # numba.config sets its options at run time

    def _float_bits(x):
        return struct.unpack("<q", struct.pack("<d", x))[0]

    def _bits_float(b):
        return struct.unpack("<d", struct.pack("<q", b))[0]

else:

    @intrinsic
    def _float_bits(typingctx, x):
        """The IEEE-754 bits of a float64 as an int64 (no conversion)."""

        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], ir.IntType(64))

        return types.int64(types.float64), codegen

    @intrinsic
    def _bits_float(typingctx, b):
        """The float64 whose IEEE-754 bits are the int64 ``b``."""

        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], ir.DoubleType())

        return types.float64(types.int64), codegen


_MANTISSA = 0x000FFFFFFFFFFFFF
_EXP_ZERO = 0x3FF0000000000000


@njit(cache=True, error_model="numpy")
def _log_ub_far(z):
    r"""Upper bound of log z for a normal z > 0, tight to ~4e-4, without calling log.

    Write :math:`z = m 2^e` (exponent and mantissa read from the bits, exact) with
    :math:`m \in (1/\sqrt2, \sqrt2]`; then :math:`\log z = e\log 2 + \log m` and
    :math:`\log m \le (m-1)(m+5)/(4m+2)` for every m > 0 (the difference has derivative
    :math:`4(m-1)^3 / (m(4m+2)^2)`, so its minimum is 0 at m = 1).  In floating point the
    result may be a few ulp of e log 2 below log z; :func:`score_bound` adds a larger slack.
    """
    bits = _float_bits(z)
    e = (bits >> 52) - 1023
    m = _bits_float((bits & _MANTISSA) | _EXP_ZERO)
    if m > _SQRT2:
        m = 0.5 * m
        e += 1
    return e * _LN2 + (m - 1.0) * (m + 5.0) / (4.0 * m + 2.0)


@_inner
def _kl_ub(x, y, d):
    """Upper bound of the computed KL score x log(x/y) - d (NaN: no cheap bound, score it exactly)."""
    if x > 0.0 and y > 0.0:
        if abs(d) < LOG1P_MAX * y:
            # y [(1+u) log1p(u) - u] <= y u^2 (3 + u) / (6 + 4u), u = d / y (log1p(u) <= u(6+u)/(6+4u))
            v = d * d * (3.0 * y + d) / (y * (6.0 * y + 4.0 * d))
            return v + BOUND_SLACK_REL * v
        z = x / y
        if _Z_MIN < z < _Z_MAX:  # the log(x) - log(y) branch
            v = x * _log_ub_far(z) - d
            return v + BOUND_SLACK_REL * (abs(v) + abs(d)) + BOUND_SLACK_FAR * x
    return math.nan


@_inner
def _rkl_ub(x, y, d):
    """Upper bound of the computed reverse-KL score d - y log(x/y) (NaN: none)."""
    if x > 0.0 and y > 0.0:
        if abs(d) < LOG1P_MAX * y:
            # y [u - log1p(u)] with -log1p(u) = log1p(v) <= v(6+v)/(6+4v), v = -u / (1 + u):
            # <= y u^2 (3 + 2u) / ((1 + u)(6 + 2u))
            v = d * d * (3.0 * y + 2.0 * d) / ((y + d) * (6.0 * y + 2.0 * d))
            return v + BOUND_SLACK_REL * v
        z = y / x
        if _Z_MIN < z < _Z_MAX:
            v = y * _log_ub_far(z) + d
            return v + BOUND_SLACK_REL * (abs(v) + abs(d)) + BOUND_SLACK_FAR * y
    return math.nan


@_inner
def _js_ub(x, y, d):
    """Upper bound of the computed JS score (NaN: none)."""
    if x > 0.0 and y > 0.0:
        s = x + y
        w = d / s
        if abs(w) < JS_NEAR_MAX:
            # (s/4) h(w), h(w) = sum_{n>=1} w^(2n) / (n (2n - 1)) <= w^2 + w^4 / (6 (1 - w^2))
            w2 = w * w
            v = 0.25 * s * (w2 + w2 * w2 / (6.0 * (1.0 - w2)))
            return v + BOUND_SLACK_REL * v
        z1 = 2.0 * x / s
        z2 = 2.0 * y / s
        if _Z_MIN < z1 < _Z_MAX and _Z_MIN < z2 < _Z_MAX:
            v = 0.5 * (x * _log_ub_far(z1) + y * _log_ub_far(z2))
            return v + BOUND_SLACK_REL * abs(v) + BOUND_SLACK_FAR * s
    return math.nan


#: the cheap bound of each divergence that has one (:func:`score_bound`)
_UB = {CODE_KL: _kl_ub, CODE_REVERSE_KL: _rkl_ub, CODE_JS: _js_ub}


def _bound_one(code, x, y, d):
    """The cheap upper bound of KL, reverse KL or JS (NaN: none, or another divergence).

    For compiled code only (its helpers have no Python entry point); a literal code compiles
    that divergence's bound alone."""
    if code == CODE_KL:
        return _kl_ub(x, y, d)
    if code == CODE_REVERSE_KL:
        return _rkl_ub(x, y, d)
    if code == CODE_JS:
        return _js_ub(x, y, d)
    return math.nan


def _no_bound(code, x, y, d):
    return math.nan


def _one_bound(ub):
    """``_bound_one`` for the one divergence whose bound is ``ub``."""

    def bound_of(code, x, y, d):
        return ub(x, y, d)

    return bound_of


#: the cheap bound of any divergence, compiled once
_bound_any = _inner(_bound_one)


def _bound_dispatch(code, x, y, d):
    return _bound_any(code, x, y, d)


@overload(_bound_one, prefer_literal=True, jit_options=_OVERLOAD)
def _bound_one_typed(code, x, y, d):
    if isinstance(code, types.IntegerLiteral) and code.literal_value in _G:
        ub = _UB.get(code.literal_value)
        return _no_bound if ub is None else _one_bound(ub)
    return _bound_dispatch


@njit(cache=True, error_model="numpy")
def score_bound(code, param, x, y, d, lf):
    r"""``(v, exact)``: the score itself when it is cheap (``exact``), else a bound it cannot exceed.

    KL, reverse KL and JS are bounded near x = y (|u| = |d/y| or |d/(x+y)| below 1/2) by
    closed forms of order d^2 without cancellation: for KL and reverse KL from the Pade-type
    inequality :math:`\log(1+u) \le u(6+u)/(6+4u)`, for JS from its series in w = d/(x+y);
    away from x = y every logarithm is bounded by :func:`_log_ub_far`.  A slack larger than
    the rounding errors of both evaluations is added, so the *computed* score never exceeds
    ``v``.  Everything else (cheap divergences, power divergences, zero masses, extreme ratios)
    is evaluated exactly.
    """
    v = _bound_one(code, x, y, d)
    if v == v:
        return v, False
    return perspective(code, param, x, y, d, lf), True


@_inner
def _has_bound(code):
    """KL, reverse KL and JS have cheap score bounds (:func:`score_bound`); the rest is exact."""
    return code == CODE_KL or code == CODE_REVERSE_KL or code == CODE_JS


@_inner
def _wide_diff(dp, dq):
    """dp - dq moved away from 0 by the DIFF_CLIP margin of :func:`block_diff`: the bounds of
    KL, reverse KL and JS grow with |d| near x = y, so one at this d bounds the score at any
    difference :func:`block_diff` can return (away from x = y the slack covers the margin)."""
    plain = dp - dq
    e = DIFF_CLIP * (dp + dq)
    return plain + e if plain >= 0.0 else plain - e


def _bound_loops(code, sp, sq, n, c, A, out, st):
    """``out[j], st[j]`` of :func:`bounds_into` for KL, reverse KL and JS, one loop per divergence
    (the hot loop holds only that divergence's bound); a literal code compiles its loop alone."""
    if code == CODE_KL:
        for j in range(n):
            v = _kl_ub(c + A * sp[j], c + A * sq[j], A * _wide_diff(sp[j], sq[j]))
            out[j] = v if v == v else math.inf
            st[j] = _BOUND
    elif code == CODE_REVERSE_KL:
        for j in range(n):
            v = _rkl_ub(c + A * sp[j], c + A * sq[j], A * _wide_diff(sp[j], sq[j]))
            out[j] = v if v == v else math.inf
            st[j] = _BOUND
    elif code == CODE_JS:
        for j in range(n):
            v = _js_ub(c + A * sp[j], c + A * sq[j], A * _wide_diff(sp[j], sq[j]))
            out[j] = v if v == v else math.inf
            st[j] = _BOUND


def _one_bound_loop(ub):
    """:func:`_bound_loops` for the one divergence whose bound is ``ub``."""

    def bound_loop(code, sp, sq, n, c, A, out, st):
        for j in range(n):
            v = ub(c + A * sp[j], c + A * sq[j], A * _wide_diff(sp[j], sq[j]))
            out[j] = v if v == v else math.inf
            st[j] = _BOUND

    return bound_loop


#: the loops of every divergence with a bound, for a code known only at run time
_bound_loops_any = _inner(_bound_loops)


def _bound_loops_dispatch(code, sp, sq, n, c, A, out, st):
    _bound_loops_any(code, sp, sq, n, c, A, out, st)


def _no_bound_loop(code, sp, sq, n, c, A, out, st):
    pass


@overload(_bound_loops, prefer_literal=True, jit_options=_OVERLOAD)
def _bound_loops_typed(code, sp, sq, n, c, A, out, st):
    if isinstance(code, types.IntegerLiteral) and code.literal_value in _G:
        ub = _UB.get(code.literal_value)
        return _no_bound_loop if ub is None else _one_bound_loop(ub)
    return _bound_loops_dispatch


@njit(cache=True, error_model="numpy")
def bounds_into(sp, sq, sd, n, sc, out, st):
    """``out[j], st[j]`` for the blocks with sums ``sp[j], sq[j]``, j < n: for KL, reverse KL
    and JS an upper bound of the score at any difference :func:`block_diff` returns (+inf
    where there is no cheap bound); for the other divergences the exact score, from the
    differences ``sd[j]`` (:func:`block_diff`; not read for the three).

    One loop per divergence (:func:`_bound_loops`), so the hot loop holds only that divergence's
    bound; a literal code (:class:`LiteralCode`) compiles its own bound alone.
    """
    code, param, c, A, lf = sc
    # no cheap bound (zero mass, extreme ratio): +inf, scored exactly when a pass reaches it
    if _has_bound(code):
        _bound_loops(code, sp, sq, n, c, A, out, st)
    else:
        for j in range(n):
            out[j] = perspective(code, param, c + A * sp[j], c + A * sq[j], A * sd[j], lf)
            st[j] = _EXACT


# ---------------------------------------------------------------------------------------------
# Unconstrained optimum: Dinkelbach's iteration over 1-D penalised partition programs
# ---------------------------------------------------------------------------------------------
#: slack of a carried bound: relative, and relative to the block masses x + y at both eps
#: (an error budget of the computed scores, >= 10x the worst rounding error of KL/JS forms)
CARRY_SLACK_REL = 1e-12
CARRY_SLACK_MASS = 1e-11


@njit(cache=True, error_model="numpy")
def carry_bounds(val, state, sp, sq, c0, A0, c1, A1):
    r"""Turn the cached scores at eps0 into upper bounds at eps1 <= eps0 (both finite, c > 0).

    By 1-homogeneity :math:`\mu'_\varepsilon = A\, g(\theta + dP, \theta + dQ)` with
    :math:`\theta = c/A = 1/(e^\varepsilon - 1)`, and :math:`\theta \mapsto g(\theta+a,\theta+b)`
    is nonincreasing for every convex f with f(1) = 0 (``docs/fast.md``), so
    :math:`\mu'_{\varepsilon_1} \le (A_1/A_0)\,\mu'_{\varepsilon_0}`.  Every cached value v
    (a bound or the computed score at eps0) becomes :math:`(A_1/A_0)(v + E_0) + E_1` with
    error budgets :math:`E = 10^{-12}|v| + 10^{-11}(x+y)`, so it bounds the computed score
    at eps1.
    """
    if state.shape[0] == 0 or state[0] == _EMPTY:
        return  # an empty cache stays empty (it is complete or empty, never partial)
    rho = A1 / A0
    for j in range(state.shape[0]):
        v = val[j]
        m = sp[j] + sq[j]
        w = rho * (v + CARRY_SLACK_REL * abs(v) + CARRY_SLACK_MASS * (2.0 * c0 + A0 * m))
        val[j] = w + CARRY_SLACK_REL * abs(w) + CARRY_SLACK_MASS * (2.0 * c1 + A1 * m)
        state[j] = _CARRIED


@njit(cache=True, error_model="numpy")
def fill_cache(pre, pos, sp, sq, val, state, sc):
    """Fresh bounds (or exact scores, for cheap divergences) of every block of an empty cache."""
    sd = _score_diffs(sc[0], pre, pos, sp, sq)
    bounds_into(sp, sq, sd, sp.shape[0], sc, val, state)


def _score_diffs(code, pre, pos, sp, sq):
    """The block differences :func:`bounds_into` reads: none for KL, reverse KL and JS (bounded),
    :func:`diff_table` for the divergences scored exactly; a literal code compiles one of the two."""
    return np.empty(0) if _has_bound(code) else diff_table(pre, pos, sp, sq)


def _no_diffs(code, pre, pos, sp, sq):
    return np.empty(0)


def _all_diffs(code, pre, pos, sp, sq):
    return diff_table(pre, pos, sp, sq)


def _any_diffs(code, pre, pos, sp, sq):
    return np.empty(0) if _has_bound(code) else diff_table(pre, pos, sp, sq)


@overload(_score_diffs, prefer_literal=True, jit_options=_OVERLOAD)
def _score_diffs_typed(code, pre, pos, sp, sq):
    if isinstance(code, types.IntegerLiteral) and code.literal_value in _G:
        return _no_diffs if code.literal_value in _UB else _all_diffs
    return _any_diffs


#: split points are pruned in groups of GROUP, and GROUP groups form a super group, when there
#: is no score cache (large k): a whole group is skipped when a bound over it cannot reach the
#: incumbent (docs/fast.md, "group bounds")
GROUP = 32
SUPER = GROUP * GROUP


@njit(cache=True, error_model="numpy")
def _rect_prunes(pre, pos, ta, tb, b0, b1, hmax, best, sc, pen):
    r"""True when no split point t in ``pos[ta..tb]`` can reach ``best`` for any end point
    ``b`` in ``[b0, b1]`` (symbol indices, ``pos[tb] < b0``).

    The block sums of [pos_t, b) lie in the box [dP(pos_tb, b0), dP(pos_ta, b1)] x
    [dQ(pos_tb, b0), dQ(pos_ta, b1)] (they shrink as t grows and as b falls) and the score g
    is convex in them, so it is at most its largest corner value; each corner is bounded by
    :func:`score_bound`.  With ``hmax`` >= every H[t] of the range, ``hmax + max corner - pen``
    (plus the rounding budget of the scores, 1e-12 relative + 1e-11 per unit of block mass,
    covering also that computed block sums may leave the box by an ulp) bounds every
    candidate's computed value (rounding is monotone).
    """
    code, param, c, A, lf = sc
    pa, qa = block_sums(pre, pos[ta], b1)
    pb, qb = block_sums(pre, pos[tb], b0)
    v1, _ = score_bound(code, param, c + A * pa, c + A * qa, A * (pa - qa), lf)
    v2, _ = score_bound(code, param, c + A * pa, c + A * qb, A * (pa - qb), lf)
    v3, _ = score_bound(code, param, c + A * pb, c + A * qa, A * (pb - qa), lf)
    v4, _ = score_bound(code, param, c + A * pb, c + A * qb, A * (pb - qb), lf)
    vmax = max(max(v1, v2), max(v3, v4))
    if not vmax < math.inf:  # an infinite (or NaN) corner: no bound
        return False
    mass = 2.0 * c + A * (pa + qa)
    gub = vmax + BOUND_SLACK_REL * (abs(vmax) + mass) + BOUND_SLACK_FAR * mass
    return hmax + (gub - pen) < best


@njit(cache=True, error_model="numpy")
def _box_prunes(pre, pos, ta, tb, b, hmax, best, sc, pen):
    """True when no split point t in ``pos[ta..tb]`` can reach ``best`` for the end point ``b``
    (:func:`_rect_prunes` with one end point)."""
    return _rect_prunes(pre, pos, ta, tb, b, b, hmax, best, sc, pen)


@njit(cache=True, error_model="numpy")
def _chunk_prunes(pre, pos, i0, i1, sc, pen, H, par, hinted, GH, SH, GS, GR, live, slive, ext):
    """Mark the complete groups and super groups of split points before ``i0`` that no end point
    ``i0 <= i < i1`` needs (``live[g]``/``slive[sg]`` False; :func:`_uncached_row` skips them).

    Every end point i of the chunk gets one exactly scored candidate (its hint when that is
    before ``i0``, else the last split point found, ``par[i0 - 1]``), computed as the row
    computes it, so its value ``L_i`` is at most the row's final best; a range whose
    :func:`_rect_prunes` bound over all the chunk's end points is below ``min L_i``, or whose
    :func:`_tangent_prunes` bound is below ``L_i`` for every i (the blocks to ``pos[i]``
    extend those to ``pos[i0]`` by the sums of [pos[i0], pos[i]), in ``ext``), holds no
    maximiser and no tie of any row of the chunk.
    """
    code, param, c, A, lf = sc
    n = i1 - i0
    L = math.inf
    for i in range(i0, i1):
        t = par[i] if hinted else -1
        if t < 0 or t >= i0:
            t = par[i0 - 1]
        dp, dq = block_sums(pre, pos[t], pos[i])
        w = perspective(code, param, c + A * dp, c + A * dq, A * block_diff(pre, pos[t], pos[i], dp, dq), lf)
        u = H[t] + (w - pen)
        ext[2, i - i0] = u
        L = min(L, u)
        if i == i0:
            ext[0, 0] = 0.0
            ext[1, 0] = 0.0
        else:
            ext[0, i - i0], ext[1, i - i0] = block_sums(pre, pos[i0], pos[i])
    if not L > -math.inf:  # NaN or -inf: prune nothing
        for sg in range(i0 // SUPER):
            slive[sg] = True
        for g in range(i0 // GROUP):
            live[g] = True
        return
    b0 = pos[i0]
    b1 = pos[i1 - 1]
    EP = ext[0, :n]
    EQ = ext[1, :n]
    INC = ext[2, :n]
    for sg in range(i0 // SUPER):
        s0 = sg * SUPER
        slive[sg] = not (
            _rect_prunes(pre, pos, s0, s0 + SUPER - 1, b0, b1, SH[sg], L, sc, pen)
            or _tangent_prunes(pre, pos, s0, s0 + SUPER - 1, b0, H, GH, GS, GR, EP, EQ, INC, L, sc, pen)[0]
        )
    for g in range(i0 // GROUP):
        sg = g // GROUP
        if sg < i0 // SUPER and not slive[sg]:
            continue  # the row skips the whole super group
        t0 = g * GROUP
        t1 = t0 + GROUP - 1
        live[g] = not (
            _rect_prunes(pre, pos, t0, t1, b0, b1, GH[g], L, sc, pen)
            or _tangent_prunes(pre, pos, t0, t1, b0, H, GH, GS, GR, EP, EQ, INC, L, sc, pen)[0]
        )


#: slack per unit of block mass of the tangent bound (:func:`_tangent_prunes`): the scores'
#: error budget (BOUND_SLACK_FAR), once more for the block sums of [t, b) differing from the
#: sums of [tb, b) plus [t, tb) by a few ulp of the mass (times |grad g| <= 1 + |log(x/y)| <= 700
#: where the bound applies: < 1e-12 per unit), and a margin
TANGENT_SLACK_MASS = 3 * BOUND_SLACK_FAR
#: 4 ulp: the padding of the computed |D| of :func:`_tangent_prunes` (and, scaled, its delta and m0)
_TANGENT_PAD = 4 * 2.0**-52
#: no tangent data (:func:`_tangent_candidate` then bounds nothing): m0 = 0
_NO_TANGENT = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


@njit(cache=True, error_model="numpy")
def _tangent_candidate(tan, ht, pt, qt, pen):
    r"""Upper bound of one candidate's computed value ``H[t] + (score - pen)`` (+inf without data).

    ``tan = (wb, a1, a2, rho, A, dpad, delta, m0, slack)`` from the group's
    :func:`_tangent_prunes` test at the same end point: its bound with the range reduced to the
    one split point t (``pt, qt = GS[:, t]``), i.e. :math:`g(z_b) + a_1 P_t - a_2 Q_t +
    (D_t + \delta)^2 / (2 m_0)` with :math:`D_t = A |P_t - \rho_0 Q_t|` padded, plus the
    group's slack (its magnitudes bound this candidate's) and the rounding of this sum.  No
    logarithm and no block sums: a candidate that fails it is not even summed.
    """
    wb, a1, a2, rho, A, dpad, delta, m0, slack = tan
    if not m0 > 0.0:
        return math.inf
    if ht == -math.inf:
        return ht  # no partition ends at t (and the KL score of [t, b) is finite where m0 > 0)
    dd = A * abs(pt - rho * qt) + dpad
    x = wb + (a1 * pt - a2 * qt) + (dd + delta) * (dd + delta) / (2.0 * m0)
    x = x + (slack + BOUND_SLACK_REL * (abs(x) + abs(ht)))
    return ht + (x - pen)


@njit(cache=True, error_model="numpy")
def group_sums(pre, pos, GS):
    """``GS[0, t], GS[1, t]``: (dP, dQ) of [pos[t], pos[tb]) with ``tb`` the last position of t's
    group of ``GROUP`` (0 for t = tb; complete groups only): the part of a block [pos[t], b)
    before the group's last cut, which does not depend on the end point (:func:`_tangent_prunes`)."""
    m = pos.shape[0] - 1
    for g in range((m + 1) // GROUP):
        tb = g * GROUP + GROUP - 1
        GS[0, tb] = 0.0
        GS[1, tb] = 0.0
        for t in range(g * GROUP, tb):
            dp, dq = block_sums(pre, pos[t], pos[tb])
            GS[0, t] = dp
            GS[1, t] = dq


@njit(cache=True, error_model="numpy")
def _tangent_prunes(pre, pos, ta, tb, b, H, GH, GS, GR, EP, EQ, INC, best, sc, pen):  # noqa: C901
    r"""True when no split point t in ``pos[ta..tb]`` can reach its incumbent (KL): ``best`` for
    the end point ``b`` when ``INC`` is empty, else ``INC[j]`` for every end point ``b_j``
    whose block extends [t, b) by the sums ``EP[j], EQ[j]`` (>= 0) of [b, b_j) (a chunk).

    A bound that keeps the split point's value and its score together (the box bound of
    :func:`_rect_prunes` takes the largest ``H`` and the largest score separately, which loses
    to first order in the group's mass next to the optimum).  With
    :math:`z = (c + A\,dP, c + A\,dQ)` of a block, :math:`z_{t,j} = z_b + A (P_t + EP_j, Q_t + EQ_j)`
    where :math:`z_b` is the block [pos[tb], b) and :math:`(P_t, Q_t) \ge 0` the sums of
    [pos[t], pos[tb]) (``GS``, :func:`group_sums`; for a super group (more than ``GROUP``
    split points), the sums
    ``GR`` of :func:`super_sums` to its last cut plus those of the group).  The KL
    perspective :math:`g(x, y) = x \log(x/y) - x + y` lies above each of its tangent lines:
    for any :math:`\rho_0 > 0`, :math:`\theta_0 = \log\rho_0`,

    .. math:: g(x, y) = \theta_0 x - (\rho_0 - 1) y + u\,\varphi(v/u),
              \quad u = \rho_0 y,\ v = x,\ \varphi(r) = r \log r - r + 1 \ge 0,

    and :math:`u\,\varphi(v/u) \le (v - u)^2 / (2 \min(u, v))` (:math:`\varphi'' = 1/r`).  At
    :math:`z_b` the line is below g; at :math:`z_{t,j}`, with the extension
    :math:`(P, Q) = (P_t + EP_j, Q_t + EQ_j)`, :math:`v - u = \delta_0 + D`,
    :math:`\delta_0 = x_b - \rho_0 y_b`, :math:`D = A (P - \rho_0 Q)`, and
    :math:`\min(u, v) \ge \min(x_b, \rho_0 y_b)`.  For :math:`\rho_0 = fl(x_b / y_b)`,
    :math:`|\delta_0| \le 2^{-53} x_b`.  Hence

    .. math:: H_t + g(z_{t,j}) \le g(z_b) + [H_t + a_1 P_t - a_2 Q_t] + [a_1 EP_j - a_2 EQ_j]
              + (D_{max} + \delta)^2 / (2 m_0),

    :math:`a_1 = A\theta_0`, :math:`a_2 = A(\rho_0 - 1)`, :math:`D_{max}` the largest
    :math:`|D|` over the range and the extensions, :math:`\delta = 2^{-52} x_b`,
    :math:`m_0 = (1 - 2^{-51}) x_b`: the last term is of second order in the mass of the
    range, small when its likelihood ratios are close to the block's, and the exact second
    order of :math:`g` (no factor is lost).
    The maximum over t of the first bracket is taken exactly over a group; over a super group
    it is bounded per group g by :math:`GH_g + (a_1)_+ P^g_{max} + (-a_2)_+ Q^g_{max}` plus the
    linear term of the group's offset to the super group's last cut.

    Rounding: the computed scores are within ``BOUND_SLACK_REL`` relative plus
    ``BOUND_SLACK_FAR`` per unit of mass of the exact perspective at their computed arguments
    (the error budget of :func:`score_bound`), the computed block sums of a block differ from
    the sums of its parts by a few ulp of the mass (``TANGENT_SLACK_MASS``), the computed
    :math:`|D|` are padded by 4 ulp of :math:`A (P_{max} + \rho_0 Q_{max})`, and the few
    roundings of this bound, of the candidate's ``H[t] + (w - pen)`` and of the comparison
    are each below 4 ulp of one of the magnitudes summed in ``mag`` (1e-12 of it is ~4500
    ulp).  Returns ``(pruned, tangent)``: False (no decision) for other divergences, a zero
    mass, an extreme ratio, or a NaN; ``tangent`` (:func:`_tangent_candidate`) after a
    test of one end point that did not prune, else ``_NO_TANGENT``.
    """
    code, param, c, A, lf = sc
    if code != CODE_KL:
        return False, _NO_TANGENT
    pb, qb = block_sums(pre, pos[tb], b)
    xb = c + A * pb
    yb = c + A * qb
    if not (xb > 0.0 and yb > 0.0):
        return False, _NO_TANGENT
    rho = xb / yb
    if not (_Z_MIN < rho < _Z_MAX):
        return False, _NO_TANGENT
    a1 = A * math.log(rho)
    a2 = A * (rho - 1.0)
    mx = -math.inf
    hm = 0.0
    pmax = 0.0
    qmax = 0.0
    dmax = 0.0
    if tb - ta >= GROUP:  # a super group (a flag argument would compile twice, once per literal)
        a1p = max(a1, 0.0)
        a2m = max(-a2, 0.0)
        for g in range(ta // GROUP, tb // GROUP + 1):
            hg = GH[g]
            if hg != hg:
                return False, _NO_TANGENT
            if hg == -math.inf:
                continue  # no partition ends in the group (the budget program's first split points)
            rp = GR[0, g]
            rq = GR[1, g]
            mx = max(mx, (hg + (a1p * GR[2, g] + a2m * GR[3, g])) + (a1 * rp - a2 * rq))
            hm = max(hm, abs(hg))
            pmax = max(pmax, rp + GR[2, g])
            qmax = max(qmax, rq + GR[3, g])
            dmax = max(dmax, max(abs(rp + GR[2, g] - rho * rq), abs(rp - rho * (rq + GR[3, g]))))
    else:
        for t in range(ta, tb + 1):
            ht = H[t]
            if ht != ht:
                return False, _NO_TANGENT
            if ht == -math.inf:
                continue
            pt = GS[0, t]
            qt = GS[1, t]
            mx = max(mx, ht + (a1 * pt - a2 * qt))
            hm = max(hm, abs(ht))
            pmax = max(pmax, pt)
            qmax = max(qmax, qt)
            dmax = max(dmax, abs(pt - rho * qt))
    n = INC.shape[0]
    if mx == -math.inf:  # every candidate is -inf
        if n == 0:
            return best > -math.inf, _NO_TANGENT
        for j in range(n):
            if not INC[j] > -math.inf:
                return False, _NO_TANGENT
        return True, _NO_TANGENT
    if not mx < math.inf:
        return False, _NO_TANGENT
    epm = 0.0
    eqm = 0.0
    edm = 0.0
    for j in range(n):
        epm = max(epm, EP[j])
        eqm = max(eqm, EQ[j])
        edm = max(edm, abs(EP[j] - rho * EQ[j]))
    pmax += epm
    qmax += eqm
    wb = perspective(code, param, xb, yb, A * block_diff(pre, pos[tb], b, pb, qb), lf)
    dpad = _TANGENT_PAD * A * (pmax + rho * qmax)
    dd = A * (dmax + edm) + dpad
    delta = _TANGENT_PAD * 0.25 * xb
    m0 = xb - _TANGENT_PAD * 0.5 * xb
    e = (dd + delta) * (dd + delta) / (2.0 * m0)
    base = wb + mx + e
    mag = abs(wb) + abs(mx) + e + 2.0 * hm + abs(pen)
    mag += abs(a1) * pmax + abs(a2) * qmax + A * (pmax + rho * qmax)
    slack = BOUND_SLACK_REL * mag + TANGENT_SLACK_MASS * (xb + yb + A * (pmax + qmax))
    if n == 0:
        u = base + (BOUND_SLACK_REL * abs(base) + slack)
        return u - pen < best, (wb, a1, a2, rho, A, dpad, delta, m0, slack)
    for j in range(n):
        u = base + (a1 * EP[j] - a2 * EQ[j])
        u = u + (BOUND_SLACK_REL * abs(u) + slack)
        if not u - pen < INC[j]:
            return False, _NO_TANGENT
    return True, _NO_TANGENT


@njit(cache=True, error_model="numpy")
def super_sums(pre, pos, GS, GR):
    """Per complete group g of ``GROUP`` positions: ``GR[0, g], GR[1, g]`` the sums of
    [pos[tb_g], pos[tb_sg]) from the group's last cut to its super group's last cut (complete
    super groups only), ``GR[2, g], GR[3, g]`` the largest ``GS[0, t]``, ``GS[1, t]`` of the group
    (:func:`group_sums`, already filled); for :func:`_super_tangent_prunes`."""
    m = pos.shape[0] - 1
    for g in range((m + 1) // GROUP):
        pm = 0.0
        qm = 0.0
        for t in range(g * GROUP, g * GROUP + GROUP):
            pm = max(pm, GS[0, t])
            qm = max(qm, GS[1, t])
        GR[2, g] = pm
        GR[3, g] = qm
    for sg in range((m + 1) // SUPER):
        send = sg * SUPER + SUPER - 1
        for g in range(sg * GROUP, sg * GROUP + GROUP):
            tb = g * GROUP + GROUP - 1
            if tb == send:
                GR[0, g] = 0.0
                GR[1, g] = 0.0
            else:
                dp, dq = block_sums(pre, pos[tb], pos[send])
                GR[0, g] = dp
                GR[1, g] = dq


@_inner
def _uncached_row(pre, pos, i, h, sc, pen, H, cnt, GH, SH, GS, GR, live, slive, ext):  # noqa: C901 - hot kernel
    """``(best, count, split)`` of end point ``i`` without a score cache (O(m) memory).

    The hint ``h`` is scored first (the incumbent); super groups, then groups, of split points
    are skipped by :func:`_box_prunes` (groups also by :func:`_tangent_prunes`); the rest are
    pruned one by one by :func:`score_bound`.  Ranges marked dead for the whole chunk of end
    points (``live``/``slive``, :func:`_chunk_prunes`) are skipped.  Ties as :func:`uncached_pass`.
    """
    code, param, c, A, lf = sc
    E0 = ext[0, :0]  # no chunk extension (_tangent_prunes)
    b = pos[i]
    dp, dq = block_sums(pre, pos[h], b)
    w = perspective(code, param, c + A * dp, c + A * dq, A * block_diff(pre, pos[h], b, dp, dq), lf)
    best = H[h] + (w - pen)
    bc = cnt[h] + 1
    bt = h
    for sg in range(i // SUPER + 1):
        s0 = sg * SUPER
        s1 = min(s0 + SUPER, i)
        if not slive[sg]:
            continue
        # (a super group holding the incumbent cannot be dropped)
        if (
            s1 - s0 == SUPER
            and not s0 <= h < s1
            and (
                _box_prunes(pre, pos, s0, s1 - 1, b, SH[sg], best, sc, pen)
                or _tangent_prunes(pre, pos, s0, s1 - 1, b, H, GH, GS, GR, E0, E0, E0, best, sc, pen)[0]
            )
        ):
            continue
        for g in range(s0 // GROUP, (s1 + GROUP - 1) // GROUP):
            t0 = g * GROUP
            t1 = min(t0 + GROUP, s1)
            if not live[g]:
                continue
            tan = _NO_TANGENT
            if t1 - t0 == GROUP and not t0 <= h < t1:  # (a group holding the incumbent stays)
                # KL: the tangent bound first; the box only where it did not run
                pruned = False
                if code == CODE_KL:
                    pruned, tan = _tangent_prunes(
                        pre, pos, t0, t1 - 1, b, H, GH, GS, GR, E0, E0, E0, best, sc, pen
                    )
                if pruned or (
                    not tan[7] > 0.0 and _box_prunes(pre, pos, t0, t1 - 1, b, GH[g], best, sc, pen)
                ):
                    continue
            for t in range(t0, t1):
                if t == h or _tangent_candidate(tan, H[t], GS[0, t], GS[1, t], pen) < best:
                    continue  # (the group's tangent bound for this candidate alone)
                dp, dq = block_sums(pre, pos[t], b)
                x = c + A * dp
                y = c + A * dq
                d = A * block_diff(pre, pos[t], b, dp, dq)
                w, exact = score_bound(code, param, x, y, d, lf)
                u = H[t] + (w - pen)
                if u < best:
                    continue
                if not exact:
                    w = perspective(code, param, x, y, d, lf)
                    u = H[t] + (w - pen)
                    if u < best:
                        continue
                n = cnt[t] + 1
                if u > best or (u == best and (n < bc or (n == bc and t < bt))):
                    best = u
                    bc = n
                    bt = t
    return best, bc, bt


@njit(cache=True, error_model="numpy")
def uncached_pass(pre, pos, sc, pen, H, cnt, par, hinted, GH, SH, GS, GR):
    r"""One Dinkelbach step without a score cache: :math:`H[i] = \max_{t<i} H[t] + (\mu'[pos_t:pos_i) - pen)`.

    Only the cut points listed in ``pos`` (increasing, ``pos[0] = 0``, ``pos[-1] = k``) are
    allowed.  Ties: the largest value, then the fewest blocks, then the smallest split point,
    the order of :func:`ldpopt.spr.reference._dp_readable`.  Fills ``H``, ``cnt`` (block count)
    and ``par`` (start of the last block, as a position index).  Nothing of size m^2 exists:
    :func:`_uncached_row` bounds whole groups of split points at once, with the maxima of H per
    group and super group kept in ``GH``/``SH`` (O(m) memory) and the sums of :func:`group_sums`
    and :func:`super_sums` in ``GS``/``GR``; pruning is exact as in :func:`cached_pass`.
    """
    m = pos.shape[0] - 1
    H[0] = 0.0
    cnt[0] = 0
    par[0] = 0
    live = np.ones(GH.shape[0], dtype=np.bool_)
    slive = np.ones(SH.shape[0], dtype=np.bool_)
    ext = np.zeros((3, GROUP))
    for i in range(1, m + 1):
        if i % GROUP == 0 and i >= 2 * GROUP:
            # a chunk of GROUP end points: drop the ranges of split points none of them needs
            _chunk_prunes(
                pre, pos, i, min(i + GROUP, m + 1), sc, pen, H, par, hinted, GH, SH, GS, GR, live, slive, ext
            )
        h = par[i] if hinted else par[i - 1]
        if h < 0 or h >= i:
            h = i - 1
        best, bc, bt = _uncached_row(pre, pos, i, h, sc, pen, H, cnt, GH, SH, GS, GR, live, slive, ext)
        H[i] = best
        cnt[i] = bc
        par[i] = bt
        if (i + 1) % GROUP == 0:  # group i // GROUP of split points is complete
            g = i // GROUP
            mx = H[i]
            for t in range(i - GROUP + 1, i):
                mx = max(mx, H[t])
            GH[g] = mx
            if (g + 1) % GROUP == 0:
                sg = g // GROUP
                mx = GH[g]
                for j in range(g - GROUP + 1, g):
                    mx = max(mx, GH[j])
                SH[sg] = mx


@njit(cache=True, error_model="numpy")
def cached_pass(pre, pos, sp, sq, val, state, sc, pen, H, cnt, par, hinted):
    r"""One Dinkelbach step over a score cache: :math:`H[i] = \max_{t<i} H[t] + (\mu'[pos_t:pos_i) - pen)`.

    Cut points, ties and outputs as :func:`uncached_pass`.  ``val``/``state`` is complete for
    this eps (bounds, exact scores or carried bounds) over the block sums ``sp``/``sq`` (packed
    lower triangles of the position space); bounds and exact scores persist across passes.

    Split points are pruned exactly.  Every candidate has an upper bound of its value (a
    cached score or bound); one candidate is scored exactly and becomes the incumbent - the
    hint ``par[i]`` (the previous pass's or previous eps's choice) when ``hinted``, else the
    candidate with the best bound; then only candidates whose bound reaches the incumbent are
    scored exactly.  A pruned candidate's computed value is strictly below the incumbent
    (rounding is monotone), so it can neither be the maximiser nor tie with it: the result
    equals the unpruned program's.
    """
    code, param, c, A, lf = sc
    m = pos.shape[0] - 1
    H[0] = 0.0
    cnt[0] = 0
    par[0] = 0
    for i in range(1, m + 1):
        base = i * (i - 1) // 2
        src = val[base : base + i]
        sts = state[base : base + i]
        dps = sp[base : base + i]
        dqs = sq[base : base + i]
        # the incumbent: the hint, or the candidate with the best bound
        h = par[i] if hinted else -1
        if h < 0 or h >= i:
            umax = -math.inf
            h = 0
            for t in range(i):
                u = H[t] + (src[t] - pen)
                if u > umax:
                    umax = u
                    h = t
        if sts[h] != _EXACT:
            dh = A * block_diff(pre, pos[h], pos[i], dps[h], dqs[h])
            src[h] = perspective(code, param, c + A * dps[h], c + A * dqs[h], dh, lf)
            sts[h] = _EXACT
        best = H[h] + (src[h] - pen)
        bc = cnt[h] + 1
        bt = h
        # only candidates whose bound reaches the incumbent are scored exactly (inline: helper
        # kernels here made the Figure-1b sweep 40 % slower)
        for t in range(i):
            u = H[t] + (src[t] - pen)
            if u < best or t == h:
                continue  # a bound strictly below the incumbent: provably not the maximiser
            st = sts[t]
            if st != _EXACT:
                x = c + A * dps[t]
                y = c + A * dqs[t]
                d = A * block_diff(pre, pos[t], pos[i], dps[t], dqs[t])
                if st == _CARRIED:
                    # a bound carried from a larger eps: tighten it first
                    w, exact = score_bound(code, param, x, y, d, lf)
                    src[t] = w
                    sts[t] = _EXACT if exact else _BOUND
                    u = H[t] + (w - pen)
                    if u < best:
                        continue
                    st = sts[t]
                if st != _EXACT:
                    w = perspective(code, param, x, y, d, lf)
                    src[t] = w
                    sts[t] = _EXACT
                    u = H[t] + (w - pen)
                    if u < best:
                        continue
            n = cnt[t] + 1
            if u > best or (u == best and (n < bc or (n == bc and t < bt))):
                best = u
                bc = n
                bt = t
        H[i] = best
        cnt[i] = bc
        par[i] = bt


@_inner
def _pass(pre, pos, sp, sq, val, state, sc, pen, H, cnt, par, hinted, GH, SH, GS, GR, with_uncached):
    """One penalised pass: :func:`cached_pass` when there is a score cache, else :func:`uncached_pass`.

    ``with_uncached`` None: the caller has a score cache, and :func:`uncached_pass` is not even
    compiled (numba prunes the branch before typing; see :func:`solve_item`).
    """
    if with_uncached is None:
        cached_pass(pre, pos, sp, sq, val, state, sc, pen, H, cnt, par, hinted)
    elif val.shape[0] > 0:
        cached_pass(pre, pos, sp, sq, val, state, sc, pen, H, cnt, par, hinted)
    else:
        uncached_pass(pre, pos, sc, pen, H, cnt, par, hinted, GH, SH, GS, GR)


@njit(cache=True, error_model="numpy")
def _traceback(pos, par, cnt, out):
    """Boundaries (symbol indices) of the partition ending at position m; returns the block count."""
    m = pos.shape[0] - 1
    nb = cnt[m]
    i = m
    j = nb
    out[j] = pos[m]
    while j > 0:
        i = par[i]
        j -= 1
        out[j] = pos[i]
    return nb


@njit(cache=True, error_model="numpy")
def dinkelbach_ws(pre, pos, sp, sq, val, state, hint, sc, bounds, nb, with_uncached=True):
    r"""Maximise :math:`\sum_t \mu'(B_t) / (1 + (s-1)c)` over partitions with cuts in ``pos``.

    ``bounds[:nb + 1]`` is a feasible start partition on entry and the optimum on exit.
    ``sp, sq, val, state`` is the cache of :func:`cached_pass` (all empty: none; else
    either all entries empty - it is then filled - or all valid for this eps: exact scores,
    bounds or carried bounds).  ``hint`` (length m + 1, or empty) holds each end point's split
    point of a previous solve (e.g. the neighbouring eps): tried first, and overwritten with
    this solve's.  ``with_uncached`` None: a variant without :func:`uncached_pass` (the cache
    must then be there; see :func:`solve_item`).  Returns ``(ratio, nb)``.

    Dinkelbach: with :math:`\lambda` the ratio of the current partition, one penalised pass
    maximises :math:`N(\pi) - \lambda D(\pi) = \sum_t(\mu'(B_t) - \lambda c) - \lambda(1-c)`;
    if the maximiser's ratio is larger it becomes the current partition, otherwise no
    partition beats :math:`\lambda` and the current one is optimal (``docs/fast.md``).
    An infinite ratio is returned as soon as it appears (the caller settles it).
    """
    c = sc[2]
    m = pos.shape[0] - 1
    H = np.empty(m + 1)
    cnt = np.empty(m + 1, dtype=np.int64)
    par = np.empty(m + 1, dtype=np.int64)
    cand = np.empty(m + 1, dtype=np.int64)
    nr = 0 if val.shape[0] > 0 else m // GROUP + 1
    GH = np.empty(nr)
    SH = np.empty(nr // GROUP + 1)
    GS = np.empty((2, m + 1 if nr > 0 else 0))
    GR = np.empty((4, nr))
    if with_uncached is not None:
        if nr > 0:
            group_sums(pre, pos, GS)
            super_sums(pre, pos, GS, GR)
    hinted = hint.shape[0] == m + 1
    if hinted:
        for i in range(m + 1):
            par[i] = hint[i]
    if state.shape[0] > 0 and state[0] == _EMPTY:
        # a cache is either empty (fresh) or complete for this eps (filled or carried)
        fill_cache(pre, pos, sp, sq, val, state, sc)
    if c == 0.0:
        # every partition has denominator 1: one unpenalised pass is the optimum
        _pass(pre, pos, sp, sq, val, state, sc, 0.0, H, cnt, par, hinted, GH, SH, GS, GR, with_uncached)
        nb = _traceback(pos, par, cnt, bounds)
        lam = partition_ratio(pre, bounds, nb, sc)
    else:
        lam = partition_ratio(pre, bounds, nb, sc)
        passes = 0
        while passes < MAX_DINKELBACH_STEPS and not math.isinf(lam):
            _pass(
                pre, pos, sp, sq, val, state, sc, lam * c, H, cnt, par, hinted, GH, SH, GS, GR, with_uncached
            )
            passes += 1
            hinted = True  # the previous pass's split points
            nb2 = _traceback(pos, par, cnt, cand)
            r = partition_ratio(pre, cand, nb2, sc)
            if r >= lam:
                # r == lam: the pass's maximiser (fewest blocks, smallest cuts) replaces an equal one
                improved = r > lam
                lam = r
                nb = nb2
                for j in range(nb + 1):
                    bounds[j] = cand[j]
                if not improved:
                    break
            else:
                break
        if passes == 0:
            return lam, nb
    if hint.shape[0] == m + 1:
        for i in range(m + 1):
            hint[i] = par[i]
    return lam, nb


@njit(cache=True, error_model="numpy")
def _new_cache(pre, pos):
    """Empty score cache for the cut points ``pos`` (no cache above ``SCORE_CACHE_MAX_K``)."""
    m = pos.shape[0] - 1
    if m <= SCORE_CACHE_MAX_K:
        sp, sq = sums_tables(pre, pos)
        n = sp.shape[0]
    else:
        sp = np.empty(0)
        sq = np.empty(0)
        n = 0
    return sp, sq, np.empty(n), np.zeros(n, dtype=np.uint8)


@njit(cache=True, error_model="numpy")
def best_two_blocks(pre, k, sc, bounds):
    """Best partition into at most two blocks, O(k): a cheap, usually good, Dinkelbach start."""
    c = sc[2]
    z = np.int64(0)  # not a literal: one compiled specialisation of score
    best = score(pre, z, k, sc)
    bt = 0
    for t in range(1, k):
        v = (score(pre, z, t, sc) + score(pre, t, k, sc)) / (1.0 + c)
        if v > best:
            best = v
            bt = t
    bounds[0] = 0
    if bt == 0:
        bounds[1] = k
        return 1
    bounds[1] = bt
    bounds[2] = k
    return 2


# ---------------------------------------------------------------------------------------------
# Output budget: the O(l k^2) program of Prop. 3.3 (mirror of reference._dp_readable)
# ---------------------------------------------------------------------------------------------
@_inner
def _budget_row(pre, pos, i, s, h, sc, prev, GH, SH, W, EX, stamp, tries, GS, GR, live, slive, ext):  # noqa: C901, E501 - hot kernel
    """``(best, split)`` of ``F[s, i] = max_{t >= s-1} prev[t] + mu'[t:i)``, pruned first.

    The incumbent ``h`` is scored first; then super groups and groups of split points are
    skipped by :func:`_box_prunes` (``GH``/``SH``: maxima of ``prev`` over complete groups),
    the survivors pruned one by one by :func:`score_bound`, and only the rest scored exactly.
    Bounds and exact scores of the end point ``i`` are kept in ``W`` (valid where
    ``stamp[t] == i``; exact where ``EX[t]``) for the other block counts.  Ties go to the
    smallest split point (numpy's argmax), so the result is the unpruned program's: a pruned
    candidate's computed value is strictly below the incumbent.
    """
    code, param, c, A, lf = sc
    has_bound = _has_bound(code)
    E0 = ext[0, :0]  # no chunk extension (_tangent_prunes)
    if stamp[h] != i or not EX[h]:
        dp, dq = block_sums(pre, h, i)
        W[h] = perspective(code, param, c + A * dp, c + A * dq, A * block_diff(pre, h, i, dp, dq), lf)
        EX[h] = True
        stamp[h] = i
    best = prev[h] + W[h]
    bt = h
    lo = s - 1
    for sg in range(lo // SUPER, i // SUPER + 1):
        s0 = max(sg * SUPER, lo)
        s1 = min(sg * SUPER + SUPER, i)
        if s1 <= s0:
            continue
        if not slive[sg]:
            continue
        # (a super group holding the incumbent cannot be dropped)
        if (
            s1 - s0 == SUPER
            and not s0 <= h < s1
            and (
                _box_prunes(pre, pos, s0, s1 - 1, i, SH[sg], best, sc, 0.0)
                or _tangent_prunes(pre, pos, s0, s1 - 1, i, prev, GH, GS, GR, E0, E0, E0, best, sc, 0.0)[0]
            )
        ):
            continue
        for g in range(s0 // GROUP, (s1 + GROUP - 1) // GROUP):
            t0 = max(g * GROUP, s0)
            t1 = min(g * GROUP + GROUP, s1)
            if not live[g]:
                continue
            tan = _NO_TANGENT
            if t1 - t0 == GROUP and (tries[0] < 64 or 4 * tries[1] >= tries[0] or g % 8 == 0):
                # group tests cost four score bounds: kept up while at least a quarter succeed
                # (else one group in eight keeps probing); which groups are tested changes the
                # work, never the result
                tries[0] += 1
                pruned = False
                if not t0 <= h < t1:  # (a group holding the incumbent cannot be dropped)
                    # KL: the tangent bound first; the box only where it did not run
                    if code == CODE_KL:
                        pruned, tan = _tangent_prunes(
                            pre, pos, t0, t1 - 1, i, prev, GH, GS, GR, E0, E0, E0, best, sc, 0.0
                        )
                    if not pruned and not tan[7] > 0.0:
                        pruned = _box_prunes(pre, pos, t0, t1 - 1, i, GH[g], best, sc, 0.0)
                if pruned:
                    tries[1] += 1
                    continue
            for t in range(t0, t1):
                if t == h or _tangent_candidate(tan, prev[t], GS[0, t], GS[1, t], 0.0) < best:
                    continue  # (the group's tangent bound for this candidate alone)
                if stamp[t] != i:
                    # first visit at this end point: a bound at any difference block_diff can
                    # return (bounds_into's), or the exact score for the cheap divergences
                    dp, dq = block_sums(pre, t, i)
                    if has_bound:
                        w = _bound_one(code, c + A * dp, c + A * dq, A * _wide_diff(dp, dq))
                        W[t] = w if w == w else math.inf
                        EX[t] = False
                    else:
                        W[t] = perspective(
                            code, param, c + A * dp, c + A * dq, A * block_diff(pre, t, i, dp, dq), lf
                        )
                        EX[t] = True
                    stamp[t] = i
                v = prev[t] + W[t]
                if v < best:
                    continue
                if not EX[t]:
                    dp, dq = block_sums(pre, t, i)
                    W[t] = perspective(
                        code, param, c + A * dp, c + A * dq, A * block_diff(pre, t, i, dp, dq), lf
                    )
                    EX[t] = True
                    v = prev[t] + W[t]
                    if v < best:
                        continue
                if v > best or t < bt:
                    best = v
                    bt = t
    return best, bt


@njit(cache=True, error_model="numpy")
def budget_dp(pre, k, l, sc, bounds):
    r"""Best partition into at most ``l`` blocks: ``F[s, i] = max_t F[s-1, t] + mu'[t:i)``.

    Same recursion, masks, accumulation order and tie-breaking (smallest split point,
    smallest block count) as :func:`ldpopt.spr.reference._dp_readable`, pruned before anything
    is computed for a pair (t, i): every row (:func:`_budget_row`) first bounds whole groups of
    split points (their block sums lie in a box, :func:`_box_prunes`, against the maxima of
    ``F[s-1]`` over the group), then single split points by :func:`score_bound`, and scores
    only what survives; the incumbent is the previous end point's split point.  O(l k)
    memory.  Row ``l`` is only needed at ``i = k``.  Returns ``(ratio, nb)``.
    """
    c = sc[2]
    F = np.full((l + 1, k + 1), -math.inf)
    par = np.zeros((l + 1, k + 1), dtype=np.int64)
    pos = np.arange(k + 1)
    W = np.empty(k + 1)
    # W[t] holds a bound (EX[t] false) or the exact score of [t, i) when stamp[t] == i
    EX = np.zeros(k + 1, dtype=np.bool_)
    stamp = np.zeros(k + 1, dtype=np.int64)
    tries = np.zeros((l + 1, 2), dtype=np.int64)  # group tests per row: attempted, succeeded
    ng = k // GROUP + 1
    GH = np.full((l + 1, ng), -math.inf)  # maxima of F[s] over complete groups of split points
    SH = np.full((l + 1, ng // GROUP + 1), -math.inf)  # ... and super groups
    GS = np.empty((2, k + 1))
    GR = np.empty((4, ng))
    group_sums(pre, pos, GS)
    super_sums(pre, pos, GS, GR)
    live = np.ones((l + 1, ng), dtype=np.bool_)  # per row: ranges some end point of the chunk needs
    slive = np.ones((l + 1, ng // GROUP + 1), dtype=np.bool_)
    ext = np.zeros((3, GROUP))
    z = np.int64(0)
    for i in range(1, k + 1):
        smax = min(l, i) if i == k else min(l - 1, i)
        if i % GROUP == 0 and i >= 2 * GROUP:
            # a chunk of GROUP end points: per row, drop the ranges of split points none needs
            i1 = min(i + GROUP, k + 1)
            for s in range(2, min(l, i1 - 1) + 1):
                _chunk_prunes(
                    pre,
                    pos,
                    i,
                    i1,
                    sc,
                    0.0,
                    F[s - 1],
                    par[s],
                    np.bool_(False),  # not a literal: one compiled specialisation
                    GH[s - 1],
                    SH[s - 1],
                    GS,
                    GR,
                    live[s],
                    slive[s],
                    ext,
                )
        F[1, i] = score(pre, z, np.int64(i), sc)
        for s in range(2, smax + 1):
            h = par[s, i - 1] if i - 1 >= s else s - 1
            if h < s - 1 or h >= i:
                h = s - 1
            best, bt = _budget_row(
                pre,
                pos,
                i,
                s,
                h,
                sc,
                F[s - 1],
                GH[s - 1],
                SH[s - 1],
                W,
                EX,
                stamp,
                tries[s],
                GS,
                GR,
                live[s],
                slive[s],
                ext,
            )
            F[s, i] = best
            par[s, i] = bt
        if (i + 1) % GROUP == 0:  # group i // GROUP of split points is complete in every row
            g = i // GROUP
            for s in range(1, l):
                mx = F[s, i]
                for t in range(i - GROUP + 1, i):
                    mx = max(mx, F[s, t])
                GH[s, g] = mx
                if (g + 1) % GROUP == 0:
                    sg = g // GROUP
                    mx = GH[s, g]
                    for j in range(g - GROUP + 1, g):
                        mx = max(mx, GH[s, j])
                    SH[s, sg] = mx
    s_star = 1
    best_ratio = -math.inf
    for s in range(1, l + 1):
        r = F[s, k] / (1.0 + (s - 1) * c)
        if r > best_ratio:
            best_ratio = r
            s_star = s
    i = k
    bounds[s_star] = k
    for s in range(s_star, 1, -1):
        i = par[s, i]
        bounds[s - 1] = i
    bounds[0] = 0
    return best_ratio, s_star


# ---------------------------------------------------------------------------------------------
# One solve: unconstrained first, the budget program only when it is needed
# ---------------------------------------------------------------------------------------------
@njit(cache=True, error_model="numpy")
def _refine_width(k, g, nb):
    """Half-width of the windows around the ``nb - 1`` cuts of a coarse optimum (0: do not refine).

    ``COARSE_WINDOW_GROUPS`` coarse groups, narrowed so that the windows hold at most
    ``COARSE_REFINE_MAX + 1`` cut points (a pass over them stays cheap): with many blocks the
    windows shrink rather than the refinement being skipped.
    """
    if nb < 2:
        return 0
    w = COARSE_WINDOW_GROUPS * ((k + g - 1) // g)
    return min(w, (COARSE_REFINE_MAX // (nb - 1) - 1) // 2)


@njit(cache=True, error_model="numpy")
def _coarse_start(pre, k, sc, bounds, with_uncached=True):
    """Start for large k: the optimum over cuts on a coarse grid, refined around its cuts.

    Any partition is a valid Dinkelbach start; a good one saves full O(k^2) passes.  The
    refinement (every cut within :func:`_refine_width` of a current cut) is repeated until the
    cuts stop moving, at most ``COARSE_REFINES`` times.  Returns the block count written to
    ``bounds``.  ``with_uncached`` is never None (refinements may exceed the score cache's size);
    it is passed on so that :func:`dinkelbach_ws` has one compiled signature per caller's type.
    """
    g = min(COARSE_GROUPS, k)
    pos = np.empty(g + 1, dtype=np.int64)
    for j in range(g + 1):
        pos[j] = (j * k) // g
    bounds[0] = 0
    bounds[1] = k
    nb = np.int64(1)
    prev = np.empty(k + 1, dtype=np.int64)
    for rnd in range(COARSE_REFINES + 1):
        nb_prev = nb
        for j in range(nb + 1):
            prev[j] = bounds[j]
        sp, sq, val, state = _new_cache(pre, pos)
        nb = dinkelbach_ws(
            pre, pos, sp, sq, val, state, np.empty(0, dtype=np.int64), sc, bounds, nb, with_uncached
        )[1]
        if rnd > 0 and nb == nb_prev:
            moved = False
            for j in range(nb + 1):
                moved = moved or bounds[j] != prev[j]
            if not moved:
                break
        w = _refine_width(k, g, nb)
        if rnd == COARSE_REFINES or w < 1:
            break
        # refine: allow every cut within w of a cut
        mark = np.zeros(k + 1, dtype=np.bool_)
        mark[0] = True
        mark[k] = True
        for j in range(1, nb):
            for t in range(max(0, bounds[j] - w), min(k, bounds[j] + w) + 1):
                mark[t] = True
        m = 0
        for t in range(k + 1):
            m += mark[t]
        pos = np.empty(m, dtype=np.int64)
        m = 0
        for t in range(k + 1):
            if mark[t]:
                pos[m] = t
                m += 1
    return nb


@njit(cache=True, error_model="numpy")
def solve_ws(
    pre,
    k,
    l,
    sc,
    bounds,
    nwarm,
    sp,
    sq,
    val,
    state,
    hint,
    with_coarse=True,
    with_uncached=True,
    with_budget=True,
):
    """Optimal raw value and partition of one reduced instance with budget ``l`` (1 <= l <= k).

    ``bounds`` (length k + 1) receives the block boundaries; on entry ``bounds[:nwarm + 1]``
    is a start partition when ``nwarm > 0`` (e.g. the optimum at a neighbouring eps).
    ``sp, sq, val, state`` is the score cache over all cut points (see
    :func:`cached_pass`; empty arrays: none) and ``hint`` the split points of a previous
    solve (see :func:`dinkelbach_ws`; empty: none).  Returns ``(raw, nb, method)``, method
    0 = Dinkelbach, 1 = budget program, 2 = one block (k = 1 or l = 1).

    ``with_coarse``, ``with_uncached``, ``with_budget`` None: a reduced variant, compiled without
    :func:`_coarse_start`, :func:`uncached_pass` or :func:`budget_dp` (numba prunes ``is None``
    branches of NoneType arguments before typing).  A solve that would need a missing part stops
    and returns ``method = NEEDS_FULL`` (its other outputs are meaningless); any other return
    is what the full kernel returns, bit for bit (the same code, only untaken branches removed).
    """
    c = sc[2]
    first = _start(k, l, c)
    if first == _policy.START_SINGLE:
        bounds[0] = 0
        bounds[1] = k
        return score(pre, np.int64(0), k, sc) / 1.0, np.int64(1), np.int64(_policy.SINGLE)
    if first == _policy.START_UNPENALISED:
        nb = np.int64(1)
        bounds[0] = 0
        bounds[1] = k
    else:
        if nwarm > 0:
            nb = nwarm
        else:
            nb = best_two_blocks(pre, k, sc, bounds)
        if k > COARSEN_MIN_K:
            if with_coarse is None:
                return math.nan, np.int64(0), np.int64(NEEDS_FULL)
            if with_uncached is None:  # the coarse start's refinements may exceed the cache
                return math.nan, np.int64(0), np.int64(NEEDS_FULL)
            alt = np.empty(k + 1, dtype=np.int64)
            nb_alt = _coarse_start(pre, k, sc, alt, with_uncached)
            if partition_ratio(pre, alt, nb_alt, sc) > partition_ratio(pre, bounds, nb, sc):
                nb = nb_alt
                for j in range(nb + 1):
                    bounds[j] = alt[j]
    if with_uncached is None:
        if val.shape[0] == 0:  # no score cache: only the uncached pass can solve it
            return math.nan, np.int64(0), np.int64(NEEDS_FULL)
    pos = np.arange(k + 1)
    raw, nb = dinkelbach_ws(pre, pos, sp, sq, val, state, hint, sc, bounds, nb, with_uncached)
    # an infinite score, near-ties between block counts or a binding budget: the budget
    # program settles the answer (ldpopt.spr._policy.settle)
    budget, method = _settle(raw, nb, k, l, c)
    if budget > 0:
        if with_budget is None:
            return raw, nb, np.int64(NEEDS_FULL)
        raw, nb = budget_dp(pre, k, budget, sc, bounds)
    return raw, nb, np.int64(method)


# ---------------------------------------------------------------------------------------------
# Small problems: exact score tables (ldpopt.spr._fast's table path, docs/fast.md section 6)
# ---------------------------------------------------------------------------------------------
# These three kernels call nothing that is compiled on its own (block_sums is inlined at the
# IR level: _block_sums_inline), so a fresh process compiles them in about a second: the pruned solvers above
# link a dozen dispatchers into each other and take 10-15 s to compile.  The scores
# themselves are evaluated by numpy (divergences._perspective_array), exactly as
# reference._dp_readable evaluates them.  Keep them free of calls to other @njit functions (and of
# numpy allocations, which compile helpers too): tests/spr/test_kernels.py checks which kernels a
# small solve touches, benchmarks/bench_fast.py measures the first call.
# block_sums and block_diff inlined at the IR level (a numba-level inline re-types the body at
# every call site, which is why the pruned kernels call the dispatchers above instead; here it
# keeps the table kernels free of other dispatchers).  Never called on their own, so they never
# compile (or write a cache entry) under the py_func's name.
_block_sums_inline = njit(cache=True, error_model="numpy", inline="always")(
    getattr(block_sums, "py_func", block_sums)
)
_block_diff_inline = njit(cache=True, error_model="numpy", inline="always")(
    getattr(block_diff, "py_func", block_diff)
)


@njit(cache=True, error_model="numpy")
def table_args(pre, c, A, i0, i1, x, y, d):
    """Perspective arguments of the blocks [t, i), t < i, for the end points i0 <= i < i1.

    ``x = c + A dP``, ``y = c + A dQ``, ``d = A (dP - dQ)`` with the block sums of
    :func:`block_sums` (those of ``reduction._Prefix.sums``), in packed order: block [t, i) at
    ``i (i - 1) / 2 + t - i0 (i0 - 1) / 2``; ``pre`` as ``reduction._Prefix.table``.
    """
    j = 0
    for i in range(i0, i1):
        for t in range(i):
            dp, dq = _block_sums_inline(pre, t, i)
            x[j] = c + A * dp
            y[j] = c + A * dq
            d[j] = A * _block_diff_inline(pre, t, i, dp, dq)
            j += 1


@njit(cache=True, error_model="numpy")
def table_pass(S, k, pen, H, cnt, par):
    r"""One Dinkelbach step over the exact score table ``S`` (packed as :func:`table_args`).

    :math:`H[i] = \max_{t<i} H[t] + (\mu'[t:i) - pen)` with the ties of :func:`cached_pass`
    (largest value, then fewest blocks, then smallest split point), so it returns what
    :func:`cached_pass` returns for the same scores; ``cnt`` receives the block counts
    and ``par`` the split points.
    """
    H[0] = 0.0
    cnt[0] = 0
    par[0] = 0
    for i in range(1, k + 1):
        base = i * (i - 1) // 2
        best = H[0] + (S[base] - pen)
        bc = cnt[0] + 1
        bt = 0
        for t in range(1, i):  # increasing t: an equal (value, count) keeps the smaller t
            u = H[t] + (S[base + t] - pen)
            if u < best:
                continue
            n = cnt[t] + 1
            if u > best or (u == best and n < bc):
                best = u
                bc = n
                bt = t
        H[i] = best
        cnt[i] = bc
        par[i] = bt


@njit(cache=True, error_model="numpy")
def table_budget_dp(S, k, l, c, F, par, bounds):
    r"""Best partition into at most ``l`` blocks over the score table ``S``; returns ``(ratio, nb)``.

    The recursion :math:`F[s, i] = \max_{t \ge s-1} F[s-1, t] + \mu'[t:i)` of
    :func:`ldpopt.spr.reference._dp_readable` with its tie-breaking: every maximum is numpy's
    ``argmax`` (the first maximum, or the first NaN), over the split points and over the
    block counts.  ``F`` (filled with -inf) and ``par`` are (l + 1, k + 1) scratch arrays,
    allocated by the caller (numpy's allocators would add half a second of compilation);
    row ``l`` is only computed at ``i = k``.
    """
    for i in range(1, k + 1):
        base = i * (i - 1) // 2
        F[1, i] = S[base]
        smax = min(l, i) if i == k else min(l - 1, i)
        for s in range(2, smax + 1):
            prev = F[s - 1]
            best = prev[s - 1] + S[base + s - 1]
            bt = s - 1
            if best == best:
                for t in range(s, i):
                    v = prev[t] + S[base + t]
                    if v > best:
                        best = v
                        bt = t
                    elif v != v:
                        best = v
                        bt = t
                        break
            F[s, i] = best
            par[s, i] = bt
    s_star = 1
    best_ratio = F[1, k]
    if best_ratio == best_ratio:
        for s in range(2, l + 1):
            r = F[s, k] / (1.0 + (s - 1) * c)
            if r > best_ratio or r != r:
                best_ratio = r
                s_star = s
                if r != r:
                    break
    i = k
    bounds[s_star] = k
    for s in range(s_star, 1, -1):
        i = par[s, i]
        bounds[s - 1] = i
    bounds[0] = 0
    return best_ratio, s_star


# ---------------------------------------------------------------------------------------------
# Sweeps: many (instance, eps) cells
# ---------------------------------------------------------------------------------------------
@njit(cache=True, error_model="numpy", nogil=True)
def solve_item(
    pres,
    pre_off,
    ks,
    ls,
    t,
    e0,
    e1,
    order,
    code,
    param,
    cs,
    As,
    lfs,
    raw_out,
    nb_out,
    meth_out,
    bounds_out,
    bounds_off,
    with_coarse=True,
    with_uncached=True,
    with_budget=True,
):
    """Instance ``t`` at the eps indices ``order[e0:e1]`` (by decreasing eps), sequentially.

    The block sums are computed once (they do not depend on eps), every solve is warm-started
    from the previous eps's optimum and, for KL, reverse KL and JS, the cached scores and
    bounds are carried down to the next eps as bounds (:func:`carry_bounds`).  ``pres``
    holds every instance's (PRE_ROWS, k+1) prefix table flattened, instance ``t`` at
    ``pre_off[t]``.  Results go to ``raw_out[t, e]``, ``nb_out[t, e]``, ``meth_out[t, e]``
    and, when ``bounds_out`` is not empty, the block boundaries to
    ``bounds_out[bounds_off[t, e]:]``.  Releases the GIL, so items run in parallel threads.

    ``with_coarse``, ``with_uncached``, ``with_budget``: None compiles a reduced variant without
    that part of the solver (see :func:`solve_ws`; a cold sweep compiles only what its cells can
    need, ``docs/fast.md``).  Returns True when every cell was solved; False when a cell needed a
    missing part: the item stops there (its cells so far are written, the rest not), and the
    caller solves the whole item again with a variant that has it (the same computation as the
    full kernel's, warm starts included).  The code ``code`` may be a :class:`LiteralCode`.
    """
    k = ks[t]
    o = pre_off[t]
    pre = np.empty((PRE_ROWS, k + 1))
    for r in range(PRE_ROWS):
        for i in range(k + 1):
            pre[r, i] = pres[o + r * (k + 1) + i]
    sp, sq, val, state = _new_cache(pre, np.arange(k + 1))
    carry_ok = code == CODE_KL or code == CODE_REVERSE_KL or code == CODE_JS
    bounds = np.zeros(k + 1, dtype=np.int64)
    hint = np.full(k + 1, -1, dtype=np.int64)  # no split-point hints yet
    nwarm = np.int64(0)  # not a literal: one compiled specialisation of solve_ws
    c_prev = 0.0
    A_prev = 0.0
    for idx in range(e0, e1):
        e = order[idx]
        c = cs[e]
        A = As[e]
        if carry_ok and c_prev > 0.0 and c > 0.0 and A <= A_prev:
            carry_bounds(val, state, sp, sq, c_prev, A_prev, c, A)
        else:
            state[:] = _EMPTY
        raw, nb, m = solve_ws(
            pre,
            k,
            ls[t],
            (code, param, c, A, lfs[e]),
            bounds,
            nwarm,
            sp,
            sq,
            val,
            state,
            hint,
            with_coarse,
            with_uncached,
            with_budget,
        )
        if m == NEEDS_FULL:
            return False
        c_prev = c
        A_prev = A
        raw_out[t, e] = raw
        nb_out[t, e] = nb
        meth_out[t, e] = m
        nwarm = nb
        if bounds_out.shape[0] > 0:
            b0 = bounds_off[t, e]
            for j in range(nb + 1):
                bounds_out[b0 + j] = bounds[j]
    return True
