"""Property tests of the cost model (SPEC §4-5) on random small models and systems.

Models are random chains of conv / activation / pooling / batchnorm / flatten / fc
layers on 1-, 2- or 3-D inputs whose shapes always work out; systems have 1-3 network
levels with random α, β, contention and per-operation scale factors; profiles give
random per-layer times (zeros included).  Everything is built as YAML-like dicts and
parsed by the real loaders (oracle.load.*.parse_*), then swept with
oracle.compute.sweep.sweep.
"""

from __future__ import annotations

import itertools
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oracle.compute.context import Context
from oracle.compute.context import Options as _Options


def Options(**kw):  # noqa: N802 - these tests pin ParaDL's Table 3 memory (SPEC §4.6 ParaDL mode)
    kw.setdefault("memory_model", "paradl")
    return _Options(**kw)
from oracle.compute.binding import bind_profile
from oracle.compute.cost import phase_names
from oracle.compute.sweep import sweep
from oracle.load.model import parse_model
from oracle.load.profile import parse_profile
from oracle.load.system import parse_system
from oracle.model import LayerTimes
from oracle.render.records import point_to_dict

FAST = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

REL = 1e-9  # floating-point slack for "exact" relations

# --------------------------------------------------------------------------------------
# generators
# --------------------------------------------------------------------------------------

MAX_EXTENT = {1: 48, 2: 20, 3: 9}


