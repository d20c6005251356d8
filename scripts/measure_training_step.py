"""Measure whole training steps of torchvision models on one GPU, the way eager PyTorch runs them.

For each model x precision x memory format x per-GPU batch it times the steady state of the
loop NVIDIA DeepLearningExamples' ConvNets runs (PyTorch/Classification/ConvNets/image_classification/
training.py: zero_grad, forward under autocast, cross-entropy, GradScaler-scaled backward,
SGD with momentum 0.875 and weight decay 3.0517578125e-05 as configs.yml sets them for resnet50),
on synthetic data already on the GPU (no input pipeline), with
``torch.backends.cudnn.benchmark = True`` as that code sets it.  Per row:

- ``iteration_ms``: wall-clock time of ``--iters`` back-to-back steps (synchronised before and
  after) divided by the steps, after ``--warmup`` steps; ``images_per_s`` = batch / that.
- ``host_fb_ms``: host time to enqueue zero_grad + forward + loss + backward of one step started
  on an idle GPU (median of 5), i.e. what the host spends launching, not what the GPU runs.
- ``kernels_per_iteration`` / ``kernels_fb``: GPU kernels of one whole step / of its forward
  and backward (torch.profiler, CUDA activity; memcpy and memset not counted).
- ``optimizer_ms``: one ``optimizer.step()`` alone (median of 10, CUDA events), the fp32
  master weights' update whatever the precision.
- ``peak_allocated_GB`` / ``peak_reserved_GB``: torch.cuda.max_memory_allocated / reserved over
  the timed steps; ``static_allocated_GB``: allocated once the model, gradients and optimizer
  state exist, between steps.

``--execution cuda_graph`` captures the whole step (forward, loss, backward and the optimizer
step) once in a CUDA graph and times its replays, as PyTorch's "whole-network capture"
(docs: notes/cuda.html#whole-network-capture) and tuned stacks run it: the GPU's time with no
host launching in the way.  AMP there is bfloat16 autocast without a GradScaler (the scaler's
inf check synchronises with the host, which a graph cannot hold); on Hopper bfloat16 and
float16 run at the same tensor-core rate (H100 datasheet).  Kernel counts and
``host_fb_ms`` are left blank for graph rows; ``host_fb_ms`` there would be one replay's
launch.

``--device cpu`` runs the same steps on the CPU (AMP in bfloat16; no kernel counts or
memory): it checks the script where there is no GPU (``tests/test_measure_script.py``).

Rows are written to ``-o`` as each finishes (a crash keeps the finished rows); a row whose
measurement failed (out of memory, say) says so in ``error``.  The rows in
``validation/gpu-training-steps.csv`` came from the command in their ``command`` column.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time

FIELDS = [
    "model", "gpu", "precision", "memory_format", "batch", "iteration_ms", "images_per_s",
    "host_fb_ms", "kernels_per_iteration", "kernels_fb", "optimizer_ms", "peak_allocated_GB",
    "peak_reserved_GB", "static_allocated_GB", "torch", "torchvision", "cudnn", "driver", "host_cpu",
    "iters", "warmup", "execution", "error", "command",
]  # fmt: skip
# torchvision builders whose defaults differ from oracle's model files (models/inception_v3.yaml:
# aux_logits=False, input 3x299x299); every other model takes 3x224x224 and its defaults
BUILD_KWARGS = {"inception_v3": {"aux_logits": False, "init_weights": False}}
INPUT_SIDE = {"inception_v3": 299}
MOMENTUM, WEIGHT_DECAY, LR = 0.875, 3.0517578125e-05, 0.256  # DLE ConvNets configs.yml (resnet50)


class Device:
    """Where the steps run: a CUDA GPU (what the rows are), or the CPU, which checks this
    script anywhere (``--device cpu``: AMP in bfloat16, no kernel counts or memory)."""

    def __init__(self, torch, kind: str) -> None:
        self.torch, self.kind, self.cuda = torch, kind, kind == "cuda"
        self.dev = torch.device(kind)
        self.half = torch.float16 if self.cuda else torch.bfloat16

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()

    def time_ms(self, fn) -> float:
        """fn's time on the device: CUDA events on a GPU (launch gaps included), else the wall clock."""
        self.sync()
        if not self.cuda:
            t0 = time.perf_counter()
            fn()
            return (time.perf_counter() - t0) * 1e3
        start, end = (self.torch.cuda.Event(enable_timing=True) for _ in range(2))
        start.record()
        fn()
        end.record()
        self.sync()
        return start.elapsed_time(end)

    def memory_GB(self) -> dict:
        if not self.cuda:
            return {}
        cuda, gb = self.torch.cuda, 1e9
        return {"peak_allocated_GB": cuda.max_memory_allocated() / gb, "peak_reserved_GB": cuda.max_memory_reserved() / gb}

    def reset_memory(self) -> float | None:
        """Allocated bytes now (GB), and the peak counters reset."""
        if not self.cuda:
            return None
        self.torch.cuda.reset_peak_memory_stats()
        return self.torch.cuda.memory_allocated() / 1e9


