"""NCCL's tree beyond a ring-fitted file's logs (issue 25; docs/cost-model.md "Ring-fitted
fabrics beyond their logs").

A system file whose levels are ring-formula fits to nccl-tests (``collectives: {algorithm:
ring}``) may state ``tree_beyond_gpus`` P: the GPUs of the log of the most nodes.  Under a
stack whose NCCL chooses (``System.library_trees``, compute/stack.stack_system), a ring
all-reduce over more nodes than P's n_P = ⌈P/g⌉ may take NCCL's tree instead: per protocol
line (α, β) of the ring, a tree line

    2(P-1)·α·⌊log2 n⌋/⌊log2 n_P⌋ + 2m·β/r

the fitted ring latency at P (which holds whatever NCCL ran there) growing like the tree's
2⌊log2 n⌋ inter-node steps (compute/nccl.py, NCCL's log2i), the bytes at NCCL's tree bus
bandwidth, r of the ring's (nccl.TREE_RATIO).  ABCI's logs grow so: an 8-byte all-reduce
takes 18, 31, 41, 50 and 62 us on 2, 4, 8, 16 and 32 nodes.  Physics assumed beyond the
logs: the fabric's per-step latency and bandwidth stay those fitted at P; NCCL's tree
bandwidth correction at medium sizes (nccl.TREE_CORRECTION) is not applied.  The
vectorised twin is compute/vector/net.tree_lines.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from oracle.compute import nccl

if TYPE_CHECKING:
    from oracle.compute.network import Group, Link
    from oracle.model import OperationOverride, System


def own_choice(op: OperationOverride | None) -> bool:
    """Whether a system's operation entry (``system.operation``: a purpose's or its
    primitive's) gives an algorithm, an α or a β of its own (network.link): a choice, or
    another transport (e.g. MPI), than the library's over the levels: no NCCL tree then."""
    return op is not None and (op.algorithm is not None or op.alpha_s is not None or op.beta_s_per_byte is not None)


def tree_factors(system: System, p, nodes):
    """(latency, bandwidth) factors f, h that turn a ring line (α, β) into the tree's for
    all-reduces over ``p`` GPUs on ``nodes`` nodes (numbers or arrays), in the ring's form
    2(p-1)(α·f + m/p·β·h/r) = 2(P-1)α·⌊log2 n⌋/⌊log2 n_P⌋ + 2m·β/r; f is 0 where the group
    spans no more nodes than the logs' n_P (the caller divides by r, per protocol)."""
    big = system.tree_beyond_gpus
    n_big = -(-big // system.gpus_per_node)
    p, nodes = np.asarray(p, dtype=float), np.asarray(nodes, dtype=float)
    on = (nodes > n_big) & (p > 1)
    q = np.where(on, p, 2.0)
    steps = np.floor(np.log2(np.maximum(nodes, 1.0))) / math.floor(math.log2(n_big))  # NCCL's log2i
    return np.where(on, (big - 1) / (q - 1) * steps, 0.0), q / (q - 1)


def with_trees(system: System, group: Group, lk: Link, op: OperationOverride | None = None) -> Link:
    """The link of a ring all-reduce over ``group`` with NCCL's tree as more lines (one per
    protocol line, :func:`tree_factors`) where a library with trees chooses and the group
    spans more nodes than the logs; else ``lk`` (also with a measured table, or an
    operation entry ``op`` of its own choice: :func:`own_choice`)."""
    if not system.library_trees or lk.table is not None or own_choice(op):
        return lk
    if group.nodes <= -(-system.tree_beyond_gpus // system.gpus_per_node):
        return lk
    f, h = (float(x) for x in tree_factors(system, group.p, group.nodes))
    kinds = ("Simple", *(nccl.protocol_kind(n) for n in lk.names))
    trees = tuple((a * f, b * h / nccl.TREE_RATIO[k]) for (a, b), k in zip(lk.lines(), kinds))
    return replace(lk, protocols=lk.protocols + trees, names=lk.names + tuple(f"tree {k}" for k in kinds))


__all__ = ["own_choice", "tree_factors", "with_trees"]
