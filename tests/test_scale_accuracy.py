"""benchmarks/scale_accuracy.py's computation: oracle out of the box on the published
256-2,048-GPU runs of validation/large-scale-published.csv (issue 25).

The accuracy floors are what the benchmark reached after the compute model's Pascal
efficiency (2026-11-26; mean 0.891 with the framework's stack, 0.885 with --stack none;
before it 0.839 and 0.815), less 0.01: a change that makes oracle worse on these runs
fails here.  Raise them when a change makes it better.  Nothing was fitted on these rows:
the Pascal efficiency comes from MXNet's one-GPU rows (benchmarks/architecture_accuracy.py).
Jia's rows under the tensorflow stack then moved with NCCL's choice of algorithm on a file
that states none (2026-11-27, docs/cost-model.md): ResNet-50 0.80 -> 0.96, AlexNet 0.87 ->
0.55 (its 2018 all-reduce over TCP was slower than NCCL's model; the flat ring's latency
had matched it); stack mean 0.858.  Batch norm and pooling before Volta at their measured
bandwidth shares, with the Pascal efficiency refitted (2026-11-27): Jia's ResNet-50 on P40s,
whose 346 GB/s make batch norm weigh, 0.96 -> 0.95 with its stack and 0.76 -> 0.67 bare;
means 0.858 and 0.863."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import benchmark, run_cli

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "scale_accuracy.py"

# Per row: the floor of the accuracy with the row's stack, and with --stack none (now - 0.01).
FLOORS = {
    "goyal2017-resnet50-256": (0.85, 0.85),
    "akiba2017-resnet50-1024": (0.93, 0.94),
    "jia2018-resnet50-2048": (0.93, 0.65),
    # lowered from (0.54, 0.83) with cuDNN's FFT for AlexNet's 5x5 conv2 on the P40 (Pascal): its compute
    # is faster, and the measured 129 ms iteration already held more than compute and exchange
    "jia2018-alexnet-1024": (0.52, 0.78),
    # lowered from (0.96, 0.98) with NCCL's tree beyond ABCI's fitted 128 GPUs under the mxnet stack
    # (systems/abci.yaml collectives.tree_beyond_gpus): the flat ring's 7.1 ms of latency over 2,048
    # GPUs had stood in for the ~4 ms this run spent beyond compute and exchange
    "yamazaki2019-resnet50-2048": (0.91, 0.98),
}
MEAN_FLOOR = {"stack": 0.83, "none": 0.85}


@pytest.fixture(scope="module")
def bench():
    return benchmark("scale_accuracy")


@pytest.fixture(scope="module")
def results(bench):
    return bench.evaluate(bench.rows())


def test_every_row_is_projected_and_named(results):
    assert sorted(x["row"]["id"] for x in results) == sorted(FLOORS)
    for x in results:
        r = x["row"]
        assert int(r["gpus"]) >= 256
        assert int(r["per_gpu_batch"]) * int(r["gpus"]) == int(r["global_batch"])
        assert r["source"] and r["quote"] and r["derivation"]


def test_derivations_are_the_stated_arithmetic(results):
    """Each iteration time is its derivation's arithmetic on the stated numbers."""
    for x in results:
        r, d = x["row"], x["row"]["derivation"]
        total = re.match(r"([\d.]+) s / \((\d+) epochs x (\d+)/(\d+) ", d)
        if total:
            t, epochs, n, b = (float(v) for v in total.groups())
            assert b == float(r["global_batch"])
            expected = t / (epochs * n / b)
        else:
            b, thr = re.match(r"(\d+) images per iteration / ([\d,]+) images/s", d).groups()
            expected = float(b) / float(thr.replace(",", ""))
        assert float(r["iteration_s"]) == pytest.approx(expected, rel=1e-3)


def test_accuracy_floors(results, bench):
    for x in results:
        stack_floor, none_floor = FLOORS[x["row"]["id"]]
        assert x["stack"].accuracy(x["measured_s"]) >= stack_floor, x["row"]["id"]
        assert x["none"].accuracy(x["measured_s"]) >= none_floor, x["row"]["id"]
    for variant, floor in MEAN_FLOOR.items():
        assert bench.summary(results, variant) >= floor


def test_projections_use_the_rows_stack(results):
    """The framework's stack is in force where one is shipped (not silently none)."""
    for x in results:
        assert f"--stack {x['row']['stack']} " in x["stack"].command
        assert "--stack none " in x["none"].command
    changed = [x for x in results if x["row"]["stack"] != "none"]
    assert all(x["stack"].iteration_s != x["none"].iteration_s for x in changed)


def test_accuracy_is_one_minus_relative_error_clipped(bench):
    p = bench.Projection("", 0.15, 0.1, 0.0, 0.05, 0.05, "ring")
    assert p.accuracy(0.2) == pytest.approx(0.75)
    assert p.accuracy(0.1) == pytest.approx(0.5)
    assert p.accuracy(0.05) == 0.0


def test_printed_command_reproduces_the_projection(results, tmp_path):
    """The command line the benchmark prints gives its number (the Yamazaki row on ABCI)."""
    x = next(x for x in results if x["row"]["id"].startswith("yamazaki"))
    prof = tmp_path / "p.yaml"
    root = BENCH.parents[1]
    r = run_cli(*x["profile_command"].split()[1:-1], str(prof), cwd=root)
    assert r.code == 0, r.err
    args = [str(prof) if a == "PROFILE" else a for a in x["stack"].command.split()[1:]]
    r = run_cli(*args, cwd=root)
    assert r.code == 0, r.err
    assert json.loads(r.out)[0]["iteration_s"] == pytest.approx(x["stack"].iteration_s, rel=1e-12)
