"""Benchmark: the compute model's memory-bound kernels against measured per-layer GPU times.

The measured profiles (profiles/*_h200.yaml: ``oracle profile MODEL --device cuda`` on an
NVIDIA H200, fp32 tensors, convolutions in TF32; kernel execution times, host launches
left out; provenance in profiles/README.md) are compared, summed by layer type, with the
compute model (oracle/compute/kernels.py) at the same GPU, precision and batch, activations
unfused (eager PyTorch launches them apart, as the profiles ran).

The fraction of the HBM bandwidth a kernel type reaches is ``memory_efficiency x (modelled
time / measured time)`` with the type modelled at ``memory_efficiency`` (the compute
model's default); forward and backward pooled.  stacks/pytorch.yaml's
``reduction_memory_efficiency`` is this fraction over the batchnorm layers of the ResNet-50
and ResNet-152 profiles, its ``maxpool_memory_efficiency`` over the maxpool layers of all
three; no throughput row is used.

    python benchmarks/kernel_efficiency.py
"""

from __future__ import annotations

import sys
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from oracle.compute import kernels as K  # noqa: E402
from oracle.compute.binding import bind_profile  # noqa: E402
from oracle.compute.conversion import system_spec  # noqa: E402
from oracle.load import load_model, load_profile, load_stack, load_system  # noqa: E402

SYSTEM, PRECISION = "hgx-h200", "tf32"  # the profiles' GPU; fp32 tensors, convolutions in TF32
PROFILES = {"resnet50": 256, "resnet152": 32, "vgg16": 64}  # model: the profile's batch
DERIVED = {"batchnorm": ("resnet50", "resnet152"), "maxpool": ("resnet50", "resnet152", "vgg16")}  # on these profiles


def by_type(model: str, batch: int, k: K.KernelConstants) -> dict[str, list[float]]:
    """Type: [measured fw, measured bw, modelled fw, modelled bw] in seconds per iteration."""
    m = load_model(model)
    measured = bind_profile(m, load_profile(ROOT / "profiles" / f"{model}_h200.yaml"))
    spec = system_spec(load_system(SYSTEM))
    modelled = K.per_sample_times(m, spec, PRECISION, batch, replace(k, fuse_activations=False))
    out: dict[str, list[float]] = defaultdict(lambda: [0.0] * 4)
    for layer, t, (fw, bw) in zip(m.layers, measured, modelled):
        for i, v in enumerate((t.fw_s, t.bw_s, fw, bw)):
            out[layer.type][i] += v * batch
    return out


def reached(sums: list[list[float]], k: K.KernelConstants) -> float:
    """The fraction of the bandwidth reached: memory_efficiency x modelled / measured."""
    return k.memory_efficiency * sum(s[2] + s[3] for s in sums) / sum(s[0] + s[1] for s in sums)


def main() -> None:
    k = K.DEFAULT_CONSTANTS  # batchnorm and maxpool at memory_efficiency
    tables = {m: by_type(m, b, k) for m, b in PROFILES.items()}
    stack = load_stack("pytorch")
    print(f"{'model':10s} {'type':14s} {'meas fw':>8s} {'model fw':>8s} {'meas bw':>8s} {'model bw':>8s}"
          "  reached (ms per iteration; modelled at memory_efficiency)")
    for m, table in tables.items():
        for t, s in sorted(table.items(), key=lambda kv: -sum(kv[1][:2])):
            if t not in K.MATMUL_TYPES + K.VIEW_TYPES:
                print(f"{m:10s} {t:14s} {s[0] * 1e3:8.2f} {s[2] * 1e3:8.2f} {s[1] * 1e3:8.2f} {s[3] * 1e3:8.2f}"
                      f"  {reached([s], k):.3f}")
    for t, models in DERIVED.items():
        field = K.MEMORY_EFFICIENCY_FIELDS[t]
        print(f"{t}: {reached([tables[m][t] for m in models], k):.3f} of the bandwidth over {', '.join(models)}"
              f" (stacks/pytorch.yaml {field}: {getattr(stack, field).value:g})")


if __name__ == "__main__":
    main()
