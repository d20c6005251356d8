"""Tables that read at 80 columns and on wide terminals alike (issue 17).

A ``FitTable`` picks its columns when it is rendered, from the width it is given:
every kept column is as wide as its widest cell (a number is never cut); columns of
the lowest priority are dropped until the rest fit; one optional notes column takes
the remaining width and wraps on words.  When even the columns that are never
dropped leave the notes too little room, the notes are stacked under the table,
one paragraph per row, named by the row's identity.  The caption says which
columns were dropped.

A row's identity (issue 23) is what tells it from the other rows: the GPUs, strategy
and p1×p2 of a projected point, a fitted parameter's name, a layer.  Its columns are
marked ``identity=True`` and are never dropped, whatever their priority; where even
they and the other columns that are never dropped do not fit, each row becomes one
paragraph that starts with its identity.

Every text a table shows (cells, headers, footers, title, caption, section labels)
passes ``textsafe.terminal`` before it is laid out: a name holding ESC or BEL is shown
as ``\x1b``/``\x07`` at its escaped width, never sent to the terminal (issue 28).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from oracle.textsafe import has_control, terminal

KEEP = 9  # priority of a column that is never dropped
INDENT = 1  # tables are set in by one space from their title and notes


@dataclass(frozen=True)
class Column:
    key: str
    header: str
    justify: str = "left"
    priority: int = KEEP  # lower ones are dropped first
    footer: str = ""
    identity: bool = False  # tells the row from the others: never dropped


@dataclass
class Section:
    """Rows shown together; ``label`` (if any) is a line above them."""

    rows: list[dict] = field(default_factory=list)
    label: str | None = None


def _safe(cell):
    """``cell`` (text or rich Text) with its control characters escaped."""
    if isinstance(cell, str):
        return terminal(cell) if has_control(cell) else cell
    plain = getattr(cell, "plain", None)
    if plain is None or not has_control(plain):
        return cell
    cell = cell.copy()
    cell.plain = terminal(plain)
    return cell


def _plain(cell) -> str:
    return cell.plain if hasattr(cell, "plain") else str(cell)


def _cell_len(cell) -> int:
    from rich.cells import cell_len

    return max((cell_len(line) for line in _plain(cell).split("\n")), default=0)


def overhead(n: int) -> int:
    """Characters a SIMPLE_HEAD table without edges adds to n columns' widths."""
    return 3 * (n - 1) if n else 0


def natural_widths(columns, rows) -> dict[str, int]:
    return {
        c.key: max([_cell_len(c.header), _cell_len(c.footer)] + [_cell_len(r.get(c.key, "")) for r in rows])
        for c in columns
    }


def choose(columns, natural: dict[str, int], width: int, room: int) -> list[Column]:
    """The columns kept at ``width`` when ``room`` characters (and a column) are left
    for the notes: the lowest priorities dropped first, later columns first on a tie."""
    keep = list(columns)
    extra = 1 if room else 0

    def used(cols) -> int:
        return sum(natural[c.key] for c in cols) + overhead(len(cols) + extra) + room

    while used(keep) > width:
        droppable = [c for c in keep if c.priority < KEEP and not c.identity]
        if not droppable:
            break
        lowest = min(c.priority for c in droppable)
        keep.remove([c for c in droppable if c.priority == lowest][-1])
    return keep


