"""Benchmark: oracle against what was measured on real GPUs (an NVIDIA H200 and an H100; issue 25).

Four parts; only part 4's fit rows (ResNet-50 on the H100) fit anything oracle ships:

1. **Per layer type** -- the per-layer GPU profiles ``profiles/*_h200.yaml`` and
   ``profiles/resnet50_h100*.yaml`` (``oracle profile --device cuda``: kernel execution
   times, fp32 tensors, convolutions in TF32) beside oracle's estimate for the same GPU
   (``hgx-h200``, ``dgx-h100-superpod``) at the same batch in TF32 (``oracle profile
   --estimate``), summed per layer type, forward and backward, ms per iteration; and the
   H100 ResNet-50 sums at batch 16, 64 and 256 (how the estimate holds as the batch shrinks).
2. **Whole steps** -- every row of ``validation/gpu-training-steps.csv`` (torchvision models,
   PyTorch, one GPU) projected with the ``pytorch`` stack on the row's GPU's system at the
   row's batch (AMP: fp16 with fp32 master weights; fp32: TF32, as PyTorch runs convolutions
   by default), accuracy ``1 - |t_pred - t_meas| / t_meas`` on the iteration time as
   ``oracle compare``.  Eager rows are split into those the GPU bounds and those the host's
   launching bounds (``host_fb_ms`` at least 0.8 of the step).  A second projection
   replaces the stack's launch floor by the machine's, ``host_fb_ms`` / layers, taken from
   the ResNet-50 rows of the same GPU, precision and memory format at batch 1-32 (median):
   the ResNet-152 and VGG-16 rows are held out from that.  Rows run as one CUDA graph
   (``execution`` cuda_graph: no host launching, bfloat16 under AMP) are projected with the
   stack's host costs (launch floor, per-iteration synchronisation) taken out: the GPU's
   own time.
3. **Memory** -- the projected tensors (activations, transient, weights, gradients,
   optimizer state) against PyTorch's peak allocated memory of the eager step, and the
   projected total less the CUDA context against its peak reserved memory.
4. **Hopper efficiencies** -- the pytorch stack's ``by_gpu`` H100/H200 AMP efficiency
   refitted (``fit_hopper``: a grid over multiples of the V100-fitted generic ones, on
   ResNet-50's GPU-bound H100 rows; TF32 is fitted too but not shipped: those rows ran
   channels-last, and the stack's TF32 runs NCHW as DeepLearningExamples do) beside the
   shipped ones, and the GPU-bound rows' accuracy with the generic efficiencies and with
   the shipped ones: fit rows, held-out H100 rows (ResNet-152, VGG-16), held-out H200 rows
   by memory format.

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

SYSTEMS = {"NVIDIA H200": "hgx-h200", "NVIDIA H100 80GB HBM3": "dgx-h100-superpod"}  # the row's GPU -> system
H200, H100 = SYSTEMS  # the rows' gpu names
STEPS = ROOT / "validation" / "gpu-training-steps.csv"
# (model, profile, system) of part 1
PROFILES = (("resnet50", "resnet50_h200", "hgx-h200"), ("resnet152", "resnet152_h200", "hgx-h200"),
            ("vgg16", "vgg16_h200", "hgx-h200"), ("resnet50", "resnet50_h100", "dgx-h100-superpod"))  # fmt: skip
BATCH_PROFILES = ("resnet50_h100_b16", "resnet50_h100_b64", "resnet50_h100")  # the H100 at batch 16, 64, 256
PRECISION = {"amp": ("fp32", True), "fp32": ("tf32", False)}  # (compute precision, mixed)
HOST_BOUND = 0.8  # host_fb_ms / iteration_ms at or above which the host bounds the step
TENSORS = ("activations_bytes", "transient_bytes", "weights_bytes", "gradients_bytes", "optimizer_bytes")


@lru_cache(maxsize=None)
def _inputs(model: str, system: str = "hgx-h200"):
    return load_model(model), load_system(system)


@lru_cache(maxsize=None)
def _estimate(model: str, batch: int, precision: str, mixed: bool, system: str = "hgx-h200"):
    return D.estimated(*_inputs(model, system), float(batch), precision, mixed)


def by_type(model_name: str, profile: str = "", system: str = "hgx-h200") -> tuple[int, dict[str, list[float]]]:
    """Part 1: {layer type: [measured fw, estimated fw, measured bw, estimated bw]} in s per iteration."""
    model, _ = _inputs(model_name, system)
    measured = load_profile(ROOT / "profiles" / f"{profile or model_name + '_h200'}.yaml")
    batch = int(measured.measured_samples_per_gpu)
    est = bind_profile(model, _estimate(model_name, batch, "tf32", False, system))
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


def graph(r: dict) -> bool:
    """Whether the row's step ran as one CUDA graph (no host launching)."""
    return r.get("execution") == "cuda_graph"


