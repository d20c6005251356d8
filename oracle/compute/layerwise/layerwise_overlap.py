"""Overlap inside a per-layer configuration (issue 18): the chosen distributions'
gradients, and the replicated layers' all-gathers, in buckets on one channel during the
backward (compute/overlap.py; Lee et al., HiPC 2017)."""

from __future__ import annotations

import numpy as np

from oracle.compute.network import allgather_algorithm, group_contiguous
from oracle.compute.strategies.base import overlapped_gradients


def overlapped(costs, c: np.ndarray) -> tuple[float, float]:
    """(exposed, total) gradient exchange per iteration with --overlap buckets: the
    chosen distributions' gradients in buckets on one channel during the backward
    (compute/overlap.py; Lee et al. HiPC 2017), each bucket all-reduced by its group."""
    ctx, rows = costs.ctx, np.arange(costs.G)
    gcls = costs.grad_class[rows, c]
    gbytes = np.where(gcls >= 0, costs.grad_bytes[rows, c], 0.0)
    # replicated layers (Lee et al. §III-C-2): their all-gathers travel on the same
    # channel as one more kind of bucket, as the data strategy's --replicated-gradients
    gather = costs.gather[rows, c]
    kinds = np.where(gather > 0, len(costs.groups), np.maximum(gcls, 0))
    gbytes = np.where(gather > 0, gather, gbytes)
    all_p = group_contiguous(costs.p, ctx.system.gpus_per_node)

    def gather_cost(m):
        return float(allgather_algorithm(ctx.system, all_p, m, purpose="allgather")[0])

    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(ctx.fb > 0, ctx.bw / ctx.fb, 0.0)  # backward part of FW+BW
    backward = costs.fb[rows, c] / costs.I * share
    fns = [g.cost for g in costs.groups] + [gather_cost]
    return overlapped_gradients(ctx, backward, gbytes, fns, kinds)
