"""Per-layer (layer-wise) parallelization: the cost of every layer under every way of
using all p GPUs, and of redistributing tensors between layers of different ways.

A *distribution* (Dryden et al., IPDPS 2019, §III; Jia et al., ICML 2018, §4 "parallel
configurations") says how one layer uses all p GPUs, as a P_r x P_c grid (Gholami et
al., SPAA 2018): p1 groups split the samples and each group of p2 GPUs splits the layer:

    data            p1 = p, p2 = 1: samples split over all p GPUs
    spatial p1xp2   samples over p1 groups; height/width (/depth) split over p2
                    (layers with no spatial extent, e.g. the fc head, run replicated
                    in the group, as in the spatial strategy)
    filter  p1xp2   samples over p1 groups; conv/fc filters split over p2; the other
                    layers run replicated in the group
    channel p1xp2   as filter, split by input channels (not the layers reading the data)

Per layer l under distribution d (per epoch, I = D/B iterations, b = B/p1 samples per
group; docs/cost-model.md Table, restricted to one layer):

    compute     (D/p)·(FW_l+BW_l) when d splits l, else (D/p1)·(FW_l+BW_l)
                + I·WU_l (divided by p2 when filter/channel split the weights)
    own comm.   spatial: halo 2·(2α + b·δ·(halo(x_l)+halo(dy_l))·β) per iteration
                (docs/cost-model.md, ParaDL eq. 10); filter/channel: AG(p2, δ·b·y_l/p2) +
                AR(p2, δ·b·y_l) (ParaDL eq. 15) except on the model's last split layer
    gradients   the layer's δ·|w_l| (δ·|w_l|/p2 when its weights are split) joins the
                fused all-reduce of the GPUs that replicate them: all p GPUs (data,
                spatial-split), or the p1 GPUs {j, j+p2, ...} of a data group (AR_φ,
                docs/cost-model.md-4.3).  One fused all-reduce per group (docs/cost-model.md: AR(p, δΣw)):
                its latency is paid once per group, not once per layer.
    memory      (2B/p)(x+y) split by samples and space, (2B/p1)(x+y) otherwise;
                + 2|w_l| (2|w_l|/p2 when filter/channel split the weights) (docs/cost-model.md);
                with the framework memory model the saved tensors of those samples
                instead of 2(x+y), plus the backward's largest gradient working set and
                DDP's buckets (Costs.memory; halo rows and a gathered head input, which
                the spatial strategies count, are left out here)

Redistribution (Dryden et al. §III-C): when a tensor's producer and consumer lay it out
differently, it is shuffled with an all-to-all "where a processor sends indices it no
longer owns and receives its new indices", in the forward pass and for its gradient in
the backward pass.  With the α-β model of docs/cost-model.md an all-to-all among q GPUs costs
(q-1)(α + m_i·β), m_i the bytes a GPU receives from each peer (here: the most any GPU
receives, divided by q-1); when the consumer gathers whole pieces (a split tensor to a
group-replicated one) it is the ring all-gather AG(q, m_i).  q is the block of GPUs that
exchange data, p / gcd(p1 of the producer, p1 of the consumer), on the span of that
contiguous block (docs/cost-model.md).  Layouts: data S(p,1); spatial split S(p1,p2) (sample
block x spatial tile); everything else R(p1) (sample block, replicated in the group).

Uniform assignments are the uniform strategies, with the same numbers
(tests/test_layerwise.py): all data = data; all spatial 1 x p = spatial, p1 x p2 =
data+spatial; all filter 1 x p = filter, p1 x p2 = data+filter; all channel 1 x p =
channel (p1 x p2: a data+channel hybrid the sweep does not list).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from oracle.compute.context import Context
from oracle.compute.cost import Breakdown, Limit, Point
from oracle.compute.network import (
    allgather_pieces,
    allreduce_algorithm,
    contention_factor,
    data_group_flows_per_node,
    group_contiguous,
    group_strided,
    link,
    p2p,
    span_neighbours,
)
from oracle.compute.strategies.base import epoch_limit
from oracle.compute.strategies.filter import layer_collectives
from oracle.compute.strategies.spatial import halo_exchange
from oracle.model import MODEL_INPUT
from oracle.units import fmt_gb

KINDS = ("data", "spatial", "filter", "channel")
STRATEGY = "layer-wise"


# -- distributions ---------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class Dist:
    """How one layer uses all p = p1·p2 GPUs."""

    kind: str
    p1: int
    p2: int

    @property
    def gpus(self) -> int:
        return self.p1 * self.p2

    @property
    def label(self) -> str:
        if self.kind == "data":
            return "data"
        return f"{self.kind} {self.p1}×{self.p2}"

    @property
    def short(self) -> str:
        """ASCII label, e.g. 'spatial 4x16' (file comments, CSV)."""
        return self.label.replace("×", "x")

    @staticmethod
    def data(p: int) -> Dist:
        return Dist("data", p, 1)


MAX_GRIDS = 16  # p1 x p2 grids per kind at most (p = 2^k has k of them)


def divisors(p: int) -> list[int]:
    small, large = [], []
    q = 1
    while q * q <= p:
        if p % q == 0:
            small.append(q)
            if q * q != p:
                large.append(p // q)
        q += 1
    return small + large[::-1]


def factorizations(p: int, limit: int | None = None) -> list[tuple[int, int]]:
    """(p1, p2) with p1·p2 = p and p2 >= 2, p2 ascending.  With ``limit``, a p with
    more factorizations keeps one p2 per power-of-two bucket (the one nearest to
    2^k) and p itself, so that highly composite counts stay searchable."""
    p2s = [q for q in divisors(p) if q >= 2]
    if limit is not None and len(p2s) > limit:
        keep = {p}
        for k in range(1, p.bit_length()):
            keep.add(min(p2s, key=lambda q: (abs(math.log2(q) - k), q)))
        p2s = sorted(keep)
    return [(p // q, q) for q in p2s]


def distributions(
    p: int, kinds: Sequence[str] = KINDS, limit: int | None = MAX_GRIDS
) -> list[Dist]:
    """Every distribution of p GPUs of the given kinds: data, and each kind at every
    factorization p1 x p2 (Gholami et al.'s P_r x P_c grid; p2 = 1 is data); at most
    ``limit`` grids per kind (see :func:`factorizations`)."""
    out = [Dist.data(p)] if "data" in kinds else []
    for p1, p2 in factorizations(p, limit):
        for kind in ("spatial", "filter", "channel"):
            if kind in kinds:
                out.append(Dist(kind, p1, p2))
    return out


# -- gradient groups (fused all-reduces) ---------------------------------------------------


@dataclass
class GradGroup:
    """GPUs that all-reduce the gradients of the weights they replicate, fused into one
    all-reduce per iteration (docs/cost-model.md: AR(p, δΣw), one call per group)."""

    key: tuple
    label: str
    cost: object  # callable: bytes -> seconds per iteration

    latency: float = 0.0  # cost(0): paid once when any layer uses the group
    slope: float = 0.0  # seconds per byte (linear part; exact for α-β links)


# -- per (layer, distribution) costs ---------------------------------------------------------


@dataclass
class Assessment:
    """An assignment evaluated: totals, per-layer parts and the point record."""

    point: Point
    assignment: tuple[Dist, ...]
    compute_s: np.ndarray  # per layer, per epoch: FW+BW + WU
    comm_s: np.ndarray  # per layer: halo + filter/channel collectives
    halo_s: np.ndarray
    redistribution_s: np.ndarray  # per layer: shuffles of its inputs (fwd + bwd)
    memory_bytes: np.ndarray  # per layer
    gradient_s: dict[str, float]  # per gradient group: fused all-reduce time per epoch
    gradient_bytes: np.ndarray  # per layer, per iteration
    layer_limits: list[tuple[int, str]] = field(default_factory=list)

    @property
    def total_s(self) -> float:
        return self.point.total_s


class Costs:
    """Every layer's cost under every candidate distribution for one (context, p, B),
    as numpy arrays of shape (layers, distributions), and the redistribution cost of
    every edge of the model's graph as (distributions x distributions) matrices."""

    def __init__(self, ctx: Context, p: int, batch: float, dists: Sequence[Dist]) -> None:
        if not dists:
            raise ValueError("no distributions")
        for d in dists:
            if d.gpus != p:
                raise ValueError(f"{d.label} does not use {p} GPUs")
        self.ctx = ctx
        self.p = p
        self.B = float(batch)
        self.dists = list(dists)
        self.index = {d: k for k, d in enumerate(self.dists)}
        self.I = ctx.D / self.B
        G, nd = ctx.G, len(self.dists)
        self.G, self.nd = G, nd
        self.edges = _edges(ctx)
        self._build()

    def memory(self, choice) -> float:
        """Per-GPU bytes of an assignment: its layers' tensors, and with the framework
        model the backward's largest gradient working set and DDP's gradient buckets
        (a copy of the gradients that are all-reduced), with the allocator overhead,
        workspace and context (Context.memory_total)."""
        c = np.asarray(choice, dtype=int)
        rows = np.arange(self.G)
        tensors = float(self.mem_bytes[rows, c].sum())
        if self.ctx.memory_model == "paradl":
            return self.ctx.memory_total(tensors)
        trans = float(self.transient_bytes[rows, c].max()) if self.G else 0.0
        reduced = (self.grad_class[rows, c] >= 0) & self.ctx.system.framework.gradient_bucket_copy
        buckets = float(self.grad_bytes[rows, c][reduced].sum())
        return self.ctx.memory_total(tensors + trans + buckets)

    # -- construction ------------------------------------------------------------------
    def _build(self) -> None:
        ctx, G, nd, p, B, I, D = self.ctx, self.G, self.nd, self.p, self.B, self.I, self.ctx.D
        system, delta = ctx.system, ctx.delta
        gpn = system.gpus_per_node
        fb = np.empty((G, nd))
        wu = np.empty((G, nd))
        halo = np.zeros((G, nd))
        lc = np.zeros((G, nd))
        mem = np.empty((G, nd))
        held = np.empty((G, nd))  # samples of the layer's activations a GPU holds
        gbytes = np.zeros((G, nd))
        gclass = np.full((G, nd), -1, dtype=int)
        split = np.zeros((G, nd), dtype=bool)  # d splits l (by samples x space/filters/channels)
        partial = np.zeros((G, nd), dtype=bool)  # backward input gradient is a partial sum
        feasible = np.ones((G, nd), dtype=bool)
        self.reasons: dict[tuple[int, int], str] = {}
        self.groups: list[GradGroup] = []
        group_index: dict[tuple, int] = {}
        layouts: list[tuple[str, int, int]] = [("S", p, 1)]
        layout_index = {("S", p, 1): 0}
        lay = np.zeros((G, nd), dtype=int)
        act = ctx.layer_memory_elements()  # x + y (ParaDL), or half the saved elements
        w = ctx.w
        sp_mask = ctx.spatial_split.mask
        halo_rows = ctx._halo_layers  # split conv/pool layers (kernel half-widths, extents)
        ref_bytes = max(delta * ctx.sum_w, 1.0)  # linearize fused all-reduces up to all weights

        def group(key: tuple, label: str, fn) -> int:
            if key not in group_index:
                lat = float(fn(0.0))
                slope = (float(fn(ref_bytes)) - lat) / ref_bytes
                group_index[key] = len(self.groups)
                self.groups.append(GradGroup(key, label, fn, lat, max(slope, 0.0)))
            return group_index[key]

        def layout(key: tuple[str, int, int]) -> int:
            if key[2] == 1:
                key = ("S", key[1], 1)
            if key not in layout_index:
                layout_index[key] = len(layouts)
                layouts.append(key)
            return layout_index[key]

        algo = getattr(ctx, "algorithm", "ring")
        contention = ctx.options.contention

        def ar_group(grp, phi: float, algorithm: str, label: str) -> int:
            return group(
                ("ar", grp, phi, algorithm),
                label + (f", φ={phi:g}" if phi != 1 else ""),
                lambda m: allreduce_algorithm(system, grp, m, algorithm, phi, contention, "gradient_allreduce")[0],
            )

        all_p = group_contiguous(p, gpn)
        g_all = ar_group(all_p, 1.0, algo, f"all {p} GPUs")

        def strided_group(p1: int, p2: int) -> int:
            phi = contention_factor(system, data_group_flows_per_node(p1, p2, gpn), contention)
            leader = system.implementation.data_filter_allreduce == "leader"  # as data_group_allreduce
            return ar_group(
                group_strided(p1, p2, gpn), phi, "leader" if leader else algo, f"{p1} data groups (GPUs every {p2})"
            )

        for k, d in enumerate(self.dists):
            p1, p2 = d.p1, d.p2
            b = B / p1
            if p1 > B:
                feasible[:, k] = False
                what = "GPU" if d.kind == "data" else "data-parallel group"
                for l in range(G):
                    self.reasons[(l, k)] = f"fewer than one sample per {what}: B={B:g} over {p1}"
            if d.kind == "data":
                fb[:, k] = D / p * ctx.times_at(B / p)[2]
                wu[:, k] = I * ctx.wu
                mem[:, k] = 2 * B / p * act + 2 * w
                held[:, k] = B / p
                gbytes[:, k] = delta * w
                gclass[:, k] = g_all
                split[:, k] = True
                lay[:, k] = 0
                continue
            if d.kind == "spatial":
                s = sp_mask
                fb[:, k] = _split_fb(ctx, s, D, p1, p2, I, B)
                wu[:, k] = I * ctx.wu
                mem[:, k] = np.where(s, 2 * B / p, 2 * b) * act + 2 * w
                held[:, k] = np.where(s, B / p, b)
                gbytes[:, k] = delta * w
                split[:, k] = s
                # split layers: all-reduce over all p GPUs (spatial: AR(p); data+spatial:
                # AR_φ(p) or ParaDL's leader all-reduce); replicated head: data groups
                if p1 == 1:
                    g_split = g_all
                else:
                    phi = contention_factor(system, 1 if p > gpn else 0, contention)
                    leader = system.implementation.data_spatial_allreduce == "leader"
                    g_split = ar_group(all_p, phi, "leader" if leader else algo,
                                       f"all {p} GPUs" + (" (leader all-reduce)" if leader else ""))  # fmt: skip
                g_rest = strided_group(p1, p2) if p1 > 1 else -1
                gclass[:, k] = np.where(s, g_split, g_rest)
                lay[:, k] = np.where(s, layout(("S", p1, p2)), layout(("R", p1, p2)))
                # halo exchange of split conv/pool layers, and the grid limits
                grid = ctx.spatial_grid(p2)
                if halo_rows["index"].size:
                    idx = halo_rows["index"]
                    hx, hdy = ctx.halo_elements(grid)
                    h = hx + hdy
                    lk = link(system, span_neighbours(p2, gpn), "halo")
                    fw_x = halo_exchange(ctx, grid, 2 * np.asarray(p2p(b * delta * hx, lk)))
                    bw_x = halo_exchange(ctx, grid, 2 * np.asarray(p2p(b * delta * hdy, lk)))
                    per = np.where(h > 0, fw_x + bw_x, 0.0)
                    halo[idx, k] = I * per
                    f = np.array(grid, dtype=float)
                    bad = (halo_rows["Y"] < f).any(axis=1)
                    for r in np.flatnonzero(bad):
                        l = int(idx[r])
                        feasible[l, k] = False
                        ext = "x".join(str(int(v)) for v in halo_rows["Y"][r])
                        self.reasons[(l, k)] = (
                            f"spatial split {'x'.join(map(str, grid))} exceeds its {ext} output"
                        )
                continue
            # filter / channel
            sums = ctx.filter_split if d.kind == "filter" else ctx.channel_split
            s = sums.mask
            width = ctx.F if d.kind == "filter" else ctx.C
            fb[:, k] = _split_fb(ctx, s, D, p1, p2, I, B)
            wu[:, k] = np.where(s, I / p2, I) * ctx.wu
            mem[:, k] = 2 * b * act + np.where(s, 2 * w / p2, 2 * w)
            held[:, k] = b
            gbytes[:, k] = np.where(s, delta * w / p2, delta * w)
            gclass[:, k] = strided_group(p1, p2) if p1 > 1 else -1
            split[:, k] = s
            partial[:, k] = s
            lay[:, k] = layout(("R", p1, p2))
            coll = s.copy()
            if sums.last >= 0:
                coll[sums.last] = False
            if coll.any():
                lc[coll, k] = I * layer_collectives(ctx, sums, p2, b)
            too_wide = s & (width < p2)
            noun = "filters" if d.kind == "filter" else "input channels"
            for l in np.flatnonzero(too_wide):
                feasible[l, k] = False
                self.reasons[(int(l), k)] = f"p2={p2} exceeds its {int(width[l])} {noun}"

        self.fb, self.wu, self.halo, self.lc = fb, wu, halo, lc
        self.mem_elements = mem
        self.mem_bytes = ctx.memory_scale() * mem
        # framework model: the backward's gradient working set (max over layers, not a sum)
        self.transient_bytes = ctx.delta * ctx.transient[:, None] * held if ctx.memory_model != "paradl" else 0 * held
        self.grad_bytes = gbytes
        self.grad_class = gclass
        self.split, self.partial = split, partial
        self.feasible = feasible
        self.layout = lay
        self.layouts = layouts
        # gradient bytes join a fused all-reduce: bandwidth part per layer (additive),
        # latency once per group (see search.py)
        slopes = np.array([g.slope for g in self.groups] + [0.0])
        self.grad_time = I * slopes[gclass] * gbytes  # gclass -1 picks the trailing 0
        self.compute = fb + wu
        self.node_time = self.compute + halo + lc + self.grad_time
        self.group_latency = I * np.array([g.latency for g in self.groups])
        self._shuffle_tables()

    # -- redistribution ------------------------------------------------------------------
    def _shuffle_tables(self) -> None:
        """Per ordered pair of layouts (A -> B): latency and seconds per element of one
        sample of the tensor (times B·δ·β already), per iteration."""
        ctx, p, B = self.ctx, self.p, self.B
        system, gpn, delta = ctx.system, ctx.system.gpus_per_node, ctx.delta
        dims = ctx.model.spatial_dims
        L = self.layouts
        nL = len(L)
        g = np.arange(p)
        s0 = np.empty((nL, p))
        tiles0 = np.zeros((nL, p, dims))
        tiles1 = np.ones((nL, p, dims))
        for a, (mode, p1, p2) in enumerate(L):
            s0[a] = (g // p2) * p2 / p  # sample block start (fraction of B)
            if mode == "S" and p2 > 1:
                grid = ctx.spatial_grid(p2)
                coords = np.array(np.unravel_index(g % p2, grid)).T  # (p, dims)
                f = np.array(grid, dtype=float)
                tiles0[a] = coords / f
                tiles1[a] = (coords + 1) / f
        blk = np.array([p2 for _, _, p2 in L], dtype=float) / p  # sample block length
        s1 = s0 + blk[:, None]
        # what GPU g needs in layout c and does not hold in layout a (fraction of B·y),
        # the most over all GPUs; one source layout at a time keeps memory at nL·p
        # The pattern of a pair repeats every lcm(p2_a, p2_c) GPUs (sample blocks of p2
        # GPUs, tiles numbered within a block): one period is enough.
        need = blk[:, None] * (tiles1 - tiles0).prod(axis=-1)  # (nL, p)
        p2 = np.array([q for _, _, q in L])
        recv = np.zeros((nL, nL))
        for a in range(nL):
            for c in range(nL):
                if a == c:
                    continue
                P = math.lcm(int(p2[a]), int(p2[c]))
                so = np.clip(
                    np.minimum(s1[a, :P], s1[c, :P]) - np.maximum(s0[a, :P], s0[c, :P]), 0, None
                )
                to = np.clip(
                    np.minimum(tiles1[a, :P], tiles1[c, :P])
                    - np.maximum(tiles0[a, :P], tiles0[c, :P]),
                    0,
                    None,
                ).prod(axis=-1)
                recv[a, c] = np.clip(need[c, :P] - so * to, 0, None).max()
        recv[recv < 1e-12] = 0.0
        # each pair's cost is the minimum of a few affine pieces lat + y·slope (one per
        # all-gather algorithm the context may pick; one for an all-to-all)
        algo = getattr(ctx, "algorithm", "ring")
        algos = ("ring", "rhd") if algo == "auto" else (algo,)
        # pieces: per algorithm one per protocol line, one more for an operation's own "auto"
        lines = 2 + max((len(level.protocols) for level in system.network), default=0)
        lat = np.full((len(algos) * lines, nL, nL), np.inf)
        slope = np.zeros((len(algos) * lines, nL, nL))
        self.shuffle_kind = np.full((nL, nL), "", dtype=object)
        for a in range(nL):
            for c in range(nL):
                if recv[a, c] == 0.0:
                    continue
                p1a, p1c = L[a][1], L[c][1]
                q = p // math.gcd(p1a, p1c)
                grp = group_contiguous(q, gpn)
                if L[c][0] == "R" and p1a % p1c == 0:
                    # the consumer gathers whole pieces of its group: an all-gather, each
                    # GPU contributing its B/p samples' share (docs/cost-model.md AG)
                    # (one affine piece per algorithm and protocol line: their minimum is
                    # the all-gather of compute/network.py)
                    pieces = [pc for name in algos for pc in allgather_pieces(system, grp, name, "tail_gather")]
                    for k, (t0, per_byte) in enumerate(pieces):
                        lat[k, a, c], slope[k, a, c] = t0, per_byte * delta * B / p
                    self.shuffle_kind[a, c] = f"all-gather in groups of {q}"
                else:
                    # all-to-all (Dryden et al. §III-C): (q-1)(α + m_i β), m_i = received
                    # bytes / (q-1)
                    lk = link(system, grp.span, "alltoall")
                    for k, (alpha, beta) in enumerate(lk.lines()):
                        lat[k, a, c] = (q - 1) * alpha
                        slope[k, a, c] = recv[a, c] * B * delta * beta
                    self.shuffle_kind[a, c] = f"all-to-all in groups of {q}"
        lat[:, recv == 0.0] = 0.0  # nothing to move (pieces left unused stay at +inf)
        self.shuffle_lat, self.shuffle_slope, self.shuffle_recv = lat, slope, recv

    def shuffle_time(self, la, lb, y) -> np.ndarray:
        """Seconds per iteration to move a tensor of y elements per sample from layout
        la to layout lb (arrays broadcast)."""
        la, lb = np.asarray(la), np.asarray(lb)
        y = np.asarray(y, dtype=float)
        t = (self.shuffle_lat[:, la, lb] + y[None] * self.shuffle_slope[:, la, lb]).min(axis=0)
        return np.where(la == lb, 0.0, t)

    def edge_matrices(self) -> np.ndarray:
        """(edges, nd, nd): per epoch, forward shuffle of the producer's output to the
        consumer's layout plus the backward shuffle of its gradient.  A consumer whose
        input gradient is a partial sum (filter/channel split) reduce-scatters it back:
        the cost of the forward gather (at least)."""
        if not self.edges:
            return np.zeros((0, self.nd, self.nd))
        src = np.array([e[0] for e in self.edges])
        dst = np.array([e[1] for e in self.edges])
        y = self.ctx.y[src][:, None, None]
        la = self.layout[src][:, :, None]
        lb = self.layout[dst][:, None, :]
        fwd = self.shuffle_time(la, lb, y)
        bwd = self.shuffle_time(lb, la, y)
        part = self.partial[dst][:, None, :]
        bwd = np.where(part & (la != lb), np.maximum(fwd, bwd), bwd)
        return self.I * (fwd + bwd)

    # -- evaluation ----------------------------------------------------------------------
    def assess(self, choice: Sequence[int]) -> Assessment:
        """Cost of one assignment (a distribution index per layer)."""
        ctx, G = self.ctx, self.G
        c = np.asarray(choice, dtype=int)
        rows = np.arange(G)
        compute = self.compute[rows, c]
        halo = self.halo[rows, c]
        lc = self.lc[rows, c]
        mem = self.mem_bytes[rows, c]
        gbytes = self.grad_bytes[rows, c]
        gcls = self.grad_class[rows, c]
        redis = np.zeros(G)
        for i, j in self.edges:
            la, lb = self.layout[i, c[i]], self.layout[j, c[j]]
            if la == lb:
                continue
            y = ctx.y[i]
            fwd = float(self.shuffle_time(la, lb, y))
            bwd = float(self.shuffle_time(lb, la, y))
            if self.partial[j, c[j]]:
                bwd = max(fwd, bwd)
            redis[j] += self.I * (fwd + bwd)
        grad: dict[str, float] = {}
        ge = 0.0
        for k, grp in enumerate(self.groups):
            used = (gcls == k) & (gbytes > 0)
            if used.any():
                t = self.I * float(grp.cost(float(gbytes[used].sum())))
                grad[grp.label] = grad.get(grp.label, 0.0) + t
                ge += t
        bd = Breakdown(
            forward_backward_s=float(self.fb[rows, c].sum()),
            weight_update_s=float(self.wu[rows, c].sum()),
            gradient_exchange_s=ge,
            layer_collectives_s=float(lc.sum() + redis.sum()),
            halo_s=float(halo.sum()),
        )
        assignment = tuple(self.dists[k] for k in c)
        layer_limits = [
            (l, self.reasons.get((l, int(c[l])), "infeasible"))
            for l in np.flatnonzero(~self.feasible[rows, c])
        ]
        limits = []
        if layer_limits:
            l, why = layer_limits[0]
            more = f" (and {len(layer_limits) - 1} more layers)" if len(layer_limits) > 1 else ""
            limits.append(
                Limit("layer", f"{ctx.names[l]} under {self.dists[c[l]].label}: {why}{more}")
            )
        limits += epoch_limit(ctx, self.B)  # issue 13: B > D
        memory = self.memory(c)
        bd = self._with_input(bd, assignment)
        if self.p > ctx.system.total_gpus:
            limits.insert(
                0,
                Limit(
                    "gpus", f"needs {self.p} GPUs; {ctx.system.name} has {ctx.system.total_gpus}"
                ),
            )
        if memory > ctx.system.gpu_memory_bytes:
            limits.append(
                Limit(
                    "memory",
                    f"needs {fmt_gb(memory)} of {fmt_gb(ctx.system.gpu_memory_bytes)} GPU memory",
                )
            )
        main = _main_distribution(assignment, self.fb[rows, c])
        kinds = sorted({d.label for d in assignment})
        point = Point(
            model=ctx.model.name,
            system=ctx.system.name,
            strategy=STRATEGY,
            gpus=self.p,
            p1=main.p1,
            p2=main.p2,
            global_batch=self.B,
            segments=None,
            iterations_per_epoch=self.I,
            breakdown=bd,
            memory_bytes=memory,
            limits=tuple(limits),
            details=(
                ("distributions", tuple(kinds)),
                ("redistribution_s", float(redis.sum())),
                ("gradient_groups", tuple(sorted(grad))),
            ),
            profile_kind=ctx.profile_kind,
            memory_model=ctx.memory_model,
            compute_conversion=ctx.conversion_label(self.B / self.p),
        )
        return Assessment(
            point=point,
            assignment=assignment,
            compute_s=compute,
            comm_s=halo + lc,
            halo_s=halo,
            redistribution_s=redis,
            memory_bytes=mem,
            gradient_s=grad,
            gradient_bytes=gbytes,
            layer_limits=layer_limits,
        )

    def _with_input(self, bd: Breakdown, assignment: tuple[Dist, ...]) -> Breakdown:
        """Exposed input stall (docs/cost-model.md) when the system describes its input pipeline:
        loaders as for the distribution of the layers reading the data."""
        ctx = self.ctx
        pipe = ctx.system.input
        if pipe is None or self.B <= 0:
            return bd
        from dataclasses import replace

        from oracle.compute.io import EVERY_GPU, LEADER, PER_GROUP, exposed, input_time

        first = next(
            (
                assignment[i]
                for i, layer in enumerate(ctx.model.layers)
                if MODEL_INPUT in layer.inputs
            ),
            assignment[0],
        )
        kind = EVERY_GPU if first.kind == "data" else (LEADER if first.p1 == 1 else PER_GROUP)
        t_io = input_time(
            pipe, kind, self.B, self.p, first.p1, first.p2, ctx.system.gpus_per_node,
            ctx.model.dataset_bytes_per_sample,
        )  # fmt: skip
        busy = (bd.compute_s + bd.communication_s) / self.I
        return replace(bd, input_s=self.I * exposed(pipe, t_io, busy))

    def choice_of(self, assignment: Sequence[Dist]) -> list[int]:
        """Distribution indices of an assignment (adding unknown distributions is not
        possible here: build Costs with them)."""
        return [self.index[d] for d in assignment]


def _split_fb(ctx: Context, split: np.ndarray, D: float, p1: int, p2: int, I: float, B: float) -> np.ndarray:
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


def _flows(p1: int, p2: int, gpn: int) -> int:
    from oracle.compute.network import data_group_flows_per_node

    return data_group_flows_per_node(p1, p2, gpn)


def _edges(ctx: Context) -> list[tuple[int, int]]:
    """(producer, consumer) for every tensor a layer reads from another layer."""
    out = []
    index = ctx.model.index
    for j, layer in enumerate(ctx.model.layers):
        for name in layer.inputs:
            if name != MODEL_INPUT:
                out.append((index[name], j))
    return out


def _main_distribution(assignment: Sequence[Dist], fb: np.ndarray) -> Dist:
    """The distribution that carries the most forward/backward time."""
    share: dict[Dist, float] = {}
    for d, t in zip(assignment, fb):
        share[d] = share.get(d, 0.0) + float(t)
    return max(share, key=lambda d: (share[d], d == assignment[0]))


def evaluate(ctx: Context, p: int, batch: float, assignment: Sequence[Dist]) -> Assessment:
    """Cost of a layer-wise assignment (one distribution per layer, in model order)."""
    if len(assignment) != ctx.G:
        raise ValueError(f"{len(assignment)} distributions for {ctx.G} layers")
    dists = sorted(set(assignment), key=_order)
    costs = Costs(ctx, p, batch, dists)
    return costs.assess(costs.choice_of(assignment))


def _order(d: Dist) -> tuple:
    return (KINDS.index(d.kind), d.p2)


def uniform(ctx: Context, d: Dist) -> list[Dist]:
    return [d] * ctx.G
