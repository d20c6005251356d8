"""Collectives over many groups at once (issue 29): compute/network.py's ring
all-reduce and all-gather with the group size p, its span and the contention factor φ
as arrays, one entry per point, the same floating-point operations in the same order.

    AR(p, m)   = 2 (p-1) (α + (m/p) β φ)      ring all-reduce (ParaDL §4.3, Thakur et al. 2005)
    AG(p, m_i) = (p-1) (α + m_i β φ)          ring all-gather

α/β come from compute/network.link for each distinct span (a level, an operation's
transport, the cheapest of the level's protocol lines).  :func:`supported` says where
these are the per-point model's numbers (the other algorithms are
compute/vector/collectives.py's, measured tables compute/vector/tables.py's); elsewhere
the strategies fall back to the per-point path (compute/vector/kinds.py).
"""

from __future__ import annotations

import numpy as np

from oracle.compute.network import link

# the implementation patterns the layer collectives' backward may take (network.backward_collective)
LAYER_BACKWARD = ("allreduce", "reduce_scatter", "allreduce_slice", "none")


def supported(ctx) -> bool:
    """Whether the layer collectives' backward is a known pattern (the algorithms:
    vector/collectives.supported; measured tables: vector/tables.py)."""
    return ctx.system.implementation.layer_backward in LAYER_BACKWARD


def span_contiguous(count: np.ndarray, gpn: int) -> np.ndarray:
    """network.span_contiguous of every count: GPUs 0..count-1."""
    return np.where(count <= gpn, count, -(-count // gpn) * gpn)


def span_strided(count: np.ndarray, stride: np.ndarray, gpn: int) -> np.ndarray:
    """network.span_strided of every (count, stride): the nodes its GPUs occupy x gpn."""
    nodes = np.where(stride >= gpn, count, ((count - 1) * stride) // gpn + 1)
    return np.where(count <= 1, count, np.where(nodes == 1, count, nodes * gpn))


def contention(system, flows: np.ndarray, override: float | None) -> np.ndarray:
    """network.contention_factor for every flow count (docs/cost-model.md φ)."""
    if override is not None:
        return np.full(flows.shape, float(override))
    if system.contention_factor is not None:
        return np.full(flows.shape, float(system.contention_factor))
    if system.links_per_node:
        return np.where(flows > 0, np.maximum(1.0, np.ceil(flows / system.links_per_node)), 1.0)
    return np.ones(flows.shape)


def flows_per_node(p1: np.ndarray, p2: np.ndarray, gpn: int) -> np.ndarray:
    """network.data_group_flows_per_node for every (p1, p2)."""
    inter = span_strided(p1, p2, gpn) > gpn
    return np.where((p1 > 1) & inter, np.minimum(p2, gpn), 0)


def lines(system, span: np.ndarray, purpose: str):
    """Per entry the link's (α, β) lines: a list of (α, β, has) arrays, line k of the
    entry's link where ``has``.  A link's lines depend on its span through
    network.level_for alone (a measured table, looked up with a GPU count, is
    vector/tables.py's): each level's link is looked up once, at its own max_gpus, and
    every entry takes its level's."""
    tops = np.array([level.max_gpus for level in system.network])
    at = np.minimum(np.searchsorted(tops, span, side="left"), tops.size - 1)  # network.level_for
    per_link = [link(system, int(top), purpose).lines() for top in tops.tolist()]  # each level's, once
    out = []
    for k in range(max((len(ls) for ls in per_link), default=0)):
        a = np.array([ls[k][0] if k < len(ls) else np.nan for ls in per_link])
        b = np.array([ls[k][1] if k < len(ls) else np.nan for ls in per_link])
        has = np.array([k < len(ls) for ls in per_link])
        out.append((a[at], b[at], has[at]))
    return out


def _cheapest(system, p, span, purpose, cost) -> np.ndarray:
    """network._cheapest per entry; 0 where p <= 1 (a collective over one PE).  The
    lines are looked up per (p, span) entry and broadcast over the messages."""
    p, span = np.broadcast_arrays(np.asarray(p), np.asarray(span))
    best = None
    for a, b, has in lines(system, np.where(p > 1, span, 1), purpose):
        c = np.asarray(cost(p, a, b), dtype=float)
        best = c if best is None else np.where(has, np.minimum(best, c), best)
    if best is None:
        return np.zeros(p.shape)
    return np.where(p > 1, best, 0.0)


def ring_allreduce(system, p, span, m, phi, purpose: str) -> np.ndarray:
    """AR_φ(p, m) per entry: 2(p-1)(α + m/p·β·φ) of the cheapest line (network.allreduce)."""
    m, phi = np.asarray(m, dtype=float), np.asarray(phi, dtype=float)

    def cost(pl, a, b):
        return 2.0 * (pl - 1) * (a + m / pl * b * phi)

    return _cheapest(system, p, span, purpose, cost)


def ring_allgather(system, p, span, m_each, phi, purpose: str) -> np.ndarray:
    """AG_φ(p, m_i) per entry: (p-1)(α + m_i·β·φ) of the cheapest line (network.allgather)."""
    m, phi = np.asarray(m_each, dtype=float), np.asarray(phi, dtype=float)

    def cost(pl, a, b):
        return (pl - 1) * (a + m * b * phi)

    return _cheapest(system, p, span, purpose, cost)


def p2p(system, span, m, purpose: str) -> np.ndarray:
    """P2P(m) = α + m·β of the cheapest line per entry (network.p2p; span per entry)."""
    span = np.asarray(span)
    best = None
    for a, b, has in lines(system, span, purpose):
        c = a + m * b
        best = c if best is None else np.where(has, np.minimum(best, c), best)
    return np.zeros(np.broadcast_shapes(span.shape, np.shape(m))) if best is None else best
