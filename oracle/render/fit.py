"""Rendering of ``oracle fit network``: the fit as a rich table or JSON, and the fitted
network as system-file YAML (a whole system, or just its ``network:`` list)."""

from __future__ import annotations

import json
import textwrap

from oracle.compute.calibration.fit import LevelFit, LogFit, NetworkFit, Residuals
from oracle.textsafe import yaml_comment
from oracle.units import fmt_rate, fmt_seconds


def fmt_size(b: int) -> str:
    """Message sizes in binary units, as benchmarks step them: 4 B, 256 KiB, 32 MiB."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= scale:
            v = b / scale
            return f"{v:g} {unit}" if v == int(v) else f"{v:.3g} {unit}"
    return f"{b} B"


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _res(r: Residuals) -> str:
    if r.points == 0:
        return "n/a"
    return f"{_pct(r.median)} / {_pct(r.max)}"


def _range(lo_hi: tuple[int, int]) -> str:
    return f"{fmt_size(lo_hi[0])}–{fmt_size(lo_hi[1])}"


def describe(fit: NetworkFit) -> list[str]:
    """Lines saying how the fit was made (for the table title and file headers)."""
    check = fmt_size(fit.options.check_bytes)
    k = fit.options.protocols
    model = (
        "ring model (docs/cost-model.md) t = A_op(p)·α + B_op(p)·m·β" if k == 1
        else f"{k} protocol lines t = min_k A_op(p)·α_k + B_op(p)·m·β_k (compute/protocols.py)"
    )
    every = fit.overall_all
    return [
        f"{model}, one level per measured span (docs/cost-model.md)",
        f"weighted least squares, weights 1/t² (relative error), {fit.timing} times",
        f"fit range: {fit.options.rule()}",
        f"over messages >= {check}: median |rel. error| {_pct(fit.overall_large.median)},"
        f" max {_pct(fit.overall_large.max)} ({fit.overall_large.points} points, all logs)",
        f"over all sizes: median |rel. error| {_pct(every.median)}, max {_pct(every.max)} ({every.points} points)",
    ]


# -- table ------------------------------------------------------------------------------


def tables(fit: NetworkFit):
    """The fitted levels and the per-log errors; columns fit the width (issue 17)."""
    from pathlib import Path

    from rich.console import Group
    from rich.text import Text

    from oracle.render.columns import Column, FitTable, Section

    check = fmt_size(fit.options.check_bytes)
    levels = [
        {
            "level": lv.name + ("*" if lv.constrained else ""),
            "max_gpus": f"{lv.max_gpus:,}",
            "alpha": fmt_seconds(lv.alpha_s),
            "beta": f"{lv.beta_s_per_byte:.4g}",
            "rate": fmt_rate(lv.bandwidth_Bps),
            "range": _range(lv.range_bytes),
            "points": str(lv.in_range.points),
            "in_range": _res(lv.in_range),
            "large": _res(lv.large),
            "lines": _lines(lv) if lv.protocols else "",
        }
        for lv in fit.levels
    ]
    t = FitTable(
        (Column("level", "level", identity=True), Column("max_gpus", "max GPUs", "right"),
         Column("alpha", "α", "right"), Column("beta", "β (s/B)", "right", 5), Column("rate", "1/β", "right"),
         Column("range", "fit range", "right", 4), Column("points", "pts", "right", 3),
         Column("in_range", "range med/max", "right", 6), Column("large", f">={check} med/max", "right")),
        [Section(levels)],
        notes=Column("lines", "protocol lines (from size: α, 1/β)"),
        title="fitted network levels\n" + "\n".join(describe(fit)),
    )  # fmt: skip
    dirs = {str(Path(lf.file).parent) for lf in fit.logs}
    names = [Path(lf.file).name for lf in fit.logs]
    short = len(dirs) == 1 and len(set(names)) == len(names)
    title = "per log (|rel. error| of its level's model)"
    if short:
        title += f", logs in {dirs.pop()}/"
    logs = [
        {
            "log": Path(lf.file).name if short else lf.file,
            "tool": f"{lf.tool} · {lf.operation}",
            "gpus": str(lf.gpus),
            "nodes": str(lf.nodes),
            "level": lf.level,
            "peak": fmt_rate(lf.peak_busbw_Bps),
            "range": _range(lf.range_bytes) if lf.in_range.points else "none",
            "in_range": _res(lf.in_range),
            "large": _res(lf.large),
        }
        for lf in fit.logs
    ]
    u = FitTable(
        (Column("log", "log", identity=True), Column("tool", "tool · op", priority=3), Column("gpus", "GPUs", "right"),
         Column("nodes", "nodes", "right", 7), Column("level", "level"), Column("peak", "peak busbw", "right", 6),
         Column("range", "fit range", "right", 4), Column("in_range", "range med/max", "right", 5),
         Column("large", f">={check} med/max", "right")),
        [Section(logs)],
        title="\n" + title,
    )  # fmt: skip
    notes = [f"* {lv.name}: {lv.constrained}" for lv in fit.levels if lv.constrained]
    notes += [f"warning: {w}" for w in fit.warnings if not w.startswith("level ")]
    parts = [t, u]
    if notes:
        parts.append(Text("\n".join(notes)))
    return Group(*parts)


def logs_provenance(parsed) -> list[str]:
    """One line per log for a written file's header: what it measured and its sha256."""
    import hashlib

    from oracle.load.source import read_bytes

    info = []
    for log in parsed:
        digest = hashlib.sha256(read_bytes(log.file, "benchmark log")).hexdigest()[:16]
        info.append(
            f"{log.file}: {log.tool} {log.operation}, {log.gpus} GPUs on {log.nodes} node(s)"
            f" ({log.layout_from}), sha256 {digest}…"
        )
    return info


