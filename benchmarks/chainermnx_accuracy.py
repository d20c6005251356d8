"""Benchmark: accuracy per (system, stack) on the ParaDL study's ABCI runs (issue 27 point 3).

Every run of ``validation/abci-paradl.csv`` is projected with ``oracle compare`` on each
(system, stack) pair below.  Fitted rows: lines 2, 4, 14, 31, 32 -- the only rows any value
of ``stacks/chainermnx.yaml`` (its ``fitted_on``) or ``systems/abci-2020.yaml``
(scripts/calibrate_abci2020.sh) was fitted on; every other row is held out, and the
held-out column is the one to quote.  Accuracy is 1 - |t_pred - t_meas| / t_meas on the
run's basis (epoch or iteration time), as ``oracle compare``, which scores only the runs
the model finds feasible: a cell over fewer runs than its column says how many it holds
(the ``paradl`` tool finds the six AlexNet data+spatial runs of 512 samples per replica
out of memory).

    python benchmarks/chainermnx_accuracy.py [--markdown]
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from statistics import mean

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from oracle import api  # noqa: E402

RUNS = ROOT / "validation" / "abci-paradl.csv"
FITTED_LINES = frozenset({2, 4, 14, 31, 32})  # scripts/calibrate_abci2020.sh; stacks/chainermnx.yaml fitted_on
PAIRS = (  # (system, stack): ABCI's hardware + the software file first, then the alternatives
    ("abci", "chainermnx"),
    ("abci", "paradl"),
    ("abci-nominal", "paradl"),
    ("abci-chainermnx", "chainermnx"),
    ("abci-2020", "chainermnx"),
)


def accuracies(system: str, stack: str) -> dict[int, float | None]:
    """Line of the runs file -> accuracy of its projection (None: not scored, infeasible in the model)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows, _ = api.compare(RUNS, system=system, stack=stack, warn=lambda *_: None)
    return {int(r.run.line): r.accuracy if r.scored else None for r in rows}


def cell(values: list[float | None]) -> str:
    """The mean accuracy of the scored runs, and how many those are where some are not."""
    scored = [v for v in values if v is not None]
    shown = f"{100 * mean(scored):.1f}%" if scored else "–"
    return shown if len(scored) == len(values) else f"{shown} ({len(scored)} scored)"


def table(markdown: bool) -> str:
    lines = ["| system | stack | fitted rows (5) | held-out rows (32) | all (37) |", "|---|---|---:|---:|---:|"]
    for system, stack in PAIRS:
        acc = accuracies(system, stack)
        fitted = [a for line, a in acc.items() if line in FITTED_LINES]
        held = [a for line, a in acc.items() if line not in FITTED_LINES]
        cells = (cell(v) for v in (fitted, held, list(acc.values())))
        lines.append(f"| {system} | {stack} | " + " | ".join(cells) + " |")
    text = "\n".join(lines)
    return text if markdown else text.replace("|---|---|---:|---:|---:|\n", "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    print(f"{RUNS.relative_to(ROOT)}: fitted rows are lines {', '.join(map(str, sorted(FITTED_LINES)))};"
          " every other row is held out")  # fmt: skip
    print(table(args.markdown))


if __name__ == "__main__":
    main()
