"""Shipped system names say what a file describes (issue 23, point 3): the measured cloud
H100 fabric and the nominal InfiniBand DGX H100 SuperPOD under their own names, every
shipped system says what it is for and where each network level comes from, and the old
ambiguous names are refused with the choice spelled out."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli
from test_robustness import one_error

from oracle.load import load_system
from oracle.load.system import BASES
from oracle.resources import shipped_names


@pytest.mark.parametrize("name", shipped_names("systems"))
def test_every_shipped_system_says_what_it_is_for_and_where_its_levels_come_from(name):
    s = load_system(name)
    assert len(s.use_for.split()) >= 8, (name, s.use_for)
    assert all(lv.basis in BASES for lv in s.network), [(lv.name, lv.basis) for lv in s.network]


def test_the_two_h100_clusters_are_told_apart():
    cloud, ib = load_system("gcp-a3mega-h100"), load_system("dgx-h100-superpod")
    assert "A3 Mega" in cloud.name and "InfiniBand" in ib.name
    assert [lv.basis for lv in cloud.network] == ["nominal", "fitted"]  # fitted to its nccl-tests log (issue 25)
    assert {lv.basis for lv in ib.network} == {"nominal"}
    assert "dgx-h100-superpod" in cloud.use_for and "gcp-a3mega-h100" in ib.use_for


@pytest.mark.parametrize("old", ["dgx-h100", "h100-ndr"])
def test_an_old_name_is_refused_with_the_choice(old):
    r = run_cli("predict", "-m", "resnet50", "-s", old, "-p", "resnet50_v100", "--gpus", "8")
    line = one_error(r, old, "dgx-h100-superpod", "gcp-a3mega-h100")
    assert "renamed" in line


def test_list_systems_says_measured_or_nominal():
    r = run_cli("list", "systems", "--format", "json")
    assert r.code == 0, r.err
    what = {e["name"]: e["what"] for e in json.loads(r.out)["systems"]}
    assert "tcpxo fitted" in what["gcp-a3mega-h100"] and "Use for:" in what["gcp-a3mega-h100"]
    assert "network nominal" in what["dgx-h100-superpod"]
    assert "network fitted" in what["abci"] and "network calibrated" in what["abci-2020"]
    r = run_cli("list", "systems", "--width", "200")
    assert "tcpxo fitted" in r.out


def test_a_bad_basis_is_one_error_naming_file_and_key(tmp_path):
    from oracle.resources import resolve

    text = resolve("systems", "dgx-h100-superpod").read_text().replace("basis: nominal", "basis: guessed", 1)
    bad = tmp_path / "s.yaml"
    bad.write_text(text)
    one_error(run_cli("show", "system", str(bad)), str(bad), "basis", "measured")


def test_fitted_levels_say_fitted(tmp_path):
    """`oracle fit network` writes basis: fitted on every level, and drops the base's
    use_for (the base's purpose is not the fitted machine's)."""
    from conftest import ROOT

    out = tmp_path / "fit.yaml"
    logs = sorted((ROOT / "data" / "nccl-tests" / "abci-v100").glob("inter_vnode_2nodes.txt"))
    r = run_cli("fit", "network", *map(str, logs), "--system", "abci-nominal", "-o", str(out))
    assert r.code == 0, r.err
    s = load_system(str(out))
    assert {lv.basis for lv in s.network} == {"fitted"} and s.use_for == ""


@pytest.mark.parametrize(("name", "gpu", "gpus"), [("bigbasin-p100", "P100-SXM2-16GB", 256),
                                                   ("mn1-p100", "P100-PCIE-16GB", 1024),
                                                   ("tencent-p40", "P40-24GB", 2048)])  # fmt: skip
def test_the_published_large_runs_clusters_are_shipped_by_name(name, gpu, gpus):
    """Goyal's, Akiba's and Jia's clusters (validation/large-scale-published.csv names them):
    a user reproducing those runs names the cluster, and the paper's GPU count fits in it."""
    import csv

    from conftest import ROOT

    s = load_system(name)
    assert s.gpu_model == gpu and s.total_gpus >= gpus
    rows = list(csv.DictReader((ROOT / "validation" / "large-scale-published.csv").open(encoding="utf-8")))
    assert any(r["system"] == name for r in rows)
    r = run_cli("predict", "-m", "resnet50", "-s", name, "--gpus", str(gpus), "-b", "32", "--strategy", "data",
                "--stack", "none", "-f", "json")  # fmt: skip
    assert r.code == 0 and json.loads(r.out)[0]["feasible"], r.err
