"""Pictures of projections (issue 6): breakdown, scaling, memory and compare plots.

Renderers only: every function takes points (a ranked sweep) or compare rows and a
``meta`` dict of labels, chooses what to draw, and returns a matplotlib Figure; no
cost is computed here.  matplotlib is the optional extra ``oracle[plot]`` and is
imported inside the functions (never at module import), with the non-interactive
Agg machinery (figures are created without pyplot, so no GUI backend is touched).

Colours: one mapping strategy -> colour, :func:`strategy_styles`, from the Okabe-Ito
palette (safe for the common colour-vision deficiencies), each strategy also with its
own marker so that the plots read in grey-scale print too.  Phases of the time
breakdown use greys for compute and Paul Tol's "muted" colours (also colour-blind
safe, and none equal to a strategy colour) with hatches for communication.  Both are
plain data declared where the strategy or phase is (compute/strategies, compute/cost.py).

``meta`` keys (all optional but ``model`` and ``system``): model, system, profile,
scaling, precision, gamma, gpu_model, gpu_memory_bytes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from oracle.compute.cost import Point, phases
from oracle.errors import OracleError
from oracle.units import fmt_bytes

INSTALL_HINT = "pip install 'oracle[plot]'"

OTHER_STYLE = ("#999999", "o")  # a strategy added later and not given a colour yet
EDGE = "#333333"  # marker edges: keeps the yellow visible on white


def strategy_styles() -> dict[str, tuple[str, str]]:
    """strategy -> (colour, marker), in strategy order: what each strategy's module
    declares (compute/strategies, the Okabe & Ito (2008) "Color Universal Design"
    palette for the shipped ones)."""
    from oracle.compute.strategies import REGISTRY, names

    return {n: (REGISTRY[n].style.colour, REGISTRY[n].style.marker) for n in names()}


def phase_styles() -> dict[str, tuple[str, str, str | None]]:
    """phase -> (legend label, fill colour, hatch): what compute/cost.py and the
    strategies declare for each phase (phases without a label have no style)."""
    return {ph.name: (ph.label, ph.colour, ph.hatch) for ph in phases() if ph.label is not None}


# limit code -> a few words for a plot label (the full reasons are in tables/reports): the
# limits every strategy shares; each strategy's module declares its own (limit_words)
LIMIT_WORDS: dict[str, str] = {
    "memory": "out of memory",
    "batch": "< 1 sample per GPU",
    "gpus": "more GPUs than the system",
}


def _limit_words() -> dict[str, str]:
    from oracle.compute.strategies import REGISTRY, names

    return {**LIMIT_WORDS, **{k: w for n in names() for k, w in REGISTRY[n].limit_words.items()}}

RC = {
    "svg.fonttype": "none",  # text stays text in SVG: searchable, and tests can read it
    "svg.hashsalt": "oracle",  # deterministic SVG ids
    "text.parse_math": False,  # names from input files are text: "$x" is not TeX (and may not parse)
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#DDDDDD",
    "grid.linewidth": 0.6,
    "axes.axisbelow": True,
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
}

FORMATS = ("png", "svg", "pdf")  # PDF for papers (issue 17)
KINDS = ("breakdown", "scaling", "memory", "compare")


# -- availability, styles, output ---------------------------------------------------


def available() -> bool:
    """Whether matplotlib can be imported."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def require() -> None:
    """Raise a user-facing error when matplotlib is missing."""
    if not available():
        raise OracleError(f"plots need matplotlib: {INSTALL_HINT}")


def strategy_style(name: str) -> tuple[str, str]:
    """(colour, marker) of a strategy: the one mapping every plot uses."""
    return strategy_styles().get(name, OTHER_STYLE)


def strategy_colour(name: str) -> str:
    return strategy_style(name)[0]


def format_for(path: str) -> str:
    """'png', 'svg' or 'pdf' from a file name; anything else is a user mistake."""
    suffix = str(path).rsplit(".", 1)[-1].lower() if "." in str(path) else ""
    if suffix not in FORMATS:
        raise OracleError(
            f"cannot tell the image format from '{path}'",
            path="-o",
            hint="name the file *.png, *.svg or *.pdf",
        )
    return suffix


def to_bytes(fig, fmt: str = "png", dpi: int = 110, compact: bool = True, way_out=None) -> bytes:
    """The figure as PNG or SVG bytes (oracle/render/image.py; ``way_out`` as there)."""
    from oracle.render.image import PLOT_WAY_OUT, encode

    return encode(fig, fmt, dpi, RC, compact, way_out or PLOT_WAY_OUT)


def new_figure(width: float, height: float):
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


# -- choosing what to draw -----------------------------------------------------------


def status(pt: Point) -> str:
    """'ok' (feasible), 'memory' (only too big for the GPU) or 'other' (a structural
    limit: more GPUs than filters, spatial extent, batch, ...)."""
    if pt.feasible:
        return "ok"
    if all(lim.code == "memory" for lim in pt.limits):
        return "memory"
    return "other"


_STATUS_ORDER = {"ok": 0, "memory": 1, "other": 2}


def is_finite(v: float) -> bool:
    return v is not None and not math.isnan(v) and not math.isinf(v)


