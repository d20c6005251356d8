"""What a stack's communication and input code did (issue 27 point 3), as opposed to what
the hardware offers: the rate of a group leader's loader, the bandwidth its gradient
all-reduce reached inside a node and across nodes, how data+spatial reduces its gradients,
and the path and cost of its halo exchange.  A stack file's optional ``paths:`` section
(docs/file-formats.md "Stack"); applied to a system by compute/stack_paths.py, where the
system file does not describe the same thing itself.  Every value is a :class:`Sourced`
with the rows it was fitted on, if fitted."""

from __future__ import annotations

from dataclasses import dataclass, fields

from oracle.stack import Sourced


@dataclass(frozen=True)
class StackPaths:
    """The ``paths:`` section of a stack file; None: not described (the system's own)."""

    # samples/s of a data+spatial group leader loading its group's batch alone (ParaDL §3.2)
    leader_samples_per_s: Sourced | None = None
    # the bandwidth the stack's all-reduce reaches, GB/s: a ceiling on the system's levels
    # inside one node and across nodes (β = max(β_system, 1/bandwidth))
    allreduce_GB_per_s_inside_node: Sourced | None = None
    allreduce_GB_per_s_across_nodes: Sourced | None = None
    # "flat" | "leader" (model.Implementation.data_spatial_allreduce; ParaDL §4.5.1)
    data_spatial_allreduce: Sourced | None = None
    # the halo exchange's latency and bandwidth (operation "halo"; e.g. MPI through host memory)
    halo_alpha_s: Sourced | None = None
    halo_GB_per_s: Sourced | None = None

    def items(self) -> tuple[tuple[str, Sourced], ...]:
        """(key as in the file, value) of every value the section gives, in file order."""
        return tuple((f.name, v) for f in fields(self) if (v := getattr(self, f.name)) is not None)

    def fitted_on(self) -> tuple[str, ...]:
        """The ``fitted_on`` notes of the values fitted on runs."""
        return tuple(v.fitted_on for _, v in self.items() if v.fitted_on)
