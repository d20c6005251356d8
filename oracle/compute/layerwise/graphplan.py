"""Jia et al.'s node and edge eliminations (ICML 2018, §5.2, Algorithm 1;
compute/layerwise/graphsearch.py) planned once per graph and replayed per solve.

Which node is eliminated when, and which edges merge, depends only on the graph's
degrees, not on the costs; the branch and bound of compute/layerwise/search.py solves the same
graph many times with different distributions allowed.  :func:`make_plan` runs the
eliminations once on the bare graph and records them; :func:`replay` repeats them on
the costs of one solve with lists instead of sets and dictionaries — the same
operations in the same order, so the same matrices, the same assignment and the same
:class:`EliminationStats`.  When the final graph is too large to enumerate
(graphsearch.ENUMERATE_LIMIT) the folding of leaves depends on the costs: the solve
then runs graphsearch.eliminate itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from oracle.compute.layerwise.graphsearch import (
    ENUMERATE_LIMIT,
    EliminationStats,
    Graph,
    eliminate,
    enumerate_final,
    min_plus,
    objective,
    undo,
)


@dataclass
class Plan:
    """The eliminations of one graph (module docstring)."""

    edges: list[tuple[int, int]]
    edge_ops: list[tuple[int, bool]]  # per input edge: its id, merged into a parallel one
    node_ops: list[tuple]  # (v, u, w, e1, e2, new id, merged), in order
    ids: int  # edge ids used
    isolated: list[int]  # nodes left without edges
    connected: list[int]  # the final graph's nodes
    ends: list[tuple[int, tuple[int, int]]]  # and its edges
    stats: tuple[int, int, int, int]  # node and edge eliminations, final nodes and edges
    restricted: tuple = (None, [], [])  # the last solve's edge matrices (_restricted)


def make_plan(n: int, edges: Sequence[tuple[int, int]]) -> Plan:
    """Eliminate on the bare graph (one distribution per node) and record it."""
    g = Graph(n, edges, np.zeros((n, 1)), np.zeros((len(edges), 1, 1)))
    g.node_pass(list(range(n - 1, -1, -1)))
    connected = g.connected()
    isolated = [v for v in g.alive if v not in set(connected)]
    s = g.stats
    return Plan(list(edges), g.edge_ops, g.node_ops, g.next_id, isolated, connected, list(g.ends.items()),
                (s.node_eliminations, s.edge_eliminations, len(g.alive), len(g.ends)))  # fmt: skip


def solve_planned(plan: Plan, node: np.ndarray, mats: np.ndarray, keep: np.ndarray | None = None):
    """graphsearch.solve on a DAG, replaying ``plan`` when it applies."""
    out = replay(plan, node, mats, keep)
    if out is None:
        out = eliminate(len(node), plan.edges, node, mats, keep=keep)
    choice, value, stats = out
    return choice, value, "node/edge elimination", stats


def _candidates(node: np.ndarray, keep: np.ndarray | None) -> tuple[list[np.ndarray], np.ndarray]:
    """Per node its distributions (as graphsearch.Graph) and how many are allowed."""
    n, nd = node.shape
    finite = np.isfinite(node)
    rows, cols = np.nonzero(finite if keep is None else keep)
    ends = np.concatenate(([0], np.cumsum(np.bincount(rows, minlength=n)))).tolist()
    every = np.arange(nd)
    cand = [cols[a:b] if b > a else every for a, b in zip(ends[:-1], ends[1:])]
    counts = finite.sum(axis=1)
    return cand, np.where(counts > 0, counts, nd).astype(float)


def _restricted(plan: Plan, mats: np.ndarray, cand: list[np.ndarray]) -> list[np.ndarray]:
    """Every edge's matrix on its ends' distributions; those whose ends have the same
    distributions as in the previous solve are taken from it (the same values)."""
    prev_mats, prev_cand, prev = plan.restricted
    same = [False] * len(cand)
    if prev_mats is mats:
        same = [a is b or (len(a) == len(b) and bool((a == b).all())) for a, b in zip(cand, prev_cand)]
    out = [prev[e] if same[u] and same[w] else mats[e].take(cand[u], 0).take(cand[w], 1)
           for e, (u, w) in enumerate(plan.edges)]  # fmt: skip
    plan.restricted = (mats, cand, out)
    return out


def replay(plan: Plan, node: np.ndarray, mats: np.ndarray, keep: np.ndarray | None = None):
    """graphsearch.eliminate's result by replaying ``plan``; None when the final graph is
    too large to enumerate (leaves are then folded, depending on the costs)."""
    cand, size = _candidates(node, keep)
    if plan.connected and float(np.prod([size[v] for v in plan.connected])) > ENUMERATE_LIMIT:
        return None
    cost = [node[v][cand[v]] for v in range(len(cand))]
    mats = np.asarray(mats, dtype=float)
    mat: list = [None] * plan.ids
    for e, m in enumerate(_restricted(plan, mats, cand)):
        eid, merged = plan.edge_ops[e]
        mat[eid] = mat[eid] + m if merged else m
    buf = np.empty(max(len(c) for c in cand) ** 3)
    records = []
    for v, u, w, e1, e2, eid, merged in plan.node_ops:
        # Jia eq. 2: t_x(e', c_u, c_w) = min_cv t_c(v) + t_x(e1, c_u, c_v) + t_x(e2, c_v, c_w)
        a, b = mat[e1] + cost[v][None, :], mat[e2]
        m = min_plus(a, b, buf)
        records.append(("node", v, u, w, a, b))
        mat[e1] = mat[e2] = None
        mat[eid] = mat[eid] + m if merged else m  # Jia eq. 3 when merged
    choice = {v: int(np.argmin(cost[v])) for v in plan.isolated}
    if plan.connected:
        enumerate_final(plan.connected, cost, plan.ends, mat, choice)
    undo(records, choice)
    out = np.array([cand[v][choice[v]] for v in range(len(cand))], dtype=np.int64)
    stats = EliminationStats(plan.stats[0], plan.stats[1], 0, plan.stats[2], plan.stats[3])
    return out, objective(out, node, plan.edges, mats), stats
