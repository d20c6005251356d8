"""Compute efficiency of split layers (SPEC §4.4; ParaDL Fig. 8): Amdahl fraction and a
fixed overhead per split layer, as system-file options."""

from __future__ import annotations

from pathlib import Path

import pytest

from oracle import api
from oracle.compute.binding import bind_profile
from oracle.compute.context import Context, Options
from oracle.compute.layerwise import layerwise
from oracle.load import load_model, load_profile, load_system

REPO = Path(__file__).resolve().parents[1]


def _system(tmp_path, f=0.0, o=0.0) -> Path:
    text = (REPO / "systems" / "abci.yaml").read_text()
    path = tmp_path / f"s-{f}-{o}.yaml"
    path.write_text(text + f"implementation: {{split_serial_fraction: {f}, split_overhead_s: {o}}}\n")
    return path


def _filter(system, p=8, strategy="filter", **kw):
    return api.predict("resnet50", system, "resnet50_v100", gpus=[p], strategies=strategy, batch=64, compute_scaling="linear", **kw)


def test_defaults_keep_spec(tmp_path):
    (a,) = _filter("abci")
    (b,) = _filter(_system(tmp_path))
    assert a.breakdown.forward_backward_s == b.breakdown.forward_backward_s


def test_amdahl_fraction_and_overhead_by_hand(tmp_path):
    m = load_model("resnet50")
    ctx = Context(m, load_system("abci"), bind_profile(m, load_profile("resnet50_v100")), Options())
    s = ctx.split("filter")
    D, B, p, f, o = 1_281_167, 64, 8, 0.25, 1e-4
    I = D / B
    (pt,) = _filter(_system(tmp_path, f, o), p)
    n_split = int(s.mask.sum())  # conv and fc layers
    expected = D * s.fb_s * (f + (1 - f) / p) + I * n_split * o + D * s.fb_r
    assert pt.breakdown.forward_backward_s == pytest.approx(expected, rel=1e-12)
    # a split layer that does not speed up at all (f = 1) costs as much as unsplit
    (slow,) = _filter(_system(tmp_path, 1.0, 0.0), p)
    assert slow.breakdown.forward_backward_s == pytest.approx(D * ctx.sum_fb, rel=1e-12)


def test_hybrids_split_only_the_model_part(tmp_path):
    kw = dict(p2=4)
    (a,) = _filter(_system(tmp_path, 0.5), 16, "data+filter", **kw)
    (b,) = _filter("abci", 16, "data+filter", **kw)
    m = load_model("resnet50")
    ctx = Context(m, load_system("abci"), bind_profile(m, load_profile("resnet50_v100")), Options())
    s = ctx.split("filter")
    D = 1_281_167
    # the D/p1 samples of a group are split p2 = 4 ways: (0.5 + 0.5/4) instead of 1/4
    assert a.breakdown.forward_backward_s - b.breakdown.forward_backward_s == pytest.approx(
        D / 4 * s.fb_s * (0.625 - 0.25), rel=1e-9
    )


def test_uniform_layerwise_equals_the_strategy_with_split_efficiency(tmp_path):
    path = _system(tmp_path, 0.3, 2e-5)
    m = load_model("resnet50")
    s = load_system(path)
    ctx = Context(m, s, bind_profile(m, load_profile("resnet50_v100")), Options())
    for kind, strategy, p1, p2 in (("filter", "filter", 1, 8), ("spatial", "data+spatial", 2, 4)):
        d = layerwise.Dist(kind, p1, p2)
        a = layerwise.evaluate(ctx, 8, 64.0, layerwise.uniform(ctx, d)).point
        (b,) = [q for q in api.predict("resnet50", path, "resnet50_v100", gpus=[8], strategies=strategy,
                                       batch=64, p2=p2, compute_scaling="linear")]  # fmt: skip
        assert a.breakdown.forward_backward_s == pytest.approx(b.breakdown.forward_backward_s, rel=1e-12)
