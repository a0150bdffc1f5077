r"""Exact, secure privatization: the channel that is really sampled, checked in exact arithmetic.

A :class:`~ldpopt.Mechanism` stores its channel as floats.  Before any report is produced this
module builds the **realised channel** :math:`R` (:class:`RealisedChannel`): the probabilities
that are actually sampled, as exact rationals, and proves with ``fractions.Fraction`` arithmetic
that :math:`R(y|x) \le e^\varepsilon R(y|x')` for all x, x', y (SPR paper, eq. 1).

Realised channel
----------------
Each row keeps the float entries of the mechanism except one, its *remainder* column (the
row's largest entry), whose probability is :math:`1-\sum_{\text{others}}` computed exactly, so
every row sums to exactly 1.  A float channel that is eps-LDP only up to rounding (every
channel built from :math:`e^{-\varepsilon}` is, to within a few ulps) is *rounded into* the
eps-LDP set, never out of it: small entries are raised to the next float at or above
:math:`\max_x R(y|x)\,e^{-\varepsilon}` (an exact rational bound on :math:`e^{-\varepsilon}`
is used), large ones lowered if needed, until the exact check passes.  For SPR / randomized
response channels this means raising the common low entry to
:math:`\lceil 1/(e^\varepsilon+s-1)\rceil_{\text{float}}` when rounding put it below.

:math:`e^\varepsilon` is irrational for every float :math:`\varepsilon>0`; it is bracketed
between two rationals with ``decimal`` (correctly rounded ``exp``) whose precision is raised
until the comparison is decided, so the check is exact; an undecidable case (never seen) is
treated as a violation.

Large eps.  For :math:`\varepsilon \gtrsim 745` the low entries :math:`e^{-\varepsilon}/\dots`
underflow to 0 in float64, and a 0 next to a positive entry is never eps-LDP.  The realised
channel then uses the smallest positive float :math:`2^{-1074}` instead of 0, which is
exactly eps-LDP whenever :math:`\max\cdot e^{-\varepsilon} \le 2^{-1074}`, i.e. exactly when
the float computation underflowed.  At ``eps = inf`` zeros are kept.

Exact sampling
--------------
Reports are drawn by *inversion with random bits*: a uniform real :math:`U\in[0,1)` is
revealed 64 bits at a time and compared with the exact dyadic cumulative probabilities; the
first word decides except when it equals the first 64 bits of a boundary (probability
:math:`\le 2^{-64}` per boundary), in which case further words are drawn until the
comparison is decided -- it always terminates because every boundary has a finite binary
expansion.  So :math:`P(\text{report}=y\mid x) = R(y|x)` exactly: there is no
``uniform() < p`` float comparison and no modulo bias (uniform integers are drawn by
rejection).  Block randomized-response channels (SPR, k-RR, binary) use the structured
sampler of SPR eq. 11: keep the block label unless :math:`U < (s-1)\,\ell` (exact Bernoulli),
else a uniform other label.

Randomness
----------
By default the bits come from the operating system's CSPRNG (:func:`secrets.token_bytes`,
i.e. ``os.urandom``).  ``rng=numpy.random.Generator`` makes experiments reproducible; a
seeded PRNG is predictable and **must not be used to protect real users' data**.

Where the code is
-----------------
The sampler itself is :mod:`ldpopt._sampler`, below :mod:`ldpopt.mechanism` so that
:meth:`Mechanism.privatize <ldpopt.Mechanism.privatize>` can use it; this module is its public
face.  Symbols are mapped to indices with plain dictionaries: pandas Series (and anything with
``to_numpy()``) are accepted, pandas is never imported.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ldpopt import _sampler
from ldpopt._sampler import (
    BitSource,
    ExactLDPCheck,
    RealisedChannel,
    bernoulli,
    bit_source,
    decode_outputs,
    encode_inputs,
    encode_outputs,
    exact_ldp_check,
    exp_bounds,
    sample_indices,
)
from ldpopt.mechanism import as_mechanism

__all__ = [
    "BitSource",
    "ExactLDPCheck",
    "RealisedChannel",
    "bernoulli",
    "bit_source",
    "decode_outputs",
    "encode_inputs",
    "encode_outputs",
    "exact_ldp_check",
    "exp_bounds",
    "privatize",
    "realise",
    "report_counts",
    "sample_indices",
]


def report_counts(mech: Any, reports: Any) -> np.ndarray:
    """Reports (output labels when the mechanism has them, or output indices) -> int64 counts per
    output of ``mech`` (a :class:`~ldpopt.Mechanism` or a design result holding one)."""
    m = as_mechanism(mech, "mech")
    return np.bincount(encode_outputs(m, reports), minlength=m.num_outputs).astype(np.int64)


def realise(mech: Any) -> RealisedChannel:
    """The exactly eps-LDP channel that :func:`privatize` samples for ``mech`` (cached per mechanism).

    ``mech`` is a :class:`~ldpopt.Mechanism` or a design result holding one.  Raises
    ``ValueError`` when the float channel cannot be rounded into exact eps-LDP (it then is not
    eps-LDP, beyond rounding).
    """
    return _sampler.realise(as_mechanism(mech, "mech"))


def privatize(mech: Any, x: Any, rng: Any = None) -> np.ndarray:
    r"""Privatize input symbols with ``mech``: one report per entry of ``x``, sampled exactly.

    Parameters
    ----------
    mech : Mechanism
        Or a design result holding one (an :class:`~ldpopt.OptimalMechanismResult`).
    x : array_like
        Input symbols: labels when the mechanism has labels (integer indices are accepted too
        when the labels are not integers), else integer indices in ``range(k)``.  A pandas
        Series is read through ``to_numpy()``.
    rng : None or numpy.random.Generator
        ``None`` (default) draws from the operating system's CSPRNG.  A seeded Generator
        makes runs reproducible -- **for experiments only, never for production**: its
        output is predictable and so are the reports.

    Returns
    -------
    ndarray
        Reports: output labels when the mechanism has ``output_labels``, else int64 indices.
        Their law is exactly the realised channel :func:`realise` (eps-LDP proven in exact
        rational arithmetic).
    """
    return _sampler.privatize(as_mechanism(mech, "mech"), x, rng=rng)
