"""gb200-nvl72 and Blackwell: CoreWeave's public nccl-tests runs on 1, 2 and 20 GB200 NVL72
racks (data/nccl-tests/gb200-nvl72-coreweave/), NVLS at its measured efficiency, the NCCL nodes
of a log on an NVLink domain wider than a host, and the B200/GB200 library entries (issue 25)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import yaml
from conftest import ROOT, run_cli

from oracle.compute import nccl
from oracle.compute.calibration import nccl_fit
from oracle.compute.network import allreduce_algorithm, group_contiguous, link
from oracle.gpus import lookup, lookup_family
from oracle.load import load_stack, load_system
from oracle.load.benchlogs import load_benchlog

DATA = ROOT / "data" / "nccl-tests" / "gb200-nvl72-coreweave"
RACKS = (1, 2, 20)
LOGS = [DATA / f"all_reduce_{18 * r}nodes.txt" for r in RACKS]
FITTED = ("Simple",)  # as benchmarks/nccl_tests.py and scripts/fit_gb200.sh: the logs start at 512 MiB


def _logs():
    return [load_benchlog(p, gpus_per_node=4) for p in LOGS]


def _measured_vs_shipped():
    s = load_system("gb200-nvl72")
    out = []
    for log in _logs():
        m = np.array([float(b) for b, _ in log.rows])
        t = np.array([x for _, x in log.rows])
        pred, _ = allreduce_algorithm(s, group_contiguous(log.gpus, s.gpus_per_node), m, "nccl")
        out.append((t, pred))
    return out


def test_the_logs_hold_the_readme_rows():
    """72, 144 and 1,440 GPUs on 18, 36 and 360 trays of 4; the rows as CoreWeave printed them."""
    logs = _logs()
    assert [(lg.gpus, lg.nodes, lg.gpus_per_node) for lg in logs] == [(72, 18, 4), (144, 36, 4), (1440, 360, 4)]
    assert [len(lg.rows) for lg in logs] == [5, 6, 6]
    assert logs[0].rows[0] == (536870912, pytest.approx(1806.7e-6))
    assert logs[2].rows[-1] == (17179869184, pytest.approx(84625e-6))
    for log in logs:  # nccl-tests' algbw is size / time: the transcription kept both columns
        text = (DATA / f"all_reduce_{log.nodes}nodes.txt").read_text()
        for m, t in log.rows:
            algbw = float(re.search(rf"^\s*{m}\s+\d+\s+float\s+sum\s+-1\s+\S+\s+(\S+)", text, re.MULTILINE).group(1))
            assert m / t / 1e9 == pytest.approx(algbw, rel=2e-3)


def test_a_rack_is_one_nccl_node_of_72():
    """The hosts of an NVLink domain are one NCCL node: 1, 2 and 20 nodes of 72 GPUs, not 18 to 360 of 4."""
    s = load_system("gb200-nvl72")
    assert nccl.node_gpus(s) == 72
    got = [(x.n, x.g) for lg in _logs() for x in nccl_fit.samples_of(lg, system=s)[:1]]
    assert got == [(1, 72), (2, 72), (20, 72)]
    assert [(x.n, x.g) for x in nccl_fit.samples_of(_logs()[1])[:1]] == [(36, 4)]  # without the system: the hosts


def test_nvls_efficiency_is_the_racks_measured_bus_bandwidth():
    """NVLS's all-reduce bus bandwidth is 2e x NVLink per direction (900 GB/s): the one-rack run's
    840 GB/s at 4-8 GiB, where NCCL's tuner constant (0.74) would give 1,332."""
    one_rack = _logs()[0]
    peak = np.mean([2 * 71 / 72 * m / t / 1e9 for m, t in one_rack.rows if m >= 4 * 2**30])
    assert peak == pytest.approx(2 * nccl.NVLS_EFFICIENCY[4] * 900, rel=0.01)


def _fit(logs=None):
    return nccl_fit.fit_system(logs or _logs(), load_system("gb200-nvl72"), fitted=FITTED)


