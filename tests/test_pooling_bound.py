"""Windowed pooling bound by its instructions (compute/kernels.py pool_window_efficiency and
gpus.GpuSpec.issue_rate; stacks/pytorch.yaml): hand-computed times, the issue rate of each architecture,
properties, and the check against pooling layers timed one by one on an H200
(validation/gpu-layer-kernels.csv, benchmarks/layer_kernels.py)."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oracle.compute import kernels as K
from oracle.compute import kernels_array as KA
from oracle.gpus import lookup
from oracle.load.model import parse_model

ROOT = Path(__file__).resolve().parents[1]
H100 = lookup("H100-SXM5-80GB")
KC = K.KernelConstants(memory_efficiency=0.9, maxpool_memory_efficiency=0.22, pool_window_efficiency=0.017)


def _pool(kind="maxpool", kernel=3, stride=1, channels=16, side=8):
    pad = (kernel - 1) // 2 if stride == 1 else 0
    layer = {"name": "p", "type": kind, "kernel": kernel, "stride": stride, "padding": pad}
    m = parse_model({"name": "P", "input": [channels, side, side], "dataset": {"name": "d", "samples": 1000},
                     "layers": [layer]}, "p.yaml")  # fmt: skip
    return m, m.layers[0], m.info[0]


@pytest.mark.parametrize(
    "gpu, want",
    [("H100-SXM5-80GB", 67e12 / 2),  # 128 FP32 lanes per SM (Hopper): 4 x 32 issued per clock = half the FP32 FLOPs
     ("V100-SXM2-16GB", 15.7e12),  # 64 lanes: the issue rate equals the FP32 FLOP rate
     ("A100-SXM4-80GB", 19.5e12),  # Ampere GA100: 19.5e12 / 108 SMs = 181 GFLOP/s per SM, 64 lanes
     ("RTX 3090", 35.6e12 / 2),  # Ampere GA102: 434 GFLOP/s per SM, 128 lanes
     ("P100-SXM2-16GB", 10.6e12),  # Pascal GP100: 189 GFLOP/s per SM, 64 lanes
     ("TITAN Xp", 12.14976e12 / 2),  # Pascal GP102: 405 GFLOP/s per SM, 128 lanes
     ("K80", 4.37e12 * 256 / 384)],  # Kepler: 192 lanes, four schedulers dispatching two each
)  # fmt: skip
def test_issue_rate_by_hand(gpu, want):
    assert lookup(gpu).issue_rate() == pytest.approx(want, rel=1e-12)


def test_a_stride_one_maxpool_is_bound_by_its_instructions_by_hand():
    """3x3 stride-1 maxpool of 64x16x16 (padding 1) at b = 256 on an H100: 9 x 16,384 window
    elements + 16,384 inputs per sample, 41,943,040 at 0.017 x 33.5e12 per s = 73.65 us, above
    its fp16 bytes 2 x 256 x 32,768 = 16,777,216 at 0.22 x 3,350 GB/s = 22.76 us; the backward
    twice both (so twice the forward); fp32 (45.53 us of bytes) takes the same time."""
    m, layer, info = _pool(channels=64, side=16)
    fw, bw = K.layer_time(layer, info, H100, "fp16", 256, KC)
    assert fw == pytest.approx(41_943_040 / (0.017 * 33.5e12), rel=1e-12) and bw == pytest.approx(2 * fw, rel=1e-12)
    assert K.layer_time(layer, info, H100, "fp32", 256, KC) == (fw, bw)
    # without the bound: the bandwidth share alone
    plain = K.layer_time(layer, info, H100, "fp16", 256, replace(KC, pool_window_efficiency=None))[0]
    assert plain == pytest.approx(16_777_216 / (0.22 * 3350e9), rel=1e-12)
    fw_v, bw_v = KA.per_sample_array(KA.ModelArrays.of(m, KC), H100, "fp16", 256, KC)
    assert (fw_v[0] * 256, bw_v[0] * 256) == pytest.approx((fw, bw), rel=1e-12)


def test_only_windowed_pooling_is_bound():
    """The global average pool is a reduction (no window loop): the bound leaves it alone, as it
    leaves every other element-wise layer."""
    layers = [{"name": "g", "type": "globalavgpool"}, {"name": "r", "type": "relu", "inputs": ["input"]}]
    m = parse_model({"name": "G", "input": [16, 8, 8], "dataset": {"name": "d", "samples": 1000}, "layers": layers},
                    "g.yaml")  # fmt: skip
    for layer, info in zip(m.layers, m.info):
        assert K.layer_time(layer, info, H100, "fp16", 256, KC) == K.layer_time(
            layer, info, H100, "fp16", 256, replace(KC, pool_window_efficiency=None))


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(["maxpool", "avgpool"]), kernel=st.sampled_from([2, 3]), stride=st.sampled_from([1, 2]),
       channels=st.integers(1, 512), side=st.integers(4, 64), batch=st.integers(1, 512),
       gpu=st.sampled_from(["H100-SXM5-80GB", "V100-SXM2-16GB", "A100-SXM4-80GB", "RTX 3090", "K80"]))  # fmt: skip
def test_the_bound_only_slows_and_is_the_same_in_any_precision(kind, kernel, stride, channels, side, batch, gpu):
    """With the bound a pooling layer is never faster than without it nor than its work at the
    bound's rate; where the bound sets the fp32 time, fp16 takes exactly as long (the
    instructions per element do not depend on the element's size: measured so on an H200)."""
    _, layer, info = _pool(kind, kernel, stride, channels, side)
    g = lookup(gpu)
    work = batch * (info.flops + info.input_elements)
    floor = work / (KC.pool_window_efficiency * g.issue_rate())
    for prec in ("fp16", "fp32"):
        fw, bw = K.layer_time(layer, info, g, prec, batch, KC)
        plain = K.layer_time(layer, info, g, prec, batch, replace(KC, pool_window_efficiency=None))
        assert fw >= plain[0] and bw >= plain[1] and fw >= floor * (1 - 1e-12) and bw >= 2 * floor * (1 - 1e-12)
    fp32 = K.layer_time(layer, info, g, "fp32", batch, KC)
    plain32 = K.layer_time(layer, info, g, "fp32", batch, replace(KC, pool_window_efficiency=None))
    if fp32[0] > plain32[0]:
        assert K.layer_time(layer, info, g, "fp16", batch, KC)[0] == fp32[0]


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import layer_kernels

    return layer_kernels


