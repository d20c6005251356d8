"""``oracle profile --device cuda``: the GPU timing (oracle/profiling/timing.py, checked here
with a fake CUDA), what a GPU measurement says of itself, and, where a GPU is present, a
real measurement (skipped without CUDA; it ran on an H200 on 2026-11-26)."""

from __future__ import annotations

import pytest
from test_profile import SMALL_2D, SMALL_3D, _check_measurement, _torch, _write

from oracle.compute.binding import bind_profile
from oracle.load import load_model, load_profile


@pytest.mark.parametrize("text", [SMALL_2D, SMALL_3D], ids=["2d", "3d"])
def test_cuda_measurement_writes_a_profile_that_binds(run, tmp_path, text):
    """On a GPU (skipped elsewhere): every layer timed on the device, the peak memory of a
    step read from PyTorch's allocator, the GPU named; the profile loads and binds."""
    torch = _torch()
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device here")
    from oracle.profiling.measure import measure

    m = load_model(_write(tmp_path, "m.yaml", text))
    r = measure(m, batch=8, device="cuda", repeats=5, warmup=2, threads=1)
    _check_measurement(m, r, 8)
    assert r.device_type == "cuda" and r.device == torch.cuda.get_device_name(0)
    assert r.peak_allocated_bytes is not None and r.peak_allocated_bytes > 0
    assert r.step_wall_s is not None and r.step_wall_s > 0 and isinstance(r.conv_tf32, bool)
    assert r.step_host_s is not None and r.step_host_s > 0 and r.launch_floor_s_per_layer > 0
    assert "GPU execution times" in r.source() and "wall-clock" in r.notes()
    out = tmp_path / "gpu.yaml"
    res = run("profile", _write(tmp_path, "m2.yaml", text), "--device", "cuda", "--batch", 8,
              "--repeats", 3, "--warmup", 1, "--threads", 1, "-o", out)  # fmt: skip
    assert res.code == 0, res.err
    pr = load_profile(out)
    assert pr.kind == "measured" and torch.cuda.get_device_name(0) in pr.device
    assert len(bind_profile(m, pr)) == len(m.layers)


def test_gpu_clock_times_kernels_not_launches(monkeypatch):
    """GpuClock: the events' time comes back; each region runs once (a backward cannot run
    twice) behind a spin sized by that region's last launching; runs whose launching
    outlasted the spin are counted (a fake CUDA: the GPU runs 1.5 ms whatever is launched)."""
    from types import SimpleNamespace

    from oracle.profiling import timing

    clock = [0.0]
    spins: list[int] = []

    class Event:
        def __init__(self, enable_timing):
            assert enable_timing

        def record(self):
            pass

        def elapsed_time(self, other):
            return 1.5  # milliseconds, as torch.cuda.Event reports

    cuda = SimpleNamespace(Event=Event, synchronize=lambda dev: None, _sleep=spins.append)
    monkeypatch.setattr(timing, "time", SimpleNamespace(perf_counter=lambda: clock[0]))
    gpu = timing.GpuClock(SimpleNamespace(cuda=cuda), "cuda:0")
    assert gpu.s_per_cycle == pytest.approx(1.5e-3 / 1e6)  # calibrated on a 10^6-cycle spin
    spins.clear()
    calls = []

    def launch(host_s):
        def fn():
            calls.append(host_s)
            clock[0] += host_s

        return fn

    assert gpu.timed(launch(5e-3), "bw") == pytest.approx(1.5e-3)  # 5 ms of launching, 2 ms spin
    assert gpu.timed(launch(5e-3), "bw") == pytest.approx(1.5e-3)  # now a 10 ms spin
    assert gpu.timed(launch(1e-4), "fw") == pytest.approx(1.5e-3)  # another region: its own spin
    assert gpu.timed(launch(1e-4), "bw") == pytest.approx(1.5e-3)
    assert gpu.timed(launch(1e-4), "bw") == pytest.approx(1.5e-3)
    secs = [c * gpu.s_per_cycle for c in spins]
    assert secs == pytest.approx([2e-3, 10e-3, 2e-3, 10e-3, 2e-3])
    assert len(calls) == 5  # each region ran once: none repeated
    assert gpu.host == {"bw": pytest.approx([5e-3, 5e-3, 1e-4, 1e-4]), "fw": pytest.approx([1e-4])}
    assert (gpu.short, gpu.runs) == (1, 5)
    assert gpu.timed(launch(2.0), "step") == pytest.approx(1.5e-3)
    assert gpu.spins["step"] == timing.GpuClock.MAX_SPIN_S  # capped

    # a PyTorch without torch.cuda._sleep: the events alone, every run counted short
    bare = timing.GpuClock(SimpleNamespace(cuda=SimpleNamespace(Event=Event, synchronize=lambda dev: None)), "cuda:0")
    assert bare.s_per_cycle is None and bare.timed(launch(1e-3), "fw") == pytest.approx(1.5e-3)
    assert (bare.short, bare.runs) == (1, 1)


