"""CSV of step times (PyTorch scripts, Lightning's ``metrics.csv``) ->
:class:`oracle.load.logs.LogTiming` (the rules are in the docstring of
:mod:`oracle.load.logs`)."""

from __future__ import annotations

import csv
import re
from datetime import datetime

from oracle.errors import OracleError
from oracle.load.logs import (
    NUMBER,
    LogTiming,
    data_lines,
    fmt_value,
    median,
    parse_number,
    steady_values,
)

PER_STEP_NAMES = (
    "train_step_time",
    "step_time",
    "batch_time",
    "iter_time",
    "iteration_time",
    "time_per_step",
    "time_per_iter",
    "duration",
)
AMBIGUOUS_NAMES = ("time_s", "seconds", "secs", "time", "sec")
CUMULATIVE_NAMES = ("elapsed_time", "elapsed", "wall_time", "walltime", "timestamp")
STEP_NAMES = ("step", "global_step", "iteration", "iter", "it", "batch_idx")


def _norm(name: str) -> str:
    return re.sub(r"[/\-\s.]+", "_", name.strip().strip('"').lower()).strip("_")


def _time_column(header: list[str]) -> tuple[int, str, str, float] | None:
    """(index, header name, kind, scale) of the preferred time column, or None."""
    candidates = []
    for idx, raw in enumerate(header):
        n = _norm(raw)
        scale = 1.0
        if n.endswith("_ms"):
            n, scale = n[:-3], 1e-3
        forms = {n}
        for f in list(forms):
            if f.endswith("_step"):
                forms.add(f[: -len("_step")])
        for f in list(forms):
            if f.startswith("train_") and f != "train_step_time":
                forms.add(f[len("train_"):])
        for rank, (names, kind) in enumerate(
            ((PER_STEP_NAMES, "per-step"), (AMBIGUOUS_NAMES, "ambiguous"), (CUMULATIVE_NAMES, "cumulative"))
        ):
            for pos, known in enumerate(names):
                if known in forms:
                    exact = 0 if known == n else 1
                    candidates.append(((rank, pos, exact, idx), idx, raw.strip(), kind, scale))
    if not candidates:
        return None
    candidates.sort(key=lambda c: c[0])
    _, idx, raw, kind, scale = candidates[0]
    return idx, raw, kind, scale


def _step_column(header: list[str], exclude: int) -> int | None:
    normed = [_norm(h) for h in header]
    for known in STEP_NAMES:
        for idx, n in enumerate(normed):
            if idx != exclude and n == known:
                return idx
    return None


def _time_value(cell: str, kind: str, name: str, line: int, column: str) -> float:
    c = cell.strip()
    if kind != "per-step" and not NUMBER.fullmatch(c):
        try:
            return datetime.fromisoformat(c.replace("Z", "+00:00")).timestamp()
        except (ValueError, OverflowError, OSError):
            pass
    return parse_number(c, name, line, f"column '{column}'")


def parse_step_csv(text: str, name: str) -> LogTiming:
    """Import a CSV of step times (rules in the module docstring)."""
    lines = data_lines(text)
    if not lines:
        raise OracleError("has no header row; expected a CSV of step times", file=name)
    head_no, head_line = lines[0]
    sep = "\t" if "\t" in head_line and "," not in head_line else ","

    def cells(no: int, line: str) -> list[str]:
        try:
            return next(csv.reader([line], delimiter=sep, strict=True))
        except csv.Error as exc:
            raise OracleError(f"CSV syntax error: {exc}", file=name, line=no) from None

    header = [h.strip() for h in cells(head_no, head_line)]
    found = _time_column(header)
    if found is None:
        shown = ", ".join(h for h in header[:12] if h) + (", ..." if len(header) > 12 else "")
        raise OracleError(
            f"no time column among: {shown}",
            file=name,
            line=head_no,
            hint="expected a column named step_time, train_step_time, batch_time, iter_time,"
            " time, duration, seconds, time_s, elapsed, timestamp or wall_time",
        )
    tcol, tname, kind, scale = found
    scol = _step_column(header, tcol)
    rows = _rows(((no, cells(no, line)) for no, line in lines[1:]), header, tcol, scol, kind, scale, name)
    if not rows:
        raise OracleError(f"column '{tname}' has no values", file=name, line=head_no)
    values = [t for _, _, t in rows]
    if kind == "ambiguous":
        increasing = len(values) >= 4 and all(b > a for a, b in zip(values, values[1:]))
        kind = "cumulative" if increasing else "per-step"
        how = "values increase on every row" if increasing else "values do not increase on every row"
    else:
        how = f"named '{tname}'"
    notes = [f"column '{tname}' read as {kind} times ({how})"]
    if kind == "cumulative":
        times = _differenced(rows, tname, header[scol] if scol is not None else "", scol is not None, name, notes)
        what = "intervals (a cumulative column of n values gives n-1)"
    else:
        for no, _, t in rows:
            if t <= 0:
                raise OracleError(
                    f"column '{tname}': {fmt_value(t)} is not a time > 0", file=name, line=no
                )
        times = values
        what = "step times"
    steady, w = steady_values(times, name, what, head_no)
    iteration_s = median(steady)
    if iteration_s <= 0:
        raise OracleError(
            f"median time per iteration from column '{tname}' is 0", file=name, line=head_no
        )
    notes.append(
        f"{len(times)} timings; first {w} dropped as warm-up (max(1, 5%)); median of"
        f" {len(steady)} = {fmt_value(iteration_s)} s"
    )
    return LogTiming(name, "step-csv", None, iteration_s, None, len(times), len(steady), "; ".join(notes))


def _rows(parsed, header: list[str], tcol: int, scol: int | None, kind: str, scale: float, name: str):
    """(line, step or None, time in seconds) of the rows with a time."""
    rows: list[tuple[int, float | None, float]] = []
    tname = header[tcol].strip()
    for no, row in parsed:
        if len(row) > len(header):
            raise OracleError(
                f"{len(row)} cells; the header has {len(header)}", file=name, line=no
            )
        cell = row[tcol].strip() if tcol < len(row) else ""
        if not cell:
            continue  # Lightning writes rows with other metrics only
        t = _time_value(cell, kind, name, no, tname) * scale
        step = None
        if scol is not None and scol < len(row) and row[scol].strip():
            step = parse_number(row[scol], name, no, f"column '{header[scol]}'")
        rows.append((no, step, t))
    return rows


def _differenced(rows, tname: str, step_name: str, has_steps: bool, name: str, notes: list[str]) -> list[float]:
    """Per-step times from a cumulative column: differences, per step when every row has one."""
    use_steps = has_steps and all(s is not None for _, s, _ in rows)
    times = []
    for (no0, s0, t0), (no1, s1, t1) in zip(rows, rows[1:]):
        if t1 < t0:
            raise OracleError(
                f"column '{tname}' goes back in time ({fmt_value(t1)} after {fmt_value(t0)})",
                file=name,
                line=no1,
            )
        if use_steps:
            if s1 <= s0:  # type: ignore[operator]
                raise OracleError(
                    f"column '{step_name}' does not increase ({s1:g} after {s0:g})",
                    file=name,
                    line=no1,
                )
            times.append((t1 - t0) / (s1 - s0))  # type: ignore[operator]
        else:
            times.append(t1 - t0)
    notes.append(
        "differenced"
        + (f" and divided by the steps in '{step_name}'" if use_steps else " row by row")
    )
    return times
