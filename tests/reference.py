"""Slow, readable oracles that the library's answers are checked against.

Nothing here calls the code under test's solvers: each oracle recomputes the optimum by an
independent method (brute force over set partitions, vertex enumeration of the channel
polytope, high-precision arithmetic).
"""

from __future__ import annotations

import itertools
import math
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np

# ---------------------------------------------------------------------------------------------
# f-divergences written straight from their textbook formulas (no shared code with the library)
# ---------------------------------------------------------------------------------------------


def naive_divergence(u, v, name: str, param: float = 0.0) -> float:
    """D_f(u||v) from the textbook formula of each divergence."""
    u = np.asarray(u, float)
    v = np.asarray(v, float)
    total = 0.0
    for a, b in zip(u, v, strict=False):
        if a == 0 and b == 0:
            continue
        if name == "kl":
            total += 0.0 if a == 0 else (math.inf if b == 0 else a * math.log(a / b))
        elif name == "reverse_kl":
            total += 0.0 if b == 0 else (math.inf if a == 0 else b * math.log(b / a))
        elif name == "tv":
            total += abs(a - b) / 2
        elif name == "chi2":
            total += math.inf if b == 0 else (a - b) ** 2 / b
        elif name == "hellinger":
            total += (math.sqrt(a) - math.sqrt(b)) ** 2
        elif name == "js":
            total += 0.5 * (
                (a * math.log(2 * a / (a + b)) if a else 0.0) + (b * math.log(2 * b / (a + b)) if b else 0.0)
            )
        elif name == "egamma":
            total += max(a - param * b, 0.0)
        elif name == "renyi_sum":  # sum u^a v^(1-a)
            total += (
                (a**param) * (b ** (1 - param))
                if a > 0 and b > 0
                else (0.0 if param < 1 or b > 0 else math.inf)
            )
        else:
            raise ValueError(name)
    return total


def naive_renyi(u, v, alpha: float) -> float:
    """Renyi divergence D_alpha(u||v) = log(sum u^a v^(1-a)) / (a - 1)."""
    s = naive_divergence(u, v, "renyi_sum", alpha)
    if s == 0:
        return math.inf
    return math.log(s) / (alpha - 1)


def egamma_sup(u, v, gamma: float) -> float:
    """E_gamma(u||v) = sup_A u(A) - gamma v(A), by enumerating every subset A (eq. 14)."""
    k = len(u)
    best = 0.0
    for r in range(1, k + 1):
        for A in itertools.combinations(range(k), r):
            best = max(best, sum(u[i] for i in A) - gamma * sum(v[i] for i in A))
    return best


# ---------------------------------------------------------------------------------------------
# Brute force over ALL set partitions (not only likelihood-ratio-contiguous ones)
# ---------------------------------------------------------------------------------------------


def set_partitions(items):
    """All set partitions of a list (Bell-number many)."""
    items = list(items)
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for part in set_partitions(rest):
        for i in range(len(part)):
            yield part[:i] + [[first] + part[i]] + part[i + 1 :]
        yield [[first]] + part


def rr_on_blocks(blocks, k: int, eps: float) -> np.ndarray:
    """s-ary randomized response on the block label, written directly from eq. (11)."""
    s = len(blocks)
    m = np.empty((k, s))
    if math.isinf(eps):
        hi, lo = 1.0, 0.0
    else:
        hi, lo = math.exp(eps) / (math.exp(eps) + s - 1), 1.0 / (math.exp(eps) + s - 1)
    for j, block in enumerate(blocks):
        m[:, j] = lo
        m[list(block), j] = hi
    return m


def brute_force_optimum(p, q, eps: float, div_fn, max_blocks: int | None = None) -> float:
    """max over every set partition (<= max_blocks blocks) of D(RR-on-blocks) for a divergence callable."""
    return brute_force_argmax(p, q, eps, div_fn, max_blocks)[0]


def brute_force_argmax(p, q, eps: float, div_fn, max_blocks: int | None = None):
    """``(best value, its set partition)`` of :func:`brute_force_optimum` (first maximiser)."""
    k = len(p)
    best, arg = -math.inf, None
    for part in set_partitions(range(k)):
        if max_blocks is not None and len(part) > max_blocks:
            continue
        m = rr_on_blocks(part, k, eps)
        val = div_fn(m.T @ p, m.T @ q)
        if val > best:
            best, arg = val, part
    return best, arg