def test_the_shipped_lines_are_the_fit():
    """Both levels hold the Simple lines scripts/fit_gb200.sh fits, to their four digits; LL is
    NCCL's constants; LL128 inside a rack NCCL's latency at 0.92 of the Simple bandwidth
    (tuning.cc), and between racks none: NCCL 2.26 ran no LL128 there (the header)."""
    fit, s = _fit(), load_system("gb200-nvl72")
    assert s.ll128_across_nodes is False
    for level, where in zip(s.network, ("intra", "inter")):
        lines = {"Simple": (level.alpha_s, level.beta_s_per_byte)}
        lines |= {p.name: (p.alpha_s, p.beta_s_per_byte) for p in level.protocols}
        assert set(lines) == {name for w, name in fit.lines if w == where}, where
        for name, (a, b) in lines.items():
            fa, fb = fit.lines[(where, name)]
            assert a == pytest.approx(fa, rel=1e-3) and b == pytest.approx(fb, rel=1e-3), (where, name)
        assert (where, "LL") in fit.fixed and (where, "Simple") not in fit.fixed
    assert s.network[0].protocols[1].beta_s_per_byte == pytest.approx(s.network[0].beta_s_per_byte / 0.92, rel=1e-3)
    assert ("intra", "LL128") in fit.tied and ("inter", "LL128") not in fit.lines
    assert s.network[0].protocols[0].alpha_s == 0.6e-6 and s.network[1].protocols[0].alpha_s == 5.0e-6


def test_the_fit_reproduces_every_rack_count_as_its_header_says():
    """Median |error| per log as oracle predict runs the shipped file, within 10% on every rack
    count (the header's numbers); fitted on 1-2 racks (bound by NVLink), 20 racks come out as
    the header says."""
    header = (ROOT / "systems" / "gb200-nvl72.yaml").read_text()
    got = []
    for t, p in _measured_vs_shipped():
        got.append(100 * float(np.median(np.abs(p - t) / t)))
    assert [round(x, 1) for x in got] == [round(100 * le.median, 1) for le in _fit().logs]
    assert max(got) <= 10
    stated = re.search(r"Median \|error\| ([\d.]+)% \(1 rack\), ([\d.]+)% \(2\), ([\d.]+)% \(20\)", " ".join(header.split()))
    assert list(stated.groups()) == [f"{x:.1f}" for x in got]
    part = _fit(_logs()[:2])
    held = 100 * nccl_fit.log_errors(_logs()[2], part.lines, nccl.offers(load_system("gb200-nvl72")),
                                     system=load_system("gb200-nvl72")).median  # fmt: skip
    assert f"comes out {held:.1f}% off" in " ".join(header.split())


def test_no_ll128_between_racks():
    """NCCL 2.26 on GB200 (its NICs behind the Grace CPU) runs no LL128 across racks: every
    multi-rack all-reduce takes LL or Simple, and a 25 MiB bucket across 20 racks pays the
    Simple step the runs measured or LL's bandwidth (several ms), not LL128's 0.5 ms."""
    s = load_system("gb200-nvl72")
    for gpus in (144, 1440):
        for m in (2.0**10, 2.0**20, 25.0 * 2**20, 2.0**30):
            _, used = allreduce_algorithm(s, group_contiguous(gpus, 4), np.asarray(m), "nccl")
            assert not used.endswith("/LL128"), (gpus, m, used)
    t, used = allreduce_algorithm(s, group_contiguous(1440, 4), np.asarray(25.0 * 2**20), "nccl")
    assert 3e-3 < float(t) < 6e-3
    labels = {gpus: nccl.group_lines(s, group_contiguous(gpus, 4), "gradient_allreduce", link)[3] for gpus in (72, 144)}
    assert labels == {72: ("Simple", "LL", "LL128"), 144: ("Simple", "LL")}  # inside one rack every protocol


