"""The per-layer compute model (issue 13, docs/memory.md and docs/cost-model.md): how long a layer's kernels take
on a GPU, at a precision, for a per-GPU batch (the work per kernel).

For layer ``l`` run on ``b`` samples at once (``F_l`` forward FLOPs per sample,
:mod:`oracle.compute.layers.shapes`; ``δ`` bytes per element of the precision)::

    kernel time = max( FLOPs · waves(b) / (e_c · peak_prec),  bytes / (e_m · bandwidth),  launch_s )

- **Roofline** (Williams, Waterman and Patterson, CACM 2009): a kernel is bound by its
  arithmetic at the peak of the units it runs on or by its memory traffic at the memory
  bandwidth.  conv and fc run at the precision's peak (fp32: CUDA cores; tf32, fp16, bf16:
  tensor cores, ``gpu.peak_TFLOPS``); every other layer does a few FLOPs per element at
  the fp32 peak and is memory-bound.
- **Bytes** per kernel: conv/fc read the input and the weights and write the output,
  ``δ·(b·(|x|+|y|) + |w|)``; batchnorm in training reads its input twice (statistics,
  then normalisation: cuDNN's and PyTorch's two-pass batch norm), ``δ·b·(2|x|+|y|)``, and
  so does group (and instance) norm (PyTorch's aten/src/ATen/native/cuda/group_norm_kernel.cu:
  RowwiseMomentsCUDAKernel reads x for each group's statistics, then the elementwise kernel
  reads it again and writes y; TensorFlow's instance_norm is tf.nn.moments, then
  tf.nn.batch_normalization: more passes still);
  the other layers read their input(s) and write their output, ``δ·b·(|x|+|y|)``;
  ``flatten`` is a view (no kernel).
- **Backward**: conv and fc run two kernels (input gradient, weight gradient), each
  with the forward's FLOPs and about its bytes; the other layers one kernel with the
  forward's FLOPs and twice its bytes (read the upstream gradient and the saved tensor,
  write the input gradient).
- **Waves** (the small-work efficiency; Yu et al., "Habitat", USENIX ATC 2021, §4.2
  "wave scaling"): a conv/fc kernel runs ``n = b·|y| / T`` thread blocks of ``T`` output
  elements (a 128x128 tile, CUTLASS's and cuDNN's implicit-GEMM default) in waves of one
  block per SM.  When the output tiles are fewer than the SMs, GEMM libraries split the
  reduction (length ``K = F_l / (2|y|)``) over more blocks, down to ``k_split`` elements
  each (split-K in CUTLASS and cuBLAS; Osama et al., "Stream-K", PPoPP 2023):
  ``blocks = n · min(max(1, SMs/n), max(1, K/k_split))``.  With ``w = blocks / SMs`` waves
  the last wave is on average half empty, and a kernel of less than one wave still takes
  one wave's time: ``waves(b) = max(w + 1/2, 1) / w``.
  This is a smooth, expected-value form of Habitat's ``ceil(w)/w``: it keeps the time per
  sample non-increasing in ``b`` (``ceil`` is not), which the property tests check.
- **Depthwise convolutions** (one input channel per group, ``depthwise``): no GEMM -- each
  output channel reduces only its own k² window, so there is no channel dimension for a
  tensor-core MMA; PyTorch runs them as CUDA-core kernels (aten/src/ATen/native/cuda/
  DepthwiseConv2d.cu: one output element per thread, accumulating in fp32, a block
  reduction for the weight gradient), as do PaddlePaddle (operators/math/depthwise_conv.cu)
  and TensorFlow (core/kernels/depthwise_conv_op_gpu.h).  Each multiply-add reads one input element from shared memory or L1 (the
  stencil: k² reads per output), so the kernel is bound by on-chip traffic,
  ``δ·FLOPs/2 / (e_dw · B_onchip)``, not by HBM.  ``B_onchip`` = SMs x 128 B per clock
  (32 banks of 4 bytes, one access per bank per clock: CUDA C++ Programming Guide,
  "Shared Memory", compute capability 5.x-9.0) x clock; with 64 FP32 lanes per SM (V100
  and A100 whitepapers: 128 FLOPs per clock per SM) it equals the FP32 CUDA-core peak in
  FLOP/s, so ``B_onchip`` is taken as that peak (on H100, 128 lanes per SM, it overstates
  B_onchip by 2x).  This is why EfficientNet gains less from an A100 than its HBM ratio
  (2039/900 = 2.27): its depthwise kernels gain only the SM ratio 19.5/15.7 = 1.24, in
  TF32 and AMP alike (tensor cores do not run them).  No waves factor (no GEMM tiles).
- **Batch norm and pooling** (``KernelConstants.reduction_memory_efficiency``,
  ``maxpool_memory_efficiency``, ``avgpool_memory_efficiency``; ``MEMORY_EFFICIENCY_FIELDS``):
  batch norm's statistics and its backward's per-channel sums are reductions over the
  batch, and windowed pooling reads overlapping windows (one thread per output looping over
  its window) and gathers its gradient back over them; in some frameworks' kernels they
  reach a smaller share of the bandwidth than streaming kernels (eager PyTorch's native
  ones on an H200, measured per layer: batch norm about 0.5, max pooling about 0.22);
  default: as streaming kernels; a software stack sets its own.  Global (adaptive) average
  pooling is a plain reduction to one value per channel and keeps the streaming share.
- **Windowed pooling's instructions** (``KernelConstants.pool_window_efficiency``): at least
  ``b·(FLOPs + |x|) / (e_w · gpu.issue_rate())``, twice that backward.
- **Fused activations** (default on; ``KernelConstants.fuse_activations``): an
  element-wise activation right after a batchnorm or an add runs inside that kernel
  (cuDNN's fused BN+activation and BN+add+activation ops; MXNet's and TF-XLA's ResNet
  kernels in NVIDIA DeepLearningExamples), so it moves no bytes of its own.
- **Launch floor**: no kernel takes less than ``launch_s`` (a CUDA kernel launch costs a
  few microseconds; NVIDIA, "Getting Started with CUDA Graphs", 2019; nominal 5 us).
- **Weight update** (per iteration): SGD with momentum, five passes over the weights at
  memory bandwidth (as :mod:`oracle.profiling.estimate`), in fp32 (master weights) unless
  the whole run is fp16/bf16.

Efficiencies ``e_c`` (per kind of unit) and ``e_m`` are fitted to the V100 rows of the
validation set (DGX-1, DGX-2; ``benchmarks/dle_accuracy.py --fit``) and checked on the
A100 rows, which played no part in the fit (docs/cost-model.md, "Compute model").

All functions are pure; times are seconds for the whole batch unless named per sample.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from oracle.compute.fft import expected_waste, fft_time, fft_work
from oracle.compute.layers.shapes_tokens import internal_traffic
from oracle.gpus import GpuSpec
from oracle.model import ACTIVATIONS, Layer, LayerInfo, Model
from oracle.vocabulary import FP32, PRECISION_BYTES, TF32

# attention: cuBLAS GEMMs and batched GEMMs; convtranspose: cuDNN runs a transposed convolution
# as the data gradient of a convolution, and its backward as a convolution and a weight gradient
MATMUL_TYPES = ("conv", "convtranspose", "fc", "attention")
CONV_TYPES = ("conv", "convtranspose")
TWO_PASS_TYPES = ("batchnorm", "groupnorm")  # statistics, then normalisation: the input read twice
# memory-bound layer types whose bandwidth share a software stack may set: the KernelConstants
# field of each (None there: memory_efficiency)
MEMORY_EFFICIENCY_FIELDS = {"batchnorm": "reduction_memory_efficiency", "maxpool": "maxpool_memory_efficiency",
                            "avgpool": "avgpool_memory_efficiency"}  # fmt: skip
VIEW_TYPES = ("flatten", "slice")  # no kernel
WINDOW_TYPES = ("maxpool", "avgpool")  # windowed pooling (KernelConstants.pool_window_efficiency)
WU_PASSES = 5  # SGD momentum: read w, grad, m; write w, m (oracle.profiling.estimate)


@dataclass(frozen=True)
class KernelConstants:
    """The compute model's efficiencies (fractions of the datasheet peaks)."""

    # fitted by `python benchmarks/dle_accuracy.py --fit` on the 30 V100 rows (DGX-1, DGX-2)
    # of validation/dle-throughput.csv only; the A100 rows are held out (docs/cost-model.md)
    simt_efficiency: float = 0.95  # conv/fc on CUDA cores (fp32; cuDNN's Winograd/FFT included)
    tensor_efficiency: float = 0.60  # conv/fc on tensor cores (fp16 on V100; applied to tf32/bf16 too)
    memory_efficiency: float = 0.90  # streaming kernels (STREAM-type kernels reach 80-90% of HBM peak)
    # batchnorm's kernels (per-channel reductions over the batch) and maxpool's at these
    # fractions of the HBM bandwidth; None: at memory_efficiency, as in the frameworks the
    # efficiencies above were fitted on (cuDNN's fused batch norms).  A software stack sets
    # its own (compute.reduction_memory_efficiency, compute.maxpool_memory_efficiency; eager
    # PyTorch's native kernels on an H200: stacks/pytorch.yaml) and conversion.py converts
    # a profile to them
    reduction_memory_efficiency: float | None = None
    maxpool_memory_efficiency: float | None = None
    avgpool_memory_efficiency: float | None = None  # windowed average pooling (not the global one)
    # windowed pooling (maxpool, avgpool) bound by the instructions of a thread per output
    # looping over its window (aten/src/ATen/native/cuda/DilatedMaxPool2d.cu, AveragePool2d.cu;
    # the same time in fp16 as in fp32, measured): its window and input elements, FLOPs + b·|x|,
    # at this many per issued thread instruction (GpuSpec.issue_rate), twice that backward (a
    # gather over the same windows); None: no such bound.  A stack sets it (compute.pool_window_efficiency)
    pool_window_efficiency: float | None = None
    launch_s: float = 5e-6  # nominal kernel launch floor (NVIDIA CUDA Graphs blog, 2019)
    tile_elements: int = 128 * 128  # output elements per conv/fc thread block (CUTLASS default tile)
    k_split: int = 256  # smallest reduction slice per block under split-K (nominal)
    fuse_activations: bool = True  # activation after batchnorm/add fused into that kernel
    # grouped convolutions (groups > 1, more than one input channel per group: ResNeXt's) run
    # as implicit GEMMs on the units of the precision but reach a smaller share of both
    # peaks: their GEMMs are small per group (K = C/groups·k²); fitted on the V100 rows of
    # ResNeXt-101 and SE-ResNeXt-101 only (benchmarks/dle_accuracy.py --fit-grouped), A100
    # rows held out
    grouped_efficiency: float = 0.12
    # ... but a convolution of few, wide groups (at least this many filters per group: the
    # BVLC AlexNet's two groups of 128-192) runs as `groups` dense convolutions at the dense
    # rates: Caffe (src/caffe/layers/conv_layer.cu: one GEMM per group), Torch7's
    # cudnn.SpatialConvolution (a loop over the groups before cuDNN 7) and cuDNN 7's grouped
    # convolutions launch per-group implicit GEMMs, each as wide as a dense one when its
    # output channels fill a GEMM tile's 64 columns (CUTLASS's narrowest default
    # threadblock tile, 128x64); no row was fitted
    dense_group_filters: int = 64
    # conv/fc in TF32 on tensor cores: TF32 operands are 32-bit, so a TF32 MMA moves twice
    # the register and shared-memory bytes of an fp16 one per FLOP and the implicit GEMMs
    # run further below their (half as high) peak; fitted on the 4 A100 ResNet-50 TF32
    # rows at 1 GPU only (PyTorch, TensorFlow, MXNet, PaddlePaddle; `python
    # benchmarks/dle_accuracy.py --fit-tf32`): 97.0% there; every other TF32 row (other
    # models, 8+ GPUs) held out.  None: as fp16 (tensor_efficiency)
    tf32_efficiency: float | None = 0.25
    # depthwise convolutions (one input channel per group: EfficientNet's, MobileNet's) are
    # no GEMM and run on CUDA cores, bound by on-chip traffic (module docstring); the share
    # of the SMs' shared-memory bandwidth they reach, fitted on the 8 V100 rows of
    # EfficientNet-B0 only (benchmarks/dle_accuracy.py --fit-grouped: 90.3% there), A100
    # rows held out.  None: as the other grouped convolutions
    depthwise_efficiency: float | None = 0.03
    # conv/fc on GPUs before tensor cores (vocabulary.NO_TENSOR_CORES), per architecture: the
    # share of the fp32 peak (fp16 on Pascal's half2 units alike) that the cuDNN of their
    # time reached, below the V100-fitted simt_efficiency; fitted by `python
    # benchmarks/architecture_accuracy.py --fit` on the batch-32 training rows of
    # validation/mxnet-2017-pre-volta.csv only (MXNet docs, ResNet-50 and Inception-v3, one
    # K80, M40 and P100 each), the smaller batches and every other source held out
    # (docs/cost-model.md "Before tensor cores").  An architecture absent here runs at the
    # efficiencies above
    architecture_efficiency: tuple[tuple[str, float], ...] = (("kepler", 0.35), ("maxwell", 0.46), ("pascal", 0.56))
    # on Maxwell and Pascal (winograd_architectures) a 3x3 stride-1 convolution runs as
    # Winograd's F(2x2, 3x3): 16 multiplies per 2x2 output tile instead of 36 (Lavin and Gray,
    # "Fast Algorithms for Convolutional Neural Networks", CVPR 2016), cuDNN's WINOGRAD
    # algorithms since cuDNN 5 (2016) for forward, data and filter gradients; the architecture
    # efficiency above is that of the other (direct, implicit-GEMM) convolutions.  On Volta and
    # later the fitted efficiencies include whatever algorithm mix ResNet-50 ran with
    winograd_gain: float = 2.25
    # not on Kepler: cuDNN's Winograd kernels, like neon's (NervanaSystems/neon#332: its fast
    # kernels are for Maxwell and Pascal, Kepler gets plain CUDA C ones), did not speed it up.
    # jcjohnson/cnn-benchmarks (cuDNN 5.0.05, Torch7, one machine): over Torch's own im2col
    # GEMMs ("nn") cuDNN gains 2.24x on VGG-16 (all 3x3) on a Maxwell TITAN X but 1.34x on a
    # K40c, less than its 1.71x on ResNet-50; the K40c rows of that table are scored by
    # benchmarks/independent_accuracy.py, so they are not an independent check of this choice
    winograd_architectures: tuple[str, ...] = ("maxwell", "pascal")
    # on every architecture above a stride-1 convolution of a kernel of fft_min_kernel or more
    # may run as cuDNN's FFT in tiles of at most fft_tile (cuDNN's FFT_TILING: 32x32), where
    # that is faster and its transformed tensors fit fft_workspace_bytes (MXNet's default
    # convolution workspace, 1,024 MB): oracle/compute/fft.py.  3x3 kernels keep Winograd
    fft_min_kernel: int = 5
    fft_tile: int = 32
    fft_workspace_bytes: float = 1024 * 2**20
    # on every architecture above batch norm and windowed pooling, where no stack sets their share,
    # run as the separate, unfused kernels of their time (cuDNN 4-6's batch norm, Caffe's and
    # Torch7's pooling) at these shares of the bandwidth, as measured for such kernels: eager
    # PyTorch's native batch norm (0.50) and pooling (0.22) per layer on an H200
    # (stacks/pytorch.yaml, benchmarks/kernel_efficiency.py), and Caffe's max pooling on a
    # Maxwell GTX TITAN X, 0.23-0.26 (soumith/convnet-benchmarks caffe/output_alexnet.log,
    # per-layer forward and backward of pool1, pool2, pool5 at batch 128; docs/cost-model.md
    # "Before tensor cores").  The architecture efficiencies above were refitted with them
    architecture_memory_efficiency: tuple[tuple[str, float], ...] = (
        ("batchnorm", 0.5), ("maxpool", 0.22), ("avgpool", 0.22))  # fmt: skip
    # 3-D convolutions (a kernel over three spatial dimensions: 3-D U-Net's, CosmoFlow's) reach
    # at most these shares of the peak, on tensor cores and on CUDA cores: cuDNN has no
    # Winograd or FFT algorithm for them (its WINOGRAD algorithms are 2-D; the fitted 2-D
    # efficiencies above include them), and its 3-D implicit GEMMs gather each operand tile over
    # a kernel volume of 27 taps (on an H200 cuDNN ran a 3x3x3 fp16 3-D U-Net layer at 290
    # TFLOP/s in its GEMM and 194 with its layout transform, 0.29 and 0.20 of the dense peak:
    # tile-ai/TileOPs#1998, 2026).  Fitted by `python benchmarks/conv3d_accuracy.py --fit` on
    # the V100 rows of DeepLearningExamples' TensorFlow 3-D U-Net only (AMP: the tensor-core
    # share, FP32: the CUDA-core one); its A100 rows (AMP, TF32) held out.  None: no cap
    conv3d_tensor_efficiency: float | None = 0.22
    conv3d_simt_efficiency: float | None = 0.45

    def applies_architecture(self, architecture: str) -> bool:
        """Whether conv/fc on ``architecture`` run at its own efficiency (pre-Volta)."""
        return bool(architecture) and architecture in dict(self.architecture_efficiency)

    def runs_winograd(self, architecture: str) -> bool:
        """Whether a 3x3 stride-1 convolution on ``architecture`` runs as Winograd's F(2x2, 3x3)."""
        return self.applies_architecture(architecture) and architecture in self.winograd_architectures

    def runs_fft(self, architecture: str) -> bool:
        """Whether large-kernel convolutions on ``architecture`` may run as FFTs (pre-Volta)."""
        return self.applies_architecture(architecture) and self.fft_min_kernel > 0

    def memory_rate(self, gpu: GpuSpec, layer_type: str) -> float:
        """B/s of a memory-bound kernel of ``layer_type``: its MEMORY_EFFICIENCY_FIELDS
        share of the bandwidth where set, else (before tensor cores) its
        architecture_memory_efficiency, else memory_efficiency."""
        field = MEMORY_EFFICIENCY_FIELDS.get(layer_type)
        e = getattr(self, field) if field else None
        if e is None and self.applies_architecture(gpu.architecture):
            e = dict(self.architecture_memory_efficiency).get(layer_type)
        return (self.memory_efficiency if e is None else e) * gpu.memory_bandwidth_Bps

    def conv3d_cap(self, precision: str, architecture: str) -> float | None:
        """The most of ``precision``'s peak a 3-D convolution reaches (None: no cap)."""
        simt = precision == FP32 or self.applies_architecture(architecture)
        return self.conv3d_simt_efficiency if simt else self.conv3d_tensor_efficiency

    def depthwise_rate(self, gpu: GpuSpec, precision: str) -> float:
        """FLOP/s of a depthwise convolution: one element of δ bytes read on chip per
        multiply-add (2 FLOPs) at depthwise_efficiency of the on-chip bandwidth, which is
        the FP32 CUDA-core peak in B/s (module docstring)."""
        assert self.depthwise_efficiency is not None
        onchip_Bps = gpu.peak(FP32) or gpu.peak_flops[0][1]
        return self.depthwise_efficiency * onchip_Bps * 2.0 / PRECISION_BYTES[precision]

    def matmul_efficiency(self, precision: str, architecture: str = "", conv: bool = True) -> float:
        """The share of ``precision``'s peak a conv (or, ``conv`` false, an fc/attention
        GEMM) reaches on a GPU of ``architecture``.  Before tensor cores every precision runs
        on the CUDA cores: convolutions at the architecture's efficiency (cuDNN's kernels of
        that time), GEMMs at simt_efficiency (cuBLAS SGEMM reaches 85-95% of peak on Maxwell
        and Pascal as on Volta)."""
        arch = dict(self.architecture_efficiency).get(architecture) if architecture else None
        if arch is not None:
            return arch if conv else self.simt_efficiency
        if precision == FP32:
            return self.simt_efficiency
        if precision == TF32 and self.tf32_efficiency is not None:
            return self.tf32_efficiency
        return self.tensor_efficiency

    def matmul_rate(self, gpu: GpuSpec, precision: str, conv: bool = True) -> float:
        """FLOP/s of a conv (``conv`` false: an fc/attention GEMM) at ``precision`` on ``gpu``.
        TF32 is a math mode the libraries may use, not one they must: cuDNN and cuBLAS run
        the faster of its tensor-core kernels and the fp32 CUDA-core ones, which win where
        the TF32 peak is no higher than the fp32 one (GA10x and Ada: the RTX 3090's 35.6
        TFLOPS both ways, GA102 whitepaper appendix A)."""
        rate = self.matmul_efficiency(precision, gpu.architecture, conv) * (gpu.peak(precision) or 1.0)
        if precision == TF32 and (fp32 := gpu.peak(FP32)):
            rate = max(rate, self.matmul_efficiency(FP32, gpu.architecture, conv) * fp32)
        return rate


