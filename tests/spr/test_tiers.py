"""Which path answers a solve while the pruned kernels are not compiled: the table path stands in
for them (up to ``_fast.COLD_TABLE_MAX_BYTES`` of table) until ``ldpopt warmup`` or an earlier
process put them in numba's on-disk cache, or until the table path has cost the process
``_fast.TIER_UP_SECONDS`` (ski rental).

The policy is checked in fresh processes with an empty ``NUMBA_CACHE_DIR`` (the test session
forces the pruned kernels, see conftest.py); the values of both paths against each other and the
readable evaluation of their partitions, within the error model's bound."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import ldpopt
from _errmodel import within
from _valuebounds import dinkelbach_slack, pair_bound
from ldpopt._validation import check_distribution_pair
from ldpopt.divergences import get_divergence
from ldpopt.spr import _chernoff_kernels as CK
from ldpopt.spr import _fast
from ldpopt.spr.reduction import _reduce
from ldpopt.spr.reference import spr_value
from reference import reduced_cuts

_SOLVE = """
import json, sys
import numpy as np
from numba.core import event
import ldpopt
from ldpopt.spr import _fast, _kernels as K, _small as S

k, div, tier_up = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
_fast.TIER_UP_SECONDS = tier_up
rng = np.random.default_rng(5)
p, q = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
runs = []
for _ in range(int(sys.argv[4])):
    before = (bool(K.table_pass.signatures), bool(K.uncached_pass.signatures), bool(S.small_solve.signatures))
    with event.install_recorder("numba:compile") as rec:
        res = ldpopt.optimal_mechanism(p, q, 2.0, div)
    after = (bool(K.table_pass.signatures), bool(K.uncached_pass.signatures), bool(S.small_solve.signatures))
    runs.append({
        "compiled": sum(1 for _, ev in rec.buffer if ev.is_start),
        "new": [name for name, b, a in zip(("table", "large", "small"), before, after) if a and not b],
        "value": res.value,
        "partition": [list(map(int, b)) for b in res.partition],
    })
print(json.dumps(runs))
"""


def _env(cache_dir) -> dict:
    env = {key: val for key, val in os.environ.items() if key != "NUMBA_DISABLE_JIT"}
    env["NUMBA_CACHE_DIR"] = str(cache_dir)
    return env


def _solve(env, k: int, div: str = "kl", tier_up: float = 5.0, calls: int = 1) -> list[dict]:
    args = [sys.executable, "-c", _SOLVE, str(k), div, repr(tier_up), str(calls)]
    out = subprocess.run(args, capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _pair(k: int):
    rng = np.random.default_rng(5)
    return check_distribution_pair(rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k)))


def _assert_same_optimum(k: int, div_name: str, a: dict, b: dict) -> None:
    """Two answers of the same instance: each value is its partition's (readable evaluation), and
    the two partitions are equal or tie within the error model's bound."""
    u, v = _pair(k)
    red = _reduce(u, v)
    div = get_divergence(div_name)
    raws = []
    for run in (a, b):
        cuts = reduced_cuts(red, [tuple(blk) for blk in run["partition"]])
        raw = spr_value(red.p, red.q, 2.0, div, cuts)
        pb = pair_bound(red.p, red.q, 2.0, div, cuts)
        assert within("tiers: value of its partition", run["value"], div.transform(raw), pb)
        raws.append((raw, cuts, pb))
    (ra, ca, pa), (rb, cb, pbb) = raws
    if ca != cb:
        tie = pa + pbb + dinkelbach_slack(red.p, red.q, 2.0, div, max(ra, rb))
        assert within("tiers: the two optima (a tie)", ra, rb, tie)


def test_a_cold_large_solve_takes_the_table_path_until_the_pruned_kernels_are_cached(tmp_path):
    env = _env(tmp_path)
    (cold,) = _solve(env, 1500)
    assert cold["new"] == ["table"] and cold["compiled"] > 0  # no large kernel compiled
    again = _solve(env, 1500)[0]
    assert again["new"] == ["table"] and again["compiled"] == 0  # loaded from the cache, not compiled
    subprocess.run(
        [sys.executable, "-m", "ldpopt", "warmup", "--path", "large", "--json", "-"],
        capture_output=True,
        check=True,
        env=env,
    )
    (warm,) = _solve(env, 1500)
    assert warm["new"] == ["large"] and warm["compiled"] == 0  # loaded, not compiled
    _assert_same_optimum(1500, "kl", cold, warm)
    # the large kernels are specialised to the divergence: another one is not ready
    (other,) = _solve(env, 1500, "chi2")
    assert other["new"] == ["table"]


def test_the_table_path_tiers_up_once_it_has_cost_the_compile(tmp_path):
    """Ski rental with a tiny threshold: the first call is the table path, the next compile the
    pruned kernels (small: the one-call path)."""
    runs = _solve(_env(tmp_path), 60, tier_up=1e-9, calls=3)
    assert [r["new"] for r in runs] == [["table"], ["small"], []]
    assert runs[2]["compiled"] == 0
    _assert_same_optimum(60, "kl", runs[0], runs[1])
    assert runs[1]["value"] == runs[2]["value"]


def _table_bytes(k: int, rows: int) -> int:
    return 8 * k * (k + 1) // 2 + 16 * (rows + 1) * (k + 1)


