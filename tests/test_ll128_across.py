"""collectives.ll128_across_nodes (compute/nccl.py, "LL128 across nodes"): NCCL before 2.27.3
runs no LL128 in a collective that crosses nodes whose NICs hang off the CPU (GB200); a
system file says so, and both oracle predict and oracle fit network honour it."""

from __future__ import annotations

import numpy as np
import yaml
from conftest import ROOT, run_cli

from oracle.compute import nccl
from oracle.compute.calibration import nccl_fit
from oracle.compute.network import allreduce_algorithm, group_contiguous, link
from oracle.load import load_system
from oracle.load.benchlogs import load_benchlog

H100 = ROOT / "systems" / "dgx-h100-superpod.yaml"
P5 = sorted(str(p) for p in (ROOT / "data" / "nccl-tests" / "h100-aws-p5").glob("all_reduce_*nodes.txt"))


def _without_ll128(tmp_path, drop_inter_line: bool = False):
    """dgx-h100-superpod with ``collectives.ll128_across_nodes: false`` (and, if asked, no LL128
    line on its levels beyond the node)."""
    doc = yaml.safe_load(H100.read_text())
    doc["collectives"]["ll128_across_nodes"] = False
    if drop_inter_line:
        for level in doc["network"][1:]:
            level["protocols"] = [p for p in level.get("protocols", []) if p["name"] != "LL128"]
    path = tmp_path / "h100_no_ll128.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _labels(system, gpus: int) -> tuple[str, ...]:
    return nccl.group_lines(system, group_contiguous(gpus, system.gpus_per_node), "gradient_allreduce", link)[3]


def test_default_is_ll128_everywhere():
    s = load_system(H100)
    assert s.ll128_across_nodes is True and "LL128" in _labels(s, 8) and "LL128" in _labels(s, 64)


def test_off_drops_ll128_across_nodes_only(tmp_path):
    """Inside one node nothing moves; across nodes no size runs LL128, and no size gets faster."""
    on, off = load_system(H100), load_system(_without_ll128(tmp_path))
    assert _labels(off, 8) == _labels(on, 8) and "LL128" not in _labels(off, 64)
    m = np.logspace(3, 30, 28, base=2.0)
    t_on, _ = allreduce_algorithm(on, group_contiguous(8, 8), m, "nccl")
    t_off, _ = allreduce_algorithm(off, group_contiguous(8, 8), m, "nccl")
    assert np.array_equal(t_on, t_off)
    t_on, _ = allreduce_algorithm(on, group_contiguous(256, 8), m, "nccl")
    t_off, _ = allreduce_algorithm(off, group_contiguous(256, 8), m, "nccl")
    assert np.all(t_off >= t_on) and np.any(t_off > t_on)
    for x in m:
        _, used = allreduce_algorithm(off, group_contiguous(256, 8), np.asarray(x), "nccl")
        assert not used.endswith("/LL128")


def test_fit_keeps_no_line_for_ll128_across_nodes(tmp_path):
    """A base without an LL128 line across nodes fits with --fit-protocol Simple (no error, no
    free line running to the floor), and the fit has no such line; without the flag that base
    is one error naming --fit-protocol."""
    logs = [load_benchlog(p, gpus_per_node=8) for p in P5]
    fit = nccl_fit.fit_system(logs, load_system(_without_ll128(tmp_path, drop_inter_line=True)), fitted=("Simple",))
    assert ("inter", "LL128") not in fit.lines and ("inter", "Simple") in fit.lines
    assert not fit.runaway
    doc = yaml.safe_load(_without_ll128(tmp_path, drop_inter_line=True).read_text())
    doc["collectives"]["ll128_across_nodes"] = True
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    r = run_cli("fit", "network", "--system", tmp_path / "bad.yaml", "--fit-protocol", "Simple", *P5)
    assert r.code == 2 and "--fit-protocol" in r.err and "LL128" in r.err


def test_a_bad_value_is_one_error(tmp_path):
    doc = yaml.safe_load(H100.read_text())
    doc["collectives"]["ll128_across_nodes"] = "sometimes"
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    r = run_cli("predict", "-m", "resnet50", "-s", path, "--strategy", "data", "--gpus", "16", "-b", "32")
    assert r.code == 2 and "ll128_across_nodes" in r.err and "Traceback" not in r.err
