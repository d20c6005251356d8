"""Benchmark: out of the box, with the framework's stack named, on independent one-GPU sources.

Issue 25's public check projects runs it has never seen "out of the box, with the stack
named".  This benchmark does the same on the independent rows the repository holds, none
of which any value was fitted on:

- ``validation/pre-volta-training.csv``: Torch7, Caffe, Chainer, TensorFlow, neon and
  MXNet on K40/K80, Maxwell and Pascal cards (2014-2017);
- ``validation/graphics-gpu-training.csv``: PyTorch (timm, plain scripts) and
  tf_cnn_benchmarks on Turing, Ampere GA102 and Ada cards.

Each row is projected as a user would (``oracle profile --estimate`` at the row's batch
and precision on the row's system, then ``oracle predict --gpus 1``) under the shipped
stack of its framework -- PyTorch: ``pytorch``, TensorFlow: ``tensorflow``, MXNet:
``mxnet`` -- and, for frameworks oracle ships no stack for (Torch7, Caffe, Chainer, neon),
``--stack none``, the compute model bare.  ``fp16-amp`` rows run ``--precision fp16
--mixed-precision``; ``fp16`` rows (a model cast with ``.half()``) plain fp16.  A row whose
``phase`` is ``fwdbwd`` timed forward and backward only: it is compared with the
projection's forward and backward (no weight update, no per-iteration costs).

The memory format is the stack's: rows measured in another layout (timm's NCHW AMP rows
on the RTX 3090) cannot be told otherwise, since ``--memory-format`` is measured on Hopper
only; they are scored as they come.

Accuracy is 1 - |t_pred - t_meas| / t_meas on the iteration time (``oracle compare``),
clipped at 0.  ``benchmarks/architecture_accuracy.py`` scores the same rows under the bare
compute model; ``benchmarks/stack_accuracy.py`` NVIDIA's DeepLearningExamples rows by stack.

    python benchmarks/independent_accuracy.py [--rows]

tests/test_independent_accuracy.py pins the means and checks one row against the CLI.
"""

from __future__ import annotations

import argparse
import csv
import sys
from functools import lru_cache
from pathlib import Path
from statistics import mean

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import dle_accuracy as D  # noqa: E402
from architecture_accuracy import _precision as precision_of  # noqa: E402  (one reading of "fp16-amp")

from oracle.load import load_model, load_stack, load_system  # noqa: E402

SOURCES = {
    "pre-Volta": ROOT / "validation" / "pre-volta-training.csv",
    "graphics cards": ROOT / "validation" / "graphics-gpu-training.csv",
}
# framework (the rows' ``framework`` column, matched from its start, case-insensitive) -> shipped stack
STACKS = (("pytorch", "pytorch"), ("tensorflow", "tensorflow"), ("mxnet", "mxnet"))
NO_STACK = "none"
LOW = 0.70  # the floor for any one run


def stack_of(framework: str) -> str:
    """The shipped stack of ``framework``, else "none"."""
    name = framework.strip().lower()
    return next((stack for prefix, stack in STACKS if name.startswith(prefix)), NO_STACK)


@lru_cache(maxsize=None)
def _inputs(model: str, system: str):
    return load_model(ROOT / "models" / f"{model}.yaml"), load_system(ROOT / system)


@lru_cache(maxsize=None)
def _profile(model: str, system: str, batch: float, precision: str, mixed: bool):
    return D.estimated(*_inputs(model, system), batch, precision, mixed)


def rows() -> list[tuple[str, dict]]:
    """(source, row) of every row whose model oracle ships and whose precision the GPU has."""
    from oracle.compute.conversion import system_spec

    out = []
    for source, path in SOURCES.items():
        with open(path, newline="", encoding="utf-8") as fh:
            for r in csv.DictReader(fh):
                if not (ROOT / "models" / f"{r['model']}.yaml").exists():
                    continue
                if system_spec(_inputs(r["model"], r["system"])[1]).peak(precision_of(r)[0]) is None:
                    continue
                out.append((source, r))
    return out


