"""Spatial geometry of a layer split: the halo a tile needs from its neighbours and the
grid a GPU count is factored into (docs/cost-model.md)."""

from __future__ import annotations

import math
from functools import lru_cache

from oracle.model import Layer


def halo_half_widths(layer: Layer, dims: int) -> list[int]:
    """Elements a tile needs from each neighbour per dimension: floor(K/2) for a
    convolution or pooling window (docs/cost-model.md).  A transposed convolution scatters each
    input over K outputs spaced by the stride S, so an output tile reads
    ceil((K - S) / (2S)) extra inputs per side (0 when K <= S, as U-Net's 2x2/2); a
    linear upsample one (nearest: none)."""
    if layer.type == "upsample":  # linear interpolation reads one neighbour per side
        return [0 if layer.mode == "nearest" else 1] * dims
    kernel = layer.kernel * dims if len(layer.kernel) == 1 else layer.kernel
    if layer.type != "convtranspose":
        return [k // 2 for k in kernel]
    stride = layer.stride * dims if len(layer.stride) == 1 else layer.stride
    return [max(0, -(-(k - s) // (2 * s))) for k, s in zip(kernel, stride)]


@lru_cache(maxsize=65536)
def balanced_grid(p: int, dims: int) -> tuple[int, ...]:
    """Factor p into ``dims`` factors, as even as possible, non-increasing (a pure
    function of its two integers, asked once per spatial point: cached).  Two
    dimensions: (p/d, d) with d the largest divisor d <= √p, the search's answer
    (the smallest largest factor), found without it (issue 29: every count of a sweep)."""
    if dims == 2 and p >= 1:
        d = next(d for d in range(math.isqrt(p), 0, -1) if p % d == 0)
        return (p // d, d)
    best: tuple[int, ...] | None = None

    def rec(rest: int, k: int, cap: int, acc: tuple[int, ...]) -> None:
        nonlocal best
        if k == 1:
            if rest <= cap:
                cand = acc + (rest,)
                if best is None or (max(cand), -min(cand)) < (max(best), -min(best)):
                    best = cand
            return
        for f in reversed(divisors(rest)):  # every f <= cap dividing rest, largest first
            if f <= cap:
                rec(rest // f, k - 1, f, acc + (f,))

    rec(p, dims, p, ())
    assert best is not None
    return best


def divisors(n: int) -> list[int]:
    """The divisors of n, ascending (trial division up to √n)."""
    small = [d for d in range(1, math.isqrt(max(n, 0)) + 1) if n % d == 0]
    return small + [n // d for d in reversed(small) if d * d != n]
