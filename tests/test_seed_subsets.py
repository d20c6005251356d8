"""Layers on a subset of the GPUs (Jia et al., ICML 2018 §4 and Table 5; issue 18)."""

from __future__ import annotations

import pytest

from oracle.compute.binding import bind_profile
from oracle.compute.context import Context, Options
from oracle.compute.layerwise.layerwise import Costs, Dist, distributions, evaluate
from oracle.compute.layerwise.search import search_layerwise
from oracle.load import load_model, load_profile, load_system


@pytest.fixture(scope="module")
def ctx():
    m, s, pr = load_model("vgg16"), load_system("abci"), load_profile("vgg16_v100")
    return Context(m, s, bind_profile(m, pr), Options(), pr.kind)


@pytest.mark.parametrize("q", [1, 2, 4, 8])
def test_every_layer_on_the_first_q_gpus_is_data_parallelism_on_q(ctx, q):
    """Uniform 'data on q of 16' costs what data parallelism on q GPUs costs."""
    sub = evaluate(ctx, 16, 256.0, [Dist("data", q, 1, of=16)] * ctx.G).point
    alone = evaluate(ctx, q, 256.0, [Dist.data(q)] * ctx.G).point
    assert sub.compute_s == pytest.approx(alone.compute_s, rel=1e-12)
    assert sub.communication_s == pytest.approx(alone.communication_s, rel=1e-12)
    if q > 1:  # one GPU of 16 keeps no DDP gradient bucket (nothing to all-reduce); a 1-GPU run does
        assert sub.memory_bytes == pytest.approx(alone.memory_bytes, rel=1e-12)
    else:
        assert sub.memory_bytes < alone.memory_bytes


def test_subset_distributions_divide_p():
    ds = distributions(12, ("data", "filter", "subsets"))
    subs = [d for d in ds if d.of]
    assert {d.gpus for d in subs} == {1, 2, 3, 4, 6}
    assert all(12 % d.gpus == 0 and d.of == 12 for d in subs)
    assert Dist("filter", 1, 2, of=4).label == "filter 1×2 on 2"
    with pytest.raises(ValueError):
        Costs(None, 12, 64.0, [Dist("data", 5, 1, of=12)])  # type: ignore[arg-type]


def test_moving_a_tensor_onto_a_subset_costs_something(ctx):
    full = evaluate(ctx, 16, 256.0, [Dist.data(16)] * ctx.G)
    fc8 = ctx.names.index("fc8")
    mixed = [Dist.data(16)] * ctx.G
    mixed[fc8] = Dist("filter", 1, 2, of=16)
    a = evaluate(ctx, 16, 256.0, mixed)
    assert a.redistribution_s[fc8] > 0 and full.redistribution_s.sum() == 0


def test_wider_space_is_never_worse(ctx):
    base = search_layerwise(ctx, 8, 256.0)
    wide = search_layerwise(ctx, 8, 256.0, ("data", "spatial", "filter", "channel", "subsets"))
    assert wide.assessment.total_s <= base.assessment.total_s * (1 + 1e-12)


@pytest.mark.parametrize(
    "line,words",
    [
        ("{from: flatten, to: fc8, distribution: filter, p2: 2, gpus: 3}", ["layers[1].gpus", "got 3", "divide"]),
        ("{from: flatten, to: fc8, distribution: replicated, gpus: 4}", ["layers[1].gpus", "replicated"]),
        ("{from: flatten, to: fc8, distribution: filter, gpus: 1}", ["layers[1].gpus", "at least 2 GPUs"]),
        ("{from: flatten, to: fc8, distribution: filter, p2: 4, gpus: 2}", ["layers[1].p2", "does not divide gpus=2"]),
    ],
)
def test_bad_subsets_in_a_layerwise_file(run, tmp_path, line, words):
    f = tmp_path / "lw.yaml"
    f.write_text(f"model: VGG16\ngpus: 16\nbatch: 512\nlayers:\n  - {{from: conv1_1, to: pool5, distribution: data}}\n"
                 f"  - {line}\n")  # fmt: skip
    r = run("search", "-m", "vgg16", "-s", "abci", "-p", "vgg16_v100", "--evaluate", str(f))
    assert r.code == 2 and "Traceback" not in r.err, r.err
    assert str(f) in r.err
    for w in words:
        assert w in r.err, (w, r.err)