# ---------------------------------------------------------------------------------------------
# Vertex enumeration of the polytope of l-output eps-LDP channels (pycddlib)
# ---------------------------------------------------------------------------------------------


def reduced_cuts(red, partition) -> list[tuple[int, int]]:
    """Reduced intervals of a partition of original symbols (inverse of ``LRReduction.lift_blocks``)."""
    where = {i: j for j, cls in enumerate(red.classes) for i in cls}
    cuts = []
    for block in partition:
        idx = sorted(where[i] for i in block if i in where)
        cuts.append((idx[0], idx[-1] + 1))
    return cuts


def ldp_channel_vertices(k: int, l: int, eps: float) -> np.ndarray:
    """All vertices of {Q in R^{k x l}: Q >= 0, Q 1 = 1, Q[i,y] <= e^eps Q[j,y]} via cdd.

    Returns an array of shape (n_vertices, k, l).  The polytope is bounded, so every
    generator is a vertex.
    """
    import cdd

    n = k * l
    E = math.exp(eps)

    def var(i, y):
        return i * l + y

    rows, lin = [], []
    for i in range(k):
        for y in range(l):  # Q[i,y] >= 0
            r = [0.0] * (n + 1)
            r[1 + var(i, y)] = 1.0
            rows.append(r)
    for y in range(l):
        for i in range(k):
            for j in range(k):
                if i != j:  # e^eps Q[j,y] - Q[i,y] >= 0
                    r = [0.0] * (n + 1)
                    r[1 + var(j, y)] = E
                    r[1 + var(i, y)] = -1.0
                    rows.append(r)
    for i in range(k):  # sum_y Q[i,y] = 1
        r = [1.0] + [0.0] * n
        for y in range(l):
            r[1 + var(i, y)] = -1.0
        lin.append(len(rows))
        rows.append(r)
    mat = cdd.matrix_from_array(rows, lin_set=set(lin), rep_type=cdd.RepType.INEQUALITY)
    poly = cdd.polyhedron_from_matrix(mat)
    gen = cdd.copy_generators(poly)
    verts = [g[1:] for g in gen.array if g[0] == 1]
    return np.array(verts, dtype=float).reshape(-1, k, l)


def vertex_enumeration_optimum(p, q, eps: float, div_fn, l: int, vertices=None) -> float:
    """max of a convex utility over all l-output eps-LDP channels = max over the polytope's vertices."""
    k = len(p)
    verts = ldp_channel_vertices(k, l, eps) if vertices is None else vertices
    best = -math.inf
    for Q in verts:
        Q = np.clip(Q, 0.0, None)
        Q = Q / Q.sum(axis=1, keepdims=True)
        best = max(best, div_fn(Q.T @ p, Q.T @ q))
    return best


# ---------------------------------------------------------------------------------------------
# High precision (decimal) evaluation of the SPR value of a partition, KL utility
# ---------------------------------------------------------------------------------------------


def kl_spr_value_decimal(p, q, eps: float, blocks, digits: int = 60) -> float:
    """KL utility of RR-on-blocks computed with `digits` significant decimal digits."""
    with localcontext() as ctx:
        ctx.prec = digits
        E = Decimal(eps).exp()
        s = len(blocks)
        den = E + s - 1
        total = Decimal(0)
        P = [Decimal(float(x)) for x in p]
        Q = [Decimal(float(x)) for x in q]
        for block in blocks:
            bp = sum((P[i] for i in block), Decimal(0))
            bq = sum((Q[i] for i in block), Decimal(0))
            m0 = (1 + (E - 1) * bp) / den
            m1 = (1 + (E - 1) * bq) / den
            if m0 > 0:
                total += m0 * (m0 / m1).ln()
        return float(total)


# ---------------------------------------------------------------------------------------------
# Joint range of binary-output eps-LDP channels: LPs and an exact acceptance integral
# ---------------------------------------------------------------------------------------------


