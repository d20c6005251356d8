"""Issue 28, round four: one kind of number, one set of limits, wherever a value enters
(options, the Python API, layer-wise files, cases files, system files, stacks, runs
files: oracle/limits.py); the search's effort bounded before it starts; errors whose way
out exists on the command; import-model's user scripts kept off oracle's output."""

from __future__ import annotations

import pytest
from test_robustness import one_error

from conftest import ROOT, TINY_SYSTEM, run_cli

MSP = ("-m", "alexnet", "-s", "abci", "-p", "alexnet_v100")
LAYERWISE = """model: AlexNet
gpus: 4
{key}: {value}
layers:
  - {{from: conv1, to: fc8, distribution: data}}
"""


@pytest.mark.parametrize(("key", "value", "expected"), [
    ("batch", "1e-7", "a global mini-batch"), ("batch", "1e300", "not plausible"),
    ("batch_per_gpu", "1e-9", "samples per GPU"),
])  # fmt: skip
@pytest.mark.parametrize("command", ["predict", "search"])
def test_layerwise_batch_has_the_option_limits(tmp_path, key, value, expected, command):
    """A layer-wise `batch: 1e-7` was accepted ("B = 0"); --batch 1e-7 is refused."""
    from oracle.load.model import load_model

    first, last = load_model(ROOT / "models/alexnet.yaml").layers[0].name, load_model(ROOT / "models/alexnet.yaml").layers[-1].name
    f = tmp_path / "lw.yaml"
    f.write_text(LAYERWISE.format(key=key, value=value).replace("conv1", first).replace("fc8", last))
    flag = "--layers" if command == "predict" else "--evaluate"
    one_error(run_cli(command, *MSP, "--gpus" if command == "predict" else "-f", "4" if command == "predict" else "json",
                      flag, f), str(f), key, expected)  # fmt: skip
    option = "--batch" if key == "batch" else "--batch-per-gpu"
    one_error(run_cli("predict", *MSP, "--gpus", "4", option, value), option, expected)


@pytest.mark.parametrize(("key", "value"), [("contention", "1e308"), ("contention", "0.5"), ("batch", "1e-7"),
                                            ("memory_reuse", "2"), ("samples", "1e30"), ("segments", "1e12"),
                                            ("p2", "100000000")])  # fmt: skip
def test_cases_file_values_have_the_option_limits(tmp_path, key, value):
    """A cases file's `contention: 1e308` gave totals of 1.4e308 s; now each value keeps its option's limits."""
    scale = "" if key == "batch" else ", batch_per_gpu: 32"
    memory = ", memory_model: paradl" if key == "memory_reuse" else ""
    f = tmp_path / "cases.yaml"
    f.write_text("cases:\n  - {model: alexnet, system: abci, profile: alexnet_v100, gpus: 4, strategy: data"
                 f"{scale}{memory}, {key}: {value}}}\n")  # fmt: skip
    one_error(run_cli("snapshot", f, "-o", tmp_path / "b.json"), str(f), f"cases[0].{key}")
    assert not (tmp_path / "b.json").exists()


@pytest.mark.parametrize(("keyword", "value"), [("contention", 1e308), ("contention", float("nan")),
                                                ("batch", 1e-7), ("batch_per_gpu", 1e13), ("samples", 10**20),
                                                ("segments", 10**12), ("memory_reuse", 0.0)])  # fmt: skip
def test_python_api_values_have_the_option_limits(keyword, value):
    import oracle

    with pytest.raises(oracle.OracleError) as info:
        oracle.predict("alexnet", "abci", "alexnet_v100", gpus=4, strategies="data", **{keyword: value})
    assert "--" + keyword.replace("_", "-") in str(info.value)


