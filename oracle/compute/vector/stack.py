"""A software stack's per-GPU costs over many configurations at once (issue 29;
compute/stack.with_stack_costs point by point, issue 25): beyond one GPU the forward and
backward at the stack's data-parallel efficiency plus its GPU overhead per layer (an
estimated profile's), at least the launch floor, the fixed
cost per iteration added to the weight update, and half a collective cycle added to a
gradient exchange beyond one GPU; the same floating-point operations in the same order
(Python's max(a, b) keeps a unless b > a, as the np.where below)."""

from __future__ import annotations

import numpy as np

from oracle.compute.stack import precision_class


def per_iteration(ctx, cols) -> None:
    """Apply the stack's costs to ``cols.phases`` in place (make_point applies them after
    ZeRO-3's factor, to points with a positive batch and iterations); no stack: nothing."""
    stack = ctx.options.stack
    if stack is None:
        return
    ph, B, many = cols.phases, cols.batch, cols.gpus > 1
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        I = ctx.D / B
        on = (B > 0) & (I > 0)
        fb = ph["forward_backward_s"]
        fb = np.where(many, fb / stack.data_parallel_efficiency_for(precision_class(ctx.options)), fb)
        if ctx.profile_kind == "estimated":
            fb = fb + I * len(ctx.model.layers) * stack.gpu_overhead_s()
        floor = I * len(ctx.model.layers) * float(stack.launch_floor_s_per_layer.value)
        fb = np.where(floor > fb, floor, fb)
        wu = ph["weight_update_s"] + I * float(stack.fixed_s.value)
        ge = ph["gradient_exchange_s"]
        wait = I * float(stack.cycle_time_s.value) / 2
        ge = np.where(many & (ge > 0), ge + wait, ge)
    for name, value in (("forward_backward_s", fb), ("weight_update_s", wu), ("gradient_exchange_s", ge)):
        ph[name] = np.where(on, value, ph[name])
