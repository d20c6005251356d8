"""Escaping user-supplied text (model, layer, system and profile names, file names,
the runs file's ``source``) for the formats that would otherwise interpret it: one
function per destination.

* Terminal: :func:`terminal` shows control characters (ESC, BEL, C1 such as CSI) as
  escapes, so that no name can clear the screen, hide text, set the window title or
  write the clipboard (OSC 52); :func:`console` makes the rich console every command
  prints through, which applies it to every segment it renders (tables, headers,
  captions: no caller can forget), and :func:`one_line` (errors, warnings) escapes
  line breaks too; :func:`stdout_text` is the last guard of text written to standard
  output in any format.
* Markdown: control characters are escaped as for the terminal; ``&`` and ``<`` become
  entities (no raw HTML such as ``<script>`` or ``<img onerror=...>``: without ``<`` no tag opens, so ``>`` stays readable, as in
  ``A100 -> H100``), ``\\ ` [ ] |`` get a backslash (no code spans, links, images or
  broken table cells), line breaks become spaces; ``://``, ``www.`` and ``@`` are written
  with an entity (``&#58;``, ``&#46;``, ``&#64;``) so that no name becomes a live link
  (GFM's extended autolinks).  :func:`md_prose` keeps a backticked `command` as a code span.
* CSV: a text cell starting with ``= + - @``, a tab or a carriage return is prefixed
  with ``'`` so that spreadsheets do not run it as a formula (OWASP's rule); numbers,
  negative ones included, are left alone.  :func:`csv_unescape` undoes it on reading.
  Control characters other than line breaks and tabs are shown as escapes.
* YAML: :func:`yaml_quoted` (a double-quoted scalar on one line that reads back as the
  text), :func:`yaml_scalar` (plain where that reads back the same, else quoted) and
  :func:`yaml_comment` / :func:`yaml_comments` (``#`` comment lines that stay one line).
* HTML: :func:`html` (entities, control characters escaped).
"""

from __future__ import annotations

import functools
import re

# Characters that end a line somewhere (str.splitlines, terminals) or are invisible
# control characters (C0, DEL, C1: ESC, BEL, CSI ...).
_LINE_BREAKING = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # the same, less \n, \t
_CONTROL_CSV = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")  # less \r too (a CSV cell may hold it)


def _escaped(m: re.Match) -> str:
    return m.group().encode("unicode_escape").decode("ascii")


def one_line(text: object) -> str:
    """``text`` with line breaks and control characters shown as escapes (\\n, \\x1b,
    \\u2028): for one-line messages."""
    return _LINE_BREAKING.sub(_escaped, str(text))


def terminal(text: object) -> str:
    """``text`` with control characters shown as escapes (\\x1b, \\x07), line breaks and
    tabs kept: safe to print on a terminal."""
    return _CONTROL.sub(_escaped, str(text))


def stdout_text(text: str) -> str:
    """Text of any format (JSON, CSV, YAML, Markdown) for standard output: a control
    character that its writer left raw (C1 in JSON, say) as a ``\\u00XX`` escape, which
    JSON and YAML double-quoted strings read back as the character itself."""
    return _CONTROL_CSV.sub(lambda m: f"\\u{ord(m.group()):04x}", text) if _CONTROL_CSV.search(text) else text


def has_control(text: str) -> bool:
    """Whether :func:`terminal` would change ``text``."""
    return _CONTROL.search(text) is not None


_console_class = None


def console(**kwargs):
    """A rich ``Console`` whose every rendered segment passes :func:`terminal` (styles
    and rich's own control sequences are added after it, so they still work) and on
    which a broken pipe is an error rather than rich's silent exit 1."""
    global _console_class
    if _console_class is None:
        from rich.console import Console
        from rich.segment import Segment

        class SafeConsole(Console):
            def render(self, renderable, options=None):
                for seg in super().render(renderable, options):
                    if seg.control or not _CONTROL.search(seg.text):
                        yield seg
                    else:
                        yield Segment(terminal(seg.text), seg.style)

            def on_broken_pipe(self) -> None:
                import errno

                raise BrokenPipeError(errno.EPIPE, "Broken pipe")

        _console_class = SafeConsole
    return _console_class(**kwargs)


# -- YAML ----------------------------------------------------------------------------
# What a YAML stream may hold raw (YAML 1.1 as PyYAML reads it), less the line breaks
# NEL, LS, PS and the byte-order mark: everything else is written as an escape.
_YAML_RAW = "\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff"


@functools.cache  # compiled when first used: ~13 ms that a command writing no YAML need not pay (issue 29)
def _yaml_pattern(comment: bool) -> re.Pattern:
    """What a double-quoted scalar escapes (not raw, or ``"`` ``\\``), or a comment line."""
    return re.compile(f"[^\t{_YAML_RAW}]") if comment else re.compile(f'[^{_YAML_RAW}]|["\\\\]')