def projected_s(r: dict, stack: str) -> float:
    """Row ``r``'s projected seconds under ``stack`` (a name, or "none"): the iteration, or
    for a ``fwdbwd`` row its forward and backward only."""
    precision, mixed = precision_of(r)
    batch = float(r["per_gpu_batch"])
    model, system = _inputs(r["model"], r["system"])
    profile = _profile(r["model"], r["system"], batch, precision, mixed)
    named = None if stack == NO_STACK else load_stack(stack)
    _, pt = D.predict(model, system, profile, 1, batch, precision, mixed, stack=named)
    if r["phase"] == "fwdbwd":
        return pt.breakdown.as_dict()["forward_backward_s"] / pt.iterations_per_epoch
    return pt.iteration_s


def accuracy(pred: float, meas: float) -> float:
    return max(0.0, 1.0 - abs(pred - meas) / meas)


def evaluate() -> list[dict]:
    from oracle.gpus import architecture_of

    out = []
    for source, r in rows():
        stack = stack_of(r["framework"])
        meas = float(r["iteration_s"])
        with_stack, bare = projected_s(r, stack), projected_s(r, NO_STACK)
        out.append({"source": source, "row": r, "stack": stack, "arch": architecture_of(r["gpu_model"]),
                    "measured_s": meas, "projected_s": with_stack, "bare_s": bare,
                    "accuracy": accuracy(with_stack, meas), "bare_accuracy": accuracy(bare, meas)})  # fmt: skip
    return out


def groups(results: list[dict]) -> dict[str, list[dict]]:
    """Rows by source x stack, source x GPU architecture, source, and all."""
    out: dict[str, list[dict]] = {}
    for x in results:
        for key in (f"{x['source']}, stack {x['stack']}", f"{x['source']}, {x['arch']}", f"{x['source']}, all", "all"):
            out.setdefault(key, []).append(x)
    order = {source: i for i, source in enumerate(SOURCES)}
    return dict(sorted(out.items(), key=lambda kv: (kv[0] == "all", order.get(kv[0].split(",")[0], 0),
                                                     kv[0].endswith(", all"), "stack" not in kv[0], kv[0])))


def table(results: list[dict]) -> str:
    lines = [f"{'rows':42} {'n':>3}  {'no stack':>8}  {'its stack':>9}  {'min':>5}  below {LOW:.2f}"]
    for key, xs in groups(results).items():
        acc = [x["accuracy"] for x in xs]
        lines.append(f"{key:42} {len(xs):3}  {100 * mean(x['bare_accuracy'] for x in xs):7.1f}%  "
                     f"{100 * mean(acc):8.1f}%  {min(acc):5.2f}  {sum(a < LOW for a in acc):5}")  # fmt: skip
    return "\n".join(lines)


def rows_table(results: list[dict]) -> str:
    out = [("id     framework                 GPU                 model              batch precision phase   stack"
            "       measured ms  ratio  accuracy")]
    for x in results:
        r = x["row"]
        out.append(f"{r['id']:6} {r['framework'][:25]:25} {r['gpu'][:19]:19} {r['model']:18} {r['per_gpu_batch']:>5} "
                   f"{r['precision']:9} {r['phase']:7} {x['stack']:10} {1e3 * x['measured_s']:11.1f}  "
                   f"{x['projected_s'] / x['measured_s']:5.2f}  {x['accuracy']:8.3f}")  # fmt: skip
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", action="store_true", help="every row: projected/measured and its accuracy")
    args = ap.parse_args()
    results = evaluate()
    print(table(results))
    print("\naccuracy = 1 - |projected - measured| / measured (clipped at 0); 'its stack': the framework's shipped"
          "\nstack (pytorch, tensorflow, mxnet), none for Torch7, Caffe, Chainer and neon; no row was fitted on")
    if args.rows:
        print("\n" + rows_table(results))


if __name__ == "__main__":
    main()
