"""Per-layer distributions (oracle/compute/layerwise/layerwise.py) and layer-wise configuration
files (oracle/load/layerwise.py), issue 8.

* uniform assignments reproduce the strategies of the sweep (same totals, phases,
  memory and feasibility): all data = data, all spatial = spatial / data+spatial,
  all filter = filter / data+filter, all channel = channel;
* redistribution between layouts is the all-gather / all-to-all of Dryden et al.
  §III-C with the α-β costs of SPEC §4.1;
* the additive decomposition the search uses (per layer + per edge + one latency per
  gradient group) equals the evaluated total;
* the YAML format: loading, validation with file/line/key, did-you-mean, round trip.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from oracle.compute.context import Context
from oracle.compute.context import Options as _Options


def Options(**kw):  # noqa: N802 - these tests pin ParaDL's Table 3 memory (SPEC §4.6 ParaDL mode)
    kw.setdefault("memory_model", "paradl")
    return _Options(**kw)
from oracle.compute.binding import bind_profile
from oracle.compute.layerwise.layerwise import Costs, Dist, distributions, evaluate, factorizations
from oracle.compute.sweep import sweep
from oracle.errors import OracleError
from oracle.load import load_model, load_profile, load_system
from oracle.load.layerwise import bind_layerwise, dump_layerwise, load_layerwise, parse_layerwise

KIND_OF = {
    "data": "data",
    "spatial": "spatial",
    "filter": "filter",
    "channel": "channel",
    "data+filter": "filter",
    "data+spatial": "spatial",
}


def context(model, system, profile, **options) -> Context:
    m, s, pr = load_model(model), load_system(system), load_profile(profile)
    return Context(m, s, bind_profile(m, pr), Options(**options), pr.kind)


def rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(b), 1e-300)


# --------------------------------------------------------------------------------------
# uniform assignments = the strategies
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "model,profile,system",
    [
        ("resnet50", "resnet50_v100", "abci"),
        ("vgg16", "vgg16_v100", "abci-nominal"),
        ("alexnet", "alexnet_v100", "abci-2020"),  # leader all-reduce of data+spatial
        ("cosmoflow256", "cosmoflow256_v100", "abci"),  # 3-D halos
    ],
)
@pytest.mark.parametrize("p,b", [(4, 8), (16, 16), (64, 4)])
def test_uniform_assignment_reproduces_strategies(model, profile, system, p, b):
    ctx = context(model, system, profile)
    B = b * p
    points = sweep(ctx.model, ctx.system, tuple(_times(ctx)), [p], "all", batch=B, options=ctx.options)
    checked = set()
    for pt in points:
        kind = KIND_OF.get(pt.strategy)
        if kind is None:
            continue
        d = Dist.data(p) if kind == "data" else Dist(kind, pt.p1, pt.p2)
        got = evaluate(ctx, p, B, [d] * ctx.G).point
        assert rel(got.total_s, pt.total_s) < 1e-9, (pt.strategy, pt.p1, pt.p2)
        assert rel(got.memory_bytes, pt.memory_bytes) < 1e-9, (pt.strategy, pt.p1, pt.p2)
        a, e = got.breakdown, pt.breakdown
        for phase in ("forward_backward_s", "weight_update_s", "gradient_exchange_s", "halo_s"):
            assert getattr(a, phase) == pytest.approx(getattr(e, phase), rel=1e-9, abs=1e-12), (
                pt.strategy,
                phase,
            )
        # the spatial strategies' gather before the replicated head is a redistribution
        assert a.layer_collectives_s == pytest.approx(e.layer_collectives_s, rel=1e-9, abs=1e-12)
        assert got.feasible == pt.feasible, (pt.strategy, pt.p1, pt.p2, pt.limits, got.limits)
        checked.add(pt.strategy)
    assert {"data", "spatial", "filter", "channel"} <= checked


def _times(ctx):
    from oracle.model import LayerTimes

    return [LayerTimes(float(f), float(b), float(u)) for f, b, u in zip(ctx.fw, ctx.bw, ctx.wu)]


def test_all_data_equals_data_strategy_exactly():
    ctx = context("resnet50", "abci", "resnet50_v100")
    for p in (2, 8, 256, 1024):
        B = 32.0 * p
        (pt,) = sweep(ctx.model, ctx.system, tuple(_times(ctx)), [p], "data", batch=B, options=ctx.options)
        got = evaluate(ctx, p, B, [Dist.data(p)] * ctx.G).point
        assert got.total_s == pytest.approx(pt.total_s, rel=1e-12)
        assert got.compute_s == pytest.approx(pt.compute_s, rel=1e-12)
        assert got.communication_s == pytest.approx(pt.communication_s, rel=1e-12)
        assert got.memory_bytes == pytest.approx(pt.memory_bytes, rel=1e-12)
        assert [lim.code for lim in got.limits] == [lim.code for lim in pt.limits]


def test_uniform_with_collective_algorithm_options():
    """The equality holds whatever all-reduce algorithm the context uses (the fused
    all-reduce is evaluated with the same network functions as the strategies)."""
    from oracle.compute import network

    algos = [a for a in getattr(network, "ALGORITHMS", ("ring",)) if a != "auto"]
    for algo in algos:
        try:
            ctx = context("resnet50", "abci", "resnet50_v100", collective=algo)
        except TypeError:  # Options without a collective override
            pytest.skip("Options has no collective override")
        p, B = 32, 32 * 16.0
        pts = sweep(
            ctx.model,
            ctx.system,
            tuple(_times(ctx)),
            [p],
            "data,data+filter",
            batch=B,
            options=ctx.options,
        )
        for pt in pts:
            kind = KIND_OF[pt.strategy]
            d = Dist.data(p) if kind == "data" else Dist(kind, pt.p1, pt.p2)
            assert evaluate(ctx, p, B, [d] * ctx.G).point.total_s == pytest.approx(
                pt.total_s, rel=1e-9
            ), (algo, pt.strategy)


# --------------------------------------------------------------------------------------
# distributions and redistribution
# --------------------------------------------------------------------------------------


def test_distributions_cover_every_grid():
    assert factorizations(8) == [(4, 2), (2, 4), (1, 8)]
    ds = distributions(8)
    assert ds[0] == Dist.data(8)
    assert len(ds) == 1 + 3 * 3
    assert all(d.gpus == 8 for d in ds)
    assert distributions(8, ["data", "spatial"]) == [
        Dist.data(8),
        Dist("spatial", 4, 2),
        Dist("spatial", 2, 4),
        Dist("spatial", 1, 8),
    ]
    assert distributions(1) == [Dist.data(1)]
    assert Dist("filter", 4, 16).label == "filter 4×16" and Dist.data(8).label == "data"


def _tiny_ctx(tiny) -> Context:
    m, s, pr = (
        load_model(str(tiny.model)),
        load_system(str(tiny.system)),
        load_profile(str(tiny.profile)),
    )
    return Context(m, s, bind_profile(m, pr), Options(), pr.kind)


def test_shuffle_costs_follow_the_layouts(tiny):
    """data -> group-replicated is a ring all-gather; replicated -> split is free;
    data -> spatial and back is an all-to-all of (1 - 1/p2) of a GPU's B/p samples."""
    ctx = _tiny_ctx(tiny)
    p, B = 8, 64.0
    dists = [Dist.data(p), Dist("filter", 2, 4), Dist("spatial", 2, 4), Dist("spatial", 4, 2)]
    c = Costs(ctx, p, B, dists)
    conv1 = ctx.model.index["conv1"]
    L = {d: int(c.layout[conv1, c.index[d]]) for d in dists}
    y = 1000.0
    delta = ctx.delta
    nv = ctx.system.network[0]  # groups of <= 4 GPUs sit inside one node
    # data -> filter 2x4 (replicated in groups of 4): AG(4, δ·(B/p)·y)
    t = float(c.shuffle_time(L[Dist.data(p)], L[Dist("filter", 2, 4)], y))
    assert t == pytest.approx(3 * (nv.alpha_s + delta * B / p * y * nv.beta_s_per_byte))
    # replicated -> anything inside the group: nothing to receive
    assert float(c.shuffle_time(L[Dist("filter", 2, 4)], L[Dist.data(p)], y)) == 0.0
    assert float(c.shuffle_time(L[Dist("filter", 2, 4)], L[Dist("spatial", 2, 4)], y)) == 0.0
    # data -> spatial 2x4: each GPU needs its group's samples on its tile
    t = float(c.shuffle_time(L[Dist.data(p)], L[Dist("spatial", 2, 4)], y))
    recv = B / p * (1 - 1 / 4) * y * delta
    assert t == pytest.approx(3 * nv.alpha_s + recv * nv.beta_s_per_byte)
    back = float(c.shuffle_time(L[Dist("spatial", 2, 4)], L[Dist.data(p)], y))
    assert back == pytest.approx(t)
    # spatial 2x4 -> spatial 4x2: the exchange spans 4 GPUs and moves a share of the data
    t = float(c.shuffle_time(L[Dist("spatial", 2, 4)], L[Dist("spatial", 4, 2)], y))
    assert 0 < t < float(c.shuffle_time(L[Dist.data(p)], L[Dist("filter", 2, 4)], y)) * 4
    # same layout: free
    assert float(c.shuffle_time(L[Dist.data(p)], L[Dist.data(p)], y)) == 0.0


