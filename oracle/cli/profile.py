"""``oracle profile``: measure per-layer timings with PyTorch, or estimate them."""

from __future__ import annotations

import click

from oracle import limits
from oracle.cli.common import named, output_option, stack_option
from oracle.cli.types import MAX_THREADS, FiniteRange, PlainIntRange, count_type
from oracle.vocabulary import FP32, NO_STACK, PRECISIONS

_POSITIVE_FRACTION = FiniteRange(min=0, max=1, min_open=True)


@click.command(context_settings={"max_content_width": 100})
@click.argument("model", metavar="MODEL", callback=named)
@click.option(
    "--batch", "-b", type=PlainIntRange(min=1, limit=int(limits.BATCH_PER_GPU.hi)), default=32, show_default=True,
    help="Samples per iteration (per GPU) to measure or estimate at.",
)  # fmt: skip
@click.option(
    "--device", type=click.Choice(["cpu", "cuda"], case_sensitive=False), help="Where to measure. [default: cpu]"
)
@click.option(
    "--repeats", "-r", type=count_type(),
    help="Timed repeats; the median is kept. [default: 10]",
)  # fmt: skip
@click.option(
    "--warmup", "-w", type=count_type(min=0),
    help="Untimed warm-up runs before the repeats. [default: 3]",
)  # fmt: skip
@click.option(
    "--threads", "-t", type=PlainIntRange(min=1, limit=MAX_THREADS),
    help="CPU threads for PyTorch. [default: PyTorch's choice]",
)  # fmt: skip
@click.option(
    "--estimate", is_flag=True,
    help="Do not measure: estimate a roofline profile for the GPU of --system.",
)  # fmt: skip
@click.option(
    "--system", "-s", metavar="NAME|FILE", callback=named,
    help="With --estimate: the system whose GPU to estimate for.",
)  # fmt: skip
@click.option(
    "--efficiency", type=_POSITIVE_FRACTION,
    help="With --estimate: fraction of peak FLOP/s reached (the roofline of estimate.py)."
    " [default: neither efficiency given: the compute model of oracle/compute/kernels.py]",
)  # fmt: skip
@click.option(
    "--memory-efficiency", type=_POSITIVE_FRACTION,
    help="With --estimate: fraction of peak memory bandwidth reached (roofline). [default: 0.8 with --efficiency]",
)  # fmt: skip
@click.option(
    "--precision", type=click.Choice(PRECISIONS, case_sensitive=False), default=FP32, show_default=True,
    help="With --estimate: the precision conv/fc run at and the bytes per element.",
)  # fmt: skip
@stack_option(" With --estimate: named in the profile's header and summary with the efficiency a projection"
              " with it applies; the written times stay the compute model's (applied once, when projecting).")
@output_option
def profile(model, batch, device, repeats, warmup, threads, estimate, system, efficiency,
            memory_efficiency, precision, stack, output):  # fmt: skip
    """Measure (PyTorch) or estimate per-layer forward, backward and weight-update times.

    Writes a profile (docs/file-formats.md) for MODEL to -o FILE, or to standard output (the
    summary then goes to standard error).  Measuring times every layer in isolation
    on its real input: forward, backward with a random upstream gradient, and an SGD
    momentum step, as medians of --repeats after --warmup runs; it also times whole
    training steps and prints how the sum of the layers compares.  On CUDA the times are
    the GPU's execution times of the kernels (the host's launches left out: a stack's
    launch floor models them).

    \b
    Examples:
      oracle profile resnet50 --batch 4 --threads 2 -o resnet50_cpu.yaml
      oracle profile resnet50 --estimate --system abci -o resnet50_est.yaml
    """
    from oracle.errors import OracleError
    from oracle.load import load_model

    measuring_options = {
        "--device": device, "--repeats": repeats, "--warmup": warmup, "--threads": threads
    }  # fmt: skip
    if estimate:
        given = [k for k, v in measuring_options.items() if v is not None]
        if given:
            raise OracleError(f"{given[0]} is for measuring; it cannot be used with --estimate")
        if not system:
            raise OracleError(
                "--estimate needs --system S (the GPU's peak FLOP/s and memory bandwidth)",
                hint="e.g. --system abci",
            )
    else:
        for opt, value in (("--system", system), ("--efficiency", efficiency),
                           ("--memory-efficiency", memory_efficiency),
                           ("--precision", None if precision == FP32 else precision), ("--stack", stack)):  # fmt: skip
            if value is not None:
                raise OracleError(f"{opt} is only used with --estimate")
        from oracle.profiling import require_torch

        require_torch()  # before anything else: the one-line 'needs PyTorch' error

    m = load_model(model)
    if estimate:
        _estimate(m, system, batch, efficiency, memory_efficiency, output, precision, stack)
    else:
        _measure(m, batch, device or "cpu", 10 if repeats is None else repeats,
                 3 if warmup is None else warmup, threads, output)  # fmt: skip


def _write(text: str, output: str | None, m) -> None:
    """Check that the text loads and binds to the model, then write it."""
    import yaml

    from oracle.compute.binding import bind_profile
    from oracle.load.profile import parse_profile
    from oracle.load.yamlfile import OracleLoader
    from oracle.render.output import emit

    pr = parse_profile(yaml.load(text, Loader=OracleLoader), output or "the profile written")  # noqa: S506
    bind_profile(m, pr)
    emit(text, output)


