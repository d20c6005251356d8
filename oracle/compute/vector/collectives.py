"""All-reduce and all-gather over many groups at once, by the algorithm the per-point path
runs for the operation (issue 29; compute/network.allreduce_algorithm and
allgather_algorithm): the ring of the α-β lines (compute/vector/net.py), or NCCL's choice
per call (compute/nccl.py).  A group is GPUs 0..p-1 (``stride`` 0) or {0, stride,
2·stride, ...} (network.group_contiguous, group_strided).

NCCL: every group's candidates (compute/vector/nccl.py: latency, seconds per byte,
tree-correction row of each algorithm and protocol) are laid out per entry, and each
entry takes the cheapest, t = a + (b·φ)·m / c(m), the per-point arithmetic in its order.  One size per call (a gradient all-reduce, a bucket)
takes the first cheapest as Python's min() does; per-layer sizes take numpy's min, as
nccl.allreduce does for arrays.  The all-gather is NCCL's ring, the cheapest of its
affine pieces (nccl.allgather_pieces)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from oracle.compute import nccl
from oracle.compute.network import link, primitive
from oracle.compute.vector import nccl as vnccl
from oracle.compute.vector import net
from oracle.vocabulary import NCCL, NCCL_PINNED, RING

NCCL_NAMES = (NCCL, *NCCL_PINNED)


def own_algorithm(system, purpose: str) -> str | None:
    """The algorithm of the system's operation entry for ``purpose`` (network.link's)."""
    op = system.operation(purpose) or system.operation(primitive(purpose))
    return op.algorithm if op is not None else None


def algorithm(ctx, purpose: str) -> str:
    """The algorithm the per-point path runs for ``purpose``: the operation entry's own,
    else the context's."""
    return own_algorithm(ctx.system, purpose) or ctx.algorithm


def supported(ctx) -> bool:
    """Whether every operation's algorithm is a ring or NCCL's (the others: point by point)."""
    ok = (RING, *NCCL_NAMES)
    return ctx.algorithm in ok and all(op.algorithm in (None, *ok) for _, op in ctx.system.operations)


def _span(gpn: int, p: np.ndarray, stride) -> np.ndarray:
    if stride is None:
        return net.span_contiguous(p, gpn)
    return net.span_strided(p, stride, gpn)


@dataclass
class Collective:
    """One collective per entry, ready for any message size: its candidates' lines
    (candidates x entries: ``a`` seconds, ``b`` seconds per byte, ``has`` whether the
    entry has the candidate, ``corr`` its row of vector/nccl.CORRECTION_ROWS), evaluated as the
    per-point formula of ``kind`` (module doc)."""

    kind: str  # ring_allreduce, ring_allgather, nccl_allreduce, nccl_allgather
    p: np.ndarray
    phi: np.ndarray
    a: np.ndarray
    b: np.ndarray
    has: np.ndarray
    corr: np.ndarray | None = None

    def take(self, rows: np.ndarray) -> Collective:
        """The collectives of the entries ``rows``."""
        corr = None if self.corr is None else self.corr[:, rows]
        return Collective(self.kind, self.p[rows], self.phi[rows], self.a[:, rows], self.b[:, rows],
                          self.has[:, rows], corr)  # fmt: skip

    def __call__(self, m, first_min: bool = True) -> np.ndarray:
        """Seconds for m bytes (a number, one per entry, or entries x layers); ``first_min``:
        NCCL's all-reduce of one size per call (Python's min over the candidates)."""
        m = np.asarray(m, dtype=float)
        extra = max(0, m.ndim - self.p.ndim)
        p, phi = _pad(self.p, extra), _pad(self.phi, extra)
        shape = np.broadcast_shapes(p.shape, m.shape)
        if not self.a.shape[0]:
            return np.zeros(shape)
        a, b = _pad(self.a, extra), _pad(self.b, extra)
        if self.kind == "ring_allreduce":
            t = 2.0 * (p - 1) * (a + m / p * b * phi)
        elif self.kind == "ring_allgather":
            t = (p - 1) * (a + m * b * phi)
        elif self.kind == "nccl_allgather":
            t = a + m * b * phi
        else:
            idx = np.broadcast_to(nccl.correction_index(m), shape)  # each size's column of the rows
            c = vnccl.CORRECTION_ROWS[_pad(self.corr, extra), idx[None]]
            t = a + (b * phi) * m / c
        t = np.broadcast_to(t, (self.a.shape[0], *shape))
        has = np.broadcast_to(_pad(self.has, extra), t.shape)
        masked = np.where(has, t, np.inf)
        if first_min and self.kind == "nccl_allreduce" and np.isnan(masked).any():
            best = _first_min(t, has)  # Python's min: a NaN wins only as the first candidate
        else:
            best = masked.min(axis=0)  # numpy's min (per-layer arrays, the ring's lines): NaN wins
        return np.where(p > 1, best, 0.0)


def _first_min(t: np.ndarray, has: np.ndarray) -> np.ndarray:
    """Python's min() over each entry's candidates, in order: a later one only when strictly cheaper."""
    best, started = np.full(t.shape[1:], np.inf), np.zeros(t.shape[1:], dtype=bool)
    for tk, hk in zip(t, has):
        best = np.where(hk & (~started | (tk < best)), tk, best)
        started = started | hk
    return best


