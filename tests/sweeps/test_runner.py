"""run_sweep: correct rows, bit-identical schedulers, crash safety, failing chunks, resume rules."""

from __future__ import annotations

import dataclasses
import gc
import json
import math
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import types
from collections import Counter

import numpy as np
import pandas as pd
import pytest

import ldpopt
from _errmodel import R_FN, U, within
from _valuebounds import (
    blocks_value_err,
    dp_raw,
    fast_spr_err,
    kov_bound,
    pair_bound,
    partition_error,
    transform_bound,
    utility_bound,
)
from ldpopt import _validation as ldpopt_validation
from ldpopt.errors import LdpoptWarning
from ldpopt.spr import grid as spr_grid
from ldpopt.spr.reduction import likelihood_ratio_reduction
from ldpopt.sweeps import chunks, runner, schedulers
from ldpopt.sweeps import config as config_mod
from ldpopt.sweeps.config import dirichlet_pair, parse_config
from ldpopt.sweeps.store import COLUMNS, chunk_files
from reference import reduced_cuts

#: relative error of an entry of the library's RR levels, units of u (tests/test_mechanism.py)
C_RR_LIB = R_FN + 3.0


def optimum_err(u, v, eps, div, blocks):
    """|stored optimum (the sweep's value of its partition P) - exact utility of P| (reported
    scale): the fast path's scores against the readable ones (pair_bound) and those against the
    exact value (partition_error), mapped through the value transform."""
    red = likelihood_ratio_reduction(u, v)
    cuts = reduced_cuts(red, blocks)
    raw = partition_error(red.p, red.q, eps, div, cuts) + pair_bound(red.p, red.q, eps, div, cuts)
    return transform_bound(div, dp_raw(u, v, eps, div), raw) if math.isfinite(raw) else math.inf


def matrix_err(mech, u, v, eps, div):
    """|Mechanism.utility of an RR-type matrix - its exact utility| (reported scale)."""
    raw = utility_bound(mech.matrix, u, v, div, C_RR_LIB * U)
    return transform_bound(div, ldpopt.get_divergence(div).raw(mech.matrix.T @ u, mech.matrix.T @ v), raw)


def runner_baseline_err(u, v, eps, div, blocks, mech):
    """|the runner's baseline (SPR eq. 30 with numpy's exp / expm1: R_FN, as math's) - exact|
    (reported scale; the transform's slope taken at the channel's own raw utility)."""
    raw = blocks_value_err(u, v, eps, div, blocks)
    d = ldpopt.get_divergence(div)
    centre = d.raw(mech.matrix.T @ u, mech.matrix.T @ v)
    return transform_bound(d, centre, raw) if math.isfinite(raw) else math.inf


#: small grid used for the scheduler comparisons: 6 instances in 3 chunks
GRID = {
    "instances": {"generator": "dirichlet", "k": 7, "trials": 6, "alpha": 0.7, "seed": 11},
    "grid": {
        "eps": [0.25, 1.0, 2.5, 6.0],
        "divergences": ["kl", "tv", "renyi:2", "egamma:1.5"],
        "max_outputs": [0, 2],
        "baselines": ["binary", "rr"],
    },
    "run": {"instances_per_chunk": 2},
}


def without_time(df):
    return df.drop(columns="solve_time").reset_index(drop=True)


def assert_identical(a, b):
    """Bit-identical rows (except solve_time).

    Exact equality is the right test here because both sides run the same functions on the same
    inputs on the same host: every scheduler of these tests executes the chunks on this machine,
    in processes that inherit the environment, so they use the same compiled kernels (libm) and
    the same numpy loops (numpy picks its SIMD loops per process from the CPU and
    NPY_DISABLE_CPU_FEATURES, identical here).  It is not a claim across hosts: on workers with
    other CPUs (a tcp:// cluster) numpy's log/log1p loops may differ in the last ulp, and the
    rows computed with them (baselines, normalized_utility) by up to the bounds of
    tests/_errmodel.py.  CI runs these tests with numpy's default, AVX2 and baseline loops.
    """
    pd.testing.assert_frame_equal(without_time(a), without_time(b), check_exact=True)
    # bit-level equality of the floats (assert_frame_equal treats -0.0 == 0.0)
    for col in ("value", "normalized_utility", "eps"):
        assert a[col].to_numpy().tobytes() == b[col].to_numpy().tobytes(), col


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("ref")
    return runner.run_sweep(GRID, out, scheduler="inline", quiet=True)