def host_floors(rows: list[dict]) -> dict[tuple[str, str, str], float]:
    """Each machine's launch floor per layer, per (GPU, precision, format): the median of
    host_fb_ms / layers over its eager ResNet-50 rows at batch 1-32 (the fit rows)."""
    layers = len(_inputs("resnet50")[0].layers)
    groups: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for r in rows:
        if r["model"] == "resnet50" and int(r["batch"]) <= 32 and not graph(r):
            groups[r["gpu"], r["precision"], r["memory_format"]].append(float(r["host_fb_ms"]) / 1e3 / layers)
    return {k: median(v) for k, v in groups.items()}


def project(r: dict, stack) -> tuple[float, dict]:
    """(iteration s, memory parts) of row ``r`` under ``stack`` on its GPU's system."""
    system_name = SYSTEMS[r["gpu"]]
    model, system = _inputs(r["model"], system_name)
    precision, mixed = PRECISION[r["precision"]]
    batch = int(r["batch"])
    # the optimizer of scripts/measure_training_step.py: SGD with momentum (its state in memory)
    _, pt = D.predict(model, system, _estimate(r["model"], batch, precision, mixed, system_name), 1,
                      float(batch), precision, mixed, stack=stack, optimizer="momentum")  # fmt: skip
    return pt.iteration_s, dict(pt.details)["memory"]


def gpu_only(stack):
    """``stack`` without its host costs (launch floor, per-iteration synchronisation): what
    a step captured in one CUDA graph runs."""
    none = Sourced(0.0, "one CUDA graph: no host launching (benchmarks/gpu_measured.py)")
    return replace(stack, launch_floor_s_per_layer=none, fixed_s=none)


HOPPER = ("H100", "H200")  # the pytorch stack's by_gpu entries fitted here (fit_hopper)
GRID = [round(0.5 + 0.01 * i, 2) for i in range(151)]  # multipliers of the generic efficiency


def without_hopper(stack):
    """``stack`` with its Hopper efficiencies taken out: the generic (V100-fitted) ones."""
    return replace(stack, efficiency=tuple(e for e in stack.efficiency if e[0] not in HOPPER))


def gpu_bound(r: dict) -> bool:
    return graph(r) or not r["host_bound"]


def hopper_fit_rows(rows: list[dict]) -> list[dict]:
    """The rows the Hopper efficiencies are fitted on: ResNet-50 on the H100, bound by the
    GPU (CUDA-graph rows and eager rows the host does not bound).  Every other row (the
    H200's, ResNet-152's, VGG-16's) is held out."""
    return [r for r in rows if r["gpu"] == H100 and r["model"] == "resnet50" and gpu_bound(r)]


def with_efficiency(stack, gpu: str, cls: str, value: float):
    return replace(stack, efficiency=(*stack.efficiency, (gpu, cls, Sourced(value, "benchmarks/gpu_measured.py"))))


def fit_hopper(rows: list[dict]) -> dict[str, tuple[float, float]]:
    """Per precision class (fp32: TF32 rows, mixed: AMP rows): (efficiency, mean accuracy)
    of the grid's best multiple of the generic efficiency on :func:`hopper_fit_rows`."""
    base = without_hopper(load_stack("pytorch"))
    out = {}
    for cls, precision in (("fp32", "fp32"), ("mixed", "amp")):
        generic = base.efficiency_for("H100", cls).value
        mine = [r for r in hopper_fit_rows(rows) if r["precision"] == precision]
        scores = []
        for m in GRID:
            stack = with_efficiency(base, "H100", cls, generic * m)
            scores.append((mean(accuracy(_one(r, stack), r["measured_s"]) for r in mine), m))
        acc, m = max(scores)
        out[cls] = (round(generic * m, 4), acc)
    return out


