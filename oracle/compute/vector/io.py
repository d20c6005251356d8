"""The input pipeline's exposed stall over many configurations at once (issue 29;
compute/io.py and strategies/base._with_input point by point, docs/cost-model.md "Input
pipeline"): per iteration t_io = max(n / min(loader rate, node rate / loaders on a node),
storage reads), and the GPUs wait max(0, t_io - (compute + communication) per iteration)
with prefetching loaders, t_io without; the per-point arithmetic in its order (Python's
max(a, b) keeps a unless b > a, min(a, b) keeps a unless b < a: the np.where below)."""

from __future__ import annotations

import numpy as np

from oracle.compute.cost import phase_names
from oracle.compute.io import EVERY_GPU, PER_GROUP
from oracle.compute.strategies import REGISTRY


def loaders(kind: str, p, p1, p2, gpn: int) -> tuple:
    """io.loaders of every entry: (loading processes, most loaders on one node)."""
    if kind == EVERY_GPU:
        return p, np.minimum(p, gpn)
    if kind == PER_GROUP:
        return p1, np.where(p2 >= gpn, 1, np.minimum(p1, -(-gpn // np.maximum(p2, 1))))
    return np.ones(p.size, dtype=np.int64), np.ones(p.size, dtype=np.int64)


def input_time(ctx, kind: str, cols) -> np.ndarray:
    """io.input_time of every entry (seconds per iteration to load one mini-batch)."""
    pipe, B = ctx.system.input, cols.batch
    count, per_node = loaders(kind, cols.gpus, np.maximum(cols.p1, 1), cols.p2, ctx.system.gpus_per_node)
    n = B / count
    rate = pipe.leader_samples_per_s if kind != EVERY_GPU and pipe.leader_samples_per_s else pipe.loader_samples_per_s
    node = pipe.node_samples_per_s / per_node if pipe.node_samples_per_s else None
    if rate and node is not None:
        t = n / np.where(node < rate, node, rate)
    elif rate or node is not None:
        t = n / (rate or node)
    else:
        t = np.zeros(B.size)
    size = ctx.model.dataset_bytes_per_sample
    if size:
        if pipe.storage_Bps:
            x = B * size / pipe.storage_Bps
            t = np.where(x > t, x, t)
        if pipe.node_storage_Bps:
            x = n * per_node * size / pipe.node_storage_Bps
            t = np.where(x > t, x, t)
    return t


def with_input(ctx, cols) -> None:
    """Set ``input_s`` of the configurations with a positive batch (base._with_input),
    after the stack's costs; no input pipeline: nothing."""
    pipe = ctx.system.input
    if pipe is None:
        return
    ph = cols.phases
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        t_io = input_time(ctx, REGISTRY[cols.strategy].loading, cols)
        I = ctx.D / cols.batch
        busy = (_sum(ph, "compute") + _sum(ph, "communication")) / I
        if pipe.overlap:
            stall = t_io - busy
            stall = np.where(stall > 0.0, stall, 0.0)
        else:
            stall = np.broadcast_to(t_io, busy.shape)
        stall = np.where(np.isfinite(busy), stall, np.nan)
        ph["input_s"] = np.where(cols.batch > 0, I * stall, ph["input_s"])


def _sum(ph: dict, part: str):
    """Breakdown's sum of a part's phases, left to right."""
    names = phase_names(part)
    total = ph[names[0]]
    for name in names[1:]:
        total = total + ph[name]
    return total