class Step:
    """One model on one device: the training step and its pieces."""

    def __init__(self, device: Device, name: str, batch: int, precision: str, memory_format: str,
                 half=None) -> None:  # fmt: skip
        from torchvision import models

        torch = device.torch
        self.device, self.amp = device, precision == "amp"
        self.half = half or device.half
        dev = device.dev
        fmt = torch.channels_last if memory_format == "channels_last" else torch.contiguous_format
        self.net = getattr(models, name)(weights=None, **BUILD_KWARGS.get(name, {}))
        self.net = self.net.to(dev, memory_format=fmt).train()
        side = INPUT_SIDE.get(name, 224)
        self.x = torch.randn(batch, 3, side, side, device=dev).to(memory_format=fmt)
        self.y = torch.randint(0, 1000, (batch,), device=dev)
        self.loss_fn = torch.nn.CrossEntropyLoss()
        self.opt = torch.optim.SGD(self.net.parameters(), lr=LR, momentum=MOMENTUM, weight_decay=WEIGHT_DECAY)
        self.scaler = torch.amp.GradScaler(device.kind, enabled=self.amp and device.cuda)

    def forward_backward(self) -> None:
        self.opt.zero_grad(set_to_none=True)
        with self.device.torch.autocast(self.device.kind, dtype=self.half, enabled=self.amp):
            loss = self.loss_fn(self.net(self.x), self.y)
        self.scaler.scale(loss).backward()

    def __call__(self) -> None:
        self.forward_backward()
        self.scaler.step(self.opt)
        self.scaler.update()


class GraphStep:
    """The whole step of ``step`` captured once in a CUDA graph (module docstring); calling
    it replays the graph.  Warmed up on a side stream first, as capture requires."""

    def __init__(self, step: Step, warmup: int) -> None:
        torch = step.device.torch
        self.step, self.device = step, step.device
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(max(warmup, 3)):  # cuDNN's autotuning and the momentum buffers happen here
                self.eager()
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        step.opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(self.graph):
            self.forward_backward()
            step.opt.step()

    def forward_backward(self) -> None:
        s = self.step
        with self.device.torch.autocast("cuda", dtype=s.half, enabled=s.amp, cache_enabled=False):
            loss = s.loss_fn(s.net(s.x), s.y)
        loss.backward()

    def eager(self) -> None:
        self.step.opt.zero_grad(set_to_none=True)
        self.forward_backward()
        self.step.opt.step()

    def __call__(self) -> None:
        self.graph.replay()


def _steady_ms(device: Device, step: Step, iters: int) -> float:
    device.sync()
    t0 = time.perf_counter()
    for _ in range(iters):
        step()
    device.sync()
    return (time.perf_counter() - t0) / iters * 1e3


def _host_fb_ms(device: Device, step: Step) -> float:
    times = []
    for _ in range(5):
        device.sync()
        t0 = time.perf_counter()
        step.forward_backward()
        times.append((time.perf_counter() - t0) * 1e3)
        device.sync()
        step.scaler.step(step.opt)
        step.scaler.update()
    return statistics.median(times)


def _kernels(device: Device, fn) -> int | None:
    """GPU kernels fn launches (torch.profiler; memcpy and memset not counted); None on a CPU."""
    if not device.cuda:
        return None
    from torch.profiler import ProfilerActivity, profile

    torch = device.torch
    device.sync()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        device.sync()
    names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    return sum(1 for n in names if not n.startswith(("Memcpy", "Memset", "[memory]")))


def _steady_row(device: Device, step, batch: int, iters: int, warmup: int) -> dict:
    """The steady-state time and memory of ``step`` after ``warmup`` untimed runs."""
    for _ in range(warmup):
        step()
    device.sync()
    static = device.reset_memory()
    ms = _steady_ms(device, step, iters)
    return {"iteration_ms": ms, "images_per_s": batch / ms * 1e3, "static_allocated_GB": static, **device.memory_GB()}


