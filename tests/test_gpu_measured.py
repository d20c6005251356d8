"""oracle against what was measured on a real NVIDIA H200 and H100 (benchmarks/gpu_measured.py;
validation/gpu-training-steps.csv, profiles/*_h200.yaml and profiles/resnet50_h100*.yaml,
issue 25).  The pytorch stack's Hopper AMP efficiency (stacks/pytorch.yaml by_gpu) is fitted
on ResNet-50's GPU-bound H100 rows (benchmarks/gpu_measured.py fit_hopper); nothing else
oracle ships was fitted on these measurements.

Memory is held to stated tolerances.  The time floors are what the benchmark reached when
it was written, less 0.02 (a change that makes oracle worse on these rows fails here; raise
them when a change makes it better), with the shipped pytorch stack:

- H200 (2026-11-26, with the Hopper AMP efficiency; before it 64.4% and 83.2%): GPU-bound
  eager rows 71.1%; the held-out host-bound rows 84.7% with that host's launch floor, 50.1%
  with the shipped one.
- H100 (2026-11-26, with the Hopper AMP efficiency; before it 72.6%, 72.9% and 74.5%):
  GPU-bound eager rows 76.3%; held-out host-bound rows 71.3% with that host's floor, 59.3%
  with the shipped one; the 20 CUDA-graph rows 80.9% against the stack's GPU time."""

from __future__ import annotations

from statistics import mean

import pytest
from conftest import benchmark


@pytest.fixture(scope="module")
def bench():
    return benchmark("gpu_measured")


@pytest.fixture(scope="module")
def results(bench):
    return bench.evaluate(bench.steps())


H200, H100 = "NVIDIA H200", "NVIDIA H100 80GB HBM3"


def test_every_measured_row_is_projected(bench, results):
    # H200: 28 ResNet-50 rows, 6 ResNet-152, 6 VGG-16; H100: 18 eager and 20 CUDA-graph rows
    assert len(results) == 78 and sum(r["gpu"] == H200 for r in results) == 40
    assert sum(bench.graph(r) for r in results) == 20 and not any(bench.graph(r) and r["gpu"] == H200 for r in results)
    assert all(r["projected_s"] > 0 and r["local_s"] >= r["projected_s"] for r in results)


def test_memory_within_tolerance_at_batch_32_and_above(bench, results):
    """The framework memory model against PyTorch's own counters on the GPU, at every row
    of batch >= 32 (below, cuDNN's workspace, which oracle budgets at 0.5 GB, is most of
    what is measured): the projected tensors within 1.5% of the peak allocated memory (AMP
    with the pytorch stack's fp32 gradients: before them VGG-16 was 6% under), and the
    total less the CUDA context within 0.70-1.25 of the peak reserved memory.  Reserved is looser: on a 141 GB GPU nothing makes PyTorch hand its cache back
    (VGG-16 reserves 1.5x what it allocates), while a GPU near its limit frees the cache
    and retries (docs/memory.md)."""
    rows = [r for r in results if int(r["batch"]) >= 32 and not bench.graph(r)]  # a graph's pool is not counted
    assert len(rows) == 24 + 12
    for r in rows:
        alloc = r["tensors_GB"] / float(r["peak_allocated_GB"])
        reserved = r["reserved_GB"] / float(r["peak_reserved_GB"])
        assert alloc == pytest.approx(1.0, abs=0.015), (r["model"], r["precision"], r["batch"], alloc)
        assert 0.70 <= reserved <= 1.25, (r["model"], r["precision"], r["batch"], reserved)
    # the total less the context is above the peak allocated everywhere: what a GPU needs
    assert min(r["reserved_GB"] / float(r["peak_allocated_GB"]) for r in results if not bench.graph(r)) >= 1.0


@pytest.mark.parametrize(("gpu", "gpu_bound", "held_local", "held_shipped", "graphs"),
                         [(H200, 0.691, 0.827, 0.6, None), (H100, 0.743, 0.693, 0.65, 0.789)])  # fmt: skip
def test_step_time_floors(bench, results, gpu, gpu_bound, held_local, held_shipped, graphs):
    rs = [r for r in results if r["gpu"] == gpu]
    eager = [r for r in rs if not bench.graph(r)]
    gpu_rows = [r for r in eager if not r["host_bound"]]
    held = [r for r in eager if r["host_bound"] and not r["fit_row"]]
    assert {r["model"] for r in held} == {"resnet152", "vgg16"}  # the floor was taken from ResNet-50
    acc = bench.accuracy
    assert mean(acc(r["projected_s"], r["measured_s"]) for r in gpu_rows) >= gpu_bound
    assert mean(acc(r["local_s"], r["measured_s"]) for r in held) >= held_local
    # the host's launching is what the shipped floor misses on these machines (virtual
    # machines): with it the same rows are far worse
    assert mean(acc(r["projected_s"], r["measured_s"]) for r in held) < held_shipped
    if graphs is not None:
        assert mean(acc(r["projected_s"], r["measured_s"]) for r in rs if bench.graph(r)) >= graphs


