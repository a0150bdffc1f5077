"""``ldpopt warmup``'s bad input: a one-line error in the command's words (its options, not the
API's argument names), exit 2, no traceback; run as the real command in a subprocess."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    ("args", "words", "not_words"),
    [
        (["--path", "fast"], ["--path must be", "'fast'"], ["paths"]),
        (["--divergence", "bogus"], ["bogus"], []),
        (["--divergence", "kl", "--path", "small", "--path", "nope"], ["--path", "nope"], ["paths must"]),
    ],
)
def test_warmup_names_its_own_option(args, words, not_words):
    r = subprocess.run(
        [sys.executable, "-m", "ldpopt", "warmup", *args], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), r.stderr
    for w in words:
        assert w in lines[0], lines[0]
    for w in not_words:
        assert w not in lines[0], lines[0]
