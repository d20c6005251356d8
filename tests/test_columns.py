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


# -- issue 23: a row's identity


def test_the_layout_never_drops_an_identity_column():
    """Whatever the priorities, the width and the notes, the identity columns are kept
    (or, where nothing fits, every row is a paragraph that starts with them)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    cell = st.text(alphabet="abcx0123456789.", min_size=1, max_size=14)

    @settings(max_examples=150, deadline=None)
    @given(
        spec=st.lists(st.tuples(st.integers(0, 9), st.booleans()), min_size=1, max_size=7),
        rows=st.lists(st.lists(cell, min_size=7, max_size=7), min_size=1, max_size=5),
        note=st.text(alphabet="ab ", max_size=60),
        width=st.integers(30, 140),
    )
    def check(spec, rows, note, width):
        cols = tuple(Column(f"c{i}", f"h{i}", priority=p, identity=ident) for i, (p, ident) in enumerate(spec))
        data = [{**{f"c{i}": f"r{n}v{r[i]}" for i in range(len(spec))}, "n": note} for n, r in enumerate(rows)]
        t = FitTable(cols, [Section(data)], notes=Column("n", "notes"))
        keep, _, _ = t.layout(width - 1)
        assert all(c in keep for c in cols if c.identity)
        text = render_text(t, width=width)
        flat = " ".join(text.split())
        for row in data:
            for c in cols:
                if c.identity:
                    assert row[c.key] in flat

    check()


def test_notes_under_the_table_are_named_by_the_row_identity():
    """Stacked notes say which row they belong to: with the GPU count shown once per group,
    a note of the second point at 256 GPUs names its GPUs, strategy and p1×p2."""
    cols = (Column("gpus", "GPUs", "right", identity=True), Column("strategy", "strategy", identity=True),
            Column("parts", "p1×p2", "right", identity=True), Column("epoch", "epoch", "right"))  # fmt: skip
    rows = [{"gpus": "256", "strategy": "data+spatial", "parts": "64×4", "epoch": "3.7 s", "n": ""},
            {"gpus": "", "strategy": "data+spatial", "parts": "8×32", "epoch": "4.4 s", "n": "spatial split 8x4 exceeds"}]  # fmt: skip
    t = FitTable(cols, [Section(rows)], notes=Column("n", "notes"), notes_min=40)
    text = " ".join(render_text(t, width=60).split())
    assert "GPUs 256 · strategy data+spatial · p1×p2 8×32: spatial split 8x4 exceeds" in text


def test_a_row_too_wide_for_a_table_is_a_paragraph_that_starts_with_its_identity():
    cols = (Column("value", "value", "right"), Column("name", "parameter", identity=True))
    rows = [{"value": "x" * 50, "name": "beta_inter"}, {"value": "y" * 50, "name": "loader_rate"}]
    lines = render_text(FitTable(cols, [Section(rows)]), width=60).splitlines()
    assert lines == ["parameter beta_inter · value", "x" * 50, "parameter loader_rate · value", "y" * 50]