DEFAULT_CONSTANTS = KernelConstants()


@dataclass(frozen=True)
class LayerWork:
    """One layer's forward kernels on a batch: FLOPs and bytes per kernel."""

    flops: float
    bytes: float
    kernels: int  # forward kernels (0: a view)
    matmul: bool


def forward_work(layer: Layer, info: LayerInfo, batch: float, delta: float) -> LayerWork:
    """FLOPs and bytes of one forward kernel of ``layer`` on ``batch`` samples."""
    if layer.type in VIEW_TYPES:
        return LayerWork(0.0, 0.0, 0, False)
    x, y = info.input_elements, info.output_elements
    if layer.type in MATMUL_TYPES:
        x += internal_traffic(layer, info)  # attention's q/k/v, scores, context (0 for conv/fc)
        return LayerWork(info.flops * batch, delta * (batch * (x + y) + info.parameters), 1, True)
    reads = 2 * x if layer.type in TWO_PASS_TYPES else x
    return LayerWork(info.flops * batch, delta * (batch * (reads + y) + info.parameters), 1, False)


def depthwise(layer: Layer, info: LayerInfo) -> bool:
    """A convolution with one input channel per group."""
    return layer.type == "conv" and layer.groups > 1 and info.input_shapes[0][0] == layer.groups


