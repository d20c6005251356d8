"""Accuracy of the framework memory model (issue 12), printed as the README's tables.

1. Saved activations per sample: PyTorch's measured saved-tensor bytes of torchvision's
   models (validation/pytorch-saved-bytes.csv) against oracle's framework model and
   ParaDL's bound 2·Σ(|x|+|y|)·δ.
2. Training runs that ran (NVIDIA DeepLearningExamples, 8 GPUs data-parallel): the
   memory per GPU each model projects, against the GPU's memory.

    python benchmarks/memory_model.py
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
    sys.stdout.write(markdown())
