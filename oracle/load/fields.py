"""Typed, located access to the keys of a YAML mapping.

``Fields`` walks a mapping, converts each value with a checker and remembers which keys
it has used; ``done()`` then rejects unknown keys with a did-you-mean hint.  Every
error names the file, the line, the key path and what was expected.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from oracle.errors import OracleError, did_you_mean

# Synonyms users type for keys: unknown key -> the key they most likely meant.
_SYNONYMS = {
    "bandwidth": "beta_s_per_byte",
    "bandwith": "beta_s_per_byte",
    "bw": "beta_s_per_byte",
    "beta": "beta_s_per_byte",
    "latency": "alpha_s",
    "alpha": "alpha_s",
    "memory": "memory_GB",
    "mem_GB": "memory_GB",
    "out_channels": "filters",
    "channels": "filters",
    "kernel_size": "kernel",
    "units": "outputs",
    "out_features": "outputs",
    "fw": "fw_s",
    "bw_time": "bw_s",
    "wu": "wu_s",
}


class Bad(ValueError):
    """Raised by checkers: the value is not what was expected."""


# No quantity in a model, system or profile file is plausibly larger than 10^15 (a
# dataset of 10^15 samples, a petabyte message) or, unless zero, smaller than 10^-30 in
# magnitude.  Bounding every number keeps the products the cost model forms finite
# (1e308 or 1e-320 in an input would otherwise overflow to inf or divide to inf).
MAX_MAGNITUDE = 1e15
MIN_MAGNITUDE = 1e-30


def _plausible(v: float, shown: Any, expected: str) -> None:
    if abs(v) > MAX_MAGNITUDE:
        raise Bad(f"got {shown!r}, which is not plausible; expected {expected} (at most {MAX_MAGNITUDE:g})")
    if v != 0 and abs(v) < MIN_MAGNITUDE:
        raise Bad(f"got {shown!r}, which is not plausible; expected {expected} (0 or at least {MIN_MAGNITUDE:g})")


Checker = Callable[[Any], Any]


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value) if len(value) < 40 else repr(value[:37] + "...")
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing (null)"
    return repr(value)


def number(
    *,
    gt: float | None = None,
    ge: float | None = None,
    le: float | None = None,
    lt: float | None = None,
    what: str = "a number",
) -> Checker:
    """A finite real number within the given bounds (bools are not numbers)."""
    bounds = []
    if gt is not None:
        bounds.append(f"> {gt:g}")
    if ge is not None:
        bounds.append(f">= {ge:g}")
    if lt is not None:
        bounds.append(f"< {lt:g}")
    if le is not None:
        bounds.append(f"<= {le:g}")
    expected = what + (" " + " and ".join(bounds) if bounds else "")

    def check(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise Bad(f"got {_describe(value)}; expected {expected}")
        try:
            v = float(value)
        except OverflowError:  # an integer too large for a float
            raise Bad(f"got an integer too large for a float; expected {expected}") from None
        if math.isnan(v) or math.isinf(v):
            raise Bad(f"got {_describe(value)}; expected a finite number")
        if (
            (gt is not None and not v > gt)
            or (ge is not None and not v >= ge)
            or (lt is not None and not v < lt)
            or (le is not None and not v <= le)
        ):
            raise Bad(f"got {value!r}; expected {expected}")
        _plausible(v, value, expected)
        return v

    return check


def integer(*, ge: int | None = None, le: int | None = None, what: str = "a whole number") -> Checker:
    """A whole number (2 and 2.0 are accepted; 2.5 is not) within bounds."""
    bounds = []
    if ge is not None:
        bounds.append(f">= {ge}")
    if le is not None:
        bounds.append(f"<= {le}")
    expected = what + (" " + " and ".join(bounds) if bounds else "")

    def check(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise Bad(f"got {_describe(value)}; expected {expected}")
        if isinstance(value, float) and (not math.isfinite(value) or value != int(value)):
            raise Bad(f"got {value!r}; expected {expected}")
        v = int(value)
        if (ge is not None and v < ge) or (le is not None and v > le):
            raise Bad(f"got {_big(v)}; expected {expected}")
        if abs(v) > MAX_MAGNITUDE:
            raise Bad(f"got {_big(v)}, which is not plausible; expected {expected} (at most {MAX_MAGNITUDE:g})")
        return v

    return check


def of(kind) -> Checker:
    """A number of one of the kinds of oracle/limits.py, with the limits every option and
    file share (issue 28)."""

    def check(value: Any):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise Bad(f"got {_describe(value)}; expected {kind.expected}")
        problem = kind.problem(value)
        if problem:
            raise Bad(problem)
        return kind.convert(value)

    return check


def _big(v: int) -> str:
    """An integer for a message: huge ones by their number of digits."""
    return str(v) if abs(v) < 10**30 else f"a {len(str(abs(v)))}-digit number"


def string(*, nonempty: bool = True) -> Checker:
    def check(value: Any) -> str:
        if isinstance(value, bool) or value is None or isinstance(value, (dict, list)):
            raise Bad(f"got {_describe(value)}; expected a text string")
        text = str(value)  # numbers are accepted as text (e.g. a name "16")
        if nonempty and not text.strip():
            raise Bad("is empty; expected a text string")
        return text

    return check


def boolean() -> Checker:
    def check(value: Any) -> bool:
        if not isinstance(value, bool):
            raise Bad(f"got {_describe(value)}; expected true or false")
        return value

    return check


def choice(options: Sequence[str]) -> Checker:
    def check(value: Any) -> str:
        if not isinstance(value, str) or value not in options:
            hint = did_you_mean(str(value), options) if isinstance(value, str) else None
            msg = f"got {_describe(value)}; expected one of {', '.join(options)}"
            raise Bad(msg + (f"; {hint}" if hint else ""))
        return value

    return check


def per_dim(inner: Checker, what: str) -> Checker:
    """A number or a list of numbers (one per spatial dimension); returns a tuple.

    The length is checked against the layer's dimensionality later, where it is known.
    """

    def check(value: Any) -> tuple:
        if isinstance(value, list):
            if not value:
                raise Bad(f"is an empty list; expected {what} or one per spatial dimension")
            out = []
            for i, v in enumerate(value):
                try:
                    out.append(inner(v))
                except Bad as exc:
                    raise Bad(f"item {i}: {exc}") from None
            return tuple(out)
        return (inner(value),)

    return check


class Fields:
    """A located view of one YAML mapping."""

    def __init__(self, mapping: Any, file: str, path: str, line: int | None = None) -> None:
        self.file = file
        self.path = path
        if not isinstance(mapping, dict):
            raise OracleError(
                f"got {_describe(mapping)}; expected a mapping of keys to values",
                file=file,
                line=line,
                path=path or None,
            )
        self.map = mapping
        self.line = getattr(mapping, "line", None) or line
        self.used: set[str] = set()

    # -- locations -------------------------------------------------------------------
    def key_path(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def key_line(self, key: str) -> int | None:
        lines = getattr(self.map, "key_lines", None)
        if lines and key in lines:
            return lines[key]
        return self.line

    def error(self, key: str | None, message: str, hint: str | None = None) -> OracleError:
        if key is None:
            return OracleError(message, file=self.file, line=self.line, path=self.path or None, hint=hint)
        return OracleError(
            message, file=self.file, line=self.key_line(key), path=self.key_path(key), hint=hint
        )

    # -- access ------------------------------------------------------------------------
    def has(self, key: str) -> bool:
        return key in self.map and self.map[key] is not None

    def req(self, key: str, check: Checker, expected: str = "") -> Any:
        self.used.add(key)
        if key not in self.map or self.map[key] is None:
            what = f" ({expected})" if expected else ""
            hint = self._misspelled(key)
            raise self.error(None, f"missing required key '{key}'{what}", hint=hint)
        return self._convert(key, check)

    def _misspelled(self, key: str) -> str | None:
        """A hint when a present, unknown key looks like the missing one."""
        import difflib

        for present in self.map:
            if not isinstance(present, str) or present in self.used:
                continue
            if _SYNONYMS.get(present) == key or difflib.get_close_matches(present, [key], n=1, cutoff=0.6):
                return f"found '{present}': did you mean '{key}'?"
        return None

    def opt(self, key: str, check: Checker, default: Any = None) -> Any:
        self.used.add(key)
        if key not in self.map or self.map[key] is None:
            return default
        return self._convert(key, check)

    def _convert(self, key: str, check: Checker) -> Any:
        try:
            return check(self.map[key])
        except Bad as exc:
            raise self.error(key, str(exc)) from None

    def sub(self, key: str, *, required: bool = True) -> Fields | None:
        self.used.add(key)
        if key not in self.map or self.map[key] is None:
            if required:
                raise self.error(None, f"missing required key '{key}' (a mapping)", hint=self._misspelled(key))
            return None
        return Fields(self.map[key], self.file, self.key_path(key), self.key_line(key))

    def items(self, key: str, *, required: bool = True) -> Iterator[tuple[int, Any, int | None]]:
        """Yield (index, value, line) of a list-valued key."""
        self.used.add(key)
        if key not in self.map or self.map[key] is None:
            if required:
                raise self.error(None, f"missing required key '{key}' (a list)", hint=self._misspelled(key))
            return iter(())
        seq = self.map[key]
        if not isinstance(seq, list):
            raise self.error(key, f"got {_describe(seq)}; expected a list")
        lines = getattr(seq, "item_lines", None) or [self.key_line(key)] * len(seq)
        return iter([(i, v, lines[i]) for i, v in enumerate(seq)])

    def done(self, allowed_extra: Sequence[str] = ()) -> None:
        """Reject keys that were never asked for."""
        for key in self.map:
            if key in self.used or key in allowed_extra:
                continue
            valid = sorted(self.used | set(allowed_extra))
            hint = None
            if isinstance(key, str) and key in _SYNONYMS and _SYNONYMS[key] in valid:
                hint = f"did you mean '{_SYNONYMS[key]}'?"
            if hint is None:
                hint = did_you_mean(str(key), valid)
            if hint is None and valid:
                hint = "valid keys: " + ", ".join(valid)
            # "unknown key 'bandwith' in network[0] (nvlink); did you mean 'beta_s_per_byte'?"
            where = f" in {self.path}" if self.path else " at the top level"
            raise OracleError(
                f"unknown key '{key}'{where}",
                file=self.file,
                line=self.key_line(key),
                hint=hint,
            )