# ---------------------------------------------------------------------------------------------
# Rows are right (independent checks)
# ---------------------------------------------------------------------------------------------
@pytest.mark.numerics
def test_rows_against_independent_evaluations(tmp_path):
    cfg = {
        "instances": {"generator": "dirichlet", "k": 5, "trials": 4, "alpha": 0.5, "seed": 2},
        "grid": {
            "eps": [0.3, 1.0, 3.0],
            "divergences": ["kl", "hellinger", "renyi:0.5"],
            "max_outputs": [0, 2],
            "baselines": ["binary", "rr", "kov_lp"],
        },
        "run": {"instances_per_chunk": 3},
    }
    df = ldpopt.run_sweep(cfg, tmp_path, scheduler="inline", quiet=True)
    assert tuple(df.columns) == COLUMNS
    assert len(df) == 4 * 3 * 3 * (2 + 3)
    assert not df.duplicated(["instance_index", "eps", "divergence", "budget", "mechanism"]).any()
    spec = parse_config(cfg).instances.spec
    checked = 0
    for r in df.itertuples(index=False):
        u, v = dirichlet_pair(spec, r.instance_index)
        div = r.divergence
        assert r.instance == str(r.instance_index) and r.k == 5
        if r.mechanism == "optimal":
            blocks = runner.parse_partition(r.partition)
            assert r.num_outputs == len(blocks) and (r.budget == 0 or r.num_outputs <= r.budget)
            # the stored partition, evaluated as a channel matrix, attains the stored value: both
            # within their bounds of the exact utility of the partition
            mech = ldpopt.spr_mechanism(blocks, 5, r.eps)
            bound = matrix_err(mech, u, v, r.eps, div) + optimum_err(u, v, r.eps, div, blocks)
            assert within("runner: optimum vs its channel", mech.utility(u, v, div), r.value, bound), r
            checked += 1
        elif r.mechanism == "binary":
            mech = ldpopt.binary_mechanism(u, v, r.eps)
            blocks = [b for b in mech.partition if b]
            bound = matrix_err(mech, u, v, r.eps, div) + runner_baseline_err(u, v, r.eps, div, blocks, mech)
            assert within("runner: binary vs its channel", mech.utility(u, v, div), r.value, bound)
            assert r.num_outputs == 2 and r.budget == 0
        elif r.mechanism == "rr":
            mech = ldpopt.randomized_response(5, r.eps)
            blocks = [[i] for i in range(5)]
            bound = matrix_err(mech, u, v, r.eps, div) + runner_baseline_err(u, v, r.eps, div, blocks, mech)
            assert within("runner: RR vs its channel", mech.utility(u, v, div), r.value, bound)
            assert r.num_outputs == 5 and pd.isna(r.partition)
        # the runner divides the value by div(u, v) of the same pair (f_divergence's function): exact
        assert r.normalized_utility == r.value / ldpopt.f_divergence(u, v, div)
    assert checked == 4 * 3 * 3 * 2
    # the optimum equals the independent KOV LP, and dominates every baseline
    key = ["instance_index", "eps", "divergence"]
    opt = df[(df.mechanism == "optimal") & (df.budget == 0)].set_index(key)["value"]
    opt2 = df[(df.mechanism == "optimal") & (df.budget == 2)].set_index(key)["value"]

    def fast_err(i, eps, div):
        """|a fast optimum - exact| on the reported scale (fast_spr_err covers budgets too)."""
        u, v = dirichlet_pair(spec, i)
        return transform_bound(div, dp_raw(u, v, eps, div), fast_spr_err(u, v, eps, div))

    def base_err(i, eps, div, mech):
        u, v = dirichlet_pair(spec, i)
        m = ldpopt.binary_mechanism(u, v, eps) if mech == "binary" else ldpopt.randomized_response(5, eps)
        blocks = [b for b in m.partition if b]
        return runner_baseline_err(u, v, eps, div, blocks, m)

    for mech in ("kov_lp", "binary", "rr"):
        base = df[df.mechanism == mech].set_index(key)["value"].reindex(opt.index)
        for (i, eps, div), a, b in zip(opt.index, opt, base, strict=True):
            if mech == "kov_lp":
                u, v = dirichlet_pair(spec, i)
                lp = transform_bound(div, dp_raw(u, v, eps, div), kov_bound(u, v, eps, div))
                assert within("runner: optimum vs KOV LP", a, b, fast_err(i, eps, div) + lp)
            elif a < b:  # exactly a >= b: a baseline's utility <= the optimum
                assert b - a <= fast_err(i, eps, div) + base_err(i, eps, div, mech), mech
    binary = df[df.mechanism == "binary"].set_index(key)["value"].reindex(opt.index)
    for (i, eps, div), a2, a, b in zip(opt.index, opt2.reindex(opt.index), opt, binary, strict=True):
        if a2 < b:  # binary is a 2-block SPR mechanism
            assert b - a2 <= fast_err(i, eps, div) + base_err(i, eps, div, "binary")
        if a2 > a:  # a budget never helps beyond the unconstrained optimum
            assert a2 - a <= 2 * fast_err(i, eps, div)


@pytest.mark.numerics
def test_file_instances_with_different_alphabets(tmp_path):
    pairs = tmp_path / "pairs.json"
    pairs.write_text(
        json.dumps(
            [
                {"id": "fraud", "p0": {"a": 0.1, "b": 0.6, "c": 0.3}, "p1": {"a": 0.5, "b": 0.2, "c": 0.3}},
                {"id": "pair2", "p0": [0.25, 0.25, 0.25, 0.25, 0.0], "p1": [0.1, 0.2, 0.3, 0.0, 0.4]},
                {"id": "same", "p0": [0.5, 0.5], "p1": [0.5, 0.5]},
            ]
        )
    )
    cfg = {
        "instances": {"file": str(pairs)},
        "grid": {"eps": [0.5, 2.0], "divergences": ["tv", "chi2"], "baselines": ["rr"]},
    }
    df = ldpopt.run_sweep(cfg, tmp_path / "out", scheduler="inline", quiet=True)
    assert list(dict.fromkeys(df.instance)) == ["fraud", "pair2", "same"]
    assert dict(zip(df.instance, df.k, strict=False)) == {"fraud": 3, "pair2": 5, "same": 2}
    inst = parse_config(cfg).instances
    for r in df[df.mechanism == "optimal"].itertuples():
        u, v = inst.get(r.instance_index, r.instance_index + 1)[0]
        blocks = runner.parse_partition(r.partition)
        mech = ldpopt.spr_mechanism(blocks, r.k, r.eps)
        bound = matrix_err(mech, u, v, r.eps, r.divergence) + optimum_err(u, v, r.eps, r.divergence, blocks)
        assert within(
            "runner: optimum vs its channel (files)", mech.utility(u, v, r.divergence), r.value, bound
        )
    same = df[df.instance == "same"]
    assert (same.value == 0).all() and same.normalized_utility.isna().all()  # D_f(P0||P1) = 0
    # chi2 of pair2 is infinite (p1 = 0 where p0 > 0): normalised utility undefined
    assert df[(df.instance == "pair2") & (df.divergence == "chi2")].normalized_utility.isna().all()


def test_partition_strings_round_trip():
    blocks = ((0, 3), (1,), (2, 4, 10))
    assert chunks.partition_string(blocks) == "0,3|1|2,4,10"
    assert chunks.parse_partition("0,3|1|2,4,10") == blocks
    assert chunks.parse_partition("0,1,2|") == ((0, 1, 2), ())
    with pytest.raises(TypeError, match="partition must be a string"):
        chunks.parse_partition(None)
    # the runner keeps the names it always exported
    assert runner.parse_partition is chunks.parse_partition and runner.plan_chunks is chunks.plan_chunks


def test_partition_codes_by_identity_match_the_partition_strings():
    """A chunk's partitions are coded by object identity (each distinct partition and block
    formatted once); the codes must still give every partition its own string, and equal
    partitions one code whether or not they are the same object."""
    names = [str(i) for i in range(12)]
    shared = (0, 3)
    p1 = (shared, (1, 2), (4, 10, 11))
    p2 = (shared, (1, 2, 4, 10, 11))
    p1_copy = ((0, 3), (1, 2), (4, 10, 11))  # equal to p1, other objects
    listed = [[0, 3], [1, 2], [4, 10, 11]]  # not tuples: copied first
    parts = [p1, p2, p1, p1_copy, listed, p2]
    strings = chunks._Strings()
    codes = strings.partition_codes(parts, names)
    assert [strings.values[c] for c in codes] == [chunks.partition_string(p) for p in parts]
    assert codes[0] == codes[2] == codes[3] == codes[4] and codes[1] == codes[5] != codes[0]
    assert strings.partition_codes([p2], names) == [codes[1]]  # codes persist across calls


