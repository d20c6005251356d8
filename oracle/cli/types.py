"""Click parameter types shared by the commands."""

from __future__ import annotations

import math
import re

import click

_PLAIN_INT = re.compile(r"[+-]?[0-9]+", re.ASCII)


class FiniteRange(click.FloatRange):
    """click.FloatRange that also refuses NaN and infinities: NaN compares false with
    every bound, so `--min-accuracy nan` would otherwise pass and switch a gate off."""

    def convert(self, value, param, ctx):  # type: ignore[override]
        number = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return super().convert(number, param, ctx)


class PlainIntRange(click.IntRange):
    """click.IntRange that reads only plain ASCII digits: Python's int() would also take
    '1_6' as 16 and full-width or Arabic-Indic digits as their ASCII values."""

    def convert(self, value, param, ctx):  # type: ignore[override]
        if isinstance(value, str) and not _PLAIN_INT.fullmatch(value.strip()):
            self.fail(f"{value!r} is not a whole number (plain digits 0-9).", param, ctx)
        return super().convert(value, param, ctx)


_UNITS = {
    "": 1,
    "b": 1,
    "k": 1 << 10,
    "kib": 1 << 10,
    "m": 1 << 20,
    "mib": 1 << 20,
    "g": 1 << 30,
    "gib": 1 << 30,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
}


def _bad(param, message: str):
    """A bad option value: one 'oracle: error: ...' line and exit 2 (docs/errors-and-robustness.md)."""
    from oracle.errors import OracleError

    raise OracleError(message, path=param.opts[0] if param is not None else None)


class ByteSize(click.ParamType):
    """1048576, 1M, 1MiB (binary, as nccl-tests' -b/-e), 1MB (decimal)."""

    name = "BYTES"

    def convert(self, value, param, ctx):
        import re

        if isinstance(value, int):
            return value
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", str(value))
        if not m or m.group(2).lower() not in _UNITS:
            _bad(param, f"{value!r} is not a byte count (e.g. 1048576, 1M, 1MiB, 1MB)")
        n = float(m.group(1)) * _UNITS[m.group(2).lower()]
        if n != int(n):
            _bad(param, f"{value!r} is not a whole number of bytes")
        return int(n)


class Count(click.ParamType):
    """N (every log without a rank table) or FILE=N (that log only)."""

    name = "[FILE=]N"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        text = str(value)
        file, sep, num = text.rpartition("=")
        if not sep:
            file, num = "", text
        if not num.isdigit() or int(num) < 1:
            _bad(param, f"got {value!r}; expected N or FILE=N with N a positive integer")
        return (file, int(num))
