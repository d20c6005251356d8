"""Placement of GPUs, network levels and collective costs (docs/cost-model.md-4.4).

Placement (docs/cost-model.md): GPU g sits on node g // gpus_per_node.  The *span* of a set of
GPUs is its size when all sit on one node, else (distinct nodes touched) x
gpus_per_node; a collective uses the innermost level whose ``max_gpus`` >= span.  NCCL's
steps between NVLink domains larger than a host take the level of the domains touched
(nccl.inter_span).

Collectives (docs/cost-model.md, ParaDL §4.3 after Thakur et al.'s ring algorithms):
    AR(p, m)   = 2 (p-1) (α + (m/p) β)          ring all-reduce of m bytes
    AG(p, m_i) = (p-1) (α + m_i β)              ring all-gather, m_i bytes per PE
    P2P(m)     = α + m β                        Hockney point-to-point
A collective over one PE costs 0.  AR_φ divides the bandwidth by the contention
factor φ (β·φ, docs/cost-model.md, ParaDL §4.3 "contention penalty coefficient").
Message sizes may be numpy arrays (one per layer); results broadcast.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from oracle.compute import nccl
from oracle.compute.trees import tree_terms, tree_time
from oracle.model import CollectiveTable, NetworkLevel, System
from oracle.vocabulary import ALLREDUCE_ALGORITHMS, AUTO, NCCL, NCCL_PINNED, RING


@dataclass(frozen=True)
class Link:
    """α/β a collective or transfer actually uses: a level, maybe an operation override,
    maybe a measured table for exactly this collective, GPU count and span."""

    alpha_s: float
    beta_s_per_byte: float
    level: str
    span: int
    table: CollectiveTable | None = None
    # more (α, β) lines of the level (protocol regimes, compute/protocols.py): ring
    # collectives and transfers take the cheapest line for their message size
    protocols: tuple[tuple[float, float], ...] = ()
    factor: float = 1.0  # a measured table's time is scaled by it (α-β lines already are)
    algorithm: str | None = None  # the operation's own algorithm (system operations:)
    names: tuple[str, ...] = ()  # the protocol lines' names (LL, LL128, ...; compute/nccl.py)

    def lines(self) -> tuple[tuple[float, float], ...]:
        return ((self.alpha_s, self.beta_s_per_byte), *self.protocols)


# -- placement ----------------------------------------------------------------------


def span_contiguous(count: int, gpus_per_node: int) -> int:
    """Span of GPUs 0..count-1 (a plain strategy, or a hybrid's model-part group)."""
    if count <= gpus_per_node:
        return count
    return -(-count // gpus_per_node) * gpus_per_node


def span_strided(count: int, stride: int, gpus_per_node: int) -> int:
    """Span of GPUs {0, stride, 2·stride, ...} (a hybrid's data-parallel group): the nodes
    its GPUs occupy x gpus_per_node (docs/cost-model.md, ParaDL mode's rule)."""
    if count <= 1:
        return count
    nodes = placed(count, stride, gpus_per_node)[0]
    return count if nodes == 1 else nodes * gpus_per_node


def placed(count: int, stride: int, unit: int) -> tuple[int, int]:
    """(units occupied, most GPUs on one) of GPUs {0, stride, ..., (count-1)·stride}, GPU i on
    unit i // ``unit`` (a host: gpus_per_node; an NCCL node: nccl.node_gpus).  A stride of a
    unit or more puts every GPU on its own unit; a shorter one skips none between the first
    and the last, and the first, holding ⌈unit/stride⌉, is the fullest."""
    if stride >= unit:
        return count, 1
    return ((count - 1) * stride) // unit + 1, min(count, -(-unit // stride))


def span_pair(i: int, j: int, gpus_per_node: int) -> int:
    """Span of the two GPUs i and j (pipeline neighbours, halo neighbours)."""
    return 2 if i // gpus_per_node == j // gpus_per_node else 2 * gpus_per_node


def span_neighbours(count: int, gpus_per_node: int) -> int:
    """Largest span of a neighbour pair in a group of GPUs 0..count-1.

    Used for halo exchange: all neighbours exchange at once, so the step is as slow
    as the slowest pair; some pair crosses a node boundary once the group does.
    """
    if count <= 1:
        return 1
    return 2 if count <= gpus_per_node else 2 * gpus_per_node


def level_for(system: System, span: int) -> NetworkLevel:
    for level in system.network:
        if level.max_gpus >= span:
            return level
    return system.network[-1]


# operations by purpose (issue 14) and the primitive each one is: a system file's
# `operations:` entry for a purpose wins over the entry for its primitive
PURPOSES = {
    "gradient_allreduce": "allreduce",  # data-parallel gradients (and hybrids' data groups)
    "layer_allgather": "allgather",  # filter/channel: the split layers' outputs
    "layer_allreduce": "allreduce",  # filter/channel: the input gradients
    "tail_gather": "allgather",  # spatial: before the replicated head
    "pipeline_p2p": "p2p",  # pipeline stages' activations and gradients
    "halo": "halo",
}


def primitive(op: str) -> str:
    return PURPOSES.get(op, op)


def link(system: System, span: int, op: str, gpus: int | None = None) -> Link:
    """α/β for an operation over a span: the level's, unless the system overrides ``op``
    (a purpose, or its primitive; docs/cost-model.md, e.g. halo exchange over MPI through host
    memory) — own α/β, scale factors, an algorithm, a time factor; with ``gpus``, the
    system's measured table for (primitive, gpus, span) when it has one.  Cached on the
    (frozen) system object: a sweep asks for the same few links thousands of times."""
    cache = system.__dict__.setdefault("_links", {})
    key = (span, op, gpus if system.collective_tables else None)
    if key not in cache:
        cache[key] = _link(system, span, op, gpus)
    return cache[key]


def _link(system: System, span: int, op: str, gpus: int | None) -> Link:
    level = level_for(system, span)
    alpha, beta = level.alpha_s, level.beta_s_per_byte
    protocols = tuple((pr.alpha_s, pr.beta_s_per_byte) for pr in level.protocols)
    names = tuple(pr.name for pr in level.protocols)
    override = system.operation(op) or system.operation(primitive(op))
    if override is not None:
        # an α or β of its own is another transport: the level's protocol lines go;
        # scale factors apply to every line
        if override.alpha_s is not None or override.beta_s_per_byte is not None:
            protocols, names = (), ()
        protocols = tuple((a * override.alpha_scale, b * override.beta_scale) for a, b in protocols)
        alpha = override.alpha_s if override.alpha_s is not None else alpha * override.alpha_scale
        beta = (
            override.beta_s_per_byte
            if override.beta_s_per_byte is not None
            else beta * override.beta_scale
        )
    factor = override.factor if override is not None else 1.0
    if factor != 1.0:
        alpha, beta = alpha * factor, beta * factor
        protocols = tuple((a * factor, b * factor) for a, b in protocols)
    table = system.table(primitive(op), gpus, span) if gpus is not None and system.collective_tables else None
    algorithm = override.algorithm if override else None
    return Link(alpha, beta, level.name, span, table, protocols, factor, algorithm, names)


# -- contention ---------------------------------------------------------------------


def data_group_flows_per_node(p1: int, p2: int, gpus_per_node: int) -> int:
    """Concurrent inter-node all-reduce flows per node in a hybrid.

    The p2 data-parallel groups {j, j+p2, j+2·p2, ...} run their all-reduces at the
    same time; a node hosts members of min(p2, gpus_per_node) of them.  When a data
    group stays inside one node there is no inter-node flow.
    """
    if p1 <= 1:
        return 0
    if span_strided(p1, p2, gpus_per_node) <= gpus_per_node:
        return 0
    return min(p2, gpus_per_node)


def contention_factor(system: System, flows_per_node: int, override: float | None) -> float:
    """φ (docs/cost-model.md): a flag wins, then the system's ``contention_factor``, else
    ceil(flows per node / links per node) where the system gives its links, else 1."""
    if override is not None:
        return float(override)
    if system.contention_factor is not None:
        return float(system.contention_factor)
    if system.links_per_node and flows_per_node > 0:
        return float(max(1, math.ceil(flows_per_node / system.links_per_node)))
    return 1.0


# -- collectives (ring, docs/cost-model.md) --------------------------------------------------


def _out(values: np.ndarray):
    """A float for scalar inputs, the array for per-layer inputs."""
    return values if values.ndim else float(values)


def allreduce(p: int, m_bytes, lk: Link, phi: float = 1.0):
    """Ring all-reduce of m bytes: 2(p-1)(α + (m/p)·β·φ); 0 on one PE.  With a measured
    table for p GPUs: its time for m·φ bytes (contention as φ times the data)."""
    m = np.asarray(m_bytes, dtype=float)
    if p <= 1:
        return _out(np.zeros_like(m))
    if lk.table is not None and lk.table.gpus == p:
        return _out(lk.factor * table_time(lk.table, m * phi))
    return _out(_cheapest(lk, lambda a, b: 2.0 * (p - 1) * (a + m / p * b * phi)))


def allgather(p: int, m_each_bytes, lk: Link, phi: float = 1.0):
    """Ring all-gather, each PE contributing m_i bytes: (p-1)(α + m_i·β·φ); 0 on one PE.
    With a measured table for p GPUs: its time for the p·m_i·φ gathered bytes."""
    m = np.asarray(m_each_bytes, dtype=float)
    if p <= 1:
        return _out(np.zeros_like(m))
    if lk.table is not None and lk.table.gpus == p:
        return _out(lk.factor * table_time(lk.table, p * m * phi))
    return _out(_cheapest(lk, lambda a, b: (p - 1) * (a + m * b * phi)))


def table_time(table: CollectiveTable, m_bytes: np.ndarray) -> np.ndarray:
    """Measured time for m bytes: log-log interpolation between measured sizes; below the
    smallest size its time (latency-bound); above the largest, the last measured
    bandwidth (time grows linearly with the bytes)."""
    sizes = np.asarray(table.bytes)
    times = np.asarray(table.seconds)
    m = np.maximum(np.asarray(m_bytes, dtype=float), sizes[0])
    inside = np.exp(np.interp(np.log(np.minimum(m, sizes[-1])), np.log(sizes), np.log(times)))
    slope = (times[-1] - times[-2]) / (sizes[-1] - sizes[-2])
    return np.where(m > sizes[-1], times[-1] + (m - sizes[-1]) * max(slope, 0.0), inside)


def p2p(m_bytes, lk: Link):
    """Point-to-point transfer of m bytes: α + m·β."""
    m = np.asarray(m_bytes, dtype=float)
    return _out(_cheapest(lk, lambda a, b: a + m * b))


def _cheapest(lk: Link, cost) -> np.ndarray:
    """cost(α, β) of the link's own line, or the cheapest of its protocol lines."""
    t = np.asarray(cost(lk.alpha_s, lk.beta_s_per_byte), dtype=float)
    for a, b in lk.protocols:
        t = np.minimum(t, cost(a, b))
    return t


# -- groups and collective algorithms (issue 8) -----------------------------------------
#
# Long-message costs in the α-β model for p PEs and m bytes (Thakur, Rabenseifner &
# Gropp, "Optimization of collective communication operations in MPICH", IJHPCA 2005;
# ParaDL §4.3 and its footnote 4 for the tree):
#   ring          AR = 2(p-1)(α + mβ/p)                    AG = (p-1)(α + m_i β)
#   rhd           AR = 2⌈log2 p⌉α + 2(p-1)/p·mβ            AG = ⌈log2 p⌉α + (p-1) m_i β
#                 (Rabenseifner: recursive-halving reduce-scatter + recursive-doubling
#                 all-gather)
#   tree          AR = 2(log2 p + k)(α + mβ/(2k)), k pipeline chunks chosen optimally,
#                 k* = sqrt(log2 p · mβ / (2α)) (double binary tree of Sanders et al.,
#                 Parallel Computing 2009, as NCCL implements it; ParaDL footnote 4)
#   hierarchical  reduce-scatter in the node, all-reduce of m/g across the n nodes by
#                 each of the g local ranks at once (g flows per node), all-gather in the
#                 node: 2(g-1)(α_i + mβ_i/g) + 2(n-1)(α_o + mβ_o φ_g/(g n))
#   leader        reduce to one GPU per node, all-reduce among the n leaders, broadcast
#                 back (ParaDL §4.5.1): 4(g-1)(α_i + mβ_i/g) + 2(n-1)(α_o + mβ_o/n)
#   auto          the cheapest of these for every call (per message size and span)

# ps: a parameter server (issue 18; Li et al., "Scaling Distributed Machine Learning with
# the Parameter Server", OSDI 2014; the synchronisation of Jia et al.'s ICML 2018
# baselines): every worker pushes its m bytes of gradients and pulls m bytes of weights,
# and the s servers (collectives: ps_servers) each move p·m/s both ways over a link of
# the same level, so  t = 2α + 2·m·β·max(1, p/s)  — cost growing with the replicas.
# Never chosen by "auto" (a deployment choice, not an algorithm a library picks).
# The names: oracle/vocabulary.py (ALLREDUCE_ALGORITHMS, ALGORITHMS).


@dataclass(frozen=True)
class Group:
    """Where the GPUs of one collective sit: p GPUs on ``nodes`` nodes, at most
    ``per_node`` of them on one node, with the span of docs/cost-model.md"""

    p: int
    nodes: int
    per_node: int
    span: int
    stride: int = 1  # its GPUs {0, stride, 2·stride, ...}: where they sit (nccl.nccl_nodes)


def group_contiguous(p: int, gpus_per_node: int) -> Group:
    """GPUs 0..p-1 (a plain strategy, a hybrid's model-part group)."""
    nodes = -(-p // gpus_per_node)
    return Group(p, nodes, min(p, gpus_per_node), span_contiguous(p, gpus_per_node))


def group_strided(count: int, stride: int, gpus_per_node: int) -> Group:
    """GPUs {0, stride, 2·stride, ...} (a hybrid's data-parallel group)."""
    nodes, per_node = placed(count, stride, gpus_per_node)
    return Group(count, nodes, per_node, span_strided(count, stride, gpus_per_node), stride)


def rhd_allreduce(p, m, alpha, beta, phi):
    """Rabenseifner's all-reduce, 2⌈log2 p⌉α + 2(p-1)/p·mβφ (p, α, β numbers or arrays)."""
    return 2.0 * np.ceil(np.log2(p)) * alpha + 2.0 * (p - 1) / p * m * beta * phi


def rhd_allgather(p, m_each, alpha, beta, phi):
    """Recursive-doubling all-gather, ⌈log2 p⌉α + (p-1)·m_i·βφ."""
    return np.ceil(np.log2(p)) * alpha + (p - 1) * m_each * beta * phi


def tree_allreduce(p, m, alpha, beta, phi):
    """The pipelined double binary tree, 2(log2 p + k)(α + mβφ/(2k)) at the best k."""
    logp = np.log2(p)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        bw = m * beta * phi
        k = np.maximum(1.0, np.sqrt(logp * bw / (2.0 * alpha)))
        t = 2.0 * (logp + k) * (alpha + bw / (2.0 * k))
    return np.where(np.isfinite(bw), t, np.inf)  # an overflow stays an overflow, never NaN


def ps_allreduce(p, m, alpha, beta, phi, servers: int):
    """The parameter server's push and pull, 2α + 2·mβφ·max(1, p/s)."""
    return 2.0 * alpha + 2.0 * m * beta * phi * np.maximum(1.0, p / servers)


def two_level(name: str, g, n, m, inner: tuple, outer: tuple, phi, phi_g):
    """The leader (ParaDL §4.5.1) or hierarchical all-reduce of g GPUs on each of n nodes,
    the levels' own (α, β) ``inner`` and ``outer``; φ_g the hierarchical's g flows' φ."""
    (ai, bi), (ao, bo) = inner, outer
    local = 2.0 * (g - 1) * (ai + m / g * bi)
    if name == "leader":
        return 2.0 * local + 2.0 * (n - 1) * (ao + m / n * bo * phi)
    # hierarchical: the g local ranks all-reduce their m/g shares across nodes at once
    return local + 2.0 * (n - 1) * (ao + m / (g * n) * bo * phi_g)


class Collective(NamedTuple):
    """One collective of a point, as :func:`nccl_costs` and compute/nccl.partial_domain_note see it."""

    group: Group
    algorithm: str
    purpose: str
    stride: int = 1  # its GPUs {0, stride, 2·stride, ...} (group_strided); 1: 0..p-1


def nccl_costs(system: System, c: Collective) -> bool:
    """Whether :func:`allreduce_algorithm` or :func:`allgather_algorithm` cost ``c`` with
    NCCL's model (compute/nccl.py, on its NCCL nodes): not a measured table, the algorithm
    (the system's operation entry's first) NCCL or one pinned."""
    if c.group.p <= 1:
        return False
    lk = link(system, c.group.span, c.purpose, c.group.p)
    measured = lk.table is not None and lk.table.gpus == c.group.p
    return not measured and (lk.algorithm or c.algorithm) in (NCCL, *NCCL_PINNED)


def allreduce_algorithm(
    system: System,
    group: Group,
    m_bytes,
    algorithm: str = RING,
    phi: float = 1.0,
    contention: float | None = None,
    purpose: str = "allreduce",
) -> tuple:
    """All-reduce of m bytes over ``group`` with an algorithm (or ``auto``); returns
    (seconds, the algorithm used).  A measured table for exactly this GPU count and span
    wins over every model.  ``contention`` is a user φ override (it also caps the
    hierarchical algorithm's concurrent flows).  ``purpose`` (PURPOSES) picks the
    system's operation entry: its transport, algorithm and factor."""
    m = np.asarray(m_bytes, dtype=float)
    p = group.p
    if p <= 1:
        return _out(np.zeros_like(m)), "none"
    lk = link(system, group.span, purpose, p)
    if lk.table is not None and lk.table.gpus == p:
        return _out(lk.factor * table_time(lk.table, m * phi)), "measured"
    algorithm = lk.algorithm or algorithm
    if algorithm == NCCL or algorithm in NCCL_PINNED:
        best, used = nccl.allreduce(system, group, m, phi, purpose, link, None if algorithm == NCCL else algorithm)
        return _out(np.asarray(best, dtype=float)), used
    trees = tree_terms(system, group, lk, system.operation(purpose) or system.operation(primitive(purpose))) \
        if algorithm == RING and system.library_trees else None  # fmt: skip
    if trees:  # NCCL's tree beyond the logs (compute/trees.py)
        ring, tree = np.asarray(allreduce(p, m, lk, phi), dtype=float), tree_time(trees, m, phi)
        used = "nccl tree" if m.ndim == 0 and float(tree) < float(ring) else RING
        return _out(np.broadcast_to(np.minimum(ring, tree), m.shape)), used
    if algorithm != AUTO:  # one algorithm: nothing to stack
        one = _allreduce_one(system, group, m, algorithm, lk, phi, contention, purpose)
        one = np.asarray(one, dtype=float)
        return _out(one if one.shape == m.shape else np.broadcast_to(one, m.shape)), algorithm
    names = ALLREDUCE_ALGORITHMS
    times = [np.broadcast_to(_allreduce_one(system, group, m, n, lk, phi, contention, purpose), m.shape)
             for n in names]  # fmt: skip
    stacked = np.stack(times)
    best = stacked.min(axis=0)
    used = names[int(stacked.argmin(axis=0))] if m.ndim == 0 else AUTO
    return _out(np.asarray(best, dtype=float)), used


def _allreduce_one(system, group, m, name, lk, phi, contention, purpose="allreduce"):
    p, a, b = group.p, lk.alpha_s, lk.beta_s_per_byte
    if name == RING:
        return np.asarray(allreduce(p, m, lk, phi))
    if name == "rhd":
        return rhd_allreduce(p, m, a, b, phi)
    if name == "tree":
        return tree_allreduce(p, m, a, b, phi)
    if name == "ps":
        return ps_allreduce(p, m, a, b, phi, system.ps_servers)
    g, n = group.per_node, group.nodes
    if n <= 1 or g <= 1:  # nothing to split in two levels: the flat ring
        return np.asarray(allreduce(p, m, lk, phi))
    inner = link(system, g, purpose)
    outer = link(system, n * system.gpus_per_node, purpose)
    phi_g = max(phi, contention_factor(system, g, contention))
    return two_level(name, g, n, m, (inner.alpha_s, inner.beta_s_per_byte), (outer.alpha_s, outer.beta_s_per_byte),
                     phi, phi_g)  # fmt: skip


def allgather_pieces(system: System, group: Group, algorithm: str = RING, purpose: str = "allgather") -> list[tuple[float, float]]:
    """The all-gather of :func:`allgather_algorithm` as affine pieces (seconds at 0
    bytes, seconds per byte each GPU contributes): its time is their minimum.  Ring: one
    piece per protocol line, (p-1)(α_k + m_i β_k); rhd: ⌈log2 p⌉α + (p-1) m_i β; a
    measured table: its secant from 0 to 1 MB."""
    p = group.p
    if p <= 1:
        return [(0.0, 0.0)]
    lk = link(system, group.span, purpose, p)
    if lk.table is not None and lk.table.gpus == p:
        t0 = lk.factor * float(table_time(lk.table, np.asarray(0.0)))
        return [(t0, (lk.factor * float(table_time(lk.table, np.asarray(p * 1e6))) - t0) / 1e6)]
    algorithm = lk.algorithm or algorithm
    if algorithm == NCCL or algorithm in NCCL_PINNED:  # NCCL's ring all-gather
        return nccl.allgather_pieces(system, group, purpose, link)
    if algorithm == "rhd":
        return [(math.ceil(math.log2(p)) * lk.alpha_s, (p - 1) * lk.beta_s_per_byte)]
    ring = [((p - 1) * a, (p - 1) * b) for a, b in lk.lines()]
    if algorithm == AUTO:
        return ring + [(math.ceil(math.log2(p)) * lk.alpha_s, (p - 1) * lk.beta_s_per_byte)]
    return ring


def allgather_algorithm(
    system: System, group: Group, m_each_bytes, algorithm: str = RING, phi: float = 1.0,
    purpose: str = "allgather",
) -> tuple:  # fmt: skip
    """All-gather, each PE contributing m_i bytes: ring, or recursive doubling (rhd);
    ``auto`` the cheaper; the all-reduce-only algorithms fall back to the ring.
    ``purpose`` as for :func:`allreduce_algorithm`."""
    m = np.asarray(m_each_bytes, dtype=float)
    p = group.p
    if p <= 1:
        return _out(np.zeros_like(m)), "none"
    lk = link(system, group.span, purpose, p)
    if lk.table is not None and lk.table.gpus == p:
        return _out(lk.factor * table_time(lk.table, p * m * phi)), "measured"
    algorithm = lk.algorithm or algorithm
    if algorithm == NCCL or algorithm in NCCL_PINNED:
        pieces = nccl.allgather_pieces(system, group, purpose, link)
        return _out(np.min([t0 + m * slope * phi for t0, slope in pieces], axis=0)), "nccl ring"
    ring = np.asarray(allgather(p, m, lk, phi))
    rhd = rhd_allgather(p, m, lk.alpha_s, lk.beta_s_per_byte, phi)
    if algorithm == "rhd":
        return _out(rhd), "rhd"
    if algorithm == AUTO:
        return _out(np.minimum(ring, rhd)), AUTO
    return _out(ring), RING