def test_pooling_layers_measured_on_an_h200_against_the_shipped_stack(bench):
    """Every pooling layer timed one by one on an H200 (eager PyTorch 2.11, AMP and fp32,
    channels-last, batch 16-256), forward + backward against the compute model under the
    pytorch stack.  Fitted (compute.pool_window_efficiency) on the max pooling of ResNet-50,
    VGG-16 and AlexNet; held out: GoogLeNet's and Inception-v3's max pooling (stride 1 and 2)
    and Inception-v3's stride-1 average pooling, measured at 0.23-0.55 of their time before the
    bound (mean |log| 0.72-1.38) and at 0.90-1.23 with it (0.13-0.23).  Tolerances: every held-out
    group within 0.8-1.3 of its measured sum and a mean |log| below 0.25."""
    shipped = bench.stack_constants()
    assert shipped.pool_window_efficiency == 0.017
    groups = bench.pooling_groups(bench.load_rows())
    held = {name: sel for name, sel in groups.items() if name.startswith("held out")}
    assert sorted(held) == ["held out: avgpool, inception_v3", "held out: maxpool, googlenet",
                            "held out: maxpool, inception_v3"]  # fmt: skip
    for key, sel in held.items():
        mean_log, ratio = bench.score(bench.modelled_ms(sel, shipped))
        before = bench.score(bench.modelled_ms(sel, bench.stack_constants(pool_window_efficiency=None)))
        assert 0.8 <= ratio <= 1.3 and mean_log < 0.25, (key, mean_log, ratio)
        assert before[1] < 0.6 and before[0] > 0.7, (key, before)


def test_which_stacks_bound_pooling():
    """pytorch (fitted) and tensorflow (carried over by kernel structure) bound pooling at 0.017;
    mxnet, the ParaDL-mode stacks and a run without a stack do not (docs/cost-model.md)."""
    from oracle.load import load_stack

    got = {name: load_stack(name).kernel_constants().get("pool_window_efficiency")
           for name in ("pytorch", "tensorflow", "mxnet", "chainermnx", "paradl")}  # fmt: skip
    assert got == {"pytorch": 0.017, "tensorflow": 0.017, "mxnet": None, "chainermnx": None, "paradl": None}
    assert K.DEFAULT_CONSTANTS.pool_window_efficiency is None
