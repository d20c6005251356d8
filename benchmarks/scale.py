"""Benchmark: projections at extreme scale stay fast (issue 7's numerical-safety cases).

Times, as fresh processes (median of --repeats):
  small   oracle predict of AlexNet on a 4,000,000-GPU machine, 1..1,048,576 GPUs and
          exactly 1,000,000, every strategy, JSON
  deep    the same for a generated 3,002-layer model
  show    oracle show model of the 3,002-layer model, JSON
Target (issue 7): each well under 5 s. These were timed tests once; timing depends on
the machine's load, so they are a benchmark (tests/test_numerics.py checks the numbers).

    python benchmarks/scale.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from test_numerics import EXA, GPUS, deep_model  # noqa: E402  (the tests' own inputs)


def timed(args: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "exa.yaml").write_text(EXA)
        (d / "deep.yaml").write_text(deep_model())
        (d / "deep_profile.yaml").write_text("model: Deep\nmeasured_samples_per_gpu: 32\n"
                                             "total: {fw_bw_per_sample_s: 0.05, wu_per_iteration_s: 0.01}\n")
        sweep = ["--gpus", GPUS, "-f", "json", "--samples", "1000000000000"]
        cases = {
            "small": ["oracle", "predict", "-m", "alexnet", "-s", str(d / "exa.yaml"), "-p", "alexnet_v100", *sweep],
            "deep": ["oracle", "predict", "-m", str(d / "deep.yaml"), "-s", str(d / "exa.yaml"),
                     "-p", str(d / "deep_profile.yaml"), *sweep],
            "show": ["oracle", "show", "model", str(d / "deep.yaml"), "-f", "json"],
        }  # fmt: skip
        for name, cmd in cases.items():
            t = timed(cmd, args.repeats)
            print(f"{name:6s} {t:6.2f} s   (target < 5 s: {'ok' if t < 5 else 'SLOW'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
