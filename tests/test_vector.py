"""The cost model in arrays (compute/vector, issue 29) gives the per-point engine's
numbers: every breakdown phase, memory, feasibility and limit codes of every
configuration compute/sweep.evaluate costs one at a time, over every shipped model and
system, at GPU counts from 1 through non-powers of two to beyond the system, the batch
and the filters; ``top`` builds the points full materialization ranks first; and the
memory guard counts the points built."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from conftest import run_cli
from test_robustness import one_error

from oracle.compute.context import Context, Options
from oracle.compute.cost import phase_names
from oracle.compute.engine import check_memory, factorizations
from oracle.compute.strategies import names
from oracle.compute.strategies.base import Config
from oracle.compute.sweep import evaluate_all, sweep
from oracle.compute.vector import kinds, run
from oracle.errors import OracleError
from oracle.load import load_model, load_system
from oracle.model import LayerTimes

ROOT = Path(__file__).resolve().parent.parent
MODELS = sorted(p.stem for p in (ROOT / "models").glob("*.yaml"))
SYSTEMS = sorted(p.stem for p in (ROOT / "systems").glob("*.yaml"))
PROFILE = "model: ResNet-152\nsource: test\ntotal: {fw_bw_per_sample_s: 0.01}\n"


def times_for(model, seed: int = 0) -> tuple[LayerTimes, ...]:
    rng = np.random.default_rng(seed)
    fw = rng.lognormal(-9, 1.5, len(model.layers))
    return tuple(LayerTimes(float(f), float(2 * f), float(f / 10)) for f in fw)


def close(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def counts_for(system) -> list[int]:
    n = system.total_gpus
    return sorted({1, 2, 3, 5, 6, 8, 12, 30, 64, 97, 210, 1000, n - 1, n, n + 1, 2 * n} - {0})


def mismatches(ctx, cols) -> list:
    """Where the columns differ from the per-point path's points."""
    S = cols.segments.tolist() if cols.segments is not None else [0] * cols.size  # the pipeline's S (0: none)
    cfgs = [Config(cols.strategy, int(cols.gpus[i]), int(cols.p1[i]), int(cols.p2[i]), float(cols.batch[i]), S[i] or None)
            for i in range(cols.size)]  # fmt: skip
    out = []
    feasible = cols.feasible()
    for i, pt in enumerate(evaluate_all(ctx, cfgs)):
        d = pt.breakdown.as_dict()
        bad = [n for n in phase_names() if not close(d[n], float(cols.phases[n][i]))]
        bad += ["memory"] if not close(pt.memory_bytes, float(cols.memory[i])) else []
        bad += ["limits"] if tuple(lim.code for lim in pt.limits) != cols.limit_codes(i) else []
        bad += ["feasible"] if pt.feasible != bool(feasible[i]) else []
        if bad:
            out.append((cols.strategy, pt.gpus, pt.p1, pt.p2, pt.global_batch, bad))
    return out


@pytest.mark.parametrize("model_name", MODELS)
def test_columns_equal_the_per_point_engine(model_name):
    m = load_model(model_name)
    covered = 0
    for k, system_name in enumerate(SYSTEMS):
        for options, scalings in ((Options(), ((256.0, None), (None, 32.0))),
                                  (Options(memory_model="paradl", zero=3, mixed_precision=True), ((256.0, None),))):
            ctx = Context(m, load_system(system_name), times_for(m), options)
            counts = counts_for(ctx.system)[k % 2 :: 2]  # every other count, by turns (the suite's time)
            for batch, per_gpu in scalings:
                for name in names():
                    if not kinds.covers(ctx, name):
                        continue
                    covered += 1
                    B = np.full(len(counts), batch) if batch else per_gpu * np.array(counts, dtype=float)
                    c = np.array(counts, dtype=np.int64)
                    # hybrids: a sample of their factorizations (every one at the small counts)
                    cols = kinds.evaluate_many(ctx, name, *_sample(run.config_arrays(name, c, B, None)))
                    assert not mismatches(ctx, cols), (system_name, options.memory_model)
    assert covered == 3 * len(names()) * len(SYSTEMS)  # NCCL (the DGX files), abci-2020's input and leader all-reduce


