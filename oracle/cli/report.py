"""``oracle report``: a self-contained HTML (or Markdown) report of a projection."""

from __future__ import annotations

import shlex
from pathlib import Path

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
    from oracle.cli.common import warn
    from oracle.errors import OracleError
    from oracle.render.output import check_target
    from oracle.render.progress import progress
    from oracle.services.report import write_report

    suffix = Path(output).suffix.lower()
    if suffix not in (".html", ".htm", ".md", ".markdown"):
        raise OracleError(f"cannot tell the report format from '{output}'", path="-o",
                          hint="name the file *.html or *.md")
    check_target(output)  # before the work: a folder or a device named by -o fails at once
    command = _command(dict(sweep, measured=measured, where=where, exclude=exclude), output)
    with progress("projecting", total=3) as bar:
        write_report(sweep, measured, where, exclude, output, command, bar, warn)


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
