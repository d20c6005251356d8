"""``oracle import-model`` without its optional extras: one line saying which to install
(runs in CI's core pass, where torch is absent; here torch is hidden when present)."""

from __future__ import annotations

import sys


def test_missing_torch_names_the_extra(run, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch -> ImportError
    out = tmp_path / "m.yaml"
    r = run("import-model", "torchvision:resnet50", "--input", "3,224,224", "-o", str(out))
    assert r.code == 2
    assert r.err.strip().splitlines() == [
        "oracle: error: torchvision:resnet50: needs the Python package 'torch', which is not"
        " installed (install it with: pip install 'oracle[torch]')"
    ]
    assert not out.exists()


def test_missing_onnx_names_the_extra(run, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)
    model = tmp_path / "m.onnx"
    model.write_bytes(b"not read")
    r = run("import-model", str(model), "-o", str(tmp_path / "m.yaml"))
    assert r.code == 2 and not (tmp_path / "m.yaml").exists()
    assert "needs the Python package 'onnx', which is not installed (install it with: pip install 'oracle[onnx]')" in r.err


def test_bad_input_shape_and_source(run):
    r = run("import-model", "torchvision:resnet50", "--input", "3,x,224")
    assert r.code == 2 and "--input: got '3,x,224'; expected channels then 1-3 spatial extents" in r.err
    r = run("import-model", "resnet50", "--input", "3,224,224")
    assert r.code == 2 and "is not an import source" in r.err