def _sample(arrays, most: int = 120):
    p = arrays[0]
    if p.size <= most:
        return arrays
    keep = np.unique(np.r_[np.flatnonzero(p <= 64), np.linspace(0, p.size - 1, most).astype(int)])
    return tuple(a[keep] for a in arrays)


def default_context(tmp_path, model_name: str, system_name: str, **flags) -> Context:
    """The context ``oracle predict`` builds for a system under its defaults (its stack's
    options and system changes, the compute model converting the profile), with ``flags``."""
    from oracle.api import model_system, request
    from oracle.compute.conversion import prepare

    prof = tmp_path / f"{model_name}.yaml"
    prof.write_text(PROFILE.replace("ResNet-152", load_model(model_name).name))
    req = request(model_name, system_name, str(prof), "1..4", **flags)
    o = req.run.options
    system = model_system(req.system, req.model.name, o.stack)
    times, conversion = prepare(req.model, system, req.profile, o)
    return Context(req.model, system, times, o, req.profile.kind, conversion=conversion)


STACKS = sorted(p.stem for p in (ROOT / "stacks").glob("*.yaml"))
# what stays point by point under a system's defaults or a stack (compute/vector/kinds.covers):
# nothing (ParaDL's own tool, the paradl stack: compute/vector/paradl.py)
POINT_BY_POINT: dict[str, set] = {}


@pytest.mark.parametrize(("model_name", "stack"), [("resnet50", None), ("mobilenet_v2", None)]
                         + [("resnet50", s) for s in STACKS])  # fmt: skip
def test_columns_equal_the_per_point_engine_under_defaults_and_stacks(tmp_path, model_name, stack):
    """Every shipped system under its defaults (the DGX/HGX/A3 files: the pytorch stack,
    NCCL's algorithms, --overlap buckets) and under each shipped stack (its per-GPU costs,
    overlap, input pipeline): the arrays cover what POINT_BY_POINT does not list and give
    the per-point numbers, strong and weak scaling and half the counts by turns."""
    flags = {} if stack is None else {"stack": stack}
    for k, system_name in enumerate(SYSTEMS):
        scaling = {"batch": 256.0} if k % 2 else {"batch_per_gpu": 32.0}
        ctx = default_context(tmp_path, model_name, system_name, **flags, **scaling)
        left = POINT_BY_POINT.get(stack, set()) | POINT_BY_POINT.get(system_name, set())
        assert [n for n in names() if not kinds.covers(ctx, n)] == [n for n in names() if n in left], system_name
        c = np.array(counts_for(ctx.system)[k % 2 :: 2], dtype=np.int64)  # every other count, by turns
        B = np.full(c.size, 256.0) if "batch" in scaling else 32.0 * c
        for name in names():
            if name not in left:
                cols = kinds.evaluate_many(ctx, name, *_sample(run.config_arrays(name, c, B, None)))
                assert not mismatches(ctx, cols), (system_name, name)


def test_fp32_gradients_under_mixed_precision_move_4_bytes_per_parameter_on_both_paths(tmp_path):
    """The pytorch stack all-reduces fp32 gradients under AMP (stacks/pytorch.yaml
    communication.gradient_precision): its context's gradient width is 4 bytes where the
    activations' is 2, the mxnet stack's (fp16 gradients) stays 2, and the arrays give the
    per-point numbers with it."""
    for stack, width in (("pytorch", 4), ("mxnet", 2)):
        ctx = default_context(tmp_path, "resnet50", "dgx-a100-80gb", stack=stack, precision="fp16",
                              mixed_precision=True, batch_per_gpu=32.0)  # fmt: skip
        assert (ctx.delta, ctx.grad_delta) == (2, width), stack
    c = np.array(counts_for(ctx.system)[::3], dtype=np.int64)
    for name in names():
        if kinds.covers(ctx, name):
            cols = kinds.evaluate_many(ctx, name, *_sample(run.config_arrays(name, c, 32.0 * c, None)))
            assert not mismatches(ctx, cols), name
    ctx = default_context(tmp_path, "resnet50", "dgx-a100-80gb", stack="pytorch", precision="fp16",
                          mixed_precision=True, batch_per_gpu=32.0)  # fmt: skip
    for name in names():
        if kinds.covers(ctx, name):
            cols = kinds.evaluate_many(ctx, name, *_sample(run.config_arrays(name, c, 32.0 * c, None)))
            assert not mismatches(ctx, cols), name


