"""Pictures of projections (issue 6): breakdown, scaling, memory and compare plots.

Renderers only: every function takes points (a ranked sweep) or compare rows and a
``meta`` dict of labels, chooses what to draw, and returns a matplotlib Figure; no
cost is computed here.  matplotlib is the optional extra ``oracle[plot]`` and is
imported inside the functions (never at module import), with the non-interactive
Agg machinery (figures are created without pyplot, so no GUI backend is touched).

Colours: one mapping strategy -> colour, :data:`STRATEGY_STYLE`, from the Okabe-Ito
palette (safe for the common colour-vision deficiencies), each strategy also with its
own marker so that the plots read in grey-scale print too.  Phases of the time
breakdown use greys for compute and Paul Tol's "muted" colours (also colour-blind
safe, and none equal to a strategy colour) with hatches for communication.

``meta`` keys (all optional but ``model`` and ``system``): model, system, profile,
scaling, precision, gamma, gpu_model, gpu_memory_bytes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from oracle.compute.cost import Point
from oracle.errors import OracleError
from oracle.units import fmt_bytes

INSTALL_HINT = "pip install 'oracle[plot]'"

# strategy -> (colour, marker).  Okabe & Ito (2008), "Color Universal Design".
STRATEGY_STYLE: dict[str, tuple[str, str]] = {
    "serial": ("#000000", "o"),  # black
    "data": ("#0072B2", "o"),  # blue
    "spatial": ("#E69F00", "s"),  # orange
    "filter": ("#009E73", "^"),  # bluish green
    "channel": ("#F0E442", "v"),  # yellow (markers get a dark edge to stay visible)
    "pipeline": ("#56B4E9", "D"),  # sky blue
    "data+filter": ("#D55E00", "P"),  # vermillion
    "data+spatial": ("#CC79A7", "X"),  # reddish purple
}
OTHER_STYLE = ("#999999", "o")  # a strategy added later and not given a colour yet
EDGE = "#333333"  # marker edges: keeps the yellow visible on white

# phase -> (legend label, fill colour, hatch)
PHASE_STYLE: dict[str, tuple[str, str, str | None]] = {
    "forward_backward_s": ("compute: forward + backward", "#BBBBBB", None),
    "weight_update_s": ("compute: weight update", "#777777", None),
    "gradient_exchange_s": ("comm: gradient exchange", "#332288", None),
    "layer_collectives_s": ("comm: layer collectives", "#CC6677", "//"),
    "halo_s": ("comm: halo exchange", "#DDCC77", ".."),
    "pipeline_p2p_s": ("comm: pipeline transfers", "#44AA99", "xx"),
}

# limit code -> a few words for a plot label (the full reasons are in tables/reports)
LIMIT_WORDS: dict[str, str] = {
    "memory": "out of memory",
    "filters": "p > filters of a layer",
    "channels": "p > input channels",
    "spatial": "spatial split too fine",
    "batch": "< 1 sample per GPU",
    "layers": "more stages than layers",
    "segments": "S > batch",
    "gpus": "more GPUs than the system",
    "factorization": "p2 does not divide p",
    "serial": "serial is 1 GPU",
}

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
    return STRATEGY_STYLE.get(name, OTHER_STYLE)


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


def to_bytes(fig, fmt: str = "png", dpi: int = 110, compact: bool = True) -> bytes:
    """The figure as PNG or SVG bytes (oracle/render/image.py)."""
    from oracle.render.image import encode

    return encode(fig, fmt, dpi, RC, compact)


def _figure(width: float, height: float):
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


def _finite(v: float) -> bool:
    return v is not None and not math.isnan(v) and not math.isinf(v)


def representatives(points: Sequence[Point]) -> dict[str, dict[int, Point]]:
    """One point per (strategy, GPU count): the fastest feasible configuration, else
    the fastest that only runs out of memory, else the fastest with finite numbers.
    Strategies in the order of :data:`STRATEGY_STYLE` (unknown ones last)."""
    groups: dict[str, dict[int, list[Point]]] = {}
    for pt in points:
        groups.setdefault(pt.strategy, {}).setdefault(pt.gpus, []).append(pt)

    def key(pt: Point):
        total = pt.total_s
        return (_STATUS_ORDER[status(pt)], not _finite(total), total if _finite(total) else 0.0, pt.p2)

    order = list(STRATEGY_STYLE)
    names = sorted(groups, key=lambda n: (order.index(n) if n in order else len(order), n))
    return {n: {g: min(pts, key=key) for g, pts in sorted(groups[n].items())} for n in names}


def best_per_gpus(points: Sequence[Point]) -> dict[int, Point]:
    """The rank-1 point of every GPU count that has a feasible point."""
    return {pt.gpus: pt for pt in points if pt.rank == 1}


def _label(pt: Point) -> str:
    if pt.p1 > 1 and pt.p2 > 1:
        return f"{pt.strategy}\n{pt.p1}×{pt.p2}"
    if pt.segments:
        return f"{pt.strategy}\nS={pt.segments}"
    return pt.strategy


def limit_words(pt: Point) -> str:
    """A short label of why a point is infeasible."""
    words = []
    for lim in pt.limits:
        w = LIMIT_WORDS.get(lim.code, lim.code)
        if lim.code == "memory" and _finite(pt.memory_bytes):
            w = f"out of memory ({fmt_bytes(pt.memory_bytes)})"
        if w not in words:
            words.append(w)
    return "; ".join(words)


def time_unit(seconds: float) -> tuple[str, float]:
    """A readable unit for a linear time axis whose top is ``seconds``."""
    if not _finite(seconds) or seconds < 120:
        return "s", 1.0
    if seconds < 2 * 3600:
        return "min", 60.0
    if seconds < 2 * 86400:
        return "h", 3600.0
    return "days", 86400.0


def _gpu_memory(meta: dict, points: Sequence[Point]) -> float | None:
    cap = meta.get("gpu_memory_bytes")
    return float(cap) if cap else None


def _capacity_label(meta: dict) -> str:
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


def _log2_gpu_axis(ax, counts: Sequence[int]) -> None:
    from matplotlib.ticker import FixedLocator, NullLocator

    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(list(counts)))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([f"{c:,}" for c in counts])
    if counts:
        lo, hi = min(counts), max(counts)
        ax.set_xlim(lo / 1.35, hi * 1.35)
    ax.set_xlabel("GPUs (log scale)")


def _plain_log_ticks(axis) -> None:
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis.set_major_locator(LogLocator(base=10, numticks=12))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.10g}"))
    axis.set_minor_formatter(NullFormatter())


def _gid(name: str) -> str:
    return "series-" + "".join(c if c.isalnum() else "-" for c in name)


# -- scaling ------------------------------------------------------------------------


def scaling_figure(points: Sequence[Point], meta: dict):
    """Time per epoch versus GPUs, log-log: a line per strategy (fastest configuration
    of each), the ideal linear speed-up, the best strategy per GPU count ringed, and
    points that only exceed the GPU memory drawn hollow (GPU counts where nothing fits
    shaded).  Points past a structural limit are not drawn."""
    import matplotlib

    with matplotlib.rc_context(RC):
        fig = _figure(10.0, 5.4)
        ax = fig.add_subplot()
        reps = representatives(points)
        counts = sorted({pt.gpus for pt in points})
        best = best_per_gpus(points)
        handles, omitted = _scaling_lines(ax, reps, counts)
        _ideal_line(ax, reps, counts, best, handles)
        _best_rings(ax, counts, best, handles)
        _memory_marks(ax, meta, points, reps, counts, best, handles)
        _log2_gpu_axis(ax, counts)
        ax.set_yscale("log")
        _plain_log_ticks(ax.yaxis)
        ax.set_ylabel("time per epoch (s, log scale)")
        ax.set_title(title(meta, "time per epoch versus GPUs"), loc="left")
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        if omitted:
            names = sorted({pt.strategy for pt in omitted}, key=lambda n: list(reps).index(n))
            fig.text(0.0, -0.01, "not drawn: points past a structural limit (" + ", ".join(names) +
                     "); see the limits in `oracle predict` or the report", fontsize=7, color="#555555",
                     ha="left", va="top")
    return fig


def _scaling_lines(ax, reps, counts):
    """A line per strategy (its drawable points; dotted where memory does not fit), drawn
    in reverse order so that the first strategies (data, ...) end on top.
    Returns (legend handles, the points not drawn)."""
    from matplotlib.lines import Line2D

    handles = []
    omitted = []
    series = {}
    # drawn in reverse order, so that the first strategies (data, ...) end on top
    for name, by_gpus in reversed(list(reps.items())):
        colour, marker = strategy_style(name)
        drawn = [(g, pt) for g, pt in by_gpus.items() if status(pt) != "other" and _finite(pt.total_s)]
        omitted += [pt for pt in by_gpus.values() if status(pt) == "other" or not _finite(pt.total_s)]
        if not drawn:
            continue
        for (g0, a), (g1, b) in zip(drawn, drawn[1:]):
            if counts.index(g1) - counts.index(g0) != 1:
                continue  # a gap: a structural limit in between
            solid = status(a) == "ok" and status(b) == "ok"
            ax.plot([g0, g1], [a.total_s, b.total_s], color=colour, lw=2.0 if solid else 1.3,
                    ls="-" if solid else ":", zorder=3, gid=_gid(name))
        for g, pt in drawn:
            ok = status(pt) == "ok"
            ax.plot([g], [pt.total_s], marker=marker, ms=6.5, color=colour, mec=EDGE if ok else colour,
                    mew=0.6 if ok else 1.4, mfc=colour if ok else "white", ls="none", zorder=4)
        series[name] = Line2D([], [], color=colour, marker=marker, mec=EDGE, mew=0.6, lw=2, label=name)
    handles = [series[n] for n in reps if n in series]
    return handles, omitted


def _ideal_line(ax, reps, counts, best, handles) -> None:
    from matplotlib.lines import Line2D

    # ideal linear speed-up from the first GPU count with a point to start from
    ref = None
    for g in counts:
        cands = [by[g] for by in reps.values() if g in by and status(by[g]) != "other" and _finite(by[g].total_s)]
        if cands:
            ref = best.get(g) or min(cands, key=lambda p: p.total_s)
            break
    if ref is not None and len(counts) > 1:
        xs = [g for g in counts if g >= ref.gpus]
        ax.plot(xs, [ref.total_s * ref.gpus / g for g in xs], color="#555555", lw=1.2, ls="--", zorder=2)
        handles.append(Line2D([], [], color="#555555", lw=1.2, ls="--",
                              label=f"ideal: linear speed-up from {ref.gpus:,} GPU{'s' if ref.gpus > 1 else ''}"))


def _best_rings(ax, counts, best, handles) -> None:
    from matplotlib.lines import Line2D

    # the best strategy per GPU count: ringed, named where it changes
    previous = None
    for g in counts:
        pt = best.get(g)
        if pt is None:
            previous = None
            continue
        ax.plot([g], [pt.total_s], marker="o", ms=15, mfc="none", mec="black", mew=1.6, ls="none", zorder=5)
        if pt.strategy != previous:
            right = counts.index(g) >= len(counts) / 2  # label on the left of points in the right half
            ax.annotate(f"best: {pt.strategy}", (g, pt.total_s), xytext=(-10 if right else 10, 10),
                        textcoords="offset points", ha="right" if right else "left", fontsize=8,
                        fontweight="bold", zorder=6)
        previous = pt.strategy
    if best:
        handles.append(Line2D([], [], marker="o", ms=11, mfc="none", mec="black", mew=1.6, ls="none",
                              label="best at this GPU count"))


def _memory_marks(ax, meta, points, reps, counts, best, handles) -> None:
    """Hollow points out of GPU memory in the legend; GPU counts where nothing fits shaded."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    # the memory limit
    cap = _gpu_memory(meta, points)
    if any(status(pt) == "memory" for by in reps.values() for pt in by.values()):
        handles.append(Line2D([], [], marker="o", ms=6.5, mfc="white", mec="#444444", mew=1.4, ls=":",
                              color="#444444", label=f"hollow: out of GPU memory, {_capacity_label(meta)}"))
    none_fit = [g for g in counts if g not in best and any(status(p) == "memory" for p in points if p.gpus == g)]
    for g in none_fit:
        ax.axvspan(g / 2**0.5, g * 2**0.5, color="#EEEEEE", zorder=0, lw=0)
    if none_fit:
        fits = fmt_bytes(cap) if cap else "GPU memory"
        handles.append(Patch(color="#EEEEEE", label=f"no strategy fits in {fits}"))


