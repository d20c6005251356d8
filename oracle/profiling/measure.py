"""Measure per-layer forward, backward and weight-update times with PyTorch.

How each time is isolated (so that every layer's time is its own):

1. The network (:mod:`oracle.profiling.torchnet`) runs once on a random mini-batch
   without autograd; every layer's output is kept.  Each layer then gets its real
   input tensors: the kept outputs of its producers, detached, as leaves that require
   a gradient, exactly as inside a training step.  The model's input does not require
   a gradient, so the first layer's backward computes only weight gradients, as in
   training.
2. **Forward** ``FW_l``: the time of ``module(*inputs)`` with autograd recording (the
   graph a training forward builds).
3. **Backward** ``BW_l``: right after each timed forward, ``y.backward(g)`` with a
   random upstream gradient ``g`` of ``y``'s shape, timed alone.  It computes the
   layer's input gradients and its weight gradients and nothing else.  Gradients are
   reset to None before every repeat, as ``zero_grad(set_to_none=True)`` does, so the
   weight gradients are written, not accumulated.
4. Each is repeated ``warmup + repeats`` times; the first ``warmup`` are discarded and
   the **median** of the rest, divided by the batch, is the per-sample time.  On CUDA
   a time is the GPU's execution time of what the region launched, read from CUDA
   events with the launches queued behind a spin kernel (``oracle.profiling.timing.GpuClock``): the host's
   launch time is left out, as the cost model keeps it apart (the stack's launch floor).
5. **Weight update** ``WU_l`` (per iteration): ``torch.optim.SGD(momentum=0.9)`` over
   all parameters of the network is timed as a whole (median of repeats), and so is one
   such optimizer per layer, over that layer's parameters only.  The whole step is
   apportioned to the layers in proportion to their separately measured steps:
   ``WU_l = t_l / sum(t) * T_step``.  The per-layer steps give the split (a layer's
   share of bytes plus its per-tensor overhead); the whole step gives the total, without
   counting the optimizer's fixed per-call overhead once per layer.
6. **Whole training step** for the consistency check: ``zero_grad``, forward of the
   whole network, backward with a random upstream gradient, optimizer step, at the
   same batch.  It is timed ``repeats`` times before the per-layer runs and
   ``repeats`` times after them (after ``warmup`` untimed steps), and the median of
   all is kept, so that a change of machine load during the run affects both sides
   alike.  ``batch * sum(FW_l + BW_l) + sum(WU_l)`` should be close to it.  On CUDA
   both sides are GPU times, and the wall-clock step is recorded beside them: where it
   is longer, the host's launching, not the GPU, bounded the step.

On CPU the number of threads is set (``--threads``) or left as PyTorch chose it, and
recorded (``torch.get_num_threads()``).  Other processes on the machine make CPU
timings noisy (multi-threaded ones most), so on Linux the CPU time that *other*
processes used during the measurement is recorded too, as a share of all CPUs
(from ``/proc/stat`` minus this process's own CPU time).  Python's garbage collector
is paused while timing.
"""

from __future__ import annotations

import gc
import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone

from oracle.errors import OracleError
from oracle.model import MODEL_INPUT, LayerTimes, Model, Profile
from oracle.profiling import require_torch
from oracle.profiling.timing import Timer
from oracle.vocabulary import FP32, TF32

