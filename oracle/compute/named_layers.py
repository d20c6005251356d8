"""Options that name layers (``--delayed-update``, ``--replicated-gradients``): every
name must be a layer or a layer type of the model, and replicated gradients need a
layer with weights."""

from __future__ import annotations


def check_named_layers(ctx, field: str, option: str) -> None:
    """Raise the user error for a name ``ctx``'s model does not have (with a suggestion),
    or for replicated gradients of layers without weights (Lee et al., HiPC 2017 §III-C-2)."""
    from oracle.errors import OracleError, did_you_mean

    known = set(ctx.names) | set(ctx.types)
    for name in getattr(ctx.options, field):
        if name not in known:
            raise OracleError(f"model '{ctx.model.name}' has no layer or layer type '{name}'",
                              path=option, hint=did_you_mean(name, sorted(known)))  # fmt: skip
    if field == "replicated_gradients" and not (ctx.w[ctx.delayed_mask(field)] > 0).any():
        raise OracleError("the layers named have no weights: there is no gradient to replicate",
                          path=option, hint="name conv or fc layers, e.g. fc6,fc7")  # fmt: skip
