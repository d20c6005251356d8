"""Fuzzing the CLI with mutated inputs (issue 7): every run either succeeds with sane
numbers or exits 2 with exactly one 'oracle: error: ...' line -- never exit 3 (an
internal error), never a traceback.

Inputs are valid shipped files, mutated by hypothesis:

* model / system / profile YAML documents (cifar_resnet20 + abci + cifar_resnet20_cpu,
  alexnet + abci + alexnet_v100): keys dropped, renamed or added, values replaced by other
  types and extreme numbers (0, -1, ±1e308, nan, inf, 1e-320, 2**63, ...), list items
  duplicated, layers shuffled; and the raw text edited (YAML syntax, anchors, bytes);
* a measured-runs CSV for ``oracle compare``;
* nccl-tests / OSU benchmark logs for ``oracle fit network``;
* training logs (Chainer JSON, plain, step CSV) and random bytes for ``oracle import``;
* the reader limits of issue 16: YAML nesting, alias bombs, tags and base-60 numbers,
  damaged baselines for ``oracle check``, and odd ``-o`` targets (devices, FIFOs,
  symlinks, folders, an input of the command).

Every test is bounded (a few seconds each; the file runs in well under a minute).
``ORACLE_FUZZ_EXAMPLES=N`` sets the number of examples of every test to N, for long runs
(``scripts/fuzz.sh MINUTES`` loops over seeds until the time is up).
``ORACLE_FUZZ_COUNT_FILE=PATH`` appends '<test> <examples>' lines to PATH.
"""

from __future__ import annotations

import copy
import csv
import io
import json
import math
import os
import shutil
import tempfile
from pathlib import Path

import pytest
import yaml

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from conftest import ROOT, run_cli  # noqa: E402

# --------------------------------------------------------------------------------------
# bounds and counting
# --------------------------------------------------------------------------------------


def _examples(default: int) -> int:
    text = os.environ.get("ORACLE_FUZZ_EXAMPLES", "").strip()
    return int(text) if text else default


