"""A missing optional dependency is a one-line CLI error naming the extra that installs it.

Each case runs the command in a fresh interpreter where the module is hidden
(``sys.modules[name] = None`` makes ``import name`` fail as if it were not installed), since a
module already imported by the test process cannot be uninstalled.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import ldpopt
from ldpopt.sweeps import runner

CONFIG = """
[instances]
generator = "dirichlet"
k = 4
trials = 2
seed = 1
[grid]
eps = [0.5, 2.0]
divergences = ["kl"]
baselines = ["binary"]
"""

#: hide ``missing`` from the imports, then run ``ldpopt ARGV`` as the console script does
SCRIPT = textwrap.dedent(
    """
    import sys
    for name in {missing!r}:
        sys.modules[name] = None
    sys.argv = ["ldpopt", *{argv!r}]
    from ldpopt.cli import main
    main()
    """
)


def run_without(missing: list[str], argv: list[str], cwd) -> subprocess.CompletedProcess:
    code = SCRIPT.format(missing=missing, argv=argv)
    # the ldpopt under test, whatever the working directory
    src = str(Path(ldpopt.__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]))
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=cwd, env=env
    )


def assert_names_the_extra(res: subprocess.CompletedProcess, module: str, extra: str) -> None:
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr, res.stderr
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, res.stderr  # one line, whatever the terminal width
    assert lines[0].startswith("error:") and f"optional dependency '{module}'" in lines[0], lines[0]
    assert f'pip install "ldpopt[{extra}]"' in lines[0], lines[0]


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished sweep directory and its configuration."""
    d = tmp_path_factory.mktemp("extras")
    (d / "small.toml").write_text(CONFIG)
    runner.run_sweep(d / "small.toml", d / "out", scheduler="inline", quiet=True)
    return d


def test_sweep_without_pyarrow(finished, tmp_path):
    res = run_without(
        ["pyarrow"], ["sweep", str(finished / "small.toml"), "--out", "o", "--scheduler", "inline"], tmp_path
    )
    assert_names_the_extra(res, "pyarrow", "sweeps")
    assert not (tmp_path / "o").exists()  # nothing started


def test_sweep_of_a_csv_instance_file_without_pandas(tmp_path):
    """A CSV instance file is read by ldpopt.read_pair's reader (the standard library's csv)."""
    (tmp_path / "pairs.csv").write_text("instance,p0,p1\na,0.5,0.2\na,0.5,0.8\n")
    (tmp_path / "file.toml").write_text(
        '[instances]\nfile = "pairs.csv"\n[grid]\neps = [1.0]\ndivergences = ["kl"]\n'
    )
    res = run_without(["pandas"], ["sweep", "file.toml", "--out", "o", "--scheduler", "inline"], tmp_path)
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("module, extra", [("pandas", "sweeps"), ("matplotlib", "plots")])
def test_sweep_report_without_an_extra(finished, tmp_path, module, extra):
    res = run_without(
        [module], ["sweep-report", str(finished / "out"), "--out", str(tmp_path / "r")], tmp_path
    )
    assert_names_the_extra(res, module, extra)
    assert not (tmp_path / "r").exists()  # failed before writing anything


@pytest.mark.parametrize("module, extra", [("matplotlib", "plots"), ("pandas", "sweeps")])
def test_reproduce_without_an_extra(tmp_path, module, extra):
    res = run_without([module], ["reproduce", "fig3", "--quick", "--out", str(tmp_path / "f")], tmp_path)
    assert_names_the_extra(res, module, extra)
    assert "ldpopt reproduce needs" in res.stderr
    assert not (tmp_path / "f").exists()  # failed before any work


def test_the_deployment_walkthrough_needs_neither_pandas_nor_pyarrow(tmp_path):
    """export, privatize, test and estimate read and write CSV with the standard library: the
    core install runs them; only a Parquet file asks for its extra."""
    (tmp_path / "in.csv").write_text("user,x\nu1,a\nu2,c\nu3,c\nu4,b\n")
    hidden = ["pandas", "pyarrow"]
    steps = [
        [
            "export",
            "--p0",
            "a=0.5,b=0.3,c=0.2",
            "--p1",
            "a=0.1,b=0.3,c=0.6",
            "--eps",
            "1",
            "--output",
            "m.json",
        ],
        ["privatize", "--mechanism", "m.json", "--input", "in.csv", "--column", "x", "--output", "out.csv"],
        ["test", "--mechanism", "m.json", "--reports", "out.csv"],
        ["estimate", "--mechanism", "m.json", "--reports", "out.csv", "--json", "e.json"],
    ]
    for argv in steps:
        res = run_without(hidden, argv, tmp_path)
        assert res.returncode == 0, (argv, res.stderr)
    rows = (tmp_path / "out.csv").read_text().splitlines()
    assert rows[0] == "user,report,report_block" and [r.split(",")[0] for r in rows[1:]] == [
        "u1",
        "u2",
        "u3",
        "u4",
    ]
    argv = [
        "privatize",
        "--mechanism",
        "m.json",
        "--input",
        "in.csv",
        "--column",
        "x",
        "--output",
        "o.parquet",
    ]
    res = run_without(hidden, argv, tmp_path)
    assert_names_the_extra(res, "pyarrow", "sweeps")
    assert not (tmp_path / "o.parquet").exists()
