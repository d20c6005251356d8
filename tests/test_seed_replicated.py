"""Lee et al.'s replicated weight-gradient calculation (HiPC 2017 §III-C-2; issue 18):
hand-computed costs, and the properties the issue asks for."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oracle.compute.context import Options
from oracle.compute.conversion import prepare
from oracle.compute.sweep import sweep
from oracle.errors import OracleError
from oracle.load import load_model, load_profile, load_system
from oracle.load.model import parse_model
from oracle.load.profile import parse_profile
from oracle.load.system import parse_system

MODEL = {
    "name": "Two",
    "input": [100, 1],
    "dataset": {"name": "d", "samples": 1000},
    "layers": [
        {"name": "fc1", "type": "fc", "outputs": 50},  # w = 100·50 + 50 = 5,050
        {"name": "fc2", "type": "fc", "outputs": 10},  # w = 50·10 + 10 = 510
    ],
}
PROFILE = {"model": "Two", "layers": {"fc1": {"fw_s": 1e-3, "bw_s": 2e-3}, "fc2": {"fw_s": 1e-4, "bw_s": 2e-4}}}
SYSTEM = {
    "name": "S",
    "gpu": {"model": "G", "memory_GB": 16},
    "gpus_per_node": 4,
    "nodes": 2,
    "network": [{"name": "all", "max_gpus": 8, "alpha_s": 1e-5, "beta_s_per_byte": 1e-9}],
}


def _point(**options):
    m, s = parse_model(MODEL, "two.yaml"), parse_system(SYSTEM, "s.yaml")
    pr = parse_profile(PROFILE, "p.yaml")
    o = Options(compute_scaling="linear", **options)
    times, conv = prepare(m, s, pr, o)
    (pt,) = sweep(m, s, times, [4], "data", batch=8, options=o, profile_kind=pr.kind, conversion=conv)
    return pt


def test_replicated_by_hand():
    """p = 4, B = 8 (2 per GPU), I = 1000/8 = 125 iterations, δ = 4, α = 10 µs, β = 1 ns/B.
    Plain: ring AR of 4·5,560 B: 6·(α + 22,240/4·β) = 9.336e-5 s per iteration.
    fc1 replicated: AR of fc2's 4·510 B: 6·(α + 510β) = 6.306e-5; AG of fc1's inputs and
    errors, each GPU 4·2·(100 + 50) = 1,200 B: 3·(α + 1,200β) = 3.36e-5.
    Compute: (D/p)·Σ(FW+BW) = 250·3.3e-3 = 0.825 s, plus the other 6 samples' weight
    gradient of fc1 on every GPU, (B - B/p)·BW/2 = 6·1e-3 per iteration: + 0.75 s."""
    plain = _point()
    assert plain.communication_s == pytest.approx(125 * 9.336e-5)
    assert plain.compute_s == pytest.approx(0.825)
    rep = _point(replicated_gradients=("fc1",))
    assert rep.communication_s == pytest.approx(125 * (6.306e-5 + 3.36e-5))
    assert rep.compute_s == pytest.approx(0.825 + 0.75)


def test_replicated_by_type_and_unknown_layer():
    assert _point(replicated_gradients=("fc",)).communication_s == pytest.approx(
        125 * (3 * (1e-5 + 4 * 2 * 150 * 1e-9) + 3 * (1e-5 + 4 * 2 * 60 * 1e-9)))  # two all-gathers, no all-reduce
    with pytest.raises(OracleError, match="no layer or layer type 'fc3'"):
        _point(replicated_gradients=("fc3",))


def _vgg(gpus, b, **options):
    m, s = load_model("vgg16"), load_system("abci")
    pr = load_profile("vgg16_v100")
    o = Options(**options)
    times, conv = prepare(m, s, pr, o)
    (pt,) = sweep(m, s, times, [gpus], "data", batch_per_gpu=b, options=o, profile_kind=pr.kind, conversion=conv)
    return pt


@settings(max_examples=30, deadline=None)
@given(gpus=st.sampled_from([2, 4, 8, 16, 32, 64]), b=st.integers(1, 16), fc8=st.booleans())
def test_replicated_never_communicates_more_when_activations_are_smaller(gpus, b, fc8):
    """A layer whose B·(x+y) is below its |w| (fc6: 29,184 vs 102.8 M; fc7: 8,192 vs
    16.8 M; fc8: 5,096 vs 4.1 M, so B < 804) all-gathers less than it all-reduces."""
    layers = ("fc6", "fc7") + (("fc8",) if fc8 and gpus * b * 5096 < 4_097_000 else ())
    plain = _vgg(gpus, b)
    rep = _vgg(gpus, b, replicated_gradients=layers)
    assert rep.communication_s <= plain.communication_s * (1 + 1e-12)


@settings(max_examples=30, deadline=None)
@given(gpus=st.sampled_from([2, 8, 32, 128]), k=st.integers(0, 6), delay=st.booleans(),
       layers=st.sampled_from([("fc6",), ("fc6", "fc7"), ("fc",)]))  # fmt: skip
def test_overlap_never_makes_a_replicated_configuration_slower(gpus, k, delay, layers):
    plain = _vgg(gpus, 32, replicated_gradients=layers)
    over = _vgg(gpus, 32, replicated_gradients=layers, overlap="buckets", bucket_layers=k,
                delayed_update=layers if delay else ())  # fmt: skip
    assert over.total_s <= plain.total_s * (1 + 1e-12)


@pytest.mark.parametrize(
    "args,words",
    [
        (("--replicated-gradients", "relu6"), ["--replicated-gradients", "no weights"]),
        (("--replicated-gradients", "fc9"), ["no layer or layer type 'fc9'", "did you mean"]),
        (("--overlap", "buckets", "--bucket-layers", "0"), ["--bucket-layers", "at least 1 layer"]),
        (("--strategy", "filter", "--replicated-gradients", "fc6"), ["--replicated-gradients", "data parallelism"]),
    ],
)
def test_bad_replicated_options(run, args, words):
    r = run("predict", "-m", "vgg16", "-s", "abci", "-p", "vgg16_v100", "--gpus", "8", *args)
    assert r.code == 2 and "Traceback" not in r.err
    for w in words:
        assert w in r.err, (w, r.err)


# -- the replicated per-layer distribution (layer-wise files, oracle search) -------------------


def test_all_replicated_assignment_is_the_data_strategy_with_every_layer_replicated():
    """Uniform replicated = data parallelism with --replicated-gradients on every
    weighted layer (same compute, same all-gathers, no all-reduce)."""
    from oracle.compute.layerwise.layerwise import Dist, evaluate

    m, s = parse_model(MODEL, "two.yaml"), parse_system(SYSTEM, "s.yaml")
    pr = parse_profile(PROFILE, "p.yaml")
    o = Options(compute_scaling="linear")
    times, _ = prepare(m, s, pr, o)
    from oracle.compute.context import Context

    ctx = Context(m, s, times, o, pr.kind)
    a = evaluate(ctx, 4, 8.0, [Dist("replicated", 4, 1)] * ctx.G)
    strategy = _point(replicated_gradients=("fc",))
    assert a.point.compute_s == pytest.approx(strategy.compute_s)
    assert a.point.communication_s == pytest.approx(strategy.communication_s)
    assert a.point.detail("gradient_groups") == ()


def test_layerwise_file_names_replicated(run, tmp_path):
    f = tmp_path / "lw.yaml"
    f.write_text("model: VGG16\ngpus: 16\nbatch: 512\nlayers:\n"
                 "  - {from: conv1_1, to: pool5, distribution: data}\n"
                 "  - {from: flatten, to: fc8, distribution: replicated}\n")  # fmt: skip
    r = run("search", "-m", "vgg16", "-s", "abci", "-p", "vgg16_v100", "--evaluate", str(f))
    assert r.code == 0, r.err
    assert "replicated" in r.out
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: VGG16\ngpus: 16\nbatch: 512\nlayers:\n"
                   "  - {from: conv1_1, to: fc8, distribution: replicated, p2: 4}\n")  # fmt: skip
    r = run("search", "-m", "vgg16", "-s", "abci", "-p", "vgg16_v100", "--evaluate", str(bad))
    assert r.code == 2 and "replicated uses all 16 GPUs" in r.err and "layers[0].p2" in r.err, r.err


def test_search_chooses_replicated_for_lees_fc_layers():
    """VGG-A on Lee's machine at 128 nodes, B = 256, in Lee's space (data parallelism
    with or without replicated weight gradients): the search replicates the fc layers
    and beats plain data parallelism; in the whole space it is never worse."""
    import importlib.util
    import sys
    from pathlib import Path

    from oracle.compute.context import Context
    from oracle.compute.layerwise.search import search_layerwise

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "seed_papers.py"
    spec = importlib.util.spec_from_file_location("seed_papers_r", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["seed_papers_r"] = mod
    spec.loader.exec_module(mod)
    model, system, profile = mod._lee_inputs()
    o = Options(compute_scaling="linear")
    sc = system(2.5)
    times, _ = prepare(model, sc, profile, o)
    ctx = Context(model, sc, times, o, profile.kind)
    data = search_layerwise(ctx, 128, 256.0, ("data",))
    lee = search_layerwise(ctx, 128, 256.0, ("data", "replicated"))
    picked = {n: d.kind for n, d in zip(ctx.names, lee.assessment.assignment)}
    assert picked["fc6"] == picked["fc7"] == "replicated" and picked["conv1"] == "data"
    assert lee.assessment.total_s < 0.7 * data.assessment.total_s
    default = search_layerwise(ctx, 128, 256.0)
    wide = search_layerwise(ctx, 128, 256.0, ("data", "spatial", "filter", "channel", "replicated"))
    assert wide.assessment.total_s <= default.assessment.total_s * (1 + 1e-12)