def test_columns_equal_under_nccl_pinned_and_an_nvlink_domain_beyond_a_host():
    """NCCL_ALGO pinned (--collective nvls, collnet: a group without that algorithm takes
    NCCL's choice), an NVLink domain of 4 hosts (one NCCL node), one bucket per layer, and
    ParaDL's leader all-reduce in both hybrids' data groups and data+spatial's split layers."""
    from dataclasses import replace

    m = load_model("resnet50")
    s = load_system("dgx-h100-superpod")
    s = replace(s, interconnect=replace(s.interconnect, nvlink_domain_gpus=32))
    leader = replace(s, implementation=replace(s.implementation, data_filter_allreduce="leader",
                                               data_spatial_allreduce="leader"))  # fmt: skip
    c = np.array(counts_for(s)[::2] + [16, 24, 40, 48, 72, 96], dtype=np.int64)
    for s, options in ((s, Options(collective="nvls")), (s, Options(collective="collnet")),
                       (s, Options(overlap="buckets", bucket_bytes=0)), (leader, Options(overlap="buckets"))):  # fmt: skip
        ctx = Context(m, s, times_for(m), options)
        for name in names():
            assert kinds.covers(ctx, name)
            cols = kinds.evaluate_many(ctx, name, *_sample(run.config_arrays(name, c, 32.0 * c, None), 60))
            assert not mismatches(ctx, cols), (options, name)


# --collective's algorithms other than the ring and NCCL's (network.allreduce_algorithm)
OTHER_ALGORITHMS = ("auto", "rhd", "tree", "hierarchical", "leader", "ps")
OFF_THE_NODES = [16, 24, 40, 48, 96]  # with counts_for's 3, 5, 6, 12, 30, 97, 210: not multiples of 4 or 8


@pytest.mark.parametrize("system_name", ["abci", "lassen", "dgx1-v100", "dgx-h100-superpod", "hgx-h200"])
def test_columns_equal_under_every_collective_algorithm(tmp_path, system_name):
    """--collective auto, rhd, tree, hierarchical, leader and ps (vector/collectives'
    Formula, TwoLevel and Cheapest) are covered and give the per-point numbers under the
    system's defaults (the DGX/HGX files: the pytorch stack, --overlap buckets), strong
    and weak scaling by turns, at powers of two and counts off the nodes' multiples, and
    with a --contention override (the hierarchical's φ_g = max(φ, φ of g flows))."""
    for k, algo in enumerate(OTHER_ALGORITHMS):
        for flags in ({}, {"contention": 3.0}) if algo in ("hierarchical", "auto") else ({},):
            scaling = {"batch": 256.0} if k % 2 else {"batch_per_gpu": 32.0}
            ctx = default_context(tmp_path, "resnet50", system_name, collective=algo, **flags, **scaling)
            assert ctx.algorithm == algo
            c = np.array(sorted(set(counts_for(ctx.system)) | set(OFF_THE_NODES)), dtype=np.int64)
            B = np.full(c.size, 256.0) if "batch" in scaling else 32.0 * c
            for name in names():
                assert kinds.covers(ctx, name), (algo, name)
                cols = kinds.evaluate_many(ctx, name, *_sample(run.config_arrays(name, c, B, None), 60))
                assert not mismatches(ctx, cols), (system_name, algo, flags, name)


