"""Options and helpers shared by several commands (kept import-light)."""

from __future__ import annotations

import math

import click

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


def profile_note(pr) -> str:
    if pr.kind == "total":
        return (
            f"profile gives only a total ({pr.total_fw_bw_per_sample_s:.4g} s/sample fw+bw),"
            " spread over layers by training FLOPs"
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
        "profile_note": profile_note(pr),
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
    """Which memory model the GPU memory column uses (SPEC §4.6), and whether the saved
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
        bits.append(f"overlap: {size}, halos behind interior compute")
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
            bucket_mb=25.0, layers=None, memory_model="framework"):  # fmt: skip
    """Load the inputs and run the sweep, as ``oracle predict`` does (keywords as the
    options of :func:`sweep_options`).

    Returns (points, meta, inputs): ``meta`` labels tables, plots and the report,
    ``inputs`` is a dict with the loaded model, system, profile and options."""
    from oracle.compute.context import Options
    from oracle.compute.sweep import sweep
    from oracle.errors import OracleError
    from oracle.load.values import default_gpus, parse_gpus

    if batch is not None and batch_per_gpu is not None:
        raise OracleError("give either --batch (strong scaling) or --batch-per-gpu (weak scaling), not both")
    m, s, pr, times = load_inputs(model, system, profile)
    counts = parse_gpus(gpus) if gpus is not None else default_gpus(s.total_gpus)  # '' is an error
    if batch is None and batch_per_gpu is None:
        batch_per_gpu = float(pr.measured_samples_per_gpu or 32)
    gamma = memory_reuse(gamma, memory_model)
    options = Options(precision=precision, memory_reuse=gamma, contention=phi, segments=segments, samples=samples,
                      collective=collective, optimizer=optimizer, mixed_precision=mixed_precision, zero=zero,
                      checkpointing=checkpointing, overlap=overlap, bucket_bytes=bucket_mb * 2**20,
                      memory_model=memory_model)
    points = sweep(m, s, times, counts, strategies, batch=batch, batch_per_gpu=batch_per_gpu, p2=p2, options=options,
                   profile_kind=pr.kind)
    if layers:
        points = _with_layerwise(points, layers, m, s, times, options, pr.kind, batch, batch_per_gpu)
    scaling = f"strong scaling, B = {batch:g}" if batch is not None else f"weak scaling, {batch_per_gpu:g} samples/GPU"
    meta = describe(m, s, pr, scaling, options)
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
    f = click.option("--memory-reuse", "gamma", type=click.FloatRange(min=0, max=1, min_open=True),
                     help="ParaDL memory model: reuse factor γ (0 < γ <= 1). [default: 1]")(f)
    return click.option("--memory-model", type=click.Choice(["framework", "paradl"]), default="framework",
                        show_default=True, help="framework: what PyTorch keeps; paradl: ParaDL's upper bound.")(f)


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
        click.option("--p2", type=click.IntRange(min=1), help="Hybrids: fix the model-part size p2 (p = p1·p2)."),
        click.option("--segments", "-S", type=click.IntRange(min=1), help="Pipeline segments S. [default: min(B, 4p)]"),
        click.option("--precision", type=click.Choice(["fp32", "fp16", "bf16"]), default="fp32", show_default=True,
                     help="Bytes per item δ: fp32 4, fp16/bf16 2."),
        click.option("--memory-model", type=click.Choice(["framework", "paradl"]), default="framework",
                     show_default=True,
                     help="framework: what PyTorch keeps (saved tensors, weights, gradients, optimizer,"
                     " buffers, workspace); paradl: ParaDL's upper bound Σ 2B(|x|+|y|) + 2|w|."),
        click.option("--memory-reuse", "gamma", type=click.FloatRange(min=0, max=1, min_open=True),
                     help="ParaDL memory model: reuse factor γ (0 < γ <= 1). [default: 1]"),
        click.option("--contention", "phi", type=click.FloatRange(min=1, max=1000), help="Contention factor φ >= 1."),
        click.option("--samples", type=click.IntRange(min=1, max=10**15), help="Dataset size D (overrides the model's)."),
        click.option("--collective", type=click.Choice(["ring", "rhd", "tree", "hierarchical", "leader", "auto"]),
                     help="All-reduce algorithm (auto: the cheapest per call). [default: the system's, else ring]"),
        click.option("--optimizer", type=click.Choice(["sgd", "momentum", "adam"]), default="sgd", show_default=True,
                     help="Optimizer state in memory: none, 4 or 8 bytes per parameter."),
        click.option("--mixed-precision", is_flag=True,
                     help="2-byte activations, weights, gradients and messages, plus fp32 master weights."),
        click.option("--zero", type=click.IntRange(0, 3), default=0, show_default=True,
                     help="ZeRO stage: shard optimizer state (1), + gradients (2), + weights (3) across data-parallel GPUs."),
        click.option("--checkpointing", is_flag=True,
                     help="Pipeline: activation checkpointing (keep stage inputs, recompute the forward)."),
        click.option("--overlap", type=click.Choice(["none", "buckets"]), default="none", show_default=True,
                     help="buckets: all-reduce gradients in buckets during the backward and hide halos"
                     " behind interior compute (communication_s is then the exposed part)."),
        click.option("--bucket-MB", "bucket_mb", type=click.FloatRange(min=0), default=25.0, show_default=True,
                     help="Gradient bucket size in MiB (PyTorch DDP's default); 0: one bucket per layer."),
        click.option("--layers", metavar="LAYERS.yaml",
                     help="Also rank a layer-wise configuration (written by oracle search -o) at its GPU count."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return model_system_profile_options(f)


def _with_layerwise(points, path, m, s, times, options, profile_kind, batch, batch_per_gpu):
    """A layer-wise configuration file (oracle search -o) ranked with the sweep at its
    GPU count, as strategy "layer-wise"."""
    from oracle.compute import layerwise
    from oracle.compute.context import Context
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
    ctx = Context(m, s, times, options, profile_kind)
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
    table = rp.table(points, meta, top)
    if output:
        text = rp.render_text(table, width=width or 140)
        if chart:
            text += rp.render_text(rp.bar_chart(points, meta, width or 140), width=width or 140)
        emit(text, output)
        return
    console = make_console(width)
    console.print(table)
    if chart:
        console.print(rp.bar_chart(points, meta, console.width))


def make_console(width: int | None = None):
    """A rich console for standard output: the terminal's width, or 140 columns when
    output goes to a pipe or file (tables are not wrapped to 80 there)."""
    import os
    import sys

    from rich.console import Console

    if width is None and not sys.stdout.isatty() and "COLUMNS" not in os.environ:
        width = 140
    return Console(width=width) if width else Console()