TABLES_NOTE = (
    "# Measured collective times, used instead of α-β for a collective on exactly a\n"
    "# benchmarked GPU count and span (interpolated log-log in message size).\n"
)


def tables_section(parsed, in_place: bool) -> dict:
    """The ``collectives: table`` entries: every all-reduce/all-gather log as measured."""
    tables = []
    for log in parsed:
        if log.operation not in ("allreduce", "allgather"):
            continue
        rows = log.times(in_place)
        tables.append({
            "operation": log.operation,
            "gpus": log.gpus,
            "nodes": log.nodes,
            "source": f"{log.file} ({log.tool}, {'in-place' if in_place else 'out-of-place'} times)",
            "bytes": [int(b) for b, _ in rows],
            "seconds": [float(f"{t:.6g}") for _, t in rows],
        })  # fmt: skip
    return {"mode": "table", "tables": tables}


# -- oracle fit runs --------------------------------------------------------------------


FACTOR_WHAT = {"layer_collectives_factor": "layer collectives", "halo_factor": "halo",
               "pipeline_p2p_factor": "pipeline sends"}  # fmt: skip


def fmt_param(parameter: str, value: float) -> str:
    if parameter.startswith("beta"):
        return f"{value:.4g} s/B ({1 / value / 1e9:.3g} GB/s)"
    if parameter == "split_overhead_s":
        return f"{value * 1e3:.4g} ms per split layer and iteration"
    if parameter == "split_serial_fraction":
        return f"Amdahl fraction {value:.4g}"
    if parameter == "compute_factor":
        return f"compute {value:.4g}x the profile"
    if parameter in FACTOR_WHAT:
        return f"{FACTOR_WHAT[parameter]} {value:.4g}x modelled"
    return f"{value:.4g} samples/s"


def left_out(aside) -> str:
    """What ``oracle fit runs`` says of a run it leaves out (calibrate.SetAside)."""
    return f"infeasible in the model: {aside.reason} (left out of the fit)"