# progress(done, total, what): called between measurements (never inside a timed region)
Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class Measurement:
    """What :func:`measure` found, with what it needs to write a profile."""

    model: str
    device: str  # CPU model name or CUDA device name
    device_type: str  # "cpu" or "cuda"
    torch_version: str
    batch: int
    threads: int
    repeats: int
    warmup: int
    date: str  # ISO 8601, UTC
    layers: tuple[tuple[str, LayerTimes], ...]
    step_s: float  # whole training step (fw + bw + optimizer), per iteration, median
    optimizer_step_s: float  # SGD-momentum step of the whole network, median
    wu_separate_sum_s: float  # sum of the per-layer optimizer steps, timed separately
    elapsed_s: float  # wall time of the whole measurement
    others_cpu_share: float | None = None  # CPU time other processes used / (wall * CPUs)
    cpus: int | None = None  # logical CPUs of the machine
    peak_allocated_bytes: float | None = None  # CUDA: torch.cuda.max_memory_allocated of a step
    step_wall_s: float | None = None  # CUDA: the whole step, wall-clock (host launches included)
    conv_tf32: bool | None = None  # CUDA: torch.backends.cudnn.allow_tf32 (PyTorch's default: True)
    gpu_short_runs: tuple[int, int] | None = None  # CUDA: (timed runs that outlasted their spin, runs)
    step_host_s: float | None = None  # CUDA: the host's launching of one whole step (median)

    @property
    def launch_floor_s_per_layer(self) -> float | None:
        """This host's launching of a whole step per layer: what a stack's
        ``iteration.launch_floor_s_per_layer`` holds (optimizer step included, a little over)."""
        if self.step_host_s is None or not self.layers:
            return None
        return self.step_host_s / len(self.layers)

    @property
    def framework(self) -> str:
        return f"PyTorch {self.torch_version}"

    @property
    def fw_iteration_s(self) -> float:
        return self.batch * sum(t.fw_s for _, t in self.layers)

    @property
    def bw_iteration_s(self) -> float:
        return self.batch * sum(t.bw_s for _, t in self.layers)

    @property
    def wu_iteration_s(self) -> float:
        return sum(t.wu_s for _, t in self.layers)

    @property
    def layer_sum_s(self) -> float:
        """The sum of the per-layer times for one iteration at this batch."""
        return self.fw_iteration_s + self.bw_iteration_s + self.wu_iteration_s

    @property
    def ratio(self) -> float:
        """Sum of per-layer times / measured whole training step."""
        return self.layer_sum_s / self.step_s if self.step_s > 0 else float("nan")

    def source(self) -> str:
        where = (
            f"{self.device}, {self.threads} thread{'s' if self.threads != 1 else ''}"
            if self.device_type == "cpu"
            else self.device
        )
        return (
            f"measured with `oracle profile` on {where}, {self.framework}, on {self.date}:"
            f" fp32, batch {self.batch}, median of {self.repeats} repeats after"
            f" {self.warmup} warm-up{self._gpu_method()}; each layer timed in isolation on its real input"
            " (backward via autograd with a random upstream gradient); weight update ="
            " SGD momentum 0.9 step of the whole network, apportioned to layers by their"
            " separately timed steps"
        )

    def _gpu_method(self) -> str:
        if self.device_type != "cuda":
            return ""
        tf32 = "TF32" if self.conv_tf32 else FP32
        return f" (convolutions in {tf32}, cuDNN autotuned; GPU execution times, launches excluded)"

    def notes(self) -> str:
        return (
            f"per-layer sum {self.layer_sum_s:.6g} s per iteration (fw {self.fw_iteration_s:.6g},"
            f" bw {self.bw_iteration_s:.6g}, wu {self.wu_iteration_s:.6g}) vs measured whole"
            f" training step {self.step_s:.6g} s: ratio {self.ratio:.3f}."
            f" Separately timed per-layer optimizer steps summed to {self.wu_separate_sum_s:.6g} s"
            f" against {self.optimizer_step_s:.6g} s for one step over the whole network."
            + self.gpu_note()
            + self.load_note()
        )

    def gpu_note(self) -> str:
        if self.step_wall_s is None:
            return ""
        return (
            " Times are the GPU's execution times (the host's kernel launches left out);"
            f" the whole step took {self.step_wall_s:.6g} s wall-clock"
            + (" (bound by the host's launches)." if self.step_wall_s > 1.2 * self.step_s else ".")
            + self._host_note()
            + self._short_note()
        )

    def _host_note(self) -> str:
        if self.launch_floor_s_per_layer is None:
            return ""
        return (
            f" The host took {self.step_host_s:.6g} s to launch one step,"
            f" {self.launch_floor_s_per_layer:.3g} s per layer: a stack's"
            " iteration.launch_floor_s_per_layer for this host."
        )

    def _short_note(self) -> str:
        short, runs = self.gpu_short_runs or (0, 0)
        if not short:
            return ""
        return (
            f" {short} of {runs} timed runs launched for longer than the spin kernel ahead of"
            " them ran: their times include gaps between launches."
        )

    def load_note(self) -> str:
        if self.others_cpu_share is None or self.device_type != "cpu":
            return ""
        return (
            f" Other processes used {100 * self.others_cpu_share:.0f}% of the machine's"
            f" {self.cpus} logical CPUs while measuring."
        )

    def to_profile(self) -> Profile:
        return Profile(
            model=self.model,
            device=self.device,
            framework=self.framework,
            layers=self.layers,
            kind="measured",
            measured_samples_per_gpu=self.batch,
            source=self.source(),
            # on a GPU: convolutions in TF32 as PyTorch runs them by default, under eager
            # PyTorch's kernels (the pytorch stack's; a conversion starts from them)
            precision=TF32 if self.device_type == "cuda" and self.conv_tf32 else FP32,
            stack="pytorch" if self.device_type == "cuda" else "",
            meta=(
                ("batch", str(self.batch)),
                ("threads", str(self.threads)),
                ("date", self.date),
                ("framework_version", self.torch_version),
                ("notes", self.notes()),
                *((("peak_allocated_bytes", f"{self.peak_allocated_bytes:.0f}"),) if self.peak_allocated_bytes else ()),
            ),
        )


