"""Collectives as NCCL runs them (issue 25): per call, the algorithm and protocol NCCL's
tuner picks, from the topology, in the α-β vocabulary of compute/network.py.

Facts (no code) from NCCL's tuning model, NVIDIA/nccl ``src/graph/tuning.cc``
(``ncclTopoTuneModel``, ``ncclTopoGetAlgoTime``; read at v2.8.3 and at v2.29/2.30), and its
environment documentation (``NCCL_ALGO``, ``NCCL_PROTO``, ``NCCL_NVLS_ENABLE``,
``NCCL_COLLNET_ENABLE``):

- NCCL times every (algorithm, protocol) pair as latency + bytes / bandwidth and runs the
  fastest.  Algorithms for all-reduce: ring, tree (double binary tree across nodes, a chain
  inside a node), NVLS (the reduction runs in a 3rd-generation NVSwitch; NVLS-tree across
  nodes), CollNet (the fabric's switches reduce: SHARP; off unless NCCL_COLLNET_ENABLE).
  Protocols: LL, LL128, Simple (NVLS and CollNet: Simple only).
- A ring of p ranks on n nodes takes 2(p-1) steps, 2(n-1) of them across the network,
  the rest inside a node; a tree's latency is 2((p/n - 1)·intra + log2(n)·inter) (log2
  rounded down, NCCL's log2i): it grows with the log of the nodes, a ring's inter-node
  part with the nodes.  NVLS-tree: the NVSwitch latency + 2·log2(n)·inter.  CollNet:
  2·(intra + 0.4 us per further local GPU) + inter, whatever the node count.
- Bandwidths relative to the ring's: a tree's bus bandwidth is 0.92 of it (Simple),
  x 120/128 more for LL128, / 3.8 for LL (against the ring's / 2); trees and CollNet turn
  bus into algorithm bandwidth with a factor 1/2, rings and NVLS with p/(2(p-1)).  On up to
  two nodes NCCL takes the intra-node bandwidth for the tree: a double binary tree on two
  nodes moves half the bytes a ring does through the network (physics: each node is the
  root of one tree, the leaf of the other).  NVLS: x 2 the NVLink bandwidth as an
  all-reduce pipelines two operations, times an efficiency e (tuning.cc's nvlsEfficiency:
  0.85 Hopper, 0.74 Blackwell; oracle takes the measured one, below); its latency 25 us.
  Tree bandwidths at medium sizes are corrected by NCCL's measured
  ``treeCorrectionFactor`` (per protocol, per power of two from 64 B).

What oracle takes from the system file instead of NCCL's constants: every per-step
latency and bandwidth.  A level's own α/β is its Simple line, its ``protocols:`` lines
named LL and LL128 are those protocols (a protocol a level lacks takes its Simple line).
The intra-node steps use the level of the g GPUs of one NCCL node (an NVLink domain:
a host, or ``interconnect.nvlink_domain_gpus`` across hosts), the inter-node steps the
level of the collective's span.  Per protocol k with intra line (α_i, β_i) and inter line
(α_o, β_o), for m bytes on p GPUs, n nodes, g GPUs per node:

    ring      2(p-n)·α_i + 2(n-1)·α_o + 2(p-1)/p · m · max(β_i, β_o)
    tree      2(g-1)·α_i + 2⌊log2 n⌋·α_o + 2/(r_k·c_k(m)) · m · max(β_i, h·β_o)
    nvls      25 us + 2⌊log2 n⌋·α_o + 2(p-1)/p · m · max(β_i/(2e), h·β_o)
    collnet   2(α_i + 0.4 us·(g-1)) + 2·α_o + 2 · m · max(β_i, β_o)

with r_k the tree/ring bandwidth ratio, c_k(m) the tree correction, h = 1/2 on two nodes
(else 1), e the NVLS efficiency.  Not modelled: NCCL's per-call base latency (a few us,
inside the fitted α), the ring's large-message latency "plateau", channel counts, and
PAT.  CollNet's 2·α_o (one trip up and down the switch tree) is the physics assumed; its
bandwidth term is tuning.cc's (bus bandwidth to algorithm bandwidth 1/2), which one log of
64 H100 on SHARP bears out (COLLNET_BETA_FACTOR).  NVLS's efficiency is measured (NVLS_EFFICIENCY).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

PROTOCOLS = ("LL", "LL128", "Simple")

# tuning.cc: a tree's bus bandwidth against the ring's of the same protocol: x 0.92 for every
# protocol; LL128 x 120/128 more (x 7/9 on one node); LL / 3.8 where the ring's LL takes / 2
TREE_RATIO = {"LL": 0.92 / 3.8 / 0.5, "LL128": 120.0 / 128.0, "Simple": 0.92}
TREE_RATIO_ONE_NODE = {"LL": 0.92 / 3.8 / 0.5, "LL128": 7.0 / 9.0, "Simple": 0.92}
# tuning.cc treeCorrectionFactor (v2.29): per protocol, per power of two from 64 B (index
# log2(m/64)); 1 beyond the table
TREE_CORRECTION = {
    "LL": (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0),
    "LL128": (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0),
    "Simple": (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9),
}
NVLS_LATENCY_S = 25e-6  # tuning.cc hwLatencies, NVLink, NVLS, Simple: 25 us
# NVLS's efficiency e, measured: its all-reduce bus bandwidth is 2e x the NVLink bandwidth per
# direction of the system file.  NCCL's tuner ranks candidates with nvlsEfficiency (tuning.cc:
# 0.85 Hopper, 0.74 Blackwell), which overstates the time: 8 H100 reach a peak bus bandwidth of
# about 480 GB/s with NVLS (NCCL's maintainer in NVIDIA/nccl-tests#212, 2024: "On 8 GPUs, you
# should reach a peak busBw of ~480GB/s"; NVIDIA's GTC talk S62129 gives the same, as cited in
# NVIDIA/nccl#1374) against 2 x 0.85 x 450 = 765 from tuning.cc: e = 480 / 900 = 0.533; one
# GB200 NVL72 rack (72 GPUs, NCCL 2.26.2) 835-847 GB/s at 4-8 GiB
# (data/nccl-tests/gb200-nvl72-coreweave/all_reduce_18nodes.txt) against 2 x 0.74 x 900 =
# 1,332: e = 840 / 1,800 = 0.467
NVLS_EFFICIENCY = {3: 0.533, 4: 0.467}  # NVSwitch generation 3 (Hopper), 4 (Blackwell)
COLLNET_ARITY_S = 0.4e-6  # tuning.cc: CollNet Direct, 0.4 us arity serialisation per local GPU
# CollNet's seconds per byte over the slower link's: 2, tuning.cc's bus-to-algorithm factor 1/2 for
# CollNet Direct and Chain (as for trees), which 64 H100 measured with SHARP bear out: algbw
# 180-195 GB/s on nodes of 8 x 400 Gb/s (data/nccl-tests/h100-coreweave-sharp/, NCCL 2.18.1,
# CollNet Chain); with 1 (the node sending m through the network once) dgx-h100-superpod
# projected that run 2.0-2.2x too fast.  So CollNet moves bytes no faster than a ring and wins
# on latency only (its 2·α_o whatever the node count)
COLLNET_BETA_FACTOR = 2.0


def protocol_kind(name: str) -> str:
    """LL, LL128 or Simple: how a level's protocol line behaves in a tree."""
    key = name.upper()
    if key.startswith("LL128"):
        return "LL128"
    if key.startswith("LL"):
        return "LL"
    return "Simple"


