"""NCCL's candidates over many groups at once (issue 29): compute/nccl.py's ``terms`` and
``term_parts`` (the all-reduce's algorithms and protocols as latency + seconds per byte)
and ``allgather_pieces`` with the group size p, its NCCL nodes n and GPUs per node g as
arrays, one entry per group, the same floating-point operations in the same order
(Python's max(a, b) keeps a unless b > a: the np.where below).  The lines come from
nccl.group_lines once per distinct pair of levels (of the g GPUs of one node, of the
span), so the groups of a sweep cost a few array operations per level pair instead of
Python per group.  compute/vector/collectives.py evaluates the candidates for message sizes."""

from __future__ import annotations

import math

import numpy as np

from oracle.compute import nccl
from oracle.compute.network import Group, level_for, link
from oracle.compute.vector import net


# NCCL's tree-correction rows (nccl.TREE_CORRECTION, 1 past the end, as nccl's own table):
# row 0 ones (no correction), then one per protocol kind; a candidate holds its row's index
CORRECTION_KINDS = tuple(nccl.TREE_CORRECTION)
CORRECTION_ROWS = np.stack([np.ones(len(nccl.TREE_CORRECTION["Simple"]) + 1)]
                           + [np.array((*nccl.TREE_CORRECTION[k], 1.0)) for k in CORRECTION_KINDS])  # fmt: skip


def groups(gpn: int, p: np.ndarray, stride) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(nodes, GPUs per node, span) of every group: network.group_contiguous (``stride``
    None) or group_strided."""
    if stride is None:
        return -(-p // gpn), np.minimum(p, gpn), net.span_contiguous(p, gpn)
    nodes, per = placed(p, stride, gpn)
    return nodes, per, net.span_strided(p, stride, gpn)


def placed(p: np.ndarray, stride, unit: int) -> tuple[np.ndarray, np.ndarray]:
    """network.placed of every (p, stride): units occupied, most GPUs on one."""
    far = stride >= unit
    return np.where(far, p, ((p - 1) * stride) // unit + 1), np.where(far, 1, np.minimum(p, -(-unit // np.maximum(stride, 1))))


def nccl_nodes(system, p: np.ndarray, stride, nodes: np.ndarray, per: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """nccl.nccl_nodes of every group (``stride`` None: GPUs 0..p-1; ``nodes``, ``per``: its
    hosts as :func:`groups`): (n, g), an NVLink domain larger than a host one node."""
    domain = nccl.node_gpus(system)
    if domain <= system.gpus_per_node:
        return nodes, per
    return placed(p, 1 if stride is None else stride, domain)


def candidates(ctx, p: np.ndarray, stride, purpose: str, op: str, algos: tuple[str, ...] = ()) -> list:
    """Per candidate k: (a, b, has, corr) arrays over the groups, ``op`` "allreduce"
    (nccl._candidates: latency, seconds per byte, NCCL_ALGO's filter, the index of the
    tree-correction row in CORRECTION_ROWS) or "allgather" (nccl.allgather_pieces: seconds
    at 0 bytes, per byte; corr None)."""
    system, gpn = ctx.system, ctx.system.gpus_per_node
    nodes, per, span = groups(gpn, p, stride)
    n, g = nccl_nodes(system, p, stride, nodes, per)
    strides = np.broadcast_to(1 if stride is None else stride, p.shape)
    intra = np.where(g <= gpn, g, -(-g // gpn) * gpn)
    # the lines depend on the levels only (network.level_for): a class per pair of levels
    keys, inv = np.unique(np.stack([_level(system, intra), np.where(n > 1, _level(system, nccl.inter_span(system, span, n)), -1)]), axis=1,
                          return_inverse=True)  # fmt: skip
    inv = inv.reshape(-1)
    out: list = []
    for k in range(keys.shape[1]):
        rows = np.flatnonzero(inv == k)
        i = int(rows[0])  # one group of the class: nccl.group_lines reads only its levels
        group = Group(int(p[i]), int(nodes[i]), int(per[i]), int(span[i]), int(strides[i]))
        _, _, lines, labels = nccl.group_lines(system, group, purpose, link)
        if op == "allgather":
            cls = _pieces(p[rows], n[rows], lines, labels)
        else:
            cls = _terms(system, p[rows], n[rows], g[rows], lines, labels, algos)
        _place(out, cls, rows, p.size)
    return out


def _level(system, spans: np.ndarray) -> np.ndarray:
    """network.level_for's level (its index) of every span."""
    u, inv = np.unique(spans, return_inverse=True)
    index = {id(level): i for i, level in enumerate(system.network)}
    return np.array([index[id(level_for(system, int(x)))] for x in u.tolist()], dtype=np.int64)[inv.reshape(-1)]


