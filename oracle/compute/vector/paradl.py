"""ParaDL's own tool (the ``paradl`` stack, issue 27) over many configurations at once
(issue 29): compute/paradl/paradl_stack.evaluate point by point, the tool's per-strategy
formulas (compute/paradl/paradl_tool.py, citing parallel_analysis.py as tool:LINE) with
the GPU counts, parts and batches as arrays, the same floating-point operations in the
same order.  What depends on the layers — the per-GPU weights and per-sample time of the
split layers (paradl_tool.split_sums), the spatial sums (spatial_sums) — and the
tool's network constants (network_factor) come from the tool's own functions once per
distinct part count (split_sums once, over an array of them); math.ceil is np.ceil (an
integer as a float: the products are the same).  Serial, data, filter, channel, spatial, data+filter and data+spatial
(paradl_stack.TOOL_STRATEGIES); pipeline keeps oracle's formulas (compute/vector/kinds.py),
as the per-point path does."""

from __future__ import annotations

import math

import numpy as np

from oracle.compute.paradl import paradl_stack as stack
from oracle.compute.paradl import paradl_tool as tool
from oracle.compute.strategies.channel import Channel
from oracle.compute.strategies.data import Data
from oracle.compute.strategies.data_filter import DataFilter
from oracle.compute.strategies.data_spatial import DataSpatial
from oracle.compute.strategies.filter import Filter
from oracle.compute.strategies.serial import Serial
from oracle.compute.strategies.spatial import Spatial
from oracle.compute.vector.columns import Columns

ITEM = tool.BYTES_PER_ITEM


def _per(values: np.ndarray, fn) -> tuple:
    """fn(v) (a tuple of numbers) of every entry, called once per distinct value: a tuple
    of arrays."""
    u, inv = np.unique(values, return_inverse=True)
    found = [fn(v) for v in u.tolist()]
    return tuple(np.array([f[k] for f in found], dtype=float)[inv.reshape(-1)] for k in range(len(found[0])))