def test_columns_equal_under_operation_entries_naming_algorithms():
    """A system's operations: entries naming an algorithm (theirs wins over --collective:
    network.link; an all-reduce-only one takes the ring for an all-gather), with each
    pattern of the layer collectives' backward, and ParaDL's leader all-reduce in both
    hybrids' data groups, with and without an entry of its own for the gradients."""
    from dataclasses import replace

    from oracle.model import OperationOverride as Op

    m = load_model("resnet50")
    base = load_system("abci")
    own = (("layer_allgather", Op(algorithm="rhd", beta_scale=1.5)), ("allreduce", Op(algorithm="tree")),
           ("tail_gather", Op(algorithm="auto")))  # fmt: skip
    grads = (("gradient_allreduce", Op(algorithm="hierarchical")),)
    c = np.array(counts_for(base)[::2] + OFF_THE_NODES, dtype=np.int64)
    for algo, pattern, ops in (("ring", "allreduce", own + grads), ("ps", "reduce_scatter", own),
                               ("auto", "allreduce_slice", own + grads), ("rhd", "none", own)):  # fmt: skip
        impl = replace(base.implementation, layer_backward=pattern, data_filter_allreduce="leader",
                       data_spatial_allreduce="leader")  # fmt: skip
        ctx = Context(m, replace(base, operations=base.operations + ops, implementation=impl), times_for(m),
                      Options(collective=algo, contention=2.0 if algo == "auto" else None))  # fmt: skip
        for name in names():
            assert kinds.covers(ctx, name), (algo, name)
            cols = kinds.evaluate_many(ctx, name, *_sample(run.config_arrays(name, c, 32.0 * c, None), 60))
            assert not mismatches(ctx, cols), (algo, pattern, name)


@pytest.mark.parametrize("system_name", ["abci", "dgx1-v100", "dgx-h100-superpod"])
def test_the_hybrids_at_a_given_p2_in_arrays(tmp_path, system_name):
    """--p2: the hybrids' one factorization (p/p2, p2) at every count p2 divides is
    evaluated in arrays and equals the per-point numbers; at the other counts the
    per-point path says why (strategies/base.factor_limit), as before."""
    ctx = default_context(tmp_path, "resnet50", system_name, batch_per_gpu=32.0)
    counts = sorted(set(counts_for(ctx.system)) | {16, 24, 48, 96})
    for p2 in (2, 3, 8):
        cols = run.columns(ctx, counts, ["data+filter", "data+spatial"], True, None, 32.0, p2)
        arrays = [c for c in cols if not c.points]
        assert {c.strategy for c in arrays} == {"data+filter", "data+spatial"}, p2
        assert all((c.gpus % p2 == 0).all() and (c.p2 == p2).all() for c in arrays)
        assert sum(c.size for c in cols) == 2 * len(counts)  # one configuration per count
        for c in cols:
            assert not mismatches(ctx, c), (system_name, p2, c.strategy)


@pytest.mark.parametrize("system_name", ["abci", "dgx1-v100", "dgx-h100-superpod"])
def test_the_delayed_update_in_arrays(tmp_path, system_name):
    """--delayed-update (Lee et al. §IV; overlap._delayed_timeline): the delayed layers'
    buckets after the others', the stall and the next forward's window, in arrays, equal
    the per-point numbers; layers named by type and by name, several bucket sizes."""
    for model_name, delayed, extra in (("vgg16", "fc", {}), ("resnet50", "fc", {"bucket_mb": 1.0}),
                                        ("vgg16", "fc6,fc8", {"bucket_mb": 0.0}),
                                        ("resnet50", "conv", {"bucket_layers": 3})):  # fmt: skip
        ctx = default_context(tmp_path, model_name, system_name, batch_per_gpu=32.0, overlap="buckets",
                              delayed_update=delayed, **extra)  # fmt: skip
        assert ctx.delayed_mask().any(), delayed
        c = np.array(counts_for(ctx.system)[::2] + [16, 24, 48], dtype=np.int64)
        for name in ("data", "spatial", "data+filter", "data+spatial"):
            assert kinds.covers(ctx, name)
            cols = kinds.evaluate_many(ctx, name, *_sample(run.config_arrays(name, c, 32.0 * c, None), 60))
            assert cols.phases["gradient_exchange_s"].any() or name == "spatial"
            assert not mismatches(ctx, cols), (model_name, delayed, extra, name)