def calibration(cal, runs: str, aside=()) -> list:
    """The evidence per run and the calibrated values (rich renderables); ``aside``: the
    selected runs left out, infeasible in the model (calibrate.SetAside), with their limits."""
    from rich.text import Text

    from oracle.compute.calibration.calibrate import stacks_text
    from oracle.render.columns import Column, FitTable, Section

    rows = [
        {"line": str(e.line), "run": e.run, "measured": f"{e.measured_iteration_s:.4g} s",
         "compute": f"{e.compute_iteration_s:.4g} s", "parameter": e.parameter,
         "value": fmt_param(e.parameter, e.value), "how": e.note}
        for e in cal.evidence
    ]  # fmt: skip
    unused = [{"line": str(line), "parameter": "unused", "how": why} for line, why in cal.unused]
    unused += [{"line": str(a.line), "run": a.run, "parameter": "infeasible", "how": left_out(a)} for a in aside]
    t = FitTable(
        (Column("line", "line", "right", identity=True), Column("run", "run", priority=7),
         Column("measured", "measured/it", "right", 8), Column("compute", "compute/it", "right", 5),
         Column("parameter", "parameter", priority=7, identity=True), Column("value", "value", "right")),
        [Section(rows + unused)],
        notes=Column("how", "how"),
        title=f"calibration ({cal.kind}) from {runs}",
        styles={id(r): "dim" for r in unused},
        hint="--width shows them",  # fit runs has no --format: nothing but a wider table holds them
    )  # fmt: skip
    lines = [f"runs inverted under {stacks_text(cal.stacks)}"] if cal.stacks else []
    if cal.kind == "all":
        from oracle.compute.calibration.calibrate_all import PARAMETERS

        why_not = dict(cal.not_identified)
        missing = [p for p in PARAMETERS if getattr(cal, p) is None and p not in why_not]
        if missing:
            lines.append(f"not identified by these runs (the base system's values stay): {', '.join(missing)}")
        reasons: dict[str, list[str]] = {}
        for name, why in cal.not_identified:
            reasons.setdefault(why, []).append(name)
        lines += [f"not identified ({why}; the base system's values stay): {', '.join(names)}"
                  for why, names in reasons.items()]  # fmt: skip
        lines += [f"{name}: {fmt_param(name, getattr(cal, name))}" for name in PARAMETERS[5:]
                  if getattr(cal, name) is not None]  # fmt: skip
        lines += [f"{model}: {fmt_param('compute_factor', k)}" for model, k in cal.compute_factors]
        lines += list(cal.notes)
    for label, value in (("β inside a node", cal.beta_intra), ("β across nodes", cal.beta_inter),
                         ("loader rate", cal.loader_rate), ("node rate", cal.node_rate),
                         ("leader rate", cal.leader_rate)):  # fmt: skip
        if value is not None:
            key = "beta" if label.startswith("β") else "rate"
            lines.append(f"{label}: {fmt_param(key, value)}")
    return [t, *(Text(line) for line in lines)]


def _lines(lv: LevelFit) -> str:
    from oracle.compute.protocols import PROTOCOL_NAMES

    names = PROTOCOL_NAMES.get(len(lv.protocols) + 1, ())
    return "; ".join(
        f"{names[i] if i < len(names) else f'p{i}'} {fmt_size(ln.from_bytes)}: {fmt_seconds(ln.alpha_s)},"
        f" {fmt_rate(1 / ln.beta_s_per_byte)}"
        for i, ln in enumerate(lv.protocols)
    )


# -- JSON -------------------------------------------------------------------------------


def _res_dict(r: Residuals) -> dict:
    return {"points": r.points, "median_rel_error": r.median, "max_rel_error": r.max}


def _level_dict(lv: LevelFit) -> dict:
    return {
        "name": lv.name,
        "span": lv.span,
        "max_gpus": lv.max_gpus,
        "alpha_s": lv.alpha_s,
        "beta_s_per_byte": lv.beta_s_per_byte,
        "bandwidth_GB_per_s": lv.bandwidth_Bps / 1e9,
        "protocols": [
            {"from_bytes": ln.from_bytes, "alpha_s": ln.alpha_s, "beta_s_per_byte": ln.beta_s_per_byte}
            for ln in lv.protocols
        ],
        "tool": lv.tool,
        "operations": list(lv.operations),
        "files": list(lv.files),
        "range_bytes": list(lv.range_bytes),
        "in_range": _res_dict(lv.in_range),
        "large": _res_dict(lv.large),
        "constrained": lv.constrained or None,
    }


def _log_dict(lf: LogFit) -> dict:
    return {
        "file": lf.file,
        "tool": lf.tool,
        "operation": lf.operation,
        "gpus": lf.gpus,
        "nodes": lf.nodes,
        "span": lf.span,
        "level": lf.level,
        "peak_busbw_GB_per_s": lf.peak_busbw_Bps / 1e9,
        "range_bytes": list(lf.range_bytes) if lf.in_range.points else None,
        "in_range": _res_dict(lf.in_range),
        "large": _res_dict(lf.large),
        "points": [
            {"bytes": m, "measured_s": t, "predicted_s": q, "fitted": f}
            for m, t, q, f in zip(lf.sizes, lf.measured_s, lf.predicted_s, lf.fitted)
        ],
    }