def _say(text: str, output: str | None) -> None:
    # the profile itself goes to stdout when there is no -o; the summary then to stderr
    from oracle.cli.common import echo

    echo(text, nl=False, err=output is None or output == "-")


def _estimate(m, system, batch, efficiency, memory_efficiency, output, precision=FP32, stack=None) -> None:
    from oracle.load import load_system
    from oracle.profiling.estimate import (
        DEFAULT_COMPUTE_EFFICIENCY,
        DEFAULT_MEMORY_EFFICIENCY,
        estimate,
    )
    from oracle.render.profile_file import estimate_summary, profile_yaml

    s = load_system(system)
    given = efficiency is not None or memory_efficiency is not None  # roofline with the given efficiencies
    pr_kw = {"compute_efficiency": (efficiency or DEFAULT_COMPUTE_EFFICIENCY) if given else None,
             "memory_efficiency": (memory_efficiency or DEFAULT_MEMORY_EFFICIENCY) if given else None}
    pr = estimate(m, s, batch=batch, precision=precision, **pr_kw)
    header = [
        f"ESTIMATED per-layer profile of {m.name} on {s.gpu_model}, written by `oracle profile"
        " --estimate`.",
        "A roofline from FLOPs, memory traffic, peak FLOP/s and bandwidth: not a measurement.",
        "See oracle/profiling/estimate.py for the formulas.",
    ]
    from oracle.api import with_stack
    from oracle.load import Files

    # a name, a path or none, as every command reads it; not given: the system's (its file's
    # stack:, else none), as a projection on it takes
    st = with_stack(Files(), {"stack": stack if stack is not None else s.stack})["stack"]
    why = "" if stack is not None else f"the default on {s.name}, --stack not given"
    if st is None:
        line = f"Stack {NO_STACK}{f', {why}' if why else ''}: a projection with no stack uses these times as they are."
        name, factor, extra, runs = NO_STACK, 1.0, 0.0, precision
    else:
        line, (name, factor, extra, runs) = _stack_note(st, s, precision, len(m.layers), why)
    # the stack's line of the summary, from the estimate in the precision it runs
    summary = (name, factor, extra, None if runs == precision else estimate(m, s, batch=batch, precision=runs, **pr_kw), why)
    _write(profile_yaml(pr, [*header, line]), output, m)
    _say(estimate_summary(pr, batch, output if output not in (None, "-") else None, summary), output)


def _stack_note(st, system, precision: str, layers: int, why: str = "") -> tuple[str, tuple[str, float, float, str]]:
    """(the header line naming the stack (``why``: how it came to be in force), (its name, the factor a projection with it puts on
    these times, the GPU overhead it adds per iteration, the precision it runs
    ``precision`` in)): an estimated profile keeps the
    compute model's times and a projection divides them by the stack's efficiency and adds
    its GPU overhead per layer (compute/stack.py), so writing them so here would count the
    stack twice."""
    from oracle.compute.options import Options, stack_precision
    from oracle.compute.stack import compute_factor

    factor = compute_factor(Options(precision=precision, stack=st), system, "estimated")
    extra = layers * st.gpu_overhead_s()
    plus = f" and adds {layers} layers x {st.gpu_overhead_s():g} s of GPU overhead per iteration" if extra else ""
    runs, _ = stack_precision(precision, st, False, system)
    tf32 = f" It runs {precision} in {runs} on this GPU: a projection converts these times to {runs}." if runs != precision else ""
    return (f"Stack {st.label}{f', {why}' if why else ''}: a projection under it divides these times by its efficiency"
            f" {1 / factor:g} ({precision} on {system.gpu_model}){plus}; they are the compute model's.{tf32}",
            (st.label, factor, extra, runs))


def _measure(m, batch, device, repeats, warmup, threads, output) -> None:
    import sys

    from oracle.profiling.measure import measure
    from oracle.render.profile_file import measurement_summary, profile_yaml

    settings = dict(batch=batch, device=device, repeats=repeats, warmup=warmup, threads=threads)
    if sys.stderr.isatty():
        from rich.markup import escape
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        from oracle.textsafe import console as safe_console

        bar = Progress(
            TextColumn(f"profiling {escape(m.name)}"),
            BarColumn(bar_width=20),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.description}"),
            console=safe_console(stderr=True),
            transient=True,
            auto_refresh=False,  # no refresh thread competing with the timed runs
        )
        room = max(8, bar.console.width - len(m.name) - 48)  # what fits after the bar

        with bar:
            task = bar.add_task("", total=2 * len(m.layers) + 3)

            def progress(done: int, total: int, what: str) -> None:
                what = what if len(what) <= room else what[: room - 1] + "…"
                bar.update(task, completed=done, total=total, description=what, refresh=True)

            result = measure(m, progress=progress, **settings)
    else:
        result = measure(m, **settings)

    header = [
        f"Per-layer profile of {m.name}, measured with `oracle profile`"
        f" (PyTorch {result.torch_version}).",
        f"Sum of per-layer times {result.layer_sum_s:.4g} s vs whole training step"
        f" {result.step_s:.4g} s per iteration (ratio {result.ratio:.3f}) at batch {result.batch}.",
        "Method: oracle/profiling/measure.py.",
    ]
    _write(profile_yaml(result.to_profile(), header), output, m)
    _say(measurement_summary(result, output if output not in (None, "-") else None), output)
