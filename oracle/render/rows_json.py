"""The JSON text of points straight from the arrays' rows (issue 29: ``predict -f json``
and ``oracle sweep -f json`` of 10^5 rows): a compute/vector/rows.Block's rows written
as render/records.to_json writes each one's point (``json.dumps(point_to_dict(pt),
indent=2)`` at a list item's indentation), column by column as render/records.csv_lines
writes CSV: each distinct value formatted once, the text before and after each row's
rank joined once per row.  A row whose details its strategy cannot tell without
evaluating it (compute/vector/rows.resolved) is its evaluated point, written by
render/jsontext.IndentedWriter; so are points.  tests/test_stream.py holds both equal."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from json.encoder import encode_basestring_ascii as _string
from typing import NamedTuple

from oracle.compute.cost import phase_names
from oracle.compute.vector.rows import BriefRow, resolved



class Style(NamedTuple):
    """How a point's JSON object is laid out: to_json's (indent 2, a list item) or
    oracle sweep's (one line, render/sweep.py)."""

    open: str  # before the first key
    sep: str  # between a point's keys
    nested: tuple[str, str, str]  # a nested dict's or list's opening, separator, closing
    close: str
    details: Callable[[dict], str]  # json.dumps of the details dict in this layout


@functools.cache
def _writer():
    from oracle.render.jsontext import IndentedWriter
    from oracle.render.records import plain_value

    return IndentedWriter(expand=plain_value)


def _indented_details(d: dict) -> str:
    return _writer().write(d, "    ")


INDENTED = Style("{\n    ", ",\n    ", ("\n      ", ",\n      ", "\n    "), "\n  }", _indented_details)
ONE_LINE = Style("{", ", ", ("", ", ", ""), "}", lambda d: json.dumps(d, allow_nan=False))


def item_texts(items: list, write, style: Style = INDENTED, head: str = "") -> list[str]:
    """Each of ``items`` (points and BriefRows, ranked) as its point is written:
    ``write(pt)`` a point's text; a row's in ``style``, its keys after ``head``
    (oracle sweep's case and where)."""
    out: list = [None] * len(items)
    blocks: dict = {}
    for j, it in enumerate(items):
        if type(it) is BriefRow:
            blocks.setdefault(id(it.block), []).append(j)
        else:
            out[j] = write(it)
    for js in blocks.values():
        rows = [items[j] for j in js]
        got = resolved(rows)
        told = {r.i: d for r, d in zip(rows, got) if type(d) is dict}
        texts = _block_texts(rows[0].block.values, told, style, head) if told else {}
        for j, row, d in zip(js, rows, got):
            if type(d) is dict:
                left, right = texts[row.i]
                out[j] = f"{left}{'null' if row.rank is None else row.rank}{right}"
            else:
                out[j] = write(d)
    return out


