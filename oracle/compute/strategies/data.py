"""Data parallelism (ParaDL §3.1, Table 3 row "Data", Appendix eq. 5-7)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from oracle.compute.context import Context
from oracle.compute.cost import Breakdown, Limit, Point
from oracle.compute.network import (
    Collective,
    allgather_algorithm,
    allreduce_algorithm,
    group_contiguous,
    level_for,
)
from oracle.compute.replicated import replicated_layers
from oracle.compute.strategies.base import (
    Config,
    LayerwiseKind,
    MemoryParts,
    Strategy,
    Style,
    batch_limit,
    make_point,
    nccl_nodes_detail,
    overlap_details,
    overlapped_gradients,
    register,
)

if TYPE_CHECKING:
    from oracle.compute.layerwise.layerwise_build import Columns, Registry


def fill_data(ctx: Context, cols: Columns, reg: Registry, k: int, d, B: float) -> None:
    """data on p GPUs as a per-layer distribution (compute/layerwise/layerwise.py): every layer's
    samples split p ways, its gradient in the all-reduce of those p GPUs."""
    p, D, I = d.gpus, ctx.D, ctx.D / B
    cols.fb[:, k] = D / p * ctx.times_at(B / p)[2]
    cols.wu[:, k] = I * ctx.wu
    cols.mem[:, k] = 2 * B / p * ctx.layer_memory_elements() + 2 * ctx.w
    cols.held[:, k] = B / p
    cols.gbytes[:, k] = ctx.grad_delta * ctx.w
    cols.gclass[:, k] = reg.all_of(p)
    cols.split[:, k] = True
    cols.lay[:, k] = reg.layout(("S", p, 1), p)


def gradient_allreduce(ctx: Context, group, m_bytes: float) -> tuple[float, str]:
    """(seconds, algorithm) of the data-parallel gradient all-reduce of ``m_bytes`` in ``group``."""
    return allreduce_algorithm(ctx.system, group, m_bytes, ctx.algorithm, contention=ctx.options.contention,
                               purpose="gradient_allreduce")  # fmt: skip


def _details(ctx: Context, group, algo: str) -> dict:
    """A point's details of its all-reduce: the level, the algorithm and, where NCCL runs it
    over a partly filled NVLink domain, what that assumed (base.nccl_nodes_detail)."""
    out = {"allreduce_level": level_for(ctx.system, group.span).name, "allreduce": algo}
    return out | nccl_nodes_detail(ctx, Collective(group, ctx.algorithm, "gradient_allreduce"))


@register
class Data(Strategy):
    name = "data"
    order = 10
    loading = "every_gpu"
    description = "samples split over p GPUs; gradients all-reduced"
    style = Style("#0072B2", "o")  # blue (Okabe & Ito 2008)
    layerwise = LayerwiseKind(fill_data, grid=False)
    limit_fields = {"batch": ("batch", "gpus")}
    reports_overlap = True

    def evaluate(self, ctx: Context, cfg: Config) -> Point:
        p, B, D = cfg.gpus, cfg.batch, ctx.D
        I = D / B
        # compute = (D/p) Σ(FW+BW) + I ΣWU                               ParaDL eq. 5
        bd_fb = D / p * ctx.fb_sum(B / p)
        bd_wu = I * ctx.sum_wu
        # communication = I · AR(p, δΣw) on GPUs 0..p-1                  ParaDL eq. 6
        # (ring by default; network.allreduce_algorithm for the others)
        group = group_contiguous(p, ctx.system.gpus_per_node)

        def cost(m):
            return gradient_allreduce(ctx, group, m)

        rep = replicated_layers(ctx, p, B)  # Lee et al. §III-C-2 (compute/replicated.py)
        grads = ctx.grad_delta * ctx.w if rep is None else np.where(rep.mask, rep.gather_each, ctx.grad_delta * ctx.w)
        kinds = None if rep is None else rep.mask.astype(int)  # 0: all-reduce, 1: all-gather

        def gather(m):
            return float(allgather_algorithm(ctx.system, group, m, purpose="allgather")[0])

        ar, algo = cost(ctx.grad_delta * ctx.sum_w if rep is None else float(grads[~rep.mask].sum()))
        if rep is not None:  # no all-reduce when every layer with weights is replicated
            ar = (ar if grads[~rep.mask].sum() > 0 else 0.0) + sum(gather(m) for m in rep.gather_each[rep.mask])
            bd_fb += I * rep.extra_s
        hidden = 0.0
        if ctx.options.overlap == "buckets":  # bucketed all-reduces during the backward
            exposed, total = overlapped_gradients(ctx, B / p * ctx.times_at(B / p)[1], grads,
                                                  [lambda m: cost(m)[0], gather], kinds,
                                                  tail_s=0.0 if rep is None else rep.extra_s)  # fmt: skip
            ar, hidden = exposed, total - exposed
        ge = I * ar
        # memory / (γδ) = Σ (2B/p)(x+y) + 2w                             ParaDL eq. 7
        # (framework model: the saved tensors of B/p samples)
        mem = MemoryParts(2 * B / p * ctx.sum_act, ctx.sum_w, data_group=p, split_samples=B / p)
        bd = Breakdown(forward_backward_s=bd_fb, weight_update_s=bd_wu, gradient_exchange_s=ge)
        details = _details(ctx, group, algo)
        if ctx.options.overlap != "none":
            overlap_details(details, bd, I * hidden)
        return make_point(ctx, cfg, bd, mem, self.limits(ctx, cfg), details)

    def brief_details(self, ctx: Context, cfg: Config) -> dict | None:
        """evaluate's details (Strategy.brief_details); None with replicated gradients (the
        all-reduced message depends on p and B)."""
        if ctx.options.replicated_gradients:
            return None
        group = group_contiguous(cfg.gpus, ctx.system.gpus_per_node)
        return _details(ctx, group, gradient_allreduce(ctx, group, ctx.grad_delta * ctx.sum_w)[1])

    def limits(self, ctx: Context, cfg: Config) -> list[Limit]:
        """The strategy's own limits of a configuration (compute/vector/rows.brief_rows too)."""
        return batch_limit(cfg.batch, cfg.gpus)
