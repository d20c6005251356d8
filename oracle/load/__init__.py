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


class Files:
    """The input files of one command, each loaded once (issue 24): by the name or path
    given, so a command that needs a file twice (a report's sweep and its measured runs,
    a runs file naming one system for many models) reads it once.  Loaded objects pass
    through."""

    def __init__(self) -> None:
        self._loaded: dict = {}

    def model(self, name_or_path) -> Model:
        return self._load(load_model, name_or_path)

    def system(self, name_or_path) -> System:
        return self._load(load_system, name_or_path)

    def profile(self, name_or_path) -> Profile:
        return self._load(load_profile, name_or_path)

    def stack(self, name_or_path):
        """A software stack (issue 25), or None for None (no stack named)."""
        return None if name_or_path is None else self._load(load_stack, name_or_path)

    def inputs(self, model, system, profile) -> tuple[Model, System, Profile]:
        """Model, system and profile, in that order, the profile checked against the model
        at once (a profile made for another model is refused before the GPU counts are read)."""
        from oracle.compute.binding import bind_profile

        m, s, pr = self.model(model), self.system(system), self.profile(profile)
        bind_profile(m, pr)
        return m, s, pr

    def _load(self, load, name_or_path):
        if not isinstance(name_or_path, (str, Path)):
            return load(name_or_path)
        key = (load.__name__, str(name_or_path))
        if key not in self._loaded:
            self._loaded[key] = load(name_or_path)
        return self._loaded[key]


__all__ = ["Files", "load_model", "load_system", "load_profile", "load_stack"]
