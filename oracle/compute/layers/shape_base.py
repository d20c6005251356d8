"""What the shape rules share: the error they raise and small helpers."""

from __future__ import annotations

from collections.abc import Sequence


class ShapeError(ValueError):
    """A layer whose shape does not work out; carries the layer index."""

    def __init__(self, index: int, message: str) -> None:
        super().__init__(message)
        self.index = index
        self.message = message


def fmt_shape(shape: Sequence[int]) -> str:
    return "x".join(str(d) for d in shape)


def prod(values: Sequence[int]) -> int:
    n = 1
    for v in values:
        n *= v
    return n


def per_dim(values: tuple[int, ...], dims: int, what: str, index: int) -> tuple[int, ...]:
    if len(values) == 1:
        return values * dims
    if len(values) != dims:
        raise ShapeError(
            index, f"{what} has {len(values)} values but the input has {dims} spatial dimension(s)"
        )
    return values