def grouped_gemm(layer: Layer, k: KernelConstants = DEFAULT_CONSTANTS) -> bool:
    """A grouped convolution whose groups are narrower than a GEMM tile (fewer than
    ``k.dense_group_filters`` filters each: ResNeXt's): it runs at grouped_efficiency."""
    return layer.type == "conv" and layer.groups > 1 and (layer.filters or 0) // layer.groups < k.dense_group_filters


def conv3d(layer: Layer, info: LayerInfo) -> bool:
    """A (transposed) convolution over three spatial dimensions (its input is C x D x H x W)."""
    return layer.type in CONV_TYPES and len(info.input_shapes[0]) == 4


def winograd(layer: Layer) -> bool:
    """A dense 3x3 stride-1 convolution (Winograd's F(2x2, 3x3) applies)."""
    return (layer.type == "conv" and layer.groups == 1 and tuple(layer.kernel) in ((3, 3), (3,))
            and all(x == 1 for x in layer.stride) and all(x == 1 for x in layer.dilation))  # fmt: skip


def waves_factor(out_elements: float, reduction: float, sm_count: int | None, tile: int, k_split: int) -> float:
    """Time of the kernel's waves over the time of its work at full occupancy:
    max(w + 1/2, 1)/w with w = blocks/SMs, blocks with split-K (see the module
    docstring); 1 without an SM count."""
    if not sm_count or out_elements <= 0:
        return 1.0
    n = out_elements / tile
    blocks = n * min(max(1.0, sm_count / n), max(1.0, reduction / k_split))
    return expected_waste(blocks / sm_count)


