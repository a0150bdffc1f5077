"""``ldpopt.warm_up`` / ``ldpopt warmup``: the kernels go into numba's on-disk cache, and small
single solves switch from the table path to the score-cache kernels once they are there.

The path policy is checked in fresh processes sharing one empty ``NUMBA_CACHE_DIR`` (the test
session itself forces the score-cache path, see conftest.py)."""

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
from ldpopt.spr import warmup
from ldpopt.spr.reduction import _reduce
from ldpopt.spr.reference import _dp_readable, spr_value
from reference import reduced_cuts

_SOLVE = """
import json
import numpy as np
from numba.core import event
import ldpopt
from ldpopt.spr import _kernels as K, _small as S

rng = np.random.default_rng(3)
p, q = rng.dirichlet(np.ones(60)), rng.dirichlet(np.ones(60))
with event.install_recorder("numba:compile") as rec:
    res = ldpopt.optimal_mechanism(p, q, 2.0)
print(json.dumps({
    "compiled": sum(1 for _, ev in rec.buffer if ev.is_start),
    "small": bool(S.small_solve.signatures),
    "table": bool(K.table_pass.signatures),
    "value": res.value,
    "partition": [list(map(int, b)) for b in res.partition],
}))
"""


def _run(args, env):
    out = subprocess.run([sys.executable, *args], capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1] if args[0] == "-c" else out.stdout)


def test_small_solves_take_the_table_path_until_warm_up_compiled_the_score_cache_kernels(tmp_path):
    env = {key: val for key, val in os.environ.items() if key != "NUMBA_DISABLE_JIT"}
    env["NUMBA_CACHE_DIR"] = str(tmp_path)
    cold = _run(["-c", _SOLVE], env)
    assert cold["table"] and not cold["small"]  # a first call compiles the table kernels alone
    assert cold["compiled"] > 0
    warm = _run(["-m", "ldpopt", "warmup", "--path", "small", "--json", "-"], env)
    assert warm["compiled"] > 0 and warm["paths"] == ["small"] and warm["divergences"] == ["kl"]
    assert warm["cache_dir"] == str(tmp_path)
    # the cache's entries are for this CPU: a process compiling for another target finds none
    other = subprocess.run(
        [sys.executable, "-c", "from ldpopt.spr import _fast; print(_fast.score_cache_ready())"],
        capture_output=True,
        text=True,
        check=True,
        env={**env, "NUMBA_CPU_NAME": "generic"},
    )
    assert other.stdout.strip() == "False"
    after = _run(["-c", _SOLVE], env)
    # the next process loads the score-cache kernels from the cache and compiles nothing
    assert after["small"] and not after["table"] and after["compiled"] == 0
    for run in (cold, after):
        _assert_optimal(run["value"], [tuple(b) for b in run["partition"]])


def _assert_optimal(value, partition):
    """The value is its partition's, and that partition is the readable program's optimum (or
    ties with it), each within the error model's bound (as tests/spr/test_small.py)."""
    rng = np.random.default_rng(3)
    u, v = check_distribution_pair(rng.dirichlet(np.ones(60)), rng.dirichlet(np.ones(60)))
    red = _reduce(u, v)
    div = get_divergence("kl")
    ref_raw, ref_cuts = _dp_readable(red.p, red.q, 2.0, div, red.k)
    cuts = reduced_cuts(red, partition)
    mine = spr_value(red.p, red.q, 2.0, div, cuts)
    assert mine <= ref_raw
    pb = pair_bound(red.p, red.q, 2.0, div, cuts)
    assert within("warm-up: value of its partition", value, div.transform(mine), pb)
    if cuts != ref_cuts:
        tie = pb + pair_bound(red.p, red.q, 2.0, div, ref_cuts)
        tie += dinkelbach_slack(red.p, red.q, 2.0, div, ref_raw)
        assert within("warm-up: optimum (a tie)", ref_raw, mine, tie)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"divergences": "bogus"}, ValueError, "bogus"),
        ({"divergences": []}, ValueError, "at least one"),
        ({"divergences": 3}, TypeError, "divergences"),
        ({"divergences": ldpopt.FDivergence(lambda t: t * np.log(t), name="mine")}, ValueError, "mine"),
        ({"paths": "fast"}, ValueError, "paths"),
        ({"paths": 5}, TypeError, "paths must be"),
        ({"paths": ()}, ValueError, "paths"),
    ],
)
def test_warm_up_names_a_bad_argument(kwargs, error, match):
    with pytest.raises(error, match=match):
        warmup.warm_up(**kwargs)


def test_warm_up_in_process_reports_what_it_did():
    res = ldpopt.warm_up(["kl", "js"], paths=["small"])
    assert res.paths == ("small",) and res.divergences == ("kl", "js")
    assert res.seconds > 0 and res.compiled >= 0


_SWEEPS = """
import json
import numpy as np
from numba.core import event
import ldpopt

rng = np.random.default_rng(4)
P, Q = rng.dirichlet(np.ones(150), size=8), rng.dirichlet(np.ones(150), size=8)
grid = np.arange(1, 81) * 0.125
compiled = []
for l in (None, 5):
    with event.install_recorder("numba:compile") as rec:
        ldpopt.sweep(P, Q, grid, "kl", max_outputs=l, progress=False)
    compiled.append(sum(1 for _, ev in rec.buffer if ev.is_start))
print(json.dumps(compiled))
"""


def test_warm_up_sweep_compiles_the_variants_of_a_typical_sweep(tmp_path):
    """After ``ldpopt warmup --path sweep``, a fresh process's batched sweeps of k <= 1024 and eps
    <= 10, with no budget and with a budget below k, load every kernel from the cache."""
    env = {key: val for key, val in os.environ.items() if key != "NUMBA_DISABLE_JIT"}
    env["NUMBA_CACHE_DIR"] = str(tmp_path)
    warm = _run(["-m", "ldpopt", "warmup", "--path", "sweep", "--json", "-"], env)
    assert warm["compiled"] > 0 and warm["paths"] == ["sweep"]
    assert _run(["-c", _SWEEPS], env) == [0, 0]
