"""JSON text exactly as ``json.dumps(obj, indent=2, allow_nan=False)`` writes it, faster for
many points (issue 29): with ``indent`` Python uses its pure-Python generator encoder, about
half of ``oracle predict --format json``'s time over 15,000 points.  Here json's C encoder
writes every run of scalars (a dict's scalar items, a list of scalars, rows of scalars such as
a point's pipeline stages of layer names, the bulk of the text) with the newline and
indentation in its item separator; Python only walks the containers between.  Anything else
(numpy scalars, subclasses) falls back to ``json.dumps`` itself, so the text never differs."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from json.encoder import c_make_encoder
from json.encoder import encode_basestring_ascii as _string

_LITERALS = {True: "true", False: "false"}
_SCALARS = frozenset({str, int, float, bool, type(None)})
_ROWS = (list, tuple)


def _dumps(v: object, pad: str) -> str:
    """json.dumps(v, indent=2, allow_nan=False) placed at indentation ``pad``."""
    return json.dumps(v, indent=2, allow_nan=False).replace("\n", "\n" + pad)


class IndentedWriter:
    """``write(v)`` == ``json.dumps(v, indent=2, allow_nan=False)``; a tuple is written as
    ``json.dumps(expand(t))`` would write it (``expand``: how the caller turns tuples into
    lists, e.g. non-finite numbers to None)."""

    def __init__(self, expand: Callable[[tuple], object]):
        self._expand = expand
        self._flat: dict[str, Callable[[object], str]] = {}

    def write(self, v: object, pad: str = "") -> str:
        if isinstance(v, str):
            return _string(v)
        if v is None:
            return "null"
        if v is True or v is False:
            return _LITERALS[v]
        if type(v) is int:
            return int.__repr__(v)
        if type(v) is float and math.isfinite(v):
            return float.__repr__(v)
        if type(v) is dict:
            return self._dict(v, pad)
        if type(v) is list:
            return self._list(v, pad)
        if type(v) is tuple:
            return self._tuple(v, pad)
        return _dumps(v, pad)  # numpy scalars, NaN, odd keys: json's own answer (or error)

    def _flat_text(self, v: dict | list, pad: str) -> str:
        """A container of scalars only, by the C encoder: its item separator carries the
        newline and indentation, so only the brackets' lines are added here."""
        text = "".join(self._encoder(pad)(v, 0))
        return text[0] + "\n" + pad + "  " + text[1:-1] + "\n" + pad + text[-1]

    def _encoder(self, pad: str) -> Callable:
        """json's C encoder as JSONEncoder.iterencode makes it (allow_nan=False), without
        circular-reference markers (only scalars and rows of them come here); its item
        separator carries the newline and the indentation of items under ``pad``."""
        encode = self._flat.get(pad)
        if encode is None:
            sep = ",\n" + pad + "  "
            encode = self._flat[pad] = c_make_encoder(None, None, _string, None, ": ", sep, False, False, False)
        return encode

    def _dict(self, d: dict, pad: str) -> str:
        if not d:
            return "{}"
        encode = self._encoder(pad)
        parts, run = [], {}
        for k, x in d.items():  # runs of scalar items by the C encoder, in order
            if type(x) in _SCALARS:
                run[k] = x
                continue
            if run:
                parts.append("".join(encode(run, 0))[1:-1])
                run = {}
            key = _string(k) if type(k) is str else "".join(encode({k: 0}, 0))[1:-4]  # json's 1, 1.5, None keys
            parts.append(key + ": " + self.write(x, pad + "  "))
        if run:
            parts.append("".join(encode(run, 0))[1:-1])
        inner = "\n" + pad + "  "
        return "{" + inner + ("," + inner).join(parts) + "\n" + pad + "}"

    def _list(self, items: list, pad: str) -> str:
        if not items:
            return "[]"
        if all(type(x) in _SCALARS for x in items):
            return self._flat_text(items, pad)
        inner = pad + "  "
        return "[\n" + inner + (",\n" + inner).join(self.write(x, inner) for x in items) + "\n" + pad + "]"

    def _tuple(self, t: tuple, pad: str) -> str:
        """As ``expand(t)`` is written; scalars (a grid) or rows of scalars (pipeline stages
        of layer names, the bulk of the text) by the C encoder directly."""
        try:
            if all(type(x) in _SCALARS for x in t):
                return self._flat_text(t, pad) if t else "[]"
            if all(type(x) in _ROWS and x and all(type(y) in _SCALARS for y in x) for x in t):
                return self._rows_text(t, pad)
        except ValueError:  # a non-finite number inside: expand says what it becomes
            pass
        return self.write(self._expand(t), pad)

    def _rows_text(self, rows: tuple, pad: str) -> str:
        """Non-empty rows of scalars: the C encoder separates items as the rows' items are
        indented; between rows, "]" + that separator + "[" (a newline never occurs inside an
        encoded string) becomes the outer separator."""
        inner, sep = pad + "  ", ",\n" + pad + "    "
        encode = self._encoder(inner)
        text = "".join(encode(rows, 0)).replace("]" + sep + "[", "\n" + inner + "]," + "\n" + inner + "[" + sep[1:])
        return "[\n" + inner + "[" + sep[1:] + text[2:-2] + "\n" + inner + "]\n" + pad + "]"
