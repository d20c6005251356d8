"""Benchmark: does `oracle compare` stay near-linear in the number of runs? (issue 16)

Writes a measured-runs CSV of N runs that all fall in one group (AlexNet on ABCI,
8 GPUs, four strategies in turn, random times) -- the case where the old pairwise
ranking agreement was quadratic -- and times, each in a fresh process:

  csv     oracle compare RUNS.csv -f csv -o OUT.csv
  table   oracle compare RUNS.csv -o OUT.txt   (lists the first 1,000 runs)
  ranking oracle.compute.calibration.compare.ranking_agreement alone, rows already compared

Target: 1e6 runs in under a minute (csv), judged on CPU time (wall time grows when
other processes share the cores).  The times depend on the machine; nothing in the
test suite depends on them.

    python benchmarks/compare_scale.py [--runs 100000 1000000] [--skip-table]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_S = 60.0
STRATEGIES = ("data", "spatial", "filter", "channel")


def write_runs(path: Path, n: int) -> None:
    rnd = random.Random(0)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("model,system,profile,strategy,gpus,global_batch,epoch_s\n")
        for i in range(n):
            fh.write(f"alexnet,abci,alexnet_v100,{STRATEGIES[i % 4]},8,256,{100 + 50 * rnd.random():.4f}\n")


def timed(args: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run in a fresh process; CPU time (user + system)
    does not grow when other processes share the cores."""
    cmd = [sys.executable, "-c", "from oracle.cli.main import main; main()", *args]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    took = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(args)}\n{r.stderr}")
    return took, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def ranking_only(path: Path) -> float:
    from oracle import api
    from oracle.compute.calibration.compare import ranking_agreement

    rows, _ = api.compare(str(path))
    start = time.perf_counter()
    ranking_agreement(rows)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--skip-table", action="store_true")
    args = ap.parse_args()
    print(f"{'runs':>10}  {'csv wall/CPU':>16}  {'table wall/CPU':>16}  {'ranking':>8}")
    worst = None
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.runs:
            runs = Path(tmp) / f"runs{n}.csv"
            write_runs(runs, n)
            csv_s = timed(["compare", str(runs), "-f", "csv", "-o", str(Path(tmp) / "out.csv")])
            table_s = None if args.skip_table else timed(["compare", str(runs), "-o", str(Path(tmp) / "out.txt")])
            rank_s = ranking_only(runs)
            if n >= 1_000_000:
                worst = csv_s
            table = "-" if table_s is None else f"{table_s[0]:.1f} / {table_s[1]:.1f} s"
            print(f"{n:>10,}  {csv_s[0]:>7.1f} / {csv_s[1]:.1f} s  {table:>16}  {rank_s:>6.2f} s", flush=True)
    if worst:
        verdict = "within" if worst[1] < TARGET_S else "ABOVE"
        print(f"1e6 runs as CSV: {worst[0]:.1f} s wall, {worst[1]:.1f} s CPU ({verdict} the {TARGET_S:.0f} s target;"
              f" load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
