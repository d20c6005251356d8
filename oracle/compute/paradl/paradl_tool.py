"""What ParaDL's own projection tool computes, per strategy (issue 27).

ParaDL (Kahira et al., HPDC 2021) made its published projections with ``parallel_analysis.py``
(TruongThaoNguyen/paraDL-analysis@ce36803, Python 2.7; not part of this project). This module
computes the same numbers from the same inputs: a layer table (input, weight and output shapes
as ParaDL's ``.net`` files give them, and the layer configuration's split flag: split layers
are "applied", the others run unsplit, "sequential mode"), the dataset size, the measured
per-sample time and the batch per GPU. Each formula cites the line of ``parallel_analysis.py``
(as ``tool:LINE``) it reproduces; where the tool departs from oracle's ParaDL mode, docs/cost-model.md
("ParaDL's tool and oracle's ParaDL mode") lists the difference.

Units: times in seconds per epoch, memory in bytes per GPU, sizes in elements (items) as the
tool counts them; the tool's network constants are its own ABCI model (tool:1003-1026), not a
system file's levels.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from oracle.compute.strategies.data import Data
from oracle.compute.strategies.spatial import Spatial

# The tool's constants (tool:74-76, 164, 1003-1026).
BYTES_PER_ITEM = 4.0  # tool:164, fp32
NVLINK_BYTES_PER_S = 50e9  # tool:1005 INTRA_LINK_BW
NVLINK_SWITCH_LATENCY_S = 0.0  # tool:1009 INTRA_SWITCH_LAT
NVLINK_CABLE_LATENCY_S = 9e-6  # tool:1011 INTRA_CALBE_LAT
NVLINK_LATENCY_S = NVLINK_SWITCH_LATENCY_S + NVLINK_CABLE_LATENCY_S  # tool:1071
PLX_LATENCY_S = 110e-9  # tool:1012
PLX_CABLE_LATENCY_S = 20e-6  # tool:1014
HOST_STAGED_LATENCY_S = 3e-3  # tool:1015 PLX_CABLE_LAT2, "measured value without GPU-Direct"
PLX_BYTES_PER_S = 16e9  # tool:1017
IB_BYTES_PER_S = 12.5e9  # tool:1021 INTER_LINK_BW
LEAF_LATENCY_S = 90e-9  # tool:1022 (and FBB, tool:1023)
SPINE_LATENCY_S = 400e-9  # tool:1024
# tool:1025-1026: CABLE_LENGTH = 0, so every cable latency is 0.

# Layer kinds the tool recognises by substring of the layer name, in the order it tests them
# (estimate_layer_flop, tool:1284-1320).
KINDS = ("CONV", "MPOOL", "APOOL", "RELU", "FC", "BNORM", "ADD")


def kind_of(name: str) -> str:
    """The tool's reading of a layer name: the first of KINDS it contains, else ''."""
    return next((k for k in KINDS if k in name), "")


def prod(values: Sequence[int]) -> int:
    out = 1
    for v in values:
        out *= v
    return out


@dataclass(frozen=True)
class ToolLayer:
    """One line of a ``.net`` file (tool:1241-1262) and its layer-configuration flag."""

    name: str
    x: tuple[int, ...]  # input shape (C, W, H[, D])
    w: tuple[int, ...]  # weight shape (C, F, K, K[, K]); pooling (0, 0, K, K)
    y: tuple[int, ...]  # output shape (F, W, H[, D])
    split: bool = True  # tool:1188-1203: "|0" or "|" -> sequential mode, else applied

    @property
    def in_items(self) -> int:  # tool:1247-1249
        return prod(self.x)

    @property
    def weight_items(self) -> int:  # tool:1252-1255
        return prod(self.w)

    @property
    def out_items(self) -> int:  # tool:1258-1261
        return prod(self.y)

    @property
    def kernel(self) -> int:  # tool:607, 922: w[2]
        return self.w[2] if len(self.w) > 2 else 0


def layer_flops(layer: ToolLayer) -> float:
    """The tool's training FLOPs of one layer per sample (estimate_layer_flop, tool:1284-1330):
    forward FLOPs times 2 (backward) plus the weight-gradient FLOPs |w|."""
    kind, x, w, y = kind_of(layer.name), layer.x, layer.w, layer.y
    if kind == "CONV":  # tool:1287-1292, 2 C F prod(K Y)
        fw = 2 * w[0] * w[1] * prod(w[i] * y[i - 1] for i in range(2, len(w)))
    elif kind in ("MPOOL", "APOOL"):  # tool:1293-1300, C F prod(K Y)
        fw = x[0] * y[0] * prod(w[i] * y[i - 1] for i in range(2, len(w)))
    elif kind in ("RELU", "ADD"):  # tool:1301-1304, 1316-1319
        fw = prod(y)
    elif kind == "FC":  # tool:1305-1308
        fw = prod(w)
    elif kind == "BNORM":  # tool:1309-1315
        fw = 4 * prod(x)
    else:  # tool:1321-1322
        fw = 0
    return fw * 2 + prod(w)  # tool:1324-1329


