"""``oracle compare``: projections against measured runs, usable as a CI gate."""

from __future__ import annotations

from contextlib import contextmanager

import click

from oracle.cli.common import (
    FORMATS,
    batch_type,
    named,
    output_option,
    per_gpu_type,
    projection_options,
    with_options,
)
from oracle.cli.types import FiniteRange, count_type, gpu_count_type, width_type
from oracle.load.values import parse_where


@click.command(context_settings={"max_content_width": 100})
@click.argument("runs", required=False, metavar="RUNS.csv")
@click.option("--log", "log", metavar="FILE", help="Compare one training log (Chainer LogReport, per-iteration times, step CSV); GPUs and batch may come from its name (8gpus-32pergpu.json).")
@click.option("--model", "-m", metavar="NAME|FILE", callback=named, help="With --log: the model.")
@click.option("--system", "-s", metavar="NAME|FILE", callback=named, help="With --log: the system. With RUNS.csv: use this system for every run instead of the file's column.")
@click.option("--profile", "-p", metavar="NAME|FILE|estimate", callback=named, help="With --log: the profile. [default: estimate, the compute model's]")
@click.option("--strategy", metavar="NAME", help="With --log: the strategy.")
@click.option("--gpus", "-g", type=gpu_count_type(), help="With --log: GPUs.")
@click.option("--batch", "-B", type=batch_type, help="With --log: global mini-batch.")
@click.option("--batch-per-gpu", "-b", type=per_gpu_type, help="With --log: samples per GPU (B = b·gpus).")
@click.option("--p1", type=count_type(), help="With --log: data-parallel part of a hybrid.")
@click.option("--p2", type=count_type(), help="With --log: model part of a hybrid.")
@click.option("--segments", type=count_type(), help="With --log: pipeline segments.")
@click.option("--where", multiple=True, metavar="COL=VAL[,VAL]", help="Keep runs whose column has one of the values (repeatable), e.g. quality=A.")
@click.option("--exclude", multiple=True, metavar="COL=VAL[,VAL]", help="Drop runs whose column has one of the values (repeatable), e.g. line=31,32 to hold out calibration runs.")
@click.option("--min-accuracy", type=FiniteRange(0, 1), help="Exit 1 when the mean accuracy is below this (e.g. 0.85).")
@click.option("--max-mape", type=FiniteRange(min=0), help="Exit 1 when the mean absolute percentage error is above this (e.g. 0.15).")
@click.option("--anomaly-threshold", type=FiniteRange(min=0), default=0.5, show_default=True, help="Flag runs off the projection by more than this share of the measured time.")
@with_options(projection_options(" A run's precision column comes first.",
                                 " A run's stack column comes first (and its option columns over the options)."))
@click.option("--calibrate-on", metavar="EXPR",
              help="Calibrate each system on the runs EXPR selects (e.g. 'gpus<=8'; --calibrate all of oracle fit"
              " runs) and score only the others, each anchored on its nearest calibration run (its measured"
              " time times the model's ratio; the notes name it), next to the naive projection from the nearest"
              " smaller calibrated run; runs at a batch per replica no calibration run of their model and strategy"
              " has are noted and summarised apart. --where/--exclude choose the runs scored.")
