"""Benchmark: oracle against what was measured on a real GPU (an NVIDIA H200; issue 25).

Three parts, none of whose measurements was used to fit anything oracle ships:

1. **Per layer type** -- the per-layer GPU profiles ``profiles/*_h200.yaml`` (``oracle profile
   --device cuda``: kernel execution times, fp32 tensors, convolutions in TF32) beside
   oracle's estimate for ``hgx-h200`` at the same batch in TF32 (``oracle profile --estimate``),
   summed per layer type, forward and backward, ms per iteration.
2. **Whole steps** -- every row of ``validation/gpu-training-steps.csv`` (torchvision models,
   eager PyTorch, one H200) projected with the ``pytorch`` stack on ``hgx-h200`` at the row's
   batch (AMP: fp16 with fp32 master weights; fp32: TF32, as PyTorch runs convolutions by
   default), accuracy ``1 - |t_pred - t_meas| / t_meas`` on the iteration time as ``oracle
   compare``, split into the rows the GPU bounds and those the host's launching bounds
   (``host_fb_ms`` at least 0.8 of the step).  A second projection replaces the stack's
   launch floor by this machine's, ``host_fb_ms`` / layers, taken from the ResNet-50 rows
   of the same precision and memory format at batch 1-32 (median): the ResNet-152 and
   VGG-16 rows are held out from that.
3. **Memory** -- the projected tensors (activations, transient, weights, gradients,
   optimizer state) against PyTorch's peak allocated memory of the step, and the projected
   total less the CUDA context against its peak reserved memory.

    python benchmarks/gpu_measured.py [--rows]
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import defaultdict
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from statistics import mean, median

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import dle_accuracy as D  # noqa: E402

from oracle.compute.binding import bind_profile  # noqa: E402
from oracle.load import load_model, load_profile, load_stack, load_system  # noqa: E402
from oracle.stack import Sourced  # noqa: E402

SYSTEM = "hgx-h200"
STEPS = ROOT / "validation" / "gpu-training-steps.csv"
PROFILES = {"resnet50": "resnet50_h200", "resnet152": "resnet152_h200", "vgg16": "vgg16_h200"}
PRECISION = {"amp": ("fp32", True), "fp32": ("tf32", False)}  # (compute precision, mixed)
HOST_BOUND = 0.8  # host_fb_ms / iteration_ms at or above which the host bounds the step
TENSORS = ("activations_bytes", "transient_bytes", "weights_bytes", "gradients_bytes", "optimizer_bytes")


@lru_cache(maxsize=None)
def _inputs(model: str):
    return load_model(model), load_system(SYSTEM)


@lru_cache(maxsize=None)
def _estimate(model: str, batch: int, precision: str, mixed: bool):
    return D.estimated(*_inputs(model), float(batch), precision, mixed)


def by_type(model_name: str) -> tuple[int, dict[str, list[float]]]:
    """Part 1: {layer type: [measured fw, estimated fw, measured bw, estimated bw]} in s per iteration."""
    model, _ = _inputs(model_name)
    measured = load_profile(ROOT / "profiles" / f"{PROFILES[model_name]}.yaml")
    batch = int(measured.measured_samples_per_gpu)
    est = bind_profile(model, _estimate(model_name, batch, "tf32", False))
    out: dict[str, list[float]] = defaultdict(lambda: [0.0] * 4)
    for layer, a, e in zip(model.layers, bind_profile(model, measured), est):
        row = out[layer.type]
        row[0] += a.fw_s * batch
        row[1] += e.fw_s * batch
        row[2] += a.bw_s * batch
        row[3] += e.bw_s * batch
    return batch, dict(out)


def steps() -> list[dict]:
    with STEPS.open(newline="") as f:
        return [r for r in csv.DictReader(f) if not r["error"]]


def host_floors(rows: list[dict]) -> dict[tuple[str, str], float]:
    """This machine's launch floor per layer, per (precision, format): the median of
    host_fb_ms / layers over the ResNet-50 rows at batch 1-32 (the fit rows)."""
    layers = len(_inputs("resnet50")[0].layers)
    groups: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in rows:
        if r["model"] == "resnet50" and int(r["batch"]) <= 32:
            groups[r["precision"], r["memory_format"]].append(float(r["host_fb_ms"]) / 1e3 / layers)
    return {k: median(v) for k, v in groups.items()}


def project(r: dict, stack) -> tuple[float, dict]:
    """(iteration s, memory parts) of row ``r`` under ``stack``."""
    model, system = _inputs(r["model"])
    precision, mixed = PRECISION[r["precision"]]
    batch = int(r["batch"])
    _, pt = D.predict(model, system, _estimate(r["model"], batch, precision, mixed), 1, float(batch),
                      precision, mixed, stack=stack)  # fmt: skip
    return pt.iteration_s, dict(pt.details)["memory"]


def evaluate(rows: list[dict]) -> list[dict]:
    stack = load_stack("pytorch")
    floors = host_floors(rows)
    out = []
    for r in rows:
        floor = floors.get((r["precision"], r["memory_format"]))
        local = replace(stack, launch_floor_s_per_layer=Sourced(floor, "this host (benchmarks/gpu_measured.py)"))
        t, parts = project(r, stack)
        t_local, _ = project(r, local)
        meas = float(r["iteration_ms"]) / 1e3
        out.append({**r, "projected_s": t, "local_s": t_local, "measured_s": meas,
                    "host_bound": float(r["host_fb_ms"]) >= HOST_BOUND * float(r["iteration_ms"]),
                    "fit_row": r["model"] == "resnet50",  # the floor's model: its other rows are not held out
                    "tensors_GB": sum(parts[k] for k in TENSORS) / 1e9,
                    "reserved_GB": (sum(parts.values()) - parts["cuda_context_bytes"]) / 1e9})  # fmt: skip
    return out


def accuracy(pred: float, meas: float) -> float:
    return 1.0 - abs(pred - meas) / meas


def _layer_report() -> list[str]:
    lines = ["Per layer type: measured (oracle profile --device cuda, H200) / estimated (hgx-h200, TF32), ms per iteration"]
    for name in PROFILES:
        batch, types = by_type(name)
        lines.append(f"  {name} at batch {batch}: type  fw meas/est  bw meas/est  ratio (fw+bw)")
        for t, (mf, ef, mb, eb) in sorted(types.items(), key=lambda kv: -sum(kv[1])):
            if mf + mb < 1e-4:
                continue
            ratio = (mf + mb) / (ef + eb) if ef + eb > 0 else float("inf")
            lines.append(f"    {t:14s} {mf * 1e3:7.2f} / {ef * 1e3:7.2f}  {mb * 1e3:7.2f} / {eb * 1e3:7.2f}  {ratio:5.2f}")
    return lines


def _group_line(label: str, rows: list[dict], key: str) -> str:
    if not rows:
        return f"  {label:44s} n=0"
    acc = mean(accuracy(r[key], r["measured_s"]) for r in rows)
    ratio = median(r[key] / r["measured_s"] for r in rows)
    return f"  {label:44s} n={len(rows):2d}  accuracy {100 * acc:5.1f}%  median projected/measured {ratio:.2f}"


def report(results: list[dict], rows: bool) -> str:
    lines = _layer_report()
    lines.append("\nWhole steps (validation/gpu-training-steps.csv), pytorch stack on hgx-h200:")
    gpu = [r for r in results if not r["host_bound"]]
    host = [r for r in results if r["host_bound"]]
    lines.append(_group_line("GPU-bound rows, shipped stack", gpu, "projected_s"))
    lines.append(_group_line("host-bound rows, shipped stack", host, "projected_s"))
    held = [r for r in host if not r["fit_row"]]
    lines.append(_group_line("host-bound rows, this host's floor (held out)", held, "local_s"))
    lines.append(_group_line("host-bound rows, shipped stack (same rows)", held, "projected_s"))
    lines.append("\nMemory, projected / measured (median, min-max over the rows):")
    for what, proj, meas in (("tensors / peak allocated", "tensors_GB", "peak_allocated_GB"),
                             ("total less context / peak reserved", "reserved_GB", "peak_reserved_GB")):  # fmt: skip
        rs = [r[proj] / float(r[meas]) for r in results]
        lines.append(f"  {what:36s} {median(rs):.3f} ({min(rs):.3f}-{max(rs):.3f})")
    if rows:
        lines.append("\nmodel      prec fmt            batch  measured ms  projected  this host  host_fb  bound")
        for r in results:
            lines.append(f"{r['model']:10s} {r['precision']:4s} {r['memory_format']:14s} {int(r['batch']):5d}"
                         f"  {r['measured_s'] * 1e3:11.1f}  {r['projected_s'] * 1e3:9.1f}  {r['local_s'] * 1e3:9.1f}"
                         f"  {float(r['host_fb_ms']):7.1f}  {'host' if r['host_bound'] else 'GPU'}")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", action="store_true", help="print every row's projection too")
    args = ap.parse_args()
    print(report(evaluate(steps()), args.rows))


if __name__ == "__main__":
    main()
