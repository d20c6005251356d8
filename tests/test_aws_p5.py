"""aws-p5-h100: H100 instances on AWS EFA, the inter-node level fitted with NCCL's collective
model to public nccl-tests all-reduce runs on 2 to 32 p5.48xlarge (data/nccl-tests/h100-aws-p5/,
issue 25); the fit's several starts and its NIC bound (--max-bandwidth-GB-per-s)."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
import yaml
from conftest import ROOT, run_cli

from oracle.compute.calibration import nccl_fit
from oracle.compute.network import allreduce_algorithm, group_contiguous
from oracle.load import load_system
from oracle.load.benchlogs import load_benchlog

DATA = ROOT / "data" / "nccl-tests" / "h100-aws-p5"
LOGS = [DATA / f"all_reduce_{n}nodes.txt" for n in (2, 4, 8, 16, 32)]
EFA = 1.0 / 400e9  # the least β of a line: 32 x 100 Gb/s of EFA per instance


def _logs():
    return [load_benchlog(p, gpus_per_node=8) for p in LOGS]


def _fit(logs):
    return nccl_fit.fit_system(logs, load_system("aws-p5-h100"), floors={("inter", p): EFA for p in ("LL", "LL128", "Simple")})


def test_the_logs_hold_the_tables_rows():
    """Each written log's times are the table's sizes over its algbw (nccl-tests' definition)."""
    rows = list(csv.DictReader((DATA / "nccl_all_reduce.csv").read_text().splitlines()))
    for log in _logs():
        mine = [r for r in rows if int(r["Nodes"]) == log.nodes]
        assert log.gpus == 8 * log.nodes and len(log.rows) == len(mine) == 9
        for (m, t), (m_in, t_in), r in zip(log.rows, log.in_place_rows, mine):
            assert m == m_in == int(r["size(MB)"]) * 2**20
            assert t == pytest.approx(m / (float(r["out algbw(GB/s)"]) * 1e9), abs=1e-7)
            assert t_in == pytest.approx(m / (float(r["in algbw(GB/s)"]) * 1e9), abs=1e-7)


def test_shipped_system_reproduces_every_node_count():
    """As `oracle predict` runs it: median |error| <= 10% on 2 to 32 instances."""
    s = load_system("aws-p5-h100")
    assert s.collective_algorithm == "nccl" and s.interconnect.nvls and not s.interconnect.sharp
    for log in _logs():
        m = np.array([float(b) for b, _ in log.rows])
        t = np.array([x for _, x in log.rows])
        pred, _ = allreduce_algorithm(s, group_contiguous(log.gpus, 8), m, "nccl")
        assert np.median(np.abs(pred - t) / t) <= 0.10, log.nodes


def test_shipped_lines_are_the_fits():
    """The file's EFA level holds the lines scripts/fit_aws_p5.sh fits, to its four digits."""
    fit = _fit(_logs())
    level = load_system("aws-p5-h100").network[1]
    shipped = {"Simple": (level.alpha_s, level.beta_s_per_byte)}
    shipped |= {p.name: (p.alpha_s, p.beta_s_per_byte) for p in level.protocols}
    for name, (a, b) in shipped.items():
        fa, fb = fit.lines[("inter", name)]
        assert a == pytest.approx(fa, rel=1e-3) and b == pytest.approx(fb, rel=1e-3), name
        assert b >= EFA * (1 - 1e-3)  # no line faster than the instance's EFA


def test_the_fit_reproduces_every_node_count_from_any_start(monkeypatch):
    """The fit reproduces every node count within 10%, and from NCCL's usual regimes alone it
    reaches the same errors: with NVLS at its measured efficiency (compute/nccl.py) the several
    starts are not needed on these logs (at NCCL's tuner efficiency the regimes alone settled
    with the 2-node log 12% off)."""
    logs = _logs()
    several = [le.median for le in _fit(logs).logs]
    assert max(several) <= 0.10
    monkeypatch.setattr(nccl_fit, "STARTS", (nccl_fit._initial,))
    assert [le.median for le in _fit(logs).logs] == pytest.approx(several, abs=1e-9)

def test_fit_network_bounds_the_lines_by_the_nics(tmp_path):
    out = tmp_path / "p5.yaml"
    r = run_cli("fit", "network", "--system", "aws-p5-h100", "--max-bandwidth-GB-per-s", "400", "-o", out,
                *map(str, LOGS))  # fmt: skip
    assert r.code == 0, r.err
    efa = yaml.safe_load(out.read_text())["network"][1]
    betas = [efa["beta_s_per_byte"]] + [p["beta_s_per_byte"] for p in efa["protocols"]]
    assert min(betas) >= EFA * (1 - 1e-6)
    free = run_cli("fit", "network", "--system", "aws-p5-h100", "-f", "json", *map(str, LOGS))
    assert free.code == 0, free.err
    inter = [ln["beta_s_per_byte"] for ln in json.loads(free.out)["lines"] if ln["where"] == "inter"]
    assert min(inter) < EFA / 100  # unbounded, the LL and LL128 lines run away from what EFA carries


def test_the_bound_is_for_nccl_fits_only():
    r = run_cli("fit", "network", "--system", "abci-nominal", "--max-bandwidth-GB-per-s", "25",
                str(ROOT / "data" / "nccl-tests" / "abci-v100" / "inter_vnode_2nodes.txt"))  # fmt: skip
    assert r.code == 2 and "--max-bandwidth-GB-per-s" in r.err and "Traceback" not in r.err
    assert len(r.err_lines) == 1


def test_without_a_log_across_nodes_the_bound_is_an_error_and_the_levels_beyond_are_kept(tmp_path):
    intra = str(ROOT / "data" / "nccl-tests" / "abci-v100" / "intra_vnode_4nodes.txt")
    out = tmp_path / "one-node.yaml"
    r = run_cli("fit", "network", intra, "-s", "dgx1-v100", "--max-bandwidth-GB-per-s", "1", "-o", out)
    assert r.code == 2 and "--max-bandwidth-GB-per-s" in r.err and not out.exists()
    r = run_cli("fit", "network", intra, "-s", "dgx1-v100", "-o", out)
    assert r.code == 0, r.err
    assert "inter " not in r.out  # no line across nodes was fitted, none is reported
    written, base = load_system(out).network, load_system("dgx1-v100").network
    assert written[0].basis == "fitted" and written[1] == base[1]
