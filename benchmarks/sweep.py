"""Benchmark: is a full sweep "arithmetic", and does the CLI start fast? (docs/development.md)

Measures (median of --repeats runs, each a fresh process unless noted):
  baseline      python -c "import numpy, pandas"
  help          oracle --help
  sweep (json)  oracle predict -m resnet152 -s abci -p P --strategy all --gpus 1-4096 -f json
  sweep (table) the same, rendered as a table into a file
  in-process    oracle.compute.sweep.sweep(...) alone, inputs already loaded

Targets (issue 3): sweep < 2.5 x baseline, help < 0.8 x baseline.

ResNet-152 has no published per-sample time in ParaDL's files, so the benchmark
writes a total-only profile to a temporary folder; the timing does not depend on the
value (every strategy and factorization is evaluated either way).

    python benchmarks/sweep.py [--repeats 7] [--markdown]
"""

from __future__ import annotations

import argparse
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


def timed(cmd: list[str], repeats: int) -> float:
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs)


def in_process(profile: Path, repeats: int) -> tuple[float, int]:
    from oracle.compute.binding import bind_profile
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table for the README")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        profile = Path(tmp) / "resnet152_bench.yaml"
        profile.write_text(PROFILE)
        out = Path(tmp) / "table.txt"
        sweep_args = ["predict", "-m", "resnet152", "-s", "abci", "-p", str(profile), "--strategy", "all",
                      "--gpus", "1-4096", "-b", "32"]
        base = timed([sys.executable, "-c", "import numpy, pandas"], args.repeats)
        helpt = timed(oracle_cmd() + ["--help"], args.repeats)
        js = timed(oracle_cmd() + sweep_args + ["-f", "json"], args.repeats)
        tab = timed(oracle_cmd() + sweep_args + ["-o", str(out)], args.repeats)
        inproc, points = in_process(profile, args.repeats)
    rows = [
        ("import numpy, pandas (baseline)", base, "1.00x", ""),
        ("oracle --help", helpt, f"{helpt / base:.2f}x", "< 0.8x"),
        (f"predict resnet152, all strategies, 1-4096 GPUs, json ({points} points)", js, f"{js / base:.2f}x", "< 2.5x"),
        ("same, rendered as a table", tab, f"{tab / base:.2f}x", "< 2.5x"),
        ("sweep alone, in process (no start-up, no loading)", inproc, f"{inproc / base:.2f}x", "well under 1 s"),
    ]
    ok = helpt < 0.8 * base and js < 2.5 * base and tab < 2.5 * base and inproc < 1.0
    if args.markdown:
        print(f"| measurement (median of {args.repeats}, {os.cpu_count()} cores) | seconds | vs baseline | target |")
        print("|---|---:|---:|---|")
        for name, t, ratio, target in rows:
            print(f"| {name} | {t:.3f} | {ratio} | {target} |")
    else:
        for name, t, ratio, target in rows:
            print(f"{name:<75} {t:8.3f} s  {ratio:>6}  {target}")
        print("targets met" if ok else "TARGETS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
