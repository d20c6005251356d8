"""Rendering of ``oracle show``: models (torchinfo-like), systems, profiles."""

from __future__ import annotations

import json
import math

from oracle.compute.layers.shapes import fmt_shape
from oracle.model import LayerTimes, Model, Profile, System
from oracle.units import fmt_bytes, fmt_count, fmt_rate, fmt_seconds, fmt_si
from oracle.vocabulary import RING

# -- models ---------------------------------------------------------------------------


def model_dict(m: Model, system=None) -> dict:
    """JSON of a model (issue 2 schema, shapes without the batch dimension), with the
    bytes each layer saves for the backward (framework memory model, fp32) and, given a
    system, the largest batch per GPU that fits."""
    from oracle.compute.memory import largest_batches, saved_activations

    saved = _saved_bytes(m, saved_activations(m))
    layers = []
    for layer, info, sb in zip(m.layers, m.info, saved):
        layers.append(
            {
                "name": layer.name,
                "type": layer.type,
                "input_shape": list(info.input_shapes[0]) if len(info.input_shapes) == 1
                else [list(s) for s in info.input_shapes],
                "output_shape": list(info.output_shape),
                "parameters": info.parameters,
                "flops": info.flops,
                "inputs": list(layer.inputs),
                "activation_elements": info.output_elements,
                "saved_bytes_per_sample": sb,
            }
        )
    out = {
        "name": m.name,
        "parameters": m.parameters,
        "flops": m.flops,
        "input_shape": list(m.input_shape),
        "dataset": {"name": m.dataset_name, "samples": m.dataset_samples},
        "activation_elements": sum(i.output_elements for i in m.info),
        "saved_bytes_per_sample": sum(saved),
        "layers": layers,
    }
    if system is not None:
        out["max_batch_per_gpu"] = {
            "system": system.name,
            "gpu_memory_bytes": system.gpu_memory_bytes,
            **{b.precision: {"one_gpu": b.one_gpu, "data_parallel": b.data_parallel} for b in largest_batches(m, system)},
        }
    return out


def _saved_bytes(m: Model, saved) -> list[float]:
    """Bytes per sample each layer saves for the backward at fp32 (compute/memory.py)."""
    return [float(4 * e + f) for e, f in zip(saved.elements, saved.fixed_bytes)]


def model_json(m: Model, system=None) -> str:
    return json.dumps(model_dict(m, system), indent=2) + "\n"


def model_table(m: Model, system=None):
    """The layers of a model with their shapes and costs; columns fit the width."""
    from oracle.compute.memory import saved_activations
    from oracle.render.columns import Column, FitTable, Section

    total_act = sum(i.output_elements for i in m.info)
    saved = _saved_bytes(m, saved_activations(m))
    rows = [
        {
            "i": str(i),
            "layer": layer.name,
            "type": layer.type,
            "input": " + ".join(fmt_shape(s) for s in info.input_shapes),
            "output": fmt_shape(info.output_shape),
            "parameters": fmt_count(info.parameters) if info.parameters else "–",
            "flops": fmt_si(info.flops) if info.flops else "–",
            "activations": fmt_si(info.output_elements),
            "saved": fmt_bytes(saved[i]) if saved[i] else "–",
        }
        for i, (layer, info) in enumerate(zip(m.layers, m.info))
    ]
    columns = (
        Column("i", "#", "right", identity=True), Column("layer", "layer", footer="total", identity=True),
        Column("type", "type", priority=5, footer=f"{len(m.layers)} layers"),
        Column("input", "input", "right", 4), Column("output", "output", "right", 8),
        Column("parameters", "parameters", "right", 8, fmt_count(m.parameters)),
        Column("flops", "FLOPs", "right", 7, fmt_si(m.flops)),
        Column("activations", "activations", "right", 3, fmt_si(total_act)),
        Column("saved", "saved", "right", 6, fmt_bytes(sum(saved))),
    )  # fmt: skip
    caption = (
        f"parameters {fmt_count(m.parameters)} ({fmt_bytes(4 * m.parameters)} in fp32) · "
        f"forward {fmt_si(m.flops, 'FLOPs')}/sample (2 per multiply-add) · "
        f"activations {fmt_si(total_act)} elements/sample\n"
        f"saved for the backward: {fmt_bytes(sum(saved))} per sample in fp32 (what PyTorch keeps;"
        " ParaDL's bound counts 2·Σ(|x|+|y|))"
        + _largest_batch_line(m, system)
        + (f"\nsource: {m.source}" if m.source else "")
    )
    return FitTable(
        columns, [Section(rows)], show_footer=True, caption=caption,
        title=f"{m.name} · input {fmt_shape(m.input_shape)} · {m.dataset_name or 'dataset'} ({m.dataset_samples:,} samples)",
    )  # fmt: skip


