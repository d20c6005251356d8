"""Plots a person can read (issue 23 point 7): every plot is drawn at its default size
and resolution (``--dpi`` 110) and measured with matplotlib's own text extents
(``get_window_extent`` with the Agg renderer):

- no label (text, annotation, title, legend) overlaps another label;
- no label overlaps a bar, a line or a marker, except a label standing in the one bar
  it annotates on an opaque box (the breakdown's "✗ reason" in a faded bar);
- markers of different series are never drawn on top of one another: where two
  strategies have (nearly) the same value they are set side by side;
- no stacked bars on a log axis (a stacked part's height there is not its value).

The sweeps are the ones of docs/plots-and-reports.md and tests/test_plot.py.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "validation" / "abci-paradl.csv"
DPI = 110  # the default of `oracle plot --dpi`
TOLERANCE_PX2 = 1.0  # overlaps smaller than a pixel are anti-aliasing, not overlap

SWEEPS = {
    "resnet50": dict(model="resnet50", system="abci", profile="resnet50_v100", gpus="4-1024", batch_per_gpu=32),
    "resnet50-small": dict(model="resnet50", system="abci", profile="resnet50_v100", gpus="8,64,512",
                           batch_per_gpu=32),
    "cosmoflow": dict(model="cosmoflow", system="abci", profile="cosmoflow_v100", strategies="data,spatial,data+spatial",
                      batch=64, gpus="128,256,512,1024"),
    "vgg16": dict(model="vgg16", system="abci", profile="vgg16_v100", gpus="1-512", batch_per_gpu=32),
}  # fmt: skip


@pytest.fixture(scope="module")
def mpl():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    return matplotlib


def build(kind: str, sweep: str | None = None, where: dict | None = None):
    """The figure ``oracle plot KIND`` draws for a sweep of SWEEPS (compare: the runs)."""
    from oracle.render import plots

    if kind == "compare":
        from oracle import api

        rows, summary = api.compare(str(RUNS), where=where or {})
        return plots.figure("compare", rows=rows, summary=summary, title_text=f"{RUNS.name}: projected versus measured")
    points, meta = projected(sweep)
    return plots.figure(kind, points=points, meta=meta)


@functools.lru_cache(maxsize=None)
def projected(sweep: str):
    from oracle.services.project import project

    points, meta, _ = project(**SWEEPS[sweep])
    return points, meta


_DRAWN: dict = {}


def drawn(kind: str, sweep: str | None):
    """(figure, renderer) of a case, built and drawn once per test session."""
    if (kind, sweep) not in _DRAWN:
        fig = build(kind, sweep)
        _DRAWN[kind, sweep] = (fig, draw(fig))
    return _DRAWN[kind, sweep]


def draw(fig):
    """Lay out and draw at the default resolution (no pixels: the geometry is what
    counts); the Agg renderer that measured everything."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig.set_dpi(DPI)
    canvas = FigureCanvasAgg(fig)
    fig.draw_without_rendering()
    return canvas.get_renderer()


# --------------------------------------------------------------------------------------
# what a reader reads, and what it may cover
# --------------------------------------------------------------------------------------


def _area(a, b) -> float:
    from matplotlib.transforms import Bbox

    both = Bbox.intersection(a, b)
    return 0.0 if both is None else both.width * both.height


def labels(fig, renderer) -> list[tuple[str, object, object]]:
    """(text, artist, window extent) of every label: texts and annotations of the figure
    and of its axes (titles included, tick labels not), and every legend as one box."""
    from matplotlib.text import Text

    out = []
    owners = [fig, *fig.axes]
    for owner in owners:
        for child in owner.get_children():
            if isinstance(child, Text) and child.get_visible() and child.get_text().strip():
                # the text alone: an annotation's extent would include its leader line
                out.append((child.get_text(), child, Text.get_window_extent(child, renderer)))
    for legend in [*fig.legends, *(ax.get_legend() for ax in fig.axes)]:
        if legend is not None:
            out.append(("legend", legend, legend.get_window_extent(renderer)))
    return out


def bars(ax, renderer) -> list:
    """(patch, window extent within the axes) of every bar."""
    from matplotlib.container import BarContainer
    from matplotlib.transforms import Bbox

    out = []
    for container in ax.containers:
        if isinstance(container, BarContainer):
            for patch in container.patches:
                box = Bbox.intersection(patch.get_window_extent(renderer), ax.bbox)
                if box is not None and box.width * box.height > 0:
                    out.append((patch, box))
    return out


def _on_box(text) -> bool:
    """Whether a text stands on an opaque background of its own."""
    patch = getattr(text, "get_bbox_patch", lambda: None)()
    return patch is not None and patch.get_facecolor()[3] >= 0.8


def _marker_hits(line, box, renderer) -> bool:
    if line.get_marker() in (None, "None", "", " ") or not line.get_markersize():
        return False
    r = line.get_markersize() * line.figure.dpi / 72 / 2
    for x, y in line.get_transform().transform(line.get_xydata()):
        dx = max(box.x0 - x, 0.0, x - box.x1)
        dy = max(box.y0 - y, 0.0, y - box.y1)
        if math.hypot(dx, dy) < r - 0.5:
            return True
    return False


def _line_hits(line, box) -> bool:
    from matplotlib.transforms import Bbox

    if line.get_linestyle() in ("None", "", " ") or not line.get_linewidth():
        return False
    path = line.get_transform().transform_path(line.get_path())
    inner = Bbox.from_extents(box.x0 + 0.5, box.y0 + 0.5, box.x1 - 0.5, box.y1 - 0.5)
    return path.intersects_bbox(inner, filled=False)


