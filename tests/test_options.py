"""Options built and validated once (issue 24 point 2): the CLI and the Python API build
the same options from the same flags, each rule has one error line, and a command reads
each input file and parses its GPU counts once."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

from oracle.errors import OracleError

ROOT = Path(__file__).resolve().parent.parent
RESNET = ("resnet50", "abci", "resnet50_v100")

# the same projection as keywords of oracle.predict; _cli_args spells them as flags
CASES = {
    "defaults": {},
    "strong-paradl": dict(gpus="8,16", batch=256.0, precision="fp16", memory_model="paradl", memory_reuse=0.5,
                          contention=2.0, segments=4, samples=100000),
    "memory-and-overlap": dict(gpus="8", batch_per_gpu=16.0, mixed_precision=True, optimizer="adam", zero=2,
                               checkpointing=True, overlap="buckets", bucket_mb=10.0, bucket_layers=3,
                               delayed_update="fc1000", collective="tree", compute_scaling="linear"),
    "lee": dict(gpus="4", strategies="data,spatial", replicated_gradients="fc1000", spatial_split_after="res4a"),
}
ERRORS = {  # the same mistake, the same one line from both
    "reuse-without-paradl": dict(memory_reuse=1.0),
    "chunks-without-overlap": dict(bucket_layers=2),
    "no-empty-chunk": dict(overlap="buckets", bucket_layers=0),
    "both-batches": dict(batch=64.0, batch_per_gpu=8.0),
}


def _cli_args(kw: dict) -> list[str]:
    names = {"bucket_mb": "--bucket-MB", "strategies": "--strategy"}
    args = []
    for key, value in kw.items():
        flag = names.get(key, "--" + key.replace("_", "-"))
        args += [flag] if value is True else [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    return args


@pytest.fixture
def captured(monkeypatch):
    """What reaches the sweep: (options, batch, batch_per_gpu, GPU counts) per call."""
    import oracle.compute.sweep as sweep_module

    calls = []
    real = sweep_module.sweep

    def spy(model, system, times, gpus, strategies="all", **kw):
        calls.append((kw["options"], kw["batch"], kw["batch_per_gpu"], list(gpus), strategies))
        return real(model, system, times, gpus, strategies, **kw)

    monkeypatch.setattr(sweep_module, "sweep", spy)
    return calls


@pytest.mark.parametrize("name", list(CASES))
def test_cli_and_api_build_the_same_options(run, captured, name):
    import oracle

    kw = CASES[name]
    oracle.predict(*RESNET, **kw)
    r = run("predict", "-m", RESNET[0], "-s", RESNET[1], "-p", RESNET[2], *_cli_args(kw), "-f", "json")
    assert r.code == 0, r.err
    api, cli = captured
    assert api == cli
    options = api[0]
    for key in set(kw) & {"precision", "memory_model", "memory_reuse", "contention", "zero", "overlap"}:
        assert getattr(options, key) == kw[key]  # the flags did arrive


@pytest.mark.parametrize("name", list(ERRORS))
def test_cli_and_api_refuse_the_same_flags_alike(run, name):
    import oracle
    from oracle.errors import one_line

    kw = ERRORS[name]
    with pytest.raises(OracleError) as api:
        oracle.predict(*RESNET, gpus=[8], **kw)
    r = run("predict", "-m", RESNET[0], "-s", RESNET[1], "-p", RESNET[2], *_cli_args(kw))
    assert r.code == 2 and len(r.err_lines) == 1
    assert r.err_lines[0] == f"oracle: error: {one_line(str(api.value))}"


def test_the_memory_reuse_rule_is_written_once():
    """γ without ParaDL's memory model is refused by one rule, one message, in one place."""
    hits = [p for p in (ROOT / "oracle").rglob("*.py") if "scales ParaDL" in p.read_text()]
    assert [p.relative_to(ROOT).as_posix() for p in hits] == ["oracle/compute/options.py"]


def test_options_are_valid_wherever_built():
    """An Options checks itself: a direct caller of the cost model gets the same error line
    as a flag would (not a KeyError or a silent fallback deep in a strategy)."""
    from oracle.compute.options import Flags, Options

    for bad, path in ((dict(precision="fp64"), "--precision"), (dict(compute_scaling="linaer"), "--compute-scaling"),
                      (dict(memory_reuse=0.0), "--memory-reuse"), (dict(zero=4), "--zero")):  # fmt: skip
        with pytest.raises(OracleError) as exc:
            Options(**bad)
        assert exc.value.path == path
    run = Flags.parse(precision="bf16", delayed_update=" fc, conv1 ,", overlap="buckets").resolve(_profile())
    assert run.options.precision == "bf16" and run.options.delayed_update == ("fc", "conv1")
    assert run.precision.given and run.per_gpu == 32.0 and not run.batch_per_gpu.given


def _profile():
    from oracle.load import load_profile

    return load_profile("resnet50_v100")


@pytest.fixture
def reads(monkeypatch):
    """How often each input file is read (YAML parsed) and GPU counts parsed."""
    import oracle.load.model
    import oracle.load.profile
    import oracle.load.system
    import oracle.load.values
    from oracle.load import yamlfile

    counts: collections.Counter = collections.Counter()

    def counting_yaml(path, what="YAML file"):
        counts[Path(path).name] += 1
        return yamlfile.load_yaml(path, what)

    real_gpus = oracle.load.values.parse_gpus

    def counting_gpus(spec):
        counts["--gpus"] += 1
        return real_gpus(spec)

    for module in (oracle.load.model, oracle.load.system, oracle.load.profile):
        monkeypatch.setattr(module, "load_yaml", counting_yaml)
    monkeypatch.setattr(oracle.load.values, "parse_gpus", counting_gpus)
    return counts


def test_predict_reads_and_parses_its_inputs_once(run, reads):
    r = run("predict", "-m", "resnet50", "-s", "abci", "-p", "resnet50_v100", "--gpus", "4-64", "-f", "csv")
    assert r.code == 0, r.err
    assert reads == {"resnet50.yaml": 1, "abci.yaml": 1, "resnet50_v100.yaml": 1, "--gpus": 1}


@pytest.mark.parametrize("command", ["report", "compare"])
def test_a_command_reads_each_input_file_once(run, reads, tmp_path, command):
    """A report's sweep and its measured runs share their files; a runs file naming one
    system for several models reads it once."""
    runs = ROOT / "validation" / "abci-paradl.csv"
    if command == "report":
        args = ["report", "-m", "alexnet", "-s", "abci", "-p", "alexnet_v100", "--gpus", "1-8", "--measured", runs,
                "-o", tmp_path / "r.md"]  # fmt: skip
    else:
        args = ["compare", runs, "-f", "csv"]
    r = run(*args)
    assert r.code == 0, r.err
    files = {k: v for k, v in reads.items() if k.endswith(".yaml")}
    assert "abci.yaml" in files and "alexnet.yaml" in files
    assert set(files.values()) == {1}, files
