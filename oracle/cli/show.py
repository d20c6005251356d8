"""``oracle show model|system|profile|stack NAME``: what oracle reads from a file."""

from __future__ import annotations

import click

from oracle.cli.common import output_option
from oracle.cli.types import width_type

_FORMAT = click.option(
    "--format", "-f", "fmt", type=click.Choice(["table", "json"], case_sensitive=False), default="table", show_default=True
)
_WIDTH = click.option("--width", type=width_type(), help="Table width. [default: terminal]")


def _list(kind: str, fmt: str, width: int | None, output: str | None) -> None:
    """Without a name: the shipped files of the kind (as oracle list KIND), in ``fmt``."""
    from rich.console import Group

    from oracle.catalog import entries
    from oracle.render import catalog as rc

    chosen = {kind: entries(kind)}
    _print(rc.to_json(chosen) if fmt == "json" else Group(*rc.tables(chosen)), fmt, width, output)


def _print(renderable_or_text, fmt: str, width: int | None, output: str | None) -> None:
    from oracle.render.output import emit

    if fmt == "json":
        emit(renderable_or_text, output)
        return
    from oracle.render.predict import render_text

    if output:
        emit(render_text(renderable_or_text, width=width or 140), output)
        return
    from oracle.cli.common import print_renderable

    print_renderable(renderable_or_text, width=width)


@click.group()
def show() -> None:
    """Show a model, system, profile or software stack (shipped name or path) as a table or JSON."""


@show.command("model")
@click.argument("name", metavar="[MODEL]", required=False)
@_FORMAT
@_WIDTH
@output_option
@click.option("--system", "-s", metavar="SYSTEM", help="Also the largest batch per GPU that fits its GPU memory.")
def show_model(name: str, fmt: str, width: int | None, output: str | None, system: str | None) -> None:
    """Layers with shapes, parameters, FLOPs, activations and the bytes each saves for
    the backward, with totals; with --system, the largest batch per GPU that fits."""
    from oracle.load import load_model, load_system
    from oracle.render import show as rs

    if name is None:
        return _list("models", fmt, width, output)
    m = load_model(name)
    s = load_system(system) if system else None
    _print(rs.model_json(m, s) if fmt == "json" else rs.model_table(m, s), fmt, width, output)


@show.command("system")
@click.argument("name", metavar="[SYSTEM]", required=False)
@_FORMAT
@_WIDTH
@output_option
def show_system(name: str, fmt: str, width: int | None, output: str | None) -> None:
    """GPUs, nodes and network levels with latency and bandwidth."""
    from oracle.load import load_system
    from oracle.render import show as rs

    if name is None:
        return _list("systems", fmt, width, output)
    s = load_system(name)
    _print(rs.system_json(s) if fmt == "json" else rs.system_table(s), fmt, width, output)


@show.command("profile")
@click.argument("name", metavar="[PROFILE]", required=False)
@click.option("--model", "-m", metavar="MODEL", help="Bind to a model: per-layer times (a total is spread by FLOPs).")
@_FORMAT
@_WIDTH
@output_option
def show_profile(name: str, model: str | None, fmt: str, width: int | None, output: str | None) -> None:
    """Per-layer forward, backward and weight-update times and their sums."""
    from oracle.compute.binding import bind_profile
    from oracle.load import load_model, load_profile
    from oracle.render import show as rs

    if name is None:
        return _list("profiles", fmt, width, output)
    pr = load_profile(name)
    m = times = None
    if model:
        m = load_model(model)
        times = bind_profile(m, pr)
    out = rs.profile_json(pr, times, m) if fmt == "json" else rs.profile_table(pr, times, m)
    _print(out, fmt, width, output)


@show.command("stack")
@click.argument("name", metavar="[STACK]", required=False)
@_FORMAT
@_WIDTH
@output_option
def show_stack(name: str, fmt: str, width: int | None, output: str | None) -> None:
    """Every value of a software stack with its source and the rows it was fitted on;
    none: what a projection runs with under --stack none."""
    from oracle.load import load_stack
    from oracle.render import stack as rs
    from oracle.vocabulary import NO_STACK

    if name is None:
        return _list("stacks", fmt, width, output)
    if name == NO_STACK:  # as --stack none: no stack, whatever file is named none
        return _print(rs.no_stack_json() if fmt == "json" else rs.no_stack_table(), fmt, width, output)
    st = load_stack(name)
    _print(rs.stack_json(st) if fmt == "json" else rs.stack_table(st), fmt, width, output)
