"""Collectives as NCCL runs them (issue 25): the algorithm and protocol per call from the
topology, hand-computed; the log-of-nodes growth; the nccl-tests logs; the interconnect facts
of system files; ParaDL mode unchanged."""

from __future__ import annotations

import math
import textwrap

import numpy as np
import pytest
from conftest import ROOT, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st
from test_robustness import one_error

from oracle.compute.network import allreduce_algorithm, group_contiguous, group_strided
from oracle.load import load_system
from oracle.load.system import parse_system

AI, BI, AO, BO = 2e-6, 1 / 200e9, 10e-6, 1 / 20e9  # inside a node / across nodes (Simple only)


def _system(tmp_path, extra: str = "", gpn: int = 4, levels: str | None = None, collectives="{algorithm: nccl}"):
    levels = levels or f"""
        - {{name: node, max_gpus: {gpn}, alpha_s: {AI}, beta_s_per_byte: {BI}}}
        - {{name: fabric, max_gpus: 65536, alpha_s: {AO}, beta_s_per_byte: {BO}}}"""
    text = textwrap.dedent(f"""
        name: T
        gpu: {{model: x, memory_GB: 80}}
        gpus_per_node: {gpn}
        nodes: 16384
        collectives: {collectives}
        network:""") + textwrap.indent(textwrap.dedent(levels), "  ") + "\n" + textwrap.dedent(extra)  # fmt: skip
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return load_system(path)


def test_ring_and_tree_by_hand(tmp_path):
    """16 GPUs on 4 nodes: ring 2(p-n)α_i + 2(n-1)α_o + 2(p-1)/p·m·max(β); tree 2(g-1)α_i +
    2·log2(n)·α_o + 2/0.92·m·max(β) (tuning.cc; beyond NCCL's tree-correction table at 10 GB)."""
    s = _system(tmp_path)
    g = group_contiguous(16, 4)
    small, large = 8.0, 1e10
    ring = lambda m: 2 * 12 * AI + 2 * 3 * AO + 2 * 15 / 16 * m * BO  # noqa: E731
    tree = lambda m: 2 * 3 * AI + 2 * 2 * AO + 2 / 0.92 * m * BO  # noqa: E731
    t, used = allreduce_algorithm(s, g, small, "nccl")
    assert t == pytest.approx(min(ring(small), tree(small)), rel=1e-12) and used == "nccl tree/Simple"
    t, used = allreduce_algorithm(s, g, large, "nccl")
    assert t == pytest.approx(ring(large), rel=1e-12) and used == "nccl ring/Simple"
    # on one node only intra-node steps: the ring's 2(p-1) of them
    t, used = allreduce_algorithm(s, group_contiguous(4, 4), large, "nccl")
    assert t == pytest.approx(2 * 3 * AI + 2 * 3 / 4 * large * BI, rel=1e-12) and used == "nccl ring/Simple"


def test_allgather_is_nccls_ring_by_hand(tmp_path):
    """NCCL's ring all-gather: p-1 steps, n-1 across the network: (p-n)α_i + (n-1)α_o +
    (p-1)·m_i·max(β_i, β_o), each GPU contributing m_i bytes."""
    from oracle.compute.network import allgather_algorithm

    s = _system(tmp_path)
    t, used = allgather_algorithm(s, group_contiguous(16, 4), 1e6, "nccl")
    assert used == "nccl ring"
    assert t == pytest.approx(12 * AI + 3 * AO + 15 * 1e6 * BO, rel=1e-12)


def test_two_nodes_tree_sends_half_the_bytes(tmp_path):
    """On two nodes the tree's network term is halved (tuning.cc takes the intra-node
    bandwidth for up to two nodes): 2/0.92·m·max(β_i, β_o/2), not the ring's 2(p-1)/p·m·β_o."""
    s = _system(tmp_path)
    m = 1e10
    t, used = allreduce_algorithm(s, group_contiguous(8, 4), m, "nccl")
    assert used == "nccl tree/Simple"
    assert t == pytest.approx(2 * 3 * AI + 2 * 1 * AO + 2 / 0.92 * m * BO / 2, rel=1e-12)