@dataclass
class Leader:
    """ParaDL's leader all-reduce per entry (§4.5.1; network._allreduce_one "leader"): a
    reduce to one GPU per node, the leaders' ring, a broadcast back,
    2·2(g-1)(α_i + m/g·β_i) + 2(n-1)(α_o + m/n·β_o·φ) of the levels' own lines; the flat
    ring (``ring``) where the group has one node or one GPU on each."""

    ring: Collective
    g: np.ndarray
    n: np.ndarray
    inner: tuple  # (α, β) of the g GPUs' level, per entry
    outer: tuple  # (α, β) of the n nodes' level

    def take(self, rows: np.ndarray) -> Leader:
        return Leader(self.ring.take(rows), self.g[rows], self.n[rows], tuple(x[rows] for x in self.inner),
                      tuple(x[rows] for x in self.outer))  # fmt: skip

    def __call__(self, m, first_min: bool = True) -> np.ndarray:
        m = np.asarray(m, dtype=float)
        extra = max(0, m.ndim - self.g.ndim)
        g, n, phi = (_pad(x, extra) for x in (self.g, self.n, self.ring.phi))
        (ai, bi), (ao, bo) = ((_pad(a, extra), _pad(b, extra)) for a, b in (self.inner, self.outer))
        local = 2.0 * (g - 1) * (ai + m / g * bi)
        two = 2.0 * local + 2.0 * (n - 1) * (ao + m / n * bo * phi)
        return np.where((n > 1) & (g > 1) & _pad(self.ring.p > 1, extra), two, self.ring(m, first_min))


def leader(ctx, p, phi, purpose: str, stride=None):
    """network.allreduce_algorithm(..., "leader") of every entry's group: :class:`Leader`,
    or the algorithm of the system's operation entry where it names one."""
    system = ctx.system
    if own_algorithm(system, purpose) is not None:
        return prepare(ctx, "allreduce", p, phi, purpose, stride)
    p = np.asarray(p)
    ring = prepare(ctx, "allreduce", p, phi, purpose, stride, RING)
    nodes, per, _ = vnccl.groups(system.gpus_per_node, p, stride)
    return Leader(ring, per, nodes, _own(system, per, purpose), _own(system, nodes * system.gpus_per_node, purpose))


def data_group(ctx, p1, p2, phi):
    """data_filter.data_group_allreduce of every entry: AR_φ among {0, p2, 2·p2, ...}, the
    leader pattern where the system's implementation names it (data_filter_allreduce)."""
    if ctx.system.implementation.data_filter_allreduce == "leader":
        return leader(ctx, p1, phi, "gradient_allreduce", stride=p2)
    return prepare(ctx, "allreduce", p1, phi, "gradient_allreduce", stride=p2)


def _own(system, spans: np.ndarray, purpose: str) -> tuple[np.ndarray, np.ndarray]:
    """(α, β) of network.link's own line for every span."""
    u, inv = np.unique(spans, return_inverse=True)
    lks = [link(system, int(x), purpose) for x in u.tolist()]
    inv = inv.reshape(spans.shape)
    return np.array([lk.alpha_s for lk in lks])[inv], np.array([lk.beta_s_per_byte for lk in lks])[inv]


def prepare(ctx, op: str, p, phi, purpose: str, stride=None, algo: str | None = None) -> Collective:
    """The ``op`` (allreduce, allgather) of every entry's group (p, stride arrays), by
    ``algo`` (None: :func:`algorithm`'s)."""
    p = np.asarray(p)
    phi = np.broadcast_to(np.asarray(phi, dtype=float), p.shape)
    algo = algo or algorithm(ctx, purpose)
    if algo == RING:
        span = np.where(p > 1, _span(ctx.system.gpus_per_node, p, stride), 1)
        return Collective("ring_" + op, p, phi, *_stack(net.lines(ctx.system, span, purpose), p.size))
    algos = () if op == "allgather" else nccl.nccl_algo(ctx.system, None if algo == NCCL else algo)
    cands = vnccl.candidates(ctx, p, stride, purpose, op, algos) if p.size else []
    corr = None if op == "allgather" or not cands else np.stack([c[3] for c in cands])
    return Collective("nccl_" + op, p, phi, *_stack([c[:3] for c in cands], p.size), corr)


def _stack(cands: list, size: int) -> tuple:
    """(a, b, has) of candidates as candidates x entries arrays."""
    if not cands:
        return np.zeros((0, size)), np.zeros((0, size)), np.zeros((0, size), dtype=bool)
    return tuple(np.stack([np.broadcast_to(c[j], (size,)) for c in cands]) for j in range(3))


def allreduce(ctx, p, m, phi, purpose: str, stride=None, first_min: bool = True) -> np.ndarray:
    """AR_φ(p, m) per entry (m may have a last axis of per-layer sizes):
    network.allreduce_algorithm's seconds.  ``first_min``: one size per call, else
    per-layer arrays (numpy's min, as nccl.allreduce takes for them)."""
    return prepare(ctx, "allreduce", p, phi, purpose, stride)(m, first_min)


def allgather(ctx, p, m_each, phi, purpose: str, stride=None) -> np.ndarray:
    """AG_φ(p, m_i) per entry: network.allgather_algorithm's seconds."""
    return prepare(ctx, "allgather", p, phi, purpose, stride)(m_each)


def _pad(a: np.ndarray, extra: int) -> np.ndarray:
    return a.reshape(a.shape + (1,) * extra) if extra else a
