"""Parsing values users type on the command line (or pass to the API as text)."""

from __future__ import annotations

import re

from oracle.errors import OracleError
from oracle.limits import MAX_GPUS  # noqa: F401 (the GPU counts' limit, defined once; imported from here too)

# GPU counts in one --gpus list (issue 29: 1..10000 is a question people ask); what a
# request may cost is guarded by memory (compute/engine.check_memory), this only bounds the list
MAX_COUNTS = 10**6
HINT = "e.g. 4,8,16, 4-1024 (powers of two) or 1..512 (every count; 1..512:8 in steps of 8)"


def parse_gpus(spec: str | int | list | tuple) -> list[int]:
    """GPU counts from '4,8,16', '4-1024' (the powers of two from 4 to 1024), '1..512'
    (every count from 1 to 512), '8..512:8' (from 8 to 512 in steps of 8), a mix
    ('1,2,8-64'), an int or a list of ints."""
    if isinstance(spec, bool):
        raise OracleError(f"got {spec!r}; expected GPU counts", path="--gpus")
    if isinstance(spec, int):
        items: list = [spec]
    elif isinstance(spec, (list, tuple)):
        items = list(spec)
    else:
        if not str(spec).strip():
            raise OracleError("is empty; expected GPU counts", path="--gpus", hint=HINT)
        items = [part.strip() for part in str(spec).split(",")]
    out: list[int] = []
    for item in items:
        if isinstance(item, bool):
            raise OracleError(f"got {item!r}; expected a GPU count", path="--gpus")
        if isinstance(item, int):
            out.append(_count(item, str(item)))
            continue
        text = str(item).strip()
        if not text:
            raise OracleError(f"empty item in '{spec}'", path="--gpus", hint=HINT)
        if ".." in text:
            out.extend(_every(text))
            if len(out) > MAX_COUNTS:  # several ranges: bound the list as it grows
                out = sorted(set(out))
                if len(out) > MAX_COUNTS:
                    break
        elif "-" in text.lstrip("-"):
            lo_text, _, hi_text = text.partition("-")
            lo = _count(_int(lo_text, text), text)
            hi = _count(_int(hi_text, text), text)
            if hi < lo:
                raise OracleError(
                    f"range '{text}' goes down", path="--gpus", hint=f"did you mean {hi}-{lo}?"
                )
            powers = [1 << k for k in range(0, 64) if lo <= (1 << k) <= hi]
            if not powers:
                raise OracleError(
                    f"range '{text}' holds no power of two",
                    path="--gpus",
                    hint="A-B means the powers of two from A to B; list counts as 3,6,12",
                )
            out.extend(powers)
        else:
            out.append(_count(_int(text, text), text))
    counts = sorted(set(out))
    if len(counts) > MAX_COUNTS:
        raise OracleError(f"{len(counts):,} GPU counts; at most {MAX_COUNTS:,} in one run", path="--gpus")
    return counts


def _every(text: str) -> range:
    """'A..B' (every count from A to B) or 'A..B:S' (in steps of S), A <= B."""
    lo_text, _, rest = text.partition("..")
    hi_text, colon, step_text = rest.partition(":")
    lo, hi = _count(_int(lo_text, text), text), _count(_int(hi_text, text), text)
    step = _int(step_text, text) if colon else 1
    if step < 1:
        raise OracleError(f"step of '{text}' is {step}; expected at least 1", path="--gpus", hint=HINT)
    if hi < lo:
        raise OracleError(f"range '{text}' goes down", path="--gpus", hint=f"did you mean {hi}..{lo}?")
    counts = range(lo, hi + 1, step)
    if len(counts) > MAX_COUNTS:  # checked before the list exists
        raise OracleError(f"'{text}' is {len(counts):,} GPU counts; at most {MAX_COUNTS:,} in one run", path="--gpus")
    return counts


def _int(text: str, whole: str) -> int:
    """Plain ASCII digits only: int() would read '1_6' as 16 and full-width digits too."""
    digits = text.strip()
    if re.fullmatch(r"[+-]?[0-9]+", digits, re.ASCII):
        return int(digits)
    raise OracleError(
        f"'{whole}' is not a GPU count",
        path="--gpus",
        hint="expected a number, a list (4,8,16), a range of powers of two (4-1024) or of every count (1..512[:step])",
    )


def _count(n: int, text: str) -> int:
    if n < 1:
        raise OracleError(f"got {text}; GPU counts must be at least 1", path="--gpus")
    if n > MAX_GPUS:
        raise OracleError(f"got {text}; at most {MAX_GPUS:,} GPUs", path="--gpus")
    return n


def default_gpus(total: int, cap: int = 1024) -> list[int]:
    """Powers of two from 1 up to the system's GPU count (at most ``cap``)."""
    top = min(total, cap)
    return [1 << k for k in range(0, 64) if (1 << k) <= top] or [1]


def parse_where(values: tuple[str, ...], option: str = "--where") -> dict[str, set[str]]:
    """--where / --exclude COL=VAL[,VAL] options as {column: {values}}."""
    out: dict[str, set[str]] = {}
    for item in values:
        col, sep, vals = item.partition("=")
        if not sep or not col.strip() or not vals.strip():
            raise OracleError(f"got '{item}'; expected COLUMN=VALUE[,VALUE...]", path=option)
        out.setdefault(col.strip(), set()).update(v.strip() for v in vals.split(","))
    return out
