"""The many-counts engine (compute/engine.py, issue 29) gives the numbers of the
per-count code: the pipeline partitions of the vectorized bisection are the ones
compute/partition.py finds count by count, and a sweep's points equal those of the
per-count path (evaluate_all per count on a context whose caches start empty), over
every shipped model and system at many GPU counts (a sample, to keep the suite fast)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from oracle.compute.context import Context, Options
from oracle.compute.engine import warm_partitions
from oracle.compute.network import link, p2p, span_pair
from oracle.compute.partition import partition_cached
from oracle.compute.strategies import names
from oracle.compute.sweep import configurations, evaluate_all, rank, sweep
from oracle.load import load_model, load_system
from oracle.model import LayerTimes

MODELS = ("resnet152", "alexnet", "vgg16", "inception_v3", "mobilenet_v2", "unet3d", "cosmoflow", "cifar_resnet20")
SYSTEMS = ("abci", "dgx-h100-superpod", "lassen", "dgx1-v100")


def times_for(model, seed: int, ties: bool = False) -> tuple[LayerTimes, ...]:
    """Per-layer times: uneven (seeded), or all equal (ties everywhere in the partition)."""
    rng = np.random.default_rng(seed)
    n = len(model.layers)
    fw = np.full(n, 1e-4) if ties else rng.lognormal(-9, 1.5, n)
    return tuple(LayerTimes(float(f), float(2 * f), float(f / 10)) for f in fw)


def fresh(model_name: str, system_name: str, seed: int = 0, ties: bool = False) -> Context:
    m = load_model(model_name)
    return Context(m, load_system(system_name), times_for(m, seed, ties), Options())


def same(a: float, b: float) -> bool:
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b))


@pytest.mark.parametrize("model_name", MODELS)
@pytest.mark.parametrize("ties", [False, True])
def test_partitions_equal_the_per_count_bisection(model_name, ties, monkeypatch):
    from oracle.compute import engine

    monkeypatch.setattr(engine, "FEW_COUNTS", 0)  # at once even for a small model's few counts
    ctx, ref = fresh(model_name, "abci", 1, ties), fresh(model_name, "abci", 1, ties)
    counts = sorted({1, 2, 3, 5, 7, ctx.G // 3, ctx.G // 2, ctx.G - 1, ctx.G} | set(range(1, min(ctx.G, 40) + 1)))
    counts = [p for p in counts if p >= 1]
    warm_partitions(ctx, counts)
    assert set(ctx.__dict__["_partitions"]) >= {p for p in counts if p <= ctx.G}  # solved at once, not when asked
    for p in counts:
        assert ctx.partition(p) == partition_cached(ref, p), (model_name, p)


def old_worst_p2p(ctx, groups, B, S):
    """compute/strategies/pipeline.py's loop before issue 29 (one transfer at a time)."""
    gpn, worst = ctx.system.gpus_per_node, 0.0
    for i, (_, stop) in enumerate(groups[:-1]):
        lk = link(ctx.system, span_pair(i, i + 1, gpn), "pipeline_p2p")
        worst = max(worst, p2p(B / S * ctx.delta * ctx.crossing[stop - 1], lk))
    return worst


@pytest.mark.parametrize("system_name", SYSTEMS)
def test_pipeline_transfers_equal_the_loop(system_name):
    from oracle.compute.strategies.pipeline import _worst_p2p

    ctx = fresh("resnet152", system_name, 2)
    for p in (2, 3, 4, 9, 17, 64, 200):
        groups = ctx.partition(p)
        assert _worst_p2p(ctx, groups, 32 / 8 * ctx.delta) == old_worst_p2p(ctx, groups, 32, 8)


def per_count(ctx, counts, batch):
    """The sweep count by count, with no engine (the reference)."""
    out = []
    for p in counts:
        out += rank(evaluate_all(ctx, configurations(ctx, p, batch, names(), explicit=False)))
    return out