def _block_texts(v: dict, details: dict, style: Style, head: str) -> dict:
    """Row -> (its text before the rank, after it) of the rows in ``details`` (their
    strategy's details by row), point_to_dict's keys in its order after ``head``."""
    from oracle.render.records import by_value, float_columns, int_if_whole

    at = sorted(details)
    n, memory, phases, hidden = len(at), v["memory"], phase_names(), v["overlap"] or {}
    parts = list(memory) if memory is not None else []
    floats = [*(v[k] for k in _NUMS), *(v["phases"][k] for k in phases), v["max_batch_per_gpu"],
              *(memory[k] for k in parts), *hidden.values()]  # fmt: skip (hidden: --overlap's, rows.resolved)
    (cols,) = float_columns([[[c[i] for i in at] for c in floats]], empty="null")
    nums = dict(zip(_NUMS, cols))
    cells = dict(zip([*phases, "max_batch_per_gpu", *parts, *hidden], cols[len(_NUMS) :]))
    row = {k: [v[k][i] for i in at] for k in ("gpus", "p1", "p2", "global_batch", "segments", "feasible", "limits",
                                              "compute_conversion")}  # fmt: skip
    left, right = _Pieces(style), _Pieces(style)
    left.add(style.open + head)
    for k in ("model", "system", "strategy"):
        left.item(k, _string(v[k]), first=k == "model" and not head)
    for k in ("gpus", "p1", "p2"):
        left.item(k, by_value(str)(row[k]))
    left.item("global_batch", by_value(lambda b: _scalar(int_if_whole(b)))(row["global_batch"]))
    left.item("segments", by_value(_scalar)(row["segments"]))
    for k in _NUMS:
        left.item(k, nums[k])
    left.item("feasible", by_value(_scalar)(row["feasible"]))
    left.item("limits", by_value(lambda lims: _texts([x.reason for x in lims], style))(row["limits"]))
    left.item("rank", "")
    right.nested("breakdown", [(k, cells[k]) for k in phases])
    right.item("limit_codes", by_value(lambda lims: _texts([x.code for x in lims], style))(row["limits"]))
    for k in ("profile_kind", "memory_model"):
        right.item(k, _string(v[k]))
    right.item("compute_conversion", by_value(_string)(row["compute_conversion"]))
    right.item("stack", _string(v["stack"]))
    if parts:
        right.nested("memory_breakdown", [(k, cells[k]) for k in parts])
    else:
        right.item("memory_breakdown", "null")
    right.item("max_batch_per_gpu", cells["max_batch_per_gpu"])
    right.item("communication_total_s", cells.get("communication_total_s", nums["communication_s"]))
    right.item("overlap_ratio", cells.get("overlap_ratio", "0.0"))
    right.item("details", by_value(lambda d: style.details(_plain_details(d)))([tuple(details[i].items()) for i in at]))
    right.add(style.close)
    return dict(zip(at, zip(left.rows(n), right.rows(n))))


_NUMS = ("iterations_per_epoch", "compute_s", "communication_s", "total_s", "iteration_s", "memory_bytes")


class _Pieces:
    """A row's text as pieces: texts every row shares and columns (a list of each row's
    text, or a str: every row's), adjacent shared texts joined once."""

    def __init__(self, style: Style) -> None:
        self.pieces: list = []
        self.style = style

    def add(self, piece) -> None:
        if type(piece) is str and self.pieces and type(self.pieces[-1]) is str:
            self.pieces[-1] += piece
        else:
            self.pieces.append(piece)

    def item(self, key: str, value, sep: str | None = None, first: bool = False) -> None:
        """``"key": value`` after the items before it (``first``: none in this text)."""
        self.add(("" if first else self.style.sep if sep is None else sep) + _string(key) + ": ")
        self.add(value)

    def nested(self, key: str, items: list) -> None:
        """``"key": {...}`` of (key, value column) items, written one level deeper."""
        start, sep, end = self.style.nested
        self.item(key, "{" + start)
        for j, (k, value) in enumerate(items):
            self.item(k, value, sep=sep, first=j == 0)
        self.add(end + "}")

    def rows(self, n: int) -> list[str]:
        from itertools import repeat

        if all(type(p) is str for p in self.pieces):
            return ["".join(self.pieces)] * n
        return list(map("".join, zip(*(repeat(p, n) if type(p) is str else p for p in self.pieces))))


def _scalar(x) -> str:
    """json.dumps of a scalar (a non-finite float: null, as records._num makes it)."""
    if x is None:
        return "null"
    if x is True or x is False:
        return "true" if x else "false"
    if type(x) is float:
        return repr(x) if -math.inf < x < math.inf else "null"
    if type(x) is str:
        return _string(x)
    return str(int(x))


def _texts(texts: list[str], style: Style) -> str:
    """json.dumps of a list of strings, one level deeper than a point's keys."""
    start, sep, end = style.nested
    return "[" + start + sep.join(map(_string, texts)) + end + "]" if texts else "[]"


def _plain_details(items: tuple) -> dict:
    """point_to_dict's ``details`` of a strategy's details (make_point's own none here)."""
    from oracle.render.records import TOP_DETAILS, plain_value

    return {k: plain_value(x) for k, x in items if k not in TOP_DETAILS}
