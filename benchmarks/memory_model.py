"""Accuracy of the framework memory model (issue 12), printed as the README's tables.

1. Saved activations per sample: PyTorch's measured saved-tensor bytes of torchvision's
   models (validation/pytorch-saved-bytes.csv) against oracle's framework model and
   ParaDL's bound 2·Σ(|x|+|y|)·δ.
2. Training runs that ran (NVIDIA DeepLearningExamples, 8 GPUs data-parallel): the
   memory per GPU each model projects, against the GPU's memory.
3. Both sides of the out-of-memory line (validation/memory-boundaries.csv): batches that
   trained on 11-24 GiB cards and the batch one step above that did not; whether oracle
   calls each.  ``--fit`` fits the caching allocator's overhead on the role=fit rows
   (timm's NCHW runs); the held-out rows are its channels-last runs and another
   source's fp32 runs.

    python benchmarks/memory_model.py [--fit]
"""

from __future__ import annotations

import csv
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# (precision, per-GPU batch, GPU memory GB, source): ResNet-50 v1.5 training runs published
# in NVIDIA DeepLearningExamples @ 729963dd (PyTorch, TensorFlow1 and MXNet ConvNets READMEs)
DLE_RESNET50 = [
    ("fp32", 112, 32, "PyTorch, DGX-1 32GB"),
    ("fp32", 128, 16, "TensorFlow1, DGX-1 16GB"),
    ("fp32", 96, 16, "MXNet, DGX-1 16GB"),
    ("mixed", 256, 16, "TensorFlow1 AMP, DGX-1 16GB"),
    ("mixed", 192, 16, "MXNet AMP, DGX-1 16GB"),
    ("mixed", 256, 40, "TensorFlow1 AMP, DGX A100 40GB"),
    ("tf32", 256, 40, "TensorFlow1 TF32, DGX A100 40GB"),
    ("tf32", 512, 80, "MXNet TF32, DGX A100 80GB"),
    ("mixed", 512, 80, "MXNet AMP, DGX A100 80GB"),
]


def saved_rows() -> list[tuple[str, float, float, float]]:
    """(model, PyTorch MB, oracle MB, ParaDL MB) per sample, fp32."""
    from oracle.compute.memory import saved_activations
    from oracle.load import load_model

    out = []
    with open(ROOT / "validation" / "pytorch-saved-bytes.csv") as f:
        for row in csv.DictReader(f):
            m = load_model(row["model"])
            ours = saved_activations(m).bytes_per_sample(4)
            bound = 4 * 2 * sum(i.input_elements + i.output_elements for i in m.info)
            out.append((row["model"], float(row["saved_bytes_per_sample"]) / 1e6, ours / 1e6, bound / 1e6))
    return out


def run_rows() -> list[tuple[str, float, float, str]]:
    """(run, GPU GB, framework GB, ParaDL GB) for ResNet-50 data parallelism on 8 GPUs."""
    import oracle

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for precision, b, gb, source in DLE_RESNET50:
            system = Path(tmp) / f"s{gb}.yaml"
            system.write_text(
                f"name: {gb} GB GPUs\ngpu: {{model: G, memory_GB: {gb}}}\ngpus_per_node: 8\nnodes: 1\n"
                "network:\n  - {name: node, max_gpus: 8, alpha_s: 1.0e-5, bandwidth_GB_per_s: 100}\n"
            )
            kw = {"mixed_precision": precision == "mixed"}
            res = []
            for mm in ("framework", "paradl"):
                (pt,) = oracle.predict("resnet50", str(system), "resnet50_v100", gpus=[8], strategies="data",
                                       batch_per_gpu=b, memory_model=mm, **kw)  # fmt: skip
                res.append(pt.memory_bytes / 1e9)
            out.append((f"{source}, {b}/GPU {precision}", float(gb), res[0], res[1]))
    return out


BOUNDARIES = ROOT / "validation" / "memory-boundaries.csv"
OVERHEADS = [i / 1000 for i in range(301)]  # the allocator overhead grid of --fit


