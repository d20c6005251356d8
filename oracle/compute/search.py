"""Search for the fastest way to train a model on a GPU budget (issue 8).

Two spaces are searched and compared:

* **uniform strategies** — every strategy of the sweep (docs/cost-model.md) at every hybrid
  factorization p1 x p2 (Gholami et al.'s P_r x P_c process grid), and pipeline
  parallelism at several segment counts S (powers of two up to B, and the default);
* **per-layer assignments** — one distribution per layer (compute/layerwise.py): data,
  or spatial / filter / channel on every p1 x p2 grid.  The cost of an assignment is

      Σ_l Cost_d(l)(l)  +  Σ_(i->j) Shuffle(d(i), d(j))  +  Σ_groups used  latency

  (Dryden et al., IPDPS 2019, §V; Jia et al., ICML 2018, eq. 1: t_c + t_s per layer
  and t_x per edge).  The last term is the latency of each fused gradient all-reduce
  (one per group of GPUs that replicate weights; compute/layerwise.py).

Algorithms
----------
* Line graphs (a chain of layers): Dryden et al.'s shortest path (§V-C).  Vertices are
  (layer, distribution) pairs; the edge from (l_i, D_i) to (l_j, D_j) weighs
  Cost_Di(l_i) + Shuffle(D_i, D_j); a DAG, so one sweep in topological order finds the
  shortest path: O(G·n²) for G layers and n distributions (:func:`shortest_path_line`).
* DAGs (residual adds, inception concats): Jia et al.'s node and edge eliminations
  (§5.2, Algorithm 1, Theorems 1-2).  A node with one in-edge and one out-edge is
  replaced by an edge whose cost matrix is min over the node's distribution of
  (in-edge + node + out-edge) — O(n³) —, and parallel edges are merged by adding their
  matrices — O(n²).  Real CNNs reduce to two nodes, which are enumerated (n²); undoing
  the eliminations in reverse order recovers every layer's distribution.  Total
  O(E·n³) (:func:`eliminate`).  When the final graph is too large to enumerate, nodes
  with a single edge are folded into their neighbour as well (an extension, exact too).
* Fixed charges: the latency of a fused all-reduce is paid once per gradient group in
  use, which is not a per-layer sum.  Branch and bound over the set of groups allowed
  (the unconstrained optimum first; a set S is explored only while
  max(L0, Σ_l min_{d allowed by S} Cost_d(l)) + Σ_{g in S} latency_g can beat the best
  found, L0 the unconstrained optimum without latencies).  Exact; a cap on the number
  of graph solves makes it a heuristic in pathological cases (reported).
* Memory: the GPU-memory limit is a knapsack-like side constraint.  When the fastest
  assignment does not fit, a Lagrangian relaxation (time + λ·bytes, λ by bisection)
  finds the fastest fitting one it can; this is reported as not proven optimal.

Everything per (layer, distribution) is a numpy array (layers x distributions); the
search itself runs in milliseconds for ResNet-152 on 1024 GPUs (benchmarks/search.py).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from oracle.compute.context import Context
from oracle.compute.cost import Point
from oracle.compute.layerwise import DEFAULT_KINDS, Assessment, Costs, Dist, distributions

INF = math.inf
ENUMERATE_LIMIT = 2_000_000  # largest final graph (n^k assignments) enumerated at once
MAX_SOLVES = 64  # graph solves per branch and bound before giving up on proving optimality
MAX_VISITS = 4096  # branch-and-bound nodes likewise


# -- graph algorithms on (nodes x distributions) costs ---------------------------------------


def objective(
    choice: Sequence[int], node: np.ndarray, edges: Sequence[tuple[int, int]], mats: np.ndarray
) -> float:
    """Σ node[l, c_l] + Σ_e mats[e][c_i, c_j]."""
    c = np.asarray(choice, dtype=int)
    total = float(node[np.arange(len(c)), c].sum())
    for e, (i, j) in enumerate(edges):
        total += float(mats[e][c[i], c[j]])
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
) -> tuple[np.ndarray, float, EliminationStats]:
    """Jia et al.'s node and edge eliminations (ICML 2018, §5.2) on a DAG with node
    costs ``node`` (n x nd; inf = not allowed) and edge cost matrices ``mats``
    (E x nd x nd); returns the optimal choice per node, its cost and what was
    eliminated.  Each node keeps only its allowed distributions, so an elimination
    costs n_u·n_v·n_w rather than nd³."""
    nd = node.shape[1]
    stats = EliminationStats()
    cand = []
    for v in range(n):
        idx = np.flatnonzero(np.isfinite(node[v]))
        cand.append(idx if idx.size else np.arange(nd))
    cost = [node[v][cand[v]] for v in range(n)]
    ends: dict[int, tuple[int, int]] = {}
    mat: dict[int, np.ndarray] = {}
    ins: list[set[int]] = [set() for _ in range(n)]
    outs: list[set[int]] = [set() for _ in range(n)]
    pair: dict[tuple[int, int], int] = {}
    next_id = 0

    def add_edge(u: int, w: int, m: np.ndarray) -> None:
        nonlocal next_id
        if (u, w) in pair:  # edge elimination: parallel edges add up (Jia eq. 3)
            mat[pair[(u, w)]] = mat[pair[(u, w)]] + m
            stats.edge_eliminations += 1
            return
        eid = next_id
        next_id += 1
        ends[eid] = (u, w)
        mat[eid] = m
        pair[(u, w)] = eid
        outs[u].add(eid)
        ins[w].add(eid)

    def drop_edge(eid: int) -> None:
        u, w = ends.pop(eid)
        del mat[eid]
        del pair[(u, w)]
        outs[u].discard(eid)
        ins[w].discard(eid)

    for e, (u, w) in enumerate(edges):
        add_edge(u, w, np.asarray(mats[e], dtype=float)[np.ix_(cand[u], cand[w])])
    alive = set(range(n))
    records: list[tuple] = []

    def node_pass(stack: list[int]) -> None:
        while stack:
            v = stack.pop()
            if v not in alive or len(ins[v]) != 1 or len(outs[v]) != 1:
                continue
            e1, e2 = next(iter(ins[v])), next(iter(outs[v]))
            u, w = ends[e1][0], ends[e2][1]
            # Jia eq. 2: t_x(e', c_u, c_w) = min_cv t_c(v) + t_x(e1, c_u, c_v) + t_x(e2, c_v, c_w)
            a = mat[e1] + cost[v][None, :]
            m = (a[:, :, None] + mat[e2][None, :, :]).min(axis=1)
            # the argmin is only needed for the final (c_u, c_w): found when undoing
            records.append(("node", v, u, w, a, mat[e2]))
            drop_edge(e1)
            drop_edge(e2)
            alive.discard(v)
            stats.node_eliminations += 1
            add_edge(u, w, m)
            stack.extend((u, w))

    def leaf_pass() -> bool:
        changed = False
        for v in sorted(alive):
            if v not in alive:
                continue
            if len(ins[v]) == 1 and not outs[v]:
                e = next(iter(ins[v]))
                u = ends[e][0]
                t = mat[e] + cost[v][None, :]
                arg = t.argmin(axis=1)
                cost[u] = cost[u] + t[np.arange(t.shape[0]), arg]
                records.append(("leaf", v, u, arg))
            elif len(outs[v]) == 1 and not ins[v]:
                e = next(iter(outs[v]))
                w = ends[e][1]
                t = cost[v][:, None] + mat[e]
                arg = t.argmin(axis=0)
                cost[w] = cost[w] + t[arg, np.arange(t.shape[1])]
                records.append(("source", v, w, arg))
            else:
                continue
            drop_edge(e)
            alive.discard(v)
            stats.leaf_eliminations += 1
            changed = True
        return changed

    def assignments(nodes) -> float:
        return float(np.prod([float(len(cand[v])) for v in nodes])) if nodes else 0.0

    node_pass(list(range(n - 1, -1, -1)))
    while assignments(_connected(alive, ins, outs)) > enumerate_limit:
        if not leaf_pass():
            break
        node_pass(sorted(alive, reverse=True))
    choice: dict[int, int] = {}  # positions in cand[v]
    connected = _connected(alive, ins, outs)
    for v in alive:
        if v not in connected:
            choice[v] = int(np.argmin(cost[v]))
    stats.final_nodes = len(alive)
    stats.final_edges = len(ends)
    if connected and assignments(connected) > enumerate_limit:
        # not reducible far enough (not series-parallel): coordinate descent over the
        # remaining layers from their cheapest distributions; not proven optimal
        stats.exact = False
        for v in connected:
            choice[v] = int(np.argmin(cost[v]))
        for _ in range(100):
            changed = False
            for v in connected:
                t = cost[v].copy()
                for eid in ins[v]:
                    t = t + mat[eid][choice[ends[eid][0]], :]
                for eid in outs[v]:
                    t = t + mat[eid][:, choice[ends[eid][1]]]
                best = int(np.argmin(t))
                if t[best] < t[choice[v]]:
                    choice[v], changed = best, True
            if not changed:
                break
    elif connected:
        k = len(connected)
        axis = {v: a for a, v in enumerate(connected)}
        dims = tuple(len(cand[v]) for v in connected)
        total = np.zeros(dims)
        for v in connected:
            shape = [1] * k
            shape[axis[v]] = dims[axis[v]]
            total = total + cost[v].reshape(shape)
        for eid, (u, w) in ends.items():
            a, b = axis[u], axis[w]
            m = mat[eid] if a < b else mat[eid].T
            shape = [1] * k
            shape[min(a, b)] = m.shape[0]
            shape[max(a, b)] = m.shape[1]
            total = total + m.reshape(shape)
        best = np.unravel_index(int(np.argmin(total)), total.shape)
        for v in connected:
            choice[v] = int(best[axis[v]])
    # undo the eliminations in reverse order (Jia Algorithm 1, lines 15-23)
    for rec in reversed(records):
        if rec[0] == "node":
            _, v, u, w, a, m2 = rec
            choice[v] = int(np.argmin(a[choice[u]] + m2[:, choice[w]]))
        elif rec[0] == "leaf":
            _, v, u, arg = rec
            choice[v] = int(arg[choice[u]])
        else:
            _, v, w, arg = rec
            choice[v] = int(arg[choice[w]])
    out = np.array([cand[v][choice[v]] for v in range(n)], dtype=np.int64)
    return out, objective(out, node, edges, mats), stats


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
    n: int, edges: Sequence[tuple[int, int]], node: np.ndarray, mats: np.ndarray
) -> tuple[np.ndarray, float, str, EliminationStats | None]:
    """The optimal assignment: shortest path on a line graph, eliminations on a DAG."""
    if is_line(n, edges):
        choice, value = shortest_path_line(node, mats)
        return choice, value, "shortest path (line graph)", None
    choice, value, stats = eliminate(n, edges, node, mats)
    return choice, value, "node/edge elimination", stats


# -- the layer-wise search -------------------------------------------------------------------


@dataclass
class LayerwiseSearch:
    """The fastest per-layer assignment found and how it was found."""

    assessment: Assessment
    costs: Costs
    method: str
    solves: int
    proven: bool
    memory_constrained: bool
    stats: EliminationStats | None
    seconds: float
    notes: list[str] = field(default_factory=list)
    given: bool = False  # an evaluated configuration (oracle search --evaluate), not a search


def search_layerwise(
    ctx: Context, p: int, batch: float, kinds: Sequence[str] = DEFAULT_KINDS, costs: Costs | None = None
) -> LayerwiseSearch:
    """The fastest per-layer assignment of ``kinds`` distributions on p GPUs."""
    t0 = time.perf_counter()
    costs = costs or Costs(ctx, p, batch, distributions(p, kinds))
    mats = costs.edge_matrices()
    G, nd = costs.G, costs.nd
    time_node = costs.node_time
    feasible = costs.feasible.copy()
    # a layer with no feasible distribution keeps all (the result then has limits)
    stuck = ~feasible.any(axis=1)
    feasible[stuck] = True
    uses = (costs.grad_class >= 0) & (costs.grad_bytes > 0)
    cls = np.where(uses, costs.grad_class, -1)
    latency = costs.group_latency
    counter = {"solves": 0, "method": "", "stats": None, "inexact": False}
    # a solve costs about G·n³: keep the worst case near 64 solves of ResNet-152 x 31
    max_solves = max(8, min(MAX_SOLVES, int(MAX_SOLVES * (31 / nd) ** 3 * 515 / max(G, 1))))

    def run(allowed: np.ndarray, lam: float) -> tuple[np.ndarray, float]:
        node = np.where(allowed, time_node + lam * costs.mem_bytes, INF)
        choice, value, method, stats = solve(G, costs.edges, node, mats)
        if stats is not None and not stats.exact:
            counter["inexact"] = True
        counter["solves"] += 1
        counter["method"], counter["stats"] = method, stats
        return choice, value

    def groups_used(choice: np.ndarray) -> np.ndarray:
        out = np.zeros(len(latency), dtype=bool)
        used = cls[np.arange(G), choice]
        out[used[used >= 0]] = True
        return out

    def true_cost(choice: np.ndarray, lam: float) -> float:
        rows = np.arange(G)
        add = float(time_node[rows, choice].sum() + lam * costs.mem_bytes[rows, choice].sum())
        add += sum(float(mats[e][choice[i], choice[j]]) for e, (i, j) in enumerate(costs.edges))
        used = np.unique(cls[rows, choice])
        return add + float(latency[used[used >= 0]].sum())

    def branch_and_bound(lam: float) -> tuple[np.ndarray, float, bool]:
        base = np.where(feasible, time_node + lam * costs.mem_bytes, INF)
        choice0, L0 = run(feasible, lam)
        best_choice, best = choice0, true_cost(choice0, lam)
        ng = len(latency)
        if ng == 0:
            return best_choice, best, True
        order = np.argsort(-latency)  # decide the dearest groups first
        proven = True

        def bound(included: np.ndarray, possible: np.ndarray) -> float:
            ok = (cls < 0) | possible[np.maximum(cls, 0)]
            rowmin = np.where(ok, base, INF).min(axis=1)
            lb = float(rowmin.sum())
            return max(L0, lb) + float(latency[included].sum())

        # solved regions: DP(S) used only the groups U ⊆ S, so every S' with
        # U ⊆ S' ⊆ S has the same optimum (DP is monotone in the allowed set)
        cov_used = [groups_used(choice0)]
        cov_sup = [np.ones(ng, dtype=bool)]
        visits = 0

        def is_covered(included: np.ndarray, possible: np.ndarray) -> bool:
            u, sup = np.array(cov_used), np.array(cov_sup)
            return bool((~(u & ~included).any(axis=1) & ~(possible & ~sup).any(axis=1)).any())

        class Stop(Exception):
            pass

        def visit(depth: int, included: np.ndarray, possible: np.ndarray) -> None:
            nonlocal best, best_choice, proven, visits
            visits += 1
            if visits > MAX_VISITS:
                raise Stop
            if is_covered(included, possible) or bound(included, possible) >= best * (1 - 1e-12):
                return
            if depth == ng:
                if counter["solves"] >= max_solves:
                    raise Stop
                allowed = feasible & ((cls < 0) | included[np.maximum(cls, 0)])
                choice, _ = run(allowed, lam)
                cov_used.append(groups_used(choice))
                cov_sup.append(included.copy())
                value = true_cost(choice, lam)
                if value < best:
                    best, best_choice = value, choice
                return
            g = order[depth]
            inc = included.copy()
            inc[g] = True
            visit(depth + 1, inc, possible)  # with group g
            pos = possible.copy()
            pos[g] = False
            visit(depth + 1, included, pos)  # without group g

        try:
            visit(0, np.zeros(ng, dtype=bool), np.ones(ng, dtype=bool))
        except Stop:
            proven = False
        return best_choice, best, proven

    choice, _, proven = branch_and_bound(0.0)
    notes: list[str] = []
    constrained = False
    limit = ctx.system.gpu_memory_bytes

    def memory(c: np.ndarray) -> float:
        return costs.memory(c)

    if memory(choice) > limit and memory(_least_memory(costs, feasible)) > limit:
        notes.append("no assignment fits in GPU memory (not even the one that needs the least)")
    elif memory(choice) > limit:
        # Lagrangian relaxation of the memory limit: minimise time + λ·bytes
        constrained = True
        fastest_fit = None
        scale = float(np.nanmax(time_node[np.isfinite(time_node)]) or 1.0) / max(limit, 1.0)
        lo, hi = 0.0, scale
        for _ in range(40):  # find a λ whose optimum fits
            c, _, _ = branch_and_bound(hi)
            if memory(c) <= limit:
                fastest_fit = c
                break
            lo, hi = hi, hi * 8
        if fastest_fit is not None:
            for _ in range(12):  # bisection: the smallest λ that still fits
                mid = 0.5 * (lo + hi)
                c, _, _ = branch_and_bound(mid)
                if memory(c) <= limit:
                    hi, fastest_fit = mid, c
                else:
                    lo = mid
            choice = fastest_fit
            notes.append(
                "memory-constrained: Lagrangian relaxation of the GPU-memory limit (not proven optimal)"
            )
        else:
            choice = _least_memory(costs, feasible)
            notes.append(
                "memory-constrained: the fastest assignments do not fit; showing the one that needs the least"
            )
        proven = False
    if not proven and not constrained:
        notes.append(
            f"branch and bound over the gradient groups stopped at its limit ({max_solves} graph solves,"
            f" {MAX_VISITS} nodes): the best assignment found is not proven optimal"
        )
    if counter["inexact"]:
        proven = False
        notes.append(
            "the layer graph does not reduce to a few layers; the rest was assigned by coordinate"
            " descent (not proven optimal)"
        )
    from oracle.compute.layerwise import MAX_GRIDS, factorizations

    every, used = len(factorizations(p)), len(factorizations(p, MAX_GRIDS))
    if every > used and len(costs.dists) > 1:
        notes.append(f"{p} GPUs have {every} p1 x p2 grids; the per-layer search uses {used} of them"
                     " (one p2 near each power of two, and p)")  # fmt: skip
    if stuck.any():
        l = int(np.flatnonzero(stuck)[0])
        notes.append(f"layer {ctx.names[l]} has no feasible distribution")
    choice = tidy(costs, choice)
    assessment = costs.assess(choice)
    return LayerwiseSearch(
        assessment=assessment,
        costs=costs,
        method=counter["method"],
        solves=counter["solves"],
        proven=proven,
        memory_constrained=constrained,
        stats=counter["stats"],
        seconds=time.perf_counter() - t0,
        notes=notes,
    )


def tidy(costs: Costs, choice: np.ndarray) -> np.ndarray:
    """Relabel layers that their distribution does not split (replicated in a group of
    p2: a pooling layer under 'spatial 32x2' or 'filter 32x2' is the same thing) with a
    neighbour's distribution when that costs exactly the same, so that the result reads
    as a few ranges.  The total is unchanged."""
    c = np.array(choice, dtype=np.int64)
    G = len(c)

    def same(l: int, k: int) -> bool:
        d = c[l]
        return (
            k != d
            and not costs.split[l, d]
            and not costs.split[l, k]
            and costs.feasible[l, k]
            and costs.layout[l, k] == costs.layout[l, d]
            and costs.grad_class[l, k] == costs.grad_class[l, d]
            and abs(costs.node_time[l, k] - costs.node_time[l, d])
            <= 1e-12 * max(1.0, abs(costs.node_time[l, d]))
            and costs.mem_bytes[l, k] == costs.mem_bytes[l, d]
        )

    for l in range(1, G):  # forward: take the previous layer's label
        if same(l, c[l - 1]):
            c[l] = c[l - 1]
    for l in range(G - 2, -1, -1):  # backward: the next layer's
        if c[l] != c[l + 1] and same(l, c[l + 1]):
            c[l] = c[l + 1]
    return c


def _least_memory(costs: Costs, feasible: np.ndarray) -> np.ndarray:
    return np.where(feasible, costs.mem_bytes, INF).argmin(axis=1)


# -- uniform strategies ------------------------------------------------------------------------


def segment_counts(B: float, p: int) -> list[int]:
    """Pipeline segment counts to try: powers of two up to B, and the default min(B, 4p)."""
    out = {1 << k for k in range(40) if (1 << k) <= B}
    out.add(max(1, int(min(B, 4 * p))))
    return sorted(out)


def uniform_points(ctx: Context, p: int, batch: float, strategies="all") -> list[Point]:
    """Every strategy at every factorization (compute.sweep), plus pipeline at several
    segment counts; ranked (1 = fastest feasible)."""
    from oracle.compute.strategies import REGISTRY
    from oracle.compute.strategies.base import Config
    from oracle.compute.sweep import rank, sweep

    points = sweep(
        ctx.model, ctx.system, _times(ctx), [p], strategies, batch=batch, options=ctx.options,
        profile_kind=ctx.profile_kind,
    )  # fmt: skip
    if p > 1 and any(pt.strategy == "pipeline" for pt in points) and ctx.options.segments is None:
        seen = {pt.segments for pt in points if pt.strategy == "pipeline"}
        pipe = REGISTRY["pipeline"]
        for S in segment_counts(batch, p):
            if S not in seen:
                points.append(pipe.evaluate(ctx, Config("pipeline", p, 1, p, batch, S)))
    return rank([replace(pt, rank=None) for pt in points])


def _times(ctx: Context):
    from oracle.model import LayerTimes

    return tuple(
        LayerTimes(float(f), float(b), float(u)) for f, b, u in zip(ctx.fw, ctx.bw, ctx.wu)
    )


# -- the whole search --------------------------------------------------------------------------


@dataclass
class SearchResult:
    """Search at one GPU count: the best uniform strategies and the best per-layer
    assignment; ``winner`` is the faster feasible one."""

    gpus: int
    batch: float
    uniform: list[Point]
    layerwise: LayerwiseSearch
    seconds: float
    optimum: LayerwiseSearch | None = None  # with a given configuration: the search's best

    @property
    def best_uniform(self) -> Point | None:
        for pt in self.uniform:
            if pt.rank == 1:
                return pt
        return None

    @property
    def layerwise_point(self) -> Point:
        return self.layerwise.assessment.point

    @property
    def winner(self) -> Point | None:
        cands = [
            pt for pt in (self.best_uniform, self.layerwise_point) if pt is not None and pt.feasible
        ]
        if not cands:
            return None
        # a tie goes to the uniform strategy (simpler to run)
        return min(cands, key=lambda pt: (pt.total_s, pt.strategy == "layer-wise"))

    @property
    def saved_s(self) -> float | None:
        """Time per epoch the per-layer assignment saves against the best uniform
        strategy (negative: it is slower)."""
        bu = self.best_uniform
        if bu is None:
            return None
        return bu.total_s - self.layerwise_point.total_s


def search(
    ctx: Context,
    p: int,
    batch: float,
    *,
    kinds: Sequence[str] = DEFAULT_KINDS,
    strategies="all",
) -> SearchResult:
    """Uniform strategies and per-layer assignments on p GPUs with global batch B."""
    t0 = time.perf_counter()
    uniform = uniform_points(ctx, p, batch, strategies)
    lw = search_layerwise(ctx, p, batch, kinds)
    return SearchResult(p, float(batch), uniform, lw, time.perf_counter() - t0)


def evaluate_given(
    ctx: Context,
    p: int,
    batch: float,
    assignment: Sequence[Dist],
    *,
    kinds: Sequence[str] = DEFAULT_KINDS,
    strategies="all",
    compare: bool = True,
) -> SearchResult:
    """A given per-layer assignment (a layer-wise configuration file), with the best
    uniform strategies and (``compare``) the search's best assignment beside it."""
    from oracle.compute.layerwise import _order

    t0 = time.perf_counter()
    costs = Costs(ctx, p, batch, sorted(set(assignment), key=_order))
    a = costs.assess(costs.choice_of(assignment))
    given = LayerwiseSearch(
        a, costs, "given configuration", 0, False, False, None, 0.0, [], given=True
    )
    uniform = uniform_points(ctx, p, batch, strategies)
    optimum = search_layerwise(ctx, p, batch, kinds) if compare else None
    return SearchResult(p, float(batch), uniform, given, time.perf_counter() - t0, optimum)
