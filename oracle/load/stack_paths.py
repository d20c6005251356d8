"""Load a stack file's optional ``paths:`` section (oracle/stack_paths.py; docs/file-formats.md
"Stack"): each key a ``{value, source, fitted_on}`` mapping as the rest of the file."""

from __future__ import annotations

from oracle.load.fields import Fields, choice, number
from oracle.load.stack import sourced
from oracle.stack_paths import StackPaths

ALLREDUCE_PATTERNS = ("flat", "leader")  # model.Implementation.data_spatial_allreduce


def parse_paths(top: Fields) -> StackPaths | None:
    f = top.sub("paths", required=False)
    if f is None:
        return None
    rate = number(gt=0, what="samples per second")
    bandwidth = number(gt=0, what="a bandwidth in GB/s")
    out = StackPaths(
        leader_samples_per_s=sourced(f, "leader_samples_per_s", rate, required=False),
        allreduce_GB_per_s_inside_node=sourced(f, "allreduce_GB_per_s_inside_node", bandwidth, required=False),
        allreduce_GB_per_s_across_nodes=sourced(f, "allreduce_GB_per_s_across_nodes", bandwidth, required=False),
        data_spatial_allreduce=sourced(f, "data_spatial_allreduce", choice(ALLREDUCE_PATTERNS), required=False),
        halo_alpha_s=sourced(f, "halo_alpha_s", number(ge=0, le=1e3, what="seconds"), required=False),
        halo_GB_per_s=sourced(f, "halo_GB_per_s", bandwidth, required=False),
    )
    f.done()
    return out