@dataclass(frozen=True)
class ToolNet:
    """A ``.net`` model: dataset size, per-sample time and layers (tool:1206-1282)."""

    samples: float  # tool:1228, the first factor of the Input line
    per_sample_s: float  # the sum of the layers' times column (tool:1264), ParaDL: the first's
    layers: tuple[ToolLayer, ...]

    @cached_property
    def comp_s(self) -> tuple[float, ...]:
        """Per-layer per-sample time: the total spread over layers by their FLOPs (tool:180-186)."""
        flops = [float(layer_flops(layer)) for layer in self.layers]
        total = 0.0
        for f in flops:
            total += f
        return tuple(f * self.per_sample_s / total for f in flops)

    @cached_property
    def totals(self) -> tuple[float, float, float]:
        """(|x|, |y|, |w|) summed as summary_network2 does (tool:1353-1375): RELU and BNORM
        layers add no activations, every layer adds its weights."""
        x = y = w = 0
        for layer in self.layers:
            if "RELU" not in layer.name and "BNORM" not in layer.name:
                x += layer.in_items
                y += layer.out_items
            w += layer.weight_items
        return float(x), float(y), float(w)

    @property
    def last_split(self) -> int:
        """Index of the last split layer, 0 if none (tool:539-543)."""
        return max((i for i, lay in enumerate(self.layers) if lay.split), default=0)

    def min_split(self, which: str) -> float:
        """The tool's bound on p over split layers (tool:203-212, 539-545): 'W' the smallest
        first spatial extent of x or y, 'F' the fewest output channels, 'C' the fewest input
        channels (layer 0 excluded)."""
        split = [(i, lay) for i, lay in enumerate(self.layers) if lay.split]
        if which == "W":
            return min((min(lay.x[1], lay.y[1]) for _, lay in split), default=1e9)
        if which == "F":
            return min((lay.y[0] for _, lay in split), default=1e9)
        return min((lay.x[0] for i, lay in split if i > 0), default=1e9)


@dataclass(frozen=True)
class ToolPlatform:
    """A ``.plat`` file (tool:1143-1186): the fields the projections use."""

    memory_bytes: float = 16e9  # MEM_PER_NODE
    gpus_per_node: int = 4  # GPU_PER_NODE
    max_gpus: float = 4096  # MAX_NODE

    @property
    def items(self) -> float:  # tool:165 ITEM_PER_NODE
        return self.memory_bytes / BYTES_PER_ITEM


@dataclass(frozen=True)
class ToolPoint:
    """One row of the tool's result table (tool:1103-1119)."""

    case: str  # the tool's name (tool:280-1001; 'data' and 'spatial' are oracle's words too)
    batch: float  # the tool's B column
    gpus: float
    memory_bytes: float
    compute_s: float
    gradient_exchange_s: float = 0.0  # its all-reduces of the weights' gradients
    layer_collectives_s: float = 0.0  # its all-gathers and all-reduces of activations
    halo_s: float = 0.0  # its halo exchanges

    @property
    def communication_s(self) -> float:  # Tcomm
        return self.gradient_exchange_s + self.layer_collectives_s + self.halo_s


def network_factor(gpus: float, gpudirect: bool = True) -> tuple[float, float]:
    """(bandwidth bytes/s, latency s) of a ring over ``gpus`` GPUs: get_network_factor
    (tool:1048-1101), whatever the platform file says (its bandwidth and latency are unused)."""
    gpu_plx = 2 * (PLX_CABLE_LATENCY_S + PLX_LATENCY_S)
    if not gpudirect and gpus <= 4:  # tool:1092-1095
        return PLX_BYTES_PER_S, HOST_STAGED_LATENCY_S + PLX_LATENCY_S
    if not gpudirect and gpus <= 68:  # tool:1096-1099
        return min(IB_BYTES_PER_S, PLX_BYTES_PER_S), max(
            NVLINK_SWITCH_LATENCY_S + 2 * NVLINK_CABLE_LATENCY_S, 2 * gpu_plx + LEAF_LATENCY_S
        )
    if gpus <= 4:  # tool:1069-1071
        return NVLINK_BYTES_PER_S, NVLINK_LATENCY_S
    bandwidth = min(IB_BYTES_PER_S, NVLINK_BYTES_PER_S)  # tool:1073, 1080, 1084
    if gpus <= 68:  # tool:1072-1078: same leaf switch
        return bandwidth, max(NVLINK_LATENCY_S, gpu_plx + LEAF_LATENCY_S)
    if gpus <= 136:  # tool:1079-1082: same rack
        return bandwidth, max(NVLINK_LATENCY_S, gpu_plx + 3 * LEAF_LATENCY_S)
    return bandwidth, max(  # tool:1083-1087: across racks
        NVLINK_LATENCY_S, gpu_plx + SPINE_LATENCY_S + 4 * LEAF_LATENCY_S
    )


