"""Fuzzing, round three (issue 28): names, ONNX graphs, -o targets and numeric options.

Like tests/test_fuzz.py (whose helpers it uses; scripts/fuzz.sh runs both): every run
ends with exit 0, or exit 2 and one 'oracle: error:' line, never a traceback; and here
also no raw control character on standard output or standard error, written files that
load back, and no -o that replaces an input or a protected file."""

from __future__ import annotations

import os
import re
import shutil
import stat

import pytest

pytest.importorskip("hypothesis")

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from test_fuzz import _count, _fresh_dir, assert_clean, fuzz_settings, write_counts  # noqa: E402

from conftest import ROOT, TINY_MODEL, TINY_PROFILE, TINY_SYSTEM, run_cli  # noqa: E402

OWN = ("names", "import_model_onnx", "import_model_python", "output_targets_round3", "numeric_options")


@pytest.fixture(scope="module", autouse=True)
def _report_own_counts():
    """This module's example counts for scripts/fuzz.sh (test_fuzz.py reports its own)."""
    yield
    write_counts(OWN)


RAW = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
NAME_PIECES = ["\x1b]52;c;aGk=\x07", "\x1b]0;t\x07", "\x1b[2J", "\x1b[8m", "\x9b2J", "\x9d0;t\x9c", "\n", "\r",
               "\u2028", "\x85", "\ufeff", "https://x.example", "www.x.example", "a@b.c", "[bold]", "[/]", "$x$",
               "<b>", "|", "`", "'", '"', "\\", "#", ": ", "- ", "=1+1", "é", "😀", " "]  # fmt: skip
NAMES = st.lists(st.one_of(st.sampled_from(NAME_PIECES), st.text(max_size=4)), min_size=1, max_size=5).map("".join)
MPS = ("-m", "{m}", "-s", "{s}", "-p", "{p}")
COMMANDS = [
    ("predict", *MPS, "--gpus", "1,4"), ("predict", *MPS, "--gpus", "4", "-f", "markdown"),
    ("predict", *MPS, "--gpus", "4", "-f", "csv"), ("show", "model", "{m}"), ("show", "system", "{s}"),
    ("show", "profile", "{p}"), ("search", *MPS, "--gpus", "4"), ("search", *MPS, "--gpus", "4", "-o", "{d}/lw.yaml"),
]  # fmt: skip


def _files(d, name: str, layer: str):
    from test_robustness_names import _q

    q, ql = _q(name), _q(layer)
    texts = {
        "m.yaml": TINY_MODEL.replace("name: Tiny", f"name: {q}").replace("name: conv2,", f"name: {ql},"),
        "s.yaml": TINY_SYSTEM.replace("name: TinyCluster", f"name: {q}").replace("model: V100", f"model: {q}")
        .replace("name: nvlink", f"name: {q}"),
        "p.yaml": TINY_PROFILE.replace("model: Tiny", f"model: {q}").replace("device: V100", f"device: {q}")
        .replace("  conv2:", f"  {ql}:"),
    }  # fmt: skip
    for f, t in texts.items():
        (d / f).write_text(t, encoding="utf-8", errors="surrogatepass")
    return d / "m.yaml", d / "s.yaml", d / "p.yaml"


@fuzz_settings(100)
@given(NAMES, NAMES, st.sampled_from(range(len(COMMANDS))))
def test_fuzz_names_never_reach_the_terminal_raw(name, layer, which):
    _count("names")
    d = _fresh_dir()
    m, s, p = _files(d, name, "c2" + layer)
    r = run_cli(*(a.format(m=m, s=s, p=p, d=d) for a in COMMANDS[which]), cwd=ROOT)
    assert_clean(r, "names")
    assert not RAW.search(r.out), (COMMANDS[which], repr(r.out[:300]))
    assert not RAW.search(r.err), (COMMANDS[which], repr(r.err[:300]))
    if r.code == 0 and (d / "lw.yaml").exists():
        import yaml
        from test_robustness_names import _q

        read = yaml.safe_load(f"k: {_q(name)}")["k"]  # the name as the model file holds it
        assert yaml.safe_load((d / "lw.yaml").read_text(encoding="utf-8", errors="surrogatepass"))["model"] == read


# --------------------------------------------------------------------------------------
# import-model on mutated ONNX graphs
# --------------------------------------------------------------------------------------

ONNX_OPS = ("drop-output", "drop-node", "drop-init-data", "constant", "bad-dim", "dup-node", "rename-input", "truncate")