def test_system_contention_factor_has_the_option_limit(tmp_path):
    """--contention refuses 1001; so does a system file (it took any φ up to 10^15)."""
    s = tmp_path / "s.yaml"
    s.write_text(TINY_SYSTEM + "contention_factor: 1001\n")
    one_error(run_cli("show", "system", s), str(s), "contention_factor", "not plausible")
    one_error(run_cli("predict", *MSP, "--gpus", "4", "--contention", "1001"), "--contention", "not plausible")


def test_stack_bucket_has_the_option_limit(tmp_path):
    """A stack's bucket_MB of 10^14 MiB (beyond 2^60 bytes) is refused as --bucket-MB 1e14 is."""
    text = (ROOT / "stacks/pytorch.yaml").read_text()
    s = tmp_path / "st.yaml"
    s.write_text(text.replace("bucket_MB: {value: 25,", "bucket_MB: {value: 1.0e+14,"))
    assert s.read_text() != text
    one_error(run_cli("show", "stack", s), str(s), "bucket_MB", "not plausible")
    one_error(run_cli("predict", *MSP, "--gpus", "4", "--bucket-MB", "1e14"), "--bucket-MB", "not plausible")


@pytest.mark.parametrize(("column", "value"), [("global_batch", "0.5"), ("gpus", "100000000")])
def test_runs_file_values_have_the_option_limits(tmp_path, column, value):
    """A runs file's global batch of half a sample is refused as --batch 0.5 is."""
    row = {"gpus": "4", "global_batch": "2048"} | {column: value}
    f = tmp_path / "runs.csv"
    f.write_text("model,system,profile,strategy,gpus,global_batch,epoch_s\n"
                 f"alexnet,abci,alexnet_v100,data,{row['gpus']},{row['global_batch']},363.12\n")  # fmt: skip
    one_error(run_cli("compare", f), str(f), f"column '{column}'")
    option = {"global_batch": "--batch", "gpus": "--gpus"}[column]
    one_error(run_cli("compare", "--log", f, "-m", "alexnet", "-s", "abci", "-p", "alexnet_v100", option, value), option)


def test_one_kind_per_number():
    """The option types and the loaders take their limits from oracle/limits.py."""
    from oracle import limits
    from oracle.cli import common
    from oracle.load.fields import Bad, of

    assert common.contention_type.kind is limits.CONTENTION
    assert common.batch_type.kind is limits.BATCH
    for kind, bad in ((limits.BATCH, 1e-7), (limits.CONTENTION, 1e308), (limits.GPUS, 10**8), (limits.REUSE, 0)):
        assert kind.problem(bad)
        with pytest.raises(Bad):
            of(kind)(bad)


# -- bounded search effort ------------------------------------------------------------------


def test_search_refuses_a_space_too_large_before_evaluating():
    """65,536 GPUs with subsets: over a minute and 2.4 GB before; now one line naming the
    size of the space and the options that narrow it."""
    from oracle.cli.search_plan import MAX_SEARCH_PAIRS

    r = run_cli("search", "-m", "resnet50", "-s", "abci", "-p", "resnet50_v100", "--gpus", "65536",
                "--distributions", "data,spatial,filter,channel,subsets")  # fmt: skip
    line = one_error(r, "--distributions", "65,536 GPUs", "425 distributions", f"at most {MAX_SEARCH_PAIRS:,}",
                     "drop subsets")  # fmt: skip
    from test_fuzz_options import options_named_exist

    options_named_exist("search", line)


def test_search_within_the_bound_still_runs():
    r = run_cli("search", *MSP, "--gpus", "16", "--distributions", "data,spatial,filter,channel,subsets", "-f", "json")
    assert r.code == 0, r.err


# -- errors whose way out exists -------------------------------------------------------------


