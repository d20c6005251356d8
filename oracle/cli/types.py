"""Click parameter types shared by the commands: one validated type per kind of number
(GPU counts, widths, counts of things, byte sizes), each with the plausible limits that
the files' loaders use too, so that no value reaches the arithmetic unchecked (a
400-digit integer is one error line, exit 2, never an overflow, issue 28)."""

from __future__ import annotations

import math
import re
from typing import Any

import click

from oracle.limits import MAX_BYTES

_PLAIN_INT = re.compile(r"[+-]?[0-9]+", re.ASCII)

MAX_INT = 10**15  # any integer option: beyond every count oracle takes (a dataset's samples)
MAX_THREADS = 4096  # CPU threads of a profiling run


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
    '1_6' as 16 and full-width or Arabic-Indic digits as their ASCII values.  ``limit``
    (default MAX_INT) bounds it where ``max`` does not: the plausible ceiling of the kind
    of number, checked but not shown in the help."""

    def __init__(self, min=None, max=None, *, limit: int = MAX_INT, **kwargs):
        super().__init__(min, max, **kwargs)
        self.limit = limit if max is None or max > limit else max

    def convert(self, value, param, ctx):  # type: ignore[override]
        if isinstance(value, str):
            text = value.strip()
            if not _PLAIN_INT.fullmatch(text):
                self.fail(f"{value!r} is not a whole number (plain digits 0-9).", param, ctx)
            if len(text.lstrip("+-").lstrip("0")) > 30:  # before int(): no 400-digit numbers in messages
                self.fail(f"{_short(text)} is more than {self.limit:,}.", param, ctx)
        number = super().convert(value, param, ctx)
        if number > self.limit:
            self.fail(f"{number:,} is more than {self.limit:,}, which is not plausible here.", param, ctx)
        return number



def _short(text: str) -> str:
    return text if len(text) <= 40 else f"{text[:20]}...({len(text)} digits)"


_PLAIN_NUMBER = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?", re.ASCII)


class _KindRange:
    """An option of one kind of number (oracle/limits.py): the limits every file of the
    same kind keeps too.  Plain ASCII numbers only (float() would also take '1_0', 'nan'
    and full-width digits); whole kinds take plain digits.  The help shows the lower
    bound, and the upper one where it is small (φ <= 1000, γ <= 1); batches read NUMBER."""

    kind: Any

    def convert(self, value, param, ctx):  # type: ignore[override]
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            number = value
        else:
            text = str(value).strip()
            pattern = _PLAIN_INT if self.kind.whole else _PLAIN_NUMBER
            if not pattern.fullmatch(text) and _non_finite(text):  # nan, inf, Infinity
                self.fail(f"{_short(text)!r} is not a finite number; expected {self.kind.expected}.", param, ctx)
            if not pattern.fullmatch(text):
                what = "a whole number (plain digits 0-9)" if self.kind.whole else "a number"
                self.fail(f"{_short(text)!r} is not {what}; expected {self.kind.expected}.", param, ctx)
            if len(text.lstrip("+-").lstrip("0")) > 30 and self.kind.whole:
                self.fail(f"{_short(text)} is not plausible; expected {self.kind.expected}.", param, ctx)
            number = int(text) if self.kind.whole else float(text)
        problem = self.kind.problem(number)
        if problem:
            self.fail(problem.replace("got inf", f"got {_short(str(value).strip())}") + ".", param, ctx)
        return self.kind.convert(number)


class _KindInt(_KindRange, click.IntRange):
    below_to_rule = False  # whole numbers below the lower bound go on to the option's own rule (count_type)

    def convert(self, value, param, ctx):  # type: ignore[override]
        text = str(value).strip()
        if self.below_to_rule and _PLAIN_INT.fullmatch(text) and len(text) <= 30 and int(text) < self.kind.lo:
            return int(text)
        return super().convert(value, param, ctx)


class _KindFloat(_KindRange, click.FloatRange):
    def _describe_range(self) -> str:
        return super()._describe_range() if self.name == "float range" else ""  # a NUMBER: no range shown


def KindType(kind, lo=None) -> click.ParamType:  # noqa: N802 (used as a type)
    """The click type of ``kind`` (``lo``: a lower bound of its own, e.g. 0 warm-up runs)."""
    from dataclasses import replace

    kind = kind if lo is None else replace(kind, lo=lo)
    cls = _KindInt if kind.whole else _KindFloat
    lo_shown = int(kind.lo) if kind.whole else kind.lo
    out = cls(min=lo_shown, max=kind.hi if kind.hi <= 1000 else None, min_open=kind.lo_open)
    out.kind = kind
    if not kind.whole and kind.lo > 0 and kind.hi > 1000:  # batches: NUMBER, as any positive number reads
        out.name = "number"
    return out


def _non_finite(text: str) -> bool:
    try:
        return not math.isfinite(float(text))
    except ValueError:
        return False


def gpu_count_type() -> KindType:
    """A GPU count: 1 to MAX_GPUS, as in every file (oracle/limits.py)."""
    from oracle.limits import GPUS

    return KindType(GPUS)


def count_type(min: int = 1, below_to_rule: bool = False) -> KindType:
    """A count of things bounded by the GPUs (p1, p2, segments, GPUs per node, layers).
    ``below_to_rule``: a whole number below ``min`` (the help's bound) is left to the
    option's own rule, which refuses it in its words (--bucket-layers 0: compute/options.py
    _chunk_layers, with its hint, the same line as the Python API's)."""
    from oracle.limits import COUNT

    out = KindType(COUNT, lo=min)
    out.below_to_rule = below_to_rule
    return out


def width_type() -> KindType:
    """A table width in characters."""
    from oracle.limits import WIDTH

    return KindType(WIDTH)


# byte units (the prefix in any case, the B upper case: ByteSize): K, M, G, T, P and KiB ... PiB binary (nccl-tests' -b/-e take K, M and G
# as 2^10, 2^20, 2^30: parsesize in src/common.cu), KB ... PB decimal (SI), B bytes
_UNITS = {"": 1, "b": 1, **{p + suffix: 1 << 10 * i for i, p in enumerate("kmgtp", 1) for suffix in ("", "ib")},
          **{p + "b": 10 ** (3 * i) for i, p in enumerate("kmgtp", 1)}}  # fmt: skip


def _bad(param, message: str):
    """A bad option value: one 'oracle: error: ...' line and exit 2 (docs/errors-and-robustness.md)."""
    from oracle.errors import OracleError

    raise OracleError(message, path=param.opts[0] if param is not None else None)


_BYTES_TEXT = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)", re.ASCII)  # plain digits 0-9 only


