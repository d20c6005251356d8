"""Rendering ``oracle search``: the winner explained (per-layer table, time saved
against the best uniform strategy, memory headroom), as text tables or JSON."""

from __future__ import annotations

import io
import json
import math
from collections.abc import Sequence

from oracle.compute.cost import Point
from oracle.compute.layerwise.search import SearchResult
from oracle.compute.strategies import REGISTRY
from oracle.load.layerwise import ranges_of
from oracle.render.columns import Column, FitTable, Section
from oracle.units import fmt_bytes, fmt_seconds, fmt_split
from oracle.vocabulary import NO_STACK


def escape(text: str) -> str:
    from rich.markup import escape as _escape

    return _escape(text)


# -- records -------------------------------------------------------------------------------


def _num(v) -> float | None:
    if v is None:
        return None
    v = float(v)
    return None if math.isnan(v) or math.isinf(v) else v


def _point(pt: Point | None) -> dict | None:
    if pt is None:
        return None
    from oracle.render.records import point_to_dict

    return point_to_dict(pt)


def layer_ranges(result: SearchResult) -> list[dict]:
    """Runs of consecutive layers with the same distribution, with their costs."""
    a = result.layerwise.assessment
    ctx = result.layerwise.costs.ctx
    out = []
    for first, last, d in ranges_of(ctx.model, list(a.assignment)):
        sl = slice(first, last + 1)
        limits = [why for l, why in a.layer_limits if first <= l <= last]
        out.append(
            {
                "from": ctx.names[first],
                "to": ctx.names[last],
                "layers": last - first + 1,
                "distribution": d.label,
                "kind": d.kind,
                "p1": d.p1,
                "p2": d.p2,
                "compute_s": _num(a.compute_s[sl].sum()),
                "communication_s": _num(a.comm_s[sl].sum()),
                "redistribution_s": _num(a.redistribution_s[sl].sum()),
                "gradient_bytes_per_iteration": _num(a.gradient_bytes[sl].sum()),
                "memory_bytes": _num(a.memory_bytes[sl].sum()),
                "limits": limits[:3],
            }
            | ({"gpus": d.gpus} if d.of else {})  # issue 18: a range on the first q GPUs
        )
    return out


def result_dict(result: SearchResult, top: int = 5) -> dict:
    lw = result.layerwise
    a = lw.assessment
    pt = a.point
    ctx = lw.costs.ctx
    bu = result.best_uniform
    saved = result.saved_s
    limit = ctx.system.gpu_memory_bytes
    winner = result.winner
    stats = lw.stats
    return {
        "gpus": result.gpus,
        "global_batch": int(result.batch) if float(result.batch).is_integer() else result.batch,
        "winner": None if winner is None else ("layer-wise" if winner is pt else "uniform"),
        "winner_point": _point(winner),
        "layerwise": {
            "point": _point(pt),
            "saved_s": _num(saved),
            "saved_fraction": _num(saved / bu.total_s)
            if saved is not None and bu and bu.total_s > 0
            else None,
            "memory_bytes": _num(pt.memory_bytes),
            "memory_limit_bytes": _num(limit),
            "memory_headroom_bytes": _num(limit - pt.memory_bytes),
            "ranges": layer_ranges(result),
            "gradient_groups": [
                {"group": k, "time_s": _num(v)} for k, v in sorted(a.gradient_s.items())
            ],
            "redistribution_s": _num(a.redistribution_s.sum()),
            "search": {
                "method": lw.method,
                "layers": lw.costs.G,
                "edges": len(lw.costs.edges),
                "distributions": [d.label for d in lw.costs.dists],
                "gradient_groups": len(lw.costs.groups),
                "graph_solves": lw.solves,
                "proven_optimal": lw.proven,
                "memory_constrained": lw.memory_constrained,
                "node_eliminations": stats.node_eliminations if stats else None,
                "edge_eliminations": stats.edge_eliminations if stats else None,
                "leaf_eliminations": stats.leaf_eliminations if stats else None,
                "final_graph_layers": stats.final_nodes if stats else None,
                "seconds": lw.seconds,
                "notes": list(lw.notes),
            },
        },
        "given": lw.given,
        "search_best": None
        if result.optimum is None
        else {
            "point": _point(result.optimum.assessment.point),
            "ranges": layer_ranges(
                SearchResult(result.gpus, result.batch, [], result.optimum, 0.0)
            ),
        },
        "best_uniform": _point(bu),
        "uniform": [_point(p) for p in result.uniform[:top]],
        "search_seconds": result.seconds,
    }