def test_report_image_too_large_names_report_options(tmp_path, monkeypatch):
    """`report --measured` with thousands of runs said "lower --dpi ... or write SVG":
    report has neither.  Its too-large images now name report's own options."""
    pytest.importorskip("matplotlib")
    from oracle.render import image

    monkeypatch.setattr(image, "MAX_PIXELS", 1000)  # every image is "too large"
    r = run_cli("report", *MSP, "--gpus", "4,8", "-o", tmp_path / "r.md")
    line = one_error(r, "the image would be")
    assert "--dpi" not in line and "SVG" not in line
    from test_fuzz_options import options_named_exist

    options_named_exist("report", line)
    r = run_cli("report", *MSP, "--gpus", "4,8", "--measured", ROOT / "validation/abci-paradl.csv",
                "--where", "model=alexnet", "-o", tmp_path / "r.md")  # fmt: skip
    options_named_exist("report", one_error(r, "the image would be"))
    r = run_cli("plot", "scaling", *MSP, "--gpus", "4,8", "-o", tmp_path / "p.png")
    assert "--dpi" in one_error(r, "the image would be")


# -- import-model: a user's script keeps to itself -------------------------------------------

SCRIPT = """import torch
{top}
def f():
    {body}
    return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU())
"""


@pytest.mark.parametrize(("top", "body", "fragments"), [
    ("import argparse\nargparse.ArgumentParser().add_argument('--lr', required=True)\n"
     "p = argparse.ArgumentParser(); p.add_argument('--lr', required=True); p.parse_args()", "pass",
     ["exited (status 2) while being imported", "the following arguments are required: --lr"]),
    ("import sys\nsys.exit(0)", "pass", ["exited (status 0) while being imported"]),
    ("", "import sys; print('in f'); sys.exit(0)", ["exited (status 0)", "in f"]),
])  # fmt: skip
def test_import_model_script_that_exits_is_one_error(tmp_path, top, body, fragments):
    """A script with top-level argparse printed its own usage before oracle's error."""
    pytest.importorskip("torch")
    src = tmp_path / "net.py"
    src.write_text(SCRIPT.format(top=top, body=body))
    out = tmp_path / "m.yaml"
    r = run_cli("import-model", f"{src}:f", "--input", "3,8,8", "-o", out)
    one_error(r, *fragments)
    assert "usage:" not in r.err and not out.exists()


def test_import_model_shape_failure_prints_no_traceback(tmp_path):
    """torch.fx's ShapeProp printed a node's traceback to stderr before oracle's error line
    (a Linear(4, 2) model with --input 3,8,8; found by test_fuzz_import_model_python)."""
    pytest.importorskip("torch")
    src = tmp_path / "net.py"
    src.write_text("import torch\ndef f():\n    return torch.nn.Linear(4, 2)\n")
    r = run_cli("import-model", f"{src}:f", "--input", "3,8,8")
    one_error(r, "does not run on a 3x8x8 input", "--input")
    assert "Traceback" not in r.err


def test_import_model_script_prints_stay_off_the_yaml(tmp_path):
    """What the script prints never reaches oracle's standard output (the YAML)."""
    pytest.importorskip("torch")
    src = tmp_path / "net.py"
    src.write_text(SCRIPT.format(top="print('noise at import')", body="print('noise in f')"))
    r = run_cli("import-model", f"{src}:f", "--input", "3,8,8")
    assert r.code == 0, r.err
    assert "noise" not in r.out and r.out.startswith("#"), r.out[:200]
    import yaml

    assert yaml.safe_load(r.out)["layers"]


# -- Markdown: a name that is a URL is not a link ---------------------------------------------


def test_markdown_model_named_url_is_not_a_link(tmp_path):
    text = (ROOT / "models/alexnet.yaml").read_text()
    m = tmp_path / "m.yaml"
    m.write_text(text.replace("name: AlexNet", "name: https://evil.example/x", 1))
    p = tmp_path / "p.yaml"
    p.write_text((ROOT / "profiles/alexnet_v100.yaml").read_text().replace("model: AlexNet", "model: https://evil.example/x", 1))
    assert m.read_text() != text and "evil" in p.read_text()
    r = run_cli("predict", "-m", m, "-s", "abci", "-p", p, "--gpus", "4", "-f", "markdown")
    assert r.code == 0, r.err
    assert "https://evil" not in r.out and "evil.example" in r.out.replace("&#46;", ".")


