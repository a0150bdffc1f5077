"""The ``threads`` scheduler and ``auto``: the same store as a process pool, every thread busy,
Ctrl-C / SIGTERM and resume, and the choice ``auto`` makes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from ldpopt.sweeps import runner
from ldpopt.sweeps.config import parse_config
from ldpopt.sweeps.store import chunk_files

#: 6 instances in 3 chunks, every divergence family the kernels have, budgets and baselines
GRID = {
    "instances": {"generator": "dirichlet", "k": 7, "trials": 6, "alpha": 0.7, "seed": 11},
    "grid": {
        "eps": [0.25, 1.0, 2.5, 6.0],
        "divergences": ["kl", "tv", "renyi:2", "egamma:1.5", "chernoff"],
        "max_outputs": [0, 2],
        "baselines": ["binary", "rr"],
    },
    "run": {"instances_per_chunk": 2},
}

#: 8 chunks of one instance: long enough (slowed by the fault hook) to be interrupted midway
SIGNAL_CONFIG = """
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


def assert_same_store(a, b) -> None:
    """Both stores hold the same rows, bit for bit (``solve_time`` aside: it is measured)."""
    da = runner.load_results(a).drop(columns="solve_time")
    db = runner.load_results(b).drop(columns="solve_time")
    pd.testing.assert_frame_equal(da, db, check_exact=True)
    for col in ("value", "normalized_utility", "eps"):  # -0.0 vs 0.0 and NaN payloads too
        assert da[col].to_numpy().tobytes() == db[col].to_numpy().tobytes(), col


@pytest.mark.numerics
def test_threads_store_equals_the_process_pool_store(tmp_path, monkeypatch):
    runner.run_sweep(GRID, tmp_path / "processes", scheduler="processes", workers=2, quiet=True)
    # every chunk sleeps a little so that both threads surely take chunks
    monkeypatch.setenv(runner.FAULT_ENV, "sleep:0.2")
    runner.run_sweep(GRID, tmp_path / "threads", scheduler="threads", workers=2, quiet=True)
    assert_same_store(tmp_path / "threads", tmp_path / "processes")
    run = runner.read_manifest(tmp_path / "threads")["runs"][-1]
    assert (run["scheduler"], run["workers"], run["chunks_computed"]) == ("threads", 2, 3)
    assert sorted(run["chunks_per_worker"]) == [1, 2]  # both threads computed chunks
    assert run["solve_seconds"] > 0 and run["wall_seconds"] > 0


def test_auto_takes_threads_unless_a_pool_is_expected_to_finish_first(tmp_path):
    small = parse_config(GRID)
    assert runner._auto_scheduler(small, 2) == "threads"
    # W seconds of work: threads take about GIL_SHARE * W, a pool WORKER_START_S + W / n
    big = parse_config(
        {
            "instances": {"generator": "dirichlet", "k": 1000, "trials": 2000},
            "grid": {"eps": {"start": 0.1, "stop": 10.0, "step": 0.1}, "divergences": ["kl"]},
        }
    )
    work = runner.estimated_work(big)
    assert (runner.GIL_SHARE - 1 / 2) * work > runner.WORKER_START_S
    assert runner._auto_scheduler(big, 2) == "processes"
    assert runner._auto_scheduler(big, 1) == "threads"  # one core: nothing to gain from a pool
    # the default scheduler is auto: a small sweep runs in threads of this process
    runner.run_sweep(GRID, tmp_path, quiet=True)
    assert runner.read_manifest(tmp_path)["runs"][-1]["scheduler"] == "threads"


def start(cfg, out, fault: str | None = "sleep:0.4") -> subprocess.Popen:
    """``ldpopt sweep --scheduler threads --workers 2`` in its own session, slowed chunks."""
    env = dict(os.environ)
    if fault:
        env[runner.FAULT_ENV] = fault
    cmd = [sys.executable, "-m", "ldpopt", "sweep", str(cfg), "--out", str(out), "--quiet"]
    cmd += ["--scheduler", "threads", "--workers", "2"]
    return subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_interrupt_keeps_chunks_and_the_same_command_resumes(tmp_path, sig):
    cfg = tmp_path / "sig.toml"
    cfg.write_text(SIGNAL_CONFIG)
    out = tmp_path / "out"
    proc = start(cfg, out)
    try:
        deadline = time.monotonic() + 240  # generous: a cold numba cache compiles first
        while len(chunk_files(out)) < 2:
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.02)
        os.kill(proc.pid, sig)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
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
    assert manifest["chunks"]["done"] == done and manifest["runs"][-1]["scheduler"] == "threads"
    assert not list(out.rglob("*.tmp"))
    # the same command computes exactly the missing chunks; the dataset is the uninterrupted one
    resumed = start(cfg, out, fault=None)
    stdout, stderr = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, stderr
    assert f"8/8 done ({8 - done} this run, 0 failed)" in stdout
    assert runner.read_manifest(out)["status"] == "complete"
    runner.run_sweep(cfg, tmp_path / "fresh", scheduler="inline", quiet=True)
    assert_same_store(out, tmp_path / "fresh")
