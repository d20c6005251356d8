"""``oracle plot`` (issue 6): every kind as PNG and SVG for ResNet-50 and CosmoFlow on
ABCI, the compare plot on the shipped validation runs, the one strategy -> colour
mapping, errors; and the terminal chart of ``predict --chart`` (no matplotlib).

Images are checked as files: PNG magic bytes and dimensions from the IHDR chunk; SVG
parsed with xml.etree, with the strategy names (series) and the axis labels with
their units present as text.  Sweeps are small to keep the tests fast.
"""

from __future__ import annotations

import struct
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "validation" / "abci-paradl.csv"

RESNET = ("-m", "resnet50", "-s", "abci", "-p", "resnet50_v100", "--gpus", "8,64,512", "--batch-per-gpu", "32")
COSMOFLOW = ("-m", "cosmoflow", "-s", "abci", "-p", "cosmoflow_v100", "--strategy", "data,spatial,data+spatial",
             "--batch", "64", "--gpus", "128,256,512,1024")  # fmt: skip
RESNET_STRATEGIES = ("data", "spatial", "filter", "channel", "pipeline", "data+filter", "data+spatial")
COSMOFLOW_STRATEGIES = ("data", "spatial", "data+spatial")

# axis labels with units, per kind
LABELS = {
    "scaling": ("GPUs (log scale)", "time per epoch (s, log scale)"),
    "memory": ("GPUs (log scale)", "memory per GPU (GB, log scale)"),
    "breakdown": ("time per epoch (",),  # unit chosen per panel: s, min, h
    "compare": ("time per epoch (s, log scale)", "GPUs"),
}

OKABE_ITO = {"#000000", "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7"}


@pytest.fixture(scope="module")
def mpl():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    return matplotlib


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG file"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def svg_texts(data: bytes) -> str:
    root = ET.fromstring(data)
    assert root.tag.endswith("svg")
    return "\n".join("".join(el.itertext()) for el in root.iter() if el.tag.endswith("text"))


def ok(result):
    assert result.code == 0, f"exit {result.code}\nstderr: {result.err}\nexception: {result.exception!r}"
    return result


def check_png(path: Path) -> None:
    data = path.read_bytes()
    w, h = png_size(data)
    assert 500 <= w <= 5000 and 300 <= h <= 5000, (w, h)
    assert len(data) > 5000


def check_svg(path: Path, kind: str, series: tuple[str, ...], extra: tuple[str, ...] = ()) -> str:
    text = svg_texts(path.read_bytes())
    for name in series:
        assert name in text, f"{kind}: series {name!r} missing"
    for label in LABELS[kind] + extra:
        assert label in text, f"{kind}: label {label!r} missing"
    return text


# --------------------------------------------------------------------------------------
# every kind, both models, both formats
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["breakdown", "scaling", "memory"])
def test_resnet50_plots(run, mpl, tmp_path, kind):
    png, svg = tmp_path / f"{kind}.png", tmp_path / f"{kind}.svg"
    r = ok(run("plot", kind, *RESNET, "-o", png))
    assert r.out == "" and r.err == ""  # no progress bar when not on a terminal
    ok(run("plot", kind, *RESNET, "-o", svg))
    check_png(png)
    series = RESNET_STRATEGIES
    text = check_svg(svg, kind, series, ("ResNet-50 on ABCI",))
    if kind == "memory":
        assert "GPU capacity: 16 GB" in text
    if kind == "scaling":
        assert "ideal: linear speed-up" in text
        assert "best at this GPU count" in text and "best: data" in text
        assert "out of GPU memory" in text
    if kind == "breakdown":
        assert "comm: gradient exchange" in text and "compute: forward + backward" in text
        assert "✗ p &gt; filters" in text or "✗ p > filters" in text  # filter at 512 GPUs: reason shown
        assert "512 GPUs" in text