def binary_channel_support(p, q, eps: float, w) -> float:
    """max of w . (z.p, z.q) over all binary eps-LDP channels, z = Q(1|.), by a direct LP (HiGHS).

    Constraints written from the definition: 0 <= z <= 1, z_i <= e^eps z_j and
    (1 - z_i) <= e^eps (1 - z_j) for every ordered pair i != j.
    """
    from scipy.optimize import linprog

    p = np.asarray(p, float)
    q = np.asarray(q, float)
    k = p.size
    E = math.exp(eps)
    rows, rhs = [], []
    for i in range(k):
        for j in range(k):
            if i != j:
                r = np.zeros(k)
                r[i], r[j] = 1.0, -E  # z_i - E z_j <= 0
                rows.append(r)
                rhs.append(0.0)
                r = np.zeros(k)
                r[i], r[j] = -1.0, E  # (1 - z_i) - E (1 - z_j) <= 0
                rows.append(r)
                rhs.append(E - 1.0)
    obj = w[0] * p + w[1] * q
    res = linprog(
        -obj,
        A_ub=np.array(rows) if rows else None,
        b_ub=np.array(rhs) if rows else None,
        bounds=[(0.0, 1.0)] * k,
        method="highs",
    )
    assert res.status == 0, res.message
    return float(-res.fun)


def extreme_margin(points, i: int) -> float:
    """Largest t with w.(x_i - x_j) >= t for every other distinct point x_j, |w|_inf <= 1 (LP).

    t >= 0 always (w = 0 is feasible); t > 0 iff x_i is a vertex of the convex hull of the points.
    """
    from scipy.optimize import linprog

    pts = np.asarray(points, float)
    others = [j for j in range(len(pts)) if not np.array_equal(pts[j], pts[i])]
    if not others:
        return math.inf
    # variables (w0, w1, t); maximise t
    A = np.array([[-(pts[i, 0] - pts[j, 0]), -(pts[i, 1] - pts[j, 1]), 1.0] for j in others])
    res = linprog(
        [0.0, 0.0, -1.0],
        A_ub=A,
        b_ub=np.zeros(len(others)),
        bounds=[(-1, 1), (-1, 1), (None, None)],
        method="highs",
    )
    assert res.status == 0, res.message
    return float(-res.fun)


def binary_rejection_acceptance(eps: float, k: int, proposal: str) -> float:
    """P(a channel with i.i.d. first column z_x ~ F is eps-LDP), by one-dimensional quadrature.

    With m = min z and M = max z the channel [z, 1 - z] is eps-LDP iff M <= r m and
    1 - m <= r (1 - M) (r = e^eps), i.e. M <= U(m) = min(r m, 1 - (1 - m) / r).  Integrating
    the joint density of (min, max) over M in closed form leaves
    P = int_0^1 k f(m) (F(U(m)) - F(m))_+^{k-1} dm.
    """
    from scipy import integrate, stats

    dist = stats.uniform() if proposal == "uniform" else stats.beta(0.3, 0.3)
    r = math.exp(eps)

    def integrand(m):
        U = min(r * m, 1.0 - (1.0 - m) / r)
        if U <= m:
            return 0.0
        return k * dist.pdf(m) * (dist.cdf(U) - dist.cdf(m)) ** (k - 1)

    # the integrand has integrable singularities at 0 and 1 for the Beta proposal
    m_star = 1.0 / (1.0 + r)  # where the two branches of U cross... split the range there too
    pts = sorted({m_star, r / (1.0 + r), 0.5})
    val, _ = integrate.quad(integrand, 0.0, 1.0, points=pts, limit=500, epsabs=1e-13, epsrel=1e-10)
    return float(val)


# --- deployment oracles: exact rationals and high-precision decimals ------------------
def exact_exp_interval(eps: float, digits: int = 90):
    """Rationals (lo, hi) bracketing e^eps, from a 90-digit decimal exp (independent of ldpopt)."""
    from fractions import Fraction

    with localcontext() as ctx:
        ctx.prec = digits
        e = Fraction(Decimal(eps).exp())
    slack = Fraction(1, 10 ** (digits - 5))
    return e * (1 - slack), e * (1 + slack)


def exact_is_ldp(rows, eps: float) -> bool:
    """Exact eps-LDP of a channel given as rows of Fractions (columns: max <= e^eps * min)."""
    lo, hi = exact_exp_interval(eps)
    for col in zip(*rows, strict=False):
        cmax, cmin = max(col), min(col)
        if cmax == 0:
            continue
        if cmin == 0:
            return math.isinf(eps)
        if math.isinf(eps):
            continue
        r = cmax / cmin
        assert not (lo < r < hi), "oracle bracket too wide"
        if r >= hi:
            return False
    return True


