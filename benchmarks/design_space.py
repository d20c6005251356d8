"""Benchmark (issue 29): design-space questions in one process — every GPU count and
every strategy of ResNet-152 on ABCI, end to end through ``oracle predict`` (loading,
sweep, JSON rendering into memory) and the engine alone; time and memory of each.

    python benchmarks/design_space.py [--counts 100,300,1000] [--repeats 3]

For each N in --counts: ``oracle predict -m resnet152 -s abci -p P --strategy all
--gpus 1,2,...,N -b 32 --format json`` (the explicit list works before and after
issue 29's ``1..N``), in process (the CLI's ``main`` with stdout captured), and
``compute.sweep.sweep`` alone on loaded inputs.  Memory: the peak of Python's
allocations while it runs (tracemalloc; numpy's arrays included) and the process's
peak resident set (ru_maxrss, the whole run so far: it only grows).  The targets
(issue 29, "Done when"): N = 10,000 within about 2 s and under 1 GB.  Timings depend
on the machine and its load: compare numbers of one run only.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import resource
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

PROFILE = "model: ResNet-152\nsource: benchmark only (timing does not depend on it)\ntotal: {fw_bw_per_sample_s: 0.01}\n"


def predict_args(profile: Path, n: int) -> list[str]:
    return ["predict", "-m", "resnet152", "-s", "abci", "-p", str(profile), "--strategy", "all",
            "--gpus", ",".join(str(g) for g in range(1, n + 1)), "-b", "32", "--format", "json"]  # fmt: skip


def run_cli(args: list[str]) -> int:
    """The CLI in this process; returns the bytes it wrote."""
    from oracle.cli.main import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        try:
            main(args)
        except SystemExit as exc:
            if exc.code not in (0, None):
                raise RuntimeError(f"oracle {' '.join(args[:8])} ... exited {exc.code}") from None
    return len(buf.getvalue())


def engine(profile: Path, n: int) -> int:
    """The sweep alone (inputs loaded outside the timing would be fairer; loading is
    cached by the first call, so the median excludes it)."""
    from oracle.compute.context import Options
    from oracle.compute.sweep import sweep
    from oracle.load import load_model, load_profile, load_system
    from oracle.load.profile import bind_profile

    m, s, pr = load_model("resnet152"), load_system("abci"), load_profile(str(profile))
    return len(sweep(m, s, bind_profile(m, pr), range(1, n + 1), "all", batch=32, options=Options()))


def measure(fn, repeats: int) -> tuple[float, float, object]:
    """Median seconds over ``repeats`` runs, the tracemalloc peak (MB) of one more, and its result."""
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    tracemalloc.start()
    out = fn()
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    return statistics.median(runs), peak, out


def maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--counts", default="100,300,1000", help="N values: GPU counts 1..N")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    t0 = time.perf_counter()
    import click, numpy, pandas, rich, yaml  # noqa: E401,F401  (the issue's yardstick: these imports)

    print(f"import numpy, pandas, yaml, rich, click: {time.perf_counter() - t0:.3f} s (already imported: 0)")
    with tempfile.TemporaryDirectory() as tmp:
        profile = Path(tmp) / "resnet152_bench.yaml"
        profile.write_text(PROFILE)
        print(f"{'what':<44} {'N':>6} {'points/bytes':>12} {'median s':>9} {'peak MB':>8} {'maxrss MB':>9}")
        for n in (int(v) for v in args.counts.split(",")):
            t, peak, points = measure(lambda: engine(profile, n), args.repeats)
            print(f"{'engine: compute.sweep.sweep':<44} {n:>6} {points:>12} {t:>9.3f} {peak:>8.1f} {maxrss_mb():>9.0f}")
            t, peak, size = measure(lambda: run_cli(predict_args(profile, n)), args.repeats)
            print(f"{'predict --strategy all -b 32 --format json':<44} {n:>6} {size:>12} {t:>9.3f} {peak:>8.1f} {maxrss_mb():>9.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
