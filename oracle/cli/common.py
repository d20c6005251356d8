"""Options and helpers shared by several commands (kept import-light)."""

from __future__ import annotations

import math

import click

from oracle.cli.types import FiniteRange, PlainIntRange

FORMATS = ("table", "json", "csv", "markdown")


class _PositiveFloat(click.ParamType):
    name = "NUMBER"

    def convert(self, value, param, ctx):
        try:
            v = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(v) or v <= 0:
            self.fail(f"{value!r} is not a positive number", param, ctx)
        if not 1e-6 <= v <= 1e12:  # beyond these the cost model's products overflow
            self.fail(f"{value!r} is not plausible (expected 1e-06 to 1e+12)", param, ctx)
        return v


positive_float = _PositiveFloat()


def model_system_profile_options(f):
    f = click.option(
        "--profile", "-p", required=True, metavar="NAME|FILE", help="Timing profile (shipped name or path)."
    )(f)
    f = click.option(
        "--system", "-s", required=True, metavar="NAME|FILE", help="System (shipped name, e.g. abci, or path)."
    )(f)
    f = click.option(
        "--model", "-m", required=True, metavar="NAME|FILE", help="CNN model (shipped name, e.g. resnet50, or path)."
    )(f)
    return f


def output_option(f):
    return click.option(
        "--output", "-o", metavar="FILE", help="Write to FILE (atomically) instead of standard output."
    )(f)


def load_inputs(model: str, system: str, profile: str):
    """Load and cross-check model, system and profile; return them and the times."""
    from oracle.load import load_model, load_profile, load_system
    from oracle.load.profile import bind_profile

    m = load_model(model)
    s = load_system(system)
    pr = load_profile(profile)
    return m, s, pr, bind_profile(m, pr)


def profile_note(pr, options=None) -> str:
    if pr.kind == "total":
        how = "training FLOPs"
        if options is not None and options.compute_scaling == "model":
            from oracle.compute.conversion import spreads_by_model

            how = "the compute model's layer times" if spreads_by_model(pr) else "training FLOPs"
        return (
            f"profile gives only a total ({pr.total_fw_bw_per_sample_s:.4g} s/sample fw+bw),"
            f" spread over layers by {how}"
        )
    if pr.kind == "estimated":
        return "ESTIMATED profile (roofline from FLOPs and memory traffic), not measured"
    return ""


def describe(m, s, pr, scaling: str, options) -> dict:
    from pathlib import Path

    return {
        "model": m.name,
        "system": s.name,
        "profile": Path(pr.file).stem if pr.file else pr.model,
        "profile_note": profile_note(pr, options),
        "scaling": scaling,
        "samples": int(options.samples or m.dataset_samples),
        "precision": (
            "mixed precision (δ=2, fp32 master weights)" if options.mixed_precision
            else f"{options.precision} (δ={options.delta})"
        ),
        "gamma": options.memory_reuse,
        "memory_model": options.memory_model,
        "memory_note": memory_note(s, options, pr),
        "options_note": options_note(s, options),
        "model_note": model_note(m),
    }


def model_note(model) -> str:
    """Operations an import could not map, costed at zero (``type: unsupported``)."""
    odd = [f"{layer.name} ({layer.op})" for layer in model.layers if layer.type == "unsupported"]
    return "zero-cost layers for unsupported operations: " + ", ".join(odd) if odd else ""


def memory_note(system, options, profile=None) -> str:
    """Which memory model the GPU memory column uses (docs/memory.md and docs/cost-model.md), and whether the saved
    activations were measured (a profile's saved_bytes) or follow the layer-type rules."""
    if options.memory_model == "paradl":
        return f"memory: ParaDL's upper bound Σ 2B(|x|+|y|) + 2|w|, scaled by γ = {options.memory_reuse:g}"
    measured = profile is not None and profile.layers and all(t.saved_bytes is not None for _, t in profile.layers)
    saved = "measured by the profile" if measured else "by layer type"
    return (
        f"memory: what {system.framework.name} keeps: tensors saved for the backward ({saved}), weights,"
        " gradients, optimizer state, buffers, workspace, CUDA context; --memory-model paradl for ParaDL's bound"
    )


