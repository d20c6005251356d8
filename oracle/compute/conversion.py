"""Profiles that transfer, never silently (issue 13; docs/memory.md and docs/cost-model.md ``--compute-scaling model``).

A profile was measured (or estimated) on one device, at one precision and per-GPU batch:
its *origin*.  A run uses the system's GPU, the run's precision and, per point, a per-GPU
batch (the work per kernel).  Each layer's profile time is multiplied by the ratio of the
compute model's per-sample times (:mod:`oracle.compute.kernels`), target over origin::

    FW_l(target) = FW_l(profile) · [T_fw,l(target GPU, precision, b) / b] / [T_fw,l(origin) / b0]

(likewise BW_l; WU_l by the ratio of the weight-update times), so at the profile's own
device, precision and batch the factor is exactly 1 and compute is ParaDL's.  The model
supplies only ratios; the measured times keep their level (Habitat's idea of scaling a
measured profile rather than predicting from scratch; Yu et al., USENIX ATC 2021).

Fallbacks, each stated in :meth:`Conversion.label`: a profile device that is not a
known GPU (a CPU profile, say) and a system GPU without peak or bandwidth give no
conversion (compute as the profile, ParaDL's arithmetic); a profile without its batch is
converted in device and precision only.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from oracle.compute import kernels as K
from oracle.compute import kernels_array as KA
from oracle.compute.binding import bind_profile
from oracle.compute.options import DEFAULT_BATCH_PER_GPU
from oracle.errors import OracleError
from oracle.gpus import GpuSpec, architecture_of, lookup, same_gpu
from oracle.model import Model, Profile, System
from oracle.stack import STACK_KERNEL_FIELDS
from oracle.vocabulary import BF16, FP16, FP32, PRECISION_BYTES


@dataclass(frozen=True)
class Origin:
    """Where a profile's times come from."""

    device: str
    precision: str
    batch: float | None
    spec: GpuSpec | None
    file: str = ""
    # the kernel fields of the stack it was measured under (Profile.kernels): eager PyTorch's
    # separate activations and slower batchnorm, for `oracle profile --device cuda`
    kernels: tuple[tuple[str, object], ...] = ()

    @classmethod
    def of(cls, profile: Profile) -> Origin:
        batch = float(profile.measured_samples_per_gpu) if profile.measured_samples_per_gpu else None
        return cls(profile.device, profile.precision, batch, lookup(profile.device), profile.file, profile.kernels)

    def text(self, batch: float | None = None) -> str:
        b = self.batch if self.batch is not None else batch
        return f"{self.device} {self.precision}" + (f" b={b:g}" if b is not None else "")


def run_precision(precision: str, mixed: bool) -> str:
    """The arithmetic precision of conv/fc: the run's, or fp16 (bf16 if asked) when mixed."""
    if mixed:
        return BF16 if precision == BF16 else FP16
    return precision


def system_spec(system: System) -> GpuSpec | None:
    """The system's GPU for the compute model (SM count from oracle.gpus if the file has
    none), or None when the file lacks peak or bandwidth."""
    if not system.gpu_memory_bandwidth_Bps or not (system.gpu_peaks or system.gpu_peak_flops):
        return None
    peaks = system.gpu_peaks or ((FP32, system.gpu_peak_flops),)
    known = lookup(system.gpu_model)
    sms = system.gpu_sm_count or (known.sm_count if known else 0)
    arch = system.gpu_architecture or architecture_of(system.gpu_model)  # the file's, else by name
    return GpuSpec(system.gpu_model, tuple(peaks), system.gpu_memory_bandwidth_Bps, sms, architecture=arch)


def _same(a: GpuSpec, b: GpuSpec) -> bool:
    def key(g: GpuSpec) -> tuple:
        return g.peak_flops, g.memory_bandwidth_Bps, g.sm_count, g.architecture

    return key(a) == key(b)


