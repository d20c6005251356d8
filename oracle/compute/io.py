"""The input pipeline (docs/cost-model.md; ParaDL §2.1.1 phase IO, which ParaDL's model leaves out).

Who loads (ParaDL §3): in data parallelism every GPU's process reads its B/p samples;
in spatial, filter, channel and pipeline parallelism one leader reads the batch and
distributes it ("one leader PE loads those samples at each iteration and then
distributes to other PEs", §3.2); in hybrids one leader per model-part group reads
that group's B/p1 samples.

Per iteration, a loader that must deliver n samples needs
    t_decode  = n / min(loader rate, node rate / loaders on its node)
and reading B samples of s bytes from storage needs
    t_storage = max(B·s / aggregate bandwidth, (samples read on one node)·s / node bandwidth).
t_io = max(t_decode, t_storage).  With prefetching loaders (``overlap``) the GPUs wait
max(0, t_io - (compute + communication)); without, t_io is added.
"""

from __future__ import annotations

import math

from oracle.model import InputPipeline

EVERY_GPU = "every_gpu"
LEADER = "leader"
PER_GROUP = "per_group"


def loaders(kind: str, p: int, p1: int, p2: int, gpus_per_node: int) -> tuple[int, int]:
    """(number of loading processes, most loaders on one node) for a strategy's layout."""
    if kind == EVERY_GPU:
        return p, min(p, gpus_per_node)
    if kind == PER_GROUP:
        # group leaders sit on GPUs 0, p2, 2·p2, ... (docs/cost-model.md placement)
        per_node = 1 if p2 >= gpus_per_node else min(p1, -(-gpus_per_node // p2))
        return p1, per_node
    return 1, 1


def input_time(
    pipe: InputPipeline,
    kind: str,
    batch: float,
    p: int,
    p1: int,
    p2: int,
    gpus_per_node: int,
    bytes_per_sample: float | None,
) -> float:
    """Seconds per iteration to load one mini-batch (t_io above); 0 when unbounded."""
    n_loaders, per_node = loaders(kind, p, p1, p2, gpus_per_node)
    n = batch / n_loaders
    rate = pipe.leader_samples_per_s if kind != EVERY_GPU and pipe.leader_samples_per_s else pipe.loader_samples_per_s
    rates = [r for r in (rate, pipe.node_samples_per_s / per_node if pipe.node_samples_per_s else None) if r]
    t = n / min(rates) if rates else 0.0
    if bytes_per_sample:
        if pipe.storage_Bps:
            t = max(t, batch * bytes_per_sample / pipe.storage_Bps)
        if pipe.node_storage_Bps:
            t = max(t, n * per_node * bytes_per_sample / pipe.node_storage_Bps)
    return t


def exposed(pipe: InputPipeline, t_io: float, busy_per_iteration: float) -> float:
    """Input stall per iteration: beyond compute+communication when prefetched, else all."""
    if not math.isfinite(busy_per_iteration):
        return math.nan
    return max(0.0, t_io - busy_per_iteration) if pipe.overlap else t_io