def boundary_rows(overhead: float | None = None) -> list[dict]:
    """Every row of validation/memory-boundaries.csv (runs that trained, and the batch one
    step above that timm's benchmark found out of memory) with oracle's memory per GPU
    (data parallelism on 1 GPU, the row's precision and optimizer; ``overhead``: the
    caching allocator's, None: the shipped default) and whether it calls the outcome."""
    from dataclasses import replace

    from oracle.compute.context import Options
    from oracle.compute.sweep import sweep
    from oracle.load import load_model, load_system
    from oracle.model import LayerTimes

    from oracle.load import load_stack

    pytorch = load_stack("pytorch")  # every row is PyTorch's: AMP's gradients are fp32 (its gradient_precision)
    out = []
    with open(BOUNDARIES, newline="", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            model, system = load_model(r["model"]), load_system(ROOT / r["system"])
            if overhead is not None:
                system = replace(system, framework=replace(system.framework, allocator_overhead=overhead))
            mixed = r["precision"].endswith("-amp")
            options = Options(precision=r["precision"].removesuffix("-amp"), mixed_precision=mixed,
                              optimizer=r["optimizer"], stack=pytorch)  # fmt: skip
            times = tuple(LayerTimes(0.0, 0.0, 0.0) for _ in model.layers)  # memory needs no times
            (pt,) = sweep(model, system, times, [1], "data", batch_per_gpu=float(r["per_gpu_batch"]), options=options)
            parts = pt.detail("memory")
            fixed = parts["workspace_bytes"] + parts["cuda_context_bytes"]
            tensors = pt.memory_bytes - fixed - parts["allocator_bytes"]
            fits = pt.memory_bytes <= system.gpu_memory_bytes
            out.append({**r, "need_GB": pt.memory_bytes / 1e9, "capacity_GB": system.gpu_memory_bytes / 1e9,
                        "room": (system.gpu_memory_bytes - fixed) / tensors,  # 1 + the overhead that just fits
                        "right": fits == (r["outcome"] == "ran")})  # fmt: skip
    return out


def fit_overhead(rows: list[dict]) -> tuple[float, float]:
    """The allocator overheads o of the grid that minimise, over the role=fit rows, how far
    1 + o is on the wrong side of each row's room (a run that trained needs 1 + o <= room,
    one out of memory 1 + o > room): the range (lowest, highest).  Counting rows called
    right instead would be decided by one pair of rows the tensors alone order wrongly."""
    fit = [x for x in rows if x["role"] == "fit"]

    def miss(o: float) -> float:
        return sum(max(0.0, 1 + o - x["room"]) if x["outcome"] == "ran" else max(0.0, x["room"] - 1 - o) for x in fit)

    misses = [(round(miss(o), 9), o) for o in OVERHEADS]
    best = min(m for m, _ in misses)
    tied = [o for m, o in misses if m == best]
    return tied[0], tied[-1]


def boundary_markdown(rows: list[dict]) -> str:
    lines = ["| rows | runs that trained, called fitting | runs out of memory, called out of memory |",
             "|---|---:|---:|"]  # fmt: skip
    for role in ("fit", "held-out"):
        mine = [x for x in rows if x["role"] == role]
        ran = [x for x in mine if x["outcome"] == "ran"]
        oom = [x for x in mine if x["outcome"] != "ran"]
        lines.append(f"| {role} | {sum(x['right'] for x in ran)} of {len(ran)} | {sum(x['right'] for x in oom)} of {len(oom)} |")
    return "\n".join(lines) + "\n"


def markdown() -> str:
    lines = [
        "| model | PyTorch saves (MB/sample) | oracle framework model | ratio | ParaDL bound | ratio |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, ref, ours, bound in saved_rows():
        lines.append(f"| {name} | {ref:.1f} | {ours:.1f} | {ours / ref:.3f} | {bound:.1f} | {bound / ref:.2f} |")
    lines += [
        "",
        "| ResNet-50 run that trained (8 GPUs, data parallel) | GPU memory (GB) | oracle framework (GB) | ParaDL bound (GB) |",
        "|---|---:|---:|---:|",
    ]
    for run, gb, ours, bound in run_rows():
        flag = " (flagged)" if bound > gb else ""
        lines.append(f"| {run} | {gb:g} | {ours:.1f} | {bound:.1f}{flag} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    rows = boundary_rows()
    if "--fit" in sys.argv[1:]:
        lo, hi = fit_overhead(rows)
        sys.stdout.write(f"allocator overhead fitted on the role=fit rows: {lo:g} to {hi:g} (shipped default:"
                         " oracle/model.py FrameworkMemory.allocator_overhead)\n\n")  # fmt: skip
    sys.stdout.write(markdown() + "\n" + boundary_markdown(rows))
