"""read_channel and parse_channel_text accept only the documented kinds of input."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ldpopt.deploy.certify import parse_channel_text, read_channel


def test_an_int_is_not_opened_as_a_file_descriptor():
    r, w = os.pipe()
    os.write(w, b"0.5,0.5\n0.5,0.5\n")
    os.close(w)  # (a read of the descriptor would return at once, not hang)
    try:
        with pytest.raises(TypeError, match="source="):
            read_channel(r)
    finally:
        try:
            os.close(r)
        except OSError:
            pass  # closed by open() before the fix


@pytest.mark.parametrize("bad", [None, 3.5, ["0.5,0.5"]])
def test_other_sources_are_type_errors_naming_source(bad):
    with pytest.raises(TypeError, match="source"):
        read_channel(bad)


def test_parse_channel_text_of_a_number_is_a_type_error_naming_text():
    with pytest.raises(TypeError, match="text="):
        parse_channel_text(5)  # type: ignore[arg-type]


def test_paths_and_bytes_still_read(tmp_path):
    f = tmp_path / "m.csv"
    f.write_text("0.75,0.25\n0.25,0.75\n")
    for source in (str(f), Path(f)):
        assert read_channel(source).matrix.shape == (2, 2)
    assert read_channel(b"0.75,0.25\n0.25,0.75\n", filename="m.csv").matrix.shape == (2, 2)