def representatives(points: Sequence[Point]) -> dict[str, dict[int, Point]]:
    """One point per (strategy, GPU count): the fastest feasible configuration, else
    the fastest that only runs out of memory, else the fastest with finite numbers.
    Strategies in strategy order (unknown ones last)."""
    groups: dict[str, dict[int, list[Point]]] = {}
    for pt in points:
        groups.setdefault(pt.strategy, {}).setdefault(pt.gpus, []).append(pt)

    def key(pt: Point):
        total = pt.total_s
        return (_STATUS_ORDER[status(pt)], not is_finite(total), total if is_finite(total) else 0.0, pt.p2)

    order = list(strategy_styles())
    names = sorted(groups, key=lambda n: (order.index(n) if n in order else len(order), n))
    return {n: {g: min(pts, key=key) for g, pts in sorted(groups[n].items())} for n in names}


def best_per_gpus(points: Sequence[Point]) -> dict[int, Point]:
    """The rank-1 point of every GPU count that has a feasible point."""
    return {pt.gpus: pt for pt in points if pt.rank == 1}


def infeasible_label(pt: Point) -> str:
    if pt.p1 > 1 and pt.p2 > 1:
        return f"{pt.strategy}\n{pt.p1}×{pt.p2}"
    if pt.segments:
        return f"{pt.strategy}\nS={pt.segments}"
    return pt.strategy


def limit_words(pt: Point) -> str:
    """A short label of why a point is infeasible."""
    words, known = [], _limit_words()
    for lim in pt.limits:
        w = known.get(lim.code, lim.code)
        if lim.code == "memory" and is_finite(pt.memory_bytes):
            w = f"out of memory ({fmt_bytes(pt.memory_bytes)})"
        if w not in words:
            words.append(w)
    return "; ".join(words)


def time_unit(seconds: float) -> tuple[str, float]:
    """A readable unit for a linear time axis whose top is ``seconds``."""
    if not is_finite(seconds) or seconds < 120:
        return "s", 1.0
    if seconds < 2 * 3600:
        return "min", 60.0
    if seconds < 2 * 86400:
        return "h", 3600.0
    return "days", 86400.0


def gpu_memory(meta: dict, points: Sequence[Point]) -> float | None:
    cap = meta.get("gpu_memory_bytes")
    return float(cap) if cap else None


def capacity_label(meta: dict) -> str:
    """'16 GB (V100-SXM2-16GB)'."""
    cap = meta.get("gpu_memory_bytes")
    gpu = meta.get("gpu_model")
    if not cap:
        return "the GPU memory"
    return f"{fmt_bytes(cap)} ({gpu})" if gpu else fmt_bytes(cap)


TITLE_CHARS = 100  # about what a line of the title font spans on the 10-inch scaling figure


def title(meta: dict, what: str) -> str:
    first = f"{meta.get('model', '?')} on {meta.get('system', '?')}: {what}"
    profile = meta.get("profile") and f"profile {meta['profile']}"
    if profile and str(meta.get("profile_note", "")).startswith("ESTIMATED"):
        profile += " (ESTIMATED, not measured)"
    bits = [meta.get("scaling"), profile, meta.get("precision"), meta.get("stack") and f"stack {meta['stack']}"]
    if meta.get("memory_model"):
        from oracle.render.predict import memory_label

        bits.append(memory_label(meta))
    lines: list[str] = []
    for bit in (str(b) for b in bits if b):  # a line is as wide as the 10-inch figures hold
        if lines and len(lines[-1]) + 3 + len(bit) <= TITLE_CHARS:
            lines[-1] += " · " + bit
        else:
            lines.append(bit)
    return "\n".join([first, *lines])


def log2_gpu_axis(ax, counts: Sequence[int]) -> None:
    from matplotlib.ticker import FixedLocator, NullLocator

    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(list(counts)))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([f"{c:,}" for c in counts])
    if counts:
        lo, hi = min(counts), max(counts)
        ax.set_xlim(lo / 1.35, hi * 1.35)
    ax.set_xlabel("GPUs (log scale)")


def plain_log_ticks(axis) -> None:
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis.set_major_locator(LogLocator(base=10, numticks=12))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.10g}"))
    axis.set_minor_formatter(NullFormatter())


def svg_id(name: str) -> str:
    return "series-" + "".join(c if c.isalnum() else "-" for c in name)


# -- one entry point ----------------------------------------------------------------


def figure(kind: str, points: Sequence[Point] | None = None, meta: dict | None = None, rows=None,
           summary=None, title_text: str = ""):
    """Build the figure of ``kind`` (one of :data:`KINDS`)."""
    from oracle.render.plots_breakdown import breakdown_figure
    from oracle.render.plots_compare import compare_figure
    from oracle.render.plots_memory import memory_figure
    from oracle.render.plots_scaling import scaling_figure

    require()
    if kind == "compare":
        return compare_figure(rows or [], summary, title_text)
    builders = {"breakdown": breakdown_figure, "scaling": scaling_figure, "memory": memory_figure}
    if kind not in builders:
        raise OracleError(f"unknown plot '{kind}'", hint="one of " + ", ".join(KINDS))
    return builders[kind](points or [], meta or {})


def render(kind: str, fmt: str = "png", dpi: int = 110, way_out=None, **kwargs) -> bytes:
    """The plot as PNG or SVG bytes (``way_out``: image.encode's)."""
    fig = figure(kind, **kwargs)
    return to_bytes(fig, fmt, dpi, way_out=way_out)
