"""The fast indented JSON writer (issue 29) writes exactly what json.dumps(indent=2) writes."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oracle.compute.binding import bind_profile
from oracle.compute.context import Options
from oracle.compute.sweep import sweep
from oracle.load import load_model, load_profile, load_system
from oracle.render.jsontext import IndentedWriter
from oracle.render.records import plain_value, point_to_dict, to_json


def _slow(v: object) -> str:
    return json.dumps(v, indent=2, allow_nan=False)


def _expanded(v: object) -> object:
    """What the writer is promised to write: every tuple as plain_value makes it."""
    if isinstance(v, tuple):
        return plain_value(v)
    if isinstance(v, list):
        return [_expanded(x) for x in v]
    if isinstance(v, dict):
        return {k: _expanded(x) for k, x in v.items()}
    return v


@pytest.mark.parametrize("model", ["resnet152", "alexnet"])
def test_points_as_json_dumps_writes_them(tmp_path, model):
    """Every strategy (pipeline stages of layer names in details, grids, memory parts)."""
    prof = tmp_path / "p.yaml"
    m, s = load_model(model), load_system("abci")
    prof.write_text(f"model: {m.name}\nsource: test\ntotal: {{fw_bw_per_sample_s: 0.01}}\n")
    pts = sweep(m, s, bind_profile(m, load_profile(str(prof))), [1, 2, 3, 8, 64, 100, 4096], "all",
                batch_per_gpu=32, options=Options())  # fmt: skip
    assert any(dict(p.details).get("stages") for p in pts)
    assert to_json(pts) == _slow([point_to_dict(p) for p in pts]) + "\n"
    assert to_json([]) == "[]\n"


_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
_scalars |= st.text()  # non-ASCII, quotes, brackets, commas, newlines inside names
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    | st.lists(inner, max_size=4).map(tuple),
    max_leaves=30,
)


@given(_values)
def test_any_json_value_as_json_dumps_writes_it(v):
    assert IndentedWriter(expand=plain_value).write(v) == _slow(_expanded(v))


@pytest.mark.parametrize(
    "v",
    [
        (("é☃", "a],\n  [b"), ("x", "y")),  # rows: the encoded newline is "\\n", never a separator
        (("a",), ()),  # an empty row: not written as rows
        ((1.0, float("nan")), (True, 1)),  # non-finite in a tuple: None, as plain_value makes it
        {"a": (float("inf"), -0.0), 1: "int key", None: [], 2.5: {}},  # json's key conversions
        [[1, 2], [3, [4, {"k": ()}]]],
    ],
)
def test_edges_as_json_dumps_writes_them(v):
    assert IndentedWriter(expand=plain_value).write(v) == _slow(_expanded(v))


def test_non_finite_outside_a_tuple_is_refused_as_json_refuses_it():
    with pytest.raises(ValueError):
        IndentedWriter(expand=plain_value).write({"a": [1.0, math.inf]})
    with pytest.raises(ValueError):
        _slow({"a": [1.0, math.inf]})
