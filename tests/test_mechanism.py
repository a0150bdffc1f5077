"""Mechanism validation, privacy level, baselines."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ldpopt
from _errmodel import KL, R_FN, U, fdiv_bound, naive_bound, within, within_all
from _valuebounds import C_RR_ENTRY
from ldpopt.mechanism import spr_mechanism_from_assignment
from reference import rr_on_blocks

#: the numerics tests: CI also runs them on numpy's AVX2 and baseline loops (.ci/npy_disable.py)
pytestmark = pytest.mark.numerics

#: relative error of an entry of the library's s-ary RR levels (mechanism._rr_levels), units of u:
#: c = exp(-eps) (R_FN; the entries' sensitivity to c is (s-1)c/den <= 1 and 1/den <= 1), (s-1)*c
#: (1), 1 + . (1), the division (1)
C_RR_LIB = R_FN + 3.0
#: ... so the library's and reference.rr_on_blocks's entries (C_RR_ENTRY) agree to this, relative
RR_ENTRY_RTOL = (C_RR_LIB + C_RR_ENTRY) * U


def test_randomized_response_matches_definition():
    for k in (1, 2, 5, 30):
        for eps in (0.1, 1.0, 5.0):
            m = ldpopt.randomized_response(k, eps)
            ref = rr_on_blocks([[i] for i in range(k)], k, eps)
            assert within_all("RR matrix vs eq. (11)", m.matrix, ref, RR_ENTRY_RTOL * ref)
            # log(hi) - log(lo), exactly eps for the exact levels: each level C_RR_LIB u relative
            # (absolute in its log), numpy's log R_FN u |log|, |log hi| <= log k, |log lo| <= eps +
            # log k, the difference u eps; k = 1: log(1) - log(1) = 0 exactly
            bound = U * (2 * C_RR_LIB + R_FN * (2 * math.log(k) + eps) + eps) if k > 1 else 0.0
            assert within("RR privacy level", m.privacy_level(), eps if k > 1 else 0.0, bound)
            assert m.is_ldp(eps) and (k == 1 or not m.is_ldp(eps * 0.999))


def test_binary_mechanism_high_set():
    p = [0.1, 0.5, 0.4]
    q = [0.3, 0.2, 0.5]
    m = ldpopt.binary_mechanism(p, q, 1.0)
    assert m.partition == ((1,), (0, 2))
    e = math.e
    # the library's levels C_RR_LIB u; e / (1 + e), 1 / (1 + e): math.e (u / 2, sensitivity < 1),
    # the sum and the division, 2.5 u relative
    rtol = (C_RR_LIB + 2.5) * U
    hi, lo = e / (1 + e), 1 / (1 + e)
    assert within_all("binary mechanism vs closed form", m.matrix[1], [hi, lo], rtol * np.array([hi, lo]))
    assert within_all("binary mechanism vs closed form", m.matrix[0], [lo, hi], rtol * np.array([lo, hi]))


def test_spr_mechanism_eq11_and_validation():
    m = ldpopt.spr_mechanism([[0, 1], [2, 3, 4], [5]], 6, 2.0)
    ref = rr_on_blocks([[0, 1], [2, 3, 4], [5]], 6, 2.0)
    assert within_all("SPR matrix vs eq. (11)", m.matrix, ref, RR_ENTRY_RTOL * ref)
    with pytest.raises(ValueError, match="twice"):
        ldpopt.spr_mechanism([[0, 1], [1, 2]], 3, 1.0)
    with pytest.raises(ValueError, match="cover"):
        ldpopt.spr_mechanism([[0, 1]], 3, 1.0)
    with pytest.raises(ValueError, match="outside"):
        ldpopt.spr_mechanism([[0, 1, 5]], 3, 1.0)
    with pytest.raises(ValueError, match="empty"):
        ldpopt.spr_mechanism([[0, 1, 2], []], 3, 1.0)


def test_spr_mechanism_passes_the_checks_it_skips():
    """``spr_mechanism`` builds its Mechanism without ``Mechanism``'s own checks: the same fields
    pass them (a checked construction accepts them and keeps them), at eps from tiny to inf, and a
    repeated or out-of-range symbol is reported first in the order of the blocks."""
    rng = np.random.default_rng(5)
    for eps in (1e-13, 0.3, 2.0, 40.0, 800.0, math.inf):
        for k in (1, 2, 7, 40):
            s = int(rng.integers(1, k + 1))
            block_of = np.concatenate([np.arange(s), rng.integers(0, s, k - s)])
            rng.shuffle(block_of)
            part = [np.flatnonzero(block_of == j).tolist()[::-1] for j in range(s)]
            labels = [f"x{i}" for i in range(k)]
            m = ldpopt.spr_mechanism(part, k, eps, labels=labels)
            checked = ldpopt.Mechanism(m.matrix, eps, labels=labels, partition=m.partition, name="spr")
            assert np.array_equal(checked.matrix, m.matrix) and not m.matrix.flags.writeable
            assert checked.partition == m.partition == tuple(tuple(b) for b in part)
            assert m.labels == tuple(labels) and m.eps == checked.eps and m.name == "spr"
            assert m.is_ldp(eps)
    with pytest.raises(ValueError, match="symbol 7, outside"):
        ldpopt.spr_mechanism([[7, 0], [0, 1, 2]], 3, 1.0)
    with pytest.raises(ValueError, match="symbol 0 twice"):
        ldpopt.spr_mechanism([[0, 1], [0, 7]], 3, 1.0)
    with pytest.raises(ValueError, match="outside"):
        ldpopt.spr_mechanism([[0, 2**70], [1, 2]], 3, 1.0)
    with pytest.raises(ValueError, match="labels"):
        ldpopt.spr_mechanism([[0], [1]], 2, 1.0, labels=["a", "a"])


def test_privacy_level_and_zero_columns():
    m = ldpopt.Mechanism([[1.0, 0.0], [0.0, 1.0]], math.inf)
    assert math.isinf(m.privacy_level())
    assert m.is_ldp(math.inf) and not m.is_ldp(50.0)
    z = ldpopt.Mechanism([[0.5, 0.5, 0.0], [0.25, 0.75, 0.0]], math.log(2) + 1e-12)
    # log(0.5) - log(0.25) (numpy, R_FN u each, the difference u log 2) against math.log(2) (R_FN u)
    assert within("privacy level log 2", z.privacy_level(), math.log(2), 13 * U * math.log(2))


def test_constructor_rejects_bad_channels():
    with pytest.raises(ValueError, match="sum to 1"):
        ldpopt.Mechanism([[0.5, 0.6]], 1.0)
    with pytest.raises(ValueError, match="non-negative"):
        ldpopt.Mechanism([[1.5, -0.5]], 1.0)
    with pytest.raises(ValueError, match="not eps-LDP"):
        ldpopt.Mechanism([[0.9, 0.1], [0.1, 0.9]], 1.0)
    with pytest.raises(ValueError, match="2-D"):
        ldpopt.Mechanism([0.5, 0.5], 1.0)
    with pytest.raises(ValueError, match="finite"):
        ldpopt.Mechanism([[np.nan, 1.0]], 1.0)
    with pytest.raises(ValueError, match="eps"):
        ldpopt.Mechanism([[1.0]], 0.0)
    with pytest.raises(ValueError, match="labels"):
        ldpopt.Mechanism([[1.0]], 1.0, labels=("a", "b"))


def test_matrix_is_read_only():
    m = ldpopt.randomized_response(3, 1.0)
    with pytest.raises(ValueError):
        m.matrix[0, 0] = 1.0


def test_large_eps_underflow_accepted():
    m = ldpopt.randomized_response(4, 1000.0)
    assert m.matrix[0, 1] == 0.0  # e^-1000 underflows
    assert m.is_ldp(1000.0)
    assert not m.is_ldp(700.0)


def test_utility_and_output_distributions():
    p = np.array([0.2, 0.3, 0.5])
    q = np.array([0.5, 0.3, 0.2])
    m = ldpopt.randomized_response(3, 1.0)
    m0, m1 = m.output_distributions(p, q)
    np.testing.assert_array_equal(m0, m.matrix.T @ p)  # the same product of the same arrays
    ref = float(np.sum(m0 * np.log(m0 / m1)))
    # the textbook sum in numpy (naive_bound's model) against the library's perspectives + fsum
    bound = fdiv_bound(KL, 0.0, m0, m1) + naive_bound("kl", 0.0, m0, m1)
    assert within("Mechanism.utility vs textbook KL", m.utility(p, q, "kl"), ref, bound)
    with pytest.raises(ValueError, match="inputs"):
        m.utility([0.5, 0.5], [0.5, 0.5])


def test_labelled_utility_aligns_by_label():
    m = ldpopt.randomized_response(3, 1.0, labels=("a", "b", "c"))
    u1 = m.utility({"a": 0.2, "b": 0.3, "c": 0.5}, {"c": 0.2, "b": 0.3, "a": 0.5})
    u2 = m.utility([0.2, 0.3, 0.5], [0.5, 0.3, 0.2])
    assert u1 == u2  # aligned by label: the same masses, the same function


def test_baseline_argument_errors():
    with pytest.raises(ValueError, match="k"):
        ldpopt.randomized_response(0, 1.0)
    with pytest.raises(ValueError, match="eps"):
        ldpopt.randomized_response(3, -1.0)
    with pytest.raises(ValueError, match="same length"):
        ldpopt.binary_mechanism([0.5, 0.5], [1.0], 1.0)


# ---------------------------------------------------------------------------------------------
# the partition is checked against the matrix
# ---------------------------------------------------------------------------------------------
def _rows(*rows):
    return np.array(rows, dtype=float)


H, L = math.e / (math.e + 2), 1 / (math.e + 2)  # 3-ary RR levels at eps = 1


@pytest.mark.parametrize(
    "matrix, partition, error, match",
    [
        # the reproducer: one input listed twice, the other one missing
        (_rows([1.0], [1.0]), ((0, 0),), ValueError, r"partition block 0 \(0, 0\) contains input 0 twice"),
        (_rows([1.0], [1.0]), ((0,),), ValueError, "partition does not cover input 1"),
        (_rows([1.0], [1.0]), ((0, 1), ()), ValueError, "one block per output.*1 outputs, partition has 2"),
        (
            _rows([H, L, L], [L, H, L], [L, L, H]),
            ((0,), (1, 0), (2,)),
            ValueError,
            r"partition block 1 \(1, 0\) contains input 0 and block 0 \(0,\) contains it too",
        ),
        (_rows([H, L, L], [L, H, L], [L, L, H]), ((0,), (1,), (2, 3)), ValueError, r"contains 3, outside"),
        # rows of one block differ: RR is not a partition mechanism of {0, 1} | {2} | {}
        (
            _rows([H, L, L], [L, H, L], [L, L, H]),
            ((0, 1), (2,), ()),
            ValueError,
            r"partition block 0 \(0, 1\) contradicts matrix: rows 0 and 1 differ",
        ),
        # blocks listed in the wrong order: output 0 is the report of block {2}
        (
            _rows([L, L, H], [L, H, L], [H, L, L]),
            ((0,), (1,), (2,)),
            ValueError,
            r"partition block 0 \(0,\) contradicts matrix: output 0 has probability",
        ),
        # two blocks with identical rows: the outputs do not tell them apart
        (
            _rows([H, L, L], [H, L, L], [L, L, H]),
            ((0,), (1,), (2,)),
            ValueError,
            r"partition block 0 \(0,\) contradicts matrix.*from block 1 \(1,\); .*strictly",
        ),
        (_rows([1.0], [1.0]), "01", TypeError, "partition must be a sequence of blocks"),
        (_rows([1.0], [1.0]), (0, 1), TypeError, "partition block 0 must be a sequence"),
        (_rows([1.0], [1.0]), ((0, 1.0),), TypeError, r"partition block 0 \(0, 1.0\) must hold integer"),
        (_rows([1.0], [1.0]), ((True, 0),), TypeError, "must hold integer input indices, got True"),
    ],
)
def test_partition_must_match_the_matrix(matrix, partition, error, match):
    with pytest.raises(error, match=match):
        ldpopt.Mechanism(matrix, 1.0, partition=partition)


def test_partition_of_every_constructor_is_consistent():
    from ldpopt.mechanism import _check_partition

    p, q = [0.1, 0.5, 0.4], [0.3, 0.2, 0.5]
    mechs = []
    for eps in (1e-17, 1e-13, 2e-12, 1e-9, 0.5, 3.0, 800.0, math.inf):
        mechs += [
            ldpopt.randomized_response(4, eps),
            ldpopt.randomized_response(1, eps),
            ldpopt.binary_mechanism(p, q, eps),
            ldpopt.binary_mechanism(p, p, eps),  # one side empty: an empty block
            ldpopt.spr_mechanism([[0, 3], [1], [2, 4]], 5, eps),
            ldpopt.optimal_mechanism(p, q, eps).mechanism,
            ldpopt.optimal_mechanism(p, p, eps).mechanism,
            ldpopt.egamma_mechanism(p, q, eps, 1.5).mechanism,
        ]
    mechs += [
        ldpopt.joint_range(p, q, 1.0).mechanism(i)
        for i in range(ldpopt.joint_range(p, q, 1.0).num_candidates)
    ]
    for mech in mechs:
        assert mech.partition is not None
        assert _check_partition(mech.partition, mech.matrix, mech.eps) == mech.partition
        assert len(mech.partition) == mech.num_outputs
    # a partition given as lists of numpy integers is stored as tuples of ints
    rr = ldpopt.randomized_response(3, 1.0)
    m = ldpopt.Mechanism(rr.matrix, 1.0, partition=[[np.int64(0)], [np.int64(1)], [2]])
    assert m.partition == ((0,), (1,), (2,)) and type(m.partition[0][0]) is int


# ---------------------------------------------------------------------------------------------
# "a mechanism or a matrix": one coercion
# ---------------------------------------------------------------------------------------------
def test_as_mechanism_takes_a_mechanism_or_a_result_holding_one():
    from ldpopt.mechanism import as_mechanism

    mech = ldpopt.randomized_response(3, 1.0)
    assert as_mechanism(mech) is mech
    res = ldpopt.optimal_mechanism([0.5, 0.3, 0.2], [0.2, 0.3, 0.5], 1.0, method="dp")
    assert as_mechanism(res) is res.mechanism
    for bad in (mech.matrix, "rr", None):
        with pytest.raises(TypeError, match="mech must be a Mechanism"):
            as_mechanism(bad, "mech")


def test_as_channel_matrix_checks_plain_arrays_like_the_constructor():
    from ldpopt.mechanism import as_channel_matrix

    mech = ldpopt.randomized_response(3, 1.0)
    assert as_channel_matrix(mech) is mech.matrix
    m = as_channel_matrix([[0.5, 0.5], [0.25, 0.75]], "q")
    assert m.dtype == float and not m.flags.writeable
    for bad, match in [
        ([[0.5, 0.6]], "q rows must sum to 1, row 0"),
        ([[1.5, -0.5]], "q must be non-negative"),
        ([0.5, 0.5], "q must be a non-empty 2-D array"),
        ([[np.nan, 1.0]], "q must contain only finite numbers"),
    ]:
        with pytest.raises(ValueError, match=match):
            as_channel_matrix(bad, "q")
    with pytest.raises(TypeError, match="q"):
        as_channel_matrix([[True, False]], "q")


# ---------------------------------------------------------------------------------------------
# deployment methods need neither ldpopt.deploy nor pandas
# ---------------------------------------------------------------------------------------------
def test_privatize_and_files_without_deploy_or_pandas(tmp_path):
    import subprocess
    import sys

    script = f"""
