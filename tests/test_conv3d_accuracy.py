"""benchmarks/conv3d_accuracy.py: the 3-D caps fitted on the V100 rows of DeepLearningExamples'
TensorFlow 3-D U-Net, scored on its A100 rows (never fitted).  Floors: what the benchmark
printed when the caps were fitted (2026-11-27, group norm reading its input twice: V100 AMP
0.896, FP32 0.908; A100 AMP 0.885, TF32 0.923; uncapped 0.420 and 0.966), less 0.01."""

from __future__ import annotations

import pytest
from conftest import benchmark

from oracle.compute import kernels as K

FLOORS = {"fitted: V100 AMP": 0.88, "fitted: V100 FP32": 0.89, "held out: A100 AMP": 0.87,
          "held out: A100 TF32": 0.91}  # fmt: skip


@pytest.fixture(scope="module")
def bench():
    return benchmark("conv3d_accuracy")


def test_the_rows_and_their_parts(bench):
    data = bench.rows()
    assert len(data) == 20 and {r["model"] for r in data} == {"UNet_3D_Medical"}
    parts = {bench.group(r) for r in data}
    assert parts == set(FLOORS) | {"A100 TF32, batch 8 (anomalous table)"}
    assert all(r["system"].startswith("DGX-1") for r in data if bench.group(r).startswith("fitted"))


def test_the_fit_gives_the_shipped_caps(bench):
    k = bench.fit(bench.rows())
    assert (k.conv3d_tensor_efficiency, k.conv3d_simt_efficiency) == (
        K.DEFAULT_CONSTANTS.conv3d_tensor_efficiency, K.DEFAULT_CONSTANTS.conv3d_simt_efficiency)


def test_accuracy_floors_and_the_held_out_amp_rows_gain(bench):
    from dataclasses import replace

    data = bench.rows()
    now = bench.evaluate(data)
    for part, floor in FLOORS.items():
        assert now[part] >= floor, part
    uncapped = bench.evaluate(data, replace(K.DEFAULT_CONSTANTS, conv3d_tensor_efficiency=None,
                                            conv3d_simt_efficiency=None))  # fmt: skip
    assert now["held out: A100 AMP"] > uncapped["held out: A100 AMP"] + 0.4
