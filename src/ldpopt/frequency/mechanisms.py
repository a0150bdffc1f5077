r"""The frequency oracles people deploy, exactly: their channels, verified eps, standard estimators
and the exact variances of those estimators.

Every mechanism here is a *pure* protocol (Wang et al. 2017, "Locally differentially private
protocols for frequency estimation"): a report :math:`y` *supports* a set :math:`S_y` of items,
and

.. math::  p^* = \Pr[x \in S_Y \mid \text{input } x], \qquad q^* = \Pr[x \in S_Y \mid \text{input } v \ne x]

are the same for every item.  The standard (literature) estimator from n reports is
:math:`\hat f_x = (C_x/n - q^*)/(p^* - q^*)` with :math:`C_x` the number of reports supporting
x.  It is unbiased; the indicator :math:`1[x \in S_Y]` is Bernoulli with
:math:`\pi_x = q^* + f_x (p^* - q^*)`, so, for n = 1 (errors scale as 1/n), **exactly**

.. math::  \operatorname{Var}\hat f_x = \frac{\pi_x (1 - \pi_x)}{(p^* - q^*)^2}.

``variance_uniform`` is :math:`\sum_x \operatorname{Var}\hat f_x` at the uniform input
distribution and ``worst_case`` its supremum over the simplex.  The sum equals
:math:`[k q^*(1-q^*) + (p^*-q^*)(1-2q^*) - (p^*-q^*)^2 \sum_x f_x^2]/(p^*-q^*)^2`, largest where
:math:`\sum_x f_x^2` is smallest: at the uniform distribution, so ``worst_case`` equals
``variance_uniform`` for every mechanism of this module (it need not for other channels or
other estimators).

The mechanisms (``e = e^eps``):

================  =================================================  ==========================
name              report                                             :math:`(p^*, q^*)`
================  =================================================  ==========================
``grr``           one item (generalized / k-ary randomized response)  e/(e+k-1), 1/(e+k-1)
``sue``           k bits, each kept w.p. e^(eps/2)/(e^(eps/2)+1)       that, 1/(e^(eps/2)+1)
``oue``           k bits, bit x w.p. 1/2, others w.p. 1/(e+1)          1/2, 1/(e+1)
``basic_rappor``  SUE under RAPPOR's name and parameter f (below)      1-f/2, f/2
``olh``           (hash seed, value in [g])                           e/(e+g-1), 1/g
``subset``        a d-subset of the items (Ye-Barg / Wang et al.)      d e/(d e+k-d), below
``hadamard``      one of K = 2^ceil(log2(k+1)) Hadamard columns         e/(e+1), 1/2
================  =================================================  ==========================

* **Basic RAPPOR** (Erlingsson, Pihur, Korolova 2014) is taken in its one-time, one-hash form:
  a Bloom filter with h = 1 hash and k bits, i.e. the one-hot vector of the item (no collisions),
  privatized by the permanent randomized response with parameter f (each bit set to 1 w.p. f/2,
  to 0 w.p. f/2, kept w.p. 1 - f), and no instantaneous randomized response.  Its privacy is
  :math:`\varepsilon = 2 \ln((1 - f/2)/(f/2))` (the paper's :math:`\varepsilon_\infty` with
  h = 1), so :math:`f = 2/(e^{\varepsilon/2} + 1)` and the mechanism *is* SUE.
* **OLH** (optimized local hashing) hashes the item with a hash function drawn per report from
  a family and applies g-ary randomized response to the hash value; g defaults to
  :math:`\operatorname{round}(e^\varepsilon + 1)`, Wang et al.'s optimum.  The exact variance is
  that of a fully random hash family (:math:`q^* = 1/g` exactly).  The hash used to privatize
  and to read reports is ``splitmix64(seed * 2^32 + x) mod g`` (:func:`olh_hash`), a 32-bit seed
  per report.  Its channel (for small k and g) is the one of the fully random family, its
  outputs (hash, value) grouped by the support set :math:`S = h^{-1}(value)` (the grouping loses
  nothing: the columns of one group are proportional):
  :math:`\Pr[S \mid x] = g^{1-|S|}(1-1/g)^{k-|S|}\,a_x` with :math:`a_x = p^*` for
  :math:`x \in S`, :math:`(1-p^*)/(g-1)` otherwise.
* **Subset selection** reports a d-subset :math:`S` with :math:`\Pr[S \mid x] \propto e` when
  :math:`x \in S`, 1 otherwise; :math:`q^* = d((d-1)e + k-d)/((k-1)(d e + k - d))`.  The
  optimal d is about :math:`k/(e^\varepsilon + 1)`; :func:`subset_sizes` gives both roundings
  (clipped to [1, k-1]).
* **Hadamard response** (Acharya, Sun, Zhang 2019, the one-block form): item x has the set
  :math:`C_x` of the K/2 columns where row x + 1 of the Sylvester Hadamard matrix is +1, the
  report is a column, drawn from :math:`C_x` w.p. e/(e+1) (uniformly inside either set).

Report formats (:meth:`FrequencyMechanism.privatize`, :meth:`FrequencyMechanism.supports`):

* ``grr``: output indices in ``range(k)``; ``hadamard``: column indices in ``range(K)``;
* ``sue``, ``oue``, ``basic_rappor``: an (n, k) array of 0/1 bits;
* ``olh``: an (n, 2) integer array of (seed, value) pairs, seed in [0, 2^32), value in [0, g);
* ``subset``: an (n, d) integer array, each row the d distinct items of the subset.

Channels (:meth:`FrequencyMechanism.channel`) are built where they are small enough: unary
encodings have :math:`2^k` outputs (column of bit vector b = the integer
:math:`\sum_i b_i 2^i`), OLH's grouped channel :math:`2^k` (column of support set S = its bit
mask), subset selection :math:`\binom{k}{d}` (columns in lexicographic order of the subsets).
Their privacy level is then verified from the channel matrix (max log ratio over each column);
otherwise from the two levels every column takes (:meth:`FrequencyMechanism.column_levels`),
computed from the report probabilities, not from the eps formula.  The off-support
probabilities :math:`1 - p^*` and :math:`1 - q^*` are closed forms in :math:`c = e^{-\varepsilon}`
(never ``1.0 - p``, which rounds the :math:`e^{-\varepsilon}` term away once :math:`p^*` rounds
to 1), so the channels are built and verified at every eps up to the underflow of
:math:`e^{-\varepsilon}` (eps ~ 745).

``privatize`` draws with numpy's ``Generator``: it is for simulations and tests, not an exact
sampler (use :mod:`ldpopt.deploy` with a channel for that).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ldpopt._numerics import min_positive_c
from ldpopt._validation import SUM_TOL, check_eps, is_integer, short_repr
from ldpopt.frequency import objectives
from ldpopt.mechanism import Mechanism

__all__ = [
    "CHANNEL_MAX_ENTRIES",
    "KINDS",
    "OLH_DEFAULT_G_MAX_EPS",
    "OLH_G_MAX",
    "OLH_SEED_BITS",
    "FrequencyMechanism",
    "basic_rappor",
    "check_k",
    "check_mechanism_eps",
    "deployed",
    "grr",
    "hadamard_response",
    "make",
    "olh",
    "olh_hash",
    "oue",
    "subset_selection",
    "subset_sizes",
    "sue",
]

#: a channel is built only when it has at most this many entries (k x outputs; 32 MiB of float64)
CHANNEL_MAX_ENTRIES = 2**22
#: OLH reports carry a hash seed of this many bits
OLH_SEED_BITS = 32
#: largest OLH hash range g: reports hold hash values in int64 and the hash reduces a uint64
#: modulo g, so g must fit comfortably in int64 (2^62 leaves room for g - 1 + offsets in _rr)
OLH_G_MAX = 2**62
#: OLH's default g = round(e^eps + 1) is given up to this eps: at 40, g ~ 2.4e17 < OLH_G_MAX
#: (e^43 ~ 4.7e18 > 2^62 ~ 4.6e18); above, the caller must give g
OLH_DEFAULT_G_MAX_EPS = 40.0
#: the mechanisms of this module, by name
KINDS = ("grr", "sue", "oue", "basic_rappor", "olh", "subset", "hadamard")

_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def check_k(k: Any) -> int:
    """The number of items: an integer >= 2 (numpy integers accepted), naming ``k``."""
    if not is_integer(k):
        raise TypeError(f"k must be an integer, got k={short_repr(k)}")
    if int(k) < 2:
        raise ValueError(f"k must be >= 2, got k={k!r}")
    return int(k)


def check_mechanism_eps(eps: Any) -> float:
    """A finite eps > 0 whose e^-eps does not underflow (the channels' low level), naming ``eps``."""
    e = check_eps(eps, "eps", allow_inf=False)
    min_positive_c(e, "eps")
    return e


def _check_size(value: Any, name: str, lo: int, hi: int | None) -> int:
    if not is_integer(value):
        raise TypeError(f"{name} must be an integer, got {name}={short_repr(value)}")
    v = int(value)
    if v < lo or (hi is not None and v > hi):
        top = "" if hi is None else f" and <= {hi}"
        raise ValueError(f"{name} must be >= {lo}{top}, got {name}={value!r}")
    return v


@dataclass(frozen=True)
class FrequencyMechanism:
    r"""A deployed frequency oracle on k items at privacy eps (see the module docstring).

    ``size`` is the mechanism's own size parameter: OLH's hash range g (default
    round(e^eps + 1)), subset selection's d (default: the floor rounding of k/(e^eps + 1)),
    Hadamard response's K (always 2^ceil(log2(k+1))); None for the others.  ``p`` and ``q``,
    :math:`p^*` and :math:`q^*`, are derived from the rest.  Build one with
    ``FrequencyMechanism(kind, k, eps, size)``, :func:`make` or :func:`grr`, :func:`sue`,
    :func:`oue`, :func:`basic_rappor`, :func:`olh`, :func:`subset_selection`,
    :func:`hadamard_response`.
    """

    kind: str
    k: int
    eps: float
    size: int | None = None
    p: float = field(init=False)
    q: float = field(init=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got kind={short_repr(self.kind)}")
        k, eps = check_k(self.k), check_mechanism_eps(self.eps)
        size = _check_kind_size(self.kind, k, eps, self.size)
        p, q = _support_levels(self.kind, k, eps, size)
        for name, value in (("k", k), ("eps", eps), ("size", size), ("p", p), ("q", q)):
            object.__setattr__(self, name, value)

    # --- description --------------------------------------------------------------------
    @property
    def label(self) -> str:
        """A short name: ``GRR``, ``OLH(g=4)``, ``subset(d=3)``, ``RAPPOR(f=0.75)``..."""
        if self.kind == "olh":
            return f"OLH(g={self.size})"
        if self.kind == "subset":
            return f"subset(d={self.size})"
        if self.kind == "hadamard":
            return f"HR(K={self.size})"
        if self.kind == "basic_rappor":
            return f"RAPPOR(f={self.rappor_f:.4g})"
        return self.kind.upper()

    @property
    def rappor_f(self) -> float:
        """RAPPOR's permanent-randomized-response parameter f = 2 q (2/(e^(eps/2)+1))."""
        return 2.0 * self.q

    @property
    def num_outputs(self) -> int:
        """Number of distinct reports (OLH: hash values times 2^32 seeds)."""
        if self.kind == "grr":
            return self.k
        if self.kind in ("sue", "oue", "basic_rappor"):
            return 2**self.k
        if self.kind == "olh":
            return int(self.size or 0) * 2**OLH_SEED_BITS
        if self.kind == "subset":
            return math.comb(self.k, int(self.size or 0))
        return int(self.size or 0)

    @property
    def log10_num_outputs(self) -> float:
        """log10 of :attr:`num_outputs`, without building the (possibly huge) integer."""
        if self.kind in ("sue", "oue", "basic_rappor"):
            return self.k * math.log10(2.0)
        if self.kind == "olh":
            return math.log10(int(self.size or 0)) + OLH_SEED_BITS * math.log10(2.0)
        if self.kind == "subset":
            d = int(self.size or 0)
            return (math.lgamma(self.k + 1) - math.lgamma(d + 1) - math.lgamma(self.k - d + 1)) / math.log(10)
        return math.log10(self.num_outputs)

    @property
    def bits_per_report(self) -> int:
        """Bits of one report in a fixed-length code: ceil(log2 outputs); k for the unary
        encodings; ceil(log2 g) plus the 32-bit seed for OLH."""
        if self.kind in ("sue", "oue", "basic_rappor"):
            return self.k
        if self.kind == "olh":
            return _ceil_log2(int(self.size or 0)) + OLH_SEED_BITS
        return _ceil_log2(self.num_outputs)

    # --- exact error of the standard estimator ------------------------------------------
    def support_probabilities(self, f: Any) -> np.ndarray:
        """:math:`\\pi_x = q^* + f_x (p^* - q^*)`, the probability that a report supports x."""
        fx = self._distribution(f)
        return self.q + fx * (self.p - self.q)

    def variance(self, f: Any) -> np.ndarray:
        """Exact variance of the standard estimator of each item's frequency, n = 1, at input
        distribution ``f``: :math:`\\pi_x(1-\\pi_x)/(p^*-q^*)^2`."""
        pi = self.support_probabilities(f)
        return pi * (1.0 - pi) / (self.p - self.q) ** 2

    def covariance(self, f: Any) -> np.ndarray:
        """Exact covariance matrix of the standard estimator, n = 1, at ``f`` (from the joint
        support probabilities :meth:`joint_support`)."""
        fx = self._distribution(f)
        pi = self.support_probabilities(fx)
        joint = self.joint_support(fx)
        return (joint - np.outer(pi, pi)) / (self.p - self.q) ** 2

    def joint_support(self, f: Any) -> np.ndarray:
        """:math:`\\Pr[x \\in S_Y, x' \\in S_Y]` for every pair (diagonal: :math:`\\pi_x`), exact."""
        fx = self._distribution(f)
        pi = self.support_probabilities(fx)
        both = _pair_support(self, fx)
        np.fill_diagonal(both, pi)
        return both

    @property
    def variance_uniform(self) -> float:
        """Sum over the k items of the standard estimator's variance at the uniform distribution
        (n = 1)."""
        return math.fsum(self.variance(np.full(self.k, 1.0 / self.k)).tolist())

    @property
    def worst_case(self) -> float:
        """Supremum over the simplex of the summed variance (n = 1): attained at the uniform
        distribution for these mechanisms (module docstring), so equal to ``variance_uniform``."""
        return self.variance_uniform

    def best_variance_uniform(self) -> float:
        """``variance_uniform`` of the best unbiased estimator for this mechanism's channel
        (:func:`ldpopt.frequency.objectives.variance_uniform`); ValueError without a channel."""
        return objectives.variance_uniform(self.channel())

    def best_worst_case(self) -> float:
        """``worst_case`` (minimax) of the best unbiased estimator for this channel
        (:func:`ldpopt.frequency.objectives.worst_case`); ValueError without a channel."""
        return objectives.worst_case(self.channel())

    def estimator_matrix(self) -> np.ndarray:
        """(columns, k): the standard estimator's estimate from one report of each channel column,
        ``(1[x in S_y] - q*)/(p* - q*)``."""
        return (self.output_supports() - self.q) / (self.p - self.q)

    # --- privacy ------------------------------------------------------------------------
    def column_levels(self) -> tuple[float, float]:
        """``(a, b)``: every column of the channel is ``w_y * a`` on the inputs its report supports
        and ``w_y * b`` elsewhere; computed from the report probabilities."""
        p_bar, q_bar = _support_complements(self)
        if self.kind in ("sue", "oue", "basic_rappor"):
            # Q(bits | x) = prod_{i != x} (...) * (p if b_x else 1 - p): divide by the common
            # product over all i of (q if b_i else 1 - q)
            return self.p / self.q, p_bar / q_bar
        if self.kind == "olh":
            return self.p, p_bar / (int(self.size or 0) - 1)
        if self.kind == "subset":
            # Pr[S | x] for x in S, x not in S: p* / C(k-1, d-1) and (1-p*) / C(k-1, d)
            d = int(self.size or 0)
            return self.p / math.comb(self.k - 1, d - 1), p_bar / math.comb(self.k - 1, d)
        if self.kind == "hadamard":
            half = int(self.size or 0) // 2
            return self.p / half, p_bar / half
        return self.p, p_bar / (self.k - 1)

    @property
    def has_channel(self) -> bool:
        """Whether :meth:`channel` builds the channel (at most CHANNEL_MAX_ENTRIES entries)."""
        return self.channel_size() <= CHANNEL_MAX_ENTRIES

    def channel_size(self) -> int:
        """Entries of :meth:`channel`'s matrix (k x columns; OLH: k x 2^k)."""
        cols = 2**self.k if self.kind == "olh" else self.num_outputs
        return self.k * cols

    def channel(self) -> Mechanism:
        """The channel as a :class:`~ldpopt.Mechanism` (column order: module docstring).

        Raises ValueError when it would have more than CHANNEL_MAX_ENTRIES entries.
        """
        if self.channel_size() > CHANNEL_MAX_ENTRIES:
            raise ValueError(
                f"the {self.label} channel at k={self.k} has {self.channel_size():.4g} entries, more "
                f"than {CHANNEL_MAX_ENTRIES}: use its exact formulas instead"
            )
        return Mechanism(_channel_matrix(self), self.eps, name=self.kind)

    @property
    def privacy_level(self) -> float:
        """The smallest eps the mechanism satisfies, verified: the maximal log ratio over each
        column of the channel when it is built, else log(a/b) of :meth:`column_levels`."""
        if self.has_channel:
            return Mechanism(_channel_matrix(self), math.inf).privacy_level()
        a, b = self.column_levels()
        return math.log(a) - math.log(b)

    # --- reports ------------------------------------------------------------------------
    def privatize(self, x: Any, rng: Any = None) -> np.ndarray:
        """Reports for the items ``x`` (ints in range(k)) in this mechanism's format (module
        docstring); ``rng``: a seed or numpy Generator, for simulations."""
        items = _check_items(x, self.k)
        gen = np.random.default_rng(rng)
        return _PRIVATIZE[self.kind](self, items, gen)

    def supports(self, reports: Any) -> np.ndarray:
        """(n, k) boolean array: row i marks the items report i supports."""
        return _SUPPORTS[self.kind](self, reports)

    def output_supports(self) -> np.ndarray:
        """(columns, k) boolean array: the items each column of :meth:`channel` supports."""
        if self.channel_size() > CHANNEL_MAX_ENTRIES:
            raise ValueError(f"the {self.label} channel at k={self.k} is too large to enumerate")
        return _column_supports(self)

    # --- helpers ------------------------------------------------------------------------
    def _distribution(self, f: Any) -> np.ndarray:
        fx = np.asarray(f, dtype=float)
        if fx.shape != (self.k,) or not np.all(np.isfinite(fx)) or np.any(fx < 0):
            raise ValueError(f"f must be a distribution on the k={self.k} items, got f={short_repr(f)}")
        if abs(math.fsum(fx.tolist()) - 1.0) > SUM_TOL:  # the library-wide rule for distributions
            raise ValueError(f"f must sum to 1, got a sum of {math.fsum(fx.tolist())!r}")
        return fx


def _ceil_log2(n: int) -> int:
    return max(int(n - 1).bit_length(), 0)


# ---------------------------------------------------------------------------------------------
# constructors
# ---------------------------------------------------------------------------------------------
def _check_kind_size(kind: str, k: int, eps: float, size: Any) -> int | None:
    """The size parameter of ``kind`` checked, or its default."""
    if kind == "olh":
        if size is None:
            if eps > OLH_DEFAULT_G_MAX_EPS:
                raise ValueError(f"eps={eps!r} makes the default g = round(e^eps + 1) astronomical: give g")
            return max(2, round(math.exp(eps) + 1.0))
        return _check_size(size, "g", 2, OLH_G_MAX)
    if kind == "subset":
        return subset_sizes(k, eps)[0] if size is None else _check_size(size, "d", 1, k - 1)
    if kind == "hadamard":
        big_k = 1 << k.bit_length()  # the smallest power of 2 > k
        if size is not None and size != big_k:
            raise ValueError(f"size of hadamard at k={k} is K={big_k}, got size={size!r}")
        return big_k
    if size is not None:
        raise ValueError(
            f"size applies to olh, subset and hadamard only, got size={size!r} for kind={kind!r}"
        )
    return None


def _support_levels(kind: str, k: int, eps: float, size: int | None) -> tuple[float, float]:
    """(p*, q*) of ``kind`` (module docstring), with c = e^-eps (no overflow)."""
    c = math.exp(-eps)
    if kind == "grr":
        den = 1.0 + (k - 1) * c
        return 1.0 / den, c / den
    if kind in ("sue", "basic_rappor"):
        h = math.exp(-eps / 2.0)
        return 1.0 / (1.0 + h), h / (1.0 + h)
    if kind == "oue":
        return 0.5, c / (1.0 + c)
    if kind == "olh":
        g = int(size or 0)
        return 1.0 / (1.0 + (g - 1) * c), 1.0 / g
    if kind == "subset":
        d = int(size or 0)
        den = d + (k - d) * c
        return d / den, d * ((d - 1) + (k - d) * c) / ((k - 1) * den)
    return 1.0 / (1.0 + c), 0.5  # hadamard


def _support_complements(m: FrequencyMechanism) -> tuple[float, float]:
    """(1 - p*, 1 - q*) in closed form in c = e^-eps: ``1.0 - p`` would lose the e^-eps term
    once p* rounds to 1 (eps >~ 17 for GRR), and with it the channel's low entries."""
    kind, k, eps = m.kind, m.k, m.eps
    c = math.exp(-eps)
    if kind == "grr":
        den = 1.0 + (k - 1) * c
        return (k - 1) * c / den, (1.0 + (k - 2) * c) / den
    if kind in ("sue", "basic_rappor"):
        return m.q, m.p  # 1 - 1/(1+h) = h/(1+h)
    if kind == "oue":
        return 0.5, 1.0 / (1.0 + c)
    if kind == "olh":
        g = int(m.size or 0)
        return (g - 1) * c / (1.0 + (g - 1) * c), (g - 1) / g
    if kind == "subset":
        d = int(m.size or 0)
        den = d + (k - d) * c
        # (k-1) den - d((d-1) + (k-d) c) = (k-d)(d + (k-1-d) c)
        return (k - d) * c / den, (k - d) * (d + (k - 1 - d) * c) / ((k - 1) * den)
    return c / (1.0 + c), 0.5  # hadamard


def grr(k: Any, eps: Any) -> FrequencyMechanism:
    """Generalized randomized response: report the item w.p. e/(e+k-1), else another uniformly."""
    return FrequencyMechanism("grr", k, eps)


def sue(k: Any, eps: Any) -> FrequencyMechanism:
    """Symmetric unary encoding (basic one-time RAPPOR): each of the k one-hot bits is kept w.p.
    e^(eps/2)/(e^(eps/2)+1)."""
    return FrequencyMechanism("sue", k, eps)


def basic_rappor(k: Any, eps: Any) -> FrequencyMechanism:
    """Basic one-time RAPPOR with one hash (module docstring): SUE with f = 2/(e^(eps/2)+1)."""
    return FrequencyMechanism("basic_rappor", k, eps)


def oue(k: Any, eps: Any) -> FrequencyMechanism:
    """Optimized unary encoding: the item's bit is 1 w.p. 1/2, every other bit w.p. 1/(e+1)."""
    return FrequencyMechanism("oue", k, eps)


def olh(k: Any, eps: Any, g: Any = None) -> FrequencyMechanism:
    """Optimized local hashing with hash range ``g`` (default round(e^eps + 1), at least 2)."""
    return FrequencyMechanism("olh", k, eps, g)


def subset_sizes(k: Any, eps: Any) -> tuple[int, ...]:
    """The two roundings (floor, ceil) of k/(e^eps + 1), clipped to [1, k-1], without repeats."""
    kk, e = check_k(k), check_mechanism_eps(eps)
    d = kk * math.exp(-e) / (1.0 + math.exp(-e))
    sizes = sorted({min(max(math.floor(d), 1), kk - 1), min(max(math.ceil(d), 1), kk - 1)})
    return tuple(sizes)


def subset_selection(k: Any, eps: Any, d: Any = None) -> FrequencyMechanism:
    """Subset selection reporting a ``d``-subset (default: the floor rounding of k/(e^eps+1))."""
    return FrequencyMechanism("subset", k, eps, d)


def hadamard_response(k: Any, eps: Any) -> FrequencyMechanism:
    """Hadamard response with K = 2^ceil(log2(k+1)) outputs (one block)."""
    return FrequencyMechanism("hadamard", k, eps)


def make(kind: Any, k: Any, eps: Any, size: Any = None) -> FrequencyMechanism:
    """The mechanism named ``kind`` (one of KINDS); ``size`` is OLH's g or subset selection's d."""
    return FrequencyMechanism(kind, k, eps, size)


def deployed(k: Any, eps: Any) -> tuple[FrequencyMechanism, ...]:
    """Every deployed mechanism at (k, eps): GRR, SUE, OUE, basic RAPPOR, OLH (default g), subset
    selection at both roundings of its size, Hadamard response."""
    kk, e = check_k(k), check_mechanism_eps(eps)
    mechs = [grr(kk, e), sue(kk, e), oue(kk, e), basic_rappor(kk, e)]
    if e <= OLH_DEFAULT_G_MAX_EPS:
        mechs.append(olh(kk, e))
    mechs += [subset_selection(kk, e, d) for d in subset_sizes(kk, e)]
    mechs.append(hadamard_response(kk, e))
    return tuple(mechs)


# ---------------------------------------------------------------------------------------------
# joint support probabilities (exact covariance)
# ---------------------------------------------------------------------------------------------
def _pair_support(m: FrequencyMechanism, f: np.ndarray) -> np.ndarray:
    """Pr[x and x' both supported] for x != x' (the diagonal is overwritten by the caller)."""
    k, p, q = m.k, m.p, m.q
    ones = np.ones((k, k))
    fx = f[:, None] + f[None, :]  # Pr[input in {x, x'}]
    if m.kind == "grr":
        return 0.0 * ones
    if m.kind in ("sue", "oue", "basic_rappor"):
        # independent bits: input x -> p q, input elsewhere -> q^2
        return fx * p * q + (1.0 - fx) * q * q
    if m.kind == "olh":
        g = int(m.size or 0)
        # input x: h(x) = y w.p. p and h(x') = h(x) w.p. 1/g, independent; input v elsewhere: y is
        # a function of h(v) only, h(x), h(x') independent of it and of each other
        return fx * p / g + (1.0 - fx) / g**2
    if m.kind == "subset":
        d = int(m.size or 0)
        # input x: x in S w.p. p, then x' is one of the d-1 others among k-1: (d-1)/(k-1);
        # input elsewhere (v not in {x, x'}): S given whether v in S is uniform on the rest
        in_v = p * (d - 1) * (d - 2) / ((k - 1) * (k - 2)) if k > 2 else 0.0
        out_v = _support_complements(m)[0] * d * (d - 1) / ((k - 1) * (k - 2)) if k > 2 else 0.0
        return fx * p * (d - 1) / (k - 1) + (1.0 - fx) * (in_v + out_v)
    # Hadamard response: sum over the K columns y of Pr[y] 1[y in C_x] 1[y in C_x'] (exact)
    sets = _hadamard_sets(m).astype(float)  # (k, K)
    out_law = f @ _channel_matrix(m)
    return (sets * out_law[None, :]) @ sets.T


# ---------------------------------------------------------------------------------------------
# channels
# ---------------------------------------------------------------------------------------------
def _hadamard_sets(m: FrequencyMechanism) -> np.ndarray:
    """(k, K) bool: C_x = columns j where row x+1 of Sylvester's H_K is +1 (popcount((x+1)&j) even)."""
    big_k = int(m.size or 0)
    i = np.arange(1, m.k + 1)[:, None]
    j = np.arange(big_k)[None, :]
    v = i & j
    parity = np.zeros_like(v)
    while np.any(v):
        parity ^= v & 1
        v = v >> 1
    return parity == 0


def _masks(k: int) -> np.ndarray:
    """(2^k, k) bool: row m marks the bits of m."""
    m = np.arange(2**k)[:, None]
    return ((m >> np.arange(k)[None, :]) & 1).astype(bool)


def _column_supports(m: FrequencyMechanism) -> np.ndarray:
    if m.kind == "grr":
        return np.eye(m.k, dtype=bool)
    if m.kind == "hadamard":
        return _hadamard_sets(m).T.copy()
    if m.kind == "subset":
        d = int(m.size or 0)
        out = np.zeros((math.comb(m.k, d), m.k), dtype=bool)
        for row, combo in enumerate(itertools.combinations(range(m.k), d)):
            out[row, list(combo)] = True
        return out
    return _masks(m.k)


def _channel_matrix(m: FrequencyMechanism) -> np.ndarray:
    """Q[x, y] built from the report probabilities directly (not from column_levels)."""
    sup = _column_supports(m)  # (outputs, k)
    k = m.k
    p_bar, q_bar = _support_complements(m)
    if m.kind == "grr":
        return np.where(np.eye(k, dtype=bool), m.p, p_bar / (k - 1))
    if m.kind in ("sue", "oue", "basic_rappor"):
        # Q(b | x) = prod_i P(b_i | x): bit x is 1 w.p. p, the others w.p. q; the logs of the
        # closed-form complements stay finite when p rounds to 1
        log_p, log_q, log_pb, log_qb = (math.log(v) for v in (m.p, m.q, p_bar, q_bar))
        logq = np.where(sup, log_q, log_qb).sum(axis=1)  # all bits "not the item"
        own = np.where(sup, log_p - log_q, log_pb - log_qb)
        return np.exp(logq[None, :] + own.T)
    if m.kind == "olh":
        g = int(m.size or 0)
        size = sup.sum(axis=1)
        # g (g-1)^(k-|S|) / g^k of the (hash, value) pairs have preimage S
        w = np.exp((1 - size) * math.log(g) + (k - size) * math.log1p(-1.0 / g))
        return np.where(sup.T, m.p, p_bar / (g - 1)) * w[None, :]
    if m.kind == "subset":
        d = int(m.size or 0)
        return np.where(sup.T, m.p / math.comb(k - 1, d - 1), p_bar / math.comb(k - 1, d))
    half = int(m.size or 0) // 2
    return np.where(sup.T, m.p / half, p_bar / half)


# ---------------------------------------------------------------------------------------------
# privatize and read reports
# ---------------------------------------------------------------------------------------------
def _check_items(x: Any, k: int) -> np.ndarray:
    arr = np.asarray(x)
    if arr.dtype.kind not in "iu" or arr.ndim != 1:
        raise TypeError(f"x must be a 1-D array of item indices in range({k}), got x={short_repr(x)}")
    if arr.size and (arr.min() < 0 or arr.max() >= k):
        raise ValueError(f"x must hold item indices in range({k}), found {int(arr.min())}..{int(arr.max())}")
    return arr.astype(np.int64)


def _rr(items: np.ndarray, keep: float, size: int, gen: np.random.Generator) -> np.ndarray:
    """``size``-ary randomized response: keep the value w.p. ``keep``, else another uniformly."""
    n = items.size
    other = (items + 1 + gen.integers(0, size - 1, n)) % size
    return np.where(gen.random(n) < keep, items, other)


def _privatize_grr(m: FrequencyMechanism, items: np.ndarray, gen: np.random.Generator) -> np.ndarray:
    return _rr(items, m.p, m.k, gen)


def _privatize_unary(m: FrequencyMechanism, items: np.ndarray, gen: np.random.Generator) -> np.ndarray:
    n = items.size
    bits = gen.random((n, m.k)) < m.q
    bits[np.arange(n), items] = gen.random(n) < m.p
    return bits.astype(np.int8)


def olh_hash(seeds: Any, items: Any, g: int) -> np.ndarray:
    """OLH's hash ``splitmix64(seed * 2^32 + x) mod g`` (broadcasting ``seeds`` against ``items``)."""
    z = (np.asarray(seeds, dtype=np.uint64) << np.uint64(32)) + np.asarray(items, dtype=np.uint64)
    z = z + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return (z % np.uint64(g)).astype(np.int64)


def _privatize_olh(m: FrequencyMechanism, items: np.ndarray, gen: np.random.Generator) -> np.ndarray:
    g = int(m.size or 0)
    seeds = gen.integers(0, 2**OLH_SEED_BITS, items.size, dtype=np.int64)
    values = _rr(olh_hash(seeds, items, g), m.p, g, gen)
    return np.stack([seeds, values], axis=1)


def _privatize_subset(m: FrequencyMechanism, items: np.ndarray, gen: np.random.Generator) -> np.ndarray:
    n, d = items.size, int(m.size or 0)
    keys = gen.random((n, m.k))
    # the item first (included, w.p. p*) or last (excluded); the others in uniform random order
    keys[np.arange(n), items] = np.where(gen.random(n) < m.p, -1.0, 2.0)
    return np.sort(np.argsort(keys, axis=1)[:, :d], axis=1)


def _privatize_hadamard(m: FrequencyMechanism, items: np.ndarray, gen: np.random.Generator) -> np.ndarray:
    sets = _hadamard_sets(m)
    half = int(m.size or 0) // 2
    inside = np.argsort(~sets, axis=1, kind="stable")  # row x: C_x's columns, then the others
    pick = gen.integers(0, half, items.size) + np.where(gen.random(items.size) < m.p, 0, half)
    return inside[items, pick]


_PRIVATIZE = {
    "grr": _privatize_grr,
    "sue": _privatize_unary,
    "oue": _privatize_unary,
    "basic_rappor": _privatize_unary,
    "olh": _privatize_olh,
    "subset": _privatize_subset,
    "hadamard": _privatize_hadamard,
}


def _int_reports(reports: Any, shape_tail: tuple, what: str) -> np.ndarray:
    arr = np.asarray(reports)
    if arr.dtype.kind not in "iub" or arr.ndim != 1 + len(shape_tail) or arr.shape[1:] != shape_tail:
        raise ValueError(f"reports must be {what}, got reports={short_repr(reports)}")
    return arr.astype(np.int64)


def _index_supports(m: FrequencyMechanism, reports: Any, size: int) -> np.ndarray:
    arr = _int_reports(reports, (), f"a 1-D array of output indices in range({size})")
    if arr.size and (arr.min() < 0 or arr.max() >= size):
        bad = int(arr.min()) if arr.min() < 0 else int(arr.max())
        raise ValueError(f"reports must be output indices in range({size}), found {bad}")
    table = _hadamard_sets(m).T if m.kind == "hadamard" else np.eye(m.k, dtype=bool)
    return table[arr]


def _supports_grr(m: FrequencyMechanism, reports: Any) -> np.ndarray:
    return _index_supports(m, reports, m.k)


def _supports_hadamard(m: FrequencyMechanism, reports: Any) -> np.ndarray:
    return _index_supports(m, reports, int(m.size or 0))


def _supports_unary(m: FrequencyMechanism, reports: Any) -> np.ndarray:
    arr = _int_reports(reports, (m.k,), f"an (n, {m.k}) array of 0/1 bits")
    if np.any((arr != 0) & (arr != 1)):
        raise ValueError("reports must be 0/1 bits")
    return arr.astype(bool)


def _supports_olh(m: FrequencyMechanism, reports: Any) -> np.ndarray:
    g = int(m.size or 0)
    arr = _int_reports(reports, (2,), "an (n, 2) array of (seed, value) pairs")
    if arr.size and (arr[:, 0].min() < 0 or arr[:, 0].max() >= 2**OLH_SEED_BITS):
        raise ValueError(f"report seeds must be in [0, 2^{OLH_SEED_BITS})")
    if arr.size and (arr[:, 1].min() < 0 or arr[:, 1].max() >= g):
        raise ValueError(f"report values must be in range(g={g})")
    hashes = olh_hash(arr[:, :1], np.arange(m.k)[None, :], g)
    return hashes == arr[:, 1:]


def _supports_subset(m: FrequencyMechanism, reports: Any) -> np.ndarray:
    d = int(m.size or 0)
    arr = _int_reports(reports, (d,), f"an (n, {d}) array of d-subsets of range({m.k})")
    if arr.size and (arr.min() < 0 or arr.max() >= m.k):
        raise ValueError(f"report items must be in range({m.k})")
    out = np.zeros((arr.shape[0], m.k), dtype=bool)
    out[np.arange(arr.shape[0])[:, None], arr] = True
    if np.any(out.sum(axis=1) != d):
        raise ValueError(f"each report must hold {d} distinct items")
    return out


_SUPPORTS = {
    "grr": _supports_grr,
    "sue": _supports_unary,
    "oue": _supports_unary,
    "basic_rappor": _supports_unary,
    "olh": _supports_olh,
    "subset": _supports_subset,
    "hadamard": _supports_hadamard,
}
