"""Human-readable units: seconds, bytes (10^9 = GB, as in SPEC §3.2), FLOPs, counts.

Pure string formatting, shared by limit reasons (compute) and renderers.
"""

from __future__ import annotations

import math


def fmt_seconds(s: float | None) -> str:
    """3.2 ms, 41.7 s, 12.5 min, 3.4 h, 2.1 d, 3.2 y; huge values stay readable."""
    if s is None or (isinstance(s, float) and math.isnan(s)):
        return "n/a"
    if math.isinf(s):
        return "inf"
    a = abs(s)
    if a == 0:
        return "0 s"
    if a < 1e-6:
        return f"{s * 1e9:.3g} ns"
    if a < 1e-3:
        return f"{s * 1e6:.3g} µs"
    if a < 1:
        return f"{s * 1e3:.3g} ms"
    if a < 60:
        return f"{s:.3g} s"
    if a < 3600:
        return f"{s / 60:.3g} min"
    if a < 86400:
        return f"{s / 3600:.3g} h"
    if a < 365.25 * 86400:
        return f"{s / 86400:.3g} d"
    years = s / (365.25 * 86400)
    return f"{years:.3g} y" if years < 1e6 else f"{years:.2e} y"


def fmt_bytes(b: float | None) -> str:
    """Decimal units: 1 GB = 10^9 bytes (SPEC §3.2)."""
    if b is None or (isinstance(b, float) and math.isnan(b)):
        return "n/a"
    if math.isinf(b):
        return "inf"
    a = abs(b)
    for unit, scale in (("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if a >= scale:
            v = b / scale
            if unit == "PB" and v >= 1e4:
                return f"{v:.2e} PB"
            return f"{v:.3g} {unit}"
    return f"{b:.0f} B"


def fmt_gb(b: float) -> str:
    """'21.3 GB' with at most one decimal, for limit reasons."""
    v = b / 1e9
    if v >= 1e6:
        return f"{v:.2e} GB"
    return f"{v:.1f} GB" if v < 100 else f"{v:.0f} GB"


def fmt_count(n: float) -> str:
    """25,557,032 style for exact counts."""
    if isinstance(n, float) and not n.is_integer():
        return f"{n:,.1f}"
    return f"{int(n):,}"


def fmt_si(v: float, unit: str = "") -> str:
    """8.18 G, 1.2 T, ... for FLOPs and element counts."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    a = abs(v)
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if a >= scale:
            return f"{v / scale:.3g} {prefix}{unit}"
    return f"{v:.3g} {unit}".rstrip()


def fmt_rate(bytes_per_s: float) -> str:
    """Bandwidth in GB/s (decimal)."""
    return f"{bytes_per_s / 1e9:.3g} GB/s"
