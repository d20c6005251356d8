"""The optional ``interconnect:`` section of a system file (issue 25; docs/file-formats.md):
what the fabric offers collectives, checked against the rest of the file (gpus_per_node,
nodes and the network levels)."""

from __future__ import annotations

from oracle.limits import GPUS
from oracle.load.fields import Bad, Fields, boolean, integer, of, string
from oracle.model import Interconnect, NetworkLevel
from oracle.vocabulary import NVSWITCH_GENERATIONS

_GENERATIONS = "an NVSwitch generation, one of " + ", ".join(f"{g} ({w})" for g, w in NVSWITCH_GENERATIONS.items())


def _generation(value) -> int:
    """interconnect.nvswitch_generation: one of the generations oracle knows."""
    generation = integer(what=_GENERATIONS)(value)
    if generation not in NVSWITCH_GENERATIONS:
        raise Bad(f"got {generation}; expected {_GENERATIONS}")
    return generation


def parse_interconnect(top: Fields, gpus_per_node: int, nodes: int, levels: list[NetworkLevel]) -> Interconnect:
    """NVLS needs an NVSwitch of generation 3 or later; an NVLink domain is part of a host or
    whole hosts, and one network level serves exactly its GPUs (:func:`_domain_level`)."""
    f = top.sub("interconnect", required=False)
    if f is None:
        return Interconnect()
    domain = f.opt("nvlink_domain_gpus", of(GPUS))
    generation = f.opt("nvswitch_generation", _generation, 0)
    nvls = f.opt("nvls", boolean(), False)
    sharp = f.opt("sharp", boolean(), False)
    source = f.opt("source", string(nonempty=False), "")
    f.opt("notes", string(nonempty=False), "")
    f.done()
    if nvls and generation < 3:
        raise f.error("nvls", "NVLink SHARP (NVLS) reduces inside an NVSwitch of generation 3 or later (H100/H200"
                      f" systems); interconnect.nvswitch_generation is {generation}")  # fmt: skip
    if domain is not None and domain % gpus_per_node and gpus_per_node % domain:
        raise f.error("nvlink_domain_gpus", f"got {domain}; expected a divisor or a multiple of gpus_per_node"
                      f" ({gpus_per_node}): part of a host or whole hosts")  # fmt: skip
    if domain is not None and domain > gpus_per_node * nodes:
        raise f.error("nvlink_domain_gpus", f"got {domain}; the system has only {gpus_per_node * nodes} GPUs")
    if domain is not None:
        _domain_level(f, domain, levels)
    return Interconnect(domain, generation, nvls, sharp, source)


def _domain_level(f: Fields, domain: int, levels: list[NetworkLevel]) -> None:
    """The level carried over NVLink spans the domain: a collective uses the innermost level
    whose max_gpus covers its span (compute/network.py level_for), so without a level ending
    at the domain's GPUs, collectives inside the domain would take a network level beyond it
    (or those beyond it the NVLink level), and NCCL's intra-node steps (compute/nccl.py
    node_gpus: the domain is one NCCL node) a level that is not NVLink's."""
    if any(level.max_gpus == domain for level in levels):
        return
    ends = ", ".join(f"{level.name} {level.max_gpus}" for level in levels)
    inside = next((level for level in levels if level.max_gpus > domain), levels[-1])
    raise f.error("nvlink_domain_gpus", f"got {domain}, but no network level ends there (max_gpus: {ends}), so"
                  f" collectives inside the NVLink domain would run on level {inside.name}; expected a level"
                  f" with max_gpus: {domain}, the level carried over NVLink spanning its domain")  # fmt: skip
