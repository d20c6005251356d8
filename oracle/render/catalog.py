"""Rendering of ``oracle list``."""

from __future__ import annotations

import json
from dataclasses import asdict

HOW = {
    "models": "-m NAME (oracle show model NAME for its layers)",
    "systems": "-s NAME (oracle show system NAME for its network)",
    "stacks": "--stack NAME (oracle show stack NAME for every value and its source)",
    "profiles": "-p NAME (make one: oracle profile MODEL --estimate --system S, or measure with oracle profile MODEL)",
    "gpus": "gpu.model NAME in a system file (the figures a file omits come from here; a family alone,"
            " V100, A100, H100, P100 or H200, is the SXM part of the file's memory_GB)",
}


def short(text: str, limit: int = 90) -> str:
    """The first sentence, at most ``limit`` characters (JSON has the whole source)."""
    first = text.split(". ")[0].rstrip(".")
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


def tables(chosen: dict) -> list:
    """One table per kind: the name (the row's identity, never dropped or cut), then what
    it is and where its numbers come from, wrapped to the width."""
    from oracle.render.columns import Column, FitTable, Section

    out = []
    for kind, items in chosen.items():
        rows = [{"name": e.name, "what": f"{e.title}: {e.what}; source: {short(e.source)}"} for e in items]
        out.append(FitTable(
            (Column("name", "name", identity=True),), [Section(rows)],
            notes=Column("what", "what it is; source"), expand=True,
            title=("\n" if out else "") + f"{kind}: {HOW[kind]}\n",
            caption="(each source's first sentence; --format json gives them whole)",
        ))  # fmt: skip
    return out


def to_json(chosen: dict) -> str:
    return json.dumps({k: [asdict(e) for e in v] for k, v in chosen.items()}, indent=2, ensure_ascii=False) + "\n"
