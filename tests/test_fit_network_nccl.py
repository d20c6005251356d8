"""``oracle fit network`` on a system whose collectives are NCCL's (issue 25): it fits NCCL's
collective model (compute/calibration/nccl_fit.py) to every log at once, and the system it writes
reproduces the logs through ``--collective nccl`` as the report says."""

from __future__ import annotations

import json

import numpy as np
import yaml
from conftest import ROOT, run_cli

from oracle.compute.network import allreduce_algorithm, group_contiguous
from oracle.load import load_system
from oracle.load.benchlogs import load_benchlog

ABCI = sorted(str(p) for p in (ROOT / "data" / "nccl-tests" / "abci-v100").glob("*.txt"))
A3 = str(ROOT / "data" / "nccl-tests" / "h100-a3mega" / "all_reduce_perf_2x8_H100_GCP-A3mega.txt")


def _abci_nccl(tmp_path):
    """abci-nominal with NCCL's collectives (the shipped file keeps ParaDL's ring)."""
    doc = yaml.safe_load((ROOT / "systems" / "abci-nominal.yaml").read_text())
    doc["collectives"] = {"algorithm": "nccl"}
    path = tmp_path / "abci-nccl.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _medians(system_file, logs) -> dict[str, float]:
    """Each log's median |rel. error| of the written system's NCCL all-reduce."""
    s = load_system(system_file)
    out = {}
    for f in logs:
        log = load_benchlog(f)
        m = np.array([float(b) for b, _ in log.rows])
        t = np.array([x for _, x in log.rows])
        pred, _ = allreduce_algorithm(s, group_contiguous(log.gpus, s.gpus_per_node), m, "nccl")
        out[f] = float(np.median(np.abs(pred - t) / t))
    return out


def test_abci_written_system_reproduces_every_log_as_reported(tmp_path):
    """1-32 nodes: the written system, run as `--collective nccl` runs it, gives each log the
    median error the report states (to its rounding of the lines), each <= 10%."""
    base, out = _abci_nccl(tmp_path), tmp_path / "fitted.yaml"
    r = run_cli("fit", "network", "--system", base, "-o", out, "--format", "json", *ABCI)
    assert r.code == 0, r.err
    report = {lg["file"]: lg["median_rel_error"] for lg in json.loads(r.out)["logs"]}
    assert report.keys() == set(ABCI)
    got = _medians(out, ABCI)
    for f in ABCI:
        assert got[f] <= 0.10 and abs(got[f] - report[f]) < 1e-3, (f, got[f], report[f])
    levels = yaml.safe_load(out.read_text())["network"]
    assert [lv["basis"] for lv in levels] == ["fitted"] * 3
    assert [p["name"] for p in levels[1]["protocols"]] == ["LL", "LL128"]
    # one set of inter-node lines for every level beyond the node
    assert levels[1]["alpha_s"] == levels[2]["alpha_s"] and levels[1]["protocols"] == levels[2]["protocols"]


def test_a3mega_keeps_the_nvswitch_level_and_reproduces_its_log(tmp_path):
    """Two nodes only: no log runs inside one node, so the base's NVSwitch level is copied;
    the inter-node level is refitted, bounded by the node's 8 x 200 Gb/s of GPU NICs as the
    shipped file was, and the written system reproduces the log."""
    out = tmp_path / "a3.yaml"
    r = run_cli("fit", "network", "--system", "gcp-a3mega-h100", "--max-bandwidth-GB-per-s", "200", "-o", out,
                "--width", "120", A3)  # fmt: skip
    assert r.code == 0, r.err
    assert "NCCL" in r.out and "nvls/Simple" in r.out
    written, shipped = load_system(out).network, load_system("gcp-a3mega-h100").network
    assert written[0] == shipped[0]
    assert written[1].basis == "fitted" and written[1].max_gpus == shipped[1].max_gpus
    assert _medians(out, [A3])[A3] <= 0.02


def test_max_median_error_checks_the_nccl_fit_and_writes_nothing(tmp_path):
    out = tmp_path / "never.yaml"
    r = run_cli("fit", "network", "--system", _abci_nccl(tmp_path), "-o", out, "--max-median-error", "0.01", *ABCI)
    assert r.code == 1 and "NCCL model" in r.err and not out.exists()


def test_ring_systems_still_fit_the_ring(tmp_path):
    """abci-nominal's collectives are the ring: its fit is the ring model's, per span."""
    r = run_cli("fit", "network", "--system", "abci-nominal", "--format", "json", *ABCI)
    assert r.code == 0 and "levels" in json.loads(r.out) and "NCCL" not in r.out


def test_in_place_fits_the_in_place_times():
    from oracle.compute.calibration.nccl_fit import fit_system

    log = load_benchlog(A3)
    assert log.in_place_rows and log.in_place_rows != log.rows
    base = load_system("gcp-a3mega-h100")
    fit = fit_system([log], base, in_place=True)
    t = np.array([x for _, x in log.in_place_rows])
    pred = t * (1 + fit.logs[0].errors)
    assert fit.logs[0].sizes == tuple(float(b) for b, _ in log.in_place_rows)
    assert np.allclose(pred, [float(x) for x in allreduce_time(fit.lines, base, log)], rtol=1e-9)


def allreduce_time(lines, base, log):
    """The model's times of the log's sizes with ``lines`` (compute/calibration/nccl_fit.predict)."""
    from oracle.compute.calibration.nccl_fit import predict, samples_of
    from oracle.compute.nccl import offers

    return predict(samples_of(log, in_place=True), lines, offers=offers(base))[0]