@dataclass(frozen=True)
class Term:
    """One (algorithm, protocol) candidate: t = const + Σ c·α[where] + m·max(c·β[where]) / tcf(m),
    where ``where`` is ``intra`` or ``inter`` and the α/β are the protocol's line there."""

    algorithm: str
    protocol: str  # the lines' label (LL, LL128, Simple, or a level's own protocol name)
    latency: tuple[tuple[str, float], ...]
    bandwidth: tuple[tuple[str, float], ...]
    const_s: float = 0.0
    correction: str | None = None  # protocol kind whose tree correction divides the bandwidth

    @property
    def label(self) -> str:
        return f"{self.algorithm}/{self.protocol}"


@dataclass(frozen=True)
class Offers:
    """What the system offers beyond rings and trees (Interconnect, collectives: collnet)."""

    nvls_efficiency: float | None = None  # NVLS usable (NVSwitch 3+), its efficiency
    collnet: bool = False
    ll128_across: bool = True  # LL128 in collectives across NCCL nodes (collectives.ll128_across_nodes)


def protocols_for(labels: tuple[str, ...], n: int, ll128_across: bool = True) -> tuple[str, ...]:
    """The protocol lines NCCL may run for a collective over ``n`` NCCL nodes: every label,
    less LL128's where it does not cross nodes (module doc, "LL128 across nodes")."""
    if n > 1 and not ll128_across:
        return tuple(lb for lb in labels if protocol_kind(lb) != "LL128")
    return labels


