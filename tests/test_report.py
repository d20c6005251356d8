"""``oracle report`` (issue 6): the self-contained HTML report and its Markdown variant,
with and without measured runs, with and without matplotlib; the progress helper; and
the HTML opened in headless Chromium without network access (skipped when
/usr/bin/chromium is absent).
"""

from __future__ import annotations

import io
import re
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "validation" / "abci-paradl.csv"
CHROMIUM = Path("/usr/bin/chromium")
SCRIPT = ROOT / "scripts" / "report_screenshot.sh"

RESNET = ("-m", "resnet50", "-s", "abci", "-p", "resnet50_v100", "--gpus", "8,64,512", "--batch-per-gpu", "32")
HEADINGS = ("Summary", "Inputs", "Recommendation", "Plots", "Limits")
ACCURACY = "Accuracy against measured runs"
INSTALL = "pip install 'oracle[plot]'"


def ok(result):
    assert result.code == 0, f"exit {result.code}\nstderr: {result.err}\nexception: {result.exception!r}"
    return result


@pytest.fixture(scope="module")
def mpl():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    return matplotlib


@pytest.fixture
def no_matplotlib(monkeypatch):
    """Simulate an installation without the extra oracle[plot]."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError


def headings(text: str) -> list[str]:
    return re.findall(r"<h2>(.*?)</h2>", text)


def assert_self_contained(text: str) -> None:
    """Nothing to fetch: no scripts, no stylesheets, no external sources or links."""
    assert "<script" not in text.lower()
    assert "<link" not in text.lower()
    assert "@import" not in text and "url(" not in text
    for attr, value in re.findall(r'\b(src|href)\s*=\s*"([^"]*)"', text):
        assert value.startswith("#") or value.startswith("data:image/png;base64,"), (attr, value[:60])


def png_pixels(data: bytes) -> tuple[int, int, bytes]:
    """Width, height and the decompressed (filtered) scanlines of a PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    return width, height, zlib.decompress(idat)


# --------------------------------------------------------------------------------------
# HTML
# --------------------------------------------------------------------------------------


def test_html_report(run, mpl, tmp_path):
    out = tmp_path / "report.html"
    r = ok(run("report", *RESNET, "-o", out))
    assert r.out == "" and r.err == ""  # no progress bar when stderr is not a terminal
    text = out.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    assert headings(text) == list(HEADINGS)  # no accuracy section without measured runs
    assert_self_contained(text)
    assert text.count('src="data:image/png;base64,') == 3  # scaling, breakdown, memory
    for kind in ("scaling", "breakdown", "memory"):
        assert f'id="plot-{kind}"' in text
    # the inputs with their sources
    for words in ("ResNet-50 (given as 'resnet50')", "models/resnet50.yaml", "systems/abci.yaml",
                  "profiles/resnet50_v100.yaml", "torchvision", "V100-SXM2-16GB", "8, 64, 512"):
        assert words in text, words
    # the answer, ranked per GPU count, and the limits with reasons
    assert "Best strategy: data at 8–512 GPUs." in text
    assert text.count('<tr class="best group">') == 3
    assert "p=512 exceeds the 64 filters of conv1" in text
    assert re.search(r"needs [\d.]+ GB of 16.0 GB GPU memory", text)  # e.g. data+filter 2x256
    assert "oracle report --model resnet50 --system abci --profile resnet50_v100 --gpus 8,64,512" in text


def test_html_report_with_measured_runs(run, mpl, tmp_path):
    out = tmp_path / "report.html"
    ok(run("report", *RESNET, "--measured", RUNS, "-o", out))
    text = out.read_text(encoding="utf-8")
    assert headings(text) == [*HEADINGS, ACCURACY]
    assert_self_contained(text)
    assert text.count('src="data:image/png;base64,') == 4  # + compare
    assert "37 measured runs from" in text
    assert "None of these runs is of ResNet-50" in text  # the shipped runs are AlexNet and VGG16
    assert "mean accuracy" in text and "Ranking agreement" in text
    assert text.count("<tr><td class='n'>") >= 37  # every run listed


def test_report_without_matplotlib(run, tmp_path, no_matplotlib):
    html_out, md_out = tmp_path / "report.html", tmp_path / "report.md"
    ok(run("report", *RESNET, "--measured", RUNS, "-o", html_out))
    ok(run("report", *RESNET, "-o", md_out))
    text = html_out.read_text(encoding="utf-8")
    assert headings(text) == [*HEADINGS, ACCURACY]
    assert INSTALL in text
    assert "<img" not in text
    assert_self_contained(text)
    assert "Best strategy: data" in text  # the rest is complete
    md = md_out.read_text(encoding="utf-8")
    assert INSTALL in md and "![" not in md
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "report.md"]


