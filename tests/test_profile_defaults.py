"""Defaults follow the inputs (issue 23 point 2): a run's precision and per-GPU batch are
the profile's unless an option says otherwise, on every command that projects; an option
that contradicts the profile is honoured and the header says so.  The conversion labels
pinned here are a bare conversion's: those commands pass --stack none (gcp-a3mega-h100
names pytorch, whose kernels would be named in the label)."""

from __future__ import annotations

import json

import pytest

from oracle.load import load_model, load_profile, load_system

H100 = "H100-SXM5-80GB"


@pytest.fixture(scope="module")
def bf16(tmp_path_factory):
    """ResNet-50 estimated on gcp-a3mega-h100 at bf16, batch 64 (as `oracle profile --estimate`)."""
    from oracle.profiling.estimate import estimate
    from oracle.render.profile_file import profile_yaml

    pr = estimate(load_model("resnet50"), load_system("gcp-a3mega-h100"), compute_efficiency=None, memory_efficiency=None,
                  batch=64, precision="bf16", date="test")  # fmt: skip
    path = tmp_path_factory.mktemp("profiles") / "r50_bf16.yaml"
    path.write_text(profile_yaml(pr, ["test"]), encoding="utf-8")
    return path


def _predict(run, profile, *more):
    r = run("predict", "-m", "resnet50", "-s", "gcp-a3mega-h100", "-p", profile, "--gpus", "256", "--strategy", "data",
            "--width", "250", *more)  # fmt: skip
    assert r.code == 0, r.err
    return r


def _epoch_s(run, profile, *more) -> float:
    (pt,) = json.loads(_predict(run, profile, "-f", "json", *more).out)
    return pt["total_s"]


def test_predict_takes_precision_and_batch_from_the_profile(run, bf16):
    r = _predict(run, bf16)
    assert "bf16 (δ=2; from the profile)" in r.out
    assert "weak scaling, 64 samples/GPU (from the profile)" in r.out
    assert f"compute: {H100} bf16 b=64 → {H100} bf16 b=64" in r.out
    assert _epoch_s(run, bf16) == _epoch_s(run, bf16, "--precision", "bf16", "-b", "64")


def test_contradicting_options_are_honoured_and_stated(run, bf16):
    r = _predict(run, bf16, "--precision", "fp32", "-b", "32", "--stack", "none")
    assert "fp32 (δ=4; --precision, profile at bf16: converted)" in r.out
    assert "32 samples/GPU (--batch-per-gpu, profile at b=64: converted)" in r.out
    assert f"compute: {H100} bf16 b=64 → {H100} fp32 b=32" in r.out
    # without a stack, fp32 runs on the CUDA cores
    assert _epoch_s(run, bf16, "--precision", "fp32", "--stack", "none") > 2 * _epoch_s(run, bf16)


def test_fp32_runs_as_the_stack_runs_it(run, bf16):
    """Under the system's stack (pytorch: cudnn.allow_tf32), fp32 on an H100 is TF32: the
    same times as --precision tf32, said in the caption."""
    r = _predict(run, bf16, "--precision", "fp32", "-b", "32")
    assert "tf32 (δ=4; --precision fp32, which runs in TF32 under stack pytorch; profile at bf16: converted)" in r.out
    assert f"→ {H100} tf32 b=32" in r.out
    assert _epoch_s(run, bf16, "--precision", "fp32") == _epoch_s(run, bf16, "--precision", "tf32")
    assert _epoch_s(run, bf16, "--precision", "fp32") < _epoch_s(run, bf16, "--precision", "fp32", "--stack", "none")


def test_linear_scaling_says_the_times_are_not_converted(run, bf16):
    r = _predict(run, bf16, "--precision", "fp32", "--compute-scaling", "linear", "--stack", "none")
    assert "fp32 (δ=4; --precision, profile at bf16: times not converted)" in r.out


def test_mixed_precision_computes_at_the_profiles_bf16(run, bf16):
    r = _predict(run, bf16, "--mixed-precision")
    assert "mixed precision bf16 (δ=2, fp32 master weights; from the profile)" in r.out
    assert f"→ {H100} bf16 b=64" in r.out


def test_mixed_precision_on_an_fp32_profile_says_it_converts(run):
    r = run("predict", "-m", "resnet50", "-s", "abci", "-p", "resnet50_v100", "--gpus", "8", "--strategy", "data",
            "--mixed-precision", "--width", "250")  # fmt: skip
    assert r.code == 0, r.err
    assert "mixed precision fp16 (δ=2, fp32 master weights; --mixed-precision, profile at fp32: converted)" in r.out


def test_api_predict_follows_the_profile(bf16):
    import oracle

    def total(**kw):
        (pt,) = oracle.predict("resnet50", "gcp-a3mega-h100", str(bf16), gpus=[256], strategies="data", stack="none", **kw)
        return pt

    default, given = total(), total(precision="bf16", batch_per_gpu=64)
    assert default.total_s == given.total_s and default.global_batch == 64 * 256
    assert default.compute_conversion.endswith(f"→ {H100} bf16 b=64")
    assert total(precision="fp32").total_s > 2 * default.total_s


