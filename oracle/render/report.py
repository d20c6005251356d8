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

import base64
import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path

from oracle.compute.cost import Point
from oracle.render.predict import memory_label
from oracle.textsafe import md
from oracle.units import fmt_bytes, fmt_count, fmt_rate, fmt_seconds, fmt_si

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
    "at each GPU count; dashed: ideal linear speed-up; hollow: out of GPU memory; grey band: nothing fits.",
    "breakdown": "Time per epoch by phase: compute (greys) and communication (gradient exchange, layer "
    "collectives, halo, pipeline transfers), per strategy and GPU count. Faded bars are infeasible, with the "
    "reason.",
    "memory": "Memory per GPU versus GPUs, against the GPU's capacity (dashed line); hollow markers are out "
    "of memory, crosses past another limit.",
    "compare": "Projected versus measured, per run (like ParaDL's Figure 3): hatched measured, solid projected "
    "compute, light projected communication; the label is the accuracy.",
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


def _config(pt: Point) -> str:
    text = f"{pt.p1}×{pt.p2}"
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
            f"Fastest: {fmt_seconds(fastest.total_s)} per epoch with {fastest.strategy} ({_config(fastest)}) on "
            f"{fastest.gpus:,} GPUs: {fmt_seconds(fastest.iteration_s)} per iteration of "
            f"{fastest.global_batch:,.0f} samples, {fmt_bytes(fastest.memory_bytes)} per GPU."
        )
        lo, hi = min(best), max(best)
        if hi > lo:
            speedup = best[lo].total_s / best[hi].total_s
            eff = speedup / (hi / lo)
            out.append(
                f"From {lo:,} to {hi:,} GPUs the best time per epoch goes from {fmt_seconds(best[lo].total_s)} to "
                f"{fmt_seconds(best[hi].total_s)}: {speedup:.3g}× faster on {hi // lo:,}× the GPUs "
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
    if data.measured is not None:
        s = data.measured.summary.overall
        out.append(
            f"Against {s.n} measured runs ({data.measured.file}): mean accuracy {100 * s.mean_accuracy:.1f}%, "
            f"lowest {100 * s.min_accuracy:.1f}%, MAPE {100 * s.mape:.1f}%."
        )
    return out


def _strategies(points: Sequence[Point]) -> list[str]:
    seen: list[str] = []
    for p in points:
        if p.strategy not in seen:
            seen.append(p.strategy)
    from oracle.render.plots import STRATEGY_STYLE

    order = list(STRATEGY_STYLE)
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
                "example": f"{first.gpus:,} GPUs, {_config(first)}",
            })
    return rows


def _path(file: object) -> str:
    """A file name relative to the current folder when it is inside it."""
    if not file:
        return "–"
    try:
        return str(Path(str(file)).resolve().relative_to(Path.cwd().resolve()))
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
        ("name", f"{data.meta.get('profile', '')} (given as '{args.get('profile', '')}')"),
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
        out[kind] = plots.render(kind, fmt, dpi, points=data.points, meta=data.meta)
    if data.measured is not None:
        if step:
            step("drawing the compare plot")
        out["compare"] = plots.render("compare", fmt, dpi, rows=data.measured.rows, summary=data.measured.summary,
                                      title_text=f"{data.measured.file}: projected versus measured")
    return out


def steps(data: ReportData) -> int:
    """Number of ``step`` calls :func:`figures` makes."""
    return len(PLOT_KINDS) + (1 if data.measured is not None else 0)


# -- HTML -----------------------------------------------------------------------------

