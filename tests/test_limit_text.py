"""A limit that compares two values says two different numbers (QA: "needs 200 GB of
200 GB GPU memory" for 199.707 GB against 199.7 GB): where both would round to the same
text, both get the digits that tell them apart (units.fmt_gb_apart, fmt_g_apart)."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest

from oracle.compute.strategies.base import memory_limit, memory_reasons
from oracle.units import fmt_g_apart, fmt_gb, fmt_gb_apart


@pytest.mark.parametrize("need, have, texts", [
    (199.707e9, 199.7e9, ("199.71 GB", "199.70 GB")),  # the QA case: "200 GB" twice before
    (16.04e9, 16.0e9, ("16.04 GB", "16.00 GB")),  # "16.0 GB" twice
    (1.3301e12, 1.33e12, ("1.3301 TB", "1.3300 TB")),  # "1.33 TB" twice
    (16e9 + 1, 16e9, ("16.000000001 GB", "16.000000000 GB")),  # one byte over
    (85.6e9, 16e9, ("85.6 GB", "16.0 GB")),  # apart already: as fmt_gb
    (16e9, 16e9, ("16.0 GB", "16.0 GB")),  # equal values read equal
])  # fmt: skip
def test_sizes_that_differ_read_differently(need, have, texts):
    assert fmt_gb_apart(need, have) == texts


def test_counts_that_differ_read_differently():
    assert fmt_g_apart(1_281_168, 1_281_167) == ("1281168", "1281167")  # :g gave 1.28117e+06 twice
    assert fmt_g_apart(2048, 1000) == ("2048", "1000")


def test_memory_limit_of_a_need_just_above_the_gpu():
    gpu = SimpleNamespace(gpu_memory_bytes=199.7e9)
    assert memory_limit(gpu, 199.707e9).reason == "needs 199.71 GB of 199.70 GB GPU memory"
    assert memory_reasons(gpu, [250e9, 199.707e9]) == [
        "needs 250 GB of 200 GB GPU memory", "needs 199.71 GB of 199.70 GB GPU memory"]


def test_predict_says_a_need_just_above_the_gpu_in_digits_that_differ(run, tiny):
    """End to end: a GPU 1 MB smaller than a point needs."""
    args = ("predict", "-m", tiny.model, "-p", tiny.profile, "--gpus", "2", "--strategy", "data", "-b", "16")
    r = run(*args, "-s", tiny.system, "-f", "json")
    assert r.code == 0, r.err
    need = json.loads(r.out)[0]["memory_bytes"]
    have = need - 1e6
    assert fmt_gb(need) == fmt_gb(have)  # the case: both round to the same text
    small = tiny.dir / "small.yaml"
    small.write_text(tiny.system.read_text().replace("memory_GB: 16", f"memory_GB: {have / 1e9!r}"))
    r = run(*args, "-s", small, "-f", "json")
    assert r.code == 0, r.err
    (reason,) = json.loads(r.out)[0]["limits"]
    got = re.fullmatch(r"needs (\S+) GB of (\S+) GB GPU memory", reason)
    assert got and got[1] != got[2], reason
    assert float(got[1]) == pytest.approx(need / 1e9, abs=0.006) and float(got[2]) == pytest.approx(have / 1e9, abs=0.006)