def to_json(results: Sequence[SearchResult], meta: dict, top: int = 5) -> str:
    best = overall_winner(results)
    doc = {
        "model": meta["model"],
        "system": meta["system"],
        "profile": meta["profile"],
        "profile_note": meta.get("profile_note", ""),
        "compute_conversion": meta.get("compute_conversion", ""),
        "stack": meta.get("stack", NO_STACK),  # issue 25: the software stack in force (oracle/stack.stack_label)
        "model_note": meta.get("model_note", ""),
        "scaling": meta["scaling"],
        "precision": meta["precision"],
        "samples": meta["samples"],
        "winner": None if best is None else {"gpus": best.gpus, "strategy": _winner_name(best)},
        "searches": [result_dict(r, top) for r in results],
    }
    return json.dumps(doc, indent=2, allow_nan=False) + "\n"


def overall_winner(results: Sequence[SearchResult]) -> SearchResult | None:
    cands = [r for r in results if r.winner is not None]
    if not cands:
        return None
    return min(cands, key=lambda r: (r.winner.total_s, r.gpus))  # type: ignore[union-attr]


def _winner_name(r: SearchResult) -> str:
    w = r.winner
    if w is None:
        return "none"
    return w.strategy if w.strategy == "layer-wise" else _strategy(w)


# -- text ----------------------------------------------------------------------------------


def _strategy(pt: Point) -> str:
    s = pt.strategy
    hybrid = pt.strategy in REGISTRY and REGISTRY[pt.strategy].hybrid
    if hybrid or (pt.p2 > 1 and pt.p1 > 1):
        s += f" {fmt_split(pt.p1, pt.p2)}"
    if pt.segments:
        s += f" (S={pt.segments})"
    return s


def _same(x: float, y: float) -> bool:
    return abs(x - y) <= 1e-9 * max(abs(x), abs(y), 1e-300)


def _diff(x: float, y: float) -> str:
    if _same(x, y):
        return "0 s"
    return ("+" if x > y else "") + fmt_seconds(x - y)


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "n/a"


def render_text(results: Sequence[SearchResult], meta: dict, top: int = 5, width: int = 140) -> str:
    """One GPU count in detail; with several (--max-gpus) the answer first, a line per
    count, then the fastest count in detail (issue 17: not every count before the answer;
    --format json keeps them all)."""
    from oracle.textsafe import console as safe_console

    buf = io.StringIO()
    console = safe_console(file=buf, width=width, color_system=None, force_terminal=False, soft_wrap=False,
                      emoji=False, highlight=False, legacy_windows=False)  # fmt: skip
    best = overall_winner(results) if len(results) > 1 else None
    if len(results) > 1:
        _print_counts(console, results, best)
        if best is not None:
            console.print()
    if len(results) == 1 or best is not None:
        _print_one(console, best or results[0], meta, top)
    return "".join(line.rstrip() + "\n" for line in buf.getvalue().splitlines())  # no trailing spaces


def _print_counts(console, results: Sequence[SearchResult], best: SearchResult | None) -> None:
    """The answer over the GPU counts, then each count's winner."""
    counts = ", ".join(str(r.gpus) for r in results)
    if best is None:
        console.print(f"No feasible configuration at any of {counts} GPUs.")
        return
    assert best.winner is not None
    console.print(f"Fastest over {counts} GPUs: {best.gpus} GPUs, {_winner_name(best)},"
                  f" {fmt_seconds(best.winner.total_s)} per epoch (in detail below)")  # fmt: skip
    rows = [{"gpus": str(r.gpus), "winner": _winner_name(r),
             "epoch": fmt_seconds(r.winner.total_s) if r.winner else "–",
             "iteration": fmt_seconds(r.winner.iteration_s) if r.winner else "–",
             "uniform": _strategy(r.best_uniform) if r.best_uniform else "–",
             "its": fmt_seconds(r.best_uniform.total_s) if r.best_uniform else "–"} for r in results]  # fmt: skip
    console.print()
    console.print(FitTable(COUNT_COLUMNS, [Section(rows)]), "")
    console.print("(each count in detail: --gpus N, or --format json)")


def _print_one(console, r: SearchResult, meta: dict, top: int) -> None:
    _print_header(console, r, meta)
    _print_winner(console, r)
    _print_comparison(console, r)
    _print_memory(console, r.layerwise.assessment.point, r.layerwise.costs.ctx.system.gpu_memory_bytes)
    console.print(_ranges_table(r), "")
    grads = {k: v for k, v in r.layerwise.assessment.gradient_s.items() if v > 0}
    if grads:
        console.print("Gradient all-reduces (one fused call per group of GPUs and iteration):")
        for k, v in sorted(grads.items(), key=lambda kv: -kv[1]):
            console.print(escape(f"  {k}: {fmt_seconds(v)} per epoch"))
    console.print(_uniform_table(r, top), "")
    _print_search(console, r)