def kernel_time(flops: float, nbytes: float, flop_rate: float, byte_rate: float, waves: float,
                launch_s: float) -> float:  # fmt: skip
    """One kernel: max(compute, memory, launch floor)."""
    return max(flops * waves / flop_rate, nbytes / byte_rate, launch_s)


def layer_time(
    layer: Layer,
    info: LayerInfo,
    gpu: GpuSpec,
    precision: str,
    batch: float,
    k: KernelConstants = DEFAULT_CONSTANTS,
) -> tuple[float, float]:
    """(forward, backward) seconds of ``layer`` on ``batch`` samples (the whole batch).

    ``precision`` is the arithmetic precision of conv/fc (fp32, tf32, fp16, bf16); it also
    sets the bytes per element.  Raises KeyError if the GPU has no peak for it."""
    delta = PRECISION_BYTES[precision]
    work = forward_work(layer, info, batch, delta)
    if work.kernels == 0:
        return 0.0, 0.0
    byte_rate = k.memory_rate(gpu, layer.type)
    if work.matmul:
        peak = gpu.peak(precision)
        if peak is None:
            raise KeyError(precision)
        rate = k.matmul_rate(gpu, precision, layer.type in CONV_TYPES)
        if conv3d(layer, info) and (cap := k.conv3d_cap(precision, gpu.architecture)) is not None:
            rate = min(rate, cap * peak)
        reduction = info.flops / (2.0 * info.output_elements)  # K of the implicit GEMM
        waves = waves_factor(batch * info.output_elements, reduction, gpu.sm_count, k.tile_elements, k.k_split)
        if winograd(layer) and k.runs_winograd(gpu.architecture):
            rate *= k.winograd_gain
        if depthwise(layer, info) and k.depthwise_efficiency is not None:
            rate, waves = k.depthwise_rate(gpu, precision), 1.0
        elif grouped_gemm(layer, k):
            rate, byte_rate = rate * k.grouped_efficiency, byte_rate * k.grouped_efficiency
        fw = kernel_time(work.flops, work.bytes, rate, byte_rate, waves, k.launch_s)
        if k.runs_fft(gpu.architecture) and not grouped_gemm(layer, k) and not depthwise(layer, info):
            fw = min(fw, _fft_s(layer, info, gpu, precision, batch, k))
        return fw, 2.0 * fw  # input gradient + weight gradient, each like the forward
    rate = k.simt_efficiency * (gpu.peak(FP32) or gpu.peak_flops[0][1])
    flops, bw_flops = work.flops, work.flops
    if layer.type in WINDOW_TYPES and k.pool_window_efficiency is not None:  # per-element bound
        rate = k.pool_window_efficiency * gpu.issue_rate()
        flops = work.flops + batch * info.input_elements
        bw_flops = 2.0 * flops
    fw = kernel_time(flops, work.bytes, rate, byte_rate, 1.0, k.launch_s)
    bw = kernel_time(bw_flops, 2.0 * work.bytes, rate, byte_rate, 1.0, k.launch_s)
    return fw, bw


