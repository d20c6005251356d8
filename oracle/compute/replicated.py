"""Replicated weight-gradient calculation (Lee et al., "Parallel Deep Convolutional
Neural Network Training by Exploiting the Overlapping of Computation and
Communication", HiPC 2017, §III-C-2), for data parallelism.

For a chosen layer l (``--replicated-gradients``, names or layer types) the GPUs do not
all-reduce its weight gradient δ·|w_l|.  Instead "the local activations and errors
calculated using the assigned subset of mini-batch are gathered across all the nodes"
(data size (K_b + K_c)·N, Lee §III-C-2): one all-gather per layer in which each GPU
contributes δ·(B/p)·(x_l + y_l) bytes (its samples' inputs and output errors), and
"the gradients for all images in the mini-batch are computed in every node".

The extra computation per iteration is the weight-gradient GEMM ΔW = ΔY·Xᵀ of the
other B - B/p samples.  The backward of a conv/fc layer is two GEMMs of equal FLOPs,
ΔX = Wᵀ·ΔY and ΔW = ΔY·Xᵀ (Gholami et al., SPAA 2018, §6.2 eq. 10 and 12;
oracle/profiling/estimate.py: BW = 2·FW), so the weight gradient is half of the
layer's backward per sample:  extra = (B - B/p)·BW_l / 2.

Approximations (docs/cost-model.md): one all-gather per layer for activations and
errors together (Lee gathers them in two, one more latency α·(p-1) each); with
``--overlap buckets`` the extra computation runs after the backward and hides
communication like the backward does (Lee Fig. 4: it "effectively overlaps the
communication time for other gradients"); the gathered tensors are not counted in
memory.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from oracle.compute.context import Context


@dataclass(frozen=True)
class Replicated:
    mask: np.ndarray  # layers whose weight gradient is computed on every GPU
    gather_each: np.ndarray  # bytes each GPU contributes to the layer's all-gather
    extra_s: float  # extra weight-gradient compute per iteration on every GPU


def replicated_layers(ctx: Context, p: int, B: float) -> Replicated | None:
    """The replicated layers at p GPUs and global batch B (None when there are none)."""
    if not ctx.options.replicated_gradients or p <= 1:
        return None
    mask = ctx.delayed_mask("replicated_gradients") & (ctx.w > 0)
    gather_each = np.where(mask, ctx.delta * B / p * (ctx.x + ctx.y), 0.0)
    bw = ctx.times_at(B)[1]
    extra = (B - B / p) * float(np.sum(bw[mask])) / 2.0
    return Replicated(mask, gather_each, extra)
