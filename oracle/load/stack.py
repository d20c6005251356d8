"""Load a software stack file (docs/file-formats.md "Stack") into a frozen
:class:`oracle.stack.Stack`.  Every parameter is a mapping ``{value, source}`` with an
optional ``fitted_on`` (the rows it was fitted on); a missing, negative or non-finite
value is one error naming the file and the key."""

from __future__ import annotations

from pathlib import Path

from oracle.limits import BUCKET_MB
from oracle.load.fields import Checker, Fields, choice, number, of, string
from oracle.load.yamlfile import load_yaml
from oracle.stack import PRECISION_CLASSES, Sourced, Stack
from oracle.vocabulary import ALGORITHMS, MEMORY_MODELS

OVERLAPS = ("none", "buckets")  # compute/overlap.py
COMPUTE_SCALINGS = ("model", "linear")  # compute/options.Options.compute_scaling
# "system": the system file decides, from its topology; else an all-reduce algorithm
STACK_ALGORITHMS = ("system", *ALGORITHMS)


def load_stack(path: str | Path) -> Stack:
    return parse_stack(load_yaml(path, "stack file"), str(path))


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
    by_gpu = f.sub("by_gpu", required=False)
    if by_gpu is not None:
        for gpu in list(by_gpu.map):
            g = by_gpu.sub(str(gpu))
            out += [(str(gpu), cls, v) for cls in PRECISION_CLASSES if (v := sourced(g, cls, positive, False))]
            g.done()
        by_gpu.done()
    return tuple(out)


def parse_stack(doc: dict, file: str) -> Stack:
    top = Fields(doc, file, "")
    name = top.req("name", string())
    description = top.req("description", string())
    compute = top.sub("compute")
    efficiency = _efficiencies(compute)
    dp = compute.sub("data_parallel_efficiency")
    fraction = number(gt=0, le=1, what="a fraction of one GPU's speed")
    data_parallel = tuple((cls, sourced(dp, cls, fraction)) for cls in PRECISION_CLASSES)
    dp.done()
    scaling = sourced(compute, "scaling", choice(COMPUTE_SCALINGS))
    compute.done()
    it = top.sub("iteration")
    seconds = number(ge=0, what="seconds")
    fixed = sourced(it, "fixed_s", seconds)
    floor = sourced(it, "launch_floor_s_per_layer", seconds)
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
    comm.done()
    mem = top.sub("memory")
    memory_model = sourced(mem, "model", choice(MEMORY_MODELS))
    mem.done()
    top.done()
    return Stack(name, file, description, efficiency, data_parallel, scaling, fixed, floor, per_gpu, per_node,
                 library, algorithm, overlap, bucket, cycle, memory_model)  # fmt: skip