def test_fit_network_takes_the_rack_as_the_node(tmp_path):
    """oracle fit network --fit-protocol Simple on the NVL72 file: the 72-GPU NVLink level is
    inside the NCCL node, the InfiniBand level beyond it, and the written file is the shipped one."""
    out = tmp_path / "gb.yaml"
    r = run_cli("fit", "network", "--system", "gb200-nvl72", "--fit-protocol", "Simple", "--max-median-error", "0.10",
                "-o", out, "-f", "json", *map(str, LOGS))  # fmt: skip
    assert r.code == 0, r.err
    report = json.loads(r.out)
    assert {(ln["where"], ln["protocol"]) for ln in report["lines"] if ln["tied"]} == {("intra", "LL128")}
    assert ("inter", "LL128") not in {(ln["where"], ln["protocol"]) for ln in report["lines"]}
    assert not r.err_lines or all("ran to 1 PB/s" not in ln for ln in r.err_lines)
    levels = yaml.safe_load(out.read_text())["network"]
    assert [lv["name"] for lv in levels] == ["nvlink", "ib"] and all(lv["basis"] == "fitted" for lv in levels)
    assert "inside a node" in levels[0]["source"] and "across nodes" in levels[1]["source"]
    assert load_system(out).ll128_across_nodes is False and [p.name for p in load_system(out).network[1].protocols] == ["LL"]
    written, shipped = load_system(out).network, load_system("gb200-nvl72").network
    for w, s in zip(written, shipped):
        assert w.beta_s_per_byte == pytest.approx(s.beta_s_per_byte, rel=1e-3)
        assert w.alpha_s == pytest.approx(s.alpha_s, rel=1e-3)


def test_every_protocol_fitted_on_large_messages_only_runs_away_and_says_so():
    """Fitting LL and LL128 too on logs that start at 512 MiB leaves their lines free (they run to
    the floors and explain nothing): a warning per such line names --fit-protocol Simple."""
    r = run_cli("fit", "network", "--system", "gb200-nvl72", "-f", "json", *map(str, LOGS))
    assert r.code == 0, r.err
    assert min(lg["median_rel_error"] for lg in json.loads(r.out)["logs"]) > 0.5
    warned = [ln for ln in r.err_lines if "ran to 1 PB/s" in ln]
    assert warned and all("--fit-protocol Simple" in ln for ln in warned)


def test_resnet50_on_1440_gb200_projects_feasible():
    r = run_cli("predict", "-m", "resnet50", "-s", "gb200-nvl72", "--strategy", "data", "--gpus", "72,1440", "-b", "32",
                "--precision", "bf16", "--mixed-precision", "-f", "json")  # fmt: skip
    assert r.code == 0, r.err
    points = json.loads(r.out)
    points = points["points"] if isinstance(points, dict) else points
    assert [p["gpus"] for p in points] == [72, 1440] and all(p["feasible"] for p in points)
    assert load_system("gb200-nvl72").nodes * 4 == 10368


@pytest.mark.parametrize(("name", "peaks", "bw", "sms"), [
    ("NVIDIA B200", (75, 1100, 2250, 2250), 7700, 148),
    ("NVIDIA GB200", (80, 1250, 2500, 2500), 8000, 152),
])  # fmt: skip
def test_blackwell_library_entries(name, peaks, bw, sms):
    """NVIDIA's per-GPU tables list the tensor rates with 2:4 sparsity: the entries hold half."""
    g = lookup(name)
    assert g is not None and g.architecture == "blackwell"
    assert tuple(g.peak(p) / 1e12 for p in ("fp32", "tf32", "fp16", "bf16")) == peaks
    assert (g.memory_bandwidth_Bps / 1e9, g.sm_count) == (bw, sms)
    assert lookup_family("B200") is lookup("NVIDIA B200")


def test_pytorch_carries_its_hopper_fit_to_blackwell():
    st = load_stack("pytorch")
    for gpu in ("B200-SXM-180GB", "GB200-186GB"):
        e = st.efficiency_for(gpu, "mixed")
        assert e.value == st.efficiency_for("H100-SXM5-80GB", "mixed").value and "carried over" in e.source
    assert st.efficiency_for("GB200-186GB", "fp32").value == st.efficiency_for("V100-SXM2-16GB", "fp32").value


def test_fit_protocol_is_for_nccl_fits_only(tmp_path):
    """--fit-protocol on a base whose collectives are the ring model: one error, nothing written."""
    out = tmp_path / "never.yaml"
    r = run_cli("fit", "network", "--system", "abci-nominal", "--fit-protocol", "Simple", "-o", out,
                str(ROOT / "data" / "nccl-tests" / "abci-v100" / "inter_vnode_2nodes.txt"))  # fmt: skip
    assert r.code == 2 and "--fit-protocol" in r.err and "Traceback" not in r.err
    assert len(r.err_lines) == 1 and not out.exists()