def test_gpu_notes_say_what_was_timed():
    from oracle.model import LayerTimes
    from oracle.profiling.measure import Measurement

    kw = dict(model="M", device="NVIDIA H200", device_type="cuda", torch_version="2.11", batch=64,
              threads=16, repeats=10, warmup=3, date="2026-11-26", layers=(), step_s=0.03,
              optimizer_step_s=0.001, wu_separate_sum_s=0.001, elapsed_s=1.0)  # fmt: skip
    layers = tuple((f"l{i}", LayerTimes(1e-5, 2e-5, 1e-5, 0.0)) for i in range(100))
    host_bound = Measurement(**{**kw, "layers": layers}, step_wall_s=0.05, conv_tf32=True,
                             gpu_short_runs=(3, 500), step_host_s=0.025)  # fmt: skip
    assert "convolutions in TF32" in host_bound.source() and "launches excluded" in host_bound.source()
    notes = host_bound.notes()
    assert "0.05 s wall-clock (bound by the host's launches)" in notes and "3 of 500 timed runs" in notes
    assert host_bound.launch_floor_s_per_layer == pytest.approx(2.5e-4)  # 25 ms over 100 layers
    assert "0.025 s to launch one step, 0.00025 s per layer" in notes
    gpu_bound = Measurement(**kw, step_wall_s=0.031, conv_tf32=False, gpu_short_runs=(0, 500))
    assert "convolutions in fp32" in gpu_bound.source()
    assert "bound by" not in gpu_bound.notes() and "timed runs" not in gpu_bound.notes()
    cpu = Measurement(**{**kw, "device_type": "cpu"})
    assert "GPU" not in cpu.source() + cpu.notes() and cpu.launch_floor_s_per_layer is None


def test_gpu_summary_prints_the_hosts_launch_floor():
    from oracle.model import LayerTimes
    from oracle.profiling.measure import Measurement
    from oracle.render.profile_file import measurement_summary

    kw = dict(model="M", device="NVIDIA H200", device_type="cuda", torch_version="2.11", batch=64,
              threads=16, repeats=10, warmup=3, date="2026-11-26", step_s=0.03,
              optimizer_step_s=0.001, wu_separate_sum_s=0.001, elapsed_s=1.0)  # fmt: skip
    layers = tuple((f"l{i}", LayerTimes(1e-5, 2e-5, 1e-5, 0.0)) for i in range(100))
    text = measurement_summary(Measurement(**kw, layers=layers, step_wall_s=0.05, step_host_s=0.025), None)
    assert "whole step, wall-clock" in text and "host launching one step" in text
    assert "launches 0.00025 s per layer" in text and "iteration.launch_floor_s_per_layer" in text
    cpu = measurement_summary(Measurement(**{**kw, "device_type": "cpu"}, layers=layers), None)
    assert "wall-clock" not in cpu and "launch_floor" not in cpu
