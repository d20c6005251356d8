"""The (layers x distributions) cost arrays of compute/layerwise.py's Costs, one
distribution kind at a time (formulas and sources in compute/layerwise.py's docstring;
the replicated kind: compute/replicated.py, Lee et al. HiPC 2017 §III-C-2)."""

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
    link,
    p2p,
    span_neighbours,
)
from oracle.compute.strategies.filter import layer_collectives
from oracle.compute.strategies.spatial import halo_exchange


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
        self.ref_bytes = max(ctx.delta * ctx.sum_w, 1.0)  # linearize fused all-reduces up to all weights
        self.algo = getattr(ctx, "algorithm", "ring")
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


def batch_limit(cols: Columns, k: int, kind: str, p1: int, B: float) -> None:
    """Fewer than one sample per data-parallel group: infeasible."""
    if p1 > B:
        cols.feasible[:, k] = False
        what = "GPU" if kind in ("data", "replicated") else "data-parallel group"
        for l in range(cols.fb.shape[0]):
            cols.reasons[(l, k)] = f"fewer than one sample per {what}: B={B:g} over {p1}"


def fill_data(ctx: Context, cols: Columns, reg: Registry, k: int, d, B: float) -> None:
    p, D, I = d.gpus, ctx.D, ctx.D / B
    cols.fb[:, k] = D / p * ctx.times_at(B / p)[2]
    cols.wu[:, k] = I * ctx.wu
    cols.mem[:, k] = 2 * B / p * ctx.layer_memory_elements() + 2 * ctx.w
    cols.held[:, k] = B / p
    cols.gbytes[:, k] = ctx.delta * ctx.w
    cols.gclass[:, k] = reg.all_of(p)
    cols.split[:, k] = True
    cols.lay[:, k] = reg.layout(("S", p, 1), p)


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


def fill_spatial(ctx: Context, cols: Columns, reg: Registry, k: int, d, B: float) -> None:
    p, p1, p2, D, I = d.gpus, d.p1, d.p2, ctx.D, ctx.D / B
    s = ctx.spatial_split.mask
    act = ctx.layer_memory_elements()
    cols.fb[:, k] = split_fb(ctx, s, D, p1, p2, I, B)
    cols.wu[:, k] = I * ctx.wu
    cols.mem[:, k] = np.where(s, 2 * B / p, 2 * B / p1) * act + 2 * ctx.w
    cols.held[:, k] = np.where(s, B / p, B / p1)
    cols.gbytes[:, k] = ctx.delta * ctx.w
    cols.split[:, k] = s
    # split layers: all-reduce over all p GPUs (spatial: AR(p); data+spatial: AR_φ(p) or
    # ParaDL's leader all-reduce); replicated head: data groups
    if p1 == 1:
        g_split = reg.all_of(p)
    else:
        phi = contention_factor(reg.system, 1 if p > reg.gpn else 0, ctx.options.contention)
        leader = reg.system.implementation.data_spatial_allreduce == "leader"
        where = f"all {p} GPUs" if p == reg.p else f"first {p} GPUs"
        grp = reg.all_p if p == reg.p else group_contiguous(p, reg.gpn)
        g_split = reg.ar_group(grp, phi, "leader" if leader else reg.algo,
                               where + (" (leader all-reduce)" if leader else ""))  # fmt: skip
    g_rest = reg.strided_group(p1, p2) if p1 > 1 else -1
    cols.gclass[:, k] = np.where(s, g_split, g_rest)
    cols.lay[:, k] = np.where(s, reg.layout(("S", p1, p2), p), reg.layout(("R", p1, p2), p))
    _halos(ctx, cols, reg, k, p2, B / p1, I)


def _halos(ctx: Context, cols: Columns, reg: Registry, k: int, p2: int, b: float, I: float) -> None:
    """Halo exchange of split conv/pool layers (ParaDL eq. 10, Dryden §V-A), the grid
    limits, and with the framework memory model what the spatial strategies hold beyond
    the tiles (strategies/spatial.py spatial_memory): the halo rows each split conv/pool
    layer appends to its saved input (Dryden et al. §V-B), b·halo(x_l), and the gathered
    input of the replicated head, b·y_last, counted with the last split layer."""
    halo_rows = ctx._halo_layers  # split conv/pool layers (kernel half-widths, extents)
    grid = ctx.spatial_grid(p2)
    framework = ctx.memory_model != "paradl"
    last = ctx.spatial_split.last
    if framework and p2 > 1 and 0 <= last < ctx.G - 1:
        cols.mem[last, k] += b * ctx.y[last]
    if not halo_rows["index"].size:
        return
    idx = halo_rows["index"]
    hx, hdy = ctx.halo_elements(grid)
    if framework:
        cols.mem[idx, k] += b * hx
    h = hx + hdy
    lk = link(reg.system, span_neighbours(p2, reg.gpn), "halo")
    fw_x = halo_exchange(ctx, grid, 2 * np.asarray(p2p(b * ctx.delta * hx, lk)))
    bw_x = halo_exchange(ctx, grid, 2 * np.asarray(p2p(b * ctx.delta * hdy, lk)))
    cols.halo[idx, k] = I * np.where(h > 0, fw_x + bw_x, 0.0)
    f = np.array(grid, dtype=float)
    bad = (halo_rows["Y"] < f).any(axis=1)
    for r in np.flatnonzero(bad):
        l = int(idx[r])
        cols.feasible[l, k] = False
        ext = "x".join(str(int(v)) for v in halo_rows["Y"][r])
        cols.reasons[(l, k)] = f"spatial split {'x'.join(map(str, grid))} exceeds its {ext} output"


