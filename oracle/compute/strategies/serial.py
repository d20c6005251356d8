"""Serial training on one GPU (ParaDL Table 3 row "Serial", Appendix eq. 3-4)."""

from __future__ import annotations

from oracle.compute.context import Context
from oracle.compute.cost import Breakdown, Limit, Point
from oracle.compute.strategies.base import (
    Config,
    MemoryParts,
    Strategy,
    Style,
    make_point,
    register,
)


@register
class Serial(Strategy):
    name = "serial"
    order = 0
    one_gpu = True
    description = "one GPU, no communication"
    style = Style("#000000", "o")  # black (Okabe & Ito 2008)
    limit_words = {name: "serial is 1 GPU"}  # the limit code is the name
    limit_fields = {name: ("gpus",)}

    def parts(self, p: int) -> tuple[int, int]:
        return (1, 1)

    def evaluate(self, ctx: Context, cfg: Config) -> Point:
        D, B = ctx.D, cfg.batch
        I = D / B
        # compute = D Σ(FW+BW) + I ΣWU                                  ParaDL eq. 3
        bd = Breakdown(forward_backward_s=D * ctx.fb_sum(B), weight_update_s=I * ctx.sum_wu)
        # memory / (γδ) = Σ 2B(x+y) + 2w                                ParaDL eq. 4
        # (framework model: the saved tensors of B samples, compute/memory.py)
        mem = MemoryParts(2 * B * ctx.sum_act, ctx.sum_w, split_samples=B)
        return make_point(ctx, cfg, bd, mem, self.limits(ctx, cfg))

    def brief_details(self, ctx: Context, cfg: Config) -> dict:
        """None beyond make_point's (issue 29, Strategy.brief_details)."""
        return {}

    def limits(self, ctx: Context, cfg: Config) -> list[Limit]:
        """The strategy's own limits of a configuration (compute/vector/rows.brief_rows too)."""
        return [] if cfg.gpus == 1 else [Limit(self.name, f"serial runs on one GPU, not {cfg.gpus}")]