def to_json(fit: NetworkFit) -> str:
    doc = {
        "model": "ring (docs/cost-model.md): t = A_op(p)·alpha + B_op(p)·m·beta",
        "weights": "1/t^2",
        "timing": fit.timing,
        "range_rule": fit.options.rule(),
        "large_bytes": fit.options.check_bytes,
        "levels": [_level_dict(lv) for lv in fit.levels],
        "logs": [_log_dict(lf) for lf in fit.logs],
        "overall_large": _res_dict(fit.overall_large),
        "overall_all_sizes": _res_dict(fit.overall_all),
        "warnings": list(fit.warnings),
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


# -- YAML -------------------------------------------------------------------------------


def yaml_float(x: float) -> str:
    """6 significant digits, always with a '.' so that any YAML 1.1 reader sees a float."""
    text = f"{x:.6g}"
    if "." not in text and "inf" not in text and "nan" not in text:
        mant, _, exp = text.partition("e")
        text = f"{mant}.0" + (f"e{exp}" if exp else "")
    return text


def level_source(lv: LevelFit, fit: NetworkFit, logs: dict[str, LogFit]) -> str:
    parts = []
    for f in lv.files:
        lf = logs[f]
        parts.append(f"{lf.tool} {lf.operation} {f} ({lf.gpus} GPUs on {lf.nodes} node{'s' if lf.nodes > 1 else ''})")
    check = fmt_size(fit.options.check_bytes)
    text = (
        f"oracle fit network: {'; '.join(parts)}; {fit.timing} times, fit range"
        f" {_range(lv.range_bytes)} ({lv.in_range.points} points; {fit.options.rule(short=True)});"
        f" {'ring lines, the cheapest per size' if lv.protocols else 'ring model docs/cost-model.md'}, weights 1/t²."
        f" Median |rel. error| {_pct(lv.in_range.median)}"
        f" in range, {_pct(lv.large.median)} over messages >= {check}."
    )
    if lv.max_gpus > lv.span:
        text += f" Measured on {lv.span} GPUs; used up to {lv.max_gpus} (the whole system)."
    if lv.constrained:
        text += f" {lv.constrained}."
    return text


def _protocols_yaml(lv: LevelFit) -> list[str]:
    """The level's protocol lines (smallest messages first), as ``protocols:``."""
    from oracle.compute.protocols import PROTOCOL_NAMES

    if not lv.protocols:
        return []
    names = PROTOCOL_NAMES.get(len(lv.protocols) + 1, ())
    out = ["    protocols:                     # small-message regimes; the cheapest line is used"]
    for i, ln in enumerate(lv.protocols):
        name = names[i] if i < len(names) else f"p{i}"
        line = f"alpha_s: {yaml_float(ln.alpha_s)}, beta_s_per_byte: {yaml_float(ln.beta_s_per_byte)}"
        out.append(f"      - {{name: {name}, {line}}}   # fitted from {fmt_size(ln.from_bytes)}")
    return out


def network_yaml(fit: NetworkFit) -> str:
    """The ``network:`` list, innermost level first, each level with its ``source:``."""
    logs = {lf.file: lf for lf in fit.logs}
    out = ["network:                           # innermost level first; fitted, see the header"]
    for lv in fit.levels:
        out.append(f"  - name: {lv.name}")
        out.append(f"    max_gpus: {lv.max_gpus}")
        out.append("    basis: fitted")
        out.append(f"    alpha_s: {yaml_float(lv.alpha_s)}")
        out.append(f"    beta_s_per_byte: {yaml_float(lv.beta_s_per_byte)}   # 1/β = {fmt_rate(lv.bandwidth_Bps)}")
        out += _protocols_yaml(lv)
        out.append("    source: >-")
        src = level_source(lv, fit, logs)
        out.extend(textwrap.wrap(src, width=88, initial_indent="      ", subsequent_indent="      ",
                                 break_long_words=False, break_on_hyphens=False))
    return "\n".join(out) + "\n"


def header(fit: NetworkFit, command: str, date: str, logs_info: list[str], data_source: str | None,
           base: str | None, model_lines: list[str] | None = None) -> str:
    """The written file's header; ``model_lines`` (an NCCL fit's) replace the ring fit's."""
    lines = []
    if base:
        lines.append(f"{base} with its network levels fitted to measured collective times.")
    else:
        lines.append("Network levels fitted to measured collective times (paste into a system file).")
    lines.append(f"Generated by `{command}`")
    lines.append(f"on {date}. Do not edit by hand; regenerate instead.")
    if data_source:
        lines.append(f"Data: {data_source}")
    lines.append("Logs (tool, collective, GPUs, nodes, sha256):")
    lines += [f"  {x}" for x in logs_info]
    if model_lines is not None:
        lines += model_lines
    else:
        lines += describe(fit)
        lines.append("Per log over messages >= " + fmt_size(fit.options.check_bytes) + ":")
        lines += [f"  {lf.file}: median {_pct(lf.large.median)}, max {_pct(lf.large.max)} (level {lf.level})"
                  for lf in fit.logs]  # fmt: skip
    if base:
        lines.append("Everything but `network:` is copied from the base system file; see its comments for")
        lines.append("the sources of the GPU and node data.")
    out = []
    for line in map(yaml_comment, lines):
        indent = " " * (len(line) - len(line.lstrip(" ")))
        wrapped = textwrap.wrap(line.strip(), width=94, initial_indent=indent,
                                subsequent_indent=indent + "  ", break_long_words=False,
                                break_on_hyphens=False) or [""]
        out.extend(("# " + w).rstrip() for w in wrapped)
    return "\n".join(out) + "\n"


def plain(x):
    """YMap/YList (dict/list subclasses) to plain types for yaml.safe_dump."""
    if isinstance(x, dict):
        return {str(k): plain(v) for k, v in x.items()}
    if isinstance(x, list):
        return [plain(v) for v in x]
    return x


RING_FIT_NOTE = (
    "# The levels' alpha and beta below are fitted to the ring formula's steps (2(p-1) for an\n"
    "# all-reduce over the level's GPUs): projections run that formula, also under a stack\n"
    "# whose NCCL would otherwise choose its own algorithm (docs/cost-model.md).\n"
)
TREE_NOTE = (
    "# Beyond the nodes of tree_beyond_gpus (the multi-node log of the most nodes) such a\n"
    "# stack's all-reduce may take NCCL's tree instead, its latency growing with log2 of the\n"
    "# nodes; delete the key for a library without trees (NCCL before 2.4, an MPI ring).\n"
)


def _tree_beyond(collectives: dict, fit: NetworkFit, gpus_per_node: int) -> dict:
    """``collectives`` with ``tree_beyond_gpus``: the GPUs of the multi-node all-reduce log
    of the most nodes, each full (beyond its nodes an NCCL stack's all-reduce may take the
    tree's latency, compute/trees.with_trees, which counts them as ⌈P/g⌉); without such a
    log, or where that log's nodes are not full, none."""
    out = {k: v for k, v in collectives.items() if k != "tree_beyond_gpus"}
    logs = [lf for lf in fit.logs if lf.operation == "allreduce" and lf.nodes > 1]
    if not logs:
        return out
    top = max(logs, key=lambda lf: (lf.nodes, lf.gpus))
    return {**out, "tree_beyond_gpus": top.gpus} if top.nodes == -(-top.gpus // gpus_per_node) else out


def system_yaml(base_doc: dict, fit: NetworkFit, head: str, name: str, source: str, network: str | None = None,
                tables: dict | None = None) -> str:  # fmt: skip
    """The base system document with ``name``, ``source`` and ``network`` replaced (by
    ``network``, the YAML of an NCCL fit's levels, where given), and ``tables``
    (:func:`tables_section`) in its collectives."""
    import yaml

    doc = plain(base_doc)
    doc["name"] = name
    doc["source"] = source
    doc.pop("use_for", None)  # the base's purpose is not the fitted machine's
    if "network" not in doc:
        doc["network"] = []
    ring_fit = network is None and "algorithm" not in (doc.get("collectives") or {})
    if ring_fit:  # the lines below are the ring formula's: a stack's NCCL must not redo them
        doc["collectives"] = {"algorithm": "ring", **(doc.get("collectives") or {})}
    if network is None and (doc.get("collectives") or {}).get("algorithm") == "ring":
        doc["collectives"] = _tree_beyond(doc["collectives"], fit, int(doc.get("gpus_per_node") or 1))
    if tables is not None:
        doc["collectives"] = {**(doc.get("collectives") or {}), **tables}
    chunks = [head]
    order = ["name", "source"] + [k for k in doc if k not in ("name", "source")]
    for key in order:
        if key == "network":
            chunks.append(network if network is not None else network_yaml(fit))
            continue
        if key == "collectives":
            trees = TREE_NOTE if "tree_beyond_gpus" in doc["collectives"] else ""
            chunks.append((RING_FIT_NOTE + trees if ring_fit else "") + (TABLES_NOTE if tables is not None else ""))
        chunks.append(
            yaml.safe_dump({key: doc[key]}, sort_keys=False, allow_unicode=True, width=92,
                           default_flow_style=False)
        )
    return "".join(chunks)


__all__ = ["tables", "tables_section", "to_json", "network_yaml", "system_yaml", "header", "fmt_size", "describe"]
