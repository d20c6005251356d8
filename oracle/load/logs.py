"""Importers: real training logs -> measured-run figures (docs/file-formats.md).

Three formats are read, chosen by content (:func:`detect_format`), never by extension:

``chainer``
    Chainer's ``LogReport`` JSON: a list of objects with at least ``epoch``,
    ``iteration`` and ``elapsed_time`` (cumulative seconds since the trainer started).
``plain``
    A per-iteration time log: one number per line (the seconds one iteration took), or
    ``iteration,seconds`` / ``iteration seconds`` per line.  ``#`` starts a comment;
    blank lines are ignored.  All data lines have the same number of fields.
``step-csv``
    A CSV of step times with a header row (PyTorch scripts, Lightning's ``CSVLogger``
    ``metrics.csv``): a time column and optionally a step/iteration column.  Cells left
    empty (Lightning writes train and validation metrics on separate rows) are skipped.

Each importer returns a :class:`LogTiming`.  The rules, so that a figure can be traced
back to the lines it came from:

Chainer LogReport
    The first entry's ``elapsed_time`` is measured from the trainer's start and includes
    start-up (process launch, dataset scan, cuDNN autotuning), so it is never used on its
    own; only differences between *successive* entries are ("steady-state pairs").

    - ``iteration_s`` = median over the pairs of Δelapsed_time / Δiteration.
    - *Epoch-triggered log* (every entry is at an epoch boundary: each pair advances the
      epoch, and Δiteration / Δepoch varies by at most one iteration, the rounding of a
      fractional iterations-per-epoch): ``epoch_s`` = median over the pairs of
      Δelapsed_time / Δepoch (= the median epoch-to-epoch difference when LogReport is
      triggered every epoch), and ``iterations_per_epoch`` = (last - first iteration) /
      (last - first epoch).
    - *Iteration-triggered log* (several entries per epoch, or entries not on epoch
      boundaries, so whole epochs are not bracketed): ``epoch_s`` = ``iteration_s`` ×
      ``iterations_per_epoch``.  ``iterations_per_epoch`` is Δiteration / Δepoch_detail
      when the entries carry ``epoch_detail``; otherwise it is bounded by the entries:
      Chainer's ``epoch`` counts completed epochs, so an entry at iteration *i* with
      epoch *e* means i/(e+1) < iterations_per_epoch <= i/e; the midpoint of the
      intersection of these intervals is used.  A log shorter than one epoch gives no
      ``epoch_s`` (only ``iteration_s``).

Plain per-iteration log and CSV of step times
    Warm-up: the first max(1, floor(5 % of n)) timings are dropped (the first iteration
    allocates memory and autotunes kernels; 5 % covers a few more on long logs), and
    ``iteration_s`` is the median of the rest.  ``epoch_s`` and ``iterations_per_epoch``
    are not known from these formats (None); docs/file-formats.md lets ``iteration_s`` replace
    ``epoch_s``.

    CSV time columns are recognised by name (case-insensitive; ``/``, ``-`` and spaces
    read as ``_``; a Lightning ``_step`` suffix and a ``train_`` prefix are tolerated;
    a ``_ms`` suffix means milliseconds), in this order of preference:
    per-step names ``train_step_time, step_time, batch_time, iter_time,
    iteration_time, time_per_step, time_per_iter, duration``; ambiguous names
    ``time_s, seconds, secs, time, sec``; cumulative names ``elapsed_time, elapsed,
    wall_time, walltime, timestamp``.  A cumulative column (cumulative name, or an
    ambiguous name whose values increase strictly on every row, at least 4 of them) is
    differenced first — divided by Δstep when every used row has a step — and the
    warm-up rule applies to the differences.  Timestamps may also be ISO 8601 strings.
    Step columns: ``step, global_step, iteration, iter, it, batch_idx``.

Every problem is an :class:`~oracle.errors.OracleError` naming the file and, where
there is one, the line.  An unrecognised format raises :class:`UnknownLogFormat` (a
subclass), so that a caller can choose to skip such files.
"""

from __future__ import annotations

