r"""Channels with few outputs: cyclic block designs and complete designs within an output budget.

A *cyclic design* with base block D (size s) has the k outputs :math:`D + i \bmod k`, each column
:math:`v_{D+i}/(s + (k-s)c)`.  Its :math:`M = QW^{-1}Q^T` is circulant with non-trivial eigenvalues
:math:`k A^2 \lvert\hat D_j\rvert^2/(s+(k-s)c)^2` (:math:`\hat D_j = \sum_{x\in D}\omega^{jx}`,
j = 1..k-1), so

.. math:: V(D) = \frac{(s + (k-s)c)^2}{kA^2}\sum_{j=1}^{k-1}\frac{1}{\lvert\hat D_j\rvert^2}
          \ \ge\ \frac{(s+(k-s)c)^2 (k-1)^2}{kA^2 s(k-s)} = V_s

by Parseval (:math:`\sum_{j\ge1}\lvert\hat D_j\rvert^2 = s(k-s)`), with equality iff every
:math:`\lvert\hat D_j\rvert^2` is equal: D is a (k, s, lambda) difference set (a symmetric block design,
Park-Nam-Lee 2023), which then attains the unconstrained optimum with only k outputs.
"""

from __future__ import annotations

import itertools
import math
from typing import NamedTuple

import numpy as np

#: base blocks evaluated per size before the search stops (chunks of _CHUNK, vectorised FFTs)
SEARCH_BUDGET = 200_000
_CHUNK = 4096
#: |D_j|^2 below this counts as 0 (a singular design, value inf).  FFT round-off is ~1e-14 * s, far
#: below; a block with a genuine |D_j|^2 this small has V above 1e9 times the optimum's scale and
#: would never be the best, so declaring it singular changes no answer
_SINGULAR = 1e-9


class Design(NamedTuple):
    size: int
    base: tuple[int, ...]
    value: float
    searched: int
    exhaustive: bool


def cyclic_value_factor(indicator: np.ndarray) -> np.ndarray:
    """sum_j 1/|D_j|^2 over j = 1..k-1 for each row of ``indicator`` (inf when one vanishes)."""
    f = np.fft.fft(indicator, axis=1)[:, 1:]
    power = f.real**2 + f.imag**2
    out = np.full(indicator.shape[0], math.inf)
    ok = np.all(power > _SINGULAR, axis=1)
    out[ok] = np.sum(1.0 / power[ok], axis=1)
    return out


def best_cyclic(k: int, s: int, c: float, A: float, budget: int = SEARCH_BUDGET) -> Design:
    """The best base block of size s containing 0 among the first ``budget`` (all when fewer)."""
    total = math.comb(k - 1, s - 1)
    combos = itertools.islice(itertools.combinations(range(1, k), s - 1), budget)
    best_val, seen = math.inf, 0
    best_base: tuple[int, ...] = (0,)
    while True:
        chunk = list(itertools.islice(combos, _CHUNK))
        if not chunk:
            break
        ind = np.zeros((len(chunk), k))
        ind[:, 0] = 1.0
        for r, comb in enumerate(chunk):
            ind[r, list(comb)] = 1.0
        vals = cyclic_value_factor(ind)
        j = int(np.argmin(vals))
        if vals[j] < best_val:
            best_val, best_base = float(vals[j]), (0, *chunk[j])
        seen += len(chunk)
    den = s + (k - s) * c
    value = (den / A) ** 2 / k * best_val
    return Design(s, best_base, value, seen, seen >= total)


def cyclic_matrix(k: int, base: tuple[int, ...], c: float) -> np.ndarray:
    """The k x k channel of the cyclic design: column i is v_{base + i} normalised."""
    s = len(base)
    v = np.full(k, c)
    v[list(base)] = 1.0
    cols = np.stack([np.roll(v, i) for i in range(k)], axis=1)
    return cols / (s + (k - s) * c)