def test_report_says_ratios_as_ratios(run, tmp_path, no_matplotlib):
    """Issue 23: the shipped runs took 5.4x their projections (geometric mean of measured /
    projected over the 37 runs, 0.99x to 24x); the report said "on average 67.9% slower than
    projected".  Ratios are multiples in the summary, the accuracy table and the gaps."""
    out = tmp_path / "r.md"
    ok(run("report", *RESNET, "--measured", RUNS, "-o", out))
    md = out.read_text(encoding="utf-8")
    assert ("The runs took 5.4x their projected time (geometric mean of measured / projected; from 0.993x to 24x)"
            in md)  # fmt: skip
    assert "| all runs | 37 | 32.1% | 4.2% | 67.9% | 5.4x |" in md
    assert "% slower" not in md and "% faster" not in md and "× faster" not in md
    assert "a 59.3× speed-up on 64× the GPUs" in md  # 9.05 min / 9.15 s


def test_a_gap_of_twice_the_best_or_more_is_a_multiple(run, tmp_path, no_matplotlib):
    """Filter parallelism on 4 GPUs fits and takes 2870 s to data's 1012 s: '2.8x', not '+183.7%'
    (the report's recommendation and predict's chart)."""
    args = ("-m", "resnet50", "-s", "abci", "-p", "resnet50_v100", "--gpus", "4", "--batch-per-gpu", "32",
            "--strategy", "data,filter")  # fmt: skip
    ok(run("report", *args, "-o", tmp_path / "r.md"))
    assert re.search(r"^\|  \| 2 \| filter \|.*\| 2\.8x \|$", (tmp_path / "r.md").read_text(encoding="utf-8"), re.M)
    chart = ok(run("predict", *args, "--chart", "--width", "120")).out
    assert re.search(r"filter .* 2\.8x$", chart, re.M) and "%" not in chart.split("time per epoch (")[1]


# --------------------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------------------


def test_markdown_report(run, mpl, tmp_path):
    out = tmp_path / "pr.md"
    ok(run("report", *RESNET, "--measured", RUNS, "-o", out))
    md = out.read_text(encoding="utf-8")
    assert re.findall(r"^## (.*)$", md, flags=re.M) == [*HEADINGS, ACCURACY]
    for kind in ("scaling", "breakdown", "memory", "compare"):
        png = tmp_path / f"pr-{kind}.png"
        assert f"![{kind} plot](pr-{kind}.png)" in md
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| GPUs | rank | strategy |" in md
    assert "| 8 | 1 | **data** |" in md
    assert "p=512 exceeds the 64 filters of conv1" in md


def test_markdown_report_escapes_pipes(run, tmp_path, no_matplotlib):
    out = tmp_path / "r.md"
    ok(run("report", *RESNET, "-o", out))
    for line in out.read_text(encoding="utf-8").splitlines():
        if line.startswith("| ") and "---" not in line:
            cells = re.split(r"(?<!\\)\|", line)[1:-1]
            assert cells, line


INFEASIBLE_RUNS = ("model,system,strategy,gpus,global_batch,iteration_s\n"
                   "vgg16,abci,data,8,256,0.5\n"
                   "vgg16,abci,data,8,8192,0.5\n"  # 85.6 GB of the V100's 16 GB
                   "vgg16,abci,data,16,8,0.5\n")  # fewer than one sample per GPU


def test_markdown_report_shows_the_limits_of_infeasible_runs_as_html_does(run, tmp_path, no_matplotlib):
    """QA: the Markdown per-run table had no notes column, so "the limit in the notes" named
    nothing; both formats show the same notes (render/report.py run_cells)."""
    runs = tmp_path / "runs.csv"
    runs.write_text(INFEASIBLE_RUNS, encoding="utf-8")
    texts = {}
    for suffix in ("md", "html"):
        out = tmp_path / f"r.{suffix}"
        ok(run("report", "-m", "vgg16", "-s", "abci", "--gpus", "8,16", "--measured", runs, "-o", out))
        texts[suffix] = out.read_text(encoding="utf-8")
    for text in texts.values():
        assert "the limit in the notes" in text
        assert "needs 85.6 GB of 16.0 GB GPU memory" in text
        assert "fewer than one sample per GPU: B=8 over 16" in text
    row = next(line for line in texts["md"].splitlines() if line.startswith("| 3 |"))
    assert row.endswith("| infeasible | infeasible in the model: needs 85.6 GB of 16.0 GB GPU memory (not scored) |")


@pytest.mark.parametrize(("suffix", "code", "shown"), [("md", "`oracle fit runs`", "\\`"),
                                                     ("html", "<code>oracle fit runs</code>", "`oracle fit runs`")])
def test_reports_write_commands_as_code_not_escaped_backticks(run, tmp_path, no_matplotlib, suffix, code, shown):
    """QA: the Markdown summary read \\`oracle fit runs\\` (backslashes shown), the HTML one kept
    the backticks; oracle's own backticked commands are code spans / <code>, a name's
    backticks, pipes and markup stay escaped."""
    out = tmp_path / f"pr.{suffix}"
    ok(run("report", *RESNET, "--measured", RUNS, "-o", out))
    text = out.read_text(encoding="utf-8")
    assert f"{code} calibrates a system" in text and shown not in text
    from oracle.textsafe import html_prose, md_prose

    assert md_prose("run `oracle fit runs` on `a|b` [x]") == "run `oracle fit runs` on \\`a\\|b\\` \\[x\\]"
    assert html_prose("run `oracle fit runs` on <b> `a|b`") == "run <code>oracle fit runs</code> on &lt;b&gt; `a|b`"


