"""Rendering of NCCL-model fits (compute/calibration/nccl_fit.py): the per-log table of ``oracle fit
network`` on a system whose collectives are ``nccl``, and the fitted ``network:`` list
(the base system's levels, each given the intra- or inter-node lines of the fit)."""

from __future__ import annotations

import textwrap

from oracle.render.fit import fmt_size, yaml_float
from oracle.units import fmt_seconds

WHERE = {"intra": "inside a node", "inter": "across nodes"}


def regimes(le) -> str:
    """The candidates a log's sizes take, each with the largest size it is taken for."""
    out: list[tuple[str, float]] = []
    for m, u in zip(le.sizes, le.used):
        if out and out[-1][0] == u:
            out[-1] = (u, m)
        else:
            out.append((u, m))
    return ", ".join(f"{u} to {fmt_size(int(m))}" for u, m in out)


def size_range(sizes: tuple) -> str:
    """The sizes a fit takes, in words: all sizes, or the --min-bytes/--max-bytes bounds."""
    lo, hi = sizes
    if lo is None and hi is None:
        return "all sizes"
    parts = (f"from {fmt_size(lo)} (--min-bytes)" if lo is not None else "",
             f"to {fmt_size(hi)} (--max-bytes)" if hi is not None else "")  # fmt: skip
    return "sizes " + " ".join(p for p in parts if p)


def line_text(where: str, protocol: str, line: tuple[float, float], fixed: bool, tied: bool = False) -> str:
    a, b = line
    kept = " (the base system's)" if fixed else " (the base's α, 0.92 of the Simple bandwidth)" if tied else ""
    return f"{where:5s} {protocol:6s} α {fmt_seconds(a):>9}  1/β {1 / b / 1e9:8.2f} GB/s{kept}"


def runaway_warnings(fit) -> list[str]:
    """One line per fitted line that ran to the β floor: the logs do not measure it."""
    return [f"the NCCL fit's {p} line {WHERE[w]} ran to 1 PB/s: no size of the logs measures it (logs of large"
            " messages only?); fit the Simple lines alone (--fit-protocol Simple) or bound the lines across"
            " nodes (--max-bandwidth-GB-per-s)" for w, p in fit.runaway]  # fmt: skip


def tables(fit):
    """The fitted lines and each log's median and largest |rel. error| (issue 25)."""
    from rich.console import Group
    from rich.text import Text

    from oracle.render.columns import Column, FitTable, Section

    lines = [line_text(w, p, v, (w, p) in fit.fixed, (w, p) in fit.tied) for (w, p), v in sorted(fit.lines.items())]
    rows = [
        {"nodes": str(le.nodes), "gpus": str(le.log.gpus), "median": f"{le.median:.1%}",
         "max": f"{le.max:.1%}", "log": le.log.file, "used": regimes(le)}
        for le in sorted(fit.logs, key=lambda le: (le.nodes, le.log.gpus))
    ]  # fmt: skip
    t = FitTable(
        (Column("nodes", "nodes", "right", identity=True), Column("gpus", "GPUs", "right"),
         Column("median", "median", "right"), Column("max", "max", "right"), Column("log", "log", priority=3)),
        [Section(rows)],
        notes=Column("used", "candidates (as NCCL's tuner picks)"),
        title="NCCL collective model (compute/nccl.py) fitted to every log at once; |rel. error| per log,"
              f" {size_range(fit.sizes)}",
    )  # fmt: skip
    where = "inside a node and across nodes" if any(w == "inter" for w, _ in fit.lines) else "inside a node; no log crosses one"
    return Group(Text(f"fitted NCCL lines (per protocol, {where})\n  " + "\n  ".join(lines)), t)


def _level(raw: dict, lines: dict, where: str, source: str) -> list[str]:
    a, b = lines[(where, "Simple")]
    out = [f"  - name: {raw['name']}", f"    max_gpus: {raw['max_gpus']}", "    basis: fitted",
           f"    alpha_s: {yaml_float(a)}   # NCCL model, Simple, one step {WHERE[where]}",
           f"    beta_s_per_byte: {yaml_float(b)}   # 1/β = {1 / b / 1e9:.4g} GB/s", "    protocols:"]  # fmt: skip
    for name in (nm for nm in ("LL", "LL128") if (where, nm) in lines):  # no LL128 line where it does not cross nodes
        pa, pb = lines[(where, name)]
        out.append(f"      - {{name: {name}, alpha_s: {yaml_float(pa)}, beta_s_per_byte: {yaml_float(pb)}}}")
    out.append("    source: >-")
    out.extend(textwrap.wrap(source, width=88, initial_indent="      ", subsequent_indent="      ",
                             break_long_words=False, break_on_hyphens=False))  # fmt: skip
    return out


def network_yaml(levels: list[dict], node_gpus: int, fit) -> str:
    """The base system's ``network:`` levels with the fitted lines: a level within one NCCL node
    (``node_gpus``: a host, or an NVLink domain across hosts, compute/nccl.node_gpus)
    takes the intra-node lines (unless they were the base's own, then it is copied), every
    level beyond it the inter-node lines (NCCL's model has one per protocol; copied when no
    log crossed a node, so none were fitted)."""
    import yaml

    files = ", ".join(le.log.file for le in fit.logs)
    worst = max(le.median for le in fit.logs)
    out = ["network:                           # innermost level first; NCCL model fitted, see the header"]
    for raw in levels:
        where = "intra" if int(raw["max_gpus"]) <= node_gpus else "inter"
        if (where, "Simple") in fit.fixed or (where, "Simple") not in fit.lines:
            dumped = yaml.safe_dump([raw], sort_keys=False, allow_unicode=True, width=88, default_flow_style=False)
            out += ["  " + ln for ln in dumped.rstrip("\n").split("\n")]
            continue
        source = (f"oracle fit network: NCCL's collective model (compute/nccl.py, compute/calibration/nccl_fit.py) fitted to"
                  f" every log at once ({files}); lines {WHERE[where]}, per protocol. Median |rel. error| per"
                  f" log at most {worst:.1%}, {size_range(fit.sizes)}.")  # fmt: skip
        out += _level(raw, fit.lines, where, source)
    return "\n".join(out) + "\n"


def header_lines(fit) -> list[str]:
    """Lines for a written file's header: the model and the error per log."""
    out = ["NCCL's collective model (compute/nccl.py) fitted to every log at once (compute/calibration/nccl_fit.py);"
           " reproduce with --collective nccl (the file's collectives: {algorithm: nccl}).",
           f"Per log, {size_range(fit.sizes)}:"]
    out += [f"  {le.log.file} ({le.nodes} nodes): median {le.median:.1%}, max {le.max:.1%}" for le in fit.logs]
    return out


def to_json(fit) -> str:
    import json

    lines = [{"where": w, "protocol": p, "alpha_s": a, "beta_s_per_byte": b, "fixed": (w, p) in fit.fixed,
              "tied": (w, p) in fit.tied} for (w, p), (a, b) in sorted(fit.lines.items())]  # fmt: skip
    logs = [{"file": le.log.file, "gpus": le.log.gpus, "nodes": le.log.nodes, "nccl_nodes": le.nodes,
             "median_rel_error": le.median,
             "max_rel_error": le.max, "candidates": regimes(le)} for le in fit.logs]  # fmt: skip
    return json.dumps({"model": "nccl", "lines": lines, "logs": logs}, indent=2) + "\n"
