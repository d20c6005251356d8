"""Parts of the array cost model (compute/vector, issue 29) against what they stand in
for: the distinct (q, b) pairs against np.unique, the halo's row sums against a 1-D
np.sum per row to the bit, and the links' lines by network level against
network.link per span on every shipped system."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from oracle.compute.network import link
from oracle.compute.vector import net
from oracle.compute.vector.columns import unique_pairs
from oracle.compute.vector.spatial import _row_sums
from oracle.load import load_system

ROOT = Path(__file__).resolve().parent.parent
SYSTEMS = sorted(p.stem for p in (ROOT / "systems").glob("*.yaml"))


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 40), st.sampled_from([0.5, 1.0, 3.0, 32.0, 1e6])), min_size=1, max_size=60))
def test_unique_pairs_is_numpys(entries):
    q = np.array([e[0] for e in entries])
    b = np.array([e[1] for e in entries])
    qs, bs, inv = unique_pairs(q, b)
    pairs, expected_inv = np.unique(np.stack([q.astype(float), b]), axis=1, return_inverse=True)
    assert np.array_equal(qs, pairs[0].astype(np.int64)) and np.array_equal(bs, pairs[1])
    assert np.array_equal(inv, expected_inv.reshape(-1))


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 300), st.integers(0, 2**31 - 1))
def test_row_sums_add_as_one_dimensional_sums(width, seed):
    rng = np.random.default_rng(seed)
    x = rng.random((40, width)) * 10.0 ** rng.integers(-9, 9, (40, width))
    patterns = rng.random((3, width)) < 0.7  # a few patterns of kept entries, one per row
    has = patterns[rng.integers(0, 3, 40)]
    expected = np.array([row[keep].sum() for row, keep in zip(x, has)])
    assert np.array_equal(_row_sums(x, has), expected)


def test_lines_by_level_are_each_spans_link():
    for name in SYSTEMS:
        system = load_system(name)
        if not net.supported(type("Ctx", (), {"system": system})()):
            continue
        top = max(level.max_gpus for level in system.network)
        spans = np.arange(1, 2 * top + 2)
        for purpose in ("gradient_allreduce", "layer_allgather", "halo"):
            got = net.lines(system, spans, purpose)
            for i, span in enumerate(spans.tolist()):
                own = link(system, span, purpose).lines()
                kept = [(a[i], b[i]) for a, b, has in got if has[i]]
                assert kept == list(own), (name, purpose, span)


def _context(model_name: str, system_name: str):
    from oracle.compute.context import Context, Options
    from oracle.load import load_model
    from oracle.model import LayerTimes

    m = load_model(model_name)
    fw = np.random.default_rng(3).lognormal(-9, 1.5, len(m.layers))
    return Context(m, load_system(system_name), tuple(LayerTimes(float(f), 2 * float(f), f / 10) for f in fw), Options())


@settings(max_examples=10, deadline=None)
@given(st.sampled_from(["resnet152", "resnet50", "inception_v3", "vgg16"]), st.sampled_from(SYSTEMS),
       st.lists(st.integers(1, 5000), min_size=1, max_size=40))  # fmt: skip
def test_layer_collectives_once_per_distinct_layer_are_the_per_layer_sums(model_name, system_name, qs):
    """vector/kinds.layer_collectives evaluates each distinct split layer once: its sums
    equal those of every layer evaluated, to the bit (the spread rows summed in C order)."""
    from oracle.compute.vector import collectives as coll
    from oracle.compute.vector.kinds import _collectives_block, layer_collectives

    ctx = _context(model_name, system_name)
    q = np.array(sorted(set(qs)))
    b = 32.0 * q
    for name in ("filter", "channel"):
        s = ctx.split(name)
        pattern = ctx.system.implementation.layer_backward
        kind = "allgather" if pattern == "reduce_scatter" else "allreduce"
        back = None if pattern == "none" else coll.prepare(ctx, kind, q, 1.0, "layer_allreduce")
        ag = coll.prepare(ctx, "allgather", q, 1.0, "layer_allgather")
        full = _collectives_block(ctx, s.coll_y, s.coll_groups, q, b, ag, back).sum(axis=1)
        assert np.array_equal(layer_collectives(ctx, s, q, b), np.where(q > 1, full, 0.0), equal_nan=True)


@settings(max_examples=10, deadline=None)
@given(st.sampled_from(["resnet152", "inception_v3", "cosmoflow", "unet3d"]), st.sampled_from(SYSTEMS),
       st.lists(st.integers(1, 5000), min_size=1, max_size=40))  # fmt: skip
def test_grids_and_halos_once_per_distinct_layer_are_every_layers(model_name, system_name, qs):
    """vector/spatial: the grids of all group sizes at once are spatial.spatial_grid's,
    and the halos computed once per distinct split layer are those of every layer (the
    same bits, their sums over the layers too)."""
    from oracle.compute.strategies.spatial import halo_layers, spatial_grid
    from oracle.compute.vector.spatial import _distinct_layers, _grid_halos, _grids, _layer_halos

    ctx = _context(model_name, system_name)
    gq = np.array(sorted(set(qs)))
    grids = _grids(ctx, gq)
    assert np.array_equal(grids, np.array([spatial_grid(ctx, int(x)) for x in gq.tolist()], dtype=float))
    h = halo_layers(ctx)
    g = _grid_halos(h, grids)
    hx, hdy, bad = _layer_halos(h, grids)
    layer = _distinct_layers(h)[1]
    assert np.array_equal(g["hx"].take(layer, axis=1), hx) and np.array_equal(g["hdy"].take(layer, axis=1), hdy)
    assert np.array_equal(g["bad"], bad)
    assert np.array_equal(g["halo_x"], hx.sum(axis=1)) and np.array_equal(g["has"], (hx + hdy) > 0)
