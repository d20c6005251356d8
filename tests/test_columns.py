"""render/columns.FitTable: the layout of every table at any width (issue 17)."""

from __future__ import annotations

import pytest

from oracle.render.columns import KEEP, Column, FitTable, Section
from oracle.render.predict import render_text

COLUMNS = (
    Column("name", "name"),
    Column("time", "time", "right"),
    Column("big", "a long header", "right", priority=2),
    Column("bytes", "bytes", "right", priority=5),
)
ROWS = [
    {"name": "data", "time": "12.345 min", "big": "123,456,789", "bytes": "16.5 GB", "note": "fits in memory"},
    {"name": "data+spatial", "time": "1.5 s", "big": "1", "bytes": "2 kB",
     "note": "exceeds the 64 filters of conv1; try a smaller p2 or another strategy"},
]


def render(width: int, **kw) -> str:
    table = FitTable(COLUMNS, [Section([dict(r) for r in ROWS])], notes=Column("note", "notes"), **kw)
    return render_text(table, width=width)


@pytest.mark.parametrize("width", [60, 70, 80, 100, 140])
def test_lines_fit_and_cells_are_whole(width):
    text = render(width)
    assert max(len(line) for line in text.splitlines()) <= width
    assert "…" not in text and all(line == line.rstrip() for line in text.splitlines())
    flat = " ".join(text.split())
    for cell in ("12.345 min", "data+spatial", "exceeds the 64 filters of conv1; try a smaller p2 or another strategy"):
        assert cell in flat, cell


def test_lowest_priority_goes_first_and_the_caption_says_so():
    wide, middle, narrow = render(140), render(70), render(60)
    assert "a long header" in wide and "too narrow" not in wide
    assert "123,456,789" not in middle and "16.5 GB" in middle  # priority 2 dropped before bytes (5)
    assert "(too narrow for: a long header; --width or --format json shows them)" in " ".join(middle.split())
    assert "(too narrow for: a long header, bytes;" in " ".join(narrow.split())
    assert "name" in narrow and "time" in narrow  # never dropped


def test_notes_too_narrow_for_a_column_stack_under_the_table():
    assert "notes under the table" not in render(60)  # 24 characters left for them
    text = render(50)
    assert "notes under the table" in text
    assert "name data+spatial: exceeds the 64 filters" in " ".join(text.split())


def test_columns_that_cannot_be_dropped_and_do_not_fit_become_records():
    cols = tuple(Column(k, k) for k in ("a", "b", "c"))
    row = {"a": "x" * 30, "b": "y" * 30, "c": "z" * 30}
    assert all(c.priority == KEEP for c in cols)
    text = render_text(FitTable(cols, [Section([row])]), width=60)
    assert max(len(line) for line in text.splitlines()) <= 60
    assert "x" * 30 in text and "y" * 30 in text and "z" * 30 in text and "…" not in text


def test_cells_are_text_not_markup():
    row = {"name": "[bold]x[/]", "time": "1 s", "big": "1", "bytes": "1 B", "note": "[/] unbalanced"}
    text = render_text(FitTable(COLUMNS, [Section([row])], notes=Column("note", "notes")), width=140)
    assert "[bold]x[/]" in text and "[/] unbalanced" in text
