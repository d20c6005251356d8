"""A sweep in arrays (issue 29): every strategy's configurations at every GPU count
evaluated as columns (compute/vector/kinds.py; a strategy or option it does not cover
point by point, compute/sweep.evaluate), ranked with arrays as compute/sweep.rank ranks
points (feasible first by total time, then strategy order, then p2), and only the
points that are output built as :class:`~oracle.compute.cost.Point`\\ s: with ``top``
the first ``top`` of every GPU count."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from oracle.compute.strategies import REGISTRY, names
from oracle.compute.strategies.base import Config
from oracle.compute.vector.columns import Columns
from oracle.compute.vector.kinds import covers, evaluate_many


def config_arrays(name: str, counts: np.ndarray, batches: np.ndarray, p2: int | None):
    """(p, p1, p2, B) of every configuration compute/sweep.configurations lists for the
    strategy at ``counts`` (global batch ``batches`` per count), in its order."""
    strategy = REGISTRY[name]
    if not strategy.hybrid:
        one = np.ones(counts.size, dtype=np.int64)
        parts = strategy.parts(2)  # (2, 1) data; (1, 2) model-parallel; (1, 1) serial
        p1 = counts if parts[0] == 2 else one
        q = counts if parts[1] == 2 else one
        return counts, p1, q, batches
    if p2 is not None:
        p1 = np.where(counts % p2 == 0, counts // p2, 0)
        return counts, p1, np.full(counts.size, p2, dtype=np.int64), batches
    rows, qs = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
    for d in range(2, math.isqrt(int(counts.max())) + 1 if counts.size else 0):  # q = d and q = p/d, p >= d²
        hit = np.flatnonzero((counts % d == 0) & (counts >= d * d))
        pair = hit[counts[hit] != d * d]
        rows += [hit, pair]
        qs += [np.full(hit.size, d, dtype=np.int64), counts[pair] // d]
    rows_a, qs_a = np.concatenate(rows), np.concatenate(qs)
    order = np.lexsort((qs_a, rows_a))
    rows_a, qs_a = rows_a[order], qs_a[order]
    p = counts[rows_a]
    return p, p // qs_a, qs_a, batches[rows_a]


def columns(ctx, counts: Sequence[int], chosen, explicit, batch, batch_per_gpu, p2, keep=True) -> list[Columns]:
    """The columns of every chosen strategy (in the registry's order); ``keep``: hold the
    points of the strategies evaluated point by point (else only their numbers)."""
    c = np.asarray(sorted(counts), dtype=np.int64)
    out = []
    for name in names():
        if name not in chosen:
            continue
        at = c if explicit else c[(c == 1) == REGISTRY[name].one_gpu]
        B = np.full(at.size, float(batch)) if batch is not None else float(batch_per_gpu) * at
        if not covers(ctx, name):
            out.append(per_point(ctx, name, at, B, p2, keep, explicit))
            continue
        rest = unfactored(name, at, p2, explicit)
        if rest.any():  # --p2 dividing no count, or a named hybrid at a count it cannot factor: its point
            out.append(per_point(ctx, name, at[rest], B[rest], p2, keep, explicit))  # says so, point by point
            at, B = at[~rest], B[~rest]
        arrays = config_arrays(name, at, B, p2)
        if arrays[0].size:  # none: no count with a configuration (a hybrid at primes)
            out.append(evaluate_many(ctx, name, *arrays))
    return out


def unfactored(name: str, counts: np.ndarray, p2: int | None, explicit: bool) -> np.ndarray:
    """Which ``counts`` a hybrid has no p1·p2 at (its point infeasible, strategies/data_filter.factor_limit):
    --p2 does not divide them, or without it (the hybrid named) no factorization with p1, p2 >= 2."""
    from oracle.compute.engine import factorizations

    if not REGISTRY[name].hybrid or (p2 is None and not explicit):
        return np.zeros(counts.size, dtype=bool)
    return counts % p2 != 0 if p2 is not None else factorizations(counts) == 0


# Points of a strategy evaluated point by point that are alive at once when they are not
# kept (Columns.take): about 20 MB (compute/engine.BYTES_PER_POINT)
CHUNK = 1024


def per_point(ctx, name: str, counts: np.ndarray, batches: np.ndarray, p2: int | None, keep: bool = True,
              explicit: bool = True) -> Columns:  # fmt: skip
    """Columns of a strategy kinds.py does not cover, from its points (compute/sweep.evaluate_all),
    evaluated :data:`CHUNK` at a time when they are not kept; its configurations at ``counts``
    as compute/sweep.configurations lists them."""
    from oracle.compute.cost import phase_names
    from oracle.compute.sweep import configurations, evaluate_all

    configs = [cfg for p, B in zip(counts.tolist(), batches.tolist())
               for cfg in configurations(ctx, p, B, (name,), explicit, p2)]  # fmt: skip

    def ints(key):
        return np.array([getattr(cfg, key) for cfg in configs], dtype=np.int64)

    n = len(configs)
    cols = Columns(name, ints("gpus"), ints("p1"), ints("p2"), np.array([cfg.batch for cfg in configs], dtype=float),
                   {ph: np.zeros(n) for ph in phase_names()}, np.zeros(n),
                   segments=np.array([cfg.segments or 0 for cfg in configs], dtype=np.int64))  # fmt: skip
    step = n if keep else CHUNK
    for lo in range(0, n, max(step, 1)):
        cols.take(np.arange(lo, min(lo + step, n)), evaluate_all(ctx, configs[lo : lo + step]), keep)
    return cols


def ranked(cols_list: list[Columns], top: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(which columns, row: arrays) of the points to output, in compute/sweep.rank's order per
    GPU count (counts ascending): the first ``top`` of every count (all without)."""
    if not cols_list:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    order = {n: i for i, n in enumerate(names())}
    cat = np.concatenate
    gpus = cat([c.gpus for c in cols_list])
    strat = cat([np.full(c.size, order.get(c.strategy, 99)) for c in cols_list])
    which = cat([np.full(c.size, k) for k, c in enumerate(cols_list)])
    total = cat([c.total() for c in cols_list])
    nan = np.isnan(total)
    keys = (cat([c.p2 for c in cols_list]), strat, np.where(nan, 0.0, total), nan, ~cat([c.feasible() for c in cols_list]))
    idx = np.lexsort((*keys, gpus))
    if top:
        g = gpus[idx]
        first = np.r_[True, g[1:] != g[:-1]]
        start = np.maximum.accumulate(np.where(first, np.arange(g.size), 0))
        idx = idx[np.arange(g.size) - start < top]
    row = cat([np.arange(c.size) for c in cols_list])
    return which[idx], row[idx]


def materialize(ctx, cols_list: list[Columns], picks, brief: bool = False) -> list:
    """The points of ``picks`` (:func:`ranked`), the per-point path's, ranked per GPU count
    by compute/sweep.rank on their own numbers (the same order as the arrays').  ``brief``:
    the rows whose numbers are the per-point path's to the last bit (Columns.brief_rows)
    as compute/vector/rows.BriefRow (what a CSV row shows, built for all at once)."""
    from oracle.compute.sweep import evaluate_all, rank_runs
    from oracle.compute.vector.rows import brief_rows

    which, rows = picks
    out: list = [None] * which.size
    todo, slots = [], []
    for w, c in enumerate(cols_list):
        at = np.flatnonzero(which == w)
        if brief and c.brief_rows is not None:  # issue 29: the brief rows of the columns at once
            short = c.brief_rows[rows[at]]
            if c.points:  # (np.isin imports numpy.ma: ~14 ms of a fresh process when there are none)
                short = short & ~np.isin(rows[at], list(c.points))
            for i, row in zip(at[short].tolist(), brief_rows(ctx, c, rows[at[short]]) if short.any() else ()):
                out[i] = row
            at = at[~short]
        for i, r in zip(at.tolist(), rows[at].tolist()):
            if r in c.points:
                out[i] = c.points[r]
                continue
            S = int(c.segments[r]) if c.segments is not None and c.segments[r] else None
            todo.append(Config(c.strategy, int(c.gpus[r]), int(c.p1[r]), int(c.p2[r]), float(c.batch[r]), S))
            slots.append(i)
    for i, pt in zip(slots, evaluate_all(ctx, todo)):
        out[i] = pt
    return rank_runs(out)
