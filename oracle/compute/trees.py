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
bandwidth, r of the ring's (nccl.TREE_RATIO), divided by NCCL's tree correction at that size
(nccl.TREE_CORRECTION), as compute/nccl.py times its own trees.  ABCI's logs grow so: an 8-byte all-reduce
takes 18, 31, 41, 50 and 62 us on 2, 4, 8, 16 and 32 nodes.  Physics assumed beyond the
logs: the fabric's per-step latency and bandwidth stay those fitted at P.  The vectorised
twin is compute/vector/collectives._trees.
"""

from __future__ import annotations

import functools
import math
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


def tree_steps(system: System, nodes):
    """⌊log2 n⌋/⌊log2 n_P⌋ for groups on ``nodes`` nodes (a number or an array), and where
    they span more nodes than the logs' n_P = ⌈P/g⌉ (the tree applies)."""
    n_big = -(-system.tree_beyond_gpus // system.gpus_per_node)
    nodes = np.asarray(nodes, dtype=float)
    return np.floor(np.log2(np.maximum(nodes, 1.0))) / math.floor(math.log2(n_big)), nodes > n_big


def tree_terms(system: System, group: Group, lk: Link, op: OperationOverride | None = None) -> list:
    """NCCL's tree per protocol line (α, β) of ``lk``: (latency s, seconds per byte before
    the tree correction, protocol kind), 2(P-1)·α·⌊log2 n⌋/⌊log2 n_P⌋ and 2β/r, where a
    library with trees chooses and the group spans more nodes than the logs; else none
    (also with a measured table, or an operation entry ``op`` of its own choice)."""
    if not system.library_trees or lk.table is not None or own_choice(op) or group.p <= 1:
        return []
    steps, on = tree_steps(system, group.nodes)
    if not bool(on):
        return []
    anchor = 2.0 * (system.tree_beyond_gpus - 1)
    kinds = ("Simple", *(nccl.protocol_kind(n) for n in lk.names))
    return [(anchor * a * float(steps), 2.0 * b / nccl.TREE_RATIO[k], k) for (a, b), k in zip(lk.lines(), kinds)]


def tree_time(terms: list, m, phi: float = 1.0) -> np.ndarray:
    """The cheapest of ``terms`` (:func:`tree_terms`) for m bytes: latency + m·(β'·φ)/c(m),
    c NCCL's tree correction for the protocol and size (nccl.correction)."""
    m = np.asarray(m, dtype=float)
    with np.errstate(over="ignore", invalid="ignore"):
        times = [lat + (per_byte * phi) * m / nccl.correction(k, m) for lat, per_byte, k in terms]
    return functools.reduce(np.minimum, times)


__all__ = ["own_choice", "tree_steps", "tree_terms", "tree_time"]
