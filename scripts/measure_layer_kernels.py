"""Time every layer of oracle's model files on one GPU, in the precision and memory format a
training run uses: the per-layer GPU kernel times the compute model (oracle/compute/kernels.py)
is checked against by ``benchmarks/layer_kernels.py``.

``oracle profile --device cuda`` measures a profile in fp32 tensors (convolutions in TF32) and
NCHW; this script measures what AMP training in channels-last runs, which no profile holds:

- the network is ``oracle.profiling.torchnet``'s build of the model file (so every row names a
  layer oracle knows), its parameters in fp32, moved to ``--format``;
- ``amp``: every forward (and the forward pass that makes each layer's real input) under
  ``torch.autocast(float16)``, as DeepLearningExamples' ConvNets train
  (PyTorch/Classification/ConvNets/image_classification/training.py); ``fp32``: PyTorch's
  defaults (cuDNN convolutions in TF32, ``torch.backends.cudnn.allow_tf32``; matmuls in fp32,
  ``torch.backends.cuda.matmul.allow_tf32`` False), as the ``fp32`` rows of
  validation/gpu-training-steps.csv;
- each layer timed in isolation on its real input as ``oracle profile`` times it
  (``oracle.profiling.measure``): forward, then backward with a random upstream gradient
  (input and weight gradients), the GPU's execution time behind a spin kernel so the host's
  launches stay out (``oracle.profiling.timing.GpuClock``), medians of ``--repeats`` after
  ``--warmup`` runs (which also let ``cudnn.benchmark`` pick each algorithm).

Rows (``-o``, written as each model finishes): model, layer, type, precision, memory_format,
batch, fw_ms, bw_ms (per iteration, the whole batch), gpu, torch, cudnn, command.  ``--device
cpu`` runs the same on the CPU (AMP in bfloat16): ``tests/test_measure_script.py`` checks the
script there.  validation/gpu-layer-kernels.csv came from the command in its ``command`` column.

    python scripts/measure_layer_kernels.py vgg16 inception_v3 --batch 64 --precisions amp fp32 -o out.csv
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from measure_training_step import add_run_arguments, command_line, torch_for  # noqa: E402

FIELDS = ["model", "layer", "type", "precision", "memory_format", "batch", "fw_ms", "bw_ms",
          "gpu", "torch", "cudnn", "command"]  # fmt: skip


def measure(torch, model_name: str, batch: int, precision: str, fmt: str, dev, repeats: int, warmup: int):
    """One row per layer: oracle profile's per-layer timing (profiling.measure.layer_times),
    each layer's forward under autocast for ``amp``."""
    from contextlib import nullcontext

    from oracle.load import load_model
    from oracle.profiling.measure import layer_times
    from oracle.profiling.timing import Timer
    from oracle.profiling.torchnet import build_network

    model = load_model(model_name)
    memory_format = torch.channels_last if fmt == "channels_last" else torch.contiguous_format
    torch.manual_seed(0)
    net = build_network(model, dev).train()
    x = torch.randn((batch, *model.input_shape), device=dev)
    if x.dim() == 4:
        net, x = net.to(memory_format=memory_format), x.to(memory_format=memory_format)
    half = torch.float16 if dev.type == "cuda" else torch.bfloat16

    def ctx():
        return torch.autocast(dev.type, dtype=half) if precision == "amp" else nullcontext()

    class Autocast(torch.nn.Module):
        """A layer whose forward runs in ``ctx()`` (autocast for AMP); its backward outside it."""

        def __init__(self, module) -> None:
            super().__init__()
            self.module = module

        def forward(self, *xs):
            with ctx():
                return self.module(*xs)

    with torch.no_grad(), ctx():
        outs = net.forward_all(x)
    net.layers = torch.nn.ModuleList(Autocast(m) for m in net.layers)
    timer = Timer(torch, dev, time.perf_counter, None, len(net.layers))  # GpuClock on CUDA
    fw, bw = layer_times(torch, net, outs, net.layer_parameters(), timer, batch, repeats, warmup)
    for layer, f, b in zip(model.layers, fw, bw):
        yield {"model": model_name, "layer": layer.name, "type": layer.type, "fw_ms": f * batch * 1e3,
               "bw_ms": b * batch * 1e3}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", help="model names (models/) or files")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--precisions", nargs="+", choices=["fp32", "amp"], default=["amp", "fp32"])
    parser.add_argument("--format", choices=["contiguous", "channels_last"], default="channels_last")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--warmup", type=int, default=3)
    add_run_arguments(parser)
    args = parser.parse_args(argv)
    torch = torch_for(args.device)
    if torch is None:
        return 2
    dev = torch.device(args.device)
    command = command_line("measure_layer_kernels.py", argv)
    common = {"memory_format": args.format, "batch": args.batch, "torch": torch.__version__, "command": command,
              "gpu": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "none (CPU)",
              "cudnn": torch.backends.cudnn.version() if dev.type == "cuda" else ""}  # fmt: skip
    with open(args.output, "a" if args.append else "w", newline="") as fh:
        out = csv.DictWriter(fh, FIELDS)
        if not args.append:
            out.writeheader()
        for name in args.models:
            for precision in args.precisions:
                t0 = time.perf_counter()
                rows = list(measure(torch, name, args.batch, precision, args.format, dev, args.repeats, args.warmup))
                for row in rows:
                    out.writerow({**common, **row, "precision": precision,
                                  "fw_ms": f"{row['fw_ms']:.6g}", "bw_ms": f"{row['bw_ms']:.6g}"})  # fmt: skip
                fh.flush()
                total = sum(r["fw_ms"] + r["bw_ms"] for r in rows)
                print(f"{name} {precision} b{args.batch}: {len(rows)} layers, {total:.2f} ms"
                      f" ({time.perf_counter() - t0:.0f} s)", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
