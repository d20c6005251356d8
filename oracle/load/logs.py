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

import math
import re
import statistics
from dataclasses import dataclass
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
        from oracle.load.chainer_log import parse_chainer

        return parse_chainer(text, name)
    if fmt == "plain":
        return parse_plain(text, name)
    if fmt == "step-csv":
        from oracle.load.step_csv import parse_step_csv

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


def data_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of the lines that are neither blank nor ``#`` comments."""
    out = []
    for no, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if s and not s.startswith("#"):
            out.append((no, line))
    return out


def load_json(text: str, name: str):
    return parse_json(text, name)


def json_kind(doc: object) -> str:
    if isinstance(doc, list):
        return "list of non-objects" if doc else "empty list"
    if isinstance(doc, dict):
        return "object (expected a list of LogReport entries)"
    return type(doc).__name__


def _detect(text: str, name: str) -> str:
    stripped = text.lstrip()
    if stripped[:1] in ("[", "{"):
        doc = load_json(text, name)
        if isinstance(doc, list) and any(isinstance(e, dict) and "elapsed_time" in e for e in doc):
            return "chainer"
        if isinstance(doc, list) and doc and all(isinstance(e, dict) for e in doc):
            hint = (
                "a JSON list of objects without 'elapsed_time';"
                " Chainer's LogReport writes epoch, iteration and elapsed_time"
            )
        else:
            hint = f"a JSON {json_kind(doc)}"
        raise UnknownLogFormat(UNKNOWN_MESSAGE, file=name, hint=hint)
    lines = data_lines(text)
    if not lines:
        raise OracleError("has only comments and blank lines; expected a training log", file=name)
    no, first = lines[0]
    fields = [f for f in re.split(r"[,\s]+", first.split("#", 1)[0]) if f]
    if fields and all(NUMBER.fullmatch(f) for f in fields):
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
    return any(c and not NUMBER.fullmatch(c) for c in cells)


# --------------------------------------------------------------------------------------
# Numbers
# --------------------------------------------------------------------------------------

# one way to match each number (\d+ then an optional fraction, never \d+\.?\d*, which
# backtracks quadratically on a long run of digits that is not a number: issue 28)
NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def parse_number(token: str, name: str, line: int, what: str) -> float:
    t = token.strip()
    shown = t if len(t) <= 40 else t[:37] + "..."
    if not NUMBER.fullmatch(t):
        raise OracleError(f"{what}: '{shown}' is not a number", file=name, line=line)
    v = float(t)
    if not math.isfinite(v):
        raise OracleError(f"{what}: {shown} is too large", file=name, line=line)
    return v


def median(values: list[float]) -> float:
    return float(statistics.median(values))


def fmt_value(v: float) -> str:
    return f"{v:.5g}"


# --------------------------------------------------------------------------------------
# Plain per-iteration log
# --------------------------------------------------------------------------------------


def _warmup(n: int) -> int:
    return max(1, int(n * WARMUP_FRACTION))


def steady_values(values: list[float], name: str, what: str, line: int | None) -> tuple[list[float], int]:
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
            it = parse_number(fields[0], name, no, "iteration")
            if last_iter is not None and it <= last_iter:
                raise OracleError(
                    f"iteration {fields[0]} does not increase (previous: {last_iter:g})",
                    file=name,
                    line=no,
                )
            last_iter = it
        t = parse_number(fields[-1], name, no, "seconds per iteration")
        if t <= 0:
            raise OracleError(
                f"seconds per iteration is {fields[-1]}; expected a time > 0", file=name, line=no
            )
        times.append(t)
    steady, w = steady_values(times, name, "timings", rows[0][0])
    iteration_s = median(steady)
    notes = (
        f"{len(times)} per-iteration times; first {w} dropped as warm-up"
        f" (max(1, 5%)); median of {len(steady)} = {fmt_value(iteration_s)} s"
        f" (min {fmt_value(min(steady))}, max {fmt_value(max(steady))})"
    )
    return LogTiming(name, "plain", None, iteration_s, None, len(times), len(steady), notes)


# --------------------------------------------------------------------------------------
# Run metadata from file names
# --------------------------------------------------------------------------------------

_L = r"(?<![a-z0-9])"  # left boundary: not inside a word or number
_R = r"(?![a-z0-9=])"  # right boundary
_NAME_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (key, re.compile(pattern, re.ASCII))  # plain digits 0-9, as every number oracle reads
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
_P_PATTERN = re.compile(_L + r"p=?(\d+)" + _R, re.ASCII)
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
    found = {key: {v for v in vs if v > 0} for key, vs in _name_values(filename).items()}
    return {key: next(iter(vs)) for key, vs in found.items() if len(vs) == 1}


def _name_values(filename: str | Path) -> dict[str, set[int]]:
    """Every value :func:`parse_run_name` finds in the file name, 0 included."""
    stem = Path(str(filename)).name.lower()
    if "." in stem:
        stem = stem.rsplit(".", 1)[0]
    found: dict[str, set[int]] = {}
    for key, pattern in _NAME_PATTERNS:
        for m in pattern.finditer(stem):
            found.setdefault(key, set()).add(int(m.group(1)))
    if not any(found.get("gpus", ())):  # no GPU count above 0: ParaDL's p
        for m in _P_PATTERN.finditer(stem):
            if m.group(0) not in _GPU_MODELS:
                found.setdefault("gpus", set()).add(int(m.group(1)))
    return found


def name_lacks(filename: str | Path, keys: tuple[str, ...], what: str, example: str) -> str:
    """Why the file name gives none of ``keys`` (:func:`parse_run_name`), for an error's
    hint: it says 0 (``0gpus``: a number, but no ``what``), or it has none (``example``)."""
    values = _name_values(filename)
    if any(0 in values.get(key, ()) for key in keys):
        return f"the file name gives 0, which is not a {what}"
    return f"the file name has none, e.g. {example}"


__all__ = [
    "FORMATS",
    "FORMAT_NAMES",
    "LogTiming",
    "UnknownLogFormat",
    "detect_format",
    "name_lacks",
    "parse_plain",
    "parse_run_name",
    "read_log",
]