def _place(out: list, cls: list, rows: np.ndarray, size: int) -> None:
    """Write a class's candidates into the entries ``rows`` of the output's candidates."""
    while len(out) < len(cls):
        corr = None if cls[0][3] is None else np.zeros(size, dtype=np.int8)
        out.append((np.zeros(size), np.zeros(size), np.zeros(size, dtype=bool), corr))
    for (a, b, has, corr), (ca, cb, ch, cc) in zip(out, cls):
        a[rows], b[rows], has[rows] = ca, cb, ch
        if corr is not None:
            corr[rows] = cc


def _max(x, y):
    """Python's max(x, y): x unless y > x."""
    return np.where(y > x, y, x)


def _pieces(p, n, lines, labels) -> list:
    """nccl.allgather_pieces: (p-n)·α_i + (n-1)·α_o, (p-1)·max(β_i, β_o) per protocol."""
    out = []
    for label in labels:
        (ai, bi), (ao, bo) = lines[("intra", label)], lines[("inter", label)]
        out.append(((p - n) * ai + (n - 1) * ao, (p - 1) * _max(bi, bo), np.ones(p.size, dtype=bool), None))
    return out


def _terms(system, p, n, g, lines, labels, algos) -> list:
    """nccl.terms with term_parts of every group of one class (n > 1 for all or none)."""
    multi = bool(n[0] > 1)
    hn = np.where(n == 2, 0.5, 1.0)
    steps = 2 * (p - 1) / p
    log_n = np.array([float(2 * int(math.log2(x))) if x > 1 else 0.0 for x in n.tolist()])
    one = 0  # CORRECTION_ROWS' row of ones
    everyone = np.ones(p.size, dtype=bool)
    out = []
    for label in labels:
        kind = nccl.protocol_kind(label)
        (ai, bi), (ao, bo) = lines[("intra", label)], lines[("inter", label)]
        if multi:
            ring = (2.0 * (p - n) * ai + 2.0 * (n - 1) * ao, _max(steps * bi, steps * bo))
        else:
            ring = (2.0 * (p - 1) * ai, steps * bi)
        out.append(("ring", *ring, everyone, one))
        ratio = (nccl.TREE_RATIO if multi else nccl.TREE_RATIO_ONE_NODE)[kind]
        if multi:
            tree = (2.0 * (g - 1) * ai + log_n * ao, _max(2.0 / ratio * bi, 2.0 * hn / ratio * bo))
        else:
            tree = (2.0 * (g - 1) * ai, 2.0 / ratio * bi)
        out.append(("tree", *tree, everyone, 1 + CORRECTION_KINDS.index(kind)))
    offers = nccl.offers(system, algos)
    (ai, bi), (ao, bo) = lines[("intra", "Simple")], lines[("inter", "Simple")]
    if offers.nvls_efficiency:
        e = offers.nvls_efficiency
        c = steps / (2.0 * e)
        nvls = (nccl.NVLS_LATENCY_S + log_n * ao, _max(c * bi, steps * hn * bo)) if multi else (
            np.full(p.size, nccl.NVLS_LATENCY_S + 0), c * bi)  # fmt: skip
        out.append(("nvls", *nvls, g >= 2, one))
    if offers.collnet and multi:
        const = nccl.COLLNET_ARITY_S * 2 * (g - 1)
        f = nccl.COLLNET_BETA_FACTOR
        out.append(("collnet", const + (2.0 * np.minimum(1, g - 1) * ai + 2.0 * ao), _max(f * bi, f * bo),
                    everyone, one))  # fmt: skip
    return _only(out, algos, p.size)


def _only(out: list, algos: tuple[str, ...], size: int) -> list:
    """NCCL_ALGO: a group's candidates of those algorithms where it has one, else all."""
    if algos:
        chosen = [(name in algos) & has for name, _, _, has, _ in out]
        some = np.logical_or.reduce(chosen) if chosen else np.zeros(size, dtype=bool)
        out = [(name, a, b, np.where(some, pick, has), corr) for (name, a, b, has, corr), pick in zip(out, chosen)]
    return [(a, np.broadcast_to(b, (size,)), has, np.full(size, corr, dtype=np.int8)) for _, a, b, has, corr in out]