CSS = """
:root { --fg: #1b1b1b; --muted: #5a5a5a; --line: #d9d9d9; --zebra: #f6f6f6; --best: #e8f3ec; }
* { box-sizing: border-box; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       color: var(--fg); background: #fff; margin: 0; }
main { max-width: 1180px; margin: 0 auto; padding: 24px 28px 48px; }
h1 { font-size: 1.7em; margin: 0.2em 0 0.1em; }
h2 { font-size: 1.3em; margin: 1.8em 0 0.5em; padding-bottom: 0.2em; border-bottom: 2px solid var(--line); }
h3 { font-size: 1.05em; margin: 1.2em 0 0.4em; }
p.sub, .muted { color: var(--muted); }
nav { margin: 0.6em 0 1em; font-size: 0.92em; }
nav a { margin-right: 1.1em; color: #0b5cab; text-decoration: none; }
ul.findings li { margin: 0.25em 0; }
table { border-collapse: collapse; width: 100%; font-size: 0.88em; margin: 0.4em 0 1em; }
th, td { padding: 4px 8px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { background: #efefef; font-weight: 600; white-space: nowrap; }
td.n, th.n { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
tbody tr:nth-child(even) td { background: var(--zebra); }
tr.best td { background: var(--best) !important; font-weight: 600; }
tr.none td { color: var(--muted); font-style: italic; }
tr.group td { border-top: 2px solid #bbb; }
table.kv th { width: 15em; background: none; color: var(--muted); font-weight: 500; white-space: normal; }
.inputs { display: grid; grid-template-columns: repeat(auto-fit, minmax(500px, 1fr)); gap: 0 28px; }
.st { white-space: nowrap; }
.sw { display: inline-block; width: 0.8em; height: 0.8em; border: 1px solid #333; margin-right: 0.4em;
      vertical-align: -0.05em; }
figure { margin: 1em 0 2em; }
figure img { max-width: 100%; height: auto; border: 1px solid var(--line); }
figcaption { color: var(--muted); font-size: 0.88em; margin-top: 0.3em; }
.note { background: #fff7e0; border-left: 4px solid #e69f00; padding: 0.6em 0.9em; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.92em; }
footer { margin-top: 3em; color: var(--muted); font-size: 0.85em; border-top: 1px solid var(--line);
         padding-top: 0.8em; }
"""


def _e(text: object) -> str:
    """Escape text content (quotes stay readable: 'oracle[plot]')."""
    return html.escape(str(text), quote=False)


def _attr(text: object) -> str:
    return html.escape(str(text), quote=True)


def _swatch(name: str) -> str:
    from oracle.render.plots import strategy_colour

    return f'<span class="st"><span class="sw" style="background:{strategy_colour(name)}"></span>{_e(name)}</span>'


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{100 * v:.1f}%"


def _section(key: str, body: str) -> str:
    return f'<section id="{key}">\n<h2>{_e(SECTIONS[key])}</h2>\n{body}\n</section>\n'


def html_report(data: ReportData, images: dict[str, bytes] | None, image_type: str = "png") -> str:
    """The report as one HTML document (images: kind -> PNG bytes; None: no plots)."""
    m = data.meta
    title = f"oracle report: {m['model']} on {m['system']}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title>",
        f"<style>{CSS}</style>",
        "</head>",
        "<body>",
        "<main>",
        f"<h1>{_e(title)}</h1>",
        f'<p class="sub">{_e(m.get("scaling", ""))} · profile {_e(m.get("profile", ""))} · '
        f'{_e(m.get("precision", ""))} · {_e(memory_label(m))} · '
        "times per epoch, memory per GPU</p>",
    ]
    keys = [k for k in SECTIONS if k != "accuracy" or data.measured is not None]
    parts.append("<nav>" + "".join(f'<a href="#{k}">{_e(SECTIONS[k])}</a>' for k in keys) + "</nav>")
    parts.append(_section("summary", '<ul class="findings">' + "".join(
        f"<li>{_e(t)}</li>" for t in findings(data)) + "</ul>"))
    parts.append(_section("inputs", _html_inputs(data)))
    parts.append(_section("recommendation", _html_recommendation(data)))
    parts.append(_section("plots", _html_plots(images, image_type, PLOT_KINDS)))
    parts.append(_section("limits", _html_limits(data)))
    if data.measured is not None:
        parts.append(_section("accuracy", _html_accuracy(data, images, image_type)))
    foot = f"Generated by oracle {_e(data.version)}" if data.version else "Generated by oracle"
    if data.command:
        foot += f" with <code>{_e(data.command)}</code>"
    foot += (". Cost model: ParaDL (Kahira et al., HPDC 2021) as refined in docs/cost-model.md; times per epoch in "
             "seconds, memory in decimal GB (10<sup>9</sup> bytes). This file is self-contained.")
    parts += [f"<footer>{foot}</footer>", "</main>", "</body>", "</html>", ""]
    return "\n".join(parts)


def _kv(rows: list[tuple[str, str]]) -> str:
    return '<table class="kv"><tbody>' + "".join(
        f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows) + "</tbody></table>"


def _html_inputs(data: ReportData) -> str:
    blocks = [f"<div><h3>{_e(group)}</h3>{_kv(rows)}</div>" for group, rows in inputs_rows(data)]
    return '<div class="inputs">' + "".join(blocks) + "</div>"


