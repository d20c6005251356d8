"""``oracle fit runs --calibrate network`` (docs/calibration.md): the runs are inverted under
the options and stack in force (overlap, buckets, a Horovod cycle, the stack's fixed costs),
so the written system projects its own calibration runs at their measured times under that
stack; the physical bounds of ``--calibrate all`` apply (exit 2, nothing written); a run that
fills its last NVLink domain partly calibrates nothing (as ``oracle fit network`` refuses its
log); and every output names the stack the runs were inverted under."""

from __future__ import annotations

import json

import pytest
import yaml
from conftest import ROOT

BASE = "dgx-h100-superpod"  # its stack: pytorch (DDP buckets, 2e-5 s fixed per iteration)
HEAD = "model,system,strategy,gpus,global_batch,iteration_s"


def _rows(times) -> str:
    """ResNet-50 at 32 per GPU on 8 GPUs (NVSwitch) and 64 (the leaf level)."""
    return HEAD + "\n" + "".join(f"resnet50,{BASE},data,{g},{32 * g},{t}\n" for g, t in zip((8, 64), times))


def _slow_system(tmp_path):
    """The base with every link half as fast, its protocol lines too: NVSwitch 225 GB/s, the
    leaf 200 GB/s (the datasheet's 450 and 400)."""
    doc = yaml.safe_load((ROOT / "systems" / f"{BASE}.yaml").read_text())
    for level in doc["network"]:
        for line in (level, *level.get("protocols", ())):
            line["bandwidth_GB_per_s"] /= 2
    path = tmp_path / "slow.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _compare(run, runs, system, options) -> list[dict]:
    got = run("compare", runs, "-s", system, "-f", "json", *options)
    assert got.code == 0, got.err
    return json.loads(got.out)["rows"]


def _bandwidth(path, level: str) -> float:
    (lv,) = [lv for lv in yaml.safe_load(path.read_text())["network"] if lv["name"] == level]
    return 1 / lv["beta_s_per_byte"] / 1e9


@pytest.mark.parametrize("options", [(), ("--overlap", "none"), ("--stack", "mxnet"),
                                     ("--stack", "none", "--overlap", "buckets")],
                         ids=["pytorch", "pytorch-overlap-none", "mxnet-cycle", "none-buckets"])  # fmt: skip
def test_the_written_system_projects_its_runs_at_their_times_under_the_stack(run, tmp_path, options):
    """Runs timed by the projection on links half as fast, under each stack and overlap: the
    calibration finds those links (225 and 200 GB/s), and compare on the written system under
    the same options projects both runs at 100%.  Inverting (measured - compute) as one
    unhidden all-reduce found the same β under buckets as without them."""
    runs = tmp_path / "runs.csv"
    runs.write_text(_rows((1.0, 1.0)))
    timed = _compare(run, runs, _slow_system(tmp_path), options)
    runs.write_text(_rows(r["predicted_s"] for r in timed))
    out = tmp_path / "cal.yaml"
    got = run("fit", "runs", runs, "-s", BASE, "--calibrate", "network", "-o", out, *options)
    assert got.code == 0, got.err
    assert _bandwidth(out, "nvswitch") == pytest.approx(225, rel=1e-4)
    assert _bandwidth(out, "leaf") == pytest.approx(200, rel=1e-4)
    for row in _compare(run, runs, out, options):
        assert row["accuracy"] == pytest.approx(1.0, abs=0.005), row


def test_the_qa_runs_under_buckets_need_a_slower_link_than_without(run, tmp_path):
    """The same measured times: under DDP's buckets part of the all-reduce is hidden, so more
    of it must be slow to show; without overlap all of it shows."""
    runs = tmp_path / "runs.csv"
    runs.write_text(_rows((0.021, 0.0212)))
    intra = {}
    for overlap in ("buckets", "none"):
        out = tmp_path / f"{overlap}.yaml"
        got = run("fit", "runs", runs, "-s", BASE, "--calibrate", "network", "--overlap", overlap, "-o", out)
        assert got.code == 0, got.err
        intra[overlap] = _bandwidth(out, "nvswitch")
    assert intra["buckets"] < intra["none"] / 2


@pytest.mark.parametrize(("times", "options", "said"), [
    ((0.030, 0.040), (), "below a tenth of the base's 450 GB/s"),
    ((0.0206, 0.0206), ("--overlap", "none"), "faster than the base's 450 GB/s"),
], ids=["slow", "fast"])  # fmt: skip
def test_a_network_outside_the_physical_bounds_is_refused_and_not_written(run, tmp_path, times, options, said):
    """The bounds of --calibrate all (calibrate_physics.violations): a level's bandwidth above
    the base's (+5%) or below a tenth of it. The QA's runs wrote NVSwitch at 17.7 and 2,520 GB/s."""
    runs = tmp_path / "runs.csv"
    runs.write_text(_rows(times))
    out = tmp_path / "cal.yaml"
    got = run("fit", "runs", runs, "-s", BASE, "--calibrate", "network", "-o", out, *options)
    assert got.code == 2 and "Traceback" not in got.err
    assert len(got.err_lines) == 1
    assert "unphysical" in got.err and "nvswitch at " in got.err and said in got.err
    assert not out.exists()


