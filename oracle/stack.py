"""A software stack (issue 25): what the training software adds to the hardware.

A stack file (``stacks/NAME.yaml``, docs/file-formats.md "Stack") describes the
training software the way a system file describes the hardware: its compute efficiency
relative to oracle's compute model, per precision and GPU generation; its fixed costs per
iteration; its input pipeline's rate; its collective library, algorithm policy, gradient
bucketing and overlap; and its memory model.  Every value carries its source and, where
fitted, the rows it was fitted on (:class:`Sourced`).  Applied by compute/stack.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from oracle.vocabulary import BF16, FP16, FP32, NO_STACK

# the compute model's kernel fields (compute/kernels.KernelConstants) a stack may set as
# compute.<field>, beyond fused activations: batchnorm's, maxpool's and avgpool's bandwidth
# shares (kernels.MEMORY_EFFICIENCY_FIELDS) and windowed pooling's per-element rate
STACK_KERNEL_FIELDS = ("reduction_memory_efficiency", "maxpool_memory_efficiency", "avgpool_memory_efficiency",
                       "pool_window_efficiency")  # fmt: skip

if TYPE_CHECKING:
    from oracle.stack_paths import StackPaths

# precision classes of a stack's compute efficiency: "fp32" covers fp32 and tf32 (the
# compute model already carries tf32's tensor cores), "mixed" is --mixed-precision / fp16 / bf16
PRECISION_CLASSES = (FP32, "mixed")
TWO_BYTE = (FP16, BF16)  # precisions of the "mixed" class without --mixed-precision


@dataclass(frozen=True)
class Sourced:
    """One stack value, where it comes from, and the rows it was fitted on (if fitted)."""

    value: float | str
    source: str
    fitted_on: str = ""


@dataclass(frozen=True)
class Stack:
    """A training software stack (docs/file-formats.md "Stack")."""

    name: str
    file: str
    description: str
    # speed relative to the compute model (1: as modelled; times are divided by it):
    # (gpu generation or "" for any, precision class, value)
    efficiency: tuple[tuple[str, str, Sourced], ...]
    # compute speed per GPU at more than one GPU relative to one GPU, per precision class
    # (overlapped collective kernels and the input pipeline share the GPU's SMs and memory
    # and the host's CPUs): (precision class, value); () : not stated (1)
    data_parallel_efficiency: tuple[tuple[str, Sourced], ...]
    compute_scaling: Sourced  # "model" | "linear" (compute/options.py)
    fixed_s: Sourced  # seconds per iteration beyond the kernels (optimizer step overhead, syncs, reductions)
    launch_floor_s_per_layer: Sourced  # an iteration's compute lasts at least layers x this (host launches)
    input_samples_per_s_per_gpu: Sourced | None  # one loader per GPU (None: no bound)
    input_samples_per_s_per_node: Sourced | None  # all loaders of a node together
    library: Sourced  # collective library (nccl, mpi, ...), informative
    algorithm: Sourced  # "system": the system file's choice; else compute/network.ALGORITHMS
    overlap: Sourced  # "buckets" | "none" (compute/overlap.py)
    bucket_MB: Sourced  # gradient bucket / fusion buffer, MiB
    # a background loop that starts collectives only at cycle boundaries (Horovod): the last
    # gradients wait half a cycle on average; 0 when collectives start as soon as ready (DDP)
    cycle_time_s: Sourced
    memory_model: Sourced  # "framework" | "paradl" (docs/memory.md)
    # vocabulary.COST_MODELS: "paradl-tool" costs points with ParaDL's own tool
    # (compute/paradl/paradl_stack.py); None: the formulas of docs/cost-model.md
    cost_model: Sourced | None = None
    # which layers model-parallel strategies split (issue 27 point 3; None: docs/cost-model.md's
    # rule): ``layers.split_types`` the layer types filter and channel split ("conv, fc");
    # ``layers.spatial_split_after`` per model name the last layer spatial splits, as a
    # tuple of (model name, layer name)
    split_types: Sourced | None = None
    spatial_split_after: Sourced | None = None
    # what its communication and input code did (issue 27; oracle/stack_paths.py); None: none
    paths: StackPaths | None = None

    def filter_types(self) -> tuple[str, ...] | None:
        """The layer types filter and channel split, or None for the cost model's rule."""
        return None if self.split_types is None else tuple(self.split_types.value)

    def spatial_split_for(self, model_name: str) -> str | None:
        """The last layer spatial parallelism splits in ``model_name``, or None."""
        return None if self.spatial_split_after is None else dict(self.spatial_split_after.value).get(model_name)
    # HBM bytes moved per parameter and iteration by the optimizer step and the precision's
    # per-weight passes (AMP casts, gradient unscaling), per precision class; () : the compute
    # model's SGD-momentum update (compute/kernels.WU_PASSES fp32 passes)
    update_bytes_per_parameter: tuple[tuple[str, Sourced], ...] = ()
    # NCCL_ALGO: the algorithms NCCL may choose, comma-separated (ring, tree, nvls, collnet);
    # None: NCCL's own choice among all the system offers
    nccl_algorithms: Sourced | None = None
    # whether element-wise activations after batchnorm/add run inside that kernel (cuDNN's
    # fused ops, XLA, MXNet's NHWC kernels) or as kernels of their own (eager PyTorch);
    # None: as the system's implementation says
    fused_activations: Sourced | None = None
    # the fraction of the HBM bandwidth the software's batchnorm kernels (per-channel
    # reductions), maxpool kernels and (windowed) avgpool kernels reach; None: the compute model's
    reduction_memory_efficiency: Sourced | None = None
    maxpool_memory_efficiency: Sourced | None = None
    # the precision its gradients are all-reduced in: "fp32" (torch.cuda.amp keeps fp32
    # parameters, so their gradients and DDP's buckets are fp32) or None: the activations'
    gradient_precision: Sourced | None = None
    # GPU time per layer and iteration beyond its kernels' modelled time (the gaps between
    # dependent kernels, each small kernel's ramp and tail), added to an ESTIMATED profile's
    # forward and backward; None: none (a measured profile holds it already)
    gpu_overhead_s_per_layer: Sourced | None = None

    # the tensor layout the software runs each precision class in, which its efficiencies
    # hold for: (precision class, vocabulary.MEMORY_FORMATS value); () : not stated
    memory_format: tuple[tuple[str, Sourced], ...] = ()
    # NCHW over channels-last kernel time (fitted on measured steps), per GPU generation and precision
    # class: (gpu generation, precision class, value); what --memory-format moves by
    channels_last_speedup: tuple[tuple[str, str, Sourced], ...] = ()
    avgpool_memory_efficiency: Sourced | None = None  # with the shares above (kept last: positional)
    # windowed pooling's elements per issued thread instruction (gpus.GpuSpec.issue_rate)
    pool_window_efficiency: Sourced | None = None
    # the math the software runs a float32 model's convolutions and GEMMs in on GPUs with
    # TF32 tensor cores (Ampere and later): "tf32" (its default there) or "fp32"; None: as
    # asked (compute/options.stack_precision)
    fp32_math: Sourced | None = None
    # whether the file is one of the shipped stacks/ (set by load/stack.load_stack): see label
    shipped: bool = False

    @property
    def label(self) -> str:
        """How every output names this stack: a shipped one by its name (``pytorch``), a
        user's file by its path as given, so that a modified copy of a shipped file
        (``/tmp/x/pytorch.yaml``, still ``name: pytorch``) cannot pass for the shipped one."""
        return self.name if self.shipped else self.file

    def memory_format_for(self, precision_class: str) -> str | None:
        value = dict(self.memory_format).get(precision_class)
        return None if value is None else str(value.value)

    def channels_last_speedup_for(self, gpu_model: str, precision_class: str) -> Sourced | None:
        """The speedup measured on a GPU named ``gpu_model`` (its generation matched by name)."""
        return _for_gpu(self.channels_last_speedup, gpu_model, precision_class, generic=False)

    def gpu_overhead_s(self) -> float:
        """Seconds per layer and iteration of :attr:`gpu_overhead_s_per_layer` (0 if not given)."""
        return 0.0 if self.gpu_overhead_s_per_layer is None else float(self.gpu_overhead_s_per_layer.value)

    def kernel_constants(self) -> dict:
        """The compute model's kernel fields (compute/kernels.KernelConstants) this stack's
        software sets: its fused or separate activations and batchnorm's and maxpool's
        bandwidth shares; the fields it leaves to the model are absent."""
        out: dict = {}
        if self.fused_activations is not None:
            out["fuse_activations"] = bool(self.fused_activations.value)
        for field in STACK_KERNEL_FIELDS:
            if (v := getattr(self, field)) is not None:
                out[field] = float(v.value)
        return out

    def data_parallel_efficiency_for(self, precision_class: str) -> float:
        """1 where the stack states none (no multi-GPU measurement fitted it)."""
        value = dict(self.data_parallel_efficiency).get(precision_class)
        return 1.0 if value is None else float(value.value)

    def update_bytes_for(self, precision_class: str) -> float | None:
        """Bytes per parameter of one optimizer step at ``precision_class`` (None: not given)."""
        value = dict(self.update_bytes_per_parameter).get(precision_class)
        return float(value.value) if value is not None else None

    def efficiency_for(self, gpu_model: str, precision_class: str) -> Sourced | None:
        """The efficiency of ``precision_class`` on a GPU named ``gpu_model``: the entry of
        its generation (matched by name, e.g. "A100" in "A100-SXM4-80GB") before the generic one."""
        return _for_gpu(self.efficiency, gpu_model, precision_class, generic=True)


def stack_label(stack: Stack | None) -> str:
    """The name outputs give the stack in force: its :attr:`Stack.label`, or ``none``
    (vocabulary.NO_STACK, what ``--stack none`` says) when there is none."""
    return NO_STACK if stack is None else stack.label


def _for_gpu(entries, gpu_model: str, precision_class: str, generic: bool) -> Sourced | None:
    """Of (gpu generation or "", precision class, value) ``entries``, the one of the GPU's
    generation (matched by name), else (``generic``) the one for any GPU, else None."""
    name = gpu_model.upper()
    fallback = None
    for gpu, cls, value in entries:
        if cls != precision_class:
            continue
        if gpu and gpu.upper() in name:
            return value
        if not gpu and generic:
            fallback = value
    return fallback