@pytest.mark.parametrize("kind", ["breakdown", "scaling", "memory"])
def test_cosmoflow_plots(run, mpl, tmp_path, kind):
    png, svg = tmp_path / f"{kind}.png", tmp_path / f"{kind}.svg"
    ok(run("plot", kind, *COSMOFLOW, "-o", png))
    ok(run("plot", kind, *COSMOFLOW, "-o", svg))
    check_png(png)
    text = check_svg(svg, kind, COSMOFLOW_STRATEGIES, ("CosmoFlow on ABCI", "strong scaling, B = 64"))
    if kind == "breakdown":
        assert "comm: halo exchange" in text  # 3-D spatial split: halos
        assert "out of memory" in text and "sample per GPU" in text
        assert "best" in text  # data+spatial 64x8 at 512 GPUs
    if kind == "scaling":
        assert "best: data+spatial" in text


def test_compare_plot(run, mpl, tmp_path):
    png, svg = tmp_path / "compare.png", tmp_path / "compare.svg"
    ok(run("plot", "compare", RUNS, "-o", png))
    ok(run("plot", "compare", RUNS, "-o", svg))
    check_png(png)
    text = check_svg(svg, "compare", ("data", "data+spatial"))
    for words in ("AlexNet on ABCI", "VGG16 on ABCI", "measured", "projected (compute + communication)",
                  "of which communication",
                  "mean accuracy", "37 runs"):
        assert words in text, words
    # an accuracy label per run: 37 percentages, plus the ones of the titles
    labels = [t for t in text.splitlines() if t.endswith("%") and t[:-1].replace(".", "").isdigit()]
    assert len(labels) == 37


def test_compare_plot_where(run, mpl, tmp_path):
    svg = tmp_path / "vgg.svg"
    ok(run("plot", "compare", RUNS, "--where", "model=vgg16", "-o", svg))
    text = svg_texts(svg.read_bytes())
    assert "VGG16 on ABCI" in text and "AlexNet" not in text


# --------------------------------------------------------------------------------------
# one colour per strategy, everywhere
# --------------------------------------------------------------------------------------


def test_one_colour_per_strategy():
    from oracle.compute.strategies import names
    from oracle.render.plots import strategy_style, strategy_styles

    colours = [strategy_style(n)[0] for n in names()]
    assert len(set(colours)) == len(names())  # distinct
    assert {c.upper() for c in colours} <= OKABE_ITO  # colour-blind-safe palette
    assert len({strategy_style(n)[1] for n in names() if n != "serial"}) == len(names()) - 1  # distinct markers too
    assert set(strategy_styles()) >= set(names())
    assert strategy_style("future-strategy")[0] not in colours


def test_same_colour_in_every_plot(run, mpl, tmp_path):
    """data's colour is the same in the scaling, memory, breakdown and compare plots."""
    from oracle.render.plots import strategy_colour

    blue = strategy_colour("data").lower()
    for kind in ("scaling", "memory", "breakdown"):
        out = tmp_path / f"{kind}.svg"
        ok(run("plot", kind, *RESNET, "--strategy", "data,filter", "-o", out))
        assert blue in out.read_text(encoding="utf-8").lower(), kind
    out = tmp_path / "compare.svg"
    ok(run("plot", "compare", RUNS, "--where", "model=vgg16", "-o", out))
    assert blue in out.read_text(encoding="utf-8").lower()


# --------------------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------------------


def test_unknown_suffix(run, tmp_path):
    r = run("plot", "scaling", *RESNET, "-o", tmp_path / "plot.jpg")
    assert r.code == 2
    assert len(r.err_lines) == 1 and "*.png, *.svg or *.pdf" in r.err
    assert not (tmp_path / "plot.jpg").exists()


def test_output_required(run):
    r = run("plot", "memory", *RESNET)
    assert r.code == 2 and "--output" in r.err


