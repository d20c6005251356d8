"""The compute model of :mod:`oracle.compute.kernels`, vectorised over a model's layers:
the same formulas as :func:`oracle.compute.kernels.layer_time` on numpy arrays, for the
conversions a sweep makes at every point (oracle/compute/conversion.py).  Equal to the
per-layer path to rounding (tests/test_compute_model.py checks)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from oracle.compute.fft import fft_work
from oracle.compute.kernels import (
    CONV_TYPES,
    DEFAULT_CONSTANTS,
    MATMUL_TYPES,
    MEMORY_EFFICIENCY_FIELDS,
    TWO_PASS_TYPES,
    VIEW_TYPES,
    WINDOW_TYPES,
    KernelConstants,
    conv3d,
    depthwise,
    fused_layers,
    grouped_gemm,
    winograd,
)
from oracle.compute.layers.shapes_tokens import internal_traffic
from oracle.gpus import GpuSpec
from oracle.model import Model
from oracle.vocabulary import FP32, PRECISION_BYTES


@dataclass(frozen=True)
class ModelArrays:
    """Per-layer quantities of a model as numpy arrays, for :func:`per_sample_array`
    (the same formulas as :func:`layer_time`, vectorised over layers)."""

    flops: object  # forward FLOPs per sample
    io: object  # elements read and written per sample (x + y; batchnorm 2x + y)
    params: object
    out: object  # output elements per sample
    reduction: object  # K of the implicit GEMM (conv/fc), else 0
    matmul: object  # bool
    active: object  # bool: has a kernel (not a view, not fused)
    grouped: object = None  # bool: a grouped convolution of narrow groups (kernels.grouped_gemm)
    depthwise: object = None  # bool: a convolution with one input channel per group
    types: object = None  # str: the layer type (for MEMORY_EFFICIENCY_FIELDS)
    winograd: object = None  # bool: a dense 3x3 stride-1 convolution
    conv3d: object = None  # bool: a (transposed) convolution over three spatial dimensions
    fft: object = None  # float (pointwise FLOPs, transformed bytes, filter bytes, tiles, columns) x layers; NaN: none
    window: object = None  # float: a windowed pooling's input elements per sample (kernels.WINDOW_TYPES), NaN: other

    @classmethod
    def of(cls, model: Model, k: KernelConstants = DEFAULT_CONSTANTS) -> ModelArrays:
        import numpy as np

        fused = fused_layers(model) if k.fuse_activations else [False] * len(model.layers)
        rows = []
        for layer, info, f in zip(model.layers, model.info, fused):
            x, y = info.input_elements, info.output_elements
            mm = layer.type in MATMUL_TYPES
            io = (2 * x if layer.type in TWO_PASS_TYPES else x) + y + internal_traffic(layer, info)
            red = info.flops / (2.0 * y) if mm and y else 0.0
            grouped = grouped_gemm(layer, k)
            rows.append((info.flops, io, info.parameters, y, red, mm, layer.type not in VIEW_TYPES and not f, grouped,
                         depthwise(layer, info)))
        cols = list(zip(*rows)) if rows else [()] * 9
        a = [np.array(c, dtype=float) for c in cols[:5]] + [np.array(c, dtype=bool) for c in cols[5:]]
        return cls(*a, types=np.array([layer.type for layer in model.layers], dtype=str),
                   winograd=np.array([winograd(layer) for layer in model.layers], dtype=bool),
                   conv3d=np.array([conv3d(layer, info) for layer, info in zip(model.layers, model.info)], dtype=bool),
                   fft=_fft_arrays(model, k),
                   window=np.array([info.input_elements if layer.type in WINDOW_TYPES else np.nan
                                    for layer, info in zip(model.layers, model.info)], dtype=float))


def _fft_arrays(model: Model, k: KernelConstants):
    """Each layer's FFT work (oracle/compute/fft.py) as five rows; NaN where it has none."""
    import numpy as np

    out = np.full((5, len(model.layers)), np.nan)
    for i, (layer, info) in enumerate(zip(model.layers, model.info)):
        work = None if grouped_gemm(layer, k) or depthwise(layer, info) else \
            fft_work(layer, info, k.fft_min_kernel, k.fft_tile)  # fmt: skip
        if work is not None:
            out[:, i] = (work.pointwise_flops, work.transformed_bytes, work.filter_bytes, work.tiles, work.columns)
    return out


