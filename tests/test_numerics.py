"""Numerical safety (issue 7): projections for 1 to 1,000,000 GPUs and for models of
thousands of layers stay finite, monotone where they should, and huge values are
shown in readable units.

* a sweep over 1..1,048,576 GPUs (and exactly 1,000,000) of a small model and of a
  generated 3,002-layer model on a machine of 4,000,000 GPUs: every number of every
  feasible point finite and >= 0 (their speed: benchmarks/scale.py);
* data parallelism (weak scaling): compute per epoch decreasing with p, memory per GPU
  constant, communication per iteration non-decreasing with p beyond one node (on
  networks whose outer levels are no faster than the inner ones); as property tests on
  random models and systems too;
* units: 1e12 s and 1e18 bytes read as years and petabytes, without 'nan' or 'inf'.
"""

from __future__ import annotations

import json
import math
import re

import pytest
from conftest import run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

GPUS = "1-1048576,1000000"  # every power of two up to 2^20, and a million
EXA = """\
name: Exa
gpu: {model: G, memory_GB: 80, peak_TFLOPS: 100}
gpus_per_node: 4
nodes: 1000000
network:
  - {name: nvlink, max_gpus: 4, alpha_s: 2.0e-6, beta_s_per_byte: 2.0e-12}
  - {name: leaf, max_gpus: 64, alpha_s: 5.0e-6, beta_s_per_byte: 4.0e-11}
  - {name: spine, max_gpus: 4096, alpha_s: 8.0e-6, beta_s_per_byte: 8.0e-11}
  - {name: core, max_gpus: 4000000, alpha_s: 1.5e-5, beta_s_per_byte: 1.6e-10}
"""


def deep_model(n_blocks: int = 1500) -> str:
    """conv/relu pairs on a 32x32 image: 2·n_blocks + 2 layers."""
    lines = ["name: Deep", "input: [3, 32, 32]", "dataset: {name: synthetic, samples: 1000000}", "layers:"]
    for i in range(n_blocks):
        lines.append(f"  - {{name: c{i}, type: conv, filters: 16, kernel: 3, padding: 1}}")
        lines.append(f"  - {{name: r{i}, type: relu}}")
    lines += ["  - {name: flat, type: flatten}", "  - {name: fc, type: fc, outputs: 10}"]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("numerics")
    (d / "exa.yaml").write_text(EXA, encoding="utf-8")
    (d / "deep.yaml").write_text(deep_model(), encoding="utf-8")
    (d / "deep_profile.yaml").write_text(
        "model: Deep\nmeasured_samples_per_gpu: 32\ntotal: {fw_bw_per_sample_s: 0.05, wu_per_iteration_s: 0.01}\n",
        encoding="utf-8",
    )
    return {
        "small": ("alexnet", str(d / "exa.yaml"), "alexnet_v100"),
        "deep": (str(d / "deep.yaml"), str(d / "exa.yaml"), str(d / "deep_profile.yaml")),
    }


def _sweep_json(m, s, p, *extra) -> tuple[list[dict], None]:
    # a dataset large enough for a million GPUs' batches (B > D is a limit, issue 13)
    r = run_cli("predict", "-m", m, "-s", s, "-p", p, "--gpus", GPUS, "-f", "json", "--samples", "1000000000000", *extra)
    assert r.code == 0, r.err

    def reject(name):
        raise AssertionError(f"JSON holds {name}")

    return json.loads(r.out, parse_constant=reject), None


def _numbers(node):
    if isinstance(node, bool) or node is None or isinstance(node, str):
        return
    if isinstance(node, (int, float)):
        yield node
    elif isinstance(node, dict):
        for v in node.values():
            yield from _numbers(v)
    elif isinstance(node, list):
        for v in node:
            yield from _numbers(v)


def _check_finite(points: list[dict]) -> None:
    for p in points:
        for v in _numbers(p):
            assert math.isfinite(v) and v >= 0, (p["strategy"], p["gpus"], v)
        if p["feasible"]:
            for key in ("compute_s", "communication_s", "total_s", "iteration_s", "memory_bytes"):
                assert p[key] is not None, (p["strategy"], p["gpus"], key)


def _data(points: list[dict]) -> list[dict]:
    out = sorted((p for p in points if p["strategy"] == "data" and p["feasible"]), key=lambda p: p["gpus"])
    assert len({p["gpus"] for p in out}) == len(out)
    return out


