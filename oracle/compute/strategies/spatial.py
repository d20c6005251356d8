"""Spatial parallelism (ParaDL §3.2, Table 3 row "Spatial", Appendix eq. 8-10; Dryden et
al. IPDPS 2019 §III-B): the spatial extents of every layer up to the last one with a
spatial output are split; the fc head runs replicated after an all-gather."""

from __future__ import annotations

import bisect
import math
from typing import TYPE_CHECKING

import numpy as np

from oracle.compute.context import Context
from oracle.compute.cost import Breakdown, Limit, Phase, Point
from oracle.compute.engine import per_context
from oracle.compute.layers.geometry import balanced_grid, halo_half_widths
from oracle.compute.network import (
    Collective,
    allgather_algorithm,
    allreduce_algorithm,
    contention_factor,
    group_contiguous,
    link,
    p2p,
    span_neighbours,
)
from oracle.compute.overlap import exposed_halo
from oracle.compute.strategies.base import (
    Config,
    LayerwiseKind,
    MemoryParts,
    Strategy,
    Style,
    make_point,
    nccl_nodes_detail,
    overlap_details,
    overlapped_gradients,
    register,
)
from oracle.model import SPATIAL_TYPES
from oracle.vocabulary import PARADL

if TYPE_CHECKING:
    from oracle.compute.layerwise.layerwise_build import Columns, Registry


# -- spatial decomposition and halos ---------------------------------------------------


def halo_layers(ctx: Context) -> dict[str, np.ndarray]:
    """Split conv/pool layers: kernel half-widths and extents, for halo sizes (once per
    context)."""
    cache = ctx.__dict__.setdefault("_halo_layers", {})
    if not cache:
        cache.update(_halo_rows(ctx))
    return cache


def _halo_rows(ctx: Context) -> dict[str, np.ndarray]:
    mask = ctx.split(Spatial.name).mask
    rows = []
    for i, (layer, info) in enumerate(zip(ctx.model.layers, ctx.model.info)):
        if not mask[i] or layer.type not in SPATIAL_TYPES:
            continue
        xin = info.input_shapes[0]
        rows.append((i, halo_half_widths(layer, len(xin) - 1), xin[1:], info.output_shape[1:], xin[0], info.output_shape[0]))
    if not rows:
        return {"index": np.zeros(0, dtype=int)}
    return {
        "index": np.array([r[0] for r in rows]),
        "half": np.array([r[1] for r in rows], dtype=float),
        "X": np.array([r[2] for r in rows], dtype=float),
        "Y": np.array([r[3] for r in rows], dtype=float),
        "C": np.array([r[4] for r in rows], dtype=float),
        "F": np.array([r[5] for r in rows], dtype=float),
    }


@per_context  # issue 29: once per grid in a sweep (compute/engine.py)
def spatial_grid(ctx: Context, p: int) -> tuple[int, ...]:
    """p split over the spatial dimensions as evenly as possible, larger factors on
    earlier dimensions (docs/cost-model.md: p=8 on 2-D is 4 x 2)."""
    if ctx.system.implementation.spatial_decomposition == "strips":
        return (p,) + (1,) * (ctx.model.spatial_dims - 1)
    return balanced_grid(p, ctx.model.spatial_dims)


