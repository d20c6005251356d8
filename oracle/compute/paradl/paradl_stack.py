"""The ``paradl`` stack's cost model: ParaDL's own tool (compute/paradl/paradl_tool.py) on oracle's
model, profile and system (issue 27).

A stack whose ``cost_model`` is ``paradl-tool`` (stacks/paradl.yaml) costs serial, data,
filter, channel, spatial, data+filter and data+spatial points with the formulas of ParaDL's
``parallel_analysis.py`` instead of oracle's ParaDL mode's (docs/cost-model.md "ParaDL's tool and
oracle's ParaDL mode" lists every difference); pipeline, which the tool does not project
(tool:632-633 returns at once), and strategies it does not know keep oracle's formulas.

The model becomes the tool's layer table (ToolLayer): each layer's first input, weight and
output shapes written as ParaDL's ``.net`` files write them (conv C x F x K..; pooling
0 x 0 x K..; batch norm, activations and dropout C x C x 0 x 0, no weights; ``flatten``
left out: ParaDL's files have none). The per-sample time is the profile's forward+backward
total, which the tool spreads over the layers by its own FLOP count (tool:180-186). Which
layers a strategy splits is ParaDL's layer configuration (``*.lc``), as the stack's
``layers`` section says it: filter, channel and data+filter split filter's split set (the
stack's ``split_types``; ParaDL ran channel with its filter files); spatial and data+spatial
the convolution and pooling layers of spatial's split set (up to the stack's
``spatial_split_after`` layer of the model).
"""

from __future__ import annotations

import math

import numpy as np

from oracle.compute.context import Context
from oracle.compute.cost import Breakdown, Limit, Point
from oracle.compute.paradl import paradl_tool as tool
from oracle.compute.strategies.base import Config, make_point, not_computable
from oracle.compute.strategies.channel import Channel
from oracle.compute.strategies.data import Data
from oracle.compute.strategies.data_filter import DataFilter
from oracle.compute.strategies.data_spatial import DataSpatial
from oracle.compute.strategies.filter import Filter
from oracle.compute.strategies.serial import Serial
from oracle.compute.strategies.spatial import Spatial
from oracle.model import ACTIVATIONS, Layer, LayerInfo
from oracle.vocabulary import PARADL_TOOL

# oracle's layer types as the tool's kind names (tool:1284-1320 reads a layer's name)
_KINDS = {"conv": "CONV", "fc": "FC", "maxpool": "MPOOL", "adaptivemaxpool": "MPOOL",
          "avgpool": "APOOL", "globalavgpool": "APOOL", "adaptiveavgpool": "APOOL",
          "batchnorm": "BNORM", "add": "ADD", **{a: "RELU" for a in ACTIVATIONS}}  # fmt: skip
_POOLS = ("MPOOL", "APOOL")
_LEFT_OUT = ("flatten",)  # no such layer in ParaDL's .net files


def uses_tool(ctx: Context) -> bool:
    """Whether the run's stack costs points with ParaDL's tool."""
    stack = ctx.options.stack
    return stack is not None and stack.cost_model is not None and stack.cost_model.value == PARADL_TOOL


