"""Options of a projection that are not part of the input files (precision, memory
model, overlap, collectives, ...): one frozen record per run, shared by every strategy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PRECISION_BYTES = {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2}
MEMORY_MODELS = ("framework", "paradl")  # docs/memory.md and docs/cost-model.md
# weak scaling's per-GPU batch when neither an option nor the profile gives one: the
# documented CLI default (README, "Without a batch"), also the spread batch of conversion.py
DEFAULT_BATCH_PER_GPU = 32


@dataclass(frozen=True)
class Options:
    """Implementation parameters that are not part of the input files."""

    precision: str = "fp32"  # δ: bytes per item (docs/cost-model.md)
    # what GPU memory counts (docs/memory.md and docs/cost-model.md): "framework" (saved tensors, compute/memory.py)
    # or "paradl" (Table 3's upper bound, scaled by γ)
    memory_model: str = "framework"
    memory_reuse: float = 1.0  # γ, 0 < γ <= 1 (ParaDL §4.2); paradl memory model only
    contention: float | None = None  # φ override (docs/cost-model.md)
    segments: int | None = None  # pipeline S; default min(B, 4p)
    samples: int | None = None  # D override (e.g. ParaDL's rounded 1.28M)
    collective: str | None = None  # all-reduce algorithm override (network.ALGORITHMS)
    # memory beyond ParaDL (issue 8; defaults reproduce ParaDL's formula)
    optimizer: str = "sgd"  # sgd | momentum | adam: optimizer state per parameter
    mixed_precision: bool = False  # 2-byte activations/weights/gradients + fp32 master weights
    zero: int = 0  # ZeRO stage 0-3 across the data-parallel group
    checkpointing: bool = False  # pipeline: keep stage inputs only, recompute the forward
    # overlap of communication with computation (issue 8): "none" (ParaDL) or "buckets"
    overlap: str = "none"
    bucket_bytes: float = 25 * 2**20  # gradient bucket size (PyTorch DDP default); 0: one per layer
    # issue 14: the last layer spatial parallelism splits (default: the last layer whose
    # output still has a spatial extent > 1, docs/cost-model.md); CosmoFlow codes gather earlier
    # (after conv2/pool2, ParaDL §4.5.1)
    spatial_split_after: str | None = None
    # overlap as Lee et al. (HiPC 2017) do it (issue 18): gradients in chunks of k layers
    # (0: by bucket_bytes), and the delayed update of chosen layers (names or layer types,
    # e.g. "fc"), whose gradient exchange overlaps the next iteration's forward
    bucket_layers: int = 0
    delayed_update: tuple[str, ...] = ()
    # Lee et al. (HiPC 2017) §III-C-2: chosen layers (names or types) compute their weight
    # gradient for the whole mini-batch on every GPU after an all-gather of their inputs
    # and output errors, instead of all-reducing it (data parallelism)
    replicated_gradients: tuple[str, ...] = ()
    # compute model (issue 13, docs/memory.md and docs/cost-model.md): "model" converts a profile to the system's GPU,
    # the run's precision and each point's per-GPU batch (when the caller passes the
    # profile's origin to Context); "linear" is ParaDL's per-sample arithmetic
    compute_scaling: str = "model"
    # issue 25: the software stack in force (oracle/stack.py, applied by compute/stack.py); None: none named
    stack: Any = None

    @property
    def memory_model_extended(self) -> bool:
        return (
            self.optimizer != "sgd" or self.mixed_precision or self.zero > 0 or self.checkpointing
        )

    @property
    def delta(self) -> int:
        """Bytes per activation, gradient and message item: the precision's, or 2 with
        mixed precision (whose fp32 master weights are counted in memory only)."""
        return 2 if self.mixed_precision else PRECISION_BYTES[self.precision]


@dataclass(frozen=True)
class FromProfile:
    """A run value that follows the profile unless an option sets it (issue 23)."""

    value: Any
    given: bool  # set by an option
    recorded: Any  # what the profile records (None: nothing)


@dataclass(frozen=True)
class RunDefaults:
    """The precision and per-GPU batch of a run and where they came from; batch_per_gpu
    is None under strong scaling (a global batch given)."""

    precision: FromProfile
    batch_per_gpu: FromProfile | None


def profile_defaults(profile, precision: str | None = None, batch: float | None = None,
                     batch_per_gpu: float | None = None) -> RunDefaults:  # fmt: skip
    """The one rule for what a run takes from its profile (issue 23): precision and per-GPU
    batch are the options' where given (None: not given), else what the profile records
    (its ``precision``, fp32 by the file format's default; its ``measured_samples_per_gpu``,
    else :data:`DEFAULT_BATCH_PER_GPU`).  The device is always the system's GPU."""
    prec = FromProfile(precision or profile.precision, precision is not None, profile.precision)
    if batch is not None:
        return RunDefaults(prec, None)
    recorded = float(profile.measured_samples_per_gpu) if profile.measured_samples_per_gpu else None
    value = batch_per_gpu if batch_per_gpu is not None else (recorded or float(DEFAULT_BATCH_PER_GPU))
    return RunDefaults(prec, FromProfile(float(value), batch_per_gpu is not None, recorded))
