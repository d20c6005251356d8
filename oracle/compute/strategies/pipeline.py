"""Pipeline (layer) parallelism (ParaDL §3.4, Table 3 row "Layer (Pipeline)", Appendix
eq. 12-14; GPipe): layers split into p contiguous stages by the optimal linear
partition, the mini-batch into S segments (micro-batches)."""

from __future__ import annotations

import numpy as np

from oracle.compute.context import Context, Stages
from oracle.compute.cost import Breakdown, Limit, Phase, Point
from oracle.compute.network import link, p2p
from oracle.compute.strategies.base import (
    Config,
    MemoryParts,
    Strategy,
    Style,
    make_point,
    not_computable,
    register,
)


def default_segments(B: float, p: int) -> int:
    """S = min(B, 4p) (docs/cost-model.md), at least 1."""
    return max(1, int(min(B, 4 * p)))


def stage_memory(ctx: Context, groups: list[tuple[int, int]], B: float, S: int) -> MemoryParts:
    """Memory parts of every stage at once, one array entry per stage (ParaDL eq. 14
    and the framework model; make_point keeps the stage that needs the most)."""
    starts = np.array([a for a, _ in groups])
    stops = np.array([b for _, b in groups])
    act_pre = np.concatenate([[0.0], np.cumsum(2 * (ctx.x + ctx.y))])
    w_pre = np.concatenate([[0.0], np.cumsum(ctx.w)])
    act = act_pre[stops] - act_pre[starts]
    w = w_pre[stops] - w_pre[starts]
    stages = Stages(starts, stops)
    if ctx.options.checkpointing:
        x0 = ctx.x[starts]
        return MemoryParts(B * x0 + B / S * act, w, split=stages, split_samples=B / S, extra_elements=B * x0)
    return MemoryParts(B * act, w, split=stages, split_samples=B)


def _worst_p2p(ctx: Context, groups: list[tuple[int, int]], bytes_per_element: float) -> float:
    """The slowest transfer between neighbouring stages i, i+1 (α + m·β of the level of
    their span, span_pair), all cuts at once; a NaN transfer is skipped, 0 if none."""
    gpn = ctx.system.gpus_per_node
    i = np.arange(len(groups) - 1)
    m = bytes_per_element * ctx.crossing[np.array([stop for _, stop in groups[:-1]], dtype=int) - 1]
    near = p2p(m, link(ctx.system, 2, "pipeline_p2p"))  # same node: span 2 (span_pair)
    far = p2p(m, link(ctx.system, 2 * gpn, "pipeline_p2p"))  # across nodes (span_pair)
    t = np.where(i // gpn == (i + 1) // gpn, near, far)
    t = t[~np.isnan(t)]
    return max(0.0, float(t.max())) if t.size else 0.0


@register
class Pipeline(Strategy):
    name = "pipeline"
    order = 50
    description = "layers split into p stages; S micro-batches in flight"
    style = Style("#56B4E9", "D")  # sky blue (Okabe & Ito 2008)
    limit_words = {"layers": "more stages than layers", "segments": "S > batch"}
    limit_fields = {"layers": ("gpus",), "segments": ("gpus", "batch", "segments")}
    phases = (Phase("pipeline_p2p_s", "communication", "comm: pipeline transfers", "#44AA99", "xx"),)  # Paul Tol's muted

    def parts(self, p: int) -> tuple[int, int]:
        return (1, p)

    def configurations(self, ctx, p, batch, p2=None):
        S = ctx.options.segments or default_segments(batch, p)
        return [Config(self.name, p, 1, p, batch, S)]

    def limits(self, ctx: Context, cfg: Config) -> list[Limit]:
        """The strategy's own limits of a configuration (compute/vector/rows.brief_rows too)."""
        p, B = cfg.gpus, cfg.batch
        S = cfg.segments or default_segments(B, p)
        limits = [Limit("segments", f"S={S} segments exceed the batch B={B:g}")] if S > B else []
        if p > ctx.G:
            limits.append(Limit("layers", f"p={p} exceeds the {ctx.G} layers of {ctx.model.name}"
                                          " (one stage per layer at most)"))  # fmt: skip
        return limits

    def evaluate(self, ctx: Context, cfg: Config) -> Point:
        p, B, D = cfg.gpus, cfg.batch, ctx.D
        S = cfg.segments or default_segments(B, p)
        I = D / B
        limits = self.limits(ctx, cfg)
        if p > ctx.G:
            return not_computable(ctx, cfg, limits)
        groups = ctx.partition(p)
        fw_at, bw_at, _ = ctx.times_at(B / S)  # a stage's kernels work on one micro-batch
        fw_g = np.array([fw_at[a:b].sum() for a, b in groups])
        bw_g = np.array([bw_at[a:b].sum() for a, b in groups])
        wu_g = np.array([ctx.wu[a:b].sum() for a, b in groups])
        # compute = D(p+S-1)/S · (max FW_Gi + max BW_Gi) + I max WU_Gi      ParaDL eq. 12
        # (checkpointing recomputes each stage's forward during its backward)
        back = bw_g + fw_g if ctx.options.checkpointing else bw_g
        fb = D * (p + S - 1) / S * (fw_g.max() + back.max())
        wu = I * wu_g.max()
        # communication = I · 2(p+S-2) max_{i<p} (α + (B/S)·δ·y_Gi·β)          ParaDL eq. 13
        # (y_Gi: every tensor crossing the cut, = the last layer's output on chains)
        comm = 0.0
        if p > 1:
            comm = I * 2 * (p + S - 2) * _worst_p2p(ctx, groups, B / S * ctx.delta)
        # memory / (γδ) = max_i Σ_{l∈Gi} (2B(x+y) + 2w)                      ParaDL eq. 14
        # with activation checkpointing (GPipe, Huang et al. 2019 §2.3): a stage keeps
        # its input for all B samples and one micro-batch's activations while it
        # recomputes them: B·|x_first| + (B/S)·Σ 2(x+y)
        # Framework model: a GPipe stage keeps the saved tensors of all S micro-batches
        # (B samples) of its layers until their backward; with checkpointing its input
        # for B samples and one micro-batch's saved tensors.
        mem = stage_memory(ctx, groups, B, S)
        bd = Breakdown(forward_backward_s=fb, weight_update_s=wu, pipeline_p2p_s=comm)
        stages = tuple((ctx.names[a], ctx.names[b - 1]) for a, b in groups)
        return make_point(ctx, cfg, bd, mem, limits, {"stages": stages})

    def brief_details(self, ctx: Context, cfg: Config) -> dict | None:
        """None but beyond the model's layers (not computable: no details)."""
        return {} if cfg.gpus > ctx.G else None