def _mutated_onnx(onnx, path, ops, data) -> None:
    import numpy as np
    from onnx import TensorProto, helper
    from test_robustness_names import tiny_onnx

    tiny_onnx(onnx, path)
    m = onnx.load(str(path))
    g = m.graph
    for op in ops:
        if op == "drop-output" and g.output:
            del g.output[0]
        elif op == "drop-node" and g.node:
            del g.node[data.draw(st.integers(0, len(g.node) - 1))]
        elif op == "drop-init-data" and g.initializer:
            g.initializer[0].ClearField("raw_data")
        elif op == "constant":
            kind = data.draw(st.sampled_from(["value_float", "value_ints", "value"]))
            value = {"value_float": 2.0, "value_ints": [1, 2],
                     "value": helper.make_tensor("c", TensorProto.FLOAT, [1], [np.float32(1)])}[kind]  # fmt: skip
            g.node.append(helper.make_node("Constant", [], ["k"], name="k", **{kind: value}))
            g.node.append(helper.make_node("Mul", [g.node[0].output[0], "k"], ["w"], name="mul"))
        elif op == "bad-dim" and g.input:
            g.input[0].type.tensor_type.shape.dim[-1].dim_value = data.draw(st.sampled_from([0, 1, 2**40]))
        elif op == "dup-node" and g.node:
            g.node.append(g.node[0])
        elif op == "rename-input" and g.node:
            g.node[0].input[0] = "nowhere"
    text = m.SerializeToString()
    if "truncate" in ops:
        text = text[: data.draw(st.integers(0, len(text)))]
    path.write_bytes(text)


@fuzz_settings(60)
@given(st.lists(st.sampled_from(ONNX_OPS), min_size=1, max_size=3), st.sampled_from([None, "3,8,8", "3,2"]), st.data())
def test_fuzz_import_model_onnx(ops, shape, data):
    onnx = pytest.importorskip("onnx")
    _count("import_model_onnx")
    d = _fresh_dir()
    src = d / "m.onnx"
    _mutated_onnx(onnx, src, ops, data)
    before = src.read_bytes()
    r = run_cli("import-model", src, *(["--input", shape] if shape else []), "-o", d / "m.yaml", cwd=ROOT)
    assert_clean(r, f"import-model {ops}")
    assert src.read_bytes() == before
    if r.code == 0:
        assert run_cli("show", "model", d / "m.yaml").code == 0


# import-model FILE.py:CALLABLE: scripts that exit, parse arguments, print, fail
PY_TOP = ["", "import sys\nsys.exit(0)", "import sys\nsys.exit(3)", "import sys\nsys.exit('bye')",
          "import argparse\nargparse.ArgumentParser().parse_args(['--x'])", "print('\\x1b]52;c;aGk=\\x07noise')",
          "import sys\nsys.stderr.write('noise\\n')", "raise ValueError('top')", "x = 1 / 0", "import nowhere_module"]
PY_BODY = ["pass", "import sys; sys.exit(0)", "print('noise')", "raise RuntimeError('body')", "return 3",
           "return None", "return torch.nn.Sequential()", "return torch.nn.Linear(4, 2)"]  # fmt: skip


@fuzz_settings(40)
@given(st.sampled_from(PY_TOP), st.sampled_from(PY_BODY), st.sampled_from(["f", "g", "torch"]),
       st.sampled_from([None, "3,8,8", "4"]))  # fmt: skip
def test_fuzz_import_model_python(top, body, attr, shape):
    """Every script ends in a YAML on standard output or one error line; nothing the
    script prints reaches oracle's output, and the script is never overwritten."""
    pytest.importorskip("torch")
    _count("import_model_python")
    d = _fresh_dir()
    src = d / "net.py"
    src.write_text(f"import torch\n{top}\ndef f():\n    {body}\n    return torch.nn.Sequential("
                   "torch.nn.Conv2d(3, 2, 3), torch.nn.ReLU())\n")  # fmt: skip
    before = src.read_bytes()
    r = run_cli("import-model", f"{src}:{attr}", *(["--input", shape] if shape else []), cwd=ROOT)
    assert_clean(r, f"import-model {top!r} {body!r}")
    assert src.read_bytes() == before
    assert "noise" not in r.out and "usage:" not in r.err
    if r.code == 0:
        (d / "m.yaml").write_text(r.out)
        assert run_cli("show", "model", d / "m.yaml").code == 0


# --------------------------------------------------------------------------------------
# -o onto targets that must be kept
# --------------------------------------------------------------------------------------

TARGETS = ("read-only", "read-only-dir/x", "shm-link/oracle-fuzz-target", "hard-link", "in-link", "long", "in.yaml", "fresh")


@fuzz_settings(60)
@given(st.sampled_from(TARGETS), st.sampled_from(("predict", "search", "show", "import-model", "compare", "fit runs",
                                                 "snapshot", "profile", "import", "plot", "report")))