import sys
sys.modules["pandas"] = None  # importing pandas now fails
import numpy as np
import ldpopt
mech = ldpopt.randomized_response(3, 1.0, labels=["a", "b", "c"])
y = mech.privatize(np.array(["a", "c", "b", "a"]), rng=np.random.default_rng(0))
assert y.shape == (4,) and set(y.tolist()) <= {{"a", "b", "c"}}
path = mech.to_json({str(tmp_path / "m.json")!r}, p0=[0.5, 0.3, 0.2], p1=[0.2, 0.3, 0.5])
back = ldpopt.Mechanism.from_json(path)
assert back.labels == mech.labels and np.array_equal(back.matrix, mech.matrix)
assert not [m for m in sys.modules if m.startswith("ldpopt.deploy")], "ldpopt.deploy was imported"
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


@pytest.mark.parametrize(
    "build",
    [lambda mech: mech.to_opendp(), lambda mech: ldpopt.to_opendp(mech)],
    ids=["method", "function"],
)
def test_to_opendp_without_opendp_names_the_extra(monkeypatch, build):
    import sys

    from ldpopt.errors import MissingExtraError

    for name in ("opendp", "opendp.prelude"):  # as if not installed (other tests may have imported it)
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(MissingExtraError) as info:
        build(ldpopt.randomized_response(2, 1.0))
    err = info.value
    assert (err.extra, err.missing) == ("opendp", "opendp")
    assert 'pip install "ldpopt[opendp]"' in str(err)


