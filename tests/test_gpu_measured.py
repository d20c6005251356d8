"""oracle against what was measured on a real NVIDIA H200 and H100 (benchmarks/gpu_measured.py;
validation/gpu-training-steps.csv, profiles/*_h200.yaml and profiles/resnet50_h100*.yaml,
issue 25).  Two values of the pytorch stack are fitted on ResNet-50's GPU-bound H100 rows
(benchmarks/gpu_measured.py fit_overhead, fit_hopper): its GPU overhead per layer and its
Hopper AMP efficiency; nothing else oracle ships was fitted on these measurements.

Memory is held to stated tolerances.  The time floors are what the benchmark reached when
it was written, less 0.02 (a change that makes oracle worse on these rows fails here; raise
them when a change makes it better), with the shipped pytorch stack, on the rows of
ResNet-50, ResNet-152 and VGG-16 for the eager groups:

- H200 (2026-11-26, with the Hopper AMP efficiency; before it 64.4% and 83.2%): GPU-bound
  eager rows 71.1% (70.7% with the GPU overhead); the held-out host-bound rows 84.7% (83.8%)
  with that host's launch floor, 50.1% with the shipped one.
- H100 (2026-11-26, with the Hopper AMP efficiency; before it 72.6%, 72.9% and 74.5%):
  GPU-bound eager rows 76.3% (75.7%); held-out host-bound rows 71.3% (71.0%) with that
  host's floor, 59.3% with the shipped one; the 20 CUDA-graph rows 80.9% against the
  stack's GPU time, all 58 now 78.7% (AMP in NCHW, 1.4-2.8x slower than channels-last, and
  TF32 in channels-last among them, projected in the stack's layouts), the 26 in the stack's
  layouts 92.6% (the floor here; the others: --memory-format, below).
"""

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
FIRST = ("resnet50", "resnet152", "vgg16")  # the models of the first two sessions' rows, which the eager floors score


def test_every_measured_row_is_projected(bench, results):
    # H200: 28 ResNet-50 rows, 6 ResNet-152, 6 VGG-16; H100: 23 eager and 58 CUDA-graph rows
    # (20 ResNet-50/152 and VGG-16 channels-last, 14 of them in NCHW, 24 of five more models)
    assert len(results) == 121 and sum(r["gpu"] == H200 for r in results) == 40
    assert sum(bench.graph(r) for r in results) == 58 and not any(bench.graph(r) and r["gpu"] == H200 for r in results)
    assert {r["model"] for r in results} == {*FIRST, "resnet101", "inception_v3", "mobilenet_v2", "efficientnet_b0",
                                             "alexnet"}  # fmt: skip
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
                         [(H200, 0.691, 0.827, 0.6, None), (H100, 0.743, 0.693, 0.65, 0.906)])  # fmt: skip
def test_step_time_floors(bench, results, gpu, gpu_bound, held_local, held_shipped, graphs):
    rs = [r for r in results if r["gpu"] == gpu]
    eager = [r for r in rs if not bench.graph(r) and r["model"] in FIRST]
    gpu_rows = [r for r in eager if not r["host_bound"]]
    held = [r for r in eager if r["host_bound"] and not r["fit_row"]]
    assert {r["model"] for r in held} == {"resnet152", "vgg16"}  # the floor was taken from ResNet-50
    acc = bench.accuracy
    assert mean(acc(r["projected_s"], r["measured_s"]) for r in gpu_rows) >= gpu_bound
    assert mean(acc(r["local_s"], r["measured_s"]) for r in held) >= held_local
    # the host's launching is what the shipped floor misses on these machines (virtual
    # machines): with it the same rows are far worse
    assert mean(acc(r["projected_s"], r["measured_s"]) for r in held) < held_shipped
    if graphs is not None:  # in the stack's layouts (the others: --memory-format, below)
        assert mean(acc(r["projected_s"], r["measured_s"]) for r in rs if bench.graph(r) and bench.in_stack_format(r)) >= graphs