def test_protocol_lines_pick_per_size(tmp_path):
    """A level's LL line (low latency, low bandwidth) wins small messages, Simple large ones."""
    levels = f"""
        - name: node
          max_gpus: 4
          alpha_s: {AI}
          beta_s_per_byte: {BI}
          protocols: [{{name: LL, alpha_s: 1e-7, beta_s_per_byte: 1e-9}}]
        - name: fabric
          max_gpus: 65536
          alpha_s: {AO}
          beta_s_per_byte: {BO}
          protocols: [{{name: LL, alpha_s: 1e-6, beta_s_per_byte: 1e-9}}]"""
    s = _system(tmp_path, levels=levels)
    g = group_contiguous(64, 4)
    t, used = allreduce_algorithm(s, g, 8.0, "nccl")
    assert used == "nccl tree/LL"
    assert t == pytest.approx(2 * 3 * 1e-7 + 2 * 4 * 1e-6 + 2 / (0.92 / 3.8 / 0.5) * 8 * 1e-9, rel=1e-12)
    assert allreduce_algorithm(s, g, 1e9, "nccl")[1].endswith("/Simple")


def test_nvls_and_collnet_where_the_system_offers_them(tmp_path):
    """NVLS on one node: 25 us + 2(p-1)/p·m·β_i/(2e), e = 0.533 on Hopper (480 GB/s of bus bandwidth
    on 8 H100 over NVLink's 450 per direction, NVIDIA/nccl-tests#212); CollNet (SHARP)
    across nodes: 2(α_i + 0.4 us (g-1)) + 2α_o + 2m·max(β) (tuning.cc's algorithm bandwidth, half
    the bus bandwidth) -- constant in the node count."""
    nvls = "interconnect: {nvswitch_generation: 3, nvls: true}\n"
    s = _system(tmp_path, nvls, gpn=8, levels=f"""
        - {{name: node, max_gpus: 8, alpha_s: 1e-5, beta_s_per_byte: {BI}}}
        - {{name: fabric, max_gpus: 65536, alpha_s: {AO}, beta_s_per_byte: {BO}}}""")  # fmt: skip
    m = 1e9
    t, used = allreduce_algorithm(s, group_contiguous(8, 8), m, "nccl")
    assert used == "nccl nvls/Simple"
    assert t == pytest.approx(25e-6 + 2 * 7 / 8 * m * BI / (2 * 0.533), rel=1e-12)
    sharp = "interconnect: {sharp: true}\n"
    s = _system(tmp_path, sharp, collectives="{algorithm: nccl, collnet: true}")
    m = 1e9
    times = {}
    for nodes in (16, 1024):
        t, used = allreduce_algorithm(s, group_contiguous(4 * nodes, 4), m, "collnet")
        assert used == "nccl collnet/Simple"
        times[nodes] = t
    assert times[16] == pytest.approx(2 * (AI + 0.4e-6 * 3) + 2 * AO + 2 * m * BO, rel=1e-12)
    assert times[1024] == pytest.approx(times[16], rel=1e-12)
    # NCCL's own choice: CollNet wins on latency (constant in the nodes) where a tree's grows
    t, used = allreduce_algorithm(s, group_contiguous(4 * 1024, 4), 1e4, "nccl")
    assert used == "nccl collnet/Simple"


def test_a_multi_node_nvlink_domain_is_one_nccl_node(tmp_path):
    """interconnect.nvlink_domain_gpus: 72 GPUs on 18 hosts of 4 (NVL72) reduce as one node."""
    levels = f"""
        - {{name: nvlink, max_gpus: 72, alpha_s: {AI}, beta_s_per_byte: {BI}}}
        - {{name: fabric, max_gpus: 65536, alpha_s: {AO}, beta_s_per_byte: {BO}}}"""
    s = _system(tmp_path, "interconnect: {nvlink_domain_gpus: 72}\n", levels=levels)
    t, used = allreduce_algorithm(s, group_contiguous(72, 4), 1e10, "nccl")
    assert used == "nccl ring/Simple"
    assert t == pytest.approx(2 * 71 * AI + 2 * 71 / 72 * 1e10 * BI, rel=1e-12)