def _check_data_parallel(points: list[dict], gpus_per_node: int) -> None:
    data = _data(points)
    counts = [p["gpus"] for p in data]
    assert 2 in counts and 1048576 in counts and 1000000 in counts, counts  # 1 GPU is 'serial'
    for a, b in zip(data, data[1:]):
        # weak scaling: iterations per epoch fall as 1/p, the work per iteration is the same
        assert b["compute_s"] < a["compute_s"], (a["gpus"], b["gpus"])
        assert math.isclose(b["memory_bytes"], a["memory_bytes"], rel_tol=1e-12), (a["gpus"], b["gpus"])
        if a["gpus"] >= gpus_per_node:
            per_it_a = a["communication_s"] / a["iterations_per_epoch"]
            per_it_b = b["communication_s"] / b["iterations_per_epoch"]
            assert per_it_b >= per_it_a * (1 - 1e-12), (a["gpus"], b["gpus"], per_it_a, per_it_b)


@pytest.mark.parametrize("which", ["small", "deep"])
def test_million_gpu_sweep_is_finite_and_monotone(inputs, which):
    m, s, p = inputs[which]
    run_cli("predict", "-m", m, "-s", s, "-p", p, "--gpus", "4", "-f", "json")  # warm imports
    points, _ = _sweep_json(m, s, p)  # its speed: benchmarks/scale.py (not a timed test)
    assert {pt["gpus"] for pt in points} == {1 << k for k in range(21)} | {1000000}
    _check_finite(points)
    _check_data_parallel(points, gpus_per_node=4)
    assert any(pt["feasible"] and pt["gpus"] == 1000000 for pt in points)


def test_million_gpu_sweep_strong_scaling_communication_grows(inputs):
    """Strong scaling (B fixed at 2^20): per-epoch data-parallel communication never
    falls when p grows beyond one node; compute falls."""
    m, s, p = inputs["small"]
    points, _ = _sweep_json(m, s, p, "--batch", str(1 << 20))
    _check_finite(points)
    data = _data(points)
    assert data[-1]["gpus"] == 1048576
    for a, b in zip(data, data[1:]):
        assert b["compute_s"] < a["compute_s"]
        if a["gpus"] >= 4:
            assert b["communication_s"] >= a["communication_s"] * (1 - 1e-12), (a["gpus"], b["gpus"])


def test_million_gpu_table_has_no_nan_or_inf(inputs):
    m, s, p = inputs["deep"]
    r = run_cli("predict", "-m", m, "-s", s, "-p", p, "--gpus", "1000000,1048576", "--width", "200")
    assert r.code == 0, r.err
    words = r.out.lower().replace("infeasible", "").split()
    assert "nan" not in words and "inf" not in words  # 'n/a' only for points that cannot be computed
    for line in r.out.splitlines():
        if " best" in line:
            assert "n/a" not in line, line


def test_deep_model_loads_and_shows(inputs):
    m, _, _ = inputs["deep"]
    r = run_cli("show", "model", m, "-f", "json")  # its speed: benchmarks/scale.py
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert len(doc["layers"]) == 3002


# --------------------------------------------------------------------------------------
# the same properties on random models and systems
# --------------------------------------------------------------------------------------

from test_properties import model_docs, profile_docs  # noqa: E402


