"""cuDNN's FFT convolutions before tensor cores (oracle/compute/fft.py): hand-computed work,
where it applies, and a check against measured per-layer cuDNN times."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from oracle.compute import kernels as K
from oracle.compute import kernels_array as KA
from oracle.compute.fft import expected_waste, fft_time, fft_work, tile_waste
from oracle.gpus import GpuSpec, lookup
from oracle.load.model import load_model, parse_model

MODELS = Path(__file__).resolve().parents[1] / "models"
DATASET = {"name": "d", "samples": 1000}
TITAN_X = lookup("TITAN-X-MAXWELL")  # 6.6 TFLOPS, 336.5 GB/s, 24 SMs


def _conv(shape, **conv):
    layer = {"name": "c", "type": "conv", "bias": False, **conv}
    m = parse_model({"name": "C", "input": list(shape), "dataset": DATASET, "layers": [layer]}, "c.yaml")
    return m.layers[0], m.info[0]


def test_alexnet_conv2_by_hand():
    # 64 -> 192 channels, 5x5, padding 2 on 27x27: padded 31 -> one 32x32 tile (28 outputs a side),
    # 32 x 17 = 544 bins
    layer, info = _conv((64, 27, 27), filters=192, kernel=5, padding=2)
    w = fft_work(layer, info, 5, 32)
    assert (w.tiles, w.columns) == (1, 192)
    assert w.pointwise_flops == 8 * 64 * 192 * 544
    assert w.transformed_bytes == 8 * 544 * (64 + 192)
    assert w.filter_bytes == 8 * 544 * 64 * 192
    # batch 256: 256 GEMM rows, two 128-row tiles and on average half of one more (1.25);
    # 192 columns take two (256/192)
    rate, byte_rate = 3e12, 3e11
    io = 4 * 256 * (64 + 192) * 729
    space = 256 * w.transformed_bytes + w.filter_bytes
    want = 256 * w.pointwise_flops * 1.25 * 256 / 192 / rate + (2 * space + io) / byte_rate
    assert fft_time(w, 256, io, rate, byte_rate, 2**30, 128) == pytest.approx(want, rel=1e-12)
    assert fft_time(w, 256, io, rate, byte_rate, space - 1, 128) == math.inf  # over the workspace


def test_tile_waste():
    assert tile_waste(128, 128) == 1.0
    assert tile_waste(16, 128) == 8.0
    assert tile_waste(192, 128) == pytest.approx(256 / 192)
    assert expected_waste(16 / 128) == 8.0 and expected_waste(1.0) == 1.5 and expected_waste(4.0) == 4.5 / 4


@pytest.mark.parametrize("conv", [
    {"filters": 64, "kernel": 3, "padding": 1},  # Winograd's
    {"filters": 64, "kernel": 5, "stride": 2},  # strided
    {"filters": 64, "kernel": 5, "dilation": 2},
    {"filters": 64, "kernel": 1},
])  # fmt: skip
def test_no_fft_for(conv):
    assert fft_work(*_conv((32, 28, 28), **conv), 5, 32) is None


def test_no_fft_for_3d_convolutions():
    assert fft_work(*_conv((4, 16, 16, 16), filters=8, kernel=5), 5, 32) is None


def test_wide_groups_transform_per_group():
    layer, info = _conv((96, 27, 27), filters=256, kernel=5, padding=2, groups=2)
    w = fft_work(layer, info, 5, 32)
    assert w.columns == 128 and w.pointwise_flops == 8 * 48 * 256 * 544
    assert w.filter_bytes == 8 * 544 * 48 * 256


@pytest.mark.parametrize("arch", ["kepler", "maxwell", "pascal"])
def test_a_large_kernel_runs_as_the_faster_of_fft_and_direct_before_volta(arch):
    gpu = GpuSpec("G", (("fp32", 10.6e12),), 732e9, 56, architecture=arch)
    layer, info = _conv((64, 27, 27), filters=192, kernel=5, padding=2)
    no_fft = K.KernelConstants(fft_min_kernel=0)
    direct = K.layer_time(layer, info, gpu, "fp32", 128, no_fft)[0]
    fw, bw = K.layer_time(layer, info, gpu, "fp32", 128)
    assert fw < direct / 2 and bw == 2 * fw  # the FFT, at 128 samples
    w = fft_work(layer, info, 5, 32)
    rate = K.DEFAULT_CONSTANTS.matmul_efficiency("fp32", arch) * 10.6e12
    io = 4 * 128 * (info.input_elements + info.output_elements)
    assert fw == pytest.approx(fft_time(w, 128, io, rate, 0.9 * 732e9, 2**30, 128), rel=1e-12)


def test_no_fft_on_tensor_core_gpus():
    gpu = lookup("V100-SXM2-16GB")
    layer, info = _conv((64, 27, 27), filters=192, kernel=5, padding=2)
    no_fft = K.KernelConstants(fft_min_kernel=0)
    assert K.layer_time(layer, info, gpu, "fp32", 128) == K.layer_time(layer, info, gpu, "fp32", 128, no_fft)


def test_a_small_batch_of_narrow_groups_keeps_the_direct_convolution():
    """BVLC AlexNet's conv2 at 16 samples: 16 GEMM rows of 128 waste the FFT's products."""
    m = load_model(MODELS / "bvlc_alexnet.yaml")
    i = m.index["conv2"]
    no_fft = K.KernelConstants(fft_min_kernel=0)
    assert K.layer_time(m.layers[i], m.info[i], TITAN_X, "fp32", 16) == \
        K.layer_time(m.layers[i], m.info[i], TITAN_X, "fp32", 16, no_fft)  # fmt: skip
    assert K.layer_time(m.layers[i], m.info[i], TITAN_X, "fp32", 128)[0] < \
        K.layer_time(m.layers[i], m.info[i], TITAN_X, "fp32", 128, no_fft)[0]  # fmt: skip


@pytest.mark.parametrize("name", ["alexnet", "bvlc_alexnet", "googlenet", "inception_v3"])
@pytest.mark.parametrize("batch", [16.0, 128.0, 512.0])
def test_vectorised_path_equals_the_scalar_one(name, batch):
    m = load_model(MODELS / f"{name}.yaml")
    for gpu in (TITAN_X, lookup("K80"), lookup("P100-SXM2-16GB")):
        fw, bw = KA.per_sample_array(KA.ModelArrays.of(m), gpu, "fp32", batch)
        scalar = K.per_sample_times(m, gpu, "fp32", batch)
        assert list(fw) == pytest.approx([f for f, _ in scalar], rel=1e-12)
        assert list(bw) == pytest.approx([b for _, b in scalar], rel=1e-12)


# soumith/convnet-benchmarks@1ca1fe8779584b77614d7cb24b065d005cf8a66b torch7/layerwise_benchmarks/
# output.log ("Running on device: GeForce GTX TITAN X", Maxwell): cudnn.SpatialConvolution
# updateOutput() ms at batch 128, stride 1, no padding.  Not fitted: the FFT model's constants
# are cuDNN's tile, the 128x128 GEMM tile and the Maxwell convolution efficiency.
LAYERWISE = [
    # (input C, H, filters, kernel, measured forward ms)
    (3, 128, 96, 11, 32.65),  # L1: 3 channels, the transforms exceed the workspace: no FFT
    (64, 64, 128, 9, 13.75),  # L2
    (128, 32, 128, 9, 5.56),  # L3
    (128, 16, 128, 7, 1.42),  # L4
]


@pytest.mark.parametrize("c, h, f, k, measured_ms", LAYERWISE)
def test_measured_cudnn_layers_within_a_factor_of_1_6(c, h, f, k, measured_ms):
    layer, info = _conv((c, h, h), filters=f, kernel=k)
    fw = K.layer_time(layer, info, TITAN_X, "fp32", 128)[0]
    assert 1 / 1.6 <= 1e3 * fw / measured_ms <= 1.6, 1e3 * fw


PRE_VOLTA = [lookup("K80"), TITAN_X, lookup("P100-SXM2-16GB")]
large_kernels = st.builds(
    lambda c, f, k, hw, g: _conv((c * g, hw, hw), filters=f * g, kernel=k, padding=k // 2, groups=g),
    st.integers(1, 256), st.integers(1, 384), st.sampled_from([5, 7, 9, 11]), st.integers(5, 80), st.sampled_from([1, 2]),
)  # fmt: skip


@settings(max_examples=80, deadline=None)
@given(large_kernels, st.sampled_from(PRE_VOLTA), st.floats(1, 1024), st.floats(1.0, 8.0))
def test_more_batch_never_slower_per_sample(conv, gpu, b, grow):
    """The FFT's tiles keep the compute model's promise: a larger batch is never slower per
    sample -- except where the larger batch's transforms no longer fit the workspace and it
    runs direct, as the frameworks' algorithm choice does (not drawn here)."""
    layer, info = conv
    w = fft_work(layer, info, 5, 32)
    space = K.DEFAULT_CONSTANTS.fft_workspace_bytes
    assume(w is None or (w.transformed_bytes * b * grow + w.filter_bytes <= space)
           == (w.transformed_bytes * b + w.filter_bytes <= space))  # fmt: skip
    f1, b1 = K.layer_time(layer, info, gpu, "fp32", b)
    f2, b2 = K.layer_time(layer, info, gpu, "fp32", b * grow)
    assert f2 / (b * grow) <= f1 / b * (1 + 1e-12) and b2 / (b * grow) <= b1 / b * (1 + 1e-12)


@settings(max_examples=80, deadline=None)
@given(large_kernels, st.sampled_from(PRE_VOLTA), st.floats(1, 1024))
def test_the_fft_never_makes_a_convolution_slower(conv, gpu, b):
    layer, info = conv
    no_fft = K.KernelConstants(fft_min_kernel=0)
    assert K.layer_time(layer, info, gpu, "fp32", b)[0] <= K.layer_time(layer, info, gpu, "fp32", b, no_fft)[0]
