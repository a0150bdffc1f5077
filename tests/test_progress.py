"""ldpopt._progress: one progress bar, drawn on a terminal, quiet when piped or disabled."""

from __future__ import annotations

import pytest

from ldpopt._progress import ProgressBar


@pytest.fixture
def piped(monkeypatch):
    """stderr is not a terminal (pytest's capture), whatever the environment says."""
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    monkeypatch.setenv("TTY_INTERACTIVE", "0")


def test_disabled_bar_counts_and_prints_nothing(capsys, piped):
    with ProgressBar(10, "work", enabled=False, unit="cells") as bar:
        bar.advance(4)
        bar.advance()
        bar.print("a message", prefix="failed:")
    assert bar.done == 5
    assert capsys.readouterr() == ("", "")


def test_piped_transient_bar_is_silent(capsys, piped):
    with ProgressBar(3, "work") as bar:
        for _ in range(3):
            bar.advance()
    assert capsys.readouterr() == ("", "")


def test_piped_kept_bar_writes_its_final_state_once(capsys, piped):
    with ProgressBar(8, "sweep", completed=2, unit="cells", transient=False) as bar:
        bar.advance(6)
    out, err = capsys.readouterr()
    assert out == ""  # progress never goes to stdout
    assert err.count("sweep") == 1 and "8/8" in err and "cells/s" in err and "done" in err


def test_messages_are_plain_text_above_the_bar(capsys, piped):
    with ProgressBar(2, "sweep", transient=False) as bar:
        bar.print("chunk 1: bad [value]", prefix="chunk failed:")
        bar.advance(2)
    err = capsys.readouterr().err
    assert "chunk failed: chunk 1: bad [value]" in err  # brackets are not read as markup


def test_delayed_bar_stays_hidden_for_short_work(capsys, piped):
    bar = ProgressBar(5, "work", delay=3600.0, transient=False)
    with bar:
        bar.advance(5)
    assert capsys.readouterr().err == ""


def test_delayed_bar_appears_once_due(capsys, piped):
    bar = ProgressBar(5, "work", delay=0.0, transient=False)
    bar.advance(1)  # shown at the first advance when used without `with`
    bar.advance(4)
    bar.close()
    bar.close()  # idempotent
    assert capsys.readouterr().err.count("5/5") == 1


def test_terminal_bar_draws_in_place(capsys, monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")  # rich treats stderr as a terminal
    monkeypatch.setenv("TERM", "xterm-256color")  # (not a dumb one)
    with ProgressBar(4, "work", unit="items") as bar:
        bar.advance(4)
    err = capsys.readouterr().err
    assert "work" in err and "items/s" in err and "\x1b[" in err  # drawn with control sequences
