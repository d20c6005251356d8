"""The sweep engine over many GPU counts at once (issue 29).

What costs a sweep of every GPU count is work repeated per count in Python.  This
module does that work for all counts in one pass of numpy array operations, with the
same floating-point operations in the same order as the per-count code, so the
numbers are identical (tests/test_engine.py compares both):

* the pipeline's optimal linear partition (compute/partition.py): the bisection on the
  bottleneck runs for every stage count at once, each step's greedy group count as a
  vector of searchsorted calls; the partitions fill the cache that
  :meth:`Context.partition` reads, so ``pipeline.evaluate`` uses them unchanged.

* the per-group costs every factorization p = p1·p2 with the same model-part group
  repeats (halo exchange, layer collectives, tail gather, spatial limits: functions of
  the group size q and its samples b only, the same (q, b) at every p that q divides
  under weak scaling): computed once per context (:func:`per_context`).

Everything else goes through the per-point strategies (compute/sweep.evaluate_all).
"""

from __future__ import annotations

import functools

import numpy as np

from oracle.compute.partition import split_to


def per_context(fn):
    """Decorator: ``fn(ctx, *args)`` computed once per context and arguments (a pure
    function of them; a Context does not change once built, and a shallow copy with
    another system, compute/calibration/calibrate_all.with_system, gets a cache of its own).  An argument that cannot
    be hashed (a SplitSums, itself cached per context) is keyed by its identity and kept
    alive with the result, so the identity stays unique."""
    name = fn.__qualname__

    @functools.wraps(fn)
    def cached(ctx, *args):
        memo = ctx.__dict__.get("_per_context")
        if memo is None or memo["owner"] is not ctx:  # a copy (calibrate_all.with_system) starts afresh
            memo = ctx.__dict__["_per_context"] = {"owner": ctx}
        key = (name, *(_key(a) for a in args))
        hit = memo.get(key)
        if hit is None:
            hit = memo[key] = (fn(ctx, *args), args)
        return hit[0]

    return cached


def _key(value):
    try:
        hash(value)
    except TypeError:
        return ("id", id(value))
    return value


def _group_counts(pre: np.ndarray, limits: np.ndarray, G: int, cap: np.ndarray) -> np.ndarray:
    """For each limit, the number of groups compute/partition.greedy_cuts forms (its
    ``len(cuts) - 1``), or -1 where a layer exceeds the limit; counting stops once it
    exceeds ``cap`` (the answer is then some number > cap).  Every walk steps on until
    the last one is done (a finished one's steps are not counted): fewer array
    operations a step than walking only the unfinished ones."""
    tol = limits * 1e-12 + 1e-300  # as greedy_cuts: limit·1e-12 + 1e-300
    pos = np.zeros(limits.size, dtype=np.int64)
    step = np.zeros(limits.size, dtype=np.int64)
    count = np.zeros(limits.size, dtype=np.int64)
    pending = np.ones(limits.size, dtype=bool)
    while pending.any():
        nxt = np.searchsorted(pre, pre[pos] + limits + tol, side="right") - 1
        stuck = nxt <= pos
        pos = np.minimum(nxt, G)
        step += 1
        done = pending & (stuck | (pos >= G) | (step > cap))
        if done.any():
            count[done] = np.where(stuck[done], -1, step[done])
            pending &= ~done
    return count


def _fits(pre, limits, G, ps) -> np.ndarray:
    n = _group_counts(pre, limits, G, ps)
    return (n >= 0) & (n <= ps)


def bottlenecks(ctx, ps: np.ndarray) -> np.ndarray:
    """The limit whose greedy cuts compute/partition.partition_cached keeps, for every
    stage count in ``ps`` (1 <= p <= G) at once: the same bisection, step for step."""
    G, pre = ctx.G, ctx._prefix_fb
    lo0 = float(ctx.fb.max()) if G else 0.0
    hi0 = float(pre[-1])
    lo = np.full(ps.size, lo0)
    hi = np.full(ps.size, hi0)
    best = hi.copy()
    first = _fits(pre, lo, G, ps)
    best[first], hi[first] = lo0, lo0
    active = hi - lo > 1e-12 * hi
    while active.any():
        idx = np.flatnonzero(active)
        mid = 0.5 * (lo[idx] + hi[idx])
        ok = _fits(pre, mid, G, ps[idx])
        best[idx[ok]] = mid[ok]
        hi[idx[ok]] = mid[ok]
        lo[idx[~ok]] = mid[~ok]
        active[idx] = hi[idx] - lo[idx] > 1e-12 * hi[idx]
    return best