def test_chunk_plan_depends_on_the_config_only():
    fig1b = parse_config(
        {
            "instances": {"generator": "dirichlet", "k": 100, "trials": 100, "seed": 0},
            "grid": {
                "eps": {"start": 0.1, "stop": 10.1, "step": 0.1},
                "divergences": ["kl"],
                "baselines": ["binary", "rr"],
            },
        }
    )
    ipc = chunks.plan_chunks(fig1b)
    assert 1 <= ipc <= 100 and ipc == chunks.plan_chunks(fig1b)
    big = parse_config(
        {
            "instances": {"generator": "dirichlet", "k": 400, "trials": 100000},
            "grid": {"eps": {"start": 0.1, "stop": 10.0, "step": 0.1}, "divergences": ["kl"]},
        }
    )
    cost = chunks._instance_cost(big, 400) * chunks.plan_chunks(big)
    assert chunks.MIN_CHUNK_S / 2 <= cost <= chunks.TARGET_CHUNK_S * 1.01
    assert chunks.plan_chunks(parse_config({**GRID})) == 2  # [run] instances_per_chunk


def test_chunk_plan_gives_every_worker_work_and_small_sweeps_stay_in_process(tmp_path):
    fig1b = parse_config(
        {
            "instances": {"generator": "dirichlet", "k": 100, "trials": 100, "seed": 0},
            "grid": {"eps": {"start": 0.1, "stop": 10.1, "step": 0.1}, "divergences": ["kl"]},
        }
    )
    ipc = chunks.plan_chunks(fig1b)
    n = math.ceil(100 / ipc)
    # 10,100 cells: enough chunks for 2 per worker on up to 4 workers, none below the minimum
    assert n >= 8 and chunks._instance_cost(fig1b, 100) * ipc >= chunks.MIN_CHUNK_S
    # the estimated work is the sum of the per-instance costs
    assert chunks.estimated_work(fig1b) == pytest.approx(100 * chunks._instance_cost(fig1b, 100), rel=1e-12)
    # a sweep smaller than starting the default pool runs in the driver (recorded in the manifest);
    # an explicit worker count is obeyed (test_processes_identical_and_dead_worker_retried)
    tiny = {**GRID, "run": {}}
    assert chunks.estimated_work(parse_config(tiny)) < runner.WORKER_START_S * 2
    runner.run_sweep(tiny, tmp_path, scheduler="processes", quiet=True)
    run = runner.read_manifest(tmp_path)["runs"][-1]
    assert (run["scheduler"], run["workers"]) == (runner.SMALL_SWEEP_SCHEDULER, 1)


@pytest.mark.parametrize("trials", [1, 7, 100, 101, 999, 5000])
def test_chunk_plan_has_even_chunks_and_honours_the_cost_model(trials):
    cfg = parse_config(
        {
            "instances": {"generator": "dirichlet", "k": 100, "trials": trials, "seed": 0},
            "grid": {
                "eps": {"start": 0.1, "stop": 10.1, "step": 0.1},
                "divergences": ["kl"],
                "baselines": ["binary", "rr"],
            },
        }
    )
    ipc = chunks.plan_chunks(cfg)
    n = math.ceil(trials / ipc)
    last = trials - (n - 1) * ipc
    assert n == 1 or last > ipc - n  # evenly sized: sizes differ by fewer than n instances
    cost = chunks._instance_cost(cfg, 100) * ipc
    assert cost <= chunks.TARGET_CHUNK_S * 1.01
    assert n == 1 or cost >= chunks.MIN_CHUNK_S / 2  # never split below the minimum chunk work


# ---------------------------------------------------------------------------------------------
# Schedulers: bit-identical results; dead workers are retried
# ---------------------------------------------------------------------------------------------
@pytest.mark.numerics
def test_processes_identical_and_dead_worker_retried(tmp_path, reference, monkeypatch):
    marker = tmp_path / "died"
    monkeypatch.setenv(runner.FAULT_ENV, f"die_once:0:{marker}")
    df = runner.run_sweep(GRID, tmp_path / "out", scheduler="processes", workers=2, quiet=True)
    assert marker.exists()  # the worker running chunk 0 really died once
    assert_identical(df, reference)
    manifest = runner.read_manifest(tmp_path / "out")
    assert manifest["status"] == "complete" and manifest["chunk_errors"] == {}
    assert manifest["worker_retries"].get("0") == 1
    assert manifest["runs"][-1]["scheduler"] == "processes" and manifest["runs"][-1]["workers"] == 2


@pytest.mark.numerics
def test_threads_identical_and_every_thread_busy(tmp_path, reference, monkeypatch):
    # the same rows as inline, which test_processes_identical_and_dead_worker_retried shows are
    # the process pool's, bit for bit; every chunk sleeps a little so both threads surely take some
    monkeypatch.setenv(runner.FAULT_ENV, "sleep:0.2")
    df = runner.run_sweep(GRID, tmp_path, scheduler="threads", workers=2, quiet=True)
    assert_identical(df, reference)
    run = runner.read_manifest(tmp_path)["runs"][-1]
    assert (run["scheduler"], run["workers"], run["chunks_computed"]) == ("threads", 2, 3)
    assert sorted(run["chunks_per_worker"]) == [1, 2]


def test_auto_takes_threads_unless_a_pool_is_expected_to_finish_first(tmp_path, reference):
    assert runner._auto_scheduler(parse_config(GRID), 2) == "threads"
    # W seconds of one-core work: threads take about GIL_SHARE * W, a pool WORKER_START_S + W / n
    big = parse_config(
        {
            "instances": {"generator": "dirichlet", "k": 1000, "trials": 2000},
            "grid": {"eps": {"start": 0.1, "stop": 10.0, "step": 0.1}, "divergences": ["kl"]},
        }
    )
    assert (runner.GIL_SHARE - 1 / 2) * runner.estimated_work(big) > runner.WORKER_START_S
    assert runner._auto_scheduler(big, 2) == "processes"
    assert runner._auto_scheduler(big, 1) == "threads"  # one core: nothing to gain from a pool
    # the default scheduler is auto
    assert_identical(runner.run_sweep(GRID, tmp_path, quiet=True), reference)
    assert runner.read_manifest(tmp_path)["runs"][-1]["scheduler"] == "threads"


@pytest.mark.numerics
def test_dask_local_cluster_identical_and_dead_worker_retried(tmp_path, reference, monkeypatch):
    pytest.importorskip("distributed")
    marker = tmp_path / "died"
    monkeypatch.setenv(runner.FAULT_ENV, f"die_once:1:{marker}")
    df = runner.run_sweep(GRID, tmp_path / "out", scheduler="dask-local", workers=2, quiet=True)
    assert marker.exists()
    assert_identical(df, reference)
    assert runner.read_manifest(tmp_path / "out")["status"] == "complete"


