"""Channel parallelism (ParaDL §3.3, Table 3 row "Channel", Appendix eq. 17-19): as
filter parallelism, split by input channels, so not the layers reading the data."""

from __future__ import annotations

import numpy as np

from oracle.compute.context import Context, SplitSums
from oracle.compute.strategies.base import Style, register
from oracle.compute.strategies.filter import Filter
from oracle.model import MODEL_INPUT


@register
class Channel(Filter):
    name = "channel"
    order = 40
    description = "input channels of conv/fc layers (but the first) split over p GPUs"
    style = Style("#F0E442", "v")  # yellow (Okabe & Ito 2008; markers get a dark edge to stay visible)
    limit_code = "channels"
    limit_words = {limit_code: "p > input channels"}
    limit_fields = {limit_code: ("gpus",)}
    width_noun = "input channels"

    def split_layers(self, ctx: Context) -> tuple[np.ndarray, np.ndarray]:
        """Every conv, convtranspose, fc and attention layer (or the stack's types, issue 27) except those reading the
        model's input (their input channels are the data's; the cost model says "except
        the first layer").  A split layer's output is a sum over its input channels
        unless the layer itself is grouped (filter.py)."""
        mask = np.array([
            t in ctx.filter_types and MODEL_INPUT not in layer.inputs
            for t, layer in zip(ctx.types, ctx.model.layers)
        ])  # fmt: skip
        return mask, ctx.groups[np.flatnonzero(mask)[:-1]]

    def widths(self, ctx: Context) -> np.ndarray:
        """Per layer, the width the split divides (input channels, C_l)."""
        return ctx.C

    def edges(self, ctx: Context, sums: SplitSums) -> tuple[float, int, float]:
        """What a run must do beyond ParaDL's pairs after every split layer but the last
        (docs/cost-model.md, "Channel parallelism at the ends"): each GPU holds a slice
        of the last split layer's input channels, so its output is a partial sum of
        every output channel, all-reduced before the replicated rest reads it; and each
        GPU computes the input gradient of its slice of the first split layer's input,
        gathered for the replicated layers before it when one of them has weights to
        train.  ParaDL mode keeps Table 3's sum (eq. 19), which has neither."""
        if sums.last < 0 or ctx.paradl_mode:
            return 0.0, 1, 0.0
        first = int(np.flatnonzero(sums.mask)[0])
        upstream = float(ctx.w[:first].sum()) > 0
        return float(ctx.y[sums.last]), int(ctx.groups[sums.last]), float(ctx.x[first]) if upstream else 0.0
