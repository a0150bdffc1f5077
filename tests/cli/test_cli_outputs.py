"""Where the CLI writes: ``--json -`` is strict JSON alone on stdout (the tables go to stderr), a
symbolic link stays a link, a FIFO is written through, nothing else is replaced.  Every check runs
the real command in a subprocess, inside a temporary directory."""

from __future__ import annotations

import json
import math
import os
import stat
import subprocess
import sys
import threading

import ldpopt

DESIGN = ["design", "--p0", "0.1,0.2,0.7", "--p1", "0.3,0.3,0.4", "--eps", "1"]


def run(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "ldpopt", *args], capture_output=True, text=True, timeout=120, cwd=cwd
    )


def _strict(text: str):
    """json.loads that refuses NaN and Infinity, as a strict JSON parser does."""

    def refuse(name):
        raise ValueError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


def test_design_json_dash_is_strict_json_alone_on_stdout(tmp_path):
    r = run(*DESIGN, "--json", "-", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    data = _strict(r.stdout)
    # the CLI's solver at this size: the readable program
    ref = ldpopt.optimal_mechanism([0.1, 0.2, 0.7], [0.3, 0.3, 0.4], 1.0, method="dp")
    assert data["value"] == ref.value  # the float written by json round-trips exactly
    assert r.stderr == ""  # no tables: the JSON is the answer
    assert not (tmp_path / "-").exists()
    loud = run(*DESIGN, "--json", "-", "--verbose", cwd=tmp_path)
    assert _strict(loud.stdout) == data and "Partition" in loud.stderr  # --verbose: tables on stderr


def test_infinite_values_are_written_as_strict_json(tmp_path):
    # eps = inf and a zero mass: infinite likelihood ratios and an infinite eps
    r = run("design", "--p0", "0.5,0.5,0", "--p1", "0,0.5,0.5", "--eps", "inf", "--json", "-")
    assert r.returncode == 0, r.stderr
    data = _strict(r.stdout)
    ref = ldpopt.optimal_mechanism([0.5, 0.5, 0], [0, 0.5, 0.5], math.inf)
    assert math.isinf(ref.value)  # disjoint supports: the optimal KL is infinite ...
    assert data["eps"] == "inf" and data["value"] is None  # ... written as null, not Infinity


def test_symlink_target_stays_a_link(tmp_path):
    real = tmp_path / "results" / "design.json"
    real.parent.mkdir()
    real.write_text("{}")
    link = tmp_path / "latest.json"
    link.symlink_to(real)
    r = run(*DESIGN, "--json", str(link))
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert "value" in _strict(real.read_text())


def test_fifo_target_is_written_through(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    r = run(*DESIGN, "--json", str(fifo))
    reader.join(timeout=60)
    assert r.returncode == 0, r.stderr
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert "value" in _strict(got[0])


def test_decide_json_dash(tmp_path):
    problem = tmp_path / "p.json"
    problem.write_text(
        json.dumps({"likelihood": [[0.2, 0.5], [0.3, 0.3], [0.5, 0.2]], "loss": [[0, 1], [1, 0]]})
    )
    r = run("decide", str(problem), "--eps", "1", "--json", "-")
    assert r.returncode == 0, r.stderr
    data = _strict(r.stdout)
    assert data and r.stderr == ""
    loud = run("decide", str(problem), "--eps", "1", "--json", "-", "--verbose")
    assert _strict(loud.stdout) == data and "Outputs" in loud.stderr


def test_eps_step_is_checked_before_any_work(tmp_path):
    for step in ("0", "nan", "1e-9", "-0.5", "11"):
        r = run("reproduce", "fig1", "--quick", "--eps-step", step, "--out", str(tmp_path / "o"))
        assert r.returncode == 2 and "--eps-step" in r.stderr, (step, r.stderr)
        assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_an_unexpected_failure_is_one_line_with_exit_status_1(tmp_path):
    """The entry point's safety net (a command that fails in an unforeseen way): one line, no
    traceback; LDPOPT_DEBUG=1 shows the traceback."""
    code = (
        "import ldpopt.cli as c\n"
        "@c.app.command('boom')\n"
        "def boom() -> None:\n"
        "    raise RuntimeError('unforeseen')\n"
        "c.main()\n"
    )
    r = subprocess.run([sys.executable, "-c", code, "boom"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "RuntimeError: unforeseen" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    env = {**os.environ, "LDPOPT_DEBUG": "1"}
    r = subprocess.run(
        [sys.executable, "-c", code, "boom"], capture_output=True, text=True, timeout=60, env=env
    )
    assert r.returncode != 0 and "Traceback" in r.stderr


def test_an_interrupted_command_says_so_in_one_line_with_exit_status_130():
    """A Ctrl-C that no command handles (typer turns it into a silent exit 130) is reported by the
    entry point: the line ``interrupted``, status 130."""
    code = (
        "import ldpopt.cli as c\n"
        "@c.app.command('stop')\n"
        "def stop() -> None:\n"
        "    raise KeyboardInterrupt\n"
        "c.main()\n"
    )
    r = subprocess.run([sys.executable, "-c", code, "stop"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 130
    assert r.stderr.strip() == "interrupted"
