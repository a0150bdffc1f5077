"""``ldpopt sweep`` / ``ldpopt sweep-report``: exit codes, messages, outputs; the report's statistics."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ldpopt.cli import app
from ldpopt.sweeps import runner
from ldpopt.sweeps.report import summarize

CONFIG = """
[instances]
generator = "dirichlet"
k = 6
trials = 5
alpha = 1.0
seed = 3
[grid]
eps = {start = 0.5, stop = 3.0, step = 0.5}
divergences = ["kl", "egamma:1.5"]
max_outputs = [0, 2]
baselines = ["binary", "rr"]
[run]
instances_per_chunk = 2
"""


@pytest.fixture
def cli():
    return CliRunner()


@pytest.fixture
def config(tmp_path):
    path = tmp_path / "small.toml"
    path.write_text(CONFIG)
    return path


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished sweep directory (run once for the report tests)."""
    d = tmp_path_factory.mktemp("finished")
    (d / "small.toml").write_text(CONFIG)
    runner.run_sweep(d / "small.toml", d / "out", scheduler="inline", quiet=True)
    return d / "out"


def test_help_lists_the_commands(cli):
    res = cli.invoke(app, ["--help"])
    assert res.exit_code == 0 and "sweep" in res.output and "sweep-report" in res.output
    res = cli.invoke(app, ["sweep", "--help"])
    assert res.exit_code == 0
    for opt in ("--out", "--scheduler", "--resume", "--quiet", "--workers", "dask-local", "tcp://HOST:PORT"):
        assert opt in res.output, opt


def test_sweep_runs_and_resumes(cli, config, tmp_path):
    out = tmp_path / "out"
    res = cli.invoke(app, ["sweep", str(config), "--out", str(out), "--scheduler", "inline"])
    assert res.exit_code == 0, res.output
    assert "sweep complete" in res.output and "3/3 done (3 this run, 0 failed)" in res.output
    assert "cells/s" in res.stderr  # the progress bar
    df = runner.load_results(out)
    assert len(df) == 5 * 6 * 2 * (2 + 2)
    res = cli.invoke(app, ["sweep", str(config), "--out", str(out), "--scheduler", "inline", "--resume"])
    assert res.exit_code == 0 and "3/3 done (0 this run, 0 failed)" in res.output
    pd.testing.assert_frame_equal(runner.load_results(out), df)


def test_quiet_logs_and_default_out(cli, config, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = cli.invoke(app, ["sweep", str(config), "--scheduler", "inline", "--quiet"])
    assert res.exit_code == 0, res.output
    assert "cells/s" not in res.stderr
    assert "INFO ldpopt.sweep: chunk 0 done" in res.stderr and "sweep complete" in res.stderr
    assert (tmp_path / "ldpopt-out" / "sweep-small" / "manifest.json").is_file()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--scheduler", "thread"], "unknown scheduler='thread'; use 'auto', 'threads'"),
        (["--scheduler", "tcp://127.0.0.1:notaport"], "tcp://HOST:PORT"),
    ],
)
def test_bad_scheduler_is_a_one_line_error(cli, config, tmp_path, args, message):
    res = cli.invoke(app, ["sweep", str(config), "--out", str(tmp_path / "o"), *args])
    assert res.exit_code == 2
    assert message in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "o" / "manifest.json").exists()


