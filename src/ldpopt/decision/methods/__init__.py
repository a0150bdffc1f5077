"""The methods of :func:`~ldpopt.decision.solve.optimal_channel`, one module per ``method=`` name.

Each module has ``solve(task) -> Solution``: it receives the validated call
(:class:`~ldpopt.decision.problem.Task`) and returns the support rows, scaled weights, decisions,
status and certificate (:class:`~ldpopt.decision.result.Solution`);
:mod:`~ldpopt.decision.solve` picks the method and builds the public result.

* :mod:`~ldpopt.decision.methods.enumerate` - the LP over all :math:`2^m-2` subsets (minimax: all
  (subset, action) pairs), m <= 18;
* :mod:`~ldpopt.decision.methods.colgen` - column generation with exact pricing, any m (Bayes
  problems are priced at Lagrangian dual points, minimax at in-out points; :mod:`ldpopt.decision.lp`);
* :mod:`~ldpopt.decision.methods.direct` - the LP over channels X -> A, decomposed into extreme rows;
* :mod:`~ldpopt.decision.methods.vertex` - vertex enumeration (pycddlib), for concave objectives;
* :mod:`~ldpopt.decision.methods.symmetry` - the reduced problem of a permutation group;
* :mod:`~ldpopt.decision.methods.spr` - the SPR dynamic program, for an f-divergence objective.
"""