def _plausible_system(gpn, ai, ao, bi, bo, protocols, offers):
    lines = lambda a, b: [{"name": n, "alpha_s": a * f, "bandwidth_GB_per_s": b * k}  # noqa: E731
                          for n, f, k in protocols]  # fmt: skip
    doc = {"name": "P", "gpu": {"model": "x", "memory_GB": 80}, "gpus_per_node": gpn, "nodes": 2**16,
           "collectives": {"algorithm": "nccl", "collnet": offers[1]},
           "interconnect": {"nvswitch_generation": 3 if offers[0] else 0, "nvls": offers[0], "sharp": offers[1]},
           "network": [{"name": "node", "max_gpus": gpn, "alpha_s": ai, "bandwidth_GB_per_s": bi,
                        "protocols": lines(ai, bi)},
                       {"name": "fabric", "max_gpus": gpn * 2**16, "alpha_s": ao, "bandwidth_GB_per_s": bo,
                        "protocols": lines(ao, bo)}]}  # fmt: skip
    return parse_system(doc, "generated.yaml")


@settings(max_examples=60, deadline=None)
@given(
    gpn=st.sampled_from([1, 2, 4, 8]),
    ai=st.floats(0.5e-6, 20e-6), ao=st.floats(1e-6, 100e-6),
    bi=st.floats(50, 1000), bo=st.floats(10, 1000),
    protocols=st.sampled_from([(), (("LL", 0.2, 0.1),), (("LL", 0.2, 0.1), ("LL128", 0.5, 0.9))]),
    offers=st.tuples(st.booleans(), st.booleans()),
    m=st.floats(1.0, 1e8),
)  # fmt: skip
def test_allreduce_time_grows_no_faster_than_log_of_the_nodes(gpn, ai, ao, bi, bo, protocols, offers, m):
    """At a fixed message size, beyond the node count from which NCCL no longer picks a ring
    (its inter-node latency grows with the nodes), the default all-reduce time t(n) on a
    tree-capable fabric satisfies t(n2) <= t(n1)·log2(n2)/log2(n1/2) for n2 > n1 >= 4: it
    grows no faster than the log of the node count.  (A flat ring grows linearly: the old
    default fails this at once.)"""
    s = _plausible_system(gpn, ai, ao, bi, bo, protocols, offers)
    nodes = [2**k for k in range(2, 17)] + [3 * 2**k for k in range(1, 15)]
    nodes.sort()
    runs = [allreduce_algorithm(s, group_contiguous(n * gpn, gpn), m, s.collective_algorithm) for n in nodes]
    rings = [n for n, (_, used) in zip(nodes, runs) if "ring" in used]
    start = max(rings) * 2 if rings else 4
    # beyond some node count: the ring's latency 2(n-1)·α_o overtakes the tree's extra
    # bandwidth term, within the node counts tried for these plausible systems
    assert start <= 2**13, (start, rings)
    after = [(n, t) for n, (t, _) in zip(nodes, runs) if n >= max(start, 4)]
    for i, (n1, t1) in enumerate(after):
        for n2, t2 in after[i + 1:]:
            assert t2 <= t1 * math.log2(n2) / math.log2(n1 / 2) * (1 + 1e-12), (n1, t1, n2, t2)


def test_shipped_superpod_default_grows_with_the_log_of_the_nodes():
    """On dgx-h100-superpod (default: nccl) ResNet-50's fp16 gradients (51 MB) all-reduce in
    about as long on 3,584 GPUs as on 1,024: a tree, not a ring over every GPU (issue 25: the
    flat ring's 2(p-1)α alone was 30 ms per iteration at 3,584 GPUs)."""
    s = load_system("dgx-h100-superpod")
    assert s.collective_algorithm == "nccl"
    m = 25.6e6 * 2
    t = {p: allreduce_algorithm(s, group_contiguous(p, 8), m, s.collective_algorithm) for p in (1024, 3584)}
    assert t[3584][0] <= t[1024][0] * math.log2(448) / math.log2(128 / 2)
    assert t[3584][0] < 1e-3 and "tree" in t[3584][1] or "nvls" in t[3584][1]


