"""Options and helpers shared by several commands (kept import-light)."""

from __future__ import annotations

from collections.abc import Callable

import click

from oracle import limits
from oracle.cli.types import KindType, PlainIntRange, count_type
from oracle.vocabulary import (
    ALGORITHMS,
    ESTIMATE,
    FRAMEWORK,
    MEMORY_FORMATS,
    MEMORY_MODELS,
    PARADL,
    PRECISIONS,
    precision_bytes_text,
)

FORMATS = ("table", "json", "csv", "markdown")


# one click type per kind of number (oracle/limits.py), shared by every command
batch_type = KindType(limits.BATCH)
per_gpu_type = KindType(limits.BATCH_PER_GPU)
contention_type = KindType(limits.CONTENTION)
samples_type = KindType(limits.SAMPLES)
reuse_type = KindType(limits.REUSE)
bucket_mb_type = KindType(limits.BUCKET_MB)


class RegistryOption(click.Option):
    """An option whose help (and default) say what the strategy registry holds when the
    help is shown or the default used, not when the CLI is imported: the registry
    imports numpy, and a strategy registered later shows too."""

    def __init__(self, *args, help_from: Callable[[], str], default_from: Callable[[], str] | None = None,
                 **kwargs) -> None:  # fmt: skip
        super().__init__(*args, **kwargs)
        self._help_from, self._default_from = help_from, default_from

    def get_help_record(self, ctx):
        self.help = self._help_from()
        return super().get_help_record(ctx)

    def get_default(self, ctx, call=True):
        if self._default_from is not None:
            return self._default_from()
        return super().get_default(ctx, call)


def strategy_help() -> str:
    from oracle.compute.strategies import names

    return f"Comma-separated strategies ({', '.join(names())}) or all."


def named(ctx, param, value):
    """A name or path given as an empty string (an unset shell variable) is a usage error,
    not the current folder, nor -p's default estimate."""
    if value is not None and not str(value).strip():
        raise click.BadParameter("is empty; give a shipped name or a path (oracle list)")
    return value


def named_stack(ctx, param, value):
    """--stack "" (an unset shell variable) is a usage error, not the current folder."""
    if value is not None and not str(value).strip():
        raise click.BadParameter("is empty; expected a stack name or path (oracle list stacks), or none")
    return value


def model_system_profile_options(f):
    f = click.option(
        "--profile", "-p", default=ESTIMATE, show_default=True, metavar="NAME|FILE|estimate", callback=named,
        help="Timing profile (shipped name or path); estimate: the compute model's estimate for the"
        " system's GPU at the run's precision and per-GPU batch (as oracle profile --estimate writes it).",
    )(f)
    f = click.option(
        "--system", "-s", required=True, metavar="NAME|FILE", callback=named,
        help="System (shipped name, e.g. abci, or path).",
    )(f)
    f = click.option(
        "--model", "-m", required=True, metavar="NAME|FILE", callback=named,
        help="CNN model (shipped name, e.g. resnet50, or path).",
    )(f)
    return f


def output_option(f):
    return click.option(
        "--output", "-o", metavar="FILE", help="Write to FILE (atomically) instead of standard output."
    )(f)


def memory_model_options(f):
    """--memory-model and --memory-reuse (γ, ParaDL's bound only), for the commands
    that project without a full sweep (compare, plot compare, search)."""
    f = click.option("--memory-reuse", type=reuse_type,
                     help="ParaDL memory model: reuse factor γ (0 < γ <= 1). [default: 1]")(f)
    return click.option("--memory-model", type=click.Choice(MEMORY_MODELS, case_sensitive=False),
                        help=f"{FRAMEWORK}: what PyTorch keeps; {PARADL}: ParaDL's upper bound."
                        f" [default: the stack's, else {FRAMEWORK}]")(f)


def precision_option(also: str = ""):
    """--precision: None when not given, so that the profile's applies (issue 23)."""
    return click.option("--precision", type=click.Choice(PRECISIONS, case_sensitive=False),
                        help=f"Bytes per item δ ({precision_bytes_text()}) and the peak conv/fc run at; the"
                        f" compute model converts the profile's times to it.{also} [default: the profile's precision]")


def stack_option(also: str = ""):
    """--stack NAME|FILE (issue 25): the training software stack (stacks/, oracle list stacks)."""
    return click.option("--stack", metavar="NAME|FILE", callback=named_stack,
                        help="Software stack (shipped name, e.g. pytorch, or path; oracle list stacks): its compute"
                        " efficiency, per-iteration costs, overlap, buckets, collectives and memory model, for the"
                        f" options not given (one given wins, also at its default value); none: no stack.{also}"
                        " [default: the system file's"
                        " stack:, else none]")


