"""Placement of GPUs, network levels and collective costs (SPEC §4.1-4.4).

Placement (SPEC §4.2): GPU g sits on node g // gpus_per_node.  The *span* of a set of
GPUs is its size when all sit on one node, else (distinct nodes touched) x
gpus_per_node; a collective uses the innermost level whose ``max_gpus`` >= span.

Collectives (SPEC §4.1, ParaDL §4.3 after Thakur et al.'s ring algorithms):
    AR(p, m)   = 2 (p-1) (α + (m/p) β)          ring all-reduce of m bytes
    AG(p, m_i) = (p-1) (α + m_i β)              ring all-gather, m_i bytes per PE
    P2P(m)     = α + m β                        Hockney point-to-point
A collective over one PE costs 0.  AR_φ divides the bandwidth by the contention
factor φ (β·φ, SPEC §4.3, ParaDL §4.3 "contention penalty coefficient").
Message sizes may be numpy arrays (one per layer); results broadcast.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from oracle.model import CollectiveTable, NetworkLevel, System


@dataclass(frozen=True)
class Link:
    """α/β a collective or transfer actually uses: a level, maybe an operation override,
    maybe a measured table for exactly this collective, GPU count and span."""

    alpha_s: float
    beta_s_per_byte: float
    level: str
    span: int
    table: CollectiveTable | None = None


# -- placement ----------------------------------------------------------------------


def span_contiguous(count: int, gpus_per_node: int) -> int:
    """Span of GPUs 0..count-1 (a plain strategy, or a hybrid's model-part group)."""
    if count <= gpus_per_node:
        return count
    return -(-count // gpus_per_node) * gpus_per_node


def span_strided(count: int, stride: int, gpus_per_node: int) -> int:
    """Span of GPUs {0, stride, 2·stride, ...} (a hybrid's data-parallel group)."""
    if count <= 1:
        return count
    if stride >= gpus_per_node:
        nodes = count  # every member on its own node
    else:
        nodes = ((count - 1) * stride) // gpus_per_node + 1
    return count if nodes == 1 else nodes * gpus_per_node


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


def link(system: System, span: int, op: str, gpus: int | None = None) -> Link:
    """α/β for an operation over a span: the level's, unless the system overrides ``op``
    (SPEC §4.4, e.g. halo exchange over MPI through host memory); with ``gpus``, the
    system's measured table for (op, gpus, span) when it has one (collectives: table)."""
    level = level_for(system, span)
    alpha, beta = level.alpha_s, level.beta_s_per_byte
    override = system.operation(op)
    if override is not None:
        alpha = override.alpha_s if override.alpha_s is not None else alpha * override.alpha_scale
        beta = (
            override.beta_s_per_byte
            if override.beta_s_per_byte is not None
            else beta * override.beta_scale
        )
    table = system.table(op, gpus, span) if gpus is not None and system.collective_tables else None
    return Link(alpha, beta, level.name, span, table)


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
    """φ (SPEC §4.3): a flag wins, then the system's ``contention_factor``, else
    ceil(flows per node / links per node) where the system gives its links, else 1."""
    if override is not None:
        return float(override)
    if system.contention_factor is not None:
        return float(system.contention_factor)
    if system.links_per_node and flows_per_node > 0:
        return float(max(1, math.ceil(flows_per_node / system.links_per_node)))
    return 1.0


# -- collectives (ring, SPEC §4.1) --------------------------------------------------


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
        return _out(table_time(lk.table, m * phi))
    return _out(2.0 * (p - 1) * (lk.alpha_s + m / p * lk.beta_s_per_byte * phi))


def allgather(p: int, m_each_bytes, lk: Link, phi: float = 1.0):
    """Ring all-gather, each PE contributing m_i bytes: (p-1)(α + m_i·β·φ); 0 on one PE.
    With a measured table for p GPUs: its time for the p·m_i·φ gathered bytes."""
    m = np.asarray(m_each_bytes, dtype=float)
    if p <= 1:
        return _out(np.zeros_like(m))
    if lk.table is not None and lk.table.gpus == p:
        return _out(table_time(lk.table, p * m * phi))
    return _out((p - 1) * (lk.alpha_s + m * lk.beta_s_per_byte * phi))


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
    return _out(lk.alpha_s + np.asarray(m_bytes, dtype=float) * lk.beta_s_per_byte)
