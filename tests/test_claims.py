"""Every figure the README states comes from a command this test runs (issue 17 item 4):
the example output and each cell of "Accuracy at a glance"."""

from __future__ import annotations

import csv
import json
import re
import shlex
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _glance() -> dict[str, str]:
    """The "Accuracy at a glance" rows: what -> result."""
    part = README[README.index("## Accuracy at a glance"):]
    rows = [line for line in part.splitlines() if line.startswith("| ")][1:]
    return {r.split("|")[1].strip(): r.split("|")[2].strip() for r in rows}


def _shipped_medians(name: str, logs) -> list[float]:
    """Median |rel. error| (%) of the shipped system ``name``'s all-reduce, as oracle predict runs
    it, on each nccl-tests log (benchmarks/nccl_tests.py shipped_errors)."""
    import numpy as np

    from oracle.compute.network import allreduce_algorithm, group_contiguous
    from oracle.load import load_system

    s, out = load_system(name), []
    for lg in logs:
        m = np.array([float(b) for b, _ in lg.rows])
        t = np.array([x for _, x in lg.rows])
        pred, _ = allreduce_algorithm(s, group_contiguous(lg.gpus, s.gpus_per_node), m, "nccl")
        out.append(100 * float(np.median(np.abs(pred - t) / t)))
    return out


def _percents(text: str) -> list[str]:
    return re.findall(r"(\d+\.\d)%", text)


def _summary(run, *args) -> dict:
    r = run("compare", ROOT / "validation" / "abci-paradl.csv", "-f", "json", *args)
    assert r.code == 0, r.err
    return json.loads(r.out)["summary"]


def test_the_example_output_is_what_the_command_prints(run):
    """Each line of the README's example (an excerpt: '...' elides rows) is in the
    command's output, in order, on the example's 150-column terminal."""
    block = README[README.index("$ oracle predict"):]
    lines = block[: block.index("```")].rstrip().splitlines()
    args = shlex.split(lines[0][len("$ oracle "):])
    r = run(*args, "--width", "150")
    assert r.code == 0, r.err
    out = [line.rstrip() for line in r.out.splitlines()]
    at = 0
    for line in lines[1:]:
        if line.strip() == "...":
            continue
        assert line.rstrip() in out[at:], line
        at = out.index(line.rstrip(), at) + 1


def test_glance_rows_are_all_checked():
    assert len(_glance()) == 12, list(_glance())


def test_glance_abci_held_out(run):
    (what, result), *_ = _glance().items()
    assert what.startswith("ParaDL's ABCI runs held out")
    from test_calibration import TRAINING_LINES  # the runs abci-2020 was calibrated on

    s = _summary(run, "-s", "abci-2020", "--exclude", f"line={TRAINING_LINES}", "--where", "quality=A")
    assert _percents(result)[0] == f"{100 * s['mean_accuracy']:.1f}"
    assert _percents(result)[1] == "86.7"  # ParaDL's own figure (HPDC 2021 §5.2)


def test_glance_calibrate_on_small_runs(run):
    what, result = list(_glance().items())[1]
    assert "<= 8" in what
    s = _summary(run, "--system", "abci-chainermnx", "--calibrate-on", "gpus<=8", "--where", "quality=A")
    within, naive_within = s["within_calibration"], s["naive_within_calibration"]
    assert _percents(result) == [f"{100 * v:.1f}" for v in (s["mean_accuracy"], s["naive"]["mean_accuracy"],
                                                          within["mean_accuracy"], naive_within["mean_accuracy"])]


def test_glance_published_throughput():
    what, result = list(_glance().items())[2]
    assert "53 rows" in what
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from statistics import mean

    import dle_accuracy as d

    res = [r for r in d.evaluate(d.rows()) if int(r["gpus"]) >= 8]
    assert len(res) == 53
    a100 = [r for r in res if r["machine"] == "A100"]
    got = [mean(d.accuracy(r["out_of_box"], r["measured"]) for r in res),
           mean(d.accuracy(r["out_of_box"], r["measured"]) for r in a100),
           mean(d.accuracy(r["calibrated"], r["measured"]) for r in res if r["calibrated"])]  # fmt: skip
    assert _percents(result) == [f"{100 * g:.1f}" for g in got]