def enumerate_sum_law(probs, values, n: int) -> dict:
    """Exact law of sum_i values[Y_i] for n i.i.d. Y ~ probs, by enumerating all count vectors
    with exact rationals (probs renormalised exactly)."""
    from fractions import Fraction

    probs = [Fraction(float(p)) for p in probs]
    total = sum(probs)
    probs = [p / total for p in probs]
    law: dict = {}
    for c in itertools.product(range(n + 1), repeat=len(probs) - 1):
        if sum(c) > n:
            continue
        cc = list(c) + [n - sum(c)]
        coef = math.factorial(n)
        for x in cc:
            coef //= math.factorial(x)
        p = Fraction(coef)
        for x, q in zip(cc, probs, strict=False):
            p *= q**x
        t = int(sum(x * int(v) for x, v in zip(cc, values, strict=False)))
        law[t] = law.get(t, 0) + p
    return law


# ---------------------------------------------------------------------------------------------
# decision problems over the maximal-channel polytope (independent re-implementations)
# ---------------------------------------------------------------------------------------------


def proper_subsets(m: int):
    """All non-empty proper subsets of range(m), as tuples, by itertools."""
    for r in range(1, m):
        yield from itertools.combinations(range(m), r)


def extreme_row(subset, m: int, eps: float) -> np.ndarray:
    """The paper's row S_y: e^eps on y, 1 elsewhere (eq. 19)."""
    row = np.ones(m)
    row[list(subset)] = math.exp(eps)
    return row


def polytope_vertices_bruteforce(m: int, eps: float) -> np.ndarray:
    """Vertices of S_(X,eps) = {c >= 0 : c^T S = 1}: every set of m columns with a non-singular
    square system and a non-negative solution (basic feasible solutions), deduplicated."""
    subs = list(proper_subsets(m))
    S = np.array([extreme_row(y, m, eps) for y in subs])  # (n, m)
    found = []
    for basis in itertools.combinations(range(len(subs)), m):
        M = S[list(basis)].T
        if abs(np.linalg.det(M)) < 1e-12:
            continue
        c = np.linalg.solve(M, np.ones(m))
        if np.all(c >= -1e-12):
            full = np.zeros(len(subs))
            full[list(basis)] = np.clip(c, 0, None)
            if not any(np.allclose(full, f, atol=1e-10) for f in found):
                found.append(full)
    return np.array(found)


def minimax_dual_lp(P, L, eps: float) -> tuple[float, np.ndarray]:
    """The minimax risk as the LP dual of the epigraph LP (least-favourable prior), over all subsets:

    max sum_x u_x  s.t.  sum_x u_x S_(y,x) <= sum_theta lam_theta l(theta,a) sum_x P(x|theta) S_(y,x)
    for every (y, a), sum lam = 1, lam >= 0.  Returns (value, lam).
    """
    from scipy.optimize import linprog

    P = np.asarray(P, float)
    L = np.asarray(L, float)
    m, T = P.shape
    A = L.shape[1]
    rows, rhs = [], []
    for y in proper_subsets(m):
        s = extreme_row(y, m, eps)
        py = s @ P  # (T,)
        for a in range(A):
            # u . s - sum_theta lam_theta L[theta, a] py[theta] <= 0
            rows.append(np.concatenate([s, -L[:, a] * py]))
            rhs.append(0.0)
    c = np.concatenate([-np.ones(m), np.zeros(T)])
    A_eq = np.concatenate([np.zeros(m), np.ones(T)])[None, :]
    res = linprog(
        c,
        A_ub=np.array(rows),
        b_ub=np.array(rhs),
        A_eq=A_eq,
        b_eq=[1.0],
        bounds=[(None, None)] * m + [(0, None)] * T,
        method="highs",
    )
    assert res.status == 0, res.message
    return -res.fun, res.x[m:]


def mutual_information_naive(matrix, prior) -> float:
    """I(X;Y) = H(Y) - H(Y|X) in nats for a channel with rows = inputs."""
    Q = np.asarray(matrix, float)
    p = np.asarray(prior, float)
    py = p @ Q
    hy = -sum(v * math.log(v) for v in py if v > 0)
    hyx = -sum(p[i] * sum(v * math.log(v) for v in Q[i] if v > 0) for i in range(len(p)))
    return hy - hyx


def fisher_information_naive(matrix, pmf, derivative) -> float:
    """sum_y (d/dtheta P(y))^2 / P(y) for the output of a channel (rows = inputs)."""
    Q = np.asarray(matrix, float)
    py = np.asarray(pmf, float) @ Q
    dpy = np.asarray(derivative, float) @ Q
    return float(sum(d * d / v for d, v in zip(dpy, py, strict=False)))