def _largest_batch_line(m: Model, system) -> str:
    if system is None:
        return "\nlargest batch per GPU: give --system S"
    from oracle.compute.memory import largest_batches

    bits = [f"{b.precision} {b.one_gpu:,.0f} (one GPU), {b.data_parallel:,.0f} (data parallel)" for b in largest_batches(m, system)]
    return f"\nlargest batch per {fmt_bytes(system.gpu_memory_bytes)} GPU of {system.name}: " + "; ".join(bits)


def _protocol_text(level) -> str:
    """A level's protocol lines, for the source column."""
    if not level.protocols:
        return ""
    lines = ", ".join(f"{p.name} {fmt_seconds(p.alpha_s)} / {fmt_rate(1.0 / p.beta_s_per_byte)}" for p in level.protocols)
    return f" [protocol lines, cheapest used: {lines}]"


# -- systems --------------------------------------------------------------------------


def system_dict(s: System) -> dict:
    return {
        "name": s.name,
        "gpu": {
            "model": s.gpu_model,
            "memory_bytes": s.gpu_memory_bytes,
            "peak_flops": s.gpu_peak_flops,
            "memory_bandwidth_bytes_per_s": s.gpu_memory_bandwidth_Bps,
        },
        "gpus_per_node": s.gpus_per_node,
        "nodes": s.nodes,
        "total_gpus": s.total_gpus,
        "links_per_node": s.links_per_node,
        "contention_factor": s.contention_factor,
        "network": [
            {
                "name": lv.name,
                "max_gpus": lv.max_gpus,
                "alpha_s": lv.alpha_s,
                "beta_s_per_byte": lv.beta_s_per_byte,
                "bandwidth_bytes_per_s": 1.0 / lv.beta_s_per_byte,
                "protocols": [
                    {"name": pr.name, "alpha_s": pr.alpha_s, "beta_s_per_byte": pr.beta_s_per_byte}
                    for pr in lv.protocols
                ],
                "source": lv.source,
            }
            for lv in s.network
        ],
        "operations": {
            op: {
                "alpha_s": o.alpha_s,
                "beta_s_per_byte": o.beta_s_per_byte,
                "alpha_scale": o.alpha_scale,
                "beta_scale": o.beta_scale,
                "source": o.source,
            }
            for op, o in s.operations
        },
        "source": s.source,
        "gpu_workspace_bytes": s.gpu_workspace_bytes,
        "collective_algorithm": s.collective_algorithm,
        "collnet": s.collnet,
        "ll128_across_nodes": s.ll128_across_nodes,
        "tree_beyond_gpus": s.tree_beyond_gpus,
        "interconnect": {"nvlink_domain_gpus": s.interconnect.nvlink_domain_gpus or s.gpus_per_node,
                         "nvswitch_generation": s.interconnect.nvswitch_generation,
                         "nvls": s.interconnect.nvls, "sharp": s.interconnect.sharp,
                         "source": s.interconnect.source},
        "collective_tables": [
            {"operation": t.operation, "gpus": t.gpus, "span": t.span, "bytes": list(t.bytes),
             "seconds": list(t.seconds), "source": t.source}
            for t in s.collective_tables
        ],
        "implementation": {"data_spatial_allreduce": s.implementation.data_spatial_allreduce,
                           "split_serial_fraction": s.implementation.split_serial_fraction,
                           "split_overhead_s": s.implementation.split_overhead_s,
                           "compute_factors": dict(s.implementation.compute_factors),
                           "source": s.implementation.source},
        "input": None if s.input is None else {
            "loader_samples_per_s": s.input.loader_samples_per_s,
            "node_samples_per_s": s.input.node_samples_per_s,
            "leader_samples_per_s": s.input.leader_samples_per_s,
            "storage_bytes_per_s": s.input.storage_Bps,
            "node_storage_bytes_per_s": s.input.node_storage_Bps,
            "overlap": s.input.overlap,
            "source": s.input.source,
        },
    }  # fmt: skip


def system_json(s: System) -> str:
    return json.dumps(system_dict(s), indent=2) + "\n"


def _levels_table(s: System):
    from oracle.render.columns import Column, FitTable, Section

    rows = [
        {"level": lv.name, "max_gpus": f"{lv.max_gpus:,}", "alpha": fmt_seconds(lv.alpha_s),
         "rate": fmt_rate(1.0 / lv.beta_s_per_byte), "beta": f"{lv.beta_s_per_byte:.3e}",
         "source": lv.source + _protocol_text(lv)}
        for lv in s.network
    ]  # fmt: skip
    return FitTable(
        (Column("level", "level", identity=True), Column("max_gpus", "max GPUs", "right"),
         Column("alpha", "latency α", "right"),
         Column("rate", "bandwidth 1/β", "right"), Column("beta", "β (s/byte)", "right", 5)),
        [Section(rows)], notes=Column("source", "source"), notes_min=40,
        title="network levels (innermost first)",
    )  # fmt: skip


