"""Writing a model file: fixed layout (one flow mapping per layer), a header of comments.

The same writer produces the shipped ``models/*.yaml`` (scripts/generate_models.py) and
the files of ``oracle import-model``, so both round-trip through the loader alike."""

from __future__ import annotations

from oracle.textsafe import yaml_comments, yaml_scalar

TOP_KEYS = ("name", "input", "dataset", "source", "description", "notes")


def yaml_float(value: float) -> str:
    """A float as PyYAML (YAML 1.1) reads it back as a float: ``5e-07`` would be a string."""
    text = repr(float(value))
    mantissa, e, exponent = text.partition("e")
    return f"{mantissa}{'' if '.' in mantissa else '.0'}e{exponent}" if e else text


def scalar(value) -> str:
    """One value as YAML flow text (strings quoted only when they need it)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return yaml_float(value)
    if isinstance(value, str):
        return yaml_scalar(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(scalar(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{yaml_scalar(k)}: {scalar(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot write {value!r}")


def render(doc: dict, header: list[str]) -> str:
    """The model file: ``header`` as comment lines, the top keys, one line per layer."""
    out = yaml_comments(header)
    out.append("")
    for key in TOP_KEYS:
        if key in doc:
            out.append(f"{key}: {scalar(doc[key])}")
    out.append("layers:")
    for layer in doc["layers"]:
        out.append(f"  - {scalar(layer)}")
    return "\n".join(out) + "\n"
