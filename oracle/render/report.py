"""``oracle report``: one self-contained HTML file (or Markdown for pull requests).

Sections, in order (the headings are stable; tests and readers rely on them):

1. **Summary** - the answer in a few sentences: best strategy per GPU count, the
   fastest configuration, scaling efficiency, where nothing fits, what never works.
2. **Inputs** - model, system, profile (with their files and sources) and the
   projection options.
3. **Recommendation** - per GPU count the three fastest feasible configurations,
   ranked, with compute, communication, memory and the gap to the best.
4. **Plots** - scaling, breakdown and memory pictures (base64 PNG inside the HTML;
   PNG files next to a Markdown report).  Without matplotlib the section says how to
   get them (``pip install 'oracle[plot]'``) and the rest of the report is complete.
5. **Limits** - for every strategy, each limit it hits, at which GPU counts, and why.
6. **Accuracy against measured runs** - only with measured runs: summary statistics,
   the compare plot, and every run.

The HTML has inline CSS only: no scripts, fonts, images or styles from the network.
Renderers only: points, compare rows and loaded inputs come in; nothing is computed
here beyond ratios of the numbers given (speed-up, gap to the best).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path

from oracle.compute.cost import Point
from oracle.render.predict import memory_label
from oracle.units import fmt_bytes, fmt_count, fmt_gap, fmt_rate, fmt_seconds, fmt_si, fmt_split

PLOT_KINDS = ("scaling", "breakdown", "memory")
SECTIONS = {  # id -> heading
    "summary": "Summary",
    "inputs": "Inputs",
    "recommendation": "Recommendation",
    "plots": "Plots",
    "limits": "Limits",
    "accuracy": "Accuracy against measured runs",
}
CAPTIONS = {
    "scaling": "Time per epoch versus GPUs (log-log), fastest configuration of each strategy. Ringed: the best "
    "at each GPU count; dashed: ideal linear speed-up; hollow: out of GPU memory; grey band: nothing fits. "
    "Strategies with about the same time are set side by side.",
    "breakdown": "Time per epoch by phase: compute (greys) and communication (gradient exchange, layer "
    "collectives, halo, pipeline transfers), per strategy and GPU count. Faded bars are infeasible, with the "
    "reason; bars beyond the scale are cut, their time above them.",
    "memory": "Memory per GPU versus GPUs, against the GPU's capacity (dashed line); hollow markers are out "
    "of memory, crosses past another limit. Strategies with about the same memory are set side by side.",
    "compare": "Projected versus measured, per run (like ParaDL's Figure 3): hatched measured, solid the "
    "projected time, light the projected communication in it (each bar from the axis: the time axis is "
    "logarithmic); the label is the accuracy.",
}
NO_PLOTS = "Plots need matplotlib: pip install 'oracle[plot]'"
TOP = 3


@dataclass
class Measured:
    file: str
    rows: list
    summary: object


@dataclass
class ReportData:
    """Everything a report shows: the sweep, its inputs, optionally measured runs."""

    points: list[Point]
    meta: dict
    model: object
    system: object
    profile: object
    options: object
    gpus: list[int]
    strategies: str
    args: dict = field(default_factory=dict)
    command: str = ""
    measured: Measured | None = None
    version: str = ""


# -- what to say ----------------------------------------------------------------------


def _ranges(hit: Sequence[int], counts: Sequence[int]) -> str:
    """'4–64, 256' : runs of consecutive entries of ``counts``."""
    idx = sorted(counts.index(c) for c in set(hit) if c in counts)
    parts = []
    for _, run in groupby(enumerate(idx), key=lambda t: t[1] - t[0]):
        run = [counts[i] for _, i in run]
        parts.append(f"{run[0]:,}" if len(run) == 1 else f"{run[0]:,}–{run[-1]:,}")
    return ", ".join(parts)


def config_text(pt: Point) -> str:
    text = fmt_split(pt.p1, pt.p2)
    if pt.segments:
        text += f", S={pt.segments}"
    return text


def _counts(points: Sequence[Point]) -> list[int]:
    return sorted({pt.gpus for pt in points})


def best_by_gpus(points: Sequence[Point]) -> dict[int, Point]:
    return {pt.gpus: pt for pt in points if pt.rank == 1}


def closest(points: Sequence[Point]) -> Point | None:
    """Of infeasible points (one GPU count), the fastest that only runs out of memory,
    else the fastest with a finite time."""
    def ok(v):
        return v is not None and math.isfinite(v)

    mem = [p for p in points if p.limits and all(lim.code == "memory" for lim in p.limits) and ok(p.total_s)]
    pool = mem or [p for p in points if ok(p.total_s)]
    return min(pool, key=lambda p: p.total_s) if pool else None


def findings(data: ReportData) -> list[str]:
    """Plain sentences answering the question (text; callers escape it)."""
    pts = data.points
    counts = _counts(pts)
    best = best_by_gpus(pts)
    out: list[str] = []
    if not best:
        out.append(f"No configuration is feasible at any of the GPU counts asked ({_ranges(counts, counts)}).")
    else:
        runs = []
        for name, grp in groupby([g for g in counts if g in best], key=lambda g: best[g].strategy):
            where = _ranges(list(grp), counts)
            runs.append(f"{name} at {where} GPU{'' if where == '1' else 's'}")
        out.append("Best strategy: " + "; ".join(runs) + ".")
        fastest = min(best.values(), key=lambda p: (p.total_s, p.gpus))
        out.append(
            f"Fastest: {fmt_seconds(fastest.total_s)} per epoch with {fastest.strategy} ({config_text(fastest)}) on "
            f"{fastest.gpus:,} GPUs: {fmt_seconds(fastest.iteration_s)} per iteration of "
            f"{fastest.global_batch:,.0f} samples, {fmt_bytes(fastest.memory_bytes)} per GPU."
        )
        lo, hi = min(best), max(best)
        if hi > lo:
            speedup = best[lo].total_s / best[hi].total_s
            eff = speedup / (hi / lo)
            out.append(
                f"From {lo:,} to {hi:,} GPUs the best time per epoch goes from {fmt_seconds(best[lo].total_s)} to "
                f"{fmt_seconds(best[hi].total_s)}: a {speedup:.3g}× speed-up on {hi // lo:,}× the GPUs "
                f"({100 * eff:.0f}% scaling efficiency)."
            )
    no_fit = [g for g in counts if g not in best and any(
        any(lim.code == "memory" for lim in p.limits) for p in pts if p.gpus == g)]
    if no_fit:
        cap = fmt_bytes(data.system.gpu_memory_bytes)
        out.append(f"Nothing fits in the {cap} of a {data.system.gpu_model} at {_ranges(no_fit, counts)} GPUs"
                   " (see Limits; a smaller batch per GPU, --memory-reuse or fp16 may help).")
    never = [n for n in _strategies(pts) if not any(p.feasible for p in pts if p.strategy == n)]
    if never and best:
        out.append("Never feasible here: " + ", ".join(never) + " (why: see Limits).")
    note = data.meta.get("profile_note")
    if note:
        out.append(f"Note: the {note}.".replace("the profile gives", "profile gives"))
    if data.meta.get("compute_conversion"):
        out.append(f"Compute: {data.meta['compute_conversion']}.")
    if data.meta.get("stack_note"):
        out.append(f"Software {data.meta['stack_note']}.")
    if data.measured is not None:
        out += _accuracy_findings(data, min(best.values(), key=lambda p: (p.total_s, p.gpus)) if best else None)
    return out


def _accuracy_findings(data: ReportData, fastest: Point | None) -> list[str]:
    """The accuracy on the measured runs, what it means, and whether the recommendation
    at the fastest GPU count stands against it (render/accuracy_text.py)."""
    from oracle.render.accuracy_text import accuracy_sentences, lead

    s = data.measured.summary.overall
    margin = None
    if fastest is not None:
        margin = lead([p.total_s for p in data.points if p.gpus == fastest.gpus and p.feasible])
    return accuracy_sentences(s.n, data.measured.file, s.mean_accuracy, s.min_accuracy,
                              (s.ratio, s.ratio_min, s.ratio_max), margin,
                              fastest.gpus if fastest is not None else None)  # fmt: skip


def _strategies(points: Sequence[Point]) -> list[str]:
    seen: list[str] = []
    for p in points:
        if p.strategy not in seen:
            seen.append(p.strategy)
    from oracle.compute.strategies import names

    order = list(names())
    return sorted(seen, key=lambda n: (order.index(n) if n in order else len(order), n))


def recommendation(points: Sequence[Point], top: int = TOP) -> list[tuple[int, list[Point], Point | None]]:
    """Per GPU count: its ``top`` fastest feasible points, or (none, the closest)."""
    out = []
    for g in _counts(points):
        group = [p for p in points if p.gpus == g]
        ok = sorted((p for p in group if p.rank), key=lambda p: p.rank)[:top]
        out.append((g, ok, None if ok else closest(group)))
    return out


def limits(points: Sequence[Point]) -> list[dict]:
    """Per strategy and limit code: GPU counts where at least one configuration hits
    it, and the reason at the first of them."""
    counts = _counts(points)
    rows = []
    for name in _strategies(points):
        mine = [p for p in points if p.strategy == name]
        feasible_at = sorted({p.gpus for p in mine if p.feasible})
        codes: dict[str, list[Point]] = {}
        for p in mine:
            for lim in p.limits:
                codes.setdefault(lim.code, []).append(p)
        if not codes:
            continue
        for i, (code, pts) in enumerate(codes.items()):
            first = min(pts, key=lambda p: (p.gpus, p.p2))
            reason = next(lim.reason for lim in first.limits if lim.code == code)
            all_hit = sorted({p.gpus for p in pts if all(
                any(lim.code == code for lim in q.limits) for q in mine if q.gpus == p.gpus)})
            rows.append({
                "strategy": name,
                "first": i == 0,
                "span": len(codes),
                "feasible": _ranges(feasible_at, counts) if feasible_at else "never",
                "code": code,
                "gpus": _ranges([p.gpus for p in pts], counts),
                "every_config": _ranges(all_hit, counts) if all_hit else "",
                "reason": reason,
                "example": f"{first.gpus:,} GPUs, {config_text(first)}",
            })
    return rows


def _path(file: object) -> str:
    """How a report names an input file: a shipped file as 'oracle:systems/abci.yaml'
    (issue 17: not '.venv/lib/python3.11/site-packages/...'), another file relative to the
    current folder when it is inside it, else as given."""
    from oracle.resources import shipped_name

    if not file:
        return "–"
    try:
        resolved = Path(str(file)).resolve()
        kind = next((k for k in ("models", "systems", "profiles") if shipped_name(k, resolved)), None)
        if kind is not None:
            return f"oracle:{kind}/{resolved.name}"
        return str(resolved.relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return str(file)


def inputs_rows(data: ReportData) -> list[tuple[str, list[tuple[str, str]]]]:
    """(group, [(key, value)]) describing the inputs and their sources."""
    m, s, pr, o = data.model, data.system, data.profile, data.options
    args = data.args
    model = [
        ("name", f"{m.name} (given as '{args.get('model', m.name)}')"),
        ("file", _path(m.file)),
        ("input", "×".join(str(d) for d in m.input_shape) + f" ({m.spatial_dims}-D)"),
        ("dataset", f"{m.dataset_name or 'dataset'}, {m.dataset_samples:,} samples"),
        ("parameters", fmt_count(m.parameters)),
        ("forward FLOPs / sample", fmt_si(m.flops, "FLOP")),
        ("layers", f"{len(m.layers):,}"),
        ("source", m.source or "–"),
    ]
    levels = "; ".join(
        f"{lv.name} (≤ {lv.max_gpus:,} GPUs): α = {fmt_seconds(lv.alpha_s)}, {fmt_rate(1.0 / lv.beta_s_per_byte)}"
        for lv in s.network
    )
    if o.contention is not None:
        phi = f"{o.contention:g} (--contention)"
    elif s.contention_factor is not None:
        phi = f"{s.contention_factor:g} (system file)"
    elif s.links_per_node:
        phi = f"derived per hybrid from {s.links_per_node} links per node"
    else:
        phi = "1"
    system = [
        ("name", f"{s.name} (given as '{args.get('system', s.name)}')"),
        ("file", _path(s.file)),
        ("GPUs", f"{s.nodes:,} nodes × {s.gpus_per_node} {s.gpu_model} = {s.total_gpus:,} GPUs, "
                 f"{fmt_bytes(s.gpu_memory_bytes)} each"),
        ("network", levels),
        ("contention φ", phi),
        ("source", s.source or "–"),
    ]
    kind = {"total": "a measured total spread over layers by training FLOPs", "measured": "measured per layer",
            "estimated": "ESTIMATED (roofline), not measured"}.get(pr.kind, pr.kind)
    profile = [
        ("name", _profile_name(data.meta.get("profile", ""), args.get("profile", ""))),
        ("file", _path(pr.file)),
        ("kind", kind),
        ("device, framework", f"{pr.device or '–'}, {pr.framework or '–'}"),
        ("forward + backward / sample", fmt_seconds(
            pr.total_fw_bw_per_sample_s if pr.total_fw_bw_per_sample_s is not None else pr.fw_bw_per_sample_s)),
        ("measured samples / GPU", str(pr.measured_samples_per_gpu or "–")),
        ("source", pr.source or "–"),
    ]
    projection = [
        ("GPU counts", ", ".join(f"{g:,}" for g in data.gpus)),
        ("strategies", data.strategies if isinstance(data.strategies, str) else ", ".join(data.strategies)),
        ("scaling", data.meta.get("scaling", "")),
        ("dataset size D", f"{data.meta.get('samples', 0):,} samples"),
        ("precision", str(data.meta.get("precision", ""))),
        ("memory model", memory_label(data.meta)),
        *([("memory", data.meta["memory_note"])] if data.meta.get("memory_note") else []),
        *([("model", data.meta["model_note"])] if data.meta.get("model_note") else []),
        ("configurations projected", f"{len(data.points):,} ({sum(p.feasible for p in data.points):,} feasible)"),
    ]
    if o.segments:
        projection.append(("pipeline segments S", str(o.segments)))
    return [("Model", model), ("System", system), ("Profile", profile), ("Projection", projection)]


# -- figures --------------------------------------------------------------------------


# an image too large for the report: what `oracle report` can change (it has no --dpi)
REPORT_WAY_OUT = ("--gpus", "project fewer GPU counts")


def figures(data: ReportData, fmt: str = "png", dpi: int = 90,
            step: Callable[[str], None] | None = None) -> dict[str, bytes] | None:
    """The report's pictures as image bytes, or None without matplotlib.  ``step`` is
    called before each picture with its name (for progress feedback)."""
    from oracle.render import plots

    if not plots.available():
        return None
    out: dict[str, bytes] = {}
    for kind in PLOT_KINDS:
        if step:
            step(f"drawing the {kind} plot")
        out[kind] = plots.render(kind, fmt, dpi, REPORT_WAY_OUT, points=data.points, meta=data.meta)
    if data.measured is not None:
        if step:
            step("drawing the compare plot")
        way_out = ("--measured", "compare fewer runs (--where, --exclude)")
        out["compare"] = plots.render("compare", fmt, dpi, way_out, rows=data.measured.rows, summary=data.measured.summary,
                                      title_text=f"{data.measured.file}: projected versus measured")
    return out


def steps(data: ReportData) -> int:
    """Number of ``step`` calls :func:`figures` makes."""
    return len(PLOT_KINDS) + (1 if data.measured is not None else 0)


# -- table rows shared by HTML and Markdown -----------------------------------------


def pct(v: float | None) -> str:
    return "–" if v is None or math.isnan(v) else f"{100 * v:.1f}%"  # NaN: no run scored


REC_HEAD = ("GPUs", "rank", "strategy", "p1×p2", "batch", "epoch", "iteration", "compute", "comm", "mem/GPU",
             "vs best")
NUMERIC_HEADS = {"GPUs", "rank", "p1×p2", "batch", "epoch", "iteration", "compute", "comm", "mem/GPU", "vs best"}


def rec_cells(pt: Point, best: Point) -> list[str]:
    gap = "best" if pt is best else fmt_gap(pt.total_s / best.total_s)
    return [
        str(pt.rank),
        config_text(pt),
        f"{pt.global_batch:,.0f}",
        fmt_seconds(pt.total_s),
        fmt_seconds(pt.iteration_s),
        fmt_seconds(pt.compute_s),
        fmt_seconds(pt.communication_s),
        fmt_bytes(pt.memory_bytes),
        gap,
    ]


# the per-run table of the accuracy section, the same columns in HTML and Markdown
RUN_HEAD = ("line", "model", "strategy", "GPUs", "p1×p2", "batch", "on", "measured", "projected", "accuracy",
            "notes")
RUN_NUMERIC = {"line", "GPUs", "p1×p2", "batch", "measured", "projected", "accuracy"}


def run_cells(r) -> list[str]:
    """One measured run's cells under :data:`RUN_HEAD` (text; callers escape it); the
    notes are render/compare.py's: the limits of a run the model finds infeasible, the
    anomaly, the calibration notes."""
    from oracle.render.compare import accuracy_cell, notes

    return [str(r.run.line), r.point.model, r.run.strategy, f"{r.run.gpus:,}", f"{r.point.p1}×{r.point.p2}",
            f"{r.run.global_batch:,.0f}", r.run.basis, fmt_seconds(r.measured_s), fmt_seconds(r.predicted_s),
            accuracy_cell(r), notes(r)]


def stats_rows(summary) -> list[tuple[str, object]]:
    rows = [("all runs", summary.overall)]
    rows += [(f"strategy {k}", v) for k, v in summary.by_strategy.items()]
    if len(summary.by_model) > 1:
        rows += [(f"model {k}", v) for k, v in summary.by_model.items()]
    return rows


def image_names(report_path: str | Path, kinds: Sequence[str]) -> dict[str, str]:
    """File names of the PNGs written next to a Markdown report: report-scaling.png, ..."""
    stem = Path(report_path).stem
    return {k: f"{stem}-{k}.png" for k in kinds}


# The writers live in their own modules (render/report_html.py, render/report_md.py).
_WRITERS = {"html_report": "report_html", "CSS": "report_html", "markdown_report": "report_md"}


def __getattr__(name: str):
    if name in _WRITERS:
        import importlib

        return getattr(importlib.import_module(f"oracle.render.{_WRITERS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _profile_name(shown: str, given) -> str:
    """The profile's name and how it was named; -p estimate (the default) made here."""
    from oracle.load import is_estimate

    if is_estimate(given):
        return f"{shown} (no profile named: the compute model's estimate for the system's GPU)"
    return f"{shown} (given as '{given}')"