GB200 = "model,system,profile,strategy,gpus,global_batch,iteration_s\n"


def test_a_run_filling_its_last_nvlink_domain_partly_is_left_out_with_the_reason(run, tmp_path):
    """76 GPUs on GB200 NVL72 are one rack and 4 GPUs of another: oracle fit network refuses such
    a log, so fit runs leaves the run out of the network, says why, and calibrates on the others."""
    both = tmp_path / "both.csv"
    both.write_text(GB200 + "resnet50,gb200-nvl72,,data,72,2304,0.0096\nresnet50,gb200-nvl72,,data,76,2432,0.013\n")
    alone = tmp_path / "alone.csv"
    alone.write_text(GB200 + "resnet50,gb200-nvl72,,data,72,2304,0.0096\n")
    outs = {}
    for name, runs in (("both", both), ("alone", alone)):
        outs[name] = tmp_path / f"{name}.yaml"
        got = run("fit", "runs", runs, "-s", "gb200-nvl72", "--calibrate", "network", "-o", outs[name], "--width", "200")
        assert got.code == 0, got.err
    said = run("fit", "runs", both, "-s", "gb200-nvl72", "--calibrate", "network", "--width", "200").out
    assert "unused" in said and "76 GPUs do not fill whole NVLink domains of 72 GPUs" in said and "1 x 72 + 4" in said
    assert _bandwidth(outs["both"], "nvlink") == _bandwidth(outs["alone"], "nvlink")  # not mixed into the median
    only = tmp_path / "only.csv"
    only.write_text(GB200 + "resnet50,gb200-nvl72,,data,76,2432,0.013\n")
    got = run("fit", "runs", only, "-s", "gb200-nvl72", "--calibrate", "network")
    assert got.code == 2 and "none of the 1 selected runs calibrates the network" in got.err


@pytest.mark.parametrize(("options", "times", "named"), [
    ((), (0.021, 0.0212), "stack pytorch"),
    (("--overlap", "none"), (0.021, 0.0212), "stack pytorch (--overlap none given over it)"),
    (("--stack", "none"), (0.0236, 0.024), "stack none"),  # no stack: compute 22.8 ms
], ids=["system-default", "given-over", "none"])  # fmt: skip
def test_every_output_names_the_stack_the_runs_were_inverted_under(run, tmp_path, options, times, named):
    runs = tmp_path / "runs.csv"
    runs.write_text(_rows(times))
    out = tmp_path / "cal.yaml"
    got = run("fit", "runs", runs, "-s", BASE, "--calibrate", "network", "-o", out, *options)
    assert got.code == 0, got.err
    assert f"\nruns inverted under {named}\n" in got.out
    text = out.read_text()
    assert f"# The runs were inverted under {named}.\n" in text
    assert f"lines 2, 3 under {named} (see the sources below)" in " ".join(yaml.safe_load(text)["source"].split())


def test_a_stack_file_is_named_by_its_path_and_runs_of_several_stacks_by_their_lines(run, tmp_path):
    mine = tmp_path / "mine.yaml"
    mine.write_text((ROOT / "stacks" / "pytorch.yaml").read_text())
    runs = tmp_path / "runs.csv"
    runs.write_text("model,system,strategy,gpus,global_batch,iteration_s,stack\n"
                    f"resnet50,{BASE},data,8,256,0.021,{mine}\nresnet50,{BASE},data,64,2048,0.027,none\n")  # fmt: skip
    got = run("fit", "runs", runs, "-s", BASE, "--calibrate", "network", "--width", "200")
    assert got.code == 0, got.err
    assert "beta_intra" in got.out and "beta_inter" in got.out
    assert f"runs inverted under stacks {mine} (line 2), none (line 3)" in " ".join(got.out.split())


def test_calibrate_compute_names_the_stack(run, tmp_path):
    runs = tmp_path / "runs.csv"
    runs.write_text(_rows((0.021, 0.0212)))
    out = tmp_path / "p.yaml"
    got = run("fit", "runs", runs, "-s", BASE, "--calibrate", "compute", "-o", out)
    assert got.code == 0, got.err
    assert "compute factor (median of 2, under stack pytorch)" in got.err
    assert "lines 2, 3 under stack pytorch (times x" in " ".join(out.read_text().split())