def collective_option():
    """--collective (predict, plot, report, search)."""
    return click.option("--collective", type=click.Choice(ALGORITHMS, case_sensitive=False),
                     help="All-reduce algorithm (auto: the cheapest per call; ps: parameter servers, collectives:"
                     " ps_servers in the system; nccl: NCCL's choice of ring, tree, NVLS or CollNet and protocol per"
                     " call, from the system's topology; nvls, collnet: NCCL pinned to that algorithm, NCCL_ALGO,"
                     " where the system offers it). [default: the system's, else ring]")


def overlap_options() -> list:
    """--overlap, --bucket-MB, --bucket-layers, --delayed-update (predict, plot, report, search)."""
    return [
        click.option("--overlap", type=click.Choice(["none", "buckets"], case_sensitive=False),
                     help="buckets: all-reduce gradients in buckets during the backward and hide halos"
                     " behind interior compute (communication_s is then the exposed part)."
                     " [default: the stack's, else none]"),
        click.option("--bucket-MB", "bucket_mb", type=bucket_mb_type,
                     help="Gradient bucket size in MiB; 0: one bucket per layer."
                     " [default: the stack's, else 25, PyTorch DDP's]"),
        click.option("--bucket-layers", type=count_type(min=1, below_to_rule=True), default=None,
                     help="With --overlap buckets: all-reduce gradients in chunks of K layers (Lee et al. 2017)"
                     " instead of by size. [default: by --bucket-MB]"),
        click.option("--delayed-update", metavar="LAYERS",
                     help="With --overlap buckets: layers (names or types, e.g. fc) whose gradient exchange"
                     " overlaps the next iteration's forward (Lee et al.'s delayed update)."),
    ]


def projection_options(precision_also: str = "", stack_also: str = "") -> list:
    """Every option that changes a projection (issue 26: predict, plot, report, compare and
    fit runs take them all; a runs file's columns of compute/options.OPTION_COLUMNS per row)."""
    return [
        precision_option(precision_also),
        click.option("--memory-model", type=click.Choice(MEMORY_MODELS, case_sensitive=False),
                     help=f"{FRAMEWORK}: what PyTorch keeps (saved tensors, weights, gradients, optimizer,"
                     f" buffers, workspace); {PARADL}: ParaDL's upper bound Σ 2B(|x|+|y|) + 2|w|."
                     f" [default: the stack's, else {FRAMEWORK}]"),
        click.option("--memory-reuse", type=reuse_type,
                     help="ParaDL memory model: reuse factor γ (0 < γ <= 1). [default: 1]"),
        click.option("--contention", type=contention_type, help="Contention factor φ >= 1."),
        click.option("--samples", type=samples_type, help="Dataset size D (overrides the model's)."),
        collective_option(),
        click.option("--optimizer", type=click.Choice(["sgd", "momentum", "adam"], case_sensitive=False), default="sgd", show_default=True,
                     help="Optimizer state in memory: none, 4 or 8 bytes per parameter."),
        click.option("--mixed-precision", is_flag=True,
                     help="2-byte activations, weights, gradients and messages, plus fp32 master weights."),
        click.option("--zero", type=PlainIntRange(0, 3), default=0, show_default=True,
                     help="ZeRO stage: shard optimizer state (1), + gradients (2), + weights (3) across data-parallel GPUs."),
        click.option("--checkpointing", is_flag=True,
                     help="Pipeline: activation checkpointing (keep stage inputs, recompute the forward)."),
        *overlap_options(),
        click.option("--replicated-gradients", metavar="LAYERS",
                     help="Data parallelism: layers (names or types) whose weight gradient every GPU computes for"
                     " the whole batch after an all-gather of their inputs and errors, instead of an"
                     " all-reduce (Lee et al. 2017 §III-C-2)."),
        click.option("--spatial-split-after", metavar="LAYER",
                     help="Spatial strategies: split the layers up to LAYER only, then gather (e.g. CosmoFlow"
                     " codes gather after pool2). [default: the last layer with a spatial output]"),
        # issue 13 (compute model)
        stack_option(stack_also),
        click.option("--compute-scaling", type=click.Choice(["model", "linear"], case_sensitive=False),
                     help="model: convert profile times to this GPU, precision and per-GPU"
                     " batch (docs/memory.md and docs/cost-model.md); linear: ParaDL's profile times x samples."
                     " [default: the stack's, else model]"),
        click.option("--memory-format", type=click.Choice(MEMORY_FORMATS, case_sensitive=False),
                     help="Tensor layout of the convolutions (nchw: PyTorch's default; channels-last): an"
                     " estimated profile's speed moves by the stack's measured channels-last speedup on the"
                     " system's GPU where it differs from the stack's layout. [default: the stack's]"),
    ]