def terms(p: int, n: int, g: int, protocols: tuple[tuple[str, str], ...], offers: Offers = Offers()) -> list[Term]:
    """The all-reduce candidates for p GPUs on n NCCL nodes, g on each (module doc);
    ``protocols``: (label, kind) of the lines both levels are read at."""
    out = []
    hn = 0.5 if n == 2 else 1.0
    steps = 2 * (p - 1) / p
    log_n = 2 * int(math.log2(n)) if n > 1 else 0
    for label, kind in protocols:
        ring_lat = (("intra", 2.0 * (p - n)), ("inter", 2.0 * (n - 1))) if n > 1 else (("intra", 2.0 * (p - 1)),)
        ring_bw = (("intra", steps), ("inter", steps)) if n > 1 else (("intra", steps),)
        out.append(Term("ring", label, ring_lat, ring_bw))
        ratio = (TREE_RATIO if n > 1 else TREE_RATIO_ONE_NODE)[kind]
        tree_lat = (("intra", 2.0 * (g - 1)), ("inter", float(log_n))) if n > 1 else (("intra", 2.0 * (g - 1)),)
        tree_bw = (("intra", 2.0 / ratio), ("inter", 2.0 * hn / ratio)) if n > 1 else (("intra", 2.0 / ratio),)
        out.append(Term("tree", label, tree_lat, tree_bw, correction=kind))
    simple = "Simple"
    if offers.nvls_efficiency and g >= 2:
        e = offers.nvls_efficiency
        lat = (("inter", float(log_n)),) if n > 1 else ()
        bw = (("intra", steps / (2.0 * e)), ("inter", steps * hn)) if n > 1 else (("intra", steps / (2.0 * e)),)
        out.append(Term("nvls", simple, lat, bw, NVLS_LATENCY_S))
    if offers.collnet and n > 1:
        f = COLLNET_BETA_FACTOR
        out.append(Term("collnet", simple, (("intra", 2.0 * min(1, g - 1)), ("inter", 2.0)),
                        (("intra", f), ("inter", f)), COLLNET_ARITY_S * 2 * (g - 1)))  # fmt: skip
    return out


_CORRECTION = {k: np.array((*v, 1.0)) for k, v in TREE_CORRECTION.items()}  # 1 past the end


def correction_index(m: np.ndarray) -> np.ndarray:
    """Index of m bytes in NCCL's tree correction table: log2(m/64) rounded down; past the
    end (factor 1) below 64 B and beyond the table."""
    size = len(TREE_CORRECTION["Simple"])
    with np.errstate(divide="ignore", invalid="ignore"):
        idx = np.floor(np.log2(np.asarray(m, dtype=float) / 64.0))
    return np.where((idx >= 0) & (idx < size), idx, size).astype(int)


def correction(kind: str, m: np.ndarray) -> np.ndarray:
    """NCCL's tree correction factor for m bytes (1 below 64 B and beyond the table)."""
    return _CORRECTION[kind][correction_index(m)]


def term_parts(term: Term, lines: dict) -> tuple[float, float]:
    """(latency, seconds per byte before the tree correction) of a candidate with
    ``lines[(where, protocol)] = (α, β)``: the slowest link bounds the bandwidth."""
    lat = term.const_s + sum(c * lines[(w, term.protocol)][0] for w, c in term.latency)
    return lat, max(c * lines[(w, term.protocol)][1] for w, c in term.bandwidth)


def term_time(term: Term, lines: dict, m: np.ndarray, phi: float = 1.0) -> np.ndarray:
    """Seconds of one candidate for m bytes."""
    lat, per_byte = term_parts(term, lines)
    with np.errstate(over="ignore", invalid="ignore"):
        bw = m * (per_byte * phi)
        if term.correction is not None:
            bw = bw / correction(term.correction, m)
    return lat + bw


def link_lines(lk) -> dict[str, tuple[float, float]]:
    """A Link's lines by protocol label: its own line is Simple, its protocol lines by name."""
    out = {"Simple": (lk.alpha_s, lk.beta_s_per_byte)}
    for name, line in zip(lk.names, lk.protocols):
        out.setdefault(name, line)
    return out


def node_gpus(system) -> int:
    """GPUs of one NCCL node: a host, or an NVLink domain larger than a host
    (interconnect.nvlink_domain_gpus, a multiple of gpus_per_node: NVL72's 72)."""
    return max(system.gpus_per_node, system.interconnect.nvlink_domain_gpus or 0)


