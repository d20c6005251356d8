"""Issue 23: at 80 columns (and at 60, the narrowest --width) every table still says what
each row is: a row's identity (the GPUs, strategy and p1×p2 of a projected point, a fitted
parameter's name, a run's line, a layer, a level) is never dropped, so no two rows read
the same.

Every command that prints a table is run at both widths.  Every table it prints must be a
``FitTable`` that marks its identity columns; the rows' identities must differ, and each
row's identity cells must be printed, in order, on one line of the output (where even the
columns never dropped do not fit and each row is a paragraph: on its first two lines).
"""

from __future__ import annotations

import re

import pytest
from test_golden import FIT_NETWORK, PREDICT_ALEXNET, REPO, SEARCH_VGG16

from oracle.render.columns import FitTable, _plain

# every command that prints a table, without --width
TABLE_COMMANDS = {
    "predict": PREDICT_ALEXNET,
    # issue 23's case: several data+spatial points at one GPU count
    "predict resnet50": ("predict", "-m", "resnet50", "-s", "abci", "-p", "resnet50_v100", "--gpus", "256",
                         "-b", "64", "--max-batch"),
    "search": SEARCH_VGG16,
    "search --max-gpus": ("search", "-m", "resnet50", "-s", "abci", "-p", "resnet50_v100", "--gpus", "8",
                          "--max-gpus", "32"),
    "compare": ("compare", "validation/abci-paradl.csv"),
    "compare --calibrate-on": ("compare", "validation/abci-paradl.csv", "--system", "abci-chainermnx",
                               "--calibrate-on", "gpus<=8", "--where", "quality=A"),
    "fit network": FIT_NETWORK,
    "fit runs": ("fit", "runs", "validation/abci-paradl.csv", "-s", "abci", "--calibrate", "all"),
    "show model": ("show", "model", "alexnet"),
    "show system": ("show", "system", "abci-chainermnx"),
    "show profile": ("show", "profile", "resnet50_v100", "--model", "resnet50"),
    "list": ("list",),
    "show KIND": ("show", "system"),
}  # fmt: skip


def _token(text: str) -> str:
    """``text`` as a whole cell: not part of a longer word or number."""
    return rf"(?<!\S){re.escape(text)}(?!\S)"


def _rows_with_identity(table: FitTable):
    cols = [c for c in table.columns if c.identity]
    for section in table.sections:
        for row in section.rows:
            yield [_plain(row.get(c.key, "")).strip() for c in cols]


def printed_tables(run, monkeypatch, args, width):
    """(standard output, [(a FitTable it printed, whether as paragraphs)]) of
    ``oracle ARGS --width WIDTH``."""
    seen: list[tuple[FitTable, bool]] = []
    render = FitTable.__rich_console__

    def spy(self, console, options):
        seen.append((self, self.as_records(options.max_width - self.indent)))
        yield from render(self, console, options)

    monkeypatch.setattr(FitTable, "__rich_console__", spy)
    r = run(*args, "--width", str(width), cwd=REPO)
    assert r.code == 0, r.err
    return r.out, seen


@pytest.mark.parametrize("width", [80, 60])
@pytest.mark.parametrize("name", list(TABLE_COMMANDS))
def test_no_two_rows_read_the_same(run, monkeypatch, name, width):
    out, tables = printed_tables(run, monkeypatch, TABLE_COMMANDS[name], width)
    assert tables, f"{name} printed no table laid out by render/columns.FitTable"
    lines = out.splitlines()
    assert max(map(len, lines)) <= width
    at = 0
    for t, records in tables:
        assert any(c.identity for c in t.columns), f"{name}: a table of {t.title!r} marks no identity column"
        ids = t.identities()
        assert len(set(ids)) == len(ids), f"{name}: two rows of {t.title!r} have the same identity"
        for cells in _rows_with_identity(t):
            pattern = re.compile(r".*".join(_token(c) for c in cells if c))
            found = next((i for i in range(at, len(lines))
                          if pattern.search(" ".join(lines[i : i + 2] if records else lines[i : i + 1]))), None)  # fmt: skip
            assert found is not None, f"{name} at {width} columns: no line after line {at} shows the row {cells}"
            at = found + 1
