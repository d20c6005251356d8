"""NCCL pinned to one algorithm (issue 25): ``nvls`` and ``collnet`` as NCCL_ALGO pins them,
on a system that offers them; a stack, an option or a system file naming one the system
cannot run (NVLS without NVLink SHARP, CollNet without SHARP) is one error naming the file
and key, exit 2, nothing written."""

from __future__ import annotations

import pytest
from conftest import ROOT, run_cli
from test_robustness import one_error

from oracle.compute.network import allreduce_algorithm, group_contiguous
from oracle.load import load_system

RUN = ("-m", "resnet50", "-p", "resnet50_v100", "--gpus", "8,64")


def _stack(tmp_path, algorithm: str):
    """The shipped pytorch stack with its algorithm pinned."""
    text = (ROOT / "stacks" / "pytorch.yaml").read_text()
    assert "algorithm: {value: system," in text
    path = tmp_path / f"pinned-{algorithm}.yaml"
    path.write_text(text.replace("algorithm: {value: system,", f"algorithm: {{value: {algorithm},"))
    return path


@pytest.mark.parametrize("system, algorithm, lacks", [("dgx-a100-80gb", "nvls", "interconnect.nvls"),
                                                      ("hgx-h200", "collnet", "interconnect.sharp")])  # fmt: skip
def test_a_stack_naming_what_the_system_cannot_run_is_one_error(tmp_path, system, algorithm, lacks):
    stack, out = _stack(tmp_path, algorithm), tmp_path / "never.csv"
    r = run_cli("predict", *RUN, "-s", system, "--stack", stack, "-o", out)
    one_error(r, str(stack), "communication.algorithm", algorithm, lacks, f"{system}.yaml")
    assert not out.exists()


def test_the_option_naming_what_the_system_cannot_run_is_one_error(tmp_path):
    out = tmp_path / "never.csv"
    one_error(run_cli("predict", *RUN, "-s", "dgx1-v100", "--collective", "collnet", "-o", out),
              "--collective", "interconnect.sharp")  # fmt: skip
    assert not out.exists()
    one_error(run_cli("search", "-m", "resnet50", "-p", "resnet50_v100", "--gpus", "64", "-s", "dgx-a100-40gb",
                      "--collective", "nvls"), "--collective", "nvls")  # fmt: skip


@pytest.mark.parametrize("section, key", [("collectives: {algorithm: nvls}\n", "collectives.algorithm"),
                                          ("operations: {gradient_allreduce: {algorithm: collnet}}\n",
                                           "operations.gradient_allreduce.algorithm")])  # fmt: skip
def test_a_system_file_naming_what_it_cannot_run_is_one_error(tmp_path, section, key):
    text = (ROOT / "systems" / "dgx1-v100.yaml").read_text()
    text = "\n".join(ln for ln in text.split("\n") if not ln.startswith(("collectives:", "  algorithm: nccl")))
    bad = tmp_path / "bad.yaml"
    bad.write_text(text + "\n" + section)
    load_system(ROOT / "systems" / "dgx1-v100.yaml")  # the base loads
    one_error(run_cli("show", "system", str(bad)), str(bad), key)


def test_pinned_algorithms_run_where_the_system_offers_them():
    """The superpod offers NVLS and SHARP (CollNet off by default): pinned, every size takes
    that algorithm across nodes (pinning CollNet enables it, NCCL_COLLNET_ENABLE=1); where
    the group offers no such candidate (CollNet on one node) NCCL's own choice stays."""
    s = load_system("dgx-h100-superpod")
    assert not s.collnet
    for m in (8.0, 1e5, 1e9):
        assert allreduce_algorithm(s, group_contiguous(1024, 8), m, "nvls")[1] == "nccl nvls/Simple"
        assert allreduce_algorithm(s, group_contiguous(1024, 8), m, "collnet")[1] == "nccl collnet/Simple"
        assert "collnet" not in allreduce_algorithm(s, group_contiguous(1024, 8), m, "nccl")[1]
    one_node = group_contiguous(8, 8)
    assert allreduce_algorithm(s, one_node, 1e9, "collnet") == allreduce_algorithm(s, one_node, 1e9, "nccl")


# -- one vocabulary: --collective nvls|collnet is NCCL_ALGO with one name (compute/nccl.nccl_algo) --


def _nccl_algo_stack(tmp_path, algos: str):
    """The pytorch stack with communication.nccl_algorithms (NCCL_ALGO) = ``algos``."""
    text = (ROOT / "stacks" / "pytorch.yaml").read_text()
    path = tmp_path / f"algo-{algos.replace(',', '-')}.yaml"
    path.write_text(text.replace("  cycle_time_s:", f'  nccl_algorithms: {{value: "{algos}", source: "NCCL_ALGO"}}\n'
                                 "  cycle_time_s:"))  # fmt: skip
    return path


@pytest.mark.parametrize("system, algorithm", [("dgx-h100-superpod", "nvls"), ("dgx-h100-superpod", "collnet"),
                                               ("dgx-a100-80gb", "collnet")])  # fmt: skip
def test_pinning_is_nccl_algo_with_one_name(tmp_path, system, algorithm):
    """--collective nvls|collnet projects exactly as a stack whose NCCL_ALGO names that one
    algorithm (CollNet named either way is enabled where the fabric has SHARP: dgx-a100-80gb
    offers SHARP without collectives.collnet; a list naming it was refused before)."""
    args = ("predict", *RUN, "-s", system, "--strategy", "data,data+filter", "-f", "json")
    pinned = run_cli(*args, "--stack", "pytorch", "--collective", algorithm)
    file = _nccl_algo_stack(tmp_path, algorithm)
    listed = run_cli(*args, "--stack", file, "--collective", "nccl")
    assert pinned.code == 0 and listed.code == 0, (pinned.err, listed.err)
    # the same points, the stack file named by its path (bug 6e)
    assert pinned.out == listed.out.replace(f'"stack": "{file}"', '"stack": "pytorch"')
    assert f'"nccl {algorithm}/' in pinned.out and f'"stack": "{file}"' in listed.out


def test_nccl_algo_keeps_only_the_named_algorithms_where_the_group_has_them(tmp_path):
    """NCCL_ALGO=tree: trees only (rings stayed beside the list before), as pinning keeps only
    its algorithm; a group with none of the named ones keeps NCCL's choice."""
    from dataclasses import replace

    from oracle.compute.stack import nccl_algorithms
    from oracle.load.stack import load_stack

    s = load_system("dgx-h100-superpod")
    tree = nccl_algorithms(s, load_stack(_nccl_algo_stack(tmp_path, "tree")))
    two_nodes = group_contiguous(16, 8)
    for m in (8.0, 1e9, 4e9):  # NCCL_ALGO=ring,tree takes rings at 1 and 4 GB here; tree alone does not
        assert allreduce_algorithm(tree, two_nodes, m, "nccl")[1].startswith("nccl tree/")
    ring_tree = replace(s, nccl_algorithms=("ring", "tree"))
    assert allreduce_algorithm(ring_tree, two_nodes, 1e9, "nccl")[1].startswith("nccl ring/")
    collnet = nccl_algorithms(s, load_stack(_nccl_algo_stack(tmp_path, "collnet")))
    one_node = group_contiguous(8, 8)
    assert allreduce_algorithm(collnet, one_node, 1e9, "nccl") == allreduce_algorithm(s, one_node, 1e9, "nccl")