def test_fuzz_output_targets_round3(name, command):
    _count("output_targets_round3")
    d = _fresh_dir()
    model = d / "in.yaml"
    shutil.copy(ROOT / "models/alexnet.yaml", model)
    (d / "read-only").write_text("old")
    (d / "read-only").chmod(0o444)
    (d / "read-only-dir").mkdir()
    (d / "read-only-dir").chmod(0o555)
    if os.path.isdir("/dev/shm"):
        (d / "shm-link").symlink_to("/dev/shm")
    os.link(model, d / "hard-link")
    (d / "in-link").symlink_to(model)
    target = d / ("a" * 250 if name == "long" else name)
    source = model
    if command == "import-model":
        onnx = pytest.importorskip("onnx")
        from test_robustness_names import tiny_onnx

        source = tiny_onnx(onnx, d / "in.onnx")
        if name in ("hard-link", "in-link", "in.yaml"):
            (d / name).unlink()
            (os.link if name == "hard-link" else os.symlink)(source, d / name)
    before = {p: p.read_bytes() for p in d.rglob("*") if p.is_file() and not p.is_symlink()}
    if command in ("plot", "report"):
        pytest.importorskip("matplotlib")
    msp = ("-m", model, "-s", "abci", "-p", "alexnet_v100")
    (d / "runs.csv").write_text("model,system,profile,strategy,gpus,global_batch,epoch_s\n"
                                f"{model},abci,alexnet_v100,data,4,2048,363.12\n")  # fmt: skip
    (d / "cases.yaml").write_text(f"cases:\n  - {{model: {model}, system: abci, profile: alexnet_v100, gpus: 4,"
                                  " strategy: data, batch_per_gpu: 32}\n")  # fmt: skip
    shutil.copy(ROOT / "tests/data/logs/gpus4-bs32-steps.csv", d / "gpus4-bs32-steps.csv")
    args = {"predict": ("predict", *msp, "--gpus", "8", "-f", "json"),
            "search": ("search", *msp, "--gpus", "8"),
            "show": ("show", "model", model, "-f", "json"),
            "import-model": ("import-model", source),
            "compare": ("compare", d / "runs.csv", "-f", "csv"),
            "fit runs": ("fit", "runs", d / "runs.csv", "-s", "abci", "--calibrate", "compute"),
            "snapshot": ("snapshot", d / "cases.yaml"),
            "profile": ("profile", model, "--estimate", "-s", "abci"),
            "import": ("import", d / "gpus4-bs32-steps.csv", "-m", model, "-s", "abci", "-p", "alexnet_v100",
                       "--strategy", "data"),
            "plot": ("plot", "scaling", *msp, "--gpus", "4"),
            "report": ("report", *msp, "--gpus", "4")}[command]  # fmt: skip
    if command in ("plot", "report") and name in ("long", "fresh"):
        target = target.with_name(target.name[:240] + (".png" if command == "plot" else ".md"))
    try:
        r = run_cli(*args, "-o", target, cwd=ROOT)
        assert_clean(r, f"{command} -o {name}")
        if name in ("long", "fresh"):
            assert r.code == 0, r.err
        else:
            assert r.code == 2, (command, name)
            for p, data in before.items():
                assert p.read_bytes() == data, p
        shm = f"/dev/shm/{target.name}"
        assert name != "shm-link/oracle-fuzz-target" or not os.path.exists(shm)
        assert stat.S_IMODE((d / "read-only").stat().st_mode) == 0o444
    finally:
        (d / "read-only-dir").chmod(0o755)


# --------------------------------------------------------------------------------------
# numeric options: hypothesis strings, huge integers, NaN and infinities
# --------------------------------------------------------------------------------------

NUMBER_TEXT = st.one_of(
    st.integers(-(10**500), 10**500).map(str),
    st.sampled_from(["nan", "inf", "-inf", "1e400", "-0", "0x10", "1_0", "١٢", " 7 ", "1.5", "1e3", ""]),
    st.text(max_size=12),
)


@fuzz_settings(200)
@given(st.data())
def test_fuzz_numeric_options(data):
    """Every numeric option of every command converts a value or refuses it with one user
    error; a converted integer stays below 10^16, a converted float is finite."""
    import math

    import click
    from test_robustness_writes import _params

    from oracle.errors import OracleError

    _count("numeric_options")
    params = _params()
    command, param = data.draw(st.sampled_from(params))
    if isinstance(param.type, (click.types.StringParamType, click.Path, click.File, click.types.BoolParamType)):
        return
    value = data.draw(NUMBER_TEXT)
    try:
        got = param.type.convert(value, param, None)
    except (click.BadParameter, OracleError):
        return
    for n in got if isinstance(got, (tuple, list)) else (got,):
        if isinstance(n, int) and not isinstance(n, bool):
            assert abs(n) < 10**16, (command, param.name, value)
        elif isinstance(n, float):
            assert math.isfinite(n), (command, param.name, value)
