"""Spatial and data+spatial parallelism over many configurations at once (issue 29;
compute/strategies/spatial.py and data_spatial.py point by point, the equations cited
there).  What depends on the spatial group only — its grid, halo exchange, tail gather,
grid limits and halo memory, functions of the group size q and its samples b — is
computed once per distinct (q, b), in blocks of (groups x halo layers) arrays; the
grid itself (spatial.spatial_grid) once per distinct q."""

from __future__ import annotations

import math

import numpy as np

from oracle.compute.strategies.spatial import Spatial, halo_layers, spatial_grid
from oracle.compute.vector import collectives as coll
from oracle.compute.vector import net
from oracle.compute.vector import overlap as voverlap
from oracle.compute.vector.columns import Columns, memory_total, per_value, split_compute, unique_pairs

ROWS_PER_BLOCK = 2048  # groups per block of the (groups x halo layers) arrays


def group_costs(ctx, q: np.ndarray, b: np.ndarray) -> dict[str, np.ndarray]:
    """Per entry, of its spatial group of q GPUs holding b samples: halo seconds per
    iteration, exposed and total (spatial.halo_time), the tail all-gather (spatial.gather_tail), whether
    the grid is too fine (spatial.spatial_violations), the halo elements of one sample's
    saved inputs and whether the head's input is gathered (spatial.spatial_memory);
    the grid's halo elements once per distinct q, the seconds once per distinct (q, b)."""
    qs, bs, inv = unique_pairs(q, b)
    gq, at = np.unique(qs, return_inverse=True)  # the distinct groups; entry k's is gq[at[k]]
    h = halo_layers(ctx)
    grids, g = _per_group(ctx, h, gq)
    out = {"halo": np.zeros(qs.size), "halo_total": np.zeros(qs.size), "tail": grids.prod(axis=1)[at] > 1}
    out["halo_x"] = g["halo_x"][at] if g else np.zeros(qs.size)
    out["bad"] = g["bad"][at] if g else np.zeros(qs.size, dtype=bool)
    for lo in range(0, qs.size if g else 0, ROWS_PER_BLOCK):
        block = slice(lo, lo + ROWS_PER_BLOCK)
        out["halo"][block], out["halo_total"][block] = _halo_block(ctx, h, g, qs[block], bs[block], grids, at[block])
    s = ctx.split(Spatial.name)
    out["tail"] &= 0 <= s.last < ctx.G - 1
    out["gather"] = np.zeros(qs.size)
    if 0 <= s.last < ctx.G - 1:  # AG(q, δ·b·y_last/q) before the replicated head
        m = ctx.delta * bs * ctx.y[s.last] / qs
        out["gather"] = coll.allgather(ctx, qs, m, 1.0, "tail_gather")
    return {k: v[inv] for k, v in out.items()}


def _per_group(ctx, h, gq: np.ndarray) -> tuple[np.ndarray, dict | None]:
    """The grids of the group sizes gq (sorted, distinct) and their :func:`_grid_halos`;
    kept on the context for the next call whose sizes are among them (data+spatial's
    groups after spatial's)."""
    known = ctx.__dict__.get("_vector_grid_halos")
    if known is not None and known[0].size:
        at = np.minimum(np.searchsorted(known[0], gq), known[0].size - 1)
        if (known[0][at] == gq).all():
            return known[1][at], None if known[2] is None else {k: v[at] for k, v in known[2].items()}
    grids = _grids(ctx, gq)
    g = None
    if h["index"].size and gq.size:  # in blocks of grids: the (grids x layers x dims) temporaries stay small
        parts = [_grid_halos(h, grids[lo:lo + ROWS_PER_BLOCK]) for lo in range(0, gq.size, ROWS_PER_BLOCK)]
        g = {k: np.concatenate([part[k] for part in parts]) for k in parts[0]}
    ctx.__dict__["_vector_grid_halos"] = (gq, grids, g)
    return grids, g


