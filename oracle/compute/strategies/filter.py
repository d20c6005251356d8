"""Filter parallelism (ParaDL §3.3, Table 3 row "Filter", Appendix eq. 15-16), splitting
only conv, fc and attention layers (attention by heads); the other layers run replicated
(docs/cost-model.md)."""

from __future__ import annotations

import numpy as np

from oracle.compute.context import Context, SplitSums
from oracle.compute.cost import Breakdown, Limit, Point
from oracle.compute.network import allgather_algorithm, allreduce_algorithm, group_contiguous
from oracle.compute.strategies.base import (
    Config,
    MemoryParts,
    Strategy,
    make_point,
    min_layer,
    register,
)


def horizontal_collectives(ctx: Context, sums: SplitSums, q: int, b: float) -> float:
    """Per-iteration layer collectives of filter/channel parallelism in a group of q
    GPUs (GPUs 0..q-1) holding b samples: after every split layer but the last, an
    all-gather of the output slices and an all-reduce of the input gradients
    (docs/cost-model.md: Σ_{s, l≠last s} [AG(q, δ·b·y_l/q) + AR(q, δ·b·y_l)]; with rings this is
    ParaDL's 3(p-1) Σ (α + B y_l δ β / p), eq. 15).  Channel parallelism swaps the
    two (AR forward, AG backward) at the same cost.  See :func:`layer_collectives`."""
    return float(np.sum(layer_collectives(ctx, sums, q, b)))


def layer_collectives(ctx: Context, sums: SplitSums, q: int, b: float) -> np.ndarray:
    """Seconds per iteration of each entry of ``sums.coll_y`` (one per split layer but
    the last).  The all-reduce sums partial results over the split channels: of the
    next layer's input gradient (filter) or of the layer's own output (channel).  A
    grouped convolution whose groups the q GPUs share evenly (groups divisible by q;
    depthwise layers always when q divides the channels) has no such sum: each GPU's
    filters read only its own channel slice, so its slices are gathered instead,
    AG(q, δ·b·y_l/q) in place of AR(q, δ·b·y_l)."""
    if q <= 1 or sums.coll_y.size == 0:
        return np.zeros(sums.coll_y.size)
    group = group_contiguous(q, ctx.system.gpus_per_node)
    m = ctx.delta * b * sums.coll_y
    ag = np.asarray(allgather_algorithm(ctx.system, group, m / q, ctx.algorithm, purpose="layer_allgather")[0],
                    dtype=float)  # fmt: skip
    back = np.asarray(backward_collective(ctx, group, m), dtype=float)
    g = sums.coll_groups
    aligned = (g > 1) & (g % q == 0)
    return ag * np.ones(m.size) + np.where(aligned, ag, back)


def backward_collective(ctx: Context, group, m):
    """The backward collective of the split layers' input gradients (m bytes each), by
    the system's ``implementation: layer_backward``: an all-reduce of m (docs/cost-model.md), a
    ring reduce-scatter of m — (q-1)(α + m/q·β), the first half of the ring all-reduce
    (Thakur et al. 2005), each GPU keeping its slice for the next split layer — an
    all-reduce of one slice m/q, or none."""
    pattern = ctx.system.implementation.layer_backward
    if pattern == "none":
        return np.zeros_like(m)
    if pattern == "reduce_scatter":  # = all-gather's cost with the all-reduce's link
        return allgather_algorithm(ctx.system, group, m / group.p, ctx.algorithm, purpose="layer_allreduce")[0]
    size = m / group.p if pattern == "allreduce_slice" else m
    return allreduce_algorithm(ctx.system, group, size, ctx.algorithm, contention=ctx.options.contention,
                               purpose="layer_allreduce")[0]  # fmt: skip


@register
class Filter(Strategy):
    name = "filter"
    description = "filters of conv/fc layers split over p GPUs"
    limit_code = "filters"

    def split(self, ctx: Context) -> SplitSums:
        return ctx.filter_split

    def parts(self, p: int) -> tuple[int, int]:
        return (1, p)

    def width_limit(self, ctx: Context, sums: SplitSums, q: int, label: str) -> list[Limit]:
        """p <= min_s F_l (filters of the split layers)."""
        fmin, name = min_layer(ctx, sums.mask, ctx.F)
        if name and q > fmin:
            what = "heads" if ctx.types[ctx.model.index[name]] == "attention" else "filters"
            return [Limit(self.limit_code, f"{label}={q} exceeds the {fmin} {what} of {name}")]
        return []

    def evaluate(self, ctx: Context, cfg: Config) -> Point:
        p, B, D = cfg.gpus, cfg.batch, ctx.D
        I = D / B
        s = self.split(ctx)
        # compute = (D/p) Σs(FW+BW) + D Σr(FW+BW) + (I/p) Σs WU + I Σr WU    docs/cost-model.md
        fb = ctx.split_compute(s, D, p, I, B / p) + D * ctx.fb_sum(B, s, "r")
        wu = I / p * s.wu_s + I * s.wu_r
        lc = I * horizontal_collectives(ctx, s, p, B)
        # memory / (γδ) = Σ 2B(x+y) + Σs 2w/p + Σr 2w                          docs/cost-model.md
        # (framework model: all B samples' saved tensors — split outputs are gathered
        # whole before the next layer, ParaDL §3.2, so every GPU keeps them)
        mem = MemoryParts(2 * B * ctx.sum_act, s.w_s / p + s.w_r, split_samples=B)
        bd = Breakdown(forward_backward_s=fb, weight_update_s=wu, layer_collectives_s=lc)
        return make_point(ctx, cfg, bd, mem, self.width_limit(ctx, s, p, "p"))
