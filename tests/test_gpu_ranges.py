"""--gpus A..B and A..B:S (every count, issue 29) next to lists and powers of two, and
the guard that replaced the 1,000-count cap: a request whose points would not fit in
memory is refused with how many points and how much memory it needs."""

from __future__ import annotations

import numpy as np
import pytest
from test_robustness import files, one_error

from conftest import run_cli
from oracle.compute.engine import BYTES_PER_POINT, MEMORY_BUDGET_BYTES, count_points, factorizations
from oracle.compute.strategies import names
from oracle.compute.strategies.base import hybrid_configurations
from oracle.errors import OracleError
from oracle.load.values import parse_gpus


def test_every_count_and_steps():
    assert parse_gpus("1..5") == [1, 2, 3, 4, 5]
    assert parse_gpus("8..40:8") == [8, 16, 24, 32, 40]
    assert parse_gpus("3..10:4") == [3, 7]  # B need not be on the step
    assert parse_gpus("7..7") == [7]
    assert parse_gpus("1,2..4,8-32") == [1, 2, 3, 4, 8, 16, 32]  # with lists and powers of two
    assert len(parse_gpus("1..10000")) == 10000  # more than the old cap of 1,000


@pytest.mark.parametrize(("spec", "words"), [("5..1", "goes down"), ("1..10:0", "expected at least 1"),
                                             ("1..", "is not a GPU count"), ("..4", "is not a GPU count"),
                                             ("1..9:x", "is not a GPU count"), ("0..4", "at least 1")])  # fmt: skip
def test_bad_ranges(spec, words):
    with pytest.raises(OracleError, match=words):
        parse_gpus(spec)


def test_a_huge_range_is_refused_before_it_is_listed():
    with pytest.raises(OracleError, match="10,000,000 GPU counts"):
        parse_gpus("1..10000000")


def test_factorizations_are_the_hybrid_configurations():
    counts = np.arange(1, 400)
    assert factorizations(counts).tolist() == [len(hybrid_configurations("h", int(p), 1.0, None)) for p in counts]


def test_point_count_is_the_sweeps(tmp_path):
    from oracle.api import predict

    m, s, p = files(tmp_path)
    points = predict(str(m), str(s), str(p), gpus="1..24", batch=64)
    assert count_points(range(1, 25), names(), explicit=False) == (len(points), True)


def test_a_request_over_the_memory_budget_says_what_it_needs(tmp_path):
    m, s, p = files(tmp_path)
    n = int(MEMORY_BUDGET_BYTES // BYTES_PER_POINT) + 1  # data alone: one point a count
    r = run_cli("predict", "-m", m, "-s", s, "-p", p, "--strategy", "data", "--gpus", f"1..{n}", "-b", "64")
    one_error(r, "--gpus", f"{n:,} points", "GB of memory")


def test_all_strategies_at_every_count_to_ten_thousand_counts_the_hybrids():
    n, exact = count_points(range(1, 10001), names(), explicit=False)
    assert exact and n > 10000 * (len(names()) - 1)  # the factorizations come on top
