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
    gradients   the layer's δ'·|w_l| (/p2 when its weights are split; δ' = Context.grad_delta)
                joins the fused all-reduce of the GPUs that replicate them: all p (data,
                spatial-split) or the p1 GPUs {j, j+p2, ...} of a data group (AR_φ,
                docs/cost-model.md-4.3), one per group: its latency is paid once per group.
    memory      (2B/p)(x+y) split by samples and space, (2B/p1)(x+y) otherwise, + 2|w_l|
                (/p2 where split); the framework model: the saved tensors of those samples,
                the backward's peak and DDP's buckets (Costs.memory), halo rows and the
                gathered head input under spatial (layerwise_build._halos)

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

Uniform assignments are the uniform strategies to rounding (tests/test_one_path.py; docs/search.md):
all data = data; all spatial 1 x p = spatial, p1 x p2 = data+spatial; all filter 1 x p = filter,
p1 x p2 = data+filter; all channel 1 x p = channel (p1 x p2: a hybrid the sweep does not list).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from oracle.compute.context import Context
from oracle.compute.cost import Breakdown, Limit, Point
from oracle.compute.layerwise.layerwise_build import (
    Columns,
    Registry,
    batch_limit,
    default_kinds,
    kind_names,
    kind_table,
    strategy_kinds,
)  # fmt: skip
from oracle.compute.layerwise.layerwise_overlap import overlapped
from oracle.compute.layerwise.layerwise_shuffle import shuffle_tables
from oracle.compute.memory import assignment_excess_bytes, optimizer_bytes_per_parameter
from oracle.compute.stack import stack_name, with_stack_costs
from oracle.compute.strategies.base import epoch_limit, memory_limit, sample_limit
from oracle.compute.strategies.data import Data
from oracle.model import MODEL_INPUT
from oracle.vocabulary import PARADL

STRATEGY = "layer-wise"


# -- distributions ---------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class Dist:
    """How one layer uses p1·p2 GPUs: all p of the configuration, or (``of`` = p) the
    first p1·p2 of them, a subset whose size divides p (Jia et al. ICML 2018 §4: a
    configuration may use fewer devices; Table 5 puts the last fc layer on 2 of 4)."""

    kind: str
    p1: int
    p2: int
    of: int = 0  # p when the layer runs on a subset of the p GPUs, else 0
    p3: int = 1  # spatial+filter: filters split over p3 as well as space over p2 (Jia et al. §4)

    @property
    def gpus(self) -> int:
        return self.p1 * self.p2 * self.p3

    @property
    def label(self) -> str:
        base = f"{self.kind} {self.p1}×{self.p2}" if kind_table()[self.kind].grid else self.kind
        base += f"×{self.p3}" if self.p3 > 1 else ""
        return f"{base} on {self.gpus}" if self.of else base

    @property
    def short(self) -> str:
        """ASCII label, e.g. 'spatial 4x16' (file comments, CSV)."""
        return self.label.replace("×", "x")

    @staticmethod
    def data(p: int) -> Dist:
        return Dist(Data.name, p, 1)


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
    p: int, kinds: Sequence[str] | None = None, limit: int | None = MAX_GRIDS
) -> list[Dist]:
    """Every distribution of p GPUs of the given kinds (:func:`default_kinds` unless
    given): data, and each grid kind of a strategy at every factorization p1 x p2
    (Gholami et al.'s P_r x P_c grid; p2 = 1 is data); at most ``limit`` grids per kind
    (see :func:`factorizations`)."""
    kinds = default_kinds() if kinds is None else kinds
    own = {n: kind for n, kind in strategy_kinds().items() if n in kinds}
    grids = [n for n, kind in own.items() if kind.grid]
    out = [Dist(n, p, 1) for n, kind in own.items() if not kind.grid]
    for p1, p2 in factorizations(p, limit):
        out += [Dist(n, p1, p2) for n in grids]
    if "replicated" in kinds and p > 1:
        out.append(Dist("replicated", p, 1))
    if "spatial+filter" in kinds:  # samples x space x filters, p1·p2·p3 = p (Jia et al. §4, {n, h, w, c})
        for p1, q in factorizations(p, limit):
            out += [Dist("spatial+filter", p1, p2, p3=q // p2) for p2 in divisors(q) if 2 <= p2 <= q // 2]
    if "subsets" in kinds:
        out += subset_distributions(p, kinds, limit)
    return out


def subset_distributions(p: int, kinds: Sequence[str] | None = None, limit: int | None = MAX_GRIDS) -> list[Dist]:
    """The distributions of every proper divisor q of p GPUs (the first q GPUs; q = 1:
    one GPU), Jia et al.'s configurations with fewer devices (§4)."""
    kinds = default_kinds() if kinds is None else kinds
    out = []
    for q in divisors(p)[:-1]:
        for d in distributions(q, [k for k in kinds if k not in ("replicated", "subsets")], limit) or [Dist.data(q)]:
            out.append(Dist(d.kind, d.p1, d.p2, of=p, p3=d.p3))
    return out


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
            if d.gpus != p and not (d.of == p and p % d.gpus == 0):
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
        """Per-GPU bytes of an assignment: its layers' tensors (gradients Context.grad_delta wide), and with
        the framework model the backward's peak and DDP's gradient buckets, through Context.memory_total."""
        c = np.asarray(choice, dtype=int)
        rows = np.arange(self.G)
        ctx = self.ctx
        weights = self._weights_held(rows, c)
        scale = ctx.gamma if ctx.memory_model == PARADL else 1.0
        # optimizer state and master copy (memory._weight_parts), fp32 gradients beyond cols.mem's δ-wide ones
        extra = scale * (optimizer_bytes_per_parameter(ctx.options) + ctx.grad_delta - ctx.delta) * weights
        tensors = float(self.mem_bytes[rows, c].sum()) + extra
        if ctx.memory_model == PARADL:
            return ctx.memory_total(tensors)
        trans = assignment_excess_bytes(ctx.saved_per_sample, ctx.transient, ctx.delta, self.held[rows, c])
        reduced = (self.grad_class[rows, c] >= 0) & ctx.system.framework.gradient_bucket_copy
        buckets = float(self.grad_bytes[rows, c][reduced].sum())
        return ctx.memory_total(tensors + trans + buckets)

    def _weights_held(self, rows, c) -> float:
        """Parameters a GPU holds (and computes gradients of): w/p2 where split (its
        all-reduced gradients' share), w where replicated (no gradients all-reduced)."""
        ctx = self.ctx
        return float(np.sum(np.where(self.gather[rows, c] > 0, ctx.w, self.grad_bytes[rows, c] / ctx.grad_delta)))

    # -- construction ------------------------------------------------------------------
    def _build(self) -> None:
        """Fill the (layers x distributions) arrays, one kind at a time
        (compute/layerwise/layerwise_build.py)."""
        ctx, I = self.ctx, self.I
        cols = Columns.empty(self.G, self.nd)
        reg = Registry(ctx, self.p)
        table = kind_table()
        for k, d in enumerate(self.dists):
            batch_limit(cols, k, table[d.kind].grid, d.p1, self.B)
            table[d.kind].fill(ctx, cols, reg, k, d, self.B)
        self.reasons, self.groups = cols.reasons, reg.groups
        self.fb, self.wu, self.halo, self.lc = cols.fb, cols.wu, cols.halo, cols.lc
        self.gather = cols.gather  # replicated layers' all-gathers (bytes per GPU), to overlap
        self.mem_elements = cols.mem
        self.mem_bytes = ctx.memory_scale() * cols.mem
        self.held = cols.held  # samples each layer holds (the backward's peak, memory.assignment_excess_bytes)
        self.grad_bytes = cols.gbytes
        self.grad_class = cols.gclass
        self.split, self.partial = cols.split, cols.partial
        self.feasible = cols.feasible
        self.layout = cols.lay
        self.layouts = reg.layouts
        # gradient bytes join a fused all-reduce: bandwidth part per layer (additive),
        # latency once per group (see search.py)
        slopes = np.array([g.slope for g in self.groups] + [0.0])
        self.grad_time = I * slopes[cols.gclass] * cols.gbytes  # gclass -1 picks the trailing 0
        self.compute = cols.fb + cols.wu
        self.node_time = self.compute + cols.halo + cols.lc + self.grad_time
        self.group_latency = I * np.array([g.latency for g in self.groups])
        self._shuffle_tables()

    # -- redistribution ------------------------------------------------------------------
    def _shuffle_tables(self) -> None:
        """Per ordered pair of layouts (A -> B): compute/layerwise/layerwise_shuffle.py."""
        self.shuffle_lat, self.shuffle_slope, self.shuffle_recv, self.shuffle_kind = shuffle_tables(
            self.ctx, self.p, self.B, self.layouts)

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
        la = self.layout[src][:, :, None]
        lb = self.layout[dst][:, None, :]
        # shuffle_time's sums and minimum, once per distinct tensor size on the (layouts x
        # layouts) tables, then picked per edge: the same values, fewer of them computed
        sizes, which = np.unique(np.asarray(self.ctx.y, dtype=float)[src], return_inverse=True)
        table = (self.shuffle_lat[:, None] + sizes[None, :, None, None] * self.shuffle_slope[:, None]).min(axis=0)
        L = table.shape[-1]
        table[:, np.arange(L), np.arange(L)] = 0.0  # the same layout: nothing moves
        at = which.reshape(-1, 1, 1) * (L * L) + la * L + lb
        fwd = table.take(at)
        bwd = np.ascontiguousarray(table.transpose(0, 2, 1)).take(at)  # lb -> la
        part = self.partial[dst][:, None, :]
        bwd = np.where(part, np.maximum(fwd, bwd), bwd)  # equal layouts: both 0
        return self.I * (fwd + bwd)

    # -- evaluation ----------------------------------------------------------------------
    def assess(self, choice: Sequence[int]) -> Assessment:
        """Cost of one assignment (a distribution index per layer)."""
        G = self.G
        c = np.asarray(choice, dtype=int)
        rows = np.arange(G)
        halo = self.halo[rows, c]
        lc = self.lc[rows, c]
        redis = self._redistribution(c)
        grad, ge = self._gradients(c)
        hidden, lc_sum = None, float(lc.sum())
        if ctx_overlaps(self.ctx):  # issue 18: overlap inside a per-layer configuration
            exposed, total = overlapped(self, c)  # compute/layerwise/layerwise_overlap.py
            ge, hidden = self.I * exposed, self.I * (total - exposed)
            lc_sum -= float(lc[self.gather[rows, c] > 0].sum())  # the replicated layers' gathers: in the timeline
        bd = Breakdown(
            forward_backward_s=float(self.fb[rows, c].sum()),
            weight_update_s=float(self.wu[rows, c].sum()),
            gradient_exchange_s=ge,
            layer_collectives_s=lc_sum + float(redis.sum()),
            halo_s=float(halo.sum()),
        )
        assignment = tuple(self.dists[k] for k in c)
        layer_limits = [(l, self.reasons.get((l, int(c[l])), "infeasible")) for l in np.flatnonzero(~self.feasible[rows, c])]
        memory, ctx = self.memory(c), self.ctx
        bd = self._with_input(with_stack_costs(ctx.options, self.p, self.I, len(ctx.model.layers), bd,
                                               ctx.profile_kind == "estimated"), assignment)  # fmt: skip
        point = self._point(c, assignment, bd, memory, self._limits(c, layer_limits, memory), redis, grad, hidden)
        return Assessment(
            point=point,
            assignment=assignment,
            compute_s=self.compute[rows, c],
            comm_s=halo + lc,
            halo_s=halo,
            redistribution_s=redis,
            memory_bytes=self.mem_bytes[rows, c],
            gradient_s=grad,
            gradient_bytes=self.grad_bytes[rows, c],
            layer_limits=layer_limits,
        )

    def _redistribution(self, c: np.ndarray) -> np.ndarray:
        """Per consumer layer, per epoch: the shuffles of its inputs (forward and backward)."""
        redis = np.zeros(self.G)
        for i, j in self.edges:
            la, lb = self.layout[i, c[i]], self.layout[j, c[j]]
            if la == lb:
                continue
            y = self.ctx.y[i]
            fwd = float(self.shuffle_time(la, lb, y))
            bwd = float(self.shuffle_time(lb, la, y))
            if self.partial[j, c[j]]:
                bwd = max(fwd, bwd)
            redis[j] += self.I * (fwd + bwd)
        return redis

    def _gradients(self, c: np.ndarray) -> tuple[dict[str, float], float]:
        """Per gradient group its fused all-reduce per epoch, and their sum."""
        rows = np.arange(self.G)
        gbytes = self.grad_bytes[rows, c]
        gcls = self.grad_class[rows, c]
        grad: dict[str, float] = {}
        ge = 0.0
        for k, grp in enumerate(self.groups):
            used = (gcls == k) & (gbytes > 0)
            if used.any():
                t = self.I * float(grp.cost(float(gbytes[used].sum())))
                grad[grp.label] = grad.get(grp.label, 0.0) + t
                ge += t
        return grad, ge

    def _limits(self, c: np.ndarray, layer_limits, memory: float) -> list[Limit]:
        ctx = self.ctx
        limits = []
        if layer_limits:
            l, why = layer_limits[0]
            more = f" (and {len(layer_limits) - 1} more layers)" if len(layer_limits) > 1 else ""
            limits.append(Limit("layer", f"{ctx.names[l]} under {self.dists[c[l]].label}: {why}{more}"))
        limits += sample_limit(self.B) + epoch_limit(ctx, self.B)  # a whole batch; issue 13: B > D
        if self.p > ctx.system.total_gpus:
            limits.insert(0, Limit("gpus", f"needs {self.p} GPUs; {ctx.system.name} has {ctx.system.total_gpus}"))
        if memory > ctx.system.gpu_memory_bytes:
            limits.append(memory_limit(ctx.system, memory))
        return limits

    def _point(self, c, assignment, bd: Breakdown, memory: float, limits, redis, grad, hidden=None) -> Point:
        ctx = self.ctx
        main = _main_distribution(assignment, self.fb[np.arange(self.G), c])
        details = [
            ("distributions", tuple(sorted({d.label for d in assignment}))),
            ("redistribution_s", float(redis.sum())),
            ("gradient_groups", tuple(sorted(grad))),
        ]
        if hidden is not None:
            from oracle.compute.strategies.base import overlap_details

            details += list(overlap_details({}, bd, hidden).items())
        return Point(
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
            details=tuple(details),
            profile_kind=ctx.profile_kind,
            memory_model=ctx.memory_model,
            compute_conversion=ctx.conversion_label(self.B / self.p),
            stack=stack_name(ctx.options),
        )

    def _with_input(self, bd: Breakdown, assignment: tuple[Dist, ...]) -> Breakdown:
        """Exposed input stall (docs/cost-model.md) when the system describes its input pipeline:
        loaders as for the distribution of the layers reading the data."""
        ctx = self.ctx
        pipe = ctx.system.input
        if pipe is None or self.B <= 0:
            return bd
        from oracle.compute.io import EVERY_GPU, LEADER, PER_GROUP, exposed, input_time

        readers = (assignment[i] for i, layer in enumerate(ctx.model.layers) if MODEL_INPUT in layer.inputs)
        first = next(readers, assignment[0])
        kind = EVERY_GPU if first.kind == Data.name else (LEADER if first.p1 == 1 else PER_GROUP)
        t_io = input_time(
            pipe, kind, self.B, self.p, first.p1, first.p2, ctx.system.gpus_per_node,
            ctx.model.dataset_bytes_per_sample,
        )  # fmt: skip
        busy = (bd.compute_s + bd.communication_s) / self.I
        return bd.replace(input_s=self.I * exposed(pipe, t_io, busy))

    def choice_of(self, assignment: Sequence[Dist]) -> list[int]:
        """Distribution indices of an assignment (adding unknown distributions is not
        possible here: build Costs with them)."""
        return [self.index[d] for d in assignment]


def ctx_overlaps(ctx: Context) -> bool:
    """Whether the options ask for overlap (--overlap buckets)."""
    return getattr(ctx.options, "overlap", "none") == "buckets"


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
    dists = sorted(set(assignment), key=dist_order)
    costs = Costs(ctx, p, batch, dists)
    return costs.assess(costs.choice_of(assignment))


def dist_order(d: Dist) -> tuple:
    return (d.of != 0, -d.gpus, kind_names().index(d.kind), d.p2)


def uniform(ctx: Context, d: Dist) -> list[Dist]:
    return [d] * ctx.G
