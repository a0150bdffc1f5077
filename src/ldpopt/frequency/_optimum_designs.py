r"""Channels with few outputs: group designs and complete designs within an output budget.

A *group design* with base block D (size s) in an abelian group G of order k on the inputs has the k
outputs :math:`D + g` (g in G), each column :math:`v_{D+g}/(s + (k-s)c)`.  Two groups are searched:
the cyclic group :math:`\mathbb Z_k` (``"cyclic"``: :math:`D + i \bmod k`) and, when k is a power of 2,
:math:`\mathbb Z_2^n` (``"xor"``: :math:`D \oplus i`, the group of Hadamard response).  Its
:math:`M = QW^{-1}Q^T` is diagonalised by the characters :math:`\chi` of G, with non-trivial eigenvalues
:math:`k A^2 \lvert\hat D(\chi)\rvert^2/(s+(k-s)c)^2` (:math:`\hat D(\chi) = \sum_{x\in D}\chi(x)`: the DFT
for the cyclic group, the Walsh-Hadamard transform for the XOR group), so

.. math:: V(D) = \frac{(s + (k-s)c)^2}{kA^2}\sum_{\chi\ne 1}\frac{1}{\lvert\hat D(\chi)\rvert^2}
          \ \ge\ \frac{(s+(k-s)c)^2 (k-1)^2}{kA^2 s(k-s)} = V_s

by Parseval (:math:`\sum_{\chi\ne1}\lvert\hat D(\chi)\rvert^2 = s(k-s)`), with equality iff every
:math:`\lvert\hat D(\chi)\rvert^2` is equal: D is a (k, s, lambda) difference set of G (a symmetric block
design, Park-Nam-Lee 2023), which then attains the unconstrained optimum with only k outputs.

With room for r k outputs, r orbits (base blocks :math:`D_1..D_r` of the same size, weight 1/r each)
have :math:`M = \frac1r\sum_i M_{D_i}`, so :math:`\lvert\hat D(\chi)\rvert^2` above becomes the mean
over the blocks: a union whose spectra fill each other's gaps approaches the optimum without a
difference set.  The blocks are chosen greedily from the best single ones.
"""

from __future__ import annotations

import itertools
import math
from typing import NamedTuple

import numpy as np
import scipy.linalg

#: base blocks evaluated per size and group before the search stops (chunks of at most _CHUNK,
#: vectorised); for large k the budget shrinks so that blocks * k stays below _WORK (~1 s of FFTs)
SEARCH_BUDGET = 200_000
_CHUNK = 4096
_WORK = 2**23
#: |D(chi)|^2 below this counts as 0 (a singular design, value inf).  Transform round-off is
#: ~1e-14 * s, far below; a block with a genuine |D(chi)|^2 this small has V above 1e9 times the
#: optimum's scale and would never be the best, so declaring it singular changes no answer
_SINGULAR = 1e-9


class Design(NamedTuple):
    group: str
    size: int
    bases: tuple[tuple[int, ...], ...]  # one base block per orbit, the orbits used with equal weights
    value: float
    searched: int
    exhaustive: bool


def groups(k: int) -> tuple[str, ...]:
    """The groups searched for k inputs: cyclic always, XOR when k is a power of 2 (k >= 4)."""
    return ("cyclic", "xor") if k >= 4 and k & (k - 1) == 0 else ("cyclic",)


def power_spectrum(indicator: np.ndarray, group: str) -> np.ndarray:
    """|D(chi)|^2 over the non-trivial characters, one row per base block (rows of ``indicator``)."""
    if group == "cyclic":
        f = np.fft.fft(indicator, axis=1)[:, 1:]
        return f.real**2 + f.imag**2
    h = scipy.linalg.hadamard(indicator.shape[1]).astype(float)
    return (indicator @ h)[:, 1:] ** 2


def spectrum_factor(power: np.ndarray) -> np.ndarray:
    """sum over the characters of 1/power for each row (inf when one vanishes)."""
    power = np.atleast_2d(power)
    out = np.full(power.shape[0], math.inf)
    ok = np.all(power > _SINGULAR, axis=1)
    out[ok] = np.sum(1.0 / power[ok], axis=1)
    return out


def _exhaustive_chunks(k: int, s: int, chunk_size: int):
    """Indicator rows of every base block of size s containing 0, in lexicographic order."""
    combos = itertools.combinations(range(1, k), s - 1)
    while chunk := list(itertools.islice(combos, chunk_size)):
        ind = np.zeros((len(chunk), k))
        ind[:, 0] = 1.0
        for r, comb in enumerate(chunk):
            ind[r, list(comb)] = 1.0
        yield ind


