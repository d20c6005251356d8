"""Measured collective tables over many groups at once (issue 29; ``collectives: table``,
issue 5): where a system file measures a collective at exactly an entry's GPU count and
span, network.allreduce_algorithm and allgather_algorithm take the table's time before
any algorithm, and so does :class:`Measured` per entry:

    all-reduce of m bytes     factor · table_time(table, m·φ)
    all-gather of m_i bytes   factor · table_time(table, p·m_i·φ)   (nccl-tests' output size)

The table is the one network.link finds for the operation's purpose (its primitive, the
entry's p and span: a reduce-scatter costed as an all-gather over ``layer_allreduce``
reads the all-reduce's table, as the per-point path does), ``factor`` the operation
entry's; table_time is compute/network.py's own (log-log interpolation), evaluated per
table on the entries that have it.  Elsewhere the α-β model's collective
(compute/vector/collectives.prepare) gives the time."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from oracle.compute.network import link, table_time


@dataclass
class Measured:
    """A collective per entry (``model``: vector/collectives' Collective, Formula, TwoLevel
    or Cheapest) with measured tables at some entries: ``which`` the index into
    ``tables`` of each entry's (link.table, link.factor), -1 where it has none."""

    op: str  # allreduce, allgather
    model: object
    p: np.ndarray
    phi: np.ndarray
    which: np.ndarray
    tables: list

    def take(self, rows: np.ndarray) -> Measured:
        return Measured(self.op, self.model.take(rows), self.p[rows], self.phi[rows], self.which[rows], self.tables)

    def __call__(self, m, first_min: bool = True) -> np.ndarray:
        m = np.asarray(m, dtype=float)
        t = np.array(self.model(m, first_min), dtype=float)
        extra = (1,) * max(0, m.ndim - self.p.ndim)  # per-layer sizes: a last axis
        shape = t.shape
        p, phi, which = (np.broadcast_to(x.reshape(x.shape + extra), shape) for x in (self.p, self.phi, self.which))
        m = np.broadcast_to(m, shape)
        for k, (table, factor) in enumerate(self.tables):
            at = which == k
            if at.any():
                data = m[at] * phi[at] if self.op == "allreduce" else p[at] * m[at] * phi[at]
                t[at] = factor * table_time(table, data)
        return t


def measured(ctx, op: str, purpose: str, model, p: np.ndarray, phi: np.ndarray, span: np.ndarray):
    """``model`` (the ``op`` for ``purpose``) with the system's measured tables where an
    entry's (p, span) has one (network.link with the GPU count); ``model`` itself where
    none does."""
    system = ctx.system
    if not system.collective_tables or not p.size:
        return model
    pairs, inv = np.unique(np.stack([p, span]), axis=1, return_inverse=True)
    found, which = [], np.full(pairs.shape[1], -1)
    for j, (q, s) in enumerate(pairs.T.tolist()):
        lk = link(system, int(s), purpose, int(q)) if q > 1 else None
        if lk is not None and lk.table is not None and lk.table.gpus == q:
            found.append((lk.table, lk.factor))
            which[j] = len(found) - 1
    if not found:
        return model
    return Measured(op, model, p, phi, which[inv.reshape(-1)], found)