@click.option("--format", "-f", "fmt", type=click.Choice(FORMATS, case_sensitive=False), default="table", show_default=True)
@click.option("--width", type=width_type(), help="Table width. [default: terminal]")
@output_option
def compare(
    runs, log, model, system, profile, strategy, gpus, batch, batch_per_gpu, p1, p2, segments, where,
    exclude, min_accuracy, max_mape, anomaly_threshold, fmt, width, output, calibrate_on, **flags,
):  # fmt: skip
    """Compare projections with measured runs: accuracy per run, summary, anomalies.

    RUNS.csv has the columns model, system, strategy, gpus, global_batch, epoch_s (or
    iteration_s) and optionally profile (absent or empty: the compute model's estimate
    at the row's precision and per-GPU batch), p1, p2, segments, compute_s, comm_s,
    source, precision, stack and option columns named as the options with underscores
    (collective, overlap, bucket_MB, compute_scaling, ...: a row's wins for that row);
    other columns are carried through. Accuracy is ParaDL's
    1 - |projected - measured| / measured. The table names the stack each run is
    projected under. A run the model finds infeasible (out of memory, more GPUs than
    filters, ...) shows the limit instead of an accuracy and is not scored: the summary
    and the gates are over the other runs, and count it apart.

    \b
    Examples:
      oracle compare validation/abci-paradl.csv --min-accuracy 0.7
      oracle compare --log train.json -m vgg16 -s abci -p vgg16_v100 \\
                     --strategy data --gpus 8 --batch 256
    """
    from oracle import api
    from oracle.cli.common import warn
    from oracle.errors import CheckFailed, OracleError

    if (runs is None) == (log is None):
        raise OracleError("give a RUNS.csv file or --log FILE (with --model, --system, ...), not both")
    if log is not None:
        if calibrate_on:
            raise OracleError("--calibrate-on needs a RUNS.csv file of several runs, not --log", path="--calibrate-on")
        measured = [_run_from_log(log, model, system, profile, strategy, gpus, batch, batch_per_gpu, p1, p2, segments)]
        rows, summary = api.compare(measured, threshold=anomaly_threshold, where=parse_where(where), warn=warn,
                                    **flags)
        title = f"{log}"
        _render(rows, summary, fmt, width, output, title)
    else:
        with _without_gc():
            rows, summary = api.compare(
                runs, threshold=anomaly_threshold, where=parse_where(where), exclude=parse_where(exclude, "--exclude"),
                system=system, calibrate_on=calibrate_on, warn=warn, **flags,
            )
            title = f"{runs}: {len(rows)} measured runs against their projections"
            _render(rows, summary, fmt, width, output, title)
    s = summary.overall
    if (min_accuracy is not None or max_mape is not None) and s.n == 0:
        raise CheckFailed(f"no run is scored: the model finds all {s.unscored} infeasible (see their notes)")
    if min_accuracy is not None and not s.mean_accuracy >= min_accuracy:  # a NaN mean fails
        raise CheckFailed(f"mean accuracy {100 * s.mean_accuracy:.1f}% is below --min-accuracy {100 * min_accuracy:.1f}%")
    if max_mape is not None and not s.mape <= max_mape:
        raise CheckFailed(f"MAPE {100 * s.mape:.1f}% is above --max-mape {100 * max_mape:.1f}%")


@contextmanager
def _without_gc():
    """Millions of runs are millions of acyclic records: the cycle collector would only
    rescan them (about 15% of the time of `compare` on 1e6 runs); reference counting
    still frees them."""
    import gc

    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _render(rows, summary, fmt, width, output, title) -> None:
    from oracle.render import compare as rc
    from oracle.render.output import emit

    if fmt == "json":
        emit(rc.to_json(rows, summary), output)
    elif fmt == "csv":
        emit(rc.to_csv(rows), output)
    elif fmt == "markdown":
        emit(rc.markdown(rows, summary), output)
    elif output:
        from oracle.render.predict import render_text

        emit(render_text(rc.table(rows, summary, title), width=width or 160), output)
    else:
        from oracle.cli.common import print_renderable

        print_renderable(rc.table(rows, summary, title), width=width)


def _run_from_log(log, model, system, profile, strategy, gpus, batch, batch_per_gpu, p1, p2, segments):
    """A measured run from one log and the options that describe it."""
    from oracle.compute.strategies import names
    from oracle.errors import OracleError, did_you_mean
    from oracle.load.logs import name_lacks, parse_run_name, read_log
    from oracle.records import MeasuredRun
    from oracle.vocabulary import ESTIMATE

    named = parse_run_name(log)  # e.g. 8gpus-32pergpu.json: what options do not say
    gpus = gpus or named.get("gpus")
    p1, p2, segments = p1 or named.get("p1"), p2 or named.get("p2"), segments or named.get("segments")
    if batch is None and batch_per_gpu is None:
        batch = named.get("global_batch")
        batch_per_gpu = named.get("batch_per_gpu") if batch is None else None
    missing = [n for n, v in (("--model", model), ("--system", system), ("--strategy", strategy), ("--gpus", gpus))
               if v is None]
    if batch is None and batch_per_gpu is None:
        missing.append("--batch or --batch-per-gpu")
    if missing:
        hint = name_lacks(log, ("gpus",), "GPU count", "8gpus") if gpus is None else None
        raise OracleError(f"--log needs {', '.join(missing)}", hint=hint)
    name = strategy.lower()
    if name not in names():
        raise OracleError(f"unknown strategy '{strategy}'", path="--strategy", hint=did_you_mean(name, names()))
    timing = read_log(log)
    if timing.epoch_s is None and timing.iteration_s is None:
        raise OracleError("the log holds no steady-state timing", file=log)
    return MeasuredRun(
        line=None,  # no runs file: no line (shown as "–", null in JSON)
        model=model,
        system=system,
        profile=profile or ESTIMATE,
        strategy=name,
        gpus=gpus,
        global_batch=batch if batch is not None else batch_per_gpu * gpus,
        p1=p1,
        p2=p2,
        segments=segments,
        epoch_s=timing.epoch_s,
        iteration_s=timing.iteration_s,
        source=f"{log} ({timing.format})",
    )
