"""All-reduce and all-gather over many groups at once, by the algorithm the per-point path
runs for the operation (issue 29; compute/network.allreduce_algorithm and
allgather_algorithm).  A group is GPUs 0..p-1 (``stride`` None) or {0, stride,
2·stride, ...} (network.group_contiguous, group_strided).

Covered: every algorithm of vocabulary.ALGORITHMS, the context's or an operation
entry's (measured tables: vector/net.supported).  The ring of the α-β lines
(compute/vector/net.py); rhd, tree and ps (:class:`Formula`) of the link's own line;
hierarchical and ParaDL's leader (:class:`TwoLevel`) of the inner level's (g GPUs) and
the outer's (n nodes) own lines, the flat ring where the group has one node or one GPU
on each; auto (:class:`Cheapest`) numpy's min over ALLREDUCE_ALGORITHMS (all-reduce) or
over ring and rhd (all-gather; the all-reduce-only algorithms take the ring); the
formulas are compute/network.py's own (rhd_allreduce, tree_allreduce, ps_allreduce,
two_level, rhd_allgather) over arrays; NCCL's choice per call (compute/nccl.py).

NCCL: every group's candidates (compute/vector/nccl.py: latency, seconds per byte,
tree-correction row of each algorithm and protocol) are laid out per entry, and each
entry takes the cheapest, t = a + (b·φ)·m / c(m), the per-point arithmetic in its
order.  One size per call (a gradient all-reduce, a bucket) takes the first cheapest as
Python's min() does; per-layer sizes take numpy's min, as nccl.allreduce does for arrays.
The all-gather is NCCL's ring, the cheapest of its affine pieces (nccl.allgather_pieces)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from oracle.compute import nccl, network
from oracle.compute.network import link, primitive
from oracle.compute.trees import own_choice, tree_steps
from oracle.compute.vector import nccl as vnccl
from oracle.compute.vector import net, tables
from oracle.vocabulary import ALGORITHMS, ALLREDUCE_ALGORITHMS, AUTO, NCCL, NCCL_PINNED, RING

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
    """Whether the context's and every operation's algorithm is one of vocabulary.ALGORITHMS
    (all of them are here)."""
    return ctx.algorithm in ALGORITHMS and all(op.algorithm in (None, *ALGORITHMS) for _, op in ctx.system.operations)


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
class Formula:
    """network.py's rhd, tree or ps all-reduce, or rhd all-gather (``kind``: op_name), per
    entry, of the link's own line (α ``a``, β ``b``; network.allreduce_algorithm's lk)."""

    kind: str  # allreduce_rhd, allreduce_tree, allreduce_ps, allgather_rhd
    p: np.ndarray
    phi: np.ndarray
    a: np.ndarray
    b: np.ndarray
    servers: int = 1  # the system's ps_servers

    def take(self, rows: np.ndarray) -> Formula:
        return Formula(self.kind, *(x[rows] for x in (self.p, self.phi, self.a, self.b)), self.servers)

    def __call__(self, m, first_min: bool = True) -> np.ndarray:
        m = np.asarray(m, dtype=float)
        extra = max(0, m.ndim - self.p.ndim)
        p, phi, a, b = (_pad(x, extra) for x in (self.p, self.phi, self.a, self.b))
        q = np.maximum(p, 1)  # one GPU: 0 below (a collective over one PE)
        if self.kind == "allreduce_ps":
            t = network.ps_allreduce(q, m, a, b, phi, self.servers)
        else:
            t = FORMULAS[self.kind](q, m, a, b, phi)
        return np.where(p > 1, t, 0.0)


FORMULAS = {"allreduce_rhd": network.rhd_allreduce, "allreduce_tree": network.tree_allreduce,
            "allgather_rhd": network.rhd_allgather}  # fmt: skip


@dataclass
class TwoLevel:
    """The leader all-reduce (ParaDL §4.5.1; network._allreduce_one "leader": a reduce to
    one GPU per node, the leaders' ring, a broadcast back) or the hierarchical one (the g
    local ranks' rings across the nodes at once, φ_g = max(φ, φ of g flows)) per entry:
    network.two_level of the levels' own lines; the flat ring (``ring``) where the group
    has one node or one GPU on each."""

    name: str  # leader, hierarchical
    ring: Collective
    g: np.ndarray
    n: np.ndarray
    inner: tuple  # (α, β) of the g GPUs' level, per entry
    outer: tuple  # (α, β) of the n nodes' level
    phi_g: np.ndarray

    def take(self, rows: np.ndarray) -> TwoLevel:
        return TwoLevel(self.name, self.ring.take(rows), self.g[rows], self.n[rows],
                        tuple(x[rows] for x in self.inner), tuple(x[rows] for x in self.outer),
                        self.phi_g[rows])  # fmt: skip

    def __call__(self, m, first_min: bool = True) -> np.ndarray:
        m = np.asarray(m, dtype=float)
        extra = max(0, m.ndim - self.g.ndim)
        g, n, phi, phi_g = (_pad(x, extra) for x in (self.g, self.n, self.ring.phi, self.phi_g))
        inner, outer = (tuple(_pad(x, extra) for x in lv) for lv in (self.inner, self.outer))
        two = network.two_level(self.name, g, n, m, inner, outer, phi, phi_g)
        return np.where((n > 1) & (g > 1) & _pad(self.ring.p > 1, extra), two, self.ring(m, first_min))


@dataclass
class Cheapest:
    """``auto``: the cheapest of the algorithms' times per entry and size, as
    network.allreduce_algorithm stacks them (numpy's min over ALLREDUCE_ALGORITHMS in
    order) and allgather_algorithm takes the smaller of ring and rhd."""

    parts: list

    def take(self, rows: np.ndarray) -> Cheapest:
        return Cheapest([c.take(rows) for c in self.parts])

    def __call__(self, m, first_min: bool = True) -> np.ndarray:
        times = [c(m, first_min) for c in self.parts]
        shape = np.broadcast_shapes(*(t.shape for t in times))
        return np.stack([np.broadcast_to(t, shape) for t in times]).min(axis=0)


def leader(ctx, p, phi, purpose: str, stride=None):
    """network.allreduce_algorithm(..., "leader") of every entry's group: :class:`TwoLevel`,
    or the algorithm of the system's operation entry where it names one."""
    return prepare(ctx, "allreduce", p, phi, purpose, stride, None if own_algorithm(ctx.system, purpose) else "leader")


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


def prepare(ctx, op: str, p, phi, purpose: str, stride=None, algo: str | None = None):
    """The ``op`` (allreduce, allgather) of every entry's group (p, stride arrays), by
    ``algo`` (None: :func:`algorithm`'s): a :class:`Collective` (ring, NCCL's),
    :class:`Formula`, :class:`TwoLevel` or :class:`Cheapest` (auto)."""
    p = np.asarray(p)
    phi = np.broadcast_to(np.asarray(phi, dtype=float), p.shape)
    span = np.where(p > 1, _span(ctx.system.gpus_per_node, p, stride), 1)
    model = _model(ctx, op, p, phi, purpose, stride, algo or algorithm(ctx, purpose), span)
    return tables.measured(ctx, op, purpose, model, p, phi, span)  # a measured table wins (network.link)


def _model(ctx, op: str, p, phi, purpose: str, stride, algo: str, span):
    """:func:`prepare`'s collective of the α-β model (and NCCL's)."""
    if algo in NCCL_NAMES:
        return _nccl(ctx, op, p, phi, purpose, stride, algo)
    lines = net.lines(ctx.system, span, purpose)
    ring = Collective("ring_" + op, p, phi, *_stack(lines, p.size))
    entry = ctx.system.operation(purpose) or ctx.system.operation(primitive(purpose))
    if op == "allreduce" and algo == RING and ctx.system.library_trees and not own_choice(entry):
        return Cheapest([ring, _trees(ctx.system, p, phi, stride, span, purpose, lines)])  # trees.tree_terms
    if op == "allgather":  # network.allgather_algorithm: the all-reduce-only ones take the ring
        names = {"rhd": ("rhd",), AUTO: (RING, "rhd")}.get(algo, (RING,))
    else:
        names = ALLREDUCE_ALGORITHMS if algo == AUTO else (algo,)
    parts = [_one(ctx, op, name, ring, lines[0][:2], purpose, stride) for name in names]
    return parts[0] if len(parts) == 1 else Cheapest(parts)


def _trees(system, p, phi, stride, span, purpose: str, lines: list) -> Collective:
    """trees.tree_terms and tree_time per entry: NCCL's tree for each of the ring's ``lines``
    (net.lines), 2(P-1)·α·⌊log2 n⌋/⌊log2 n_P⌋ and 2β/r with the tree correction of the line's
    protocol, where the entry's group spans more nodes than the logs."""
    nodes = vnccl.groups(system.gpus_per_node, p, stride)[0]
    steps, on = tree_steps(system, nodes)
    tops = np.array([level.max_gpus for level in system.network])
    at = np.minimum(np.searchsorted(tops, np.where(p > 1, span, 1), side="left"), tops.size - 1)
    kinds = [("Simple", *map(nccl.protocol_kind, link(system, int(top), purpose).names)) for top in tops.tolist()]
    anchor = 2.0 * (system.tree_beyond_gpus - 1)
    cands, corr = [], []
    for k, (a, b, has) in enumerate(lines):  # per level (a few), then each entry's level
        level_kinds = [ks[k] if k < len(ks) else "Simple" for ks in kinds]
        ratio = np.array([nccl.TREE_RATIO[x] for x in level_kinds])[at]
        cands.append((anchor * a * steps, 2.0 * b / ratio, has & on & (p > 1)))
        corr.append(np.array([1 + vnccl.CORRECTION_KINDS.index(x) for x in level_kinds], dtype=np.int8)[at])
    return Collective("nccl_allreduce", p, phi, *_stack(cands, p.size), np.stack(corr))


def _one(ctx, op: str, name: str, ring: Collective, own: tuple, purpose: str, stride):
    """One algorithm's collective per entry; ``own``: the (α, β) arrays of the link's own line."""
    if name == RING:
        return ring
    if name in ("leader", "hierarchical"):
        system = ctx.system
        nodes, per, _ = vnccl.groups(system.gpus_per_node, ring.p, stride)
        cf = net.contention(system, per, ctx.options.contention)
        phi_g = np.where(cf > ring.phi, cf, ring.phi)  # Python's max(φ, cf)
        return TwoLevel(name, ring, per, nodes, _own(system, per, purpose),
                        _own(system, nodes * system.gpus_per_node, purpose), phi_g)  # fmt: skip
    return Formula(f"{op}_{name}", ring.p, ring.phi, own[0], own[1], ctx.system.ps_servers)


def _nccl(ctx, op: str, p, phi, purpose: str, stride, algo: str) -> Collective:
    """NCCL's candidates per entry (compute/vector/nccl.py)."""
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