# Below this many stage counts the per-count bisection (compute/partition.py) is faster than
# the one for all counts at once, whose every step walks the greedy cuts of the slowest:
# measured with benchmarks/sweep.py's ResNet-152 (515 layers): its 13 powers of two, 0.02 s
# one by one against 0.06 s at once; 64 counts, 0.48 s against 0.08 s
FEW_COUNTS = 16


def warm_partitions(ctx, counts) -> None:
    """Fill the context's partition cache for every count in ``counts`` that a
    pipeline can have (1..G) and that is not cached yet."""
    cache = ctx.__dict__.setdefault("_partitions", {})
    ps = np.array(sorted({int(p) for p in counts if 1 <= p <= ctx.G and p not in cache}), dtype=np.int64)
    if ps.size < FEW_COUNTS:  # Context.partition solves each when asked
        return
    for p, cuts in zip(ps.tolist(), all_cuts(ctx._prefix_fb, bottlenecks(ctx, ps), ctx.G)):
        cache[p] = split_to([(cuts[k], cuts[k + 1]) for k in range(len(cuts) - 1)], p)


def all_cuts(pre: np.ndarray, limits: np.ndarray, G: int) -> list[list[int]]:
    """compute/partition.greedy_cuts for every limit at once, step for step (each limit
    at least the largest layer's time: every walk reaches G)."""
    tol = limits * 1e-12 + 1e-300  # as greedy_cuts: limit·1e-12 + 1e-300
    pos = np.zeros(limits.size, dtype=np.int64)
    steps = [pos]
    live = pos < G
    while live.any():
        nxt = np.searchsorted(pre, pre[pos] + limits + tol, side="right") - 1
        assert not (live & (nxt <= pos)).any()  # a layer above its limit: greedy_cuts' None
        pos = np.where(live, np.minimum(nxt, G), pos)
        steps.append(pos)
        live = pos < G
    table = np.stack(steps, axis=1)
    return [row[:n].tolist() for row, n in zip(table, ((table < G).sum(axis=1) + 1).tolist())]


def prepare(ctx, counts, chosen) -> None:
    """Do the per-count work of the chosen strategies for every count at once."""
    from oracle.compute.strategies.pipeline import Pipeline

    if Pipeline.name in chosen:
        warm_partitions(ctx, counts)


# The memory a request's points take until they are written: measured with
# benchmarks/design_space.py (2026-11-25, ResNet-152 on ABCI, --gpus 1..1000, every
# strategy, --format json): a peak of 266 MB for 15,136 points, 17.6 kB a point, rounded up.
BYTES_PER_POINT = 20_000
# issue 29 ("Done when"): a request stays under 1 GB of memory
MEMORY_BUDGET_BYTES = 1e9


def factorizations(counts: np.ndarray) -> np.ndarray:
    """For each p, the factorizations p = p1·p2 with p1, p2 >= 2 (compute/strategies/
    base.hybrid_configurations): the divisors of p other than 1 and p, counted in pairs
    (d, p/d) for d up to √p."""
    n = np.zeros(counts.size, dtype=np.int64)
    for d in range(2, int(np.sqrt(counts.max())) + 1 if counts.size else 0):
        hit = (counts % d == 0) & (d * d <= counts)
        n += np.where(hit, np.where(d * d == counts, 1, 2), 0)
    return n


def hybrid_points(counts: np.ndarray, explicit: bool) -> np.ndarray:
    """For each p, the points a hybrid lists without --p2: its factorizations, or (named,
    ``explicit``) one where there is none (compute/sweep.configurations: its limit says why)."""
    n = factorizations(counts)
    return np.maximum(n, 1) if explicit else n


def count_points(counts, chosen, explicit: bool = True, p2: int | None = None) -> tuple[int, bool]:
    """How many points compute/sweep.configurations lists for ``counts``, and whether
    that is exact (False: a lower bound, the hybrids' factorizations left out because
    the rest is over the budget already)."""
    from oracle.compute.strategies import REGISTRY

    c = np.asarray(sorted(counts), dtype=np.int64)
    plain = hybrid = 0
    for name in chosen:
        s = REGISTRY[name]
        at = c if explicit else c[(c == 1) == s.one_gpu]  # 'all': serial at 1 GPU only, the rest from 2
        if s.hybrid and p2 is None:
            hybrid += 1
            continue
        plain += int(at.size)
    if not hybrid:
        return plain, True
    if plain * BYTES_PER_POINT > MEMORY_BUDGET_BYTES:
        return plain, False
    return plain + hybrid * int(hybrid_points(c if explicit else c[c > 1], explicit).sum()), True