import csv
import json
import math
import re
import statistics
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from oracle.errors import OracleError
from oracle.load.source import parse_json, read_bytes
from oracle.load.yamlfile import decode_text

FORMATS = ("chainer", "plain", "step-csv")
FORMAT_NAMES = {
    "chainer": "Chainer LogReport JSON",
    "plain": "per-iteration time log",
    "step-csv": "CSV of step times",
}
UNKNOWN_MESSAGE = (
    "unknown log format: expected Chainer LogReport JSON, a per-iteration time log,"
    " or a CSV of step times"
)
WARMUP_FRACTION = 0.05


class UnknownLogFormat(OracleError):
    """The file is none of the formats this module reads."""


@dataclass(frozen=True)
class LogTiming:
    """What a training log says about the speed of the run."""

    file: str
    format: str
    epoch_s: float | None
    iteration_s: float | None
    iterations_per_epoch: float | None
    entries: int
    steady_entries: int
    notes: str


# --------------------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------------------


def detect_format(path: str | Path) -> str:
    """``"chainer"``, ``"plain"`` or ``"step-csv"``, decided by the file's content."""
    return _detect(_read(path), str(path))


def read_log(path: str | Path, fmt: str | None = None) -> LogTiming:
    """Detect the format (unless given) and import the log."""
    text = _read(path)
    name = str(path)
    fmt = fmt or _detect(text, name)
    if fmt == "chainer":
        return parse_chainer(text, name)
    if fmt == "plain":
        return parse_plain(text, name)
    if fmt == "step-csv":
        return parse_step_csv(text, name)
    raise OracleError(f"unknown log format name '{fmt}'", hint="expected one of " + ", ".join(FORMATS))


def _read(path: str | Path) -> str:
    """The text of a log; binary and non-UTF-8 files are an unknown format."""
    name = str(path)
    data = read_bytes(path, "training log")
    if b"\x00" in data:
        raise UnknownLogFormat(UNKNOWN_MESSAGE, file=name, hint="this is a binary file")
    try:
        data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UnknownLogFormat(UNKNOWN_MESSAGE, file=name, hint="this is not UTF-8 text") from None
    return decode_text(data, name, "training log")


def _data_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of the lines that are neither blank nor ``#`` comments."""
    out = []
    for no, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if s and not s.startswith("#"):
            out.append((no, line))
    return out


def _detect(text: str, name: str) -> str:
    stripped = text.lstrip()
    if stripped[:1] in ("[", "{"):
        doc = _load_json(text, name)
        if isinstance(doc, list) and any(isinstance(e, dict) and "elapsed_time" in e for e in doc):
            return "chainer"
        if isinstance(doc, list) and doc and all(isinstance(e, dict) for e in doc):
            hint = (
                "a JSON list of objects without 'elapsed_time';"
                " Chainer's LogReport writes epoch, iteration and elapsed_time"
            )
        else:
            hint = f"a JSON {_json_kind(doc)}"
        raise UnknownLogFormat(UNKNOWN_MESSAGE, file=name, hint=hint)
    lines = _data_lines(text)
    if not lines:
        raise OracleError("has only comments and blank lines; expected a training log", file=name)
    no, first = lines[0]
    fields = [f for f in re.split(r"[,\s]+", first.split("#", 1)[0]) if f]
    if fields and all(_NUMBER.fullmatch(f) for f in fields):
        return "plain"
    if _looks_like_header(first):
        return "step-csv"
    raise UnknownLogFormat(UNKNOWN_MESSAGE, file=name, line=no)


def _looks_like_header(line: str) -> bool:
    """A CSV header: comma- or tab-separated, at least two fields, one of them a name."""
    sep = "\t" if "\t" in line and "," not in line else ","
    if sep not in line:
        return False
    cells = [c.strip().strip('"').strip() for c in line.strip().split(sep)]
    if len(cells) < 2:
        return False
    return any(c and not _NUMBER.fullmatch(c) for c in cells)


# --------------------------------------------------------------------------------------
# Numbers
# --------------------------------------------------------------------------------------

