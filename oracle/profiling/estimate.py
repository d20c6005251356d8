"""An estimated per-layer profile when nothing has been measured: a roofline.

For layer ``l`` at mini-batch ``b`` per GPU (``F_l`` forward FLOPs per sample as in
:mod:`oracle.compute.layers.shapes`, ``P`` the GPU's peak FLOP/s, ``M`` its memory bandwidth
in bytes/s, ``e_c`` and ``e_m`` the compute and memory efficiencies, ``δ`` bytes per
item)::

    bytes_l = δ · (|x_l| + |y_l| + |w_l| / b)              per sample
    FW_l    = max(F_l / (e_c · P),  bytes_l / (e_m · M))   per sample

- Memory traffic: each sample's input is read and its output written once; the
  weights are read once per mini-batch, so a sample's share is ``|w_l| / b``
  (at ``b = 1`` this is ``δ·(|x|+|y|+|w|)``).  ``flatten``, ``reshape``, ``slice`` and
  ``permute`` are views in every framework: no traffic, time 0 (an ``unsupported``
  layer is zero-cost by definition).  ``add``, ``mul``, ``matmul`` and ``concat`` read
  all their inputs.  ``attention`` also writes and reads its q/k/v, scores and
  context between its kernels (``shapes_tokens.internal_traffic``).
- Backward, conv, convtranspose, fc, matmul and attention: ``BW_l = 2·FW_l``.  Both the input gradient and the weight
  gradient cost one forward's FLOPs (and move about as many bytes), so both roofline
  terms double.
- Backward, every other layer: ``BW_l = max(F_l / (e_c · P), 2·bytes_l / (e_m · M))``:
  the same arithmetic as forward but twice the memory traffic (read the upstream
  gradient and the saved input or output, write the input gradient; batchnorm reads
  its input twice).  These layers are memory-bound, so this is about ``2·FW_l``.
- Weight update, per iteration: SGD with momentum reads the weights, their gradient
  and the momentum and writes the weights and the momentum: **5** passes over
  ``|w_l|`` at memory bandwidth, ``WU_l = 5·δ·|w_l| / (e_m · M)`` (its 2-3 FLOPs per
  weight are negligible).  PyTorch's unfused SGD (two element-wise kernels) makes 6
  passes; a fused optimizer makes 5.

Default efficiencies (they are parameters; pass measured ones when you have them):

- ``e_c = 0.5``: the ParaDL V100 profiles shipped in ``profiles/`` imply, with
  training = 3x forward FLOPs, 3·8.22 GFLOP / 3.12 ms = 7.9 TFLOP/s for ResNet-50
  (50% of the V100's 15.7 TFLOP/s fp32 peak), 45% for AlexNet and 72% for VGG16.
  0.5 is the lower middle of that range: large convolutions in cuDNN run at 50-75%
  of peak, small and strided ones lower.
- ``e_m = 0.8``: streaming kernels (STREAM/BabelStream-type copy and triad) typically
  sustain roughly 80-90% of the datasheet memory bandwidth on HBM GPUs; 0.8 is an
  assumption, not a measurement made here.

With neither efficiency given, ``oracle profile --estimate`` uses the compute model of
:mod:`oracle.compute.kernels` instead (issue 13: tensor-core peaks per precision, waves,
launch floor, fused activations, fitted efficiencies), at ``--precision`` and
``--batch``; the profile records device, precision and batch.

No PyTorch is needed.
"""

from __future__ import annotations

from datetime import datetime, timezone

from oracle.compute.layers.shapes_tokens import internal_traffic
from oracle.errors import OracleError
from oracle.model import LAYER_TYPES, Layer, LayerInfo, LayerTimes, Model, Profile, System
from oracle.vocabulary import BF16, FP16, FP32, PRECISION_BYTES

DEFAULT_COMPUTE_EFFICIENCY = 0.5
DEFAULT_MEMORY_EFFICIENCY = 0.8
WU_PASSES = 5  # SGD momentum: read w, grad, m; write w, m
DELTA_FP32 = 4  # bytes per item

# How the roofline treats each layer type (module docstring): "product" layers have
# two gradient products in the backward (BW = 2 FW), "stream" layers the same FLOPs
# and twice the traffic, "free" layers move nothing (views) and take no time.
ROOFLINE_KIND = {
    **{t: "stream" for t in LAYER_TYPES},
    **{t: "product" for t in ("conv", "convtranspose", "fc", "matmul", "attention")},
    **{t: "free" for t in ("flatten", "reshape", "permute", "slice", "unsupported")},
}


