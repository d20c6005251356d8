"""Load measured runs (docs/file-formats.md): the CSV that ``oracle compare`` checks projections on.

Required columns: model, system, strategy, gpus, global_batch, and epoch_s or
iteration_s (a row needs at least one).  Optional: profile (absent or empty: ``estimate``,
the compute model's estimate at the row's precision and per-GPU batch), p1, p2, segments,
compute_s, comm_s, source, stack (the software stack the run used, issue 25), and the
option columns of compute/options.OPTION_COLUMNS (collective, overlap, bucket_MB, ...: a
row's value wins over the command's flag for that row, issue 26).  Other columns
(quality, notes, ...) are carried through; option columns are carried through too.
``compute_s``/``comm_s`` are in the unit of the measured value the row is compared on
(per epoch with epoch_s, per iteration when only iteration_s is given).

model/system/profile are shipped names or paths; a relative path is looked up next to
the CSV file first, then from the current folder.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

from oracle.compute.options import column_flags
from oracle.errors import OracleError, did_you_mean
from oracle.limits import BATCH, COUNT, GPUS, Kind
from oracle.load import is_estimate
from oracle.load.fields import MAX_MAGNITUDE, MIN_MAGNITUDE
from oracle.load.yamlfile import read_text
from oracle.records import OPTIONAL, REQUIRED, MeasuredRun
from oracle.textsafe import csv_unescape
from oracle.vocabulary import ESTIMATE


def load_runs(path: str | Path, strategies: tuple[str, ...] | None = None) -> list[MeasuredRun]:
    name = str(path)
    text = read_text(path, "measured-runs CSV file")
    reader = csv.reader(io.StringIO(text))
    try:
        rows = list(reader)
    except csv.Error as exc:
        raise OracleError(f"CSV syntax error: {exc}", file=name, line=reader.line_num) from None
    header = [h.strip() for h in rows[0]]
    if len(set(header)) != len(header):
        dup = next(h for h in header if header.count(h) > 1)
        raise OracleError(f"column '{dup}' appears twice in the header", file=name, line=1)
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        hint = None
        for c in missing:
            hint = did_you_mean(c, [h for h in header if h not in REQUIRED and h not in OPTIONAL])
            if hint:
                break
        raise OracleError(
            f"missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)}",
            file=name,
            line=1,
            hint=hint or "required: " + ", ".join(REQUIRED) + ", and epoch_s or iteration_s",
        )
    if "epoch_s" not in header and "iteration_s" not in header:
        raise OracleError("needs an epoch_s or an iteration_s column", file=name, line=1)
    runs = []
    line = 1
    for raw in rows[1:]:
        line += 1
        if not any(cell.strip() for cell in raw):
            continue
        if len(raw) != len(header):
            raise OracleError(
                f"has {len(raw)} cells; the header has {len(header)}", file=name, line=line
            )
        cells = {h: csv_unescape(c.strip()) for h, c in zip(header, raw)}
        runs.append(_row(cells, name, line, strategies))
    if not runs:
        raise OracleError("has a header but no runs", file=name)
    base = Path(name).parent
    found: dict[str, str | None] = {}  # a name is looked up once, not once per row
    return [_resolve(r, base, found) for r in runs]


def parse_row(cells: dict[str, str], file: str, line: int | None, strategies) -> MeasuredRun:
    """One row as ``oracle compare`` reads it (``oracle import`` checks its rows with it)."""
    return _row(cells, file, line, strategies)


def _row(cells: dict[str, str], file: str, line: int | None, strategies) -> MeasuredRun:
    def err(col: str, msg: str, hint: str | None = None) -> OracleError:
        return OracleError(msg, file=file, line=line, path=f"column '{col}'", hint=hint)

    def text(col: str) -> str:
        v = cells.get(col, "")
        if not v:
            raise err(col, "is empty; a value is required")
        return v

    def number(col: str, *, required: bool, kind: Kind | None = None) -> float | int | None:
        """A positive number of the column; of ``kind`` (oracle/limits.py) where given."""
        v = cells.get(col, "")
        if not v:
            if required:
                raise err(col, "is empty; a value is required")
            return None
        try:
            x = float(v)
        except ValueError:
            raise err(col, f"'{v}' is not a number") from None
        if not math.isfinite(x):
            raise err(col, f"'{v}' is not a finite number")
        if x <= 0:
            raise err(col, f"got {v}; expected a positive number")
        if kind is not None:
            problem = kind.problem(x)
            if problem:
                raise err(col, problem)
            return kind.convert(x)
        if not MIN_MAGNITUDE <= x <= MAX_MAGNITUDE:
            raise err(col, f"got {v}, which is not plausible; expected {MIN_MAGNITUDE:g} to {MAX_MAGNITUDE:g}")
        return x

    strategy = text("strategy").lower()
    if strategies is not None and strategy not in strategies:
        hint = did_you_mean(strategy, strategies) or "strategies: " + ", ".join(strategies)
        raise err("strategy", f"unknown strategy '{cells['strategy']}'", hint=hint)
    epoch = number("epoch_s", required=False)
    iteration = number("iteration_s", required=False)
    if epoch is None and iteration is None:
        raise OracleError(
            "has neither epoch_s nor iteration_s", file=file, line=line, hint="give at least one"
        )
    known = set(REQUIRED) | set(OPTIONAL)
    try:
        flags = column_flags(cells)
    except OracleError as exc:
        exc.file, exc.line = file, line
        raise
    return MeasuredRun(
        line=line,
        model=text("model"),
        system=text("system"),
        profile=ESTIMATE if is_estimate(cells.get("profile", "")) else cells["profile"].strip(),
        strategy=strategy,
        gpus=number("gpus", required=True, kind=GPUS),  # type: ignore[arg-type]
        global_batch=number("global_batch", required=True, kind=BATCH),  # type: ignore[arg-type]
        p1=number("p1", required=False, kind=COUNT),  # type: ignore[arg-type]
        p2=number("p2", required=False, kind=COUNT),  # type: ignore[arg-type]
        segments=number("segments", required=False, kind=COUNT),  # type: ignore[arg-type]
        epoch_s=epoch,
        iteration_s=iteration,
        compute_s=number("compute_s", required=False),
        comm_s=_nonneg(cells.get("comm_s", ""), err),
        source=cells.get("source", ""),
        stack=cells.get("stack", "").strip(),
        extra=tuple((k, v) for k, v in cells.items() if k not in known),
        flags=tuple(flags.items()),
    )


def _nonneg(v: str, err) -> float | None:
    """Communication may be measured as 0 (one GPU)."""
    if not v:
        return None
    try:
        x = float(v)
    except ValueError:
        raise err("comm_s", f"'{v}' is not a number") from None
    if not math.isfinite(x) or x < 0:
        raise err("comm_s", f"got {v}; expected a number >= 0")
    if x > MAX_MAGNITUDE:
        raise err("comm_s", f"got {v}, which is not plausible; expected at most {MAX_MAGNITUDE:g}")
    return x


def _resolve(run: MeasuredRun, base: Path, found: dict[str, str | None]) -> MeasuredRun:
    """Relative paths are looked up next to the CSV first."""
    from dataclasses import replace

    from oracle.resources import exists

    changes = {}
    for col in ("model", "system", "profile", "stack"):
        value = getattr(run, col)
        if not value or (col == "profile" and value == ESTIMATE):
            continue
        if value not in found:
            cand = base / value
            looks_like_path = "/" in value or value.endswith((".yaml", ".yml"))
            found[value] = str(cand) if not Path(value).is_absolute() and looks_like_path and exists(cand) else None
        if found[value] is not None:
            changes[col] = found[value]
    return replace(run, **changes) if changes else run
