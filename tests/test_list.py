"""`oracle list` and `oracle show KIND` without a name: what ships (issue 17 item 3)."""

from __future__ import annotations

import json

import pytest

from oracle.resources import shipped_names


def test_list_every_shipped_file(run):
    r = run("list", "-f", "json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    for kind in ("models", "systems", "profiles"):
        assert [e["name"] for e in doc[kind]] == shipped_names(kind)
        assert all(e["what"] and e["title"] for e in doc[kind])
    assert any("V100" in e["what"] for e in doc["systems"])


def test_list_table_says_how_to_use_and_make_them(run):
    r = run("list", "profiles", "--width", "140")
    assert r.code == 0, r.err
    text = " ".join(r.out.split())
    assert "oracle profile MODEL --estimate --system S" in text
    assert "resnet50_v100" in r.out and "abci" not in r.out.split("profiles:")[0]


@pytest.mark.parametrize("kind,name", [("model", "resnet50"), ("system", "abci"), ("profile", "vgg16_v100")])
def test_show_without_a_name_lists(run, kind, name):
    r = run("show", kind, "--width", "140")
    assert r.code == 0, r.err
    assert name in r.out


def test_list_rejects_an_unknown_kind(run):
    r = run("list", "networks")
    assert r.code == 2 and "Traceback" not in r.err


def test_list_gpus_names_the_library(run):
    """`oracle list gpus`: every GPU of oracle/gpus.py with its figures; `oracle list` alone
    keeps to the shipped files."""
    from oracle.gpus import LIBRARY

    r = run("list", "gpus", "-f", "json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert list(doc) == ["gpus"] and [e["name"] for e in doc["gpus"]] == [g.name for g in LIBRARY]
    v100 = next(e for e in doc["gpus"] if e["name"] == "V100-SXM2-16GB")
    assert v100["title"] == "Volta" and "datasheet" in v100["source"]
    assert v100["what"] == "fp32 15.7 / fp16 125 TFLOPS, 900 GB/s, 80 SMs"
    assert "gpus" not in json.loads(run("list", "-f", "json").out)
    r = run("list", "gpus", "--width", "100")
    assert r.code == 0 and "gpu.model NAME in a system file" in r.out and "RTX-3090" in r.out