@per_context  # issue 29: once per grid in a sweep (compute/engine.py)
def halo_elements(ctx: Context, grid: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Per split conv/pool layer: halo(x_l) and halo(dy_l) in elements of one sample.

    docs/cost-model.md: for each split dimension with factor f > 1, 2·floor(K/2)·(product of the
    other dimensions' local extents ceil(extent/factor))·C_l; likewise on the output
    extents with F_l for dy.  Only kernels > 1 have halos (floor(1/2) = 0).
    """
    h = halo_layers(ctx)
    if h["index"].size == 0:
        z = np.zeros(0)
        return z, z
    f = np.array(grid, dtype=float)
    split = f > 1

    def side(extents: np.ndarray, channels: np.ndarray) -> np.ndarray:
        local = np.ceil(extents / f)
        prod_all = local.prod(axis=1)
        others = prod_all[:, None] / local
        return channels * (2.0 * h["half"] * others * split).sum(axis=1)

    hx, hdy = side(h["X"], h["C"]), side(h["Y"], h["F"])
    hx.flags.writeable = hdy.flags.writeable = False  # cached per grid: shared by every caller
    return hx, hdy


def spatial_violations(ctx: Context, grid: tuple[int, ...]) -> list[str]:
    """Reasons why a spatial grid does not fit: each factor must be <= that extent
    of every split conv/pool output (docs/cost-model.md limits)."""
    h = halo_layers(ctx)
    if h["index"].size == 0:
        return []
    minima = _running_minima(ctx)
    if len(grid) != len(minima):  # one factor for every dimension (numpy's broadcasting)
        bad = (h["Y"] < np.array(grid, dtype=float)).any(axis=1)
        first = int(np.flatnonzero(bad)[0]) if bad.any() else len(bad)
    else:  # issue 29: a sweep's rows ask it for every grid; bisection, not arrays
        first = min(bisect.bisect_right(m, -f) for m, f in zip(minima, grid))
    if first == len(h["index"]):
        return []
    i = int(h["index"][first])
    out_shape = "x".join(str(int(v)) for v in h["Y"][first])
    return [
        f"spatial split {'x'.join(map(str, grid))} exceeds the {out_shape} output of"
        f" {ctx.names[i]}"
    ]


@per_context
def _running_minima(ctx: Context) -> list[list[float]]:
    """Per spatial dimension, minus the smallest output extent of the split layers up to
    each (ascending): the first layer an extent below f splits too finely is the first
    entry above -f."""
    return [(-np.minimum.accumulate(y)).tolist() for y in halo_layers(ctx)["Y"].T]


@per_context  # issue 29: once per (group, samples) in a sweep (compute/engine.py)
def halo_time(ctx: Context, q: int, b: float) -> tuple[float, float, tuple[int, ...]]:
    """Per-iteration halo exchange of a spatial group of q GPUs holding b samples:
    (exposed, total, grid).

    docs/cost-model.md / ParaDL eq. 10: 2 Σs (2α + b·δ·(halo(x_l) + halo(dy_l))·β), over the split
    conv/pool layers that have a halo (kernel > 1 in a split dimension); α/β of the
    slowest neighbour pair (operation "halo", which a system may route over MPI).  Per
    layer the forward exchanges 2(α + b·δ·halo(x)·β), the backward 2(α + b·δ·halo(dy)·β);
    with --overlap buckets each hides behind the layer's own local compute (Dryden et
    al. §V-B), exposed = max(0, halo - compute).
    """
    grid = spatial_grid(ctx, q)
    if q <= 1:
        return 0.0, 0.0, grid
    hx, hdy = halo_elements(ctx, grid)
    has = (hx + hdy) > 0
    if not has.any():
        return 0.0, 0.0, grid
    lk = link(ctx.system, span_neighbours(q, ctx.system.gpus_per_node), "halo")
    t_fw = halo_exchange(ctx, grid, 2 * np.asarray(p2p(b * ctx.delta * hx[has], lk)))
    t_bw = halo_exchange(ctx, grid, 2 * np.asarray(p2p(b * ctx.delta * hdy[has], lk)))
    total = float(np.sum(t_fw) + np.sum(t_bw))
    if ctx.options.overlap == "none":
        return total, total, grid
    idx = halo_layers(ctx)["index"][has]
    exposed = exposed_halo(t_fw, b / q * ctx.fw[idx]).sum() + exposed_halo(t_bw, b / q * ctx.bw[idx]).sum()
    return float(exposed), total, grid


@per_context  # issue 29: once per (group, samples) in a sweep (compute/engine.py)
def spatial_limits(ctx: Context, grid: tuple[int, ...]) -> list[Limit]:
    return [Limit(Spatial.name, r) for r in spatial_violations(ctx, grid)]


def halo_exchange(ctx: Context, grid: tuple[int, ...], concurrent):
    """A layer's halo exchange: concurrent (docs/cost-model.md), or with ``implementation:
    halo_chain`` a serialized neighbour chain — f-1 hops of it, f the largest split
    factor, plus ``halo_sync_s`` of device synchronization each (never faster)."""
    impl = ctx.system.implementation
    if not impl.halo_chain:
        return concurrent
    return np.asarray(concurrent) * max(1, max(grid) - 1) + impl.halo_sync_s


@per_context  # issue 29: once per (group, samples) in a sweep (compute/engine.py)
def gather_tail(ctx: Context, q: int, b: float) -> float:
    """All-gather of the last split layer's output before the replicated head:
    AG(q, δ·b·y_last/q) (docs/cost-model.md)."""
    s = ctx.split(Spatial.name)
    if not tail_gather_groups(ctx, q):
        return 0.0
    group = group_contiguous(q, ctx.system.gpus_per_node)
    return allgather_algorithm(ctx.system, group, ctx.delta * b * ctx.y[s.last] / q, ctx.algorithm,
                               purpose="tail_gather")[0]  # fmt: skip


def tail_gather_groups(ctx: Context, q: int) -> tuple:
    """The network.Collective of :func:`gather_tail` over q GPUs, none where the split
    ends with the model or there is none (base.nccl_nodes_detail)."""
    s = ctx.split(Spatial.name)
    if q <= 1 or s.last < 0 or s.last == ctx.G - 1:
        return ()
    return (Collective(group_contiguous(q, ctx.system.gpus_per_node), ctx.algorithm, "tail_gather"),)


def spatial_memory(ctx: Context, grid: tuple[int, ...], paradl_act: float, group: int, n_split: float, n_rest: float) -> MemoryParts:
    """Memory parts of a spatial split: ParaDL's activation term, and for the framework
    model n_split samples' tiles of the split layers, n_rest whole samples of the
    replicated head, the halo rows each split conv/pool layer appends to its saved
    input (Dryden et al. §V-B), and the gathered input of the head (all-gather tail)."""
    s = ctx.split(Spatial.name)
    # halo(x_l) is per sample of the tiles a GPU holds: n_rest samples (B, or B/p1)
    extra = n_rest * float(halo_elements(ctx, grid)[0].sum())
    if 0 <= s.last < ctx.G - 1 and math.prod(grid) > 1:
        extra += n_rest * float(ctx.y[s.last])
    return MemoryParts(paradl_act, ctx.sum_w, data_group=group, split=s.mask,
                       split_samples=n_split, rest_samples=n_rest, extra_elements=extra)  # fmt: skip


# -- as a per-layer distribution (compute/layerwise/layerwise.py) --------------------------------


def fill_spatial(ctx: Context, cols: Columns, reg: Registry, k: int, d, B: float) -> None:
    """spatial p1 x p2: the split layers' samples over p1 groups, their extents over p2;
    the rest replicated in the group (compute/layerwise/layerwise.py)."""
    p, p1, p2, D, I = d.gpus, d.p1, d.p2, ctx.D, ctx.D / B
    s = ctx.split(Spatial.name).mask
    act = ctx.layer_memory_elements()
    cols.fb[:, k] = ctx.layer_split_fb(s, D, p1, p2, I, B)
    cols.wu[:, k] = I * ctx.wu
    cols.mem[:, k] = np.where(s, 2 * B / p, 2 * B / p1) * act + 2 * ctx.w
    cols.held[:, k] = np.where(s, B / p, B / p1)
    cols.gbytes[:, k] = ctx.grad_delta * ctx.w
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
    halos(ctx, cols, reg, k, p2, B / p1, I)


def halos(ctx: Context, cols: Columns, reg: Registry, k: int, p2: int, b: float, I: float) -> None:
    """Halo exchange of split conv/pool layers (ParaDL eq. 10, Dryden §V-A), the grid
    limits, and with the framework memory model what the spatial strategies hold beyond
    the tiles (spatial_memory): the halo rows each split conv/pool layer appends to its
    saved input (Dryden et al. §V-B), b·halo(x_l), and the gathered input of the
    replicated head, b·y_last, counted with the last split layer; in column k of the
    per-layer costs."""
    halo_rows = halo_layers(ctx)  # split conv/pool layers (kernel half-widths, extents)
    grid = spatial_grid(ctx, p2)
    framework = ctx.memory_model != PARADL
    last = ctx.split(Spatial.name).last
    if framework and p2 > 1 and 0 <= last < ctx.G - 1:
        cols.mem[last, k] += b * ctx.y[last]
    if not halo_rows["index"].size:
        return
    idx = halo_rows["index"]
    hx, hdy = halo_elements(ctx, grid)
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


@register
class Spatial(Strategy):
    name = "spatial"
    order = 20
    description = "spatial extents of the convolutional part split over p GPUs"
    style = Style("#E69F00", "s")  # orange (Okabe & Ito 2008, as every strategy colour)
    phases = (Phase("halo_s", "communication", "comm: halo exchange", "#DDCC77", ".."),)  # Paul Tol's muted
    layerwise = LayerwiseKind(fill_spatial)
    limit_words = {name: "spatial split too fine"}  # the limit code is the name
    limit_fields = {name: ("gpus",)}
    reports_overlap = True

    def split_layers(self, ctx: Context) -> tuple[np.ndarray, None]:
        """Every layer up to and including the last one whose output still has a spatial
        extent > 1, or --spatial-split-after's (the fc head and what follows run replicated)."""
        mask = np.zeros(ctx.G, dtype=bool)
        mask[: ctx.spatial_last() + 1] = True
        return mask, None

    def parts(self, p: int) -> tuple[int, int]:
        return (1, p)

    def evaluate(self, ctx: Context, cfg: Config) -> Point:
        p, B, D = cfg.gpus, cfg.batch, ctx.D
        I = D / B
        s = ctx.split(self.name)
        # compute = (D/p) Σs(FW+BW) + D Σr(FW+BW) + I ΣWU                   docs/cost-model.md
        fb = ctx.split_compute(s, D, p, I, B / p) + D * ctx.fb_sum(B, s, "r")
        wu = I * ctx.sum_wu
        # communication = AR(p, δΣs w) + halo + AG(p, δ·B·y_last/p)          docs/cost-model.md
        group = group_contiguous(p, ctx.system.gpus_per_node)

        def cost(m):
            return allreduce_algorithm(ctx.system, group, m, ctx.algorithm, contention=ctx.options.contention,
                                       purpose="gradient_allreduce")[0]  # fmt: skip

        ar = cost(ctx.grad_delta * s.w_s)
        hidden = 0.0
        if ctx.options.overlap == "buckets":  # split layers' gradients during the backward
            backward = np.where(s.mask, B / p * ctx.times_at(B / p)[1], B * ctx.times_at(B)[1])
            exposed, total = overlapped_gradients(ctx, backward, np.where(s.mask, ctx.grad_delta * ctx.w, 0.0), [cost])
            ar, hidden = exposed, total - exposed
        ge = I * ar
        halo, halo_total, grid = halo_time(ctx, p, B)
        hidden += halo_total - halo
        lc = I * gather_tail(ctx, p, B)
        # memory / (γδ) = Σs (2B/p)(x+y) + Σr 2B(x+y) + Σ 2w                 docs/cost-model.md
        mem = spatial_memory(ctx, grid, 2 * B / p * s.act_s + 2 * B * s.act_r, p, B / p, B)
        bd = Breakdown(
            forward_backward_s=fb,
            weight_update_s=wu,
            gradient_exchange_s=ge,
            layer_collectives_s=lc,
            halo_s=I * halo,
        )
        details: dict = {"grid": grid, **self._nccl_nodes(ctx, p)}
        if ctx.options.overlap != "none":
            overlap_details(details, bd, I * hidden)
        return make_point(ctx, cfg, bd, mem, self.limits(ctx, cfg), details)

    @staticmethod
    def _nccl_nodes(ctx: Context, p: int) -> dict:
        """base.nccl_nodes_detail of the gradient all-reduce over all p GPUs and the tail gather."""
        group = Collective(group_contiguous(p, ctx.system.gpus_per_node), ctx.algorithm, "gradient_allreduce")
        return nccl_nodes_detail(ctx, group, *tail_gather_groups(ctx, p))

    def brief_details(self, ctx: Context, cfg: Config) -> dict | None:
        """evaluate's details (Strategy.brief_details): halo_time's grid, what NCCL assumed of a
        partly filled NVLink domain."""
        return {"grid": spatial_grid(ctx, cfg.gpus), **self._nccl_nodes(ctx, cfg.gpus)}

    def limits(self, ctx: Context, cfg: Config) -> list[Limit]:
        """The strategy's own limits of a configuration (compute/vector/rows.brief_rows too)."""
        return spatial_limits(ctx, spatial_grid(ctx, cfg.gpus))
