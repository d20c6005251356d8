"""``oracle import``: training logs -> rows of a measured-runs CSV (docs/file-formats.md)."""

from __future__ import annotations

import click

from oracle.cli.common import output_option
from oracle.cli.types import PlainIntRange

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
HYBRIDS = ("data+filter", "data+spatial")


@click.command("import", context_settings={"max_content_width": 100})
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("--model", "-m", metavar="NAME|FILE", help="Model of the runs (written to the rows).")
@click.option("--system", "-s", metavar="NAME|FILE", help="System the runs ran on.")
@click.option("--profile", "-p", metavar="NAME|FILE", help="Timing profile to project them with.")
@click.option("--strategy", metavar="NAME", help="Strategy of the runs (data, spatial, filter, ..., data+spatial).")
@click.option("--gpus", "-g", type=PlainIntRange(min=1), help="GPUs of every run.  [default: from the file name]")
@click.option("--batch", "-B", type=PlainIntRange(min=1), help="Global mini-batch B of every run.")
@click.option(
    "--batch-per-gpu",
    "-b",
    type=PlainIntRange(min=1),
    help="Samples per GPU b; B = b x gpus.  [default: from the file name]",
)
@click.option("--p1", type=PlainIntRange(min=1), help="Hybrids: data-parallel groups p1 (p = p1·p2).")
@click.option("--p2", type=PlainIntRange(min=1), help="Hybrids: model-part size p2 (p = p1·p2).")
@click.option("--segments", "-S", type=PlainIntRange(min=1), help="Pipeline segments S.")
@click.option(
    "--log-format",
    type=click.Choice(["chainer", "plain", "step-csv"]),
    help="Read every file as this format.  [default: detected from the content]",
)
@click.option("--skip-unknown", is_flag=True, help="Skip files of unknown format (with a warning) instead of failing.")
@click.option("--append", is_flag=True, help="Add the rows to the CSV given with -o instead of replacing it.")
@output_option
def import_(
    paths, model, system, profile, strategy, gpus, batch, batch_per_gpu, p1, p2, segments, log_format,
    skip_unknown, append, output,
):  # fmt: skip
    """Turn training logs into rows of a measured-runs CSV for `oracle compare`.

    PATH is a log file or a folder (every file directly inside it, in natural order).
    Formats, recognised by content: Chainer LogReport JSON, a per-iteration time log
    (one number per line, or `iteration, seconds`), and a CSV of step times (PyTorch
    scripts, Lightning's metrics.csv).  GPUs and batch size not given as options are
    taken from file names such as `8gpus-32pergpu.json`, `gpus8_bs32.log` or `p4-b32.csv`.

    \b
    Example:
      oracle import data/chainer-logs/vgg16-data-abci --model vgg16 --system abci \\
          --profile vgg16_v100 --strategy data -o runs.csv
    """
    from oracle.errors import OracleError
    from oracle.render.output import emit

    if batch is not None and batch_per_gpu is not None:
        raise OracleError("give either --batch (global) or --batch-per-gpu, not both")
    if append and not output:
        raise OracleError("--append needs -o FILE (the CSV to add the rows to)")
    if strategy is not None:
        strategy = _check_strategy(strategy)
    fixed = dict(
        model=model, system=system, profile=profile, strategy=strategy, gpus=gpus, batch=batch,
        batch_per_gpu=batch_per_gpu, p1=p1, p2=p2, segments=segments,
    )  # fmt: skip
    rows = []
    for path in _files(paths):
        row = _row(path, fixed, log_format, skip_unknown)
        if row is not None:
            rows.append(row)
    if not rows:
        raise OracleError("no training logs found (every file was of unknown format)", file=", ".join(paths))
    text = _append_to(output, rows) if append else _csv([list(COLUMNS)] + [[r[c] for c in COLUMNS] for r in rows])
    emit(text, output)


def _check_strategy(name: str) -> str:
    from oracle.compute.strategies import NAMES
    from oracle.errors import OracleError, did_you_mean

    s = name.strip().lower()
    if s not in NAMES:
        raise OracleError(
            f"unknown strategy '{name}'",
            path="--strategy",
            hint=did_you_mean(s, NAMES) or "expected one of " + ", ".join(NAMES),
        )
    return s


def _natural_key(name: str):
    import re

    return [(0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", name) if t]


def _files(paths) -> list[str]:
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


def _row(path: str, fixed: dict, log_format: str | None, skip_unknown: bool) -> dict | None:
    from oracle.errors import OracleError
    from oracle.load.logs import FORMAT_NAMES, UnknownLogFormat, parse_run_name, read_log

    try:
        timing = read_log(path, log_format)
    except UnknownLogFormat as exc:
        if not skip_unknown:
            exc.hint = (exc.hint + "; " if exc.hint else "") + "--skip-unknown skips such files"
            raise
        click.echo(f"oracle: warning: skipping {exc}", err=True)
        return None
    found = parse_run_name(path)

    def missing(what: str, option: str) -> OracleError:
        return OracleError(f"no {what} for this run: give {option}", file=path)

    row: dict = {}
    for key in ("model", "system", "profile", "strategy"):
        option = f"--{key}"
        if not fixed[key]:
            raise missing(key, option)
        row[key] = fixed[key]
    gpus = fixed["gpus"] or found.get("gpus")
    if gpus is None:
        raise missing("GPU count", "--gpus (the file name has none, e.g. 8gpus)")
    if fixed["batch"] is not None:
        global_batch = fixed["batch"]
    elif fixed["batch_per_gpu"] is not None:
        global_batch = fixed["batch_per_gpu"] * gpus
    elif "global_batch" in found:
        global_batch = found["global_batch"]
    elif "batch_per_gpu" in found:
        global_batch = found["batch_per_gpu"] * gpus
    else:
        raise missing("batch size", "--batch or --batch-per-gpu (the file name has none, e.g. 32pergpu)")
    p1 = fixed["p1"] or found.get("p1")
    p2 = fixed["p2"] or found.get("p2")
    if row["strategy"] in HYBRIDS:
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
    from oracle.compute.strategies import NAMES
    from oracle.errors import OracleError
    from oracle.load.runs import parse_row

    try:
        parse_row({c: str(row[c]) for c in COLUMNS}, path, None, NAMES)
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
