"""A system file's ``models:`` (issue 26, docs/file-formats.md): per-model calibrations
``oracle fit runs --calibrate all`` writes where one shared fit leaves a model's
calibration runs more than 5% off (compute/calibration/anchor.per_model_calibrations).  Each entry
names a model (as its file names it) and holds the sections its own fit changes
(``network``, ``input``, ``implementation``, ``operations``), each written and checked
as the top-level section it replaces for that model."""

from __future__ import annotations

from oracle.load.fields import Fields, string

SECTIONS = ("network", "input", "implementation", "operations")


def parse_model_systems(top: Fields, doc: dict, file: str, parse) -> tuple:
    """(model name, System) per ``models:`` entry, or () without one; ``parse``:
    load/system.parse_system, applied to the file with the entry's sections in place of
    the top-level ones (its ``models:`` and ``anchors:`` left out)."""
    from oracle.errors import OracleError

    sub = top.sub("models", required=False)
    if sub is None:
        return ()
    base = {k: v for k, v in doc.items() if k not in ("models", "anchors")}
    out = []
    for name in sub.map:
        entry = sub.sub(name)
        assert entry is not None
        entry.opt("source", string(nonempty=False), "")
        sections = {k: entry.map[k] for k in SECTIONS if k in entry.map}
        entry.used.update(sections)
        entry.done()
        if not sections:
            raise entry.error(None, f"model '{name}' changes nothing", hint="give one of " + ", ".join(SECTIONS))
        try:
            out.append((str(name), parse({**base, **sections}, file)))
        except OracleError as exc:
            where = f"{entry.path}.{exc.path}" if exc.path else entry.path
            raise OracleError(exc.message, file=file, line=exc.line, path=where, hint=exc.hint) from None
    return tuple(out)
