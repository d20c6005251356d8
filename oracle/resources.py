"""Where the shipped models, systems, profiles, stacks and validation files live.

In a source checkout they are the top-level folders (``models/``, ``systems/``, ...); in
an installed wheel they are packaged under ``oracle/_data/`` (see pyproject.toml).
A user may name a shipped file (``resnet50``) or give a path.
"""

from __future__ import annotations

from pathlib import Path

from oracle.errors import OracleError, did_you_mean

KINDS = ("models", "systems", "profiles", "validation", "baselines", "stacks")
_PKG = Path(__file__).resolve().parent


def shipped_dir(kind: str) -> Path:
    packaged = _PKG / "_data" / kind
    if packaged.is_dir():
        return packaged
    return _PKG.parent / kind


def shipped_names(kind: str) -> list[str]:
    d = shipped_dir(kind)
    if not d.is_dir():
        return []
    return sorted(p.stem for p in d.iterdir() if p.suffix in (".yaml", ".yml", ".csv", ".json"))


def shipped_name(kind: str, path) -> str | None:
    """The shipped name of the file at ``path`` when it is one of ``kind``'s shipped files
    (its stem: systems/abci.yaml is abci), else None."""
    try:
        p = Path(str(path)).resolve()
        return p.stem if p.parent == shipped_dir(kind).resolve() else None
    except (OSError, ValueError):
        return None


def exists(path: Path) -> bool:
    """Path.exists() that treats impossible names (too long, NUL bytes) as absent."""
    try:
        return path.exists()
    except PermissionError:  # a folder above cannot be searched: the reader says so
        return True
    except (OSError, ValueError):
        return False


# Shipped names that were renamed because they did not say what the file describes
# (issue 23): the old name is refused with the choice it hid, never mapped silently.
RENAMED = {
    "systems": {
        "dgx-h100": "renamed: gcp-a3mega-h100 is H100 nodes on Google Cloud A3 Mega's measured"
        " GPUDirect-TCPXO fabric (what dgx-h100 held); dgx-h100-superpod is a nominal"
        " InfiniBand DGX H100 SuperPOD (oracle list systems)",
        "h100-ndr": "renamed dgx-h100-superpod (a nominal InfiniBand DGX H100 SuperPOD);"
        " gcp-a3mega-h100 has a measured (cloud) inter-node fabric",
    },
}


# Other names benchmark suites and frameworks give the same architecture or software, by
# their loose spelling (_loose): tf_cnn_benchmarks' --model names (inception3, inception4),
# DeepLearningExamples' and
# MLPerf's ResNet-50 v1.5 (resnet50v1.5, RN50: torchvision's resnet50 is v1.5), GoogLeNet's
# other name; DeepLearningExamples' framework names (TensorFlow1, TensorFlow2: oracle ships one
# TensorFlow stack, which every output names) and the usual short ones.
ALIASES = {
    "models": {
        "inception3": "inception_v3", "inception4": "inception_v4", "inceptionv1": "googlenet",
        "resnet50v15": "resnet50", "rn50": "resnet50", "rn50v15": "resnet50",
        "resnet101v15": "resnet101", "resnet152v15": "resnet152",
    },
    "stacks": {"torch": "pytorch", "tf": "tensorflow", "tf1": "tensorflow", "tensorflow1": "tensorflow",
               "tf2": "tensorflow", "tensorflow2": "tensorflow", "paddlepaddle": "paddle", "fluid": "paddle"},
}  # fmt: skip


# Software oracle ships no stack for, by the names users give it (_loose): an unknown name of
# these says so and how to go on, rather than suggesting the nearest shipped name
UNSHIPPED = {
    "stacks": {
        "caffe": "Caffe", "caffe2": "Caffe2",
        "jax": "JAX", "oneflow": "OneFlow", "mindspore": "MindSpore", "nnabla": "NNabla",
    },
}  # fmt: skip


def _loose(name: str) -> str:
    return "".join(c for c in name.casefold() if c not in "-_ .")


def loose_match(text: str, names: list[str]) -> str | None:
    """The one name in ``names`` that ``text`` spells with other case or separators
    ("PyTorch" is pytorch, "ResNet-50" resnet50, "DGX1_V100" dgx1-v100); None when no name
    or more than one does."""
    same = [n for n in names if _loose(n) == _loose(text)]
    return same[0] if len(same) == 1 else None


def resolve(kind: str, name_or_path: str) -> Path:
    """A path for a user-given name: an existing path wins, then a shipped name, then the
    one shipped name it spells with other case or separators (loose_match)."""
    text = str(name_or_path)
    p = Path(text)
    if exists(p):
        return p
    if text in RENAMED.get(kind, {}):
        raise OracleError(f"no shipped {kind.rstrip('s')} named '{text}' any more", file=text,
                          hint=RENAMED[kind][text])
    looks_like_path = "/" in text or "\\" in text or p.suffix in (".yaml", ".yml", ".csv", ".json")
    if not looks_like_path:
        d = shipped_dir(kind)
        for suffix in (".yaml", ".yml", ".csv", ".json"):
            cand = d / f"{text}{suffix}"
            if exists(cand) and cand.is_file():
                return cand
        same = loose_match(text, shipped_names(kind)) or ALIASES.get(kind, {}).get(_loose(text))
        if same is not None:
            return resolve(kind, same)
    what = kind.rstrip("s")
    names = shipped_names(kind)
    software = UNSHIPPED.get(kind, {}).get(_loose(text)) if not looks_like_path else None
    if software is not None:
        raise OracleError(f"no shipped {what} for {software}", file=text,
                          hint=f"'none' projects with none (--{what} none, or a runs file's {what} column none: the"
                          f" compute model and the system's collectives), or describe it in a {what} file of your own"
                          " (docs/file-formats.md);"
                          f" shipped {kind}: " + ", ".join(names))  # fmt: skip
    # the shipped names always (issue 23), after the closest one when a name is near one
    close = did_you_mean(text, names) if not looks_like_path else None
    hint = " ".join(filter(None, [close, f"shipped {kind}: " + ", ".join(names) if names else None])) or None
    shown = text if len(text) <= 200 else text[:197] + "..."
    raise OracleError(f"no such file, and no shipped {what} named '{shown}'", file=shown, hint=hint)
