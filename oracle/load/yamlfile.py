"""Reading YAML input files safely, keeping line numbers for error messages.

Mappings load as :class:`YMap` and sequences as :class:`YList`; both remember the line
where they start and the line of each key/item, so that validation errors can say
``models/x.yaml:12: layers[3]: ...``.  Duplicate keys (which PyYAML silently merges)
are errors.  ``1e-6`` is read as a number (YAML 1.1 would read it as a string).
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from oracle.errors import OracleError
from oracle.load.source import MAX_YAML_BYTES, read_bytes, shown

_Base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class YMap(dict):
    """A mapping that knows its line and the line of each key (1-based)."""

    line: int = 0
    key_lines: dict


class YList(list):
    """A sequence that knows its line and the line of each item (1-based)."""

    line: int = 0
    item_lines: list


class OracleLoader(_Base):  # type: ignore[misc, valid-type]
    pass


# YAML 1.1 (PyYAML) needs a dot in floats; accept 1e-6, 2E+3 as numbers too.
OracleLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
        |\.[0-9_]+(?:[eE][-+][0-9]+)?
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
        re.X,
    ),
    list("-+0123456789."),
)


def _construct_map(loader: yaml.SafeLoader, node: yaml.MappingNode) -> YMap:
    loader.flatten_mapping(node)
    out = YMap()
    out.line = node.start_mark.line + 1
    out.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, "found an unhashable key", key_node.start_mark
            ) from None
        if key in out:
            raise OracleError(
                f"duplicate key '{key}'",
                line=key_node.start_mark.line + 1,
                hint=f"first given on line {out.key_lines[key]}",
            )
        out[key] = loader.construct_object(value_node, deep=True)
        out.key_lines[key] = key_node.start_mark.line + 1
    return out


def _construct_seq(loader: yaml.SafeLoader, node: yaml.SequenceNode) -> YList:
    out = YList(loader.construct_object(n, deep=True) for n in node.value)
    out.line = node.start_mark.line + 1
    out.item_lines = [n.start_mark.line + 1 for n in node.value]
    return out


OracleLoader.add_constructor("tag:yaml.org,2002:map", _construct_map)
OracleLoader.add_constructor("tag:yaml.org,2002:seq", _construct_seq)


MAX_DEPTH = 100  # nesting levels of lists and mappings; real files use fewer than 10
MAX_ALIAS_VALUES = 100_000  # values that aliases (*name) may add once expanded
_CORE_TAGS = {None, "!"} | {f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "map", "seq")}
# YAML 1.1 reads 1:30:00 as 5400 (base 60); nobody writing a file means that
_SEXAGESIMAL = re.compile(r"[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?")


def check_structure(text: str) -> None:
    """Walk the YAML events (libyaml's parser keeps its own stack, it does not recurse)
    and refuse, before anything is built: nesting deeper than MAX_DEPTH, aliases that
    expand to more than MAX_ALIAS_VALUES values (a "billion laughs"), tags other than the
    core ones (!!binary, !!set, !!timestamp, ...) and base-60 numbers."""
    depth = 0
    count = 0  # values so far, aliases expanded
    added = 0  # values added by aliases
    sizes: dict[str, int] = {}
    open_: list[tuple[str | None, int]] = []
    for ev in yaml.parse(text, Loader=OracleLoader):  # noqa: S506 - events only, nothing constructed
        if isinstance(ev, (yaml.ScalarEvent, yaml.CollectionStartEvent)):
            _check_tag(ev)
        if isinstance(ev, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise OracleError(f"YAML is nested more than {MAX_DEPTH} levels deep", line=_line(ev))
            open_.append((ev.anchor, count))
            count += 1
        elif isinstance(ev, yaml.CollectionEndEvent):
            depth -= 1
            anchor, start = open_.pop()
            if anchor is not None:
                sizes[anchor] = count - start
        elif isinstance(ev, yaml.ScalarEvent):
            count += 1
            if ev.anchor is not None:
                sizes[ev.anchor] = 1
            if not ev.style and ev.implicit[0] and _SEXAGESIMAL.fullmatch(ev.value):
                raise OracleError(
                    f"'{ev.value}' would be read as a base-60 number (YAML 1.1)", line=_line(ev),
                    hint="quote it if it is text, or write the number itself",
                )  # fmt: skip
        elif isinstance(ev, yaml.AliasEvent):
            n = sizes.get(ev.anchor, 1)
            count += n
            added += n
            if added > MAX_ALIAS_VALUES:
                raise OracleError(
                    f"aliases expand to more than {MAX_ALIAS_VALUES:,} values", line=_line(ev),
                    hint="a YAML alias bomb? write the values out or use fewer aliases",
                )  # fmt: skip


def _line(ev: yaml.Event) -> int | None:
    return ev.start_mark.line + 1 if ev.start_mark is not None else None


def _check_tag(ev: yaml.Event) -> None:
    tag = ev.tag
    if tag in _CORE_TAGS:
        return
    short = tag.replace("tag:yaml.org,2002:", "!!") if tag else tag
    raise OracleError(
        f"YAML tag '{short}' is not accepted", line=_line(ev),
        hint="oracle reads plain strings, numbers, booleans, lists and mappings; remove the tag",
    )  # fmt: skip


def read_text(path: str | Path, what: str = "file", limit: int | None = None) -> str:
    """Read a UTF-8 text file, turning every OS/encoding problem into an OracleError."""
    return decode_text(read_bytes(path, what, limit), shown(path), what)


def decode_text(data: bytes, name: str, what: str = "file") -> str:
    """The UTF-8 text of a file's bytes: not binary, not empty."""
    if b"\x00" in data:
        raise OracleError(f"looks like a binary file; expected a text {what}", file=name)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise OracleError(
            f"is not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})",
            file=name,
            line=line,
        ) from None
    if not text.strip():
        raise OracleError(f"is empty; expected a {what}", file=name)
    return text


def load_yaml(path: str | Path, what: str = "YAML file") -> YMap:
    """Parse a YAML file whose top level must be a mapping."""
    name = str(path)
    text = read_text(path, what, MAX_YAML_BYTES)
    try:
        check_structure(text)
        doc = yaml.load(text, Loader=OracleLoader)  # noqa: S506 - safe loader subclass
    except OracleError as exc:
        exc.file = name
        raise
    except yaml.MarkedYAMLError as exc:
        if "nesting depth" in (exc.problem or ""):  # libyaml >= 0.2.5 (PyYAML 6.0.4) stops first
            raise OracleError(f"YAML is nested more than {MAX_DEPTH} levels deep", file=name) from None
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = exc.problem or exc.context or "syntax error"
        raise OracleError(f"YAML syntax error: {problem}", file=name, line=line) from None
    except yaml.YAMLError as exc:
        raise OracleError(f"YAML error: {exc}", file=name) from None
    except RecursionError:
        raise OracleError("YAML is nested too deeply", file=name) from None
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise OracleError(f"YAML value cannot be read: {exc}", file=name) from None
    except (IndexError, TypeError, KeyError, AttributeError, OverflowError) as exc:
        # PyYAML's constructors on odd tagged scalars, e.g. '!!float' with no value
        raise OracleError(f"YAML value cannot be read ({type(exc).__name__}: {exc})", file=name) from None
    if doc is None:
        raise OracleError(f"is empty; expected a {what}", file=name)
    if not isinstance(doc, dict):
        raise OracleError(
            f"top level is a {kind_of(doc)}; expected a mapping of keys to values", file=name
        )
    return doc


def kind_of(value: object) -> str:
    """'list', 'boolean', 'number', 'string' or the type's name (for messages)."""
    if isinstance(value, list):
        return "list"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return type(value).__name__