def partial_domain(system, group, stride: int = 1) -> list[int] | None:
    """The GPUs of ``group`` (a collective's, network.Group: GPUs {0, stride, 2·stride, ...})
    on each NVLink domain it occupies, where the domain spans hosts, the collective is costed
    over several of them and they hold unequal numbers (GPUs 0..107 on NVL72: [72, 36]); else
    None.  NCCL makes each NVLink domain one node, a partly filled one too (init.cc at
    v2.26.2-1: a node's ranks are those its topology search joined, any number of them): the
    collective runs on nodes of unequal size, which :func:`nccl_nodes` costs as the fuller's g
    (docs/cost-model.md, on GB200 NVL72)."""
    domain = node_gpus(system)
    if domain <= system.gpus_per_node or stride >= domain or nccl_nodes(system, group)[0] <= 1:
        return None  # one GPU a domain (stride >= domain): equal
    k = ((group.p - 1) * stride) // domain + 1
    first = -(-np.arange(k + 1) * domain // stride)  # the first GPU of the group on each domain
    counts = [c for c in np.diff(np.minimum(first, group.p)).tolist() if c]
    return counts if len(counts) > 1 and min(counts) < max(counts) else None


def partial_domain_note(system, collectives) -> str | None:
    """What a point's ``collectives`` ((network.Group, stride) of those NCCL's model costs)
    assumed of partly filled NVLink domains (:func:`partial_domain`), else None: the one
    wording of it."""
    said = list(dict.fromkeys(filter(None, (domains_text(partial_domain(system, g, s)) for g, s in collectives))))
    if not said:
        return None
    tail = ("the partial NVLink domain taken as fast across the network as a full one" if len(said) == 1 else
            "the partial NVLink domains taken as fast across the network as full ones")  # fmt: skip
    return f"{' and '.join(said)}, {tail}"


def domains_text(counts: list[int] | None) -> str | None:
    """[72, 36] -> '1 x 72 + 36 GPUs: 2 NCCL nodes' (runs of equal counts; many: their range)."""
    if counts is None:
        return None
    runs = [(c, len(list(same))) for c, same in itertools.groupby(counts)]
    parts = [f"{n} x {c}" for c, n in runs[:-1]] + [str(c) if n == 1 else f"{n} x {c}" for c, n in runs[-1:]]
    what = " + ".join(parts) if len(parts) <= 3 else f"{len(counts)} domains of {min(counts)} to {max(counts)}"
    return f"{what} GPUs: {len(counts)} NCCL nodes"


def nccl_nodes(system, group) -> tuple[int, int]:
    """(n, g): the NCCL nodes the group's GPUs sit on (GPU i on node i // :func:`node_gpus`)
    and the most of them on one: its hosts where a host is the NVLink domain, else
    network.placed over the domains (a strided group's too: GPUs 0, 10, ..., 90 on NVL72 are
    8 + 2 on 2 racks)."""
    from oracle.compute.network import placed  # network imports this module

    domain = node_gpus(system)
    if domain <= system.gpus_per_node:
        return group.nodes, group.per_node
    return placed(group.p, group.stride, domain)


NCCL_ALGORITHMS = ("ring", "tree", "nvls", "collnet")  # NCCL_ALGO's names (src/graph/tuning.cc)


def offers(system, algos: tuple[str, ...] = ()) -> Offers:
    """What the system offers; CollNet named in NCCL_ALGO (``algos``) is enabled where the
    fabric reduces (SHARP), as NCCL_ALGO=CollNet runs with NCCL_COLLNET_ENABLE=1."""
    ic = system.interconnect
    return Offers(NVLS_EFFICIENCY.get(min(ic.nvswitch_generation, 4)) if ic.nvls else None,
                  system.collnet or ("collnet" in algos and ic.sharp), system.ll128_across_nodes)  # fmt: skip


def nccl_algo(system, pinned: str | None = None) -> tuple[str, ...]:
    """NCCL_ALGO in force, the one vocabulary of both restrictions: the algorithm an option,
    stack or system file pins (``--collective nvls`` is NCCL_ALGO=nvls), else a stack's
    ``communication.nccl_algorithms`` (System.nccl_algorithms), else () (NCCL's choice)."""
    return (pinned,) if pinned else system.nccl_algorithms


def allreduce(system, group, m: np.ndarray, phi: float, purpose: str, link, only: str | None = None):
    """NCCL's all-reduce of m bytes over ``group`` (module doc): the cheapest candidate per
    size among NCCL_ALGO's (:func:`nccl_algo`, ``only`` pinned) where the group has one of
    them (CollNet needs two nodes, NVLS two GPUs on a node), else NCCL's choice; (seconds,
    the label of the one used, ``nccl`` alone for per-layer arrays)."""
    labels, lat, per_byte, corr = _candidates(system, group, purpose, link, nccl_algo(system, only))
    if np.ndim(m) == 0:  # one size (a bucket's): the same arithmetic on Python floats, faster
        x = float(m)
        log = float(np.log2(np.asarray(x / 64.0))) if 0.0 < x < math.inf else -1.0
        k = math.floor(log) if 0 <= log < corr.shape[1] - 1 else corr.shape[1] - 1
        times = [a + (b * phi) * x / c for a, b, c in zip(lat.tolist(), per_byte.tolist(), corr[:, k].tolist())]
        best = min(times)
        return np.asarray(best), "nccl " + labels[times.index(best)]
    flat = np.atleast_1d(m).ravel()
    with np.errstate(over="ignore", invalid="ignore"):
        times = lat[:, None] + (per_byte[:, None] * phi) * flat[None, :] / corr[:, correction_index(flat)]
    best = times.min(axis=0).reshape(m.shape)
    used = "nccl " + labels[int(times[:, 0].argmin())] if m.ndim == 0 else "nccl"
    return best, used


def inter_span(system, span, n):
    """The span whose level NCCL's steps between its ``n`` nodes take: the group's, at least
    the n NVLink domains' GPUs where a domain spans hosts (GPUs 0, 10, ..., 90 on NVL72 occupy
    10 trays, 40 GPUs, but 2 racks: 144, InfiniBand); the group's span where a domain is a host
    (n hosts x gpus_per_node already).  Scalars or arrays (compute/vector/nccl.py)."""
    return np.maximum(span, n * node_gpus(system))


def group_lines(system, group, purpose: str, link) -> tuple[int, int, dict, tuple[str, ...]]:
    """(n, g, lines, labels): the group's NCCL nodes and GPUs on each, and the lines
    {(intra|inter, protocol): (α, β)} of the level of one node's g GPUs and of the span's
    level; a protocol one level lacks takes that level's Simple line; none that NCCL does not
    run across the group's nodes (:func:`protocols_for`)."""
    n, g = nccl_nodes(system, group)
    gpn = system.gpus_per_node
    li = link_lines(link(system, g if g <= gpn else -(-g // gpn) * gpn, purpose))
    lo = link_lines(link(system, int(inter_span(system, group.span, n)), purpose)) if n > 1 else li
    labels = protocols_for(tuple(dict.fromkeys((*li, *lo))), n, system.ll128_across_nodes)
    lines = {}
    for label in labels:
        lines[("intra", label)] = li.get(label, li["Simple"])
        lines[("inter", label)] = lo.get(label, lo["Simple"])
    return n, g, lines, labels


def _candidates(system, group, purpose: str, link, algos: tuple[str, ...] = ()):
    """Every candidate for the group: labels, latencies, seconds per byte, and the rows of
    the tree correction (ones for the others); cached on the (frozen) system as
    network.link is: a sweep asks for the same few groups thousands of times."""
    cache = system.__dict__.setdefault("_nccl", {})
    key = (group, purpose, algos)
    if key not in cache:
        n, g, lines, labels = group_lines(system, group, purpose, link)
        cands = terms(group.p, n, g, tuple((lb, protocol_kind(lb)) for lb in labels), offers(system, algos))
        cands = [t for t in cands if t.algorithm in algos] or cands  # NCCL_ALGO, where the group has one
        parts = np.array([term_parts(t, lines) for t in cands])
        ones = np.ones(len(TREE_CORRECTION["Simple"]) + 1)
        corr = np.stack([ones if t.correction is None else _CORRECTION[t.correction] for t in cands])
        cache[key] = ([t.label for t in cands], parts[:, 0], parts[:, 1], corr)
    return cache[key]


def allgather_pieces(system, group, purpose: str, link) -> list[tuple[float, float]]:
    """NCCL's ring all-gather as affine pieces (seconds at 0 bytes, seconds per byte each GPU
    contributes), one per protocol: (p-n)·α_i + (n-1)·α_o + (p-1)·m_i·max(β_i, β_o) (the ring
    all-gather's p-1 steps, n-1 of them across the network; tuning.cc)."""
    n, _, lines, labels = group_lines(system, group, purpose, link)
    p = group.p
    out = []
    for label in labels:
        (ai, bi), (ao, bo) = lines[("intra", label)], lines[("inter", label)]
        out.append(((p - n) * ai + (n - 1) * ao, (p - 1) * max(bi, bo)))
    return out