def ring_allreduce_s(gpus: float, message_bytes: float, bandwidth: float, latency: float) -> float:
    """The tool's ring all-reduce of one message, 2(p-1)(alpha + m beta / p) (tool:320)."""
    return 2 * (gpus - 1) * (latency + message_bytes / bandwidth / gpus)


def fits_one_sample(net: ToolNet, plat: ToolPlatform, weight_share: float = 1.0) -> bool:
    """The tool's "maxSamplePerNode >= 1" test (tool:263-266, 293-296, 763-766)."""
    x, y, w = net.totals
    return (plat.items / 2 - w / weight_share) / (x + y) >= 1


def single(net: ToolNet, plat: ToolPlatform, batch: float) -> ToolPoint:
    """One GPU (analysis_sequential, tool:256-283)."""
    x, y, w = net.totals
    memory = 2 * BYTES_PER_ITEM * (batch * (y + x) + w)  # tool:277
    return ToolPoint("single", batch, 1, memory, net.samples * net.per_sample_s)  # tool:278-279


def data(net: ToolNet, plat: ToolPlatform, per_gpu_batch: float, gpus: float) -> ToolPoint:
    """Data parallelism (analysis_data, tool:285-332): B = b p."""
    x, y, w = net.totals
    batch = per_gpu_batch * gpus  # tool:310
    memory = 2 * (per_gpu_batch * (x + y) + w) * BYTES_PER_ITEM  # tool:313
    compute = math.ceil(net.samples / gpus) * net.per_sample_s  # tool:314
    bandwidth, latency = network_factor(gpus)  # tool:315
    iterations = math.ceil(net.samples / batch)
    comm = iterations * ring_allreduce_s(gpus, w * BYTES_PER_ITEM, bandwidth, latency)  # tool:320
    return ToolPoint(Data.name, batch, gpus, memory, compute, gradient_exchange_s=comm)


def split_sums(net: ToolNet, parts: float) -> tuple[float, float, int, float]:
    """Per-GPU weights and per-sample time with split layers divided by ``parts``, the split
    layers' summed outputs except the model's last layer's, and the number of split layers
    less that one (tool:387-402, 496-511, 788-802)."""
    weights = comp = out = 0.0
    count = 0
    for layer, layer_s in zip(net.layers, net.comp_s):
        if layer.split:
            count += 1
            weights += float(layer.weight_items) / parts
            out += float(layer.out_items)
            comp += layer_s / parts
        else:
            weights += layer.weight_items
            comp += layer_s
    if net.layers[-1].split:  # tool:399-402
        out -= net.layers[-1].out_items
        count -= 1
    return weights, comp, count, out


def filter_or_channel(
    net: ToolNet, plat: ToolPlatform, batch: float, gpus: float, case: str
) -> ToolPoint | None:
    """Filter or channel parallelism of the split layers (core_analysis_filter tool:378-439,
    core_analysis_channel tool:487-528: the same numbers), None when out of memory (tool:405)."""
    x, y, _ = net.totals
    weights, comp, count, out = split_sums(net, gpus)
    memory = 2 * (batch * (x + y) + weights / gpus) * BYTES_PER_ITEM  # tool:404, 513
    if memory > plat.memory_bytes:
        return None
    iterations = math.ceil(net.samples / batch)
    compute = iterations * batch * comp  # tool:409, 518
    bandwidth, latency = network_factor(gpus)  # tool:412, 519
    step = latency * count + batch * out * BYTES_PER_ITEM / bandwidth / gpus
    comm = 3 * iterations * (gpus - 1) * step  # tool:416-418 (allgather + 2x), tool:523
    return ToolPoint(case, batch, gpus, memory, compute, layer_collectives_s=comm)


