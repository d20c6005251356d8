"""Operations by purpose and implementation patterns (issue 14, items 1-2): each
collective's transport, algorithm and time factor set by its purpose; the filter/channel
backward collective, strip decomposition, the spatial split point and data+filter's
leader all-reduce — each checked by hand against the formulas it replaces."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from oracle.compute.binding import bind_profile
from oracle.compute.context import Context, Options
from oracle.compute.network import allgather_algorithm, allreduce_algorithm, group_contiguous, link
from oracle.compute.strategies.spatial import halo_elements
from oracle.compute.sweep import sweep
from oracle.load import load_model, load_profile
from oracle.load.system import parse_system

ROOT = Path(__file__).resolve().parent.parent
BASE = yaml.safe_load((ROOT / "systems" / "abci.yaml").read_text())


def system(**sections):
    doc = {k: v for k, v in BASE.items()}
    doc.update(sections)
    return parse_system(doc, "s.yaml")


def point(s, strategy, gpus, batch, model="resnet50", profile="resnet50_v100", p2=None, **options):
    m = load_model(model)
    times = bind_profile(m, load_profile(profile))
    pts = sweep(m, s, times, [gpus], strategy, batch=batch, p2=p2, options=Options(**options))
    assert len(pts) == 1, pts
    return pts[0]


def test_gradient_factor_scales_only_the_gradient_exchange():
    plain = point(system(), "data", 16, 512.0)
    slow = point(system(operations={"gradient_allreduce": {"factor": 2.0}}), "data", 16, 512.0)
    assert slow.breakdown.gradient_exchange_s == pytest.approx(2 * plain.breakdown.gradient_exchange_s, rel=1e-12)
    assert slow.compute_s == plain.compute_s
    f_plain = point(system(), "filter", 4, 64.0)
    f_slow = point(system(operations={"gradient_allreduce": {"factor": 2.0}}), "filter", 4, 64.0)
    assert f_slow.breakdown.layer_collectives_s == f_plain.breakdown.layer_collectives_s


def test_a_purpose_wins_over_its_primitive():
    s = system(operations={"allreduce": {"beta_scale": 3.0}, "layer_allreduce": {"beta_scale": 5.0}})
    base = link(system(), 4, "allreduce")
    assert link(s, 4, "gradient_allreduce").beta_s_per_byte == pytest.approx(3 * base.beta_s_per_byte)
    assert link(s, 4, "layer_allreduce").beta_s_per_byte == pytest.approx(5 * base.beta_s_per_byte)
    assert link(s, 4, "layer_allgather").beta_s_per_byte == base.beta_s_per_byte


def test_an_algorithm_per_purpose():
    s = system(operations={"gradient_allreduce": {"algorithm": "tree"}})
    grp = group_contiguous(64, 4)
    tree = allreduce_algorithm(system(), grp, 1e8, "tree")[0]
    assert allreduce_algorithm(s, grp, 1e8, "ring", purpose="gradient_allreduce") == (pytest.approx(tree), "tree")
    assert allreduce_algorithm(s, grp, 1e8, "ring", purpose="layer_allreduce")[1] == "ring"


def test_pipeline_factor():
    plain = point(system(), "pipeline", 8, 256.0)
    slow = point(system(operations={"pipeline_p2p": {"factor": 3.0}}), "pipeline", 8, 256.0)
    assert slow.breakdown.pipeline_p2p_s == pytest.approx(3 * plain.breakdown.pipeline_p2p_s, rel=1e-12)


@pytest.mark.parametrize("pattern", ["allreduce", "reduce_scatter", "allreduce_slice", "none"])
def test_filter_backward_patterns_by_hand(pattern):
    """After each split layer but the last: AG(q, m/q) forward, then the backward
    collective of the input gradients (m = δ·b·y_l): AR(q, m) (SPEC §4), the ring
    reduce-scatter (q-1)(α + m/q·β), AR(q, m/q), or nothing."""
    s = system(implementation={"layer_backward": pattern})
    q, B = 4, 64.0
    pt = point(s, "filter", q, B)
    m_model = load_model("resnet50")
    ctx = Context(m_model, s, bind_profile(m_model, load_profile("resnet50_v100")), Options())
    grp = group_contiguous(q, 4)
    lk = link(s, grp.span, "allreduce", q)
    total = 0.0
    for y in ctx.split("filter").coll_y:
        m = 4 * B * y
        total += allgather_algorithm(s, grp, m / q)[0]
        total += {
            "allreduce": 2 * (q - 1) * (lk.alpha_s + m / q * lk.beta_s_per_byte),
            "reduce_scatter": (q - 1) * (lk.alpha_s + m / q * lk.beta_s_per_byte),
            "allreduce_slice": 2 * (q - 1) * (lk.alpha_s + m / q / q * lk.beta_s_per_byte),
            "none": 0.0,
        }[pattern]
    assert pt.breakdown.layer_collectives_s == pytest.approx(ctx.D / B * total, rel=1e-9)


def test_cheaper_backward_patterns_never_cost_more():
    t = {p: point(system(implementation={"layer_backward": p}), "filter", 8, 128.0).communication_s
         for p in ("allreduce", "reduce_scatter", "allreduce_slice", "none")}  # fmt: skip
    assert t["none"] <= t["allreduce_slice"] <= t["reduce_scatter"] <= t["allreduce"]


def test_strips_split_the_first_dimension_only():
    s = system(implementation={"spatial_decomposition": "strips"})
    pt = point(s, "spatial", 8, 64.0, model="cosmoflow256", profile="cosmoflow256_v100")
    assert pt.detail("grid") == (8, 1, 1)
    grid = point(system(), "spatial", 8, 64.0, model="cosmoflow256", profile="cosmoflow256_v100")
    assert grid.detail("grid") == (2, 2, 2)
    # a strip's halo is a whole face of the volume: more bytes than a cube's
    assert pt.breakdown.halo_s > grid.breakdown.halo_s


def test_data_filter_leader_allreduce():
    s = system(implementation={"data_filter_allreduce": "leader"})
    flat = point(system(), "data+filter", 32, 512.0, p2=2)
    lead = point(s, "data+filter", 32, 512.0, p2=2)
    assert lead.breakdown.layer_collectives_s == flat.breakdown.layer_collectives_s
    assert lead.breakdown.gradient_exchange_s != flat.breakdown.gradient_exchange_s


def test_spatial_split_point():
    m = load_model("cosmoflow256")
    times = bind_profile(m, load_profile("cosmoflow256_v100"))
    s = system()
    default = Context(m, s, times, Options())
    last = default.names[int(default.split("spatial").last)]
    same = Context(m, s, times, Options(spatial_split_after=last))
    assert (same.split("spatial").mask == default.split("spatial").mask).all()
    early = Context(m, s, times, Options(spatial_split_after="pool2"))
    assert early.split("spatial").last == m.index["pool2"] < default.split("spatial").last
    assert early.split("spatial").mask.sum() == m.index["pool2"] + 1


@pytest.mark.parametrize(
    "section,words",
    [
        ({"operations": {"gradient_allreduces": {"factor": 2}}}, ["gradient_allreduces", "gradient_allreduce"]),
        ({"operations": {"halo": {"factor": 0}}}, ["operations.halo.factor", "> 0"]),
        ({"operations": {"layer_allgather": {"algorithm": "butterfly"}}}, ["algorithm", "butterfly"]),
        ({"implementation": {"layer_backward": "scatter"}}, ["layer_backward", "reduce_scatter"]),
        ({"implementation": {"spatial_decomposition": "cubes"}}, ["spatial_decomposition", "strips"]),
    ],
)
def test_bad_operation_and_implementation_entries(run, tmp_path, section, words):
    doc = {**BASE, **section}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(doc))
    r = run("show", "system", str(tmp_path / "s.yaml"))
    assert r.code == 2 and "Traceback" not in r.err
    for w in words:
        assert w in r.err, (w, r.err)


def test_spatial_split_after_errors(run):
    args = ("predict", "-m", "cosmoflow", "-s", "abci", "-p", "cosmoflow_v100", "--gpus", "16")
    r = run(*args, "--spatial-split-after", "fc1")
    assert r.code == 2 and "after the last layer with a spatial output" in r.err
    r = run(*args, "--spatial-split-after", "pool22")
    assert r.code == 2 and "did you mean 'pool2'" in r.err
    assert math.isfinite(point(system(), "spatial", 16, 64.0, model="cosmoflow", profile="cosmoflow_v100",
                               spatial_split_after="pool2").total_s)  # fmt: skip


def test_halo_chain_by_hand():
    """A serialized chain over the largest split factor f: f-1 hops of the concurrent
    exchange plus the synchronization, for each layer's forward and backward halo."""
    model = dict(model="cosmoflow256", profile="cosmoflow256_v100")
    conc = point(system(), "spatial", 8, 64.0, **model)
    chain = point(system(implementation={"halo_chain": True, "halo_sync_s": 1e-4}), "spatial", 8, 64.0, **model)
    grid = conc.detail("grid")
    m = load_model("cosmoflow256")
    ctx = Context(m, system(), bind_profile(m, load_profile("cosmoflow256_v100")), Options())
    hx, hdy = halo_elements(ctx, grid)
    layers = int(((hx + hdy) > 0).sum())
    I = ctx.D / 64.0
    expected = (max(grid) - 1) * conc.breakdown.halo_s + I * 2 * layers * 1e-4
    assert chain.breakdown.halo_s == pytest.approx(expected, rel=1e-9)


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=25, deadline=None)
@given(sync=st.one_of(st.just(0.0), st.floats(1e-9, 1e-2)), gpus=st.sampled_from([2, 4, 8, 16, 64]), strips=st.booleans())
def test_a_serialized_halo_never_beats_a_concurrent_one(sync, gpus, strips):
    impl = {"spatial_decomposition": "strips" if strips else "grid"}
    model = dict(model="cosmoflow256", profile="cosmoflow256_v100")
    conc = point(system(implementation=impl), "spatial", gpus, 64.0, **model)
    chain = point(system(implementation={**impl, "halo_chain": True, "halo_sync_s": sync}), "spatial", gpus, 64.0,
                  **model)  # fmt: skip
    assert chain.breakdown.halo_s >= conc.breakdown.halo_s * (1 - 1e-12)