def overlaps(fig, renderer) -> list[str]:
    """Every label over another label, a bar, a line or a marker, said in words."""
    found = []
    every = labels(fig, renderer)
    for i, (a, _, box_a) in enumerate(every):
        for b, _, box_b in every[i + 1:]:
            if _area(box_a, box_b) > TOLERANCE_PX2:
                found.append(f"label {a!r} over label {b!r}")
    for ax in fig.axes:
        marks = bars(ax, renderer)
        lines = [ln for ln in ax.lines if ln.get_visible()]
        for text, artist, box in every:
            hit = [p for p, b in marks if _area(box, b) > TOLERANCE_PX2]
            # a label may stand in the one bar it annotates, on an opaque box
            own = _on_box(artist) and all(box.x0 <= (b.x0 + b.x1) / 2 <= box.x1 for p, b in marks if p in hit)
            if hit and not own:
                found.append(f"{ax.get_title(loc='left') or ax.get_title()}: label {text!r} over {len(hit)} bar part(s)")
            for ln in lines:
                if _line_hits(ln, box) or _marker_hits(ln, box, renderer):
                    found.append(f"{ax.get_title(loc='left')}: label {text!r} over a line or marker ({ln.get_color()})")
    return found


def series_markers(ax) -> dict[str, list[tuple[float, float, float]]]:
    """Strategy colour -> (x, y, diameter) in pixels of each of that strategy's markers."""
    from matplotlib.colors import to_hex

    from oracle.render.plots import strategy_styles

    colours = {c.lower() for c, _ in strategy_styles().values()}
    out: dict[str, list] = {}
    for ln in ax.lines:
        colour = to_hex(ln.get_color()).lower()
        if colour in colours and ln.get_marker() not in (None, "None", "", " ") and ln.get_visible():
            size = ln.get_markersize() * ax.figure.dpi / 72
            out.setdefault(colour, []).extend((x, y, size) for x, y in ln.get_transform().transform(ln.get_xydata()))
    return out


def hidden_markers(fig) -> list[str]:
    """Pairs of markers of two series whose centres are closer than three quarters of a
    marker: one hides most of the other."""
    found = []
    for ax in fig.axes:
        by = series_markers(ax)
        names = sorted(by)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                for xa, ya, sa in by[a]:
                    for xb, yb, sb in by[b]:
                        apart = math.dist((xa, ya), (xb, yb))
                        if apart < 0.75 * max(sa, sb):
                            found.append(f"{a} and {b} at ({xa:.0f}, {ya:.0f}) px: {apart:.1f} px apart")
    return found


# --------------------------------------------------------------------------------------
# the promises
# --------------------------------------------------------------------------------------

CASES = [("breakdown", "resnet50"), ("scaling", "resnet50"), ("memory", "resnet50"), ("scaling", "resnet50-small"),
         ("breakdown", "cosmoflow"), ("scaling", "cosmoflow"), ("memory", "cosmoflow"), ("breakdown", "vgg16"),
         ("scaling", "vgg16"), ("compare", None)]  # fmt: skip


@pytest.mark.parametrize("kind,sweep", CASES)
def test_no_label_over_another_mark(mpl, kind, sweep):
    fig, renderer = drawn(kind, sweep)
    assert overlaps(fig, renderer) == []


@pytest.mark.parametrize("kind,sweep", [c for c in CASES if c[0] in ("scaling", "memory")])
def test_every_series_visible(mpl, kind, sweep):
    fig, _ = drawn(kind, sweep)
    assert hidden_markers(fig) == []


def test_coinciding_lines_are_said_in_the_legend(mpl):
    """ResNet-50's filter and channel parallelism keep the same memory per GPU at every
    GPU count: their lines coincide, and the legend says so."""
    fig, _ = drawn("memory", "resnet50")
    entries = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    channel = next(e for e in entries if e.startswith("channel"))
    assert "filter" in channel, entries


@pytest.mark.parametrize("kind,sweep", [("compare", None), *[c for c in CASES if c[0] != "compare"]])
def test_no_stacked_bars_on_a_log_axis(mpl, kind, sweep):
    from matplotlib.container import BarContainer

    fig, _ = drawn(kind, sweep)
    for ax in fig.axes:
        if ax.get_yscale() != "log":
            continue
        stacked = [p.get_y() for c in ax.containers if isinstance(c, BarContainer) for p in c.patches if p.get_y() > 0]
        assert stacked == [], f"{ax.get_title(loc='left')}: bars stacked on a log axis"


def test_the_checks_see_an_overlap(mpl):
    """The measuring itself: a label put on a bar and two markers on one point are found."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4, 3))
    ax = fig.add_subplot()
    ax.bar([0, 1], [2, 3])
    ax.text(0, 1, "on the bar", ha="center")
    ax.text(1, 3.2, "above", ha="center")
    ax.text(1, 3.2, "above too", ha="center")
    ax.plot([0.5], [1.0], marker="o", color="#0072B2", ms=6)
    ax.plot([0.5], [1.0], marker="s", color="#E69F00", ms=6)
    renderer = draw(fig)
    found = overlaps(fig, renderer)
    assert any("'on the bar' over 1 bar" in f for f in found)
    assert any("label 'above' over label 'above too'" in f for f in found)
    assert len(hidden_markers(fig)) == 1
