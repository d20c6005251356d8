"""The texts of ``oracle sweep --all``'s rows worded once for many rows (issue 29: 10^6
rows): a strategy's own limit reasons once per the Config fields it declares
(Strategy.limit_fields) and per context across runs of GPU counts
(compute/vector/rows._Texts); the CSV cells of a whole column at once
(textsafe.csv_texts, render/records._quoted_texts, records.float_columns over the
blocks of a run); spatial_violations by bisection. Each gives every row its own text."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from test_vector import times_for

from oracle.compute.context import Context, Options
from oracle.compute.strategies import REGISTRY, names
from oracle.compute.strategies.base import Config
from oracle.compute.strategies.spatial import halo_layers, spatial_violations
from oracle.compute.sweep import evaluate_all
from oracle.compute.vector import run
from oracle.compute.vector.rows import brief_rows
from oracle.load import load_model, load_system
from oracle.render.records import float_columns, _nums, _quoted, _quoted_texts
from oracle.textsafe import csv_cell, csv_texts


def _context(model: str = "resnet50", system: str = "abci") -> Context:
    m = load_model(model)
    return Context(m, load_system(system), times_for(m), Options())


def test_a_limit_reason_reads_only_the_fields_its_strategy_declares():
    """Configurations that agree on the fields a strategy declares for a limit code get
    one reason for it (rows/_Texts words it once for them): a declaration missing a field
    the reason reads, or a code without one, fails."""
    ctx = _context()
    grid = itertools.product((1, 2, 3, 64, 100, 5000), (1, 2, 65, 4096), (1, 2, 65, 100, 4096),
                             (1.0, 16.0, 64.0, 1e5), (None, 4, 10**6))  # fmt: skip
    configs = list(grid)
    for name, strategy in REGISTRY.items():
        seen: dict = {}
        shared = 0
        for gpus, p1, p2, batch, segments in configs:
            for lim in strategy.limits(ctx, Config(name, gpus, p1, p2, batch, segments)):
                assert lim.code in strategy.limit_fields, (name, lim.code)
                key = (lim.code, *((gpus, p1, p2, batch, segments)[("gpus", "p1", "p2", "batch", "segments").index(f)]
                                   for f in strategy.limit_fields[lim.code]))  # fmt: skip
                shared += key in seen
                assert seen.setdefault(key, lim.reason) == lim.reason, (name, key)
        assert shared > 0, name  # configurations did share the declared fields


def test_reasons_worded_for_one_run_of_counts_serve_the_next_run():
    """The reasons a context has worded (rows._worded) give the next run of counts its
    rows' own reasons: filter and channel (both by GPU count), a hybrid by p2."""
    ctx = _context()
    for counts in ([2, 64, 100, 5000], [64, 100, 128, 5000, 6000]):
        for c in run.columns(ctx, counts, names(), True, None, 64.0, None):
            if c.brief_rows is None:
                continue
            rows = np.flatnonzero(c.brief_rows)
            got = [row.block.values["limits"][row.i] for row in brief_rows(ctx, c, rows)]
            configs = [Config(c.strategy, int(c.gpus[r]), int(c.p1[r]), int(c.p2[r]), float(c.batch[r]),
                              int(c.segments[r]) if c.segments is not None and c.segments[r] else None)
                       for r in rows.tolist()]  # fmt: skip
            want = [tuple(pt.limits) for pt in evaluate_all(ctx, configs)]  # codes and reasons
            assert got == want, (counts, c.strategy)
            assert any(got), c.strategy


TEXT = st.text(alphabet=st.sampled_from(["a", " ", ";", "=", "-", "+", "@", "1", ".", "e", "\x00", "\x1b", "\x85",
                                         "\n", "\r", "\t", ",", '"', "é", "→"]), max_size=8)  # fmt: skip


@given(st.lists(TEXT, max_size=6))
def test_a_columns_csv_texts_are_each_texts_csv_cell(texts):
    assert csv_texts(texts) == [csv_cell(t) for t in texts]


@given(st.lists(TEXT, max_size=6))
def test_a_columns_quoted_texts_are_each_texts_quoted(texts):
    assert _quoted_texts(texts) == [_quoted(t) for t in texts]


FLOATS = st.lists(st.one_of(st.none(), st.floats(), st.sampled_from([0.0, -0.0, 1e16, 1e-05, 5.0])), max_size=30)


@given(FLOATS, FLOATS, FLOATS)
def test_float_cells_of_a_runs_blocks_are_each_blocks_own(a, b, c):
    """records.float_columns formats the distinct values of several blocks (of their
    own sizes; a block's columns one size) at once."""
    want = [[a, a[::-1]], [b], [c, c[::-1], c]]
    got = float_columns(want)
    for block, columns in zip(got, want):
        assert len(block) == len(columns)
        for cells, values in zip(block, columns):
            assert ([cells] * len(values) if isinstance(cells, str) else cells) == _nums(values)


def test_spatial_violations_name_the_first_layer_the_grid_splits_too_finely():
    """The first split layer with an output extent below the grid's factor in that
    dimension (any dimension), as numpy finds it, for 2-D and 3-D models."""
    for model, factors in (("resnet50", range(1, 240, 3)), ("unet3d", range(1, 200, 13))):
        ctx = _context(model)
        h = halo_layers(ctx)
        for grid in itertools.product(factors, repeat=ctx.model.spatial_dims):
            bad = np.flatnonzero((h["Y"] < np.array(grid, dtype=float)).any(axis=1))
            got = spatial_violations(ctx, grid)
            if bad.size == 0:
                assert got == [], grid
                continue
            first = int(bad[0])
            shape = "x".join(str(int(v)) for v in h["Y"][first])
            assert got == [f"spatial split {'x'.join(map(str, grid))} exceeds the {shape} output of"
                           f" {ctx.names[int(h['index'][first])]}"], grid  # fmt: skip