@pytest.mark.numerics
def test_tcp_scheduler_identical(tmp_path, reference):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=1,
        threads_per_worker=2,
        processes=False,
        protocol="tcp",
        host="127.0.0.1",
        dashboard_address=None,
    ) as cluster:
        address = cluster.scheduler_address
        assert address.startswith("tcp://127.0.0.1:")
        df = runner.run_sweep(GRID, tmp_path, scheduler=address, quiet=True)
    assert_identical(df, reference)
    assert runner.read_manifest(tmp_path)["runs"][-1]["scheduler"] == address


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_scheduler_errors_come_before_any_work(tmp_path, monkeypatch):
    with pytest.raises(runner.SchedulerError, match="unknown scheduler='thread'; use 'auto', 'threads'"):
        runner.run_sweep(GRID, tmp_path / "a", scheduler="thread")
    with monkeypatch.context() as m:  # `python - < script.py`: spawned workers could not re-import it
        m.setattr(sys.modules["__main__"], "__file__", "<stdin>", raising=False)
        with pytest.raises(runner.SchedulerError, match="re-import the main script"):
            runner.run_sweep(GRID, tmp_path / "a", scheduler="processes")
    with monkeypatch.context() as m:  # Dask is an optional extra
        m.setitem(sys.modules, "distributed", None)
        with pytest.raises(runner.SchedulerError, match=r"needs Dask: pip install 'ldpopt\[dask\]'"):
            runner.run_sweep(GRID, tmp_path / "a", scheduler="dask-local")
    with pytest.raises(runner.SchedulerError, match="tcp://HOST:PORT"):
        runner.run_sweep(GRID, tmp_path / "b", scheduler="tcp://127.0.0.1")
    pytest.importorskip("distributed")
    t0 = time.monotonic()
    with pytest.raises(
        runner.SchedulerError, match=r"cannot reach the Dask scheduler at tcp://127.0.0.1:\d+"
    ):
        runner.run_sweep(
            GRID, tmp_path / "c", scheduler=f"tcp://127.0.0.1:{_closed_port()}", connect_timeout=2
        )
    assert time.monotonic() - t0 < 30
    assert not (tmp_path / "c" / "manifest.json").exists() and not chunk_files(tmp_path / "c")


# ---------------------------------------------------------------------------------------------
# Nothing lost: kill -9 and resume, failing chunks, damaged files
# ---------------------------------------------------------------------------------------------
KILL_CONFIG = """
[instances]
generator = "dirichlet"
k = 6
trials = 8
seed = 5
[grid]
eps = {start = 0.5, stop = 3.0, step = 0.5}
divergences = ["kl", "js"]
max_outputs = [0, 3]
baselines = ["binary"]
[run]
instances_per_chunk = 1
"""


