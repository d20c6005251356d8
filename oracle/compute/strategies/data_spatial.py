"""Hybrid data+spatial parallelism (ParaDL §5 / Dryden et al. IPDPS 2019 "hybrid
sample/spatial"; ParaDL's Table 3): spatial parallelism inside groups of p2 GPUs,
data parallelism over p1 groups, p = p1·p2."""

from __future__ import annotations

import numpy as np

from oracle.compute.context import Context
from oracle.compute.cost import Breakdown, Limit, Point
from oracle.compute.network import (
    Collective,
    allreduce_algorithm,
    contention_factor,
    group_contiguous,
    level_for,
)
from oracle.compute.strategies.base import (
    Config,
    Strategy,
    Style,
    batch_limit,
    hybrid_configurations,
    make_point,
    nccl_nodes_detail,
    not_computable,
    overlap_details,
    overlapped_gradients,
    register,
)
from oracle.compute.strategies.data import Data
from oracle.compute.strategies.data_filter import (
    data_group,
    data_group_allreduce,
    data_group_collective,
    factor_limit,
)
from oracle.compute.strategies.spatial import (
    Spatial,
    gather_tail,
    halo_time,
    spatial_grid,
    spatial_limits,
    spatial_memory,
    tail_gather_groups,
)


def _every_gpu_algorithm(ctx: Context) -> str:
    """The split layers' all-reduce over all p GPUs: implementation data_spatial_allreduce leader is
    ParaDL's §4.5.1 code ("a reduce inside each node to a leader GPU, then an Allreduce between the
    leaders" — and a broadcast back); else the context's."""
    return "leader" if ctx.system.implementation.data_spatial_allreduce == "leader" else ctx.algorithm


def _nccl_nodes(ctx: Context, cfg: Config) -> dict:
    """base.nccl_nodes_detail of the all-reduces over all p GPUs (the split layers') and in the
    data group (the rest), and the p2 group's tail gather."""
    every = Collective(group_contiguous(cfg.gpus, ctx.system.gpus_per_node), _every_gpu_algorithm(ctx), "gradient_allreduce")
    return nccl_nodes_detail(ctx, every, data_group_collective(ctx, cfg.p1, cfg.p2), *tail_gather_groups(ctx, cfg.p2))


@register
class DataSpatial(Strategy):
    name = "data+spatial"
    order = 70
    loading = "per_group"
    hybrid_parts = (Data.name, Spatial.name)
    description = "spatial parallelism in groups of p2, data parallelism across p1 groups"
    style = Style("#CC79A7", "X")  # reddish purple (Okabe & Ito 2008)
    limit_fields = {"batch": ("batch", "p1"), Spatial.name: ("p2",)}
    reports_overlap = True

    def configurations(self, ctx, p, batch, p2=None):
        return hybrid_configurations(self.name, p, batch, p2)

    def evaluate(self, ctx: Context, cfg: Config) -> Point:
        if cfg.p1 == 0:
            return not_computable(ctx, cfg, factor_limit(cfg))
        p, p1, p2, B, D = cfg.gpus, cfg.p1, cfg.p2, cfg.batch, ctx.D
        I = D / B
        s = ctx.split(self.name)
        b = B / p1  # samples per spatial group
        # compute = (D/p) Σs FB + (D/p1) Σr FB + I ΣWU                           docs/cost-model.md
        fb = ctx.split_compute(s, D / p1, p2, I, B / p) + D / p1 * ctx.fb_sum(b, s, "r")
        wu = I * ctx.sum_wu
        # gradient exchange: AR_φ(p, δΣs w) over all GPUs + AR_φ(p1, δΣr w)      docs/cost-model.md
        # (implementation: leader is ParaDL's §4.5.1 code: "a reduce inside each node to a
        # leader GPU, then an Allreduce between the leaders" — and a broadcast back)
        gpn = ctx.system.gpus_per_node
        group = group_contiguous(p, gpn)
        phi_all = contention_factor(ctx.system, 1 if p > gpn else 0, ctx.options.contention)
        algorithm = _every_gpu_algorithm(ctx)
        def cost_split(m):
            return allreduce_algorithm(ctx.system, group, m, algorithm, phi_all, ctx.options.contention,
                                       "gradient_allreduce")[0]  # fmt: skip

        def cost_rest(m):
            return data_group_allreduce(ctx, p1, p2, m)[0]

        ge = cost_split(ctx.grad_delta * s.w_s)
        level = level_for(ctx.system, group.span).name
        ar_r, phi, _ = data_group_allreduce(ctx, p1, p2, ctx.grad_delta * s.w_r)
        ge += ar_r
        hidden = 0.0
        if ctx.options.overlap == "buckets":  # both all-reduces in buckets during the backward
            backward = np.where(s.mask, B / p * ctx.times_at(B / p)[1], b * ctx.times_at(b)[1])
            kinds = np.where(s.mask, 0, 1)
            exposed, total = overlapped_gradients(ctx, backward, ctx.grad_delta * ctx.w, [cost_split, cost_rest], kinds)
            ge, hidden = exposed, total - exposed
        # halo: 2Σs (2α + (B/p1)·δ·(halo_p2(x)+halo_p2(dy))·β); AG(p2, δ(B/p1)y_last/p2)
        halo, halo_total, grid = halo_time(ctx, p2, b)
        hidden += halo_total - halo
        lc = gather_tail(ctx, p2, b)
        # memory / (γδ) = Σs (2B/p)(x+y) + Σr (2B/p1)(x+y) + Σ 2w                 docs/cost-model.md
        mem = spatial_memory(ctx, grid, 2 * B / p * s.act_s + 2 * b * s.act_r, p, B / p, b)
        bd = Breakdown(
            forward_backward_s=fb,
            weight_update_s=wu,
            gradient_exchange_s=I * ge,
            layer_collectives_s=I * lc,
            halo_s=I * halo,
        )
        details = {"grid": grid, "contention": phi, "allreduce_level": level, **_nccl_nodes(ctx, cfg)}
        if ctx.options.overlap != "none":
            overlap_details(details, bd, I * hidden)
        return make_point(ctx, cfg, bd, mem, self.limits(ctx, cfg), details)

    def brief_details(self, ctx: Context, cfg: Config) -> dict | None:
        """evaluate's details (Strategy.brief_details): the grid of halo_time, φ of the data
        group, the level all p GPUs span; None where p2 does not divide p."""
        if cfg.p1 == 0:
            return None
        _, phi, _ = data_group(ctx, cfg.p1, cfg.p2)
        level = level_for(ctx.system, group_contiguous(cfg.gpus, ctx.system.gpus_per_node).span).name
        return {"grid": spatial_grid(ctx, cfg.p2), "contention": phi, "allreduce_level": level, **_nccl_nodes(ctx, cfg)}

    def limits(self, ctx: Context, cfg: Config) -> list[Limit]:
        """The strategy's own limits of a configuration (compute/vector/rows.brief_rows too)."""
        return batch_limit(cfg.batch, cfg.p1, "data-parallel group") + spatial_limits(ctx, spatial_grid(ctx, cfg.p2))