def test_glance_activation_memory():
    what, result = list(_glance().items())[3]
    assert "PyTorch's saved tensors, 5 torchvision models" in what
    from oracle.compute.memory import saved_activations
    from oracle.load import load_model

    with (ROOT / "validation" / "pytorch-saved-bytes.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 5
    worst = max(abs(saved_activations(load_model(r["model"])).bytes_per_sample(4) / float(r["saved_bytes_per_sample"]) - 1)
                for r in rows)  # fmt: skip
    assert re.search(r"within (\d+\.\d)%", result).group(1) == f"{100 * worst:.1f}"


def test_glance_allreduce_fit():
    what, result = list(_glance().items())[4]
    assert "All-reduce times on ABCI" in what
    from oracle.compute.calibration.fit import FitOptions, fit_network
    from oracle.load.benchlogs import parse_benchlog

    logs = [parse_benchlog(p.read_text(), str(p)) for p in sorted((ROOT / "data" / "nccl-tests" / "abci-v100").glob("*.txt"))]
    fit = fit_network(logs, FitOptions(protocols=3), gpus_per_node=4, total_gpus=4352)
    assert _percents(result)[0] == f"{100 * fit.overall_all.median:.1f}"


def test_glance_stack_accuracy():
    what, result = list(_glance().items())[5]
    assert "by software stack" in what and "A100 held out" in what
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from statistics import mean

    import dle_accuracy as d
    import stack_accuracy as s

    from oracle.load import load_stack

    rows = [r for r in d.rows() if r["framework"] not in s.OWN_FIT]
    stacks = {fw: load_stack(name) for fw, name in s.STACKS.items()}

    def acc(rs, stack_of):
        return mean(d.accuracy(s.project(r, stack_of(r)), float(r["throughput_img_per_s"])) for r in rs)

    held = [r for r in rows if s.held_out(r)]
    fitted = [r for r in rows if not s.held_out(r)]
    paddle = [r for r in d.rows() if r["framework"] == "PaddlePaddle" and r["gpus"] != "1"]
    got = [acc(held, lambda r: stacks.get(r["framework"])), acc(held, lambda r: None),
           acc(fitted, lambda r: stacks.get(r["framework"])), acc(paddle, lambda r: load_stack("paddle"))]  # fmt: skip
    assert _percents(result) == [f"{100 * g:.1f}" for g in got]


def test_glance_published_large_scale_runs():
    what, result = list(_glance().items())[6]
    assert "256-2,048 GPUs" in what and "nothing fitted" in what
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import scale_accuracy as sa

    res = sa.evaluate(sa.rows())
    by_id = {x["row"]["id"]: x["stack"].accuracy(x["measured_s"]) for x in res}
    got = [sa.summary(res, "stack"), sa.summary(res, "none"), by_id["yamazaki2019-resnet50-2048"],
           by_id["goyal2017-resnet50-256"]]  # fmt: skip
    assert _percents(result) == [f"{100 * g:.1f}" for g in got]



def test_the_example_report_is_what_the_command_writes(run, tmp_path):
    """docs/example-report.html (scripts/make_docs.sh) says what `oracle report` says now:
    its summary, accuracy explained, is regenerated and compared sentence by sentence."""
    import html

    pytest.importorskip("matplotlib")
    script = (ROOT / "scripts" / "make_docs.sh").read_text()
    cmd = script[script.index('"$oracle" report') + len('"$oracle" '):]
    args = shlex.split(cmd[: cmd.index("-o docs/example-report.html")].replace("\\\n", " "))
    out = tmp_path / "r.html"
    r = run(*args, "-o", out)
    assert r.code == 0, r.err

    def summary(text: str) -> str:
        text = html.unescape(re.sub(r"<[^>]+>", " ", text))
        text = re.sub(r"\s+", " ", text)
        return text[text.index("Summary Best strategy"): text.index(" Inputs Model")]

    made = summary(out.read_text(encoding="utf-8"))
    assert "the recommendation stands" in made and "typically" in made
    assert made == summary((ROOT / "docs" / "example-report.html").read_text(encoding="utf-8"))


# -- the docs' tables (issue 17 item 4: every figure from a command a test runs) ----------


def _table(doc: str, head: str) -> list[str]:
    text = (ROOT / "docs" / doc).read_text(encoding="utf-8")
    part = text[text.index(head):]
    return [line for line in part[: part.index("\n\n")].splitlines() if line.startswith("|")]


def test_cost_model_throughput_table_is_the_benchmark_output():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import dle_accuracy as d

    made = [line for line in d.table(d.evaluate(d.rows()), markdown=True).splitlines() if "·" not in line]
    assert _table("cost-model.md", "| rows | n | out of the box | calibrated (n) |") == made


def test_calibration_protocol_table():
    from oracle.compute.calibration.fit import FitOptions, fit_network
    from oracle.load.benchlogs import parse_benchlog

    logs = [parse_benchlog(p.read_text(), str(p)) for p in sorted((ROOT / "data" / "nccl-tests" / "abci-v100").glob("*.txt"))]
    rows = _table("calibration.md", "| ABCI all-reduce, 4-128 GPUs")[2:]
    for row, opts in zip(rows, (FitOptions(), FitOptions(protocols=3))):
        f = fit_network(logs, opts, gpus_per_node=4, total_gpus=4352)
        got = [f.overall_all.median, f.overall_all.max, f.overall_large.median, f.overall_large.max]
        cells = [c.strip() for c in row.split("|")[2:-1]]
        assert cells == [f"{100 * g:.0f}%" if 100 * g >= 100 else f"{100 * g:.1f}%" for g in got], row


def test_calibration_calibrate_on_table(run):
    rows = _table("calibration.md", "| ABCI runs above 8 GPUs, clean")[2:]
    r = run("compare", ROOT / "validation" / "abci-paradl.csv", "--system", "abci-chainermnx", "--calibrate-on",
            "gpus<=8", "--where", "quality=A", "-f", "json")  # fmt: skip
    s = json.loads(r.out)["summary"]
    cells = {row.split("|")[1].strip(): [c.strip().strip("*") for c in row.split("|")[2:-1]] for row in rows}
    for label, model in (("VGG16, data", "VGG16"), ("AlexNet, data+spatial", "AlexNet")):
        m = s["by_model"][model]
        assert cells[label][:2] == [str(m["n"]), f"{100 * m['mean_accuracy']:.1f}%"]
    assert cells["all"] == [str(s["runs"]), f"{100 * s['mean_accuracy']:.1f}%", f"{100 * s['naive']['mean_accuracy']:.1f}%"]
    within, beyond = s["within_calibration"], s["beyond_calibration"]
    assert cells["within the calibrated batch"] == [
        str(within["n"]), f"{100 * within['mean_accuracy']:.1f}%", f"{100 * s['naive_within_calibration']['mean_accuracy']:.1f}%"]
    assert cells["beyond it: AlexNet, data+spatial, 2,048 per node"][:2] == [
        str(beyond["n"]), f"{100 * beyond['mean_accuracy']:.1f}%"]


def test_seed_papers_table_is_the_benchmark_output():
    """Every modelled row of docs/seed-papers.md is what benchmarks/seed_papers.py prints
    (timings are benchmarks: left out)."""
    import subprocess

    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "seed_papers.py"), "--markdown", "--no-timings"],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    made = [line for line in out.splitlines() if line.startswith("|") and "search time" not in line]
    doc = [line for line in _table("seed-papers.md", "| paper | quantity |") if "search time" not in line]
    assert doc == made[: len(doc)] and len(doc) > 30