def fuzz_settings(default: int):
    return settings(
        max_examples=_examples(default),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


_COUNTS: dict[str, int] = {}


def _count(name: str) -> None:
    _COUNTS[name] = _COUNTS.get(name, 0) + 1


def write_counts(names) -> None:
    """The example counts of ``names`` for scripts/fuzz.sh (the other fuzz modules' own)."""
    path = os.environ.get("ORACLE_FUZZ_COUNT_FILE")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.writelines(f"{name} {_COUNTS[name]}\n" for name in names if name in _COUNTS)


@pytest.fixture(scope="module", autouse=True)
def _report_counts():
    yield
    shutil.rmtree(_WORK, ignore_errors=True)
    path = os.environ.get("ORACLE_FUZZ_COUNT_FILE")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            for name, n in sorted(_COUNTS.items()):
                fh.write(f"{name} {n}\n")


_WORK = Path(tempfile.mkdtemp(prefix="oracle-fuzz-"))


def _fresh_dir() -> Path:
    d = _WORK / "case"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    return d


# --------------------------------------------------------------------------------------
# the outcome every run must have
# --------------------------------------------------------------------------------------


def _reject_constant(name: str):
    raise AssertionError(f"JSON output holds {name}")


def _numbers(node, path="$"):
    if isinstance(node, bool) or node is None or isinstance(node, str):
        return
    if isinstance(node, (int, float)):
        yield path, node
    elif isinstance(node, dict):
        for k, v in node.items():
            yield from _numbers(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _numbers(v, f"{path}[{i}]")


def assert_clean(r, what: str, warnings: bool = False) -> None:
    """Exit 0, or exit 2 with exactly one 'oracle: error:' line (after 'oracle: warning:'
    lines, where ``warnings``); never a traceback."""
    assert "Traceback" not in r.err and "Traceback" not in r.out, (what, r.err[-2000:])
    assert r.exception is None, (what, repr(r.exception))
    assert r.code in (0, 2), (what, r.code, r.err[-2000:])
    if r.code == 2:
        lines = [x for x in r.err_lines if not (warnings and x.startswith("oracle: warning: "))]
        assert len(lines) == 1, (what, r.err)
        assert lines[0].startswith("oracle: error: "), (what, r.err)
        assert len(lines[0]) < 2000, (what, "message too long", len(lines[0]))


def assert_predict_json(r) -> None:
    points = json.loads(r.out, parse_constant=_reject_constant)
    assert isinstance(points, list) and points
    for p in points:
        for path, v in _numbers(p):
            assert math.isfinite(v) and v >= 0, (path, v, p.get("strategy"), p.get("gpus"))
        if p["feasible"]:
            for key in ("compute_s", "communication_s", "total_s", "iteration_s", "memory_bytes"):
                assert p[key] is not None, (key, p)


# --------------------------------------------------------------------------------------
# mutations of YAML documents
# --------------------------------------------------------------------------------------

EXTREME_NUMBERS = [
    0, -1, 1, 2, 0.5, 1.5, -0.0, 1e308, -1e308, 1.7976931348623157e308, float("nan"), float("inf"),
    float("-inf"), 1e-320, 5e-324, 10**30, 2**63, 2**64, -(2**63), 10**400, 1e-9, 3, 4097, 10**7,
]
ODD_VALUES = [None, True, False, "", " ", "x", "1e-6", "nan", "16", "ÿ€", "a" * 300, [], {}, [1, 2], [[]],
              {"a": 1}, {"fw_s": 1}, [3, 224, 224], [0], [-1, 2], ["conv1"], "conv1", "fc",
              # text that renderers must not interpret: rich markup, TeX, HTML, Markdown, control characters
              "[/]", "[bold]x", "$\\frac{x$", "<b>&amp;", "a|b", "line\nbreak", "\u2028", "\x1b[31m"]  # fmt: skip
KEY_NAMES = [
    "name", "input", "dataset", "samples", "layers", "type", "filters", "kernel", "stride", "padding", "groups",
    "bias", "outputs", "inputs", "dilation", "ceil_mode", "rate", "gpu", "model", "memory_GB", "peak_TFLOPS",
    "gpus_per_node", "nodes", "network", "max_gpus", "alpha_s", "beta_s_per_byte", "bandwidth_GB_per_s",
    "contention_factor", "operations", "allreduce", "halo", "alpha_scale", "beta_scale", "collectives", "mode",
    "tables", "implementation", "fw_s", "bw_s", "wu_s", "total", "fw_bw_per_sample_s", "wu_per_iteration_s",
    "measured_samples_per_gpu", "kind", "bandwith", "nmae", "input_", "", 0, 1, None, True, "source",
    "links_per_node", "memory_bandwidth_GB_per_s", "loader_samples_per_s", "storage_GB_per_s", "overlap",
    "data_spatial_allreduce", "bytes_per_sample", "slope", "comment", "size", "beta", "k",
]  # fmt: skip
LAYER_TYPES = ["conv", "fc", "maxpool", "avgpool", "globalavgpool", "batchnorm", "relu", "dropout", "add",
               "concat", "flatten", "softmax", "conv3d", "linear", "lrn"]  # fmt: skip

VALUES = st.one_of(
    st.sampled_from(EXTREME_NUMBERS),
    st.sampled_from(ODD_VALUES),
    st.sampled_from(LAYER_TYPES),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
)
KEYS = st.one_of(st.sampled_from(KEY_NAMES), st.text(min_size=1, max_size=8))


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, (*prefix, i))


def _get(doc, path):
    for step in path:
        doc = doc[step]
    return doc


OPS = ("drop", "replace", "replace", "number", "retype", "rename", "add", "duplicate", "shuffle", "swap")


@st.composite
def mutated(draw, base: dict):
    """``base`` with 1 to 4 random mutations."""
    doc = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 4))):
        paths = list(_paths(doc))
        path = draw(st.sampled_from(paths))
        node = _get(doc, path)
        parent = _get(doc, path[:-1]) if path else None
        op = draw(st.sampled_from(OPS))
        if op == "drop" and path:
            del parent[path[-1]]
        elif op in ("replace", "number", "retype") and path:
            if op == "number":
                value = draw(st.sampled_from(EXTREME_NUMBERS))
            elif op == "retype" and isinstance(node, (int, float)) and not isinstance(node, bool):
                value = draw(st.sampled_from([str(node), [node], {"value": node}, bool(node), None]))
            else:
                value = draw(VALUES)
            parent[path[-1]] = copy.deepcopy(value)  # never share (and later mutate) ODD_VALUES' lists
        elif op == "rename" and path and isinstance(parent, dict):
            new = draw(KEYS)
            value = parent.pop(path[-1])
            parent[new] = value
        elif op == "add" and isinstance(node, dict):
            node[draw(KEYS)] = copy.deepcopy(draw(VALUES))
        elif op == "duplicate" and isinstance(node, list) and node:
            i = draw(st.integers(0, len(node) - 1))
            node.insert(draw(st.integers(0, len(node))), copy.deepcopy(node[i]))
        elif op == "duplicate" and isinstance(node, dict) and node:
            # a copy of one entry under another name (profile layers, operations)
            k = draw(st.sampled_from(list(node)))
            node[draw(KEYS)] = copy.deepcopy(node[k])
        elif op == "shuffle" and isinstance(node, list) and len(node) > 1:
            node[:] = draw(st.permutations(node))
        elif op == "swap" and isinstance(node, list) and len(node) > 1:
            i = draw(st.integers(0, len(node) - 2))
            node[i], node[i + 1] = node[i + 1], node[i]
    return doc