_REC_HEAD = ("GPUs", "rank", "strategy", "p1×p2", "batch", "epoch", "iteration", "compute", "comm", "mem/GPU",
             "vs best")
_NUMERIC = {"GPUs", "rank", "p1×p2", "batch", "epoch", "iteration", "compute", "comm", "mem/GPU", "vs best"}


def _rec_cells(pt: Point, best: Point) -> list[str]:
    gap = "best" if pt is best else f"+{100 * (pt.total_s / best.total_s - 1):.1f}%"
    return [
        str(pt.rank),
        _config(pt),
        f"{pt.global_batch:,.0f}",
        fmt_seconds(pt.total_s),
        fmt_seconds(pt.iteration_s),
        fmt_seconds(pt.compute_s),
        fmt_seconds(pt.communication_s),
        fmt_bytes(pt.memory_bytes),
        gap,
    ]


def _html_recommendation(data: ReportData) -> str:
    head = "".join(f'<th class="{"n" if h in _NUMERIC else ""}">{_e(h)}</th>' for h in _REC_HEAD)
    rows = []
    for g, ok, near in recommendation(data.points):
        if ok:
            for i, pt in enumerate(ok):
                cls = ["best"] if i == 0 else []
                if i == 0:
                    cls.append("group")
                cells = _rec_cells(pt, ok[0])
                gcell = f'<td class="n" rowspan="{len(ok)}">{g:,}</td>' if i == 0 else ""
                rows.append(
                    f'<tr class="{" ".join(cls)}">{gcell}<td class="n">{_e(cells[0])}</td><td>{_swatch(pt.strategy)}'
                    f"</td>" + "".join(f'<td class="n">{_e(c)}</td>' for c in cells[1:]) + "</tr>"
                )
        else:
            text = "no feasible configuration"
            if near is not None:
                text += (f"; closest: {near.strategy} ({_config(near)}), {fmt_seconds(near.total_s)} per epoch, "
                         + "; ".join(lim.reason for lim in near.limits))
            rows.append(f'<tr class="none group"><td class="n">{g:,}</td><td colspan="{len(_REC_HEAD) - 1}">'
                        f"{_e(text)}</td></tr>")
    intro = (f"<p>The {TOP} fastest feasible configurations at each GPU count, ranked by time per epoch "
             "(compute + communication). Hybrids are p1 data-parallel groups × p2 GPUs per model part.</p>")
    return intro + f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _img(kind: str, data: bytes, image_type: str) -> str:
    if image_type == "svg":
        svg = data.decode("utf-8")
        svg = svg[svg.find("<svg"):]
        body = f'<div class="svg">{svg}</div>'
    else:
        b64 = base64.b64encode(data).decode("ascii")
        body = f'<img src="data:image/png;base64,{b64}" alt="{_attr(kind)} plot">'
    return f'<figure id="plot-{kind}">{body}<figcaption>{_e(CAPTIONS[kind])}</figcaption></figure>'


def _html_plots(images, image_type: str, kinds) -> str:
    if images is None:
        return f'<p class="note">{_e(NO_PLOTS)}. The tables of this report are complete without them.</p>'
    return "".join(_img(k, images[k], image_type) for k in kinds if k in images)


def _html_limits(data: ReportData) -> str:
    rows = limits(data.points)
    if not rows:
        return "<p>Every configuration projected is feasible.</p>"
    head = ("<tr><th>strategy</th><th>feasible at (GPUs)</th><th>limit</th><th>hit at (GPUs)</th>"
            "<th>every configuration</th><th>why (first case)</th></tr>")
    body = []
    for r in rows:
        lead = ""
        if r["first"]:
            lead = (f'<td rowspan="{r["span"]}">{_swatch(r["strategy"])}</td>'
                    f'<td rowspan="{r["span"]}">{_e(r["feasible"])}</td>')
        body.append(f'<tr class="{"group" if r["first"] else ""}">{lead}<td>{_e(r["code"])}</td>'
                    f'<td>{_e(r["gpus"])}</td><td>{_e(r["every_config"] or "–")}</td>'
                    f'<td>{_e(r["reason"])} <span class="muted">({_e(r["example"])})</span></td></tr>')
    intro = ("<p>Where each strategy breaks: the limits its configurations hit, the GPU counts where at least "
             "one configuration hits each (and where every configuration does), and the reason at the first "
             "of them.</p>")
    return intro + f"<table><thead>{head}</thead><tbody>{''.join(body)}</tbody></table>"