_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def _number(token: str, name: str, line: int, what: str) -> float:
    t = token.strip()
    if not _NUMBER.fullmatch(t):
        shown = t if len(t) <= 40 else t[:37] + "..."
        raise OracleError(f"{what}: '{shown}' is not a number", file=name, line=line)
    v = float(t)
    if not math.isfinite(v):
        raise OracleError(f"{what}: {t} is too large", file=name, line=line)
    return v


def _median(values: list[float]) -> float:
    return float(statistics.median(values))


def _fmt(v: float) -> str:
    return f"{v:.5g}"


# --------------------------------------------------------------------------------------
# Chainer LogReport JSON
# --------------------------------------------------------------------------------------


def _load_json(text: str, name: str):
    return parse_json(text, name)


def _json_kind(doc: object) -> str:
    if isinstance(doc, list):
        return "list of non-objects" if doc else "empty list"
    if isinstance(doc, dict):
        return "object (expected a list of LogReport entries)"
    return type(doc).__name__


def _item_lines(text: str, count: int) -> list[int]:
    """Line number where each item of a top-level JSON list starts (text is valid JSON)."""
    dec = json.JSONDecoder()
    ws = re.compile(r"\s*")
    i = ws.match(text, 0).end() + 1  # past '['
    lines = []
    for _ in range(count):
        i = ws.match(text, i).end()
        lines.append(text.count("\n", 0, i) + 1)
        _, i = dec.raw_decode(text, i)
        i = ws.match(text, i).end()
        if i < len(text) and text[i] == ",":
            i += 1
    return lines


