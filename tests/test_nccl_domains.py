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
    """A synthetic all-reduce log on ``gpus`` GPUs, 4 per host (two sizes, fixed times)."""
    return BenchLog(tool="nccl-tests", operation="allreduce", gpus=gpus, nodes=gpus // 4, gpus_per_node=4,
                    rows=((2**20, 1e-3), (2**30, 1e-1)), file=f"{gpus}.txt")  # fmt: skip


def test_hosts_of_a_domain_are_one_nccl_node(tmp_path):
    s = _system(tmp_path)
    assert nccl.node_gpus(s) == 16
    assert [(x.n, x.g) for x in nccl_fit.samples_of(_log(64), system=s)] == [(4, 16)] * 2
    assert [(x.n, x.g) for x in nccl_fit.samples_of(_log(64))] == [(16, 4)] * 2  # no system: the log's hosts


def test_a_log_of_other_hosts_maps_on_its_own_hosts(tmp_path):
    """A log of 8 GPUs per host on the 16-GPU domain: two hosts a node, whatever the system's 4."""
    log = BenchLog(tool="nccl-tests", operation="allreduce", gpus=64, nodes=8, gpus_per_node=8,
                   rows=((2**20, 1e-3),), file="8.txt")  # fmt: skip
    assert [(x.n, x.g) for x in nccl_fit.samples_of(log, system=_system(tmp_path))] == [(4, 16)]


def test_hosts_that_do_not_tile_the_domain_are_one_error(tmp_path):
    from oracle.errors import OracleError

    log = BenchLog(tool="nccl-tests", operation="allreduce", gpus=60, nodes=10, gpus_per_node=6,
                   rows=((2**20, 1e-3),), file="6.txt")  # fmt: skip
    with pytest.raises(OracleError, match="do not tile"):
        nccl_fit.samples_of(log, system=_system(tmp_path))


def test_the_intra_lines_are_the_domains_level(tmp_path):
    """Inside one NCCL node the NVLink level of the 16-GPU domain, not a 4-GPU host's."""
    lines = nccl_fit.intra_lines(_system(tmp_path))
    assert lines[("intra", "Simple")] == pytest.approx((2.0e-6, 2.0e-12))
    base = nccl_fit.base_lines(_system(tmp_path), 64)
    assert base[("inter", "LL")] == base[("inter", "Simple")] == pytest.approx((1.0e-5, 1.0e-11))


PROTOCOL_LINES = """
      - {name: nvlink, max_gpus: 16, alpha_s: 2.0e-6, beta_s_per_byte: 2.0e-12,
         protocols: [{name: LL, alpha_s: 0.5e-6, beta_s_per_byte: 8.0e-12}, {name: LL128, alpha_s: 1.0e-6, beta_s_per_byte: 2.2e-12}]}
      - {name: ib, max_gpus: 256, alpha_s: 1.0e-5, beta_s_per_byte: 1.0e-11,
         protocols: [{name: LL, alpha_s: 5.0e-6, beta_s_per_byte: 5.0e-11}, {name: LL128, alpha_s: 8.0e-6, beta_s_per_byte: 1.1e-11}]}
"""


def _with_protocols(tmp_path):
    path = tmp_path / "p.yaml"
    text = textwrap.dedent(DOMAIN)
    path.write_text(text[: text.index("    network:") if "    network:" in text else text.index("network:")] + "network:"
                    + textwrap.indent(textwrap.dedent(PROTOCOL_LINES), ""))  # fmt: skip
    return load_system(path)


def _synthetic(system, lines, gpus, sizes):
    """A log on ``gpus`` GPUs whose times are the model's for ``lines`` (NCCL's choice per size)."""
    log = BenchLog(tool="nccl-tests", operation="allreduce", gpus=gpus, nodes=gpus // 4, gpus_per_node=4,
                   rows=tuple((m, 1.0) for m in sizes), file=f"{gpus}.txt")  # fmt: skip
    t, _ = nccl_fit.predict(nccl_fit.samples_of(log, system=system), lines, offers=nccl.offers(system))
    return BenchLog(tool="nccl-tests", operation="allreduce", gpus=gpus, nodes=gpus // 4, gpus_per_node=4,
                    rows=tuple(zip(sizes, map(float, t))), file=f"{gpus}.txt")  # fmt: skip


def test_a_fit_of_the_simple_lines_recovers_them_through_a_tied_ll128(tmp_path):
    """fitted=("Simple",): LL is the base's line; LL128 the base's α at 0.92 of the fitted Simple
    bandwidth (tuning.cc).  Logs made from known Simple lines, where LL128 carries most sizes
    across nodes, give the Simple bandwidth across nodes back and are reproduced within 1%."""
    s = _with_protocols(tmp_path)
    true = {("intra", "Simple"): (3.0e-6, 1.5e-12), ("inter", "Simple"): (4.0e-5, 8.0e-12)}
    base = nccl_fit.base_lines(s, 128)
    lines = {**base, **true}
    for w in ("intra", "inter"):
        lines[(w, "LL128")] = (base[(w, "LL128")][0], true[(w, "Simple")][1] / 0.92)
    sizes = tuple(2**k for k in range(14, 31, 2))
    logs = [_synthetic(s, lines, gpus, sizes) for gpus in (16, 64, 128)]
    fit = nccl_fit.fit_system(logs, s, fitted=("Simple",))
    assert sum("LL128" in u for le in fit.logs for u in le.used) >= 8  # the tie carries most multi-node sizes
    # the Simple β across nodes comes back through LL128's sizes (a wrong tie would miss it by 8%)
    assert fit.lines[("inter", "Simple")][1] == pytest.approx(true[("inter", "Simple")][1], rel=0.01)
    for w in ("intra", "inter"):
        assert fit.lines[(w, "LL")] == base[(w, "LL")] and (w, "LL") in fit.fixed
        assert fit.lines[(w, "LL128")][1] == pytest.approx(fit.lines[(w, "Simple")][1] / 0.92)
        assert (w, "LL128") in fit.tied
    assert max(le.median for le in fit.logs) < 0.01


def test_a_base_without_the_kept_line_is_one_error(tmp_path):
    """A level with no LL line has nothing to keep: one error naming --fit-protocol."""
    from oracle.errors import OracleError

    with pytest.raises(OracleError, match="no LL line"):
        nccl_fit.fit_system([_log(64)], _system(tmp_path), fitted=("Simple",))


@pytest.mark.parametrize("fitted", [("LL",), ("LL128", "LL"), ("Simple", "XL")])
def test_the_fitted_protocols_include_simple_and_nothing_else(tmp_path, fitted):
    with pytest.raises(ValueError, match="Simple"):
        nccl_fit.fit_system([_log(64)], _system(tmp_path), fitted=fitted)


def test_a_protocol_not_fitted_needs_the_base_system():
    with pytest.raises(ValueError, match="base system"):
        nccl_fit.fit_system([_log(64)], None, fitted=("Simple",))
