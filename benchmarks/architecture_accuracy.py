"""Benchmark: the compute model on GPUs before tensor cores (Kepler, Maxwell, Pascal).

``validation/mxnet-2017-pre-volta.csv`` holds MXNet's own published one-GPU training
throughput (apache/mxnet docs/how_to/perf.md, MXNet 0a03417, cuDNN 5.1): ResNet-50 and
Inception-v3 at batch 1-32 on a K80 (one GK210), an M40 and a P100 SXM2.  Each row's
``role`` says what it is for:

- ``fit``: batch 32, the largest, where the GPU and not the host sets the pace.  Only these
  six rows fit ``KernelConstants.architecture_efficiency`` (``--fit``: a grid per
  architecture minimising the mean |1 - projected/measured|).
- ``held-out``: batch 8 and 16, never fitted: how the model's batch dependence (waves,
  launch floor) carries the fitted efficiency to smaller kernels.
- ``host-bound``: batch 1-4, where 2017 MXNet's per-operator engine cost, which ``--stack
  none`` does not model, sets the pace; shown, not scored.

Each row is projected as a user would, through the CLI::

    oracle profile MODEL --estimate --system S --batch b --precision fp32 -o PROFILE
    oracle predict -m MODEL -s S -p PROFILE --strategy data --gpus 1 -b b --precision fp32 --stack none -f json

The large-scale Pascal runs of ``validation/large-scale-published.csv`` (Goyal, Akiba, Jia:
other frameworks, other GPUs, 256-2,048 GPUs) are a further held-out check:
``benchmarks/scale_accuracy.py``.

    python benchmarks/architecture_accuracy.py [--fit]

tests/test_architecture_accuracy.py runs the same computation and pins it.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from statistics import mean

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

DATA = ROOT / "validation" / "mxnet-2017-pre-volta.csv"
OTHERS = ROOT / "validation" / "pre-volta-training.csv"  # other sources: held out, never fitted
# Turing, Ampere GA10x and Ada graphics cards: held out, the V100-fitted model unchanged there
GRAPHICS = ROOT / "validation" / "graphics-gpu-training.csv"
SCORED = ("fit", "held-out")
GRID = [round(0.10 + 0.01 * i, 2) for i in range(86)]  # 0.10 .. 0.95 (the V100-fitted simt_efficiency)


def rows(path: Path = DATA) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def accuracy(projected_s: float, measured_s: float) -> float:
    """1 - |t_pred - t_meas| / t_meas, clipped at 0 (as ``oracle compare``)."""
    return max(0.0, 1.0 - abs(projected_s - measured_s) / measured_s)


def cli_iteration_s(r: dict, tmp: str) -> float:
    """The row projected through the CLI (module docstring): seconds per iteration."""
    from scale_accuracy import _oracle

    prof = str(Path(tmp) / f"{r['id']}.yaml")
    b = r["per_gpu_batch"]
    _oracle("profile", r["model"], "--estimate", "--system", r["system"], "--batch", b, "--precision", "fp32", "-o", prof)
    out = _oracle("predict", "-m", r["model"], "-s", r["system"], "-p", prof, "--strategy", "data", "--gpus", "1",
                  "-b", b, "--precision", "fp32", "--stack", "none", "-f", "json")  # fmt: skip
    (pt,) = json.loads(out)
    return float(pt["iteration_s"])


@lru_cache(maxsize=None)
def _inputs(system: str, model: str):
    """(GPU spec, whether the system fuses activations, model)."""
    from oracle.compute.conversion import system_spec
    from oracle.load.model import load_model
    from oracle.load.system import load_system

    s = load_system(ROOT / system)
    return system_spec(s), s.implementation.fused_activations, load_model(ROOT / "models" / f"{model}.yaml")


def model_iteration_s(r: dict, k, fused: bool | None = None) -> float:
    """The compute model's one-GPU iteration under kernel constants ``k``: forward, backward
    and (unless the row's ``phase`` is ``fwdbwd``) weight update of the estimated profile, as
    ``cli_iteration_s`` (equal at the shipped constants; tests/test_architecture_accuracy.py
    checks); the fit's inner loop.  ``fused``: whether activations run inside batch norm
    (None: as the system says; pre-Volta systems launch them apart)."""
    from oracle.compute import kernels as K

    spec, system_fused, model = _inputs(r["system"], r["model"])
    k = replace(k, fuse_activations=system_fused if fused is None else fused)
    b, (prec, mixed) = int(r["per_gpu_batch"]), _precision(r)
    fwbw = sum(fw + bw for fw, bw in K.per_sample_times(model, spec, prec, b, k)) * b
    if r.get("phase") == "fwdbwd":
        return fwbw
    return fwbw + sum(K.update_time(info, spec, prec, mixed, k) for info in model.info)


def _precision(r: dict) -> tuple[str, bool]:
    """(oracle's precision, mixed) of a row: "fp16-amp" is fp16 with fp32 master weights."""
    p = r.get("precision", "fp32")
    return (p[: -len("-amp")], True) if p.endswith("-amp") else (p, False)


def other_rows(path: Path = OTHERS) -> list[dict]:
    """The rows of other sources whose model oracle ships and whose precision the GPU has."""
    shipped = [r for r in rows(path) if (ROOT / "models" / f"{r['model']}.yaml").exists()]
    return [r for r in shipped if _inputs(r["system"], r["model"])[0].peak(_precision(r)[0]) is not None]


def _before():
    """The kernel constants as they were before the architecture terms (and activations
    fused: ``model_iteration_s(r, _before(), fused=True)``)."""
    from oracle.compute import kernels as K

    return replace(K.DEFAULT_CONSTANTS, architecture_efficiency=())


def evaluate_others(data: list[dict]) -> list[tuple[str, int, float, float]]:
    """(model, rows, accuracy before, accuracy now) per model of the other sources, and 'all'."""
    from oracle.compute import kernels as K

    before = _before()
    acc = [(r["model"], accuracy(model_iteration_s(r, before, fused=True), float(r["iteration_s"])),
            accuracy(model_iteration_s(r, K.DEFAULT_CONSTANTS), float(r["iteration_s"]))) for r in data]  # fmt: skip
    out = []
    for name in sorted({m for m, _, _ in acc}) + ["all"]:
        xs = [(a, b) for m, a, b in acc if name in ("all", m)]
        out.append((name, len(xs), mean(a for a, _ in xs), mean(b for _, b in xs)))
    return out


def architecture(r: dict) -> str:
    from oracle.gpus import architecture_of

    return architecture_of(r["gpu_model"])


def fit(data: list[dict]) -> dict[str, tuple[float, float]]:
    """Per architecture: (efficiency, mean accuracy on its fit rows) of the grid's best."""
    from oracle.compute import kernels as K

    out = {}
    for arch in sorted({architecture(r) for r in data}):
        mine = [r for r in data if r["role"] == "fit" and architecture(r) == arch]
        scores = []
        for e in GRID:
            k = replace(K.DEFAULT_CONSTANTS, architecture_efficiency=((arch, e),))
            scores.append((mean(accuracy(model_iteration_s(r, k), float(r["iteration_s"])) for r in mine), e))
        best, e = max(scores)
        out[arch] = (e, best)
    return out


def evaluate(data: list[dict]) -> list[dict]:
    """Per row: measured, projected through the CLI (shipped constants), and the compute
    model as it was before (no architecture efficiency, activations fused)."""
    before = _before()
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in data:
            m = float(r["iteration_s"])
            out.append({"row": r, "arch": architecture(r), "measured_s": m, "projected_s": cli_iteration_s(r, tmp),
                        "before_s": model_iteration_s(r, before, fused=True)})  # fmt: skip
    return out


def summary(results: list[dict]) -> list[tuple[str, str, int, float, float]]:
    """(architecture, role, rows, accuracy before, accuracy now) per scored group, and 'all'."""
    groups = sorted({(x["arch"], x["row"]["role"]) for x in results if x["row"]["role"] in SCORED})
    out = []
    for arch, role in groups + [("all", "fit"), ("all", "held-out")]:
        xs = [x for x in results if x["row"]["role"] == role and arch in ("all", x["arch"])]
        out.append((arch, role, len(xs), mean(accuracy(x["before_s"], x["measured_s"]) for x in xs),
                    mean(accuracy(x["projected_s"], x["measured_s"]) for x in xs)))  # fmt: skip
    return out


def main() -> None:
    from oracle.compute import kernels as K

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fit", action="store_true", help="fit each architecture's efficiency on the role=fit rows")
    args = ap.parse_args()
    data = rows()
    if args.fit:
        print("architecture  efficiency  mean accuracy on its fit rows (batch 32)")
        for arch, (e, acc) in fit(data).items():
            print(f"{arch:>12}  {e:10.2f}  {acc:.3f}")
        print(f"shipped: {dict(K.DEFAULT_CONSTANTS.architecture_efficiency)}\n")
    results = evaluate(data)
    print(f"{'row':34} {'role':>10} {'measured img/s':>14} {'before':>8} {'now':>8}  now/measured (img/s)")
    for x in results:
        b = int(x["row"]["per_gpu_batch"])
        print(f"{x['row']['id']:34} {x['row']['role']:>10} {b / x['measured_s']:14.1f} {b / x['before_s']:8.1f} "
              f"{b / x['projected_s']:8.1f}  {x['measured_s'] / x['projected_s']:.2f}")  # fmt: skip
    print(f"\n{'architecture':>12} {'role':>10} {'rows':>4}  accuracy before -> now")
    for arch, role, n, before, now in summary(results):
        print(f"{arch:>12} {role:>10} {n:4}  {before:.3f} -> {now:.3f}")
    print(f"\nheld out, other sources ({OTHERS.relative_to(ROOT)}: Torch, Caffe, Chainer, TensorFlow, neon, MXNet;"
          " K40, K80, Maxwell and Pascal GeForce/Titan, P100 PCIe)")
    print(f"{'model':>16} {'rows':>4}  accuracy before -> now")
    for name, n, before, now in evaluate_others(other_rows()):
        print(f"{name:>16} {n:4}  {before:.3f} -> {now:.3f}")
    print(f"\nheld out, graphics cards ({GRAPHICS.relative_to(ROOT)}: RTX 2080 Ti, TITAN RTX, RTX 3090, RTX 4090;"
          " the compute model there is the V100 fit, unchanged)")
    print(f"{'model':>16} {'rows':>4}  accuracy")
    for name, n, _, now in evaluate_others(other_rows(GRAPHICS)):
        print(f"{name:>16} {n:4}  {now:.3f}")


if __name__ == "__main__":
    main()