_YAML_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_YAML_RESERVED = frozenset({"true", "false", "yes", "no", "on", "off", "null", "y", "n", "~"})


def _yaml_escape(m: re.Match) -> str:
    c = m.group()
    if c in '"\\':
        return "\\" + c
    n = ord(c)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def yaml_quoted(text: object) -> str:
    """``text`` as a YAML double-quoted scalar on one line: line breaks, control and
    other characters YAML does not allow raw written as escapes; it reads back as ``text``."""
    return '"' + _yaml_pattern(False).sub(_yaml_escape, str(text)) + '"'


def yaml_scalar(text: object) -> str:
    """``text`` as a YAML scalar: plain where it reads back as the same string (a name
    such as ``conv1``), else :func:`yaml_quoted`."""
    text = str(text)
    if _YAML_PLAIN.fullmatch(text) and text.lower() not in _YAML_RESERVED:
        return text
    return yaml_quoted(text)


def yaml_comment(text: object) -> str:
    """``text`` as the body of one ``#`` comment line: a line break (or any character
    YAML does not allow raw) in a name shown as an escape, never a new line of keys."""
    return _yaml_pattern(True).sub(_escaped, str(text))


def yaml_comments(lines) -> list[str]:
    """``# line`` for each line (trailing spaces dropped)."""
    return [f"# {yaml_comment(line)}".rstrip() for line in lines]


# -- Markdown, CSV, HTML ----------------------------------------------------------------
_MD = re.compile(r"[&<\\`\[\]|\r\n\u2028\u2029]")
_MD_REPLACE = {"&": "&amp;", "<": "&lt;", "\r": " ", "\n": " ", "\u2028": " ", "\u2029": " "}
_AUTOLINK = re.compile(r"://|@|(?<![^\W_])(www)\.", re.IGNORECASE)
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_FIRST = frozenset(FORMULA_START)


def md(text: object) -> str:
    """``text`` as literal Markdown text (also inside a table cell)."""
    text = _MD.sub(lambda m: _MD_REPLACE.get(m.group(), "\\" + m.group()), terminal(text))
    return _AUTOLINK.sub(_defuse, text) if ("/" in text or "@" in text or "." in text) else text


# a code span of oracle's own prose: `oracle fit runs --calibrate all` (no backtick,
# pipe, bracket, backslash, '<' or '&' inside, so it can neither end early, break a table
# cell nor open a tag or link)
_CODE_SPAN = re.compile(r"`([\w][\w .,=/:+-]*)`")


def md_prose(text: object) -> str:
    """Like :func:`md`, but a `command` quoted in backticks (oracle's own sentences and
    the sources it writes: `oracle fit runs`) is kept as a Markdown code span rather than
    shown with backslashes."""
    parts = _CODE_SPAN.split(terminal(text))
    return "".join(f"`{p}`" if i % 2 else md(p) for i, p in enumerate(parts))


def _defuse(m: re.Match) -> str:
    return "&#58;//" if m.group() == "://" else "&#64;" if m.group() == "@" else m.group(1) + "&#46;"


def csv_cell(value: object) -> object:
    """A CSV cell a spreadsheet shows as text, never evaluates (control characters but
    line breaks and tabs escaped)."""
    if type(value) is not str:
        return value
    if _CONTROL_CSV.search(value):
        value = _CONTROL_CSV.sub(_escaped, value)
    if value[:1] not in _FIRST:  # the common case, kept fast
        return value
    try:
        float(value)
    except ValueError:
        return "'" + value
    return value  # a number such as -1.5 stays a number


def csv_texts(texts: list[str]) -> list[str]:
    """:func:`csv_cell` of each text, with one search for control characters over them
    all (issue 29: a sweep's column of limits, one text per row)."""
    if _CONTROL_CSV.search("\n".join(texts)):  # a line break is no control character here
        return [csv_cell(t) for t in texts]
    return [t if t[:1] not in _FIRST else csv_cell(t) for t in texts]


def csv_row(values) -> list:
    return [csv_cell(v) for v in values]


def csv_unescape(cell: str) -> str:
    """The text a :func:`csv_cell` wrote."""
    return cell[1:] if cell[:1] == "'" and cell[1:2] and cell[1:2] in FORMULA_START else cell


def html(text: object, quote: bool = False) -> str:
    """``text`` as HTML text (``quote``: as an attribute value); control characters escaped."""
    import html as _html

    return _html.escape(terminal(text), quote=quote)


def html_prose(text: object) -> str:
    """Like :func:`html`, but a `command` quoted in backticks (as :func:`md_prose` reads
    them) is set as ``<code>``, not shown with its backticks."""
    parts = _CODE_SPAN.split(terminal(text))
    return "".join(f"<code>{html(p)}</code>" if i % 2 else html(p) for i, p in enumerate(parts))