def _grids(ctx, gq: np.ndarray) -> np.ndarray:
    """spatial.spatial_grid of every group size in gq, a row each; two dimensions split
    as a grid at once: (q/d, d) with d the largest divisor of q with d·d <= q
    (layers/geometry.balanced_grid's own answer), the other cases one by one."""
    if ctx.model.spatial_dims == 2 and ctx.system.implementation.spatial_decomposition == "grid" and (gq >= 1).all():
        d = np.ones(gq.size, dtype=np.int64)
        for k in range(2, math.isqrt(int(gq.max())) + 1 if gq.size else 0):
            d = np.where((gq % k == 0) & (k * k <= gq), k, d)
        return np.stack([gq // d, d], axis=1).astype(float)
    return np.array([spatial_grid(ctx, int(x)) for x in gq.tolist()], dtype=float).reshape(gq.size, -1)


def _distinct_layers(h) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The distinct split layers of h (kernel, extents, channels: ResNet-152's 156 are
    24), as h's arrays, and each layer's row among them."""
    keys = ("half", "X", "Y", "C", "F")
    rows = np.concatenate([h[k].reshape(h[k].shape[0], -1) for k in keys], axis=1)
    distinct, inv = np.unique(rows, axis=0, return_inverse=True)
    cut = np.cumsum([0] + [h[k][0].size for k in keys])
    return {k: distinct[:, cut[i]:cut[i + 1]].reshape(-1, *h[k].shape[1:]) for i, k in enumerate(keys)}, inv.reshape(-1)


def _grid_halos(h, f) -> dict[str, np.ndarray]:
    """spatial.halo_elements and spatial_violations of every grid (a row of f): halo(x)
    and halo(dy) per distinct split layer (:func:`_distinct_layers`), their sum over the
    layers, which layers' are nonzero, too fine; each element's operations unchanged."""
    u, layer = _distinct_layers(h)
    hx, hdy, bad = _layer_halos(u, f)
    every_x, every_dy = hx.take(layer, axis=1), hdy.take(layer, axis=1)  # C order, as before ([:, layer] is F)
    return {"hx": hx, "hdy": hdy, "halo_x": every_x.sum(axis=1), "bad": bad, "has": (every_x + every_dy) > 0}


def _layer_halos(h, f) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """halo(x), halo(dy) per grid (a row of f) and layer of h, and whether a grid is too fine."""
    local_x, local_y = np.ceil(h["X"][None] / f[:, None]), np.ceil(h["Y"][None] / f[:, None])
    split = (f > 1)[:, None]

    def side(local, channels):
        others = _over_dims(local, np.multiply)[:, :, None] / local
        return channels * _over_dims(2.0 * h["half"] * others * split, np.add)

    hx, hdy = side(local_x, h["C"]), side(local_y, h["F"])
    return hx, hdy, _over_dims(h["Y"][None] < f[:, None], np.logical_or).any(axis=1)


def _over_dims(x: np.ndarray, op) -> np.ndarray:
    """op.reduce over the last axis (the spatial dimensions); two of them as one
    elementwise op(x0, x1): the same bits (IEEE addition and multiplication commute),
    without numpy's slow reduce over a short axis."""
    return op(x[..., 0], x[..., 1]) if x.shape[-1] == 2 else op.reduce(x, axis=-1)


def _halo_block(ctx, h, g, q, b, grids, at) -> tuple[np.ndarray, np.ndarray]:
    """spatial.halo_time (exposed, total) for a block of (q, b) groups, ``at`` their
    grids' rows of g (without overlap: the total twice)."""
    f = grids[at]
    gpn = ctx.system.gpus_per_node
    span = np.where(q <= 1, 1, np.where(q <= gpn, 2, 2 * gpn))[:, None]  # network.span_neighbours
    has = g["has"][at]
    t = total = 0.0
    hidden = ctx.options.overlap != "none"  # each layer's halo behind its local compute (spatial.halo_time)
    layer = _distinct_layers(h)[1]  # the halos per distinct layer, spread to the layers in C order
    for elements, own in ((g["hx"][at], ctx.fw), (g["hdy"][at], ctx.bw)):  # forward: halo(x); backward: halo(dy)
        x = _chain(ctx, f, 2 * net.p2p(ctx.system, span, b[:, None] * ctx.delta * elements, "halo")).take(layer, axis=1)
        total = total + _row_sums(x, has)
        if hidden:  # overlap.exposed_halo: max(0, halo - (b/q)·own time)
            t = t + _row_sums(np.maximum(0.0, x - (b / q)[:, None] * own[h["index"]][None, :]), has)
    total = np.where(q > 1, total, 0.0)
    return (np.where(q > 1, t, 0.0) if hidden else total), total


def _row_sums(x: np.ndarray, has: np.ndarray) -> np.ndarray:
    """Each row's sum of its ``has`` entries as spatial.halo_time's np.sum adds them (on
    the entries alone: numpy's pairwise sum groups them by their count), so that the
    arrays' halo equals the per-point path's to the last bit (rows.brief_rows builds
    rows from these columns).  Rows of one pattern of ``has`` are summed together: a
    sum along the last axis of a C-ordered array adds each row as a 1-D sum does."""
    out, ids = np.zeros(x.shape[0]), {}
    which = np.array([ids.setdefault(r.tobytes(), len(ids)) for r in np.packbits(has, axis=1)], dtype=np.int64)
    for k in range(len(ids)):
        rows = np.flatnonzero(which == k)
        keep = np.flatnonzero(has[rows[0]])
        out[rows] = np.ascontiguousarray(x[np.ix_(rows, keep)]).sum(axis=1)
    return out


def _chain(ctx, f, concurrent):
    """spatial.halo_exchange: concurrent, or a chain of f_max - 1 hops plus a sync each."""
    impl = ctx.system.implementation
    if not impl.halo_chain:
        return concurrent
    return concurrent * np.maximum(1, f.max(axis=1) - 1)[:, None] + impl.halo_sync_s


def _memory(ctx, g: dict, paradl_act, group, n_split, n_rest, into=None) -> np.ndarray:
    """spatial.spatial_memory's parts, as bytes per GPU."""
    s = ctx.split(Spatial.name)
    extra = n_rest * g["halo_x"]
    if 0 <= s.last < ctx.G - 1:
        extra = np.where(g["tail"], extra + n_rest * float(ctx.y[s.last]), extra)
    return memory_total(ctx, paradl_act, ctx.sum_w, group, n_split, s.mask, n_rest, extra, into=into)


def spatial(ctx, c: Columns) -> list:
    p, B, D = c.gpus, c.batch, ctx.D
    I = D / B
    s = ctx.split(Spatial.name)
    # compute = (D/p) Σs(FW+BW) + D Σr(FW+BW) + I ΣWU                   docs/cost-model.md
    c.phases["forward_backward_s"] = split_compute(ctx, s, D, p, I, B / p) + D * per_value(
        ctx, lambda b: ctx.fb_sum(b, s, "r"), B)  # fmt: skip
    c.phases["weight_update_s"] = I * ctx.sum_wu
    # communication = AR(p, δΣs w) + halo + AG(p, δ·B·y_last/p)          docs/cost-model.md
    ar = coll.prepare(ctx, "allreduce", p, 1.0, "gradient_allreduce")
    if ctx.options.overlap == "buckets":  # split layers' gradients during the backward (spatial.py)
        grads = np.where(s.mask, ctx.grad_delta * ctx.w, 0.0)
        ge, ge_total = voverlap.bucketed(ctx, [ar], lambda _: grads, B / p, B, s.mask)
    else:
        ge = ar(ctx.grad_delta * s.w_s)
    c.phases["gradient_exchange_s"] = I * ge
    g = group_costs(ctx, p, B)
    if ctx.options.overlap == "buckets":  # spatial.py's hidden: the buckets' and the halo's
        c.hidden_s = I * ((ge_total - ge) + (g["halo_total"] - g["halo"]))
    c.phases["layer_collectives_s"] = I * g["gather"]
    c.phases["halo_s"] = I * g["halo"]
    # memory / (γδ) = Σs (2B/p)(x+y) + Σr 2B(x+y) + Σ 2w                 docs/cost-model.md
    c.memory = _memory(ctx, g, 2 * B / p * s.act_s + 2 * B * s.act_r, p, B / p, B, into=c)
    return [(Spatial.name, g["bad"])]


def data_spatial(ctx, c: Columns) -> list:
    p, p1, p2, B, D = c.gpus, c.p1, c.p2, c.batch, ctx.D
    I = D / B
    s = ctx.split(c.strategy)
    b = B / p1  # samples per spatial group
    # compute = (D/p) Σs FB + (D/p1) Σr FB + I ΣWU                           docs/cost-model.md
    c.phases["forward_backward_s"] = split_compute(ctx, s, D / p1, p2, I, B / p) + D / p1 * per_value(
        ctx, lambda x: ctx.fb_sum(x, s, "r"), b)  # fmt: skip
    c.phases["weight_update_s"] = I * ctx.sum_wu
    # gradient exchange: AR_φ(p, δΣs w) over all GPUs + AR_φ(p1, δΣr w)      docs/cost-model.md
    system, gpn = ctx.system, ctx.system.gpus_per_node
    phi_all = net.contention(system, np.where(p > gpn, 1, 0), ctx.options.contention)
    if system.implementation.data_spatial_allreduce == "leader":  # ParaDL §4.5.1's code (data_spatial.py)
        split = coll.leader(ctx, p, phi_all, "gradient_allreduce")
    else:
        split = coll.prepare(ctx, "allreduce", p, phi_all, "gradient_allreduce")
    phi = net.contention(system, net.flows_per_node(p1, p2, gpn), ctx.options.contention)
    rest = coll.data_group(ctx, p1, p2, phi)
    if ctx.options.overlap == "buckets":  # both all-reduces in buckets during the backward (data_spatial.py)
        grads = ctx.grad_delta * ctx.w
        ge, ge_total = voverlap.bucketed(ctx, [split, rest], lambda _: grads, B / p, b, s.mask,
                                         kinds=np.where(s.mask, 0, 1))  # fmt: skip
    else:
        ge = split(ctx.grad_delta * s.w_s) + rest(ctx.grad_delta * s.w_r)
    c.phases["gradient_exchange_s"] = I * ge
    g = group_costs(ctx, p2, b)
    if ctx.options.overlap == "buckets":  # data_spatial.py's hidden: the buckets' and the halo's
        c.hidden_s = I * ((ge_total - ge) + (g["halo_total"] - g["halo"]))
    c.phases["layer_collectives_s"] = I * g["gather"]
    c.phases["halo_s"] = I * g["halo"]
    # memory / (γδ) = Σs (2B/p)(x+y) + Σr (2B/p1)(x+y) + Σ 2w                 docs/cost-model.md
    c.memory = _memory(ctx, g, 2 * B / p * s.act_s + 2 * b * s.act_r, p, B / p, b, into=c)
    return [("batch", p1 > B), (Spatial.name, g["bad"])]