# What a configuration evaluated in arrays (compute/vector) takes, never built as a point:
# its columns (configuration, phases, memory, limits) and the ranking's keys, about 30
# numbers, rounded up to 1 kB for the temporaries (measured with benchmarks/design_space.py)
BYTES_PER_ARRAY_POINT = 1_000


def output_points(counts, chosen, explicit=True, p2=None, top=None, streamed=False) -> tuple[int, int, bool]:
    """(points built, points only in arrays, exact) held at once by a request: with
    ``top``, ``top`` per count built and every point in arrays (a strategy compute/vector
    does not cover too: its points are evaluated compute/vector/run.CHUNK at a time and
    only their numbers kept); without, every point built.  ``streamed``: the counts are
    evaluated :func:`chunks` at a time (oracle sweep), so only the largest chunk's."""
    if streamed:
        return max((output_points(part, chosen, explicit, p2, top) for part in chunks(counts, chosen, explicit, p2, top)),
                   default=(0, 0, True))  # fmt: skip
    n, exact = count_points(counts, chosen, explicit, p2)
    if not top:
        return n, 0, exact
    return min(n, top * len(counts)), n, exact


# The points a streamed sweep (oracle sweep, predict's CSV/JSON/Markdown) evaluates at
# once: about 200 MB of built points (BYTES_PER_POINT) at most; per chunk, the arrays'
# fixed costs (a call per strategy and block, the ranking) are small against 10,000
# points.  With ``top`` only top points per count are built and the rest stay in arrays:
# then a run holds up to a quarter of MEMORY_BUDGET_BYTES of array points
# (BYTES_PER_ARRAY_POINT), so those fixed costs are paid once or a few times, not per
# 10,000 points (predict --top 1 of 1..10,000 GPUs ran 20 runs, 1.3x the time of one)
CHUNK_POINTS = 10_000
CHUNK_ARRAY_POINTS = 250_000


def chunks(counts, chosen, explicit: bool = True, p2: int | None = None, top: int | None = None) -> list[list[int]]:
    """The sorted distinct ``counts`` in consecutive runs of at most :data:`CHUNK_POINTS`
    points built (all of a count's, or ``top``) and :data:`CHUNK_ARRAY_POINTS` evaluated
    (compute/sweep.configurations' count per GPU count; a count is never split: a sweep
    ranks the points of each count together)."""
    from oracle.compute.strategies import REGISTRY

    c = np.asarray(sorted(set(int(g) for g in counts)), dtype=np.int64)
    per = np.zeros(c.size, dtype=np.int64)
    pairs = hybrid_points(c, explicit) if p2 is None else None
    for name in chosen:
        s = REGISTRY[name]
        here = np.ones(c.size, dtype=bool) if explicit else (c == 1) == s.one_gpu
        per += np.where(here, pairs if s.hybrid and pairs is not None else 1, 0)
    built = per if not top else np.minimum(per, top)
    out, start, held, evaluated = [], 0, 0, 0
    for i, (b, n) in enumerate(zip(built.tolist(), per.tolist())):
        if held and (held + b > CHUNK_POINTS or evaluated + n > CHUNK_ARRAY_POINTS):
            out.append(c[start:i].tolist())
            start, held, evaluated = i, 0, 0
        held, evaluated = held + b, evaluated + n
    return out + ([c[start:].tolist()] if c.size else [])


def check_memory(counts, chosen, explicit: bool = True, p2: int | None = None, top: int | None = None,
                 streamed: bool = False) -> None:  # fmt: skip
    """Refuse a request whose points would not fit in :data:`MEMORY_BUDGET_BYTES`:
    one error saying how many points and how much memory it needs (exit 2).  Points
    built for the output count :data:`BYTES_PER_POINT` each, the others
    :data:`BYTES_PER_ARRAY_POINT` (:func:`output_points`; ``streamed``: a chunk's)."""
    from oracle.errors import OracleError
    from oracle.units import fmt_gb_apart

    n, arrays, exact = output_points(counts, chosen, explicit, p2, top, streamed)
    need = n * BYTES_PER_POINT + arrays * BYTES_PER_ARRAY_POINT
    if need > MEMORY_BUDGET_BYTES:
        many = f"{max(n, arrays):,}" if exact else f"at least {max(n, arrays):,}"
        tips = "fewer counts (a step: 1..10000:16), fewer strategies (--strategy), " + ("" if top else "--top N, ")
        need_text, budget = fmt_gb_apart(need, MEMORY_BUDGET_BYTES)
        raise OracleError(f"{len(counts):,} GPU counts x {len(chosen)} strategies are {many} points, which need"
                          f" about {need_text} of memory; at most {budget} in one run",
                          path="--gpus", hint=tips + "or --p2 for the hybrids")  # fmt: skip
