"""Loading a model, system and profile and projecting them as ``oracle predict`` does,
with the captions that label the result: shared by the commands (oracle/cli) and the
services that build on a projection (report, plot, search).  No click, no printing."""

from __future__ import annotations

from dataclasses import replace

from oracle.stack import stack_label
from oracle.vocabulary import ESTIMATE, FP32, NO_STACK, PARADL, RING


def profile_note(pr, options=None, system=None) -> str:
    if pr.kind == "total":
        how = "training FLOPs"
        if options is not None and options.compute_scaling == "model":
            from oracle.compute.conversion import spreads_by_model

            how = "the compute model's layer times" if spreads_by_model(pr, system) else "training FLOPs"
        return (
            f"profile gives only a total ({pr.total_fw_bw_per_sample_s:.4g} s/sample fw+bw),"
            f" spread over layers by {how}"
        )
    if pr.kind == "estimated":
        return "ESTIMATED profile (roofline from FLOPs and memory traffic), not measured"
    return ""


def describe(m, s, pr, run, conversion) -> dict:
    """The captions of a projection: ``run`` (compute.options.Run) holds its options and
    says where its precision and per-GPU batch came from."""
    from pathlib import Path

    converts = conversion is not None and conversion.active
    options, batch, per_gpu = run.options, run.batch, run.per_gpu
    made_here = pr is not None and not pr.file and pr.kind == "estimated"  # -p estimate: made at the run's batch
    batch_note = batch_provenance(run.batch_per_gpu, converts, made_here) if per_gpu is not None else ""
    return {
        "model": m.name,
        "system": s.name,
        "profile": Path(pr.file).stem if pr.file else ESTIMATE if pr.kind == "estimated" else pr.model,
        "profile_note": profile_note(pr, options, s),
        "scaling": f"strong scaling, B = {batch:g}" if per_gpu is None
        else f"weak scaling, {per_gpu:g} samples/GPU" + (f" ({batch_note})" if batch_note else ""),
        "batch_note": batch_note,
        "samples": int(options.samples or m.dataset_samples),
        "precision": precision_caption(options, run.precision, converts, s if made_here else None),
        "gamma": options.memory_reuse,
        "memory_model": options.memory_model,
        "memory_note": memory_note(s, options, pr),
        "options_note": options_note(s, options),
        "model_note": model_note(m),
        "compute_conversion": conversion_caption(conversion, batch, per_gpu, s, m),
        "stack": stack_label(options.stack),
        "stack_note": stack_caption(options.stack, options.memory_format, pr.kind if pr is not None else "",
                                    _precision_class(options), s.gpu_model, _given_over(options)),
    }


def stack_caption(stack, memory_format: str | None = None, profile_kind: str = "", precision: str = "",
                  gpu_model: str = "", given: str = "") -> str:  # fmt: skip
    """The software stack in force (issue 25), for headers and reports, and the layout
    --memory-format asked for (which a measured profile does not take: it has its own);
    without it, on an estimated profile, the layout the stack runs ``precision`` (a
    precision class) in, which a plain script may not (PyTorch's tensors are NCHW unless
    converted to channels-last), and whether the other can be asked for on ``gpu_model``;
    ``given``: the options given over the stack's values (:func:`_given_over`)."""
    if stack is None:
        return f"stack: {NO_STACK} (no software stack: the options as given)"
    own = "" if profile_kind in ("estimated", "") else "; not applied: a measured profile keeps the layout it was measured in"
    layout = f"; convolutions in {memory_format} (--memory-format{own})" if memory_format else ""
    runs = stack.memory_format_for(precision) if precision and profile_kind == "estimated" else None
    if not memory_format and runs:
        other = "nchw" if runs != "nchw" else "channels-last"
        what = {"mixed": "mixed precision"}.get(precision, precision)
        ask = (f"--memory-format {other} for the other" if stack.channels_last_speedup_for(gpu_model, precision)
               else f"the other not measured on {gpu_model or 'this GPU'}")  # fmt: skip
        layout = f"; convolutions in {runs}, the stack's layout for {what} ({ask})"
    return f"stack: {stack.label} ({stack.description}){layout}{given}"