def _entry_number(
    entry: dict, key: str, name: str, line: int, index: int, whole: bool = False
) -> float:
    if key not in entry:
        raise OracleError(
            f"LogReport entry {index + 1} has no '{key}'",
            file=name,
            line=line,
            hint="each entry needs epoch, iteration and elapsed_time",
        )
    v = entry[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise OracleError(
            f"LogReport entry {index + 1}: '{key}' is {json.dumps(v)[:40]}; expected a number",
            file=name,
            line=line,
        )
    try:
        f = float(v)
    except OverflowError:
        f = math.inf
    if not math.isfinite(f) or f < 0:
        raise OracleError(
            f"LogReport entry {index + 1}: '{key}' is {v!r}; expected a finite number >= 0",
            file=name,
            line=line,
        )
    if whole and f != int(f):
        raise OracleError(
            f"LogReport entry {index + 1}: '{key}' is {v!r}; expected a whole number",
            file=name,
            line=line,
        )
    return f


def _finite_or_none(value: object) -> float | None:
    """A JSON number as a finite float, or None for anything else."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        f = float(value)
    except OverflowError:
        return None
    return f if math.isfinite(f) else None


def parse_chainer(text: str, name: str) -> LogTiming:
    """Import a Chainer LogReport JSON (rules in the module docstring)."""
    doc = _load_json(text, name)
    if not isinstance(doc, list):
        raise OracleError(
            f"top level is a JSON {_json_kind(doc)}; expected a list of LogReport entries", file=name
        )
    if not doc:
        raise OracleError("has no LogReport entries (an empty JSON list)", file=name)
    lines = _item_lines(text, len(doc))
    epochs, iters, elapsed, details = [], [], [], []
    for k, (entry, line) in enumerate(zip(doc, lines)):
        if not isinstance(entry, dict):
            raise OracleError(
                f"LogReport entry {k + 1} is a {type(entry).__name__}; expected an object"
                " with epoch, iteration and elapsed_time",
                file=name,
                line=line,
            )
        e = _entry_number(entry, "epoch", name, line, k, whole=True)
        it = _entry_number(entry, "iteration", name, line, k, whole=True)
        t = _entry_number(entry, "elapsed_time", name, line, k)
        details.append(_finite_or_none(entry.get("epoch_detail")))
        if k:
            if it <= iters[-1]:
                raise OracleError(
                    f"LogReport entry {k + 1}: iteration {it:g} does not increase"
                    f" (previous entry: {iters[-1]:g})",
                    file=name,
                    line=line,
                )
            if e < epochs[-1]:
                raise OracleError(
                    f"LogReport entry {k + 1}: epoch {e:g} goes back (previous entry: {epochs[-1]:g})",
                    file=name,
                    line=line,
                )
            if t <= elapsed[-1]:
                raise OracleError(
                    f"LogReport entry {k + 1}: elapsed_time {t:g} does not increase"
                    f" (previous entry: {elapsed[-1]:g})",
                    file=name,
                    line=line,
                )
        epochs.append(e)
        iters.append(it)
        elapsed.append(t)
    n = len(doc)
    if n < 2:
        raise OracleError(
            "has a single LogReport entry; at least 2 are needed (the first entry's time"
            " includes start-up, so only differences between entries are steady state)",
            file=name,
            line=lines[0],
        )
    pairs = range(1, n)
    dt = [elapsed[i] - elapsed[i - 1] for i in pairs]
    dit = [iters[i] - iters[i - 1] for i in pairs]
    dep = [epochs[i] - epochs[i - 1] for i in pairs]
    per_iter = [t / m for t, m in zip(dt, dit)]
    iteration_s = _median(per_iter)
    notes = [f"{n} LogReport entries; steady state = the {n - 1} differences between successive entries"]
    notes.append(f"first entry (incl. start-up) {_fmt(elapsed[0])} s at iteration {iters[0]:g}")

    ratios = [m / d for m, d in zip(dit, dep) if d > 0]
    epoch_triggered = all(d >= 1 for d in dep) and max(ratios) - min(ratios) <= 1.0 + 1e-9
    if epoch_triggered:
        per_epoch = [t / d for t, d in zip(dt, dep)]
        epoch_s = _median(per_epoch)
        ipe = (iters[-1] - iters[0]) / (epochs[-1] - epochs[0])
        notes.append(
            f"epoch-triggered: epoch diffs n={len(per_epoch)} min={_fmt(min(per_epoch))}"
            f" max={_fmt(max(per_epoch))} median={_fmt(epoch_s)}"
        )
    else:
        ipe = _iterations_per_epoch(iters, epochs, details)
        if ipe is not None and not math.isfinite(iteration_s * ipe):
            ipe = None
        if ipe is None:
            epoch_s = None
            notes.append(
                "iteration-triggered and shorter than one epoch: iterations per epoch"
                " unknown, so no epoch_s (iteration_s only)"
            )
        else:
            epoch_s = iteration_s * ipe
            notes.append(
                "iteration-triggered (whole epochs not bracketed): epoch_s ="
                f" iteration_s x {_fmt(ipe)} iterations per epoch"
            )
    notes.append(
        f"s/iteration median {_fmt(iteration_s)}"
        f" (min {_fmt(min(per_iter))}, max {_fmt(max(per_iter))})"
    )
    return LogTiming(
        file=name,
        format="chainer",
        epoch_s=epoch_s,
        iteration_s=iteration_s,
        iterations_per_epoch=ipe,
        entries=n,
        steady_entries=n - 1,
        notes="; ".join(notes),
    )


def _iterations_per_epoch(
    iters: list[float], epochs: list[float], details: list[float | None]
) -> float | None:
    """Iterations per epoch of an iteration-triggered LogReport (module docstring)."""
    if all(d is not None for d in details):
        ratios = [
            (iters[i] - iters[i - 1]) / (details[i] - details[i - 1])  # type: ignore[operator]
            for i in range(1, len(iters))
            if details[i] > details[i - 1]  # type: ignore[operator]
        ]
        if ratios:
            return _median(ratios)
    lo, hi = 0.0, math.inf
    for it, e in zip(iters, epochs):
        lo = max(lo, it / (e + 1))
        if e >= 1:
            hi = min(hi, it / e)
    if math.isinf(hi) or lo > hi:
        return None
    return (lo + hi) / 2


# --------------------------------------------------------------------------------------
# Plain per-iteration log
# --------------------------------------------------------------------------------------


def _warmup(n: int) -> int:
    return max(1, int(n * WARMUP_FRACTION))


def _steady(values: list[float], name: str, what: str, line: int | None) -> tuple[list[float], int]:
    if len(values) < 2:
        raise OracleError(
            f"has {len(values)} {what}; at least 2 are needed (the first is warm-up)",
            file=name,
            line=line,
        )
    w = _warmup(len(values))
    return values[w:], w


def parse_plain(text: str, name: str) -> LogTiming:
    """Import a per-iteration time log (rules in the module docstring)."""
    rows: list[tuple[int, list[str]]] = []
    for no, line in enumerate(text.splitlines(), 1):
        content = line.split("#", 1)[0].strip()
        if content:
            rows.append((no, [f for f in re.split(r"[,\s]+", content) if f]))
    if not rows:
        raise OracleError("has only comments and blank lines; expected per-iteration times", file=name)
    width = len(rows[0][1])
    if width not in (1, 2):
        raise OracleError(
            f"{width} fields; expected one number (seconds per iteration) or"
            " 'iteration, seconds' per line",
            file=name,
            line=rows[0][0],
        )
    times: list[float] = []
    last_iter: float | None = None
    for no, fields in rows:
        if len(fields) != width:
            raise OracleError(
                f"{len(fields)} fields; expected {width} like the first data line"
                f" ({'seconds' if width == 1 else 'iteration, seconds'})",
                file=name,
                line=no,
            )
        if width == 2:
            it = _number(fields[0], name, no, "iteration")
            if last_iter is not None and it <= last_iter:
                raise OracleError(
                    f"iteration {fields[0]} does not increase (previous: {last_iter:g})",
                    file=name,
                    line=no,
                )
            last_iter = it
        t = _number(fields[-1], name, no, "seconds per iteration")
        if t <= 0:
            raise OracleError(
                f"seconds per iteration is {fields[-1]}; expected a time > 0", file=name, line=no
            )
        times.append(t)
    steady, w = _steady(times, name, "timings", rows[0][0])
    iteration_s = _median(steady)
    notes = (
        f"{len(times)} per-iteration times; first {w} dropped as warm-up"
        f" (max(1, 5%)); median of {len(steady)} = {_fmt(iteration_s)} s"
        f" (min {_fmt(min(steady))}, max {_fmt(max(steady))})"
    )
    return LogTiming(name, "plain", None, iteration_s, None, len(times), len(steady), notes)


# --------------------------------------------------------------------------------------
# CSV of step times
# --------------------------------------------------------------------------------------

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
    if kind != "per-step" and not _NUMBER.fullmatch(c):
        try:
            return datetime.fromisoformat(c.replace("Z", "+00:00")).timestamp()
        except (ValueError, OverflowError, OSError):
            pass
    return _number(c, name, line, f"column '{column}'")


def parse_step_csv(text: str, name: str) -> LogTiming:
    """Import a CSV of step times (rules in the module docstring)."""
    lines = _data_lines(text)
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
    rows: list[tuple[int, float | None, float]] = []  # (line, step, time)
    for no, line in lines[1:]:
        row = cells(no, line)
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
            step = _number(row[scol], name, no, f"column '{header[scol]}'")
        rows.append((no, step, t))
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
        step_name = header[scol] if scol is not None else ""
        use_steps = scol is not None and all(s is not None for _, s, _ in rows)
        times = []
        for (no0, s0, t0), (no1, s1, t1) in zip(rows, rows[1:]):
            if t1 < t0:
                raise OracleError(
                    f"column '{tname}' goes back in time ({_fmt(t1)} after {_fmt(t0)})",
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
        what = "intervals (a cumulative column of n values gives n-1)"
    else:
        for no, _, t in rows:
            if t <= 0:
                raise OracleError(
                    f"column '{tname}': {_fmt(t)} is not a time > 0", file=name, line=no
                )
        times = values
        what = "step times"
    steady, w = _steady(times, name, what, head_no)
    iteration_s = _median(steady)
    if iteration_s <= 0:
        raise OracleError(
            f"median time per iteration from column '{tname}' is 0", file=name, line=head_no
        )
    notes.append(
        f"{len(times)} timings; first {w} dropped as warm-up (max(1, 5%)); median of"
        f" {len(steady)} = {_fmt(iteration_s)} s"
    )
    return LogTiming(name, "step-csv", None, iteration_s, None, len(times), len(steady), "; ".join(notes))


# --------------------------------------------------------------------------------------
# Run metadata from file names
# --------------------------------------------------------------------------------------

_L = r"(?<![a-z0-9])"  # left boundary: not inside a word or number
_R = r"(?![a-z0-9=])"  # right boundary
_NAME_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (key, re.compile(pattern))
    for key, pattern in (
        ("gpus", _L + r"(\d+)[-_]?gpus?" + _R),  # 8gpus, 8gpu, 8-gpus
        ("gpus", _L + r"gpus?=?(\d+)" + _R),  # gpus8, gpu8, gpus=8
        ("batch_per_gpu", _L + r"(\d+)[-_]?per[-_]?gpu" + _R),  # 32pergpu, 32-per-gpu
        ("batch_per_gpu", _L + r"(?:bs|b|batch|batchsize|bpg)=?(\d+)" + _R),  # bs32, b32
        ("global_batch", _L + r"(?:gbs|globalbatch|global[-_]batch)=?(\d+)" + _R),
        ("p1", _L + r"p1=(\d+)" + _R),
        ("p2", _L + r"p2=(\d+)" + _R),
        ("segments", _L + r"(?:seg|segments)=?(\d+)" + _R),
    )
)
# ParaDL's p (number of PEs): only when no explicit GPU count is in the name, and
# never the GPU models P100 / P40.
_P_PATTERN = re.compile(_L + r"p=?(\d+)" + _R)
_GPU_MODELS = {"p100", "p40"}


def parse_run_name(filename: str | Path) -> dict[str, int]:
    """Run metadata found in a log's file name (its last component, without extension).

    Recognised, case-insensitive, each delimited by non-alphanumerics:

    - GPUs: ``8gpus``, ``8gpu``, ``8-gpus``, ``gpus8``, ``gpu8``, ``gpus=8`` ->
      ``gpus``; ``p8`` / ``p=8`` (ParaDL's p, the number of PEs) only when none of the
      former is present (``p100`` and ``p40`` are GPU models, not counts)
    - batch per GPU: ``32pergpu``, ``32-per-gpu``, ``bs32``, ``b32``, ``batch32``,
      ``batchsize32``, ``bpg32`` -> ``batch_per_gpu``.  ``bs``/``b``/``batch`` mean
      the per-process batch, as the ``--batchsize`` of Chainer/ChainerMN scripts and the
      ``batch_size`` of PyTorch DDP, Horovod and Lightning do.
    - global batch: ``gbs256``, ``globalbatch256``, ``global-batch256`` -> ``global_batch``
    - hybrid factors and pipeline segments: ``p1=16``, ``p2=4``, ``seg8``,
      ``segments8`` -> ``p1``, ``p2``, ``segments``

    Only positive integers count; a key found twice with different values is dropped
    (ambiguous).  Anything else in the name is ignored.

    >>> parse_run_name("8gpus-32pergpu.json")
    {'gpus': 8, 'batch_per_gpu': 32}
    """
    stem = Path(str(filename)).name.lower()
    if "." in stem:
        stem = stem.rsplit(".", 1)[0]
    found: dict[str, set[int]] = {}

    def add(key: str, text: str) -> None:
        v = int(text)
        if v > 0:
            found.setdefault(key, set()).add(v)

    for key, pattern in _NAME_PATTERNS:
        for m in pattern.finditer(stem):
            add(key, m.group(1))
    if "gpus" not in found:
        for m in _P_PATTERN.finditer(stem):
            if m.group(0) not in _GPU_MODELS:
                add("gpus", m.group(1))
    return {key: next(iter(vs)) for key, vs in found.items() if len(vs) == 1}


__all__ = [
    "FORMATS",
    "FORMAT_NAMES",
    "LogTiming",
    "UnknownLogFormat",
    "detect_format",
    "parse_chainer",
    "parse_plain",
    "parse_run_name",
    "parse_step_csv",
    "read_log",
]
