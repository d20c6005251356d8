"""FFT convolutions before tensor cores (docs/cost-model.md, "Before tensor cores").

cuDNN's FFT algorithms (``CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING`` and the backward ones;
the method of Mathieu, Henaff and LeCun, ICLR 2014, and Vasilache et al., "Fast
Convolutional Nets With fbfft", ICLR 2015) compute a stride-1 convolution of a large
kernel in the frequency domain: the input is cut into ``S x S`` tiles (``S`` the power of
two that holds the padded input, at most cuDNN's 32x32 tiles), each tile and each filter is
Fourier-transformed, every frequency bin multiplies its (C x F) complex filter matrix with
the tiles' channel vectors (a batched complex GEMM: 8 real FLOPs per complex multiply-add)
and the products are transformed back.  A real transform of ``S x S`` has ``S (S/2 + 1)``
bins, and a tile yields ``S - k + 1`` outputs per dimension, so per sample::

    pointwise FLOPs = 8 · (C/g) · F · bins · tiles · r(M) · c(F/g)
    transformed bytes = 8 · bins · tiles · (C + F)       (complex fp32 tiles: input, output)
    filter bytes      = 8 · bins · (C/g) · F              (per iteration)

where the per-bin complex GEMM (``M = b · tiles`` rows, ``F/g`` columns) runs in 128x128
thread-block tiles (the tile of the waves model, oracle/compute/kernels.py), so a small batch
of few tiles, or few filters, wastes part of each tile: ``c(n) = ceil(n/128) · 128 / n`` for
the columns, and for the rows, which grow with the batch, the waves model's smooth
expected value ``r(M) = max(M/128 + 1/2, 1) / (M/128)`` (the last tile half empty on
average), which keeps the time per sample non-increasing in the batch; and the kernels take ``pointwise / rate + (2 · transformed · b + 2 · filter + δ b (|x|+|y|))
/ bandwidth`` (each transformed tensor written, then read; the real input read and the
output written).  Frameworks ask cuDNN for the fastest algorithm that fits their
workspace (cudnn.torch's ``cudnn.benchmark``, MXNet's ``cudnn_tune``, TensorFlow's
autotune), so the model takes the FFT where it is faster than the direct convolution and
its transformed tensors fit ``fft_workspace_bytes`` (MXNet's default convolution
workspace, 1,024 MB: src/operator/nn/convolution-inl.h ``workspace`` default 1024).
Checked, not fitted, on convnet-benchmarks' per-layer cuDNN times on a Maxwell GTX
TITAN X (``torch7/layerwise_benchmarks/output.log``; tests/test_fft.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from oracle.compute.layers.shape_base import per_dim
from oracle.model import Layer, LayerInfo

COMPLEX_BYTES = 8  # a complex fp32 bin


@dataclass(frozen=True)
class FftWork:
    """One layer's FFT convolution, per sample except the filters."""

    pointwise_flops: float  # the complex products, per sample
    tiles: int  # tiles per sample and channel (the per-bin GEMM has batch x tiles rows)
    columns: int  # filters per group (the per-bin GEMM's columns)
    transformed_bytes: float  # complex input and output tiles, per sample
    filter_bytes: float  # complex filters, per iteration


def fft_work(layer: Layer, info: LayerInfo, min_kernel: int, tile: int) -> FftWork | None:
    """The FFT convolution of ``layer``, or None where cuDNN has none: not a 2-D stride-1,
    undilated convolution of a kernel of ``min_kernel`` or more, or one of narrow groups."""
    channels, *spatial = info.input_shapes[0]
    if layer.type != "conv" or len(spatial) != 2:
        return None
    kernel, stride, padding, dilation = (per_dim(v, 2, what, 0) for v, what in (
        (layer.kernel, "kernel"), (layer.stride, "stride"), (layer.padding, "padding"), (layer.dilation, "dilation")))  # fmt: skip
    if min(kernel) < min_kernel or any(s != 1 for s in stride) or any(d != 1 for d in dilation):
        return None
    sizes = []
    for extent, pad, k in zip(spatial, padding, kernel):
        padded = extent + 2 * pad
        s = min(1 << max(padded - 1, 1).bit_length(), tile)
        if s < k:
            return None
        sizes.append((s, padded - k + 1, s - k + 1))
    (sh, oh, th), (sw, ow, tw) = sizes
    tiles = math.ceil(oh / th) * math.ceil(ow / tw)
    bins = sh * (sw // 2 + 1)
    per_group_in = channels / layer.groups
    filters = layer.filters or 0
    return FftWork(8.0 * per_group_in * filters * bins * tiles, tiles, filters // layer.groups,
                   COMPLEX_BYTES * bins * tiles * (channels + filters), COMPLEX_BYTES * bins * per_group_in * filters)


def tile_waste(n: float, tile: int) -> float:
    """Columns computed over columns needed, in whole tiles: ceil(n/T)·T/n."""
    return math.ceil(n / tile) * tile / n


def expected_waste(units: float) -> float:
    """Work done in whole units (tiles of rows, waves of blocks) over the work needed, as an
    expected value: the last unit half empty on average, at least one unit: max(w + 1/2, 1)/w
    (a smooth form of Habitat's ceil(w)/w; the waves model's, oracle/compute/kernels.py)."""
    return max(units + 0.5, 1.0) / units


def fft_time(work: FftWork, batch: float, io_bytes: float, rate: float, byte_rate: float,
             workspace_bytes: float, tile_rows: int) -> float:  # fmt: skip
    """Seconds of the forward FFT convolution on ``batch`` samples (``io_bytes``: the real
    input read and output written), or infinity where its transformed tensors exceed the
    workspace."""
    transformed = work.transformed_bytes * batch + work.filter_bytes
    if transformed > workspace_bytes:
        return math.inf
    waste = expected_waste(batch * work.tiles / tile_rows) * tile_waste(work.columns, tile_rows)
    pointwise = work.pointwise_flops * batch * waste
    return pointwise / rate + (2.0 * transformed + io_bytes) / byte_rate


__all__ = ["COMPLEX_BYTES", "FftWork", "expected_waste", "fft_time", "fft_work", "tile_waste"]
