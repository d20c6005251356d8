"""Load a timing profile (docs/file-formats.md) and bind it to a model.

A profile gives, per layer, the forward and backward time per sample and the weight
update time per iteration, or only a total (``total:``).  :func:`bind_profile` turns
either into per-layer times for a given model, checking that it belongs to that model
and covers every layer.
"""

from __future__ import annotations

from pathlib import Path

from oracle.limits import BATCH_PER_GPU
from oracle.load.fields import Fields, choice, integer, number, string
from oracle.load.yamlfile import load_yaml
from oracle.model import LayerTimes, Profile
from oracle.vocabulary import FP32, PRECISIONS

KINDS = ("measured", "estimated", "total")
_time = number(ge=0, what="a time in seconds")


def load_profile(path: str | Path) -> Profile:
    name = str(path)
    return parse_profile(load_yaml(path, "profile file"), name)


def parse_profile(doc: dict, file: str) -> Profile:
    top = Fields(doc, file, "")
    model = top.req("model", string(), "the name of the model this profile belongs to")
    device = top.opt("device", string(), "unknown device")
    framework = top.opt("framework", string(), "unknown framework")
    samples = top.opt("measured_samples_per_gpu", integer(ge=1, le=int(BATCH_PER_GPU.hi), what="samples per GPU"))
    precision = top.opt("precision", choice(PRECISIONS), FP32)
    stack = top.opt("stack", string(), "")
    source = top.opt("source", string(nonempty=False), "")
    kind = top.opt("kind", choice(KINDS), None)
    meta = _meta(top)

    has_layers = "layers" in top.map and top.map["layers"] is not None
    has_total = "total" in top.map and top.map["total"] is not None
    if has_layers and has_total:
        raise top.error("total", "give either per-layer times ('layers:') or a 'total:', not both")
    if not has_layers and not has_total:
        raise top.error(None, "missing 'layers:' (per-layer times) or 'total:' (one total)")

    layers: list[tuple[str, LayerTimes]] = []
    total_fwbw = total_wu = None
    if has_layers:
        layers = _layers(top)
        _all_or_no_memory(top, layers)
        if sum(t.fw_s + t.bw_s for _, t in layers) <= 0:
            raise top.error("layers", "all forward and backward times are zero")
        kind = kind or "measured"
        if kind == "total":
            raise top.error("kind", "'total' is for profiles with a 'total:' key")
    else:
        tf = top.sub("total")
        assert tf is not None
        total_fwbw = tf.req(
            "fw_bw_per_sample_s",
            number(gt=0, what="seconds per sample"),
            "forward+backward seconds per sample",
        )
        total_wu = tf.opt("wu_per_iteration_s", _time, 0.0)
        tf.done()
        kind = "total" if kind in (None, "total", "measured") else kind
    top.done()
    return Profile(
        model=model,
        device=device,
        framework=framework,
        layers=tuple(layers),
        kind=kind,
        measured_samples_per_gpu=samples,
        source=source,
        file=file,
        total_fw_bw_per_sample_s=total_fwbw,
        total_wu_per_iteration_s=total_wu,
        meta=meta,
        precision=precision,
        stack=stack,
        kernels=_stack_kernels(top, stack) if stack else (),
    )


def _meta(top: Fields) -> tuple[tuple[str, str], ...]:
    """What `oracle profile` records beside the times, as text."""
    meta = []
    for key in ("batch", "threads", "date", "framework_version", "efficiency", "notes", "peak_allocated_bytes"):
        if key in top.map and top.map[key] is not None:
            meta.append((key, str(top.map[key])))
            top.used.add(key)
    return tuple(meta)


def _layers(top: Fields) -> list[tuple[str, LayerTimes]]:
    """The per-layer times of ``layers:``, in the file's order."""
    lf = top.sub("layers")
    assert lf is not None
    if not lf.map:
        raise top.error("layers", "is empty; expected the times of every layer")
    layers = []
    for lname in list(lf.map):
        tf = lf.sub(lname)
        assert tf is not None
        fw = tf.req("fw_s", _time, "forward seconds per sample")
        bw = tf.req("bw_s", _time, "backward seconds per sample")
        wu = tf.opt("wu_s", _time, 0.0)
        saved = tf.opt("saved_bytes", number(ge=0, le=1e15, what="bytes per sample saved for the backward"))
        tf.done()
        layers.append((str(lname), LayerTimes(fw, bw, wu, saved)))
    return layers


def _stack_kernels(top: Fields, name: str) -> tuple[tuple[str, object], ...]:
    """The kernel fields of the stack a profile was measured under (``stack:``): a shipped
    stack's name, or a stack file's path (relative to the profile's folder)."""
    from oracle.errors import OracleError
    from oracle.load import load_stack

    beside = Path(top.file).parent / name
    try:
        stack = load_stack(beside if beside.suffix in (".yaml", ".yml") and beside.is_file() else name)
    except OracleError as exc:
        raise top.error("stack", f"'{name}' is neither a shipped stack nor a stack file", hint=exc.hint) from None
    return tuple(stack.kernel_constants().items())


def _all_or_no_memory(top: Fields, layers: list[tuple[str, LayerTimes]]) -> None:
    """Measured memory (``saved_bytes``) replaces the model's estimate only when every
    layer has it: a partial set is a mistake, not something to fill in silently."""
    have = [name for name, t in layers if t.saved_bytes is not None]
    if have and len(have) < len(layers):
        missing = next(name for name, t in layers if t.saved_bytes is None)
        raise top.error(
            f"layers.{missing}",
            f"has no saved_bytes while {len(have)} other layer(s) have; give the measured bytes"
            " of every layer or of none (oracle profile writes them all)",
        )