def measure_graph_row(device: Device, name, precision, memory_format, batch, iters, warmup) -> dict:
    """One row with the step captured in a CUDA graph (module docstring)."""
    if not device.cuda:
        raise RuntimeError("CUDA graphs need a GPU (--execution eager on a CPU)")
    step = Step(device, name, batch, precision, memory_format, half=device.torch.bfloat16)
    graph = GraphStep(step, warmup)
    row = _steady_row(device, graph, batch, iters, warmup)
    row["optimizer_ms"] = statistics.median(device.time_ms(step.opt.step) for _ in range(10))
    del graph, step
    return row


def measure_row(device: Device, name, precision, memory_format, batch, iters, warmup, execution="eager") -> dict:
    """One row of measurements (see the module docstring)."""
    if execution == "cuda_graph":
        return measure_graph_row(device, name, precision, memory_format, batch, iters, warmup)
    step = Step(device, name, batch, precision, memory_format)
    row = _steady_row(device, step, batch, iters, warmup)
    row["host_fb_ms"] = _host_fb_ms(device, step)
    try:
        row["kernels_per_iteration"] = _kernels(device, step)
        row["kernels_fb"] = _kernels(device, step.forward_backward)
    except Exception as exc:  # noqa: BLE001 - no profiler (CUPTI) leaves the counts blank, not the row
        row["error"] = f"kernel counts: {type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
    step.scaler.step(step.opt)
    step.scaler.update()
    row["optimizer_ms"] = statistics.median(device.time_ms(step.opt.step) for _ in range(10))
    del step
    return row


def _environment(device: Device) -> dict:
    import torchvision

    from oracle.profiling.measure import cpu_name  # the host launches the kernels: its CPU matters

    torch = device.torch
    base = {"torch": torch.__version__, "torchvision": torchvision.__version__, "host_cpu": cpu_name()}
    if not device.cuda:
        return {**base, "gpu": "none (CPU)"}
    props = torch.cuda.get_device_properties(0)
    try:
        import subprocess

        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True, timeout=30).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        driver = ""
    return {**base, "gpu": props.name, "cudnn": str(torch.backends.cudnn.version()), "driver": driver}


def _fmt(v):
    return f"{v:.6g}" if isinstance(v, float) else v


def _rows(device: Device, args, command: str):
    """Every (model, precision, format, batch) row, measured (a failure is the row's ``error``)."""
    env = _environment(device)
    for name in args.models:
        for precision in args.precisions:
            for fmt in args.formats:
                for batch in args.batches:
                    row = {"model": name, "precision": precision, "memory_format": fmt, "batch": batch,
                           "iters": args.iters, "warmup": args.warmup, "execution": args.execution,
                           "command": command, **env}  # fmt: skip
                    try:
                        row.update(measure_row(device, name, precision, fmt, batch, args.iters, args.warmup,
                                               args.execution))  # fmt: skip
                    except Exception as exc:  # noqa: BLE001 - a failed row is data (OOM at a batch)
                        row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
                    if device.cuda:
                        device.torch.cuda.empty_cache()
                    yield row


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """--device, -o and --append, as this script and scripts/measure_layer_kernels.py take them."""
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                        help="cpu: check this script without a GPU (the numbers mean nothing for a GPU)")
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--append", action="store_true", help="append to -o (no header)")


def torch_for(device: str):
    """PyTorch with cuDNN autotuning on, as DLE ConvNets' main.py sets it (None, said on
    stderr, when the device is cuda and there is none)."""
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        print("CUDA is not available to PyTorch here (--device cpu checks the script)", file=sys.stderr)
        return None
    torch.backends.cudnn.benchmark = True
    return torch


def command_line(script: str, argv: list[str] | None) -> str:
    return f"python scripts/{script} " + " ".join(argv if argv is not None else sys.argv[1:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--batches", type=int, nargs="+", default=[16, 32, 64, 128, 256])
    parser.add_argument("--precisions", nargs="+", choices=["fp32", "amp"], default=["fp32", "amp"])
    parser.add_argument("--formats", nargs="+", choices=["contiguous", "channels_last"], default=["channels_last"])
    parser.add_argument("--iters", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--execution", choices=["eager", "cuda_graph"], default="eager",
                        help="cuda_graph: the whole step captured once and replayed (a GPU only)")
    add_run_arguments(parser)
    args = parser.parse_args(argv)
    torch = torch_for(args.device)
    if torch is None:
        return 2
    command = command_line("measure_training_step.py", argv)
    with open(args.output, "a" if args.append else "w", newline="") as fh:
        out = csv.DictWriter(fh, FIELDS)
        if not args.append:
            out.writeheader()
        for row in _rows(Device(torch, args.device), args, command):
            out.writerow({k: _fmt(v) for k, v in row.items()})
            fh.flush()
            print({k: _fmt(row.get(k)) for k in FIELDS[:14]}, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
