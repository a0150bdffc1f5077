r"""``method="symmetry"``: the reduced LP over the orbit weights of a permutation group (Theorem 3.15),
in closed form for a transitive group (Corollary 3.17); :mod:`ldpopt.decision.symmetry` has the groups
and the reduced polytope.

For a G-invariant row-additive objective an optimal channel can be taken G-invariant, i.e. with
weights constant on the orbits of subsets; the reduced LP has one variable per subset orbit and one
row per point orbit.  Its duals, spread over the point orbits, are the certificate.
"""

from __future__ import annotations

import numpy as np
from scipy import optimize

from ldpopt.decision.objectives import RowAdditiveObjective
from ldpopt.decision.problem import Task
from ldpopt.decision.result import Solution, certificate
from ldpopt.decision.symmetry import (
    PermutationGroup,
    check_invariance,
    orbit_row_sums,
    orbit_solution,
    orbit_values,
    representatives,
)

__all__ = ["solve"]


def solve(task: Task) -> Solution:
    """The best invariant channel of a row-additive objective invariant under ``task.group``."""
    group, obj, c0 = task.group, task.obj, task.c0
    if group is None:
        raise ValueError("method='symmetry' needs a group (group=ldpopt.PermutationGroup...)")
    if not isinstance(obj, RowAdditiveObjective):
        raise ValueError(
            "method='symmetry' needs a row-additive objective; use method='vertex' with group=... "
            "for a concave ChannelObjective"
        )
    if task.check_invariance:
        check_invariance(obj, group, c0)
    sign = 1.0 if obj.sense == "min" else -1.0
    Vrep = np.where(representatives(group), 1.0, c0)
    phi = obj.contributions(Vrep)
    if not np.all(np.isfinite(phi)):
        raise ValueError(f"objective {obj.name!r} is infinite on some extreme row")
    if group.is_transitive():
        weights, u, msg = _transitive(obj, group, c0, sign)
    else:
        reduced = _reduced_lp(group, sign * phi, c0)
        if isinstance(reduced, Solution):
            return reduced
        weights, u, msg = reduced
    # every subset of an orbit has the reduced cost of its representative (invariance)
    rc = sign * phi - Vrep @ u
    cert = certificate(u, None, float(rc.min()), c0, sign, float(np.abs(phi).max()) or 1.0)
    rows, w, note = orbit_solution(group, weights, c0)
    return Solution(rows, w, None, "symmetry", 0, msg + note, cert)


def _transitive(
    obj: RowAdditiveObjective, group: PermutationGroup, c0: float, sign: float
) -> tuple[np.ndarray, np.ndarray, str]:
    """Corollary 3.17: the best single orbit; ``(orbit weights, duals u, message)``."""
    orbits = group.subset_orbits()
    vals = sign * orbit_values(obj, group, c0)
    best = int(np.argmin(vals))
    weights = np.zeros(len(orbits))
    weights[best] = 1.0 / orbit_row_sums(group, c0)[0, best]
    u = np.full(group.m, vals[best] / group.m)
    msg = f"optimal (Corollary 3.17 closed form: best of {len(orbits)} orbits, k={orbits[best].k})"
    return weights, u, msg


def _reduced_lp(
    group: PermutationGroup, costs: np.ndarray, c0: float
) -> tuple[np.ndarray, np.ndarray, str] | Solution:
    """The reduced LP over orbit weights with HiGHS (``costs`` = signed contributions of the
    representatives); ``(orbit weights, duals u, message)``, or the failed Solution."""
    orbits = group.subset_orbits()
    pts = group.point_orbits()
    sizes = np.array([o.size for o in orbits], dtype=float)
    R = orbit_row_sums(group, c0)
    res = optimize.linprog(sizes * costs, A_eq=R, b_eq=np.ones(len(pts)), bounds=(0, None), method="highs")
    if res.status != 0:
        return Solution.failed(group.m, "symmetry", int(res.status), str(res.message))
    weights = np.where(res.x > 1e-12 * res.x.max(), res.x, 0.0)
    v = np.asarray(res.eqlin.marginals)
    u = np.zeros(group.m)
    for i, p in enumerate(pts):
        u[list(p)] = v[i] / len(p)
    msg = f"optimal (reduced LP over {len(orbits)} orbit weights, {len(pts)} point orbits)"
    return weights, u, msg
