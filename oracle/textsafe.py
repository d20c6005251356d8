"""Escaping user-supplied text (model, layer, system and profile names, file names,
the runs file's ``source``) for the formats that would otherwise interpret it.

* Markdown: ``&`` and ``<`` become entities (no raw HTML such as ``<script>`` or
  ``<img onerror=...>``: without ``<`` no tag opens, so ``>`` stays readable, as in
  ``A100 -> H100``), ``\\ ` [ ] |`` get a backslash (no code spans, links, images or
  broken table cells), line breaks become spaces.
* CSV: a text cell starting with ``= + - @``, a tab or a carriage return is prefixed
  with ``'`` so that spreadsheets do not run it as a formula (OWASP's rule); numbers,
  negative ones included, are left alone.  :func:`csv_unescape` undoes it on reading.
"""

from __future__ import annotations

import re

_MD = re.compile(r"[&<\\`\[\]|\r\n\u2028\u2029]")
_MD_REPLACE = {"&": "&amp;", "<": "&lt;", "\r": " ", "\n": " ", "\u2028": " ", "\u2029": " "}
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_FIRST = frozenset(FORMULA_START)


def md(text: object) -> str:
    """``text`` as literal Markdown text (also inside a table cell)."""
    return _MD.sub(lambda m: _MD_REPLACE.get(m.group(), "\\" + m.group()), str(text))


def csv_cell(value: object) -> object:
    """A CSV cell a spreadsheet shows as text, never evaluates."""
    if type(value) is not str or value[:1] not in _FIRST:  # the common case, kept fast
        return value
    try:
        float(value)
    except ValueError:
        return "'" + value
    return value  # a number such as -1.5 stays a number


def csv_row(values) -> list:
    return [csv_cell(v) for v in values]


def csv_unescape(cell: str) -> str:
    """The text a :func:`csv_cell` wrote."""
    return cell[1:] if cell[:1] == "'" and cell[1:2] and cell[1:2] in FORMULA_START else cell
