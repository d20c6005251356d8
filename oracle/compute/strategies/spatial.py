"""Spatial parallelism (ParaDL §3.2, Table 3 row "Spatial", Appendix eq. 8-10; Dryden et
al. IPDPS 2019 §III-B): the spatial extents of every layer up to the last one with a
spatial output are split; the fc head runs replicated after an all-gather."""

from __future__ import annotations

import math

import numpy as np

from oracle.compute.context import Context
from oracle.compute.cost import Breakdown, Limit, Point
from oracle.compute.network import (
    allgather_algorithm,
    allreduce_algorithm,
    group_contiguous,
    link,
    p2p,
    span_neighbours,
)
from oracle.compute.overlap import exposed_halo
from oracle.compute.strategies.base import (
    Config,
    MemoryParts,
    Strategy,
    make_point,
    overlap_details,
    overlapped_gradients,
    register,
)


def halo_time(ctx: Context, q: int, b: float) -> tuple[float, float, tuple[int, ...]]:
    """Per-iteration halo exchange of a spatial group of q GPUs holding b samples:
    (exposed, total, grid).

    docs/cost-model.md / ParaDL eq. 10: 2 Σs (2α + b·δ·(halo(x_l) + halo(dy_l))·β), over the split
    conv/pool layers that have a halo (kernel > 1 in a split dimension); α/β of the
    slowest neighbour pair (operation "halo", which a system may route over MPI).  Per
    layer the forward exchanges 2(α + b·δ·halo(x)·β), the backward 2(α + b·δ·halo(dy)·β);
    with --overlap buckets each hides behind the layer's own local compute (Dryden et
    al. §V-B), exposed = max(0, halo - compute).
    """
    grid = ctx.spatial_grid(q)
    if q <= 1:
        return 0.0, 0.0, grid
    hx, hdy = ctx.halo_elements(grid)
    has = (hx + hdy) > 0
    if not has.any():
        return 0.0, 0.0, grid
    lk = link(ctx.system, span_neighbours(q, ctx.system.gpus_per_node), "halo")
    t_fw = halo_exchange(ctx, grid, 2 * np.asarray(p2p(b * ctx.delta * hx[has], lk)))
    t_bw = halo_exchange(ctx, grid, 2 * np.asarray(p2p(b * ctx.delta * hdy[has], lk)))
    total = float(np.sum(t_fw) + np.sum(t_bw))
    if ctx.options.overlap == "none":
        return total, total, grid
    idx = ctx.halo_layer_index[has]
    exposed = exposed_halo(t_fw, b / q * ctx.fw[idx]).sum() + exposed_halo(t_bw, b / q * ctx.bw[idx]).sum()
    return float(exposed), total, grid


def spatial_limits(ctx: Context, grid: tuple[int, ...]) -> list[Limit]:
    return [Limit("spatial", r) for r in ctx.spatial_violations(grid)]


def halo_exchange(ctx: Context, grid: tuple[int, ...], concurrent):
    """A layer's halo exchange: concurrent (docs/cost-model.md), or with ``implementation:
    halo_chain`` a serialized neighbour chain — f-1 hops of it, f the largest split
    factor, plus ``halo_sync_s`` of device synchronization each (never faster)."""
    impl = ctx.system.implementation
    if not impl.halo_chain:
        return concurrent
    return np.asarray(concurrent) * max(1, max(grid) - 1) + impl.halo_sync_s


def gather_tail(ctx: Context, q: int, b: float) -> float:
    """All-gather of the last split layer's output before the replicated head:
    AG(q, δ·b·y_last/q) (docs/cost-model.md)."""
    s = ctx.spatial_split
    if q <= 1 or s.last < 0 or s.last == ctx.G - 1:
        return 0.0
    group = group_contiguous(q, ctx.system.gpus_per_node)
    return allgather_algorithm(ctx.system, group, ctx.delta * b * ctx.y[s.last] / q, ctx.algorithm,
                               purpose="tail_gather")[0]  # fmt: skip


def spatial_memory(ctx: Context, grid: tuple[int, ...], paradl_act: float, group: int, n_split: float, n_rest: float) -> MemoryParts:
    """Memory parts of a spatial split: ParaDL's activation term, and for the framework
    model n_split samples' tiles of the split layers, n_rest whole samples of the
    replicated head, the halo rows each split conv/pool layer appends to its saved
    input (Dryden et al. §V-B), and the gathered input of the head (all-gather tail)."""
    s = ctx.spatial_split
    # halo(x_l) is per sample of the tiles a GPU holds: n_rest samples (B, or B/p1)
    extra = n_rest * float(ctx.halo_elements(grid)[0].sum())
    if 0 <= s.last < ctx.G - 1 and math.prod(grid) > 1:
        extra += n_rest * float(ctx.y[s.last])
    return MemoryParts(paradl_act, ctx.sum_w, data_group=group, split=s.mask,
                       split_samples=n_split, rest_samples=n_rest, extra_elements=extra)  # fmt: skip


@register
class Spatial(Strategy):
    name = "spatial"
    description = "spatial extents of the convolutional part split over p GPUs"

    def parts(self, p: int) -> tuple[int, int]:
        return (1, p)

    def evaluate(self, ctx: Context, cfg: Config) -> Point:
        p, B, D = cfg.gpus, cfg.batch, ctx.D
        I = D / B
        s = ctx.spatial_split
        # compute = (D/p) Σs(FW+BW) + D Σr(FW+BW) + I ΣWU                   docs/cost-model.md
        fb = ctx.split_compute(s, D, p, I, B / p) + D * ctx.fb_sum(B, s, "r")
        wu = I * ctx.sum_wu
        # communication = AR(p, δΣs w) + halo + AG(p, δ·B·y_last/p)          docs/cost-model.md
        group = group_contiguous(p, ctx.system.gpus_per_node)

        def cost(m):
            return allreduce_algorithm(ctx.system, group, m, ctx.algorithm, contention=ctx.options.contention,
                                       purpose="gradient_allreduce")[0]  # fmt: skip

        ar = cost(ctx.delta * s.w_s)
        hidden = 0.0
        if ctx.options.overlap == "buckets":  # split layers' gradients during the backward
            backward = np.where(s.mask, B / p * ctx.times_at(B / p)[1], B * ctx.times_at(B)[1])
            exposed, total = overlapped_gradients(ctx, backward, np.where(s.mask, ctx.delta * ctx.w, 0.0), [cost])
            ar, hidden = exposed, total - exposed
        ge = I * ar
        halo, halo_total, grid = halo_time(ctx, p, B)
        hidden += halo_total - halo
        lc = I * gather_tail(ctx, p, B)
        # memory / (γδ) = Σs (2B/p)(x+y) + Σr 2B(x+y) + Σ 2w                 docs/cost-model.md
        mem = spatial_memory(ctx, grid, 2 * B / p * s.act_s + 2 * B * s.act_r, p, B / p, B)
        bd = Breakdown(
            forward_backward_s=fb,
            weight_update_s=wu,
            gradient_exchange_s=ge,
            layer_collectives_s=lc,
            halo_s=I * halo,
        )
        details: dict = {"grid": grid}
        if ctx.options.overlap != "none":
            overlap_details(details, bd, I * hidden)
        return make_point(ctx, cfg, bd, mem, spatial_limits(ctx, grid), details)