def _load(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _dump(doc) -> str:
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=1000)


TRIPLES = {
    "cifar": (ROOT / "models/cifar_resnet20.yaml", ROOT / "systems/abci.yaml", ROOT / "profiles/cifar_resnet20_cpu.yaml"),
    "alexnet": (ROOT / "models/alexnet.yaml", ROOT / "systems/abci.yaml", ROOT / "profiles/alexnet_v100.yaml"),
}  # fmt: skip
BASE = {k: tuple(_load(p) for p in v) for k, v in TRIPLES.items()}
ROLES = ("model", "system", "profile")


def _predict(files: list[Path], *extra: str):
    m, s, p = files
    return run_cli("predict", "-m", m, "-s", s, "-p", p, "--gpus", "1,4,64", "-f", "json", *extra)


@st.composite
def mutated_triple(draw):
    which = draw(st.sampled_from(sorted(BASE)))
    docs = list(BASE[which])
    # mutate one file, sometimes two or all three
    roles = draw(st.sets(st.sampled_from(range(3)), min_size=1, max_size=3))
    for i in roles:
        docs[i] = draw(mutated(docs[i]))
    return which, sorted(roles), docs


@fuzz_settings(250)
@given(mutated_triple(), st.sampled_from(["json", "json", "table", "markdown", "csv"]))
def test_fuzz_predict_mutated_documents(case, fmt):
    _count("predict_documents")
    which, roles, docs = case
    d = _fresh_dir()
    files = []
    for role, doc in zip(ROLES, docs):
        f = d / f"{role}.yaml"
        try:
            f.write_text(_dump(doc), encoding="utf-8", errors="surrogatepass")
        except yaml.YAMLError:  # e.g. a value PyYAML cannot represent: not our input
            return
        files.append(f)
    r = _predict(files, "-f", fmt, "--width", "160")
    assert_clean(r, (which, roles, fmt))
    if r.code == 0 and fmt == "json":
        assert_predict_json(r)


@fuzz_settings(150)
@given(st.sampled_from(sorted(BASE)), st.sampled_from(range(3)), st.sampled_from(["table", "json"]), st.data())
def test_fuzz_show_mutated_documents(which, role, fmt, data):
    """`oracle show` renders every table of what it loaded (names, sources, odd text)."""
    _count("show_documents")
    doc = data.draw(mutated(BASE[which][role]))
    d = _fresh_dir()
    f = d / f"{ROLES[role]}.yaml"
    try:
        f.write_text(_dump(doc), encoding="utf-8", errors="surrogatepass")
    except yaml.YAMLError:
        return
    extra = ["-m", str(TRIPLES[which][0])] if role == 2 else []
    r = run_cli("show", ROLES[role], f, *extra, "-f", fmt, "--width", "160")
    assert_clean(r, ("show", which, ROLES[role], fmt))
    if r.code == 0 and fmt == "json":
        json.loads(r.out, parse_constant=_reject_constant)


# -- raw text edits: YAML syntax, anchors/aliases, tags, odd bytes -----------------------