@dataclass
class FitTable:
    """A table laid out at render time (see the module's docstring)."""

    columns: tuple[Column, ...]
    sections: list[Section]
    notes: Column | None = None  # the wrapping column
    notes_min: int = 24
    title: str = ""
    caption: str = ""
    hint: str = "--width or --format json shows them"
    show_footer: bool = False
    styles: dict = field(default_factory=dict)  # id(row) -> rich style
    expand: bool = False  # the notes take the whole width (less a margin as wide as the indent)
    indent: int = INDENT

    def __post_init__(self) -> None:
        self._escape_controls()

    def _escape_controls(self) -> None:
        """Every text of the table with its control characters escaped (in place: a row
        keeps its identity, which ``styles`` is keyed by)."""
        self.title, self.caption = _safe(self.title), _safe(self.caption)
        self.columns = tuple(replace(c, header=_safe(c.header), footer=_safe(c.footer)) for c in self.columns)
        if self.notes is not None:
            self.notes = replace(self.notes, header=_safe(self.notes.header))
        for section in self.sections:
            section.label = _safe(section.label) if section.label else section.label
            for r in section.rows:
                for k, v in r.items():
                    r[k] = _safe(v)

    def identity_columns(self) -> list[Column]:
        """The columns marked identity (a table that marks none: its first column)."""
        return [c for c in self.columns if c.identity] or list(self.columns[:1])

    def identities(self) -> list[tuple[str, ...]]:
        """Each row's identity, in order: its section's label and its identity cells, a
        blank cell read as the one above it in the section (a value printed once per group)."""
        cols = self.identity_columns()
        out = []
        for section in self.sections:
            above: dict[str, str] = {}
            for r in section.rows:
                for c in cols:
                    above[c.key] = _plain(r.get(c.key, "")).strip() or above.get(c.key, "")
                out.append((section.label or "", *(above[c.key] for c in cols)))
        return out

    def _names(self) -> list[str]:
        """Each row named by the fewest identity columns (from the first) that tell the
        rows apart, as 'header value' pairs: for notes stacked under the table."""
        cols = self.identity_columns()
        ids = self.identities()
        n = next((k for k in range(1, len(cols)) if len({i[: k + 1] for i in ids}) == len(ids)), len(cols))
        return [" · ".join(f"{c.header} {v}".strip() for c, v in zip(cols[:n], i[1 : n + 1])) for i in ids]

    def _records(self):
        """One paragraph per row, its identity first, then 'header value' pairs: the
        layout of last resort."""
        from rich.text import Text

        cols = self.identity_columns()
        rest = [c for c in [*self.columns, *([self.notes] if self.notes else [])] if c not in cols]
        ids = iter(self.identities())
        for section in self.sections:
            if section.label:
                yield Text(section.label, style="bold")
            for r in section.rows:
                pairs = [f"{c.header} {v}".strip() for c, v in zip(cols, next(ids)[1:]) if v]
                pairs += [f"{c.header} {_plain(r.get(c.key, ''))}" for c in rest if _plain(r.get(c.key, ""))]
                yield Text(" · ".join(pairs), style=self.styles.get(id(r)))
        if self.caption:
            yield Text(self.caption, style="dim")

    def layout(self, width: int) -> tuple[list[Column], int, bool]:
        """(kept columns, notes width, notes stacked below)."""
        rows = [r for s in self.sections for r in s.rows]
        natural = natural_widths(self.columns, rows)
        if self.notes is None or not any(_plain(r.get(self.notes.key, "")) for r in rows):
            return choose(self.columns, natural, width, 0), 0, False
        keep = choose(self.columns, natural, width, self.notes_min)
        room = width - sum(natural[c.key] for c in keep) - overhead(len(keep) + 1)
        if room >= self.notes_min:
            if self.expand:
                return keep, room - self.indent, False
            wanted = max([_cell_len(self.notes.header)] + [_cell_len(r.get(self.notes.key, "")) for r in rows])
            return keep, min(room, wanted), False
        return choose(self.columns, natural, width, 0), 0, True

    def as_records(self, width: int) -> bool:
        """Whether even the columns never dropped are too wide for ``width``: then each
        row is a paragraph (``_records``)."""
        keep = self.layout(width)[0]
        rows = [r for s in self.sections for r in s.rows]
        return sum(natural_widths(keep, rows).values()) + overhead(len(keep)) > width

    def __rich_console__(self, console, options):
        from rich import box
        from rich.padding import Padding
        from rich.table import Table
        from rich.text import Text

        self._escape_controls()  # rows may have been added since
        width = options.max_width - self.indent
        keep, notes_w, stacked = self.layout(width)
        rows = [r for s in self.sections for r in s.rows]
        natural = natural_widths(keep, rows)
        if self.title:
            yield Text(self.title)
        if self.as_records(width):
            yield from self._records()  # even the columns never dropped are too wide
            return

        labelled = any(s.label for s in self.sections)

        def new_table(header: bool) -> Table:
            t = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, show_header=header,
                      show_footer=self.show_footer and not labelled)
            for c in keep:
                t.add_column(Text(c.header), justify=c.justify, no_wrap=True, width=natural[c.key],  # type: ignore[arg-type]
                             footer=Text(c.footer))
            if notes_w:
                t.add_column(Text(self.notes.header), width=notes_w, overflow="fold")
            return t

        t = new_table(True)
        for i, section in enumerate(self.sections):
            if labelled:
                if i == 0:
                    yield Padding(t, (0, 0, 0, self.indent))  # the header alone, then each labelled group
                yield Text(section.label or "", style="bold")
                t = new_table(False)
            elif i:
                t.add_section()
            for r in section.rows:
                cells = [r.get(c.key, "") for c in keep]
                if notes_w:
                    cells.append(r.get(self.notes.key, ""))
                cells = [Text(c) if isinstance(c, str) else c for c in cells]  # text, not markup
                t.add_row(*cells, style=self.styles.get(id(r)))
            if labelled:
                yield Padding(t, (0, 0, 0, self.indent))
        if not labelled:
            yield Padding(t, (0, 0, 0, self.indent))
        if stacked:
            yield Text("")
            for r, name in zip(rows, self._names()):
                note = _plain(r.get(self.notes.key, ""))
                if note:
                    yield Text(f"{name}: {note}", style=self.styles.get(id(r)))
        caption = self.caption
        dropped = [c.header for c in self.columns if c not in keep]
        if dropped:
            caption += ("\n" if caption else "") + f"(too narrow for: {', '.join(dropped)}; {self.hint})"
        if stacked:
            caption += ("\n" if caption else "") + f"({self.notes.header} under the table: too narrow for a column)"
        if caption:
            yield Text("\n" + caption)
