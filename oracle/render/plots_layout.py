"""Keeping plots readable (issue 23 point 7): markers of series that (nearly) coincide set
side by side, and labels put where they cover no line or marker.

Both need the final geometry: :func:`settle` runs the figure's layout (constrained
layout moves the axes), after which data map to the display as they will be drawn.
Distances are in points (1/72 inch), so the result is the same at every ``--dpi`` and
in SVG.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

MARKER_PT = 6.5  # a strategy marker (its size in every plot)
COLLIDE_PT = 0.8 * MARKER_PT  # markers closer than this hide most of one another
STEP_PT = MARKER_PT + 1.0  # between markers set side by side


def settle(fig) -> object:
    """Run the layout (no pixels drawn) with the Agg renderer that PNGs are drawn with;
    that renderer, for measuring text."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from oracle.render.image import escape_controls

    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)  # not a GUI: the plots never touch pyplot
    escape_controls(fig)  # measured as drawn: a name's control characters as escapes
    fig.draw_without_rendering()  # matplotlib >= 3.6
    return fig.canvas.get_renderer()


class Series:
    """The marks of one strategy on a log-2 GPU axis: its points (GPU count -> y) and
    the artists that draw them, each with the GPU counts of its x data, so that the
    markers can be moved after the layout (:func:`dodge`)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.points: dict[int, float] = {}
        self.artists: list[tuple[object, list[int]]] = []

    def add(self, artist, gpus: Sequence[int]) -> None:
        self.artists.append((artist, list(gpus)))


def _px(ax, points: dict[int, float]) -> dict[int, tuple[float, float]]:
    to_px = ax.transData.transform
    return {g: tuple(to_px((g, y))) for g, y in points.items()}


def twins(ax, series: Sequence[Series]) -> dict[str, str]:
    """name -> the earlier series whose marker hides this one's at each of its GPU counts
    (their lines coincide too)."""
    limit = COLLIDE_PT * ax.figure.dpi / 72
    px = {s.name: _px(ax, s.points) for s in series}
    out: dict[str, str] = {}
    for i, s in enumerate(series):
        mine = px[s.name]
        for other in series[:i]:
            theirs = px[other.name]
            if mine and all(g in theirs and math.dist(p, theirs[g]) < limit for g, p in mine.items()):
                out[s.name] = other.name
                break
    return out


def _slots(base: int, n: int) -> list[int]:
    """base, base + 1, base - 1, base + 2, ...: where to try a marker, nearest first."""
    return [base] + [base + sign * k for k in range(1, n + 1) for sign in (1, -1)]


def dodge(ax, series: Sequence[Series], twin: dict[str, str]) -> None:
    """Set markers that would hide one another side by side at their GPU count: a twin
    (:func:`twins`) one step beside its series at every GPU count, so that its line runs
    parallel; any other marker at the nearest place where it hides none set before it
    (in the order of ``series``).  Moves every artist registered on a series."""
    dpi = ax.figure.dpi
    limit, step = COLLIDE_PT * dpi / 72, STEP_PT * dpi / 72
    to_data = ax.transData.inverted().transform
    base: dict[str, int] = {}
    placed: dict[int, list[tuple[float, float]]] = {}
    moved: dict[str, dict[int, float]] = {}
    for s in series:
        base[s.name] = base[twin[s.name]] + 1 if s.name in twin else 0
        moved[s.name] = {}
        for g, (x, y) in _px(ax, s.points).items():
            here = placed.setdefault(g, [])
            spot = (x, y)
            for k in _slots(base[s.name], len(series) + 1):
                spot = (x + k * step, y)
                if all(math.dist(spot, p) >= limit for p in here):
                    break
            here.append(spot)
            moved[s.name][g] = float(to_data(spot)[0])
    for s in series:
        for artist, gpus in s.artists:
            artist.set_xdata([moved[s.name][g] for g in gpus])


def series_legend(ax, series: Sequence[Series], handles: list) -> dict[str, str]:
    """The legend right of the axes; a series whose markers meet an earlier one's at
    each of its GPU counts (a twin) says so: it is drawn beside that one, its line
    under or along that one's.  Returns the twins, for :func:`dodge`."""
    settle(ax.figure)
    twin = twins(ax, series)
    for handle in handles:
        name = handle.get_label()
        if name in twin:
            handle.set_label(f"{name} (≈ {twin[name]}, set beside it)")
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return twin


def covers(ax, box, renderer) -> bool:
    """Whether a display box covers a line or a marker of ``ax``."""
    from matplotlib.transforms import Bbox

    inner = Bbox.from_extents(box.x0 + 0.5, box.y0 + 0.5, box.x1 - 0.5, box.y1 - 0.5)
    for line in ax.lines:
        if not line.get_visible():
            continue
        transform = line.get_transform()
        if line.get_linestyle() not in ("None", "", " ") and line.get_linewidth():
            if transform.transform_path(line.get_path()).intersects_bbox(inner, filled=False):
                return True
        if line.get_marker() not in (None, "None", "", " "):
            r = line.get_markersize() * ax.figure.dpi / 72 / 2
            for x, y in transform.transform(line.get_xydata()):
                if math.hypot(max(box.x0 - x, 0.0, x - box.x1), max(box.y0 - y, 0.0, y - box.y1)) < r:
                    return True
    return False


def place_clear(ax, text, offsets: Sequence[tuple[float, float]], renderer, taken: list) -> None:
    """Put an annotation at the first offset (points from its anchor; left of it when x
    is negative, below when y is) inside the axes where it covers no line, marker or
    ``taken`` box; the first offset when none is clear.  Its box is appended to ``taken``."""
    from matplotlib.text import Text
    from matplotlib.transforms import Bbox

    for dx, dy in [*offsets, offsets[0]]:
        text.set_position((dx, dy))
        text.set_horizontalalignment("right" if dx < 0 else "left")
        text.set_verticalalignment("top" if dy < 0 else "bottom")
        box = Text.get_window_extent(text, renderer)  # the text alone, not its leader line
        inside = ax.bbox.x0 <= box.x0 and box.x1 <= ax.bbox.x1 and ax.bbox.y0 <= box.y0 and box.y1 <= ax.bbox.y1
        if inside and not covers(ax, box, renderer) and all(Bbox.intersection(box, t) is None for t in taken):
            break
    taken.append(Text.get_window_extent(text, renderer))


__all__ = ["MARKER_PT", "Series", "covers", "dodge", "place_clear", "series_legend", "settle", "twins"]
