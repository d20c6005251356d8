"""The layer types beyond ParaDL's (issue 15): shapes, parameters and FLOPs by hand, one
row per type in every table, PyTorch equivalents, and grouped/depthwise convolutions
under filter and channel parallelism (hand-computed ring collectives)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from oracle.compute.context import Context, Options
from oracle.compute.layers.geometry import halo_half_widths
from oracle.compute.layers.shapes import SHAPE_RULES
from oracle.compute.memory import SAVE_RULES, saved_activations
from oracle.compute.strategies.filter import horizontal_collectives, layer_collectives
from oracle.errors import OracleError
from oracle.load.model import _KEYS, parse_model
from oracle.load.system import parse_system
from oracle.model import LAYER_TYPES, LayerTimes
from oracle.profiling.estimate import ROOFLINE_KIND


def model(input_shape, layers, name="m"):
    return parse_model(
        {"name": name, "input": list(input_shape), "dataset": {"samples": 10}, "layers": layers},
        "m.yaml",
    )


def test_every_layer_type_has_a_row_in_every_table():
    for table in (SHAPE_RULES, SAVE_RULES, ROOFLINE_KIND):
        assert set(table) == set(LAYER_TYPES), table
    assert set(_KEYS) <= set(LAYER_TYPES)


def test_every_layer_type_has_a_module():
    pytest.importorskip("torch")
    from oracle.profiling.torchnet import MODULES

    assert set(MODULES) == set(LAYER_TYPES)


# -- shapes, parameters, FLOPs by hand ---------------------------------------------------


def test_convtranspose_2d_unet_upsampling():
    # U-Net's up-convolution: 2x2, stride 2, 64 -> 32 channels on 8x8
    m = model([64, 8, 8], [{"name": "up", "type": "convtranspose", "filters": 32, "kernel": 2, "stride": 2}])
    i = m.info[0]
    # (8-1)*2 - 0 + 1*(2-1) + 0 + 1 = 16
    assert i.output_shape == (32, 16, 16)
    assert (i.weights, i.biases) == (64 * 32 * 4, 32)
    # each of the 64*8*8 input elements meets 32*4 weights; + bias per output element
    assert i.flops == 2 * 64 * 8 * 8 * 32 * 4 + 32 * 16 * 16


def test_convtranspose_3d_output_padding_and_1d():
    m = model([4, 5, 5, 5], [{"name": "u", "type": "convtranspose", "filters": 2, "kernel": 3, "stride": 2,
                              "padding": 1, "output_padding": 1, "bias": False}])  # fmt: skip
    # (5-1)*2 - 2 + 2 + 1 + 1 = 10
    assert m.info[0].output_shape == (2, 10, 10, 10)
    assert m.info[0].weights == 4 * 2 * 27
    m1 = model([3, 7], [{"name": "u", "type": "convtranspose", "filters": 6, "kernel": 4, "groups": 3}])
    # (7-1)*1 + 3 + 1 = 10; weights C_in x F/g x K = 3*2*4
    assert m1.info[0].output_shape == (6, 10) and m1.info[0].weights == 24
    assert m1.info[0].flops == 2 * 3 * 2 * 4 * 7 + 6 * 10


def test_upsample_nearest_and_linear():
    m = model([3, 4, 6], [{"name": "u", "type": "upsample", "scale": 2},
                          {"name": "v", "type": "upsample", "size": [5, 7], "mode": "linear"}])  # fmt: skip
    assert m.info[0].output_shape == (3, 8, 12) and m.info[0].flops == 0
    assert m.info[1].output_shape == (3, 5, 7) and m.info[1].flops == 4 * 3 * 5 * 7
    with pytest.raises(OracleError, match="exactly one of 'size:' and 'scale:'"):
        model([3, 4, 6], [{"name": "u", "type": "upsample"}])


def test_norms():
    m = model([8, 4, 4], [{"name": "g", "type": "groupnorm", "groups": 2},
                          {"name": "l", "type": "layernorm", "dims": 3, "affine": False}])  # fmt: skip
    assert (m.info[0].weights, m.info[0].biases, m.info[0].flops) == (8, 8, 5 * 128)
    assert (m.info[1].parameters, m.info[1].flops) == (0, 4 * 128)
    m2 = model([4, 3], [{"name": "l", "type": "layernorm"}])  # over the last dimension: 3
    assert m2.info[0].parameters == 6
    with pytest.raises(OracleError, match="groups 3 does not divide the 8 channels"):
        model([8, 4, 4], [{"name": "g", "type": "groupnorm", "groups": 3}])


def test_squeeze_excitation_mul_broadcasts():
    layers = [
        {"name": "x", "type": "conv", "filters": 16, "kernel": 3, "padding": 1},
        {"name": "sq", "type": "globalavgpool"},
        {"name": "fc1", "type": "conv", "filters": 4, "kernel": 1},
        {"name": "act", "type": "hardswish"},
        {"name": "fc2", "type": "conv", "filters": 16, "kernel": 1},
        {"name": "gate", "type": "hardsigmoid"},
        {"name": "scale", "type": "mul", "inputs": ["x", "gate"]},
    ]
    m = model([3, 8, 8], layers)
    assert m.info[-1].output_shape == (16, 8, 8)
    assert m.info[-1].flops == 16 * 64
    assert m.info[3].flops == 4 and m.info[5].flops == 16
    with pytest.raises(OracleError, match="mul inputs do not broadcast: 16x8x8 vs 4x1x1"):
        model([3, 8, 8], layers[:3] + [{"name": "s", "type": "mul", "inputs": ["x", "fc1"]}])


def test_adaptive_pools_count_every_window():
    m = model([2, 7, 6], [{"name": "a", "type": "adaptiveavgpool", "size": [3, 2]},
                          {"name": "b", "type": "adaptivemaxpool", "size": 1}])  # fmt: skip
    assert m.info[0].output_shape == (2, 3, 2)
    # rows: windows [0,3), [2,5), [4,7) -> 3+3+3 = 9; columns: [0,3), [3,6) -> 6
    assert m.info[0].flops == 2 * 9 * 6
    assert m.info[1].output_shape == (2, 1, 1) and m.info[1].flops == 2 * 3 * 2


def test_adaptive_pool_windows_in_closed_form():
    # Σ_i ceil((i+1)e/o) - floor(ie/o) = e + o - gcd(e, o): 5 -> 3 windows [0,2), [1,4), [3,5)
    m = model([1, 5], [{"name": "a", "type": "adaptiveavgpool", "size": 3}])
    assert m.info[0].flops == 2 + 3 + 2 == 5 + 3 - 1
    # a billion output windows is an implausible size, not a billion-step loop
    with pytest.raises(OracleError, match="not plausible"):
        model([1000, 5, 5], [{"name": "a", "type": "adaptiveavgpool", "size": 1000000000}])


def test_shape_only_layers():
    m = model([8, 4, 4], [
        {"name": "s", "type": "channelshuffle", "groups": 2},
        {"name": "r", "type": "reshape", "shape": [2, 4, -1]},
        {"name": "p", "type": "permute", "perm": [2, 0, 1]},
    ])  # fmt: skip
    assert [i.output_shape for i in m.info] == [(8, 4, 4), (2, 4, 16), (16, 2, 4)]
    assert all(i.flops == 0 and i.parameters == 0 for i in m.info)
    with pytest.raises(OracleError, match="cannot reshape 8x4x4"):
        model([8, 4, 4], [{"name": "r", "type": "reshape", "shape": [3, -1]}])
    with pytest.raises(OracleError, match="perm"):
        model([8, 4, 4], [{"name": "p", "type": "permute", "perm": [0, 0, 1]}])


def test_concat_on_any_axis_and_matmul():
    m = model([4, 6], [
        {"name": "a", "type": "reshape", "shape": [6, 4]},
        {"name": "b", "type": "reshape", "shape": [6, 4], "inputs": ["input"]},
        {"name": "c", "type": "concat", "axis": 1, "inputs": ["a", "b"]},
        {"name": "mm", "type": "matmul", "inputs": ["input", "c"]},
    ])  # fmt: skip
    assert m.info[2].output_shape == (6, 8)
    # (4x6) @ (6x8) = 4x8: 2*4*6*8 FLOPs
    assert m.info[3].output_shape == (4, 8) and m.info[3].flops == 2 * 4 * 6 * 8
    with pytest.raises(OracleError, match="matmul inputs do not fit"):
        model([4, 6], [{"name": "mm", "type": "matmul", "inputs": ["input", "input"]}])


def test_unsupported_layer_is_zero_cost_with_its_shape():
    m = model([3, 8, 8], [{"name": "odd", "type": "unsupported", "op": "aten::roll", "shape": [3, 8, 8]}])
    assert m.info[0].output_shape == (3, 8, 8) and m.info[0].flops == 0
    assert m.layers[0].op == "aten::roll"


def test_random_layer_files_load_or_fail_cleanly():
    """Random keys and values on every layer type: a model or an OracleError, quickly
    (a billion-wide adaptive pool once looped for minutes)."""
    import random

    values = [0, 1, 2, 3, -1, 5, [1, 2], [2, 2, 2], [0], [], "x", None, True, 1.5, [3, -1], [0, 1, 2], 10**9]
    keys = ["filters", "kernel", "stride", "padding", "dilation", "groups", "bias", "output_padding",
            "outputs", "ceil_mode", "size", "scale", "mode", "affine", "dims", "axis", "shape", "perm", "op"]  # fmt: skip
    rng = random.Random(15)
    loaded = 0
    for _ in range(1500):
        layers = []
        for i in range(rng.randint(1, 3)):
            d = {"name": f"l{i}", "type": rng.choice(LAYER_TYPES)}
            d.update({k: rng.choice(values) for k in rng.sample(keys, rng.randint(0, 4))})
            if d["type"] in ("add", "mul", "concat", "matmul"):
                d["inputs"] = ["input", f"l{i - 1}" if i else "input"]
            layers.append(d)
        try:
            model(rng.choice([[3, 8], [4, 6, 6], [2, 4, 4, 4]]), layers)
            loaded += 1
        except OracleError:
            pass
    assert loaded > 40  # enough valid files that the loading paths run too


# -- memory ------------------------------------------------------------------------------


def test_saved_tensors_of_new_types():
    m = model([4, 4, 4], [
        {"name": "g", "type": "groupnorm", "groups": 2},  # saves the input (64)
        {"name": "u", "type": "upsample", "scale": 2},  # saves nothing
        {"name": "r", "type": "reshape", "shape": [-1]},  # view of u
        {"name": "t", "type": "reshape", "shape": [4, 8, 8]},  # view of u
        {"name": "m", "type": "mul", "inputs": ["t", "u"]},  # saves u (once) -> 256
        {"name": "x", "type": "adaptivemaxpool", "size": 2},  # input m (256) + 8 B x 16
    ])  # fmt: skip
    s = saved_activations(m)
    assert list(s.elements) == [64, 256, 0, 0, 256, 0]
    assert list(s.fixed_bytes) == [0, 0, 0, 0, 0, 8 * 16]


# -- halos -------------------------------------------------------------------------------


def test_halo_half_widths_of_transposed_convolutions():
    m = model([4, 8, 8], [
        {"name": "a", "type": "convtranspose", "filters": 2, "kernel": 2, "stride": 2},
        {"name": "b", "type": "convtranspose", "filters": 2, "kernel": 3},
        {"name": "c", "type": "convtranspose", "filters": 2, "kernel": 4, "stride": 2},
    ])  # fmt: skip
    # ceil((K-S)/(2S)): (2-2)/4 -> 0; (3-1)/2 -> 1 (= floor(3/2), a conv's); (4-2)/4 -> 1
    assert [halo_half_widths(layer, 2) for layer in m.layers] == [[0, 0], [1, 1], [1, 1]]
    up = model([4, 8, 8], [{"name": "n", "type": "upsample", "scale": 2},
                           {"name": "l", "type": "upsample", "scale": 2, "mode": "linear"}])  # fmt: skip
    assert [halo_half_widths(layer, 2) for layer in up.layers] == [[0, 0], [1, 1]]


# -- grouped and depthwise convolutions under filter/channel parallelism ------------------

SYSTEM = {
    "name": "One",
    "gpu": {"model": "G", "memory_GB": 16},
    "gpus_per_node": 4,
    "nodes": 1,
    "network": [{"name": "A", "max_gpus": 4, "alpha_s": 1.0e-5, "beta_s_per_byte": 1.0e-10}],
}
ALPHA, BETA = 1.0e-5, 1.0e-10


def ring_ar(p, m):
    return 2 * (p - 1) * (ALPHA + m / p * BETA)


def ring_ag(p, m_each):
    return (p - 1) * (ALPHA + m_each * BETA)


def mobile_block():
    """A MobileNet block: 1x1 expand, 3x3 depthwise, 1x1 project, fc head.
    #  layer  type                         output       |y|
    0  pw1    conv f8 k1                   8x4x4        128
    1  dw     conv f8 k3 p1 groups 8       8x4x4        128
    2  pw2    conv f4 k1                   4x4x4         64
    3  g2     conv f4 k1 groups 2          4x4x4         64
    4  flat   flatten                      64
    5  fc     fc 2                          2
    """
    return model([3, 4, 4], [
        {"name": "pw1", "type": "conv", "filters": 8, "kernel": 1},
        {"name": "dw", "type": "conv", "filters": 8, "kernel": 3, "padding": 1, "groups": 8},
        {"name": "pw2", "type": "conv", "filters": 4, "kernel": 1},
        {"name": "g2", "type": "conv", "filters": 4, "kernel": 1, "groups": 2},
        {"name": "flat", "type": "flatten"},
        {"name": "fc", "type": "fc", "outputs": 2},
    ])  # fmt: skip


def context(m):
    system = parse_system(SYSTEM, "s.yaml")
    times = tuple(LayerTimes(1e-4, 2e-4, 0.0) for _ in m.layers)
    return Context(m, system, times, Options())


@pytest.mark.parametrize("q", [2, 4])
def test_filter_split_depthwise_consumer_needs_no_reduction(q):
    ctx = context(mobile_block())
    s = ctx.split("filter")
    b, d = 8, 4  # samples, bytes per item
    # collectives after pw1 (consumer dw: depthwise, 8 groups), dw (consumer pw2:
    # dense), pw2 (consumer g2: 2 groups, aligned only when q divides 2), g2 (fc: dense)
    got = layer_collectives(ctx, s, q, b)
    pw1 = 2 * ring_ag(q, d * b * 128 / q)
    dw = ring_ag(q, d * b * 128 / q) + ring_ar(q, d * b * 128)
    pw2 = (2 * ring_ag(q, d * b * 64 / q)) if 2 % q == 0 else ring_ag(q, d * b * 64 / q) + ring_ar(q, d * b * 64)
    g2 = ring_ag(q, d * b * 64 / q) + ring_ar(q, d * b * 64)
    assert got == pytest.approx([pw1, dw, pw2, g2], rel=1e-12)
    assert horizontal_collectives(ctx, s, q, b) == pytest.approx(pw1 + dw + pw2 + g2, rel=1e-12)


def test_channel_split_depthwise_layer_has_no_output_reduction():
    ctx = context(mobile_block())
    s = ctx.split("channel")  # dw, pw2, g2, fc (pw1 reads the data)
    q, b, d = 4, 8, 4
    got = layer_collectives(ctx, s, q, b)
    dw = 2 * ring_ag(q, d * b * 128 / q)  # its outputs are complete per channel slice
    pw2 = ring_ag(q, d * b * 64 / q) + ring_ar(q, d * b * 64)
    g2 = ring_ag(q, d * b * 64 / q) + ring_ar(q, d * b * 64)  # 2 groups on 4 GPUs: sums
    assert got == pytest.approx([dw, pw2, g2], rel=1e-12)


def test_dense_models_keep_paradl_collectives():
    m = model([3, 4, 4], [{"name": "a", "type": "conv", "filters": 8, "kernel": 1},
                          {"name": "b", "type": "conv", "filters": 8, "kernel": 1}])  # fmt: skip
    ctx = context(m)
    q, b = 4, 2
    expected = ring_ag(q, 4 * b * 128 / q) + ring_ar(q, 4 * b * 128)
    assert horizontal_collectives(ctx, ctx.split("filter"), q, b) == pytest.approx(expected, rel=1e-12)
    assert math.isclose(np.sum(layer_collectives(ctx, ctx.split("filter"), 1, b)), 0.0)


# -- every type end to end: PyTorch build and every strategy ------------------------------

EVERY_TYPE = [
    {"name": "c", "type": "conv", "filters": 8, "kernel": 3, "padding": 1},
    {"name": "gn", "type": "groupnorm", "groups": 4},
    {"name": "lrn", "type": "lrn", "size": 5},
    {"name": "hs", "type": "hardswish"},
    {"name": "dw", "type": "conv", "filters": 8, "kernel": 3, "padding": 1, "groups": 8},
    {"name": "sh", "type": "channelshuffle", "groups": 2},
    {"name": "se", "type": "adaptiveavgpool", "size": 1},
    {"name": "hsig", "type": "hardsigmoid"},
    {"name": "mul", "type": "mul", "inputs": ["sh", "hsig"]},
    {"name": "mp", "type": "adaptivemaxpool", "size": 4},
    {"name": "up", "type": "convtranspose", "filters": 4, "kernel": 2, "stride": 2},
    {"name": "us", "type": "upsample", "scale": 2, "mode": "linear"},
    {"name": "us2", "type": "upsample", "size": 16, "inputs": ["mp"]},
    {"name": "cat", "type": "concat", "inputs": ["us", "us2"]},
    {"name": "perm", "type": "permute", "perm": [1, 2, 0]},
    {"name": "ln", "type": "layernorm"},
    {"name": "rs", "type": "reshape", "shape": [-1, 12]},
    {"name": "tr", "type": "permute", "perm": [1, 0]},
    {"name": "mm", "type": "matmul", "inputs": ["rs", "tr"]},
    {"name": "odd", "type": "unsupported", "op": "aten::roll", "shape": [256, 256]},
    {"name": "flat", "type": "flatten"},
    {"name": "fc", "type": "fc", "outputs": 10},
    {"name": "sm", "type": "softmax"},
]


def test_every_type_builds_in_pytorch_with_oracle_shapes_and_parameters():
    torch = pytest.importorskip("torch")
    from oracle.profiling.torchnet import build_network, check_shapes, count_parameters

    m = model([3, 8, 8], EVERY_TYPE)
    assert {layer.type for layer in m.layers} >= set(LAYER_TYPES) - {
        "maxpool", "avgpool", "globalavgpool", "batchnorm", "add", "dropout", "relu", "relu6",
        "leakyrelu", "elu", "gelu", "silu", "sigmoid", "tanh",
        # the transformer layers: tests/test_transformer_layers.py
        "attention", "scale", "posembedding", "classtoken", "slice"}  # fmt: skip
    assert check_shapes(m, build_network(m, device="meta"), batch=2) == []
    net = build_network(m, device="cpu")
    assert count_parameters(net) == m.parameters
    out = net(torch.randn(2, 3, 8, 8))
    assert tuple(out.shape) == (2, 10)


def test_every_type_has_a_cost_under_every_strategy():
    from oracle.compute.binding import bind_profile
    from oracle.compute.strategies import names
    from oracle.compute.sweep import sweep
    from oracle.profiling.estimate import estimate

    m = model([3, 8, 8], EVERY_TYPE)
    system = parse_system({**SYSTEM, "gpu": {"model": "G", "memory_GB": 16, "peak_TFLOPS": 15,
                                             "memory_bandwidth_GB_per_s": 900}}, "s.yaml")  # fmt: skip
    times = bind_profile(m, estimate(m, system, date="2026-01-01"))
    points = sweep(m, system, times, [1, 2, 4], list(names()), batch=8, options=Options())
    assert {pt.strategy for pt in points} == set(names())
    for pt in points:
        assert math.isfinite(pt.total_s) and pt.total_s > 0 or pt.limits, pt


# -- the format's documentation -----------------------------------------------------------


def test_docs_example_loads_and_every_type_is_documented():
    import re
    from pathlib import Path

    import yaml

    text = (Path(__file__).resolve().parent.parent / "docs" / "model-format.md").read_text()
    example = re.search(r"```yaml\n(.*?)```", text, flags=re.S).group(1)
    doc = yaml.safe_load(example)
    m = parse_model(doc, "docs/model-format.md")
    assert m.info[-1].output_shape == (10,)
    assert m.layers[3].groups == 16 and m.info[7].output_shape == (16, 32, 32)
    for t in LAYER_TYPES:
        assert f"`{t}`" in text, t
    keys = ("filters kernel stride padding dilation groups bias output_padding outputs ceil_mode"
            " size scale mode affine dims eps axis shape perm op rate slope inputs comment"
            " heads window shift position_bias position_mlp cosine fused tokens start stop")
    for key in keys.split():
        assert f"`{key}`" in text, key


@pytest.mark.parametrize("name", ["mobilenet_v2", "unet3d"])
def test_per_layer_costs_agree_with_strategies_on_grouped_and_transposed_layers(name):
    """The per-layer search's uniform filter/channel assignment costs what the strategy
    does, depthwise gathers and transposed convolutions included (one formula)."""
    from oracle.compute.binding import bind_profile
    from oracle.compute.layerwise.layerwise import Dist, evaluate
    from oracle.compute.sweep import sweep
    from oracle.load import load_model, load_system
    from oracle.profiling.estimate import estimate

    m, s = load_model(name), load_system("abci")
    times = bind_profile(m, estimate(m, s, batch=2, date="2026-01-01"))
    ctx = Context(m, s, times, Options(memory_model="paradl"))
    p, B = 4, 8
    for pt in sweep(m, s, times, [p], ["filter", "channel", "data+filter"], batch=B, options=ctx.options):
        kind = "filter" if pt.strategy != "channel" else "channel"
        got = evaluate(ctx, p, B, [Dist(kind, pt.p1, pt.p2)] * ctx.G).point
        assert got.breakdown.layer_collectives_s == pytest.approx(pt.breakdown.layer_collectives_s, rel=1e-9)
        assert got.total_s == pytest.approx(pt.total_s, rel=1e-9), pt.strategy
