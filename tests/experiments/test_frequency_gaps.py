"""The frequency-gap experiment: its records are the gap tables, its summary their headline."""

from __future__ import annotations

from pathlib import Path

import pytest

from ldpopt.experiments.frequency import frequency_gaps, gap_table_markdown
from ldpopt.frequency import compare


def test_records_and_summary():
    calls = []
    exp = frequency_gaps((4, 8), (0.5, 1.0), progress=lambda: calls.append(1))
    assert len(calls) == 4
    for k in (4, 8):
        for e in (0.5, 1.0):
            table = compare(k, e)
            mine = [r for r in exp.records if r["k"] == k and r["eps"] == e]
            assert [r["ratio_uniform"] for r in mine] == [r.ratio_uniform for r in table.rows]
    summary = exp.summary()
    assert summary["references"] == ["optimum"]
    grr_at_1 = compare(8, 1.0).rows[0].ratio_uniform
    assert summary["k=8"]["grr"].startswith(f"{grr_at_1:.4g} at eps=1")
    assert summary["k=8"]["subset"] == "1 at eps=1, max 1"  # the better rounding is the optimum
    frame = exp.to_frame()
    assert len(frame) == len(exp.records)
    assert frame["ratio_uniform"].min() == pytest.approx(1.0, abs=1e-12)


def test_the_docs_gap_table_is_current():
    """docs/frequency.md's gap table is what gap_table_markdown prints today (regenerate it with
    python -c 'from ldpopt.experiments.frequency import gap_table_markdown; print(gap_table_markdown())')."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "frequency.md").read_text()
    start, end = "<!-- frequency gap table -->\n", "<!-- end frequency gap table -->"
    block = page[page.index(start) + len(start) : page.index(end)]
    assert block == gap_table_markdown()
