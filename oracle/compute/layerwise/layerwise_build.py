"""The (layers x distributions) cost arrays of compute/layerwise/layerwise.py's Costs, one
distribution kind at a time (formulas and sources in compute/layerwise/layerwise.py's docstring).
A strategy's kind is filled by its module (its ``layerwise``); the two kinds that are no
strategy are here: replicated (compute/replicated.py, Lee et al. HiPC 2017 §III-C-2) and
spatial+filter (Jia et al. ICML 2018 §4)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from oracle.compute.context import Context
from oracle.compute.network import (
    allgather_algorithm,
    allreduce_algorithm,
    contention_factor,
    data_group_flows_per_node,
    group_contiguous,
    group_strided,
)
from oracle.compute.strategies.base import REGISTRY, LayerwiseKind, changes, names
from oracle.compute.strategies.data import fill_data
from oracle.compute.strategies.filter import Filter, layer_collectives
from oracle.compute.strategies.spatial import Spatial, halos
from oracle.vocabulary import RING


@dataclass
class GradGroup:
    """GPUs that all-reduce the gradients of the weights they replicate, fused into one
    all-reduce per iteration (docs/cost-model.md: AR(p, δΣw), one call per group)."""

    key: tuple
    label: str
    cost: object  # callable: bytes -> seconds per iteration

    latency: float = 0.0  # cost(0): paid once when any layer uses the group
    slope: float = 0.0  # seconds per byte (linear part; exact for α-β links)


@dataclass
class Columns:
    """Per (layer, distribution): the arrays Costs keeps."""

    fb: np.ndarray
    wu: np.ndarray
    halo: np.ndarray
    lc: np.ndarray
    mem: np.ndarray
    held: np.ndarray  # samples of the layer's activations a GPU holds
    gbytes: np.ndarray
    gclass: np.ndarray
    split: np.ndarray  # d splits l (by samples x space/filters/channels)
    partial: np.ndarray  # backward input gradient is a partial sum
    feasible: np.ndarray
    lay: np.ndarray
    reasons: dict = field(default_factory=dict)
    gather: np.ndarray | None = None  # replicated layers: bytes each GPU adds to their all-gather

    def __post_init__(self) -> None:
        if self.gather is None:
            self.gather = np.zeros(self.fb.shape)

    @staticmethod
    def empty(G: int, nd: int) -> Columns:
        z = np.zeros((G, nd))
        return Columns(np.empty((G, nd)), np.empty((G, nd)), z.copy(), z.copy(), np.empty((G, nd)),
                       np.empty((G, nd)), z.copy(), np.full((G, nd), -1, dtype=int), np.zeros((G, nd), dtype=bool),
                       np.zeros((G, nd), dtype=bool), np.ones((G, nd), dtype=bool), np.zeros((G, nd), dtype=int))  # fmt: skip


class Registry:
    """The gradient groups (fused all-reduces) and tensor layouts of one Costs."""

    def __init__(self, ctx: Context, p: int) -> None:
        self.ctx, self.p = ctx, p
        self.system = ctx.system
        self.gpn = ctx.system.gpus_per_node
        self.groups: list[GradGroup] = []
        self.group_index: dict[tuple, int] = {}
        # (mode, p1, p2, GPUs used, copies): copies > 1 when each piece is held by that many
        # consecutive GPUs (spatial+filter: a spatial tile on the p3 GPUs of a filter group)
        self.layouts: list[tuple[str, int, int, int, int]] = [("S", p, 1, p, 1)]
        self.layout_index = {("S", p, 1, p, 1): 0}
        self.ref_bytes = max(ctx.grad_delta * ctx.sum_w, 1.0)  # linearize fused all-reduces up to all weights
        self.algo = getattr(ctx, "algorithm", RING)
        self.all_p = group_contiguous(p, self.gpn)
        self.g_all = self.ar_group(self.all_p, 1.0, self.algo, f"all {p} GPUs")

    def group(self, key: tuple, label: str, fn) -> int:
        if key not in self.group_index:
            lat = float(fn(0.0))
            slope = (float(fn(self.ref_bytes)) - lat) / self.ref_bytes
            self.group_index[key] = len(self.groups)
            self.groups.append(GradGroup(key, label, fn, lat, max(slope, 0.0)))
        return self.group_index[key]

    def layout(self, key: tuple[str, int, int], gpus: int | None = None, copies: int = 1) -> int:
        key = (*key, self.p if gpus is None else gpus, copies)
        if key[2] == 1 and copies == 1:
            key = ("S", key[1], 1, key[3], 1)
        if key not in self.layout_index:
            self.layout_index[key] = len(self.layouts)
            self.layouts.append(key)
        return self.layout_index[key]

    def ar_group(self, grp, phi: float, algorithm: str, label: str) -> int:
        system, contention = self.system, self.ctx.options.contention
        return self.group(
            ("ar", grp, phi, algorithm),
            label + (f", φ={phi:g}" if phi != 1 else ""),
            lambda m: allreduce_algorithm(system, grp, m, algorithm, phi, contention, "gradient_allreduce")[0],
        )

    def all_of(self, q: int) -> int:
        """The fused all-reduce over the first q GPUs (-1: one GPU, nothing to reduce)."""
        if q == self.p:
            return self.g_all
        if q == 1:
            return -1
        return self.ar_group(group_contiguous(q, self.gpn), 1.0, self.algo, f"first {q} GPUs")

    def strided_group(self, p1: int, p2: int) -> int:
        system = self.system
        phi = contention_factor(system, data_group_flows_per_node(p1, p2, self.gpn), self.ctx.options.contention)
        leader = system.implementation.data_filter_allreduce == "leader"  # as data_group_allreduce
        return self.ar_group(group_strided(p1, p2, self.gpn), phi, "leader" if leader else self.algo,
                             f"{p1} data groups (GPUs every {p2})")  # fmt: skip


def batch_limit(cols: Columns, k: int, grid: bool, p1: int, B: float) -> None:
    """Fewer than one sample per data-parallel group (a GPU when not a grid): infeasible."""
    if p1 > B:
        cols.feasible[:, k] = False
        what = "data-parallel group" if grid else "GPU"
        for l in range(cols.fb.shape[0]):
            cols.reasons[(l, k)] = f"fewer than one sample per {what}: B={B:g} over {p1}"


def fill_replicated(ctx: Context, cols: Columns, reg: Registry, k: int, d, B: float) -> None:
    """Data parallelism with the weight gradient computed on every GPU (Lee et al.
    §III-C-2, compute/replicated.py): no gradient in a fused all-reduce; an all-gather of
    the layer's inputs and output errors, δ·(B/p)·(x+y) from each GPU; the other
    B - B/p samples' weight gradient, BW/2 per sample; the gathered B·(x+y) in memory."""
    fill_data(ctx, cols, reg, k, d, B)
    p, I, delta = d.gpus, ctx.D / B, ctx.delta
    rep = ctx.w > 0
    if p <= 1 or not rep.any():
        return
    each = delta * B / p * (ctx.x + ctx.y)
    gather = allgather_algorithm(reg.system, reg.all_p, each[rep], purpose="allgather")[0]
    cols.lc[rep, k] = I * np.asarray(gather, dtype=float)
    cols.gather[rep, k] = each[rep]
    cols.fb[rep, k] += I * (B - B / p) * ctx.times_at(B)[1][rep] / 2.0
    cols.mem[rep, k] += B * (ctx.x + ctx.y)[rep]
    cols.gbytes[rep, k] = 0.0
    cols.gclass[rep, k] = -1


