"""Overlapping communication with computation (issue 8; docs/cost-model.md).

Gradient exchange in buckets (Lee et al., "Parallel Deep CNN Training by Exploiting the
Overlapping of Computation and Communication", HiPC 2017; PyTorch DDP's gradient
buckets, 25 MB by default): backward runs the layers in reverse order; a layer's
gradients are ready when its backward ends; layers are packed, in that order, into
buckets of at least ``bucket_bytes`` (or one per layer with parameters); a bucket is
all-reduced as soon as its last layer is done, on ONE communication channel — a bucket
waits for the previous one (a timeline, not a max()).  The weight update waits for the
last bucket, so the exposed communication is what the last all-reduce ends after the
backward:
    exposed = max(0, end of the last all-reduce - end of the backward)
and the overlap ratio is (total - exposed) / total (Lee et al. eq. 11).

Halo exchange overlapped with the interior computation of the same layer (Dryden et
al. IPDPS 2019 §V-B: the interior is convolved while the halos travel): per layer and
pass, exposed = max(0, halo time - that layer's local compute time).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

DDP_BUCKET_BYTES = 25 * 2**20  # torch.nn.parallel.DistributedDataParallel bucket_cap_mb=25


@dataclass(frozen=True)
class Timeline:
    total_s: float  # all-reduce time summed over buckets (per iteration)
    exposed_s: float  # what the GPUs wait for after the backward
    buckets: int

    @property
    def overlap_ratio(self) -> float:
        return (self.total_s - self.exposed_s) / self.total_s if self.total_s > 0 else 0.0


def buckets_of(
    grad_bytes: np.ndarray, kinds: np.ndarray, bucket_bytes: float | None, bucket_layers: int = 0
) -> list[tuple[list[int], float, int]]:
    """Layers in backward order packed into buckets: [(layer indices, bytes, kind)].

    A bucket closes when it reaches ``bucket_bytes`` (None or 0: one per layer) or,
    with ``bucket_layers`` k > 0, when it holds k layers with gradients (Lee et al.'s
    communication in chunks of k layers, HiPC 2017 §IV), and never mixes gradients that
    go to different groups (``kinds``)."""
    if bucket_layers > 0:
        return _chunks_of_layers(grad_bytes, kinds, bucket_layers)
    gb = np.asarray(grad_bytes, dtype=float)
    order = np.flatnonzero(gb > 0)[::-1]  # the layers with gradients, in backward order
    sizes, kind_of = gb[order], np.asarray(kinds)[order]
    if not bucket_bytes:
        return [([layer], size, kind) for layer, size, kind in zip(order.tolist(), sizes.tolist(), kind_of.tolist())]
    out: list[tuple[list[int], float, int]] = []
    ends = [*(np.flatnonzero(kind_of[1:] != kind_of[:-1]) + 1).tolist(), len(order)]  # runs of one kind
    start = 0
    for end in ends:
        while start < end:
            # the sizes summed in order from the bucket's first layer (np.cumsum adds in
            # order): the bucket closes at the first sum >= bucket_bytes, else at the run's end
            sums = np.cumsum(sizes[start:end])
            n = min(int(np.searchsorted(sums, bucket_bytes, side="left")) + 1, end - start)
            out.append((order[start:start + n].tolist(), float(sums[n - 1]), int(kind_of[start])))
            start += n
    return out


def _chunks_of_layers(grad_bytes: np.ndarray, kinds: np.ndarray, k: int) -> list[tuple[list[int], float, int]]:
    out: list[tuple[list[int], float, int]] = []
    cur: list[int] = []
    for layer in range(len(grad_bytes) - 1, -1, -1):
        if grad_bytes[layer] <= 0:
            continue
        if cur and (int(kinds[layer]) != int(kinds[cur[0]]) or len(cur) >= k):
            out.append((cur, float(sum(grad_bytes[i] for i in cur)), int(kinds[cur[0]])))
            cur = []
        cur.append(layer)
    if cur:
        out.append((cur, float(sum(grad_bytes[i] for i in cur)), int(kinds[cur[0]])))
    return out


def gradient_timeline(
    backward_s: np.ndarray,
    grad_bytes: np.ndarray,
    allreduce_s: Sequence[Callable[[float], float]],
    bucket_bytes: float | None = DDP_BUCKET_BYTES,
    kinds: np.ndarray | None = None,
    bucket_layers: int = 0,
    delayed: np.ndarray | None = None,
    forward_s: np.ndarray | None = None,
    tail_s: float = 0.0,
) -> Timeline:
    """One iteration's bucketed gradient exchange against its backward pass.

    ``backward_s[l]``: layer l's backward time on one GPU this iteration (forward
    order); ``grad_bytes[l]``: bytes of its gradients to all-reduce; ``allreduce_s[k]``:
    the all-reduce time of a bucket of gradients of kind k (e.g. the split layers' go
    to all GPUs, the replicated head's to the data-parallel group).

    ``delayed`` (a mask of layers; Lee et al. §IV's delayed update of the fully
    connected layers): those layers' buckets go on the channel after the others and
    need only be done when the next iteration's forward reaches them — after
    ``forward_s`` of the layers before the first delayed one; what they take beyond
    that is exposed too.

    ``tail_s``: computation after the backward that hides communication as the backward
    does (Lee et al. §III-C-2: the replicated weight gradients, compute/replicated.py)."""
    if delayed is not None and delayed.any():
        return _delayed_timeline(backward_s, grad_bytes, allreduce_s, bucket_bytes, kinds, bucket_layers,
                                 delayed, forward_s, tail_s)  # fmt: skip
    n = len(backward_s)
    kinds = np.zeros(n, dtype=int) if kinds is None else kinds
    # completion time of each layer's backward, layers run from the last to the first
    # (np.cumsum adds in order, as a loop would)
    done = np.cumsum(np.asarray(backward_s, dtype=float)[::-1])[::-1].tolist()
    end_backward = (done[0] if n else 0.0) + tail_s
    channel = 0.0
    total = 0.0
    buckets = [b for b in buckets_of(grad_bytes, kinds, bucket_bytes, bucket_layers) if b[1] > 0]
    for layers, size, kind in buckets:
        ready = max(done[i] for i in layers)  # a bucket holds only layers with gradients
        duration = float(allreduce_s[kind](size))
        channel = max(ready, channel) + duration
        total += duration
    # exposed is part of the exchange: clamp the rounding of (ready + duration) - end
    # (one bucket ready at the very end gave exposed > total, overlap ratio -3e-15)
    exposed = min(total, max(0.0, channel - end_backward)) if buckets else 0.0
    return Timeline(total, exposed, len(buckets))


def _delayed_timeline(backward_s, grad_bytes, allreduce_s, bucket_bytes, kinds, bucket_layers, delayed,
                      forward_s, tail_s=0.0) -> Timeline:  # fmt: skip
    """gradient_timeline with delayed layers (its docstring)."""
    n = len(backward_s)
    kinds = np.zeros(n, dtype=int) if kinds is None else kinds
    done = np.cumsum(np.asarray(backward_s, dtype=float)[::-1])[::-1]  # layer l done at done[l]
    end_backward = (float(done[0]) if n else 0.0) + tail_s
    now_bytes = np.where(delayed, 0.0, grad_bytes)
    later_bytes = np.where(delayed, grad_bytes, 0.0)
    channel = total = 0.0
    count = 0
    for part in (now_bytes, later_bytes):
        for layers, size, kind in buckets_of(part, kinds, bucket_bytes, bucket_layers):
            if size <= 0:
                continue
            duration = float(allreduce_s[kind](size))
            channel = max(float(max(done[i] for i in layers)), channel) + duration
            total += duration
            count += 1
        if part is now_bytes:
            stall = max(0.0, channel - end_backward)  # the update of the other layers waits
    first = int(np.flatnonzero(delayed)[0])
    window = float(np.sum(forward_s[:first])) if forward_s is not None else 0.0
    late = max(0.0, channel - (end_backward + stall + window))
    return Timeline(total, stall + late, count)


def exposed_halo(halo_s: np.ndarray, compute_s: np.ndarray) -> np.ndarray:
    """Per layer and pass: the halo time the interior computation does not hide."""
    return np.maximum(0.0, halo_s - compute_s)
