r"""LP machinery over the maximal-channel polytope (used by the methods of :mod:`ldpopt.decision.methods`).

All LPs here use the rescaled extreme rows :math:`\tilde S_y = \mathbf 1_y + c_0\mathbf 1_{\bar y}`,
:math:`c_0=e^{-\varepsilon}`, and *pair* columns :math:`z_{y,a}\ge 0` (output y, decision a):

* Bayes:   :math:`\min \sum z_{y,a}\,\tilde S_y\!\cdot\! B_{:,a}` s.t.
  :math:`\sum z_{y,a}\tilde S_y=\mathbf 1`;
* minimax: :math:`\min t` s.t.
  :math:`\sum z_{y,a}\, l(\theta,a)\,\tilde S_y\!\cdot\! P_{:,\theta}\le t\ \forall\theta`,
  :math:`\sum z_{y,a}\tilde S_y=\mathbf 1`.

The equality rows are written sparsely with the auxiliary total :math:`\sigma=\sum z`:
:math:`(1-c_0)\sum_{y\ni x} z_{y,a} + c_0\sigma = 1`, :math:`\sigma-\sum z=0`, so a column has
:math:`|y|+1` non-zeros instead of m.  The dual :math:`u` of the x-rows is then the dual of the dense
rows, and the reduced cost of a pair is

.. math:: \bar c(y,a) = \tilde S_y\cdot(B^\lambda_{:,a}-u)
          = c_0\sum_x d_x + (1-c_0)\sum_{x\in y} d_x,\qquad d = B^\lambda_{:,a}-u,

with :math:`B^\lambda=P\,\mathrm{diag}(\lambda)\,L` (:math:`\lambda` = prior for Bayes, the duals of the
:math:`\theta`-rows for minimax).  For fixed a it is modular in y, so the cheapest non-empty proper
subset is a prefix of the order of d: pricing is exact and costs :math:`O(|A|\,m\log m)` per round.

Solvers: :func:`solve_pair_lp` (one HiGHS solve over given columns: full enumeration and the
final re-solve of :func:`channel_lp`), :func:`column_generation` (exact CG with in-out dual smoothing)
and :func:`channel_lp` (the polynomial LP over channels X -> A, "revelation principle").
"""

from __future__ import annotations

import math
import time
from dataclasses import KW_ONLY, dataclass
from typing import Any, cast

import numpy as np
from scipy import optimize, sparse

try:  # the HiGHS object bundled with scipy >= 1.15 (a private module of scipy, hence the probe)
    from scipy.optimize._highspy import _core as _HIGHS_CORE

    _HIGHS_CORE._Highs  # noqa: B018 - probe the attribute
except Exception:  # pragma: no cover - depends on the scipy version
    _HIGHS_CORE = None

#: HiGHS primal/dual feasibility tolerances
LP_TOL = 1e-10
#: a column prices out when its reduced cost is below -RC_RTOL * scale
RC_RTOL = 1e-9
#: column generation stops when (master value - proven dual bound) <= GAP_RTOL * scale
GAP_RTOL = 1e-9
#: default smoothing weight of the stability centre (Wentges / in-out pricing)
SMOOTHING = 0.9
#: columns added per action and round
PER_ACTION = 2
#: keep the master below PURGE * m columns (None: never delete columns)
PURGE = 4
#: weights below SUPPORT_RTOL * max weight are read as zero
SUPPORT_RTOL = 1e-12


@dataclass
class PairLP:
    """Solution of a pair LP: support columns, weights, value, duals."""

    rows: np.ndarray  # (n, m) bool, support only
    actions: np.ndarray  # (n,)
    z: np.ndarray  # (n,) scaled weights
    value: float
    u: np.ndarray  # (m,)
    prior: np.ndarray | None  # (T,) minimax duals, normalised
    status: int
    message: str
    _: KW_ONLY  # at most 8 positional fields; the rest by keyword
    iterations: int = 1
    columns: int = 0


# --------------------------------------------------------------------------------------------
# column data
# --------------------------------------------------------------------------------------------


def effective_B(P: np.ndarray, L: np.ndarray, lam: np.ndarray) -> np.ndarray:
    r""":math:`B^\lambda_{x,a}=\sum_\theta\lambda_\theta P(x|\theta)l(\theta,a)`."""
    return P @ (lam[:, None] * L)


def pair_costs(rows: np.ndarray, actions: np.ndarray, B: np.ndarray, c0: float) -> np.ndarray:
    r"""Bayes cost :math:`\tilde S_y\cdot B_{:,a}` of pair columns."""
    colsum = B.sum(axis=0)
    inside = np.einsum("nm,mn->n", rows.astype(float), B[:, actions]) if rows.shape[0] else np.zeros(0)
    return c0 * colsum[actions] + (1.0 - c0) * inside


def pair_risks(rows: np.ndarray, actions: np.ndarray, P: np.ndarray, L: np.ndarray, c0: float) -> np.ndarray:
    r"""Per-parameter risk coefficients :math:`l(\theta,a)\,\tilde S_y\cdot P_{:,\theta}`, shape (n, T)."""
    py = rows.astype(float) @ P  # P(y|theta) summed over x in y
    return L[:, actions].T * (c0 + (1.0 - c0) * py)


def price(D: np.ndarray, c0: float) -> tuple[np.ndarray, np.ndarray]:
    r"""Exact pricing for every action at once.

    ``D`` is (m, K) with columns :math:`d=B^\lambda_{:,a}-u`.  Returns ``(order, rc)``: ``order[:, a]``
    sorts d increasingly and ``rc[j, a]`` is the reduced cost of the prefix set of the j+1 smallest
    entries, j = 0 .. m-2; the minimum over j is the minimum over all non-empty proper subsets.
    """
    order = np.argsort(D, axis=0, kind="stable")
    cs = np.cumsum(np.take_along_axis(D, order, axis=0), axis=0)
    rc = c0 * cs[-1][None, :] + (1.0 - c0) * cs[:-1]
    return order, rc


