"""Fitting ldpopt mechanisms into other tools.

* :mod:`~ldpopt.interop.rr` - eps <-> keep probability <-> noise parameter of s-ary randomized
  response (:func:`rr_parameters`), rounded towards privacy;
* :mod:`~ldpopt.interop.opendp` - a mechanism as an OpenDP ``Measurement`` (:func:`to_opendp`)
  and OpenDP's randomized response as a :class:`~ldpopt.Mechanism` (:func:`from_opendp_rr`);
  needs the ``opendp`` extra.

``to_opendp`` is a function, not a method of :class:`~ldpopt.Mechanism`: the mechanism class sits
below every integration in the package's layers, and a method would make the core depend on them.
"""

from ldpopt.interop.opendp import from_opendp_rr, to_opendp
from ldpopt.interop.rr import RRParameters, rr_parameters

__all__ = ["RRParameters", "from_opendp_rr", "rr_parameters", "to_opendp"]