def options_note(system, options) -> str:
    """The options beyond ParaDL in force (empty when the defaults reproduce it)."""
    bits = []
    algorithm = options.collective or system.collective_algorithm
    if algorithm != "ring":
        bits.append(f"{algorithm} all-reduce")
    if system.collective_tables:
        bits.append("measured collective tables")
    if options.overlap != "none":
        size = f"{options.bucket_bytes / 2**20:g} MiB buckets" if options.bucket_bytes else "one bucket per layer"
        if options.bucket_layers:
            size = f"chunks of {options.bucket_layers} layers"
        if options.delayed_update:
            size += f", delayed update of {','.join(options.delayed_update)}"
        bits.append(f"overlap: {size}, halos behind interior compute")
    if options.replicated_gradients:
        bits.append(f"replicated weight gradients of {','.join(options.replicated_gradients)}")
    if options.optimizer != "sgd":
        bits.append(f"{options.optimizer} state")
    if options.zero:
        bits.append(f"ZeRO-{options.zero}")
    if options.checkpointing:
        bits.append("pipeline activation checkpointing")
    if system.input is not None:
        bits.append("input pipeline modelled")
    if system.gpu_workspace_bytes:
        bits.append(f"{system.gpu_workspace_bytes / 1e9:g} GB framework workspace")
    return " · ".join(bits)


def project(model, system, profile, gpus=None, strategies="all", batch_per_gpu=None, batch=None, p2=None,
            segments=None, precision="fp32", gamma=1.0, phi=None, samples=None, collective=None,
            optimizer="sgd", mixed_precision=False, zero=0, checkpointing=False, overlap="none",
            bucket_mb=25.0, layers=None, memory_model="framework", spatial_split_after=None,
            compute_scaling="model", bucket_layers=None, delayed_update=None,
            replicated_gradients=None):  # fmt: skip
    """Load the inputs and run the sweep, as ``oracle predict`` does (keywords as the
    options of :func:`sweep_options`).

    Returns (points, meta, inputs): ``meta`` labels tables, plots and the report,
    ``inputs`` is a dict with the loaded model, system, profile and options."""
    from oracle.api import SweepRequest, run_sweep
    from oracle.compute.context import Options
    from oracle.errors import OracleError
    from oracle.load.values import default_gpus, parse_gpus

    if batch is not None and batch_per_gpu is not None:
        raise OracleError("give either --batch (strong scaling) or --batch-per-gpu (weak scaling), not both")
    m, s, pr, _ = load_inputs(model, system, profile)  # a mismatched profile is the first error
    counts = parse_gpus(gpus) if gpus is not None else default_gpus(s.total_gpus)  # '' is an error
    gamma = memory_reuse(gamma, memory_model)
    options = Options(precision=precision, memory_reuse=gamma, contention=phi, segments=segments, samples=samples,
                      collective=collective, optimizer=optimizer, mixed_precision=mixed_precision, zero=zero,
                      checkpointing=checkpointing, overlap=overlap, bucket_bytes=bucket_mb * 2**20,
                      memory_model=memory_model, spatial_split_after=spatial_split_after,
                      compute_scaling=compute_scaling, bucket_layers=_chunk_layers(bucket_layers),
                      delayed_update=_names(delayed_update), replicated_gradients=_names(replicated_gradients))
    run = run_sweep(SweepRequest(m, s, pr, options, counts, strategies, batch, batch_per_gpu, p2))
    points, batch_per_gpu, conversion = run.points, run.batch_per_gpu, run.conversion
    if layers:
        points = _with_layerwise(points, layers, m, s, pr, options, batch, batch_per_gpu)
    scaling = f"strong scaling, B = {batch:g}" if batch is not None else f"weak scaling, {batch_per_gpu:g} samples/GPU"
    meta = describe(m, s, pr, scaling, options)
    meta["compute_conversion"] = conversion_caption(conversion, batch, batch_per_gpu, s, m)
    meta.update(gpu_model=s.gpu_model, gpu_memory_bytes=s.gpu_memory_bytes)
    inputs = dict(model=m, system=s, profile=pr, options=options, gpus=counts, strategies=strategies,
                  batch=batch, batch_per_gpu=batch_per_gpu, p2=p2,
                  args=dict(model=model, system=system, profile=profile))
    return points, meta, inputs