@pytest.mark.parametrize("model_name", ["resnet50", "vgg16", "unet3d", "inception_v3"])
def test_pipeline_activation_checkpointing_in_arrays(model_name):
    """GPipe's checkpointing in arrays (vector/pipeline.py): each stage's backward
    recomputes its forward, a stage holds its input for all B samples and one
    micro-batch's activations; both memory models, default and fixed segments, strong
    and weak scaling, over every shipped system (half the counts by turns)."""
    m = load_model(model_name)
    changed = 0
    for k, system_name in enumerate(SYSTEMS):
        for extra in ({}, {"memory_model": "paradl", "segments": 8, "mixed_precision": True}):
            ctx = Context(m, load_system(system_name), times_for(m, k), Options(checkpointing=True, **extra))
            plain = Context(m, ctx.system, ctx.times, Options(**extra))
            assert kinds.covers(ctx, "pipeline")
            c = np.array(counts_for(ctx.system)[k % 2 :: 2], dtype=np.int64)
            for B in (np.full(c.size, 256.0), 32.0 * c):
                arrays = run.config_arrays("pipeline", c, B, None)
                cols = kinds.evaluate_many(ctx, "pipeline", *arrays)
                assert not mismatches(ctx, cols), (system_name, extra)
                before = kinds.evaluate_many(plain, "pipeline", *arrays)
                ok = c <= ctx.G
                changed += int((cols.memory[ok] != before.memory[ok]).all())
                changed += int((cols.phases["forward_backward_s"][ok] > before.phases["forward_backward_s"][ok]).all())
    assert changed == 2 * 2 * 2 * len(SYSTEMS)  # checkpointing moves every computable count's memory and compute


def test_the_options_the_arrays_once_left_point_by_point_are_covered(tmp_path):
    """The DGX defaults, --collective auto, --replicated-gradients, measured collective
    tables and ParaDL's tool, the paradl stack (tests/test_vector_replicated.py,
    test_vector_tables.py, test_vector_paradl.py), are covered."""
    ctx = default_context(tmp_path, "resnet152", "dgx-h100-superpod", batch=64)
    assert ctx.options.overlap == "buckets" and ctx.algorithm == "nccl" and ctx.options.stack is not None
    assert all(kinds.covers(ctx, n) for n in names())
    ctx = default_context(tmp_path, "resnet50", "dgx1-v100", batch=64, collective="auto")
    assert all(kinds.covers(ctx, n) for n in names())
    ctx = default_context(tmp_path, "resnet50", "dgx1-v100", batch=64, replicated_gradients="fc")
    assert all(kinds.covers(ctx, n) for n in names())
    m = load_model("resnet50")
    ctx = Context(m, measured(load_system("dgx1-v100")), times_for(m), Options())
    assert all(kinds.covers(ctx, n) for n in names())
    ctx = default_context(tmp_path, "resnet50", "abci", batch=64, stack="paradl")
    assert all(kinds.covers(ctx, n) for n in names())


def measured(system):
    """The system with a measured all-reduce table (8 GPUs in one node; network.link)."""
    from dataclasses import replace

    from oracle.model import CollectiveTable

    return replace(system, collective_tables=(CollectiveTable("allreduce", 8, 8, (1e3, 1e6, 1e7), (1e-5, 1e-4, 9e-4)),))


@pytest.mark.parametrize("system_name", ["abci", "lassen", "dgx1-v100"])
@pytest.mark.parametrize("top", [1, 3])
def test_top_builds_the_points_full_materialization_ranks_first(system_name, top):
    from oracle.render.predict import select_top

    m = load_model("resnet50")
    args = (m, load_system(system_name), times_for(m, 3), list(range(1, 130)) + [4095, 4096, 5000])
    full = sweep(*args, "all", batch_per_gpu=32.0)
    shown = sweep(*args, "all", batch_per_gpu=32.0, top=top)
    assert shown == select_top(full, top)
    assert [pt.rank for pt in shown] == [pt.rank for pt in select_top(full, top)]


