"""A system file's ``anchors:`` (issue 26, docs/file-formats.md): the measured runs its
projections are anchored on, each checked as a runs file's row is."""

from __future__ import annotations

from oracle.load.fields import Fields, integer, number, string
from oracle.model import Anchor

KEYS = ("source", "model", "strategy", "gpus", "global_batch", "p1", "p2", "segments", "iteration_s",
        "compute_s", "comm_s", "precision", "stack", "options")  # fmt: skip


def parse_anchors(top: Fields, file: str) -> tuple[Anchor, ...]:
    """The ``anchors:`` list, or () without one."""
    return tuple(_anchor(Fields(raw, file, f"anchors[{i}]", line)) for i, raw, line in top.items("anchors", required=False))


def _anchor(f: Fields) -> Anchor:
    from oracle.compute.calibration.compare import PRECISION_COLUMN, precision_key
    from oracle.compute.strategies import names

    strategy = f.req("strategy", string())
    if strategy not in names():
        raise f.error("strategy", f"unknown strategy '{strategy}'", hint="one of " + ", ".join(names()))
    precision = f.opt("precision", string(nonempty=False), "")
    if precision and precision_key(precision) is None:
        raise f.error("precision", f"got '{precision}'; expected one of {', '.join(PRECISION_COLUMN)} (any case;"
                      " or mixed, fp16-amp, bf16-amp, float16, bfloat16)")
    seconds = number(gt=0, what="measured seconds per iteration")
    anchor = Anchor(
        model=f.req("model", string()), strategy=strategy, gpus=f.req("gpus", integer(ge=1)),
        global_batch=f.req("global_batch", number(gt=0, what="samples per iteration")),
        iteration_s=f.req("iteration_s", seconds), p1=f.opt("p1", integer(ge=1)), p2=f.opt("p2", integer(ge=1)),
        segments=f.opt("segments", integer(ge=1)), compute_s=f.opt("compute_s", seconds),
        comm_s=f.opt("comm_s", number(ge=0, what="measured seconds per iteration")), precision=precision,
        stack=f.opt("stack", string(nonempty=False), ""), options=_options(f),
        source=f.opt("source", string(nonempty=False), ""),
    )  # fmt: skip
    f.done()
    if anchor.p1 and anchor.p2 and anchor.p1 * anchor.p2 != anchor.gpus:
        raise f.error("p2", f"p1={anchor.p1} x p2={anchor.p2} is not gpus={anchor.gpus}")
    return anchor


def _options(f: Fields) -> tuple:
    """The ``options:`` mapping: a runs file's option columns (compute/options.OPTION_COLUMNS)."""
    from oracle.compute.options import OPTION_COLUMNS, column_flags
    from oracle.errors import OracleError

    sub = f.sub("options", required=False)
    if sub is None:
        return ()
    sub.used.update(k for k in sub.map if k in OPTION_COLUMNS)
    sub.done()
    try:
        return tuple(column_flags({k: str(v) for k, v in sub.map.items() if v is not None}).items())
    except OracleError as exc:
        col = (exc.path or "").removeprefix("column ").strip("'")
        raise sub.error(col if col in OPTION_COLUMNS else None, exc.message, exc.hint) from None
