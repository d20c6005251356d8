"""Channel parallelism (ParaDL §3.3, Table 3 row "Channel", Appendix eq. 17-19): as
filter parallelism, split by input channels, so not the layers reading the data."""

from __future__ import annotations

import numpy as np

from oracle.compute.context import Context
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