def _print_header(console, r: SearchResult, meta: dict) -> None:
    B = r.batch
    note = f", {meta['batch_note']}" if meta.get("batch_note") else ""
    console.print(
        escape(f"{meta['model']} on {meta['system']}")
        + f" · {r.gpus} GPUs · B = {B:,.0f} ({B / r.gpus:g} per GPU{escape(note)})"
        + escape(f" · profile {meta['profile']} · D = {meta['samples']:,} · {meta['precision']} · times per epoch")
    )
    for note in ("stack_note", "profile_note", "model_note"):
        if meta.get(note):
            console.print(escape(meta[note]))
    if meta.get("compute_conversion"):
        console.print(escape(f"compute: {meta['compute_conversion']}"))


def _print_winner(console, r: SearchResult) -> None:
    lw = r.layerwise
    pt = lw.assessment.point
    w = r.winner
    if lw.given:
        console.print(
            f"[bold]Given per-layer configuration[/bold]: {fmt_seconds(pt.total_s)} per epoch"
            f" ({fmt_seconds(pt.iteration_s)} per iteration)"
            + ("" if pt.feasible else ", [bold]infeasible[/bold]")
        )
        if r.optimum is not None:
            o = r.optimum.assessment.point
            gain = pt.total_s - o.total_s
            console.print(
                f"The search's best per-layer assignment: {fmt_seconds(o.total_s)} per epoch"
                + (
                    f" ({fmt_seconds(gain)} faster than the given one)"
                    if gain > 0
                    else " (the given one is as fast)"
                )
            )
    elif w is None:
        console.print("[bold]No feasible configuration[/bold]: every uniform strategy and the best per-layer"
                      " assignment hit a limit (see below).")  # fmt: skip
    elif w is pt:
        line = f"[bold]Winner: per-layer configuration[/bold], {fmt_seconds(pt.total_s)} per epoch ({fmt_seconds(pt.iteration_s)} per iteration)"
        console.print(line)
    else:
        console.print(
            f"[bold]Winner: uniform {_strategy(w)}[/bold], {fmt_seconds(w.total_s)} per epoch"
            f" ({fmt_seconds(w.iteration_s)} per iteration)"
        )


def _print_comparison(console, r: SearchResult) -> None:
    """The time saved against the best uniform strategy, and where."""
    lw = r.layerwise
    a = lw.assessment
    pt = a.point
    bu = r.best_uniform
    if bu is None:
        console.print("No uniform strategy is feasible at this GPU count.")
        return
    saved = bu.total_s - pt.total_s
    who = "Given" if lw.given else "Per-layer"
    if _same(pt.total_s, bu.total_s):
        console.print(
            f"{who} {fmt_seconds(pt.total_s)} = best uniform {_strategy(bu)}: no per-layer assignment is faster"
        )
    else:
        verb = "saves" if saved > 0 else "loses"
        console.print(
            f"{who} {fmt_seconds(pt.total_s)} vs best uniform {_strategy(bu)} {fmt_seconds(bu.total_s)}:"
            f" {verb} {fmt_seconds(abs(saved))} per epoch ({_pct(abs(saved), bu.total_s)})"
        )
    redis = float(a.redistribution_s.sum())
    rows = [
        ("compute (FW+BW, WU)", pt.compute_s, bu.compute_s),
        ("gradient all-reduce", pt.breakdown.gradient_exchange_s, bu.breakdown.gradient_exchange_s),
        ("layer collectives + halo", pt.breakdown.layer_collectives_s - redis + pt.breakdown.halo_s,
         bu.breakdown.layer_collectives_s + bu.breakdown.halo_s),
        ("redistribution (shuffles)", redis, 0.0),
        ("pipeline p2p", 0.0, bu.breakdown.pipeline_p2p_s),
        ("input stall", pt.breakdown.input_s, bu.breakdown.input_s),
        ("total", pt.total_s, bu.total_s),
    ]  # fmt: skip
    columns = (Column("name", "per epoch", identity=True),
               Column("x", "per-layer" if not lw.given else "given", "right"),
               Column("y", _strategy(bu), "right"), Column("diff", "difference", "right", 5))  # fmt: skip
    cells = [{"name": name, "x": fmt_seconds(x), "y": fmt_seconds(y), "diff": _diff(x, y)}
             for name, x, y in rows if x or y or name == "total"]  # fmt: skip
    console.print(FitTable(columns, [Section(cells)], indent=0))