def test_hopper_values_are_the_fit_and_hold_on_rows_not_fitted(bench, results):
    """The pytorch stack's GPU overhead per layer is fit_overhead's (ResNet-50's TF32 NCHW
    CUDA-graph rows on the H100) and its H100/H200 AMP efficiency fit_hopper's with it
    (ResNet-50's AMP channels-last GPU-bound H100 rows).  On the H100 rows of every other
    model, in the stack's formats and bound by the GPU, AMP gains (78.2% -> 82.7% over 18
    rows against the stack without the overhead, its AMP efficiency refitted without it)
    and TF32 stays within 2 points (94.6% -> 93.0%, 4 rows; benchmarks/gpu_measured.py
    part 4).  TF32 keeps the generic efficiency."""
    v = bench.hopper_variants()
    shipped, (g, g_acc), (eff, acc) = v["shipped"], v["overhead"], v["mixed"]
    assert shipped.gpu_overhead_s() == pytest.approx(g, abs=1e-7) and g_acc >= 0.97
    assert shipped.efficiency_for("H100", "mixed").value == pytest.approx(eff, abs=0.01) and acc >= 0.95
    assert shipped.efficiency_for("H200", "mixed").value == shipped.efficiency_for("H100", "mixed").value
    generic = bench.without_hopper(shipped)
    assert shipped.efficiency_for("H100", "fp32") == generic.efficiency_for("H100", "fp32")
    before, after, acc = bench.evaluate(bench.steps(), v["without"]), results, bench.accuracy

    def held(rows, precision):
        fit = {id(r) for r in bench.fit_rows(rows, precision)}
        mine = [r for r in rows if r["gpu"] == H100 and r["model"] != "resnet50" and bench.gpu_bound(r)
                and bench.in_stack_format(r) and r["precision"] == precision and id(r) not in fit]  # fmt: skip
        return len(mine), mean(acc(r["projected_s"], r["measured_s"]) for r in mine)

    (n, amp_before), (_, amp_after) = held(before, "amp"), held(after, "amp")
    assert n == 18 and amp_after >= 0.81 and amp_after > amp_before + 0.03
    (n, tf32_before), (_, tf32_after) = held(before, "fp32"), held(after, "fp32")
    assert n == 4 and tf32_after >= 0.91 and tf32_after > tf32_before - 0.02


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
                 "The pytorch stack on Hopper", "GPU overhead per layer", "The memory format"):  # fmt: skip
        assert part in text, part


def test_the_estimate_falls_behind_as_the_batch_shrinks(bench):
    """What the H100 profiles at batch 16, 64 and 256 show (docs/accuracy.md): measured over
    estimated grows as the batch shrinks (1.29 at 256, 1.32 at 64, 1.52 at 16), the per-layer
    GPU overhead the compute model has no term for (the pytorch stack carries it since:
    iteration.gpu_overhead_s_per_layer, fitted on whole steps, not on these profiles).  Pins
    the data; the day the compute model gains that term this test says so."""
    ratios = [m / e for _, m, e in map(bench.batch_sums, bench.BATCH_PROFILES)]
    assert ratios[0] > ratios[1] > ratios[2] and ratios[0] - ratios[2] > 0.15


def test_the_channels_last_speedup_is_the_fit_and_holds_on_rows_not_fitted(bench, results):
    """stacks/pytorch.yaml compute.channels_last_speedup is fit_layout's on the H100's
    GPU-bound rows of ResNet-50, ResNet-152 and VGG-16 in the layout the stack does not run
    (AMP in NCHW: 7 rows, TF32 in channels-last: 16), projected with --memory-format their
    layout.  Held out: the H100's other models (AMP in NCHW 43.8% -> 68.2%, 4 rows; TF32 in
    channels-last 76.4% -> 84.0%, 10) and the H200's (41.4% -> 62.0%, 3; 71.8% -> 93.3%, 6)."""
    shipped = bench.load_stack("pytorch")
    for cls, (value, acc) in bench.fit_layout(results).items():
        assert shipped.channels_last_speedup_for("H100", cls).value == pytest.approx(value, abs=0.01) and acc >= 0.9
        assert shipped.channels_last_speedup_for("H200", cls).value == value
    _, others, h200 = (keep for _, keep in bench.LAYOUT_GROUPS)
    for keep, precision, floor in ((others, "amp", 0.66), (others, "fp32", 0.82), (h200, "amp", 0.6),
                                   (h200, "fp32", 0.9)):  # fmt: skip
        n, before, after = bench.layout_accuracy(results, shipped, keep, precision)
        assert n >= 3 and after >= floor and after > before + 0.05, (precision, before, after)
