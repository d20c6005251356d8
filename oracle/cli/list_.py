"""``oracle list [models|systems|profiles|stacks|gpus]``: the shipped files, one line each, and
the GPU library."""

from __future__ import annotations

import click

from oracle.catalog import LISTABLE, SHIPPED
from oracle.cli.types import width_type


@click.command("list")
# the metavar spelled out: click versions bracket an optional Choice differently
@click.argument("kinds", nargs=-1, type=click.Choice(LISTABLE, case_sensitive=False), metavar=f"[{'|'.join(LISTABLE)}]...")
@click.option("--format", "-f", "fmt", type=click.Choice(["table", "json"], case_sensitive=False), default="table", show_default=True)
@click.option("--width", type=width_type(), help="Table width. [default: terminal]")
def list_(kinds, fmt, width) -> None:
    """List the shipped models, systems, profiles and stacks: the name to pass to -m/-s/-p/--stack,
    what each is, and where its numbers come from. `gpus` lists the GPUs oracle knows: the
    gpu.model names whose datasheet figures fill what a system file omits.

    \b
    Examples:
      oracle list
      oracle list systems
      oracle list gpus
    """
    from oracle.catalog import entries
    from oracle.render import catalog as rc

    chosen = {k: entries(k) for k in (kinds or SHIPPED)}
    if fmt == "json":
        from oracle.render.output import write_stdout

        write_stdout(rc.to_json(chosen))
        return
    from oracle.cli.common import print_renderable

    print_renderable(*rc.tables(chosen), width=width)
