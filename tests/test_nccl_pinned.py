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