def fill_spatial_filter(ctx: Context, cols: Columns, reg: Registry, k: int, d, B: float) -> None:
    """Samples over p1 groups, height/width over p2 and filters over p3 (Jia et al. §4,
    a {n, h, w, c} configuration): a conv layer's work splits p2·p3 ways; layers with
    only a spatial extent split p2 ways and run replicated over p3, fc layers split their
    filters p3 ways and run replicated over p2.  Halos as spatial p1 x p2 (on the
    layer's whole input), the filter collectives of filter 1 x p3 on a GPU's spatial
    tile (ParaDL eq. 15 with b/p2 samples' worth), gradients δ|w|/p3 all-reduced over
    the p1·p2 GPUs that hold the same filter slice."""
    p1, p2, p3, D, I = d.p1, d.p2, d.p3, ctx.D, ctx.D / B
    b = B / p1
    sp, sums = ctx.split(Spatial.name).mask, ctx.split(Filter.name)
    sf = sums.mask
    every = np.ones(ctx.G, dtype=bool)
    cols.fb[:, k] = np.where(sp & sf, ctx.layer_split_fb(every, D, p1, p2 * p3, I, B),
                             np.where(sp, ctx.layer_split_fb(every, D, p1, p2, I, B),
                                      np.where(sf, ctx.layer_split_fb(every, D, p1, p3, I, B), D / p1 * ctx.times_at(b)[2])))  # fmt: skip
    cols.wu[:, k] = np.where(sf, I / p3, I) * ctx.wu
    cols.mem[:, k] = np.where(sp, 2 * b / p2, 2 * b) * ctx.layer_memory_elements() + np.where(sf, 2 * ctx.w / p3, 2 * ctx.w)
    cols.held[:, k] = np.where(sp, b / p2, b)
    cols.gbytes[:, k] = np.where(sf, ctx.grad_delta * ctx.w / p3, ctx.grad_delta * ctx.w)
    cols.gclass[:, k] = reg.strided_group(p1 * p2, p3) if p1 * p2 > 1 else -1
    cols.split[:, k] = sp | sf
    cols.partial[:, k] = sf
    cols.lay[:, k] = np.where(sp, reg.layout(("S", p1, p2), d.gpus, p3), reg.layout(("R", p1, p2 * p3), d.gpus))
    coll = sf.copy()
    if sums.last >= 0:
        coll[sums.last] = False
    if coll.any():
        # a spatially split layer's output on a GPU is its tile: b/p2 samples' worth
        cols.lc[coll, k] = I * np.where(sp[coll], layer_collectives(ctx, sums, p3, b / p2),
                                        layer_collectives(ctx, sums, p3, b))  # fmt: skip
    halos(ctx, cols, reg, k, p2, b, I)
    for l in np.flatnonzero(sf & (ctx.F < p3)):
        cols.feasible[l, k] = False
        cols.reasons[(int(l), k)] = f"p3={p3} exceeds its {int(ctx.F[l])} filters"


# the per-layer distributions that are no strategy of their own (the strategies' kinds:
# their modules' ``layerwise``)
EXTRA_KINDS = {
    "replicated": LayerwiseKind(fill_replicated, grid=False, default=False),
    "spatial+filter": LayerwiseKind(fill_spatial_filter, default=False),
}


def strategy_kinds() -> dict[str, LayerwiseKind]:
    """The strategies' per-layer distributions (their modules' ``layerwise``), in
    strategy order."""
    return {n: REGISTRY[n].layerwise for n in names() if REGISTRY[n].layerwise is not None}


def kind_table() -> dict[str, LayerwiseKind]:
    """Every per-layer distribution a file or --distributions may name: the
    strategies', then :data:`EXTRA_KINDS` (once per change of the registry)."""
    if _table.get("at") != changes():
        _table.update(at=changes(), kinds={**strategy_kinds(), **EXTRA_KINDS})
    return _table["kinds"]


_table: dict = {}



def kind_names() -> tuple[str, ...]:
    """Every kind a file or --distributions may name."""
    return tuple(kind_table())


def default_kinds() -> tuple[str, ...]:
    """What oracle search considers unless told (replicated: Lee et al., opt in)."""
    return tuple(n for n, kind in kind_table().items() if kind.default)
