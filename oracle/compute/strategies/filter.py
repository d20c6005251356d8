"""Filter parallelism (ParaDL §3.3, Table 3 row "Filter", Appendix eq. 15-16), splitting
only conv, fc and attention layers (attention by heads); the other layers run replicated
(docs/cost-model.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from oracle.compute.context import Context, SplitSums
from oracle.compute.cost import Breakdown, Limit, Point
from oracle.compute.engine import per_context
from oracle.compute.network import (
    Collective,
    allgather_algorithm,
    allreduce_algorithm,
    group_contiguous,
)
from oracle.compute.strategies.base import (
    REGISTRY,
    Config,
    LayerwiseKind,
    MemoryParts,
    Strategy,
    Style,
    make_point,
    min_layer,
    nccl_nodes_detail,
    register,
)

if TYPE_CHECKING:
    from oracle.compute.layerwise.layerwise_build import Columns, Registry


@per_context  # issue 29: once per (group, samples) in a sweep (compute/engine.py)
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


def layer_collective_groups(ctx: Context, sums: SplitSums, q: int) -> tuple:
    """The network.Collectives of :func:`layer_collectives` in a group of q GPUs, none
    where it has none (base.nccl_nodes_detail)."""
    if q <= 1 or sums.coll_y.size == 0:
        return ()
    group = group_contiguous(q, ctx.system.gpus_per_node)
    back = () if ctx.system.implementation.layer_backward == "none" else (
        Collective(group, ctx.algorithm, "layer_allreduce"),)  # fmt: skip
    return (Collective(group, ctx.algorithm, "layer_allgather"), *back)


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


def fill_split(ctx: Context, cols: Columns, reg: Registry, k: int, d, B: float) -> None:
    """filter / channel p1 x p2 (ParaDL eq. 15 for the layer collectives): the split
    layers of the strategy named ``d.kind`` over p2 GPUs in each of p1 sample groups."""
    p1, p2, D, I = d.p1, d.p2, ctx.D, ctx.D / B
    b = B / p1
    sums = ctx.split(d.kind)
    s = sums.mask
    strategy = REGISTRY[d.kind]
    width = strategy.widths(ctx)
    cols.fb[:, k] = ctx.layer_split_fb(s, D, p1, p2, I, B)
    cols.wu[:, k] = np.where(s, I / p2, I) * ctx.wu
    cols.mem[:, k] = 2 * b * ctx.layer_memory_elements() + np.where(s, 2 * ctx.w / p2, 2 * ctx.w)
    cols.held[:, k] = b
    cols.gbytes[:, k] = np.where(s, ctx.grad_delta * ctx.w / p2, ctx.grad_delta * ctx.w)
    cols.gclass[:, k] = reg.strided_group(p1, p2) if p1 > 1 else -1
    cols.split[:, k] = s
    cols.partial[:, k] = s
    cols.lay[:, k] = reg.layout(("R", p1, p2), d.gpus)
    coll = s.copy()
    if sums.last >= 0:
        coll[sums.last] = False
    if coll.any():
        cols.lc[coll, k] = I * layer_collectives(ctx, sums, p2, b)
    if s.any():  # channel's collectives at the ends of its split layers (Filter.edges)
        last, first = strategy.edge_parts(ctx, sums, p2, b)
        cols.lc[sums.last, k] += I * last
        cols.lc[int(np.flatnonzero(s)[0]), k] += I * first
    for l in np.flatnonzero(s & (width < p2)):
        cols.feasible[l, k] = False
        cols.reasons[(int(l), k)] = f"p2={p2} exceeds its {int(width[l])} {strategy.width_noun}"


@register
class Filter(Strategy):
    name = "filter"
    order = 30
    description = "filters of conv/fc layers split over p GPUs"
    style = Style("#009E73", "^")  # bluish green (Okabe & Ito 2008)
    layerwise = LayerwiseKind(fill_split)
    limit_code = "filters"
    limit_words = {limit_code: "p > filters of a layer"}
    limit_fields = {limit_code: ("gpus",)}
    width_noun = "filters"  # what a split layer's width counts (a layer-wise limit's words)

    def split_layers(self, ctx: Context) -> tuple[np.ndarray, np.ndarray]:
        """Every conv, convtranspose, fc and attention layer (or the stack's types, issue 27).  The gradient of a split
        layer's output is a sum over the next split layer's filters unless that layer
        is grouped: its groups decide (:func:`layer_collectives`)."""
        mask = np.array([t in ctx.filter_types for t in ctx.types])
        return mask, ctx.groups[np.flatnonzero(mask)[1:]]

    def widths(self, ctx: Context) -> np.ndarray:
        """Per layer, the width the split divides (filters, F_l)."""
        return ctx.F

    def parts(self, p: int) -> tuple[int, int]:
        return (1, p)

    def width_limit(self, ctx: Context, sums: SplitSums, q: int, label: str) -> list[Limit]:
        """p <= the smallest width of the split layers (filters; heads of attention)."""
        least, name = _least_width(ctx, self, sums)
        if name and q > least:
            what = "heads" if ctx.types[ctx.model.index[name]] == "attention" else self.width_noun
            return [Limit(self.limit_code, f"{label}={q} exceeds the {least} {what} of {name}")]
        return []

    def evaluate(self, ctx: Context, cfg: Config) -> Point:
        p, B, D = cfg.gpus, cfg.batch, ctx.D
        I = D / B
        s = ctx.split(self.name)
        # compute = (D/p) Σs(FW+BW) + D Σr(FW+BW) + (I/p) Σs WU + I Σr WU    docs/cost-model.md
        fb = ctx.split_compute(s, D, p, I, B / p) + D * ctx.fb_sum(B, s, "r")
        wu = I / p * s.wu_s + I * s.wu_r
        lc = I * (horizontal_collectives(ctx, s, p, B) + self.edge_collectives(ctx, s, p, B))
        # memory / (γδ) = Σ 2B(x+y) + Σs 2w/p + Σr 2w                          docs/cost-model.md
        # (framework model: all B samples' saved tensors — split outputs are gathered
        # whole before the next layer, ParaDL §3.2, so every GPU keeps them)
        mem = MemoryParts(2 * B * ctx.sum_act, s.w_s / p + s.w_r, split_samples=B)
        bd = Breakdown(forward_backward_s=fb, weight_update_s=wu, layer_collectives_s=lc)
        return make_point(ctx, cfg, bd, mem, self.limits(ctx, cfg), self.brief_details(ctx, cfg))

    def edges(self, ctx: Context, sums: SplitSums) -> tuple[float, int, float]:
        """Collectives at the ends of the chain of split layers beyond the pairs of
        :func:`horizontal_collectives`, per sample: (elements of the last split layer's
        output to combine, that layer's groups, elements of the first split layer's input
        gradient to gather).  Filter: none (ParaDL eq. 15 as is); channel.py's."""
        return 0.0, 1, 0.0

    def edge_collectives(self, ctx: Context, sums: SplitSums, q: int, b: float) -> float:
        """Seconds per iteration of :meth:`edges` in a group of q GPUs holding b samples
        (the sum of :meth:`edge_parts`)."""
        last, first = self.edge_parts(ctx, sums, q, b)
        return last + first

    def edge_parts(self, ctx: Context, sums: SplitSums, q: int, b: float) -> tuple[float, float]:
        """(at the last split layer, at the first): its output all-reduced, AR(q, δ·b·y)
        (a grouped layer whose groups the q GPUs share evenly has no partial sums:
        AG(q, δ·b·y/q)), and the input gradient gathered, AG(q, δ·b·x/q).
        compute/vector/kinds.py computes the same in arrays."""
        y, groups, x = self.edges(ctx, sums)
        if q <= 1 or (y == 0 and x == 0):
            return 0.0, 0.0
        group = group_contiguous(q, ctx.system.gpus_per_node)

        def gather(elements: float) -> float:
            m = ctx.delta * b * elements / q
            return float(allgather_algorithm(ctx.system, group, m, ctx.algorithm, purpose="layer_allgather")[0])

        if groups > 1 and groups % q == 0:
            last = gather(y)
        else:
            last = float(allreduce_algorithm(ctx.system, group, ctx.delta * b * y, ctx.algorithm,
                                             contention=ctx.options.contention, purpose="layer_allreduce")[0])
        return last, gather(x) if x else 0.0

    def brief_details(self, ctx: Context, cfg: Config) -> dict:
        """evaluate's details (issue 29, Strategy.brief_details): what NCCL's model assumed
        of a partly filled NVLink domain its layer collectives span, if any."""
        return nccl_nodes_detail(ctx, *layer_collective_groups(ctx, ctx.split(self.name), cfg.gpus))

    def limits(self, ctx: Context, cfg: Config) -> list[Limit]:
        """The strategy's own limits of a configuration (compute/vector/rows.brief_rows too)."""
        return self.width_limit(ctx, ctx.split(self.name), cfg.gpus, "p")


@per_context  # issue 29: asked for every configuration of a sweep's rows (compute/vector/rows.py)
def _least_width(ctx: Context, strategy: Filter, sums: SplitSums) -> tuple[int, str]:
    """The smallest width of the split layers of ``sums`` and its layer (base.min_layer)."""
    return min_layer(ctx, sums.mask, strategy.widths(ctx))