def memory_reuse(gamma: float | None, memory_model: str) -> float:
    """γ applies to ParaDL's bound only: with the framework model it is a usage error."""
    from oracle.errors import OracleError

    if gamma is None:
        return 1.0
    if memory_model != "paradl":
        raise OracleError(
            "γ scales ParaDL's memory bound; the framework memory model counts"
            " what is kept instead",
            path="--memory-reuse",
            hint="add --memory-model paradl, or drop --memory-reuse",
        )
    return gamma


def memory_model_options(f):
    """--memory-model and --memory-reuse (γ, ParaDL's bound only), for the commands
    that project without a full sweep (compare, plot compare, search)."""
    f = click.option("--memory-reuse", "gamma", type=FiniteRange(min=0, max=1, min_open=True),
                     help="ParaDL memory model: reuse factor γ (0 < γ <= 1). [default: 1]")(f)
    return click.option("--memory-model", type=click.Choice(["framework", "paradl"]), default="framework",
                        show_default=True, help="framework: what PyTorch keeps; paradl: ParaDL's upper bound.")(f)


def _names(text) -> tuple[str, ...]:
    """A comma-separated list of layer names or types."""
    return tuple(x.strip() for x in (text or "").split(",") if x.strip())


def _chunk_layers(k) -> int:
    """--bucket-layers K: None (not given) is 0, chunks by size; an explicit 0 is an error."""
    from oracle.errors import OracleError

    if k is None:
        return 0
    if k < 1:
        raise OracleError(f"got {k}; a chunk holds at least 1 layer", path="--bucket-layers",
                          hint="leave it out to chunk by --bucket-MB")  # fmt: skip
    return k


def collective_option():
    """--collective (predict, plot, report, search)."""
    return click.option("--collective", type=click.Choice(["ring", "rhd", "tree", "hierarchical", "leader", "ps", "auto"]),
                     help="All-reduce algorithm (auto: the cheapest per call; ps: parameter servers, collectives:"
                     " ps_servers in the system). [default: the system's, else ring]")


def overlap_options() -> list:
    """--overlap, --bucket-MB, --bucket-layers, --delayed-update (predict, plot, report, search)."""
    return [
        click.option("--overlap", type=click.Choice(["none", "buckets"]), default="none", show_default=True,
                     help="buckets: all-reduce gradients in buckets during the backward and hide halos"
                     " behind interior compute (communication_s is then the exposed part)."),
        click.option("--bucket-MB", "bucket_mb", type=FiniteRange(min=0), default=25.0, show_default=True,
                     help="Gradient bucket size in MiB (PyTorch DDP's default); 0: one bucket per layer."),
        click.option("--bucket-layers", type=PlainIntRange(min=0), default=None,
                     help="With --overlap buckets: all-reduce gradients in chunks of K layers (Lee et al. 2017)"
                     " instead of by size. [default: by --bucket-MB]"),
        click.option("--delayed-update", metavar="LAYERS",
                     help="With --overlap buckets: layers (names or types, e.g. fc) whose gradient exchange"
                     " overlaps the next iteration's forward (Lee et al.'s delayed update)."),
    ]


