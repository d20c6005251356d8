"""``oracle import-model FILE.py:CALLABLE`` (issue 15): a user's module with
squeeze-excitation, transposed convolution and group norm; errors that name the source and
write nothing; --allow-unsupported.  Needs torch only (runs in CI's torch pass)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from oracle.importer.build import import_model  # noqa: E402
from oracle.load.model import load_model  # noqa: E402

# -- user modules, errors, unsupported operations ------------------------------------------

USER_FILE = '''
import torch
from torch import nn


class SE(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(c, c // 4, 1)
        self.fc2 = nn.Conv2d(c // 4, c, 1)

    def forward(self, x):
        s = torch.sigmoid(self.fc2(torch.relu(self.fc1(self.pool(x)))))
        return x * s


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.se = SE(8)
        self.up = nn.ConvTranspose2d(8, 4, 2, stride=2)
        self.norm = nn.GroupNorm(2, 4)
        self.head = nn.Linear(4 * 16 * 16, 10)

    def forward(self, x):
        x = self.norm(self.up(self.se(self.conv(x))))
        return self.head(torch.flatten(x, 1))


class Rolls(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        return self.conv(torch.roll(x, 1, dims=2))


class Branchy(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x
        return -x


def not_a_module():
    return 42
'''


@pytest.fixture
def user_file(tmp_path) -> Path:
    path = tmp_path / "nets.py"
    path.write_text(textwrap.dedent(USER_FILE))
    return path


def test_user_file_with_squeeze_excitation_and_upsampling(user_file):
    got = import_model(f"{user_file}:Net", (3, 8, 8))
    types = [layer.type for layer in got.model.layers]
    assert types == ["conv", "globalavgpool", "conv", "relu", "conv", "sigmoid", "mul",
                     "convtranspose", "groupnorm", "flatten", "fc"]  # fmt: skip
    mul = got.model.layers[6]
    assert mul.inputs == ("conv", "se.sigmoid")
    assert got.model.parameters == got.reference_parameters


def _fails(run, tmp_path, source, *extra):
    out = tmp_path / "out.yaml"
    r = run("import-model", source, "--input", "3,8,8", *extra, "-o", str(out))
    assert r.code == 2, (r.out, r.err)
    assert not out.exists()
    assert len(r.err.strip().splitlines()) == 1, r.err
    return r.err


def test_errors_name_the_source_and_write_nothing(run, tmp_path, user_file):
    err = _fails(run, tmp_path, f"{user_file}:not_a_module")
    assert f"{user_file}:not_a_module" in err and "not a torch.nn.Module" in err
    err = _fails(run, tmp_path, f"{user_file}:Branchy")
    assert "cannot be traced by torch.fx" in err
    err = _fails(run, tmp_path, f"{user_file}:Rolls")
    assert "operation torch.roll at 'roll' is not supported" in err and "--allow-unsupported" in err
    assert "has no attribute 'Missing'" in _fails(run, tmp_path, f"{user_file}:Missing")


def test_allow_unsupported_imports_a_zero_cost_layer_listed_everywhere(run, tmp_path, user_file):
    out = tmp_path / "rolls.yaml"
    r = run("import-model", f"{user_file}:Rolls", "--input", "3,8,8", "--allow-unsupported", "-o", str(out))
    assert r.code == 0, r.err
    text = out.read_text()
    assert "{name: roll, type: unsupported, op: torch.roll, shape: [3, 8, 8]}" in text
    assert "#   roll: torch.roll" in text
    assert 'notes: "zero-cost layers for unsupported operations: roll (torch.roll)"' in text
    model = load_model(out)
    assert model.info[0].flops == 0
    prof = tmp_path / "p.yaml"
    assert run("profile", str(out), "--estimate", "-s", "abci", "-o", str(prof)).code == 0
    r = run("predict", "-m", str(out), "-s", "abci", "-p", str(prof), "--gpus", "4", "-b", "8")
    assert r.code == 0, r.err
    note = "zero-cost layers for unsupported operations: roll (torch.roll)"
    assert note in r.out
    common = ("-m", str(out), "-s", "abci", "-p", str(prof), "--gpus", "4", "-b", "8")
    r = run("search", *common, "-f", "json")
    assert r.code == 0 and json.loads(r.out)["model_note"] == note
    report = tmp_path / "r.md"
    assert run("report", *common, "-o", str(report)).code == 0
    assert f"| model | {note} |" in report.read_text()


