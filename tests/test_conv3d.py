"""3-D convolutions in the compute model: capped at KernelConstants.conv3d_tensor_efficiency
and conv3d_simt_efficiency of the peak (benchmarks/conv3d_accuracy.py), 2-D ones untouched,
and transposed convolutions run as GEMMs (a forward and two backward kernels)."""

from __future__ import annotations

import pytest

from oracle.compute import kernels as K
from oracle.compute import kernels_array as KA
from oracle.gpus import GpuSpec
from oracle.load.model import parse_model

# one conv 32 -> 32 channels, 3x3x3 on 16^3 (3-D) or 3x3 on 64x64 (2-D), at b = 8: per sample
# y = 32·4096 = 131,072 outputs, FLOPs = 2·27·32·131,072 (3-D) or 2·9·32·131,072 (2-D);
# tiles n = 8·131072/16384 = 64 on 64 SMs: w = 1, waves factor 1.5
CONV3D = {"name": "C3", "input": [32, 16, 16, 16], "dataset": {"name": "d", "samples": 10},
          "layers": [{"name": "c", "type": "conv", "filters": 32, "kernel": 3, "padding": 1, "bias": False},
                     {"name": "up", "type": "convtranspose", "filters": 16, "kernel": 2, "stride": 2, "bias": False}]}
CONV2D = {"name": "C2", "input": [32, 64, 64], "dataset": {"name": "d", "samples": 10},
          "layers": [{"name": "c", "type": "conv", "filters": 32, "kernel": 3, "padding": 1, "bias": False}]}  # fmt: skip
GPU = GpuSpec("G", (("fp32", 20e12), ("tf32", 160e12), ("fp16", 320e12)), 2e12, 64, architecture="ampere")


@pytest.mark.parametrize(("precision", "share"), [
    ("fp16", 0.22),   # tensor cores: min(tensor_efficiency 0.6, cap 0.22)
    ("tf32", 0.22),   # min(tf32_efficiency 0.25, cap 0.22)
    ("fp32", 0.45),   # CUDA cores: min(simt_efficiency 0.95, cap 0.45)
])  # fmt: skip
def test_a_3d_convolution_reaches_at_most_its_cap(precision, share):
    model = parse_model(CONV3D, "c3.yaml")
    peak = dict(GPU.peak_flops)[precision]
    fw, bw = K.layer_time(model.layers[0], model.info[0], GPU, precision, 8)
    assert fw == pytest.approx(2 * 27 * 32 * 131_072 * 8 * 1.5 / (share * peak), rel=1e-12)
    assert bw == pytest.approx(2 * fw, rel=1e-12)
    fw_a, bw_a = KA.per_sample_array(KA.ModelArrays.of(model), GPU, precision, 8)
    assert (fw_a[0] * 8, bw_a[0] * 8) == pytest.approx((fw, bw), rel=1e-12)


@pytest.mark.parametrize(("precision", "share"), [("fp16", 0.6), ("tf32", 0.25), ("fp32", 0.95)])
def test_a_2d_convolution_keeps_its_efficiency(precision, share):
    """At b = 64 (512 tiles on 64 SMs: waves factor 8.5/8, above the launch floor)."""
    model = parse_model(CONV2D, "c2.yaml")
    fw, _ = K.layer_time(model.layers[0], model.info[0], GPU, precision, 64)
    flops = 2 * 9 * 32 * 131_072 * 64
    assert fw == pytest.approx(flops * 8.5 / 8 / (share * dict(GPU.peak_flops)[precision]), rel=1e-12)


def test_without_the_caps_a_3d_convolution_runs_as_a_2d_one():
    from dataclasses import replace

    model = parse_model(CONV3D, "c3.yaml")
    k = replace(K.DEFAULT_CONSTANTS, conv3d_tensor_efficiency=None, conv3d_simt_efficiency=None)
    fw, _ = K.layer_time(model.layers[0], model.info[0], GPU, "fp16", 8, k)
    assert fw == pytest.approx(2 * 27 * 32 * 131_072 * 8 * 1.5 / (0.6 * 320e12), rel=1e-12)


def test_a_transposed_convolution_is_a_gemm_with_two_backward_kernels():
    """cuDNN runs it as a convolution's data gradient: on the precision's units, its backward a
    convolution and a weight gradient, each like the forward."""
    model = parse_model(CONV3D, "c3.yaml")
    layer, info = model.layers[1], model.info[1]
    work = K.forward_work(layer, info, 8, 2)
    assert work.matmul and K.conv3d(layer, info)
    fw, bw = K.layer_time(layer, info, GPU, "fp16", 8)
    assert bw == pytest.approx(2 * fw, rel=1e-12)
    # compute-bound on tensor cores or bound by its bytes at 0.9 of the bandwidth, never by the CUDA cores
    assert fw <= max(work.flops * 8 / (0.22 * 320e12), work.bytes / (0.9 * 2e12)) + 1e-12
    fw_a, bw_a = KA.per_sample_array(KA.ModelArrays.of(model), GPU, "fp16", 8)
    assert (fw_a[1] * 8, bw_a[1] * 8) == pytest.approx((fw, bw), rel=1e-12)


def test_an_estimate_of_a_3d_network_says_its_caps(run, tmp_path):
    for model, says in (("unet3d", True), ("resnet50", False)):
        out = tmp_path / f"{model}.yaml"
        r = run("profile", model, "--estimate", "--system", "dgx1-v100", "--batch", "2", "--precision", "fp16",
                "-o", out)  # fmt: skip
        assert r.code == 0, r.err
        text = " ".join(out.read_text().split())
        assert ("3-D conv at most 0.45 / 0.22 of peak" in text) is says, model


def test_group_norm_reads_its_input_twice():
    """Statistics per group, then normalisation (PyTorch's group_norm_kernel.cu), as batch norm:
    over 32 channels of 16^3 at b = 64 in fp16, 2·64·(2 + 1)·131,072 B + 2·64 parameters."""
    model = parse_model({"name": "G", "input": [32, 16, 16, 16], "dataset": {"name": "d", "samples": 10},
                         "layers": [{"name": "g", "type": "groupnorm", "groups": 32}]}, "g.yaml")  # fmt: skip
    work = K.forward_work(model.layers[0], model.info[0], 64, 2)
    assert work.bytes == 2 * (64 * 3 * 131_072 + 64)
    fw, _ = K.layer_time(model.layers[0], model.info[0], GPU, "fp16", 64)
    assert fw == pytest.approx(work.bytes / (0.9 * 2e12), rel=1e-12)
    fw_a, _ = KA.per_sample_array(KA.ModelArrays.of(model), GPU, "fp16", 64)
    assert fw_a[0] * 64 == pytest.approx(fw, rel=1e-12)
