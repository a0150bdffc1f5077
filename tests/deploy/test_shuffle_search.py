"""The tight bound's search (Brent's method on log delta, sides kept exactly) and the composition's
binning of the clone count by cells, each against the plain version it replaces."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldpopt.deploy import pld
from ldpopt.deploy.shuffle import EPS_TOL, _bisect_lower, _bisect_upper

# non-increasing functions of eps: smooth, with a flat zero region, a step, piecewise constant
_FUNCS = [
    lambda e: math.exp(-40.0 * e * e),
    lambda e: max(1e-3 - e, 0.0) ** 3,
    lambda e: 1.0 if e < 0.3141 else 0.0,
    lambda e: 10.0 ** -math.floor(20.0 * e),
    lambda e: 2e-6 * math.exp(-1e4 * e) + 1e-300 * (e < 0.5),
]


@pytest.mark.parametrize("fn", _FUNCS)
@pytest.mark.parametrize(("delta", "rel"), [(1e-6, 1e-6), (1e-9, 1e-4), (1e-2, 0.0)])
def test_search_returns_ends_on_the_right_sides(fn, delta, rel):
    calls = []

    def dl(e: float) -> float:
        calls.append(e)
        return fn(e)

    hi, d_hi = _bisect_upper(dl, delta, 1.0, rel)
    assert d_hi == fn(hi) and d_hi <= delta
    tol = max(EPS_TOL, rel * hi)
    assert hi == 0.0 or fn(max(hi - tol * (1 + 1e-9), 0.0)) > delta  # the bracket is closed
    lo = _bisect_lower(fn, delta, 1.0, rel)
    assert lo == 0.0 or fn(lo) > delta
    assert lo == 1.0 or fn(lo + max(EPS_TOL, rel * hi) * (1 + 1e-9) + tol) <= delta
    assert len(calls) <= 210  # at most the bisection's budget


@pytest.mark.numerics
@pytest.mark.parametrize(("eps0", "n"), [(1.0, 10_000_000), (0.5, 10_000_000)])
def test_cells_binning_is_at_most_one_cell_above_value_by_value(eps0, n, monkeypatch):
    h, p = min(1e-4, eps0 / 64.0), math.exp(-eps0)
    cells = pld.clone_pld(eps0, n, p, 1.0, h, 1e-13)
    monkeypatch.setattr(pld, "CELL_BINNING_RATIO", 10**12)  # every block value by value
    values = pld.clone_pld(eps0, n, p, 1.0, h, 1e-13)
    assert cells.offset == values.offset
    # the +inf atom (A outside its window): one minus a sum of pmfs or a difference of CDFs, each
    # within its law's rounding allowance (err), so they differ by at most the two allowances
    # (seen: 1.2e-14 with scipy 1.11, below 1e-14 with 1.17; the allowances are ~1e-10)
    assert abs(cells.inf - values.inf) <= cells.err + values.err
    assert cells.err > values.err  # the CDF differences' allowance is added
    up_cells = np.cumsum(cells.mass[::-1])[::-1] + cells.inf  # mass at loss >= each cell
    up_values = np.cumsum(values.mass[::-1])[::-1] + values.inf
    # pessimistic: never below the value-by-value law; optimistic by at most one cell; each up to
    # the allowance of the CDF differences (cells.err) and the pmf sums' roundoff
    slack = cells.err + 1e-12
    assert cells.err < 1e-9
    assert np.all(up_cells >= up_values - slack)
    assert np.all(up_cells[1:] <= up_values[:-1] + slack)
    for eps in (0.0, 10 * h, 100 * h):
        assert pld.pld_delta(cells, eps) >= pld.pld_delta(values, eps) - slack
