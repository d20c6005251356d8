"""Redistribution between layers of different layouts (Dryden et al., IPDPS 2019,
§III-C; the α-β costs of docs/cost-model.md): for every ordered pair of layouts the
latency and seconds per element of one sample, per iteration (compute/layerwise/layerwise.py's
docstring gives the formulas)."""

from __future__ import annotations

import math

import numpy as np

from oracle.compute.context import Context
from oracle.compute.network import allgather_pieces, group_contiguous, link
from oracle.compute.strategies.spatial import spatial_grid
from oracle.vocabulary import AUTO, RING


def shuffle_tables(ctx: Context, p: int, B: float, layouts: list[tuple[str, int, int]]):
    """(lat, slope, recv, kind) per ordered pair of layouts (A -> B): latency pieces
    and seconds per element of one sample of the tensor (times B·δ·β already), the
    fraction of B·y a GPU receives, and the collective's name."""
    return _pieces(ctx, p, B, layouts, _received(ctx, p, layouts))


def _received(ctx: Context, p: int, layouts) -> np.ndarray:
    """What a GPU needs in layout c and does not hold in layout a (fraction of B·y), the
    most over all GPUs."""
    dims = ctx.model.spatial_dims
    L = layouts
    nL = len(L)
    g = np.arange(p)
    s0 = np.zeros((nL, p))
    blk = np.zeros((nL, p))  # sample block length (fraction of B); 0 on GPUs outside a subset
    tiles0 = np.zeros((nL, p, dims))
    tiles1 = np.ones((nL, p, dims))
    for a, (mode, p1, p2, q, r) in enumerate(L):
        inside = g < q  # a layout on a subset: the first q GPUs hold the tensor
        s0[a] = np.where(inside, (g // (p2 * r)) * (p2 * r) / q, 0.0)  # sample block start (fraction of B)
        blk[a] = np.where(inside, p2 * r / q, 0.0)
        if mode == "S" and p2 > 1:
            grid = spatial_grid(ctx, p2)
            coords = np.array(np.unravel_index((g // r) % p2, grid)).T  # (p, dims); r copies of each tile
            f = np.array(grid, dtype=float)
            tiles0[a] = coords / f
            tiles1[a] = (coords + 1) / f
    s1 = s0 + blk
    # what GPU g needs in layout c and does not hold in layout a (fraction of B·y),
    # the most over all GPUs; one source layout at a time keeps memory at nL·p
    # The pattern of a pair repeats every lcm(p2_a, p2_c) GPUs (sample blocks of p2
    # GPUs, tiles numbered within a block): one period is enough when both use all p.
    need = blk * (tiles1 - tiles0).prod(axis=-1)  # (nL, p)
    p2 = np.array([lay[2] * lay[4] for lay in L])  # GPUs per sample block
    full = np.array([lay[3] == p for lay in L])
    recv = np.zeros((nL, nL))
    period = np.array([[math.lcm(int(x), int(y)) for y in p2] for x in p2])
    period = np.where(full[:, None] & full[None, :], period, p)
    for a in range(nL):  # the consumer layouts c of one period at once
        for P in np.unique(period[a]).tolist():
            c = np.flatnonzero(period[a] == P)
            so = np.clip(np.minimum(s1[a, :P], s1[c, :P]) - np.maximum(s0[a, :P], s0[c, :P]), 0, None)
            to = np.clip(
                np.minimum(tiles1[a, :P], tiles1[c, :P]) - np.maximum(tiles0[a, :P], tiles0[c, :P]), 0, None
            ).prod(axis=-1)
            recv[a, c] = np.clip(need[c, :P] - so * to, 0, None).max(axis=1)
        recv[a, a] = 0.0
    recv[recv < 1e-12] = 0.0
    return recv


def _pieces(ctx: Context, p: int, B: float, layouts, recv: np.ndarray):
    """Affine pieces (latency, slope) per pair: an all-gather when the consumer gathers
    whole pieces, else an all-to-all (Dryden §III-C)."""
    system, gpn, delta = ctx.system, ctx.system.gpus_per_node, ctx.delta
    L = layouts
    nL = len(L)
    # each pair's cost is the minimum of a few affine pieces lat + y·slope (one per
    # all-gather algorithm the context may pick; one for an all-to-all)
    algo = getattr(ctx, "algorithm", RING)
    algos = (RING, "rhd") if algo == AUTO else (algo,)
    # pieces: per algorithm one per protocol line, one more for an operation's own "auto"
    lines = 2 + max((len(level.protocols) for level in system.network), default=0)
    lat = np.full((len(algos) * lines, nL, nL), np.inf)
    slope = np.zeros((len(algos) * lines, nL, nL))
    kind = np.full((nL, nL), "", dtype=object)
    groups: dict[int, object] = {}
    gathers: dict[int, list] = {}
    for a in range(nL):
        for c in range(nL):
            if recv[a, c] == 0.0:
                continue
            p1a, p1c, qa, qc = L[a][1], L[c][1], L[a][3], L[c][3]
            # the block of GPUs that exchange data: p / gcd(p1a, p1c) when both use the
            # same GPUs; with a subset, the larger of the two sets (issue 18)
            q = qa // math.gcd(p1a, p1c) if qa == qc else max(qa, qc)
            if q not in groups:  # a few group sizes
                groups[q] = group_contiguous(q, gpn)
            grp = groups[q]
            if L[c][0] == "R" and p1a % p1c == 0 and qa == qc:
                # the consumer gathers whole pieces of its group: an all-gather, each
                # GPU contributing its B/p samples' share (docs/cost-model.md AG)
                # (one affine piece per algorithm and protocol line: their minimum is
                # the all-gather of compute/network.py)
                if q not in gathers:
                    gathers[q] = [pc for name in algos for pc in allgather_pieces(system, grp, name, "tail_gather")]
                for k, (t0, per_byte) in enumerate(gathers[q]):
                    lat[k, a, c], slope[k, a, c] = t0, per_byte * delta * B / qa
                kind[a, c] = f"all-gather in groups of {q}"
            else:
                # all-to-all (Dryden et al. §III-C): (q-1)(α + m_i β), m_i = received
                # bytes / (q-1)
                lk = link(system, grp.span, "alltoall")
                for k, (alpha, beta) in enumerate(lk.lines()):
                    lat[k, a, c] = (q - 1) * alpha
                    slope[k, a, c] = recv[a, c] * B * delta * beta
                kind[a, c] = f"all-to-all in groups of {q}"
    lat[:, recv == 0.0] = 0.0  # nothing to move (pieces left unused stay at +inf)
    return lat, slope, recv, kind