def _operations_table(s: System):
    from oracle.render.columns import Column, FitTable, Section

    rows = [
        {"op": op, "alpha": fmt_seconds(ov.alpha_s) if ov.alpha_s is not None else "level's",
         "rate": fmt_rate(1.0 / ov.beta_s_per_byte) if ov.beta_s_per_byte else "level's",
         "scales": f"{ov.alpha_scale:g} / {ov.beta_scale:g}", "source": ov.source}
        for op, ov in s.operations
    ]  # fmt: skip
    return FitTable(
        (Column("op", "operation", identity=True), Column("alpha", "α", "right"), Column("rate", "bandwidth", "right"),
         Column("scales", "scales α / β", "right")),
        [Section(rows)], notes=Column("source", "source"), notes_min=40,
        title="operation overrides (docs/cost-model.md)",
    )  # fmt: skip


def system_table(s: System):
    from rich.console import Group
    from rich.text import Text

    peak = f", {s.gpu_peak_flops / 1e12:g} TFLOPS" if s.gpu_peak_flops else ""
    if len(s.gpu_peaks) > 1:  # issue 13: one peak per precision
        peak = ", " + " / ".join(f"{prec} {v / 1e12:g}" for prec, v in s.gpu_peaks) + " TFLOPS"
    if s.gpu_sm_count:
        peak += f", {s.gpu_sm_count} SMs"
    bw = f", {fmt_rate(s.gpu_memory_bandwidth_Bps)} memory" if s.gpu_memory_bandwidth_Bps else ""
    if s.contention_factor is not None:
        phi = f"contention φ = {s.contention_factor:g} (from the system file)"
    elif s.links_per_node:
        phi = f"{s.links_per_node} links per node; φ derived per hybrid (docs/cost-model.md)"
    else:
        phi = "φ = 1 (no links_per_node or contention_factor given)"
    head = Text(
        f"{s.name}: {s.nodes:,} nodes × {s.gpus_per_node} {s.gpu_model}"
        f" = {s.total_gpus:,} GPUs ({fmt_bytes(s.gpu_memory_bytes)}{peak}{bw})\n{phi}"
    )
    parts = [head, _levels_table(s)]
    if s.operations:
        parts.append(_operations_table(s))
    extra = _system_notes(s)
    if extra:
        parts.append(Text("\n".join(extra)))
    if s.source:
        parts.append(Text(f"source: {s.source}"))
    return Group(*parts)


def _system_notes(s: System) -> list[str]:
    """Lines on what a system file sets beyond GPUs and network levels."""
    extra = []
    if s.gpu_workspace_bytes:
        extra.append(f"framework workspace: {fmt_bytes(s.gpu_workspace_bytes)} per GPU")
    if s.collective_algorithm != RING:
        extra.append(f"all-reduce algorithm: {s.collective_algorithm}" + (" (CollNet on)" if s.collnet else "")
                     + ("" if s.ll128_across_nodes else "; no LL128 across nodes"))  # fmt: skip
    if s.tree_beyond_gpus is not None:
        extra.append(f"ring lines fitted on up to {s.tree_beyond_gpus:,} GPUs; beyond, a stack whose NCCL chooses"
                     " may run NCCL's tree")  # fmt: skip
    ic = s.interconnect
    if ic != type(ic)():
        switch = f"NVSwitch generation {ic.nvswitch_generation}" if ic.nvswitch_generation else "no NVSwitch"
        offers = [name for name, on in (("NVLS", ic.nvls), ("SHARP", ic.sharp)) if on]
        extra.append(f"interconnect: NVLink domain {ic.nvlink_domain_gpus or s.gpus_per_node} GPUs, {switch},"
                     f" in-network reduction: {', '.join(offers) or 'none'}")
    for t in s.collective_tables:
        extra.append(
            f"measured {t.operation}: {t.gpus} GPUs (span {t.span}), {len(t.bytes)} sizes"
            f" {fmt_bytes(t.bytes[0])}-{fmt_bytes(t.bytes[-1])}" + (f" ({t.source})" if t.source else "")
        )
    if s.implementation.data_spatial_allreduce != "flat":
        extra.append(
            f"data+spatial all-reduce: {s.implementation.data_spatial_allreduce}"
            + (f" ({s.implementation.source})" if s.implementation.source else "")
        )
    impl = s.implementation
    if impl.split_serial_fraction or impl.split_overhead_s:
        extra.append(
            f"split layers: serial fraction {impl.split_serial_fraction:g},"
            f" {fmt_seconds(impl.split_overhead_s)} overhead per split layer and iteration"
        )
    if impl.compute_factors:
        at = dict(impl.compute_batches)  # issue 26: the batch each was measured at
        extra.append("compute against the profile: " + ", ".join(
            f"{m} {k:.4g}x" + (f" (measured at {at[m]:g} per GPU)" if m in at else "") for m, k in impl.compute_factors))
    if s.input is not None:
        i = s.input
        rates = [
            f"{label} {v:g} samples/s"
            for label, v in (("loader", i.loader_samples_per_s), ("node", i.node_samples_per_s),
                             ("leader", i.leader_samples_per_s))
            if v
        ]
        rates += [f"{label} {fmt_rate(v)}" for label, v in (("storage", i.storage_Bps), ("node storage", i.node_storage_Bps)) if v]
        extra.append(
            "input pipeline: " + (", ".join(rates) or "unbounded")
            + ("; loaders prefetch (overlap)" if i.overlap else "; loading not overlapped")
            + (f"\n  source: {i.source}" if i.source else "")
        )
    return extra


