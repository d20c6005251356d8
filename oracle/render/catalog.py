"""Rendering of ``oracle list``."""

from __future__ import annotations

import json
from dataclasses import asdict

HOW = {
    "models": "-m NAME (oracle show model NAME for its layers)",
    "systems": "-s NAME (oracle show system NAME for its network)",
    "profiles": "-p NAME (make one: oracle profile MODEL --estimate --system S, or measure with oracle profile MODEL)",
}


def short(text: str, limit: int = 90) -> str:
    """The first sentence, at most ``limit`` characters (JSON has the whole source)."""
    first = text.split(". ")[0].rstrip(".")
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


def tables(chosen: dict) -> list:
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    out = []
    for kind, items in chosen.items():
        t = Table(title=f"{kind}: {HOW[kind]}", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
        t.add_column("name", no_wrap=True)
        t.add_column("what", overflow="fold", ratio=1)
        t.add_column("source (first sentence; --format json for all)", overflow="fold", ratio=1)
        for e in items:
            t.add_row(escape(e.name), escape(f"{e.title}: {e.what}"), escape(short(e.source)))
        out.append(t)
    return out


def to_json(chosen: dict) -> str:
    return json.dumps({k: [asdict(e) for e in v] for k, v in chosen.items()}, indent=2, ensure_ascii=False) + "\n"
