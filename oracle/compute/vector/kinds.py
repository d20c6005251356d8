"""The strategies' cost formulas over many configurations at once (issue 29): each
function takes arrays of GPU counts p, parts p1, p2 and global batches B (one entry per
configuration) and returns compute/vector/columns.Columns with the numbers the
strategy's ``evaluate`` gives point by point (compute/strategies/*.py; the equations
cited there).  :func:`covers` says where a strategy or an option is not covered
here: the caller then takes the per-point path (compute/vector/run.py).

Covered: every shipped strategy (spatial and data+spatial in compute/vector/spatial.py,
pipeline in compute/vector/pipeline.py, activation checkpointing too) under every
collective algorithm (compute/vector/collectives.py: ring, rhd, tree, hierarchical,
leader, ps, auto and NCCL's) and with a system's measured collective tables
(compute/vector/tables.py), with a software stack's per-GPU costs
(compute/vector/stack.py), an input pipeline (compute/vector/io.py), --overlap buckets
and the delayed update (compute/vector/overlap.py) and data parallelism's
--replicated-gradients (compute/vector/replicated.py), and ParaDL's own tool (the paradl
stack: compute/vector/paradl.py).  ParaDL's leader all-reduce (§4.5.1) of the hybrids:
compute/vector/collectives.TwoLevel.
"""

from __future__ import annotations

import numpy as np

from oracle.compute.cost import phase_names
from oracle.compute.paradl import paradl_stack
from oracle.compute.strategies import REGISTRY
from oracle.compute.strategies.base import min_layer
from oracle.compute.strategies.channel import Channel
from oracle.compute.strategies.data import Data
from oracle.compute.strategies.data_filter import DataFilter
from oracle.compute.strategies.data_spatial import DataSpatial
from oracle.compute.strategies.filter import Filter
from oracle.compute.strategies.pipeline import Pipeline
from oracle.compute.strategies.serial import Serial
from oracle.compute.strategies.spatial import Spatial
from oracle.compute.vector import collectives as coll
from oracle.compute.vector import net
from oracle.compute.vector import overlap as voverlap
from oracle.compute.vector import paradl as vparadl
from oracle.compute.vector import pipeline as vpipeline
from oracle.compute.vector import replicated as vreplicated
from oracle.compute.vector import spatial as vspatial
from oracle.compute.vector.columns import Columns, finish, memory_total, per_value, split_compute, unique_pairs

ROWS_PER_BLOCK = 2048  # layer collectives: (group, samples) pairs per block of the (pairs x layers) arrays


def covered(ctx) -> bool:
    """Whether the context's options are within this module's formulas."""
    return net.supported(ctx) and coll.supported(ctx)


def covers(ctx, name: str) -> bool:
    """Whether :func:`evaluate_many` evaluates the named strategy in this context (a
    hybrid: at every factorization, or --p2's one where it divides the count:
    vector/run.columns)."""
    if name not in FORMULAS or not covered(ctx):
        return False
    return not (REGISTRY[name].reports_overlap and not voverlap.covers(ctx))  # its buckets (overlapped_gradients)


def evaluate_many(ctx, name: str, gpus, p1, p2, batch) -> Columns:
    """Columns of the named strategy's configurations (one it :func:`covers`)."""
    fn = FORMULAS[name]
    if paradl_stack.uses_tool(ctx) and vparadl.covers(ctx, name):  # ParaDL's tool (the paradl stack)
        fn = vparadl.tool_columns
    cols = Columns(name, gpus, p1, p2, batch, {n: np.zeros(gpus.size) for n in phase_names()}, np.zeros(0))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return finish(ctx, cols, fn(ctx, cols))


def _serial(ctx, c: Columns) -> list:
    B, D = c.batch, ctx.D
    I = D / B
    # compute = D Σ(FW+BW) + I ΣWU                                  ParaDL eq. 3
    c.phases["forward_backward_s"] = D * per_value(ctx, ctx.fb_sum, B)
    c.phases["weight_update_s"] = I * ctx.sum_wu
    # memory / (γδ) = Σ 2B(x+y) + 2w                                ParaDL eq. 4
    c.memory = memory_total(ctx, 2 * B * ctx.sum_act, ctx.sum_w, 1, B, into=c)
    return [(Serial.name, c.gpus != 1)]


