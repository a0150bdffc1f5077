r"""The OpenDP adapter's core: a mechanism as an OpenDP ``Measurement`` (the ``opendp`` extra).

:func:`measurement` is what :meth:`Mechanism.to_opendp <ldpopt.Mechanism.to_opendp>` and
:func:`ldpopt.to_opendp` return.  It lives here, below :mod:`ldpopt.mechanism`, so that the
method needs no import from an upper layer: it uses only the exact sampler
(:mod:`ldpopt._sampler`), :mod:`ldpopt._validation`, and OpenDP imported when called, through
:func:`ldpopt._extras.require` (a missing OpenDP is one
:class:`~ldpopt.errors.MissingExtraError` naming the ``[opendp]`` extra).  It takes any
mechanism-like object (``matrix``, ``eps``, ``labels``, ``output_labels``, ``num_inputs``,
``num_outputs``), like the sampler.

The measurement is built with ``opendp.measurements.make_user_measurement``:

* input domain: ``atom_domain`` of the mechanism's input labels' type (``str`` or ``int``;
  input indices ``0..k-1`` when it has no labels), input metric ``discrete_distance`` (one
  individual's value; two values are at distance 1 when they differ);
* output measure ``max_divergence`` (pure DP); the privacy map sends ``d_in`` to
  ``d_in * eps`` with eps the level that the exact sampler proves for the channel really
  sampled (:func:`ldpopt.deploy.sampling.realise`, exact rational check), the product rounded
  up to the next float when ``d_in > 1`` (group privacy);
* the function privatizes one input with ldpopt's exact sampler (OS CSPRNG, or a seeded
  generator given as ``rng`` for reproducible experiments only) and returns the output label.
  An input that is not one of the mechanism's labels raises ``ValueError`` (the guarantee covers
  the mechanism's input alphabet).

OpenDP gates user-defined measurements behind two features, which :func:`measurement` enables
(process-wide, by ``opendp.prelude.enable_features``): ``"contrib"`` (code not yet vetted by
OpenDP) and ``"honest-but-curious"`` (OpenDP trusts the callbacks: the function must be pure
and the map must bound the privacy loss; ldpopt's exact sampler and certified eps are what back
that trust).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ldpopt import _sampler
from ldpopt._extras import require
from ldpopt._validation import is_integer

__all__ = ["OPENDP_FEATURES", "measurement", "python_scalar"]

#: the OpenDP features make_user_measurement requires
OPENDP_FEATURES = ("contrib", "honest-but-curious")


def python_scalar(value: Any) -> Any:
    """A numpy scalar as the Python scalar OpenDP's atom domains take; anything else unchanged."""
    return value.item() if isinstance(value, np.generic) else value


def _input_type(labels: tuple | None) -> type:
    if labels is None or all(is_integer(v) for v in labels):
        return int
    if all(isinstance(v, str) for v in labels):
        return str
    raise ValueError(f"to_opendp needs input labels that are all str or all int, got labels={labels!r}")


def measurement(mech: Any, rng: Any = None) -> Any:
    """The mechanism-like ``mech`` as an OpenDP ``Measurement`` (see the module docstring).

    ``rng``: ``None`` samples from the OS CSPRNG; a ``numpy.random.Generator`` is for
    reproducible experiments only.
    """
    dp = require("opendp.prelude", "OpenDP measurements (Mechanism.to_opendp)", "opendp")
    t_in = _input_type(mech.labels)
    eps = _sampler.realise(mech).eps
    source = _sampler.bit_source(rng)
    dp.enable_features(*OPENDP_FEATURES)

    def function(x: Any) -> Any:
        return python_scalar(_sampler.privatize(mech, [x], rng=source)[0])

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
