"""Benchmark (issue 29): design-space questions in one process — every GPU count and
every strategy of ResNet-152 on ABCI, end to end through ``oracle predict`` (loading,
sweep, JSON rendering into memory) and the engine alone; time and memory of each.

    python benchmarks/design_space.py [--counts 100,300,1000] [--repeats 3] [--before TREE]

For each N in --counts: ``oracle predict -m resnet152 -s abci -p P --strategy all
--gpus 1,2,...,N -b 32 --format json`` (the explicit list works before and after
issue 29's ``1..N``), in process (the CLI's ``main`` with stdout captured); the same
with ``--top 1 --format csv`` in process and in a fresh Python process (``process``:
start-up and imports included, its peak resident set from ru_maxrss of the child),
``compute.sweep.sweep`` alone on loaded inputs, and ``oracle sweep`` of ResNet-50 on
four systems x two batches x GPU counts 1..N/4, every point (--all) to a file.  The
issue's streamed sweep: ``sweepall`` (``oracle sweep --all``) and ``sweepbest`` (the
best configuration per count) of ResNet-50 on abci and lassen x batches 32 and 64 per
GPU x GPU counts 1..N, to a file (N = 12,500: about 10^6 points; only the resident set
is measured there, tracemalloc would multiply the time); ``sweepjson`` and ``sweepmd``
the same ``--all`` as JSON and Markdown; ``jsonfile`` and ``mdfile`` the predict above
as JSON and Markdown to a file (``-o``: its output streamed, a run of counts at a
time, and not held by the measuring process; resident set only).  Each measurement runs in a
fresh process; memory is its peak of Python's allocations (tracemalloc; numpy's arrays
included) and its peak resident set (ru_maxrss).
``--before TREE``: the same measurements with the ``oracle`` package of another
checkout first (e.g. ``git archive COMMIT oracle models systems profiles stacks data |
tar -x -C TREE``), so that before and after share the machine's load.  The targets
(issue 29, "Done when"): N = 10,000 within about 2 s and under 1 GB.  Timings depend
on the machine and its load: compare numbers of one run only.  Both trees are
byte-compiled first (``compileall``), as an installed package runs.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

SWEEP = """cases:
  - model: resnet50
    profile: resnet50_v100
    system: [abci, dgx-h100-superpod, lassen, dgx1-v100]
    batch_per_gpu: [32, 64]
    gpus: {gpus}
"""

# issue 29, "Done when": a sweep of 10^6 points streamed (the systems the arrays cover)
STREAMED = """cases:
  - model: resnet50
    profile: resnet50_v100
    system: [abci, lassen]
    batch_per_gpu: [32, 64]
    gpus: {gpus}