def test_strided_groups_count_their_nodes(tmp_path):
    """A hybrid's data group (every p2-th GPU) has one GPU per node: all its steps cross the
    network; a tree over n nodes has no intra-node steps."""
    s = _system(tmp_path)
    g = group_strided(16, 4, 4)  # 16 GPUs, one per node
    t, used = allreduce_algorithm(s, g, 8.0, "nccl")
    assert used == "nccl tree/Simple"
    assert t == pytest.approx(2 * 4 * AO + 2 / 0.92 * 8 * BO, rel=1e-12)


# -- the nccl-tests logs ---------------------------------------------------------------------


def test_one_set_of_lines_fits_abci_at_every_node_count():
    """One set of per-protocol lines for 1 to 32 nodes of ABCI: median |error| <= 10% at
    every node count, and fitted on 1-8 nodes it predicts 16 and 32 nodes within 10%."""
    from oracle.compute.calibration.nccl_fit import fit_lines, predict, samples_of
    from oracle.load.benchlogs import load_benchlog

    logs = sorted((load_benchlog(p) for p in (ROOT / "data" / "nccl-tests" / "abci-v100").glob("*.txt")),
                  key=lambda lg: lg.gpus)  # fmt: skip
    assert [lg.nodes for lg in logs] == [1, 2, 4, 8, 16, 32]
    for fitted_on in (32, 8):
        lines = fit_lines([s for lg in logs if lg.nodes <= fitted_on for s in samples_of(lg)])
        for lg in logs:
            s = samples_of(lg)
            pred, _ = predict(s, lines)
            t = np.array([x.t for x in s])
            assert np.median(np.abs(pred - t) / t) <= 0.10, (fitted_on, lg.nodes)


def test_shipped_a3mega_reproduces_its_log():
    """gcp-a3mega-h100, as `oracle predict` runs it, against its nccl-tests log (8 B-8 GB)."""
    from oracle.load.benchlogs import load_benchlog

    log = load_benchlog(ROOT / "data" / "nccl-tests" / "h100-a3mega" / "all_reduce_perf_2x8_H100_GCP-A3mega.txt")
    s = load_system("gcp-a3mega-h100")
    m = np.array([float(b) for b, _ in log.rows])
    t = np.array([x for _, x in log.rows])
    pred, _ = allreduce_algorithm(s, group_contiguous(16, 8), m, s.collective_algorithm)
    assert np.median(np.abs(pred - t) / t) <= 0.05


# -- system files: what the interconnect offers --------------------------------------------


@pytest.mark.parametrize("name", ["dgx1-v100", "dgx2-v100", "dgx2h-v100", "dgx-a100-40gb", "dgx-a100-80gb",
                                  "hgx-h200", "gcp-a3mega-h100", "dgx-h100-superpod", "aws-p5-h100"])  # fmt: skip
def test_nvidia_systems_state_their_interconnect_and_default_to_nccl(name):
    s = load_system(name)
    ic = s.interconnect
    assert s.collective_algorithm == "nccl"
    assert ic.nvlink_domain_gpus == s.gpus_per_node and ic.source and s.links_per_node
    assert ic.nvls == (ic.nvswitch_generation >= 3)
    for level in s.network:
        assert {pr.name for pr in level.protocols} == {"LL", "LL128"}, (name, level.name)


@pytest.mark.parametrize("name", ["abci", "abci-nominal", "abci-2020", "abci-chainermnx", "lassen"])
def test_paradl_study_systems_keep_the_ring(name):
    assert load_system(name).collective_algorithm == "ring"


@pytest.mark.parametrize(
    ("extra", "key", "fragment"),
    [
        ("interconnect: {nvls: true}\n", "interconnect.nvls", "generation 3"),
        ("interconnect: {nvswitch_generation: 2, nvls: true}\n", "interconnect.nvls", "is 2"),
        ("interconnect: {nvlink_domain_gpus: 6}\n", "interconnect.nvlink_domain_gpus", "multiple of gpus_per_node"),
        ("interconnect: {sharp: maybe}\n", "interconnect.sharp", "maybe"),
        ("interconnect: {nvswitch_generation: -1}\n", "interconnect.nvswitch_generation", "-1"),
    ],
)  # fmt: skip
def test_bad_interconnect_is_one_error_naming_file_and_key(tmp_path, extra, key, fragment):
    _system(tmp_path)  # the base loads
    text = (tmp_path / "s.yaml").read_text() + extra
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    one_error(run_cli("show", "system", str(bad)), str(bad), key, fragment)