@pytest.mark.parametrize(
    ("k", "l", "fits"),
    [
        (1024, 1024, True),  # the score-cache size: always the table path while cold
        (1024, 500, True),
        (5784, 5784, True),  # the largest k whose table and a 3-row program fit 128 MiB
        (5785, 5785, False),
        (3000, 8, True),
        (3000, 9, False),  # a budget program over more rows: compile instead
        (20_000, 20_000, False),
    ],
)
def test_the_cold_table_path_is_bounded_in_memory_and_budget(k, l, fits):
    assert _fast.cold_table(k, l) is fits
    if fits and k > 1024:
        assert _table_bytes(k, l if l < k else 3 + 30_000_000 // (k * k)) <= _fast.COLD_TABLE_MAX_BYTES
    if k == 5785:
        assert _table_bytes(k, 3) > _fast.COLD_TABLE_MAX_BYTES


def test_auto_takes_the_table_path_where_the_pruned_kernels_are_not_wanted(monkeypatch):
    u, v = _pair(1500)
    red = _reduce(u, v)
    div = get_divergence("kl")
    table = _fast.solve(red.p, red.q, 2.0, div, red.k, path="table")
    monkeypatch.setattr(_fast, "PRUNED_PATH", "never")
    assert _fast.solve(red.p, red.q, 2.0, div, red.k) == table
    monkeypatch.setattr(_fast, "PRUNED_PATH", "always")
    pruned = _fast.solve(red.p, red.q, 2.0, div, red.k)
    assert pruned == _fast.solve(red.p, red.q, 2.0, div, red.k, path="pruned")


_CHERNOFF = """
import json, sys
import numpy as np
from numba.core import event
import ldpopt
from ldpopt.spr import _chernoff_kernels as CK, _fast

runs = []
for k in (5, 60):
    rng = np.random.default_rng(k)
    p, q = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
    with event.install_recorder("numba:compile") as rec:
        res = ldpopt.optimal_mechanism(p, q, 2.0, "chernoff")
    ref = ldpopt.optimal_mechanism(p, q, 2.0, "chernoff", method="dp")
    runs.append({
        "search_compiled": bool(CK.sweep_pair.signatures),
        "compiled": sum(1 for _, ev in rec.buffer if ev.is_start),
        "charged": _fast._table_seconds,
        "value": res.value, "upper_bound": res.upper_bound,
        "ref_value": ref.value, "ref_upper_bound": ref.upper_bound,
    })
print(json.dumps(runs))
"""


def test_a_cold_chernoff_solve_takes_the_python_search_and_charges_the_ski_rental(tmp_path):
    """With an empty numba cache the first Chernoff solves (k = 5, 60) do not compile the search
    (~13 kernels, 10-17 s on 2 cores): the Python search over the compiled table solver answers,
    its time counted towards the tier-up.  Each answer is certified: its value is below the
    readable search's certified upper bound and the other way round."""
    out = subprocess.run(
        [sys.executable, "-c", _CHERNOFF], capture_output=True, text=True, check=True, env=_env(tmp_path)
    )
    runs = json.loads(out.stdout.strip().splitlines()[-1])
    assert not any(run["search_compiled"] for run in runs), runs
    assert runs[0]["compiled"] > 0 and runs[1]["compiled"] == 0  # the table solver, compiled once
    assert 0 < runs[0]["charged"] < runs[1]["charged"] < _fast.TIER_UP_SECONDS
    for run in runs:
        assert run["value"] <= run["ref_upper_bound"] and run["ref_value"] <= run["upper_bound"], run
    assert not list(tmp_path.rglob("_chernoff_kernels*"))


def test_the_chernoff_search_policy(monkeypatch):
    """Cold (not compiled, not cached): the Python search up to COLD_SEARCH_MAX_K reduced symbols,
    the compiled search above it, after the tier-up and whenever the policy says "always"."""
    monkeypatch.setattr(_fast, "_ready", lambda kernels, code: False)
    with _fast.pruned_path("ready"):
        monkeypatch.setattr(_fast, "_table_seconds", 0.0)
        assert not _fast.chernoff_search_ready(5)
        assert not _fast.chernoff_search_ready(_fast.COLD_SEARCH_MAX_K)
        assert _fast.chernoff_search_ready(_fast.COLD_SEARCH_MAX_K + 1)
        monkeypatch.setattr(_fast, "_table_seconds", _fast.TIER_UP_SECONDS)
        assert _fast.chernoff_search_ready(5)
    with _fast.pruned_path("always"):
        assert _fast.chernoff_search_ready(5)
    with _fast.pruned_path("never"):
        assert not _fast.chernoff_search_ready(_fast.COLD_SEARCH_MAX_K + 1)
    monkeypatch.undo()
    p, q = [0.04, 0.09, 0.22, 0.47, 0.18], [0.25, 0.49, 0.13, 0.10, 0.03]
    with _fast.pruned_path("always"):  # compiles the search here (or loads it)
        ldpopt.optimal_mechanism(p, q, 1.0, "chernoff")
    assert CK.sweep_pair.signatures
    with _fast.pruned_path("ready"):  # then it is ready in this process
        monkeypatch.setattr(_fast, "_table_seconds", 0.0)
        assert _fast.chernoff_search_ready(5)
