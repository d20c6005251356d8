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
    group with the most layers (the first of equals) gives up its last layer.  Those
    choices in closed form: every group above a level L comes down to L layers, and the
    first r of the groups then at L (by start) to L - 1, where L is the lowest level
    whose excess (the layers above it) is at most the p - len(groups) splits and r the
    splits left; each layer given up is a group of its own."""
    need = p - len(groups)
    if need <= 0:
        return sorted(groups)
    sizes = [b - a for a, b in groups]
    lo, hi = 1, max(sizes)  # the excess is at most ``need`` at L = max(sizes), not below lo - 1 = 0
    while lo < hi:  # the lowest level L in [1, max] with excess(L) <= need
        mid = (lo + hi) // 2
        if sum(n - mid for n in sizes if n > mid) <= need:
            hi = mid
        else:
            lo = mid + 1
    r = need - sum(n - lo for n in sizes if n > lo)
    out: list[tuple[int, int]] = []
    for a, b in sorted(groups):
        keep = min(b - a, lo)
        if r and b - a >= lo:  # the first r groups at level L (by start) go down one more
            keep, r = keep - 1, r - 1
        out.append((a, a + keep))
        out.extend(zip(range(a + keep, b), range(a + keep + 1, b + 1)))
    return out
