"""Hybrid data+filter parallelism (ParaDL §3.5 and Appendix A.1.6, eq. 20-22; Table 3
row "Data+Filter"): filter parallelism inside groups of p2 GPUs, data parallelism over
p1 groups, p = p1·p2."""

from __future__ import annotations

import numpy as np

from oracle.compute.context import Context
from oracle.compute.cost import Breakdown, Limit, Point
from oracle.compute.network import (
    Collective,
    allreduce_algorithm,
    contention_factor,
    data_group_flows_per_node,
    group_strided,
    level_for,
)
from oracle.compute.strategies.base import (
    REGISTRY,
    Config,
    MemoryParts,
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
from oracle.compute.strategies.filter import Filter, horizontal_collectives, layer_collective_groups


def factor_limit(cfg: Config) -> list[Limit]:
    """Why a hybrid's configuration has no p1 (p1 = 0): the p2 asked for does not divide p, or
    (p2 = 0, base.no_factorization) p has no factorization p1·p2 with p1, p2 >= 2."""
    if cfg.p1 == 0 and cfg.p2 == 0:
        return [Limit("no_factorization", f"p={cfg.gpus} has no factorization p1·p2 with p1, p2 >= 2: take another"
                                          " GPU count (or fix p2, --p2)")]  # fmt: skip
    if cfg.p1 == 0:
        return [Limit("factorization", f"p={cfg.gpus} is not a multiple of p2={cfg.p2}")]
    return []


def data_group_allreduce(ctx: Context, p1: int, p2: int, m_bytes: float) -> tuple[float, float, str]:
    """AR_φ(p1, m) among the data-parallel group {0, p2, 2·p2, ...} (docs/cost-model.md-4.3):
    the p2 groups' all-reduces run at once and share each node's links (φ)."""
    group, phi, level = data_group(ctx, p1, p2)
    ar, _ = allreduce_algorithm(ctx.system, group, m_bytes, _data_group_algorithm(ctx), phi,
                                ctx.options.contention, "gradient_allreduce")  # fmt: skip
    return ar, phi, level


def _data_group_algorithm(ctx: Context) -> str:
    """implementation data_filter_allreduce: leader — reduce to a leader per node, all-reduce
    among leaders, broadcast back (ParaDL §4.5.1's data+spatial pattern; issue 14); else the context's."""
    return "leader" if ctx.system.implementation.data_filter_allreduce == "leader" else ctx.algorithm


def data_group_collective(ctx: Context, p1: int, p2: int) -> Collective:
    """The network.Collective of :func:`data_group_allreduce` (base.nccl_nodes_detail)."""
    return Collective(group_strided(p1, p2, ctx.system.gpus_per_node), _data_group_algorithm(ctx), "gradient_allreduce", p2)


def data_group(ctx: Context, p1: int, p2: int) -> tuple:
    """The data-parallel group {0, p2, 2·p2, ...} of p1 GPUs, its contention φ and the
    name of the network level it spans."""
    gpn = ctx.system.gpus_per_node
    group = group_strided(p1, p2, gpn)
    phi = contention_factor(ctx.system, data_group_flows_per_node(p1, p2, gpn), ctx.options.contention)
    return group, phi, level_for(ctx.system, group.span).name


@register
class DataFilter(Strategy):
    name = "data+filter"
    order = 60
    loading = "per_group"
    hybrid_parts = (Data.name, Filter.name)
    description = "filter parallelism in groups of p2, data parallelism across p1 groups"
    style = Style("#D55E00", "P")  # vermillion (Okabe & Ito 2008)
    # data+spatial's too (factor_limit)
    limit_words = {"factorization": "p2 does not divide p", "no_factorization": "no p1·p2 with p1, p2 ≥ 2"}
    limit_fields = {"batch": ("batch", "p1"), Filter.limit_code: ("p2",)}
    reports_overlap = True

    def configurations(self, ctx, p, batch, p2=None):
        return hybrid_configurations(self.name, p, batch, p2)

    def evaluate(self, ctx: Context, cfg: Config) -> Point:
        if cfg.p1 == 0:
            return not_computable(ctx, cfg, factor_limit(cfg))
        p, p1, p2, B, D = cfg.gpus, cfg.p1, cfg.p2, cfg.batch, ctx.D
        I = D / B
        s = ctx.split(self.name)
        # compute = (D/p) Σs FB + (D/p1) Σr FB + (I/p2) Σs WU + I Σr WU        docs/cost-model.md
        fb = ctx.split_compute(s, D / p1, p2, I, B / p) + D / p1 * ctx.fb_sum(B / p1, s, "r")
        wu = I / p2 * s.wu_s + I * s.wu_r
        # layer collectives in the group: Σ [AG(p2, δ·B·y/p) + AR(p2, δ·B·y/p1)]
        lc = I * horizontal_collectives(ctx, s, p2, B / p1)
        # gradient exchange: AR_φ(p1, δ(Σs w/p2 + Σr w))                       docs/cost-model.md
        ar, phi, level = data_group_allreduce(ctx, p1, p2, ctx.grad_delta * (s.w_s / p2 + s.w_r))
        hidden = 0.0
        if ctx.options.overlap == "buckets":  # the data group's buckets during the backward
            backward = np.where(s.mask, B / p * ctx.times_at(B / p)[1], B / p1 * ctx.times_at(B / p1)[1])
            grads = ctx.grad_delta * np.where(s.mask, ctx.w / p2, ctx.w)
            exposed, total = overlapped_gradients(
                ctx, backward, grads, [lambda m: data_group_allreduce(ctx, p1, p2, m)[0]]
            )
            ar, hidden = exposed, total - exposed
        # memory / (γδ) = Σ (2B/p1)(x+y) + Σs 2w/p2 + Σr 2w                     ParaDL eq. 20
        # (framework model: B/p1 samples' saved tensors, as filter parallelism)
        mem = MemoryParts(2 * B / p1 * ctx.sum_act, s.w_s / p2 + s.w_r, data_group=p1, split_samples=B / p1)
        bd = Breakdown(
            forward_backward_s=fb,
            weight_update_s=wu,
            gradient_exchange_s=I * ar,
            layer_collectives_s=lc,
        )
        details = {"contention": phi, "allreduce_level": level, **self._nccl_nodes(ctx, cfg)}
        if ctx.options.overlap != "none":
            overlap_details(details, bd, I * hidden)
        return make_point(ctx, cfg, bd, mem, self.limits(ctx, cfg), details)

    def brief_details(self, ctx: Context, cfg: Config) -> dict | None:
        """evaluate's details (Strategy.brief_details); None where p2 does not divide p."""
        if cfg.p1 == 0:
            return None
        _, phi, level = data_group(ctx, cfg.p1, cfg.p2)
        return {"contention": phi, "allreduce_level": level, **self._nccl_nodes(ctx, cfg)}

    def _nccl_nodes(self, ctx: Context, cfg: Config) -> dict:
        """base.nccl_nodes_detail of the data group's all-reduce and the p2 group's layer collectives."""
        layers = layer_collective_groups(ctx, ctx.split(self.name), cfg.p2)
        return nccl_nodes_detail(ctx, data_group_collective(ctx, cfg.p1, cfg.p2), *layers)

    def limits(self, ctx: Context, cfg: Config) -> list[Limit]:
        """The strategy's own limits of a configuration (compute/vector/rows.brief_rows too)."""
        s = ctx.split(self.name)
        return batch_limit(cfg.batch, cfg.p1, "data-parallel group") + REGISTRY[Filter.name].width_limit(
            ctx, s, cfg.p2, "p2")  # fmt: skip