def test_bad_config_is_a_one_line_error(cli, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(CONFIG.replace("seed = 3", "sede = 3"))
    res = cli.invoke(app, ["sweep", str(bad), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2
    assert "unknown key 'sede' in [instances]" in res.stderr and "Traceback" not in res.stderr
    bad.write_text(CONFIG.replace('divergences = ["kl", "egamma:1.5"]', "divergences = []"))
    res = cli.invoke(app, ["sweep", str(bad), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "[grid] divergences must not be empty" in res.stderr
    res = cli.invoke(app, ["sweep", str(tmp_path / "missing.toml")])
    assert res.exit_code == 2 and "does not exist" in res.stderr


def test_failed_chunk_exit_code_and_message(cli, config, tmp_path, monkeypatch):
    monkeypatch.setenv(runner.FAULT_ENV, "raise:2")
    out = tmp_path / "o"
    res = cli.invoke(app, ["sweep", str(config), "--out", str(out), "--scheduler", "inline"])
    assert res.exit_code == 1
    assert "chunk 2 failed" in res.output and "injected failure in chunk 2" in res.output
    assert "rerun the same command" in res.output
    monkeypatch.delenv(runner.FAULT_ENV)
    res = cli.invoke(app, ["sweep", str(config), "--out", str(out), "--scheduler", "inline"])
    assert res.exit_code == 0 and "3/3 done (1 this run, 0 failed)" in res.output


def test_report_writes_summary_and_figures(cli, finished, tmp_path):
    rep = tmp_path / "rep"
    res = cli.invoke(app, ["sweep-report", str(finished), "--out", str(rep), "--resamples", "200"])
    assert res.exit_code == 0, res.output
    for name in (
        "summary.csv",
        "utility_vs_eps.png",
        "utility_vs_eps.svg",
        "outputs_vs_eps.png",
        "outputs_vs_eps.svg",
    ):
        assert (rep / name).stat().st_size > 0, name
    assert (rep / "utility_vs_eps.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"<svg" in (rep / "outputs_vs_eps.svg").read_bytes()[:2000]
    # the float parser that gives back each repr exactly: pandas 3's default, "round_trip" before
    # (pandas 2 defaults to "high"; pandas 3 deprecates the argument)
    exact = {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}
    summary = pd.read_csv(rep / "summary.csv", **exact)
    # means are plain means over the instances (checked with a pandas groupby)
    df = runner.load_results(finished)
    direct = df.groupby(["divergence", "budget", "mechanism", "eps"])["normalized_utility"].mean()
    got = summary.set_index(["divergence", "budget", "mechanism", "eps"])["mean_normalized"]
    assert len(got) == len(direct) == 2 * 6 * 4
    # two means of the same n values (the report's and pandas'): each within (n + 1) u max |x|
    n = int(df.groupby(["divergence", "budget", "mechanism", "eps"]).size().max())
    amax = float(df["normalized_utility"].abs().max())
    rnd = 2 * (n + 4) * 2.0**-53 * amax
    assert np.all(np.abs(got.reindex(direct.index).to_numpy() - direct.to_numpy()) <= rnd)
    # percentile bands of resampled means contain the mean (for these data) up to the two ways of
    # computing means (rnd); percentiles are 1-Lipschitz
    assert (
        (summary.lo <= summary.mean_normalized + rnd) & (summary.mean_normalized <= summary.hi + rnd)
    ).all()
    opt = summary[summary.mechanism == "optimal"]
    assert (opt.mean_num_outputs >= 1).all() and (opt[opt.budget == 2].mean_num_outputs <= 2).all()
    # the Python API gives the same summary (same seed, same resample indices)
    api = runner.summarize_sweep(finished, resamples=200)
    # the same function on the same results; the CSV holds each float's repr (exact round trip)
    np.testing.assert_array_equal(
        api[["mean_normalized", "lo", "hi"]].to_numpy(),
        summary[["mean_normalized", "lo", "hi"]].to_numpy(),
    )


def test_report_default_dir_and_errors(cli, finished, tmp_path):
    res = cli.invoke(app, ["sweep-report", str(finished), "--resamples", "0", "--format", "png"])
    assert res.exit_code == 0, res.output
    assert (finished / "report" / "utility_vs_eps.png").is_file()
    assert not (finished / "report" / "utility_vs_eps.svg").exists()
    res = cli.invoke(app, ["sweep-report", str(tmp_path)])
    assert res.exit_code == 2 and "is not a sweep directory" in res.stderr
    res = cli.invoke(app, ["sweep-report", str(finished), "--format", "gif"])
    assert res.exit_code == 2 and "--format must list png, svg or pdf" in res.stderr


# ---------------------------------------------------------------------------------------------
# In subprocesses: the real command, a script without the main guard
# ---------------------------------------------------------------------------------------------
def ldpopt_cli(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ldpopt", *args], capture_output=True, text=True, timeout=300, cwd=cwd
    )


def strict_json(text: str):
    """JSON as the standard defines it (no NaN / Infinity)."""

    def refuse(name):
        raise AssertionError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture(scope="module")
def partial(tmp_path_factory):
    """A sweep directory whose chunk 1 failed: 2 of 3 chunks finished."""
    d = tmp_path_factory.mktemp("partial")
    (d / "small.toml").write_text(CONFIG)
    os.environ[runner.FAULT_ENV] = "raise:1"
    try:
        with pytest.warns(runner.LdpoptWarning, match="1 of 3 chunks failed"):
            runner.run_sweep(d / "small.toml", d / "out", scheduler="inline", quiet=True)
    finally:
        del os.environ[runner.FAULT_ENV]
    return d / "out"


def test_report_of_a_partial_store_says_so_and_writes_strict_json(partial, tmp_path):
    rep = tmp_path / "rep"
    res = ldpopt_cli("sweep-report", str(partial), "--out", str(rep), "--resamples", "50", "--json", "-")
    assert res.returncode == 0, res.stderr
    data = strict_json(res.stdout)  # stdout holds the JSON document alone
    manifest = runner.read_manifest(partial)
    # 5 instances in chunks of 2: chunk 1 (instances 2, 3) failed
    cells = manifest["cells"]
    assert cells == {"done": 3 * 6 * 2 * 2, "total": 5 * 6 * 2 * 2}
    assert data["format"] == "ldpopt-sweep-report/1" and data["partial"] is True
    assert data["cells"] == cells and data["chunks"] == {"done": 2, "total": 3}
    assert data["status"] == "failed"
    assert data["instances"] == {"family": "Dirichlet(1)", "k_min": 6, "k_max": 6, "done": 3, "total": 5}
    assert data["bootstrap"] == {"resamples": 50, "seed": 0, "level": 0.95}
    # the summary rows are summary.csv's, one per (divergence, budget, mechanism, eps)
    assert len(data["summary"]) == 2 * 6 * 4
    assert set(data["summary"][0]) == set(runner.summarize_sweep(partial, resamples=0).columns)
    assert all(r["n"] == 3 for r in data["summary"])
    assert sorted(data["files"]) == sorted(str(p) for p in rep.iterdir())
    # the partial store is announced (on stderr: stdout is the JSON)
    assert f"partial store: {cells['done']:,} of {cells['total']:,} cells (2 of 3 chunks" in res.stderr
    # k, n and the instance family in the figures' title (drawn, and in the PNG's metadata)
    title = f"Dirichlet(1), k = 6, n = 3 instances (partial: {cells['done']:,} of {cells['total']:,} cells)"
    assert title.encode() in (rep / "utility_vs_eps.png").read_bytes()
    assert title.encode() in (rep / "outputs_vs_eps.png").read_bytes()


def test_report_to_a_json_file_and_complete_store(finished, tmp_path):
    out_json = tmp_path / "report.json"
    res = ldpopt_cli(
        "sweep-report", str(finished), "--out", str(tmp_path / "r"), "--resamples", "0", "--format", "png",
        "--json", str(out_json),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    flat = " ".join(res.stdout.split())  # long paths may be wrapped on a pipe
    assert "partial store" not in flat and f"wrote {out_json}".replace(" ", "") in flat.replace(" ", "")
    assert "Dirichlet(1), k = 6, n = 5 instances" in flat
    data = strict_json(out_json.read_text())
    assert data["partial"] is False and data["status"] == "complete"
    # resamples = 0: no bands, written as null (never NaN)
    assert all(r["lo"] is None and r["hi"] is None for r in data["summary"])


def test_report_out_an_existing_file_is_a_one_line_error(finished, tmp_path):
    target = tmp_path / "taken"
    target.write_text("keep me")
    for out in (target, target / "sub"):
        res = ldpopt_cli("sweep-report", str(finished), "--out", str(out), "--resamples", "0")
        assert res.returncode == 2, res.stderr
        lines = [x for x in res.stderr.splitlines() if x.strip()]
        assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
        assert lines[0].startswith("error:") and "exists and is not a directory" in lines[0]
    assert target.read_text() == "keep me"


UNGUARDED = """
import ldpopt
ldpopt.run_sweep({config!r}, {out!r}, scheduler="processes", quiet=True)
"""


def test_unguarded_script_fails_at_once_saying_what_to_add(tmp_path):
    cfg = {
        "instances": {"generator": "dirichlet", "k": 4, "trials": 4, "seed": 0},
        "grid": {"eps": [1.0], "divergences": ["kl"]},
    }
    script = tmp_path / "study.py"
    script.write_text(textwrap.dedent(UNGUARDED.format(config=cfg, out=str(tmp_path / "out"))))
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 1
    assert "BrokenProcessPool" not in res.stderr and "bootstrapping phase" not in res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("ldpopt.errors.SchedulerError: ") and f"{script}, line 3" in last, last
    assert "Put the call under 'if __name__ == \"__main__\":'" in last
    assert not (tmp_path / "out").exists()  # nothing started
    # the guarded script runs (with a pool of 2 workers)
    script.write_text(
        "import ldpopt\nif __name__ == '__main__':\n"
        f"    df = ldpopt.run_sweep({cfg!r}, {str(tmp_path / 'out')!r}, scheduler='processes', workers=2,"
        " quiet=True)\n"
        "    print(len(df))\n"
    )
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0 and res.stdout.split() == ["4"], res.stderr


# ---------------------------------------------------------------------------------------------
# The bootstrap of the report against a plain loop
# ---------------------------------------------------------------------------------------------
def _synthetic(T=7, seed=1):
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(T):
        base = rng.uniform(0.1, 1.0)
        for eps in (0.5, 1.0):
            for mech, scale in (("optimal", 1.0), ("binary", 0.7), ("rr", 0.7)):
                v = base * scale * eps
                rows.append(
                    dict(
                        instance=str(t),
                        instance_index=t,
                        k=4,
                        eps=eps,
                        divergence="kl",
                        budget=0,
                        mechanism=mech,
                        value=v,
                        normalized_utility=v / 2.0,
                        num_outputs=2 + t % 2,
                        partition=None,
                        solve_time=0.0,
                    )
                )
    return pd.DataFrame(rows)


def test_bootstrap_bands_match_a_plain_loop_with_shared_indices():
    df = _synthetic()
    s = summarize(df, resamples=300, seed=4).set_index(["mechanism", "eps"])
    rng = np.random.default_rng(4)
    idx = rng.integers(0, 7, size=(300, 7))
    for (mech, eps), row in s.iterrows():
        x = (
            df[(df.mechanism == mech) & (df.eps == eps)]
            .sort_values("instance_index")
            .normalized_utility.to_numpy()
        )
        means = np.array([x[i].mean() for i in idx])
        lo, hi = np.percentile(means, [2.5, 97.5])
        # the same resamples, means by a loop and by the library (7 terms each: (7 + 4) u max |x|);
        # percentiles are 1-Lipschitz in the samples
        rnd = 2 * (7 + 4) * 2.0**-53 * float(np.max(np.abs(x)))
        assert abs(row.lo - lo) <= rnd and abs(row.hi - hi) <= rnd
        assert abs(row.mean_normalized - x.mean()) <= rnd and row.n == 7
    # identical per-instance values give identical bands: the resample indices are shared
    assert s.loc[("binary", 0.5), "lo"] == s.loc[("rr", 0.5), "lo"]


def test_summary_skips_undefined_normalisations():
    df = _synthetic()
    df.loc[df.instance_index == 0, "normalized_utility"] = np.nan  # D_f(P0||P1) = 0 for instance 0
    s = summarize(df, resamples=0)
    assert (s.n == 6).all() and (s.skipped == 1).all() and s.lo.isna().all()
    with pytest.raises(ValueError, match="level must be a float in"):
        summarize(df, level=95)
    with pytest.raises(ValueError, match="resamples must be >= 1|resamples must be a positive integer"):
        summarize(df, resamples=-3)