def min_reduced_cost(B_eff: np.ndarray, u: np.ndarray, c0: float) -> float:
    """Exact minimum reduced cost over all (subset, action) pairs."""
    if B_eff.shape[0] < 2:
        return 0.0
    _, rc = price(B_eff - u[:, None], c0)
    return float(rc.min())


def data_scale(B: np.ndarray) -> float:
    """Scale of a cost matrix for relative tolerances: the largest column sum of ``|B|`` (1 for zeros)."""
    return float(np.abs(B).sum(axis=0).max()) or 1.0


def unit_exponent(values: Any) -> int:
    r"""The e with :math:`\max|v|/2^e\in(1/2,1]` (0 for zeros): HiGHS's tolerances are absolute (about
    1e-9) and it gives up on coefficients above about 1e15, so LP data are passed at unit scale."""
    arr = np.asarray(values, dtype=float)
    top = float(np.abs(arr).max()) if arr.size else 0.0
    if top == 0.0 or not math.isfinite(top):
        return 0
    mant, exponent = math.frexp(top)
    return exponent - 1 if mant == 0.5 else exponent


def times_pow2(x: Any, exponent: int) -> Any:
    """``x * 2**exponent`` (exact; inf past the float range), for floats and arrays."""
    with np.errstate(over="ignore"):
        out = np.ldexp(x, exponent)
    return out if isinstance(x, np.ndarray) else float(out)


