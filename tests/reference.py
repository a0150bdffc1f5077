"""Slow, readable oracles that the library's answers are checked against.

Nothing here calls the code under test's solvers: each oracle recomputes the optimum by an
independent method (brute force over set partitions, vertex enumeration of the channel
polytope, high-precision arithmetic).
"""

from __future__ import annotations

import itertools
import math
from decimal import Decimal, localcontext

import numpy as np

# ---------------------------------------------------------------------------------------------
# f-divergences written straight from their textbook formulas (no shared code with the library)
# ---------------------------------------------------------------------------------------------


def naive_divergence(u, v, name: str, param: float = 0.0) -> float:
    """D_f(u||v) from the textbook formula of each divergence."""
    u = np.asarray(u, float)
    v = np.asarray(v, float)
    total = 0.0
    for a, b in zip(u, v):
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
            total += 0.5 * ((a * math.log(2 * a / (a + b)) if a else 0.0)
                            + (b * math.log(2 * b / (a + b)) if b else 0.0))
        elif name == "egamma":
            total += max(a - param * b, 0.0)
        elif name == "renyi_sum":  # sum u^a v^(1-a)
            total += (a ** param) * (b ** (1 - param)) if a > 0 and b > 0 else (0.0 if param < 1 or b > 0 else math.inf)
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
            yield part[:i] + [[first] + part[i]] + part[i + 1:]
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
    k = len(p)
    best = -math.inf
    for part in set_partitions(range(k)):
        if max_blocks is not None and len(part) > max_blocks:
            continue
        m = rr_on_blocks(part, k, eps)
        best = max(best, div_fn(m.T @ p, m.T @ q))
    return best


# ---------------------------------------------------------------------------------------------
# Vertex enumeration of the polytope of l-output eps-LDP channels (pycddlib)
# ---------------------------------------------------------------------------------------------


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