def live_processes_of_group(pgid: int) -> list[int]:
    """Pids of the processes of process group ``pgid`` that are still running (zombies, dead but
    not yet reaped by their new parent, do not count), read from /proc."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
        except OSError:  # exited meanwhile
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state not in ("Z", "X"):
            pids.append(int(entry))
    return pids


def wait_until_gone(pgid: int, seconds: float) -> list[int]:
    """Poll until no process of the group runs, at most ``seconds``; the survivors."""
    deadline = time.monotonic() + seconds
    while (alive := live_processes_of_group(pgid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return alive


def start_cli_sweep(cfg, out, *extra: str, fault: str = "sleep:0.4") -> subprocess.Popen:
    """``ldpopt sweep`` in its own session (process group = its pid), 2 workers (of the
    ``processes`` scheduler unless ``extra`` names another), slowed chunks; returns once it has
    written 2 chunk files."""
    env = dict(os.environ, **{runner.FAULT_ENV: fault})
    if "--scheduler" not in extra:
        extra = ("--scheduler", "processes", *extra)
    threads = extra[extra.index("--scheduler") + 1] == "threads"
    cmd = [sys.executable, "-m", "ldpopt", "sweep", str(cfg), "--out", str(out), "--workers", "2", *extra]
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    deadline = time.monotonic() + 240  # generous: a cold numba cache compiles first
    while len(chunk_files(out)) < 2:
        if proc.poll() is not None or time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            raise AssertionError(f"no 2 chunks within 240 s: {proc.communicate()}")
        time.sleep(0.02)
    # the driver and its two workers (threads: the driver alone)
    assert len(live_processes_of_group(proc.pid)) >= (1 if threads else 3)
    return proc


def kill_driver_only(proc: subprocess.Popen) -> None:
    """SIGKILL the driver alone, mid-run; its workers must notice and exit by themselves within
    seconds (nothing left behind at ~100 MB each)."""
    try:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert wait_until_gone(proc.pid, 10.0) == []
    finally:
        if live_processes_of_group(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()


@pytest.mark.numerics
def test_sigkill_midway_then_resume_gives_the_uninterrupted_dataset(tmp_path):
    cfg = tmp_path / "kill.toml"
    cfg.write_text(KILL_CONFIG)
    out = tmp_path / "killed"
    proc = start_cli_sweep(cfg, out, "--quiet")
    kill_driver_only(proc)
    assert proc.returncode == -signal.SIGKILL
    done_before = len(chunk_files(out))
    assert 2 <= done_before < 8
    manifest = runner.read_manifest(out)
    assert manifest["status"] == "running"  # killed: never got to write its final state
    resumed = runner.run_sweep(cfg, out, scheduler="inline", quiet=True)
    manifest = runner.read_manifest(out)
    assert manifest["status"] == "complete"
    assert manifest["runs"][-1]["chunks_computed"] == 8 - done_before
    fresh = runner.run_sweep(cfg, tmp_path / "fresh", scheduler="inline", quiet=True)
    assert len(resumed) == 8 * 6 * 2 * 3
    assert_identical(resumed, fresh)
    assert not list(out.rglob("*.tmp"))


def test_sigkill_of_the_driver_leaves_no_dask_local_worker(tmp_path):
    pytest.importorskip("distributed")
    cfg = tmp_path / "kill.toml"
    cfg.write_text(KILL_CONFIG)
    proc = start_cli_sweep(cfg, tmp_path / "out", "--quiet", "--scheduler", "dask-local")
    kill_driver_only(proc)


@pytest.mark.parametrize(
    "scheduler, sig",
    [("processes", signal.SIGTERM), ("threads", signal.SIGTERM), ("threads", signal.SIGINT)],
    ids=["processes-sigterm", "threads-sigterm", "threads-ctrl-c"],
)
def test_sigterm_stops_like_ctrl_c_keeps_chunks_and_leaves_no_process(tmp_path, scheduler, sig):
    cfg = tmp_path / "kill.toml"
    cfg.write_text(KILL_CONFIG)
    out = tmp_path / "termed"
    proc = start_cli_sweep(cfg, out, "--quiet", "--scheduler", scheduler, fault="sleep:0.6")
    try:
        os.kill(proc.pid, sig)
        _, stderr = proc.communicate(timeout=60)
        assert wait_until_gone(proc.pid, 10.0) == []
    finally:
        if live_processes_of_group(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    done = len(chunk_files(out))
    assert 2 <= done < 8
    line = [x for x in stderr.splitlines() if x.startswith("interrupted:")]
    assert line == [
        f"interrupted: {done} of 8 chunks are finished in {out}; run the same command again to "
        "resume (finished chunks are kept)"
    ], stderr
    manifest = runner.read_manifest(out)
    assert manifest["status"] == "interrupted" and manifest["runs"][-1]["interrupted"] is True
    assert manifest["chunks"]["done"] == done and manifest["runs"][-1]["scheduler"] == scheduler
    assert not list(out.rglob("*.tmp"))
    # the same command resumes (a pool: inline, to keep the test short): only the missing chunks
    # are computed, and the dataset is the uninterrupted one
    again = "inline" if scheduler == "processes" else scheduler
    res = subprocess.run(
        [sys.executable, "-m", "ldpopt", "sweep", str(cfg), "--out", str(out), "--scheduler", again],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    assert f"8/8 done ({8 - done} this run, 0 failed)" in res.stdout
    assert runner.read_manifest(out)["status"] == "complete"
    fresh = runner.run_sweep(cfg, tmp_path / "fresh", scheduler="inline", quiet=True)
    assert_identical(runner.load_results(out), fresh)


@pytest.mark.parametrize("scheduler", ["inline", "threads"])
def test_failing_chunk_is_reported_and_the_others_continue(tmp_path, monkeypatch, reference, scheduler):
    monkeypatch.setenv(runner.FAULT_ENV, "raise:1")
    with pytest.warns(LdpoptWarning, match=r"1 of 3 chunks failed \(first: chunk 1: RuntimeError: injected"):
        df = runner.run_sweep(GRID, tmp_path, scheduler=scheduler, quiet=True)
    manifest = runner.read_manifest(tmp_path)
    assert manifest["status"] == "failed"
    assert manifest["chunks"] == {"total": 3, "done": 2, "failed": 1}
    err = manifest["chunk_errors"]["1"]
    assert err["error"] == "RuntimeError: injected failure in chunk 1" and "Traceback" in err["traceback"]
    assert sorted(chunk_files(tmp_path)) == [0, 2]
    assert set(df.instance_index) == {0, 1, 4, 5}
    assert_identical(df, reference[reference.instance_index.isin([0, 1, 4, 5])])
    # a rerun retries only the failed chunk and clears its error
    monkeypatch.delenv(runner.FAULT_ENV)
    df = runner.run_sweep(GRID, tmp_path, scheduler="inline", quiet=True)
    manifest = runner.read_manifest(tmp_path)
    assert manifest["status"] == "complete" and manifest["chunk_errors"] == {}
    assert manifest["runs"][-1]["chunks_computed"] == 1
    assert_identical(df, reference)


def test_a_chunk_thread_that_meets_a_base_exception_reports_its_chunk(tmp_path, monkeypatch):
    """A chunk thread turns even a SystemExit into a failed chunk: the driver never waits for it."""
    real = schedulers.run_chunk

    def run_chunk(task):
        if task.chunk_id == 1:
            raise SystemExit(3)
        return real(task)

    monkeypatch.setattr(schedulers, "run_chunk", run_chunk)
    with pytest.warns(LdpoptWarning, match=r"1 of 3 chunks failed \(first: chunk 1: SystemExit"):
        runner.run_sweep(GRID, tmp_path, scheduler="threads", quiet=True)
    manifest = runner.read_manifest(tmp_path)
    assert manifest["status"] == "failed" and manifest["chunks"] == {"total": 3, "done": 2, "failed": 1}


def test_chunk_threads_run_one_solver_thread_each(tmp_path, monkeypatch):
    """The threads scheduler's parallelism is its chunk threads: each limits numba to one thread
    for itself, and the batched solver inside it then uses one thread (else workers x cores
    threads would share the cores)."""
    limited = []
    real = schedulers.limit_threads

    def spy():
        real()
        limited.append(threading.current_thread().name)

    monkeypatch.setattr(schedulers, "limit_threads", spy)
    runner.run_sweep(GRID, tmp_path, scheduler="threads", workers=2, quiet=True)
    assert {n for n in limited if n.startswith("ldpopt-sweep-")} == {"ldpopt-sweep-1", "ldpopt-sweep-2"}

    seen = []

    def in_thread():
        chunks.limit_threads()
        seen.append(spr_grid._threads())

    t = threading.Thread(target=in_thread)
    t.start()
    t.join()
    assert seen == [1]


@pytest.mark.parametrize("scheduler", ["threads", "inline"])
def test_in_process_sweeps_leave_the_garbage_collector_as_they_found_it(tmp_path, monkeypatch, scheduler):
    """The warm-up pauses the collector and, when nothing compiled, freezes what it loaded while
    the chunks run (they see it frozen); afterwards the program's collector is as before: enabled
    and nothing frozen, or disabled / its own objects frozen, untouched."""
    gc.collect()
    seen = []
    real = schedulers.run_chunk

    def run_chunk(task):
        seen.append((gc.isenabled(), gc.get_freeze_count()))
        return real(task)

    monkeypatch.setattr(schedulers, "run_chunk", run_chunk)
    runner.run_sweep(GRID, tmp_path / "a", scheduler=scheduler, quiet=True)  # kernels compiled or loaded
    seen.clear()
    runner.run_sweep(GRID, tmp_path / "b", scheduler=scheduler, quiet=True)  # nothing left to compile
    assert seen and all(enabled and frozen > 0 for enabled, frozen in seen)
    assert gc.isenabled() and gc.get_freeze_count() == 0
    gc.disable()
    try:
        runner.run_sweep(GRID, tmp_path / "c", scheduler=scheduler, quiet=True)
        assert not gc.isenabled() and gc.get_freeze_count() == 0
    finally:
        gc.enable()
    box: list = []  # a container: tracked by the collector
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()  # frozen objects can still die: the count only decreases
        seen.clear()
        runner.run_sweep(GRID, tmp_path / "d", scheduler=scheduler, quiet=True)
        assert seen and all(enabled and n <= frozen for enabled, n in seen)
        # the program's objects are still frozen (out of every generation)
        assert gc.isenabled() and not any(o is box for o in gc.get_objects())
    finally:
        gc.unfreeze()
    assert any(o is box for o in gc.get_objects())


def test_a_compile_resumes_the_paused_collector():
    """A numba compile leaves garbage: the warm-up's pause of the collector ends at the first one
    (and the caller freezes nothing then)."""
    numba = pytest.importorskip("numba")

    @numba.njit(cache=False)
    def twice(x):
        return 2 * x

    with schedulers._collection_paused() as pause:
        assert pause.paused and not gc.isenabled()
        assert twice(21) == 42  # compiled here
        assert pause.compiled and gc.isenabled()
    assert gc.isenabled()
    with schedulers._collection_paused() as pause:
        assert twice(4) == 8  # compiled already: no compile, the pause holds
        assert pause.paused and not pause.compiled and not gc.isenabled()
    assert gc.isenabled()


def test_damaged_and_temporary_files_are_recomputed(tmp_path, reference):
    runner.run_sweep(GRID, tmp_path, scheduler="inline", quiet=True)
    files = chunk_files(tmp_path)
    files[1].write_bytes(
        files[1].read_bytes()[:100]
    )  # truncated (cannot happen via os.replace, but disks lie)
    stray = tmp_path / "chunks" / ".chunk-000002.parquet.abc.tmp"
    stray.write_bytes(b"partial")
    df = runner.run_sweep(GRID, tmp_path, scheduler="inline", quiet=True)
    assert runner.read_manifest(tmp_path)["runs"][-1]["chunks_computed"] == 1
    assert not stray.exists()
    assert_identical(df, reference)


# ---------------------------------------------------------------------------------------------
# Resume rules, store and return values
# ---------------------------------------------------------------------------------------------
def test_resume_rules(tmp_path, reference):
    out = tmp_path / "s"
    runner.run_sweep(GRID, out, scheduler="inline", quiet=True)
    mtimes = {c: p.stat().st_mtime_ns for c, p in chunk_files(out).items()}
    df = runner.run_sweep(GRID, out, scheduler="inline", quiet=True)  # nothing left to do
    assert runner.read_manifest(out)["runs"][-1]["chunks_computed"] == 0
    assert {c: p.stat().st_mtime_ns for c, p in chunk_files(out).items()} == mtimes
    assert_identical(df, reference)
    other = {**GRID, "grid": {**GRID["grid"], "eps": [1.0]}}
    with pytest.raises(runner.StoreError, match="holds a different sweep"):
        runner.run_sweep(other, out, scheduler="inline", quiet=True)
    assert {c: p.stat().st_mtime_ns for c, p in chunk_files(out).items()} == mtimes  # untouched
    df = runner.run_sweep(other, out, scheduler="inline", resume=False, quiet=True)
    assert set(df.eps) == {1.0} and len(runner.read_manifest(out)["runs"]) == 1
    # a directory with chunk files but no manifest is not ours to mix with
    (out / "manifest.json").unlink()
    with pytest.raises(runner.StoreError, match="no manifest.json"):
        runner.run_sweep(GRID, out, scheduler="inline", quiet=True)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(runner.StoreError, match="is not a directory"):
        runner.run_sweep(GRID, blocker, scheduler="inline", quiet=True)


def test_manifest_contents_and_dataset_readers(tmp_path, reference):
    path = runner.run_sweep(GRID, tmp_path, scheduler="inline", quiet=True, max_rows_in_memory=10)
    assert path == tmp_path / "chunks"  # large result: the dataset directory instead of a DataFrame
    m = runner.read_manifest(tmp_path)
    umask = os.umask(0)
    os.umask(umask)
    for f in (tmp_path / "manifest.json", *chunk_files(tmp_path).values()):
        assert f.stat().st_mode & 0o777 == 0o666 & ~umask, f  # as a plain open() would create it
    assert m["format"] == "ldpopt-sweep/1" and m["ldpopt_version"] == ldpopt.__version__
    assert m["config"]["grid"]["divergences"] == GRID["grid"]["divergences"]
    assert m["resolved"]["instances_per_chunk"] == 2 and m["resolved"]["eps"] == GRID["grid"]["eps"]
    assert m["cells"] == {"total": 6 * 4 * 4 * 2, "done": 6 * 4 * 4 * 2}
    assert m["rows"]["done"] == len(reference)
    run = m["runs"][-1]
    assert run["solve_seconds"] > 0 and run["store_seconds"] > 0
    # plain pandas / pyarrow read the same rows
    plain = pd.read_parquet(path).sort_values(["instance_index", "divergence", "mechanism", "budget", "eps"])
    ref = reference.sort_values(["instance_index", "divergence", "mechanism", "budget", "eps"])
    assert_identical(plain.reset_index(drop=True), ref.reset_index(drop=True))
    assert_identical(runner.load_results(tmp_path), reference)
    cols = runner.load_results(tmp_path, columns=["eps", "value"])
    assert list(cols.columns) == ["eps", "value"]
    with pytest.raises(ValueError, match="not sweep columns"):
        runner.load_results(tmp_path, columns=["utility"])
    with pytest.raises(runner.StoreError, match="not a sweep directory"):
        runner.load_results(tmp_path / "chunks")


def test_argument_validation(tmp_path):
    with pytest.raises(ValueError, match="workers must be >= 1"):
        runner.run_sweep(GRID, tmp_path, scheduler="inline", workers=0)
    with pytest.raises(ValueError, match="connect_timeout must be a positive number"):
        runner.run_sweep(GRID, tmp_path, scheduler="inline", connect_timeout=-1)
    with pytest.raises(ValueError, match="max_rows_in_memory must be an integer >= 0"):
        runner.run_sweep(GRID, tmp_path, scheduler="inline", max_rows_in_memory=1.5)
    assert ldpopt.run_sweep is runner.run_sweep


def test_optimum_baselines_and_input_divergence_see_the_same_distributions(monkeypatch):
    """A chunk renormalises each pair once, by the rule every solver applies: the optimum (solved
    by ``ldpopt.sweep`` from the raw pairs), the baselines and the input divergence all see the
    same arrays.  Renormalising twice is not the identity: 4 of these 50 draws move by an ulp on
    a second pass, so a chunk that renormalised before calling the solver would fail here."""
    cfg = parse_config(
        {
            "instances": {"generator": "dirichlet", "k": 6, "trials": 50, "seed": 1},
            "grid": {"eps": [1.0], "divergences": ["kl"], "baselines": ["binary"]},
            "run": {"instances_per_chunk": 50},
        }
    )
    raw = [dirichlet_pair(cfg.instances.spec, i) for i in range(50)]
    once = [ldpopt_validation.check_distribution_pair(u, v) for u, v in raw]
    twice = [ldpopt_validation.check_distribution_pair(u, v) for u, v in once]
    moved = [i for i, (a, b) in enumerate(zip(once, twice, strict=True)) if not np.array_equal(a, b)]
    assert len(moved) >= 2, moved  # the instance set exercises the case

    solver_saw, baseline_saw = [], []
    real_sweep, real_binary = chunks.sweep, chunks._BASELINE_FUNCS["binary"]

    def sweep_spy(p0s, p1s, *args, **kwargs):
        res = real_sweep(p0s, p1s, *args, **kwargs)
        # what the solver solved: its rows as ldpopt.sweep validates them (it keeps no copy)
        check = ldpopt_validation.check_distribution_pair
        solver_saw.extend(check(a, b) for a, b in zip(p0s, p1s, strict=True))
        inputs.extend(res.input_divergence.tolist())
        return res

    def binary_spy(u, v, *args):
        baseline_saw.append((u, v))
        return real_binary(u, v, *args)

    inputs: list[float] = []
    monkeypatch.setattr(chunks, "sweep", sweep_spy)
    monkeypatch.setitem(chunks._BASELINE_FUNCS, "binary", binary_spy)
    (task,) = chunks.make_tasks(cfg, chunks.plan_chunks(cfg))
    chunks.compute_chunk(task)
    assert len(solver_saw) == len(baseline_saw) == 50
    for i in range(50):
        for a, b in zip(solver_saw[i] + baseline_saw[i], once[i] + once[i], strict=True):
            assert a.tobytes() == b.tobytes(), i
        assert inputs[i] == ldpopt.f_divergence(*raw[i], "kl")  # which renormalises raw once


def test_rows_of_one_symbol_instances_are_zero_and_unnormalised(tmp_path):
    """k = 1 (P0 = P1 after renormalisation): value 0 and normalised utility nan in every row,
    baselines included (a Dirichlet draw sums to 1 only to rounding: it was -7e-17 and 0.632)."""
    grid = {
        "instances": {"generator": "dirichlet", "k": 1, "trials": 2, "alpha": 0.7, "seed": 11},
        "grid": {
            "eps": [1e-8, 1.0, 800.0],
            "divergences": ["kl", "reverse_kl", "renyi:2000"],
            "max_outputs": [0],
            "baselines": ["binary", "rr", "kov_lp"],
        },
    }
    df = runner.run_sweep(grid, tmp_path, scheduler="inline", quiet=True)
    assert len(df) == 2 * 3 * 3 * 4
    assert (df["value"] == 0.0).all(), df["value"].describe()
    assert df["normalized_utility"].isna().all()


def test_warmup_task_takes_both_ends_of_every_size_class():
    """The warm-up chunk holds, for each size class of alphabets (the batched kernel's variant:
    ``spr.grid.size_class``), its smallest and its largest instance: every variant a chunk's
    per-alphabet sweeps take (a budget binds from some k on, within a class too)."""
    cfg = parse_config(GRID)
    ks = [3, 900, 10, 1500, 1100, 5000, 1300]
    rng = np.random.default_rng(0)
    pairs = tuple((rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))) for k in ks)
    inst = config_mod.Instances(
        spec=cfg.instances.spec, ids=tuple(f"i{j}" for j in range(len(ks))), ks=np.array(ks), pairs=pairs
    )
    task = chunks.warmup_task(dataclasses.replace(cfg, instances=inst))
    # class 0 (k <= 1024): 3 and 900, and 10: one pair at 4 eps takes the table path up to
    # k = 250 (4 k^2 <= 250,000), so 3 and 10 are the ends of the class's table-path alphabets
    # and 900 those of its batched ones; class 1: 1100 and 1500; class 2 (k > 4096): 5000
    assert task.ids == ("i0", "i1", "i2", "i3", "i4", "i5")
    assert [u.shape[0] for u, _ in task.pairs] == [3, 900, 10, 1500, 1100, 5000]
    assert task.eps == cfg.eps and task.budgets == cfg.budgets and task.divergences == cfg.divergences


#: a sweep of a built-in divergence solves its pairs by the table path when cells x k^2 (k: the
#: most reduced symbols of a pair) is at most this, and k <= 1024 (spr/grid.py), else by the
#: batched kernels; written out here to count by hand, apart from the library's predicate
TABLE_PATH_WORK, TABLE_PATH_MAX_K = 250_000, 1024


def sweep_config(k: int, eps, trials: int, per_chunk: int | None = None, **grid):
    """A Dirichlet sweep of ``trials`` instances of alphabet ``k`` (KL, no budget, RR baselines)."""
    cfg = {
        "instances": {"generator": "dirichlet", "k": k, "trials": trials, "alpha": 1.0, "seed": 0},
        "grid": {"eps": eps, "divergences": ["kl"], "max_outputs": [0], "baselines": ["binary", "rr"]},
    }
    cfg["grid"].update(grid)
    if per_chunk is not None:
        cfg["run"] = {"instances_per_chunk": per_chunk}
    return parse_config(cfg)


@pytest.mark.parametrize(
    "k, E, pairs",
    # 25 x 100^2 = 250,000 (26: 260,000); 250,000 // (101 x 10^2) = 24; 1 x 500^2 = 250,000
    # (501^2 = 251,001); 1024^2 > 250,000 already; above 1024 never
    [(100, 1, 25), (10, 101, 24), (500, 1, 1), (501, 1, 0), (1024, 1, 0), (1025, 1, 0), (1, 1, 250_000)],
)
def test_table_path_pairs_is_the_sweeps_threshold(k, E, pairs):
    assert spr_grid.table_path_pairs(k, E) == pairs
    for n in (pairs, pairs + 1):  # the sweep's own choice on either side of it
        if n:
            reds = [types.SimpleNamespace(k=k)] * n
            assert spr_grid._small(reds, E) == (n <= pairs) == (n * E * k * k <= TABLE_PATH_WORK)


@pytest.mark.parametrize(
    "args, name", [((0, 1), "k"), ((5, 0), "num_eps"), ((2.5, 1), "k"), ((5, True), "num_eps")]
)
def test_table_path_pairs_names_a_bad_argument(args, name):
    with pytest.raises((ValueError, TypeError), match=name):
        spr_grid.table_path_pairs(*args)


def task_pairs(task) -> list:
    if task.pairs is not None:
        return list(task.pairs)
    return [dirichlet_pair(task.spec, i) for i in range(task.start, task.stop)]


def paths_by_hand(task) -> set[tuple[int, str]]:
    """(reduced alphabet, path) of each ``ldpopt.sweep`` of a task: ``compute_chunk`` solves the
    pairs of one alphabet size together; counted by hand (cells x k^2), and checked against the
    library's predicate ``spr.grid.table_path_pairs``."""
    by_size: dict[int, list] = {}
    for u, v in task_pairs(task):
        by_size.setdefault(u.shape[0], []).append(likelihood_ratio_reduction(u, v).k)
    out = set()
    for reduced in by_size.values():
        k, n, E = max(reduced), len(reduced), len(task.eps)
        table = k <= TABLE_PATH_MAX_K and n * E * k * k <= TABLE_PATH_WORK
        assert table == (n <= spr_grid.table_path_pairs(k, E))
        out.add((k, "table" if table else "batched"))
    return out


