"""``oracle report``: a self-contained HTML (or Markdown) report of a projection."""

from __future__ import annotations

import shlex

import click

from oracle.cli.common import sweep_options


@click.command(context_settings={"max_content_width": 100})
@sweep_options
@click.option("--measured", metavar="RUNS.csv",
              help="Measured runs (oracle compare input), projected on this report's system: adds the accuracy section.")
@click.option("--where", multiple=True, metavar="COL=VAL[,VAL]", help="Measured runs to keep (as for oracle compare).")
@click.option("--exclude", multiple=True, metavar="COL=VAL[,VAL]", help="Measured runs to drop (as for oracle compare).")
@click.option("--output", "-o", required=True, metavar="FILE.html|FILE.md",
              help="Report to write; .md writes the plots as PNG files next to it (FILE-scaling.png, ...).")
def report(measured, where, exclude, output, **sweep) -> None:
    """Write one report: inputs, ranked recommendation, plots, limits, accuracy.

    FILE.html is self-contained (plots embedded as PNG, inline CSS, no scripts, no
    network access needed). FILE.md is for pull requests: GitHub Markdown with the
    plots written as PNG files next to it. Without matplotlib the report is written
    without plots and says how to get them (pip install 'oracle[plot]').

    \b
    Examples:
      oracle report -m resnet50 -s abci -p resnet50_v100 --gpus 4-1024 -o report.html
      oracle report -m alexnet -s abci -p alexnet_v100 --measured validation/abci-paradl.csv -o report.md
    """
    from pathlib import Path

    from oracle import __version__, api
    from oracle.cli.common import project
    from oracle.errors import OracleError
    from oracle.render import report as rr
    from oracle.render.output import atomic_write_all, check_target
    from oracle.render.progress import progress

    suffix = Path(output).suffix.lower()
    if suffix not in (".html", ".htm", ".md", ".markdown"):
        raise OracleError(f"cannot tell the report format from '{output}'", path="-o",
                          hint="name the file *.html or *.md")
    markdown = suffix in (".md", ".markdown")
    check_target(output)  # before the work: a folder or a device named by -o fails at once
    args = dict(sweep, measured=measured, where=where, exclude=exclude)
    with progress("projecting", total=3) as bar:
        points, meta, inputs = project(**sweep)
        bar.advance("comparing measured runs" if measured else "drawing plots")
        meas = None
        if measured:
            from oracle.cli.compare import _where

            rows, summary = api.compare(
                measured, where=_where(where), exclude=_where(exclude, "--exclude"), system=sweep["system"],
                precision=sweep["precision"], memory_reuse=inputs["options"].memory_reuse, contention=sweep["phi"],
                memory_model=inputs["options"].memory_model,
            )  # fmt: skip
            meas = rr.Measured(measured, rows, summary)
        data = rr.ReportData(
            points=points, meta=meta, model=inputs["model"], system=inputs["system"], profile=inputs["profile"],
            options=inputs["options"], gpus=inputs["gpus"], strategies=sweep["strategies"], args=inputs["args"],
            command=_command(args, output), measured=meas, version=__version__,
        )
        bar.set_total(2 + rr.steps(data) + 1)
        bar.advance("drawing plots")
        images = rr.figures(data, "png", dpi=110 if markdown else 90, step=lambda what: bar.advance(what))
        files: dict = {}
        if markdown:
            names = rr.image_names(output, images) if images is not None else None
            folder = Path(output).parent
            files = {folder / name: images[kind] for kind, name in (names or {}).items()}
            text = rr.markdown_report(data, names)
        else:
            text = rr.html_report(data, images)
        bar.advance("writing")
        files[output] = text  # last: the report appears only once its images are in place
        atomic_write_all(files)


def _command(args: dict, output: str) -> str:
    """The command line that writes this report: every option that differs from its
    default, read from the command's own parameters (so new options are never missed)."""
    ctx = click.get_current_context()
    words = ["oracle", "report"]
    for param in ctx.command.params:
        if not isinstance(param, click.Option) or param.name in ("output",):
            continue
        value = ctx.params.get(param.name)
        if value is None or value == param.default or value == () or value is False:
            continue
        flag = param.opts[0]
        if param.is_flag:
            words.append(flag)
            continue
        for v in value if param.multiple else [value]:
            words += [flag, f"{v:g}" if isinstance(v, float) else str(v)]
    words += ["-o", str(output)]
    return shlex.join(words)
