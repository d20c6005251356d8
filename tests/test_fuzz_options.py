"""Fuzzing every command's options end to end (issue 28): each command runs from a
working invocation with one of its options set to a hypothesis value (generated text,
huge integers, NaN, infinities, negative numbers).  Every run ends with exit 0, 1 (a
gate), or exit 2 and one 'oracle: error:' line, never exit 3 or a traceback; and every
option an error line names (its suggestion included) exists on that command.
scripts/fuzz.sh runs it with the other fuzzers."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("hypothesis")

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from test_fuzz import _count, _fresh_dir, fuzz_settings, write_counts  # noqa: E402

from conftest import run_cli  # noqa: E402

OWN = ("every_option",)


@pytest.fixture(scope="module", autouse=True)
def _report_own_counts():
    """This module's example counts for scripts/fuzz.sh."""
    yield
    write_counts(OWN)


RUNS = ("model,system,profile,strategy,gpus,global_batch,epoch_s\n"
        "alexnet,abci,alexnet_v100,data,4,2048,363.12\n")  # fmt: skip
CASES = "cases:\n  - {model: alexnet, system: abci, profile: alexnet_v100, gpus: 4, strategy: data, batch_per_gpu: 32}\n"
MSP = ("-m", "alexnet", "-s", "abci", "-p", "alexnet_v100")
# a working invocation of every command ({d}: a fresh folder holding runs.csv and cases.yaml)
BASES = {
    "predict": ("predict", *MSP, "--gpus", "4", "-f", "json"),
    "search": ("search", *MSP, "--gpus", "4", "-f", "json"),
    "compare": ("compare", "{d}/runs.csv", "-f", "json"),
    "fit runs": ("fit", "runs", "{d}/runs.csv", "-s", "abci", "-o", "{d}/fit.yaml"),
    "show model": ("show", "model", "alexnet"),
    "show system": ("show", "system", "abci"),
    "show profile": ("show", "profile", "alexnet_v100"),
    "show stack": ("show", "stack", "pytorch"),
    "list": ("list", "models"),
    "snapshot": ("snapshot", "{d}/cases.yaml", "-o", "{d}/base.json"),
    "profile": ("profile", "alexnet", "--estimate", "-s", "abci", "-o", "{d}/prof.yaml"),
    "plot scaling": ("plot", "scaling", *MSP, "--gpus", "4", "-o", "{d}/p.svg"),
}
VALUES = st.one_of(
    st.integers(-(10**40), 10**40).map(str),
    st.sampled_from(["nan", "NaN", "inf", "-inf", "Infinity", "1e400", "1e-300", "-1", "0", "0.5", "1e308",
                     "9" * 400, "", " ", "1_6", "\uff11", "4-1024", "x", "a,b", "=", "data", "table"]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=8),
)
_OPTION = re.compile(r"(?<![\w-])--[A-Za-z][A-Za-z0-9-]*")


def _command(path: str):
    import click

    from oracle.cli.main import cli

    cmd = cli
    for name in path.split():
        cmd = cmd.get_command(click.Context(cmd), name)
    return cmd


def _options(path: str) -> set[str]:
    return {o for p in _command(path).params for o in (*p.opts, *p.secondary_opts) if o.startswith("--")}


def options_named_exist(path: str, line: str, echoed: str = "") -> None:
    """Every --option of ``line`` exists on the command ``path`` (or on a command the line
    names as `oracle NAME`): a suggestion names a real way out.  ``echoed`` is the value the
    user gave, which the line may quote back (a value '--A' is not an option named)."""
    known = _options(path) | {"--help"}
    for other in re.findall(r"oracle ((?:fit |show |plot )?[a-z][a-z-]+)", line):
        try:
            known |= _options(other)
        except Exception:  # not a command: a word after 'oracle'
            pass
    missing = sorted(o for o in set(_OPTION.findall(line)) - known if not (echoed and o in echoed))
    assert not missing, (path, missing, line)


def _runnable() -> list[str]:
    """The commands of BASES this environment runs (plot needs the matplotlib extra): a
    skip inside one example would skip every other command's examples too."""
    import importlib.util

    plots = importlib.util.find_spec("matplotlib") is not None
    return sorted(p for p in BASES if plots or not p.startswith("plot"))


@fuzz_settings(150)
@given(st.sampled_from(_runnable()), st.data())
def test_fuzz_every_option(path, data):
    import click

    _count("every_option")
    d = _fresh_dir()
    (d / "runs.csv").write_text(RUNS)
    (d / "cases.yaml").write_text(CASES)
    params = [p for p in _command(path).params if isinstance(p, click.Option) and not p.is_flag and p.opts[0] != "--help"]
    param = data.draw(st.sampled_from(params))
    value = data.draw(VALUES)
    if param.name == "output" and ("/" in value or ".." in value):
        value = "out"  # written files stay in the fresh folder (test_fuzz_round3 fuzzes -o targets)
    args = [a.replace("{d}", str(d)) for a in BASES[path]]
    r = run_cli(*args, param.opts[-1], value, cwd=d)  # an -o VALUE lands in the fresh folder
    what = f"oracle {path} {param.opts[-1]} {value!r}"
    assert "Traceback" not in r.err and "Traceback" not in r.out, (what, r.err[-2000:])
    assert r.exception is None, (what, repr(r.exception))
    assert r.code in (0, 1, 2), (what, r.code, r.err[-2000:])
    if r.code == 2:
        errors = [x for x in r.err_lines if x.startswith("oracle: error: ")]
        assert len(errors) == 1, (what, r.err)
        options_named_exist(path, errors[0], value)


def test_a_value_like_an_option_quoted_back_is_not_an_option_named(tmp_path):
    """CI's falsifying example: `compare --system --A` quotes '--A' back in its error, which
    names no option of oracle's; a real unknown option in the same line still fails."""
    (tmp_path / "runs.csv").write_text(RUNS)
    r = run_cli("compare", str(tmp_path / "runs.csv"), "-f", "json", "--system", "--A", cwd=tmp_path)
    assert r.code == 2
    line = next(x for x in r.err_lines if x.startswith("oracle: error: "))
    assert "--A" in line
    options_named_exist("compare", line, "--A")
    with pytest.raises(AssertionError):
        options_named_exist("compare", line + " (try --no-such-option)", "--A")