def with_alphabets(cfg, ks: list[int]):
    """``cfg`` with one Dirichlet(1) instance of each alphabet size of ``ks``, in that order."""
    rng = np.random.default_rng(5)
    pairs = tuple((rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))) for k in ks)
    ids = tuple(f"i{j}" for j in range(len(ks)))
    inst = config_mod.Instances(spec=cfg.instances.spec, ids=ids, ks=np.array(ks), pairs=pairs)
    return dataclasses.replace(cfg, instances=inst)


FIG1B_EPS = {"start": 0.1, "stop": 10.1, "step": 0.1}


@pytest.mark.parametrize(
    "cfg, paths, warm_sizes",
    [
        # chunks of 30, 30, 30, 10: 30 x 1 x 100^2 = 300,000 cells x k^2 (batched), 10: 100,000
        # (table); the warm-up used to be one pair (10,000: table) and compiled no batched kernel.
        # Now 26 = 250,000 / 100^2 + 1 pairs, and an instance padded with a symbol of probability
        # 0 under both distributions (a size of its own in compute_chunk) for the table path
        (sweep_config(100, [1.0], 100, 30), {(100, "batched"), (100, "table")}, [100] * 26 + [101]),
        # chunks of 30 only: batched alone
        (sweep_config(100, [1.0], 90, 30), {(100, "batched")}, [100] * 26),
        # chunks of 10: 100,000 cells x k^2, all by the table path
        (sweep_config(100, [1.0], 100, 10), {(100, "table")}, [100]),
        # the Figure-1b grid (101 eps, chunks of 10 by the cost model): one pair is past the
        # threshold (1,010,000), as before
        (sweep_config(100, FIG1B_EPS, 100), {(100, "batched")}, [100]),
    ],
    ids=["both-paths", "batched", "table", "figure-1b"],
)
def test_warmup_task_takes_the_paths_of_the_chunks(cfg, paths, warm_sizes):
    """The warm-up solves each alphabet size by every path a chunk's sweep of it takes (the
    kernels differ: loaded from numba's cache by every worker, compiled by one), with as few
    pairs as that takes."""
    tasks = chunks.make_tasks(cfg, chunks.plan_chunks(cfg))
    assert set().union(*map(paths_by_hand, tasks)) == paths
    warm = chunks.warmup_task(cfg)
    assert paths_by_hand(warm) == paths
    assert [u.shape[0] for u, _ in warm.pairs] == warm_sizes
    assert warm.stop - warm.start == len(warm.pairs) == len(warm.ids)
    if len(set(warm_sizes)) == 2:  # the padded instance is the first one once reduced
        (u, v), (u0, v0) = warm.pairs[-1], dirichlet_pair(cfg.instances.spec, 0)
        padded, plain = likelihood_ratio_reduction(u, v), likelihood_ratio_reduction(u0, v0)
        assert np.array_equal(padded.p, plain.p) and np.array_equal(padded.q, plain.q)