def test_hopper_efficiencies_are_the_fit_and_hold_on_rows_not_fitted(bench):
    """The shipped H100/H200 AMP efficiency is fit_hopper's on ResNet-50's GPU-bound H100
    rows, and the AMP rows not fitted gain from it: H100 ResNet-152/VGG-16 79.4% -> 92.9%,
    H200 channels-last 61.5% -> 76.9% (benchmarks/gpu_measured.py part 4).  TF32 keeps the
    generic efficiency (the rows here ran channels-last; the stack's TF32 runs NCHW)."""
    shipped = bench.load_stack("pytorch")
    generic_stack = bench.without_hopper(shipped)
    generic = bench.evaluate(bench.steps(), generic_stack)
    fitted = bench.fit_hopper(generic)
    value, acc = fitted["mixed"]
    assert shipped.efficiency_for("H100", "mixed").value == pytest.approx(value, abs=0.01) and acc >= 0.9
    assert shipped.efficiency_for("H200", "mixed").value == shipped.efficiency_for("H100", "mixed").value
    assert shipped.efficiency_for("H100", "fp32") == generic_stack.efficiency_for("H100", "fp32")
    after = bench.evaluate(bench.steps(), shipped)
    acc = bench.accuracy

    def held(rows, gpu, keep):
        return mean(acc(r["projected_s"], r["measured_s"]) for r in rows if r["gpu"] == gpu and bench.gpu_bound(r)
                    and r["precision"] == "amp" and keep(r))  # fmt: skip

    for gpu, keep, floor in ((H100, lambda r: r["model"] != "resnet50", 0.90),
                             (H200, lambda r: r["memory_format"] == "channels_last", 0.74)):  # fmt: skip
        assert held(after, gpu, keep) >= floor > held(generic, gpu, keep) + 0.1


def test_host_floor_is_taken_from_resnet50_small_batches(bench, results):
    floors = bench.host_floors(bench.steps())
    assert set(floors) == {(H200, "amp", "channels_last"), (H200, "amp", "contiguous"), (H200, "fp32", "channels_last"),
                           (H200, "fp32", "contiguous"), (H100, "amp", "channels_last"), (H100, "fp32", "channels_last")}  # fmt: skip
    layers = len(bench._inputs("resnet50")[0].layers)
    # ResNet-50 AMP channels-last, batch 1-32: host_fb_ms 24.9, 22.0, 27.7, 27.4 -> median 26.15 ms
    assert floors[H200, "amp", "channels_last"] == pytest.approx(26.15e-3 / layers, rel=1e-3)
    assert floors[H100, "amp", "channels_last"] == pytest.approx(21.3481e-3 / layers, rel=1e-6)  # its one row, batch 16


def test_per_layer_types_against_the_estimate(bench):
    """The measured GPU profiles against the compute model, per layer type (fw + bw): the
    convolutions within 0.65-1.1 of the estimate (TF32 on an H200), batch norm 1.5-2.0x
    slower than its roofline at 0.9 of the memory bandwidth, the element-wise adds within
    0.75-1.1."""
    for name, profile, system in (("resnet50", "", "hgx-h200"), ("resnet152", "", "hgx-h200"),
                                  ("resnet50", "resnet50_h100", "dgx-h100-superpod")):  # fmt: skip
        _, types = bench.by_type(name, profile, system)
        ratio = {t: (v[0] + v[2]) / (v[1] + v[3]) for t, v in types.items() if v[1] + v[3] > 0}
        assert 0.65 <= ratio["conv"] <= 1.1, (name, ratio["conv"])
        assert 1.4 <= ratio["batchnorm"] <= 2.0, (name, ratio["batchnorm"])
        assert 0.75 <= ratio["add"] <= 1.1, (name, ratio["add"])
    _, vgg = bench.by_type("vgg16")
    assert 0.65 <= (vgg["conv"][0] + vgg["conv"][2]) / (vgg["conv"][1] + vgg["conv"][3]) <= 1.1


def test_report_prints_every_part(bench, results):
    text = bench.report(results, rows=True)
    for part in ("Per layer type", "GPU-bound rows", "this host's floor (held out)", "peak reserved",
                 "H200  resnet152  amp  channels_last     16", "CUDA-graph rows", "as the batch shrinks",
                 "Hopper efficiencies", "held out: H200, contiguous (NCHW)"):  # fmt: skip
        assert part in text, part


def test_the_estimate_falls_behind_as_the_batch_shrinks(bench):
    """What the H100 profiles at batch 16, 64 and 256 show (docs/accuracy.md): measured over
    estimated grows as the batch shrinks (1.29 at 256, 1.32 at 64, 1.52 at 16), the per-layer
    GPU overhead the compute model has no term for.  Pins the data; the day the model gains
    that term this test says so."""
    ratios = [m / e for _, m, e in map(bench.batch_sums, bench.BATCH_PROFILES)]
    assert ratios[0] > ratios[1] > ratios[2] and ratios[0] - ratios[2] > 0.15
