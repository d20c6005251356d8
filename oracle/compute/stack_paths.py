"""Applying a stack's ``paths:`` (oracle/stack_paths.py, issue 27) to a system: what the
training software's communication and input code did, on this hardware.

- ``leader_samples_per_s``: the leader rate of the input pipeline the stack brought (a
  system file with its own ``input:`` keeps its own).
- ``allreduce_GB_per_s_inside_node`` / ``_across_nodes``: a ceiling on each network level
  (inside: the levels that fit in one node): β = max(β, 1/bandwidth), the level's protocol
  lines scaled by the same ratio (as ``oracle fit runs --calibrate network`` scales them).
  A ceiling, not a replacement: hardware slower than what the software reached stays as
  slow as it is.
- ``data_spatial_allreduce``: the system's implementation pattern where its file leaves
  the default ("flat").
- ``halo_alpha_s`` / ``halo_GB_per_s``: the transport of operation "halo" where the system
  file has no ``operations.halo`` of its own."""

from __future__ import annotations

from dataclasses import replace

from oracle.model import NetworkLevel, OperationOverride, System
from oracle.stack_paths import StackPaths


def apply_paths(system: System, paths: StackPaths, name: str, file_input: bool) -> System:
    """``system`` with ``paths`` of stack ``name``; ``file_input``: the system file has its
    own ``input:`` section (then the stack's leader rate is not used)."""
    if paths.leader_samples_per_s is not None and system.input is not None and not file_input:
        rate = paths.leader_samples_per_s
        pipe = replace(system.input, leader_samples_per_s=float(rate.value), source=f"{system.input.source}; {rate.source}")
        system = replace(system, input=pipe)
    levels = tuple(_ceiling(level, system.gpus_per_node, paths) for level in system.network)
    system = replace(system, network=levels)
    pattern = paths.data_spatial_allreduce
    if pattern is not None and system.implementation.data_spatial_allreduce == "flat":
        impl = replace(system.implementation, data_spatial_allreduce=pattern.value)
        system = replace(system, implementation=impl)
    return _halo(system, paths, name)


def _ceiling(level: NetworkLevel, gpus_per_node: int, paths: StackPaths) -> NetworkLevel:
    inside = level.max_gpus <= gpus_per_node
    cap = paths.allreduce_GB_per_s_inside_node if inside else paths.allreduce_GB_per_s_across_nodes
    if cap is None or level.beta_s_per_byte >= 1 / (float(cap.value) * 1e9):
        return level
    beta = 1 / (float(cap.value) * 1e9)
    ratio = beta / level.beta_s_per_byte
    protocols = tuple(replace(p, beta_s_per_byte=p.beta_s_per_byte * ratio) for p in level.protocols)
    source = f"{level.source}; β capped at {cap.value} GB/s by the stack: {cap.source}"
    return replace(level, beta_s_per_byte=beta, protocols=protocols, source=source)


def _halo(system: System, paths: StackPaths, name: str) -> System:
    alpha, bandwidth = paths.halo_alpha_s, paths.halo_GB_per_s
    if (alpha is None and bandwidth is None) or system.operation("halo") is not None:
        return system
    source = f"stack {name}: " + "; ".join(v.source for v in (alpha, bandwidth) if v is not None)
    halo = OperationOverride(alpha_s=float(alpha.value) if alpha else None,
                             beta_s_per_byte=1 / (float(bandwidth.value) * 1e9) if bandwidth else None,
                             source=source)  # fmt: skip
    return replace(system, operations=(*system.operations, ("halo", halo)))
