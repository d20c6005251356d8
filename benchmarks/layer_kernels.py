"""Benchmark: the compute model layer by layer against every layer timed on an NVIDIA H200 in
AMP and in fp32 (TF32 convolutions), channels-last (validation/gpu-layer-kernels.csv,
``scripts/measure_layer_kernels.py``: eager PyTorch 2.11, cuDNN 9.19, kernel execution times).

Each layer's measured forward + backward beside the compute model's kernel time for the same
layer, GPU (``hgx-h200``), precision (AMP: fp16; fp32: TF32) and batch, under the ``pytorch``
stack's kernel fields (separate activation kernels, batchnorm's and pooling's shares); the
stack's whole-step efficiency is not applied (it is fitted on whole steps: gpu_measured.py).
Printed per model, batch and precision, summed by layer type: measured ms and modelled /
measured; then the pooling layers, fitted and held out, with and without the stack's
``compute.pool_window_efficiency``.

``--fit``: stacks/pytorch.yaml's ``compute.pool_window_efficiency`` (windowed pooling's
per-element rate, oracle/compute/kernels.py), a grid minimising the mean |log(modelled /
measured)| of forward + backward over the max-pooling layers of ResNet-50, VGG-16 and AlexNet
only (stride 2: the layers the stack's bandwidth shares were measured on); held out: every
max pooling of GoogLeNet and Inception-v3 (stride 1 and 2) and every average pooling (Inception-
v3's stride-1 3x3), each printed with the score before (no such bound) and after.

    python benchmarks/layer_kernels.py [--fit]
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from collections import defaultdict
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from oracle.compute import kernels as K  # noqa: E402
from oracle.compute.conversion import system_spec  # noqa: E402
from oracle.load import load_model, load_stack, load_system  # noqa: E402

CSV = ROOT / "validation" / "gpu-layer-kernels.csv"
SYSTEM = "hgx-h200"
PRECISION = {"amp": "fp16", "fp32": "tf32"}  # autocast runs conv/fc in fp16; PyTorch's fp32 runs cuDNN in TF32
FIT_MODELS = ("resnet50", "vgg16", "alexnet")  # --fit: their max pooling only


def load_rows() -> list[tuple]:
    """(row, layer, info) of every measured layer."""
    models: dict = {}
    out = []
    with CSV.open() as fh:
        for r in csv.DictReader(fh):
            m = models.get(r["model"]) or models.setdefault(r["model"], load_model(r["model"]))
            i = m.index[r["layer"]]
            out.append((r, m.layers[i], m.info[i]))
    return out


@lru_cache(maxsize=1)
def h200():
    return system_spec(load_system(SYSTEM))


def modelled_ms(rows, k: K.KernelConstants) -> list[tuple[float, float]]:
    """(measured, modelled) forward + backward ms of each row."""
    gpu = h200()
    out = []
    for r, layer, info in rows:
        fw, bw = K.layer_time(layer, info, gpu, PRECISION[r["precision"]], int(r["batch"]), k)
        out.append((float(r["fw_ms"]) + float(r["bw_ms"]), (fw + bw) * 1e3))
    return out


def score(pairs) -> tuple[float, float]:
    """(mean |log(modelled / measured)|, sum modelled / sum measured); the mean over the
    layers with a kernel in both (a view, flatten, has none in the model)."""
    logs = [abs(math.log(p / m)) for m, p in pairs if m > 0 and p > 0]
    if not logs:
        return math.nan, math.nan
    mean_log = sum(logs) / len(logs)
    return mean_log, sum(p for _, p in pairs) / sum(m for m, _ in pairs)


def measured(pairs) -> float:
    return sum(m for m, _ in pairs)


def stack_constants(**fields) -> K.KernelConstants:
    return replace(K.DEFAULT_CONSTANTS, **{**load_stack("pytorch").kernel_constants(), **fields})


def by_type(rows, k: K.KernelConstants) -> None:
    table: dict = defaultdict(lambda: defaultdict(list))
    for (r, layer, _), pair in zip(rows, modelled_ms(rows, k)):
        table[(r["model"], int(r["batch"]), r["precision"])][layer.type].append(pair)
    print("model batch precision: all, then the layer types by measured time: measured ms / modelled over measured")
    for key, types in sorted(table.items()):
        everything = [p for pairs in types.values() for p in pairs]
        parts = sorted(types.items(), key=lambda kv: -measured(kv[1]))
        text = " ".join(f"{t} {measured(ps):.2f}/{score(ps)[1]:.2f}" for t, ps in parts[:7] if measured(ps) > 0)
        print(f"{key[0]:15s} {key[1]:4d} {key[2]:4s} all {measured(everything):7.2f}/{score(everything)[1]:.2f}  {text}")


def pooling_groups(rows) -> dict[str, list]:
    """The fit rows (max pooling of FIT_MODELS) and each held-out group of pooling layers."""
    pools = [x for x in rows if x[1].type in K.WINDOW_TYPES]
    groups = {"fitted: max pooling, ResNet-50, VGG-16, AlexNet": [
        x for x in pools if x[1].type == "maxpool" and x[0]["model"] in FIT_MODELS]}  # fmt: skip
    for t in K.WINDOW_TYPES:
        for model in sorted({x[0]["model"] for x in pools if x[1].type == t}):
            if not (t == "maxpool" and model in FIT_MODELS):
                groups[f"held out: {t}, {model}"] = [x for x in pools if x[1].type == t and x[0]["model"] == model]
    return groups


def pooling_table(groups: dict[str, list], value: float) -> None:
    print(f"{'pooling layers, forward + backward':48s} {'layers':>6s}  mean |log|, modelled/measured:"
          f" without the bound   with {value:g}")  # fmt: skip
    for name, sel in groups.items():
        b, a = score(modelled_ms(sel, stack_constants(pool_window_efficiency=None))), score(
            modelled_ms(sel, stack_constants(pool_window_efficiency=value)))
        print(f"{name:48s} {len(sel):6d}  {b[0]:.3f} {b[1]:.2f}   {a[0]:.3f} {a[1]:.2f}")


def fit(rows) -> float:
    groups = pooling_groups(rows)
    fit_rows = next(iter(groups.values()))
    grid = [i * 0.0005 for i in range(4, 121)]
    best = min(grid, key=lambda e: score(modelled_ms(fit_rows, stack_constants(pool_window_efficiency=e)))[0])
    print(f"pool_window_efficiency {best:.5f} (grid, 0.0005 steps) on {len(fit_rows)} max-pooling layers of"
          f" {', '.join(FIT_MODELS)}; shipped: {load_stack('pytorch').pool_window_efficiency.value}")
    pooling_table(groups, best)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit", action="store_true", help="refit compute.pool_window_efficiency (module docstring)")
    args = parser.parse_args()
    rows = load_rows()
    if args.fit:
        fit(rows)
        return
    by_type(rows, stack_constants())
    print()
    pooling_table(pooling_groups(rows), float(load_stack("pytorch").pool_window_efficiency.value))


if __name__ == "__main__":
    main()
