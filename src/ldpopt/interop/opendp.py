r"""OpenDP interoperability (the ``opendp`` extra).

:func:`to_opendp` is :meth:`Mechanism.to_opendp <ldpopt.Mechanism.to_opendp>` as a function
that also takes a design result holding a mechanism: the mechanism as an OpenDP ``Measurement``
built with ``opendp.measurements.make_user_measurement``.  The adapter itself lives in
:mod:`ldpopt._opendp` (below :mod:`ldpopt.mechanism`, so that the method needs no upper layer);
its docstring states the domain, metric, measure, privacy map and the OpenDP features enabled
(:data:`OPENDP_FEATURES`).

:func:`from_opendp_rr` is the other direction: OpenDP's ``make_randomized_response(categories,
prob)`` (or ``make_randomized_response_bool(prob)`` with ``categories=[False, True]``) as a
:class:`~ldpopt.Mechanism` whose eps is OpenDP's, rounded up (:func:`ldpopt.rr_parameters`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ldpopt._opendp import OPENDP_FEATURES, python_scalar
from ldpopt.interop.rr import rr_parameters
from ldpopt.mechanism import Mechanism, as_mechanism

__all__ = ["from_opendp_rr", "to_opendp", "OPENDP_FEATURES"]


def to_opendp(mech: Any, *, rng: Any = None) -> Any:
    """The mechanism as an OpenDP ``Measurement``: ``as_mechanism(mech).to_opendp(rng=rng)``.

    Parameters
    ----------
    mech : Mechanism
        Or a design result holding one (an :class:`~ldpopt.OptimalMechanismResult`).
    rng : numpy.random.Generator, optional
        Only for reproducible experiments; ``None`` (the default) samples from the OS CSPRNG.
    """
    return as_mechanism(mech, "mech").to_opendp(rng=rng)


def from_opendp_rr(categories: Sequence, prob: Any) -> Mechanism:
    """OpenDP's randomized response over ``categories`` with keep probability ``prob`` as a Mechanism.

    The channel keeps the value with probability ``prob`` and reports each other category with
    ``(1 - prob) / (k - 1)``; eps is ``log(prob (k - 1) / (1 - prob))`` rounded up.  Does not need
    OpenDP installed.
    """
    cats = tuple(python_scalar(c) for c in categories)
    k = len(cats)
    if k < 2 or len(set(cats)) != k:
        raise ValueError(f"categories must be at least 2 distinct values, got categories={categories!r}")
    par = rr_parameters(keep=prob, outputs=k)
    other = (1.0 - par.keep) / (k - 1)
    matrix = np.full((k, k), other)
    np.fill_diagonal(matrix, par.keep)
    return Mechanism(matrix, par.eps, labels=cats, output_labels=cats, name="rr")