def test_accuracy_doc_ranking_agreement(run):
    """docs/accuracy.md: over all 32 held-out runs, 18 pairs, ranked as measured in each."""
    from test_calibration import TRAINING_LINES

    text = (ROOT / "docs" / "accuracy.md").read_text(encoding="utf-8")
    assert "Over all 32 held-out runs it ranks the two strategies as measured in each of the 18 pairs" in text
    s = _summary(run, "-s", "abci-2020", "--exclude", f"line={TRAINING_LINES}")
    assert (s["runs"], s["ranking_pairs"], s["ranking_agreement"]) == (32, 18, 1.0)
    s = _summary(run, "-s", "abci-2020", "--exclude", f"line={TRAINING_LINES}", "--where", "quality=A")
    assert s["ranking_pairs"] == 0


def test_glance_pre_volta_gpus():
    what, result = list(_glance().items())[7]
    assert "K80" in what and "held out" in what
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import architecture_accuracy as aa

    table = {(arch, role): (before, now) for arch, role, _, before, now in aa.summary(aa.evaluate(aa.rows()))}
    before, now = table[("all", "held-out")]
    (_, _, o_before, o_now), = [x for x in aa.evaluate_others(aa.other_rows()) if x[0] == "all"]
    assert _percents(result) == [f"{100 * v:.1f}" for v in (now, before, o_now, o_before)]
    assert "103 rows" in result and len(aa.other_rows()) == 103



