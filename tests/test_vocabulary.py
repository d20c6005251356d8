"""One vocabulary (issue 24): each precision, memory model and strategy name is written
once as a string literal in oracle/ (precisions and memory models in oracle/vocabulary.py,
a strategy's name in its own module) and everything else refers to it; the choices,
help and validation of the CLI read the same tables."""

from __future__ import annotations

import ast
from pathlib import Path

from oracle.compute.strategies import REGISTRY, names
from oracle.vocabulary import ALGORITHMS, MEMORY_MODELS, PRECISION_BYTES, PRECISIONS

ROOT = Path(__file__).resolve().parent.parent
# the same word meaning something else: a profile's training framework (its file key and
# JSON field) and a system file's framework-memory section
OTHER_MEANING = {("framework", "oracle/load/profile.py"), ("framework", "oracle/load/system.py"),
                 ("framework", "oracle/render/profile_file.py"), ("framework", "oracle/render/show.py")}  # fmt: skip


def _places(words: set[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {w: [] for w in words}
    for path in sorted((ROOT / "oracle").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in words and (node.value, rel) not in OTHER_MEANING:
                found[node.value].append(f"{rel}:{node.lineno}")
    return found


def test_precisions_and_memory_models_are_written_once_in_the_vocabulary():
    found = _places({*PRECISIONS, *MEMORY_MODELS})
    assert {w: p for w, p in found.items() if len(p) != 1} == {}
    assert all(p[0].startswith("oracle/vocabulary.py:") for p in found.values())


def test_strategy_names_are_written_once_in_their_modules():
    found = _places(set(names()))
    assert {w: p for w, p in found.items() if len(p) != 1} == {}
    for name, (place,) in found.items():
        module = type(REGISTRY[name]).__module__.replace(".", "/") + ".py"
        assert place.startswith(module + ":"), (name, place)


def test_the_cli_offers_what_the_vocabulary_holds(run):
    help_text = " ".join(run("predict", "--help").out.split())
    assert f"[{'|'.join(PRECISIONS)}]" in help_text
    assert f"[{'|'.join(MEMORY_MODELS)}]" in help_text
    assert f"[{'|'.join(ALGORITHMS)}]" in help_text
    assert "Bytes per item δ (fp32/tf32 4, fp16/bf16 2)" in help_text
    assert PRECISION_BYTES == {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2}  # δ: ParaDL Table 2