TEXT_TOKENS = [
    ":", ": ", "-", "- ", "[", "]", "{", "}", ",", "#", "\n", "  ", "\t", '"', "'", "&a ", "*a", "<<: *a\n",
    "!!python/object:os.system ", "!!binary ", "!!float ", "!!str ", "!!int ", "!!timestamp ", "!!set ",
    "!!omap ", "!!null ", "!!bool ", "!!map ", "!!seq ", "? ", "%YAML 1.2\n", "---\n", "...\n", "|\n",
    ">\n", "\x00", "\ufeff", "\r\n", "é", "1e999", "-.inf", ".nan", "0x1F", "0o17", "1_000", "~", "null", "yes",
    "no", "on", "2001-12-14", "=", "@", "`", "%", "\\", "\u2028", "a: &a [*a]\n", "b: &b {x: *b}\n",
]  # fmt: skip


@st.composite
def text_edit(draw, text: str):
    data = text
    for _ in range(draw(st.integers(1, 3))):
        n = len(data)
        i = draw(st.integers(0, n))
        kind = draw(st.sampled_from(("insert", "delete", "replace", "cut")))
        if kind == "insert":
            data = data[:i] + draw(st.sampled_from(TEXT_TOKENS)) + data[i:]
        elif kind == "delete":
            j = min(n, i + draw(st.integers(1, 20)))
            data = data[:i] + data[j:]
        elif kind == "replace":
            j = min(n, i + draw(st.integers(1, 8)))
            data = data[:i] + draw(st.one_of(st.sampled_from(TEXT_TOKENS), st.text(max_size=6))) + data[j:]
        else:  # truncate
            data = data[:i]
    return data


@fuzz_settings(200)
@given(st.sampled_from(sorted(TRIPLES)), st.sampled_from(range(3)), st.data())
def test_fuzz_predict_text_edits(which, role, data):
    _count("predict_text")
    src = TRIPLES[which]
    d = _fresh_dir()
    files = []
    for i, path in enumerate(src):
        f = d / f"{ROLES[i]}.yaml"
        text = path.read_text(encoding="utf-8")
        if i == role:
            text = data.draw(text_edit(text))
        f.write_text(text, encoding="utf-8", errors="surrogatepass")
        files.append(f)
    r = _predict(files)
    assert_clean(r, (which, ROLES[role]))
    if r.code == 0:
        assert_predict_json(r)


# --------------------------------------------------------------------------------------
# measured runs for `oracle compare`
# --------------------------------------------------------------------------------------

RUNS_HEADER = ["model", "system", "profile", "strategy", "gpus", "p1", "p2", "global_batch", "epoch_s",
               "iteration_s", "compute_s", "comm_s", "segments", "quality"]  # fmt: skip
RUNS_ROWS = [
    ["alexnet", "abci", "alexnet_v100", "data", "4", "", "", "2048", "363.12", "", "", "", "", "A"],
    ["cifar_resnet20", "abci", "cifar_resnet20_cpu", "data+filter", "8", "", "2", "256", "", "0.05", "0.03",
     "0.01", "", "B"],
    ["alexnet", "abci", "alexnet_v100", "pipeline", "4", "", "", "256", "", "0.9", "", "", "8", "A"],
    ["cifar_resnet20", "abci", "cifar_resnet20_cpu", "spatial", "4", "", "", "128", "12", "", "", "0", "", "C"],
]  # fmt: skip
CELL_VALUES = st.one_of(
    st.sampled_from(["", " ", "0", "-1", "nan", "inf", "-inf", "1e308", "1e-320", "9" * 400, "2.5", "abc", "1,5",
                     '"', "data", "serial", "filter", "channel", "data+spatial", "nosuch", "alexnet", "vgg16",
                     "abci", "lassen", "resnet50_v100", "models/alexnet.yaml", "/", ".", "..", "\x00", "1e3",
                     "0x10", "64", "1000000", "4097", "16"]),  # fmt: skip
    st.text(max_size=8),
    st.integers(-5, 10**6).map(str),
    st.floats().map(repr),
)


