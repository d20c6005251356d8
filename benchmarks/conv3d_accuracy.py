"""Benchmark: 3-D convolutions in the compute model (KernelConstants.conv3d_*_efficiency).

NVIDIA DeepLearningExamples publishes the training throughput of its TensorFlow 3-D U-Net
(``UNet_3D_Medical`` in ``validation/dle-throughput.csv``; shipped as ``models/unet3d.yaml``)
on a DGX-1 (V100: FP32 and AMP) and a DGX A100 80GB (TF32 and AMP), 1 and 8 GPUs, batch 1-8.
The compute model, fitted on 2-D networks, projected it 2-2.8x too fast on V100 FP32 and on
AMP everywhere while its A100 TF32 rows (at the low TF32 efficiency) came out right: 3-D
convolutions reach a smaller share of the peak than the 2-D ones the efficiencies were fitted
on (cuDNN has no Winograd or FFT for them; its 3-D implicit GEMMs gather each tile over 27
taps), so the model caps them (oracle/compute/kernels.py).

- ``--fit``: the two caps on the V100 rows only, bare (``--stack none``, as every compute-model
  constant is fitted: ``benchmarks/dle_accuracy.py``): AMP rows the tensor-core cap, FP32
  rows the CUDA-core one (a grid each, mean accuracy on the iteration time).
- Held out: the A100 rows, AMP (the tensor-core cap carried to another GPU) and TF32 (under
  the cap, unchanged by it).  The A100 TF32 rows at batch 8 run 2.6x slower than at batch 4
  in the published table (throughput 3.99 against 10.66 img/s, memory oversubscribed) and are
  shown apart.

Each row is projected as ``benchmarks/dle_accuracy.py`` projects (an estimated profile at the
row's batch and precision on the shipped system, data parallel), bare and under the
TensorFlow stack (``stack_accuracy.py`` scores the same rows under the stack with the other
never-fitted models).

    python benchmarks/conv3d_accuracy.py [--fit]

tests/test_conv3d_accuracy.py pins the numbers.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from statistics import mean

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import dle_accuracy as D  # noqa: E402

from oracle.compute import kernels as K  # noqa: E402

NAMES = {"UNet_3D_Medical": "unet3d"}
TENSOR_GRID = (1.0, 0.6, 0.5, 0.45, 0.4, 0.35, 0.3, 0.28, 0.26, 0.24, 0.22, 0.2, 0.18, 0.16, 0.15, 0.14, 0.12, 0.1)
SIMT_GRID = (1.0, 0.9, 0.8, 0.7, 0.6, 0.55, 0.5, 0.45, 0.42, 0.4, 0.38, 0.35, 0.3, 0.25, 0.2)
ANOMALOUS_BATCH = "8"  # the A100 TF32 rows at batch 8 (module docstring)


def rows() -> list[dict]:
    return D.rows(NAMES)


def v100(data: list[dict], precision: str) -> list[dict]:
    return [r for r in data if r["system"].startswith("DGX-1") and r["precision"] == precision]


def group(r: dict) -> str:
    """The row's part in the benchmark: fitted (V100) or held out (A100), by precision."""
    if r["system"].startswith("DGX-1"):
        return f"fitted: V100 {r['precision']}"
    if r["precision"] == "TF32" and r["per_gpu_batch"] == ANOMALOUS_BATCH:
        return "A100 TF32, batch 8 (anomalous table)"
    return f"held out: A100 {r['precision']}"


def score(data: list[dict], k: K.KernelConstants) -> float:
    res = D.evaluate(data, k, calibrated=False, names=NAMES)
    return mean(D.accuracy(r["out_of_box"], r["measured"]) for r in res)


def fit(data: list[dict]) -> K.KernelConstants:
    """The tensor-core cap on the V100 AMP rows, then the CUDA-core cap on the V100 FP32 rows."""
    k = K.DEFAULT_CONSTANTS
    for field, grid, precision in (("conv3d_tensor_efficiency", TENSOR_GRID, "AMP"),
                                   ("conv3d_simt_efficiency", SIMT_GRID, "FP32")):  # fmt: skip
        fit_rows = v100(data, precision)
        scores = [(score(fit_rows, replace(k, **{field: v})), v) for v in grid]
        best, value = max(scores)
        print(f"{field}: {value} ({100 * best:.1f}% on the {len(fit_rows)} V100 {precision} rows)")
        k = replace(k, **{field: value})
    return k


def evaluate(data: list[dict], k: K.KernelConstants = K.DEFAULT_CONSTANTS, stack=None) -> dict[str, float]:
    """Mean accuracy per group, out of the box with constants ``k`` (``stack``: under it)."""
    if stack is None:
        res = D.evaluate(data, k, calibrated=False, names=NAMES)
        acc = [(r, D.accuracy(r["out_of_box"], r["measured"])) for r in res]
    else:
        import stack_accuracy as S

        acc = [(r, D.accuracy(S.project(r, stack), float(r["throughput_img_per_s"]))) for r in data]
    groups: dict[str, list[float]] = {}
    for r, a in acc:
        groups.setdefault(group(r), []).append(a)
    return {g: mean(v) for g, v in sorted(groups.items())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fit", action="store_true", help="refit the two caps on the V100 rows first")
    args = ap.parse_args()
    data = rows()
    k = fit(data) if args.fit else K.DEFAULT_CONSTANTS
    uncapped = replace(k, conv3d_tensor_efficiency=None, conv3d_simt_efficiency=None)
    print(f"caps: tensor cores {k.conv3d_tensor_efficiency}, CUDA cores {k.conv3d_simt_efficiency}\n")
    from oracle.load import load_stack

    tf = load_stack("tensorflow")
    columns = {"no cap": evaluate(data, uncapped), "capped": evaluate(data, k)}
    if k is K.DEFAULT_CONSTANTS:
        columns["capped, tensorflow stack"] = evaluate(data, k, tf)
    counts = {g: sum(group(r) == g for r in data) for g in columns["capped"]}
    print(f"{'rows':40} {'n':>3} " + " ".join(f"{c:>24}" for c in columns))
    for g in columns["capped"]:
        print(f"{g:40} {counts[g]:3} " + " ".join(f"{100 * col[g]:23.1f}%" for col in columns.values()))


if __name__ == "__main__":
    main()