# -- profiles -------------------------------------------------------------------------


def profile_dict(pr: Profile, times: tuple[LayerTimes, ...] | None, m: Model | None) -> dict:
    d: dict = {
        "model": pr.model,
        "device": pr.device,
        "framework": pr.framework,
        "kind": pr.kind,
        "measured_samples_per_gpu": pr.measured_samples_per_gpu,
        "source": pr.source,
        "meta": dict(pr.meta),
    }
    if pr.kind == "total" and times is None:
        d["total"] = {
            "fw_bw_per_sample_s": pr.total_fw_bw_per_sample_s,
            "wu_per_iteration_s": pr.total_wu_per_iteration_s,
        }
        return d
    names = [layer.name for layer in m.layers] if (m is not None and times is not None) else [n for n, _ in pr.layers]
    ts = times if times is not None else tuple(t for _, t in pr.layers)
    d["layers"] = [{"name": n, "fw_s": t.fw_s, "bw_s": t.bw_s, "wu_s": t.wu_s} for n, t in zip(names, ts)]
    d["fw_bw_per_sample_s"] = sum(t.fw_s + t.bw_s for t in ts)
    d["wu_per_iteration_s"] = sum(t.wu_s for t in ts)
    return d


def profile_json(pr: Profile, times=None, m=None) -> str:
    return json.dumps(profile_dict(pr, times, m), indent=2) + "\n"


def profile_table(pr: Profile, times=None, m=None):
    from rich.console import Group
    from rich.text import Text

    from oracle.render.columns import Column, FitTable, Section

    d = profile_dict(pr, times, m)
    label = {"measured": "measured per layer", "total": "total only", "estimated": "ESTIMATED (roofline), not measured"}[pr.kind]
    lines = [f"profile of {pr.model} on {pr.device} · {pr.framework} · {label}"]
    if pr.measured_samples_per_gpu:
        lines.append(f"measured at {pr.measured_samples_per_gpu} samples per GPU")
    for k, v in pr.meta:
        lines.append(f"{k}: {v}")
    head = Text("\n".join(lines))
    if "total" in d:
        body = Text(
            f"forward+backward {fmt_seconds(pr.total_fw_bw_per_sample_s)} per sample, weight update "
            f"{fmt_seconds(pr.total_wu_per_iteration_s)} per iteration\n"
            "spread over a model's layers in proportion to training FLOPs when used"
            " (see it with --model)"
        )
        parts = [head, body]
    else:
        fw_sum = sum(x["fw_s"] for x in d["layers"])
        bw_sum = sum(x["bw_s"] for x in d["layers"])
        total = fw_sum + bw_sum
        rows = [
            {"layer": x["name"], "fw": fmt_seconds(x["fw_s"]), "bw": fmt_seconds(x["bw_s"]),
             "wu": fmt_seconds(x["wu_s"]),
             "share": f"{100 * ((x['fw_s'] + x['bw_s']) / total if total else math.nan):.1f}%"}
            for x in d["layers"]
        ]  # fmt: skip
        t = FitTable(
            (Column("layer", "layer", footer="total", identity=True),
             Column("fw", "fw/sample", "right", footer=fmt_seconds(fw_sum)),
             Column("bw", "bw/sample", "right", footer=fmt_seconds(bw_sum)),
             Column("wu", "wu/iteration", "right", 5, fmt_seconds(d["wu_per_iteration_s"])),
             Column("share", "share", "right", 6, "100%")),
            [Section(rows)], show_footer=True,
            title="per layer (spread by FLOPs)" if pr.kind == "total" else "per layer",
        )  # fmt: skip
        parts = [head, t]
    if pr.source:
        parts.append(Text(f"source: {pr.source}"))
    return Group(*parts)
