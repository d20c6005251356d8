"""Overlapping communication with computation (issue 8; SPEC §4.5).

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
    grad_bytes: np.ndarray, kinds: np.ndarray, bucket_bytes: float | None
) -> list[tuple[list[int], float, int]]:
    """Layers in backward order packed into buckets: [(layer indices, bytes, kind)].

    A bucket closes when it reaches ``bucket_bytes`` (None or 0: one per layer), and
    never mixes gradients that go to different groups (``kinds``)."""
    out: list[tuple[list[int], float, int]] = []
    cur: list[int] = []
    size = 0.0
    kind = -1
    for layer in range(len(grad_bytes) - 1, -1, -1):
        if grad_bytes[layer] <= 0:
            continue
        if cur and (kinds[layer] != kind or not bucket_bytes):
            out.append((cur, size, kind))
            cur, size = [], 0.0
        cur.append(layer)
        size += float(grad_bytes[layer])
        kind = int(kinds[layer])
        if bucket_bytes and size >= bucket_bytes:
            out.append((cur, size, kind))
            cur, size = [], 0.0
    if cur and size > 0:
        out.append((cur, size, kind))
    return out


def gradient_timeline(
    backward_s: np.ndarray,
    grad_bytes: np.ndarray,
    allreduce_s: Sequence[Callable[[float], float]],
    bucket_bytes: float | None = DDP_BUCKET_BYTES,
    kinds: np.ndarray | None = None,
) -> Timeline:
    """One iteration's bucketed gradient exchange against its backward pass.

    ``backward_s[l]``: layer l's backward time on one GPU this iteration (forward
    order); ``grad_bytes[l]``: bytes of its gradients to all-reduce; ``allreduce_s[k]``:
    the all-reduce time of a bucket of gradients of kind k (e.g. the split layers' go
    to all GPUs, the replicated head's to the data-parallel group)."""
    n = len(backward_s)
    kinds = np.zeros(n, dtype=int) if kinds is None else kinds
    # completion time of each layer's backward, layers run from the last to the first
    done = np.zeros(n)
    t = 0.0
    for layer in range(n - 1, -1, -1):
        t += float(backward_s[layer])
        done[layer] = t
    end_backward = t
    channel = 0.0
    total = 0.0
    buckets = [b for b in buckets_of(grad_bytes, kinds, bucket_bytes) if b[1] > 0]
    for layers, size, kind in buckets:
        ready = max(done[i] for i in layers if grad_bytes[i] > 0)
        duration = float(allreduce_s[kind](size))
        channel = max(ready, channel) + duration
        total += duration
    # exposed is part of the exchange: clamp the rounding of (ready + duration) - end
    # (one bucket ready at the very end gave exposed > total, overlap ratio -3e-15)
    exposed = min(total, max(0.0, channel - end_backward)) if buckets else 0.0
    return Timeline(total, exposed, len(buckets))


def exposed_halo(halo_s: np.ndarray, compute_s: np.ndarray) -> np.ndarray:
    """Per layer and pass: the halo time the interior computation does not hide."""
    return np.maximum(0.0, halo_s - compute_s)