def _fft_s(layer: Layer, info: LayerInfo, gpu: GpuSpec, precision: str, batch: float, k: KernelConstants) -> float:
    """The forward convolution as cuDNN's FFT (infinity where it has none or it does not fit):
    the complex products at the architecture's convolution rate, the transforms streaming."""
    work = fft_work(layer, info, k.fft_min_kernel, k.fft_tile)
    if work is None:
        return math.inf
    io = PRECISION_BYTES[precision] * batch * (info.input_elements + info.output_elements)
    rate = k.matmul_efficiency(precision, gpu.architecture) * (gpu.peak(precision) or 1.0)
    byte_rate = k.memory_efficiency * gpu.memory_bandwidth_Bps
    return fft_time(work, batch, io, rate, byte_rate, k.fft_workspace_bytes, math.isqrt(k.tile_elements))


def update_time(info: LayerInfo, gpu: GpuSpec, precision: str, mixed: bool,
                k: KernelConstants = DEFAULT_CONSTANTS) -> float:  # fmt: skip
    """Weight update per iteration: WU_PASSES passes over the weights at memory bandwidth,
    4 bytes each (fp32 or fp32 master weights) unless the run is all fp16/bf16."""
    delta = 4 if mixed else PRECISION_BYTES[precision]
    return WU_PASSES * delta * info.parameters / (k.memory_efficiency * gpu.memory_bandwidth_Bps)