def test_the_memory_guard_counts_the_points_built():
    counts = range(1, 10001)
    check_memory(counts, names(), False, None, top=1)  # 10,000 points built, the rest in arrays
    with pytest.raises(OracleError, match=r"points, which need about [\d.]+ GB") as err:
        check_memory(counts, names(), False, None)  # every point built
    assert "--top N" in err.value.hint
    with pytest.raises(OracleError, match="points") as err:  # too many even in arrays
        check_memory(range(1, 200_001), names(), False, None, top=1)
    assert "--top N" not in err.value.hint  # given already


def test_top_where_the_arrays_do_not_reach_keeps_only_numbers(tmp_path):
    """The hybrids at the counts --p2 does not divide (run.columns): point by point,
    CHUNK at a time, only their numbers and feasibility kept (the output's points are
    built again, and test_top_builds_the_points_full_materialization_ranks_first
    compares them)."""
    ctx = default_context(tmp_path, "resnet50", "abci", batch_per_gpu=32.0)
    hybrids = ["data+filter", "data+spatial"]
    kept = [c for c in run.columns(ctx, list(range(1, 41)), hybrids, False, None, 32.0, 3) if c.points]
    cols = [c for c in run.columns(ctx, list(range(1, 41)), hybrids, False, None, 32.0, 3, keep=False)
            if c.unfit is not None]  # fmt: skip
    assert len(cols) == len(kept) == 2 and all(not c.points and c.unfit.any() for c in cols)
    for a, b in zip(kept, cols):
        assert (a.feasible() == b.feasible()).all() and np.array_equal(a.total(), b.total(), equal_nan=True)


def test_predict_top_answers_what_every_point_cannot(tmp_path):
    prof = tmp_path / "p.yaml"
    prof.write_text(PROFILE)
    args = ("predict", "-m", "resnet152", "-s", "abci", "-p", prof, "--strategy", "data+filter",
            "--gpus", "1..10000", "-b", "32")  # fmt: skip
    one_error(run_cli(*args), "--gpus", "points", "GB of memory")  # the table holds every point (CSV is streamed)
    r = run_cli(*args, "--top", "1", "--format", "csv")
    assert r.code == 0, r.err
    lines = r.out.strip().splitlines()
    assert len(lines) == 1 + 10000  # the header, one row a count: a prime's says it has no p1·p2 with both >= 2
    assert sum("has no factorization" in ln for ln in lines) == int((factorizations(np.arange(1, 10001)) == 0).sum())


def test_a_named_hybrid_at_counts_without_a_factorization_is_one_infeasible_point():
    """A hybrid named (--strategy data+filter) at a count with no p = p1·p2, p1, p2 >= 2 (1, 2,
    a prime) is one infeasible point saying so, on both engines (never a count that vanishes);
    under 'all' the other strategies hold the count and the hybrid lists nothing there."""
    m = load_model("resnet50")
    args = (m, load_system("abci"), times_for(m))
    assert [pt.strategy for pt in sweep(*args, [1], "all", batch=8.0)] == ["serial"]  # 'all' at 1 GPU: serial only
    assert "data+filter" not in {pt.strategy for pt in sweep(*args, [7], "all", batch=8.0)}
    for top in (None, 1):  # the points, and the arrays (compute/vector/run.unfactored)
        got = sweep(*args, [1, 2, 3, 5, 6], "data+filter", batch=8.0, top=top)
        bare = [pt for pt in got if pt.gpus != 6]
        assert [(pt.gpus, pt.p1, pt.p2, pt.feasible, pt.rank) for pt in bare] == [(p, 0, 0, False, None) for p in (1, 2, 3, 5)]
        assert all([lim.code for lim in pt.limits] == ["no_factorization"] for pt in bare)
        assert "p=5 has no factorization p1·p2 with p1, p2 >= 2: take another GPU count" in bare[-1].limits[0].reason
        assert len([pt for pt in got if pt.gpus == 6]) == (2 if top is None else 1)  # 3x2, 2x3
    from oracle.compute.engine import chunks, count_points

    assert count_points([1, 2, 3, 5, 6], ["data+filter"]) == (6, True)  # the memory guard counts them
    assert count_points([1, 2, 3, 5, 6], ["data+filter"], explicit=False) == (2, True)
    assert chunks([1, 2, 3, 5, 6], ["data+filter"]) == [[1, 2, 3, 5, 6]]


