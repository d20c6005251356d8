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
from oracle.compute.network import allreduce_algorithm, group_contiguous
from oracle.gpus import lookup, lookup_family
from oracle.load import load_stack, load_system
from oracle.load.benchlogs import load_benchlog

DATA = ROOT / "data" / "nccl-tests" / "gb200-nvl72-coreweave"
RACKS = (1, 2, 20)
LOGS = [DATA / f"all_reduce_{18 * r}nodes.txt" for r in RACKS]
FITTED = ("LL", "Simple")  # as benchmarks/nccl_tests.py: the logs start at 512 MiB


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
    """NVLS's all-reduce bus bandwidth is 2e x NVLink per direction: 840 GB/s on one rack, where
    NCCL's tuner constant (0.74) would give 1,332; 480 on 8 H100 (NVIDIA/nccl-tests#212)."""
    one_rack = _logs()[0]
    peak = np.mean([2 * 71 / 72 * m / t / 1e9 for m, t in one_rack.rows if m >= 4 * 2**30])
    assert peak == pytest.approx(2 * nccl.NVLS_EFFICIENCY[4] * 900, rel=0.01)
    assert 2 * nccl.NVLS_EFFICIENCY[3] * 450 == pytest.approx(480, rel=0.01)


def test_the_bandwidth_between_racks_is_the_20_rack_slope():
    s = load_system("gb200-nvl72")
    (m1, t1), (m2, t2) = _logs()[2].rows[-2:]
    slope = 2 * (m2 - m1) / (t2 - t1) / 1e9  # bus bandwidth of the extra bytes, GB/s
    assert 1 / s.network[1].beta_s_per_byte / 1e9 == pytest.approx(slope, rel=0.005)
    assert s.network[1].alpha_s == 14e-6  # NCCL's network tree step, not fitted (the file's header)


def test_a_free_fit_reproduces_every_rack_count():
    """The Simple lines fitted freely (LL at NCCL's constants): every log within 10% (the issue's target)."""
    fit = nccl_fit.fit_system(_logs(), load_system("gb200-nvl72"), protocols=FITTED, keep=("LL",))
    assert max(le.median for le in fit.logs) <= 0.10
    assert set(fit.lines) == {(w, p) for w in ("intra", "inter") for p in FITTED}
    assert fit.lines[("inter", "LL")] == nccl_fit.base_lines(load_system("gb200-nvl72"), 1440)[("inter", "LL")]


def test_the_shipped_file_errs_as_its_header_says():
    """NCCL's latencies: too fast on the runs' large messages, by the medians and the worst ratio
    the file's header states; never slower than measured."""
    header = (ROOT / "systems" / "gb200-nvl72.yaml").read_text()
    pairs = _measured_vs_shipped()
    medians = [100 * float(np.median(np.abs(p - t) / t)) for t, p in pairs]
    stated = re.search(r"median ([\d.]+)% on one rack, ([\d.]+)%\s+#?\s*on two, ([\d.]+)% on twenty", header)
    assert [f"{x:.1f}" for x in medians] == list(stated.groups())
    worst = max(float((t / p).max()) for t, p in pairs)
    assert f"up to {worst:.1f}x at 512 MiB" in header
    assert all((p <= t * 1.06).all() for t, p in pairs)


def test_fit_network_takes_the_rack_as_the_node(tmp_path):
    """oracle fit network on the NVL72 file: the 72-GPU NVLink level is inside the NCCL node
    (refitted as such from the one-rack log), the InfiniBand level beyond it."""
    out = tmp_path / "gb.yaml"
    r = run_cli("fit", "network", "--system", "gb200-nvl72", "--max-bandwidth-GB-per-s", "3600", "-o", out,
                "-f", "json", *map(str, LOGS))  # fmt: skip
    assert r.code == 0, r.err
    where = {(ln["where"], ln["protocol"]) for ln in json.loads(r.out)["lines"]}
    assert ("intra", "Simple") in where and ("inter", "Simple") in where
    levels = yaml.safe_load(out.read_text())["network"]
    assert [lv["name"] for lv in levels] == ["nvlink", "ib"] and all(lv["basis"] == "fitted" for lv in levels)
    assert "inside a node" in levels[0]["source"] and "across nodes" in levels[1]["source"]


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