def test_jia_table5_configuration_evaluates(run, tmp_path):
    """VGG-16 on 4 GPUs as Jia et al.'s Table 5: samples, then height x width for the
    last convolutions, fc layers split by channel on 4 and then on 2 GPUs."""
    f = tmp_path / "t5.yaml"
    f.write_text("model: VGG16\ngpus: 4\nbatch: 128\nlayers:\n"
                 "  - {from: conv1_1, to: pool4, distribution: data}\n"
                 "  - {from: conv5_1, to: pool5, distribution: spatial, p1: 1, p2: 4}\n"
                 "  - {from: flatten, to: drop7, distribution: channel, p1: 1, p2: 4}\n"
                 "  - {from: fc8, to: fc8, distribution: channel, p1: 1, p2: 2, gpus: 2}\n")  # fmt: skip
    r = run("search", "-m", "vgg16", "-s", "abci", "-p", "vgg16_v100", "--evaluate", str(f), "-o",
            str(tmp_path / "back.yaml"))  # fmt: skip
    assert r.code == 0, r.err
    assert "channel 1×2 on 2" in r.out


# -- overlap inside per-layer configurations (issue 18) -------------------------------------


def _overlap_ctx(**o):
    m, s, pr = load_model("vgg16"), load_system("abci"), load_profile("vgg16_v100")
    return Context(m, s, bind_profile(m, pr), Options(overlap="buckets", **o), pr.kind)


@pytest.mark.parametrize("gpus", [8, 64])
def test_overlapped_all_data_assignment_is_the_overlapped_data_strategy(gpus):
    """Uniform data with --overlap buckets: the same exposed gradient exchange as the
    data strategy's bucket timeline."""
    from oracle.compute.layerwise.search import uniform_points

    ctx = _overlap_ctx()
    a = evaluate(ctx, gpus, 16.0 * gpus, [Dist.data(gpus)] * ctx.G).point
    (data,) = [pt for pt in uniform_points(ctx, gpus, 16.0 * gpus, "data")]
    assert a.communication_s == pytest.approx(data.communication_s, rel=1e-9)
    assert a.detail("overlap_ratio") == pytest.approx(data.detail("overlap_ratio"), rel=1e-9)


@pytest.mark.parametrize("k,delay", [(0, ()), (2, ()), (3, ("fc",))])
def test_overlap_never_makes_a_per_layer_configuration_slower(ctx, k, delay):
    plain_ctx = ctx
    over = _overlap_ctx(bucket_layers=k, delayed_update=delay)
    fc8 = ctx.names.index("fc8")
    fc6 = ctx.names.index("fc6")
    for assignment in ([Dist.data(16)] * ctx.G, [Dist("filter", 4, 4)] * ctx.G,
                       [Dist.data(16)] * fc8 + [Dist("filter", 1, 2, of=16)] * (ctx.G - fc8),
                       [Dist.data(16)] * fc6 + [Dist("replicated", 16, 1)] * (ctx.G - fc6)):  # fmt: skip
        a = evaluate(plain_ctx, 16, 256.0, assignment).point
        b = evaluate(over, 16, 256.0, assignment).point
        assert b.total_s <= a.total_s * (1 + 1e-12)
        assert b.detail("communication_total_s") >= b.communication_s * (1 - 1e-12)


def test_search_with_overlap_is_never_worse_than_its_plan_without(ctx):
    over = _overlap_ctx()
    plain_plan = search_layerwise(ctx, 16, 256.0).assessment
    with_overlap = search_layerwise(over, 16, 256.0)
    again = evaluate(over, 16, 256.0, list(plain_plan.assignment)).point
    assert with_overlap.assessment.total_s <= again.total_s * (1 + 1e-12)
    assert not with_overlap.proven and any("--overlap" in n for n in with_overlap.notes)


def test_search_cli_takes_overlap_and_collective(run):
    r = run("search", "-m", "vgg16", "-s", "abci", "-p", "vgg16_v100", "--gpus", "16", "--overlap", "buckets",
            "--bucket-layers", "3", "--collective", "rhd")  # fmt: skip
    assert r.code == 0, r.err
    assert "with --overlap" in r.out
    r = run("search", "-m", "vgg16", "-s", "abci", "-p", "vgg16_v100", "--gpus", "16", "--bucket-layers", "0",
            "--overlap", "buckets")  # fmt: skip
    assert r.code == 2 and "--bucket-layers" in r.err and "at least 1 layer" in r.err
    for command in ("search", "predict"):  # the help's range is the check's (it said x>=0)
        text = run(command, "--help").out
        entry = text[text.index("--bucket-layers") :].split("\n  -")[0]
        assert "[x>=1]" in entry and "x>=0" not in entry, entry


