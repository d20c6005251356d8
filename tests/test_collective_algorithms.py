"""Collective algorithms (issue 8): ring, recursive halving/doubling, double binary tree,
two-level hierarchical, leader-based, and auto — hand-computed."""

from __future__ import annotations

import math
import textwrap

import numpy as np
import pytest
from conftest import cli_runner

from oracle import api
from oracle.cli.main import cli
from oracle.compute.network import (
    allgather_algorithm,
    allreduce_algorithm,
    group_contiguous,
    group_strided,
)
from oracle.load.system import load_system

A1, B1, A2, B2 = 1e-5, 1e-10, 1e-4, 1e-9  # inside a node / across nodes
SYSTEM = textwrap.dedent(f"""
    name: Two
    gpu: {{model: x, memory_GB: 1000}}
    gpus_per_node: 4
    nodes: 16
    links_per_node: 2
    network:
      - {{name: a, max_gpus: 4, alpha_s: {A1}, beta_s_per_byte: {B1}}}
      - {{name: b, max_gpus: 64, alpha_s: {A2}, beta_s_per_byte: {B2}}}
""")


@pytest.fixture()
def system(tmp_path):
    path = tmp_path / "two.yaml"
    path.write_text(SYSTEM)
    return load_system(path)


M = 1e8  # bytes


def test_groups():
    assert group_contiguous(16, 4) == group_contiguous(16, 4)
    g = group_contiguous(16, 4)
    assert (g.p, g.nodes, g.per_node, g.span) == (16, 4, 4, 16)
    g = group_contiguous(3, 4)
    assert (g.nodes, g.per_node, g.span) == (1, 3, 3)
    g = group_strided(8, 4, 4)  # one member per node
    assert (g.nodes, g.per_node, g.span) == (8, 1, 32)
    g = group_strided(8, 2, 4)  # two members per node
    assert (g.nodes, g.per_node, g.span) == (4, 2, 16)


def test_each_algorithm_by_hand(system):
    g = group_contiguous(16, 4)
    p, logp = 16, 4
    ring = 2 * 15 * (A2 + M / 16 * B2)
    rhd = 2 * logp * A2 + 2 * 15 / 16 * M * B2
    k = math.sqrt(logp * M * B2 / (2 * A2))
    tree = 2 * (logp + k) * (A2 + M * B2 / (2 * k))
    local = 2 * 3 * (A1 + M / 4 * B1)
    # hierarchical: 4 local ranks at once across 4 nodes: 4 flows / 2 links -> φ = 2
    hier = local + 2 * 3 * (A2 + M / 16 * B2 * 2)
    leader = 2 * local + 2 * 3 * (A2 + M / 4 * B2)
    for name, want in (("ring", ring), ("rhd", rhd), ("tree", tree), ("hierarchical", hier), ("leader", leader)):
        got, used = allreduce_algorithm(system, g, M, name)
        assert got == pytest.approx(want, rel=1e-12), name
        assert used == name
    best, used = allreduce_algorithm(system, g, M, "auto")
    assert best == pytest.approx(min(ring, rhd, tree, hier, leader))
    assert used == min((ring, "ring"), (rhd, "rhd"), (tree, "tree"), (hier, "hierarchical"), (leader, "leader"))[1]


def test_auto_picks_per_message_size(system):
    g = group_contiguous(16, 4)
    sizes = np.array([1e2, 1e9])
    best, used = allreduce_algorithm(system, g, sizes, "auto")
    assert used == "auto"
    for i, m in enumerate(sizes):
        assert best[i] == pytest.approx(min(allreduce_algorithm(system, g, m, n)[0] for n in
                                            ("ring", "rhd", "tree", "hierarchical", "leader")))  # fmt: skip
    # a tiny message pays latencies only: the ring's 2(p-1)α2 = 3 ms loses to the
    # two-level 6α1 + 6α2 = 0.66 ms (cheap steps inside the node) and to rhd's 8α2
    assert allreduce_algorithm(system, g, 1e2, "auto")[1] == "hierarchical"
    assert allreduce_algorithm(system, g, 1e2, "hierarchical")[0] == pytest.approx(6 * A1 + 6 * A2, rel=1e-3)


def test_two_level_degenerates_to_ring_inside_a_node(system):
    g = group_contiguous(4, 4)
    ring = allreduce_algorithm(system, g, M, "ring")[0]
    assert allreduce_algorithm(system, g, M, "hierarchical")[0] == pytest.approx(ring)
    assert allreduce_algorithm(system, g, M, "leader")[0] == pytest.approx(ring)


def test_allgather_algorithms(system):
    g = group_contiguous(8, 4)
    mi = 1e6
    ring = 7 * (A2 + mi * B2)
    rhd = 3 * A2 + 7 * mi * B2
    assert allgather_algorithm(system, g, mi, "ring")[0] == pytest.approx(ring)
    assert allgather_algorithm(system, g, mi, "rhd")[0] == pytest.approx(rhd)
    assert allgather_algorithm(system, g, mi, "auto")[0] == pytest.approx(min(ring, rhd))
    assert allgather_algorithm(system, g, mi, "tree")[0] == pytest.approx(ring)  # falls back to the ring


def test_system_algorithm_and_flag(tmp_path, system):
    plain = tmp_path / "s.yaml"
    plain.write_text(SYSTEM)
    tree = tmp_path / "t.yaml"
    tree.write_text(SYSTEM + "collectives: {algorithm: tree}\n")
    kw = dict(gpus=[16], strategies="data", batch_per_gpu=32)
    (ring_pt,) = api.predict("resnet50", plain, "resnet50_v100", **kw)
    (tree_pt,) = api.predict("resnet50", tree, "resnet50_v100", **kw)
    (flag_pt,) = api.predict("resnet50", plain, "resnet50_v100", collective="tree", **kw)
    assert tree_pt.communication_s == pytest.approx(flag_pt.communication_s)
    assert tree_pt.communication_s != pytest.approx(ring_pt.communication_s)
    assert dict(flag_pt.details)["allreduce"] == "tree"
    auto = api.predict("resnet50", plain, "resnet50_v100", collective="auto", **kw)[0]
    assert auto.communication_s <= min(ring_pt.communication_s, tree_pt.communication_s) + 1e-9


def test_bad_algorithm_names_exit_2(tmp_path):
    bad = tmp_path / "b.yaml"
    bad.write_text(SYSTEM + "collectives: {algorithm: butterfly}\n")
    res = cli_runner().invoke(cli, ["show", "system", str(bad)])
    assert res.exit_code == 2 and "collectives.algorithm" in res.stderr
    res = cli_runner().invoke(cli, ["predict", "-m", "alexnet", "-s", "abci", "-p", "alexnet_v100", "--collective", "fast"])
    assert res.exit_code == 2 and "--collective" in res.stderr