def _one(r: dict, stack) -> float:
    """Row ``r``'s projected iteration under ``stack`` (a graph row without host costs)."""
    return project(r, gpu_only(stack) if graph(r) else stack)[0]


def evaluate(rows: list[dict], stack=None) -> list[dict]:
    stack = load_stack("pytorch") if stack is None else stack
    floors = host_floors(rows)
    out = []
    for r in rows:
        if graph(r):
            t, parts = project(r, gpu_only(stack))
            t_local, host_bound = t, False
        else:
            floor = floors.get((r["gpu"], r["precision"], r["memory_format"]))
            local = replace(stack, launch_floor_s_per_layer=Sourced(floor, "this host (benchmarks/gpu_measured.py)"))
            t, parts = project(r, stack)
            t_local, _ = project(r, local)
            host_bound = float(r["host_fb_ms"]) >= HOST_BOUND * float(r["iteration_ms"])
        meas = float(r["iteration_ms"]) / 1e3
        out.append({**r, "projected_s": t, "local_s": t_local, "measured_s": meas, "host_bound": host_bound,
                    "fit_row": r["model"] == "resnet50",  # the floor's model: its other rows are not held out
                    "tensors_GB": sum(parts[k] for k in TENSORS) / 1e9,
                    "reserved_GB": (sum(parts.values()) - parts["cuda_context_bytes"]) / 1e9})  # fmt: skip
    return out


def accuracy(pred: float, meas: float) -> float:
    return 1.0 - abs(pred - meas) / meas


def _layer_report() -> list[str]:
    lines = ["Per layer type: measured (oracle profile --device cuda) / estimated (same GPU, TF32), ms per iteration"]
    for name, profile, system in PROFILES:
        batch, types = by_type(name, profile, system)
        lines.append(f"  {profile} ({system}) at batch {batch}: type  fw meas/est  bw meas/est  ratio (fw+bw)")
        for t, (mf, ef, mb, eb) in sorted(types.items(), key=lambda kv: -sum(kv[1])):
            if mf + mb < 1e-4:
                continue
            ratio = (mf + mb) / (ef + eb) if ef + eb > 0 else float("inf")
            lines.append(f"    {t:14s} {mf * 1e3:7.2f} / {ef * 1e3:7.2f}  {mb * 1e3:7.2f} / {eb * 1e3:7.2f}  {ratio:5.2f}")
    lines.append("  ResNet-50 on the H100 as the batch shrinks: batch  measured ms  estimated ms  ratio")
    for profile in BATCH_PROFILES:
        batch, m, e = batch_sums(profile)
        lines.append(f"    {batch:5d}  {m * 1e3:11.2f}  {e * 1e3:12.2f}  {m / e:5.2f}")
    return lines


def batch_sums(profile: str) -> tuple[int, float, float]:
    """(batch, measured, estimated) forward + backward seconds per iteration of an H100
    ResNet-50 profile (part 1)."""
    batch, types = by_type("resnet50", profile, "dgx-h100-superpod")
    return batch, sum(v[0] + v[2] for v in types.values()), sum(v[1] + v[3] for v in types.values())


def _group_line(label: str, rows: list[dict], key: str) -> str:
    if not rows:
        return f"  {label:44s} n=0"
    acc = mean(accuracy(r[key], r["measured_s"]) for r in rows)
    ratio = median(r[key] / r["measured_s"] for r in rows)
    return f"  {label:44s} n={len(rows):2d}  accuracy {100 * acc:5.1f}%  median projected/measured {ratio:.2f}"


def _step_lines(results: list[dict]) -> list[str]:
    lines = []
    for gpu, system in SYSTEMS.items():
        rs = [r for r in results if r["gpu"] == gpu]
        eager = [r for r in rs if not graph(r)]
        gpu_rows = [r for r in eager if not r["host_bound"]]
        host = [r for r in eager if r["host_bound"]]
        held = [r for r in host if not r["fit_row"]]
        lines.append(f"\nWhole steps on the {gpu} (validation/gpu-training-steps.csv), pytorch stack on {system}:")
        lines.append(_group_line("GPU-bound rows, shipped stack", gpu_rows, "projected_s"))
        lines.append(_group_line("host-bound rows, shipped stack", host, "projected_s"))
        lines.append(_group_line("host-bound rows, this host's floor (held out)", held, "local_s"))
        lines.append(_group_line("host-bound rows, shipped stack (same rows)", held, "projected_s"))
        lines.append(_group_line("CUDA-graph rows, the stack's GPU time", [r for r in rs if graph(r)], "projected_s"))
    return lines