class Conversion:
    """Per-layer multipliers from a profile's origin to a system GPU and run precision."""

    def __init__(self, model: Model, origin: Origin, system: System, precision: str, mixed: bool,
                 constants: K.KernelConstants = K.DEFAULT_CONSTANTS,
                 arrays: KA.ModelArrays | None = None) -> None:  # fmt: skip
        # the profile ran with its stack's kernels where it names one (Origin.kernels), else the
        # model's default (fused activations, batchnorm and maxpool at its streaming speed);
        # the system says how its framework runs (implementation.fused_activations, a stack's
        # kernel bandwidth shares)
        impl = system.implementation
        shares = {f: getattr(impl, f) or getattr(constants, f) for f in STACK_KERNEL_FIELDS}
        self.k_src = replace(constants, **dict(origin.kernels))
        self.k = replace(constants, fuse_activations=impl.fused_activations, **shares)
        self.precision = run_precision(precision, mixed)
        self.mixed = mixed
        self.target = system_spec(system)
        if (spec := device_spec(origin.device, system)) is not None:
            origin = replace(origin, spec=spec)  # the system's own GPU: the file's figures
        self.model, self.origin = model, origin
        self.reason = ""
        if origin.spec is None:
            self.reason = f"profile device '{origin.device}' is not a GPU oracle knows (oracle/gpus.py)"
        elif self.target is None:
            self.reason = f"system '{system.name}' gives no gpu.peak_TFLOPS or gpu.memory_bandwidth_GB_per_s"
        if self.target is not None and self.target.peak(self.precision) is None:
            have = ", ".join(self.target.precisions) or "none"
            raise OracleError(
                f"GPU {system.gpu_model} has no peak for precision {self.precision} (has: {have})",
                file=system.file or None,
                path=f"gpu.peak_TFLOPS.{self.precision}",
                hint="give that precision's peak in TFLOP/s, or run with another --precision",
            )
        if origin.spec is not None and origin.spec.peak(origin.precision) is None:
            raise OracleError(
                f"device {origin.device} has no peak for the profile's precision {origin.precision}",
                file=origin.file or None,
                path="precision",
            )
        self._cache: dict[float, tuple[np.ndarray, ...] | None] = {}
        self._origin_times: dict[float, np.ndarray] = {}
        self._arrays = {self.k_src.fuse_activations: arrays} if arrays is not None else {}

    @property
    def active(self) -> bool:
        return not self.reason

    def identity(self, batch: float) -> bool:
        o = self.origin
        return (not self.active) or (
            _same(o.spec, self.target) and o.precision == self.precision and o.batch in (None, batch)  # type: ignore[arg-type]
            and self.k == self.k_src
        )

    def _times(self, spec: GpuSpec, precision: str, batch: float, k: K.KernelConstants) -> np.ndarray:
        if k.fuse_activations not in self._arrays:
            self._arrays[k.fuse_activations] = KA.ModelArrays.of(self.model, k)
        fw, bw = KA.per_sample_array(self._arrays[k.fuse_activations], spec, precision, batch, k)
        return np.stack([fw, bw], axis=1)

    def factors(self, batch: float) -> tuple[np.ndarray, ...] | None:
        """(fw, bw) multipliers and (fw, bw) additions per layer at per-GPU batch
        ``batch``; None: identity.  A layer the origin model gives no time (an activation
        fused there) but the target does (not fused here) takes the target model's time."""
        if batch in self._cache:
            return self._cache[batch]
        out = None
        if not self.identity(batch):
            ob = self.origin.batch if self.origin.batch is not None else batch
            if ob not in self._origin_times:
                spec = self.origin.spec
                assert spec is not None  # active
                self._origin_times[ob] = self._times(spec, self.origin.precision, ob, self.k_src)
            src = self._origin_times[ob]
            dst = self._times(self.target, self.precision, batch, self.k)  # type: ignore[arg-type]
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(src > 0, dst / np.where(src > 0, src, 1.0), 1.0)
            add = np.where(src > 0, 0.0, dst)
            out = (ratio[:, 0], ratio[:, 1], add[:, 0], add[:, 1])
        self._cache[batch] = out
        return out

    def update_factor(self) -> float:
        """Weight-update multiplier (memory-bound: bandwidth and bytes per weight)."""
        if not self.active:
            return 1.0
        o, t = self.origin, self.target
        src = PRECISION_BYTES[o.precision] / o.spec.memory_bandwidth_Bps  # type: ignore[union-attr]
        dst = (4 if self.mixed else PRECISION_BYTES[self.precision]) / t.memory_bandwidth_Bps  # type: ignore[union-attr]
        return dst / src

    def label(self, batch: float | None = None) -> str:
        """From what to what, for every output format."""
        if not self.active:
            return f"not converted ({self.reason}): profile times used as measured"
        b = "" if batch is None else f" b={batch:g}"
        note = "" if self.origin.batch is not None else " (profile records no batch: device and precision only)"
        if not self.k.fuse_activations:
            note += " (activations not fused)"
        return f"{self.origin.text(batch)} → {self.target.name} {self.precision}{b}{note}"  # type: ignore[union-attr]


