"""``oracle profile --estimate --stack NAME`` (issue 25): the stack is named with the
efficiency a projection with it applies, and applied once: the written times stay the
compute model's, since every projection of an estimated profile divides them by the
stack's efficiency (compute/stack.compute_factor)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from conftest import run_cli
from test_robustness import one_error

REPO = Path(__file__).resolve().parents[1]

EST = ("profile", "resnet50", "--estimate", "-s", "dgx-a100-80gb", "--precision", "fp16")
TF_MIXED_EFFICIENCY = 1.05  # stacks/tensorflow.yaml compute.efficiency.mixed


def _layers(path):
    return yaml.safe_load(path.read_text())["layers"]


def test_the_stack_is_named_and_its_times_are_the_compute_models(tmp_path):
    plain, named = tmp_path / "plain.yaml", tmp_path / "named.yaml"
    assert run_cli(*EST, "-o", plain).code == 0
    r = run_cli(*EST, "--stack", "tensorflow", "-o", named)
    assert r.code == 0, r.err
    assert _layers(named) == _layers(plain)
    assert "# Stack tensorflow" in named.read_text() and f"efficiency {TF_MIXED_EFFICIENCY:g}" in named.read_text()
    plain_s = float(re.search(r"iteration at batch 32 +([0-9.e+-]+) s", r.out).group(1))
    stack_s = float(re.search(r"with stack tensorflow +([0-9.e+-]+) s", r.out).group(1))
    assert stack_s == pytest.approx(plain_s / TF_MIXED_EFFICIENCY, rel=2e-3)  # 4 significant digits printed
    assert "GPU overhead" not in named.read_text()  # the tensorflow stack has none


def test_the_pytorch_stack_names_its_gpu_overhead_per_layer(tmp_path):
    """The pytorch stack adds 7 us per layer and iteration to an estimated profile's
    forward and backward (stacks/pytorch.yaml iteration.gpu_overhead_s_per_layer): the
    header says so and the summary's iteration with the stack holds ResNet-50's 175 x 7 us."""
    plain, named = tmp_path / "plain.yaml", tmp_path / "named.yaml"
    assert run_cli(*EST, "-o", plain).code == 0
    r = run_cli(*EST, "--stack", "pytorch", "-o", named)
    assert r.code == 0, r.err
    assert _layers(named) == _layers(plain)
    assert "adds 175 layers x 7e-06 s of GPU overhead per iteration" in named.read_text()
    plain_s = float(re.search(r"iteration at batch 32 +([0-9.e+-]+) s", r.out).group(1))
    stack_s = float(re.search(r"with stack pytorch +([0-9.e+-]+) s", r.out).group(1))
    eff = re.search(r"efficiency ([0-9.]+) \(", named.read_text()).group(1)
    assert stack_s == pytest.approx(plain_s / float(eff) + 175 * 7e-6, rel=2e-3)


def test_a_projection_applies_the_stack_once(tmp_path):
    """The profile written with --stack projects exactly as the plain one under the stack."""
    plain, named = tmp_path / "plain.yaml", tmp_path / "named.yaml"
    run_cli(*EST, "-o", plain)
    run_cli(*EST, "--stack", "tensorflow", "-o", named)
    args = ("predict", "-m", "resnet50", "-s", "dgx-a100-80gb", "--gpus", "1,8", "--stack", "tensorflow",
            "--precision", "fp16", "-f", "csv")  # fmt: skip
    a, b = run_cli(*args, "-p", plain), run_cli(*args, "-p", named)
    assert a.code == 0 and b.code == 0, (a.err, b.err)
    strip = lambda out: [ln for ln in out.splitlines()  # noqa: E731
                         if "plain.yaml" not in ln and "named.yaml" not in ln]  # fmt: skip
    assert strip(a.out) == strip(b.out) and len(strip(a.out)) > 2


def test_stack_without_estimate_is_one_error():
    one_error(run_cli("profile", "resnet50", "--stack", "pytorch"), "--stack", "--estimate")


def test_stack_none_is_no_stack_as_for_every_other_command(tmp_path):
    """--stack none (vocabulary.NO_STACK) means no stack here too, as for predict, search,
    fit, ... (it was 'no shipped stack named none'), and is named so: the file's header and
    the summary say none, the summary's iteration with it the plain one."""
    plain, none = tmp_path / "plain.yaml", tmp_path / "none.yaml"
    assert run_cli(*EST, "-o", plain).code == 0
    r = run_cli(*EST, "--stack", "none", "-o", none)
    assert r.code == 0, r.err
    assert _layers(none) == _layers(plain) and "# Stack none: a projection with no stack" in none.read_text()
    plain_s = re.search(r"iteration at batch 32 +([0-9.e+-]+) s", r.out).group(1)
    assert re.search(r"with stack none +([0-9.e+-]+) s \(no stack", r.out).group(1) == plain_s
    one_error(run_cli(*EST, "--stack", "nonesuch"), "nonesuch", "pytorch")  # an unknown one lists the shipped


def test_without_stack_the_systems_default_is_named(tmp_path):
    """Bug 6a: without --stack the estimate is made for the stack a projection on the system
    takes (its file's stack:, else none), and the header and summary name it and say why."""
    plain, named = tmp_path / "plain.yaml", tmp_path / "named.yaml"
    r = run_cli(*EST, "-o", plain)  # dgx-a100-80gb: stack pytorch
    s = run_cli(*EST, "--stack", "pytorch", "-o", named)
    assert r.code == 0 and s.code == 0, (r.err, s.err)
    head = plain.read_text().split("\nmodel:")[0]
    assert "# Stack pytorch, the default on DGX A100 80GB SuperPOD (HDR InfiniBand), --stack not given: a projection under it" in head
    with_ = r"with stack pytorch +([0-9.e+-]+) s"
    assert re.search(with_, r.out).group(1) == re.search(with_, s.out).group(1)
    assert "the default on DGX A100 80GB SuperPOD (HDR InfiniBand), --stack not given" in r.out
    abci = tmp_path / "abci.yaml"  # its file names no stack: none
    a = run_cli("profile", "resnet50", "--estimate", "-s", "abci", "-o", abci)
    assert a.code == 0, a.err
    assert "# Stack none, the default on ABCI, --stack not given" in abci.read_text()
    assert re.search(r"with stack none +[0-9.e+-]+ s \(the default on ABCI", a.out)


def test_a_modified_copy_of_a_shipped_stack_is_named_by_its_path(tmp_path):
    """Bug 6e: a copy of stacks/pytorch.yaml (still ``name: pytorch``) is named by its path."""
    copy = tmp_path / "pytorch.yaml"
    text = (REPO / "stacks" / "pytorch.yaml").read_text()
    assert "bucket_MB: {value: 25," in text
    copy.write_text(text.replace("bucket_MB: {value: 25,", "bucket_MB: {value: 50,", 1))
    out = tmp_path / "p.yaml"
    r = run_cli(*EST, "--stack", str(copy), "-o", out)
    assert r.code == 0, r.err
    assert f"# Stack {copy}: a projection" in out.read_text() and f"with stack {copy}" in r.out
