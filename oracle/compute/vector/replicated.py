"""--replicated-gradients of data parallelism over many configurations at once (issue 29;
compute/replicated.py and strategies/data.py point by point; Lee et al., HiPC 2017,
§III-C-2).  At p > 1 GPUs and global batch B, the named layers with weights (``mask``)
are not all-reduced: each GPU contributes δ·(B/p)·(x_l + y_l) bytes to one all-gather per
layer (the ring unless the system's ``allgather`` operation names an algorithm:
network.allgather_algorithm's default), and every GPU computes the other samples' weight
gradients, (B - B/p)·Σ_mask BW_l(B)/2 seconds per iteration:

    exchange = AR(p, Σ_~mask δ·w_l) [0 when that sum is 0] + Σ_mask AG(p, δ·B/p·(x_l + y_l))

the all-gathers added in layer order, as Python's sum adds them; with --overlap buckets
the all-reduce buckets and the all-gathers (kind 1) on the one channel, the extra
computation after the backward hiding them as it does (overlap.gradient_timeline's
tail_s; compute/vector/overlap.py)."""

from __future__ import annotations

import numpy as np

from oracle.compute.vector import collectives as coll
from oracle.compute.vector import overlap as voverlap
from oracle.compute.vector.columns import unique_pairs
from oracle.vocabulary import RING


def layers(ctx) -> np.ndarray:
    """replicated.replicated_layers' mask: the named layers with weights."""
    return ctx.delayed_mask("replicated_gradients") & (ctx.w > 0)


def extra_s(ctx, p: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Per entry the extra weight-gradient seconds per iteration, (B - B/p)·Σ_mask BW(B)/2
    (replicated.replicated_layers' extra_s), the layers' sum once per distinct B."""
    mask = layers(ctx)
    u, inv = np.unique(B, return_inverse=True)
    bw = np.array([float(np.sum(ctx.times_at(float(b))[1][mask])) for b in u.tolist()])[inv.reshape(-1)]
    return (B - B / p) * bw / 2.0


def gather(ctx, p: np.ndarray):
    """The all-gather of every entry's group, GPUs 0..p-1 (data.py's ``gather``)."""
    return coll.prepare(ctx, "allgather", p, 1.0, "allgather", algo=coll.own_algorithm(ctx.system, "allgather") or RING)


def exchange(ctx, p: np.ndarray, B: np.ndarray, ar) -> np.ndarray:
    """Seconds of gradient exchange per iteration of every entry without overlap (module
    doc); ``ar``: the gradient all-reduce of every entry (vector/collectives.prepare)."""
    mask = layers(ctx)
    rest = float((ctx.grad_delta * ctx.w)[~mask].sum())  # data.py: grads[~rep.mask].sum()
    out = ar(rest) if rest > 0 else np.zeros(p.size)
    each = ctx.delta * B[:, None] / p[:, None] * (ctx.x + ctx.y)[mask][None, :]
    times = gather(ctx, p)(each)
    total = np.zeros(p.size)
    for j in range(times.shape[1]):  # Python's sum: one layer after the other
        total = total + times[:, j]
    return out + total


def bucketed(ctx, p: np.ndarray, B: np.ndarray, ar) -> tuple[np.ndarray, np.ndarray]:
    """The gradient exchange per iteration of every entry with --overlap buckets, exposed
    and total (vector/overlap.bucketed):
    each distinct (p, B)'s gradient vector (the all-gathers' bytes in the masked layers)
    bucketed once, the extra computation as the backward's tail."""
    mask = layers(ctx)
    ps, bs, key = unique_pairs(p, B)
    sums = ctx.x + ctx.y

    def grads_of(k: int) -> np.ndarray:  # data.py's grads (on one GPU every bucket costs 0)
        q, b = int(ps[k]), float(bs[k])
        return np.where(mask, np.where(mask, ctx.delta * b / q * sums, 0.0), ctx.grad_delta * ctx.w)

    tail = np.where(p > 1, extra_s(ctx, p, B), 0.0)
    return voverlap.bucketed(ctx, [ar, gather(ctx, p)], grads_of, B / p, key=key, kinds=mask.astype(int), tail=tail)
