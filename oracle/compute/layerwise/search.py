"""Search for the fastest way to train a model on a GPU budget (issue 8).

Two spaces are searched and compared:

* **uniform strategies** — every strategy of the sweep (docs/cost-model.md) at every hybrid
  factorization p1 x p2 (Gholami et al.'s P_r x P_c process grid), and pipeline
  parallelism at several segment counts S (powers of two up to B, and the default);
* **per-layer assignments** — one distribution per layer (compute/layerwise/layerwise.py): data,
  or spatial / filter / channel on every p1 x p2 grid.  The cost of an assignment is

      Σ_l Cost_d(l)(l)  +  Σ_(i->j) Shuffle(d(i), d(j))  +  Σ_groups used  latency

  (Dryden et al., IPDPS 2019, §V; Jia et al., ICML 2018, eq. 1: t_c + t_s per layer
  and t_x per edge).  The last term is the latency of each fused gradient all-reduce
  (one per group of GPUs that replicate weights; compute/layerwise/layerwise.py).

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
* Exact shortcuts: distributions dominated entry by entry by an earlier one are dropped
  before the eliminations (compute/layerwise/dominance.py: every step is monotone and every
  argmin takes the first index, so the assignment is the same), and the eliminations,
  whose order depends only on the graph, are planned once and replayed per solve
  (compute/layerwise/graphplan.py).
* Memory: the GPU-memory limit is a knapsack-like side constraint.  When the fastest
  assignment does not fit, a Lagrangian relaxation (time + λ·bytes, λ by bisection)
  finds the fastest fitting one it can; this is reported as not proven optimal.

Everything per (layer, distribution) is a numpy array (layers x distributions); the
search itself runs in milliseconds for ResNet-152 on 1024 GPUs (benchmarks/search.py).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from oracle.compute.context import Context
from oracle.compute.cost import Point
from oracle.compute.layerwise.dominance import dominance, prune
from oracle.compute.layerwise.graphplan import make_plan, solve_planned
from oracle.compute.layerwise.graphsearch import (  # noqa: F401  (re-exported: tests and callers use search.*)
    ENUMERATE_LIMIT,
    INF,
    EliminationStats,
    brute_force,
    eliminate,
    is_line,
    objective,
    shortest_path_line,
    solve,
)
from oracle.compute.layerwise.layerwise import (
    Assessment,
    Costs,
    Dist,
    ctx_overlaps,
    distributions,
)

MAX_SOLVES = 64  # graph solves per branch and bound before giving up on proving optimality
MAX_VISITS = 4096  # branch-and-bound nodes likewise


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
    ctx: Context, p: int, batch: float, kinds: Sequence[str] | None = None, costs: Costs | None = None
) -> LayerwiseSearch:
    """The fastest per-layer assignment of ``kinds`` distributions on p GPUs
    (layerwise.default_kinds unless given)."""
    t0 = time.perf_counter()
    costs = costs or Costs(ctx, p, batch, distributions(p, kinds))
    bb = _BranchAndBound(costs)
    choice, _, proven = bb.solve(0.0)
    notes: list[str] = []
    constrained = False
    limit = ctx.system.gpu_memory_bytes
    if costs.memory(choice) > limit and costs.memory(_least_memory(costs, bb.feasible)) > limit:
        notes.append("no assignment fits in GPU memory (not even the one that needs the least)")
    elif costs.memory(choice) > limit:
        constrained, proven = True, False
        choice = _fit_memory(bb, limit, notes)
    if not proven and not constrained:
        notes.append(
            f"branch and bound over the gradient groups stopped at its limit ({bb.max_solves} graph solves,"
            f" {MAX_VISITS} nodes): the best assignment found is not proven optimal"
        )
    if bb.inexact:
        proven = False
        notes.append(
            "the layer graph does not reduce to a few layers; the rest was assigned by coordinate"
            " descent (not proven optimal)"
        )
    notes += _space_notes(ctx, costs, p, bb.stuck)
    choice = tidy(costs, choice)
    assessment = costs.assess(choice)
    if ctx_overlaps(ctx):
        assessment = _rerank_with_overlap(costs, assessment, bb.feasible, notes)
        proven = False
    return LayerwiseSearch(
        assessment=assessment,
        costs=costs,
        method=bb.method,
        solves=bb.solves,
        proven=proven,
        memory_constrained=constrained,
        stats=bb.stats,
        seconds=time.perf_counter() - t0,
        notes=notes,
    )


def _rerank_with_overlap(costs: Costs, best: Assessment, feasible: np.ndarray, notes: list[str]) -> Assessment:
    """With --overlap buckets the exposed gradient exchange depends on the order of the
    buckets on one channel (compute/overlap.py), not a sum over layers: the search
    optimises the cost without overlap, then evaluates with overlap that optimum and
    every uniform assignment the space holds and keeps the fastest (a heuristic)."""
    cands = [best]
    for k in range(costs.nd):
        if feasible[:, k].all():
            cands.append(costs.assess(np.full(costs.G, k, dtype=np.int64)))
    fits = [a for a in cands if a.point.feasible] or cands
    pick = min(fits, key=lambda a: a.point.total_s)
    stack = costs.ctx.options.stack
    why = f"the stack {stack.label}'s overlap" if stack is not None and stack.overlap.value == "buckets" else "--overlap"
    notes.append(f"with {why}: the search optimises the cost without overlap, then re-ranks it and every uniform"
                 " assignment with overlap (not proven optimal)")  # fmt: skip
    return pick


def _fit_memory(bb: _BranchAndBound, limit: float, notes: list[str]) -> np.ndarray:
    """Lagrangian relaxation of the memory limit: minimise time + λ·bytes, λ by
    bisection (not proven optimal)."""
    costs = bb.costs
    fastest_fit = None
    time_node = costs.node_time
    scale = float(np.nanmax(time_node[np.isfinite(time_node)]) or 1.0) / max(limit, 1.0)
    lo, hi = 0.0, scale
    for _ in range(40):  # find a λ whose optimum fits
        c, _, _ = bb.solve(hi)
        if costs.memory(c) <= limit:
            fastest_fit = c
            break
        lo, hi = hi, hi * 8
    if fastest_fit is None:
        notes.append("memory-constrained: the fastest assignments do not fit; showing the one that needs the least")
        return _least_memory(costs, bb.feasible)
    for _ in range(12):  # bisection: the smallest λ that still fits
        mid = 0.5 * (lo + hi)
        c, _, _ = bb.solve(mid)
        if costs.memory(c) <= limit:
            hi, fastest_fit = mid, c
        else:
            lo = mid
    notes.append("memory-constrained: Lagrangian relaxation of the GPU-memory limit (not proven optimal)")
    return fastest_fit


def _space_notes(ctx: Context, costs: Costs, p: int, stuck: np.ndarray) -> list[str]:
    from oracle.compute.layerwise.layerwise import MAX_GRIDS, factorizations

    notes = []
    every, used = len(factorizations(p)), len(factorizations(p, MAX_GRIDS))
    if every > used and len(costs.dists) > 1:
        notes.append(f"{p} GPUs have {every} p1 x p2 grids; the per-layer search uses {used} of them"
                     " (one p2 near each power of two, and p)")  # fmt: skip
    if stuck.any():
        l = int(np.flatnonzero(stuck)[0])
        notes.append(f"layer {ctx.names[l]} has no feasible distribution")
    return notes


class _Stop(Exception):
    pass


class _BranchAndBound:
    """Branch and bound over the set of gradient groups allowed (the module docstring):
    each leaf is a graph solve with the other groups' distributions forbidden."""

    def __init__(self, costs: Costs) -> None:
        self.costs = costs
        self.mats = costs.edge_matrices()
        self.G, nd = costs.G, costs.nd
        self.time_node = costs.node_time
        self.feasible = costs.feasible.copy()
        # a layer with no feasible distribution keeps all (the result then has limits)
        self.stuck = ~self.feasible.any(axis=1)
        self.feasible[self.stuck] = True
        uses = (costs.grad_class >= 0) & (costs.grad_bytes > 0)
        self.cls = np.where(uses, costs.grad_class, -1)
        self.latency = costs.group_latency
        self.solves, self.method, self.stats, self.inexact = 0, "", None, False
        # a solve costs about G·n³: keep the worst case near 64 solves of ResNet-152 x 31
        self.max_solves = max(8, min(MAX_SOLVES, int(MAX_SOLVES * (31 / nd) ** 3 * 515 / max(self.G, 1))))
        # eliminations only (a line graph's shortest path is cheap): exact pruning
        line = is_line(self.G, costs.edges)
        self.pairs = None if line else dominance((self.time_node, costs.mem_bytes), costs.edges, self.mats)
        self.plan = None if line else make_plan(self.G, costs.edges)  # the same eliminations every solve
        ends = np.asarray(costs.edges, dtype=np.int64).reshape(-1, 2)
        self.eids, self.src, self.dst = np.arange(len(ends)), ends[:, 0], ends[:, 1]

    def run(self, allowed: np.ndarray, lam: float) -> tuple[np.ndarray, float]:
        node = np.where(allowed, self.time_node + lam * self.costs.mem_bytes, INF)
        if self.plan is None:
            choice, value, method, stats = solve(self.G, self.costs.edges, node, self.mats)
        else:
            choice, value, method, stats = solve_planned(self.plan, node, self.mats, prune(node, self.pairs))
        if stats is not None and not stats.exact:
            self.inexact = True
        self.solves += 1
        self.method, self.stats = method, stats
        return choice, value

    def groups_used(self, choice: np.ndarray) -> np.ndarray:
        out = np.zeros(len(self.latency), dtype=bool)
        used = self.cls[np.arange(self.G), choice]
        out[used[used >= 0]] = True
        return out

    def true_cost(self, choice: np.ndarray, lam: float) -> float:
        rows = np.arange(self.G)
        add = float(self.time_node[rows, choice].sum() + lam * self.costs.mem_bytes[rows, choice].sum())
        add += sum(self.mats[self.eids, choice[self.src], choice[self.dst]].tolist())  # in edge order
        used = np.unique(self.cls[rows, choice])
        return add + float(self.latency[used[used >= 0]].sum())

    def solve(self, lam: float) -> tuple[np.ndarray, float, bool]:
        """The cheapest assignment under time + λ·bytes, and whether it is proven."""
        self.lam = lam
        self.base = np.where(self.feasible, self.time_node + lam * self.costs.mem_bytes, INF)
        choice0, self.L0 = self.run(self.feasible, lam)
        self.best_choice, self.best = choice0, self.true_cost(choice0, lam)
        ng = len(self.latency)
        if ng == 0:
            return self.best_choice, self.best, True
        self.order = np.argsort(-self.latency)  # decide the dearest groups first
        # solved regions: DP(S) used only the groups U ⊆ S, so every S' with
        # U ⊆ S' ⊆ S has the same optimum (DP is monotone in the allowed set)
        self.cov_used = [self.groups_used(choice0)]
        self.cov_sup = [np.ones(ng, dtype=bool)]
        self.visits = 0
        try:
            self.visit(0, np.zeros(ng, dtype=bool), np.ones(ng, dtype=bool))
        except _Stop:
            return self.best_choice, self.best, False
        return self.best_choice, self.best, True

    def bound(self, included: np.ndarray, possible: np.ndarray) -> float:
        ok = (self.cls < 0) | possible[np.maximum(self.cls, 0)]
        rowmin = np.where(ok, self.base, INF).min(axis=1)
        lb = float(rowmin.sum())
        return max(self.L0, lb) + float(self.latency[included].sum())

    def is_covered(self, included: np.ndarray, possible: np.ndarray) -> bool:
        u, sup = np.array(self.cov_used), np.array(self.cov_sup)
        return bool((~(u & ~included).any(axis=1) & ~(possible & ~sup).any(axis=1)).any())

    def visit(self, depth: int, included: np.ndarray, possible: np.ndarray) -> None:
        self.visits += 1
        if self.visits > MAX_VISITS:
            raise _Stop
        if self.is_covered(included, possible) or self.bound(included, possible) >= self.best * (1 - 1e-12):
            return
        if depth == len(self.latency):
            self.leaf(included)
            return
        g = self.order[depth]
        inc = included.copy()
        inc[g] = True
        self.visit(depth + 1, inc, possible)  # with group g
        pos = possible.copy()
        pos[g] = False
        self.visit(depth + 1, included, pos)  # without group g

    def leaf(self, included: np.ndarray) -> None:
        if self.solves >= self.max_solves:
            raise _Stop
        allowed = self.feasible & ((self.cls < 0) | included[np.maximum(self.cls, 0)])
        choice, _ = self.run(allowed, self.lam)
        self.cov_used.append(self.groups_used(choice))
        self.cov_sup.append(included.copy())
        value = self.true_cost(choice, self.lam)
        if value < self.best:
            self.best, self.best_choice = value, choice


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
    """Every strategy at every factorization, plus pipeline at several segment counts,
    costed on this context by the sweep's own function (compute.sweep.evaluate_all: one
    configuration, one number with predict); ranked (1 = fastest feasible)."""
    from oracle.compute.strategies.base import Config
    from oracle.compute.strategies.pipeline import Pipeline
    from oracle.compute.sweep import configurations, evaluate_all, parse_strategies, rank

    B = float(batch)
    name = Pipeline.name
    configs = configurations(ctx, p, B, *parse_strategies(strategies))
    if p > 1 and ctx.options.segments is None and any(c.strategy == name for c in configs):
        seen = {c.segments for c in configs if c.strategy == name}
        configs += [Config(name, p, 1, p, B, S) for S in segment_counts(B, p) if S not in seen]
    return rank(evaluate_all(ctx, configs))


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
    kinds: Sequence[str] | None = None,
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
    kinds: Sequence[str] | None = None,
    strategies="all",
    compare: bool = True,
) -> SearchResult:
    """A given per-layer assignment (a layer-wise configuration file), with the best
    uniform strategies and (``compare``) the search's best assignment beside it."""
    from oracle.compute.layerwise.layerwise import dist_order

    t0 = time.perf_counter()
    costs = Costs(ctx, p, batch, sorted(set(assignment), key=dist_order))
    a = costs.assess(costs.choice_of(assignment))
    given = LayerwiseSearch(
        a, costs, "given configuration", 0, False, False, None, 0.0, [], given=True
    )
    uniform = uniform_points(ctx, p, batch, strategies)
    optimum = search_layerwise(ctx, p, batch, kinds) if compare else None
    return SearchResult(p, float(batch), uniform, given, time.perf_counter() - t0, optimum)
