"""Load a software stack file (docs/file-formats.md "Stack") into a frozen
:class:`oracle.stack.Stack`.  Every parameter is a mapping ``{value, source}`` with an
optional ``fitted_on`` (the rows it was fitted on); a missing, negative or non-finite
value is one error naming the file and the key."""

from __future__ import annotations

from pathlib import Path

from oracle.limits import BUCKET_MB
from oracle.load.fields import Bad, Checker, Fields, boolean, choice, number, of, string
from oracle.load.yamlfile import load_yaml
from oracle.model import LAYER_TYPES
from oracle.stack import PRECISION_CLASSES, Sourced, Stack
from oracle.vocabulary import (
    ALGORITHMS,
    COST_MODELS,
    FP32,
    GRADIENT_PRECISIONS,
    MEMORY_FORMATS,
    MEMORY_MODELS,
    TF32,
)

OVERLAPS = ("none", "buckets")  # compute/overlap.py
COMPUTE_SCALINGS = ("model", "linear")  # compute/options.Options.compute_scaling
# "system": the system file decides, from its topology; else an all-reduce algorithm
STACK_ALGORITHMS = ("system", *ALGORITHMS)
FP32_MATHS = (TF32, FP32)  # compute.fp32_math: what a float32 model's convolutions and GEMMs run in


def load_stack(path: str | Path) -> Stack:
    """The stack file at ``path``; one of the shipped stacks/, or a byte-identical copy of
    one under its name (a source checkout's stacks/pytorch.yaml beside an installed oracle),
    is named by its name in outputs, any other file by ``path`` (oracle.stack.Stack.label)."""
    return parse_stack(load_yaml(path, "stack file"), str(path), _is_shipped(path))


def _is_shipped(path: str | Path) -> bool:
    from oracle.resources import shipped_dir, shipped_name

    if shipped_name("stacks", path) is not None:
        return True
    try:
        twin = shipped_dir("stacks") / f"{Path(str(path)).stem}.yaml"
        return twin.is_file() and twin.read_bytes() == Path(str(path)).read_bytes()
    except (OSError, ValueError):
        return False


def sourced(f: Fields, key: str, check: Checker, required: bool = True) -> Sourced | None:
    """``key: {value: ..., source: ..., fitted_on: ...}``."""
    sub = f.sub(key, required=required)
    if sub is None:
        return None
    value = sub.req("value", check)
    src = sub.req("source", string(), "where the value comes from")
    fitted = sub.opt("fitted_on", string(), "")
    sub.done()
    return Sourced(value, src, fitted)


def _efficiencies(f: Fields) -> tuple[tuple[str, str, Sourced], ...]:
    """``efficiency: {fp32: {...}, mixed: {...}}`` and ``by_gpu: {A100: {fp32: ...}}``."""
    positive = number(gt=0, what="a speed relative to the compute model")
    eff = f.sub("efficiency")
    out = [("", cls, sourced(eff, cls, positive)) for cls in PRECISION_CLASSES]
    eff.done()
    return tuple(out) + _per_gpu(f, "by_gpu", positive)


def _per_gpu(f: Fields, key: str, check: Checker) -> tuple[tuple[str, str, Sourced], ...]:
    """``KEY: {GPU generation: {fp32: {...}, mixed: {...}}}`` (optional; each class optional)."""
    sub = f.sub(key, required=False)
    if sub is None:
        return ()
    out = []
    for gpu in list(sub.map):
        g = sub.sub(str(gpu))
        out += [(str(gpu), cls, v) for cls in PRECISION_CLASSES if (v := sourced(g, cls, check, False))]
        g.done()
    sub.done()
    return tuple(out)


def _layout(f: Fields) -> tuple[tuple[tuple[str, Sourced], ...], tuple[tuple[str, str, Sourced], ...]]:
    """``memory_format: {fp32: {...}, mixed: {...}}`` (the layout the efficiencies hold for)
    and ``channels_last_speedup: {H100: {mixed: {...}}}`` (NCHW over channels-last kernel
    time, fitted on measured steps), both optional."""
    fmt = f.sub("memory_format", required=False)
    formats: tuple[tuple[str, Sourced], ...] = ()
    if fmt is not None:
        formats = tuple((cls, sourced(fmt, cls, choice(MEMORY_FORMATS))) for cls in PRECISION_CLASSES)
        fmt.done()
    return formats, _per_gpu(f, "channels_last_speedup", number(gt=0, what="NCHW time over channels-last time"))


def _layer_types(value) -> tuple[str, ...]:
    """``"conv, fc"``: layer types (oracle/model.py LAYER_TYPES)."""
    types = tuple(t.strip() for t in string()(value).split(","))
    bad = [t for t in types if t not in LAYER_TYPES]
    if bad:
        raise Bad(f"got layer type '{bad[0]}'; expected layer types such as conv, fc, separated by commas")
    return types


def _split_points(value) -> tuple[tuple[str, str], ...]:
    """``"AlexNet: conv5, VGG16: pool5"``: per model name, a layer name."""
    pairs = [item.split(":") for item in string()(value).split(",")]
    if any(len(pair) != 2 or not all(x.strip() for x in pair) for pair in pairs):
        raise Bad("expected 'MODEL: LAYER' pairs separated by commas, e.g. 'AlexNet: conv5, VGG16: pool5'")
    return tuple((model.strip(), layer.strip()) for model, layer in pairs)


