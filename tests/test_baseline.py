"""oracle snapshot / oracle check: the projection regression gate."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import cli_runner

from oracle.cli.main import cli

REPO = Path(__file__).resolve().parents[1]


def invoke(*args):
    return cli_runner().invoke(cli, [str(a) for a in args])


def test_shipped_baseline_passes():
    res = invoke("check", REPO / "baselines" / "shipped.json")
    assert res.exit_code == 0, res.output
    assert "unchanged" in res.stdout


def _setup(tmp_path):
    shutil.copy(REPO / "systems" / "abci-nominal.yaml", tmp_path / "mysys.yaml")
    (tmp_path / "cases.yaml").write_text(
        "cases:\n"
        "  - {model: resnet50, system: mysys.yaml, profile: resnet50_v100, gpus: 4-64,"
        " strategy: 'data,data+filter', batch_per_gpu: 32}\n"
    )
    res = invoke("snapshot", tmp_path / "cases.yaml", "-o", tmp_path / "base.json")
    assert res.exit_code == 0, res.output
    return tmp_path / "base.json"


def test_check_passes_then_fails_naming_points_after_a_system_change(tmp_path):
    base = _setup(tmp_path)
    assert invoke("check", base).exit_code == 0
    sys_file = tmp_path / "mysys.yaml"
    text = sys_file.read_text()
    assert "bandwidth_GB_per_s: 12.5" in text
    sys_file.write_text(text.replace("bandwidth_GB_per_s: 12.5", "bandwidth_GB_per_s: 10.0", 1))
    res = invoke("check", base)
    assert res.exit_code == 1
    assert "data on 8 GPUs (8x1): total_s" in res.stdout  # inter-node from 8 GPUs: the rack level
    assert "data on 4 GPUs" not in res.stdout  # 4 GPUs stay on NVLink: unchanged
    assert "moved by more than rtol" in res.stderr


def test_rtol_tolerates_small_moves(tmp_path):
    base = _setup(tmp_path)
    sys_file = tmp_path / "mysys.yaml"
    # 12.49 GB/s: β grows by 0.08%, the communication of inter-node points by as much
    sys_file.write_text(sys_file.read_text().replace("bandwidth_GB_per_s: 12.5", "bandwidth_GB_per_s: 12.49", 1))
    assert invoke("check", base).exit_code == 1
    assert invoke("check", base, "--rtol", "1e-3").exit_code == 0


def test_baseline_moves_with_its_folder(tmp_path):
    (tmp_path / "a").mkdir()
    base = _setup(tmp_path / "a")
    moved = tmp_path / "b"
    shutil.copytree(base.parent, moved)
    assert invoke("check", moved / "base.json").exit_code == 0


def test_bad_baseline_and_cases_exit_2(tmp_path):
    (tmp_path / "x.json").write_text("{not json")
    res = invoke("check", tmp_path / "x.json")
    assert res.exit_code == 2 and "invalid JSON" in res.stderr
    (tmp_path / "y.json").write_text(json.dumps({"cases": []}))
    assert invoke("check", tmp_path / "y.json").exit_code == 2
    (tmp_path / "c.yaml").write_text("cases:\n  - {model: resnet50, system: abci}\n")
    res = invoke("snapshot", tmp_path / "c.yaml")
    assert res.exit_code == 2 and "profile" in res.stderr
    (tmp_path / "d.yaml").write_text("cases:\n  - {model: resnet50, system: abci, profile: resnet50_v100, batch: 1, batch_per_gpu: 2}\n")
    assert invoke("snapshot", tmp_path / "d.yaml").exit_code == 2


def test_shipped_points_name_their_stack():
    """Bug 6c: every shipped point records the stack in force (the system file's, as
    --stack: none on ABCI and Lassen, pytorch on the DGX H100 SuperPOD and GB200 racks)."""
    doc = json.loads((REPO / "baselines" / "shipped.json").read_text())
    by_system = {}
    for entry in doc["cases"]:
        by_system.setdefault(entry["case"]["system"], set()).update(p["stack"] for p in entry["points"])
    assert by_system["abci"] == by_system["lassen"] == {"none"}
    assert by_system["dgx-h100-superpod"] == by_system["gb200-nvl72"] == {"pytorch"}


def test_a_case_names_its_stack_and_check_sees_the_stack_change(tmp_path):
    """A case's ``stack:`` means --stack; a stack file's path is recorded relative to the
    baseline (moving with it); a different stack in force is a move even where the numbers
    stay; a baseline whose points record no stack (older ones) is still checked."""
    shutil.copy(REPO / "stacks" / "pytorch.yaml", tmp_path / "mine.yaml")
    (tmp_path / "cases.yaml").write_text(
        "cases:\n"
        "  - {model: resnet50, system: dgx-a100-80gb, profile: estimate, gpus: 8, strategy: data,"
        " batch_per_gpu: 64, stack: mine.yaml}\n"
        "  - {model: resnet50, system: dgx-a100-80gb, profile: estimate, gpus: 8, strategy: data,"
        " batch_per_gpu: 64, stack: none}\n"
        "  - {model: resnet50, system: dgx-a100-80gb, profile: estimate, gpus: 8, strategy: data, batch_per_gpu: 64}\n"
    )
    (tmp_path / "out").mkdir()
    base = tmp_path / "out" / "base.json"
    assert invoke("snapshot", tmp_path / "cases.yaml", "-o", base).exit_code == 0
    doc = json.loads(base.read_text())
    assert doc["cases"][0]["case"]["stack"] == "../mine.yaml"
    assert [e["points"][0]["stack"] for e in doc["cases"]] == ["../mine.yaml", "none", "pytorch"]
    assert doc["cases"][0]["points"][0]["total_s"] == doc["cases"][2]["points"][0]["total_s"]  # the same values
    assert doc["cases"][1]["points"][0]["total_s"] != doc["cases"][2]["points"][0]["total_s"]
    assert invoke("check", base).exit_code == 0
    # the same numbers under another name: the stack in force changed
    doc["cases"][2]["points"][0]["stack"] = "tensorflow"
    base.write_text(json.dumps(doc))
    res = invoke("check", base)
    assert res.exit_code == 1 and "stack 'tensorflow' -> 'pytorch'" in res.stdout, res.output
    for entry in doc["cases"]:  # as written before points recorded their stack
        for p in entry["points"]:
            del p["stack"]
    base.write_text(json.dumps(doc))
    assert invoke("check", base).exit_code == 0


def test_a_case_stack_of_the_wrong_kind_is_one_error(tmp_path):
    (tmp_path / "c.yaml").write_text(
        "cases:\n  - {model: resnet50, system: abci, profile: resnet50_v100, batch_per_gpu: 32, stack: [pytorch]}\n")
    res = invoke("snapshot", tmp_path / "c.yaml")
    assert res.exit_code == 2 and "cases[0].stack" in res.stderr and "Traceback" not in res.stderr + res.stdout
    (tmp_path / "d.yaml").write_text(
        "cases:\n  - {model: resnet50, system: abci, profile: resnet50_v100, batch_per_gpu: 32, stack: nonesuch}\n")
    res = invoke("snapshot", tmp_path / "d.yaml")
    assert res.exit_code == 2 and "nonesuch" in res.stderr and "pytorch" in res.stderr


def test_an_unknown_name_in_a_cases_file_names_the_file_the_case_and_its_key(tmp_path):
    """An unknown stack, system, model or profile is one error naming the cases file, its
    line and the key (``cases[1].stack``), as a sweep file's (services/sweep.check_names),
    before anything is projected or written; a named file's own problem keeps that file's
    line and says where the cases file names it; a baseline naming an unknown system names
    the baseline and ``cases[0].case.system``."""
    values = {"model": "resnet50", "system": "abci", "profile": "resnet50_v100", "gpus": 4, "strategy": "data",
              "batch_per_gpu": 32}  # fmt: skip
    good = "{" + ", ".join(f"{k}: {v}" for k, v in values.items())
    out = tmp_path / "out.json"
    for key, bad in (("stack", "pytorchh"), ("system", "abcii"), ("model", "resnet5"), ("profile", "resnet50_v10")):
        case = "{" + ", ".join(f"{k}: {v}" for k, v in {**values, key: bad}.items()) + "}"
        (tmp_path / "c.yaml").write_text(f"cases:\n  - {good}}}\n  -\n    {case}\n")
        res = invoke("snapshot", tmp_path / "c.yaml", "-o", out)
        assert res.exit_code == 2 and "Traceback" not in res.output, res.output
        assert f"{tmp_path / 'c.yaml'}:4: cases[1].{key}: {key} '{bad}'" in res.stderr, res.stderr
        assert not out.exists()
    (tmp_path / "mine.yaml").write_text("name: mine\n")
    (tmp_path / "c.yaml").write_text(f"cases:\n  - {good}, stack: mine.yaml}}\n")
    res = invoke("snapshot", tmp_path / "c.yaml")
    assert res.exit_code == 2 and f"{tmp_path / 'mine.yaml'}:1:" in res.stderr
    assert f"named by cases[0].stack of {tmp_path / 'c.yaml'}, line 2" in res.stderr
    (tmp_path / "c.yaml").write_text(f"cases:\n  - {good}}}\n")
    assert invoke("snapshot", tmp_path / "c.yaml", "-o", out).exit_code == 0
    out.write_text(out.read_text().replace('"system": "abci"', '"system": "abcii"'))
    res = invoke("check", out)
    assert res.exit_code == 2 and f"{out}: cases[0].case.system: system 'abcii'" in res.stderr, res.stderr


def test_a_point_with_no_split_is_labelled_so_not_0x0():
    from oracle.compute.baseline import point_label

    assert point_label({"strategy": "data", "gpus": 8, "p1": 8, "p2": 1}) == "data on 8 GPUs (8x1)"
    assert point_label({"strategy": "data+spatial", "gpus": 2, "p1": 0, "p2": 0}) == "data+spatial on 2 GPUs (no split p1·p2)"
