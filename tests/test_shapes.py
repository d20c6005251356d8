"""Shape, parameter and FLOP inference against hand-computed values."""

from __future__ import annotations

import pytest

from oracle.errors import OracleError
from oracle.load.model import parse_model


def model(input_shape, layers, name="m"):
    return parse_model(
        {"name": name, "input": list(input_shape), "dataset": {"samples": 10}, "layers": layers},
        "m.yaml",
    )


def test_conv2d_stride_padding_bias():
    m = model([3, 224, 224], [{"name": "c", "type": "conv", "filters": 64, "kernel": 7, "stride": 2, "padding": 3}])
    info = m.info[0]
    # floor((224 + 2*3 - 7) / 2) + 1 = 112
    assert info.output_shape == (64, 112, 112)
    assert info.weights == 64 * 3 * 7 * 7 and info.biases == 64
    # 2 FLOPs per multiply-add + 1 per output for the bias
    assert info.flops == 2 * 3 * 49 * 64 * 112 * 112 + 64 * 112 * 112


def test_conv1d():
    m = model([2, 100], [{"name": "c", "type": "conv", "filters": 4, "kernel": 5, "stride": 3, "bias": False}])
    # floor((100 - 5) / 3) + 1 = 32
    assert m.info[0].output_shape == (4, 32)
    assert m.info[0].parameters == 4 * 2 * 5
    assert m.info[0].flops == 2 * 2 * 5 * 4 * 32


def test_conv3d_with_per_dim_kernel_and_stride():
    m = model(
        [4, 32, 16, 8],
        [{"name": "c", "type": "conv", "filters": 8, "kernel": [3, 3, 1], "stride": [2, 1, 1], "padding": [1, 0, 0]}],
    )
    # d0: floor((32+2-3)/2)+1 = 16; d1: 16-3+1 = 14; d2: 8
    assert m.info[0].output_shape == (8, 16, 14, 8)
    assert m.info[0].weights == 8 * 4 * 9
    assert m.info[0].flops == 2 * 4 * 9 * 8 * (16 * 14 * 8) + 8 * 16 * 14 * 8


def test_grouped_and_depthwise_conv():
    m = model(
        [32, 8, 8],
        [
            {"name": "g", "type": "conv", "filters": 64, "kernel": 3, "padding": 1, "groups": 4, "bias": False},
            {"name": "dw", "type": "conv", "filters": 64, "kernel": 3, "padding": 1, "groups": 64, "bias": False},
        ],
    )
    assert m.info[0].weights == 64 * (32 // 4) * 9
    assert m.info[0].flops == 2 * 8 * 9 * 64 * 64
    assert m.info[1].weights == 64 * 1 * 9
    assert m.info[1].output_shape == (64, 8, 8)


def test_dilated_conv():
    m = model([1, 20, 20], [{"name": "c", "type": "conv", "filters": 1, "kernel": 3, "dilation": 2, "bias": False}])
    # effective kernel 2*(3-1)+1 = 5 -> 16
    assert m.info[0].output_shape == (1, 16, 16)


def test_pooling_default_stride_padding_and_ceil_mode():
    m = model(
        [8, 7, 7],
        [
            {"name": "p1", "type": "maxpool", "kernel": 2},
            {"name": "p2", "type": "avgpool", "kernel": 2, "ceil_mode": True},
        ],
    )
    assert m.info[0].output_shape == (8, 3, 3)  # stride defaults to the kernel
    assert m.info[1].output_shape == (8, 2, 2)  # ceil((3-2)/2)+1 = 2
    assert m.info[0].flops == 4 * 8 * 9


def test_concat_add_flatten_fc_globalavgpool():
    m = model(
        [3, 8, 8],
        [
            {"name": "a", "type": "conv", "filters": 4, "kernel": 1},
            {"name": "b", "type": "conv", "filters": 6, "kernel": 3, "padding": 1, "inputs": ["input"]},
            {"name": "cat", "type": "concat", "inputs": ["a", "b"]},
            {"name": "c", "type": "conv", "filters": 10, "kernel": 1},
            {"name": "d", "type": "conv", "filters": 10, "kernel": 1, "inputs": ["cat"]},
            {"name": "sum", "type": "add", "inputs": ["c", "d"]},
            {"name": "bn", "type": "batchnorm"},
            {"name": "gap", "type": "globalavgpool"},
            {"name": "flat", "type": "flatten"},
            {"name": "fc", "type": "fc", "outputs": 5},
            {"name": "sm", "type": "softmax"},
        ],
    )
    shapes = {layer.name: info.output_shape for layer, info in zip(m.layers, m.info)}
    assert shapes["cat"] == (10, 8, 8)
    assert shapes["sum"] == (10, 8, 8)
    assert shapes["gap"] == (10, 1, 1)
    assert shapes["flat"] == (10,)
    assert shapes["fc"] == (5,)
    info = dict(zip([layer.name for layer in m.layers], m.info))
    assert info["cat"].input_elements == 4 * 64 + 6 * 64  # |x| counts every input
    assert info["bn"].parameters == 2 * 10  # scale and shift
    assert info["fc"].parameters == 10 * 5 + 5
    assert info["sum"].flops == 10 * 64  # one add per output element


def test_fc_on_spatial_input_flattens_implicitly():
    m = model([2, 3, 3], [{"name": "fc", "type": "fc", "outputs": 4, "bias": False}])
    assert m.info[0].output_shape == (4,)
    assert m.info[0].parameters == 18 * 4


@pytest.mark.parametrize(
    "layers,needle",
    [
        ([{"name": "c", "type": "conv", "filters": 2, "kernel": 9}], "kernel 9 is larger than the padded input 8x8"),
        ([{"name": "c", "type": "conv", "filters": 2, "kernel": [3, 3, 3]}], "has 3 values"),
        ([{"name": "c", "type": "conv", "filters": 3, "kernel": 1, "groups": 2}], "does not divide"),
        (
            [{"name": "f", "type": "flatten"}, {"name": "c", "type": "conv", "filters": 2, "kernel": 1}],
            "needs an input with spatial dimensions",
        ),
        (
            [
                {"name": "a", "type": "conv", "filters": 2, "kernel": 1},
                {"name": "b", "type": "conv", "filters": 3, "kernel": 1},
                {"name": "s", "type": "add", "inputs": ["a", "b"]},
            ],
            "add inputs do not match: 2x8x8 from 'a' vs 3x8x8 from 'b'",
        ),
        (
            [
                {"name": "a", "type": "conv", "filters": 2, "kernel": 1},
                {"name": "b", "type": "maxpool", "kernel": 2},
                {"name": "s", "type": "concat", "inputs": ["a", "b"]},
            ],
            "concat inputs must agree",
        ),
    ],
)
def test_shapes_that_do_not_work_out_name_the_layer(layers, needle):
    with pytest.raises(OracleError) as err:
        model([4, 8, 8], layers)
    text = str(err.value)
    assert needle in text
    assert "m.yaml" in text and f"({layers[-1]['name']})" in text