def fill_split(ctx: Context, cols: Columns, reg: Registry, k: int, d, B: float) -> None:
    """filter / channel p1 x p2 (ParaDL eq. 15 for the layer collectives)."""
    p1, p2, D, I = d.p1, d.p2, ctx.D, ctx.D / B
    b = B / p1
    sums = ctx.filter_split if d.kind == "filter" else ctx.channel_split
    s = sums.mask
    width = ctx.F if d.kind == "filter" else ctx.C
    cols.fb[:, k] = split_fb(ctx, s, D, p1, p2, I, B)
    cols.wu[:, k] = np.where(s, I / p2, I) * ctx.wu
    cols.mem[:, k] = 2 * b * ctx.layer_memory_elements() + np.where(s, 2 * ctx.w / p2, 2 * ctx.w)
    cols.held[:, k] = b
    cols.gbytes[:, k] = np.where(s, ctx.delta * ctx.w / p2, ctx.delta * ctx.w)
    cols.gclass[:, k] = reg.strided_group(p1, p2) if p1 > 1 else -1
    cols.split[:, k] = s
    cols.partial[:, k] = s
    cols.lay[:, k] = reg.layout(("R", p1, p2), d.gpus)
    coll = s.copy()
    if sums.last >= 0:
        coll[sums.last] = False
    if coll.any():
        cols.lc[coll, k] = I * layer_collectives(ctx, sums, p2, b)
    noun = "filters" if d.kind == "filter" else "input channels"
    for l in np.flatnonzero(s & (width < p2)):
        cols.feasible[l, k] = False
        cols.reasons[(int(l), k)] = f"p2={p2} exceeds its {int(width[l])} {noun}"


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
    sp, sums = ctx.spatial_split.mask, ctx.filter_split
    sf = sums.mask
    every = np.ones(ctx.G, dtype=bool)
    cols.fb[:, k] = np.where(sp & sf, split_fb(ctx, every, D, p1, p2 * p3, I, B),
                             np.where(sp, split_fb(ctx, every, D, p1, p2, I, B),
                                      np.where(sf, split_fb(ctx, every, D, p1, p3, I, B), D / p1 * ctx.times_at(b)[2])))  # fmt: skip
    cols.wu[:, k] = np.where(sf, I / p3, I) * ctx.wu
    cols.mem[:, k] = np.where(sp, 2 * b / p2, 2 * b) * ctx.layer_memory_elements() + np.where(sf, 2 * ctx.w / p3, 2 * ctx.w)
    cols.held[:, k] = np.where(sp, b / p2, b)
    cols.gbytes[:, k] = np.where(sf, ctx.delta * ctx.w / p3, ctx.delta * ctx.w)
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
    _halos(ctx, cols, reg, k, p2, b, I)
    for l in np.flatnonzero(sf & (ctx.F < p3)):
        cols.feasible[l, k] = False
        cols.reasons[(int(l), k)] = f"p3={p3} exceeds its {int(ctx.F[l])} filters"


FILL = {"data": fill_data, "replicated": fill_replicated, "spatial": fill_spatial, "filter": fill_split,
        "channel": fill_split, "spatial+filter": fill_spatial_filter}  # fmt: skip


def split_fb(ctx: Context, split: np.ndarray, D: float, p1: int, p2: int, I: float, B: float) -> np.ndarray:
    """Per layer FW+BW per epoch: a split layer's D/p1 samples split p2 ways, with the
    system's split efficiency (as Context.split_compute); a replicated one's D/p1.
    Compute model (issue 13): split layers work on B/(p1·p2) samples per kernel,
    replicated ones on B/p1."""
    impl = ctx.system.implementation
    f = impl.split_serial_fraction if p2 > 1 else 0.0
    split_t = D / p1 * ctx.times_at(B / (p1 * p2))[2] * (f + (1.0 - f) / p2)
    if p2 > 1 and impl.split_overhead_s:
        split_t = split_t + I * impl.split_overhead_s
    return np.where(split, split_t, D / p1 * ctx.times_at(B / p1)[2])