def _data(ctx, c: Columns) -> list:
    p, B, D = c.gpus, c.batch, ctx.D
    I = D / B
    # compute = (D/p) Σ(FW+BW) + I ΣWU                               ParaDL eq. 5
    c.phases["forward_backward_s"] = D / p * per_value(ctx, ctx.fb_sum, B / p)
    c.phases["weight_update_s"] = I * ctx.sum_wu
    # communication = I · AR(p, δΣw) on GPUs 0..p-1                  ParaDL eq. 6
    ar = coll.prepare(ctx, "allreduce", p, 1.0, "gradient_allreduce")
    if ctx.options.replicated_gradients:  # Lee et al. §III-C-2 (compute/vector/replicated.py)
        c.phases["forward_backward_s"] += np.where(p > 1, I * vreplicated.extra_s(ctx, p, B), 0.0)
        if ctx.options.overlap == "buckets":
            c.phases["gradient_exchange_s"] = _hiding(c, I, vreplicated.bucketed(ctx, p, B, ar))
        else:
            c.phases["gradient_exchange_s"] = I * vreplicated.exchange(ctx, p, B, ar)
    elif ctx.options.overlap == "buckets":  # bucketed all-reduces during the backward (data.py)
        exchange = voverlap.bucketed(ctx, [ar], lambda _: ctx.grad_delta * ctx.w, B / p)
        c.phases["gradient_exchange_s"] = _hiding(c, I, exchange)
    else:
        c.phases["gradient_exchange_s"] = I * ar(ctx.grad_delta * ctx.sum_w)
    # memory / (γδ) = Σ (2B/p)(x+y) + 2w                             ParaDL eq. 7
    c.memory = memory_total(ctx, 2 * B / p * ctx.sum_act, ctx.sum_w, p, B / p, into=c)
    return [("batch", p > B)]


def _hiding(c: Columns, I, exchange: tuple) -> np.ndarray:
    """I · the exposed exchange per iteration of ``exchange`` (exposed, total), the rows'
    hidden share I · (total - exposed) kept (data.py's and data_filter.py's ``hidden``)."""
    exposed, total = exchange
    c.hidden_s = I * (total - exposed)
    return I * exposed


def layer_collectives(ctx, sums, q: np.ndarray, b: np.ndarray) -> np.ndarray:
    """filter.horizontal_collectives of every (q, b): Σ [AG(q, δ·b·y_l/q) + AR(q, δ·b·y_l)]
    over the split layers but the last (ParaDL eq. 15), once per distinct pair; each
    collective prepared once for every pair, evaluated a block of pairs at a time, once
    per distinct layer (y_l and its groups: ResNet-152's 155 are 6) and spread to the
    layers before the sum (the same terms in the same order)."""
    out = np.zeros(q.size)
    if sums.coll_y.size == 0:
        return out
    qs, bs, inv = unique_pairs(q, b)
    pattern = ctx.system.implementation.layer_backward  # filter.backward_collective
    ag = coll.prepare(ctx, "allgather", qs, 1.0, "layer_allgather")
    if pattern == "reduce_scatter":
        back = coll.prepare(ctx, "allgather", qs, 1.0, "layer_allreduce")
    else:
        back = None if pattern == "none" else coll.prepare(ctx, "allreduce", qs, 1.0, "layer_allreduce")
    _, first, layer = np.unique(np.stack([sums.coll_y, sums.coll_groups], axis=1), axis=0, return_index=True,
                                return_inverse=True)  # fmt: skip
    y, groups, layer = sums.coll_y[first], sums.coll_groups[first], layer.reshape(-1)
    sums_q = np.zeros(qs.size)
    for lo in range(0, qs.size, ROWS_PER_BLOCK):
        rows = np.arange(lo, min(lo + ROWS_PER_BLOCK, qs.size))
        part = None if back is None else back.take(rows)
        per_layer = _collectives_block(ctx, y, groups, qs[rows], bs[rows], ag.take(rows), part)
        spread = per_layer.take(layer, axis=1)  # C order, as before ([:, layer] is F: its row sums differ)
        sums_q[rows] = np.where(qs[rows] > 1, spread.sum(axis=1), 0.0)
    return sums_q[inv]


def edge_collectives(ctx, strategy, sums, q: np.ndarray, b: np.ndarray) -> np.ndarray:
    """filter.Filter.edge_collectives of every (q, b): the strategy's collectives at the
    ends of its chain of split layers (channel: the last output all-reduced, the first
    input gradient gathered; none for filter and in ParaDL mode)."""
    y, groups, x = strategy.edges(ctx, sums)
    if y == 0 and x == 0:
        return np.zeros(np.asarray(q).size)
    qs, bs, inv = unique_pairs(q, b)
    q_f = qs.astype(float)
    gather = coll.prepare(ctx, "allgather", qs, 1.0, "layer_allgather")
    reduce = coll.prepare(ctx, "allreduce", qs, 1.0, "layer_allreduce")
    aligned = (groups > 1) & (groups % qs == 0)
    t = np.where(aligned, gather(ctx.delta * bs * y / q_f), reduce(ctx.delta * bs * y))
    if x:
        t = t + gather(ctx.delta * bs * x / q_f)
    return np.where(qs > 1, t, 0.0)[inv]


