"""Channel parallelism (ParaDL §3.3, Table 3 row "Channel", Appendix eq. 17-19): as
filter parallelism, split by input channels, so not the layers reading the data."""

from __future__ import annotations

from oracle.compute.context import Context, SplitSums
from oracle.compute.cost import Limit
from oracle.compute.strategies.base import min_layer, register
from oracle.compute.strategies.filter import Filter


@register
class Channel(Filter):
    name = "channel"
    description = "input channels of conv/fc layers (but the first) split over p GPUs"
    limit_code = "channels"

    def split(self, ctx: Context) -> SplitSums:
        return ctx.channel_split

    def width_limit(self, ctx: Context, sums: SplitSums, q: int, label: str) -> list[Limit]:
        """p <= min_s C_l (input channels of the split layers)."""
        cmin, name = min_layer(ctx, sums.mask, ctx.C)
        if name and q > cmin:
            what = "heads" if ctx.types[ctx.model.index[name]] == "attention" else "input channels"
            return [Limit(self.limit_code, f"{label}={q} exceeds the {cmin} {what} of {name}")]
        return []