def test_without_matplotlib(run, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    r = run("plot", "scaling", *RESNET, "-o", tmp_path / "s.png")
    assert r.code == 2
    assert r.err_lines == ["oracle: error: plots need matplotlib: pip install 'oracle[plot]'"]
    assert not (tmp_path / "s.png").exists()


def test_bad_input_is_one_line(run, mpl, tmp_path):
    r = run("plot", "scaling", "-m", "resnet5", "-s", "abci", "-p", "resnet50_v100", "-o", tmp_path / "s.png")
    assert r.code == 2 and len(r.err_lines) == 1 and "Traceback" not in r.err


def test_help_lists_kinds(run):
    r = ok(run("plot", "--help"))
    for kind in ("breakdown", "scaling", "memory", "compare"):
        assert kind in r.out


# --------------------------------------------------------------------------------------
# predict --chart: the terminal chart (rich only, no matplotlib)
# --------------------------------------------------------------------------------------


def chart_text(width: int = 100, **kw) -> str:
    import oracle
    from oracle.render.predict import bar_chart, render_text

    points = oracle.predict("resnet50", "abci", "resnet50_v100", **kw)
    return render_text(bar_chart(points, {}, width), width=width)


def test_chart_fits_and_reads_at_100_columns():
    text = chart_text(100, gpus=[8, 512], batch_per_gpu=32)
    lines = text.rstrip("\n").splitlines()
    assert all(len(line.rstrip()) <= 100 for line in lines)
    assert "█ compute" in lines[0] and "▒ communication" in lines[0]
    body = [line for line in lines if "data " in line]
    assert body and "best" in body[0]  # the best first at each GPU count
    # bars use the room: the longest bar of a GPU count spans most of the line
    assert max(line.count("█") + line.count("▒") for line in lines) >= 40
    # infeasible strategies are shown after the feasible ones, with their limits
    assert "✗ memory" in text and "✗ filters" in text
    # a bar longer than the scale (filter: hours vs minutes) is cut and marked
    assert "»" in text


def test_chart_when_nothing_fits():
    """γ = 1: ResNet-50 at 32 samples/GPU needs 20.9 GB; the chart still shows the
    strategies (dimmed, with the limit) instead of nothing."""
    text = chart_text(100, gpus=[64], batch_per_gpu=32)
    assert "data" in text and "✗ memory" in text
    assert "no point" not in text


def test_chart_narrow():
    text = chart_text(60, gpus=[64], batch_per_gpu=32)
    assert all(len(line.rstrip()) <= 60 for line in text.splitlines()[2:])


def test_predict_chart_cli(run, tmp_path):
    out = tmp_path / "table.txt"
    ok(run("predict", *RESNET, "--chart", "--width", "100", "-o", out))
    text = out.read_text(encoding="utf-8")
    assert "time per epoch (█ compute" in text
    assert all(len(line.rstrip()) <= 100 for line in text.splitlines())


def test_plots_as_pdf_for_papers(run, tmp_path):
    """-o FILE.pdf writes a PDF (issue 17), byte-identical when drawn again."""
    pytest.importorskip("matplotlib")
    a, b = tmp_path / "a.pdf", tmp_path / "b.pdf"
    for out in (a, b):
        r = run("plot", "scaling", "-m", "resnet50", "-s", "abci", "-p", "resnet50_v100", "--gpus", "8-64", "-o", out)
        assert r.code == 0, r.err
    assert a.read_bytes().startswith(b"%PDF") and a.read_bytes() == b.read_bytes()


def test_chart_follows_top(run):
    """--chart shows what --top keeps (issue 17)."""
    args = ("predict", "-m", "resnet50", "-s", "abci", "-p", "resnet50_v100", "--gpus", "8", "--chart", "--width", "120")
    full = run(*args)
    top = run(*args, "--top", "1")
    chart = lambda out: out[out.index("time per epoch ("):]  # noqa: E731
    assert "data+filter" in chart(full.out) and "data+filter" not in chart(top.out)
