"""Fitting ldpopt mechanisms into other tools.

* :mod:`~ldpopt.interop.rr` - eps <-> keep probability <-> noise parameter of s-ary randomized
  response (:func:`rr_parameters`), rounded towards privacy;
* :mod:`~ldpopt.interop.opendp` - a mechanism as an OpenDP ``Measurement`` (:func:`to_opendp`)
  and OpenDP's randomized response as a :class:`~ldpopt.Mechanism` (:func:`from_opendp_rr`);
  needs the ``opendp`` extra.

``to_opendp(mech)`` is the function form of :meth:`Mechanism.to_opendp <ldpopt.Mechanism.to_opendp>`
(it also takes a design result); the adapter lives in the bottom-layer module ``ldpopt._opendp``,
so the method does not make the mechanism class depend on this package.
"""

from ldpopt.interop.opendp import from_opendp_rr, to_opendp
from ldpopt.interop.rr import RRParameters, rr_parameters

__all__ = ["RRParameters", "from_opendp_rr", "rr_parameters", "to_opendp"]