"""

PROFILE = "model: ResNet-152\nsource: benchmark only (timing does not depend on it)\ntotal: {fw_bw_per_sample_s: 0.01}\n"


def predict_args(profile: Path, n: int, top: int | None = None, fmt: str = "json") -> list[str]:
    shown = ["--top", str(top), "--format", "csv"] if top else ["--format", fmt]
    return ["predict", "-m", "resnet152", "-s", "abci", "-p", str(profile), "--strategy", "all",
            "--gpus", ",".join(str(g) for g in range(1, n + 1)), "-b", "32", *shown]  # fmt: skip


def to_file(tmp: Path, args: list[str]) -> int:
    """The CLI with ``-o`` a file (output not held in this process); returns its bytes."""
    out = tmp / "out.txt"
    run_cli([*args, "-o", str(out)])
    return out.stat().st_size


def process(profile: Path, n: int, tree: str) -> int:
    """``oracle predict ... --top 1 --format csv`` in a fresh Python process (start-up and
    imports included: the issue's measure); returns the bytes it wrote."""
    code = "import sys; from oracle.cli.main import main; main(sys.argv[1:])"
    r = subprocess.run([sys.executable, "-c", code, *predict_args(profile, n, top=1)], capture_output=True, check=False,
                       text=True, env={**os.environ, "PYTHONPATH": tree}, cwd=tree)  # fmt: skip
    if r.returncode:
        raise RuntimeError(r.stderr.strip().splitlines()[-1:])
    return len(r.stdout)


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


def sweep_command(tmp: Path, n: int, cases_text: str = SWEEP, every: bool = True, fmt: str = "csv") -> int:
    """``oracle sweep`` (``every``: --all) of ``cases_text`` with GPU counts 1..n (written
    as a list, which both sides of --before read) as ``fmt``; returns the lines it wrote
    (CSV: the rows)."""
    cases = tmp / "cases.yaml"
    cases.write_text(cases_text.format(gpus="[" + ", ".join(str(g) for g in range(1, max(1, n) + 1)) + "]"))
    out = tmp / "rows.csv"
    run_cli(["sweep", str(cases), *(["--all"] if every else []), "-f", fmt, "-o", str(out)])
    with open(out, encoding="utf-8") as fh:
        return sum(1 for _ in fh) - 1


def engine(profile: Path, n: int) -> int:
    """The sweep alone (inputs loaded outside the timing would be fairer; loading is
    cached by the first call, so the median excludes it)."""
    try:
        from oracle.compute.binding import bind_profile
    except ImportError:  # a --before tree older than compute/binding.py
        from oracle.load.profile import bind_profile
    from oracle.compute.context import Options
    from oracle.compute.sweep import sweep
    from oracle.load import load_model, load_profile, load_system

    m, s, pr = load_model("resnet152"), load_system("abci"), load_profile(str(profile))
    return len(sweep(m, s, bind_profile(m, pr), range(1, n + 1), "all", batch_per_gpu=32, options=Options()))


def measure(fn, repeats: int, trace: bool = True) -> tuple[float, float, object]:
    """Median seconds over ``repeats`` runs, the tracemalloc peak (MB) of one more, and its
    result (without ``trace``: NaN, and the last run's result)."""
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        runs.append(time.perf_counter() - t0)
    if not trace:
        return statistics.median(runs), float("nan"), out
    tracemalloc.start()
    out = fn()
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    return statistics.median(runs), peak, out


def maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


KINDS = {"engine": "engine: compute.sweep.sweep", "predict": "predict --strategy all -b 32 -f json",
         "top1": "predict ... --top 1 -f csv", "process": "predict ... --top 1 -f csv, fresh process",
         "sweep": "oracle sweep --all (4 systems x 2 batches)",
         "sweepall": "oracle sweep --all (abci,lassen x 2 batches)", "sweepbest": "oracle sweep (abci,lassen x 2)",
         "jsonfile": "predict ... -f json -o FILE", "mdfile": "predict ... -f markdown -o FILE",
         "sweepjson": "oracle sweep --all -f json (abci,lassen x 2)",
         "sweepmd": "oracle sweep --all -f markdown (abci,lassen x 2)"}  # fmt: skip
# the resident set only (10^6 points; output streamed to a file, whose memory is the measure)
UNTRACED = ("sweepall", "sweepbest", "jsonfile", "mdfile", "sweepjson", "sweepmd")


def one(kind: str, n: int, repeats: int) -> dict:
    """One measurement in this process (run by :func:`main` in a fresh one)."""
    with tempfile.TemporaryDirectory() as tmp:
        profile = Path(tmp) / "resnet152_bench.yaml"
        profile.write_text(PROFILE)
        fn = {"engine": lambda: engine(profile, n), "predict": lambda: run_cli(predict_args(profile, n)),
              "top1": lambda: run_cli(predict_args(profile, n, top=1)),
              "process": lambda: process(profile, n, os.getcwd()),
              "sweep": lambda: sweep_command(Path(tmp), n // 4),
              "sweepall": lambda: sweep_command(Path(tmp), n, STREAMED),
              "sweepbest": lambda: sweep_command(Path(tmp), n, STREAMED, every=False),
              "jsonfile": lambda: to_file(Path(tmp), predict_args(profile, n)),
              "mdfile": lambda: to_file(Path(tmp), predict_args(profile, n, fmt="markdown")),
              "sweepjson": lambda: sweep_command(Path(tmp), n, STREAMED, fmt="json"),
              "sweepmd": lambda: sweep_command(Path(tmp), n, STREAMED, fmt="markdown")}[kind]  # fmt: skip
        t, peak, size = measure(fn, repeats, kind not in UNTRACED)
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024 if kind == "process" else maxrss_mb()
    return {"seconds": t, "peak_MB": peak, "maxrss_MB": rss, "size": size}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--counts", default="100,300,1000", help="N values: GPU counts 1..N")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--before", help="another checkout's tree (its oracle package) to measure first")
    ap.add_argument("--one", nargs=2, metavar=("KIND", "N"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.one[0], int(args.one[1]), args.repeats)))
        return 0
    t0 = time.perf_counter()
    import click  # noqa: E401,F401  (the issue's yardstick: these imports)
    import numpy
    import pandas
    import rich
    import yaml

    print(f"import numpy, pandas, yaml, rich, click: {time.perf_counter() - t0:.3f} s")
    fresh = []  # the yardstick: the same imports in a fresh process (start-up included)
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import numpy, pandas, yaml, rich, click"], check=True)
        fresh.append(time.perf_counter() - t0)
    print(f"the same in a fresh process: {statistics.median(fresh):.3f} s (median of {args.repeats})")
    here = str(Path(__file__).resolve().parent.parent)
    trees = ([("before", args.before)] if args.before else []) + [("after", here)]
    for _, tree in trees:  # as an installed package runs: byte-compiled (PYTHONDONTWRITEBYTECODE=1 would compile
        compileall.compile_dir(Path(tree) / "oracle", quiet=1)  # each fresh process's modules again, ~0.2 s)
    print(f"{'tree':<7} {'what':<44} {'N':>6} {'points/bytes':>12} {'median s':>9} {'peak MB':>8} {'maxrss MB':>9}")
    for n in (int(v) for v in args.counts.split(",")):
        for kind in args.kinds.split(","):
            for name, tree in trees:
                env = {**os.environ, "PYTHONPATH": tree}
                cmd = [sys.executable, __file__, "--one", kind, str(n), "--repeats", str(args.repeats)]
                r = subprocess.run(cmd, env=env, cwd=tree, capture_output=True, text=True)
                if r.returncode:
                    print(f"{name:<7} {KINDS[kind]:<44} {n:>6} failed: {r.stderr.strip().splitlines()[-1:]}")
                    continue
                m = json.loads(r.stdout.splitlines()[-1])
                print(f"{name:<7} {KINDS[kind]:<44} {n:>6} {m['size']:>12} {m['seconds']:>9.3f} {m['peak_MB']:>8.1f}"
                      f" {m['maxrss_MB']:>9.0f}", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