@pytest.mark.parametrize(
    "cfg",
    [
        sweep_config(100, [1.0], 100, 30, max_outputs=[0, 5]),
        # at 2 eps: k = 60 and 200 batched (chunks of 40: 288,000 and 3,200,000 cells x k^2),
        # and a budget of 80 binds for 200 alone: two kernel variants, so both ends of the
        # batched alphabets are needed; 5 and 30 by the table path.  The old warm-up (5 and 200,
        # one pair each) took the table path alone
        with_alphabets(
            sweep_config(1, [0.5, 2.0], 1, 40, max_outputs=[80]),
            [60] * 40 + [200] * 40 + [5] * 40 + [30] * 40,
        ),
    ],
    ids=["k100", "mixed-alphabets"],
)
def test_warmup_task_runs_the_kernels_of_every_chunk(monkeypatch, cfg):
    """The sweeps of the warm-up and of the chunks as ``ldpopt.sweep`` dispatches them (recorded
    at its two paths, with the batched kernel's variant): the same kernels."""
    calls: set[tuple] = set()

    def recorded(path, func):
        def solve(reds, ls, grid, div, *args, **kwargs):
            ks = np.array([r.k for r in reds])
            parts = spr_grid.sweep_parts(ks, ls, grid, div) if path == "batched" else None
            calls.add((path, int(ks.max()), parts))
            return func(reds, ls, grid, div, *args, **kwargs)

        return solve

    monkeypatch.setattr(spr_grid, "_sweep_small", recorded("table", spr_grid._sweep_small))
    monkeypatch.setattr(spr_grid, "_sweep_fast", recorded("batched", spr_grid._sweep_fast))
    chunks.compute_chunk(chunks.warmup_task(cfg))
    warm = set(calls)
    calls.clear()
    for task in chunks.make_tasks(cfg, chunks.plan_chunks(cfg)):
        chunks.compute_chunk(task)
    assert calls == warm
    assert {path for path, _, _ in warm} == {"table", "batched"}


