"""The atomic-write helper never replaces what is not a regular file, follows links, and takes
``-`` as standard output (all in a temporary directory, never on system paths)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading

import pytest

from ldpopt._atomic import atomic_write, atomic_write_text


def test_regular_file_is_replaced_atomically_with_normal_mode(tmp_path):
    target = tmp_path / "out.json"
    target.write_text("old")
    atomic_write_text(target, "new")
    assert target.read_text() == "new"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]  # no temporary file left


def test_symlink_to_a_regular_file_stays_a_link_and_its_target_is_updated(tmp_path):
    real = tmp_path / "real" / "data.json"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    atomic_write_text(link, "new")
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text() == "new" and link.read_text() == "new"


def test_dangling_symlink_creates_its_target(tmp_path):
    real = tmp_path / "made.json"
    link = tmp_path / "link.json"
    link.symlink_to(real)
    atomic_write_text(link, "x")
    assert link.is_symlink() and real.read_text() == "x"


def test_fifo_is_written_through_not_replaced(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    atomic_write_text(fifo, "payload")
    reader.join(timeout=10)
    assert got == ["payload"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_symlink_to_a_fifo_is_written_through(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    link = tmp_path / "stdout-like"
    link.symlink_to(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    atomic_write_text(link, "through the link")
    reader.join(timeout=10)
    assert got == ["through the link"]
    assert link.is_symlink() and stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_character_device_is_written_through(tmp_path):
    link = tmp_path / "null"
    link.symlink_to(os.devnull)  # a link in our temp dir to the null device, never the device path itself
    atomic_write_text(link, "discarded")
    assert link.is_symlink() and stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_dash_is_standard_output():
    code = "from ldpopt._atomic import atomic_write_text; atomic_write_text('-', 'to stdout')"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "to stdout"


def test_binary_dash_is_standard_output():
    code = "from ldpopt._atomic import atomic_write; atomic_write('-', lambda fh: fh.write(b'\\x00\\x01'))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert r.returncode == 0 and r.stdout == b"\x00\x01"


def test_directory_is_refused_and_failure_leaves_nothing(tmp_path):
    with pytest.raises(IsADirectoryError):
        atomic_write_text(tmp_path, "x")
    target = tmp_path / "f.txt"
    target.write_text("kept")

    def boom(fh):
        fh.write("partial")
        raise RuntimeError("writer failed")

    with pytest.raises(RuntimeError):
        atomic_write(target, boom, binary=False)
    assert target.read_text() == "kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.txt"]