def _layers(top: Fields) -> tuple[Sourced | None, Sourced | None]:
    """The optional ``layers:`` section (issue 27): which layers strategies split."""
    lay = top.sub("layers", required=False)
    if lay is None:
        return None, None
    types = sourced(lay, "split_types", _layer_types, required=False)
    points = sourced(lay, "spatial_split_after", _split_points, required=False)
    lay.done()
    return types, points


def _algorithm_list(value) -> str:
    """NCCL_ALGO's list: comma-separated names of compute/nccl.NCCL_ALGORITHMS."""
    from oracle.compute.nccl import NCCL_ALGORITHMS
    from oracle.load.fields import Bad

    names = [x.strip().lower() for x in str(value).split(",") if x.strip()] if isinstance(value, str) else []
    if not names or any(n not in NCCL_ALGORITHMS for n in names):
        raise Bad(f"got {value!r}; expected a comma-separated list of {', '.join(NCCL_ALGORITHMS)}")
    return ",".join(names)


def _update_bytes(it: Fields) -> tuple[tuple[str, Sourced], ...]:
    """``update_bytes_per_parameter: {fp32: {...}, mixed: {...}}`` (optional: absent, the
    compute model's optimizer step)."""
    sub = it.sub("update_bytes_per_parameter", required=False)
    if sub is None:
        return ()
    positive = number(gt=0, what="bytes moved per parameter and iteration")
    out = tuple((cls, sourced(sub, cls, positive)) for cls in PRECISION_CLASSES)
    sub.done()
    return out


def parse_stack(doc: dict, file: str, shipped: bool = False) -> Stack:
    top = Fields(doc, file, "")
    name = top.req("name", string())
    description = top.req("description", string())
    compute = top.sub("compute")
    efficiency = _efficiencies(compute)
    dp = compute.sub("data_parallel_efficiency", required=False)  # absent: one GPU's speed (none measured)
    fraction = number(gt=0, le=1, what="a fraction of one GPU's speed")
    data_parallel = () if dp is None else tuple((cls, sourced(dp, cls, fraction)) for cls in PRECISION_CLASSES)
    if dp is not None:
        dp.done()
    scaling = sourced(compute, "scaling", choice(COMPUTE_SCALINGS))
    fused = sourced(compute, "fused_activations", boolean(), required=False)
    share = number(gt=0, le=1, what="a fraction of the memory bandwidth")
    reduction = sourced(compute, "reduction_memory_efficiency", share, required=False)
    maxpool = sourced(compute, "maxpool_memory_efficiency", share, required=False)
    avgpool = sourced(compute, "avgpool_memory_efficiency", share, required=False)
    window = sourced(compute, "pool_window_efficiency", number(gt=0, le=1, what="elements per issued thread instruction"),
                     required=False)  # fmt: skip
    formats, speedups = _layout(compute)
    fp32_math = sourced(compute, "fp32_math", choice(FP32_MATHS), required=False)
    compute.done()
    it = top.sub("iteration")
    seconds = number(ge=0, what="seconds")
    fixed = sourced(it, "fixed_s", seconds)
    floor = sourced(it, "launch_floor_s_per_layer", seconds)
    overhead = sourced(it, "gpu_overhead_s_per_layer", seconds, required=False)
    update = _update_bytes(it)
    it.done()
    inp = top.sub("input")
    rate = number(gt=0, what="samples per second")
    per_gpu = sourced(inp, "samples_per_s_per_gpu", rate, required=False)
    per_node = sourced(inp, "samples_per_s_per_node", rate, required=False)
    inp.done()
    comm = top.sub("communication")
    library = sourced(comm, "library", string())
    algorithm = sourced(comm, "algorithm", choice(STACK_ALGORITHMS))
    overlap = sourced(comm, "overlap", choice(OVERLAPS))
    bucket = sourced(comm, "bucket_MB", of(BUCKET_MB))
    cycle = sourced(comm, "cycle_time_s", number(ge=0, what="seconds"))
    nccl_algos = sourced(comm, "nccl_algorithms", _algorithm_list, required=False)
    gradients = sourced(comm, "gradient_precision", choice(GRADIENT_PRECISIONS), required=False)
    comm.done()
    mem = top.sub("memory")
    memory_model = sourced(mem, "model", choice(MEMORY_MODELS))
    mem.done()
    cost_model = sourced(top, "cost_model", choice(COST_MODELS), required=False)
    split_types, split_points = _layers(top)
    from oracle.load.stack_paths import parse_paths  # it imports sourced() from here

    paths = parse_paths(top)
    top.done()
    return Stack(name, file, description, efficiency, data_parallel, scaling, fixed, floor, per_gpu, per_node,
                 library, algorithm, overlap, bucket, cycle, memory_model, cost_model, split_types,
                 split_points, paths, update, nccl_algos, fused, reduction, maxpool, gradients, overhead,
                 formats, speedups, avgpool_memory_efficiency=avgpool, pool_window_efficiency=window,
                 fp32_math=fp32_math, shipped=shipped)  # fmt: skip