@st.composite
def mutated_runs(draw, header_=RUNS_HEADER, pool=RUNS_ROWS, max_rows=4, max_edits=4):
    header = list(header_)
    rows = [list(r) for r in draw(st.lists(st.sampled_from(pool), min_size=1, max_size=max_rows))]
    for _ in range(draw(st.integers(1, max_edits))):
        op = draw(st.sampled_from(("cell", "cell", "cell", "drop_col", "add_col", "rename_col", "short_row",
                                   "dup_row", "blank_row")))  # fmt: skip
        if op == "cell":
            r = draw(st.integers(0, len(rows) - 1))
            if rows[r]:
                c = draw(st.integers(0, len(rows[r]) - 1))
                rows[r][c] = draw(CELL_VALUES)
        elif op == "drop_col" and header:
            c = draw(st.integers(0, len(header) - 1))
            del header[c]
            for row in rows:
                if c < len(row):
                    del row[c]
        elif op == "add_col":
            header.append(draw(st.sampled_from(["notes", "epoch_s", "gpus", "", "x"])))
            for row in rows:
                row.append(draw(CELL_VALUES))
        elif op == "rename_col" and header:
            header[draw(st.integers(0, len(header) - 1))] = draw(st.sampled_from(["gpu", "epochs", "Model", ""]))
        elif op == "short_row":
            r = draw(st.integers(0, len(rows) - 1))
            rows[r] = rows[r][: draw(st.integers(0, len(rows[r])))]
        elif op == "dup_row":
            rows.append(list(draw(st.sampled_from(rows))))
        elif op == "blank_row":
            rows.insert(draw(st.integers(0, len(rows))), [])
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([header, *rows])
    return buf.getvalue()


@fuzz_settings(150)
@given(mutated_runs(), st.sampled_from(["json", "csv", "table"]))
def test_fuzz_compare_runs_csv(text, fmt):
    _count("compare_runs")
    r, _ = _on_runs_csv(text, "compare", "-f", fmt, "--width", "200")
    assert_clean(r, "compare")
    if r.code == 0 and fmt == "json":
        _assert_finite_json(r.out)
    if r.code == 0 and fmt == "table":
        assert "nan" not in r.out.lower().replace("nanos", ""), r.out


# calibration from runs (issue 14): `fit runs --calibrate all` and `compare --calibrate-on`
# on ABCI runs of every kind the calibration steps read (one-GPU, data on 4-8 GPUs, the
# leader's hybrid, filter with measured columns, a large held-back run), cells mutated
_CAL = [r for r in csv.reader((ROOT / "validation" / "abci-paradl.csv").read_text(encoding="utf-8").splitlines())]
CAL_HEADER = [*_CAL[0][:11], "compute_s", "comm_s"]
CAL_ROWS = [
    [*_CAL[n][:11], "", ""] for n in (1, 4, 13, 29, 30, 31, 35, 18)
] + [["vgg16", "abci", "vgg16_v100", "filter", "4", "", "", "64", "", "0.5", "no", "0.3", "0.2"]]  # fmt: skip


@fuzz_settings(60)
@given(mutated_runs(CAL_HEADER, CAL_ROWS, max_rows=6, max_edits=3), st.sampled_from(["all", "input", "network"]))
def test_fuzz_fit_runs_calibrate(text, kind):
    _count("fit_runs")
    r, out = _on_runs_csv(text, "fit", "runs", "-s", "abci", "--calibrate", kind, "-o", "cal.yaml", "--width", "200")
    assert_clean(r, "fit runs", warnings=True)
    if r.code == 0:
        run_ok = run_cli("show", "system", out, "-f", "json", cwd=ROOT)  # what it wrote loads
        assert run_ok.code == 0, run_ok.err
    else:
        assert not out.exists()


@fuzz_settings(40)
@given(mutated_runs(CAL_HEADER, CAL_ROWS, max_rows=8, max_edits=2), st.sampled_from(["gpus<=8", "gpus<=1"]))
def test_fuzz_compare_calibrate_on(text, expr):
    _count("compare_calibrate_on")
    r, _ = _on_runs_csv(text, "compare", "--calibrate-on", expr, "-f", "json")
    assert_clean(r, "compare --calibrate-on", warnings=True)
    if r.code == 0:
        _assert_finite_json(r.out)


def _on_runs_csv(text: str, *args: str):
    """Run ``oracle ARGS RUNS.csv`` on ``text`` written to a fresh folder; an argument
    "cal.yaml" becomes a path in that folder.  Returns (result, that path)."""
    d = _fresh_dir()
    f, out = d / "runs.csv", d / "cal.yaml"
    f.write_text(text, encoding="utf-8", errors="surrogatepass")
    args = tuple(out if a == "cal.yaml" else a for a in args)
    cut = 2 if args[0] == "fit" else 1  # the runs file follows the (sub)command
    return run_cli(*args[:cut], f, *args[cut:], cwd=ROOT), out


