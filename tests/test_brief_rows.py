"""CSV rows without the per-point path (issue 29): a row of the arrays whose formulas
repeat the per-point operations (compute/vector/rows.brief_rows), feasible or not, renders the
CSV cells of the per-point path's point (numbers, memory parts, limits), byte for byte, over shipped models, the systems the
arrays cover, GPU counts and memory models; render/records.csv_cells gives the cells of
the rows to_rows builds; ``predict --top N -f csv`` writes the first N rows of every GPU
count of the full CSV."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from conftest import run_cli
from test_vector import SYSTEMS, counts_for, times_for

from oracle.compute.context import Context, Options
from oracle.compute.strategies import names
from oracle.compute.strategies.base import Config
from oracle.compute.sweep import evaluate_all, sweep
from oracle.compute.vector import kinds, run
from oracle.compute.vector.rows import brief_rows
from oracle.load import load_model, load_system
from oracle.render.records import _cell, csv_cells, csv_columns, csv_lines, to_rows
from oracle.textsafe import csv_cell

MODELS = ["resnet50", "vgg16", "alexnet", "mobilenet_v2", "inception_v3", "cifar_resnet20", "unet3d"]
OPTIONS = (Options(), Options(memory_model="paradl", zero=3, mixed_precision=True), Options(zero=1, optimizer="adam"))


def _config(c, r: int) -> Config:
    S = int(c.segments[r]) if c.segments is not None and c.segments[r] else None
    return Config(c.strategy, int(c.gpus[r]), int(c.p1[r]), int(c.p2[r]), float(c.batch[r]), S)


def sampled_rows(model_name: str, models: list, options_sets, batches, seed: int, extra=(), n: int = 40):
    """(context, columns, rows, their per-point points): up to ``n`` feasible and ``n``
    infeasible rows of each strategy's columns whose numbers are the per-point path's
    (Columns.brief_rows), the models taking turns over the shipped systems (each
    system under at least one model: every system under every model took ~2 minutes of
    the suite once the DGX files were covered too), under each of ``options_sets``."""
    m = load_model(model_name)
    for system_name in SYSTEMS[models.index(model_name) :: len(models)]:
        for options in options_sets:
            ctx = Context(m, load_system(system_name), times_for(m, seed), options)
            if not kinds.covered(ctx):
                continue
            counts = sorted(set(counts_for(ctx.system)) | {4, 16, 24, 48, *extra})
            for batch, per_gpu in batches:
                for c in run.columns(ctx, counts, names(), True, batch, per_gpu, None):
                    brief = [] if c.brief_rows is None else np.flatnonzero(c.brief_rows).tolist()
                    rows = [r for r in brief if not c.limit_codes(r)][:n] + [r for r in brief if c.limit_codes(r)][:n]
                    if rows:
                        yield ctx, c, np.asarray(rows, dtype=np.int64), evaluate_all(ctx, [_config(c, r) for r in rows])


@pytest.mark.parametrize("model_name", MODELS)
def test_rows_from_columns_equal_rows_from_points(model_name):
    compared = infeasible = 0
    batches = ((512.0, None), (None, 16.0), (None, 2.0))
    for ctx, c, rows, points in sampled_rows(model_name, MODELS, OPTIONS, batches, 1, (128, 256)):
        for r, row, pt in zip(rows.tolist(), brief_rows(ctx, c, rows), points):
            got = csv_lines([row.with_rank(2)]), (row.gpus, row.strategy, row.p2, row.total_s, row.feasible)
            want = csv_lines([pt.with_rank(2)]), (pt.gpus, pt.strategy, pt.p2, pt.total_s, pt.feasible)
            assert repr(got) == repr(want), (ctx.system.name, c.strategy, _config(c, r))  # NaN totals too
            compared += 1
            infeasible += not pt.feasible
    assert compared > 100 and infeasible > 20


def test_brief_is_kept_by_the_kinds_whose_operations_repeat_the_per_point_path():
    m = load_model("resnet50")
    ctx = Context(m, load_system("abci"), times_for(m), Options())
    cols = run.columns(ctx, [1, 2, 8, 12, 500], names(), True, 256.0, None, None)
    kept = {c.strategy for c in cols if c.memory_parts is not None}
    assert kept == {"serial", "data", "filter", "channel", "data+filter", "spatial", "data+spatial"}
    assert all(c.brief_rows.all() for c in cols if c.strategy in kept and not c.points)
    unfactored = [c for c in cols if c.points]  # the hybrids at 1 and 2 GPUs: their one point says why
    assert {(c.strategy, tuple(c.gpus.tolist()), tuple(c.p2.tolist())) for c in unfactored} == {
        (s, (1, 2), (0, 0)) for s in ("data+filter", "data+spatial")}
    (pipe,) = (c for c in cols if c.strategy == "pipeline")
    assert pipe.brief_rows.tolist() == (pipe.gpus > ctx.G).tolist()  # its stages' sums: numpy's order differs


@pytest.mark.parametrize("system_name", ["abci", "lassen", "dgx1-v100"])
def test_csv_cells_are_the_cells_of_to_rows(system_name):
    m = load_model("resnet50")
    points = sweep(m, load_system(system_name), times_for(m, 2), [1, 2, 3, 8, 64, 5000], "all", batch_per_gpu=64.0)
    assert any(pt.segments for pt in points) and any(not pt.feasible for pt in points)
    old = [[_cell(row.get(k)) for k in csv_columns()] for row in to_rows(points)]
    assert [csv_cells(pt) for pt in points] == old


@pytest.mark.parametrize("system_name", ["abci", "lassen", "dgx1-v100"])
@pytest.mark.parametrize("profile", ["resnet50_v100", "resnet50_a100_fp16_estimated"])
@pytest.mark.parametrize("scaling", [("--batch", "512"), ("--batch-per-gpu", "32")])
def test_predict_csv_writes_the_per_point_paths_rows(system_name, profile, scaling):
    """With and without --top: the brief rows' CSV is the one of the points the per-point
    path builds (a compute conversion per per-GPU batch included)."""
    from oracle.render.predict import select_top
    from oracle.render.records import to_csv
    from oracle.services.project import project

    flag = {"--batch": "batch", "--batch-per-gpu": "batch_per_gpu"}[scaling[0]]
    points, _, _ = project("resnet50", system_name, profile, "1..48,96,4000", **{flag: float(scaling[1])})
    for top in (None, 2):
        args = ("predict", "-m", "resnet50", "-s", system_name, "-p", profile, "--gpus", "1..48,96,4000", *scaling)
        r = run_cli(*args, "-f", "csv", *(("--top", str(top)) if top else ()))
        assert r.code == 0, r.err
        assert r.out == to_csv(select_top(points, top)), (top, system_name)


def _search_grid(p: int, dims: int) -> tuple[int, ...]:
    """layers/geometry.balanced_grid's search: every non-increasing factorization, the one
    with the smallest largest factor (then the largest smallest)."""
    from oracle.compute.layers.geometry import divisors

    found = []

    def rec(rest, k, cap, acc):
        if k == 1:
            if rest <= cap:
                found.append(acc + (rest,))
            return
        for f in divisors(rest):
            if f <= cap:
                rec(rest // f, k - 1, f, acc + (f,))

    rec(p, dims, p, ())
    return min(found, key=lambda g: (max(g), -min(g)))


def test_two_dimensional_grids_are_the_searchs():
    from oracle.compute.layers.geometry import balanced_grid

    assert [balanced_grid.__wrapped__(p, 2) for p in range(1, 5001)] == [_search_grid(p, 2) for p in range(1, 5001)]
    assert balanced_grid(8, 2) == (4, 2) and balanced_grid(97, 2) == (97, 1)


def test_config_arrays_list_the_hybrids_configurations_in_order():
    from oracle.compute.strategies import REGISTRY

    counts = np.array([1, 2, 3, 4, 12, 36, 97, 360, 1024, 2310, 4095], dtype=np.int64)
    for name in ("data+filter", "data+spatial"):
        p, p1, p2, B = run.config_arrays(name, counts, 2.0 * counts, None)
        want = [(c.gpus, c.p1, c.p2, c.batch) for g in counts.tolist()
                for c in REGISTRY[name].configurations(None, g, 2.0 * g)]  # fmt: skip
        assert list(zip(p.tolist(), p1.tolist(), p2.tolist(), B.tolist())) == want


def test_a_brief_rows_line_is_the_writers_after_any_case_label():
    m = load_model("resnet50")
    ctx = Context(m, load_system("abci"), times_for(m), Options())
    (c,) = run.columns(ctx, [2, 8, 5000], ["data"], True, None, 64.0, None)
    rows = np.arange(c.size)
    points = evaluate_all(ctx, [_config(c, r) for r in rows.tolist()])
    for label in ("plain", "a, b", 'say "x"', "=1+1", "two\nlines", ""):
        prefix = (label, "cases[0]")
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows([[csv_cell(x) for x in prefix] + csv_cells(pt) for pt in points])
        assert csv_lines(brief_rows(ctx, c, rows), prefix) == buf.getvalue()



def test_ranking_runs_of_counts_at_once_is_ranking_each_count():
    """compute/sweep.rank_runs (one stable sort) orders and ranks as rank does per GPU
    count: feasible by time, then the infeasible, ties (equal totals, NaN totals) in the
    same order."""
    import random
    from itertools import groupby

    from oracle.compute.sweep import configurations, rank, rank_runs

    m = load_model("resnet50")
    ctx = Context(m, load_system("abci"), times_for(m), Options())
    configs = [cfg for p in (1, 2, 6, 12, 300, 5000) for cfg in configurations(ctx, p, 64.0 * p, names(), False)]
    points = [pt.with_rank(None) for pt in evaluate_all(ctx, configs)]
    points += [pt for pt in points if pt.gpus in (12, 5000)]  # equal totals
    assert any(not pt.feasible for pt in points) and any(np.isnan(pt.total_s) for pt in points)
    shuffled = sorted(random.Random(29).sample(points, len(points)), key=lambda pt: pt.gpus)  # runs, any order

    def seen(pts):
        return [(pt.gpus, pt.strategy, pt.p1, pt.p2, repr(pt.total_s), pt.rank) for pt in pts]

    want = [pt for _, group in groupby(shuffled, key=lambda pt: pt.gpus) for pt in rank(list(group))]
    assert seen(rank_runs(shuffled)) == seen(want)
    assert len({pt.rank for pt in want}) > 3


@given(st.lists(st.one_of(st.none(), st.floats(), st.sampled_from([0.0, -0.0, 1e16, 1e-05, 5.0])), max_size=40))
def test_a_blocks_float_cells_are_each_values_own(values):
    """render/records: a block's column of floats formatted once per distinct value (bit
    for bit: 0.0 and -0.0 differ) gives each value's cell (repr; empty for None, NaN, inf)."""
    from oracle.render.records import float_columns, _nums

    ((got, twice),) = float_columns([[values, values[::-1]]])
    assert ([twice] * len(values) if isinstance(twice, str) else twice) == _nums(values[::-1])
    assert ([got] * len(values) if isinstance(got, str) else got) == _nums(values)
