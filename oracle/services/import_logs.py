"""``oracle import``: training logs -> rows of a measured-runs CSV (docs/file-formats.md).

:func:`import_logs` reads each log (its format detected from the content), takes the
GPU count and batch from the options or the file name, checks each row as ``oracle
compare`` would read it, and returns the CSV text (the rows added to an existing CSV
with ``append``)."""

from __future__ import annotations

from collections.abc import Callable

COLUMNS = (
    "model",
    "system",
    "profile",
    "strategy",
    "gpus",
    "p1",
    "p2",
    "segments",
    "global_batch",
    "epoch_s",
    "iteration_s",
    "source",
)


def import_logs(paths, fixed: dict, log_format: str | None, skip_unknown: bool, append: bool, output: str | None,
                warn: Callable[[str], None]) -> str:  # fmt: skip
    """The CSV text of the runs in ``paths`` (``fixed``: the options given for every run)."""
    from oracle.errors import OracleError

    rows = []
    for path in files(paths):
        row = _row(path, fixed, log_format, skip_unknown, warn)
        if row is not None:
            rows.append(row)
    if not rows:
        raise OracleError("no training logs found (every file was of unknown format)", file=", ".join(paths))
    return _append_to(output, rows) if append else _csv([list(COLUMNS)] + [[r[c] for c in COLUMNS] for r in rows])


def check_strategy(name: str) -> str:
    from oracle.compute.strategies import names
    from oracle.errors import OracleError, did_you_mean

    s = name.strip().lower()
    if s not in names():
        raise OracleError(
            f"unknown strategy '{name}'",
            path="--strategy",
            hint=did_you_mean(s, names()) or "expected one of " + ", ".join(names()),
        )
    return s


def _natural_key(name: str):
    import re

    return [(0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", name) if t]


def files(paths) -> list[str]:
    """The files to import, keeping the paths relative as the user gave them."""
    import os
    from pathlib import Path

    from oracle.errors import OracleError

    out: list[str] = []
    for given in paths:
        p = Path(given)
        if not p.exists():
            raise OracleError("does not exist; expected a training log or a folder of logs", file=given)
        if p.is_dir():
            try:
                names = [
                    e.name
                    for e in os.scandir(p)
                    if not e.name.startswith(".") and e.is_file()
                ]
            except OSError as exc:
                raise OracleError(f"cannot list folder: {exc.strerror or exc}", file=given) from None
            if not names:
                raise OracleError("folder has no files; expected training logs", file=given)
            out.extend(str(p / n) for n in sorted(names, key=_natural_key))
        else:
            out.append(given)
    return out


def _row(path: str, fixed: dict, log_format: str | None, skip_unknown: bool, warn) -> dict | None:
    from oracle.compute.strategies import REGISTRY
    from oracle.errors import OracleError
    from oracle.load.logs import (
        FORMAT_NAMES,
        UnknownLogFormat,
        name_lacks,
        parse_run_name,
        read_log,
    )
    from oracle.vocabulary import ESTIMATE

    try:
        timing = read_log(path, log_format)
    except UnknownLogFormat as exc:
        if not skip_unknown:
            exc.hint = (exc.hint + "; " if exc.hint else "") + "--skip-unknown skips such files"
            raise
        warn(f"skipping {exc}")
        return None
    found = parse_run_name(path)

    def missing(what: str, option: str) -> OracleError:
        return OracleError(f"no {what} for this run: give {option}", file=path)

    row: dict = {}
    for key in ("model", "system", "strategy"):
        option = f"--{key}"
        if not fixed[key]:
            raise missing(key, option)
        row[key] = fixed[key]
    row["profile"] = fixed["profile"] or ESTIMATE  # none named: the compute model's estimate (load/runs.py)
    gpus = fixed["gpus"] or found.get("gpus")
    if gpus is None:
        raise missing("GPU count", f"--gpus ({name_lacks(path, ('gpus',), 'GPU count', '8gpus')})")
    if fixed["batch"] is not None:
        global_batch = fixed["batch"]
    elif fixed["batch_per_gpu"] is not None:
        global_batch = fixed["batch_per_gpu"] * gpus
    elif "global_batch" in found:
        global_batch = found["global_batch"]
    elif "batch_per_gpu" in found:
        global_batch = found["batch_per_gpu"] * gpus
    else:
        lacks = name_lacks(path, ("batch_per_gpu", "global_batch"), "batch size", "32pergpu")
        raise missing("batch size", f"--batch or --batch-per-gpu ({lacks})")
    p1 = fixed["p1"] or found.get("p1")
    p2 = fixed["p2"] or found.get("p2")
    if REGISTRY[row["strategy"]].hybrid:
        if p1 is None and p2 is None:
            raise missing("hybrid split", "--p2 (p = p1·p2)")
        if p1 is None or p2 is None:
            known = p1 or p2
            if gpus % known:
                raise OracleError(f"{gpus} GPUs are not divisible by {'p1' if p1 else 'p2'} = {known}", file=path)
            p1, p2 = (p1, gpus // p1) if p1 else (gpus // p2, p2)
        if p1 * p2 != gpus:
            raise OracleError(f"p1 x p2 = {p1} x {p2} = {p1 * p2}; expected the GPU count {gpus}", file=path)
    segments = fixed["segments"] or found.get("segments")
    row.update(
        gpus=gpus,
        p1=_cell(p1),
        p2=_cell(p2),
        segments=_cell(segments),
        global_batch=global_batch,
        epoch_s=_cell(timing.epoch_s),
        iteration_s=_cell(timing.iteration_s),
        source=f"{path} ({FORMAT_NAMES[timing.format]})",
    )
    _as_compare_reads_it(row, path)
    return row


def _as_compare_reads_it(row: dict, path: str) -> None:
    """Refuse a row that ``oracle compare`` would refuse (e.g. 1e+308 seconds)."""
    from oracle.compute.strategies import names
    from oracle.errors import OracleError
    from oracle.load.runs import parse_row

    try:
        parse_row({c: str(row[c]) for c in COLUMNS}, path, None, names())
    except OracleError as exc:
        raise OracleError(f"{exc.path}: {exc.message}; oracle compare would refuse this row",
                          file=path, hint=exc.hint) from None


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _csv(rows: list[list]) -> str:
    import csv
    import io

    from oracle.textsafe import csv_row

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerows(csv_row(r) for r in rows)
    return buf.getvalue()


def _append_to(output: str, rows: list[dict]) -> str:
    """The existing CSV with the new rows added under its own header."""
    import csv
    import io
    from pathlib import Path

    from oracle.errors import OracleError
    from oracle.load.source import read_bytes, release
    from oracle.load.yamlfile import decode_text

    fresh = _csv([list(COLUMNS)] + [[r[c] for c in COLUMNS] for r in rows])
    if not Path(output).exists():
        return fresh
    data = read_bytes(output, "measured-runs CSV")  # a regular file, capped like every input
    release(output)  # the one input -o may replace: the rows are added to it
    if not data.strip():
        return fresh
    text = decode_text(data, output, "measured-runs CSV")
    try:
        table = list(csv.reader(io.StringIO(text), strict=True))
    except csv.Error as exc:
        raise OracleError(f"CSV syntax error: {exc}", file=output, path="--append") from None
    header = [h.strip() for h in table[0]]
    extra = [c for c in COLUMNS if c not in header]
    new = [[r.get(c, "") for c in header + extra] for r in rows]
    if not extra:
        return text + ("" if text.endswith("\n") else "\n") + _csv(new)
    old = [row + [""] * (len(header) + len(extra) - len(row)) for row in table[1:]]
    return _csv([header + extra] + old + new)