def sweep_options(f):
    """The options that define a sweep (predict, plot, report); one place for all."""
    opts = [
        click.option("--gpus", "-g", "gpus", metavar="LIST|A-B",
                     help="GPU counts: 4,8,16 or 4-1024 (powers of two from A to B)."
                     "  [default: powers of two up to the system size, at most 1024]"),
        click.option("--strategy", "strategies", default="all", show_default=True, metavar="NAMES",
                     help="Comma-separated strategies (serial, data, spatial, filter, channel, pipeline,"
                     " data+filter, data+spatial) or all."),
        click.option("--batch-per-gpu", "-b", type=positive_float,
                     help="Weak scaling: B = b·p samples per iteration."),
        click.option("--batch", "-B", type=positive_float, help="Strong scaling: global mini-batch B, fixed."),
        click.option("--p2", type=PlainIntRange(min=1), help="Hybrids: fix the model-part size p2 (p = p1·p2)."),
        click.option("--segments", "-S", type=PlainIntRange(min=1), help="Pipeline segments S. [default: min(B, 4p)]"),
        click.option("--precision", type=click.Choice(["fp32", "tf32", "fp16", "bf16"]), default="fp32",
                     show_default=True, help="Bytes per item δ (fp32/tf32 4, fp16/bf16 2) and, with"
                     " --compute-scaling model, the peak conv/fc run at."),
        click.option("--memory-model", type=click.Choice(["framework", "paradl"]), default="framework",
                     show_default=True,
                     help="framework: what PyTorch keeps (saved tensors, weights, gradients, optimizer,"
                     " buffers, workspace); paradl: ParaDL's upper bound Σ 2B(|x|+|y|) + 2|w|."),
        click.option("--memory-reuse", "gamma", type=FiniteRange(min=0, max=1, min_open=True),
                     help="ParaDL memory model: reuse factor γ (0 < γ <= 1). [default: 1]"),
        click.option("--contention", "phi", type=FiniteRange(min=1, max=1000), help="Contention factor φ >= 1."),
        click.option("--samples", type=PlainIntRange(min=1, max=10**15), help="Dataset size D (overrides the model's)."),
        collective_option(),
        click.option("--optimizer", type=click.Choice(["sgd", "momentum", "adam"]), default="sgd", show_default=True,
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
        click.option("--compute-scaling", type=click.Choice(["model", "linear"]), default="model",
                     show_default=True, help="model: convert profile times to this GPU, precision and per-GPU"
                     " batch (docs/memory.md and docs/cost-model.md); linear: ParaDL's profile times x samples."),
        click.option("--layers", metavar="LAYERS.yaml",
                     help="Also rank a layer-wise configuration (written by oracle search -o) at its GPU count."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return model_system_profile_options(f)


def conversion_caption(conversion, batch, batch_per_gpu, system=None, model=None) -> str:
    """The compute conversion for captions and reports (issue 13): from -> to, with
    the per-GPU batch of weak scaling, or per point under strong scaling; and the
    system's calibrated compute factor for the model, if any (issue 14)."""
    k = system.implementation.compute_factor(model.name) if system is not None and model is not None else 1.0
    factor = f"; times x {k:.4g}, the system's calibrated compute factor for {model.name}" if k != 1.0 else ""
    if conversion is None:
        return "linear (ParaDL: profile times x samples)" + factor
    per_gpu = batch_per_gpu if batch is None else None
    text = conversion.label(per_gpu)
    return text + ("" if per_gpu is not None or not conversion.active else " (b = B/p per point)") + factor


def _with_layerwise(points, path, m, s, pr, options, batch, batch_per_gpu):
    """A layer-wise configuration file (oracle search -o) ranked with the sweep at its
    GPU count, as strategy "layer-wise"."""
    from oracle.compute import layerwise
    from oracle.compute.conversion import build_context
    from oracle.compute.sweep import rank
    from oracle.errors import OracleError
    from oracle.load.layerwise import bind_layerwise, load_layerwise

    if options.overlap != "none" or options.memory_model_extended:
        raise OracleError(
            "--layers does not support --overlap or the memory options (optimizer, mixed precision,"
            " ZeRO, checkpointing) yet",
            path="--layers",
        )
    config = load_layerwise(path)
    assignment = bind_layerwise(config, m)
    p = config.gpus
    B = config.global_batch()
    if B is None:
        B = float(batch) if batch is not None else float(batch_per_gpu) * p
    ctx = build_context(m, s, pr, options)
    point = layerwise.evaluate(ctx, p, B, assignment).point
    others = [pt for pt in points if pt.gpus != p]
    group = rank([pt for pt in points if pt.gpus == p] + [point])
    return sorted(others + group, key=lambda pt: pt.gpus)


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
        table = rp.table(points, meta, top, width or 140)
        text = rp.render_text(table, width=width or 140)
        if chart:
            text += rp.render_text(rp.bar_chart(shown, meta, width or 140), width=width or 140)
        emit(text, output)
        return
    w = make_console(width).width
    parts = [rp.table(points, meta, top, w)] + ([rp.bar_chart(shown, meta, w)] if chart else [])
    print_renderable(*parts, width=w)


def warn(text: str) -> None:
    """A problem that does not stop the command: one 'oracle: warning: ...' line on
    standard error (docs/errors-and-robustness.md)."""
    click.echo(f"oracle: warning: {text}", err=True)


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

    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:  # rich would exit 1 silently; say it in one line
            import errno

            raise BrokenPipeError(errno.EPIPE, "Broken pipe")

    if width is None and not sys.stdout.isatty() and "COLUMNS" not in os.environ:
        width = 140
    return _Console(width=width) if width else _Console()
