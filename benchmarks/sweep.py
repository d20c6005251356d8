"""Benchmark: is a full sweep "arithmetic", and does the CLI start fast? (docs/development.md)

Measures (median of --repeats runs, each a fresh process unless noted):
  baseline      python -c "import numpy, pandas"
  help          oracle --help
  sweep (json)  oracle predict -m resnet152 -s abci -p P --strategy all --gpus 1-4096 -f json
  sweep (table) the same, rendered as a table into a file
  in-process    oracle.compute.sweep.sweep(...) alone, inputs already loaded
  stack         the json sweep on dgx-a100-80gb, whose system file names the pytorch stack

Targets (issue 3): sweep < 2.5 x baseline, help < 0.8 x baseline.

``--before TREE`` (issue 25, "the sweep benchmark stays within 10% of today's time"): every
measurement also with the ``oracle`` package of another checkout (``git archive COMMIT oracle
models systems profiles data | tar -x -C TREE``), the two taking turns run by run (the machine's
load is shared alike), medians and their ratio. Issue 25's check, TREE = the last commit before
stacks (6a4d240, 907f6ec^), after stacks and issue 29's arrays (compute/vector), --repeats 7,
2 cores, load average about 1:

    measurement                                          before s  after s  after/before
    oracle --help                                           0.108    0.123     1.14
    predict resnet152 1-4096 on abci, json                  0.750    0.683     0.91
    the same as a table                                     1.131    1.072     0.95
    sweep alone, in process                                 0.152    0.107     0.70
    predict json on dgx-a100-80gb (after: pytorch stack)    0.686    0.758     1.10

(--help imports the same modules before and after, one more of oracle's; its 15 ms moved
between runs.)  The in-process line was 1.38-1.48x before two changes: a sweep that builds
every point no longer evaluates the arrays as well (compute/sweep._sweep), and fewer than
16 pipeline stage counts are partitioned one by one (compute/engine.FEW_COUNTS).  The
stacks' own cost is the dgx line: DDP's bucket timeline, per bucket an all-reduce; with
the overlap.py and nccl.py speed-ups of c6fd8f5 it moved between 1.05x and 1.10x in runs of
this script (--stack none: 0.99x).

    python benchmarks/sweep.py [--repeats 7] [--markdown]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROFILE = "model: ResNet-152\nsource: benchmark only (timing does not depend on it)\ntotal: {fw_bw_per_sample_s: 0.01}\n"


def oracle_cmd() -> list[str]:
    exe = shutil.which("oracle", path=str(Path(sys.executable).parent)) or shutil.which("oracle")
    return [exe] if exe else [sys.executable, "-c", "from oracle.cli.main import main; main()"]


def timed(cmd: list[str], repeats: int, env: dict | None = None) -> float:
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs)


def in_process(profile: Path, repeats: int) -> tuple[float, int]:
    try:
        from oracle.compute.binding import bind_profile
    except ImportError:  # a --before tree older than compute/binding.py
        from oracle.load.profile import bind_profile
    from oracle.compute.context import Options
    from oracle.compute.sweep import sweep
    from oracle.load import load_model, load_profile, load_system
    from oracle.load.values import parse_gpus

    m, s, pr = load_model("resnet152"), load_system("abci"), load_profile(str(profile))
    times = bind_profile(m, pr)
    gpus = parse_gpus("1-4096")
    runs, n = [], 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        n = len(sweep(m, s, times, gpus, "all", batch_per_gpu=32, options=Options()))
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs), n


def measure(profile: Path, out: Path, repeats: int, envs: list) -> list[dict[str, float]]:
    """Every timing, for each tree (``envs``: PYTHONPATH naming it; None: this checkout),
    the trees taking turns run by run so that both see the machine's load alike."""
    sweep_args = ["predict", "-m", "resnet152", "-s", "abci", "-p", str(profile), "--strategy", "all",
                  "--gpus", "1-4096", "-b", "32"]  # fmt: skip
    stack_args = [a if a != "abci" else "dgx-a100-80gb" for a in sweep_args] + ["-f", "json"]
    cmds = {"help": oracle_cmd() + ["--help"], "json": oracle_cmd() + sweep_args + ["-f", "json"],
            "table": oracle_cmd() + sweep_args + ["-o", str(out)], "stack": oracle_cmd() + stack_args}  # fmt: skip
    runs: list[dict[str, list]] = [{} for _ in envs]
    inproc = [sys.executable, __file__, "--in-process", str(profile), "--repeats", "5"]
    for _ in range(repeats):
        for key, cmd in cmds.items():
            for run, env in zip(runs, envs):
                run.setdefault(key, []).append(timed(cmd, 1, env))
        for run, env in zip(runs, envs):
            t, n = json.loads(subprocess.run(inproc, env=env, check=True, capture_output=True, text=True).stdout)
            run.setdefault("inproc", []).append(t)
            run["points"] = [n]
    return [{k: statistics.median(v) for k, v in run.items()} for run in runs]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table for the README")
    ap.add_argument("--before", metavar="TREE", help="also time another checkout's oracle package, run by run in turn")
    ap.add_argument("--in-process", metavar="PROFILE", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.in_process:
        print(json.dumps(in_process(Path(args.in_process), args.repeats)))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        profile = Path(tmp) / "resnet152_bench.yaml"
        profile.write_text(PROFILE)
        out = Path(tmp) / "table.txt"
        base = timed([sys.executable, "-c", "import numpy, pandas"], args.repeats)
        envs = ([{**os.environ, "PYTHONPATH": args.before}] if args.before else []) + [None]
        *before, t = measure(profile, out, args.repeats, envs)
        before = before[0] if before else None
    rows = [
        ("import numpy, pandas (baseline)", base, "1.00x", "", None),
        ("oracle --help", t["help"], f"{t['help'] / base:.2f}x", "< 0.8x", "help"),
        (f"predict resnet152, all strategies, 1-4096 GPUs, json ({t['points']} points)", t["json"],
         f"{t['json'] / base:.2f}x", "< 2.5x", "json"),
        ("same, rendered as a table", t["table"], f"{t['table'] / base:.2f}x", "< 2.5x", "table"),
        ("sweep alone, in process (no start-up, no loading)", t["inproc"], f"{t['inproc'] / base:.2f}x",
         "well under 1 s", "inproc"),
        ("predict json on dgx-a100-80gb (its pytorch stack)", t["stack"], f"{t['stack'] / base:.2f}x", "", "stack"),
    ]  # fmt: skip
    ok = t["help"] < 0.8 * base and t["json"] < 2.5 * base and t["table"] < 2.5 * base and t["inproc"] < 1.0
    if args.markdown:
        print(f"| measurement (median of {args.repeats}, {os.cpu_count()} cores) | seconds | vs baseline | target |")
        print("|---|---:|---:|---|")
        for name, sec, ratio, target, _ in rows:
            print(f"| {name} | {sec:.3f} | {ratio} | {target} |")
    else:
        for name, sec, ratio, target, key in rows:
            was = f"  before {before[key]:.3f} s, after/before {sec / before[key]:.2f}" if before and key else ""
            print(f"{name:<75} {sec:8.3f} s  {ratio:>6}  {target}{was}")
        print("targets met" if ok else "TARGETS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
