"""Human-readable units: seconds, bytes (10^9 = GB, as in docs/file-formats.md), FLOPs, counts.

Pure string formatting, shared by limit reasons (compute) and renderers.
"""

from __future__ import annotations

import math


def _float(v) -> float:
    """A float for any real number (an integer too large for a float is +-inf)."""
    try:
        return float(v)
    except OverflowError:
        return math.inf if v > 0 else -math.inf


def _big(v: float) -> str:
    """3 significant digits below 1000, then 12,345 up to a million, then 1.23e+07."""
    a = abs(v)
    if a < 1000:
        return f"{v:.3g}"
    if a < 1e6:
        return f"{v:,.0f}"
    return f"{v:.2e}"


def _unusual(v: float | None) -> str | None:
    """'n/a' for None and NaN, 'inf' or '-inf'; None for a finite number."""
    if v is None or math.isnan(v):
        return "n/a"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return None


def fmt_seconds(s: float | None) -> str:
    """3.2 ms, 41.7 s, 12.5 min, 3.4 h, 2.1 d, 3.2 y; huge values stay readable."""
    s = None if s is None else _float(s)
    if _unusual(s):
        return _unusual(s)
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
    return f"{_big(years)} y"


def fmt_bytes(b: float | None) -> str:
    """Decimal units: 1 GB = 10^9 bytes (docs/file-formats.md)."""
    if b is None:
        return "n/a"
    b = _float(b)
    if math.isnan(b):
        return "n/a"
    if math.isinf(b):
        return "inf" if b > 0 else "-inf"
    a = abs(b)
    for unit, scale in (("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if a >= scale:
            v = b / scale
            if unit == "PB":
                return f"{_big(v)} PB"
            return f"{v:.3g} {unit}"
    return f"{b:.0f} B"


def fmt_gb(b: float) -> str:
    """'21.3 GB' with at most one decimal, for limit reasons."""
    if b is None or not math.isfinite(_float(b)):
        return fmt_bytes(b)
    v = _float(b) / 1e9
    if v >= 1000:  # 1.33 TB rather than 1325 GB
        return fmt_bytes(b)
    return f"{v:.1f} GB" if v < 100 else f"{v:.0f} GB"


_SCALES = {"PB": 1e15, "TB": 1e12, "GB": 1e9, "MB": 1e6, "kB": 1e3, "B": 1.0}


def fmt_gb_apart(a: float, b: float) -> tuple[str, str]:
    """:func:`fmt_gb` of two sizes a message compares ("needs A of B"); where they differ
    but would read the same, both in that unit with as many more decimals as tell them
    apart (199.707 and 199.7 GB: '199.71 GB' and '199.70 GB', not '200 GB' twice)."""
    sa, sb = fmt_gb(a), fmt_gb(b)
    if sa != sb or a == b or not (math.isfinite(_float(a)) and math.isfinite(_float(b))):
        return sa, sb
    number, unit = sa.rsplit(" ", 1)
    shown = len(number.partition(".")[2])  # the decimals both texts have
    for decimals in range(shown + 1, 16):
        sa, sb = (f"{_float(v) / _SCALES[unit]:.{decimals}f} {unit}" for v in (a, b))
        if sa != sb:
            break
    return sa, sb


def fmt_g_apart(a: float, b: float) -> tuple[str, str]:
    """``f"{a:g}"`` and ``f"{b:g}"`` for a message comparing them ("B=... exceeds the ...
    samples"), with more significant digits where two different values would read the
    same (1281168 and 1281167: not '1.28117e+06' twice)."""
    sa, sb = f"{a:g}", f"{b:g}"
    digits = 7
    while sa == sb and a != b and digits <= 17:
        sa, sb = f"{a:.{digits}g}", f"{b:.{digits}g}"
        digits += 1
    return sa, sb


def fmt_count(n: float) -> str:
    """25,557,032 style for exact counts."""
    if isinstance(n, float) and not n.is_integer():
        return f"{n:,.1f}"
    return f"{int(n):,}"


def fmt_si(v: float, unit: str = "") -> str:
    """8.18 G, 1.2 T, ... for FLOPs and element counts."""
    if v is None:
        return "n/a"
    v = _float(v)
    if math.isnan(v):
        return "n/a"
    if math.isinf(v):
        return ("inf " + unit).rstrip() if v > 0 else ("-inf " + unit).rstrip()
    a = abs(v)
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if a >= scale:
            return f"{_big(v / scale) if prefix == 'P' else f'{v / scale:.3g}'} {prefix}{unit}"
    return f"{v:.3g} {unit}".rstrip()


def fmt_ratio(r: float | None) -> str:
    """A ratio as a multiple (issue 23: ratios said as ratios): 0.83x, 2.7x, 15x, 1,234x;
    three digits near 1 (1.04x, 0.95x), where two would read as 1x."""
    r = None if r is None else _float(r)
    if _unusual(r):
        return _unusual(r)
    if r >= 100:
        return f"{r:,.0f}x"
    return f"{r:.3g}x" if 0.9 <= r < 1.1 else f"{r:.2g}x"


def fmt_split(p1: int, p2: int) -> str:
    """A configuration's p1×p2 ('4×2'), or '–' where it has none: p1 = 0 when the p2 asked for
    does not divide the GPUs (strategies/base.hybrid_configurations; the point's limit says so)."""
    return f"{p1}×{p2}" if p1 > 0 else "–"


def fmt_gap(r: float, digits: int = 1) -> str:
    """How much longer than the best a time ``r`` times the best's is: +2.2% below twice
    the best, then as a multiple (2.7x), never +170%."""
    return f"+{100 * (r - 1):.{digits}f}%" if r < 2 else fmt_ratio(r)


def fmt_rate(bytes_per_s: float) -> str:
    """Bandwidth in GB/s (decimal)."""
    if bytes_per_s is None:
        return "n/a"
    v = _float(bytes_per_s)
    if math.isnan(v):
        return "n/a"
    return f"{_big(v / 1e9)} GB/s" if math.isfinite(v) else f"{v} GB/s"
