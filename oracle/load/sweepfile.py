"""A sweep file (``oracle sweep CASES.yaml``, issue 29): the cases file of ``oracle
snapshot`` (services/baseline.py: the same keys, CASE_KEYS, and the same checks) where
model, system, profile, stack, precision, batch and batch_per_gpu may each be a list,
and a case stands for every combination of them::

    cases:
      - model: [resnet50, vgg16]
        profile: {resnet50: resnet50_v100, vgg16: vgg16_v100}   # per model, or one for all
        system: [abci, dgx-h100-superpod]
        batch_per_gpu: [32, 64]
        gpus: 1..1024
        strategy: all

A case without ``profile`` (or with ``profile: estimate``) projects the compute model's
estimate for the system's GPU; ``stack: none`` no stack, as ``--stack none``.  Relative paths are
taken from the sweep file's folder.  Every name is checked before anything is projected: an
unknown model, system, profile or stack names the file, the case (``cases[0].system``) and its
line, exit 2 (services/sweep.check_names).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path

from oracle.vocabulary import ESTIMATE

LISTED = ("model", "system", "stack", "precision", "batch", "batch_per_gpu")  # may be lists
SWEEP_KEYS = ("model", "system", "profile", "stack", "gpus", "strategy", "batch", "batch_per_gpu", "p2",
              "segments", "precision", "memory_reuse", "memory_model", "mixed_precision", "optimizer",
              "contention", "samples", "compute_scaling")  # fmt: skip  (compute/baseline.CASE_KEYS)


@dataclass(frozen=True)
class Case:
    """One combination: ``where`` names its entry in the file (cases[i]) and ``values``
    are the keyword arguments of oracle.api.request (model, system, profile, gpus,
    strategies and the flags)."""

    where: str
    values: dict
    lines: dict = field(default_factory=dict)  # the sweep file's line of each key ("": the case's)

    def line_of(self, key: str | None) -> int | None:
        """The line of the case's ``key`` in the sweep file, else the case's."""
        return self.lines.get(key) or self.lines.get("")

    @property
    def label(self) -> str:
        v = self.values
        scale = f"B={v['batch']:g}" if "batch" in v else f"b={v['batch_per_gpu']:g}/GPU"
        extra = "".join(f" {v[k]}" for k in ("stack", "precision") if v.get(k))
        return f"{Path(str(v['model'])).stem} on {Path(str(v['system'])).stem} ({scale}{extra})"


def load_sweep(path: str) -> list[Case]:
    """Every combination of every case of the sweep file, in file order."""
    from oracle.errors import OracleError
    from oracle.load.fields import Fields
    from oracle.load.yamlfile import load_yaml

    doc = load_yaml(path, "sweep file")
    top = Fields(doc, path, "")
    out: list[Case] = []
    for i, raw, line in top.items("cases"):
        f = Fields(raw, path, f"cases[{i}]", line)
        entry = {key: f.map[key] for key in SWEEP_KEYS if f.has(key)}
        f.used.update(SWEEP_KEYS)
        f.done()
        for key in ("model", "system"):
            if key not in entry:
                raise f.error(None, f"missing required key '{key}'")
        entry.setdefault("profile", ESTIMATE)  # absent: the compute model's estimate
        if ("batch" in entry) == ("batch_per_gpu" in entry):
            raise f.error(None, "give exactly one of batch and batch_per_gpu")
        out += _expand(entry, path, f"cases[{i}]", f)
    top.done()
    if not out:
        raise OracleError("has no cases", file=path)
    return out


def _expand(entry: dict, path: str, where: str, f) -> list[Case]:
    from oracle.load.baseline import check_case

    lists = {}
    for key in LISTED:
        if key in entry:
            value = entry[key]
            lists[key] = value if isinstance(value, list) else [value]
            if not lists[key]:
                raise f.error(key, "is an empty list; expected at least one value")
    base = {k: v for k, v in entry.items() if k not in lists}
    lines = {"": f.line} | {key: f.key_line(key) for key in entry}
    cases = []
    for combo in itertools.product(*lists.values()):
        values = {**base, **dict(zip(lists, combo))}
        values["profile"] = _profile(values, f)
        check_case(values, path, where, lines)  # every value's type, the stack's too (a name or path)
        cases.append(Case(where, rebased(values, Path(path).parent), lines))
    return cases


def _profile(values: dict, f) -> object:
    """The profile of the combination's model: one for all, or a mapping model -> profile."""
    prof = values["profile"]
    if not isinstance(prof, dict):
        return prof
    model = values["model"]
    if not isinstance(model, str) or model not in prof:
        raise f.error("profile", f"names no profile for model '{model}'",
                      hint="profile: one name, or a mapping of every model to its profile")  # fmt: skip
    return prof[model]


def rebased(values: dict, folder: Path) -> dict:
    """Paths (with a '/' or a .yaml suffix) taken from the sweep file's folder; names stay names."""
    out = dict(values)
    for key in ("model", "system", "profile", "stack"):
        v = values.get(key)
        if isinstance(v, str) and ("/" in v or v.endswith((".yaml", ".yml"))) and not Path(v).is_absolute():
            out[key] = str(folder / v)
    return out
