"""benchmarks/seed_papers.py's computation (not its timings): every paper result that
oracle reproduces within 25% stays so, Gholami's optimal grids stay exact, and the
ones it does not reproduce are listed (docs/seed-papers.md says why)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "seed_papers.py"


@pytest.fixture(scope="module")
def rows():
    spec = importlib.util.spec_from_file_location("seed_papers", BENCH)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["seed_papers"] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    result = mod.compute(timings=False)
    return {r.quantity: r for r in result["rows"]}, result["lee"], mod


WITHIN = [
    "parallel CNN speedup, 128 nodes, B=256",
    "overlap benefit at 128 nodes (62.97/19.92)",
    "parallel CNN speedup, 128 nodes, B=512",
    "overlap benefit, oracle search in Lee's space",
    # Jia, one parameter server per node (an assumption)
    "AlexNet: layer-wise speedup 1 -> 16 GPUs [4 PS]",
    "VGG-16: layer-wise speedup 1 -> 16 GPUs [4 PS]",
    "Inception-v3: layer-wise gain over best of data/model/OWT [4 PS]",
    "Inception-v3: layer-wise speedup 1 -> 16 GPUs [4 PS]",
    "Inception-v3: best other strategy's speedup 1 -> 16 GPUs [4 PS]",
    # Jia, one parameter server (Jia §5.1: "a parameter server" per layer)
    "AlexNet: layer-wise gain over best of data/model/OWT [1 PS]",
    "VGG-16: layer-wise gain over best of data/model/OWT [1 PS]",
    "Inception-v3: layer-wise gain over best of data/model/OWT [1 PS]",
    "AlexNet: layer-wise speedup 1 -> 16 GPUs [1 PS]",
    "VGG-16: layer-wise speedup 1 -> 16 GPUs [1 PS]",
    "VGG-16: best other strategy's speedup 1 -> 16 GPUs [1 PS]",
    "Inception-v3: best other strategy's speedup 1 -> 16 GPUs [1 PS]",  # since the Pascal efficiency
]
OUTSIDE = [  # docs/seed-papers.md: why
    "parallel CNN speedup, 128 nodes, B=128",
    "AlexNet: layer-wise gain over best of data/model/OWT [4 PS]",
    "VGG-16: layer-wise gain over best of data/model/OWT [4 PS]",
    "AlexNet: best other strategy's speedup 1 -> 16 GPUs [4 PS]",
    "VGG-16: best other strategy's speedup 1 -> 16 GPUs [4 PS]",
    "AlexNet: best other strategy's speedup 1 -> 16 GPUs [1 PS]",
    "Inception-v3: layer-wise speedup 1 -> 16 GPUs [1 PS]",
]


@pytest.mark.parametrize("quantity", WITHIN)
def test_within_25_percent(rows, quantity):
    r = rows[0][quantity]
    assert abs(r.oracle_value / r.paper_value - 1) <= 0.25, (quantity, r.paper_value, r.oracle_value)


@pytest.mark.parametrize("quantity", OUTSIDE)
def test_known_differences_are_listed(rows, quantity):
    r = rows[0][quantity]
    assert r.verdict == "outside 25%", (quantity, r.oracle_value)


def test_every_numeric_row_is_classified(rows):
    numeric = {q for q, r in rows[0].items() if r.ratio is not None and not r.fitted and "MiB" not in q}
    assert numeric == set(WITHIN) | set(OUTSIDE)


def test_lee_fitted_and_fc6_volumes(rows):
    table, lee, _ = rows
    assert table["DP speedup, 128 nodes, B=256"].oracle_value == pytest.approx(19.92, rel=1e-6)
    # Lee §III-C-2: "the reduction of 392MB is replaced with the gathering of 28.5MB"
    assert table["fc6: all-gather MiB (replicated)"].oracle_value == pytest.approx(28.5, abs=0.05)
    assert table["fc6: gradient reduction MiB (data parallel)"].oracle_value == pytest.approx(392, abs=0.5)
    assert lee["bucket_layers"] == 5  # Lee's k = 9 of 16 layers: fc8, conv8, conv7, conv6, conv5
    # the mechanisms help at every node count and the gap grows with the nodes
    gaps = [par / dp for dp, par in lee["curve"].values()]
    assert all(g >= 1 - 1e-12 for g in gaps) and gaps[-1] == max(gaps)


def test_gholami_optimal_grids_exact(rows):
    table = rows[0]
    assert table["optimal P_r x P_c, P = 8, B = 2048"].oracle_value == "1x8"
    assert table["optimal P_r x P_c, P = 512, B = 2048"].oracle_value == "4x128"


def test_mechanisms_off_leave_lee_at_plain_overlap(rows):
    """Without the replicated gradients, the overlap alone is bounded as the issue says:
    (compute + communication) / max(compute, communication) < 2."""
    _, _, mod = rows
    model, system, profile = mod._lee_inputs()
    sc = system(rows[1]["bandwidth_GB_per_s"])
    dp = mod._iteration(model, sc, profile, 128, 256)
    over = mod._iteration(model, sc, profile, 128, 256, overlap="buckets", bucket_layers=5)
    assert 1 <= dp / over < 2
