"""Memory beyond ParaDL (issue 8): optimizer state, mixed precision, ZeRO, activation
checkpointing and the framework workspace change the memory exactly as their formulas
say, and the out-of-memory limits move accordingly."""

from __future__ import annotations

import textwrap

import pytest

from oracle import api
from oracle.load import load_model

M = load_model("resnet50")
W = M.parameters
ACT = sum(i.input_elements + i.output_elements for i in M.info)  # Σ(|x|+|y|) per sample


def pt(strategy="data", gpus=8, b=16, system="abci", **kw):
    """The one point of a plain (non-hybrid) strategy."""
    kw.setdefault("memory_model", "paradl")  # these pin ParaDL's formula with the issue-8 options
    (p,) = api.predict("resnet50", system, "resnet50_v100", gpus=[gpus], strategies=strategy, batch_per_gpu=b, **kw)
    return p


def test_default_is_paradl():
    p = pt()
    # γδ(Σ (2B/p)(x+y) + 2w), B/p = 16
    assert p.memory_bytes == pytest.approx(4 * (2 * 16 * ACT + 2 * W))
    assert p.detail("memory")["activations_bytes"] == pytest.approx(4 * 2 * 16 * ACT)  # always a breakdown


@pytest.mark.parametrize("optimizer,per_param", [("momentum", 4), ("adam", 8)])
def test_optimizer_state(optimizer, per_param):
    p = pt(optimizer=optimizer)
    assert p.memory_bytes == pytest.approx(4 * (2 * 16 * ACT + 2 * W) + per_param * W)
    assert p.detail("memory")["optimizer_bytes"] == pytest.approx(per_param * W)


def test_mixed_precision():
    p = pt(mixed_precision=True, optimizer="adam")
    # 2-byte activations, weights, gradients; fp32 master (4) and Adam state (8)
    assert p.memory_bytes == pytest.approx(2 * 2 * 16 * ACT + 2 * W + 2 * W + 12 * W)
    # messages are 2 bytes: the gradient all-reduce moves half the bytes
    full = pt()
    assert p.breakdown.gradient_exchange_s < full.breakdown.gradient_exchange_s


@pytest.mark.parametrize(
    "stage,expected",
    [
        (1, 4 * W + 4 * W + (8 * W) / 8),  # optimizer state sharded over the 8 GPUs
        (2, 4 * W + (4 * W) / 8 + (8 * W) / 8),  # + gradients
        (3, (4 * W) / 8 + (4 * W) / 8 + (8 * W) / 8),  # + weights
    ],
)
def test_zero_stages(stage, expected):
    p = pt(optimizer="adam", zero=stage)
    assert p.memory_bytes == pytest.approx(4 * 2 * 16 * ACT + expected)


def test_zero3_communication_is_one_and_a_half_allreduces():
    base = pt(optimizer="adam")
    z3 = pt(optimizer="adam", zero=3)
    assert z3.breakdown.gradient_exchange_s == pytest.approx(1.5 * base.breakdown.gradient_exchange_s)
    assert pt(optimizer="adam", zero=2).breakdown.gradient_exchange_s == pytest.approx(base.breakdown.gradient_exchange_s)


def test_zero_does_not_shard_model_parallel_weights():
    """Filter parallelism has no data-parallel replicas: nothing for ZeRO to shard."""
    adam = pt("filter", gpus=4, b=1, optimizer="adam")
    assert pt("filter", gpus=4, b=1, optimizer="adam", zero=3).memory_bytes == pytest.approx(adam.memory_bytes)
    assert adam.memory_bytes > pt("filter", gpus=4, b=1).memory_bytes


def test_workspace_from_the_system_file(tmp_path):
    from pathlib import Path

    src = Path(__file__).resolve().parents[1] / "systems" / "abci.yaml"
    text = src.read_text()
    assert "  memory_GB: 16\n" in text
    sys_file = tmp_path / "w.yaml"
    sys_file.write_text(text.replace("  memory_GB: 16\n", "  memory_GB: 16\n  workspace_GB: 1.5\n"))
    assert pt(system=str(sys_file)).memory_bytes == pytest.approx(pt().memory_bytes + 1.5e9)


def test_oom_limits_move():
    # 32 samples/GPU: ParaDL's upper bound needs 20.9 GB of a 16 GB V100 ...
    default = pt(b=32)
    assert [lim.code for lim in default.limits] == ["memory"]
    # ... mixed precision halves the activations: 10.5 GB + 12 bytes/parameter of Adam fits
    assert pt(b=32, mixed_precision=True, optimizer="adam").feasible
    # at 16 samples/GPU (10.5 GB) it fits, with Adam's 8 bytes/parameter (0.2 GB) too
    assert pt(b=16).feasible
    assert pt(b=16, optimizer="adam").feasible


def test_pipeline_checkpointing_memory_and_recompute():
    kw = dict(strategy="pipeline", gpus=4, b=8)
    plain = pt(**kw)
    ck = pt(checkpointing=True, **kw)
    assert ck.memory_bytes < plain.memory_bytes
    # the backward recomputes the forward: compute grows by the slowest stage's forward
    assert ck.breakdown.forward_backward_s > plain.breakdown.forward_backward_s
    stages = plain.detail("stages")
    assert stages == ck.detail("stages")


def test_bad_memory_options_exit_2():
    from conftest import cli_runner

    from oracle.cli.main import cli

    res = cli_runner().invoke(cli, ["predict", "-m", "alexnet", "-s", "abci", "-p", "alexnet_v100", "--zero", "4"])
    assert res.exit_code == 2 and "--zero" in res.stderr
    res = cli_runner().invoke(cli, ["predict", "-m", "alexnet", "-s", "abci", "-p", "alexnet_v100", "--optimizer", "lamb"])
    assert res.exit_code == 2 and "--optimizer" in res.stderr
