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
    base: tuple[int, ...]
    value: float
    searched: int
    exhaustive: bool


def groups(k: int) -> tuple[str, ...]:
    """The groups searched for k inputs: cyclic always, XOR when k is a power of 2 (k >= 4)."""
    return ("cyclic", "xor") if k >= 4 and k & (k - 1) == 0 else ("cyclic",)


def spectrum_factor(indicator: np.ndarray, group: str) -> np.ndarray:
    """sum over non-trivial characters of 1/|D(chi)|^2 for each row of ``indicator`` (inf when one
    vanishes)."""
    if group == "cyclic":
        f = np.fft.fft(indicator, axis=1)[:, 1:]
        power = f.real**2 + f.imag**2
    else:
        h = scipy.linalg.hadamard(indicator.shape[1]).astype(float)
        power = (indicator @ h)[:, 1:] ** 2
    out = np.full(indicator.shape[0], math.inf)
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


def best_design(k: int, s: int, c: float, A: float, group: str, budget: int = SEARCH_BUDGET) -> Design:
    """The best base block of size s containing 0 (every design is a translate of one): all of them
    when there are at most ``budget``, else ``budget`` random ones (``exhaustive`` False)."""
    budget = max(1, min(budget, _WORK // k))
    chunk_size = max(1, min(_CHUNK, _WORK // (8 * k)))
    exhaustive = s - 1 <= 64 and math.comb(k - 1, s - 1) <= budget
    chunks = _exhaustive_chunks(k, s, chunk_size) if exhaustive else _random_chunks(k, s, chunk_size, budget)
    best_val, seen = math.inf, 0
    best_base: tuple[int, ...] = (0,)
    for ind in chunks:
        vals = spectrum_factor(ind, group)
        j = int(np.argmin(vals))
        if vals[j] < best_val:
            best_val, best_base = float(vals[j]), tuple(int(x) for x in np.flatnonzero(ind[j]))
        seen += ind.shape[0]
    den = s + (k - s) * c
    value = (den / A) ** 2 / k * best_val
    return Design(group, s, best_base, value, seen, exhaustive)


def design_matrix(k: int, base: tuple[int, ...], c: float, group: str) -> np.ndarray:
    """The k x k channel of the design: column g is v_{base + g} normalised."""
    s = len(base)
    members = np.zeros(k, dtype=bool)
    members[list(base)] = True
    x = np.arange(k)
    # input x is in base + g iff x - g (cyclic) or x XOR g is in base
    shifted = (x[:, None] - x[None, :]) % k if group == "cyclic" else x[:, None] ^ x[None, :]
    return np.where(members[shifted], 1.0, c) / (s + (k - s) * c)
