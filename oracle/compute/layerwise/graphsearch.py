"""The graph algorithms of oracle search (compute/layerwise/search.py's docstring): Dryden et
al.'s shortest path on line graphs (IPDPS 2019, §V-C) and Jia et al.'s node and edge
eliminations on DAGs (ICML 2018, §5.2, Algorithm 1, Theorems 1-2), on (nodes x
distributions) cost arrays."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

INF = math.inf
ENUMERATE_LIMIT = 2_000_000  # largest final graph (n^k assignments) enumerated at once


# -- graph algorithms on (nodes x distributions) costs ---------------------------------------


def objective(
    choice: Sequence[int], node: np.ndarray, edges: Sequence[tuple[int, int]], mats: np.ndarray
) -> float:
    """Σ node[l, c_l] + Σ_e mats[e][c_i, c_j]."""
    c = np.asarray(choice, dtype=int)
    total = float(node[np.arange(len(c)), c].sum())
    if len(edges):
        ends = np.asarray(edges)
        for x in np.asarray(mats)[np.arange(len(ends)), c[ends[:, 0]], c[ends[:, 1]]].tolist():
            total += x  # one edge at a time, in order: the same sum as a loop over the edges
    return total


def is_line(n: int, edges: Sequence[tuple[int, int]]) -> bool:
    """True when the graph is the chain 0 -> 1 -> ... -> n-1."""
    return len(edges) == n - 1 and all(e == (k, k + 1) for k, e in enumerate(edges))


def shortest_path_line(node: np.ndarray, mats: np.ndarray) -> tuple[np.ndarray, float]:
    """Dryden et al. §V-C on a chain: dist(l, d) = min_d' dist(l-1, d') + E(d', d) +
    Cost(l, d).  ``mats[l]`` is the edge from layer l to l+1.  O(G·n²)."""
    G, nd = node.shape
    back = np.zeros((G, nd), dtype=np.int64)
    dist = node[0].copy()
    for l in range(1, G):
        t = dist[:, None] + mats[l - 1]
        arg = t.argmin(axis=0)
        back[l] = arg
        dist = t[arg, np.arange(nd)] + node[l]
    choice = np.zeros(G, dtype=np.int64)
    choice[-1] = int(np.argmin(dist))
    value = float(dist[choice[-1]])
    for l in range(G - 1, 0, -1):
        choice[l - 1] = back[l, choice[l]]
    return choice, value


@dataclass
class EliminationStats:
    node_eliminations: int = 0
    edge_eliminations: int = 0
    leaf_eliminations: int = 0
    final_nodes: int = 0
    final_edges: int = 0
    exact: bool = True  # False: the final graph was too large to enumerate (coordinate descent)


def eliminate(
    n: int,
    edges: Sequence[tuple[int, int]],
    node: np.ndarray,
    mats: np.ndarray,
    enumerate_limit: int = ENUMERATE_LIMIT,
    keep: np.ndarray | None = None,
) -> tuple[np.ndarray, float, EliminationStats]:
    """Jia et al.'s node and edge eliminations (ICML 2018, §5.2) on a DAG with node
    costs ``node`` (n x nd; inf = not allowed) and edge cost matrices ``mats``
    (E x nd x nd); returns the optimal choice per node, its cost and what was
    eliminated.  Each node keeps only its allowed distributions, so an elimination
    costs n_u·n_v·n_w rather than nd³; ``keep`` (n x nd, compute/layerwise/dominance.py) narrows
    them further to the undominated ones, with the same result."""
    g = Graph(n, edges, node, mats, keep)
    g.node_pass(list(range(n - 1, -1, -1)))
    while g.assignments(g.connected()) > enumerate_limit:
        if not g.leaf_pass():
            break
        g.node_pass(sorted(g.alive, reverse=True))
    choice: dict[int, int] = {}  # positions in cand[v]
    connected = g.connected()
    for v in g.alive:
        if v not in connected:
            choice[v] = int(np.argmin(g.cost[v]))
    g.stats.final_nodes = len(g.alive)
    g.stats.final_edges = len(g.ends)
    if connected and g.assignments(connected) > enumerate_limit:
        g.stats.exact = False
        g.descend(connected, choice)
    elif connected:
        g.enumerate(connected, choice)
    g.undo(choice)
    out = np.array([g.cand[v][choice[v]] for v in range(n)], dtype=np.int64)
    return out, objective(out, node, edges, mats), g.stats


class Graph:
    """The graph under elimination: per node its allowed distributions (``cand``) and
    their costs, per edge its cost matrix over them, and the eliminations done (to undo)."""

    def __init__(
        self, n: int, edges: Sequence[tuple[int, int]], node: np.ndarray, mats: np.ndarray, keep=None
    ) -> None:
        nd = node.shape[1]
        self.stats = EliminationStats()
        self.cand = []
        finite = np.isfinite(node)
        keep = finite if keep is None else keep
        for v in range(n):
            idx = np.flatnonzero(keep[v])
            self.cand.append(idx if idx.size else np.arange(nd))
        # the final graph's size as without pruning: the same enumerate/fold decisions
        counts = finite.sum(axis=1)
        self.size = np.where(counts > 0, counts, nd).astype(float)
        self.cost = [node[v][self.cand[v]] for v in range(n)]
        self.ends: dict[int, tuple[int, int]] = {}
        self.mat: dict[int, np.ndarray] = {}
        self.ins: list[set[int]] = [set() for _ in range(n)]
        self.outs: list[set[int]] = [set() for _ in range(n)]
        self.pair: dict[tuple[int, int], int] = {}
        self.next_id = 0
        mats = np.asarray(mats, dtype=float)
        # what was done to which edge ids (graphplan.py replays it)
        self.edge_ops = [self.add_edge(u, w, mats[e].take(self.cand[u], 0).take(self.cand[w], 1))
                         for e, (u, w) in enumerate(edges)]  # fmt: skip
        self.node_ops: list[tuple] = []
        self.alive = set(range(n))
        self.records: list[tuple] = []

    def add_edge(self, u: int, w: int, m: np.ndarray) -> tuple[int, bool]:
        """Add the edge u -> w (merged into a parallel one if any): its id, and whether merged."""
        if (u, w) in self.pair:  # edge elimination: parallel edges add up (Jia eq. 3)
            eid = self.pair[(u, w)]
            self.mat[eid] = self.mat[eid] + m
            self.stats.edge_eliminations += 1
            return eid, True
        eid = self.next_id
        self.next_id += 1
        self.ends[eid] = (u, w)
        self.mat[eid] = m
        self.pair[(u, w)] = eid
        self.outs[u].add(eid)
        self.ins[w].add(eid)
        return eid, False

    def drop_edge(self, eid: int) -> None:
        u, w = self.ends.pop(eid)
        del self.mat[eid]
        del self.pair[(u, w)]
        self.outs[u].discard(eid)
        self.ins[w].discard(eid)

    def node_pass(self, stack: list[int]) -> None:
        ins, outs, mat = self.ins, self.outs, self.mat
        buf = np.empty(max((len(c) for c in self.cand), default=0) ** 3)
        while stack:
            v = stack.pop()
            if v not in self.alive or len(ins[v]) != 1 or len(outs[v]) != 1:
                continue
            e1, e2 = next(iter(ins[v])), next(iter(outs[v]))
            u, w = self.ends[e1][0], self.ends[e2][1]
            # Jia eq. 2: t_x(e', c_u, c_w) = min_cv t_c(v) + t_x(e1, c_u, c_v) + t_x(e2, c_v, c_w)
            a = mat[e1] + self.cost[v][None, :]
            m = min_plus(a, mat[e2], buf)
            # the argmin is only needed for the final (c_u, c_w): found when undoing
            self.records.append(("node", v, u, w, a, mat[e2]))
            self.drop_edge(e1)
            self.drop_edge(e2)
            self.alive.discard(v)
            self.stats.node_eliminations += 1
            self.node_ops.append((v, u, w, e1, e2, *self.add_edge(u, w, m)))
            stack.extend((u, w))

    def leaf_pass(self) -> bool:
        """Fold nodes with a single edge into their neighbour (an extension of Jia's
        eliminations, exact too)."""
        changed = False
        for v in sorted(self.alive):
            if v not in self.alive:
                continue
            if len(self.ins[v]) == 1 and not self.outs[v]:
                e = next(iter(self.ins[v]))
                u = self.ends[e][0]
                t = self.mat[e] + self.cost[v][None, :]
                arg = t.argmin(axis=1)
                self.cost[u] = self.cost[u] + t[np.arange(t.shape[0]), arg]
                self.records.append(("leaf", v, u, arg))
            elif len(self.outs[v]) == 1 and not self.ins[v]:
                e = next(iter(self.outs[v]))
                w = self.ends[e][1]
                t = self.cost[v][:, None] + self.mat[e]
                arg = t.argmin(axis=0)
                self.cost[w] = self.cost[w] + t[arg, np.arange(t.shape[1])]
                self.records.append(("source", v, w, arg))
            else:
                continue
            self.drop_edge(e)
            self.alive.discard(v)
            self.stats.leaf_eliminations += 1
            changed = True
        return changed

    def assignments(self, nodes) -> float:
        return float(np.prod([self.size[v] for v in nodes])) if nodes else 0.0

    def connected(self) -> list[int]:
        return _connected(self.alive, self.ins, self.outs)

    def descend(self, connected: list[int], choice: dict[int, int]) -> None:
        """Not reducible far enough (not series-parallel): coordinate descent over the
        remaining layers from their cheapest distributions; not proven optimal."""
        for v in connected:
            choice[v] = int(np.argmin(self.cost[v]))
        for _ in range(100):
            changed = False
            for v in connected:
                t = self.cost[v].copy()
                for eid in self.ins[v]:
                    t = t + self.mat[eid][choice[self.ends[eid][0]], :]
                for eid in self.outs[v]:
                    t = t + self.mat[eid][:, choice[self.ends[eid][1]]]
                best = int(np.argmin(t))
                if t[best] < t[choice[v]]:
                    choice[v], changed = best, True
            if not changed:
                break

    def enumerate(self, connected: list[int], choice: dict[int, int]) -> None:
        """Every assignment of the final graph (Jia Algorithm 1, line 14)."""
        enumerate_final(connected, self.cost, self.ends.items(), self.mat, choice)

    def undo(self, choice: dict[int, int]) -> None:
        undo(self.records, choice)


def enumerate_final(connected: list[int], cost, ends, mat, choice: dict[int, int]) -> None:
    """Every assignment of the final graph (Jia Algorithm 1, line 14): ``cost[v]`` per
    node, ``mat[eid]`` per edge (eid, (u, w)) of ``ends``; the best into ``choice``."""
    k = len(connected)
    axis = {v: a for a, v in enumerate(connected)}
    dims = tuple(len(cost[v]) for v in connected)
    total = np.zeros(dims)
    for v in connected:
        shape = [1] * k
        shape[axis[v]] = dims[axis[v]]
        total = total + cost[v].reshape(shape)
    for eid, (u, w) in ends:
        a, b = axis[u], axis[w]
        m = mat[eid] if a < b else mat[eid].T
        shape = [1] * k
        shape[min(a, b)] = m.shape[0]
        shape[max(a, b)] = m.shape[1]
        total = total + m.reshape(shape)
    best = np.unravel_index(int(np.argmin(total)), total.shape)
    for v in connected:
        choice[v] = int(best[axis[v]])


def undo(records: list[tuple], choice: dict[int, int]) -> None:
    """Undo the eliminations in reverse order (Jia Algorithm 1, lines 15-23)."""
    for rec in reversed(records):
        if rec[0] == "node":
            _, v, u, w, a, m2 = rec
            choice[v] = int((a[choice[u]] + m2[:, choice[w]]).argmin())
        elif rec[0] == "leaf":
            _, v, u, arg = rec
            choice[v] = int(arg[choice[u]])
        else:
            _, v, w, arg = rec
            choice[v] = int(arg[choice[w]])


def min_plus(a: np.ndarray, b: np.ndarray, buf: np.ndarray) -> np.ndarray:
    """min_v a[u, v] + b[v, w]: the same sums as (a[:, :, None] + b[None]).min(axis=1)
    (IEEE addition commutes), laid out (v, u, w) in a reused buffer so that the min runs
    over whole planes; b copied in, a added in place (faster than numpy's add into out)."""
    nu, nv = a.shape
    t = buf[: nv * nu * b.shape[1]].reshape(nv, nu, b.shape[1])
    np.copyto(t, b[:, None, :])
    t += a.T[:, :, None]
    return np.minimum.reduce(t, axis=0)


def _connected(alive: set[int], ins, outs) -> list[int]:
    return [v for v in sorted(alive) if ins[v] or outs[v]]


def brute_force(
    node: np.ndarray, edges: Sequence[tuple[int, int]], mats: np.ndarray
) -> tuple[np.ndarray, float]:
    """Every assignment (tests only: n^G of them)."""
    G, nd = node.shape
    grids = np.indices((nd,) * G).reshape(G, -1)  # (G, n^G)
    total = node[np.arange(G)[:, None], grids].sum(axis=0)
    for e, (i, j) in enumerate(edges):
        total = total + mats[e][grids[i], grids[j]]
    k = int(np.argmin(total))
    return grids[:, k].astype(np.int64), float(total[k])


def solve(
    n: int, edges: Sequence[tuple[int, int]], node: np.ndarray, mats: np.ndarray, keep: np.ndarray | None = None
) -> tuple[np.ndarray, float, str, EliminationStats | None]:
    """The optimal assignment: shortest path on a line graph, eliminations on a DAG
    (``keep``: the undominated distributions, compute/layerwise/dominance.py)."""
    if is_line(n, edges):
        choice, value = shortest_path_line(node, mats)
        return choice, value, "shortest path (line graph)", None
    choice, value, stats = eliminate(n, edges, node, mats, keep=keep)
    return choice, value, "node/edge elimination", stats
