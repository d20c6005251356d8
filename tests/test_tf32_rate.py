"""TF32 is a math mode cuDNN and cuBLAS may use, not one they must: a conv or GEMM at
tf32 runs at the faster of the TF32 tensor-core path and the fp32 CUDA-core one
(compute/kernels.KernelConstants.matmul_rate).  On an A100 or H100 the tensor cores win;
on GA10x and Ada cards, whose TF32 peak is no higher than their fp32 one, the CUDA cores
do, so fp32 models under a stack that allows TF32 (tests/test_fp32_math.py) keep their
fp32 speed there."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oracle.compute import kernels as K
from oracle.compute import kernels_array as KA
from oracle.gpus import LIBRARY, lookup
from oracle.load import load_model
from oracle.vocabulary import FP32, TF32

k = K.DEFAULT_CONSTANTS
WITH_TF32 = [g for g in LIBRARY if g.peak(TF32) is not None]


def test_hand_computed_rates():
    a100, rtx3090 = lookup("A100-SXM4-80GB"), lookup("RTX-3090")
    # A100: tf32_efficiency 0.25 x 156 TFLOPS = 39 TFLOP/s, above the CUDA cores' 0.95 x 19.5 = 18.5
    assert k.matmul_rate(a100, TF32) == pytest.approx(0.25 * 156e12)
    assert k.matmul_rate(a100, FP32) == pytest.approx(0.95 * 19.5e12)
    # RTX 3090: TF32 and fp32 peaks both 35.6 TFLOPS (GA102 whitepaper); 0.25 x 35.6 = 8.9
    # on the tensor cores, 0.95 x 35.6 = 33.8 on the CUDA cores: the latter
    assert k.matmul_rate(rtx3090, TF32) == k.matmul_rate(rtx3090, FP32) == pytest.approx(0.95 * 35.6e12)


def test_tensor_cores_win_on_the_datacentre_parts():
    for name in ("A100-SXM4-40GB", "A100-SXM4-80GB", "H100-SXM5-80GB", "H100-PCIE-80GB", "H200-SXM-141GB"):
        gpu = lookup(name)
        assert k.matmul_rate(gpu, TF32) == pytest.approx(k.tf32_efficiency * gpu.peak(TF32)), name


@settings(max_examples=40, deadline=None)
@given(gpu=st.sampled_from(WITH_TF32), batch=st.sampled_from([1, 16, 256]))
def test_tf32_is_never_slower_than_fp32(gpu, batch):
    """Both move 4-byte elements; TF32 only adds a faster path, so no layer takes longer."""
    assert k.matmul_rate(gpu, TF32) >= k.matmul_rate(gpu, FP32)
    assert k.matmul_rate(gpu, TF32, conv=False) >= k.matmul_rate(gpu, FP32, conv=False)
    m = load_model("resnet50")
    for (f32, b32), (f, b) in zip(K.per_sample_times(m, gpu, FP32, batch, k), K.per_sample_times(m, gpu, TF32, batch, k)):
        assert f <= f32 * (1 + 1e-12) and b <= b32 * (1 + 1e-12)


@pytest.mark.parametrize("name", ["RTX-3090", "L40S", "A100-SXM4-80GB"])
def test_vectorised_path_takes_the_same_rate(name):
    gpu, m = lookup(name), load_model("resnet50")
    fw, bw = KA.per_sample_array(KA.ModelArrays.of(m), gpu, TF32, 64, k)
    for i, (f, b) in enumerate(K.per_sample_times(m, gpu, TF32, 64, k)):
        assert fw[i] == pytest.approx(f, rel=1e-12, abs=0) and bw[i] == pytest.approx(b, rel=1e-12, abs=0)