def _stats_rows(summary) -> list[tuple[str, object]]:
    rows = [("all runs", summary.overall)]
    rows += [(f"strategy {k}", v) for k, v in summary.by_strategy.items()]
    if len(summary.by_model) > 1:
        rows += [(f"model {k}", v) for k, v in summary.by_model.items()]
    return rows


def _html_accuracy(data: ReportData, images, image_type: str) -> str:
    meas = data.measured
    assert meas is not None
    s = meas.summary
    out = [f"<p>{s.overall.n} measured runs from <code>{_e(meas.file)}</code>, each compared with its projection. "
           "Accuracy is ParaDL's 1 − |projected − measured| / measured; bias &lt; 0 means runs are slower than "
           "projected.</p>"]
    models = {r.point.model for r in meas.rows}
    if data.meta.get("model") not in models:
        out.append(f'<p class="note">None of these runs is of {_e(data.meta.get("model"))}: they check the cost '
                   f"model on {_e(', '.join(sorted(models)))}.</p>")
    head = "<tr><th></th><th class='n'>runs</th><th class='n'>mean accuracy</th><th class='n'>min accuracy</th>" \
           "<th class='n'>MAPE</th><th class='n'>bias</th></tr>"
    body = "".join(
        f"<tr><td>{_e(label)}</td><td class='n'>{st.n}</td><td class='n'>{_pct(st.mean_accuracy)}</td>"
        f"<td class='n'>{_pct(st.min_accuracy)}</td><td class='n'>{_pct(st.mape)}</td>"
        f"<td class='n'>{100 * st.bias:+.1f}%</td></tr>" for label, st in _stats_rows(s))
    out.append(f"<table><thead>{head}</thead><tbody>{body}</tbody></table>")
    agree = (f"Ranking agreement: {_pct(s.ranking_agreement)} of {s.ranking_pairs} pairs of strategies."
             if s.ranking_agreement is not None else
             "Ranking agreement: no GPU count has runs of two strategies.")
    out.append(f"<p>{_e(agree)} Anomalies flagged: {s.anomalies}.</p>")
    if images is not None and "compare" in images:
        out.append(_img("compare", images["compare"], image_type))
    elif images is None:
        out.append(f'<p class="note">{_e(NO_PLOTS)}.</p>')
    head = ("<tr><th class='n'>line</th><th>model</th><th>strategy</th><th class='n'>GPUs</th><th class='n'>p1×p2"
            "</th><th class='n'>batch</th><th>on</th><th class='n'>measured</th><th class='n'>projected</th>"
            "<th class='n'>accuracy</th><th>anomaly</th></tr>")
    body = "".join(
        f"<tr><td class='n'>{r.run.line}</td><td>{_e(r.point.model)}</td><td>{_swatch(r.run.strategy)}</td>"
        f"<td class='n'>{r.run.gpus:,}</td><td class='n'>{r.point.p1}×{r.point.p2}</td>"
        f"<td class='n'>{r.run.global_batch:,.0f}</td><td>{_e(r.run.basis)}</td>"
        f"<td class='n'>{_e(fmt_seconds(r.measured_s))}</td><td class='n'>{_e(fmt_seconds(r.predicted_s))}</td>"
        f"<td class='n'>{_pct(r.accuracy)}</td><td>{_e(r.anomaly or '')}</td></tr>" for r in meas.rows)
    out.append(f"<h3>Every run</h3><table><thead>{head}</thead><tbody>{body}</tbody></table>")
    return "\n".join(out)


# -- Markdown -------------------------------------------------------------------------


def _md(text: object) -> str:
    """A table cell: user text escaped; the bold (**...**) of a chosen strategy kept."""
    s = str(text)
    if s.startswith("**") and s.endswith("**") and len(s) > 4:
        return f"**{md(s[2:-2])}**"
    return md(s)


def _md_table(head: Sequence[str], rows: Sequence[Sequence[str]], numeric: set[str] = frozenset()) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---:" if h in numeric else "---" for h in head) + "|"]
    out += ["| " + " | ".join(_md(c) for c in row) + " |" for row in rows]
    return out + [""]