def test_glance_measured_gpu_steps():
    """The held-out AMP rows of benchmarks/gpu_measured.py part 4: every H100 row of a model
    other than ResNet-50, in the pytorch stack's formats, bound by the GPU."""
    what, result = list(_glance().items())[8]
    assert "one H100, 7 models not fitted" in what
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from statistics import mean

    import gpu_measured as g

    def held(rows):
        fit = {id(r) for r in g.fit_rows(rows, "amp")}
        mine = [r for r in rows if r["gpu"] == g.H100 and r["model"] != "resnet50" and g.gpu_bound(r)
                and g.in_stack_format(r) and r["precision"] == "amp" and id(r) not in fit]  # fmt: skip
        return {r["model"] for r in mine}, mean(g.accuracy(r["projected_s"], r["measured_s"]) for r in mine)

    v = g.hopper_variants()
    (models, after), (_, before) = held(g.evaluate(g.steps())), held(g.evaluate(g.steps(), v["without"]))
    assert len(models) == 7
    assert _percents(result) == [f"{100 * after:.1f}", f"{100 * before:.1f}"]


def test_glance_independent_sources():
    """benchmarks/independent_accuracy.py: every row with its framework's stack and bare,
    the two sources' means and the runs below 0.70."""
    what, result = list(_glance().items())[9]
    assert "independent sources" in what and "154 runs" in what
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from statistics import mean

    import independent_accuracy as ia

    groups = ia.groups(ia.evaluate())
    everything = groups["all"]
    assert len(everything) == 154
    want = [mean(x["accuracy"] for x in everything), mean(x["bare_accuracy"] for x in everything),
            mean(x["accuracy"] for x in groups["graphics cards, all"]), mean(x["accuracy"] for x in groups["pre-Volta, all"])]  # fmt: skip
    assert _percents(result) == [f"{100 * v:.1f}" for v in want]
    low = sum(x["accuracy"] < ia.LOW for x in everything)
    assert f"{low} runs below 70%" in result


def test_glance_aws_p5_allreduce():
    """The p5 row: the shipped aws-p5-h100 per instance count, the fit on 2-8 instances
    predicting 16 and 32, and the nominal InfiniBand file (benchmarks/nccl_tests.py)."""

    from oracle.compute import nccl
    from oracle.compute.calibration.nccl_fit import fit_system, log_errors
    from oracle.load import load_system
    from oracle.load.benchlogs import load_benchlog

    what, result = list(_glance().items())[10]
    assert "AWS p5.48xlarge" in what
    logs = [load_benchlog(ROOT / "data" / "nccl-tests" / "h100-aws-p5" / f"all_reduce_{n}nodes.txt", gpus_per_node=8)
            for n in (2, 4, 8, 16, 32)]  # fmt: skip

    shipped, nominal = _shipped_medians("aws-p5-h100", logs), _shipped_medians("dgx-h100-superpod", logs)
    base = load_system("aws-p5-h100")
    floors = {("inter", p): 1 / 400e9 for p in ("LL", "LL128", "Simple")}
    part = fit_system(logs[:3], base, floors=floors)
    held = [100 * log_errors(lg, part.lines, nccl.offers(base)).median for lg in logs[3:]]
    p = _percents(result)
    assert p[:2] == [f"{min(shipped):.1f}", f"{max(shipped):.1f}"]
    assert p[2:4] == [f"{x:.1f}" for x in held]
    assert result.count(f"{round(min(nominal))}-{round(max(nominal))}%") == 1


def test_glance_gb200_allreduce():
    """The GB200 row: the shipped gb200-nvl72 (its Simple lines the fit's) per rack count, and the
    fit on 1-2 racks predicting 20 (benchmarks/nccl_tests.py)."""

    from oracle.compute import nccl
    from oracle.compute.calibration.nccl_fit import fit_system, log_errors
    from oracle.load import load_system
    from oracle.load.benchlogs import load_benchlog

    what, result = list(_glance().items())[11]
    assert "GB200 NVL72" in what
    data = ROOT / "data" / "nccl-tests" / "gb200-nvl72-coreweave"
    logs = [load_benchlog(data / f"all_reduce_{n}nodes.txt", gpus_per_node=4) for n in (18, 36, 360)]
    s = load_system("gb200-nvl72")
    part = fit_system(logs[:2], s, fitted=("Simple",))
    held = 100 * log_errors(logs[2], part.lines, nccl.offers(s), system=s).median
    assert _percents(result) == [f"{x:.1f}" for x in (*_shipped_medians("gb200-nvl72", logs), held)]
