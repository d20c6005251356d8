"""NCCL's nodes on an NVLink domain wider than a host (interconnect.nvlink_domain_gpus, NVL72):
a log's hosts of one domain are one NCCL node, in the fit as in projections (issue 25)."""

from __future__ import annotations

import textwrap

import pytest

from oracle.compute import nccl
from oracle.compute.calibration import nccl_fit
from oracle.load import load_system
from oracle.records import BenchLog

DOMAIN = """
    name: T
    gpu: {model: x, memory_GB: 80}
    gpus_per_node: 4
    nodes: 64
    interconnect: {nvlink_domain_gpus: 16, nvswitch_generation: 4}
    collectives: {algorithm: nccl}
    network:
      - {name: nvlink, max_gpus: 16, alpha_s: 2.0e-6, beta_s_per_byte: 2.0e-12}
      - {name: ib, max_gpus: 256, alpha_s: 1.0e-5, beta_s_per_byte: 1.0e-11}
"""


def _system(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(textwrap.dedent(DOMAIN))
    return load_system(path)


def _log(gpus: int) -> BenchLog:
    """A synthetic all-reduce log on ``gpus`` GPUs, 4 per host, its times from the system's own ring."""
    return BenchLog(tool="nccl-tests", operation="allreduce", gpus=gpus, nodes=gpus // 4, gpus_per_node=4,
                    rows=((2**20, 1e-3), (2**30, 1e-1)), file=f"{gpus}.txt")  # fmt: skip


def test_hosts_of_a_domain_are_one_nccl_node(tmp_path):
    s = _system(tmp_path)
    assert nccl.node_gpus(s) == 16
    assert [(x.n, x.g) for x in nccl_fit.samples_of(_log(64), system=s)] == [(4, 16)] * 2
    assert [(x.n, x.g) for x in nccl_fit.samples_of(_log(64))] == [(16, 4)] * 2  # no system: the log's hosts


def test_the_intra_lines_are_the_domains_level(tmp_path):
    """Inside one NCCL node the NVLink level of the 16-GPU domain, not a 4-GPU host's."""
    lines = nccl_fit.intra_lines(_system(tmp_path))
    assert lines[("intra", "Simple")] == pytest.approx((2.0e-6, 2.0e-12))
    base = nccl_fit.base_lines(_system(tmp_path), 64)
    assert base[("inter", "LL")] == base[("inter", "Simple")] == pytest.approx((1.0e-5, 1.0e-11))


def test_a_fit_of_only_some_protocols_keeps_the_rest(tmp_path):
    """protocols: the candidates fitted; keep: those lines held at the base's."""
    s = _system(tmp_path)
    fit = nccl_fit.fit_system([_log(64), _log(128)], s, protocols=("LL", "Simple"), keep=("LL",))
    assert set(fit.lines) == {(w, p) for w in ("intra", "inter") for p in ("LL", "Simple")}
    assert fit.lines[("inter", "LL")] == pytest.approx((1.0e-5, 1.0e-11))
    assert ("inter", "LL") in fit.fixed and ("inter", "Simple") not in fit.fixed
