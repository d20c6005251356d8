"""``oracle predict``: project and rank every strategy at every GPU count (docs/cli.md)."""

from __future__ import annotations

import click

from oracle.cli.common import FORMATS, output_option, sweep_options
from oracle.cli.types import count_type, width_type


@click.command(context_settings={"max_content_width": 100})
@sweep_options
@click.option("--format", "-f", "fmt", type=click.Choice(FORMATS, case_sensitive=False), default="table", show_default=True)
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
    their reasons.  CSV, JSON and Markdown are written a run of GPU counts at a time as
    they are projected (memory stays flat however many points).

    \b
    Example:
      oracle predict -m resnet50 -s abci -p resnet50_v100 --gpus 4-1024 --batch-per-gpu 32
    """
    from oracle.cli.common import render_points
    from oracle.services.project import project

    if fmt in STREAMED and not sweep.get("layers"):  # issue 29: a run of GPU counts at a time, memory flat
        runs, meta, _ = project(top=top, brief=True, stream=True, **sweep)
        _stream(runs, meta, fmt, top, output)
        return
    points, meta, _ = project(top=top, **sweep)
    meta["show_max_batch"] = max_batch
    render_points(points, meta, fmt, top, chart, width, output)


STREAMED = ("csv", "json", "markdown")


def _stream(runs, meta: dict, fmt: str, top, output) -> None:
    """Write each run of points as it is projected, the output's start with the first
    run's rows (an error evaluating it leaves no output on standard output)."""
    from oracle.render.output import sink
    from oracle.render.predict import markdown_texts, select_top
    from oracle.render.records import csv_texts, json_texts

    texts = {"csv": csv_texts, "json": json_texts, "markdown": lambda shown: markdown_texts(shown, meta)}[fmt]
    pieces = texts(select_top(run, top) for run in runs)
    with sink(output) as write:
        head = next(pieces)
        for piece in pieces:
            write(head + piece)
            head = ""
        write(head)