def _totient(n: int) -> int:
    return sum(1 for k in range(1, n + 1) if math.gcd(n, k) == 1)


def necklace_count(m: int) -> int:
    """Binary necklaces of length m (orbits of subsets under Z_m), Burnside's lemma."""
    return sum(_totient(d) * 2 ** (m // d) for d in range(1, m + 1) if m % d == 0) // m


def bracelet_count(m: int) -> int:
    """Binary bracelets of length m (orbits under the dihedral group D_m)."""
    n = necklace_count(m)
    if m % 2:
        return (n + 2 ** ((m + 1) // 2)) // 2
    return (2 * n + 3 * 2 ** (m // 2)) // 4


def neumaier_prefix(x) -> tuple[np.ndarray, np.ndarray]:
    """Neumaier's compensated prefix sums as (hi, lo), one symbol at a time (the textbook loop)."""
    n = len(x)
    hi = np.zeros(n + 1)
    lo = np.zeros(n + 1)
    s = 0.0
    comp = 0.0
    for i in range(n):
        v = float(x[i])
        t = s + v
        if abs(s) >= abs(v):
            comp += (s - t) + v
        else:
            comp += (v - t) + s
        s = t
        hi[i + 1] = s
        lo[i + 1] = comp
    return hi, lo


def lr_reduction_exact(u, v) -> tuple[tuple, np.ndarray, np.ndarray, tuple]:
    """``(classes, p, q, dropped)`` of the likelihood-ratio reduction by exact rational ratios.

    Symbols with zero mass under both are dropped; the rest are grouped by their exact ratio
    u/v (v = 0 meaning +inf), groups in increasing ratio, indices ascending, masses summed
    with math.fsum.  No floating-point keys, so no near-tie window.
    """
    groups: dict = {}
    dropped = []
    for i, (a, b) in enumerate(
        zip(np.asarray(u, float).tolist(), np.asarray(v, float).tolist(), strict=True)
    ):
        if a == 0 and b == 0:
            dropped.append(i)
            continue
        key = (1, Fraction(0)) if b == 0 else (0, Fraction(a) / Fraction(b))
        groups.setdefault(key, []).append(i)
    classes = tuple(tuple(groups[key]) for key in sorted(groups))
    p = np.array([math.fsum(float(u[i]) for i in c) for c in classes])
    q = np.array([math.fsum(float(v[i]) for i in c) for c in classes])
    return classes, p, q, tuple(dropped)


# ---------------------------------------------------------------------------------------------
# Worst case of a channel for TV / E_gamma over polytope uncertainty sets (pycddlib)
# ---------------------------------------------------------------------------------------------
def _polytope_side_rows(model: str, c, r: float, col: int, n: int) -> list[list[float]]:
    """cdd rows [b, a] (b + a.x >= 0) of one side's set on P (columns col..col+k), from its
    definition: TV by the 2^k sign inequalities sum_x s_x (P_x - c_x) <= 2 r."""
    k = len(c)
    rows = []
    if model == "tv":
        for signs in itertools.product((-1.0, 1.0), repeat=k):
            row = [2.0 * r + float(np.dot(signs, c))] + [0.0] * n
            for x in range(k):
                row[1 + col + x] = -signs[x]
            rows.append(row)
    else:  # contamination: P >= (1 - r) c
        for x in range(k):
            row = [-(1.0 - r) * c[x]] + [0.0] * n
            row[1 + col + x] = 1.0
            rows.append(row)
    return rows


def hinge_worst_case_vertices(M, gamma: float, model: str, c0, c1, r0: float, r1: float):
    """min over P0 in U0, P1 in U1 of sum_y (M^T P0 - gamma M^T P1)_y^+ as the minimum over the
    vertices of the epigraph polyhedron {(P0, P1, t): P_i in U_i, t >= 0, t >= M^T P0 - gamma M^T P1}
    (a linear objective sum t is minimised at a vertex; there t = z^+).  Returns the vertices'
    (P0, P1) pairs; the caller evaluates the divergence there."""
    import cdd

    M = np.asarray(M, float)
    k, m = M.shape
    n = 2 * k + m
    rows, lin = [], []
    for v in range(2 * k + m):  # P >= 0, t >= 0
        row = [0.0] * (n + 1)
        row[1 + v] = 1.0
        rows.append(row)
    for y in range(m):  # t_y - (M^T P0)_y + gamma (M^T P1)_y >= 0
        row = [0.0] * (n + 1)
        for x in range(k):
            row[1 + x] = -M[x, y]
            row[1 + k + x] = gamma * M[x, y]
        row[1 + 2 * k + y] = 1.0
        rows.append(row)
    rows += _polytope_side_rows(model, c0, r0, 0, n)
    rows += _polytope_side_rows(model, c1, r1, k, n)
    for col in (0, k):  # sum P = 1
        row = [1.0] + [0.0] * n
        for x in range(k):
            row[1 + col + x] = -1.0
        lin.append(len(rows))
        rows.append(row)
    mat = cdd.matrix_from_array(rows, lin_set=set(lin), rep_type=cdd.RepType.INEQUALITY)
    gen = cdd.copy_generators(cdd.polyhedron_from_matrix(mat))
    verts = np.array([g[1:] for g in gen.array if g[0] == 1], dtype=float)
    return [(v[:k], v[k : 2 * k]) for v in verts]


def in_uncertainty_set(model: str, c, r: float, p, tol: float = 1e-12) -> bool:
    """``p`` is a distribution of the uncertainty set ``model`` of radius r around c (from the
    definitions: TV ball, contamination P >= (1 - r) c, KL ball KL(c || p) <= r)."""
    if abs(p.sum() - 1) > tol or p.min() < -tol:
        return False
    if model == "tv":
        return 0.5 * np.abs(p - c).sum() <= r + tol
    if model == "contamination":
        return bool(np.all(p >= (1 - r) * c - tol))
    pos = c > 0
    if np.any(p[pos] <= 0):
        return False
    return float(np.sum(c[pos] * np.log(c[pos] / p[pos]))) <= r + tol


def draw_in_uncertainty_set(rng, model: str, c, r: float):
    """A random point of the set (by its definition)."""
    k = c.size
    if model == "contamination":
        return (1 - r) * c + r * rng.dirichlet(np.ones(k))
    d = rng.dirichlet(np.ones(k) * 0.5) - c
    if model == "tv":
        t = rng.uniform(0, 1) * r / max(0.5 * np.abs(d).sum(), 1e-300)
        return c + min(t, 1.0) * d
    lo, hi = 0.0, 1.0
    for _ in range(100):
        mid = (lo + hi) / 2
        if in_uncertainty_set("kl", c, r, c + mid * d, 0.0):
            lo = mid
        else:
            hi = mid
    return c + rng.uniform(0, 1) * lo * d


# ---------------------------------------------------------------------------------------------
# shuffle model: the exact law of the shuffled histogram for every dataset (no clones, no blanket)
# ---------------------------------------------------------------------------------------------
def _shuffle_user_step(law: np.ndarray, row: np.ndarray) -> np.ndarray:
    """Add one user with report law ``row`` (k outputs) to the law of counts of outputs 0..k-2."""
    k = len(row)
    new = row[k - 1] * law
    for y in range(k - 1):
        dst = [slice(None)] * (k - 1)
        src = [slice(None)] * (k - 1)
        dst[y], src[y] = slice(1, None), slice(None, -1)
        new[tuple(dst)] += row[y] * law[tuple(src)]
    return new


def shuffled_histogram_pairs(matrix: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Stacked laws (P, Q) of the shuffled histogram for every dataset of the other n - 1 users
    and every ordered pair of distinct inputs of the differing user."""
    kin, kout = matrix.shape
    shape = (n + 1,) * (kout - 1)
    # block[z][c]: law of c users all holding z
    blocks = []
    for z in range(kin):
        law = np.zeros(shape)
        law[(0,) * (kout - 1)] = 1.0
        seq = [law]
        for _ in range(n - 1):
            law = _shuffle_user_step(law, matrix[z])
            seq.append(law)
        blocks.append(seq)
    ps, qs = [], []
    for counts in itertools.product(range(n), repeat=kin):
        if sum(counts) != n - 1:
            continue
        rest = np.zeros(shape)
        rest[(0,) * (kout - 1)] = 1.0
        for z, c in enumerate(counts):  # convolve the blocks one user at a time: exact and simple
            for _ in range(c):
                rest = _shuffle_user_step(rest, matrix[z])
        for x, xp in itertools.permutations(range(kin), 2):
            ps.append(_shuffle_user_step(rest, matrix[x]))
            qs.append(_shuffle_user_step(rest, matrix[xp]))
    return np.array(ps), np.array(qs)


def shuffled_exact_eps(ps: np.ndarray, qs: np.ndarray, delta: float, hi: float) -> float:
    axes = tuple(range(1, ps.ndim))

    def worst(eps: float) -> float:
        return float(np.max(np.maximum(ps - math.exp(eps) * qs, 0.0).sum(axis=axes)))

    lo = 0.0
    if worst(0.0) <= delta:
        return 0.0
    while hi - lo > 1e-10:
        mid = 0.5 * (lo + hi)
        if worst(mid) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


# ---------------------------------------------------------------------------------------------
# frequency estimation: the best unbiased estimator, from its KKT system (no code shared with
# ldpopt.frequency), closed forms in high precision, and the optimum over all column weights
# ---------------------------------------------------------------------------------------------


def least_norm_estimator_kkt(Q, p):
    """Best unbiased estimator at p by solving, for every item x, the KKT system of
    min sum_y w_y b_y^2 s.t. Q b = e_x:  [2W  Q^T; Q  0] [b; lam] = [0; e_x]  (zero columns dropped)."""
    Q = np.asarray(Q, float)
    k, m = Q.shape
    keep = [y for y in range(m) if Q[:, y].sum() > 0]
    Qk = Q[:, keep]
    w = np.asarray(p, float) @ Qk
    n = len(keep)
    kkt = np.zeros((n + k, n + k))
    kkt[:n, :n] = 2 * np.diag(w)
    kkt[:n, n:] = Qk.T
    kkt[n:, :n] = Qk
    B = np.zeros((m, k))
    for x in range(k):
        rhs = np.zeros(n + k)
        rhs[n + x] = 1.0
        sol = np.linalg.solve(kkt, rhs)
        for i, y in enumerate(keep):
            B[y, x] = sol[i]
    return B


def estimator_total_variance(Q, B, p) -> float:
    """sum over items of Var(B[Y, x]) with Y ~ pQ, from the definition E[B^2] - (E B)^2."""
    Q = np.asarray(Q, float)
    w = np.asarray(p, float) @ Q
    total = 0.0
    for x in range(Q.shape[0]):
        mean = sum(w[y] * B[y, x] for y in range(Q.shape[1]))
        second = sum(w[y] * B[y, x] ** 2 for y in range(Q.shape[1]))
        total += second - mean**2
    return total


def grr_variance_uniform_mp(k: int, eps: float, digits: int = 50) -> float:
    """GRR's total variance at uniform from the per-item formula Var = P(1-P)/(a-b)^2, P = b + f(a-b),
    f = 1/k, a = e^eps/(e^eps+k-1), b = 1/(e^eps+k-1), in mpmath."""
    import mpmath

    with mpmath.workdps(digits):
        e = mpmath.exp(mpmath.mpf(eps))
        a = e / (e + k - 1)
        b = 1 / (e + k - 1)
        big = b + (a - b) / k
        return float(k * big * (1 - big) / (a - b) ** 2)


def oue_channel(k: int, eps: float) -> np.ndarray:
    """Optimised unary encoding as a k x 2^k channel: bit x is 1 w.p. 1/2, the others w.p. 1/(e^eps+1)."""
    p, q = 0.5, 1.0 / (math.exp(eps) + 1.0)
    outs = list(itertools.product([0, 1], repeat=k))
    return np.array(
        [
            [
                math.prod(
                    (p if bit else 1 - p) if j == x else (q if bit else 1 - q) for j, bit in enumerate(o)
                )
                for o in outs
            ]
            for x in range(k)
        ]
    )


def subset_selection_channel(k: int, s: int, eps: float) -> np.ndarray:
    """Subset selection: report a size-s subset S with probability proportional to e^eps if x in S, else 1."""
    subsets = list(itertools.combinations(range(k), s))
    e = math.exp(eps)
    Q = np.array([[e if x in S else 1.0 for S in subsets] for x in range(k)])
    return Q / Q.sum(axis=1, keepdims=True)


def symmetric_maximal_variance_mp(k: int, eps: float, size_probs, digits: int = 50) -> float:
    """Total variance at uniform of a permutation-invariant channel whose outputs are subsets S (column
    proportional to e^eps on S, 1 off S) with P(|S| = s) = size_probs[s] (the same for every input):
    (k-1)^2 / (k (e^eps-1)^2 sum_s P(s) s(k-s)/(s e^eps + k - s)^2), in mpmath.  Derivation: M = Q W^-1 Q^T
    = alpha I + beta J with M 1 = k 1, so V = (k-1)/alpha; alpha sums the per-orbit contributions."""
    import mpmath

    with mpmath.workdps(digits):
        e = mpmath.exp(mpmath.mpf(eps))
        acc = mpmath.mpf(0)
        for s, prob in enumerate(size_probs):
            acc += mpmath.mpf(prob) * s * (k - s) / (s * e + k - s) ** 2
        return float((k - 1) ** 2 / (k * (e - 1) ** 2 * acc))


def oue_size_probs(k: int, eps: float) -> list[float]:
    """P(|S| = s) for OUE's report S (the set of 1-bits): the own bit w.p. 1/2 plus Binomial(k-1, q)."""
    q = 1.0 / (math.exp(eps) + 1.0)
    out = []
    for s in range(k + 1):
        one = 0.5 * math.comb(k - 1, s - 1) * q ** (s - 1) * (1 - q) ** (k - s) if s >= 1 else 0.0
        zero = 0.5 * math.comb(k - 1, s) * q**s * (1 - q) ** (k - 1 - s) if s <= k - 1 else 0.0
        out.append(one + zero)
    return out


def frequency_optimum_mp(k: int, eps: float, digits: int = 50) -> float:
    """min over subset sizes s = 1..k-1 of subset selection's total variance at uniform,
    (k-1)^2 (s e^eps + k - s)^2 / (k (e^eps - 1)^2 s (k - s)), every size tried, in mpmath."""
    import mpmath

    with mpmath.workdps(digits):
        e = mpmath.exp(mpmath.mpf(eps))
        best = min((s * e + k - s) ** 2 / (s * (k - s)) for s in range(1, k))
        return float((k - 1) ** 2 * best / (k * (e - 1) ** 2))


def frequency_dual_slack(eps: float, dual, subsets=None, digits: int = 50) -> float:
    """Smallest y.v_S - a_S over the non-empty proper subsets S (all of them unless given), with
    v_S = e^eps on S, 1 off S and a_S = (k |v_S|^2 - (1.v_S)^2) / (1.v_S), relative to 1.v_S, in mpmath.
    The dual point is feasible iff this is >= 0 (the constraints are homogeneous in v, so the
    library's rescaled columns give the same condition)."""
    import mpmath

    y = [mpmath.mpf(float(v)) for v in dual]
    k = len(y)
    with mpmath.workdps(digits):
        e = mpmath.exp(mpmath.mpf(eps)) * mpmath.mpf(1)
        worst = mpmath.inf
        for S in subsets if subsets is not None else proper_subsets(k):
            members = set(S)
            v = [e if x in members else mpmath.mpf(1) for x in range(k)]
            h = mpmath.fsum(v)
            a = (k * mpmath.fsum(t * t for t in v) - h * h) / h
            worst = min(worst, (mpmath.fsum(yi * vi for yi, vi in zip(y, v, strict=True)) - a) / h)
        return float(worst)


def frequency_lower_bound_mp(dual, digits: int = 50) -> float:
    """(k - 1)^2 / sum(dual) in mpmath."""
    import mpmath

    with mpmath.workdps(digits):
        return float((len(dual) - 1) ** 2 / mpmath.fsum(mpmath.mpf(float(v)) for v in dual))


def difference_set_multiplicity(k: int, base) -> int | None:
    """lambda when every non-zero residue mod k is a difference of two elements of base exactly
    lambda times (a (k, |base|, lambda) difference set), else None."""
    counts = [0] * k
    for a in base:
        for b in base:
            if a != b:
                counts[(a - b) % k] += 1
    lam = set(counts[1:])
    return lam.pop() if len(lam) == 1 else None


def ldp_vertex_channels(k: int, eps: float) -> list[np.ndarray]:
    """Every vertex of the maximal-channel polytope as a k x n channel (brute-force enumeration)."""
    subs = list(proper_subsets(k))
    out = []
    for c in polytope_vertices_bruteforce(k, eps):
        cols = [c[j] * extreme_row(subs[j], k, eps) for j in range(len(subs)) if c[j] > 0]
        out.append(np.array(cols).T)
    return out