def test_search_follows_the_profile(run, bf16):
    r = run("search", "-m", "resnet50", "-s", "gcp-a3mega-h100", "-p", bf16, "--gpus", "64", "-f", "json", "--stack", "none")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["precision"] == "bf16 (δ=2; from the profile)"
    assert doc["compute_conversion"] == f"{H100} bf16 b=64 → {H100} bf16 b=64"
    table = run("search", "-m", "resnet50", "-s", "gcp-a3mega-h100", "-p", bf16, "--gpus", "64", "--precision", "fp16",
                "--width", "250")  # fmt: skip
    assert table.code == 0, table.err
    assert "(64 per GPU, from the profile)" in table.out
    assert "fp16 (δ=2; --precision, profile at bf16: converted)" in table.out


def test_report_follows_the_profile(run, bf16, tmp_path):
    out = tmp_path / "r.md"
    r = run("report", "-m", "resnet50", "-s", "gcp-a3mega-h100", "-p", bf16, "--gpus", "64", "--strategy", "data",
            "-o", out)  # fmt: skip
    assert r.code == 0, r.err
    text = out.read_text()
    assert "bf16 (δ=2; from the profile)" in text and f"{H100} bf16 b=64 → {H100} bf16 b=64" in text


def _runs(tmp_path, profile, iteration_s: float, precision: str = "") -> str:
    runs = tmp_path / "runs.csv"
    extra = (",precision", f",{precision}") if precision else ("", "")
    runs.write_text(f"model,system,profile,strategy,gpus,global_batch,iteration_s{extra[0]}\n"
                    f"resnet50,gcp-a3mega-h100,{profile},data,8,512,{iteration_s!r}{extra[1]}\n")  # fmt: skip
    return str(runs)


def _iteration_s(run, profile) -> float:
    r = run("predict", "-m", "resnet50", "-s", "gcp-a3mega-h100", "-p", profile, "--gpus", "8", "--strategy", "data",
            "-b", "64", "-f", "json", "--stack", "none")  # fmt: skip
    assert r.code == 0, r.err
    return json.loads(r.out)[0]["iteration_s"]


def test_compare_and_fit_runs_follow_the_profile(run, bf16, tmp_path):
    """A run without a precision column is projected at its profile's precision: compare
    scores the bf16 projection exactly and fit runs finds nothing to calibrate."""
    runs = _runs(tmp_path, bf16, _iteration_s(run, bf16))
    cmp = run("compare", runs, "-f", "json", "--stack", "none")
    assert cmp.code == 0, cmp.err
    (row,) = json.loads(cmp.out)["rows"]
    assert row["compute_conversion"] == f"{H100} bf16 b=64 → {H100} bf16 b=64"
    assert row["accuracy"] == pytest.approx(1.0, abs=1e-9)
    out = tmp_path / "cal.yaml"
    fit = run("fit", "runs", runs, "-s", "gcp-a3mega-h100", "--calibrate", "compute", "--stack", "none", "-o", out)
    assert fit.code == 0, fit.err
    assert "times x 1 " in out.read_text()
    # an option, then a run's precision column, come before the profile
    cmp = run("compare", runs, "--precision", "fp32", "-f", "json", "--stack", "none")
    assert json.loads(cmp.out)["rows"][0]["compute_conversion"].endswith(f"→ {H100} fp32 b=64")
    column = _runs(tmp_path, bf16, 0.1, precision="TF32")
    cmp = run("compare", column, "--precision", "fp32", "-f", "json", "--stack", "none")
    assert json.loads(cmp.out)["rows"][0]["compute_conversion"].endswith(f"→ {H100} tf32 b=64")

def test_plot_titles_wrap_the_longer_captions(run, bf16):
    """The stated conversions make the caption longer: plot titles wrap it at " · "
    instead of widening the figure; the usual caption stays one line."""
    from oracle.render.plots import TITLE_CHARS, title
    from oracle.services.project import project

    _, meta, _ = project("resnet50", "gcp-a3mega-h100", str(bf16), gpus="8", precision="fp32", batch_per_gpu=32)
    lines = title(meta, "time per epoch versus GPUs").splitlines()
    assert len(lines) > 2 and all(len(line) <= TITLE_CHARS for line in lines[1:])
    assert " · ".join(lines[1:]).count("converted") == 2
    _, meta, _ = project("resnet50", "abci", "resnet50_v100", gpus="8", stack="none")  # the stack named none
    lines = title(meta, "x").splitlines()
    assert len(lines) == 3 and all(len(line) <= TITLE_CHARS for line in lines[1:]) and "stack none" in lines[1]


@pytest.mark.parametrize("name", ["dgx-h101", "no-such-cluster"])
def test_unknown_system_lists_the_shipped_ones(run, name):
    """Near a shipped name or not, one line on stderr naming every shipped system (the
    near one only said "did you mean" before)."""
    from oracle.resources import shipped_names

    r = run("predict", "-m", "resnet50", "-s", name, "-p", "resnet50_v100")
    assert r.code == 2 and r.out == "" and len(r.err_lines) == 1
    assert name in r.err and all(s in r.err for s in shipped_names("systems"))
