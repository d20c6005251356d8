"""``oracle predict``: project and rank every strategy at every GPU count (docs/cli.md)."""

from __future__ import annotations

import click

from oracle.cli.common import FORMATS, output_option, sweep_options
from oracle.cli.types import count_type, width_type


@click.command(context_settings={"max_content_width": 100})
@sweep_options
@click.option("--format", "-f", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option("--top", type=count_type(), help="Show the N best points per GPU count.")
@click.option("--chart", is_flag=True, help="Also draw a bar chart of total time per strategy (table format).")
@click.option("--width", type=width_type(), help="Table width in characters. [default: terminal]")
@click.option("--max-batch", is_flag=True,
              help="Add a column: the largest per-GPU batch that fits in GPU memory (always in JSON/CSV).")
@output_option
def predict(fmt, top, chart, width, max_batch, output, **sweep):
    """Project compute, communication and memory of every strategy, ranked.

    Per-epoch times and per-GPU memory of each parallelization strategy at each GPU
    count (docs/cost-model.md), ranked by total time per GPU count; points that break (more GPUs
    than filters, out of memory, fewer than one sample per GPU, ...) are shown with
    their reasons.

    \b
    Example:
      oracle predict -m resnet50 -s abci -p resnet50_v100 --gpus 4-1024 --batch-per-gpu 32
    """
    from oracle.cli.common import render_points
    from oracle.services.project import project

    points, meta, _ = project(top=top, brief=fmt == "csv", **sweep)  # issue 29: CSV reads few details
    meta["show_max_batch"] = max_batch
    render_points(points, meta, fmt, top, chart, width, output)