def _given_over(options) -> str:
    """"; options given over it: --overlap none (the stack's: buckets)", or nothing."""
    from oracle.compute.stack import given_over_stack

    over = ", ".join(f"{f} {mine} (the stack's: {theirs})" for f, mine, theirs in given_over_stack(options))
    return f"; options given over it: {over}" if over else ""


def _precision_class(options) -> str:
    from oracle.compute.stack import precision_class

    return precision_class(options)


def provenance(chosen, used, options: str, shown: str, converts: bool, default=None) -> str:
    """Where a run value came from, for the header (issue 23): "from the profile" when no
    option set it (silent for the profile's ``default``, which the file need not record),
    the options and the profile's value when they differ from it, else nothing."""
    if chosen.recorded is None or used == chosen.recorded:
        return "" if chosen.given or chosen.recorded in (None, default) else "from the profile"
    if chosen.why and not chosen.given:
        return f"profile at {shown}, which {chosen.why}: " + ("converted" if converts else "times not converted")
    if chosen.why:  # the option's fp32, which the stack runs in tf32 (compute/options.stack_precision)
        return f"{options} fp32, which {chosen.why}; profile at {shown}: " + ("converted" if converts else "times not converted")
    return f"{options}, profile at {shown}: " + ("converted" if converts else "times not converted")


def batch_provenance(per_gpu, converts: bool, estimated_here: bool = False) -> str:
    """Where weak scaling's per-GPU batch (a FromProfile) came from; ``estimated_here``: the
    profile is ``-p estimate``'s, made at the options' batch, else at the default one."""
    from oracle.compute.options import DEFAULT_BATCH_PER_GPU

    shown = f"b={per_gpu.recorded:g}" if per_gpu.recorded else ""
    default = DEFAULT_BATCH_PER_GPU if estimated_here else None
    return provenance(per_gpu, per_gpu.value, "--batch-per-gpu", shown, converts, default=default)


def precision_caption(options, chosen, converts: bool, system=None) -> str:
    """δ, the arithmetic precision and where it came from (``chosen``: a FromProfile);
    ``system``: given when the profile is ``-p estimate``'s, made in the precision the run
    runs on its GPU, so that only a stack's TF32 for fp32 needs saying."""
    from oracle.compute.conversion import run_precision

    used = run_precision(options.precision, options.mixed_precision)
    given = [name for name, on in (("--precision", chosen.given), ("--mixed-precision", options.mixed_precision)) if on]
    if system is not None:
        from oracle.compute.options import stack_precision

        mapped, why = stack_precision(FP32, options.stack, options.mixed_precision, system)
        asked_fp32 = chosen.why or not chosen.given  # --precision fp32, or none given (tf32 given: nothing to say)
        note = f"{FP32}, which {why}" if why and used == mapped and asked_fp32 else ""
    else:
        note = provenance(chosen, used, " and ".join(given), str(chosen.recorded), converts, default=FP32)
    if options.mixed_precision:
        return f"mixed precision {used} (δ=2, {FP32} master weights" + (f"; {note})" if note else ")")
    return f"{options.precision} (δ={options.delta}" + (f"; {note})" if note else ")")


def model_note(model) -> str:
    """Operations an import could not map, costed at zero (``type: unsupported``)."""
    odd = [f"{layer.name} ({layer.op})" for layer in model.layers if layer.type == "unsupported"]
    return "zero-cost layers for unsupported operations: " + ", ".join(odd) if odd else ""