def test_collnet_without_sharp_is_one_error(tmp_path):
    _system(tmp_path)
    bad = tmp_path / "bad.yaml"
    bad.write_text((tmp_path / "s.yaml").read_text().replace("{algorithm: nccl}", "{collnet: true}"))
    one_error(run_cli("show", "system", str(bad)), str(bad), "collectives.collnet", "SHARP")


# -- ParaDL mode ------------------------------------------------------------------------------


def test_paradl_mode_points_on_ring_systems_stay_exactly_as_recorded():
    """Every ParaDL-mode case of baselines/shipped.json (--memory-model paradl
    --compute-scaling linear) on a system whose collectives say ring reproduces its recorded
    points exactly (to float rounding, 1e-12)."""
    from oracle.compute.baseline import diff_points
    from oracle.load.baseline import load_baseline
    from oracle.services.baseline import _case_label, _run_case

    baseline = ROOT / "baselines" / "shipped.json"
    checked = set()
    for i, (case, points) in enumerate(load_baseline(baseline)):
        paradl = case.get("memory_model") == "paradl" and case.get("compute_scaling") == "linear"
        if not paradl or load_system(case["system"]).collective_algorithm != "ring":
            continue
        new = _run_case(case, baseline.parent, str(baseline), f"cases[{i}].case")
        assert diff_points(_case_label(case), points, new, 1e-12) == [], case  # float rounding only
        checked.add(case["system"])
    assert {"abci", "abci-chainermnx", "abci-2020", "lassen"} <= checked


def test_abci_nominal_paradl_mode_is_the_flat_ring_by_hand():
    """-s abci-nominal --compute-scaling linear --memory-model paradl: the data-parallel
    all-reduce is ParaDL's ring 2(p-1)(α + δΣw·β/p) at the level of the span, per iteration."""
    from test_layerwise import context

    from oracle import api

    s = load_system("abci-nominal")
    (pt,) = api.predict("resnet50", "abci-nominal", "resnet50_v100", gpus=[64], strategies="data", batch_per_gpu=32,
                        memory_model="paradl", compute_scaling="linear")  # fmt: skip
    level = next(lv for lv in s.network if lv.max_gpus >= 64)
    ctx = context("resnet50", "abci-nominal", "resnet50_v100")
    ring = 2 * 63 * (level.alpha_s + ctx.delta * ctx.sum_w * level.beta_s_per_byte / 64)
    assert pt.breakdown.gradient_exchange_s == pytest.approx(pt.iterations_per_epoch * ring, rel=1e-12)


def test_collnet_moves_half_the_bus_bandwidth_as_64_h100_on_sharp_measured():
    """CoreWeave's 64 H100 on SHARP (NCCL 2.18.1, CollNet chain, data/nccl-tests/h100-coreweave-sharp/):
    algorithm bandwidth 180-195 GB/s on nodes of 400 GB/s; the nominal dgx-h100-superpod pinned to
    CollNet reproduces it within 10% with tuning.cc's factor 1/2, where m·max(β) was 2x too fast."""
    from oracle.load.benchlogs import load_benchlog

    log = load_benchlog(ROOT / "data" / "nccl-tests" / "h100-coreweave-sharp" / "all_reduce_8nodes.txt", gpus_per_node=8)
    assert (log.gpus, log.nodes) == (64, 8) and len(log.rows) == 5
    s = load_system("dgx-h100-superpod")
    m = np.array([float(b) for b, _ in log.rows])
    t = np.array([x for _, x in log.rows])
    pred, used = allreduce_algorithm(s, group_contiguous(64, 8), m, "collnet")
    assert used == "nccl" and (np.abs(pred - t) / t).max() < 0.10