#: 60 instances of k = 100 at one eps in chunks of 26, 26 and 8: 260,000 cells x k^2 (batched)
#: and 80,000 (table path)
COLD_POOL_CONFIG = """
[instances]
generator = "dirichlet"
k = 100
trials = 60
seed = 0
[grid]
eps = [1.0]
divergences = ["kl"]
max_outputs = [0]
baselines = []
[run]
instances_per_chunk = 26
"""


def test_a_cold_process_pool_compiles_every_kernel_once(tmp_path):
    """``ldpopt sweep`` with 2 worker processes and an empty numba cache, on a sweep whose chunks
    take both paths: the warm-up compiles every kernel the chunks run (one worker, the other
    waiting), so no kernel is saved to the cache twice (the warm-up's one pair used to take the
    table path, and then every worker compiled the batched kernels itself)."""
    cfg = tmp_path / "cold.toml"
    cfg.write_text(COLD_POOL_CONFIG)
    parsed = config_mod.load_config(cfg)
    tasks = chunks.make_tasks(parsed, chunks.plan_chunks(parsed))
    assert [t.stop - t.start for t in tasks] == [26, 26, 8]
    assert set().union(*map(paths_by_hand, tasks)) == {(100, "batched"), (100, "table")}
    env = {key: val for key, val in os.environ.items() if key != "NUMBA_DISABLE_JIT"}
    env.update(NUMBA_CACHE_DIR=str(tmp_path / "numba"), NUMBA_DEBUG_CACHE="1")
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "ldpopt", "sweep", str(cfg), "--out", str(out), "--quiet"]
    res = subprocess.run(
        [*cmd, "--scheduler", "processes", "--workers", "2"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    saved = Counter(re.findall(r"data saved to '([^']+)'", res.stdout + res.stderr))
    assert saved, "the empty cache got no kernel: nothing was compiled, or numba's debug output changed"
    assert [path for path, n in saved.items() if n > 1] == []
    manifest = runner.read_manifest(out)
    assert manifest["status"] == "complete" and manifest["runs"][-1]["scheduler"] == "processes"