def _assert_finite_json(text: str) -> None:
    for path, v in _numbers(json.loads(text, parse_constant=_reject_constant)):
        assert math.isfinite(v), (path, v)


# --------------------------------------------------------------------------------------
# benchmark logs for `oracle fit network`
# --------------------------------------------------------------------------------------

BENCH = sorted((ROOT / "data/nccl-tests/abci-v100").glob("*.txt")) + sorted((ROOT / "data/osu/abci-v100").glob("*.txt"))
LOG_TOKENS = [
    "0", "-1", "nan", "inf", "1e308", "1e-320", "N/A", "#", "# nThread 1 nGpus 1\n", "#  Rank  9 Pid 1 on h device 0\n",
    "# OSU MPI-CUDA Allreduce Latency Test v5.7\n", "# OSU MPI Allgather Latency Test\n", "out-of-place", "in-place",
    "sum", "float", "\n", "  ", "99999999999999999999999", "4", "8", "\x00", "\ufeff", "é", "1048576",
]  # fmt: skip


@st.composite
def line_edits(draw, text: str):
    lines = text.splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 5))):
        if not lines:
            lines = [draw(st.sampled_from(LOG_TOKENS))]
            continue
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(("drop", "dup", "token", "token", "swap", "truncate", "field")))
        if op == "drop":
            del lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "token":
            words = lines[i].split(" ")
            j = draw(st.integers(0, len(words) - 1))
            words[j] = draw(st.sampled_from(LOG_TOKENS))
            lines[i] = " ".join(words)
        elif op == "field":  # replace one whitespace-separated number by an extreme value
            words = lines[i].split()
            if words:
                j = draw(st.integers(0, len(words) - 1))
                words[j] = draw(st.sampled_from(["0", "-1", "nan", "inf", "1e308", "1e-320", "0.00", "abc"]))
                lines[i] = "   ".join(words) + "\n"
        elif op == "swap" and len(lines) > 1:
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "truncate":
            lines = lines[: i + 1]
    return "".join(lines)


@fuzz_settings(150)
@given(st.sampled_from(BENCH), st.data(), st.booleans())
def test_fuzz_fit_network_logs(src, data, with_system):
    _count("fit_network")
    text = data.draw(line_edits(src.read_text(encoding="utf-8")))
    d = _fresh_dir()
    f = d / src.name  # keep the name: it carries the node count of OSU logs
    f.write_text(text, encoding="utf-8", errors="surrogatepass")
    extra = ["--gpus-per-node", "4"]
    if with_system:
        extra = ["--system", "abci", "-o", str(d / "out.yaml")]
    r = run_cli("fit", "network", f, "-f", "json", *extra, cwd=ROOT)
    assert_clean(r, "fit network")
    if r.code == 0:
        doc = json.loads(r.out, parse_constant=_reject_constant)
        for level in doc["levels"]:
            for path, v in _numbers(level):
                assert math.isfinite(v), (path, v)
        if with_system:  # the written system must load
            assert run_cli("show", "system", d / "out.yaml", "-f", "json").code == 0


@fuzz_settings(100)
@given(st.binary(max_size=400))
def test_fuzz_fit_network_random_bytes(data):
    _count("fit_network_bytes")
    d = _fresh_dir()
    f = d / "intra_vnode_4nodes.txt"
    f.write_bytes(data)
    r = run_cli("fit", "network", f, "--gpus-per-node", "4")
    assert_clean(r, "fit network bytes")


# --------------------------------------------------------------------------------------
# training logs for `oracle import`
# --------------------------------------------------------------------------------------

TRAINING_LOGS = sorted((ROOT / "tests/data/logs").iterdir()) + [ROOT / "data/chainer-logs/vgg16-data-abci/8gpus-32pergpu.json"]
IMPORT_ARGS = ("-m", "vgg16", "-s", "abci", "-p", "vgg16_v100", "--strategy", "data", "--gpus", "8", "--batch", "256")


def _assert_import_csv(r) -> None:
    rows = list(csv.DictReader(io.StringIO(r.out)))
    assert len(rows) == 1, r.out
    row = rows[0]
    assert row["iteration_s"] or row["epoch_s"], row
    for key in ("epoch_s", "iteration_s"):
        if row[key]:
            v = float(row[key])
            assert math.isfinite(v) and v > 0, (key, v)