def test_edges_charge_forward_and_backward(tiny):
    ctx = _tiny_ctx(tiny)
    p, B = 4, 32.0
    data, sp = Dist.data(p), Dist("spatial", 1, 4)
    mixed = [data, data, sp, sp, sp, sp]  # conv1, relu1 | conv2, pool1, flat, fc
    a = evaluate(ctx, p, B, mixed)
    conv2 = ctx.model.index["conv2"]
    c = Costs(ctx, p, B, [data, sp])
    la, lb = c.layout[conv2 - 1, 0], c.layout[conv2, 1]
    y = ctx.y[conv2 - 1]
    expected = ctx.D / B * float(c.shuffle_time(la, lb, y) + c.shuffle_time(lb, la, y))
    assert a.redistribution_s[conv2] == pytest.approx(expected)
    assert a.redistribution_s[conv2] > 0
    assert a.redistribution_s.sum() > a.redistribution_s[conv2]  # and the gather before flat
    assert a.point.breakdown.layer_collectives_s >= a.redistribution_s.sum()


def test_search_objective_equals_evaluated_total(tiny):
    """Per layer + per edge + one latency per gradient group in use = the total of the
    evaluation with fused all-reduces (ring collectives are affine in the bytes)."""
    ctx = _tiny_ctx(tiny)
    p, B = 8, 64.0
    c = Costs(ctx, p, B, distributions(p))
    mats = c.edge_matrices()
    rng = np.random.default_rng(7)
    rows = np.arange(ctx.G)
    for _ in range(40):
        choice = rng.integers(0, c.nd, ctx.G)
        additive = c.node_time[rows, choice].sum() + sum(
            mats[e][choice[i], choice[j]] for e, (i, j) in enumerate(c.edges)
        )
        used = {
            int(g)
            for g, b in zip(c.grad_class[rows, choice], c.grad_bytes[rows, choice])
            if g >= 0 and b > 0
        }
        objective = additive + sum(c.group_latency[g] for g in used)
        total = c.assess(choice).point.total_s
        assert objective == pytest.approx(total, rel=1e-9)


