"""A toy strategy, written as docs/development.md "How to add a strategy" says: one module
declares all there is to it.  tests/test_strategy_registry.py imports it (which registers
it) and unregisters it afterwards; a real one lives in oracle/compute/strategies/.

Toy: data parallelism whose GPUs meet at a barrier once per iteration instead of
all-reducing their gradients (a stand-in for tests, not a strategy anyone runs)."""

from __future__ import annotations

from oracle.compute.context import Context
from oracle.compute.cost import Breakdown, Phase, Point
from oracle.compute.strategies.base import (
    Config,
    LayerwiseKind,
    MemoryParts,
    Strategy,
    Style,
    batch_limit,
    make_point,
    register,
)
from oracle.compute.strategies.data import fill_data

BARRIER_S = 1e-3  # seconds per iteration at the barrier (a toy number, no source)


@register
class Toy(Strategy):
    name = "toy"
    order = 80  # after data+spatial
    description = "samples split over p GPUs; a barrier per iteration"
    loading = "every_gpu"
    style = Style("#117733", "*")  # Paul Tol's green
    phases = (Phase("toy_barrier_s", "communication", "comm: toy barrier", "#117733", "++"),)
    layerwise = LayerwiseKind(fill_data, grid=False)  # per layer: as data (no barrier there)

    def evaluate(self, ctx: Context, cfg: Config) -> Point:
        p, B, D = cfg.gpus, cfg.batch, ctx.D
        I = D / B
        bd = Breakdown(forward_backward_s=D / p * ctx.fb_sum(B / p), weight_update_s=I * ctx.sum_wu,
                       toy_barrier_s=I * BARRIER_S)  # fmt: skip
        mem = MemoryParts(2 * B / p * ctx.sum_act, ctx.sum_w, data_group=p, split_samples=B / p)
        return make_point(ctx, cfg, bd, mem, batch_limit(B, p))
