"""Timing for :mod:`oracle.profiling.measure`: wall-clock on the CPU, the GPU's execution
time on CUDA (:class:`GpuClock`)."""

from __future__ import annotations

import time


class Timer:
    """Synchronised timings on one device, and progress ticks."""

    def __init__(self, torch, dev, clock, progress, total_steps: int) -> None:
        self.torch, self.dev, self.clock, self.progress = torch, dev, clock, progress
        self.cuda = dev.type == "cuda"
        self.total_steps, self.done = total_steps, 0
        self.gpu = GpuClock(torch, dev) if self.cuda else None

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize(self.dev)

    def timed(self, fn, key: str) -> float:
        if self.gpu is not None:
            return self.gpu.timed(fn, key)
        return self.wall(fn)

    def wall(self, fn) -> float:
        self.sync()
        t0 = self.clock()
        fn()
        self.sync()
        return self.clock() - t0

    def tick(self, what: str) -> None:
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, self.total_steps, what)


class GpuClock:
    """The GPU's execution time of what ``fn`` launches, without the host's launch time.

    Eager PyTorch launches each kernel from the host (tens of microseconds each on a slow
    host), and a small layer's kernels run for less than that: timed from the host, or with
    CUDA events on an idle GPU, a layer measures its launches, not its kernels (ResNet-50
    at batch 64 on an H200: the layers summed to 2.04x the whole step; docs/accuracy.md
    "Measured on a GPU").  Here the GPU is first kept busy by a spin kernel
    (``torch.cuda._sleep``) that outlasts the host's launching, so everything ``fn``
    launches is queued before the start event runs, and the events time the kernels back to
    back.  Each region's next run spins twice the launching this one took; a run whose
    launching outlasted its spin (launch gaps included) is counted and reported.
    The host's launch time is the stack's business (``iteration.launch_floor_s_per_layer``).
    """

    MIN_SPIN_S, MAX_SPIN_S = 2e-3, 0.5

    def __init__(self, torch, dev) -> None:
        self.torch, self.dev = torch, dev
        self.events = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
        sleep = getattr(torch.cuda, "_sleep", None)
        self.sleep, self.spins = sleep, {}
        self.runs = self.short = 0  # timed runs; those whose launching outlasted the spin
        self.host: dict[str, list[float]] = {}  # per region: the host's launching of each run, s
        self.s_per_cycle = self._calibrate() if sleep is not None else None

    def _calibrate(self) -> float:
        cycles = 1_000_000
        start, end = self.events
        for _ in range(2):  # the first launch loads the kernel
            self.torch.cuda.synchronize(self.dev)
            start.record()
            self.sleep(cycles)
            end.record()
            self.torch.cuda.synchronize(self.dev)
        return start.elapsed_time(end) / 1e3 / cycles

    def timed(self, fn, key: str) -> float:
        """Run ``fn`` once (a backward cannot run twice) behind a spin sized by the last run
        of the same region ``key``; the callers repeat each region, warm-up runs first."""
        start, end = self.events
        spin_s = self.spins.get(key, self.MIN_SPIN_S)
        self.torch.cuda.synchronize(self.dev)
        if self.s_per_cycle is not None:
            self.sleep(int(spin_s / self.s_per_cycle))
        h0 = time.perf_counter()
        start.record()
        fn()
        end.record()
        host_s = time.perf_counter() - h0
        self.torch.cuda.synchronize(self.dev)
        self.spins[key] = min(self.MAX_SPIN_S, max(self.MIN_SPIN_S, 2 * host_s))
        self.host.setdefault(key, []).append(host_s)
        self.runs += 1
        self.short += self.s_per_cycle is None or host_s >= spin_s
        return start.elapsed_time(end) / 1e3