def spatial_sums(net: ToolNet, parts: float, upto: int) -> tuple[float, float, float]:
    """(|x|, |y|, per-sample time) of layers 0..upto-1, split layers divided by ``parts``
    (tool:565-576, 875-886): every layer counts, RELU and BNORM included."""
    x = y = comp = 0.0
    for layer, layer_s in zip(net.layers[:upto], net.comp_s[:upto]):
        if layer.split:
            y += math.ceil(float(layer.out_items) / parts)
            x += math.ceil(float(layer.in_items) / parts)
            comp += layer_s / parts
        else:
            y += layer.out_items
            x += layer.in_items
            comp += layer_s
    return x, y, comp


def halo_exchanges_s(net: ToolNet, columns, samples: float, latency: float, bandwidth: float) -> float:
    """Halo exchanges of one iteration: per split layer up to the last split one with kernel
    > 1, one exchange per column function (activation, input gradient) of 2(alpha + m beta),
    m = column(layer) (K-1)//2 samples bytes, (K-1)//2 Python 2's integer division
    (tool:605-616, 920-937)."""
    total = 0.0
    for layer in net.layers[: net.last_split + 1]:
        if layer.kernel > 1 and layer.split:
            for column in columns:
                size = column(layer) * ((layer.kernel - 1) // 2) * samples * BYTES_PER_ITEM
                total += 2 * (latency + size / bandwidth)
    return total


def spatial(net: ToolNet, plat: ToolPlatform, batch: float, gpus: float) -> ToolPoint | None:
    """Spatial parallelism (analysis_spatial, tool:530-630), None when one sample does not fit
    (tool:578-581). The halos are sized by the samples that would fit, not by B (tool:611)."""
    _, _, w = net.totals
    x, y, comp = spatial_sums(net, gpus, len(net.layers))
    fit = (plat.items / 2 - w) / (x + y)  # tool:578
    if fit < 1:
        return None
    memory = 2 * (batch * (x + y) + w) * BYTES_PER_ITEM  # tool:591
    compute = math.ceil(net.samples) * comp  # tool:593
    bandwidth, latency = network_factor(gpus, gpudirect=False)  # tool:595
    iterations = math.ceil(net.samples / batch)
    columns = (lambda lay: lay.y[1], lambda lay: lay.x[1])  # tool:611, 615: one row of W
    halo = iterations * halo_exchanges_s(net, columns, fit, latency, bandwidth)  # tool:617
    cut = float(net.layers[net.last_split].out_items)  # tool:621
    gather = iterations * 2 * (gpus - 1) * (latency + batch * cut * BYTES_PER_ITEM / bandwidth / gpus)
    reduce = (net.samples / batch) * ring_allreduce_s(gpus, w * BYTES_PER_ITEM, bandwidth, latency)
    return ToolPoint(Spatial.name, batch, gpus, memory, compute, reduce, gather, halo)  # tool:628


def data_filter(net: ToolNet, plat: ToolPlatform, per_gpu_batch: float, gpus: float,
                p2: int | None = None) -> ToolPoint:
    """Data + filter (analysis_hybrid_df, tool:752-832): filter over the p2 GPUs of a node,
    data over p1 = p / p2 nodes, B = b p1 (the tool: p2 = GPUs per node, tool:760)."""
    x, y, w = net.totals
    p2 = p2 or plat.gpus_per_node
    p1 = gpus / p2
    batch = per_gpu_batch * p1  # tool:780
    weights, comp, count, out = split_sums(net, p2)
    memory = 2 * (per_gpu_batch * (x + y) + weights) * BYTES_PER_ITEM  # tool:805
    iterations = math.ceil(net.samples / batch)
    compute = iterations * per_gpu_batch * comp  # tool:806
    bandwidth, latency = network_factor(p2)  # tool:809
    step = latency * count + per_gpu_batch * out * BYTES_PER_ITEM / bandwidth / p2
    filter_s = 3 * iterations * (p2 - 1) * step  # tool:812
    bandwidth, latency = network_factor(gpus)  # tool:817
    bandwidth /= 2 * p2  # tool:821
    # tool:823-824: the full model's gradients, "our implementation limitation of Chainermnx"
    data_s = iterations * ring_allreduce_s(p1, w * BYTES_PER_ITEM, bandwidth, latency)
    return ToolPoint("df", batch, gpus, memory, compute, data_s, filter_s)  # tool:829


def data_spatial(net: ToolNet, plat: ToolPlatform, per_gpu_batch: float, gpus: float,
                 p2: int | None = None) -> ToolPoint:
    """Data + spatial (analysis_hybrid_ds, tool:837-988): spatial over the p2 GPUs of a node,
    data over p1 = p / p2 nodes, B = b p1 (the tool: p2 = GPUs per node, tool:866); only
    layers up to the last split one count."""
    _, _, w = net.totals
    p2 = p2 or plat.gpus_per_node
    p1 = gpus / p2
    batch = per_gpu_batch * p1  # tool:901
    x, y, comp = spatial_sums(net, p2, net.last_split + 1)  # tool:875
    memory = 2 * (batch * (x + y) / p1 + w) * BYTES_PER_ITEM  # tool:904
    compute = math.ceil(net.samples / p1) * comp  # tool:906
    iterations = math.ceil(net.samples / batch)
    bandwidth, latency = network_factor(p2, gpudirect=False)  # tool:909
    column = lambda lay: lay.x[0] * prod(lay.x[2:])  # noqa: E731  tool:924-926, x's for both
    halo = halo_exchanges_s(net, (column, column), per_gpu_batch, latency, bandwidth / (p2 * 2))  # tool:911
    cut = float(net.layers[net.last_split].out_items)  # tool:957
    step = latency + per_gpu_batch * cut * BYTES_PER_ITEM / (bandwidth / 2) / p2  # tool:944
    gather = 2 * (p2 - 1) * step  # tool:958
    # tool:965: get_network_factor(platform, P2, nodeNumber, ALGORITHM_RING) passes 1 as
    # GPUDIRECT, so the local reduction runs at NVLink's constants.
    bandwidth, latency = network_factor(p2)
    local = ring_allreduce_s(p2, w * BYTES_PER_ITEM, bandwidth, latency)  # tool:969
    bandwidth, latency = network_factor(gpus)  # tool:974
    leaders = ring_allreduce_s(p1, w * BYTES_PER_ITEM, bandwidth / (p2 * 2), latency)  # tool:976-978
    # tool:940, 960, 979, 984
    return ToolPoint("ds", batch, gpus, memory, compute, iterations * (local + leaders), iterations * gather,
                     iterations * halo)


def _powers(low_gpus: float, high_gpus: float) -> list[float]:
    """The tool's GPU counts 2^i, i = int(log2 low)..int(log2 high) (tool:306-308)."""
    return [math.pow(2, i) for i in range(int(math.log(low_gpus, 2)), int(math.log(high_gpus, 2)) + 1)]


def _model_split(net, plat, per_gpu_batch, max_gpus, max_batch, bound, cases):
    """Filter or channel: B = b p then B = b, p up to the split layers' bound (tool:334-376)."""
    gpus = _powers(2, min(max_gpus, bound))
    weak = [filter_or_channel(net, plat, per_gpu_batch * p, p, cases[0]) for p in gpus
            if per_gpu_batch * p <= max_batch]
    fixed = [filter_or_channel(net, plat, per_gpu_batch, p, cases[1]) for p in gpus
             if per_gpu_batch <= max_batch]
    return [point for point in weak + fixed if point is not None]


def projections(net: ToolNet, plat: ToolPlatform, kinds: Sequence[str], per_gpu_batch: float,
                max_gpus: float, max_batch: float) -> list[ToolPoint]:
    """Every row the tool prints for ``--paratype`` kinds (o, d, s, f, c, df, ds), ``--cBon``
    per_gpu_batch, ``--cmaxp`` max_gpus and ``--cmaxB`` max_batch, in its order (tool:219-252)."""
    max_gpus = min(max_gpus, plat.max_gpus)  # tool:151
    b, p2 = per_gpu_batch, plat.gpus_per_node
    rows: list[ToolPoint | None] = []
    if "o" in kinds and fits_one_sample(net, plat):
        rows.append(single(net, plat, b))
    if "d" in kinds and fits_one_sample(net, plat):
        rows += [data(net, plat, b, p) for p in _powers(2, max_gpus) if b * p <= max_batch]
    if "s" in kinds and b <= max_batch:
        rows += [spatial(net, plat, b, p) for p in _powers(2, min(max_gpus, net.min_split("W")))]
    if "f" in kinds:
        rows += _model_split(net, plat, b, max_gpus, max_batch, net.min_split("F"),
                             ("filter1", "filter3"))
    if "c" in kinds:
        rows += _model_split(net, plat, b, max_gpus, max_batch, net.min_split("C"),
                             ("chan1", "chan3"))
    if "df" in kinds and fits_one_sample(net, plat, weight_share=p2):
        rows += [data_filter(net, plat, b, p) for p in _powers(p2, max_gpus)
                 if b * p / p2 <= max_batch]
    if "ds" in kinds:
        rows += [data_spatial(net, plat, b, p) for p in _powers(p2, max_gpus)
                 if b * p / p2 <= max_batch and p >= p2]
    return [row for row in rows if row is not None]
