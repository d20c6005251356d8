"""Other names for shipped models and stacks (oracle/resources.ALIASES): what benchmark
suites and frameworks call them resolves to the shipped file, a projection is the same as
under the shipped name, and a name that is neither still lists the shipped ones."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

from oracle.errors import OracleError
from oracle.resources import ALIASES, resolve, shipped_dir, shipped_names


@pytest.mark.parametrize("kind", sorted(ALIASES))
def test_every_alias_names_a_shipped_file_and_no_shipped_name_is_an_alias(kind):
    names = shipped_names(kind)
    for alias, target in ALIASES[kind].items():
        assert target in names, (alias, target)
        assert resolve(kind, alias) == shipped_dir(kind) / f"{target}.yaml"
        assert alias not in {n.replace("_", "").replace("-", "") for n in names}  # never hides a file


@pytest.mark.parametrize("given, shipped", [
    ("inception3", "inception_v3"), ("inception4", "inception_v4"), ("resnet50v1.5", "resnet50"),
    ("RN50", "resnet50"), ("resnet50_v1.5", "resnet50"), ("Inception-v1", "googlenet"),
])  # fmt: skip
def test_benchmark_suite_model_names(given, shipped):
    assert resolve("models", given) == shipped_dir("models") / f"{shipped}.yaml"


@pytest.mark.parametrize("given, shipped", [("TensorFlow2", "tensorflow"), ("TensorFlow1", "tensorflow"),
                                            ("tf", "tensorflow"), ("torch", "pytorch")])  # fmt: skip
def test_framework_names_give_the_stack_and_the_output_names_it(given, shipped):
    args = ("predict", "-m", "resnet50", "-s", "dgx-a100-80gb", "-p", "resnet50_a100_fp16_estimated",
            "--gpus", "8", "-b", "64", "--mixed-precision", "-f", "json")  # fmt: skip
    a, b = run_cli(*args, "--stack", given), run_cli(*args, "--stack", shipped)
    assert a.code == 0 and b.code == 0, a.err + b.err
    assert json.loads(a.out) == json.loads(b.out) and json.loads(a.out)[0]["stack"] == shipped


def test_an_unknown_name_still_lists_the_shipped_ones():
    with pytest.raises(OracleError) as e:
        resolve("models", "inception5")
    assert "inception_v4" in str(e.value.hint)
    r = run_cli("predict", "-m", "resnet50", "-s", "abci", "-p", "resnet50_v100", "--stack", "tensorflow3")
    assert r.code == 2 and "pytorch" in r.err and "tensorflow" in r.err