def _collectives_block(ctx, y, groups, q: np.ndarray, b: np.ndarray, allgather, backward) -> np.ndarray:
    """Seconds of each (q, b) pair's collectives at each layer of y (and its groups)."""
    qc = q[:, None]
    m = ctx.delta * b[:, None] * y[None, :]
    ag = allgather(m / qc)
    pattern = ctx.system.implementation.layer_backward
    if pattern == "none":
        back = np.zeros_like(m)
    else:
        back = backward(m if pattern == "allreduce" else m / qc, first_min=pattern == "reduce_scatter")
    g = groups[None, :]
    aligned = (g > 1) & (g % qc == 0)
    return ag * np.ones(m.shape[1]) + np.where(aligned, ag, back)


def _filter(ctx, c: Columns) -> list:
    p, B, D = c.gpus, c.batch, ctx.D
    I = D / B
    strategy = REGISTRY[c.strategy]
    s = ctx.split(c.strategy)
    # compute = (D/p) Σs(FW+BW) + D Σr(FW+BW) + (I/p) Σs WU + I Σr WU    docs/cost-model.md
    c.phases["forward_backward_s"] = split_compute(ctx, s, D, p, I, B / p) + D * per_value(
        ctx, lambda b: ctx.fb_sum(b, s, "r"), B)  # fmt: skip
    c.phases["weight_update_s"] = I / p * s.wu_s + I * s.wu_r
    c.phases["layer_collectives_s"] = I * (layer_collectives(ctx, s, p, B) + edge_collectives(ctx, strategy, s, p, B))
    # memory / (γδ) = Σ 2B(x+y) + Σs 2w/p + Σr 2w                          docs/cost-model.md
    c.memory = memory_total(ctx, 2 * B * ctx.sum_act, s.w_s / p + s.w_r, 1, B, into=c)
    return [_width(ctx, strategy, s, p)]


def _width(ctx, strategy, sums, q) -> tuple[str, np.ndarray]:
    """filter.width_limit: q above the smallest width of the split layers."""
    least, name = min_layer(ctx, sums.mask, strategy.widths(ctx))
    return (strategy.limit_code, (q > least) if name else np.zeros(q.size, dtype=bool))


def _data_filter(ctx, c: Columns) -> list:
    p, p1, p2, B, D = c.gpus, c.p1, c.p2, c.batch, ctx.D
    I = D / B
    s = ctx.split(c.strategy)
    # compute = (D/p) Σs FB + (D/p1) Σr FB + (I/p2) Σs WU + I Σr WU        docs/cost-model.md
    c.phases["forward_backward_s"] = split_compute(ctx, s, D / p1, p2, I, B / p) + D / p1 * per_value(
        ctx, lambda b: ctx.fb_sum(b, s, "r"), B / p1)  # fmt: skip
    c.phases["weight_update_s"] = I / p2 * s.wu_s + I * s.wu_r
    # layer collectives in the group: Σ [AG(p2, δ·B·y/p) + AR(p2, δ·B·y/p1)]
    c.phases["layer_collectives_s"] = I * layer_collectives(ctx, s, p2, B / p1)
    # gradient exchange: AR_φ(p1, δ(Σs w/p2 + Σr w)) among {0, p2, 2·p2, ...}   docs/cost-model.md
    gpn = ctx.system.gpus_per_node
    phi = net.contention(ctx.system, net.flows_per_node(p1, p2, gpn), ctx.options.contention)
    ar = coll.data_group(ctx, p1, p2, phi)
    if ctx.options.overlap == "buckets":  # the data group's buckets during the backward (data_filter.py)

        def grads(q):  # the split layers' gradients of a model part of q GPUs
            return ctx.grad_delta * np.where(s.mask, ctx.w / q, ctx.w)

        exchange = voverlap.bucketed(ctx, [ar], grads, B / p, B / p1, s.mask, key=p2)
        c.phases["gradient_exchange_s"] = _hiding(c, I, exchange)
    else:
        c.phases["gradient_exchange_s"] = I * ar(ctx.grad_delta * (s.w_s / p2 + s.w_r))
    # memory / (γδ) = Σ (2B/p1)(x+y) + Σs 2w/p2 + Σr 2w                     ParaDL eq. 20
    c.memory = memory_total(ctx, 2 * B / p1 * ctx.sum_act, s.w_s / p2 + s.w_r, p1, B / p1, into=c)
    return [("batch", p1 > B), _width(ctx, REGISTRY[Filter.name], s, p2)]


FORMULAS = {
    Pipeline.name: vpipeline.pipeline,
    Serial.name: _serial,
    Data.name: _data,
    Filter.name: _filter,
    Channel.name: _filter,
    DataFilter.name: _data_filter,
    Spatial.name: vspatial.spatial,
    DataSpatial.name: vspatial.data_spatial,
}