def _random_chunks(k: int, s: int, chunk_size: int, count: int):
    """``count`` uniformly random base blocks of size s containing 0 (seeded: the answer is
    reproducible): the s - 1 smallest of k - 1 uniform keys pick the other members."""
    rng = np.random.default_rng(20230502)
    while count > 0:
        n = min(chunk_size, count)
        keys = rng.random((n, k - 1))
        members = np.argpartition(keys, s - 2, axis=1)[:, : s - 1] + 1 if s > 1 else np.zeros((n, 0), int)
        ind = np.zeros((n, k))
        ind[:, 0] = 1.0
        np.put_along_axis(ind, members, 1.0, axis=1)
        count -= n
        yield ind


def _greedy_orbits(power: np.ndarray, order: np.ndarray, orbits: int) -> list[int]:
    """Indices of up to ``orbits`` blocks whose equal-weight union has the smallest sum of
    1/mean power, chosen greedily from the best single block on (a union's M is the mean of its
    orbits' M, diagonal in the same characters)."""
    chosen = [int(order[0])]
    total = power[chosen[0]].copy()
    current = float(spectrum_factor(total)[0])
    while len(chosen) < orbits:
        rest = np.array([i for i in order if i not in chosen], dtype=int)
        if rest.size == 0:
            break
        r = len(chosen) + 1
        vals = spectrum_factor((total[None, :] + power[rest]) / r)
        j = int(np.argmin(vals))
        if not vals[j] < current:
            break
        chosen.append(int(rest[j]))
        total += power[rest[j]]
        current = float(vals[j])
    return chosen


def best_design(
    k: int, s: int, c: float, A: float, group: str, orbits: int = 1, budget: int = SEARCH_BUDGET
) -> Design:
    """The best union of at most ``orbits`` orbits of base blocks of size s containing 0 (every design
    is a translate of one): blocks from all of them when there are at most ``budget``, else from
    ``budget`` seeded random ones (``exhaustive`` False); the union greedily from the best ones."""
    budget = max(1, min(budget, _WORK // k))
    chunk_size = max(1, min(_CHUNK, _WORK // (8 * k)))
    exhaustive = s - 1 <= 64 and math.comb(k - 1, s - 1) <= budget
    chunks = _exhaustive_chunks(k, s, chunk_size) if exhaustive else _random_chunks(k, s, chunk_size, budget)
    keep = 4 * orbits  # candidate pool for the union
    pool_val = np.empty(0)
    pool_power = np.empty((0, k - 1))
    pool_ind = np.empty((0, k))
    seen = 0
    for ind in chunks:
        power = power_spectrum(ind, group)
        vals = spectrum_factor(power)
        best = np.argsort(vals, kind="stable")[:keep]
        pool_val = np.concatenate([pool_val, vals[best]])
        pool_power = np.concatenate([pool_power, power[best]])
        pool_ind = np.concatenate([pool_ind, ind[best]])
        top = np.argsort(pool_val, kind="stable")[:keep]
        pool_val, pool_power, pool_ind = pool_val[top], pool_power[top], pool_ind[top]
        seen += ind.shape[0]
    chosen = _greedy_orbits(pool_power, np.argsort(pool_val, kind="stable"), orbits)
    factor = float(spectrum_factor(pool_power[chosen].mean(axis=0))[0])
    bases = tuple(tuple(int(x) for x in np.flatnonzero(pool_ind[i])) for i in chosen)
    den = s + (k - s) * c
    return Design(group, s, bases, (den / A) ** 2 / k * factor, seen, exhaustive)


def design_matrix(k: int, bases: tuple[tuple[int, ...], ...], c: float, group: str) -> np.ndarray:
    """The k x (k * orbits) channel: for each base block, column g is v_{base + g} normalised, each
    orbit with weight 1/orbits."""
    x = np.arange(k)
    # input x is in base + g iff x - g (cyclic) or x XOR g is in base
    shifted = (x[:, None] - x[None, :]) % k if group == "cyclic" else x[:, None] ^ x[None, :]
    blocks = []
    for base in bases:
        s = len(base)
        members = np.zeros(k, dtype=bool)
        members[list(base)] = True
        blocks.append(np.where(members[shifted], 1.0, c) / ((s + (k - s) * c) * len(bases)))
    return np.concatenate(blocks, axis=1)