def fused_layers(model: Model) -> list[bool]:
    """Activations whose every input is a batchnorm or an add (fused into it)."""
    index = model.index
    out = []
    for layer in model.layers:
        producers = [model.layers[index[n]].type for n in layer.inputs if n in index]
        out.append(layer.type in ACTIVATIONS and bool(producers) and all(t in ("batchnorm", "add") for t in producers))
    return out


def per_sample_times(
    model: Model, gpu: GpuSpec, precision: str, batch: float, k: KernelConstants = DEFAULT_CONSTANTS
) -> list[tuple[float, float]]:
    """(FW, BW) per sample of every layer of ``model`` at per-GPU batch ``batch``."""
    fused = fused_layers(model) if k.fuse_activations else [False] * len(model.layers)
    out = []
    for layer, info, f in zip(model.layers, model.info, fused):
        fw, bw = (0.0, 0.0) if f else layer_time(layer, info, gpu, precision, batch, k)
        out.append((fw / batch, bw / batch))
    return out


__all__ = [
    "DEFAULT_CONSTANTS",
    "KernelConstants",
    "LayerWork",
    "MEMORY_EFFICIENCY_FIELDS",
    "forward_work",
    "fused_layers",
    "grouped_gemm",
    "kernel_time",
    "layer_time",
    "per_sample_times",
    "update_time",
    "waves_factor",
]