def with_options(opts: list):
    """A decorator applying click options in their listed order."""
    def apply(f):
        for opt in reversed(opts):
            f = opt(f)
        return f

    return apply


def sweep_options(f):
    """The options that define a sweep (predict, plot, report); one place for all."""
    opts = [
        click.option("--gpus", "-g", "gpus", metavar="LIST|A-B|A..B",
                     help="GPU counts: 4,8,16, 4-1024 (powers of two from A to B) or 1..512 (every count;"
                     " 8..512:8 in steps of 8)."
                     "  [default: powers of two up to the system size, at most 1024]"),
        click.option("--strategy", "strategies", default="all", show_default=True, metavar="NAMES",
                     cls=RegistryOption, help_from=strategy_help),
        click.option("--batch-per-gpu", "-b", type=per_gpu_type,
                     help="Weak scaling: B = b·p samples per iteration. [default: the profile's"
                     " measured_samples_per_gpu, else 32]"),
        click.option("--batch", "-B", type=batch_type, help="Strong scaling: global mini-batch B, fixed."),
        click.option("--p2", type=count_type(), help="Hybrids: fix the model-part size p2 (p = p1·p2)."),
        click.option("--segments", "-S", type=count_type(), help="Pipeline segments S. [default: min(B, 4p)]"),
        *projection_options(),
        click.option("--layers", metavar="LAYERS.yaml",
                     help="Also rank a layer-wise configuration (written by oracle search -o) at its GPU count."),
    ]
    return model_system_profile_options(with_options(opts)(f))


def render_points(points, meta, fmt, top, chart, width, output) -> None:
    """Render a sweep (``meta`` from :func:`describe`) to stdout or a file."""
    from oracle.render.output import emit
    from oracle.render.predict import select_top

    shown = select_top(points, top)
    if fmt == "json":
        from oracle.render.records import to_json

        emit(to_json(shown), output)
        return
    if fmt == "csv":
        from oracle.render.records import to_csv

        emit(to_csv(shown), output)
        return
    from oracle.render import predict as rp

    if fmt == "markdown":
        emit(rp.markdown(points, meta, top), output)
        return
    if output:
        table = rp.table(points, meta, top)
        text = rp.render_text(table, width=width or 140)
        if chart:
            text += rp.render_text(rp.bar_chart(shown, meta, width or 140), width=width or 140)
        emit(text, output)
        return
    w = make_console(width).width
    parts = [rp.table(points, meta, top)] + ([rp.bar_chart(shown, meta, w)] if chart else [])
    print_renderable(*parts, width=w)


def warn(text: str) -> None:
    """A problem that does not stop the command: one 'oracle: warning: ...' line on
    standard error (docs/errors-and-robustness.md); a user's text in it (a system name
    from a runs file, say) cannot break the line (control characters escaped)."""
    from oracle.errors import one_line

    click.echo(f"oracle: warning: {one_line(text)}", err=True)


def echo(text: str, *, err: bool = False, nl: bool = True) -> None:
    """A plain line (a summary, 'wrote FILE') with a user's text in it: control
    characters escaped (textsafe.terminal), as in tables and messages."""
    from oracle.textsafe import terminal

    click.echo(terminal(text), err=err, nl=nl)


def print_renderable(*renderables, width: int | None = None) -> None:
    """Rich output to standard output: styled on a terminal; piped, plain text at the
    console's width without trailing spaces (issue 17)."""
    console = make_console(width)
    if console.is_terminal:
        for r in renderables:
            console.print(r)
        return
    from oracle.render.predict import render_text

    click.echo("".join(render_text(r, width=console.width) for r in renderables), nl=False)


def make_console(width: int | None = None):
    """A rich console for standard output: the terminal's width, or 140 columns when
    output goes to a pipe or file (tables are not wrapped to 80 there)."""
    import os
    import sys

    from oracle.textsafe import console  # control characters escaped; a broken pipe is an error

    if width is None and not sys.stdout.isatty() and "COLUMNS" not in os.environ:
        width = 140
    return console(width=width) if width else console()
