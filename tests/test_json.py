"""The one strict JSON reader: what Python's json accepts but no input file of ldpopt may contain."""

from __future__ import annotations

import pytest

from ldpopt._json import loads_strict


def test_plain_documents_parse_as_json():
    assert loads_strict('{"a": [1, 2.5, -3e-5, null, true, "x"]}', "f.json") == {
        "a": [1, 2.5, -3e-5, None, True, "x"]
    }
    assert loads_strict(str(10**300), "f.json") == 10**300  # large but within the float range
    assert loads_strict("[2e-400]", "f.json") == [0.0]  # underflow is a number, not an error


@pytest.mark.parametrize(
    "text, reason",
    [
        ('{"p": NaN}', "non-standard constant NaN"),
        ("[Infinity]", "non-standard constant Infinity"),
        ("[1, -Infinity]", "non-standard constant -Infinity"),
        ("[1e400]", "number literal 1e400 is beyond the float range"),
        ("[-1e999]", "number literal -1e999 is beyond the float range"),
        ("1" + "0" * 400, "integer literal of 401 digits is beyond the float range"),
        ("[-" + "9" * 5000 + "]", "integer literal of 5000 digits is beyond the float range"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ("{not json", "line 1, column 2: Expecting property name"),
        ("", "line 1, column 1: Expecting value"),
    ],
)
def test_refusals_are_one_line_value_errors_naming_the_document(text, reason):
    with pytest.raises(ValueError) as info:
        loads_strict(text, "dir/problem.json")
    message = str(info.value)
    assert message.startswith("dir/problem.json: not valid JSON (")
    assert reason in message
    assert "\n" not in message