def test_replicated_gathers_travel_in_the_overlap_timeline(ctx):
    """With overlap a replicated layer's all-gather leaves the layer collectives and goes
    on the gradient channel (as --replicated-gradients does for data parallelism)."""
    fc6 = ctx.names.index("fc6")
    assignment = [Dist.data(16)] * fc6 + [Dist("replicated", 16, 1)] * (ctx.G - fc6)
    plain = evaluate(ctx, 16, 256.0, assignment).point
    over = evaluate(_overlap_ctx(), 16, 256.0, assignment).point
    assert plain.breakdown.layer_collectives_s > 0
    assert over.breakdown.layer_collectives_s == pytest.approx(0.0, abs=1e-12)
    assert over.detail("communication_total_s") >= plain.breakdown.layer_collectives_s


# -- samples x space x filters together (Jia et al. §4, {n, h, w, c}) --------------------------


def test_spatial_filter_costs_by_parts(ctx):
    """spatial+filter 1×2×2 on 4 GPUs: a conv layer's work splits 4 ways (as spatial
    1×4), its weights and their gradient 2 ways (as filter 1×2 on 2 GPUs), and an fc
    layer's filter collectives are those of filter 1×2 on the same samples."""
    sf = Dist("spatial+filter", 1, 2, p3=2)
    costs = Costs(ctx, 4, 64.0, [sf, Dist("spatial", 1, 4), Dist("filter", 1, 2, of=4)])
    conv, fc6 = ctx.names.index("conv3_1"), ctx.names.index("fc6")
    assert costs.fb[conv, 0] == pytest.approx(costs.fb[conv, 1], rel=1e-12)
    assert costs.grad_bytes[conv, 0] == pytest.approx(ctx.delta * ctx.w[conv] / 2)
    assert costs.lc[fc6, 0] == pytest.approx(costs.lc[fc6, 2], rel=1e-12)
    halves = Costs(ctx, 4, 64.0, [Dist("spatial", 1, 2, of=4)])  # the same tiles of the same samples
    assert costs.halo[conv, 0] == pytest.approx(halves.halo[conv, 0], rel=1e-12) and costs.halo[conv, 0] > 0
    assert sf.label == "spatial+filter 1×2×2" and sf.gpus == 4


def test_spatial_filter_in_the_space_is_never_worse(ctx):
    base = search_layerwise(ctx, 16, 256.0)
    wide = search_layerwise(ctx, 16, 256.0, ("data", "spatial", "filter", "channel", "spatial+filter"))
    assert any(d.kind == "spatial+filter" for d in wide.costs.dists)
    assert wide.assessment.total_s <= base.assessment.total_s * (1 + 1e-12)


def test_spatial_filter_file_round_trip(run, tmp_path):
    f = tmp_path / "sf.yaml"
    f.write_text("model: VGG16\ngpus: 16\nbatch: 512\nlayers:\n"
                 "  - {from: conv1_1, to: pool4, distribution: data}\n"
                 "  - {from: conv5_1, to: pool5, distribution: spatial+filter, p1: 1, p2: 4, p3: 4}\n"
                 "  - {from: flatten, to: fc8, distribution: filter, p2: 4, gpus: 4}\n")  # fmt: skip
    back = tmp_path / "back.yaml"
    r = run("search", "-m", "vgg16", "-s", "abci", "-p", "vgg16_v100", "--evaluate", str(f), "-o", str(back))
    assert r.code == 0, r.err
    assert "spatial+filter 1×4×4" in r.out
    assert "distribution: spatial+filter, p1: 1, p2: 4, p3: 4}" in back.read_text()
    again = run("search", "-m", "vgg16", "-s", "abci", "-p", "vgg16_v100", "--evaluate", str(back))
    assert again.code == 0 and again.out.splitlines()[3] == r.out.splitlines()[3]
    for bad, words in (("p3: 4}", ["layers[1].p3", "p3=3 does not divide"]),):
        g = tmp_path / "bad.yaml"
        g.write_text(f.read_text().replace(bad, "p3: 3}"))
        r = run("search", "-m", "vgg16", "-s", "abci", "-p", "vgg16_v100", "--evaluate", str(g))
        assert r.code == 2 and all(w in r.err for w in words), r.err
    g = tmp_path / "bad2.yaml"
    g.write_text(f.read_text().replace("distribution: data}", "distribution: data, p3: 2}", 1))
    r = run("search", "-m", "vgg16", "-s", "abci", "-p", "vgg16_v100", "--evaluate", str(g))
    assert r.code == 2 and "layers[0].p3" in r.err and "spatial+filter" in r.err, r.err