def bytes_per_sample(layer: Layer, info: LayerInfo, batch: int, delta: float = DELTA_FP32) -> float:
    """Forward memory traffic of one sample (see the module docstring)."""
    if ROOFLINE_KIND[layer.type] == "free":
        return 0.0
    inside = internal_traffic(layer, info)  # attention's q/k/v, scores, context
    return delta * (info.input_elements + info.output_elements + inside + info.parameters / batch)


def layer_times(
    layer: Layer,
    info: LayerInfo,
    *,
    peak_flops: float,
    bandwidth_Bps: float,
    compute_efficiency: float,
    memory_efficiency: float,
    batch: int,
    delta: float = DELTA_FP32,
) -> LayerTimes:
    flops_rate = compute_efficiency * peak_flops
    bytes_rate = memory_efficiency * bandwidth_Bps
    nbytes = bytes_per_sample(layer, info, batch, delta)
    compute_s = info.flops / flops_rate
    memory_s = nbytes / bytes_rate
    fw = max(compute_s, memory_s) if nbytes > 0 else 0.0
    if ROOFLINE_KIND[layer.type] == "product":
        bw = 2.0 * fw
    else:
        bw = max(compute_s, 2.0 * memory_s) if nbytes > 0 else 0.0
    wu = WU_PASSES * delta * info.parameters / bytes_rate
    return LayerTimes(fw, bw, wu)


def _check_efficiency(value: float, option: str) -> None:
    if not 0 < value <= 1:
        raise OracleError(f"efficiency {value:g} is outside (0, 1]", path=option)


def estimate(
    model: Model,
    system: System,
    *,
    compute_efficiency: float | None = DEFAULT_COMPUTE_EFFICIENCY,
    memory_efficiency: float | None = DEFAULT_MEMORY_EFFICIENCY,
    batch: int = 32,
    delta: float | None = None,
    date: str | None = None,
    precision: str = FP32,
) -> Profile:
    """The roofline profile of ``model`` on the GPU of ``system`` at ``batch`` per GPU
    and ``precision``; with both efficiencies None, the compute model's (issue 13)."""
    if compute_efficiency is None and memory_efficiency is None:
        return _by_compute_model(model, system, batch, precision, date)
    compute_efficiency = compute_efficiency or DEFAULT_COMPUTE_EFFICIENCY
    memory_efficiency = memory_efficiency or DEFAULT_MEMORY_EFFICIENCY
    delta = delta or PRECISION_BYTES[precision]
    _check_efficiency(compute_efficiency, "--efficiency")
    _check_efficiency(memory_efficiency, "--memory-efficiency")
    peak = _roofline_peak(system, batch, precision)
    bw = system.gpu_memory_bandwidth_Bps
    layers = tuple(
        (
            layer.name,
            layer_times(
                layer,
                info,
                peak_flops=peak,
                bandwidth_Bps=bw,
                compute_efficiency=compute_efficiency,
                memory_efficiency=memory_efficiency,
                batch=batch,
                delta=delta,
            ),
        )
        for layer, info in zip(model.layers, model.info)
    )
    date = date or datetime.now(timezone.utc).isoformat(timespec="seconds")
    eff = (
        f"compute {compute_efficiency:g} of peak FLOP/s,"
        f" memory {memory_efficiency:g} of peak bandwidth"
    )
    source = (
        f"ESTIMATED by `oracle profile --estimate` (roofline, not measured) for the"
        f" {system.gpu_model} of {system.name}: peak {peak / 1e12:g} TFLOP/s, memory"
        f" {bw / 1e9:g} GB/s, efficiency {eff}, {delta:g} bytes per item, batch {batch}"
    )
    notes = (
        f"FW = max(FLOPs/(e_c*peak), bytes/(e_m*bandwidth)) per sample, bytes ="
        f" {delta:g}*(|x|+|y|+|w|/batch) (flatten: 0); BW = 2*FW for conv and fc, else"
        f" max(FLOPs/(e_c*peak), 2*bytes/(e_m*bandwidth)); WU = {WU_PASSES}*{delta:g}*|w|/"
        "(e_m*bandwidth) per iteration (SGD momentum: read w, grad, m; write w, m)"
    )
    return Profile(
        model=model.name,
        device=system.gpu_model,
        framework="none (oracle roofline estimate)",
        layers=layers,
        kind="estimated",
        measured_samples_per_gpu=batch,
        source=source,
        meta=(
            ("batch", str(batch)),
            ("date", date),
            ("efficiency", eff),
            ("notes", notes),
        ),
        precision=precision,
    )