@fuzz_settings(150)
@given(st.sampled_from(TRAINING_LOGS), st.data())
def test_fuzz_import_mutated_logs(src, data):
    _count("import_logs")
    text = src.read_text(encoding="utf-8")
    edit = data.draw(st.sampled_from(("lines", "text")))
    text = data.draw(line_edits(text) if edit == "lines" else text_edit(text))
    d = _fresh_dir()
    f = d / src.name
    f.write_text(text, encoding="utf-8", errors="surrogatepass")
    r = run_cli("import", f, *IMPORT_ARGS)
    assert_clean(r, "import")
    if r.code == 0:
        _assert_import_csv(r)


@fuzz_settings(100)
@given(st.binary(max_size=400))
def test_fuzz_import_random_bytes(data):
    _count("import_bytes")
    d = _fresh_dir()
    f = d / "run.log"
    f.write_bytes(data)
    r = run_cli("import", f, *IMPORT_ARGS)
    assert_clean(r, "import bytes")
    if r.code == 0:
        _assert_import_csv(r)


# --------------------------------------------------------------------------------------
# reader limits (issue 16): nesting, aliases, tags, base-60 numbers; baselines; -o targets
# --------------------------------------------------------------------------------------

SCALARS = ["1", "1:30", "1:30:00", "-1:00", "190:20:30.15", "'1:30'", "!!binary aGk=", "!!set {a}", "!!str x",
           "!!int 3", "!!timestamp 2001-01-01", "!!omap [a: 1]", "!foo x", "1e308", ".nan", "~", "yes", "0x1F", "1_000"]


@st.composite
def yaml_values(draw, depth: int = 0):
    """A YAML flow value: nested lists/maps (sometimes very deep), anchors, aliases, tags."""
    kind = draw(st.sampled_from(("scalar", "scalar", "list", "map", "deep", "laughs")))
    if kind == "scalar" or depth > 3:
        return draw(st.sampled_from(SCALARS))
    if kind == "deep":  # around the nesting limit (100 levels, the top-level mapping included)
        n = draw(st.integers(90, 400))
        opener, closer = draw(st.sampled_from((("[", "]"), ("{a: ", "}"))))
        return opener * n + "1" + closer * n
    if kind == "laughs":  # a billion-laughs tree of random width and depth
        width, levels = draw(st.integers(2, 12)), draw(st.integers(1, 9))
        names = [f"l{i}" for i in range(levels)]
        parts = [f"&{names[0]} [" + ", ".join(["x"] * width) + "]"]
        parts += [f"&{names[i]} [" + ", ".join([f"*{names[i - 1]}"] * width) + "]" for i in range(1, levels)]
        return "[" + ", ".join(parts) + "]"
    items = draw(st.lists(yaml_values(depth + 1), max_size=4))
    if kind == "list":
        return "[" + ", ".join(items) + "]"
    return "{" + ", ".join(f"k{i}: {v}" for i, v in enumerate(items)) + "}"


PROFILE_FILE = ROOT / "profiles/alexnet_v100.yaml"


@fuzz_settings(120)
@given(yaml_values(), st.sampled_from(("notes", "source", "model")))
def test_fuzz_yaml_reader_limits(value, key):
    """Whatever the nesting, aliases, tags or base-60 numbers: loaded or one error line,
    and never the expansion of an alias bomb (the run stays fast, memory small)."""
    _count("yaml_limits")
    d = _fresh_dir()
    text = PROFILE_FILE.read_text(encoding="utf-8")
    if key == "model":  # replace a value the loader reads
        text = text.replace("model: AlexNet", f"model: {value}", 1)
    else:
        text = "\n".join(ln for ln in text.splitlines() if not ln.startswith(f"{key}:")) + f"\n{key}: {value}\n"
    f = d / "p.yaml"
    f.write_text(text, encoding="utf-8")
    r = run_cli("show", "profile", f, "-f", "json", cwd=ROOT)
    assert_clean(r, "yaml limits")
    if r.code == 2 and ("nested" in r.err or "aliases" in r.err or "tag" in r.err):
        assert f"{f}:" in r.err  # names the file (and line)


BASELINE_VALUES = [None, True, 0, -1, 1.5, 10**400, "x", "NaN!", "Infinity!", [], [1], {}, {"a": 1}, "1-4", [[[[]]]]]


