"""Benchmark: calibrated on one measured run, scored on published throughput (issue 26).

Every row of ``validation/dle-throughput.csv`` that ``benchmarks/dle_accuracy.py`` covers
(NVIDIA DeepLearningExamples; ResNet-50 and the imported ResNeXt-101, SE-ResNeXt-101 and
EfficientNet-B0 on DGX-1, DGX-2 and DGX A100), grouped by (framework, machine, model,
precision), is projected three ways, data parallel at the row's GPUs and per-GPU batch:

- **naive**: the calibration row's throughput per GPU times the row's GPUs (what a
  user does without a model);
- **uncalibrated**: ``oracle predict`` on the shipped system with the profile
  ``oracle profile --estimate`` gives at the row's batch and precision;
- **anchored**: the calibration row written as a one-line runs file, ``oracle fit runs
  --calibrate all -o cal.yaml`` on the shipped system (its compute factor and its stored
  anchor), then ``oracle predict`` on cal.yaml with the profile estimated at the
  calibration row's batch: the measured time of the anchor times the cost model's ratio
  between the two configurations (compute/calibration/anchor_points.py).

Two cases: **1 GPU -> multi-GPU** (calibrated on the group's 1-GPU row, scored on its
2-16 GPU rows) and **1 node -> multi-node** (calibrated on the group's one full node,
scored on its rows spanning more nodes; only PyTorch on DGX A100 80GB has such rows).
Uncalibrated and anchored are given without a stack (as ``dle_accuracy.py`` out of the
box) and under the shipped stack of the row's framework (``--stack``, as
``stack_accuracy.py``: PyTorch ``pytorch``, TensorFlow1 ``tensorflow``, MXNet ``mxnet``;
PaddlePaddle's ``paddle`` is fitted on the 1-GPU rows these anchors calibrate on, so its
rows are left out of those columns).  The stacks' data-parallel
efficiencies were fitted on the V100 rows of this file (stack_accuracy.py), so only the
A100 rows are held out from them.  Accuracy is 1 - |t_pred - t_meas| / t_meas on the time
per iteration, as ``oracle compare``.

    python benchmarks/anchored_accuracy.py [--markdown]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from functools import lru_cache
from pathlib import Path
from statistics import mean

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import dle_accuracy as D  # noqa: E402
from stack_accuracy import STACKS  # noqa: E402

from oracle import api  # noqa: E402
from oracle.load import load_model, load_system  # noqa: E402

COLUMN = {"FP32": "fp32", "TF32": "tf32", "AMP": "amp"}  # the runs file's precision column
WORK = Path(tempfile.mkdtemp(prefix="anchored_accuracy_"))


def key(r: dict) -> tuple:
    return r["framework"], r["system"], r["model"], r["precision"]


def _flags(r: dict) -> dict:
    precision, mixed = D.PRECISIONS[r["precision"]]
    return {"precision": precision, "mixed_precision": mixed, "batch_per_gpu": float(r["per_gpu_batch"])}


@lru_cache(maxsize=None)
def profile_file(model: str, system: str, batch: float, precision: str) -> str:
    """``oracle profile --estimate`` of ``model`` on ``system``'s GPU at ``batch`` and
    ``precision`` (the dle_accuracy column), written to a file."""
    from oracle.render.profile_file import profile_yaml

    p, mixed = D.PRECISIONS[precision]
    pr = D.estimated(load_model(model), load_system(system), batch, p, mixed)
    path = WORK / f"{model}-{system}-{batch:g}-{precision}.yaml"
    path.write_text(profile_yaml(pr, ["estimated by benchmarks/anchored_accuracy.py"]))
    return str(path)


def names(r: dict) -> tuple[str, str]:
    return D.MODELS[r["model"]], D.SYSTEMS[r["system"]]


@lru_cache(maxsize=None)
def _calibrated(line: int, stack: str | None) -> tuple[str, str] | None:
    return calibrated(next(r for r in D.rows() if r["line"] == line), stack)


def calibrated(anchor: dict, stack: str | None = None) -> tuple[str, str] | None:
    """(cal.yaml, profile) of ``oracle fit runs --calibrate all`` on ``anchor`` alone, or
    None where fit runs writes no system (nothing identified, or refused)."""
    from oracle.services.fit_runs import RunsRequest, fit_runs

    model, system = names(anchor)
    batch = float(anchor["per_gpu_batch"])
    profile = profile_file(model, system, batch, anchor["precision"])
    gpus = int(anchor["gpus"])
    stem = WORK / f"line{anchor['line']}-{stack}"
    runs = stem.with_suffix(".csv")
    runs.write_text("model,system,profile,strategy,gpus,global_batch,iteration_s,precision,source\n"
                    f"{model},{system},{profile},{'serial' if gpus == 1 else 'data'},{gpus},{batch * gpus:g},"
                    f"{batch * gpus / float(anchor['throughput_img_per_s']):.6g},{COLUMN[anchor['precision']]},"
                    f"validation/dle-throughput.csv:{anchor['line']}\n")  # fmt: skip
    out = stem.with_suffix(".yaml")
    flags = {"stack": stack} if stack else {}
    result = fit_runs(RunsRequest(str(runs), system, "all", {}, output=str(out), flags=flags), lambda _: None)
    if result.system_text is None:
        return None
    out.write_text(result.system_text)
    return str(out), profile


def throughput(system: str, profile: str, r: dict, stack: str | None = None) -> float:
    """Projected images/s of row ``r`` (data parallel) on ``system`` with ``profile``
    (under ``stack``: a shipped stack's name)."""
    model, _ = names(r)
    flags = {**_flags(r), **({"stack": stack} if stack else {})}
    (pt,) = api.predict(model, system, profile, gpus=[int(r["gpus"])], strategies="data", **flags)
    return pt.global_batch / pt.iteration_s


def score(anchor: dict, targets: list[dict], case: str, stacks: bool = True) -> list[dict]:
    """One result per target row: measured, naive, uncalibrated and anchored images/s
    (without ``stacks``, none under a stack)."""
    cal = _calibrated(anchor["line"], None)
    stack = STACKS.get(anchor["framework"]) if stacks else None
    with_stack = _calibrated(anchor["line"], stack) if stack else None
    per_gpu = float(anchor["throughput_img_per_s"]) / int(anchor["gpus"])
    out = []
    for r in targets:
        model, system = names(r)
        prof = profile_file(model, system, float(r["per_gpu_batch"]), r["precision"])
        out.append(dict(case=case, key=key(r), line=r["line"], gpus=int(r["gpus"]), anchor=anchor["line"],
                        measured=float(r["throughput_img_per_s"]), naive=per_gpu * int(r["gpus"]),
                        uncalibrated=throughput(system, prof, r), anchored=throughput(*cal, r) if cal else None,
                        uncalibrated_stack=throughput(system, prof, r, stack) if stack else None,
                        anchored_stack=throughput(*with_stack, r, stack) if with_stack else None))  # fmt: skip
    return out


def evaluate(data: list[dict], stacks: bool = True) -> list[dict]:
    """Both cases of the module doc over every group of ``data`` (``stacks``: the
    columns under the framework's stack too)."""
    groups: dict[tuple, list[dict]] = {}
    for r in data:
        groups.setdefault(key(r), []).append(r)
    results = []
    for rows in groups.values():
        gpn = load_system(names(rows[0])[1]).gpus_per_node
        one = [r for r in rows if r["gpus"] == "1"]
        if one:
            results += score(one[0], [r for r in rows if int(r["gpus"]) > 1], "1 GPU -> multi-GPU", stacks)
        node = [r for r in rows if int(r["gpus"]) == gpn]
        beyond = [r for r in rows if int(r["gpus"]) > gpn]
        if node and beyond:
            results += score(node[0], beyond, "1 node -> multi-node", stacks)
    return results


def accuracy(pred: float, measured: float) -> float:
    return D.accuracy(pred, measured)


COLUMNS = ("naive", "uncalibrated", "anchored", "uncalibrated_stack", "anchored_stack")


def table(results: list[dict], markdown: bool = False) -> str:
    """Mean accuracy per case (all rows; per framework; per machine) of each projection
    (n where a column covers fewer rows)."""
    groups: dict[str, list[dict]] = {}
    for r in results:
        held = "A100 (held out from the stacks)" if "A100" in r["key"][1] else "V100"
        for label in (r["case"], f"{r['case']} · {r['key'][0]}", f"{r['case']} · {r['key'][1]}", f"{r['case']} · {held}"):
            groups.setdefault(label, []).append(r)
    head = "| rows | n | naive | uncalibrated | anchored | uncalibrated, its stack | anchored, its stack |"
    rule = "|---|---:|---:|---:|---:|---:|---:|"
    lines = [head, rule]
    for label in sorted(groups, key=lambda s: (s.split(" · ")[0], " · " in s, s)):
        rs = groups[label]
        lines.append(f"| {label} | {len(rs)} | {' | '.join(_cell(rs, k) for k in COLUMNS)} |")
    text = "\n".join(lines)
    return text if markdown else text.replace(rule + "\n", "")


def _cell(rows: list[dict], column: str) -> str:
    got = [accuracy(r[column], r["measured"]) for r in rows if r[column] is not None]
    if not got:
        return "-"
    return f"{100 * mean(got):.1f}%" + (f" ({len(got)})" if len(got) < len(rows) else "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    print(table(evaluate(D.rows()), args.markdown))


if __name__ == "__main__":
    main()