def _weight_shape(kind: str, layer: Layer, x: tuple[int, ...], y: tuple[int, ...]) -> tuple[int, ...]:
    """The weight shape a ParaDL .net file gives such a layer (C x F x K.., 0 x 0 x K..,
    C x C x 0..), one K per spatial dimension."""
    dims = len(x) - 1
    kernel = tuple(layer.kernel) * dims if len(layer.kernel) == 1 else tuple(layer.kernel)
    if kind == "CONV":
        return (x[0] // max(layer.groups, 1), y[0], *kernel)
    if kind == "FC":
        return (math.prod(x), y[0], *(1,) * dims)
    if kind in _POOLS:
        return (0, 0, *(kernel or x[1:]))
    return (x[0], x[0], *(0,) * dims)


def _padded(shape: tuple[int, ...], length: int) -> tuple[int, ...]:
    """A shape as ParaDL's files write it: features after flatten or fc as F x 1 x 1.."""
    return tuple(shape) + (1,) * (length - len(shape))


def tool_layers(ctx: Context) -> list[tuple[int, str, tuple, tuple, tuple]]:
    """(oracle layer index, kind, x, w, y) of every layer the tool sees, in order."""
    out = []
    length = len(ctx.model.input_shape)
    for i, (layer, info) in enumerate(zip(ctx.model.layers, ctx.model.info)):
        if layer.type in _LEFT_OUT:
            continue
        kind = _KINDS.get(layer.type, layer.type.upper() if layer.type == "dropout" else "")
        x, y = _padded(_first_input(info), length), _padded(info.output_shape, length)
        out.append((i, kind, x, _weight_shape(kind, layer, x, y), y))
    return out


def _first_input(info: LayerInfo) -> tuple[int, ...]:
    return tuple(info.input_shapes[0]) if info.input_shapes else tuple(info.output_shape)


def split_mask(ctx: Context, strategy: str) -> np.ndarray:
    """ParaDL's layer configuration for ``strategy`` on oracle's model (module docstring)."""
    if strategy not in (Spatial.name, DataSpatial.name):  # channel too: ParaDL ran it with filter_*.lc
        return ctx.split(Filter.name).mask
    kinds = np.array([_KINDS.get(t) in (*_POOLS, "CONV") for t in ctx.types], dtype=bool)
    return kinds & ctx.split(Spatial.name).mask


def tool_net(ctx: Context, strategy: str) -> tool.ToolNet:
    """The tool's view of the run's model and profile, split as ``strategy`` splits it;
    made once per context and strategy (a sweep asks for it at every point)."""
    cache = ctx.__dict__.setdefault("_tool_nets", {})
    if strategy not in cache:
        mask = split_mask(ctx, strategy)
        layers = tuple(tool.ToolLayer(kind, x, w, y, bool(mask[i])) for i, kind, x, w, y in tool_layers(ctx))
        cache[strategy] = tool.ToolNet(ctx.D, ctx.sum_fb, layers)
    return cache[strategy]


def platform(ctx: Context) -> tool.ToolPlatform:
    system = ctx.system
    return tool.ToolPlatform(system.gpu_memory_bytes, system.gpus_per_node, system.total_gpus)


# the tool's refusals (base.not_computable's points: every number NaN), by strategy
REFUSALS = {s: Limit("memory", "needs more memory than the GPU has (ParaDL's tool, tool:405)")
            for s in (Filter.name, Channel.name)}  # fmt: skip
REFUSALS[Spatial.name] = Limit("memory", "not one sample fits the GPU's memory (ParaDL's tool, tool:578-581)")
DETAILS = {"cost_model": "ParaDL's tool (parallel_analysis.py, issue 27)"}  # a point's details (none where refused)


def _tool_point(ctx: Context, cfg: Config, net: tool.ToolNet) -> tool.ToolPoint | Limit:
    """The tool's numbers for a configuration, or why it makes none (:data:`REFUSALS`)."""
    plat, s, B = platform(ctx), cfg.strategy, cfg.batch
    if s == Serial.name:
        return tool.single(net, plat, B)
    if s == Data.name:
        return tool.data(net, plat, B / cfg.gpus, cfg.gpus)
    if s in (Filter.name, Channel.name):
        return tool.filter_or_channel(net, plat, B, cfg.gpus, s) or REFUSALS[s]
    if s == Spatial.name:
        return tool.spatial(net, plat, B, cfg.gpus) or REFUSALS[s]
    if s == DataFilter.name:
        return tool.data_filter(net, plat, B / cfg.p1, cfg.gpus, cfg.p2)
    return tool.data_spatial(net, plat, B / cfg.p1, cfg.gpus, cfg.p2)


TOOL_STRATEGIES = (Serial.name, Data.name, Filter.name, Channel.name, Spatial.name, DataFilter.name,
                   DataSpatial.name)  # fmt: skip
# strategy: (the tool's bound, what it counts, the limit's code as oracle's strategies report it)
BOUNDS = {Filter.name: ("F", "output channels", "filters"), Channel.name: ("C", "input channels", "channels"),
           Spatial.name: ("W", "width", Spatial.name)}  # fmt: skip


def tool_limits(ctx: Context, cfg: Config, net: tool.ToolNet) -> list[Limit]:
    """The tool's bounds on p (tool:341, 448, 557): the fewest output channels, input
    channels or the narrowest width of the split layers."""
    if cfg.strategy not in BOUNDS or cfg.p1 == 0:
        return []
    which, what, code = BOUNDS[cfg.strategy]
    bound = net.min_split(which)
    if cfg.gpus > bound:
        return [Limit(code, f"p={cfg.gpus} exceeds the split layers' fewest {what}, {bound:g}"
                      " (ParaDL's tool)")]  # fmt: skip
    return []


def evaluate(ctx: Context, cfg: Config) -> Point | None:
    """A point costed by ParaDL's tool, or None where the tool does not project the strategy."""
    if cfg.strategy not in TOOL_STRATEGIES or cfg.p1 == 0 or cfg.batch <= 0:
        return None  # not the tool's, p2 does not divide p, or no batch: oracle's own point
    net = tool_net(ctx, cfg.strategy)
    found = _tool_point(ctx, cfg, net)
    if isinstance(found, Limit):
        return not_computable(ctx, cfg, [found])
    bd = Breakdown(forward_backward_s=found.compute_s, weight_update_s=ctx.D / cfg.batch * ctx.sum_wu,
                   gradient_exchange_s=found.gradient_exchange_s, layer_collectives_s=found.layer_collectives_s,
                   **({"halo_s": found.halo_s} if found.halo_s else {}))  # fmt: skip
    return make_point(ctx, cfg, bd, found.memory_bytes, tool_limits(ctx, cfg, net), DETAILS)