def _factor(g: np.ndarray, gpudirect: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """tool.network_factor of every entry: (bandwidth, latency)."""
    return _per(g, lambda v: tool.network_factor(v, gpudirect))


def _spatial_sums(net: tool.ToolNet, parts: np.ndarray, upto: int) -> tuple:
    return _per(parts, lambda v: tool.spatial_sums(net, v, upto))


def _split_sums(net: tool.ToolNet, parts: np.ndarray) -> tuple:
    """tool.split_sums of every entry, its sums over the distinct part counts at once (an
    array of them: the same operations, element by element, in the same order)."""
    u, inv = np.unique(parts, return_inverse=True)
    weights, comp, count, out = tool.split_sums(net, u)  # numbers where no layer is split
    per = [np.broadcast_to(np.asarray(v, dtype=float), u.shape)[inv.reshape(-1)] for v in (weights, comp)]
    return per[0], per[1], count, out


def _serial(net, plat, c: Columns) -> dict:
    x, y, w = net.totals  # tool.single
    memory = 2 * ITEM * (c.batch * (y + x) + w)
    return {"memory": memory, "compute": np.full(c.size, net.samples * net.per_sample_s)}


def _data(net, plat, c: Columns) -> dict:
    x, y, w = net.totals  # tool.data
    p, b = c.gpus, c.batch / c.gpus
    batch = b * p
    memory = 2 * (b * (x + y) + w) * ITEM
    compute = np.ceil(net.samples / p) * net.per_sample_s
    bandwidth, latency = _factor(p)
    comm = np.ceil(net.samples / batch) * tool.ring_allreduce_s(p, w * ITEM, bandwidth, latency)
    return {"memory": memory, "compute": compute, "gradient": comm}


def _filter(net, plat, c: Columns) -> dict:
    """tool.filter_or_channel: None (out of memory, tool:405) where ``none``."""
    x, y, _ = net.totals
    p, B = c.gpus, c.batch
    weights, comp, count, out = _split_sums(net, p)
    memory = 2 * (B * (x + y) + weights / p) * ITEM
    iterations = np.ceil(net.samples / B)
    bandwidth, latency = _factor(p)
    step = latency * count + B * out * ITEM / bandwidth / p
    comm = 3 * iterations * (p - 1) * step
    return {"memory": memory, "compute": iterations * B * comp, "layers": comm, "none": memory > plat.memory_bytes}


def _spatial(net, plat, c: Columns) -> dict:
    """tool.spatial: None (not one sample fits, tool:578-581) where ``none``."""
    _, _, w = net.totals
    p, B = c.gpus, c.batch
    x, y, comp = _spatial_sums(net, p, len(net.layers))
    fit = (plat.items / 2 - w) / (x + y)
    memory = 2 * (B * (x + y) + w) * ITEM
    compute = math.ceil(net.samples) * comp
    bandwidth, latency = _factor(p, gpudirect=False)
    iterations = np.ceil(net.samples / B)
    columns = (lambda lay: lay.y[1], lambda lay: lay.x[1])  # tool:611, 615
    halo = iterations * tool.halo_exchanges_s(net, columns, fit, latency, bandwidth)
    cut = float(net.layers[net.last_split].out_items)
    gather = iterations * 2 * (p - 1) * (latency + B * cut * ITEM / bandwidth / p)
    reduce = (net.samples / B) * tool.ring_allreduce_s(p, w * ITEM, bandwidth, latency)
    return {"memory": memory, "compute": compute, "gradient": reduce, "layers": gather, "halo": halo, "none": fit < 1}


def _data_filter(net, plat, c: Columns) -> dict:
    x, y, w = net.totals  # tool.data_filter
    p, p2, b = c.gpus, c.p2, c.batch / c.p1
    p1 = p / p2
    batch = b * p1
    weights, comp, count, out = _split_sums(net, p2)
    memory = 2 * (b * (x + y) + weights) * ITEM
    iterations = np.ceil(net.samples / batch)
    bandwidth, latency = _factor(p2)
    step = latency * count + b * out * ITEM / bandwidth / p2
    filter_s = 3 * iterations * (p2 - 1) * step
    bandwidth, latency = _factor(p)
    bandwidth = bandwidth / (2 * p2)
    data_s = iterations * tool.ring_allreduce_s(p1, w * ITEM, bandwidth, latency)
    return {"memory": memory, "compute": iterations * b * comp, "gradient": data_s, "layers": filter_s}


def _data_spatial(net, plat, c: Columns) -> dict:
    _, _, w = net.totals  # tool.data_spatial
    p, p2, b = c.gpus, c.p2, c.batch / c.p1
    p1 = p / p2
    batch = b * p1
    x, y, comp = _spatial_sums(net, p2, net.last_split + 1)
    memory = 2 * (batch * (x + y) / p1 + w) * ITEM
    compute = np.ceil(net.samples / p1) * comp
    iterations = np.ceil(net.samples / batch)
    bandwidth, latency = _factor(p2, gpudirect=False)
    column = lambda lay: lay.x[0] * tool.prod(lay.x[2:])  # noqa: E731  tool:924-926
    halo = tool.halo_exchanges_s(net, (column, column), b, latency, bandwidth / (p2 * 2))
    cut = float(net.layers[net.last_split].out_items)
    gather = 2 * (p2 - 1) * (latency + b * cut * ITEM / (bandwidth / 2) / p2)
    bandwidth, latency = _factor(p2)  # tool:965: NVLink's constants
    local = tool.ring_allreduce_s(p2, w * ITEM, bandwidth, latency)
    bandwidth, latency = _factor(p)
    leaders = tool.ring_allreduce_s(p1, w * ITEM, bandwidth / (p2 * 2), latency)
    return {"memory": memory, "compute": compute, "gradient": iterations * (local + leaders),
            "layers": iterations * gather, "halo": iterations * halo}  # fmt: skip


FORMULAS = {Serial.name: _serial, Data.name: _data, Filter.name: _filter, Channel.name: _filter,
            Spatial.name: _spatial, DataFilter.name: _data_filter, DataSpatial.name: _data_spatial}  # fmt: skip


def covers(ctx, name: str) -> bool:
    """Whether the strategy is the tool's here (paradl_stack.evaluate; pipeline is not)."""
    return name in FORMULAS and name in stack.TOOL_STRATEGIES


def tool_columns(ctx, c: Columns) -> list:
    """paradl_stack.evaluate of every entry (B > 0, p2 dividing p): the phases and memory
    into ``c``, the limits in make_point's order (the tool's memory refusal, as
    base.not_computable's point: every number NaN; else its bound on p); the points'
    details and the limits' wording for the rows written from the columns."""
    net = stack.tool_net(ctx, c.strategy)
    found = FORMULAS[c.strategy](net, stack.platform(ctx), c)
    none = np.broadcast_to(found.get("none", False), (c.size,))
    phases = {"forward_backward_s": found["compute"], "weight_update_s": ctx.D / c.batch * ctx.sum_wu,
              "gradient_exchange_s": found.get("gradient", 0.0), "layer_collectives_s": found.get("layers", 0.0),
              "halo_s": found.get("halo", 0.0)}  # fmt: skip
    for name, value in phases.items():
        c.phases[name] = np.broadcast_to(np.asarray(value, dtype=float), (c.size,))
    for name in c.phases:
        c.phases[name] = np.where(none, np.nan, c.phases[name])
    c.memory = np.where(none, np.nan, np.broadcast_to(found["memory"], (c.size,)))
    limits = [("memory", none.copy())]
    if c.strategy in stack.BOUNDS:  # paradl_stack.tool_limits
        which, _, code = stack.BOUNDS[c.strategy]
        limits.append((code, ~none & (c.gpus > net.min_split(which))))
    # issue 29: the rows are the points (compute/vector/rows.py): the tool's details, its limits' wording
    c.brief_rows, c.details = np.ones(c.size, dtype=bool), (none.astype(np.int8), (stack.DETAILS, {}))
    c.wording = ToolWording(c.strategy)
    return limits


class ToolWording:
    """The reasons of the tool's own limit codes (Columns.wording): its refusal (code
    "memory", paradl_stack.REFUSALS: one per strategy) and its bound on p
    (paradl_stack.tool_limits: per GPU count)."""

    def __init__(self, strategy: str) -> None:
        bound = {stack.BOUNDS[strategy][2]: ("gpus",)} if strategy in stack.BOUNDS else {}
        self.limit_fields = {"memory": (), **bound}

    def limits(self, ctx, cfg, codes) -> list:
        if "memory" in codes:
            return [stack.REFUSALS[cfg.strategy]]
        return stack.tool_limits(ctx, cfg, stack.tool_net(ctx, cfg.strategy))