def cpu_name() -> str:
    """The CPU's model name (from /proc/cpuinfo on Linux), or what platform knows."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    if name:
                        return name
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def _available_bytes(torch, device) -> float | None:
    if device.type == "cuda":
        try:
            return float(torch.cuda.mem_get_info(device)[0])
        except Exception:  # noqa: BLE001 - best effort only
            return None
    try:
        with open("/proc/meminfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def memory_needed(model: Model, batch: int) -> float:
    """A rough upper bound (bytes, fp32) of what :func:`measure` holds at once: every
    layer's output kept for the per-layer runs plus as much again for autograd in the
    whole step, and weights, gradients and two momentum buffers."""
    activations = model.info[0].input_elements + sum(i.output_elements for i in model.info)
    return 4.0 * (2.0 * batch * activations + 4.0 * model.parameters)


def measure(
    model: Model,
    *,
    batch: int = 32,
    device: str = "cpu",
    repeats: int = 10,
    warmup: int = 3,
    threads: int | None = None,
    seed: int = 0,
    progress: Progress | None = None,
    clock: Callable[[], float] | None = None,
) -> Measurement:
    """Time every layer of ``model`` (see the module docstring for the method).

    ``clock``: seconds as the timer reads them, wall-clock (``time.perf_counter``) by
    default; ``time.thread_time`` counts only the CPU time of this thread, which other
    processes' load does not inflate (with ``threads=1`` on the CPU PyTorch computes
    the forward and the backward on the calling thread)."""
    torch = require_torch()
    if batch < 1 or repeats < 1 or warmup < 0:
        raise OracleError("batch and repeats must be at least 1 and warm-up at least 0")
    if device not in ("cpu", "cuda"):
        raise OracleError(f"unknown device '{device}'; expected cpu or cuda", path="--device")
    if device == "cuda" and not torch.cuda.is_available():
        raise OracleError(
            f"CUDA is not available to PyTorch {torch.__version__} on this machine",
            path="--device",
            hint="use --device cpu",
        )
    dev = torch.device(device)
    need = memory_needed(model, batch)
    avail = _available_bytes(torch, dev)
    if avail is not None and need > avail:
        raise OracleError(
            f"profiling {model.name} at batch {batch} needs about {need / 1e9:.1f} GB of"
            f" {'GPU memory' if device == 'cuda' else 'memory'}, but only"
            f" {avail / 1e9:.1f} GB are available",
            path="--batch",
            hint="use a smaller --batch, or --estimate --system S",
        )

    old_threads = torch.get_num_threads()
    if threads is not None:
        if threads < 1:
            raise OracleError("--threads must be at least 1", path="--threads")
        torch.set_num_threads(threads)
    gc_was_enabled = gc.isenabled()
    # training scripts let cuDNN pick each convolution's fastest algorithm (DeepLearningExamples
    # PyTorch/Classification/ConvNets/main.py: cudnn.benchmark = True); the warm-up runs pick it
    benchmark_was = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = dev.type == "cuda" or benchmark_was
    try:
        gc.collect()
        gc.disable()
        return _measure(torch, model, dev, batch, repeats, warmup, seed, progress, clock or time.perf_counter)
    finally:
        if gc_was_enabled:
            gc.enable()
        torch.backends.cudnn.benchmark = benchmark_was
        if threads is not None:
            torch.set_num_threads(old_threads)


def _measure(torch, model, dev, batch, repeats, warmup, seed, progress, clock) -> Measurement:
    from oracle.profiling.torchnet import build_network

    start = time.perf_counter()
    cpu_before = _cpu_times()
    date = datetime.now(timezone.utc).isoformat(timespec="seconds")
    timer = Timer(torch, dev, clock, progress, 2 * len(model.layers) + 4)
    torch.manual_seed(seed)
    net = build_network(model, dev)
    net.train()
    x = torch.randn((batch, *model.input_shape), device=dev)
    with torch.no_grad():
        outs = net.forward_all(x)
    params = net.layer_parameters()
    opt_all = torch.optim.SGD(net.parameters(), lr=1e-6, momentum=0.9) if any(params) else None
    step_upstream = torch.randn_like(outs[net.names[-1]])

    def train_step() -> None:
        if opt_all is not None:
            opt_all.zero_grad(set_to_none=True)
        y = net(x)
        if y.requires_grad:
            y.backward(step_upstream)
        if opt_all is not None:
            opt_all.step()

    # 6 (first half): whole training steps
    step_times = [timer.timed(train_step, "step") for _ in range(warmup + repeats)][warmup:]
    if opt_all is not None:
        opt_all.zero_grad(set_to_none=True)
    timer.tick("training step")
    fw, bw = layer_times(torch, net, outs, params, timer, batch, repeats, warmup)  # 1-4
    del outs
    wu, opt_step, sep_sum = _update_times(torch, net, params, opt_all, timer, repeats, warmup)  # 5
    # 6 (second half): whole training steps again; median of both halves
    step_times += [timer.timed(train_step, "step") for _ in range(repeats)]
    step = statistics.median(step_times)
    wall = statistics.median([timer.wall(train_step) for _ in range(repeats)]) if timer.cuda else None
    timer.tick("training step")

    saved, peak = _memory(torch, net, x, dev, train_step)
    timer.tick("memory")
    layers = tuple(
        (name, LayerTimes(f, b, w, s)) for name, f, b, w, s in zip(net.names, fw, bw, wu, saved)
    )
    return Measurement(
        model=model.name,
        device=cpu_name() if not timer.cuda else torch.cuda.get_device_name(dev),
        device_type=dev.type,
        torch_version=torch.__version__,
        batch=batch,
        threads=torch.get_num_threads(),
        repeats=repeats,
        warmup=warmup,
        date=date,
        layers=layers,
        step_s=step,
        optimizer_step_s=opt_step,
        wu_separate_sum_s=sep_sum,
        elapsed_s=time.perf_counter() - start,
        others_cpu_share=_others_share(cpu_before, _cpu_times(), time.perf_counter() - start),
        cpus=os.cpu_count(),
        peak_allocated_bytes=peak,
        step_wall_s=wall,
        conv_tf32=bool(torch.backends.cudnn.allow_tf32) if timer.cuda else None,
        gpu_short_runs=(timer.gpu.short, timer.gpu.runs) if timer.gpu is not None else None,
        step_host_s=statistics.median(timer.gpu.host["step"]) if timer.gpu is not None else None,
    )


def layer_times(torch, net, outs, params, timer: Timer, batch, repeats, warmup) -> tuple[list[float], list[float]]:
    """Steps 1-4: forward and backward of each layer, in isolation (seconds per sample; also
    scripts/measure_layer_kernels.py's)."""
    fw: list[float] = []
    bw: list[float] = []
    for i, (name, module, srcs) in enumerate(zip(net.names, net.layers, net.sources)):
        inputs = []
        for s in srcs:
            t = outs[s].detach()
            if s != MODEL_INPUT:
                t.requires_grad_(True)
            inputs.append(t)
        upstream = torch.randn_like(outs[name])
        fts: list[float] = []
        bts: list[float] = []
        for _ in range(warmup + repeats):
            for p in params[i]:
                p.grad = None
            for t in inputs:
                t.grad = None
            holder: list = []
            fts.append(timer.timed(lambda m=module, xs=inputs: holder.append(m(*xs)), "fw"))
            y = holder.pop()
            if y.requires_grad:  # the lambdas bind their tensors: the loop deletes the names
                bts.append(timer.timed(lambda out=y, g=upstream: out.backward(g), "bw"))
            else:
                bts.append(0.0)
            del y
        fw.append(statistics.median(fts[warmup:]) / batch)
        bw.append(statistics.median(bts[warmup:]) / batch)
        del inputs, upstream
        timer.tick(f"fw/bw {name}")
    return fw, bw


def _update_times(torch, net, params, opt_all, timer: Timer, repeats, warmup) -> tuple[list[float], float, float]:
    """Step 5: weight update, per layer and for the whole network (gradients are those of
    the last backward of each layer); the per-layer times scaled to the whole step.
    Returns (per-layer times, the whole optimizer step, the per-layer sum)."""
    wu_sep: list[float] = []
    for i, name in enumerate(net.names):
        ps = params[i]
        if not ps or any(p.grad is None for p in ps):
            wu_sep.append(0.0)
        else:
            opt = torch.optim.SGD(ps, lr=1e-6, momentum=0.9)
            ts = [timer.timed(opt.step, "wu") for _ in range(warmup + repeats)]
            wu_sep.append(statistics.median(ts[warmup:]))
            del opt
        timer.tick(f"wu {name}")
    for p in net.parameters():
        if p.grad is None:
            p.grad = torch.randn_like(p)
    if opt_all is not None:
        ts = [timer.timed(opt_all.step, "optimizer") for _ in range(warmup + repeats)]
        opt_step = statistics.median(ts[warmup:])
    else:
        opt_step = 0.0
    sep_sum = sum(wu_sep)
    wu = [t * opt_step / sep_sum if sep_sum > 0 else 0.0 for t in wu_sep]
    timer.tick("optimizer step")
    return wu, opt_step, sep_sum


def _memory(torch, net, x, dev, train_step) -> tuple[list[float], float | None]:
    """Bytes per sample each layer saves for the backward (profiling/saved.py) and, on
    CUDA, the peak memory PyTorch allocated in one training step."""
    from oracle.profiling.saved import saved_bytes_per_layer

    saved = saved_bytes_per_layer(torch, net, x)
    peak = None
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
        torch.cuda.reset_peak_memory_stats(dev)
        train_step()
        torch.cuda.synchronize(dev)
        peak = float(torch.cuda.max_memory_allocated(dev))
    return saved, peak


def _cpu_times() -> tuple[float, float] | None:
    """(busy CPU seconds of the whole machine, CPU seconds of this process), Linux only."""
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            fields = fh.readline().split()
        ticks = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, AttributeError):
        return None
    if not fields or fields[0] != "cpu":
        return None
    values = [int(v) for v in fields[1:9]]  # user nice system idle iowait irq softirq steal
    busy = sum(values) - values[3] - values[4]
    own = os.times()
    return busy / ticks, own.user + own.system


def _others_share(before, after, wall_s: float) -> float | None:
    if before is None or after is None or wall_s <= 0:
        return None
    others = (after[0] - before[0]) - (after[1] - before[1])
    return min(1.0, max(0.0, others / (wall_s * (os.cpu_count() or 1))))


__all__ = ["Measurement", "Progress", "cpu_name", "measure", "memory_needed"]
