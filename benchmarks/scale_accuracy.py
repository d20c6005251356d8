"""Benchmark: oracle out of the box on PUBLISHED large-scale data-parallel runs (issue 25).

Every row of ``validation/large-scale-published.csv`` (256 to 2,048 GPUs: Goyal et al.
2017, Akiba et al. 2017, Jia et al. 2018, Yamazaki et al. 2019; each row's source, quote
and derivation are in the file, validation/README.md) is projected exactly as a user
would, through the CLI:

    oracle profile MODEL --estimate --system S --batch b --precision P -o PROFILE
    oracle predict -m MODEL -s S -p PROFILE --strategy data --gpus p -b b --precision P
                   [--mixed-precision] --stack STACK -f json

once with the stack of the row's framework (``chainermnx``, ``tensorflow``, ``mxnet``;
Caffe2 has none shipped: ``none``) and once with ``--stack none``; every other option is
the command's default.  Nothing is fitted on these rows: they are a check, not a training
set.  Accuracy is 1 - |t_pred - t_meas| / t_meas on the iteration time, as ``oracle
compare`` (clipped at 0).  With ``--diagnose`` a third projection adds ``--collective nccl
--overlap buckets`` (NOT out of the box) to show how much the collective model moves.

    python benchmarks/scale_accuracy.py [--diagnose] [--markdown]

tests/test_scale_accuracy.py runs the same computation and pins the accuracy as a floor.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from statistics import mean

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DATA = ROOT / "validation" / "large-scale-published.csv"
DIAGNOSTIC = ("--collective", "nccl", "--overlap", "buckets")  # --diagnose: not the defaults


@dataclass
class Projection:
    """One projected iteration (seconds per iteration, from predict's JSON point)."""

    command: str
    iteration_s: float
    compute_s: float  # forward + backward + weight update
    update_s: float  # the weight update alone (in compute_s)
    comm_exposed_s: float  # the exposed gradient exchange
    comm_total_s: float  # the whole gradient exchange, hidden or not
    allreduce: str

    def accuracy(self, measured_s: float) -> float:
        return max(0.0, 1.0 - abs(self.iteration_s - measured_s) / measured_s)


def rows(path: Path = DATA) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _oracle(*args: str) -> str:
    """``oracle ARGS`` in-process, from the repository root; its standard output."""
    from click.testing import CliRunner

    from oracle.cli.main import cli

    old = os.getcwd()
    os.chdir(ROOT)
    try:
        result = CliRunner().invoke(cli, list(args), env={"COLUMNS": None, "NO_COLOR": "1"})
    finally:
        os.chdir(old)
    if result.exit_code != 0:
        raise RuntimeError(f"oracle {' '.join(args)} failed ({result.exit_code}): {result.output}")
    return result.stdout


def profile_args(r: dict, out: str) -> list[str]:
    return ["profile", r["model"], "--estimate", "--system", r["system"], "--batch", r["per_gpu_batch"],
            "--precision", r["precision"], "-o", out]  # fmt: skip


def predict_args(r: dict, profile: str, stack: str, extra: tuple = ()) -> list[str]:
    mixed = ["--mixed-precision"] if r["mixed_precision"] == "yes" else []
    return ["predict", "-m", r["model"], "-s", r["system"], "-p", profile, "--strategy", "data",
            "--gpus", r["gpus"], "-b", r["per_gpu_batch"], "--precision", r["precision"], *mixed,
            "--stack", stack, *extra, "-f", "json"]  # fmt: skip


def project(r: dict, profile: str, stack: str, extra: tuple = ()) -> Projection:
    args = predict_args(r, profile, stack, extra)
    (pt,) = json.loads(_oracle(*args))
    n = pt["iterations_per_epoch"]
    b = pt["breakdown"]
    shown = " ".join(a if a != profile else "PROFILE" for a in args)
    return Projection(
        command=f"oracle {shown}", iteration_s=pt["iteration_s"],
        compute_s=(b["forward_backward_s"] + b["weight_update_s"]) / n, update_s=b["weight_update_s"] / n,
        comm_exposed_s=b["gradient_exchange_s"] / n,
        comm_total_s=pt.get("communication_total_s", b["gradient_exchange_s"]) / n,
        allreduce=f"{pt['details'].get('allreduce', '?')}@{pt['details'].get('allreduce_level', '?')}",
    )  # fmt: skip


def evaluate(data: list[dict], diagnose: bool = False) -> list[dict]:
    """Per row: the measured time and the projections (``stack``, ``none``[, ``diagnostic``])."""
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in data:
            prof = str(Path(tmp) / f"{r['id']}.yaml")
            _oracle(*profile_args(r, prof))
            res = {"row": r, "measured_s": float(r["iteration_s"]),
                   "profile_command": "oracle " + " ".join(profile_args(r, "PROFILE")),
                   "stack": project(r, prof, r["stack"]), "none": project(r, prof, "none")}  # fmt: skip
            if diagnose:
                res["diagnostic"] = project(r, prof, r["stack"], DIAGNOSTIC)
            out.append(res)
    return out


def implied_split(r: dict) -> tuple[float, float] | None:
    """(scaling part, the rest) of the measured iteration from the paper's stated scaling
    efficiency e: e·t is what the run would take at the efficiency's base (the per-GPU
    compute, plus the base's own communication), (1 - e)·t what scaling added.  None where
    no efficiency is stated."""
    if not r.get("scaling_efficiency"):
        return None
    e, t = float(r["scaling_efficiency"]), float(r["iteration_s"])
    return e * t, (1 - e) * t


def summary(results: list[dict], variant: str) -> float:
    return mean(x[variant].accuracy(x["measured_s"]) for x in results)


def table(results: list[dict], variants: list[str], markdown: bool) -> str:
    head = ["row", "GPUs", "stack", "measured ms"]
    for v in variants:
        head += [f"{v} ms", f"{v} acc", f"{v} compute/comm ms"]
    lines = []
    for x in results:
        r = x["row"]
        cells = [r["id"], r["gpus"], r["stack"], f"{1e3 * x['measured_s']:.1f}"]
        for v in variants:
            p = x[v]
            cells += [f"{1e3 * p.iteration_s:.1f}", f"{p.accuracy(x['measured_s']):.2f}",
                      f"{1e3 * p.compute_s:.1f}/{1e3 * p.comm_exposed_s:.1f}"]  # fmt: skip
        lines.append(cells)
    lines.append(["mean", "", "", ""] + sum(([" ", f"{summary(results, v):.2f}", " "] for v in variants), []))
    if markdown:
        fmt = ["| " + " | ".join(c) + " |" for c in [head] + lines]
        return "\n".join([fmt[0], "|" + "---|" * len(head)] + fmt[1:])
    widths = [max(len(c[i]) for c in [head] + lines) for i in range(len(head))]
    return "\n".join("  ".join(c[i].rjust(widths[i]) for i in range(len(c))) for c in [head] + lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--diagnose", action="store_true", help="also project with --collective nccl --overlap buckets")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    variants = ["stack", "none"] + (["diagnostic"] if args.diagnose else [])
    results = evaluate(rows(), args.diagnose)
    print(table(results, variants, args.markdown))
    print("\ncompute = forward+backward+update per iteration; comm = exposed gradient exchange per iteration")
    for x in results:
        print(f"\n{x['row']['id']}: measured {x['measured_s']:.4f} s ({x['row']['derivation']})")
        split = implied_split(x["row"])
        if split:
            print(f"  stated scaling efficiency {x['row']['scaling_efficiency']}: {1e3 * split[0]:.1f} ms at the base's "
                  f"per-GPU speed + {1e3 * split[1]:.1f} ms added by scaling")  # fmt: skip
        print(f"  {x['profile_command']}")
        for v in variants:
            p = x[v]
            print(f"  {p.command}\n    -> {p.iteration_s:.4f} s (compute {p.compute_s:.4f}, update {p.update_s:.4f}, "
                  f"exposed comm {p.comm_exposed_s:.4f} of {p.comm_total_s:.4f}, {p.allreduce})")  # fmt: skip


if __name__ == "__main__":
    main()