def merge_pairs(
    rows: np.ndarray, actions: np.ndarray, z: np.ndarray, K: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Merge pair columns (y, a) with the same subset into one output with a randomised decision.

    Returns ``(rows, weights, rule)``: distinct subsets, their summed weights and the (n, K)
    row-stochastic decision rule.
    """
    keys: dict[bytes, int] = {}
    out_rows: list[np.ndarray] = []
    out_w: list[float] = []
    out_rule: list[np.ndarray] = []
    for r, a, w in zip(rows, actions, z, strict=False):
        key = r.tobytes()
        if key not in keys:
            keys[key] = len(out_rows)
            out_rows.append(r)
            out_w.append(0.0)
            out_rule.append(np.zeros(K))
        j = keys[key]
        out_w[j] += float(w)
        out_rule[j][int(a)] += float(w)
    W = np.array(out_w)
    rule = np.array(out_rule) / W[:, None]
    return np.array(out_rows, dtype=bool).reshape(-1, rows.shape[1]), W, rule


def column_bound(m: int, c0: float) -> float:
    r"""Upper bound on :math:`\sum_y\tilde c_y` over the polytope: summing the x-rows gives
    :math:`\sum_y \tilde c_y(|y|+(m-|y|)c_0)=m` and :math:`|y|+(m-|y|)c_0\ge 1+(m-1)c_0`."""
    return m / (1.0 + (m - 1) * c0)


# --------------------------------------------------------------------------------------------
# one LP over given pair columns (sparse sigma formulation, linprog/HiGHS)
# --------------------------------------------------------------------------------------------


def _sparse_eq(rows: np.ndarray, c0: float):
    """Equality block [(1-c0) R^T, c0 1 ; -1^T, 1] for columns [z, sigma]."""
    n, m = rows.shape
    r_idx, c_idx = np.nonzero(rows.T)
    data = np.full(r_idx.size, 1.0 - c0)
    top = sparse.csr_matrix((data, (r_idx, c_idx)), shape=(m, n))
    A = sparse.bmat(
        [
            [top, sparse.csr_matrix(np.full((m, 1), c0))],
            [sparse.csr_matrix(-np.ones((1, n))), sparse.csr_matrix(np.ones((1, 1)))],
        ],
        format="csr",
    )
    b = np.concatenate([np.ones(m), [0.0]])
    return A, b


def solve_pair_lp(
    rows: np.ndarray,
    actions: np.ndarray,
    c0: float,
    *,
    costs: np.ndarray | None = None,
    risks: np.ndarray | None = None,
) -> PairLP:
    r"""Solve the pair LP over the given columns with HiGHS (Bayes if ``risks`` is None, else minimax).

    ``costs`` (n,) are the Bayes costs; ``risks`` (n, T) the minimax risk coefficients.
    Returns the support of a basic optimal solution and the duals.
    """
    n, m = rows.shape
    A_eq, b_eq = _sparse_eq(rows, c0)
    opts = {"primal_feasibility_tolerance": LP_TOL, "dual_feasibility_tolerance": LP_TOL}
    if risks is None:
        c = np.concatenate([costs, [0.0]])
        res = optimize.linprog(c, A_eq=A_eq, b_eq=b_eq, bounds=(0, None), method="highs-ds", options=opts)
        T = 0
    else:
        T = risks.shape[1]
        A_eq = sparse.hstack([A_eq, sparse.csr_matrix((m + 1, 1))], format="csr")
        A_ub = sparse.hstack(
            [sparse.csr_matrix(risks.T), sparse.csr_matrix((T, 1)), sparse.csr_matrix(-np.ones((T, 1)))],
            format="csr",
        )
        c = np.zeros(n + 2)
        c[-1] = 1.0
        bounds = [(0, None)] * (n + 1) + [(None, None)]
        res = optimize.linprog(
            c,
            A_ub=A_ub,
            b_ub=np.zeros(T),
            A_eq=A_eq,
            b_eq=b_eq,
            bounds=bounds,
            method="highs-ds",
            options=opts,
        )
    if res.status != 0:
        return PairLP(
            rows[:0],
            actions[:0],
            np.zeros(0),
            math.nan,
            np.zeros(m),
            None,
            int(res.status),
            str(res.message),
            iterations=1,
            columns=n,
        )
    z = np.asarray(res.x[:n])
    u = np.asarray(res.eqlin.marginals[:m])
    prior = None
    if T:
        lam = np.clip(-np.asarray(res.ineqlin.marginals), 0.0, None)
        prior = lam / lam.sum() if lam.sum() > 0 else np.full(T, 1.0 / T)
    sup = np.flatnonzero(z > SUPPORT_RTOL * max(z.max(), 1e-300))
    return PairLP(
        rows[sup],
        actions[sup],
        z[sup],
        float(res.fun),
        u,
        prior,
        0,
        str(res.message),
        iterations=1,
        columns=n,
    )


# --------------------------------------------------------------------------------------------
# restricted master problems for column generation
# --------------------------------------------------------------------------------------------


class _Master:
    """Restricted master LP: rows [x-rows (=1), sigma-row (=0), theta-rows (<=0)];
    columns [sigma, (t), pairs]."""

    def __init__(self, m: int, c0: float, T: int):
        self.m, self.c0, self.T = m, c0, T
        self.rows = np.zeros((0, m), dtype=bool)
        self.actions = np.zeros(0, dtype=int)
        self.costs = np.zeros(0)
        self.risks = np.zeros((0, T))

    def _col_entries(self, rows, risks):
        """CSC pieces (starts, index, value) of new pair columns."""
        m, T = self.m, self.T
        starts, idx, val = [], [], []
        pos = 0
        for j in range(rows.shape[0]):
            xs = np.flatnonzero(rows[j])
            starts.append(pos)
            idx.extend(xs.tolist())
            val.extend([1.0 - self.c0] * xs.size)
            idx.append(m)
            val.append(-1.0)
            pos += xs.size + 1
            if T:
                idx.extend(range(m + 1, m + 1 + T))
                val.extend(risks[j].tolist())
                pos += T
        return (
            np.array(starts, dtype=np.int32),
            np.array(idx, dtype=np.int32),
            np.array(val, dtype=float),
            pos,
        )

    def delete(self, idx):
        keep = np.ones(self.rows.shape[0], dtype=bool)
        keep[idx] = False
        self.rows, self.actions, self.costs = self.rows[keep], self.actions[keep], self.costs[keep]
        if self.T:
            self.risks = self.risks[keep]

    def solve(self):
        """``(ok, value, x, u, lam, message)`` of the current master (x, u, lam are None on failure)."""
        raise NotImplementedError

    def add(self, rows, actions, costs, risks):
        self.rows = np.vstack([self.rows, rows])
        self.actions = np.concatenate([self.actions, actions])
        self.costs = np.concatenate([self.costs, costs])
        self.risks = np.vstack([self.risks, risks]) if self.T else self.risks


class _HighsMaster(_Master):
    def __init__(self, m, c0, T, core):
        super().__init__(m, c0, T)
        self._h = core
        h = self.h = core._Highs()
        for key, val in (
            ("output_flag", False),
            ("presolve", "off"),
            ("solver", "simplex"),
            ("simplex_strategy", 4),
            ("primal_feasibility_tolerance", LP_TOL),
            ("dual_feasibility_tolerance", LP_TOL),
        ):
            h.setOptionValue(key, val)
        inf = core.kHighsInf
        lower = np.concatenate([np.ones(m), [0.0], np.full(T, -inf)])
        upper = np.concatenate([np.ones(m), [0.0], np.zeros(T)])
        empty_i = np.zeros(0, dtype=np.int32)
        h.addRows(m + 1 + T, lower, upper, 0, empty_i, empty_i, np.zeros(0))
        # sigma column: c0 on x-rows, +1 on the sigma row
        h.addCols(
            1,
            np.zeros(1),
            np.zeros(1),
            np.full(1, inf),
            m + 1,
            np.zeros(1, dtype=np.int32),
            np.arange(m + 1, dtype=np.int32),
            np.concatenate([np.full(m, c0), [1.0]]),
        )
        self.offset = 1
        if T:
            h.addCols(
                1,
                np.ones(1),
                np.full(1, -inf),
                np.full(1, inf),
                T,
                np.zeros(1, dtype=np.int32),
                np.arange(m + 1, m + 1 + T, dtype=np.int32),
                -np.ones(T),
            )
            self.offset = 2

    def add(self, rows, actions, costs, risks):
        super().add(rows, actions, costs, risks)
        k = rows.shape[0]
        starts, idx, val, nnz = self._col_entries(rows, risks)
        cost = costs if not self.T else np.zeros(k)
        self.h.addCols(
            k,
            np.asarray(cost, dtype=float),
            np.zeros(k),
            np.full(k, self._h.kHighsInf),
            nnz,
            starts,
            idx,
            val,
        )

    def delete(self, idx):
        super().delete(idx)
        idx = np.asarray(idx, dtype=np.int32) + self.offset
        self.h.deleteCols(idx.size, idx)

    def solve(self):
        self.h.run()
        if self.h.getModelStatus() != self._h.HighsModelStatus.kOptimal:
            return False, math.nan, None, None, None, self.h.modelStatusToString(self.h.getModelStatus())
        sol = self.h.getSolution()
        x = np.asarray(sol.col_value)[self.offset :]
        dual = np.asarray(sol.row_dual)
        u = dual[: self.m]
        lam = np.clip(-dual[self.m + 1 :], 0.0, None) if self.T else None
        return True, float(self.h.getInfo().objective_function_value), x, u, lam, "optimal"


class _LinprogMaster(_Master):
    """Fallback master: re-solves with scipy.optimize.linprog each round."""

    def solve(self):
        res = solve_pair_lp(
            self.rows,
            self.actions,
            self.c0,
            costs=None if self.T else self.costs,
            risks=self.risks if self.T else None,
        )
        if res.status != 0:
            return False, math.nan, None, None, None, res.message
        x = np.zeros(self.rows.shape[0])
        # map the support back to positions (rows/actions pairs are unique in the master)
        key = {
            (r.tobytes(), int(a)): i for i, (r, a) in enumerate(zip(self.rows, self.actions, strict=False))
        }
        for r, a, w in zip(res.rows, res.actions, res.z, strict=False):
            x[key[(r.tobytes(), int(a))]] = w
        lam = None
        if self.T:
            lam = res.prior
        return True, res.value, x, res.u, lam, res.message


def make_master(m: int, c0: float, T: int, backend: str = "auto") -> _Master:
    """The restricted master: the HiGHS object bundled with scipy >= 1.15 keeps its basis between
    rounds (a warm start after adding columns); ``scipy.optimize.linprog`` re-solves from scratch."""
    core = _HIGHS_CORE if backend in ("auto", "highs") else None
    if backend == "highs" and core is None:
        raise RuntimeError("the incremental HiGHS backend (scipy >= 1.15) is not available")
    if core is not None:
        try:
            return _HighsMaster(m, c0, T, core)
        except Exception:  # pragma: no cover - private API changed: fall back to linprog
            if backend == "highs":
                raise
    return _LinprogMaster(m, c0, T)


# --------------------------------------------------------------------------------------------
# column generation
# --------------------------------------------------------------------------------------------


def _seed_columns(B0: np.ndarray, c0: float) -> tuple[np.ndarray, np.ndarray]:
    """Initial columns: randomized response (the singletons), each with its cheapest action.

    RR is a non-degenerate basis of the master.  Richer seeds (decision regions of the non-private
    problem and their complements) were tried and made convergence slower: a set and its complement
    with the same action add up to the constant row, a degenerate "no information" vertex.
    """
    m = B0.shape[0]
    rows = np.eye(m, dtype=bool)
    costs = c0 * B0.sum(axis=0)[None, :] + (1.0 - c0) * B0
    return rows, np.argmin(costs, axis=1).astype(int)


def _initial_columns(B0: np.ndarray, c0: float, seed) -> tuple[np.ndarray, np.ndarray]:
    """The RR seed of :func:`_seed_columns` plus the (distinct) columns of a caller's ``seed``."""
    rows, acts = _seed_columns(B0, c0)
    if seed is not None:
        have = {(r.tobytes(), int(a)) for r, a in zip(rows, acts, strict=False)}
        keep = [
            i
            for i, (r, a) in enumerate(zip(*seed, strict=False))
            if (np.asarray(r, bool).tobytes(), int(a)) not in have
        ]
        rows = np.vstack([rows, np.asarray(seed[0], dtype=bool)[keep]])
        acts = np.concatenate([acts, np.asarray(seed[1], dtype=int)[keep]])
    return rows, acts


def _priced_columns(
    order: np.ndarray, rc: np.ndarray, tol: float, per_action: int
) -> list[tuple[np.ndarray, int]]:
    """Up to ``per_action`` prefix columns per action with reduced cost below ``-tol``
    (from :func:`price`)."""
    out = []
    for a in np.flatnonzero(rc.min(axis=0) < -tol):
        for j in np.argsort(rc[:, a], kind="stable")[:per_action]:
            if rc[j, a] >= -tol:
                break
            out.append((_prefix_set(order, j, a), int(a)))
    return out


def _prefix_set(order: np.ndarray, j: int, a: int | np.integer) -> np.ndarray:
    """The subset of the ``j + 1`` smallest entries of column ``a`` (``order`` from :func:`price`)."""
    y = np.zeros(order.shape[0], dtype=bool)
    y[order[: j + 1, a]] = True
    return y


def _column_rc(master: _Master, Beff: np.ndarray, u: np.ndarray, c0: float) -> np.ndarray:
    """Reduced costs of the master's columns at the duals (u, Beff)."""
    D = Beff - u[:, None]
    inside = np.einsum("nm,mn->n", master.rows.astype(float), D[:, master.actions])
    return c0 * D.sum(axis=0)[master.actions] + (1.0 - c0) * inside


def _add_pairs(master: _Master, rows: np.ndarray, acts: np.ndarray, c0: float, B, P, L) -> None:
    """Add (subset, action) columns to the master, with their Bayes costs (``B`` given) or their minimax
    risks (``P`` and ``L``)."""
    if B is None:
        master.add(rows, acts, np.zeros(len(acts)), pair_risks(rows, acts, P, L, c0))
    else:
        master.add(rows, acts, pair_costs(rows, acts, B, c0), None)


def _support(master: _Master, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows, actions, weights) of the master's columns with positive weight ``x``, copied (the master
    changes after each solve)."""
    sup = np.flatnonzero(x > SUPPORT_RTOL * max(float(x.max()), 1e-300))
    return master.rows[sup].copy(), master.actions[sup].copy(), x[sup].copy()


def _no_support(m: int, status: int, message: str, it: int, master: _Master) -> PairLP:
    """The result when no master was solved: no columns, NaN value, zero duals."""
    return PairLP(
        np.zeros((0, m), bool),
        np.zeros(0, int),
        np.zeros(0),
        math.nan,
        np.zeros(m),
        None,
        status,
        message,
        iterations=it,
        columns=master.rows.shape[0],
    )


def _check_duals(duals: str, B: np.ndarray | None) -> None:
    if duals not in ("auto", "lagrangian", "in-out"):
        raise ValueError(f"duals must be 'auto', 'lagrangian' or 'in-out', got duals={duals!r}")
    if duals == "lagrangian" and B is None:
        raise ValueError("duals='lagrangian' needs a Bayes problem (B); minimax uses duals='in-out'")


def _in_out_columns(
    u_in, lam_in, u, lam, alpha: float, tol: float, c0: float, *, per_action: int, B, P, L, seen: set
):
    r"""In-out separation: price at :math:`\alpha u_{\rm in}+(1-\alpha)u` (and the same mix of the minimax
    priors).  A point that prices out nothing becomes the new inner point and alpha is halved (0 once
    below 0.1) until alpha = 0; otherwise the columns priced out there that are not in ``seen`` are the
    new ones (added to ``seen``).  Returns ``(u_in, lam_in, new rows, new actions)``."""
    new_r: list[np.ndarray] = []
    new_a: list[int] = []
    while True:
        us = alpha * u_in + (1.0 - alpha) * u
        ls = alpha * lam_in + (1.0 - alpha) * lam if lam_in is not None else None
        Bs = effective_B(P, L, ls) if ls is not None else B
        order, rc = price(Bs - us[:, None], c0)
        if rc.min() >= -tol:
            # the separation point is dual feasible: it becomes the new inner point
            u_in, lam_in = us, ls
            if alpha == 0.0:
                break
            alpha = 0.0 if alpha < 0.1 else alpha / 2.0
            continue
        for y, a in _priced_columns(order, rc, tol, per_action):
            key = (y.tobytes(), a)
            if key not in seen:
                seen.add(key)
                new_r.append(y)
                new_a.append(a)
        break
    return u_in, lam_in, new_r, new_a


def _purge_idle(
    master: _Master, Beff, u, x, c0: float, tol: float, *, purge: int | None, seen: set, purged: set
) -> None:
    """When the master exceeds ``purge * m`` columns, drop the non-basic columns with the largest reduced
    cost; a column is deleted at most once (a re-generated column stays), so purging cannot make the
    method cycle."""
    m, n_cols = master.m, master.rows.shape[0]
    if purge and n_cols > purge * m:
        rc_cols = _column_rc(master, Beff, u, c0)
        keys = [(r.tobytes(), int(a)) for r, a in zip(master.rows, master.actions, strict=False)]
        idle = np.array([i for i in np.flatnonzero(x <= 0.0) if keys[i] not in purged], dtype=int)
        if idle.size:
            drop = idle[np.argsort(rc_cols[idle])[::-1][: n_cols - purge * m // 2]]
            drop = drop[rc_cols[drop] > tol]
            for i in drop:
                seen.discard(keys[i])
                purged.add(keys[i])
            master.delete(np.sort(drop))


def column_generation(
    c0: float,
    *,
    B: np.ndarray | None = None,
    P: np.ndarray | None = None,
    L: np.ndarray | None = None,
    max_iter: int = 20000,
    time_limit: float | None = None,
    smoothing: float = SMOOTHING,
    per_action: int = PER_ACTION,
    purge: int | None = PURGE,
    backend: str = "auto",
    seed: tuple[np.ndarray, np.ndarray] | None = None,
    duals: str = "auto",
) -> PairLP:
    r"""Exact column generation for the Bayes (``B`` given) or minimax (``P`` and ``L`` given) pair LP.

    Each round solves the restricted master (seeded with randomized response) and prices all pairs
    exactly (:func:`price`) at the in-out separation point :math:`\alpha u_{\rm in}+(1-\alpha)u`
    (Ben-Ameur and Neto): :math:`u_{\rm in}` is dual feasible for the full problem (initially
    :math:`\min_a B_{x,a}`), u is the master dual.  A separation point that prices out nothing
    becomes the new :math:`u_{\rm in}` and :math:`\alpha` is halved; otherwise up to ``per_action``
    columns per action with negative reduced cost (at the separation point, hence also at u) are
    added.  It stops when no column prices out at the master duals, or when the proven bound
    :math:`\sum_x u_{{\rm in},x}` meets the master value; the returned duals certify optimality.
    Idle columns are purged when the master exceeds ``purge * m`` columns.  ``seed`` = (rows, actions)
    adds columns to the initial master (a warm start; ``benchmarks/bench_decision.py`` seeds it with an
    optimal support to measure how long certifying optimality alone takes).

    ``duals`` chooses where columns are priced: ``"in-out"`` is the scheme above; ``"lagrangian"``
    (Bayes only, the default there through ``"auto"``) prices at the Lagrangian dual points of
    :func:`lagrangian_column_generation`, which exploit that the dual has only |A| coupling
    constraints.
    """
    _check_duals(duals, B)
    if B is not None and duals != "in-out" and B.shape[0] >= 2:
        return lagrangian_column_generation(
            c0, B, max_iter=max_iter, time_limit=time_limit, per_action=per_action, backend=backend, seed=seed
        )
    minimax = B is None
    # exactly one problem is given (B, or P and L; see methods._linear) and each branch below reads
    # only its own arrays, a link mypy cannot follow through `minimax`
    B, P, L = cast(np.ndarray, B), cast(np.ndarray, P), cast(np.ndarray, L)
    if minimax:
        m, T = P.shape
        K = L.shape[1]
        B0 = effective_B(P, L, np.full(T, 1.0 / T))
    else:
        m, K = B.shape
        T = 0
        B0 = B
    master = make_master(m, c0, T, backend)
    rows, acts = _initial_columns(B0, c0, seed)
    seen = {(r.tobytes(), int(a)) for r, a in zip(rows, acts, strict=False)}
    purged: set = set()
    _add_pairs(master, rows, acts, c0, B, P, L)
    start = time.perf_counter()
    # in-out separation (Ben-Ameur & Neto): u_in is dual feasible for the FULL problem (its value
    # sum(u_in) is a proven bound), u_out is the master dual; price at a point between them.
    lam_in = np.full(T, 1.0 / T) if minimax else None
    u_in = B0.min(axis=1)  # d = B_a - u_in >= 0 for every a: all reduced costs are >= 0
    status, message = 1, "iteration limit reached"
    value, x, u, lam = math.nan, None, None, None
    best = None  # support of the last master solution (the master changes after each solve)
    scale = data_scale(B0)
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 - it is read after the loop (the rounds done)
        ok, value, x, u, lam, msg = master.solve()
        if not ok:
            status, message = 4, f"restricted master failed: {msg}"
            break
        if minimax:
            lam = lam / lam.sum() if lam.sum() > 0 else np.full(T, 1.0 / T)
        best = _support(master, x)
        tol = RC_RTOL * max(scale, abs(value))
        Beff = effective_B(P, L, lam) if minimax else B
        if min_reduced_cost(Beff, u, c0) >= -tol:
            status, message = 0, "optimal: no column prices out"
            break
        if value - float(u_in.sum()) <= GAP_RTOL * max(scale, abs(value)):
            status, message = 0, "optimal: the dual bound meets the master value"
            u, lam = u_in, lam_in
            break
        if time_limit is not None and time.perf_counter() - start > time_limit:
            status, message = 1, "time limit reached"
            break
        u_in, lam_in, new_r, new_a = _in_out_columns(
            u_in, lam_in, u, lam, smoothing, tol, c0, per_action=per_action, B=B, P=P, L=L, seen=seen
        )
        if not new_r:
            status, message = 0, "optimal within the LP tolerance (no new column)"
            break
        _purge_idle(master, Beff, u, x, c0, tol, purge=purge, seen=seen, purged=purged)
        _add_pairs(master, np.array(new_r, dtype=bool), np.array(new_a, dtype=int), c0, B, P, L)
    if best is None or u is None:  # u is None when a later master solve failed
        return _no_support(m, status, message, it, master)
    return PairLP(
        best[0],
        best[1],
        best[2],
        value,
        u,
        lam if minimax else None,
        status,
        message,
        iterations=it,
        columns=master.rows.shape[0],
    )


# --------------------------------------------------------------------------------------------
# column generation priced at Lagrangian dual points (Bayes)
# --------------------------------------------------------------------------------------------


def action_slacks(B: np.ndarray, u: np.ndarray, c0: float) -> np.ndarray:
    r""":math:`g_a(u)=\min_{y\subseteq X}\bar c(y,a)=\sum_x\psi(B_{x,a}-u_x)`, :math:`\psi(d)=\min(d, c_0d)`.

    The cheapest subset for action a takes every x with a negative :math:`d_x=B_{x,a}-u_x`, so
    u is dual feasible for all subsets exactly when :math:`g_a(u)\ge 0` for every a (the empty
    and full sets add nothing: their rows are combinations of a subset's and its complement's).
    """
    D = B - u[:, None]
    return np.minimum(D, c0 * D).sum(axis=0)


def lagrangian_point(B: np.ndarray, h: np.ndarray, c0: float) -> np.ndarray:
    r"""A maximiser u of :math:`\mathcal L(u,h)=\sum_x u_x+\sum_a h_a\,g_a(u)`, for action weights h >= 0.

    :math:`\mathcal L` is separable in x: along :math:`u_x` it is concave, piecewise linear, with
    slope :math:`1-c_0\sum_a h_a-(1-c_0)\sum_{a:B_{x,a}<u_x}h_a`, so a maximiser is the first
    breakpoint :math:`B_{x,a}` (actions in increasing order of :math:`B_{x,\cdot}`) after which the
    slope is <= 0.  O(m |A| log |A|).
    """
    return _inner(B, h, c0)[0]


def _inner(B: np.ndarray, h: np.ndarray, c0: float) -> tuple[np.ndarray, np.ndarray]:
    r"""``(u, s)``: :func:`lagrangian_point` and the matching primal solution of the inner problem.

    With the column maxima fixed to h the channel LP splits per input:
    :math:`W_{x,a}=c_0h_a+s_{x,a}`, :math:`0\le s_{x,a}\le(1-c_0)h_a`,
    :math:`\sum_a s_{x,a}=1-c_0\sum_a h_a`, cost :math:`\sum_a s_{x,a}B_{x,a}`: a continuous
    knapsack, filled greedily in increasing order of :math:`B_{x,\cdot}`.  The action that is
    filled last is where the slope of :math:`\mathcal L` along :math:`u_x` turns <= 0, so u and s
    are a primal-dual pair: :math:`D(h)=\sum_x u_x+h\cdot g(u)=c_0h\cdot\sum_x B_{x,:}+\sum s B`.
    """
    m, K = B.shape
    rows = np.arange(m)[:, None]
    order = np.argsort(B, axis=1, kind="stable")
    Bs = np.take_along_axis(B, order, axis=1)
    cap = (1.0 - c0) * h[order]
    need = max(1.0 - c0 * float(h.sum()), 0.0)
    drop = np.cumsum(cap, axis=1)
    hit = drop >= need
    j = np.where(hit.any(axis=1), np.argmax(hit, axis=1), K - 1)
    fill = np.clip(need - (drop - cap), 0.0, cap)
    s = np.empty_like(fill)
    s[rows, order] = fill
    return Bs[np.arange(m), j], s


def _layers(s: np.ndarray) -> list[tuple[np.ndarray, int]]:
    """Every level set {x: s[x, a] >= tau}, tau a positive value of column a (its layer-cake layers)."""
    out = []
    for a in range(s.shape[1]):
        col = s[:, a]
        for tau in np.unique(col[col > 0.0]):
            out.append((col >= tau, a))
    return out


def _certify(B: np.ndarray, u: np.ndarray, c0: float, priced=None):
    r"""``(u + t 1, order, rc)``: the largest t keeping every reduced cost >= 0 (an exactly dual-feasible
    point), with the pricing of :func:`price` at that point.

    :math:`\bar c(y,a)` falls by :math:`t\,w_y`, :math:`w_y=|y|+c_0(m-|y|)`, when u rises by
    :math:`t\mathbf 1`, and for a fixed size |y| the cheapest subset is a prefix of the order of
    d, so :math:`t=\min_{a,j}\bar c_j(a)/w_{j}` over the prefixes of :func:`price` (Farley's bound).
    The shift keeps the order of d.  ``priced`` = ``price(B - u, c0)`` when the caller has it.
    """
    m = B.shape[0]
    order, rc = price(B - u[:, None], c0) if priced is None else priced
    sizes = np.arange(1, m, dtype=float)
    w = (sizes + c0 * (m - sizes))[:, None]
    t = float((rc / w).min())
    return u + t, order, rc - t * w


def _weights_master(G: np.ndarray, S: np.ndarray, c0: float):
    r"""Kelley's model of the Lagrangian dual: :math:`\min_h\max_k S_k+h\cdot G_k` over action weights
    :math:`0\le h\le 1`, :math:`1\le\sum h\le 1/c_0` (the column maxima of an LDP channel X -> A).
    Returns ``(h, lam)``, lam >= 0 the cuts' weights (summing to 1)."""
    n, K = G.shape
    rows = [np.hstack([-np.ones((n, 1)), G]), np.r_[0.0, -np.ones(K)][None]]
    rhs: list[Any] = [-S, [-1.0]]
    if c0 > 0.0:
        rows.append(np.r_[0.0, np.ones(K)][None])
        rhs.append([1.0 / c0])
    res = optimize.linprog(
        np.r_[1.0, np.zeros(K)],
        A_ub=np.vstack(rows),
        b_ub=np.concatenate(rhs),
        bounds=[(None, None)] + [(0.0, 1.0)] * K,
        method="highs",
    )
    if res.status != 0:  # pragma: no cover - the model is a bounded, feasible LP
        return None, None
    return np.asarray(res.x[1:]), np.clip(-np.asarray(res.ineqlin.marginals[:n]), 0.0, None)


def _add_fresh(master: _Master, cands, seen: set, B: np.ndarray, c0: float) -> None:
    """Add to the (Bayes) master the candidate (subset, action) columns that are proper, non-empty subsets
    and not in ``seen`` yet (recorded there)."""
    m = B.shape[0]
    out_r, out_a = [], []
    for y, a in cands:
        n = int(y.sum())
        key = (y.tobytes(), int(a))
        if 0 < n < m and key not in seen:
            seen.add(key)
            out_r.append(y)
            out_a.append(int(a))
    if out_r:
        R, Aa = np.array(out_r, dtype=bool), np.array(out_a, dtype=int)
        master.add(R, Aa, pair_costs(R, Aa, B, c0), None)


def lagrangian_column_generation(
    c0: float,
    B: np.ndarray,
    *,
    max_iter: int = 20000,
    time_limit: float | None = None,
    per_action: int = PER_ACTION,
    backend: str = "auto",
    seed: tuple[np.ndarray, np.ndarray] | None = None,
) -> PairLP:
    r"""Exact column generation for the Bayes pair LP, priced at Lagrangian dual points.

    The dual of the pair LP is :math:`\max\sum_x u_x` s.t. :math:`g_a(u)\ge 0` for every action
    (:func:`action_slacks`): only |A| constraints couple the m coordinates of u.  Dualising them with
    weights :math:`h\ge 0` gives :math:`D(h)=\max_u\mathcal L(u,h)` (:func:`lagrangian_point`), a
    convex function of |A| variables whose minimum is the optimum (``docs/decision.md``).  Each round

    1. evaluates u(h) and adds the cut :math:`\theta\ge\sum_x u_x+h\cdot g(u)` to Kelley's model of D
       (:func:`_weights_master`, an LP in |A| + 1 variables) and, as master columns, the layers of
       the matching channel with column maxima h (:func:`_inner`, :func:`_layers`; at an optimal h
       that channel is optimal, so its layers are an optimal support);
    2. solves the restricted master (warm HiGHS) and prices exactly at its duals (up to ``per_action``
       columns per action): if nothing prices out, those duals certify optimality (plain column
       generation, so the method terminates);
    3. takes the next h from the model and the cut-weighted mean of the u's, made exactly dual
       feasible by :func:`_certify`; its value is a proven lower bound, and the loop stops when it
       meets the master value (relative gap ``GAP_RTOL``).

    The returned ``u`` is dual feasible for every one of the :math:`2^m-2` subsets.  This is
    column generation combined with Lagrangian relaxation (Huisman, Jans, Peeters and Wagelmans,
    2005): on random problems with m = 256 it needs about ten rounds where pricing at the master's
    degenerate duals needs over a thousand (``benchmarks/README.md``).
    """
    m, K = B.shape
    master = make_master(m, c0, 0, backend)
    rows, acts = _initial_columns(B, c0, seed)
    seen = {(r.tobytes(), int(a)) for r, a in zip(rows, acts, strict=False)}
    master.add(rows, acts, pair_costs(rows, acts, B, c0), None)
    scale = data_scale(B)
    h = np.full(K, min(1.0, 2.0 / ((1.0 + c0) * K)))  # binary RR's column maxima, spread over the actions
    cut_u: list[np.ndarray] = []
    cut_g: list[np.ndarray] = []
    best_u, best_lb = None, -math.inf
    status, message = 1, "iteration limit reached"
    value, best = math.nan, None
    start = time.perf_counter()
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 - it is read after the loop (the rounds done)
        u, s = _inner(B, h, c0)
        cut_u.append(u)
        cut_g.append(action_slacks(B, u, c0))
        _add_fresh(master, _layers(s), seen, B, c0)
        ok, value, x, um, _, msg = master.solve()
        if not ok:
            status, message = 4, f"restricted master failed: {msg}"
            break
        best = _support(master, x)
        tol = RC_RTOL * max(scale, abs(value))
        order, rc = price(B - um[:, None], c0)
        if rc.min() >= -tol:
            status, message = 0, "optimal: no column prices out"
            best_u = um
            break
        h_next, lam = _weights_master(np.array(cut_g), np.array([float(v.sum()) for v in cut_u]), c0)
        cands = [_certify(B, um, c0, (order, rc))]  # the master's duals, lifted to feasibility (Farley)
        if h_next is not None and lam.sum() > 0:
            cands.append(_certify(B, (lam / lam.sum()) @ np.array(cut_u), c0))
            h = h_next
        tight = None
        for cert, o_c, rc_c in cands:
            if float(cert.sum()) > best_lb:
                best_u, best_lb, tight = cert, float(cert.sum()), (o_c, rc_c)
        if tight is not None:
            # columns that are tight at the best certificate: by complementary slackness an optimal
            # support lies among them once the bound is optimal (at most m - 1 prefixes per action)
            o_c, rc_c = tight
            tight_cols = [
                (_prefix_set(o_c, j, a), int(a)) for j, a in zip(*np.nonzero(rc_c <= tol), strict=False)
            ]
            _add_fresh(master, tight_cols, seen, B, c0)
        if value - best_lb <= GAP_RTOL * max(scale, abs(value)):
            status, message = 0, "optimal: the Lagrangian dual bound meets the master value"
            break
        if time_limit is not None and time.perf_counter() - start > time_limit:
            status, message = 1, "time limit reached"
            break
        _add_fresh(master, _priced_columns(order, rc, tol, per_action), seen, B, c0)
    if best is None:
        return _no_support(m, status, message, it, master)
    if best_u is None:
        best_u = _certify(B, um, c0)[0]
    return PairLP(
        best[0],
        best[1],
        best[2],
        value,
        best_u,
        None,
        status,
        message,
        iterations=it,
        columns=master.rows.shape[0],
    )


# --------------------------------------------------------------------------------------------
# the channel LP over X -> A (revelation principle)
# --------------------------------------------------------------------------------------------


def channel_lp(
    c0: float, *, B: np.ndarray | None = None, P: np.ndarray | None = None, L: np.ndarray | None = None
):
    r"""Optimal :math:`\varepsilon`-LDP channel from X to the decisions A with the identity decoder.

    Composing a channel with its decision rule gives a channel :math:`W(a|x)` that is again
    :math:`\varepsilon`-LDP and has the same risk for every :math:`\theta`, so the optimum over all
    (channel, rule) pairs equals an LP over W.  Column a of an LDP channel is
    :math:`W_{:,a}=c_0h_a\mathbf 1+s_{:,a}` with :math:`0\le s_{x,a}\le(1-c_0)h_a` (:math:`h_a` = its
    largest entry), which gives the compact LP (m|A| + |A| variables, no :math:`e^\varepsilon`):

    .. math:: \min \sum_a c_0h_a\sum_x B_{x,a} + \sum_{x,a}s_{x,a}B_{x,a}
              \quad\text{s.t.}\quad c_0\sum_a h_a+\sum_a s_{x,a}=1,\quad s_{x,a}\le(1-c_0)h_a,

    (minimax: :math:`\min t` with :math:`\sum_a l(\theta,a)(c_0h_a+\sum_x P(x|\theta)s_{x,a})\le t`).
    Returns ``(W, value, u, prior, status, message)`` with u the duals of the row sums and ``prior``
    the normalised duals of the :math:`\theta`-rows (minimax).
    """
    minimax = B is None
    # exactly one problem is given (B, or P and L; see methods._linear) and each branch below reads
    # only its own arrays, a link mypy cannot follow through `minimax`
    B, P, L = cast(np.ndarray, B), cast(np.ndarray, P), cast(np.ndarray, L)
    if minimax:
        m, T = P.shape
        K = L.shape[1]
    else:
        m, K = B.shape
        T = 0
    nq = m * K
    # variables: h (K), s (m*K, row-major s[x, a])
    ones_h = sparse.csr_matrix(np.full((m, K), c0))
    rowsum = sparse.hstack([ones_h, sparse.kron(sparse.identity(m), np.ones((1, K)))], format="csr")
    env = sparse.hstack(
        [-(1.0 - c0) * sparse.kron(np.ones((m, 1)), sparse.identity(K)), sparse.identity(nq)], format="csr"
    )
    opts = {"primal_feasibility_tolerance": LP_TOL, "dual_feasibility_tolerance": LP_TOL}

    def channel(x):
        h, s = x[:K], x[K : K + nq].reshape(m, K)
        return np.clip(c0 * h[None, :] + s, 0.0, None)

    if not minimax:
        cost = np.concatenate([c0 * B.sum(axis=0), B.ravel()])
        res = optimize.linprog(
            cost,
            A_ub=env,
            b_ub=np.zeros(nq),
            A_eq=rowsum,
            b_eq=np.ones(m),
            bounds=(0, None),
            method="highs",
            options=opts,
        )
        if res.status != 0:
            return None, math.nan, None, None, int(res.status), str(res.message)
        return channel(res.x), float(res.fun), np.asarray(res.eqlin.marginals), None, 0, str(res.message)
    # risk rows: sum_a L[theta,a] (c0 h_a + sum_x P[x,theta] s[x,a]) - t <= 0
    R_h = c0 * L  # (T, K), since sum_x P(x|theta) = 1
    R_s = np.einsum("xt,ta->txa", P, L).reshape(T, nq)
    A_ub = sparse.vstack(
        [
            sparse.hstack([env, sparse.csr_matrix((nq, 1))]),
            sparse.csr_matrix(np.hstack([R_h, R_s, -np.ones((T, 1))])),
        ],
        format="csr",
    )
    A_eq = sparse.hstack([rowsum, sparse.csr_matrix((m, 1))], format="csr")
    cost = np.zeros(K + nq + 1)
    cost[-1] = 1.0
    bounds = [(0, None)] * (K + nq) + [(None, None)]
    res = optimize.linprog(
        cost,
        A_ub=A_ub,
        b_ub=np.zeros(nq + T),
        A_eq=A_eq,
        b_eq=np.ones(m),
        bounds=bounds,
        method="highs",
        options=opts,
    )
    if res.status != 0:
        return None, math.nan, None, None, int(res.status), str(res.message)
    lam = np.clip(-np.asarray(res.ineqlin.marginals[nq:]), 0.0, None)
    lam = lam / lam.sum() if lam.sum() > 0 else np.full(T, 1.0 / T)
    return channel(res.x), float(res.fun), np.asarray(res.eqlin.marginals), lam, 0, str(res.message)