# -- memory -------------------------------------------------------------------------


def memory_figure(points: Sequence[Point], meta: dict):
    """Memory per GPU versus GPUs per strategy (its fastest configuration), log-log,
    against the GPU's capacity."""
    import matplotlib
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    with matplotlib.rc_context(RC):
        fig = _figure(9.0, 5.0)
        ax = fig.add_subplot()
        reps = representatives(points)
        counts = sorted({pt.gpus for pt in points})
        handles = []
        values = []
        series = {}
        for name, by_gpus in reversed(list(reps.items())):  # the first strategies on top
            colour, marker = strategy_style(name)
            drawn = [(g, pt) for g, pt in by_gpus.items() if _finite(pt.memory_bytes) and pt.memory_bytes > 0]
            if not drawn:
                continue
            xs = [g for g, _ in drawn]
            ys = [pt.memory_bytes / 1e9 for _, pt in drawn]
            values += ys
            ax.plot(xs, ys, color=colour, lw=1.8, zorder=3, gid=_gid(name))
            for g, pt in drawn:
                st = status(pt)
                if st == "other":
                    ax.plot([g], [pt.memory_bytes / 1e9], marker="x", ms=7, mew=1.8, color=colour, ls="none", zorder=4)
                else:
                    ok = st == "ok"
                    ax.plot([g], [pt.memory_bytes / 1e9], marker=marker, ms=6.5, color=colour,
                            mec=EDGE if ok else colour, mew=0.6 if ok else 1.4,
                            mfc=colour if ok else "white", ls="none", zorder=4)
            series[name] = Line2D([], [], color=colour, marker=marker, mec=EDGE, mew=0.6, lw=1.8, label=name)
        handles += [series[n] for n in reps if n in series]
        cap = _gpu_memory(meta, points)
        if cap:
            gb = cap / 1e9
            top = max(values + [gb]) * 2.0
            ax.axhspan(gb, top, color="#F2F2F2", zorder=0, lw=0)
            ax.axhline(gb, color="black", lw=1.6, ls="--", zorder=2)
            handles.append(Line2D([], [], color="black", lw=1.6, ls="--",
                                  label=f"GPU capacity: {_capacity_label(meta)}"))
            handles.append(Patch(color="#F2F2F2", label="above capacity: does not fit"))
            low = min(values + [gb]) / 2.0
            ax.set_ylim(low, top)
        handles.append(Line2D([], [], marker="o", ms=6.5, mfc="white", mec="#444444", mew=1.4, ls="none",
                              label="hollow: out of memory only"))
        handles.append(Line2D([], [], marker="x", ms=7, mew=1.8, color="#444444", ls="none",
                              label="×: past another limit"))
        _log2_gpu_axis(ax, counts)
        ax.set_yscale("log")
        _plain_log_ticks(ax.yaxis)
        ax.set_ylabel("memory per GPU (GB, log scale)")
        ax.set_title(title(meta, "memory per GPU versus GPUs"), loc="left")
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return fig


# -- one entry point ----------------------------------------------------------------


def figure(kind: str, points: Sequence[Point] | None = None, meta: dict | None = None, rows=None,
           summary=None, title_text: str = ""):
    """Build the figure of ``kind`` (one of :data:`KINDS`)."""
    from oracle.render.plots_breakdown import breakdown_figure
    from oracle.render.plots_compare import compare_figure

    require()
    if kind == "compare":
        return compare_figure(rows or [], summary, title_text)
    builders = {"breakdown": breakdown_figure, "scaling": scaling_figure, "memory": memory_figure}
    if kind not in builders:
        raise OracleError(f"unknown plot '{kind}'", hint="one of " + ", ".join(KINDS))
    return builders[kind](points or [], meta or {})


def render(kind: str, fmt: str = "png", dpi: int = 110, **kwargs) -> bytes:
    """The plot as PNG or SVG bytes."""
    fig = figure(kind, **kwargs)
    return to_bytes(fig, fmt, dpi)