@pytest.mark.parametrize(("model_name", "system_name"), list(zip(MODELS, SYSTEMS * 2)))
def test_sweep_equals_the_per_count_points(model_name, system_name):
    ctx = fresh(model_name, system_name, 3)
    counts = sorted({1, 2, 3, 4, 6, 8, 12, 16, 24, 48, 96, ctx.G // 2, ctx.G, ctx.G + 1, 1000} - {0})
    got = sweep(ctx.model, ctx.system, ctx.times, counts, "all", batch=256, options=Options())
    want = per_count(fresh(model_name, system_name, 3), counts, 256.0)
    assert [(pt.strategy, pt.gpus, pt.p1, pt.p2, pt.rank) for pt in got] == [
        (pt.strategy, pt.gpus, pt.p1, pt.p2, pt.rank) for pt in want]  # fmt: skip
    for a, b in zip(got, want):
        assert a.limits == b.limits
        assert same(a.memory_bytes, b.memory_bytes)
        for (k, x), y in zip(a.breakdown.as_dict().items(), b.breakdown.as_dict().values()):
            assert same(x, y), (a.strategy, a.gpus, a.p2, k)


def test_a_copy_of_a_context_on_another_system_does_not_reuse_its_costs():
    from dataclasses import replace

    from oracle.compute.calibration.calibrate_all import with_system
    from oracle.compute.strategies.spatial import halo_time

    ctx = fresh("resnet152", "abci", 4)
    slow = replace(ctx.system, network=tuple(replace(lv, alpha_s=lv.alpha_s * 1000) for lv in ctx.system.network))
    before = halo_time(ctx, 4, 32.0)
    other = with_system(ctx, slow)
    assert halo_time(other, 4, 32.0)[0] > before[0]
    assert halo_time(ctx, 4, 32.0) == before


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_all_cuts_are_greedy_cuts_for_every_limit(seed):
    from oracle.compute.engine import all_cuts
    from oracle.compute.partition import greedy_cuts

    rng = np.random.default_rng(seed)
    t = rng.lognormal(-6, 2, 300)
    pre = np.concatenate([[0.0], np.cumsum(t)])
    limits = t.max() * (1 + rng.random(200) * rng.choice([0.0, 0.5, 10.0, 400.0], 200))
    assert all_cuts(pre, limits, t.size) == [greedy_cuts(pre, float(x), t.size) for x in limits]


def split_by_heap(groups, p):
    """compute/partition.split_to as it was (8644bca): a heap keyed on (-layers, start),
    popped once per split; the closed form must make the same choices."""
    import heapq

    heap = [(a - b, a, b) for a, b in groups]
    heapq.heapify(heap)
    done, count = [], len(groups)
    while count < p:
        _, a, b = heapq.heappop(heap)
        heapq.heappush(heap, (a - (b - 1), a, b - 1))
        done.append((b - 1, b))
        count += 1
    return sorted(done + [(a, b) for _, a, b in heap])


@given(st.lists(st.integers(1, 40) | st.sampled_from([1, 2, 3, 8]), min_size=1, max_size=30), st.data())
def test_split_to_splits_as_the_heap_does(sizes, data):
    from oracle.compute.partition import split_to

    cuts = np.concatenate([[0], np.cumsum(sizes)]).tolist()
    groups = list(zip(cuts[:-1], cuts[1:]))
    p = data.draw(st.integers(1, cuts[-1]))
    assert split_to(groups, p) == split_by_heap(groups, p)


@given(st.lists(st.floats(0.0, 1e3) | st.sampled_from([0.0, 1.0, 1e-3]), min_size=1, max_size=60),
       st.lists(st.floats(0.5, 50.0), min_size=1, max_size=20), st.data())  # fmt: skip
def test_group_counts_are_greedy_cuts_counts(times, scales, data):
    """compute/engine._group_counts: greedy_cuts' number of groups per limit, -1 where a
    layer exceeds it, or some number above the cap once the walk passes the cap (a layer
    above the limit further on is then not seen)."""
    from oracle.compute.engine import _group_counts
    from oracle.compute.partition import greedy_cuts

    t = np.array(times)
    pre = np.concatenate([[0.0], np.cumsum(t)])
    limits = max(t.max(), 1e-6) * np.array(scales)
    cap = np.array(data.draw(st.lists(st.integers(0, t.size + 2), min_size=limits.size, max_size=limits.size)))
    got = _group_counts(pre, limits, t.size, cap)
    for n, x, c in zip(got.tolist(), limits.tolist(), cap.tolist()):
        cuts = greedy_cuts(pre, x, t.size)
        want = -1 if cuts is None else len(cuts) - 1
        assert n == want or (n > c and (want > c or want == -1)), (n, want, c)