def test_gpu_overhead_per_layer_of_an_estimated_profile_on_both_paths():
    """The pytorch stack adds its GPU overhead per layer (iteration.gpu_overhead_s_per_layer)
    to an ESTIMATED profile's forward and backward, once per iteration and GPU: the arrays
    give the per-point numbers with it, and a point's forward and backward grows by exactly
    iterations x layers x the overhead against the same stack without it."""
    from dataclasses import replace

    from oracle.api import model_system, request
    from oracle.compute.conversion import prepare
    from oracle.compute.strategies import REGISTRY
    from oracle.load import load_stack

    def context(overhead):
        req = request("resnet50", "dgx-a100-80gb", "resnet50_a100_fp16_estimated", "1..4", stack="pytorch",
                      precision="fp16", mixed_precision=True, batch_per_gpu=64.0)  # fmt: skip
        o = req.run.options
        o = replace(o, stack=replace(o.stack, gpu_overhead_s_per_layer=overhead))
        system = model_system(req.system, req.model.name, o.stack)
        times, conversion = prepare(req.model, system, req.profile, o)
        return Context(req.model, system, times, o, req.profile.kind, conversion=conversion)

    ctx = context(load_stack("pytorch").gpu_overhead_s_per_layer)
    assert ctx.profile_kind == "estimated" and ctx.options.stack.gpu_overhead_s() == 7e-6
    c = np.array(counts_for(ctx.system)[::3], dtype=np.int64)
    for name in names():
        if kinds.covers(ctx, name):
            cols = kinds.evaluate_many(ctx, name, *_sample(run.config_arrays(name, c, 64.0 * c, None)))
            assert not mismatches(ctx, cols), name
    plain = context(None)
    for gpus in (1, 8):
        with_, without = (REGISTRY["data"].evaluate(x, Config("data", gpus, gpus, 1, 64.0 * gpus)) for x in (ctx, plain))
        extra = with_.iterations_per_epoch * 175 * 7e-6
        assert with_.breakdown.forward_backward_s == pytest.approx(without.breakdown.forward_backward_s + extra, rel=1e-12)


@pytest.mark.parametrize("per_gpu", [0.5, 1.5, 1e-6])
def test_a_batch_of_no_whole_sample_is_a_limit_of_every_strategy_on_both_paths(per_gpu):
    """Weak scaling's B = b·p below one sample (0.5 per GPU on 1 GPU: serial and filter were
    feasible at 2.56M iterations per epoch) or between whole samples (1.5 on 3 GPUs) is a
    limit of every strategy (base.sample_limit), on the arrays as on the per-point path."""
    m = load_model("alexnet")
    ctx = Context(m, load_system("abci"), times_for(m), Options())
    c = np.array([1, 2, 3, 4, 5, 8], dtype=np.int64)
    seen = 0
    for name in names():
        if not kinds.covers(ctx, name):
            continue
        cols = kinds.evaluate_many(ctx, name, *run.config_arrays(name, c, per_gpu * c, None))
        assert not mismatches(ctx, cols), name
        feasible = cols.feasible()
        for i in range(cols.size):
            B = float(cols.batch[i])
            if B < 1 or abs(B - round(B)) > 1e-9 * B:
                seen += 1
                assert not feasible[i] and "batch" in cols.limit_codes(i), (name, B)
    assert seen >= len(names())