def device_spec(device: str, system: System | None = None) -> GpuSpec | None:
    """The figures of a profile's ``device``: where ``device`` is the GPU of ``system`` (the
    same model as its gpu.model, oracle.gpus.same_gpu: a profile measured or estimated on the
    system's own GPU), the system file's, which an estimate on that system used; else the GPU
    library's; None when neither has them."""
    own = system_spec(system) if system is not None and same_gpu(device, system.gpu_model) else None
    return own or lookup(device)


def spreads_by_model(profile: Profile, system: System | None = None) -> bool:
    """Whether :func:`spread_times` can use the compute model for this profile (on ``system``)."""
    spec = device_spec(profile.device, system)
    return spec is not None and spec.peak(profile.precision) is not None


def spread_times(model: Model, profile: Profile, constants: K.KernelConstants = K.DEFAULT_CONSTANTS,
                 arrays: KA.ModelArrays | None = None, system: System | None = None):  # fmt: skip
    """Per-layer (FW, BW) weights for spreading a total-only profile: the compute model's
    times at the profile's device, precision and batch (32, predict's default, if it
    records none), or None when its device is not a known GPU, neither in the library nor
    the GPU of ``system`` (then the total is spread by FLOPs)."""
    spec = device_spec(profile.device, system)
    if spec is None or spec.peak(profile.precision) is None:  # spreads_by_model
        return None
    origin = Origin.of(profile)
    batch = origin.batch or DEFAULT_BATCH_PER_GPU  # predict's default, whatever the run
    arrays = arrays or KA.ModelArrays.of(model, constants)
    fw, bw = KA.per_sample_array(arrays, spec, origin.precision, batch, constants)
    return list(zip(fw.tolist(), bw.tolist()))


def prepare(model: Model, system: System, profile: Profile, options) -> tuple[tuple, Conversion | None]:
    """Per-layer times and the conversion for a run with ``options`` (context.Options):
    ParaDL's binding and no conversion with ``compute_scaling="linear"``; with "model"
    a total-only profile spread by the compute model (at the profile's batch, else 32,
    whatever the run: a profile means the same in every command) and a :class:`Conversion`."""
    if options.compute_scaling == "linear":
        return bind_profile(model, profile), None
    arrays = KA.ModelArrays.of(model)  # once for spreading and conversion
    spread = None if profile.layers else spread_times(model, profile, arrays=arrays, system=system)
    times = bind_profile(model, profile, spread)
    origin = calibrated_origin(Origin.of(profile), system, model.name)
    return times, Conversion(model, origin, system, options.precision, options.mixed_precision, arrays=arrays)


def calibrated_origin(origin: Origin, system: System, model_name: str) -> Origin:
    """A profile that records no batch, whose system's compute factor for the model was
    measured at a batch (issue 26, implementation.compute_samples_per_gpu): that batch is
    its origin, so the compute model's batch curve carries the calibrated times to other
    batches instead of a flat factor."""
    b = system.implementation.compute_batch(model_name)
    return replace(origin, batch=float(b)) if origin.batch is None and b else origin


def recalibrated(conversion: Conversion | None, system: System, model_name: str) -> Conversion | None:
    """``conversion`` with the origin :func:`calibrated_origin` gives on ``system``."""
    import copy

    if conversion is None:
        return None
    origin = calibrated_origin(conversion.origin, system, model_name)
    if origin == conversion.origin:
        return conversion
    out = copy.copy(conversion)
    out.origin, out._cache, out._origin_times = origin, {}, {}
    return out


def build_context(model: Model, system: System, profile: Profile, options):
    """The cost context of a run (compute.context.Context), converted as ``options`` say."""
    from oracle.compute.context import Context

    times, conversion = prepare(model, system, profile, options)
    return Context(model, system, times, options, profile.kind, conversion=conversion)