@pytest.mark.parametrize("kind", ["compute", "network"])
def test_fit_runs_refused_output_is_one_error_line(tmp_path, kind):
    """fit runs printed its calibration before refusing a write-protected -o (found by
    the -o fuzzer extended to every command): the refusal now comes first, alone."""
    runs = tmp_path / "runs.csv"
    runs.write_text("model,system,profile,strategy,gpus,global_batch,epoch_s\n"
                    "alexnet,abci,alexnet_v100,data,4,2048,363.12\n")  # fmt: skip
    out = tmp_path / "out.yaml"
    out.write_text("old")
    out.chmod(0o444)
    one_error(run_cli("fit", "runs", runs, "-s", "abci", "--calibrate", kind, "-o", out), "write-protected")
    assert out.read_text() == "old"


# -- a global mini-batch is a whole number of samples, at least one (QA round two) --------


def test_a_global_batch_is_a_whole_number_of_samples(tmp_path):
    """-B 1000.5 was projected; a fraction of a sample per iteration is no batch (limits.BATCH,
    integral): refused as an option, in the API, a cases file, a layer-wise file and a runs file."""
    import json

    import oracle

    one_error(run_cli("predict", *MSP, "--gpus", "1", "-B", "1000.5"), "--batch", "got 1000.5", "a whole number")
    r = run_cli("predict", *MSP, "--gpus", "1", "-B", "1e3", "-f", "json")  # any spelling of a whole number
    assert r.code == 0, r.err
    assert [row["global_batch"] for row in json.loads(r.out)] == [1000]
    with pytest.raises(oracle.OracleError, match="--batch: got 1000.5"):
        oracle.predict("alexnet", "abci", "alexnet_v100", gpus=1, batch=1000.5)
    f = tmp_path / "cases.yaml"
    f.write_text("cases:\n  - {model: alexnet, system: abci, profile: alexnet_v100, gpus: 4, batch: 1000.5}\n")
    one_error(run_cli("sweep", f), f"{f}:2: cases[0].batch: got 1000.5")
    runs = tmp_path / "runs.csv"
    runs.write_text("model,system,profile,strategy,gpus,global_batch,epoch_s\nalexnet,abci,alexnet_v100,data,4,1000.5,363\n")
    one_error(run_cli("compare", runs), str(runs), "column 'global_batch'", "a whole number")


def test_fewer_than_one_sample_per_iteration_is_a_limit_of_every_strategy():
    """-b 0.5 on 1 GPU: serial was feasible at 2.56M iterations per epoch (data on the same
    GPU infeasible) and sweep ranked it best; on 3 GPUs B = 1.5 is no whole batch either."""
    import json

    r = run_cli("predict", *MSP, "--gpus", "1,3", "-b", "0.5", "-f", "json")
    assert r.code == 0, r.err
    rows = {(row["gpus"], row["strategy"]): row for row in json.loads(r.out)}
    assert not any(row["feasible"] for row in rows.values())
    assert rows[1, "serial"]["limits"] == ["fewer than one sample per iteration: B=0.5"]
    assert rows[3, "filter"]["limits"] == ["B=1.5 is not a whole number of samples"]
    assert rows[3, "data"]["limits"] == ["fewer than one sample per GPU: B=1.5 over 3"]  # the strategy's own, once
    r = run_cli("predict", *MSP, "--gpus", "1", "-b", "1e-6", "-f", "json")
    assert [row["feasible"] for row in json.loads(r.out)] == [False]
    r = run_cli("predict", *MSP, "--gpus", "2,4", "-b", "0.5", "-f", "json")  # B = 1 and 2: whole
    assert all("fewer than one sample per iteration" not in str(row["limits"]) for row in json.loads(r.out))
    assert any(row["feasible"] for row in json.loads(r.out))