@st.composite
def monotone_systems(draw) -> dict:
    """Levels whose latency and time per byte never fall going outwards."""
    gpn = draw(st.sampled_from([1, 2, 4, 8]))
    inner = [gpn] if gpn > 1 else []  # the level inside a node
    outer = sorted(draw(st.sets(st.integers(gpn + 1, 1 << 20), max_size=3)))
    spans = [*inner, *outer, 1 << 21]  # strictly increasing; the last covers 2^21 GPUs
    alpha = draw(st.floats(1e-7, 1e-5))
    beta = draw(st.floats(1e-12, 1e-10))
    levels = []
    for i, span in enumerate(spans):
        levels.append({"name": f"l{i}", "max_gpus": span, "alpha_s": alpha, "beta_s_per_byte": beta})
        alpha *= draw(st.floats(1, 4))
        beta *= draw(st.floats(1, 4))
    doc = {"name": "Mono", "gpu": {"model": "G", "memory_GB": 80}, "gpus_per_node": gpn,
           "nodes": (1 << 21) // gpn, "network": levels}  # fmt: skip
    if draw(st.booleans()):
        doc["contention_factor"] = draw(st.floats(1, 4))
    return doc


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_property_data_parallel_weak_scaling_up_to_a_million(data):
    from oracle.compute.binding import bind_profile
    from oracle.compute.context import Options
    from oracle.compute.sweep import sweep
    from oracle.load.model import parse_model
    from oracle.load.profile import parse_profile
    from oracle.load.system import parse_system
    from oracle.render.records import point_to_dict

    mdoc = data.draw(model_docs())
    mdoc["dataset"]["samples"] = data.draw(st.integers(1, 10**9))
    pdoc = data.draw(profile_docs(mdoc))
    sdoc = data.draw(monotone_systems())
    m = parse_model(mdoc, "m.yaml")
    s = parse_system(sdoc, "s.yaml")
    times = bind_profile(m, parse_profile(pdoc, "p.yaml"))
    counts = sorted({1 << k for k in range(21)} | {1000000})
    b = float(data.draw(st.integers(1, 64)))
    points = [point_to_dict(p) for p in sweep(m, s, times, counts, "data", batch_per_gpu=b, options=Options())]
    _check_finite(points)
    fb = [p for p in _data(points)]
    for a, c in zip(fb, fb[1:]):
        assert c["compute_s"] <= a["compute_s"] * (1 + 1e-12), (a["gpus"], c["gpus"])
        if a["gpus"] > 1:  # on one GPU no gradient buckets (DDP) are kept
            assert math.isclose(c["memory_bytes"], a["memory_bytes"], rel_tol=1e-12)
        if a["gpus"] >= sdoc["gpus_per_node"]:
            ia, ic = a["communication_s"] / a["iterations_per_epoch"], c["communication_s"] / c["iterations_per_epoch"]
            assert ic >= ia * (1 - 1e-12), (a["gpus"], c["gpus"], ia, ic)


# --------------------------------------------------------------------------------------
# readable units for huge values
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, text",
    [(1e12, "31,688 y"), (1e15, "3.17e+07 y"), (1e300, "3.17e+292 y"), (3.2e7, "1.01 y"), (90000, "1.04 d")],
)
def test_seconds_in_readable_units(value, text):
    from oracle.units import fmt_seconds

    assert fmt_seconds(value) == text


@pytest.mark.parametrize(
    "value, text",
    [(1e18, "1,000 PB"), (2.5e21, "2.50e+06 PB"), (1.33e12, "1.33 TB"), (1e300, "1.00e+285 PB")],
)
def test_bytes_in_readable_units(value, text):
    from oracle.units import fmt_bytes

    assert fmt_bytes(value) == text


def test_units_never_crash_on_odd_numbers():
    from oracle import units

    for f in (units.fmt_seconds, units.fmt_bytes, units.fmt_gb, units.fmt_si, units.fmt_rate):
        for v in (None, 0, -1.0, float("nan"), float("inf"), float("-inf"), 10**400, 5e-324):
            assert isinstance(f(v), str), (f.__name__, v)


def test_huge_values_in_the_table(tmp_path):
    """A slow network (1 kB/s) and huge activations: the table says years and PB."""
    system = EXA.replace("beta_s_per_byte: 1.6e-10", "bandwidth_GB_per_s: 1.0e-6").replace(
        "beta_s_per_byte: 8.0e-11", "bandwidth_GB_per_s: 1.0e-6"
    )
    (tmp_path / "slow.yaml").write_text(system, encoding="utf-8")
    model = (
        "name: Huge\ninput: [3, 50000, 50000]\ndataset: {samples: 1000000}\nlayers:\n"
        "  - {name: c1, type: conv, filters: 256, kernel: 3, padding: 1}\n"
        "  - {name: g, type: globalavgpool}\n  - {name: f, type: flatten}\n  - {name: fc, type: fc, outputs: 10}\n"
    )
    (tmp_path / "huge.yaml").write_text(model, encoding="utf-8")
    (tmp_path / "huge_p.yaml").write_text("model: Huge\ntotal: {fw_bw_per_sample_s: 10}\n", encoding="utf-8")
    r = run_cli("predict", "-m", tmp_path / "huge.yaml", "-s", tmp_path / "slow.yaml", "-p", tmp_path / "huge_p.yaml",
                "--gpus", "4096,1000000", "--batch-per-gpu", "64", "--width", "220")  # fmt: skip
    assert r.code == 0, r.err
    assert re.search(r"\d[\d,.]*(e\+\d+)? y\b", r.out), r.out  # e.g. 659,356 y, 2.52e+06 y
    assert re.search(r"\d[\d,.]* PB\b", r.out), r.out  # e.g. 1,343 PB
    words = r.out.lower().replace("infeasible", "").split()
    assert "nan" not in words and "inf" not in words
