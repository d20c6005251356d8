"""``oracle import``: training logs -> rows of a measured-runs CSV (docs/file-formats.md)."""

from __future__ import annotations

import click

from oracle import limits
from oracle.cli.common import named, output_option, warn
from oracle.cli.types import PlainIntRange, count_type, gpu_count_type


@click.command("import", context_settings={"max_content_width": 100})
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("--model", "-m", metavar="NAME|FILE", callback=named, help="Model of the runs (written to the rows).")
@click.option("--system", "-s", metavar="NAME|FILE", callback=named, help="System the runs ran on.")
@click.option("--profile", "-p", metavar="NAME|FILE|estimate", callback=named,
              help="Timing profile to project them with. [default: estimate, the compute model's]")
@click.option("--strategy", metavar="NAME", help="Strategy of the runs (data, spatial, filter, ..., data+spatial).")
@click.option("--gpus", "-g", type=gpu_count_type(), help="GPUs of every run.  [default: from the file name]")
@click.option("--batch", "-B", type=PlainIntRange(min=1, limit=int(limits.BATCH.hi)), help="Global mini-batch B of every run.")
@click.option(
    "--batch-per-gpu",
    "-b",
    type=PlainIntRange(min=1, limit=int(limits.BATCH_PER_GPU.hi)),
    help="Samples per GPU b; B = b x gpus.  [default: from the file name]",
)
@click.option("--p1", type=count_type(), help="Hybrids: data-parallel groups p1 (p = p1·p2).")
@click.option("--p2", type=count_type(), help="Hybrids: model-part size p2 (p = p1·p2).")
@click.option("--segments", "-S", type=count_type(), help="Pipeline segments S.")
@click.option(
    "--log-format",
    type=click.Choice(["chainer", "plain", "step-csv"], case_sensitive=False),
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
    import contextlib

    from oracle.errors import OracleError
    from oracle.render.output import append_lock, emit
    from oracle.services.import_logs import check_strategy, import_logs

    if batch is not None and batch_per_gpu is not None:
        raise OracleError("give either --batch (global) or --batch-per-gpu, not both")
    if append and not output:
        raise OracleError("--append needs -o FILE (the CSV to add the rows to)")
    if strategy is not None:
        strategy = check_strategy(strategy)
    fixed = dict(
        model=model, system=system, profile=profile, strategy=strategy, gpus=gpus, batch=batch,
        batch_per_gpu=batch_per_gpu, p1=p1, p2=p2, segments=segments,
    )  # fmt: skip
    from oracle.load.source import remember_named

    remember_named(model, system, profile)  # named in the rows: -o never replaces them
    with append_lock(output) if append else contextlib.nullcontext():  # concurrent appenders keep every row
        emit(import_logs(paths, fixed, log_format, skip_unknown, append, output, warn), output)
