"""What ships with oracle: one entry per model, system, profile and stack file (``oracle list``),
and the GPUs of its library (``oracle list gpus``: oracle/gpus.py).

Each file entry is read with the ordinary loaders, so a listed file is one that loads; its
description is what the file says of itself (name, size, source).
"""

from __future__ import annotations

from dataclasses import dataclass

SHIPPED = ("models", "systems", "profiles", "stacks")  # files; what `oracle list` shows by default
LISTABLE = (*SHIPPED, "gpus")


@dataclass(frozen=True)
class Entry:
    kind: str  # models | systems | profiles | stacks
    name: str  # what to pass to -m/-s/-p
    title: str  # the file's own name for it
    what: str  # a few facts
    source: str


def _model(path) -> tuple[str, str, str]:
    from oracle.load import load_model

    m = load_model(str(path))
    shape = "x".join(str(d) for d in m.input_shape)
    return m.name, f"{m.parameters:,} parameters, {m.flops / 1e9:.3g} GFLOPs/sample, input {shape}", m.source


def _system(path) -> tuple[str, str, str]:
    from oracle.load import load_system

    s = load_system(str(path))
    what = f"{s.nodes:,} nodes x {s.gpus_per_node} {s.gpu_model} ({s.gpu_memory_bytes / 1e9:g} GB)"
    bases = [lv.basis or "unstated" for lv in s.network]
    if len(set(bases)) == 1:
        what += f"; network {bases[0]}" if bases[0] != "unstated" else ""
    else:
        what += "; network: " + ", ".join(f"{lv.name} {b}" for lv, b in zip(s.network, bases))
    if s.use_for:
        what += f". Use for: {s.use_for.rstrip('.')}"
    return s.name, what, s.source


def _profile(path) -> tuple[str, str, str]:
    from oracle.load import load_profile

    p = load_profile(str(path))
    return p.model, f"{p.kind} on {p.device}", p.source


def _stack(path) -> tuple[str, str, str]:
    from oracle.load import load_stack

    st = load_stack(str(path))
    what = (f"{st.library.value} {st.algorithm.value} all-reduce, overlap {st.overlap.value}"
            f" ({st.bucket_MB.value:g} MiB), {st.memory_model.value} memory, compute scaling {st.compute_scaling.value}"
            + (f", cost model {st.cost_model.value}" if st.cost_model is not None else ""))
    fitted = sorted({v.fitted_on.split(":")[0] for _, _, v in st.efficiency if v.fitted_on})
    return st.description, what, ("fitted on " + ", ".join(fitted) + ". " if fitted else "") + "oracle show stack " + st.name


def _gpus() -> list[Entry]:
    """The GPU library: the name a system file's gpu.model may give, its figures."""
    from oracle.gpus import DEVICE_NAMES, LIBRARY

    out = []
    for g in LIBRARY:
        peaks = " / ".join(f"{p} {v / 1e12:g}" for p, v in g.peak_flops)
        what = f"{peaks} TFLOPS, {g.memory_bandwidth_Bps / 1e9:g} GB/s, {g.sm_count} SMs"
        if DEVICE_NAMES.get(g.name):
            what += "; CUDA reports " + ", ".join(f"'{n}'" for n in DEVICE_NAMES[g.name])
        out.append(Entry("gpus", g.name, (g.architecture or "unknown").capitalize(), what, g.source))
    return out


def entries(kind: str) -> list[Entry]:
    """The shipped files of one kind, each loaded (a file that does not load is an
    error: shipped files are tested); for "gpus" the GPU library."""
    from oracle.resources import shipped_dir, shipped_names

    if kind == "gpus":
        return _gpus()

    read = {"models": _model, "systems": _system, "profiles": _profile, "stacks": _stack}[kind]
    out = []
    for name in shipped_names(kind):
        path = next(p for p in shipped_dir(kind).iterdir() if p.stem == name and p.suffix in (".yaml", ".yml"))
        title, what, source = read(path)
        out.append(Entry(kind, name, title, what, " ".join(source.split())))
    return out
