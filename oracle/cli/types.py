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