def test_limits_of_layers(tiny):
    ctx = _tiny_ctx(tiny)
    # conv1 has 4 filters: filter 1x8 does not fit it
    a = evaluate(ctx, 8, 64.0, [Dist("filter", 1, 8)] * ctx.G)
    assert not a.point.feasible
    assert any("conv1" in lim.reason and "4 filters" in lim.reason for lim in a.point.limits)
    assert any(ctx.names[l] == "conv1" for l, _ in a.layer_limits)
    # fewer samples than data-parallel groups
    a = evaluate(ctx, 8, 4.0, [Dist.data(8)] * ctx.G)
    assert any("fewer than one sample" in lim.reason for lim in a.point.limits)


# --------------------------------------------------------------------------------------
# layer-wise configuration files
# --------------------------------------------------------------------------------------

GOOD = """\
# ResNet-50 on 64 GPUs: spatial for the first stages, data for the rest
model: ResNet-50
gpus: 64
batch: 2048
layers:
  - {from: conv1, to: res3d_relu, distribution: spatial, p2: 4}
  - {from: res4a_branch2a, to: pool5, distribution: data}
  - {from: flatten, to: fc1000, distribution: filter, p1: 8, p2: 8}
"""


def write(tmp_path, text, name="lw.yaml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_load_good_file(tmp_path):
    cfg = load_layerwise(write(tmp_path, GOOD))
    assert cfg.model == "ResNet-50" and cfg.gpus == 64 and cfg.global_batch() == 2048
    m = load_model("resnet50")
    a = bind_layerwise(cfg, m)
    assert len(a) == len(m.layers)
    assert a[0] == Dist("spatial", 16, 4)
    assert a[m.index["res3d_relu"]] == Dist("spatial", 16, 4)
    assert a[m.index["res4a_branch2a"]] == Dist.data(64)
    assert a[-1] == Dist("filter", 8, 8)


def test_dump_round_trip(tmp_path):
    m = load_model("resnet50")
    a = bind_layerwise(load_layerwise(write(tmp_path, GOOD)), m)
    text = dump_layerwise(m, 64, a, batch=2048.0, comments=["a comment"])
    assert text.startswith("# a comment\n")
    again = load_layerwise(write(tmp_path, text, "again.yaml"))
    assert bind_layerwise(again, m) == a
    assert again.batch == 2048
    assert "{layer: fc1000," not in text  # flatten..fc1000 is a range
    one = dump_layerwise(m, 64, a[:-1] + [Dist("channel", 4, 16)])
    assert "{layer: fc1000, distribution: channel, p1: 4, p2: 16}" in one
    assert bind_layerwise(load_layerwise(write(tmp_path, one, "one.yaml")), m)[-1] == Dist(
        "channel", 4, 16
    )


def test_batch_per_gpu_and_single_layer(tmp_path):
    text = GOOD.replace("batch: 2048", "batch_per_gpu: 16").replace(
        "  - {from: flatten, to: fc1000, distribution: filter, p1: 8, p2: 8}\n",
        "  - {layer: flatten, distribution: data}\n  - {layer: fc1000, distribution: channel}\n",
    )
    cfg = load_layerwise(write(tmp_path, text))
    assert cfg.global_batch() == 16 * 64
    a = bind_layerwise(cfg, load_model("resnet50"))
    assert a[-1] == Dist("channel", 1, 64)  # neither p1 nor p2: p2 = gpus


@pytest.mark.parametrize(
    "change,message,where",
    [
        (("to: res3d_relu", "to: res3d_rleu"), "no layer 'res3d_rleu'", "layers[0].to"),
        (("from: res4a_branch2a", "from: res4a_branch2b"), "not covered", "layers[1].from"),
        (("from: res4a_branch2a", "from: res3d_relu"), "already covered", "layers[1].from"),
        (("to: fc1000", "to: flatten"), "'fc1000' is not covered", "layers"),
        (
            ("from: conv1, to: res3d_relu", "from: res3d_relu, to: conv1"),
            "runs backwards",
            "layers[0]",
        ),
        (
            ("distribution: spatial", "distribution: spacial"),
            "did you mean 'spatial'",
            "layers[0].distribution",
        ),
        (("p2: 4}", "p2: 5}"), "p2=5 does not divide gpus=64", "layers[0].p2"),
        (("p1: 8, p2: 8", "p1: 4, p2: 8"), "4 x 8 = 32, not gpus=64", "layers[2].p2"),
        (
            ("distribution: data}", "distribution: data, p2: 2}"),
            "data uses all 64 GPUs",
            "layers[1].p2",
        ),
        (
            ("distribution: spatial, p2: 4", "distribution: spatial, p2: 1"),
            "p2 = 1 is data",
            "layers[0].p2",
        ),
        (("{from: conv1,", "{form: conv1,"), "unknown key 'form'", "layers[0]"),
        (("gpus: 64", "gpus: 0"), "expected a GPU count >= 1", "gpus"),
        (("batch: 2048", "batch: 2048\nbatch_per_gpu: 32"), "not both", "batch_per_gpu"),
        (("layers:\n", "layer:\n"), "did you mean 'layers'", ""),
    ],
)
def test_bad_files_name_file_line_and_key(tmp_path, change, message, where):
    text = GOOD.replace(*change)
    assert text != GOOD
    path = write(tmp_path, text)
    with pytest.raises(OracleError) as info:
        bind_layerwise(load_layerwise(path), load_model("resnet50"))
    err = info.value
    text_err = str(err)
    assert message in text_err, text_err
    assert str(path) in text_err
    if where:
        assert where in text_err  # the key path is part of the one-line message
        assert err.path in (where, None), text_err
    if err.path and err.path.startswith("layers["):
        assert err.line is not None


def test_unknown_layer_suggests_the_closest(tmp_path):
    path = write(tmp_path, GOOD.replace("to: fc1000", "to: fc100"))
    with pytest.raises(OracleError) as info:
        bind_layerwise(load_layerwise(path), load_model("resnet50"))
    assert "did you mean 'fc1000'" in str(info.value)
    assert info.value.line == 8


def test_wrong_model(tmp_path):
    with pytest.raises(OracleError) as info:
        bind_layerwise(load_layerwise(write(tmp_path, GOOD)), load_model("resnet152"))
    assert "is for model 'ResNet-50', not 'ResNet-152'" in str(info.value)
    assert info.value.line == 2


def test_missing_and_empty(tmp_path):
    with pytest.raises(OracleError, match="does not exist"):
        load_layerwise(tmp_path / "nope.yaml")
    with pytest.raises(OracleError, match="missing required key 'layers'"):
        parse_layerwise({"model": "ResNet-50", "gpus": 4}, "x.yaml")
    with pytest.raises(OracleError, match="is empty"):
        parse_layerwise({"model": "ResNet-50", "gpus": 4, "layers": []}, "x.yaml")
    with pytest.raises(OracleError, match="missing required key 'to'"):
        parse_layerwise(
            {"model": "M", "gpus": 4, "layers": [{"from": "a", "distribution": "data"}]}, "x.yaml"
        )


def test_evaluate_rejects_a_wrong_length():
    ctx = context("resnet50", "abci", "resnet50_v100")
    with pytest.raises(ValueError):
        evaluate(ctx, 4, 64.0, [Dist.data(4)] * 3)
    assert math.isfinite(evaluate(ctx, 4, 64.0, [Dist.data(4)] * ctx.G).point.total_s)