@st.composite
def model_docs(draw, min_layers: int = 1, max_layers: int = 8, exact: int | None = None) -> dict:
    """A model document whose layer shapes are valid by construction."""
    dims = draw(st.integers(1, 3))
    channels = draw(st.integers(1, 6))
    spatial = [draw(st.integers(2, MAX_EXTENT[dims])) for _ in range(dims)]
    shape = [channels, *spatial]
    n = exact if exact is not None else draw(st.integers(min_layers, max_layers))
    layers = []
    for i in range(n):
        flat = len(shape) == 1
        if flat:
            kinds = ["fc", "fc", "relu", "dropout"]
        else:
            kinds = ["conv", "conv", "conv", "relu", "maxpool", "avgpool", "batchnorm",
                     "flatten", "fc", "globalavgpool"]  # fmt: skip
        kind = draw(st.sampled_from(kinds))
        name = f"l{i}_{kind}"
        layer: dict = {"name": name, "type": kind}
        if kind == "conv":
            minext = min(shape[1:])
            k = draw(st.integers(1, min(5, minext + 2)))
            lo_pad = max(0, -(-(k - minext) // 2))  # padding so that k <= extent + 2·pad
            pad = draw(st.integers(lo_pad, max(lo_pad, k // 2)))
            stride = draw(st.integers(1, 2))
            filters = draw(st.integers(1, 16))
            layer.update(filters=filters, kernel=k, stride=stride, padding=pad,
                         bias=draw(st.booleans()))  # fmt: skip
            shape = [filters] + [(x + 2 * pad - k) // stride + 1 for x in shape[1:]]
        elif kind in ("maxpool", "avgpool"):
            minext = min(shape[1:])
            k = draw(st.integers(1, min(3, minext)))
            layer.update(kernel=k)
            shape = [shape[0]] + [(x - k) // k + 1 for x in shape[1:]]
        elif kind == "globalavgpool":
            shape = [shape[0]] + [1] * (len(shape) - 1)
        elif kind == "flatten":
            shape = [math.prod(shape)]
        elif kind == "fc":
            outputs = draw(st.integers(1, 32))
            layer.update(outputs=outputs)
            shape = [outputs]
        layers.append(layer)
    return {
        "name": "Rand",
        "input": [channels, *spatial],
        "dataset": {"name": "rand", "samples": draw(st.integers(1, 2_000_000))},
        "layers": layers,
    }


times_st = st.one_of(st.just(0.0), st.floats(1e-7, 1e-3, allow_nan=False))


@st.composite
def profile_docs(draw, model_doc: dict) -> dict:
    layers = {}
    for i, layer in enumerate(model_doc["layers"]):
        fw = draw(times_st)
        if i == 0:
            fw = max(fw, 1e-6)  # a profile with all-zero times is rejected at load time
        layers[layer["name"]] = {"fw_s": fw, "bw_s": draw(times_st), "wu_s": draw(times_st) / 10}
    return {"model": model_doc["name"], "device": "gpu", "layers": layers}


@st.composite
def system_docs(draw) -> dict:
    gpn = draw(st.sampled_from([1, 2, 4, 8]))
    nodes = draw(st.integers(1, 64))
    n_levels = draw(st.integers(1, 3))
    sizes = st.lists(st.integers(1, 1024), min_size=n_levels, max_size=n_levels, unique=True)
    max_gpus = sorted(draw(sizes))
    network = [
        {
            "name": f"level{i}",
            "max_gpus": m,
            "alpha_s": draw(st.floats(1e-7, 1e-4)),
            "beta_s_per_byte": draw(st.floats(1e-12, 1e-9)),
        }
        for i, m in enumerate(max_gpus)
    ]
    doc: dict = {
        "name": "RandCluster",
        "gpu": {"model": "G", "memory_GB": draw(st.floats(0.001, 80))},
        "gpus_per_node": gpn,
        "nodes": nodes,
        "network": network,
    }
    if draw(st.booleans()):
        doc["contention_factor"] = draw(st.floats(1, 4))
    if draw(st.booleans()):
        doc["links_per_node"] = draw(st.integers(1, 4))
    if draw(st.booleans()):  # per-operation scale factors (relative to the level's α, β)
        op = draw(st.sampled_from(["allreduce", "allgather", "halo", "p2p"]))
        scales = {"alpha_scale": draw(st.floats(0.5, 3)), "beta_scale": draw(st.floats(0.5, 3))}
        doc["operations"] = {op: scales}
    return doc


@st.composite
def scenarios(draw, strong: bool | None = None) -> dict:
    """A model, profile and system document, GPU counts and a batch setting."""
    mdoc = draw(model_docs())
    pdoc = draw(profile_docs(mdoc))
    sdoc = draw(system_docs())
    counts = st.sampled_from([1, 2, 3, 4, 6, 8, 16, 32, 64])
    gpus = sorted(set(draw(st.lists(counts, min_size=1, max_size=5))))
    if strong is None:
        strong = draw(st.booleans())
    if strong:
        batch = {"batch": float(draw(st.integers(1, 512)))}
    else:
        batch = {"batch_per_gpu": float(draw(st.integers(1, 64)))}
    return {"model": mdoc, "profile": pdoc, "system": sdoc, "gpus": gpus, **batch}


def build(sc: dict, system_doc: dict | None = None):
    m = parse_model(sc["model"], "rand_model.yaml")
    s = parse_system(system_doc or sc["system"], "rand_system.yaml")
    pr = parse_profile(sc["profile"], "rand_profile.yaml")
    return m, s, bind_profile(m, pr)


def run_sweep(
    sc: dict, system_doc: dict | None = None, strategies="all", options: Options | None = None, **kw
):
    m, s, times = build(sc, system_doc)
    batch = {k: sc[k] for k in ("batch", "batch_per_gpu") if k in sc}
    batch.update(kw.pop("batch_override", {}))
    gpus = kw.pop("gpus", sc["gpus"])
    return sweep(m, s, times, gpus, strategies, options=options or Options(), **batch, **kw)


def key(pt) -> tuple:
    return (pt.strategy, pt.gpus, pt.p1, pt.p2)


def by_key(points) -> dict:
    out = {}
    for pt in points:
        assert key(pt) not in out, f"duplicate point {key(pt)}"
        out[key(pt)] = pt
    return out


def scaled_levels(doc: dict, alpha: float = 1.0, beta: float = 1.0) -> dict:
    new = dict(doc)
    new["network"] = [
        {**lv, "alpha_s": lv["alpha_s"] * alpha, "beta_s_per_byte": lv["beta_s_per_byte"] * beta}
        for lv in doc["network"]
    ]
    return new


def le(a: float, b: float) -> bool:
    """a <= b up to floating-point noise."""
    return a <= b * (1 + REL) + 1e-300


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=REL, abs_tol=1e-300)


def finite(pt) -> bool:
    return math.isfinite(pt.total_s)


# --------------------------------------------------------------------------------------
# (a) doubling every level's bandwidth never increases total or communication time
# --------------------------------------------------------------------------------------


@FAST
@given(scenarios())
def test_doubling_bandwidth_never_slows_anything(sc):
    base = by_key(run_sweep(sc))
    fast = by_key(run_sweep(sc, scaled_levels(sc["system"], beta=0.5)))
    assert base.keys() == fast.keys()
    for k, pt in base.items():
        other = fast[k]
        if not finite(pt):
            assert not finite(other)
            continue
        assert le(other.communication_s, pt.communication_s), (k, pt, other)
        assert le(other.total_s, pt.total_s), (k, pt.total_s, other.total_s)
        assert close(other.compute_s, pt.compute_s), k


# --------------------------------------------------------------------------------------
# (f) raising α never decreases communication
# --------------------------------------------------------------------------------------


@FAST
@given(scenarios(), st.floats(1.0, 100.0))
def test_raising_latency_never_speeds_communication(sc, factor):
    base = by_key(run_sweep(sc))
    slow = by_key(run_sweep(sc, scaled_levels(sc["system"], alpha=factor)))
    assert base.keys() == slow.keys()
    for k, pt in base.items():
        if not finite(pt):
            continue
        assert le(pt.communication_s, slow[k].communication_s), (k, pt, slow[k])
        assert close(slow[k].compute_s, pt.compute_s), k


@FAST
@given(scenarios(), st.floats(1.0, 8.0))
def test_contention_never_speeds_communication(sc, phi):
    """A larger φ (--contention) never makes any point's communication cheaper."""
    base = by_key(run_sweep(sc, options=Options(contention=1.0)))
    cont = by_key(run_sweep(sc, options=Options(contention=phi)))
    for k, pt in base.items():
        if finite(pt):
            assert le(pt.communication_s, cont[k].communication_s), k


# --------------------------------------------------------------------------------------
# (b) data parallelism: forward+backward scales exactly as 1/p under strong scaling
# --------------------------------------------------------------------------------------


@FAST
@given(scenarios(strong=True))
def test_data_parallel_forward_backward_scales_as_one_over_p(sc):
    gpus = [1, 2, 4, 8, 16, 32, 3, 6]
    pts = run_sweep(sc, strategies="data", gpus=gpus)
    fb = {pt.gpus: pt.breakdown.forward_backward_s for pt in pts}
    assert sorted(fb) == sorted(gpus)
    for p, v in fb.items():
        assert close(v * p, fb[1]), (p, v, fb[1])
    # and the weight update does not depend on p
    wu = {pt.breakdown.weight_update_s for pt in pts}
    assert max(wu) <= min(wu) * (1 + REL) + 1e-300


# --------------------------------------------------------------------------------------
# (c) filter parallelism: memory never grows with p under strong scaling
# --------------------------------------------------------------------------------------


@FAST
@given(scenarios(strong=True))
def test_filter_memory_never_grows_with_p(sc):
    gpus = [1, 2, 3, 4, 6, 8, 16, 32, 64]
    pts = sorted(run_sweep(sc, strategies="filter", gpus=gpus), key=lambda pt: pt.gpus)
    mem = [pt.memory_bytes for pt in pts]
    assert all(math.isfinite(v) for v in mem)
    for a, b in zip(mem, mem[1:]):
        assert le(b, a), mem


# --------------------------------------------------------------------------------------
# (d) total == compute + communication == sum of the breakdown phases
# (e) feasible points: every number finite and >= 0
# --------------------------------------------------------------------------------------


@FAST
@given(scenarios())
def test_totals_add_up_and_numbers_are_sane(sc):
    pts = run_sweep(sc)
    assert pts
    for pt in pts:
        bd = pt.breakdown.as_dict()
        assert set(bd) == set(phase_names())
        rec = point_to_dict(pt)
        if finite(pt):
            phases = sum(bd.values())
            assert close(pt.total_s, pt.compute_s + pt.communication_s)
            assert close(pt.total_s, phases), (pt.total_s, phases)
            assert close(pt.compute_s, bd["forward_backward_s"] + bd["weight_update_s"])
            # the JSON record says the same
            assert close(rec["total_s"], rec["compute_s"] + rec["communication_s"])
            assert close(rec["total_s"], sum(rec["breakdown"].values()))
            assert close(rec["iteration_s"] * rec["iterations_per_epoch"], rec["total_s"])
        if pt.feasible:
            numbers = [
                pt.compute_s, pt.communication_s, pt.total_s, pt.iteration_s, pt.memory_bytes,
                pt.iterations_per_epoch, pt.global_batch, *bd.values(),
            ]  # fmt: skip
            for v in numbers:
                assert math.isfinite(v) and v >= 0, (pt.strategy, pt.gpus, numbers)
            assert pt.p1 * pt.p2 == pt.gpus
            assert pt.rank is not None and pt.rank >= 1
        else:
            assert pt.limits and pt.rank is None


# --------------------------------------------------------------------------------------
# (g) memory is linear in γ and in δ
# --------------------------------------------------------------------------------------


@FAST
@given(scenarios(), st.floats(0.01, 1.0))
def test_memory_linear_in_gamma_and_delta(sc, gamma):
    base = by_key(run_sweep(sc))
    reuse = by_key(run_sweep(sc, options=Options(memory_reuse=gamma)))
    half = by_key(run_sweep(sc, options=Options(precision="fp16")))
    bf = by_key(run_sweep(sc, options=Options(precision="bf16")))
    assert base.keys() == reuse.keys() == half.keys() == bf.keys()
    for k, pt in base.items():
        if math.isnan(pt.memory_bytes):
            continue
        assert close(reuse[k].memory_bytes, gamma * pt.memory_bytes), k
        assert close(half[k].memory_bytes, pt.memory_bytes / 2), k
        assert close(bf[k].memory_bytes, pt.memory_bytes / 2), k
        # time does not depend on γ
        if finite(pt):
            assert close(reuse[k].total_s, pt.total_s), k


# --------------------------------------------------------------------------------------
# (h) ranks: 1..n over the feasible points of each GPU count, ordered by total_s
# --------------------------------------------------------------------------------------


@FAST
@given(scenarios())
def test_ranks_order_feasible_points_per_gpu_count(sc):
    pts = run_sweep(sc)
    groups: dict[int, list] = {}
    for pt in pts:
        groups.setdefault(pt.gpus, []).append(pt)
    assert sorted(groups) == sorted(set(sc["gpus"]))
    for gpus, group in groups.items():
        feasible = [pt for pt in group if pt.feasible]
        assert all(pt.rank is None for pt in group if not pt.feasible)
        ranks = sorted(pt.rank for pt in feasible)
        assert ranks == list(range(1, len(feasible) + 1)), (gpus, ranks)
        ordered = sorted(feasible, key=lambda pt: pt.rank)
        totals = [pt.total_s for pt in ordered]
        assert all(math.isfinite(t) for t in totals)
        assert all(a <= b for a, b in zip(totals, totals[1:])), (gpus, totals)
        # feasible points come first in the output of a GPU count
        flags = [pt.feasible for pt in group]
        assert flags == sorted(flags, reverse=True)


# --------------------------------------------------------------------------------------
# (i) pipeline partition: the bottleneck equals brute force over contiguous partitions
# --------------------------------------------------------------------------------------

_layer_time = st.one_of(st.just(0.0), st.sampled_from([1e-4, 2e-4, 3e-4]), st.floats(1e-7, 1e-3))


@st.composite
def partition_cases(draw):
    G = draw(st.integers(1, 8))
    mdoc = draw(model_docs(exact=G))
    times = tuple(
        LayerTimes(draw(_layer_time), draw(_layer_time), draw(_layer_time) / 10) for _ in range(G)
    )
    p = draw(st.integers(1, G))
    return mdoc, times, p


def brute_force_bottleneck(fb: list[float], p: int) -> float:
    G = len(fb)
    best = math.inf
    for cuts in itertools.combinations(range(1, G), p - 1):
        bounds = (0, *cuts, G)
        worst = max(sum(fb[a:b]) for a, b in zip(bounds, bounds[1:]))
        best = min(best, worst)
    return best


_SYSTEM_DOC = {
    "name": "S",
    "gpu": {"model": "G", "memory_GB": 16},
    "gpus_per_node": 4,
    "nodes": 4,
    "network": [{"name": "n", "max_gpus": 16, "alpha_s": 1e-6, "beta_s_per_byte": 1e-10}],
}


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(partition_cases())
def test_pipeline_partition_is_optimal(case):
    mdoc, times, p = case
    model = parse_model(mdoc, "rand_model.yaml")
    ctx = Context(model, parse_system(_SYSTEM_DOC, "s.yaml"), times, Options())
    groups = ctx.partition(p)
    G = len(times)
    # p contiguous, non-empty groups covering every layer in order
    assert len(groups) == p
    assert groups[0][0] == 0 and groups[-1][1] == G
    for (a, b), (c, _) in zip(groups, groups[1:]):
        assert b == c
    assert all(b > a for a, b in groups)
    fb = [t.fw_s + t.bw_s for t in times]
    got = max(sum(fb[a:b]) for a, b in groups)
    want = brute_force_bottleneck(fb, p)
    assert math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-15), (fb, p, groups, got, want)


def test_pipeline_partition_small_known_case():
    """A hand-checked case: times 1,2,3,4,5 (x1e-4) in 3 groups -> [1,2,3][4][5] = 6e-4."""
    mdoc = {
        "name": "Chain",
        "input": [1, 16],
        "dataset": {"samples": 10},
        "layers": [{"name": f"r{i}", "type": "relu"} for i in range(5)],
    }
    times = tuple(LayerTimes(k * 1e-4, 0.0, 0.0) for k in (1, 2, 3, 4, 5))
    model = parse_model(mdoc, "c.yaml")
    ctx = Context(model, parse_system(_SYSTEM_DOC, "s.yaml"), times, Options())
    groups = ctx.partition(3)
    assert groups == [(0, 3), (3, 4), (4, 5)]


def test_generators_produce_valid_inputs():
    """The generators above really produce loadable models (guards the test itself)."""

    @settings(max_examples=30, deadline=None)
    @given(scenarios())
    def inner(sc):
        m, s, times = build(sc)
        assert len(times) == len(m.layers) >= 1
        assert s.total_gpus >= 1

    inner()