@st.composite
def mutated_baseline(draw, doc: dict) -> str:
    doc = copy.deepcopy(doc)
    for _ in range(draw(st.integers(1, 3))):
        node, path = doc, []
        while isinstance(node, (dict, list)) and node and draw(st.booleans()):
            key = draw(st.sampled_from(sorted(node) if isinstance(node, dict) else range(len(node))))
            if not isinstance(node[key], (dict, list)):
                break
            node, path = node[key], path + [key]
        if isinstance(node, dict) and node:
            op = draw(st.sampled_from(("set", "drop", "add")))
            key = draw(st.sampled_from(sorted(node)))
            if op == "set":
                node[key] = copy.deepcopy(draw(st.sampled_from(BASELINE_VALUES)))
            elif op == "drop":
                del node[key]
            else:
                node[draw(st.sampled_from(("extra", "totl_s", "gpu")))] = copy.deepcopy(draw(st.sampled_from(BASELINE_VALUES)))
        elif isinstance(node, list) and node:
            node[draw(st.integers(0, len(node) - 1))] = copy.deepcopy(draw(st.sampled_from(BASELINE_VALUES)))
    return json.dumps(doc).replace('"NaN!"', "NaN").replace('"Infinity!"', "Infinity")


def _small_baseline() -> dict:
    d = _WORK / "baseline"
    if not (d / "base.json").exists():
        d.mkdir(parents=True, exist_ok=True)
        (d / "cases.yaml").write_text(
            "cases:\n  - {model: alexnet, system: abci, profile: alexnet_v100, gpus: '1,8', batch_per_gpu: 32}\n")
        assert run_cli("snapshot", d / "cases.yaml", "-o", d / "base.json", cwd=ROOT).code == 0
    return json.loads((d / "base.json").read_text(encoding="utf-8"))


@fuzz_settings(80)
@given(st.data())
def test_fuzz_check_malformed_baselines(data):
    """A damaged baseline: passes, fails the check (exit 1) or is one error line."""
    _count("check_baselines")
    text = data.draw(mutated_baseline(_small_baseline()))
    d = _fresh_dir()
    f = d / "base.json"
    f.write_text(text, encoding="utf-8")
    r = run_cli("check", f, cwd=ROOT)
    assert "Traceback" not in r.err and r.exception is None, r.err[-2000:]
    assert r.code in (0, 1, 2), (r.code, r.err[-2000:])
    if r.code == 2:
        assert len(r.err_lines) == 1 and r.err_lines[0].startswith("oracle: error: "), r.err
    if "NaN" in text.replace('"NaN', "") or "Infinity" in text:
        assert r.code == 2, (r.code, text[:300])


@pytest.mark.parametrize("command", ("predict", "report"))
@pytest.mark.parametrize("name", ("", "/", "sub/", "sub/x", "missing/x", "in.yaml", "link-dev", "link-file", "fifo", "."))
def test_fuzz_output_targets(name, command):
    """-o onto odd targets: written as a regular file, or one error and nothing touched.
    Every (target, command) pair once: the space is 20 cases, which hypothesis drew
    at random up to 60 times."""
    _count("output_targets")
    if command == "report":
        pytest.importorskip("matplotlib")
    d = _fresh_dir()
    (d / "sub").mkdir()
    model = d / "in.yaml"
    shutil.copy(ROOT / "models/alexnet.yaml", model)
    (d / "link-dev").symlink_to(os.devnull)
    (d / "real").write_text("old")
    (d / "link-file").symlink_to(d / "real")
    if hasattr(os, "mkfifo"):
        os.mkfifo(d / "fifo")
    before = sorted(p.name for p in d.rglob("*"))
    target = str(d / name) if name else ""
    if command == "report" and target and not target.endswith("/"):
        target += ".md" if name not in ("link-file",) else ""
    args = ["-m", model, "-s", "abci", "-p", "alexnet_v100", "--gpus", "8", "-o", target]
    r = run_cli(command, *args, *(["-f", "json"] if command == "predict" else []), cwd=ROOT)
    assert_clean(r, "output targets")
    if r.code == 2:
        assert sorted(p.name for p in d.rglob("*")) == before, r.err
        assert (d / "real").read_text() == "old" and model.read_text() == (ROOT / "models/alexnet.yaml").read_text()
    else:
        written = Path(target).resolve()
        assert written.is_file() and not written.is_symlink()