# --------------------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------------------


def test_report_suffix(run, tmp_path):
    r = run("report", *RESNET, "-o", tmp_path / "report.pdf")
    assert r.code == 2 and len(r.err_lines) == 1 and "*.html or *.md" in r.err


def test_report_bad_measured_file(run, tmp_path, no_matplotlib):
    r = run("report", *RESNET, "--measured", tmp_path / "missing.csv", "-o", tmp_path / "r.html")
    assert r.code == 2 and len(r.err_lines) == 1 and "missing.csv" in r.err
    assert not (tmp_path / "r.html").exists()


# --------------------------------------------------------------------------------------
# progress feedback
# --------------------------------------------------------------------------------------


def test_progress_only_on_a_terminal(monkeypatch):
    from oracle.render import progress as pr

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.delenv(pr.ENV, raising=False)
    monkeypatch.delenv("TERM", raising=False)
    assert pr.wanted(io.StringIO()) is False  # piped
    assert pr.wanted(Tty()) is True
    monkeypatch.setenv("TERM", "dumb")
    assert pr.wanted(Tty()) is False
    monkeypatch.setenv(pr.ENV, "1")
    assert pr.wanted(io.StringIO()) is True
    monkeypatch.setenv(pr.ENV, "0")
    assert pr.wanted(Tty()) is False


def test_progress_helpers(capsys):
    from oracle.render.progress import progress, track

    assert list(track(range(5), "counting", enabled=False)) == [0, 1, 2, 3, 4]
    with progress("work", total=2, enabled=False) as bar:
        assert not bar.shown
        bar.advance("next")
        bar.set_total(3)
    # a bar that is shown draws on stderr only, and disappears (transient)
    assert list(track(iter("abc"), "letters", enabled=True)) == ["a", "b", "c"]
    with progress("work", total=2, enabled=True) as bar:
        assert bar.shown
        bar.advance("step 2")
        bar.advance()
    captured = capsys.readouterr()
    assert captured.out == ""


# --------------------------------------------------------------------------------------
# headless Chromium, no network
# --------------------------------------------------------------------------------------


@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Chromium at /usr/bin/chromium (apt-get install -y chromium)")
def test_report_in_headless_chromium(run, tmp_path):
    """Every section renders in a real browser with the network cut off, plots included."""
    report = tmp_path / "report.html"
    ok(run("report", *RESNET, "--measured", RUNS, "-o", report))
    shot = tmp_path / "shot.png"
    proc = subprocess.run(["bash", str(SCRIPT), str(report), str(shot)], capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    dom = (tmp_path / "shot.dom.html").read_text(encoding="utf-8")
    for h in (*HEADINGS, ACCURACY):
        assert f"<h2>{h}</h2>" in dom, h
    has_plots = "data:image/png;base64," in report.read_text(encoding="utf-8")
    if has_plots:
        assert dom.count('src="data:image/png;base64,') == 4
    # the screenshot: a 1280x4000 PNG that is not blank
    width, height, raw = png_pixels(shot.read_bytes())
    assert (width, height) == (1280, 4000)
    assert len(set(raw)) > 50  # many distinct byte values: text, tables, plots
    assert raw.count(0xFF) < 0.98 * len(raw)


def test_screenshot_script_usage():
    assert SCRIPT.exists() and SCRIPT.stat().st_mode & 0o111
    if shutil.which("bash") is None:
        pytest.skip("no bash")
    proc = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and "Usage:" in proc.stdout


def test_shipped_files_are_named_as_shipped_wherever_oracle_is_installed(tmp_path, monkeypatch):
    """Issue 17: an installed oracle's files live under site-packages; a report names them
    'oracle:systems/abci.yaml', not '.venv/lib/python3.11/site-packages/...'.  Other files
    keep their path relative to the current folder."""
    from oracle import resources
    from oracle.render.report import _path

    installed = tmp_path / ".venv" / "lib" / "python3.11" / "site-packages" / "oracle" / "_data"
    for kind in ("models", "systems", "profiles"):
        (installed / kind).mkdir(parents=True)
    shipped = installed / "systems" / "abci.yaml"
    shipped.write_text("name: x\n")
    own = tmp_path / "my-system.yaml"
    own.write_text("name: y\n")
    monkeypatch.setattr(resources, "shipped_dir", lambda kind: installed / kind)
    monkeypatch.chdir(tmp_path)
    assert _path(shipped) == "oracle:systems/abci.yaml"
    assert _path(".venv/lib/python3.11/site-packages/oracle/_data/systems/abci.yaml") == "oracle:systems/abci.yaml"
    assert _path(own) == "my-system.yaml"
    assert _path(None) == "–"
