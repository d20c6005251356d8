"""Benchmark: how fast is ``oracle search``? (issue 8)

Target: ResNet-152 on 1024 GPUs searched in under a second (Jia et al., ICML 2018,
report 0.4 s for Inception-v3 on 16 GPUs with their node/edge elimination).

Measures, in process (inputs loaded once; median of --repeats runs):
  - the per-layer search alone (compute/layerwise/search.py search_layerwise): building the
    (layers x distributions) cost arrays, the edge matrices and the graph solves;
  - the whole search at one GPU count (uniform sweep with every factorization and
    pipeline segment counts + the per-layer search);
for ResNet-152 at 16 ... 1024 GPUs, Inception-v3 at 16 and ResNet-50 / VGG16 at 64;
and the command end to end (``oracle search ... --gpus 1024``, a fresh process).

ResNet-152 and Inception-v3 have no shipped profile, so a total-only profile is
written to a temporary folder (the timing does not depend on its value).

    python benchmarks/search.py [--repeats 5] [--markdown]
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

PROFILES = {
    "resnet152": "model: ResNet-152\nsource: benchmark only\ntotal: {fw_bw_per_sample_s: 0.009}\n",
    "inception_v3": "model: Inception-v3\nsource: benchmark only\ntotal: {fw_bw_per_sample_s: 0.006}\n",
}
CASES = [
    ("resnet152", 16),
    ("resnet152", 64),
    ("resnet152", 256),
    ("resnet152", 1024),
    ("inception_v3", 16),
    ("resnet50", 64),
    ("vgg16", 64),
    # issue 18: Jia et al.'s wider space (every kind also on the first q GPUs, q dividing p)
    ("inception_v3", 16, ("data", "spatial", "filter", "channel", "subsets")),
    ("vgg16", 64, ("data", "spatial", "filter", "channel", "replicated", "subsets")),
]


def oracle_cmd() -> list[str]:
    exe = shutil.which("oracle", path=str(Path(sys.executable).parent)) or shutil.which("oracle")
    return [exe] if exe else [sys.executable, "-c", "from oracle.cli.main import main; main()"]


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--batch-per-gpu", type=float, default=16)
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table for the README")
    args = ap.parse_args()

    from oracle.compute.binding import bind_profile
    from oracle.compute.context import Context, Options
    from oracle.compute.layerwise.search import search, search_layerwise
    from oracle.load import load_model, load_profile, load_system

    rows = []
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for name, text in PROFILES.items():
            paths[name] = Path(tmp) / f"{name}_bench.yaml"
            paths[name].write_text(text)
        shipped = {"resnet50": "resnet50_v100", "vgg16": "vgg16_v100"}
        system = load_system("abci")
        for model_name, p, *space in CASES:
            kinds = space[0] if space else ("data", "spatial", "filter", "channel")
            m = load_model(model_name)
            pr = load_profile(str(paths.get(model_name, shipped.get(model_name))))
            ctx = Context(m, system, bind_profile(m, pr), Options(), pr.kind)
            B = args.batch_per_gpu * p
            lw_runs, all_runs = [], []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                lw = search_layerwise(ctx, p, B, kinds)
                lw_runs.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                search(ctx, p, B, kinds=kinds)
                all_runs.append(time.perf_counter() - t0)
            st = lw.stats
            graph = (
                f"{st.node_eliminations} node + {st.edge_eliminations} edge elim., final {st.final_nodes}"
                if st else "line graph"
            )  # fmt: skip
            lw_t, all_t = statistics.median(lw_runs), statistics.median(all_runs)
            rows.append(
                (f"{m.name} on {p} GPUs" + (f" ({'+'.join(kinds[4:])})" if space else ""), len(m.layers),
                 lw.costs.nd, lw.solves, graph, lw_t, all_t)
            )
            if model_name == "resnet152" and p == 1024 and all_t >= 1.0:
                ok = False
        cmd = oracle_cmd() + ["search", "-m", "resnet152", "-s", "abci", "-p", str(paths["resnet152"]),
                              "--gpus", "1024", "-b", f"{args.batch_per_gpu:g}"]  # fmt: skip
        runs = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            runs.append(time.perf_counter() - t0)
        cli = statistics.median(runs)

    _print(rows, cli, ok, args)
    return 0 if ok else 1


def _print(rows, cli: float, ok: bool, args) -> None:
    head = (
        "case",
        "layers",
        "distributions",
        "graph solves",
        "graph",
        "per-layer search s",
        "whole search s",
    )
    if args.markdown:
        print(f"| {' | '.join(head)} |")
        print("|---|---:|---:|---:|---|---:|---:|")
        for r in rows:
            print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]} | {r[5]:.3f} | {r[6]:.3f} |")
        print(
            f"\n`oracle search -m resnet152 ... --gpus 1024` end to end (fresh process, median of"
            f" {args.repeats}, {os.cpu_count()} cores): {cli:.2f} s"
        )
    else:
        for r in rows:
            print(f"{r[0]:<28} {r[1]:>4} layers x {r[2]:>2} dists  {r[3]:>2} solves  {r[4]:<40}"
                  f" per-layer {r[5]:.3f} s   whole {r[6]:.3f} s")  # fmt: skip
        print(f"oracle search resnet152 --gpus 1024, end to end: {cli:.2f} s")
        print("target met (ResNet-152 on 1024 GPUs < 1 s)" if ok else "TARGET MISSED")


if __name__ == "__main__":
    sys.exit(main())