def memory_note(system, options, profile=None) -> str:
    """Which memory model the GPU memory column uses (docs/memory.md and docs/cost-model.md), and whether the saved
    activations were measured (a profile's saved_bytes) or follow the layer-type rules."""
    if options.memory_model == PARADL:
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
    if algorithm != RING:
        bits.append(f"{algorithm} all-reduce")
    elif system.library_trees and options.collective is None:  # compute/trees.with_trees
        nodes = -(-system.tree_beyond_gpus // system.gpus_per_node)
        bits.append(f"ring all-reduce as fitted; beyond {nodes} nodes (the logs') NCCL's tree where cheaper")
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
    if system.anchors:  # issue 26
        bits.append(f"anchored on the system's {len(system.anchors)} measured runs (notes name each point's)")
    if system.gpu_workspace_bytes:
        bits.append(f"{system.gpu_workspace_bytes / 1e9:g} GB framework workspace")
    return " · ".join(bits)


def project(model, system, profile, gpus=None, strategies="all", p2=None, layers=None, top=None, brief=False,
            stream=False, **flags):
    """Load the inputs and run the sweep, as ``oracle predict`` does (``flags``: its
    options by their names, as compute.options.Flags.parse takes them; precision and
    batch not given: the profile's).

    Returns (points, meta, inputs): ``meta`` labels tables, plots and the report,
    ``inputs`` is a dict with the loaded model, system, profile, options, GPU counts and
    ``files`` (the load.Files that read them, for the command's further projections).
    ``top``: only the first ``top`` points of every GPU count are built; ``brief``: the rows
    of the arrays as compute/vector/rows.BriefRow (issue 29, compute/sweep.sweep);
    ``stream``: the points an iterator of runs of GPU counts (api.run_sweep), not with ``layers``."""
    from oracle.api import model_system, request, run_sweep
    from oracle.load import Files

    files = Files()
    req = request(model, system, profile, gpus, strategies, p2, files=files, **flags)
    own = req.model.name in dict(req.system.models)  # issue 26: the model's own calibration, everywhere below
    req = replace(req, system=model_system(req.system, req.model.name, req.run.options.stack), top=top, brief=brief)
    sweep = run_sweep(req, stream=stream)
    points = sweep.points
    if layers:
        points = with_layerwise(points, layers, req)
    m, s = req.model, req.system
    meta = describe(m, s, req.profile, req.run, sweep.conversion)
    meta.update(gpu_model=s.gpu_model, gpu_memory_bytes=s.gpu_memory_bytes)
    if own:
        own_note = f"{m.name}'s own calibration (the system's models:)"
        meta["options_note"] = " · ".join(x for x in (meta["options_note"], own_note) if x)
    inputs = dict(model=m, system=s, profile=req.profile, options=req.run.options, gpus=req.counts, files=files,
                  args=dict(model=model, system=system, profile=profile))  # fmt: skip
    return points, meta, inputs


def conversion_caption(conversion, batch, batch_per_gpu, system=None, model=None) -> str:
    """The compute conversion for captions and reports (issue 13): from -> to, with
    the per-GPU batch of weak scaling, or per point under strong scaling; and the
    system's calibrated compute factor for the model, if any (issue 14)."""
    k = system.implementation.compute_factor(model.name) if system is not None and model is not None else 1.0
    factor = f"; times x {k:.4g}, the system's calibrated compute factor for {model.name}" if k != 1.0 else ""
    b = system.implementation.compute_batch(model.name) if factor else None  # issue 26
    factor += f", measured at {b:g} per GPU (other batches: the compute model's curve)" if b else ""
    if conversion is None:
        return "linear (ParaDL: profile times x samples)" + factor
    per_gpu = batch_per_gpu if batch is None else None
    text = conversion.label(per_gpu)
    return text + ("" if per_gpu is not None or not conversion.active else " (b = B/p per point)") + factor


def with_layerwise(points, path, req):
    """A layer-wise configuration file (oracle search -o) ranked with the sweep of
    ``req`` (api.SweepRequest) at its GPU count, as strategy "layer-wise"."""
    from oracle.compute.conversion import build_context
    from oracle.compute.layerwise import layerwise
    from oracle.compute.sweep import rank
    from oracle.errors import OracleError
    from oracle.load.layerwise import bind_layerwise, load_layerwise

    m, options = req.model, req.run.options
    if options.zero:  # optimizer, mixed precision, overlap (a stack's too): Costs.memory, Costs.assess
        raise OracleError("--layers does not support --zero yet (ZeRO's shards follow each layer's data group)",
                          path="--zero", hint="leave --zero out, or compare --strategy data with --zero")
    config = load_layerwise(path)
    assignment = bind_layerwise(config, m)
    p = config.gpus
    B = config.global_batch()
    if B is None:
        B = req.run.batch if req.run.batch is not None else req.run.per_gpu * p
    ctx = build_context(m, req.system, req.profile, options)
    point = layerwise.evaluate(ctx, p, B, assignment).point
    others = [pt for pt in points if pt.gpus != p]
    group = rank([pt for pt in points if pt.gpus == p] + [point])
    return sorted(others + group, key=lambda pt: pt.gpus)