def _print_memory(console, pt: Point, limit: float) -> None:
    head = limit - pt.memory_bytes
    console.print(
        f"Memory per GPU: {fmt_bytes(pt.memory_bytes)} of {fmt_bytes(limit)}"
        + (
            f" (headroom {fmt_bytes(head)}, {_pct(head, limit)})"
            if head >= 0
            else f" (over by {fmt_bytes(-head)})"
        )
    )
    for lim in pt.limits:
        console.print(escape(f"  limit: {lim.reason}"))


def _print_search(console, r: SearchResult) -> None:
    """How the per-layer assignment was found."""
    lw = r.layerwise
    if lw.given:
        if r.optimum is None:
            return
        lw = r.optimum
    st = lw.stats
    how = lw.method
    if st is not None:
        how += (
            f" (Jia et al.): {st.node_eliminations} node and {st.edge_eliminations} edge eliminations"
            + (f", {st.leaf_eliminations} leaf eliminations" if st.leaf_eliminations else "")
            + f", final graph of {st.final_nodes} layers enumerated"
        )
    else:
        how += " (Dryden et al.)"
    console.print(
        f"Search: {lw.costs.G} layers × {lw.costs.nd} distributions, {how}; {lw.solves} graph solve(s) over"
        f" {len(lw.costs.groups)} gradient groups; {'optimal under the model' if lw.proven else 'not proven optimal'};"
        f" {r.seconds:.3f} s"
    )
    for note in lw.notes:
        console.print(escape(f"  note: {note}"))


# -- the tables are FitTables: every column as wide as its widest cell; at a narrow width
# the lowest priorities are dropped (and named in the caption), so that numbers are never
# cut (issue 18); a row's identity is never dropped (issue 23)

COUNT_COLUMNS = (Column("gpus", "GPUs", "right", identity=True), Column("winner", "winner"),
                 Column("epoch", "epoch", "right"), Column("iteration", "iteration", "right", 3),
                 Column("uniform", "best uniform", priority=6), Column("its", "its epoch", "right", 5))  # fmt: skip
RANGE_COLUMNS = (Column("i", "#", "right"), Column("layers", "layers", "right", 2),
                 Column("from", "from", identity=True), Column("to", "to", identity=True),
                 Column("distribution", "distribution"), Column("compute", "compute", "right", 7),
                 Column("comm", "comm", "right", 6), Column("redistribution", "redistribution", "right", 3),
                 Column("memory", "memory", "right", 5))  # fmt: skip
UNIFORM_COLUMNS = (Column("rank", "#", "right", 2), Column("strategy", "strategy", identity=True),
                   Column("compute", "compute", "right", 6), Column("comm", "comm", "right", 5),
                   Column("epoch", "epoch", "right"), Column("mem", "mem/GPU", "right", 7))  # fmt: skip
NOTES_MIN = 8


def _ranges_table(r: SearchResult) -> FitTable:
    rows = [{"i": str(i), "layers": str(row["layers"]), "from": row["from"], "to": row["to"],
             "distribution": row["distribution"], "compute": fmt_seconds(row["compute_s"]),
             "comm": fmt_seconds(row["communication_s"]), "redistribution": fmt_seconds(row["redistribution_s"]),
             "memory": fmt_bytes(row["memory_bytes"]), "notes": "; ".join(row["limits"])}
            for i, row in enumerate(layer_ranges(r), 1)]  # fmt: skip
    return FitTable(RANGE_COLUMNS, [Section(rows)], notes=Column("notes", "notes"), notes_min=NOTES_MIN,
                    title="Per-layer configuration (runs of consecutive layers)\n")  # fmt: skip


def _uniform_table(r: SearchResult, top: int) -> FitTable:
    rows = [{"rank": str(pu.rank) if pu.rank else "–", "strategy": _strategy(pu), "compute": fmt_seconds(pu.compute_s),
             "comm": fmt_seconds(pu.communication_s), "epoch": fmt_seconds(pu.total_s),
             "mem": fmt_bytes(pu.memory_bytes), "limits": "; ".join(lim.reason for lim in pu.limits)}
            for pu in r.uniform[:top]]  # fmt: skip
    return FitTable(UNIFORM_COLUMNS, [Section(rows)], notes=Column("limits", "limits"), notes_min=10,
                    title=f"Best uniform strategies (top {top})\n")  # fmt: skip
