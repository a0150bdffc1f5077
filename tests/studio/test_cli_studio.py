"""``ldpopt studio`` in a subprocess: it serves the page on the port asked for, stops on Ctrl-C, refuses
a bad port in one line, and names the ``studio`` extra when the web stack is missing."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

import ldpopt

#: the server answers within this many seconds of starting (the imports take about one)
START_TIMEOUT = 60.0


def _env() -> dict:
    src = str(Path(ldpopt.__file__).resolve().parents[1])
    return dict(os.environ, PYTHONPATH=os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]))


def _free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("host, in_url", [("127.0.0.1", "127.0.0.1"), ("::1", "[::1]")], ids=["IPv4", "IPv6"])
def test_studio_command_serves_and_stops_on_ctrl_c(tmp_path, host, in_url):
    port = _free_port(host)
    proc = subprocess.Popen(
        [sys.executable, "-m", "ldpopt", "studio", "--port", str(port), "--host", host],
        cwd=tmp_path,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            assert proc.poll() is None, proc.communicate()
            try:
                with urllib.request.urlopen(f"http://{in_url}:{port}/api/options", timeout=5) as resp:
                    options = json.loads(resp.read())
                break
            except OSError:
                assert time.monotonic() < deadline, "ldpopt studio did not start"
                time.sleep(0.1)
        assert options["version"] == ldpopt.__version__
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert f"http://{in_url}:{port}/" in out
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # nothing written in the working directory


def test_bad_port_is_one_line():
    res = subprocess.run(
        [sys.executable, "-m", "ldpopt", "studio", "--port", "70000"],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
    )
    assert res.returncode == 2
    assert res.stderr.strip() == "error: --port must be between 1 and 65535, got 70000"


def test_missing_web_stack_names_the_extra(tmp_path):
    # hide starlette as if it were not installed, then run the console script
    code = "import sys; sys.modules['starlette'] = None; sys.argv = ['ldpopt', 'studio']\n"
    code += "from ldpopt.cli import main; main()"
    res = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=120, cwd=tmp_path
    )
    assert res.returncode == 2, res.stderr
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and 'pip install "ldpopt[studio]"' in lines[0], res.stderr
