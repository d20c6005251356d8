"""The transformer layer types (attention, scale, posembedding, classtoken, slice):
shapes, parameters and FLOPs by hand, memory, a cost under every strategy, PyTorch's own
modules' parameter counts, and torchvision's transformers through import -> profile ->
predict.  The first half needs no PyTorch."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from test_layer_types import SYSTEM

from oracle.compute.context import Context, Options
from oracle.compute.layers.shapes_tokens import attention_flops
from oracle.compute.memory import saved_activations
from oracle.errors import OracleError
from oracle.load.model import parse_model
from oracle.load.system import parse_system


def model(input_shape, layers):
    return parse_model({"name": "m", "input": list(input_shape), "dataset": {"samples": 10}, "layers": layers}, "m.yaml")


def one(input_shape, **layer):
    m = model(input_shape, [{"name": "l", **layer}])
    return m.info[0], m.layers[0]


# -- shapes, parameters, FLOPs by hand -------------------------------------------------


def test_global_attention_by_hand():
    # 5 tokens of 8 features, 2 heads: N = P = 5, E = 8
    info, layer = one([5, 8], type="attention", heads=2)
    assert info.output_shape == (5, 8)
    assert (info.weights, info.biases) == (4 * 8 * 8, 4 * 8)  # = nn.MultiheadAttention(8, 2)
    products = 2 * 5 * 8 * 24 + 2 * 5 * 8 * 8 + 2 * (2 * 5 * 5 * 8)  # qkv, out, QK^T, AV
    elementwise = 5 * 8 + 3 * (2 * 5 * 5) + 4 * 5 * 8  # scale q, softmax, biases
    assert attention_flops(layer, (5, 8)) == (products, elementwise) == (3360, 350)
    assert info.flops == 3710


def test_grouped_attention_attends_within_the_leading_dimensions():
    # MaxViT: 4 groups of 3 tokens: the scores are 4 x 3 x 3 per head, not 12 x 12
    info, layer = one([4, 3, 8], type="attention", heads=2, position_bias=25, bias=False)
    products, _ = attention_flops(layer, (4, 3, 8))
    assert products == 2 * 12 * 8 * 24 + 2 * 12 * 8 * 8 + 4 * 12 * 3 * 8
    assert (info.weights, info.biases) == (4 * 64 + 25 * 2, 0)


def test_windowed_attention_pads_to_whole_windows_and_counts_the_bias_and_mask():
    # Swin: 5x5x4, 3x3 windows (padded to 6x6: N = 36, P = 9), 2 heads, table 5x5 per head
    info, _ = one([5, 5, 4], type="attention", heads=2, window=3, shift=1, position_bias=25)
    assert info.output_shape == (5, 5, 4)
    assert (info.weights, info.biases) == (4 * 16 + 25 * 2, 16)  # torchvision's: 130 in all
    scores = 2 * 36 * 9
    products = 2 * 36 * 4 * 12 + 2 * 36 * 4 * 4 + 4 * 36 * 9 * 4
    elementwise = 36 * 4 + 3 * scores + 4 * 36 * 4 + 2 * scores  # + bias table, + shift mask
    assert info.flops == products + elementwise == 13752
    unshifted, _ = one([6, 6, 4], type="attention", heads=2, window=3, position_bias=25)
    assert info.flops - unshifted.flops == scores  # the mask


def test_swin_v2_position_mlp_and_cosine_parameters():
    info, _ = one([4, 4, 8], type="attention", heads=2, window=2, position_mlp=16, cosine=True)
    # cpb_mlp: Linear(2, 16) with bias, Linear(16, 2) without; logit_scale per head
    assert info.weights == 4 * 64 + 2 * 16 + 16 * 2 + 2
    assert info.biases == 4 * 8 + 16


def test_scale_posembedding_classtoken_slice_by_hand():
    info, _ = one([4, 3, 3], type="scale")
    assert (info.output_shape, info.parameters, info.flops) == ((4, 3, 3), 4, 36.0)
    info, _ = one([3, 3, 4], type="scale", axis=2)  # channels last (timm's LayerScale)
    assert info.parameters == 4
    info, _ = one([5, 8], type="posembedding")
    assert (info.output_shape, info.parameters, info.flops) == ((5, 8), 40, 40.0)
    info, _ = one([4, 8], type="classtoken")
    assert (info.output_shape, info.parameters, info.flops) == ((5, 8), 8, 0.0)
    info, _ = one([4, 8], type="classtoken", tokens=2, axis=1)
    assert (info.output_shape, info.parameters) == ((4, 10), 8)
    info, _ = one([6, 4], type="slice", start=2, stop=5)
    assert (info.output_shape, info.parameters, info.flops) == ((3, 4), 0, 0.0)


@pytest.mark.parametrize("layer, message", [
    ({"type": "attention", "heads": 3}, "heads 3 does not divide the 8 features"),
    ({"type": "attention", "heads": 2, "window": [2, 2, 2]}, "window has 3 values"),
    ({"type": "attention"}, "heads"),
    ({"type": "slice", "start": 4, "stop": 9}, "slice 4:9 is not inside the 6 indices"),
    ({"type": "scale", "axis": 3}, "axis 3 is outside"),
    ({"type": "attention", "heads": 2, "fused": True, "cosine": True}, "cosine attention scales its scores itself"),
])  # fmt: skip
def test_bad_layers_are_errors(layer, message):
    with pytest.raises(OracleError, match=re.escape(message)):
        model([6, 6, 8], [{"name": "l", **layer}])


def test_memory_rules():
    m = model([5, 8], [
        {"name": "s", "type": "slice", "start": 0, "stop": 4},  # a view of the input
        {"name": "a", "type": "attention", "heads": 2},  # input (the view's storage), q/k/v, scores, context
        {"name": "g", "type": "scale", "axis": 1},  # its input: a's output, charged to a
        {"name": "p", "type": "posembedding"},  # nothing
        {"name": "c", "type": "classtoken"},  # nothing
    ])  # fmt: skip
    saved = saved_activations(m)
    # the model's input (40) is charged to its first reader; the slice is a view of it
    assert list(saved.elements) == [40, (4 * 4 * 8 + 2 * 4 * 4) + 4 * 8, 0, 0, 0]


# -- every strategy --------------------------------------------------------------------

VIT_LIKE = [
    {"name": "c", "type": "conv", "filters": 16, "kernel": 2, "stride": 2},  # 16x4x4
    {"name": "g", "type": "scale"},
    {"name": "r", "type": "reshape", "shape": [16, 16]},
    {"name": "t", "type": "permute", "perm": [1, 0]},  # 16 tokens x 16 features
    {"name": "cls", "type": "classtoken"},
    {"name": "pos", "type": "posembedding"},
    {"name": "a", "type": "attention", "heads": 4, "fused": True},
    {"name": "res", "type": "add", "inputs": ["pos", "a"]},
    {"name": "a2", "type": "attention", "heads": 2, "window": 5},  # 17 tokens padded to 20
    {"name": "first", "type": "slice", "start": 0, "stop": 1},
    {"name": "flat", "type": "flatten"},
    {"name": "fc", "type": "fc", "outputs": 10},
]


def _system():
    net = [{"name": "A", "max_gpus": 8, "alpha_s": 1.0e-5, "beta_s_per_byte": 1.0e-10}]
    return parse_system({**SYSTEM, "nodes": 2, "network": net, "gpu": {
        "model": "G", "memory_GB": 16, "peak_TFLOPS": 15, "memory_bandwidth_GB_per_s": 900}}, "s.yaml")  # fmt: skip


def test_every_strategy_costs_the_transformer_layers_or_states_a_limit():
    from oracle.compute.binding import bind_profile
    from oracle.compute.strategies import names
    from oracle.compute.sweep import sweep
    from oracle.profiling.estimate import estimate

    m, system = model([3, 8, 8], VIT_LIKE), _system()
    times = bind_profile(m, estimate(m, system, date="2026-01-01"))
    points = sweep(m, system, times, [1, 2, 4, 8], list(names()), batch=8, options=Options())
    assert {pt.strategy for pt in points} == set(names())
    for pt in points:
        assert math.isfinite(pt.total_s) and pt.total_s > 0 or pt.limits, pt
    # filter parallelism splits attention by heads: 8 GPUs exceed a2's 2 heads
    (filt,) = [pt for pt in points if pt.strategy == "filter" and pt.gpus == 8]
    assert any("p=8 exceeds the 2 heads of a2" in limit.reason for limit in filt.limits), filt.limits
    (chan,) = [pt for pt in points if pt.strategy == "channel" and pt.gpus == 8]
    assert any("p=8 exceeds the 2 heads of a2" in limit.reason for limit in chan.limits), chan.limits


def test_attention_is_split_and_communicated_by_filter_parallelism():
    from oracle.compute.binding import bind_profile
    from oracle.profiling.estimate import estimate

    m, system = model([3, 8, 8], VIT_LIKE), _system()
    ctx = Context(m, system, bind_profile(m, estimate(m, system, date="2026-01-01")), Options())
    split = [n for n, keep in zip(ctx.names, ctx.split("filter").mask) if keep]
    assert split == ["c", "a", "a2", "fc"]
    assert [int(ctx.F[ctx.names.index(n)]) for n in ("a", "a2")] == [4, 2]  # heads
    assert list(ctx.split("filter").coll_y) == [256, 17 * 16, 17 * 16]  # after c, a and a2


def test_the_docs_example_loads():
    text = (Path(__file__).resolve().parent.parent / "docs" / "model-format.md").read_text()
    block = text[text.index("### Transformer layers"):]
    example = re.search(r"```yaml\n(.*?)```", block, flags=re.DOTALL).group(1)
    import yaml

    doc = yaml.safe_load(example)
    m = parse_model({"name": "vit", "dataset": {"samples": 1}, **doc}, "docs")
    by_name = {layer.name: info for layer, info in zip(m.layers, m.info)}
    assert by_name["cls"].output_shape == (197, 768) and by_name["cls"].parameters == 768
    assert by_name["attn"].parameters == 2_362_368
    assert by_name["pos"].parameters == 197 * 768
    assert m.info[-1].output_shape == (1000,)


# -- PyTorch: the modules, and torchvision's transformers end to end ----------------------


def test_counts_match_pytorchs_own_attention_modules():
    torch = pytest.importorskip("torch")
    swin = pytest.importorskip("torchvision.models.swin_transformer")
    maxvit = pytest.importorskip("torchvision.models.maxvit")

    def count(module):
        return sum(p.numel() for p in module.parameters())

    info, _ = one([197, 768], type="attention", heads=12)
    assert info.parameters == count(torch.nn.MultiheadAttention(768, 12, batch_first=True))
    info, _ = one([56, 56, 96], type="attention", heads=3, window=7, shift=3, position_bias=169)
    assert info.parameters == count(swin.ShiftedWindowAttention(96, [7, 7], [3, 3], 3))
    info, _ = one([56, 56, 96], type="attention", heads=3, window=8, position_mlp=512, cosine=True)
    assert info.parameters == count(swin.ShiftedWindowAttentionV2(96, [8, 8], [0, 0], 3))
    info, _ = one([64, 49, 64], type="attention", heads=2, position_bias=169)
    assert info.parameters == count(maxvit.RelativePositionalMultiHeadAttention(64, 32, 49))


def test_every_new_type_builds_in_pytorch():
    torch = pytest.importorskip("torch")
    from oracle.profiling.torchnet import build_network, check_shapes, count_parameters

    m = model([3, 8, 8], VIT_LIKE)
    assert {layer.type for layer in m.layers} >= {"attention", "scale", "posembedding", "classtoken", "slice"}
    assert check_shapes(m, build_network(m, device="meta"), batch=2) == []
    net = build_network(m, device="cpu")
    assert count_parameters(net) == m.parameters
    assert tuple(net(torch.randn(2, 3, 8, 8)).shape) == (2, 10)


@pytest.mark.parametrize("name, types", [
    ("vit_b_16", {"attention", "classtoken", "posembedding", "slice"}),
    ("swin_t", {"attention"}),
    ("convnext_tiny", {"scale"}),
    ("shufflenet_v2_x0_5", {"slice"}),
])  # fmt: skip
def test_import_profile_predict(run, tmp_path, predict_every_strategy, name, types):
    """import -> `oracle profile` builds the network (same parameters, output shape) ->
    `oracle predict`: every strategy a finite time or a stated limit."""
    torchvision = pytest.importorskip("torchvision")
    pytest.importorskip("torch")
    from oracle.load.model import load_model
    from oracle.profiling.torchnet import build_network, check_shapes, count_parameters

    out = tmp_path / "m.yaml"
    r = run("import-model", f"torchvision:{name}", "--input", "3,224,224", "-o", str(out))
    assert r.code == 0, r.err
    m = load_model(out)
    assert types <= {layer.type for layer in m.layers}
    reference = sum(p.numel() for p in getattr(torchvision.models, name)(weights=None).parameters())
    net = build_network(m, device="meta")
    assert count_parameters(net) == m.parameters == reference
    assert check_shapes(m, net) == [] and m.info[-1].output_shape == (1000,)
    predict_every_strategy(out, "4,64")


def test_per_layer_search_costs_attention_as_the_strategies_do():
    """The per-layer search's uniform filter/channel assignment of a model with attention
    layers costs what the strategy does (the split by heads in one place, context.py)."""
    from oracle.compute.binding import bind_profile
    from oracle.compute.layerwise.layerwise import Dist, evaluate
    from oracle.compute.sweep import sweep
    from oracle.profiling.estimate import estimate

    m, s = model([3, 8, 8], VIT_LIKE), _system()
    times = bind_profile(m, estimate(m, s, batch=2, date="2026-01-01"))
    ctx = Context(m, s, times, Options(memory_model="paradl"))
    points = sweep(m, s, times, [2, 4], ["filter", "channel", "data+filter"], batch=8, options=ctx.options)
    assert {pt.strategy for pt in points} == {"filter", "channel", "data+filter"}
    for pt in points:
        if pt.p1 == 0:  # data+filter at 2 GPUs: no p1·p2 with both >= 2, its point says so
            continue
        kind = "filter" if pt.strategy != "channel" else "channel"
        got = evaluate(ctx, pt.gpus, 8, [Dist(kind, pt.p1, pt.p2)] * ctx.G).point
        assert got.breakdown.layer_collectives_s == pytest.approx(pt.breakdown.layer_collectives_s, rel=1e-9)
        assert got.total_s == pytest.approx(pt.total_s, rel=1e-9), pt.strategy


def test_attention_moves_its_scores_and_projections():
    """Roofline and compute-model bytes: input, output and parameters plus the q/k/v, the
    context, the scores and the probabilities written and read again (5 tokens, E = 8, 2 heads)."""
    from oracle.compute import kernels as K
    from oracle.profiling.estimate import bytes_per_sample

    info, layer = one([5, 8], type="attention", heads=2)
    inside = 2 * (4 * 5 * 8) + 4 * (2 * 5 * 5)  # 520
    assert bytes_per_sample(layer, info, batch=1) == 4 * (40 + 40 + inside + 288)
    work = K.forward_work(layer, info, batch=2, delta=2)
    assert work.bytes == 2 * (2 * (40 + inside + 40) + 288) and work.matmul


@pytest.mark.parametrize("batch", [1, 64])
def test_vectorised_compute_model_equals_the_per_layer_one_with_attention(batch):
    from oracle.compute import kernels as K
    from oracle.compute import kernels_array as KA
    from oracle.gpus import lookup

    m, gpu = model([3, 8, 8], VIT_LIKE), lookup("A100-SXM4-80GB")
    fw, bw = KA.per_sample_array(KA.ModelArrays.of(m), gpu, "fp16", batch)
    times = K.per_sample_times(m, gpu, "fp16", batch)
    assert [f for f, _ in times] == pytest.approx(list(fw), rel=1e-12)
    assert [b for _, b in times] == pytest.approx(list(bw), rel=1e-12)


@pytest.mark.parametrize("case", ["mha", "swin", "swin_unshifted", "maxvit"])
def test_saved_memory_rule_matches_pytorchs_own_modules(case):
    """What autograd saves in training, counted by storage (oracle/profiling/saved.py), on
    torchvision's and PyTorch's attention modules equals the rule (input included)."""
    torch = pytest.importorskip("torch")
    swin = pytest.importorskip("torchvision.models.swin_transformer")
    maxvit = pytest.importorskip("torchvision.models.maxvit")
    from oracle.profiling.saved import saved_storages

    shape, layer, module = {
        "mha": ((17, 16), {"heads": 4, "fused": True}, torch.nn.MultiheadAttention(16, 4, batch_first=True)),
        "swin": ((4, 4, 16), {"heads": 2, "window": 2, "shift": 1, "position_bias": 9},
                 swin.ShiftedWindowAttention(16, [2, 2], [1, 1], 2)),
        "swin_unshifted": ((4, 4, 16), {"heads": 2, "window": 2, "position_bias": 9},
                           swin.ShiftedWindowAttention(16, [2, 2], [0, 0], 2)),
        "maxvit": ((3, 4, 16), {"heads": 2, "position_bias": 9}, maxvit.RelativePositionalMultiHeadAttention(16, 8, 4)),
    }[case]  # fmt: skip
    m = model(shape, [{"name": "a", "type": "attention", **layer}])
    x = torch.randn(2, *shape)
    module.train()
    run = (lambda: module(x, x, x, need_weights=False)) if case == "mha" else (lambda: module(x))
    measured = sum(nbytes for _, nbytes in saved_storages(torch, module, run)) / 2 / 4  # per sample, fp32
    assert saved_activations(m).elements[0] == measured
    assert m.parameters == sum(p.numel() for p in module.parameters())


@pytest.mark.parametrize("name, within", [("vit_b_16", 0.005), ("swin_t", 0.03), ("maxvit_t", 0.03),
                                          ("convnext_tiny", 0.02)])  # fmt: skip
def test_saved_memory_of_imported_transformers_matches_pytorch(name, within):
    """The rules on the imported file against what autograd saves for torchvision's own
    model in training (scripts/measure_saved_tensors.py, batch 2): ViT exactly but for
    LayerNorm's statistics; Swin and ConvNeXt within 3%, as their stochastic depth is
    imported as a dropout with a byte per element where PyTorch keeps one per sample."""
    pytest.importorskip("torchvision")
    import sys

    from oracle.importer.build import import_model

    root = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(root / "scripts"))
    try:
        from measure_saved_tensors import saved_bytes_per_sample
    finally:
        sys.path.pop(0)
    rule = saved_activations(import_model(f"torchvision:{name}", (3, 224, 224)).model).bytes_per_sample(4)
    assert rule == pytest.approx(saved_bytes_per_sample(name, batch=2), rel=within)


TOKEN_NET = '''
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 1)
        self.gamma = nn.Parameter(torch.ones(4, 1, 1))
        self.cls = nn.Parameter(torch.zeros(1, 1, 6))
        self.attn = nn.MultiheadAttention(6, 2, batch_first=True)

    def forward(self, x):
        a, b = torch.split(self.conv(x), [2, 4], dim=1)  # 2 and 4 channels of 6
        y = torch.cat([b * self.gamma, a], 1)  # layer scale on the 4
        t = y.flatten(2).transpose(1, 2)  # 16 tokens x 6
        t = torch.cat([self.cls.expand(x.shape[0], -1, -1), t], dim=1)
        t = self.attn(t, t, t, need_weights=False)[0]
        return t[:, 0]
'''


def test_user_module_with_split_scale_class_token_and_attention(tmp_path):
    pytest.importorskip("torch")
    from oracle.importer.build import import_model

    path = tmp_path / "tokens.py"
    path.write_text(TOKEN_NET)
    got = import_model(f"{path}:Net", (3, 4, 4))
    by = {layer.name: layer for layer in got.model.layers}
    slices = [(layer.start, layer.stop, layer.axis) for layer in got.model.layers if layer.type == "slice"]
    assert slices == [(0, 2, 0), (2, 6, 0), (0, 1, 0)]  # the split's parts, then t[:, 0]
    assert [layer.type for layer in got.model.layers if layer.type in ("scale", "classtoken", "attention")] == [
        "scale", "classtoken", "attention"]  # fmt: skip
    assert by["attn"].fused and by["attn"].heads == 2
    assert got.model.parameters == got.reference_parameters == (3 * 6 + 6) + 4 + 6 + (4 * 36 + 4 * 6)
    assert got.model.info[-1].output_shape == (6,)


def test_attention_weights_are_unsupported_unless_allowed(tmp_path):
    pytest.importorskip("torch")
    from oracle.importer.build import import_model

    path = tmp_path / "weights.py"
    path.write_text(TOKEN_NET.replace("need_weights=False)[0]\n        return t[:, 0]",
                                      "need_weights=True)[1]\n        return t"))  # fmt: skip
    message = "operation torch.nn.modules.activation.MultiheadAttention at 'attn' is not supported (the attention weights)"
    with pytest.raises(OracleError, match=re.escape(message)):
        import_model(f"{path}:Net", (3, 4, 4))
    got = import_model(f"{path}:Net", (3, 4, 4), allow_unsupported=True)
    assert got.unsupported == (("attn", "torch.nn.modules.activation.MultiheadAttention"),)
    assert got.model.info[-1].output_shape == (17, 17)
