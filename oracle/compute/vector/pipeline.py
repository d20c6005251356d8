"""Pipeline parallelism over many stage counts at once (issue 29;
compute/strategies/pipeline.py point by point, ParaDL eq. 12-14).  Every count's
optimal partition comes from the context's cache (filled for all counts at once by
compute/engine.warm_partitions); the stages of all counts are laid end to end and the
per-stage sums, maxima and the slowest cut taken with ``reduceat``; with activation
checkpointing (GPipe) each stage's backward recomputes its forward, and a stage holds
its input for all B samples and one micro-batch's activations.  Summing a stage
sequentially rather than numpy's pairwise sum of a slice may differ in the last bits
(well inside the 1e-9 the equality test holds); the points output are the per-point
path's (compute/vector/run.materialize)."""

from __future__ import annotations

import numpy as np

from oracle.compute.vector import net
from oracle.compute.vector.columns import Columns, memory_total


def pipeline(ctx, c: Columns) -> list:
    """S = min(B, 4p) segments (pipeline.default_segments); more stages than layers:
    not computable (NaN, as base.not_computable)."""
    p, B = c.gpus, c.batch
    c.segments = np.full(p.size, ctx.options.segments) if ctx.options.segments else np.maximum(
        1, np.minimum(B, 4 * p).astype(np.int64))  # fmt: skip
    c.memory = np.full(p.size, np.nan)
    for name in c.phases:
        c.phases[name] = np.full(p.size, np.nan) if name in _OWN else np.where(p <= ctx.G, 0.0, np.nan)
    rows = np.flatnonzero(p <= ctx.G)
    c.brief_rows = p > ctx.G  # not computable: every number NaN, as base.not_computable's
    if rows.size:
        _stages(ctx, c, rows)
    return [("segments", c.segments > B), ("layers", p > ctx.G)]


_OWN = ("forward_backward_s", "weight_update_s", "pipeline_p2p_s")


def _stages(ctx, c: Columns, rows: np.ndarray) -> None:
    G, D = ctx.G, ctx.D
    p, B, S = c.gpus[rows], c.batch[rows], c.segments[rows]
    I = D / B
    parts = [ctx.partition(int(x)) for x in p.tolist()]
    starts = np.array([a for g in parts for a, _ in g], dtype=np.int64)
    stops = np.array([b for g in parts for _, b in g], dtype=np.int64)
    row_of = np.repeat(np.arange(p.size), p)
    first = np.r_[0, np.cumsum(p)[:-1]]  # each count's first stage
    micro = B / S  # a stage's kernels work on one micro-batch
    u, inv = np.unique(micro, return_inverse=True)
    fw_rows = np.stack([ctx.times_at(float(x))[0] for x in u])[inv.reshape(-1)]
    bw_rows = np.stack([ctx.times_at(float(x))[1] for x in u])[inv.reshape(-1)]
    at = row_of * G + starts
    fw_g = np.add.reduceat(fw_rows.ravel(), at)
    bw_g = np.add.reduceat(bw_rows.ravel(), at)
    wu_g = np.add.reduceat(np.tile(ctx.wu, p.size), at)
    # compute = D(p+S-1)/S · (max FW_Gi + max BW_Gi) + I max WU_Gi      ParaDL eq. 12
    # (checkpointing recomputes each stage's forward during its backward)
    back = bw_g + fw_g if ctx.options.checkpointing else bw_g
    fb = D * (p + S - 1) / S * (np.maximum.reduceat(fw_g, first) + np.maximum.reduceat(back, first))
    c.phases["forward_backward_s"][rows] = fb
    c.phases["weight_update_s"][rows] = I * np.maximum.reduceat(wu_g, first)
    # communication = I · 2(p+S-2) max_{i<p} (α + (B/S)·δ·y_Gi·β)          ParaDL eq. 13
    c.phases["pipeline_p2p_s"][rows] = np.where(p > 1, I * 2 * (p + S - 2) * _worst_p2p(ctx, p, micro, stops), 0.0)
    stats = ctx.stage_stats(starts, stops)
    c.memory[rows] = np.maximum.reduceat(_stage_memory(ctx, B[row_of], S[row_of], starts, stops, stats), first)


def _stage_memory(ctx, B: np.ndarray, S: np.ndarray, starts: np.ndarray, stops: np.ndarray, stats: tuple):
    """Bytes per GPU of every stage (pipeline.stage_memory and make_point's sum; B, S: its
    count's; ``stats``: the stages' saved and transient bytes per sample).
    memory / (γδ) = Σ_{l∈Gi} (2B(x+y) + 2w)                             ParaDL eq. 14;
    with checkpointing (GPipe, Huang et al. 2019 §2.3) B·|x_first| + (B/S)·Σ 2(x+y)."""
    act_pre = np.concatenate([[0.0], np.cumsum(2 * (ctx.x + ctx.y))])
    w_pre = np.concatenate([[0.0], np.cumsum(ctx.w)])
    act, w = act_pre[stops] - act_pre[starts], w_pre[stops] - w_pre[starts]
    if ctx.options.checkpointing:
        x0 = ctx.x[starts]
        return memory_total(ctx, B * x0 + B / S * act, w, 1, B / S, extra_elements=B * x0, stats=stats)
    return memory_total(ctx, B * act, w, 1, B, stats=stats)


def _worst_p2p(ctx, p: np.ndarray, micro: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """Per count, the slowest transfer between neighbouring stages (pipeline._worst_p2p):
    α + m·β of span 2 within a node, 2·gpus_per_node across; NaN skipped, 0 if none."""
    gpn = ctx.system.gpus_per_node
    cut = np.ones(stops.size, dtype=bool)
    cut[np.cumsum(p) - 1] = False  # a count's last stage hands nothing on
    i = np.concatenate([np.arange(x - 1) for x in p.tolist()]) if stops.size else np.zeros(0, dtype=np.int64)
    row = np.repeat(np.arange(p.size), p - 1)
    m = (micro * ctx.delta)[row] * ctx.crossing[stops[cut] - 1]
    t = net.p2p(ctx.system, np.where(i // gpn == (i + 1) // gpn, 2, 2 * gpn), m, "pipeline_p2p")
    t = np.where(np.isnan(t), -np.inf, t)
    out = np.zeros(p.size)
    many = p > 1
    if t.size:
        out[many] = np.maximum(0.0, np.maximum.reduceat(t, np.r_[0, np.cumsum(p[many] - 1)[:-1]]))
    return out
