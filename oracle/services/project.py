"""Loading a model, system and profile and projecting them as ``oracle predict`` does,
with the captions that label the result: shared by the commands (oracle/cli) and the
services that build on a projection (report, plot, search).  No click, no printing."""

from __future__ import annotations


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


def describe(m, s, pr, options, run, batch, conversion) -> dict:
    """The captions of a projection: ``run`` (compute.options.RunDefaults) says where its
    precision and per-GPU batch came from, ``batch`` is the global batch (strong scaling)."""
    from pathlib import Path

    converts = conversion is not None and conversion.active
    per_gpu = run.batch_per_gpu.value if run.batch_per_gpu is not None else None
    batch_note = batch_provenance(run.batch_per_gpu, converts) if per_gpu is not None else ""
    return {
        "model": m.name,
        "system": s.name,
        "profile": Path(pr.file).stem if pr.file else pr.model,
        "profile_note": profile_note(pr, options),
        "scaling": f"strong scaling, B = {batch:g}" if per_gpu is None
        else f"weak scaling, {per_gpu:g} samples/GPU" + (f" ({batch_note})" if batch_note else ""),
        "batch_note": batch_note,
        "samples": int(options.samples or m.dataset_samples),
        "precision": precision_caption(options, run.precision, converts),
        "gamma": options.memory_reuse,
        "memory_model": options.memory_model,
        "memory_note": memory_note(s, options, pr),
        "options_note": options_note(s, options),
        "model_note": model_note(m),
        "compute_conversion": conversion_caption(conversion, batch, per_gpu, s, m),
        "stack": options.stack.name if options.stack is not None else "",
        "stack_note": stack_caption(options.stack),
    }


def stack_caption(stack) -> str:
    """The software stack in force (issue 25), for headers and reports."""
    if stack is None:
        return ""
    return f"stack: {stack.name} ({stack.description})"


def provenance(chosen, used, options: str, shown: str, converts: bool, default=None) -> str:
    """Where a run value came from, for the header (issue 23): "from the profile" when no
    option set it (silent for the profile's ``default``, which the file need not record),
    the options and the profile's value when they differ from it, else nothing."""
    if chosen.recorded is None or used == chosen.recorded:
        return "" if chosen.given or chosen.recorded in (None, default) else "from the profile"
    return f"{options}, profile at {shown}: " + ("converted" if converts else "times not converted")


def batch_provenance(per_gpu, converts: bool) -> str:
    """Where weak scaling's per-GPU batch (a FromProfile) came from."""
    shown = f"b={per_gpu.recorded:g}" if per_gpu.recorded else ""
    return provenance(per_gpu, per_gpu.value, "--batch-per-gpu", shown, converts)


def precision_caption(options, chosen, converts: bool) -> str:
    """δ, the arithmetic precision and where it came from (``chosen``: a FromProfile)."""
    from oracle.compute.conversion import run_precision

    used = run_precision(options.precision, options.mixed_precision)
    given = [name for name, on in (("--precision", chosen.given), ("--mixed-precision", options.mixed_precision)) if on]
    note = provenance(chosen, used, " and ".join(given), str(chosen.recorded), converts, default="fp32")
    if options.mixed_precision:
        return f"mixed precision {used} (δ=2, fp32 master weights" + (f"; {note})" if note else ")")
    return f"{options.precision} (δ={options.delta}" + (f"; {note})" if note else ")")


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
            segments=None, precision=None, gamma=1.0, phi=None, samples=None, collective=None,
            optimizer="sgd", mixed_precision=False, zero=0, checkpointing=False, overlap="none",
            bucket_mb=25.0, layers=None, memory_model="framework", spatial_split_after=None,
            compute_scaling="model", bucket_layers=None, delayed_update=None,
            replicated_gradients=None, stack=None):  # fmt: skip
    """Load the inputs and run the sweep, as ``oracle predict`` does (keywords as the
    options of :func:`sweep_options`; precision and batch None: the profile's).

    Returns (points, meta, inputs): ``meta`` labels tables, plots and the report,
    ``inputs`` is a dict with the loaded model, system, profile and options."""
    from oracle.api import SweepRequest, run_sweep
    from oracle.compute.context import Options
    from dataclasses import replace

    from oracle.compute.options import profile_defaults
    from oracle.compute.stack import apply_stack
    from oracle.errors import OracleError
    from oracle.load import load_stack
    from oracle.load.values import default_gpus, parse_gpus

    if batch is not None and batch_per_gpu is not None:
        raise OracleError("give either --batch (strong scaling) or --batch-per-gpu (weak scaling), not both")
    m, s, pr, _ = load_inputs(model, system, profile)  # a mismatched profile is the first error
    st = load_stack(stack) if stack is not None else None
    counts = parse_gpus(gpus) if gpus is not None else default_gpus(s.total_gpus)  # '' is an error
    run = profile_defaults(pr, precision, batch, batch_per_gpu)
    batch_per_gpu = run.batch_per_gpu.value if run.batch_per_gpu is not None else None
    options = Options(precision=run.precision.value, contention=phi, segments=segments,
                      samples=samples, collective=collective, optimizer=optimizer, mixed_precision=mixed_precision,
                      zero=zero, checkpointing=checkpointing, overlap=overlap, bucket_bytes=bucket_mb * 2**20,
                      memory_model=memory_model, spatial_split_after=spatial_split_after,
                      compute_scaling=compute_scaling, bucket_layers=chunk_layers(bucket_layers),
                      delayed_update=layer_names(delayed_update), replicated_gradients=layer_names(replicated_gradients))
    options, s = apply_stack(options, s, st)
    options = replace(options, memory_reuse=memory_reuse(gamma, options.memory_model))
    sweep = run_sweep(SweepRequest(m, s, pr, options, counts, strategies, batch, batch_per_gpu, p2))
    points = sweep.points
    if layers:
        points = with_layerwise(points, layers, m, s, pr, options, batch, batch_per_gpu)
    meta = describe(m, s, pr, options, run, batch, sweep.conversion)
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


def layer_names(text) -> tuple[str, ...]:
    """A comma-separated list of layer names or types."""
    return tuple(x.strip() for x in (text or "").split(",") if x.strip())


def chunk_layers(k) -> int:
    """--bucket-layers K: None (not given) is 0, chunks by size; an explicit 0 is an error."""
    from oracle.errors import OracleError

    if k is None:
        return 0
    if k < 1:
        raise OracleError(f"got {k}; a chunk holds at least 1 layer", path="--bucket-layers",
                          hint="leave it out to chunk by --bucket-MB")  # fmt: skip
    return k


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


def with_layerwise(points, path, m, s, pr, options, batch, batch_per_gpu):
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

