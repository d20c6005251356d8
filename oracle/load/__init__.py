"""Loading input files: parse and validate YAML/CSV into frozen dataclasses.

Each loader accepts a path or the name of a shipped file (``resnet50``, ``abci``).
"""

from __future__ import annotations

import math
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


# the date an estimate made for a projection records: none (its inputs, not a clock, decide it)
ESTIMATE_DATE = "not written: estimated for this projection"


def is_estimate(profile) -> bool:
    """Whether ``profile`` (a name, path or loaded Profile) asks for the compute model's
    estimate: ``estimate`` in any case, or nothing (a runs file's empty cell)."""
    from oracle.vocabulary import ESTIMATE

    return profile is None or (isinstance(profile, str) and profile.strip().lower() in ("", ESTIMATE))


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
        m, s = self.model(model), self.system(system)
        return m, s, self.bound_profile(profile, m, s)

    def bound_profile(self, profile, model: Model, system: System, precision: str | None = None,
                      batch_per_gpu: float | None = None) -> Profile:  # fmt: skip
        """:meth:`profile_of`, checked against ``model`` (every layer timed)."""
        from oracle.compute.binding import bind_profile

        pr = self.profile_of(profile, model, system, precision, batch_per_gpu)
        bind_profile(model, pr)
        return pr

    def profile_of(self, profile, model: Model, system: System, precision: str | None = None,
                   batch_per_gpu: float | None = None) -> Profile:  # fmt: skip
        """The profile named ``profile``; for ``estimate`` (vocabulary.ESTIMATE) the compute
        model's estimate of ``model`` on the system's GPU at ``precision`` (None: fp32) and
        ``batch_per_gpu`` (None: compute.options.DEFAULT_BATCH_PER_GPU; rounded up to a whole
        sample), as ``oracle profile --estimate`` writes it."""
        from oracle.errors import OracleError, did_you_mean
        from oracle.vocabulary import ESTIMATE, FP32

        if not is_estimate(profile):
            try:
                return self.profile(profile)
            except OracleError as exc:  # 'estimat': the word, not a file
                close = isinstance(profile, str) and did_you_mean(profile.lower(), [ESTIMATE])
                exc.hint = close or exc.hint
                raise
        from oracle.compute.options import DEFAULT_BATCH_PER_GPU

        batch = max(1, math.ceil(batch_per_gpu)) if batch_per_gpu else DEFAULT_BATCH_PER_GPU
        key = ("estimate", id(model), id(system), precision or FP32, batch)
        if key not in self._loaded:
            from oracle.profiling.estimate import estimate

            try:
                pr = estimate(model, system, compute_efficiency=None, memory_efficiency=None, batch=batch,
                              precision=precision or FP32, date=ESTIMATE_DATE)  # fmt: skip
            except OracleError as exc:  # the message says what was being made; the ways out after the estimator's
                exc.message = f"{exc.message}; the profile is oracle's estimate (-p estimate, the default)"
                other = "run with another --precision, or " if "peak_TFLOPS." in (exc.path or "") else ""
                exc.hint = (f"{exc.hint}; " if exc.hint else "") + f"or {other}name a measured profile" \
                    " (-p; a runs file's profile column)"
                raise
            self._loaded[key] = (model, system, pr)  # the objects kept alive: their ids stay theirs
        return self._loaded[key][2]

    def _load(self, load, name_or_path):
        if not isinstance(name_or_path, (str, Path)):
            return load(name_or_path)
        key = (load.__name__, str(name_or_path))
        if key not in self._loaded:
            self._loaded[key] = load(name_or_path)
        return self._loaded[key]


__all__ = ["Files", "is_estimate", "load_model", "load_profile", "load_stack", "load_system"]
