"""Rendering of ``oracle show stack`` (issue 25): every value of a stack with its source and
the rows it was fitted on."""

from __future__ import annotations

import json

from oracle.stack import STACK_KERNEL_FIELDS, Sourced, Stack
from oracle.vocabulary import NO_STACK

KERNEL_SHARES = STACK_KERNEL_FIELDS  # compute.<field>: the stack's kernels' bandwidth and pooling shares


def stack_values(st: Stack) -> list[tuple[str, Sourced]]:
    """(key path as in the file, value) of every parameter, in file order."""
    out = [(f"compute.{'by_gpu.' + gpu + '.' if gpu else 'efficiency.'}{cls}", v) for gpu, cls, v in st.efficiency]
    out += [(f"compute.data_parallel_efficiency.{cls}", v) for cls, v in st.data_parallel_efficiency]
    out += [("compute.fused_activations", st.fused_activations)] if st.fused_activations else []
    out += [(f"compute.{k}", getattr(st, k)) for k in KERNEL_SHARES if getattr(st, k)]
    out += [(f"compute.memory_format.{cls}", v) for cls, v in st.memory_format]
    out += [(f"compute.channels_last_speedup.{gpu}.{cls}", v) for gpu, cls, v in st.channels_last_speedup]
    out += [("compute.fp32_math", st.fp32_math)] if st.fp32_math else []
    out += [("compute.scaling", st.compute_scaling), ("iteration.fixed_s", st.fixed_s),
            ("iteration.launch_floor_s_per_layer", st.launch_floor_s_per_layer)]  # fmt: skip
    out += [("iteration.gpu_overhead_s_per_layer", st.gpu_overhead_s_per_layer)] if st.gpu_overhead_s_per_layer else []
    out += [(f"iteration.update_bytes_per_parameter.{cls}", v) for cls, v in st.update_bytes_per_parameter]
    out += [(f"input.{k}", v) for k, v in (("samples_per_s_per_gpu", st.input_samples_per_s_per_gpu),
                                            ("samples_per_s_per_node", st.input_samples_per_s_per_node)) if v]  # fmt: skip
    out += [("communication.library", st.library), ("communication.algorithm", st.algorithm),
            ("communication.overlap", st.overlap), ("communication.bucket_MB", st.bucket_MB),
            ("communication.cycle_time_s", st.cycle_time_s),
            *((("communication.nccl_algorithms", st.nccl_algorithms),) if st.nccl_algorithms else ()),
            *((("communication.gradient_precision", st.gradient_precision),) if st.gradient_precision else ()),
            ("memory.model", st.memory_model)]  # fmt: skip
    out += [(k, v) for k, v in (("cost_model", st.cost_model), ("layers.split_types", st.split_types),
                                ("layers.spatial_split_after", st.spatial_split_after)) if v is not None]  # fmt: skip
    return out + [(f"paths.{k}", v) for k, v in (st.paths.items() if st.paths else ())]


def _text(value) -> str:
    """A value as the stack file writes it: a number, a word, or a comma-separated list."""
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, tuple):
        return ", ".join(": ".join(v) if isinstance(v, tuple) else str(v) for v in value)
    return str(value)


def stack_dict(st: Stack) -> dict:
    values = {k: {"value": _text(v.value) if isinstance(v.value, tuple) else v.value, "source": v.source, "fitted_on": v.fitted_on or None} for k, v in stack_values(st)}
    return {"name": st.name, "description": st.description, "values": values}


def stack_json(st: Stack) -> str:
    return json.dumps(stack_dict(st), indent=2, ensure_ascii=False) + "\n"


def stack_table(st: Stack):
    from oracle.render.columns import Column, FitTable, Section

    rows = [{"key": k, "value": _text(v.value),
             "source": v.source + (f"; fitted on {v.fitted_on}" if v.fitted_on else "")}
            for k, v in stack_values(st)]  # fmt: skip
    return FitTable(
        (Column("key", "key", identity=True), Column("value", "value", "right")),
        [Section(rows)], notes=Column("source", "source"), notes_min=40,
        title=f"stack {st.label}: {st.description}",
    )  # fmt: skip


NO_STACK_DESCRIPTION = "no software stack: the options as given"


def no_stack_values() -> list[tuple[str, str, str]]:
    """(key as a stack file names it, value in force, where it comes from) under ``--stack
    none``: each option's own default (compute/options.Options), nothing of a stack's."""
    from oracle.compute.options import Options

    o = Options()
    return [
        ("compute.efficiency", "1", "an estimated profile's times as the compute model gives them"),
        ("compute.scaling", o.compute_scaling, "--compute-scaling's default"),
        ("iteration.fixed_s", "0", "no per-iteration cost beyond the kernels"),
        ("communication.algorithm", "system", "the system file's collectives, else ring (--collective)"),
        ("communication.overlap", o.overlap, "--overlap's default: gradients after the backward (ParaDL)"),
        ("communication.bucket_MB", f"{o.bucket_bytes / 2**20:g}", "--bucket-MB's default (PyTorch DDP's), with --overlap buckets"),
        ("memory.model", o.memory_model, "--memory-model's default"),
    ]  # fmt: skip


def no_stack_json() -> str:
    """``oracle show stack none -f json``: as :func:`stack_json` of a stack."""
    values = {k: {"value": v, "source": src, "fitted_on": None} for k, v, src in no_stack_values()}
    return json.dumps({"name": NO_STACK, "description": NO_STACK_DESCRIPTION, "values": values}, indent=2) + "\n"


def no_stack_table():
    """``oracle show stack none``: what a projection runs with under no stack."""
    from oracle.render.columns import Column, FitTable, Section

    rows = [{"key": k, "value": v, "source": src} for k, v, src in no_stack_values()]
    return FitTable(
        (Column("key", "key", identity=True), Column("value", "value", "right")),
        [Section(rows)], notes=Column("source", "source"), notes_min=40,
        title=f"stack {NO_STACK}: {NO_STACK_DESCRIPTION}",
    )  # fmt: skip
