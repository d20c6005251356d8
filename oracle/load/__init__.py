"""Loading input files: parse and validate YAML/CSV into frozen dataclasses.

Each loader accepts a path or the name of a shipped file (``resnet50``, ``abci``).
"""

from __future__ import annotations

from pathlib import Path

from oracle.model import Model, Profile, System
from oracle.resources import resolve


def load_model(name_or_path: str | Path | Model) -> Model:
    if isinstance(name_or_path, Model):
        return name_or_path
    from oracle.load.model import load_model as _load

    return _load(resolve("models", str(name_or_path)))


def load_system(name_or_path: str | Path | System) -> System:
    if isinstance(name_or_path, System):
        return name_or_path
    from oracle.load.system import load_system as _load

    return _load(resolve("systems", str(name_or_path)))


def load_profile(name_or_path: str | Path | Profile) -> Profile:
    if isinstance(name_or_path, Profile):
        return name_or_path
    from oracle.load.profile import load_profile as _load

    return _load(resolve("profiles", str(name_or_path)))


def load_stack(name_or_path):
    """A software stack (issue 25) by shipped name (``pytorch``) or path."""
    from oracle.load.stack import load_stack as _load
    from oracle.stack import Stack

    if isinstance(name_or_path, Stack):
        return name_or_path
    return _load(resolve("stacks", str(name_or_path)))


__all__ = ["load_model", "load_system", "load_profile", "load_stack"]
