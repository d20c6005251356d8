"""Issue 26, point 4: compare, fit runs and the runs file take every option that changes a
projection, through compute/options.Flags.parse; a row's option column wins for that row."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from conftest import run_cli
from test_robustness import one_error

from oracle.compute.options import OPTION_COLUMNS, column_flags
from oracle.errors import OracleError

ROOT = Path(__file__).resolve().parent.parent
ABCI = ROOT / "validation" / "abci-paradl.csv"
HEADER = "model,system,profile,strategy,gpus,global_batch,epoch_s"
ROW = "vgg16,abci,vgg16_v100,data,16,512,1143.7"


def _rows(result) -> list[dict]:
    assert result.code == 0, result.err
    return list(csv.DictReader(io.StringIO(result.out)))


def _runs(tmp_path, columns: str = "", cells: tuple[str, ...] = ("", "")) -> str:
    path = tmp_path / "runs.csv"
    lines = [HEADER + ("," + columns if columns else "")]
    lines += [ROW + ("," + c if columns else "") for c in cells]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.mark.parametrize("option", [("--collective", "tree"), ("--overlap", "buckets"),
                                    ("--samples", "640000"), ("--precision", "fp16"),
                                    ("--stack", "pytorch")])
def test_compare_option_changes_projection(option):
    plain = _rows(run_cli("compare", ABCI, "--where", "line=33", "-f", "csv"))[0]
    given = _rows(run_cli("compare", ABCI, "--where", "line=33", "-f", "csv", *option))[0]
    assert float(given["predicted_s"]) != pytest.approx(float(plain["predicted_s"]), rel=1e-6)


def test_compare_bucket_size_changes_the_overlapped_projection():
    base = ("compare", ABCI, "--where", "line=33", "-f", "csv", "--overlap", "buckets")
    small = _rows(run_cli(*base, "--bucket-MB", "1"))[0]
    large = _rows(run_cli(*base, "--bucket-MB", "400"))[0]
    assert float(small["predicted_comm_s"]) != pytest.approx(float(large["predicted_comm_s"]), rel=1e-6)


def test_a_row_column_changes_that_row_only(tmp_path):
    runs = _runs(tmp_path, "collective", ("", "tree"))
    plain, tree = _rows(run_cli("compare", runs, "-f", "csv"))
    flag = _rows(run_cli("compare", _runs(tmp_path), "-f", "csv", "--collective", "tree"))[0]
    assert float(plain["predicted_comm_s"]) != pytest.approx(float(tree["predicted_comm_s"]), rel=1e-6)
    assert float(tree["predicted_comm_s"]) == pytest.approx(float(flag["predicted_comm_s"]), rel=1e-12)


def test_a_row_column_wins_over_the_flag_with_a_warning(tmp_path):
    runs = _runs(tmp_path, "collective", ("tree", "tree"))
    result = run_cli("compare", runs, "-f", "csv", "--collective", "ring")
    rows = _rows(result)
    flag = _rows(run_cli("compare", _runs(tmp_path), "-f", "csv", "--collective", "tree"))[0]
    assert float(rows[0]["predicted_comm_s"]) == pytest.approx(float(flag["predicted_comm_s"]), rel=1e-12)
    warning = [line for line in result.err.splitlines() if "warning" in line]
    assert len(warning) == 1 and "lines 2-3" in warning[0] and "'collective'" in warning[0]


def test_a_stack_column_against_the_stack_option_is_named(tmp_path):
    runs = _runs(tmp_path, "stack", ("pytorch", ""))
    result = run_cli("compare", runs, "-f", "csv", "--stack", "tensorflow")
    assert result.code == 0, result.err
    assert "line 2:" in result.err and "'stack'" in result.err


def test_a_precision_column_against_the_precision_option_is_named(tmp_path):
    runs = _runs(tmp_path, "precision", ("fp16", "fp32"))
    result = run_cli("compare", runs, "-f", "csv", "--precision", "fp32")
    assert result.code == 0, result.err
    assert "line 2:" in result.err and "'precision'" in result.err and "line 3" not in result.err


def test_a_bad_option_column_is_one_error_line(tmp_path):
    runs = _runs(tmp_path, "collective", ("", "bogus"))
    result = run_cli("compare", runs)
    assert result.code == 2 and result.exception is None
    assert len(result.err.strip().splitlines()) == 1
    assert "runs.csv" in result.err and ":3" in result.err and "column 'collective'" in result.err


@pytest.mark.parametrize(("column", "value", "fragment"), [
    ("collective", "nvls", "NVLS needs an NVSwitch"),  # found projecting the row on its system
    ("spatial_split_after", "nosuch", "no layer 'nosuch'"),  # found on the row's model
    ("replicated_gradients", "nosuch", "'nosuch'"),
    ("bucket_MB", "-5", "got -5;"),  # the cell as written, not in bytes
])  # fmt: skip
def test_a_bad_option_cell_names_its_row_and_column_not_the_option(tmp_path, column, value, fragment):
    """An option column's bad value is the row's: compare and fit runs name the file, its line
    and the column, as for any other cell, not the command-line option of the same name."""
    runs = _runs(tmp_path, column, ("", value))
    for args in (("compare", runs), ("fit", "runs", runs, "-s", "abci", "--calibrate", "network")):
        line = one_error(run_cli(*args), f"{runs}:3:", f"column '{column}'", fragment)
        assert "--" + column.replace("_", "-") not in line, line


def test_the_commands_own_option_is_still_named_as_an_option(tmp_path):
    one_error(run_cli("compare", _runs(tmp_path), "--collective", "nvls"), "--collective", "NVLS needs an NVSwitch")


def test_fit_runs_option_changes_the_calibration(tmp_path):
    out = {}
    for name, extra in (("plain", ()), ("tree", ("--collective", "tree"))):
        path = tmp_path / f"{name}.yaml"
        r = run_cli("fit", "runs", ABCI, "-s", "abci", "--calibrate", "network", "--where", "model=vgg16",
                    "--where", "gpus=8", "-o", path, *extra)  # on 4 GPUs the tree's n4 is below its bounds
        assert r.code == 0, r.err
        out[name] = path.read_text().split("# Evidence")[1].split("\n", 3)[1]
    assert out["plain"] != out["tree"]


def test_fit_runs_warns_of_a_column_against_its_option(tmp_path):
    with ABCI.open() as f:
        rows = list(csv.DictReader(f))
    for i, row in enumerate(rows):
        row["collective"] = "tree" if i + 2 == 33 else ""
    path = tmp_path / "runs.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    r = run_cli("fit", "runs", path, "-s", "abci", "--calibrate", "network", "--where", "model=vgg16",
                "--collective", "ring")
    assert "line 33:" in r.err and "'collective'" in r.err


def test_every_projection_option_is_a_column_and_an_option_of_compare_and_fit_runs():
    import click

    from oracle.cli.main import cli

    ctx = click.Context(cli)
    fit = cli.get_command(ctx, "fit")

    def flags(command) -> set:
        return {o for p in command.params for o in p.opts}

    predict, compare = flags(cli.get_command(ctx, "predict")), flags(cli.get_command(ctx, "compare"))
    runs = flags(fit.get_command(click.Context(fit), "runs"))
    for column in OPTION_COLUMNS:
        assert "--" + column.replace("_", "-") in predict & compare & runs
    sweep_only = {"--gpus", "--strategy", "--batch-per-gpu", "--batch", "--p2", "--segments", "--layers", "--model",
                  "--system", "--profile", "--format", "--top", "--chart", "--width", "--max-batch", "--output",
                  "--precision", "--stack"}
    assert predict - {"-" + x for x in "gbBSmspfo"} - sweep_only <= {"--" + c.replace("_", "-") for c in OPTION_COLUMNS}
    assert {"--precision", "--stack"} <= compare & runs


def test_column_values_are_typed_and_checked():
    assert column_flags({"bucket_MB": "50", "mixed_precision": "yes", "zero": "2"}) == {
        "bucket_mb": 50.0, "mixed_precision": True, "zero": 2}
    with pytest.raises(OracleError) as exc:
        column_flags({"zero": "1.5"})
    assert exc.value.path == "column 'zero'"
    with pytest.raises(OracleError) as exc:
        column_flags({"overlap": "sometimes"})
    assert exc.value.path == "column 'overlap'"
    # fixed choices in any case, as the flags take them; layer names as written
    assert column_flags({"overlap": "Buckets", "collective": "NCCL", "delayed_update": "FC6"}) == {
        "overlap": "buckets", "collective": "nccl", "delayed_update": "FC6"}