def test_spr_mechanism_from_assignment_is_spr_mechanism_of_its_blocks():
    rng = np.random.default_rng(70)
    for _ in range(20):
        k, s = int(rng.integers(1, 12)), int(rng.integers(1, 5))
        block_of = np.concatenate((np.arange(min(s, k)), rng.integers(0, min(s, k), k - min(s, k))))
        rng.shuffle(block_of)
        eps = float(rng.choice([0.3, 2.0, 50.0, math.inf]))
        labels = [f"x{i}" for i in range(k)]
        got = spr_mechanism_from_assignment(block_of, eps, labels=labels)
        part = [sorted(np.flatnonzero(block_of == j).tolist()) for j in range(int(block_of.max()) + 1)]
        ref = ldpopt.spr_mechanism(part, k, eps, labels=labels)
        assert np.array_equal(got.matrix, ref.matrix) and got.partition == ref.partition
        assert got.labels == ref.labels and got.eps == ref.eps and got.name == ref.name
        assert not got.matrix.flags.writeable
    with pytest.raises(TypeError, match="block_of"):
        spr_mechanism_from_assignment(np.array([0.0, 1.0]), 1.0)
    with pytest.raises(ValueError, match="block_of"):
        spr_mechanism_from_assignment(np.array([[0, 1]]), 1.0)
    with pytest.raises(ValueError, match=r"block_of must hold block indices in range\(2\), found -1"):
        spr_mechanism_from_assignment(np.array([0, -1]), 1.0)
    with pytest.raises(ValueError, match=r"in range\(2\), found 4611686018427387904"):
        spr_mechanism_from_assignment(np.array([0, 2**62]), 1.0)  # never an allocation of 2**62
    with pytest.raises(ValueError, match="block 1 is empty"):
        spr_mechanism_from_assignment(np.array([0, 2, 2]), 1.0)
    with pytest.raises(ValueError, match="eps"):
        spr_mechanism_from_assignment(np.array([0, 1]), -1.0)