def markdown_report(data: ReportData, image_files: dict[str, str] | None) -> str:
    """The report in GitHub-flavoured Markdown.  ``image_files`` maps plot kinds to
    file names (relative to the report) written next to it; None: no matplotlib."""
    m = data.meta
    out = [f"# oracle report: {md(m['model'])} on {md(m['system'])}", "",
           f"{md(m.get('scaling', ''))} · profile {md(m.get('profile', ''))} · {md(m.get('precision', ''))} · "
           f"{md(memory_label(m))} · times per epoch, memory per GPU", ""]
    out += [f"## {SECTIONS['summary']}", ""] + [f"- {md(t)}" for t in findings(data)] + [""]
    out += [f"## {SECTIONS['inputs']}", ""]
    for group, rows in inputs_rows(data):
        out += [f"**{md(group)}**", ""] + _md_table(["", ""], rows)
    out += [f"## {SECTIONS['recommendation']}", "",
            f"The {TOP} fastest feasible configurations at each GPU count, ranked by time per epoch.", ""]
    rows = []
    for g, ok, near in recommendation(data.points):
        if ok:
            for i, pt in enumerate(ok):
                cells = _rec_cells(pt, ok[0])
                name = f"**{pt.strategy}**" if i == 0 else pt.strategy
                rows.append([f"{g:,}" if i == 0 else "", cells[0], name, *cells[1:]])
        else:
            text = "no feasible configuration"
            if near is not None:
                text += (f"; closest: {near.strategy} ({_config(near)}), {fmt_seconds(near.total_s)} per epoch, "
                         + "; ".join(lim.reason for lim in near.limits))
            rows.append([f"{g:,}", "–", text] + [""] * (len(_REC_HEAD) - 3))
    out += _md_table(_REC_HEAD, rows, _NUMERIC)
    out += [f"## {SECTIONS['plots']}", ""]
    if image_files is None:
        out += [f"> {NO_PLOTS}", ""]
    else:
        for kind in PLOT_KINDS:
            if kind in image_files:
                out += [f"![{kind} plot]({image_files[kind]})", "", f"*{CAPTIONS[kind]}*", ""]
    out += [f"## {SECTIONS['limits']}", ""]
    lim = limits(data.points)
    if lim:
        out += _md_table(
            ["strategy", "feasible at (GPUs)", "limit", "hit at (GPUs)", "every configuration", "why (first case)"],
            [[r["strategy"] if r["first"] else "", r["feasible"] if r["first"] else "", r["code"], r["gpus"],
              r["every_config"] or "–", f"{r['reason']} ({r['example']})"] for r in lim])
    else:
        out += ["Every configuration projected is feasible.", ""]
    if data.measured is not None:
        meas = data.measured
        s = meas.summary
        out += [f"## {SECTIONS['accuracy']}", "",
                f"{s.overall.n} measured runs from {md(meas.file)}. "
                "Accuracy is 1 − |projected − measured| / measured.",
                ""]
        out += _md_table(["", "runs", "mean accuracy", "min accuracy", "MAPE", "bias"],
                         [[label, str(st.n), _pct(st.mean_accuracy), _pct(st.min_accuracy), _pct(st.mape),
                           f"{100 * st.bias:+.1f}%"] for label, st in _stats_rows(s)],
                         {"runs", "mean accuracy", "min accuracy", "MAPE", "bias"})
        if image_files and "compare" in image_files:
            out += [f"![compare plot]({image_files['compare']})", "", f"*{CAPTIONS['compare']}*", ""]
        out += ["<details><summary>Every run</summary>", ""]
        out += _md_table(
            ["line", "model", "strategy", "GPUs", "p1×p2", "batch", "measured", "projected", "accuracy"],
            [[str(r.run.line), r.point.model, r.run.strategy, f"{r.run.gpus:,}", f"{r.point.p1}×{r.point.p2}",
              f"{r.run.global_batch:,.0f}", fmt_seconds(r.measured_s), fmt_seconds(r.predicted_s),
              _pct(r.accuracy)] for r in meas.rows],
            {"line", "GPUs", "p1×p2", "batch", "measured", "projected", "accuracy"})
        out += ["</details>", ""]
    foot = f"Generated by oracle {data.version}" if data.version else "Generated by oracle"
    if data.command:
        foot += f" with {md(data.command)}"
    out += ["---", "", f"<sub>{foot}.</sub>", ""]
    return "\n".join(out)


def image_names(report_path: str | Path, kinds: Sequence[str]) -> dict[str, str]:
    """File names of the PNGs written next to a Markdown report: report-scaling.png, ..."""
    stem = Path(report_path).stem
    return {k: f"{stem}-{k}.png" for k in kinds}
