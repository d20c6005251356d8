"""Benchmark: NCCL's collective model (compute/nccl.py) against the nccl-tests logs (issue 25).

- **ABCI** (data/nccl-tests/abci-v100/: 4 V100 per node, NVLink, 2x EDR; NCCL 2.8.4; 1 to 32
  nodes): one set of per-protocol lines (LL, LL128, Simple; α and β inside a node and across
  nodes) fitted to every log at once (compute/nccl_fit.py), then the median and largest
  |relative error| per node count, and which candidate the model takes.  Then the same
  fitted on the small node counts only and predicting the larger ones.
- **Google Cloud A3 Mega** (data/nccl-tests/h100-a3mega/: 2 nodes x 8 H100, GPUDirect-TCPXO):
  the inter-node lines fitted with the NVSwitch level nominal and the bandwidth at most the
  8 x 200 Gb/s of the node's GPU NICs; then the shipped ``gcp-a3mega-h100`` system, as
  ``oracle predict`` uses it, against the same log.

Target: median |error| <= 10% at every node count of the logs.

    python benchmarks/nccl_tests.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from oracle.compute.nccl import Offers, offers  # noqa: E402
from oracle.compute.nccl_fit import fit_lines, predict, samples_of  # noqa: E402
from oracle.compute.network import allreduce_algorithm, group_contiguous  # noqa: E402
from oracle.load import load_system  # noqa: E402
from oracle.load.benchlogs import load_benchlog  # noqa: E402

ABCI = sorted((ROOT / "data" / "nccl-tests" / "abci-v100").glob("*.txt"))
A3MEGA = ROOT / "data" / "nccl-tests" / "h100-a3mega" / "all_reduce_perf_2x8_H100_GCP-A3mega.txt"
A3_NIC_GB_PER_S = 200.0  # Google Cloud A3 Mega: 8 GPU NICs x 200 Gb/s per node (GPUDirect-TCPXO)


def errors(samples, lines, offer: Offers = Offers()) -> tuple[np.ndarray, list[str]]:
    pred, used = predict(samples, lines, offers=offer)
    t = np.array([s.t for s in samples])
    return (pred - t) / t, used


def regimes(samples, used) -> str:
    """The candidates taken, each with the largest size it is taken for."""
    out: list[tuple[str, float]] = []
    for s, u in zip(samples, used):
        if out and out[-1][0] == u:
            out[-1] = (u, s.m)
        else:
            out.append((u, s.m))
    return ", ".join(f"{u} to {_size(m)}" for u, m in out)


def _size(m: float) -> str:
    for unit, div in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if m >= div:
            return f"{m / div:g} {unit}"
    return f"{m:g} B"


def show_lines(lines: dict) -> None:
    for (where, proto), (a, b) in sorted(lines.items()):
        print(f"    {where:5s} {proto:6s}  α {a * 1e6:7.2f} us   1/β {1 / b / 1e9:8.2f} GB/s")


def table(logs, lines, fitted_on, offer: Offers = Offers()) -> list[float]:
    medians = []
    print(f"  {'nodes':>5} {'GPUs':>5} {'median':>7} {'max':>7}  {'':8}  candidates (as NCCL's tuner picks)")
    for log in logs:
        s = samples_of(log)
        e, used = errors(s, lines, offer)
        med = float(np.median(np.abs(e)))
        medians.append(med)
        role = "fitted" if log.nodes in fitted_on else "PREDICTED"
        print(f"  {log.nodes:5d} {log.gpus:5d} {med:7.1%} {np.abs(e).max():7.1%}  {role:8}  {regimes(s, used)}")
    return medians


def abci() -> list[float]:
    logs = sorted((load_benchlog(p) for p in ABCI), key=lambda lg: lg.gpus)
    print("ABCI (V100, 4 per node, NVLink + 2x EDR; NCCL 2.8.4), nccl-tests all_reduce_perf, out of place")
    lines = fit_lines([s for lg in logs for s in samples_of(lg)])
    print("  one set of lines fitted to all six logs:")
    show_lines(lines)
    medians = table(logs, lines, {lg.nodes for lg in logs})
    for upto in (8, 16):
        part = fit_lines([s for lg in logs if lg.nodes <= upto for s in samples_of(lg)])
        print(f"  fitted on 1-{upto} nodes, predicting the rest:")
        table(logs, part, {lg.nodes for lg in logs if lg.nodes <= upto})
    return medians


def a3mega() -> list[float]:
    log = load_benchlog(A3MEGA)
    system = load_system("gcp-a3mega-h100")
    intra = system.network[0]
    fixed = {("intra", "Simple"): (intra.alpha_s, intra.beta_s_per_byte)}
    fixed.update({("intra", pr.name): (pr.alpha_s, pr.beta_s_per_byte) for pr in intra.protocols})
    floor = 1.0 / (A3_NIC_GB_PER_S * 1e9)
    print(f"\nGoogle Cloud A3 Mega ({log.nodes} nodes x {log.gpus_per_node} H100, GPUDirect-TCPXO), nccl-tests"
          " all_reduce_perf, out of place")
    lines = fit_lines(samples_of(log), fixed=fixed, floors={("inter", p): floor for p in ("LL", "LL128", "Simple")},
                      offers=offers(system))  # fmt: skip
    print(f"  inter-node lines fitted (NVSwitch level nominal, bandwidth at most {A3_NIC_GB_PER_S:g} GB/s of NICs):")
    show_lines({k: v for k, v in lines.items() if k[0] == "inter"})
    table([log], lines, {log.nodes}, offers(system))
    group = group_contiguous(log.gpus, system.gpus_per_node)
    m = np.array([float(b) for b, _ in log.rows])
    t = np.array([s for _, s in log.rows])
    shipped, _ = allreduce_algorithm(system, group, m, system.collective_algorithm)
    err = np.abs(shipped - t) / t
    med = float(np.median(err))
    print(f"  shipped gcp-a3mega-h100 ({system.collective_algorithm}), as oracle predict uses it: median {med:.1%},"
          f" max {err.max():.1%}")
    return [med]


def main() -> int:
    medians = abci() + a3mega()
    worst = max(medians)
    print(f"\nworst median over the node counts: {worst:.1%} (target <= 10%): {'met' if worst <= 0.10 else 'NOT met'}")
    return 0 if worst <= 0.10 else 1


if __name__ == "__main__":
    sys.exit(main())