class ByteSize(click.ParamType):
    """1048576, 1M, 1MiB (binary, as nccl-tests' -b/-e), 1MB (decimal), K to P in any case
    (:data:`_UNITS`); the B of bytes upper case (a lower-case b is bits: 1Mb is refused).
    Exact: whole numbers of bytes up to 2^60, in integer arithmetic (2^60 + 1 is refused,
    not rounded to 2^60 as a float would)."""

    name = "BYTES"

    def convert(self, value, param, ctx):
        from fractions import Fraction

        if isinstance(value, int) and not isinstance(value, bool):
            return value
        text = str(value).strip()
        m = _BYTES_TEXT.fullmatch(text)
        if m and m.group(2).endswith("b"):
            _bad(param, f"{_short(text)!r}: a lower-case b is bits; write B for bytes (e.g. 1MB, 1MiB, 1M)")
        if not m or m.group(2).lower() not in _UNITS:
            _bad(param, f"{_short(text)!r} is not a byte count (plain digits 0-9, e.g. 1048576, 1M, 1MiB, 1MB;"
                 " K, M, G, T, P or KiB ... PiB binary, KB ... PB decimal)")
        n = Fraction(m.group(1)) * _UNITS[m.group(2).lower()] if len(m.group(1)) <= 40 else Fraction(MAX_BYTES + 1)
        if n > MAX_BYTES:
            _bad(param, f"{_short(text)} is more than 2^60 bytes; expected a message size")
        if n.denominator != 1:
            _bad(param, f"{_short(text)!r} is not a whole number of bytes")
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
        from oracle.load.values import MAX_GPUS

        if not (num.isascii() and num.isdigit()) or len(num) > 30 or not 1 <= int(num) <= MAX_GPUS:
            _bad(param, f"got {_short(text)!r}; expected N or FILE=N with N a positive integer of at most {MAX_GPUS:,}")
        return (file, int(num))