def _fft_array(a: ModelArrays, gpu: GpuSpec, precision: str, batch: float, k: KernelConstants):
    """fft.fft_time over the layers: seconds, NaN where no FFT, infinity where it does not fit."""
    import numpy as np

    pointwise, transformed, filters, tiles, columns = a.fft
    tile = math.isqrt(k.tile_elements)
    rows, columns = batch * np.nan_to_num(tiles, nan=1.0) / tile, np.nan_to_num(columns, nan=1.0) / tile
    waste = np.maximum(rows + 0.5, 1.0) / rows * np.ceil(columns) / columns  # fft.expected_waste, fft.tile_waste
    rate = k.matmul_efficiency(precision, gpu.architecture) * (gpu.peak(precision) or 1.0)
    space = transformed * batch + filters
    io = PRECISION_BYTES[precision] * batch * a.io
    seconds = pointwise * batch * waste / rate + (2.0 * space + io) / (k.memory_efficiency * gpu.memory_bandwidth_Bps)
    return np.where(space > k.fft_workspace_bytes, np.inf, seconds)


def per_sample_array(arrays: ModelArrays, gpu: GpuSpec, precision: str, batch: float,
                     k: KernelConstants = DEFAULT_CONSTANTS):  # fmt: skip
    """(FW, BW) per sample of every layer as two arrays: :func:`per_sample_times`
    vectorised (equal to it to rounding; tests/test_compute_model.py checks)."""
    import numpy as np

    a = arrays
    delta = PRECISION_BYTES[precision]
    byte_rate = k.memory_efficiency * gpu.memory_bandwidth_Bps
    pre_volta = k.applies_architecture(gpu.architecture)
    for layer_type, field in MEMORY_EFFICIENCY_FIELDS.items():  # the shares a stack set, or pre-Volta's
        if a.types is not None and (getattr(k, field) is not None or pre_volta):
            byte_rate = np.where(a.types == layer_type, k.memory_rate(gpu, layer_type), byte_rate)
    flops = a.flops * batch
    nbytes = delta * (batch * a.io + a.params)
    simt = k.simt_efficiency * (gpu.peak(FP32) or gpu.peak_flops[0][1])
    peak = gpu.peak(precision)
    if peak is None and bool(a.matmul.any()):
        raise KeyError(precision)
    gemm = k.matmul_rate(gpu, precision, conv=False)
    rate = np.where(a.matmul, gemm, simt)
    if a.types is not None and k.applies_architecture(gpu.architecture):  # cuDNN's convolutions of that time
        rate = np.where(np.isin(a.types, CONV_TYPES), k.matmul_rate(gpu, precision), rate)
    cap = k.conv3d_cap(precision, gpu.architecture)
    if a.conv3d is not None and cap is not None:
        rate = np.where(a.conv3d, np.minimum(rate, cap * (peak or 1.0)), rate)
    if a.winograd is not None and k.runs_winograd(gpu.architecture):
        rate = np.where(a.winograd, rate * k.winograd_gain, rate)
    dw = a.depthwise if a.depthwise is not None and k.depthwise_efficiency is not None else np.zeros_like(a.matmul)
    if a.grouped is not None and k.grouped_efficiency != 1.0:
        grouped = a.grouped & ~dw
        rate = np.where(grouped, rate * k.grouped_efficiency, rate)
        byte_rate = np.where(grouped, byte_rate * k.grouped_efficiency, byte_rate)
    if dw.any():
        rate = np.where(dw, k.depthwise_rate(gpu, precision), rate)
    waves = np.ones_like(flops)
    if gpu.sm_count:
        n = np.where(a.out > 0, batch * a.out / k.tile_elements, 1.0)
        split = np.minimum(np.maximum(1.0, gpu.sm_count / n), np.maximum(1.0, a.reduction / k.k_split))
        w = n * split / gpu.sm_count
        waves = np.where(a.matmul & ~dw, np.maximum(w + 0.5, 1.0) / w, 1.0)
    compute = flops * waves / rate
    bw_compute = compute
    if a.window is not None and k.pool_window_efficiency is not None:  # kernels.layer_time: per-element bound
        pooled = ~np.isnan(a.window)
        work = flops + batch * np.nan_to_num(a.window)
        compute = np.where(pooled, work / (k.pool_window_efficiency * gpu.issue_rate()), compute)
        bw_compute = np.where(pooled, 2.0 * compute, compute)
    fw = np.maximum(np.maximum(compute, nbytes / byte_rate), k.launch_s)
    if a.fft is not None and k.runs_fft(gpu.architecture) and not np.isnan(a.fft[0]).all():
        fw = np.fmin(fw, _fft_array(a, gpu, precision, batch, k))
    bw = np.where(a.matmul, 2.0 * fw, np.maximum(np.maximum(bw_compute, 2.0 * nbytes / byte_rate), k.launch_s))
    fw = np.where(a.active, fw, 0.0)
    bw = np.where(a.active, bw, 0.0)
    return fw / batch, bw / batch
