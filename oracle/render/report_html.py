"""The HTML report: one self-contained page (``oracle report -o report.html``), from the
:class:`oracle.render.report.ReportData` that :mod:`oracle.render.report` prepares."""

from __future__ import annotations

import base64

from oracle.render.compare import (
    RATIO_HEAD,
    RATIO_NOTE,
    ratio_cell,
    unscored_line,
)
from oracle.render.predict import memory_label
from oracle.render.report import (
    CAPTIONS,
    NO_PLOTS,
    NUMERIC_HEADS,
    PLOT_KINDS,
    REC_HEAD,
    RUN_HEAD,
    RUN_NUMERIC,
    SECTIONS,
    TOP,
    ReportData,
    config_text,
    findings,
    inputs_rows,
    limits,
    pct,
    rec_cells,
    recommendation,
    run_cells,
    stats_rows,
)
from oracle.textsafe import html, html_prose
from oracle.units import fmt_seconds

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
    return html(text)


def _attr(text: object) -> str:
    return html(text, quote=True)


def _swatch(name: str) -> str:
    from oracle.render.plots import strategy_colour

    return f'<span class="st"><span class="sw" style="background:{strategy_colour(name)}"></span>{_e(name)}</span>'



def _num_class(head: str) -> str:
    return " class='n'" if head in RUN_NUMERIC else ""


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
        f"<li>{html_prose(t)}</li>" for t in findings(data)) + "</ul>"))
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



def _html_recommendation(data: ReportData) -> str:
    head = "".join(f'<th class="{"n" if h in NUMERIC_HEADS else ""}">{_e(h)}</th>' for h in REC_HEAD)
    rows = []
    for g, ok, near in recommendation(data.points):
        if ok:
            for i, pt in enumerate(ok):
                cls = ["best"] if i == 0 else []
                if i == 0:
                    cls.append("group")
                cells = rec_cells(pt, ok[0])
                gcell = f'<td class="n" rowspan="{len(ok)}">{g:,}</td>' if i == 0 else ""
                rows.append(
                    f'<tr class="{" ".join(cls)}">{gcell}<td class="n">{_e(cells[0])}</td><td>{_swatch(pt.strategy)}'
                    f"</td>" + "".join(f'<td class="n">{_e(c)}</td>' for c in cells[1:]) + "</tr>"
                )
        else:
            text = "no feasible configuration"
            if near is not None:
                text += (f"; closest: {near.strategy} ({config_text(near)}), {fmt_seconds(near.total_s)} per epoch, "
                         + "; ".join(lim.reason for lim in near.limits))
            rows.append(f'<tr class="none group"><td class="n">{g:,}</td><td colspan="{len(REC_HEAD) - 1}">'
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



def _html_accuracy(data: ReportData, images, image_type: str) -> str:
    meas = data.measured
    assert meas is not None
    s = meas.summary
    out = [f"<p>{len(meas.rows)} measured runs from <code>{_e(meas.file)}</code>, each compared with its projection. "
           f"Accuracy is ParaDL's 1 − |projected − measured| / measured; {_e(RATIO_NOTE)}.</p>"]
    models = {r.point.model for r in meas.rows}
    if data.meta.get("model") not in models:
        out.append(f'<p class="note">None of these runs is of {_e(data.meta.get("model"))}: they check the cost '
                   f"model on {_e(', '.join(sorted(models)))}.</p>")
    head = "<tr><th></th><th class='n'>runs</th><th class='n'>mean accuracy</th><th class='n'>min accuracy</th>" \
           f"<th class='n'>MAPE</th><th class='n'>{_e(RATIO_HEAD)}</th></tr>"
    body = "".join(
        f"<tr><td>{_e(label)}</td><td class='n'>{st.n}</td><td class='n'>{pct(st.mean_accuracy)}</td>"
        f"<td class='n'>{pct(st.min_accuracy)}</td><td class='n'>{pct(st.mape)}</td>"
        f"<td class='n'>{ratio_cell(st)}</td></tr>" for label, st in stats_rows(s))
    out.append(f"<table><thead>{head}</thead><tbody>{body}</tbody></table>")
    agree = (f"Ranking agreement: {pct(s.ranking_agreement)} of {s.ranking_pairs} pairs of strategies."
             if s.ranking_agreement is not None else
             "Ranking agreement: no GPU count has runs of two strategies.")
    out.append(f"<p>{_e(agree)} Anomalies flagged: {s.anomalies}.</p>")
    if s.unscored_lines:
        out.append(f"<p>{_e(unscored_line(s))}.</p>")
    if images is not None and "compare" in images:
        out.append(_img("compare", images["compare"], image_type))
    elif images is None:
        out.append(f'<p class="note">{_e(NO_PLOTS)}.</p>')
    head = "<tr>" + "".join(f"<th{_num_class(h)}>{_e(h)}</th>" for h in RUN_HEAD) + "</tr>"
    strategy = RUN_HEAD.index("strategy")
    body = "".join("<tr>" + "".join(
        f"<td{_num_class(h)}>{_swatch(c) if i == strategy else _e(c)}</td>"
        for i, (h, c) in enumerate(zip(RUN_HEAD, run_cells(r), strict=True))) + "</tr>" for r in meas.rows)
    out.append(f"<h3>Every run</h3><table><thead>{head}</thead><tbody>{body}</tbody></table>")
    return "\n".join(out)
