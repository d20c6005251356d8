"""The pipeline's layer partition: contiguous groups of layers that minimise the
largest group's forward+backward time (the linear partition problem), used by
:meth:`oracle.compute.context.Context.partition`."""

from __future__ import annotations

import numpy as np


def greedy_cuts(pre: np.ndarray, limit: float, G: int) -> list[int] | None:
    """Cut points of the fewest groups with sums <= limit (None if a layer exceeds it)."""
    cuts = [0]
    pos = 0
    tol = limit * 1e-12 + 1e-300
    while pos < G:
        nxt = int(np.searchsorted(pre, pre[pos] + limit + tol, side="right")) - 1
        if nxt <= pos:
            return None
        pos = min(nxt, G)
        cuts.append(pos)
    return cuts


def partition_cached(ctx, p: int) -> list[tuple[int, int]]:
    cache = ctx.__dict__.setdefault("_partitions", {})
    if p in cache:
        return cache[p]
    G = ctx.G
    pre = ctx._prefix_fb
    # Bisection on the bottleneck: the fewest groups whose sums stay under a limit is
    # found greedily, and it is monotone in the limit.  lo is infeasible-or-optimal,
    # hi always feasible; stop at a relative gap of 1e-12 (exact for all purposes).
    lo = float(ctx.fb.max()) if G else 0.0
    hi = float(pre[-1])
    best = greedy_cuts(pre, hi, G)
    cuts = greedy_cuts(pre, lo, G)
    if cuts is not None and len(cuts) - 1 <= p:
        best, hi = cuts, lo
    while hi - lo > 1e-12 * hi:
        mid = 0.5 * (lo + hi)
        cuts = greedy_cuts(pre, mid, G)
        if cuts is not None and len(cuts) - 1 <= p:
            best, hi = cuts, mid
        else:
            lo = mid
    assert best is not None
    groups = [(best[k], best[k + 1]) for k in range(len(best) - 1)]
    cache[p] = split_to(groups, p)
    return cache[p]


def split_to(groups: list[tuple[int, int]], p: int) -> list[tuple[int, int]]:
    """Split multi-layer groups until there are p (never raises the maximum): always the
    group with the most layers (the first of equals) gives up its last layer.  A heap
    keyed on (-layers, start) makes the choices of a linear scan in O(p log p)."""
    import heapq

    heap = [(a - b, a, b) for a, b in groups]
    heapq.heapify(heap)
    done: list[tuple[int, int]] = []
    count = len(groups)
    while count < p:
        _, a, b = heapq.heappop(heap)
        heapq.heappush(heap, (a - (b - 1), a, b - 1))
        done.append((b - 1, b))
        count += 1
    return sorted(done + [(a, b) for _, a, b in heap])
