"""A hybrid's data-parallel group {0, p2, 2·p2, ...} sits where its GPUs do (GPU i on host
i // gpus_per_node, on NCCL node i // nccl.node_gpus): its span is the hosts it occupies
(ParaDL mode's rule, kept), its NCCL nodes are the NVLink domains its GPUs occupy, and NCCL's
steps between those domains take the level of the domains' GPUs (nccl.inter_span), on the
per-point and the array engines alike (docs/cost-model.md, "Network levels and placement")."""

from __future__ import annotations

import json

from test_vector import default_context, mismatches

from oracle.compute import nccl
from oracle.compute.network import (
    group_contiguous,
    group_strided,
    level_for,
    link,
    span_strided,
)
from oracle.compute.vector import run as vrun
from oracle.load import load_system

TAIL = ", the partial NVLink domain taken as fast across the network as a full one"


def test_a_data_group_striding_past_a_rack_crosses_the_racks():
    """10 x 10 on NVL72 (trays of 4, racks of 72): GPUs 0, 10, ..., 90 occupy 10 trays (span 40,
    the NVLink level by the hosts' rule) but racks 0 (GPUs 0..70: 8) and 1 (80, 90: 2): 2 NCCL
    nodes, whose steps between them take InfiniBand (inter_span 2 x 72 = 144). Before, it was
    one NCCL node on NVLink."""
    s = load_system("gb200-nvl72")
    g = group_strided(10, 10, 4)
    assert (g.nodes, g.per_node, g.span, g.stride) == (10, 1, 40, 10)
    assert nccl.nccl_nodes(s, g) == (2, 8)
    assert nccl.partial_domain(s, g, 10) == [8, 2]
    assert nccl.inter_span(s, g.span, 2) == 144 and level_for(s, 144).name == "ib"
    _, _, lines, _ = nccl.group_lines(s, g, "gradient_allreduce", link)
    ib = s.network[-1]
    assert ib.name == "ib" and lines[("inter", "Simple")][1] == ib.beta_s_per_byte
    # 9 x 16: GPUs 0..128, 9 trays; racks 0 (0..64: 5) and 1 (80..128: 4)
    assert span_strided(9, 16, 4) == 36 and nccl.nccl_nodes(s, group_strided(9, 16, 4)) == (2, 5)
    # a stride below a tray: no tray skipped; rack 0 holds ⌈72/3⌉ = 24 of GPUs 0, 3, ..., 105
    assert nccl.nccl_nodes(s, group_strided(36, 3, 4)) == (2, 24)
    # GPUs 0..9 on one rack: g is the 10 GPUs there (not 3 trays x 4)
    assert nccl.nccl_nodes(s, group_contiguous(10, 4)) == (1, 10)
    assert nccl.nccl_nodes(s, group_contiguous(108, 4)) == (2, 72)


def test_predict_costs_the_strided_data_group_across_the_racks(run):
    for p2, note in ((10, "1 x 8 + 2 GPUs: 2 NCCL nodes"), (4, "1 x 18 + 7 GPUs: 2 NCCL nodes")):
        for strategy in ("data+filter", "data+spatial"):
            r = run("predict", "-m", "resnet50", "-s", "gb200-nvl72", "-p", "estimate", "--strategy", strategy,
                    "--gpus", "100", "--p2", str(p2), "-f", "json")  # fmt: skip
            assert r.code == 0, r.err
            (pt,) = json.loads(r.out)
            assert note in pt["details"]["nccl_nodes"], (strategy, p2)  # data+spatial: also 72 + 28 (all p)
            assert pt["details"]["nccl_nodes"].endswith(TAIL if strategy == "data+filter" else "as full ones")


def test_on_hosts_that_are_the_nvlink_domain_the_occupied_hosts_are_the_nccl_nodes():
    """dgx-h100-superpod (8 GPUs a host and a domain): 10 x 10 is GPUs 0, 10, ..., 90 on 10
    hosts: n = 10 NCCL nodes of 1 GPU and span 80 (10 hosts x 8), as ParaDL mode's rule has it;
    inter_span adds nothing where a domain is a host."""
    s = load_system("dgx-h100-superpod")
    g = group_strided(10, 10, 8)
    assert (g.nodes, g.per_node, g.span) == (10, 1, 80) and nccl.nccl_nodes(s, g) == (10, 1)
    assert nccl.inter_span(s, g.span, 10) == 80 and level_for(s, g.span).name == "leaf"
    assert span_strided(32, 16, 8) == 256


def test_both_engines_place_strided_data_groups_alike(tmp_path):
    """The arrays (compute/vector) give the per-point numbers where the data group's stride
    is a host or more: across racks on NVL72, across leaves on a SuperPOD."""
    for system_name, counts, strides in (("gb200-nvl72", [100, 144, 720, 1440], (4, 5, 10, 16, 48)),
                                         ("dgx-h100-superpod", [160, 512, 1024], (8, 10, 16, 32))):  # fmt: skip
        ctx = default_context(tmp_path, "resnet50", system_name, batch_per_gpu=32.0)
        for p2 in strides:
            for c in vrun.columns(ctx, counts, ["data+filter", "data+spatial"], True, None, 32.0, p2):
                assert not mismatches(ctx, c), (system_name, p2, c.strategy)