def _hopper_lines() -> list[str]:
    shipped_stack = load_stack("pytorch")
    generic = evaluate(steps(), without_hopper(shipped_stack))
    fitted = fit_hopper(generic)
    lines = ["\nHopper efficiencies of the pytorch stack (stacks/pytorch.yaml by_gpu), fitted on ResNet-50's"
             " GPU-bound H100 rows:"]  # fmt: skip
    for cls, (value, acc) in fitted.items():
        lines.append(f"  {cls:5s} fitted {value:.4g} (fit rows {100 * acc:.1f}%), shipped"
                     f" {shipped_stack.efficiency_for('H100', cls).value:g}")  # fmt: skip
    lines.append("  (fp32 not shipped: these TF32 rows ran channels-last; the stack's TF32 runs NCHW, as DeepLearningExamples)")
    shipped = evaluate(steps(), shipped_stack)
    fit_ids = {id(r) for r in hopper_fit_rows(shipped)}
    groups = (("fit: ResNet-50, H100", lambda r: id(r) in fit_ids),
              ("held out: ResNet-152, VGG-16, H100", lambda r: r["gpu"] == H100 and r["model"] != "resnet50"),
              ("held out: H200, channels-last", lambda r: r["gpu"] == H200 and r["memory_format"] == "channels_last"),
              ("held out: H200, contiguous (NCHW)", lambda r: r["gpu"] == H200 and r["memory_format"] != "channels_last"))  # fmt: skip
    lines.append(f"  {'GPU-bound rows':50s} rows  generic (V100 fit)  shipped")
    for (label, keep), prec in ((g, p) for p in ("amp", "fp32") for g in groups):
        pairs = [(g, s) for g, s in zip(generic, shipped) if gpu_bound(s) and keep(s) and s["precision"] == prec]
        before = mean(accuracy(g["projected_s"], g["measured_s"]) for g, _ in pairs)
        after = mean(accuracy(s["projected_s"], s["measured_s"]) for _, s in pairs)
        lines.append(f"  {label + ', ' + prec:50s} {len(pairs):4d}  {100 * before:17.1f}%  {100 * after:6.1f}%")
    return lines


def report(results: list[dict], rows: bool) -> str:
    lines = _layer_report() + _step_lines(results) + _hopper_lines()
    lines.append("\nMemory of the eager steps, projected / measured (median, min-max over the rows):")
    eager = [r for r in results if not graph(r)]
    for what, proj, meas in (("tensors / peak allocated", "tensors_GB", "peak_allocated_GB"),
                             ("total less context / peak reserved", "reserved_GB", "peak_reserved_GB")):  # fmt: skip
        rs = [r[proj] / float(r[meas]) for r in eager]
        lines.append(f"  {what:36s} {median(rs):.3f} ({min(rs):.3f}-{max(rs):.3f})")
    if rows:
        lines.append("\ngpu   model      prec fmt            batch  measured ms  projected  this host  host_fb  bound")
        for r in results:
            host_fb = f"{float(r['host_fb_ms']):7.1f}" if r["host_fb_ms"] else "      -"
            bound = "graph" if graph(r) else "host" if r["host_bound"] else "GPU"
            lines.append(f"{r['gpu'].split()[1]:5s} {r['model']:10s} {r['precision']:4s} {r['memory_format']:14s}"
                         f" {int(r['batch']):5d}  {r['measured_s'] * 1e3:11.1f}  {r['projected_s'] * 1e3:9.1f}"
                         f"  {r['local_s'] * 1e3:9.1f}  {host_fb}  {bound}")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", action="store_true", help="print every row's projection too")
    args = ap.parse_args()
    print(report(evaluate(steps()), args.rows))


if __name__ == "__main__":
    main()
