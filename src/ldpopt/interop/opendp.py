r"""OpenDP interoperability (the ``opendp`` extra).

:func:`to_opendp` wraps a mechanism as an OpenDP ``Measurement`` built with
``opendp.measurements.make_user_measurement``:

* input domain: ``atom_domain`` of the mechanism's input labels' type (``str`` or ``int``;
  input indices ``0..k-1`` when it has no labels), input metric ``discrete_distance`` (one
  individual's value; two values are at distance 1 when they differ);
* output measure ``max_divergence`` (pure DP); the privacy map sends ``d_in`` to
  ``d_in * eps`` with eps the level that :func:`ldpopt.deploy.sampling.realise` proves for the
  channel really sampled (exact rational check), the product rounded up to the next float when
  ``d_in > 1`` (group privacy);
* the function privatizes one input with ldpopt's exact sampler (OS CSPRNG, or a seeded
  generator given as ``rng`` for reproducible experiments only) and returns the output label.
  An input that is not one of the mechanism's labels raises ``ValueError`` (the guarantee covers
  the mechanism's input alphabet).

OpenDP gates user-defined measurements behind two features, which :func:`to_opendp` enables
(process-wide, by ``opendp.prelude.enable_features``): ``"contrib"`` (code not yet vetted by
OpenDP) and ``"honest-but-curious"`` (OpenDP trusts the callbacks: the function must be pure
and the map must bound the privacy loss; ldpopt's exact sampler and certified eps are what back
that trust).

:func:`from_opendp_rr` is the other direction: OpenDP's ``make_randomized_response(categories,
prob)`` (or ``make_randomized_response_bool(prob)`` with ``categories=[False, True]``) as a
:class:`~ldpopt.Mechanism` whose eps is OpenDP's, rounded up (:func:`ldpopt.rr_parameters`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ldpopt._extras import require
from ldpopt._validation import is_integer
from ldpopt.deploy.sampling import realise
from ldpopt.interop.rr import rr_parameters
from ldpopt.mechanism import Mechanism, as_mechanism

__all__ = ["from_opendp_rr", "to_opendp", "OPENDP_FEATURES"]

#: the OpenDP features make_user_measurement requires
OPENDP_FEATURES = ("contrib", "honest-but-curious")


def _input_type(labels: tuple | None) -> type:
    if labels is None or all(is_integer(v) for v in labels):
        return int
    if all(isinstance(v, str) for v in labels):
        return str
    raise ValueError(f"to_opendp needs input labels that are all str or all int, got labels={labels!r}")


def _scalar(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def to_opendp(mech: Any, *, rng: Any = None) -> Any:
    """The mechanism as an OpenDP ``Measurement`` (see the module docstring).

    Parameters
    ----------
    mech : Mechanism
    rng : numpy.random.Generator, optional
        Only for reproducible experiments; ``None`` (the default) samples from the OS CSPRNG.
    """
    dp = require("opendp.prelude", "OpenDP measurements (ldpopt.to_opendp)", "opendp")
    m = as_mechanism(mech, "mech")
    t_in = _input_type(m.labels)
    eps = realise(m).eps
    dp.enable_features(*OPENDP_FEATURES)

    def function(x: Any) -> Any:
        return _scalar(m.privatize([x], rng=rng)[0])

    def privacy_map(d_in: Any) -> float:
        d = int(d_in)
        if d < 0:
            raise ValueError(f"d_in must be >= 0, got d_in={d_in!r}")
        if d == 0:
            return 0.0
        if d == 1 or math.isinf(eps):
            return eps
        return math.nextafter(d * eps, math.inf)

    return dp.m.make_user_measurement(
        dp.atom_domain(T=t_in),
        dp.discrete_distance(),
        dp.max_divergence(),
        function=function,
        privacy_map=privacy_map,
    )


def from_opendp_rr(categories: Sequence, prob: Any) -> Mechanism:
    """OpenDP's randomized response over ``categories`` with keep probability ``prob`` as a Mechanism.

    The channel keeps the value with probability ``prob`` and reports each other category with
    ``(1 - prob) / (k - 1)``; eps is ``log(prob (k - 1) / (1 - prob))`` rounded up.  Does not need
    OpenDP installed.
    """
    cats = tuple(_scalar(c) for c in categories)
    k = len(cats)
    if k < 2 or len(set(cats)) != k:
        raise ValueError(f"categories must be at least 2 distinct values, got categories={categories!r}")
    par = rr_parameters(keep=prob, outputs=k)
    other = (1.0 - par.keep) / (k - 1)
    matrix = np.full((k, k), other)
    np.fill_diagonal(matrix, par.keep)
    return Mechanism(matrix, par.eps, labels=cats, output_labels=cats, name="rr")
