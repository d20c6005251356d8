"""``oracle plot``: breakdown, scaling, memory and compare pictures (PNG or SVG).

Needs the extra ``oracle[plot]`` (matplotlib).  The sweep options are those of
``oracle predict``; :func:`sweep_options` and :func:`project` are shared with
``oracle report``.
"""

from __future__ import annotations

import click

from oracle.cli.common import (
    contention_type,
    memory_model_options,
    precision_option,
    stack_option,
    sweep_options,
)
from oracle.cli.types import PlainIntRange
from oracle.services.project import project

DPI_HELP = "Resolution of PNG output (dots per inch)."


def _check_output(output: str) -> str:
    from oracle.render.plots import format_for, require

    fmt = format_for(output)  # a bad file name is reported even without matplotlib
    require()
    return fmt


def _write(data: bytes, output: str) -> None:
    from oracle.render.output import write_file

    write_file(output, data)


output_required = click.option("--output", "-o", required=True, metavar="FILE.png|FILE.svg|FILE.pdf",
                               help="Image to write (format from the suffix).")
dpi_option = click.option("--dpi", type=PlainIntRange(min=30, max=600), default=110, show_default=True,
                          help=DPI_HELP)


@click.group(context_settings={"max_content_width": 100})
def plot() -> None:
    """Draw projections as PNG or SVG (needs: pip install 'oracle[plot]').

    \b
    Kinds:
      breakdown  stacked bars of compute and communication phases per strategy and GPU count
      scaling    time per epoch versus GPUs (log-log), ideal line, best per GPU count, memory limit
      memory     memory per GPU versus GPUs per strategy against the GPU's capacity
      compare    projected versus measured runs (oracle compare input), accuracy per run

    \b
    Examples:
      oracle plot scaling -m resnet50 -s abci -p resnet50_v100 --gpus 4-1024 -o scaling.png
      oracle plot compare validation/abci-paradl.csv -o compare.svg
    """


def _sweep_plot(kind: str):
    def command(output, dpi, **sweep):
        from oracle.render import plots
        from oracle.render.progress import progress

        fmt = _check_output(output)
        with progress(f"drawing the {kind} plot"):
            points, meta, _ = project(**sweep)
            data = plots.render(kind, fmt, dpi, points=points, meta=meta)
        _write(data, output)

    return command


_HELP = {
    "breakdown": "Stacked bars of compute and communication by phase, per strategy and GPU count.",
    "scaling": "Time per epoch versus GPUs (log-log) per strategy, ideal line, best and memory limit.",
    "memory": "Memory per GPU versus GPUs per strategy, against the GPU's capacity.",
}

for _kind, _help in _HELP.items():
    plot.command(_kind, help=_help + "\n\nThe options are those of 'oracle predict'.", short_help=_help)(
        dpi_option(output_required(sweep_options(_sweep_plot(_kind))))
    )


@plot.command("compare", short_help="Projected versus measured runs, with the accuracy of each.")
@click.argument("runs", metavar="RUNS.csv")
@click.option("--where", multiple=True, metavar="COL=VAL[,VAL]", help="Keep runs whose column has one of the values.")
@precision_option(" A run's precision column comes first.")
@memory_model_options
@click.option("--contention", type=contention_type, help="Contention factor φ (overrides the systems).")
@stack_option(" A run's stack column comes first.")
@output_required
@dpi_option
def compare(runs, where, output, dpi, **flags) -> None:
    """Projected versus measured (the input of 'oracle compare'), like ParaDL's Figure 3.

    One panel per model, system and strategy; per run the measured time beside the
    projected time and the projected communication in it, with the accuracy above.
    """
    from oracle import api
    from oracle.load.values import parse_where
    from oracle.render import plots
    from oracle.render.progress import progress

    fmt = _check_output(output)
    with progress("drawing the compare plot"):
        rows, summary = api.compare(runs, where=parse_where(where), **flags)
        stack = flags.get("stack")
        title = f"{runs}: projected versus measured" + (f" (stack {stack})" if stack else "")
        data = plots.render("compare", fmt, dpi, rows=rows, summary=summary, title_text=title)
    _write(data, output)
