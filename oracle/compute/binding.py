"""A profile's per-layer times bound to the layers of a model (docs/file-formats.md):
per-layer profiles by name, total-only profiles spread over the layers."""

from __future__ import annotations

from oracle.errors import OracleError
from oracle.model import LayerTimes, Model, Profile


def bind_profile(model: Model, profile: Profile, spread=None) -> tuple[LayerTimes, ...]:
    """Per-layer times of ``profile`` for the layers of ``model``, in model order.

    A total-only profile is spread over layers in proportion to their training FLOPs
    (forward : backward = 1 : 2, the usual 3x forward cost of training), and its weight
    update time in proportion to parameters (docs/file-formats.md).  With ``spread`` (per-layer
    (FW, BW) weights, e.g. the compute model's times, issue 13) the forward+backward
    total is spread in proportion to those instead.
    """
    if profile.model != model.name:
        raise OracleError(
            f"profile is for model '{profile.model}', not '{model.name}'",
            file=profile.file,
            path="model",
            hint=f"pass the profile made for this model, or make one: oracle profile {_model_arg(model)}"
            " --estimate --system S (oracle list profiles shows the shipped ones)",
        )
    if profile.layers:
        times = dict(profile.layers)
        out = []
        for layer in model.layers:
            if layer.name not in times:
                raise OracleError(
                    f"has no times for layer '{layer.name}' of model '{model.name}'",
                    file=profile.file,
                    path="layers",
                    hint="every layer of the model needs fw_s and bw_s (0 is allowed)",
                )
            out.append(times[layer.name])
        extra = [n for n in times if n not in model.index]
        if extra:
            raise OracleError(
                f"has times for layer '{extra[0]}', which model '{model.name}' does not have",
                file=profile.file,
                path=f"layers.{extra[0]}",
            )
        return tuple(out)
    assert profile.total_fw_bw_per_sample_s is not None
    flops = [i.flops for i in model.info]
    params = [i.parameters for i in model.info]
    fsum = sum(flops) or 1.0
    psum = sum(params)
    total = profile.total_fw_bw_per_sample_s
    wu_total = profile.total_wu_per_iteration_s or 0.0
    out = []
    if spread is not None:
        ssum = sum(f + b for f, b in spread) or 1.0
        for (f, b), w in zip(spread, params):
            out.append(LayerTimes(total * f / ssum, total * b / ssum, wu_total * w / psum if psum else 0.0))
        return tuple(out)
    for f, w in zip(flops, params):
        share = total * f / fsum
        wu = wu_total * w / psum if psum else 0.0
        out.append(LayerTimes(share / 3.0, share * 2.0 / 3.0, wu))
    return tuple(out)


def _model_arg(model: Model) -> str:
    """How to name ``model`` on the command line: a shipped model by its name."""
    from oracle.resources import shipped_name

    return (shipped_name("models", model.file) if model.file else None) or model.file or model.name
