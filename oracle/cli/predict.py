"""``oracle predict``: project and rank every strategy at every GPU count (SPEC §5)."""

from __future__ import annotations

import click

from oracle.cli.common import FORMATS, model_system_profile_options, output_option, positive_float


@click.command(context_settings={"max_content_width": 100})
@model_system_profile_options
@click.option(
    "--gpus",
    "-g",
    "gpus",
    metavar="LIST|A-B",
    help="GPU counts: 4,8,16 or 4-1024 (the powers of two from A to B)."
    "  [default: powers of two up to the system size, at most 1024]",
)
@click.option(
    "--strategy",
    "strategies",
    default="all",
    show_default=True,
    metavar="NAMES",
    help="Comma-separated strategies (serial, data, spatial, filter, channel, pipeline,"
    " data+filter, data+spatial) or all.",
)
@click.option("--batch-per-gpu", "-b", type=positive_float, help="Weak scaling: B = b·p samples per iteration.")
@click.option("--batch", "-B", type=positive_float, help="Strong scaling: global mini-batch B, fixed.")
@click.option("--p2", type=click.IntRange(min=1), help="Hybrids: fix the model-part size p2 (p = p1·p2).")
@click.option("--segments", "-S", type=click.IntRange(min=1), help="Pipeline segments S. [default: min(B, 4p)]")
@click.option(
    "--precision",
    type=click.Choice(["fp32", "fp16", "bf16"]),
    default="fp32",
    show_default=True,
    help="Bytes per item δ: fp32 4, fp16/bf16 2.",
)
@click.option(
    "--memory-reuse",
    "gamma",
    type=click.FloatRange(min=0, max=1, min_open=True),
    default=1.0,
    show_default=True,
    help="Memory reuse factor γ (0 < γ <= 1).",
)
@click.option("--contention", "phi", type=click.FloatRange(min=1), help="Contention factor φ >= 1 (overrides the system).")
@click.option("--samples", type=click.IntRange(min=1), help="Dataset size D (overrides the model's).")
@click.option("--format", "-f", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option("--top", type=click.IntRange(min=1), help="Show the N best points per GPU count.")
@click.option("--chart", is_flag=True, help="Also draw a bar chart of total time per strategy (table format).")
@click.option("--width", type=click.IntRange(min=60), help="Table width in characters. [default: terminal]")
@output_option
def predict(
    model, system, profile, gpus, strategies, batch_per_gpu, batch, p2, segments, precision, gamma, phi,
    samples, fmt, top, chart, width, output,
):  # fmt: skip
    """Project compute, communication and memory of every strategy, ranked.

    Per-epoch times and per-GPU memory of each parallelization strategy at each GPU
    count (SPEC §4), ranked by total time per GPU count; points that break (more GPUs
    than filters, out of memory, fewer than one sample per GPU, ...) are shown with
    their reasons.

    \b
    Example:
      oracle predict -m resnet50 -s abci -p resnet50_v100 --gpus 4-1024 --batch-per-gpu 32
    """
    from oracle.cli.common import project, render_points

    points, meta, inputs = project(
        model, system, profile, gpus, strategies, batch_per_gpu, batch, p2, segments, precision, gamma, phi, samples
    )
    render_points(points, meta, fmt, top, chart, width, output)
