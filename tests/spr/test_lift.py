"""Lifting reduced partitions to original symbols: ``LRReduction.lift_blocks`` / ``lift_many`` and
the partitions of ``ldpopt.sweep`` against the readable per-cell numpy lift (the former code)."""

from __future__ import annotations

import numpy as np
import pytest

import ldpopt
from ldpopt.spr import grid as spr_grid
from ldpopt.spr.reduction import _reduce
from reference import reduced_cuts


def legacy_lift(red, cuts) -> tuple:
    """The readable lift, one cell at a time: members of the reduced interval, dropped symbols
    added to block 0, sorted with numpy."""
    blocks = []
    for j, (a, b) in enumerate(cuts):
        members = red.members[red.starts[a] : red.starts[b]]
        if j == 0 and red.dropped:
            members = np.concatenate((members, np.asarray(red.dropped, dtype=members.dtype)))
        blocks.append(tuple(np.sort(members).tolist()))
    return tuple(blocks)


def tied_pair(rng, k: int):
    """A pair with exact ties (repeated (p, q) values), zeros of p, of q and of both."""
    base_p = rng.integers(0, 4, size=max(2, k // 3)).astype(float)
    base_q = rng.integers(0, 4, size=base_p.shape[0]).astype(float)
    pick = rng.integers(0, base_p.shape[0], size=k)
    p, q = base_p[pick] * (1 + rng.integers(0, 2, size=k)), base_q[pick]
    q = q * np.where(rng.random(k) < 0.2, 2.0, 1.0)  # some scaled copies: other exact ratios
    p[0], q[0] = 1.0, 1.0  # never an empty distribution
    if k >= 3:
        p[-1] = q[-1] = 0.0  # a symbol dropped by the reduction
    return p / p.sum(), q / q.sum()


def random_cuts(rng, k: int) -> list[tuple[int, int]]:
    nb = int(rng.integers(1, k + 1))
    b = [0, *sorted(rng.choice(np.arange(1, k), nb - 1, replace=False).tolist()), k] if k > 1 else [0, 1]
    return list(zip(b[:-1], b[1:], strict=True))


@pytest.mark.parametrize("seed", range(6))
def test_lift_equals_the_readable_lift_with_ties_and_zeros(seed):
    rng = np.random.default_rng(seed)
    merged = False
    for k in (1, 2, 5, 12, 40):
        red = _reduce(*tied_pair(rng, k))
        assert bool(red.dropped) == (k >= 3)
        merged = merged or bool(np.any(np.diff(red.starts) > 1))
        cut_sets = [random_cuts(rng, red.k) for _ in range(30)]
        cut_sets += [cut_sets[3], list(cut_sets[3]), cut_sets[0]]  # repeats: same object and equal
        expected = [legacy_lift(red, c) for c in cut_sets]
        assert [red.lift_blocks(c) for c in cut_sets] == expected
        assert red.lift_many(cut_sets) == expected
        assert red.lift_many(iter(cut_sets)) == expected
        # numpy integers as boundaries, as some callers hold them
        assert red.lift_blocks([(np.int64(a), np.int64(b)) for a, b in cut_sets[1]]) == expected[1]
    assert merged  # exact ties were merged into classes of several symbols


def test_lift_of_a_tied_pair_merges_classes():
    """Exact ties: one reduced symbol holds several original symbols, in ascending order."""
    p = np.array([0.1, 0.0, 0.2, 0.1, 0.0, 0.3, 0.3])
    q = np.array([0.2, 0.0, 0.4, 0.2, 0.1, 0.05, 0.0])
    q = q / q.sum()
    red = _reduce(p, q)
    assert red.dropped == (1,)
    assert red.lift_blocks([(0, red.k)]) == ((0, 1, 2, 3, 4, 5, 6),)
    assert red.lift_many([[(0, 1), (1, red.k)]]) == [legacy_lift(red, [(0, 1), (1, red.k)])]


@pytest.mark.parametrize("divergence", ["kl", "renyi:2"])
def test_sweep_partitions_equal_the_readable_lift(divergence):
    """The batched path (not the small sweeps), pairs with ties and zeros: every cell's partition
    is the readable lift of its reduced intervals, and values are those of the sweep without
    partitions."""
    rng = np.random.default_rng(7)
    pairs = [tied_pair(rng, 60) for _ in range(2)] + [
        (rng.dirichlet(np.ones(60)), rng.dirichlet(np.ones(60))) for _ in range(2)
    ]
    p0s, p1s = [p for p, _ in pairs], [q for _, q in pairs]
    grid = rng.permutation(np.append(np.round(np.arange(1, 31) * 0.3, 10), [0.9, 0.9]))  # unsorted, repeats
    reds = [_reduce(p, q) for p, q in pairs]
    assert not spr_grid._small(reds, grid.shape[0])
    res = ldpopt.sweep(p0s, p1s, grid, divergence, return_partitions=True, progress=False)
    plain = ldpopt.sweep(p0s, p1s, grid, divergence, progress=False)
    assert np.array_equal(res.values, plain.values) and np.array_equal(res.num_outputs, plain.num_outputs)
    for t, red in enumerate(reds):
        for e in range(grid.shape[0]):
            part = res.partitions[t][e]
            assert len(part) == res.num_outputs[t, e]
            assert part == legacy_lift(red, reduced_cuts(red, part)), (t, e)
            assert sorted(i for block in part for i in block) == list(range(60))