def _roofline_peak(system: System, batch: int, precision: str) -> float:
    """The GPU's peak FLOP/s at ``precision``, after checking that the system gives what a
    roofline estimate needs."""
    if batch < 1:
        raise OracleError(f"batch {batch} must be at least 1", path="--batch")
    if not system.gpu_peak_flops:
        raise OracleError(
            "has no gpu.peak_TFLOPS; an estimated profile needs the GPU's peak FLOP/s",
            file=system.file or None,
            path="gpu.peak_TFLOPS",
        )
    if not system.gpu_memory_bandwidth_Bps:
        raise OracleError(
            "has no gpu.memory_bandwidth_GB_per_s; an estimated profile needs the GPU's"
            " memory bandwidth",
            file=system.file or None,
            path="gpu.memory_bandwidth_GB_per_s",
        )
    peak = system.gpu_peak(precision)
    if not peak:
        raise OracleError(f"has no gpu.peak_TFLOPS for precision {precision}", file=system.file or None,
                          path=f"gpu.peak_TFLOPS.{precision}", hint="give that precision's peak in TFLOP/s")
    return peak




def _by_compute_model(model: Model, system: System, batch: int, precision: str, date: str | None) -> Profile:
    """The compute model's per-layer times (oracle.compute.kernels) at ``batch`` and
    ``precision`` on the system's GPU; weight update as in that module."""
    from oracle.compute import kernels as K
    from oracle.compute.conversion import system_spec

    if batch < 1:
        raise OracleError(f"batch {batch} must be at least 1", path="--batch")
    spec = system_spec(system)
    if spec is None:
        raise OracleError("needs gpu.peak_TFLOPS and gpu.memory_bandwidth_GB_per_s for an estimate",
                          file=system.file or None, path="gpu",
                          hint="give them, or name a GPU whose figures oracle has as gpu.model (oracle list gpus)")  # fmt: skip
    if spec.peak(precision) is None:
        raise OracleError(f"GPU {system.gpu_model} has no peak for precision {precision}",
                          file=system.file or None, path=f"gpu.peak_TFLOPS.{precision}",
                          hint="give that precision's peak in TFLOP/s")  # fmt: skip
    k = K.DEFAULT_CONSTANTS
    mixed = precision in (FP16, BF16)  # estimates of fp16/bf16 runs assume mixed precision (fp32 master weights)
    fwbw = K.per_sample_times(model, spec, precision, batch, k)
    layers = tuple(
        (layer.name, LayerTimes(fw, bw, K.update_time(info, spec, precision, mixed, k)))
        for layer, info, (fw, bw) in zip(model.layers, model.info, fwbw)
    )
    date = date or datetime.now(timezone.utc).isoformat(timespec="seconds")
    arch = dict(k.architecture_efficiency).get(spec.architecture)
    fast = (f"3x3 stride-1 as Winograd, {k.winograd_gain:g}x fewer multiplies" if k.runs_winograd(spec.architecture)
            else "no Winograd")  # fmt: skip
    if k.runs_fft(spec.architecture):
        fast += f", stride-1 {k.fft_min_kernel}x{k.fft_min_kernel}+ as FFT where faster"
    conv = (f"conv {arch:g} of peak ({spec.architecture}: no tensor cores; {fast}), fc {k.simt_efficiency:g}"
            if arch is not None else
            f"conv/fc {k.simt_efficiency:g} (fp32) / {k.tensor_efficiency:g} (tensor cores) of peak")  # fmt: skip
    shares = "".join(f", {t} {e:g}" for t, e in k.architecture_memory_efficiency) if arch is not None else ""
    if any(K.conv3d(layer, info) for layer, info in zip(model.layers, model.info)):
        caps = (k.conv3d_simt_efficiency, k.conv3d_tensor_efficiency)
        conv += ", 3-D conv at most " + " / ".join("-" if c is None else f"{c:g}" for c in caps) + " of peak"
    eff = (f"compute model: {conv}, memory {k.memory_efficiency:g} of bandwidth{shares}, waves over {spec.sm_count} SMs,"
           f" {k.launch_s * 1e6:g} us launch floor")  # fmt: skip
    source = (f"ESTIMATED by `oracle profile --estimate` (compute model, not measured) for the {system.gpu_model}"
              f" of {system.name}: {precision}, batch {batch}; {eff}")  # fmt: skip
    return Profile(model=model.name, device=system.gpu_model, framework="none (oracle compute-model estimate)",
                   layers=layers, kind="estimated", measured_samples_per_gpu=batch, source=source,
                   meta=(("batch", str(batch)), ("date", date), ("efficiency", eff),
                         ("notes", "see oracle/compute/kernels.py")),
                   precision=precision)  # fmt: skip


__all__ = [
    "DEFAULT_COMPUTE_EFFICIENCY",
    "DEFAULT_MEMORY_EFFICIENCY",
    "WU_PASSES",
    "bytes_per_sample",
    "estimate",
    "layer_times",
]
