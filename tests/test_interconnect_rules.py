"""A system file's interconnect agrees with the rest of it (load/interconnect.py): the network
level carried over NVLink ends at interconnect.nvlink_domain_gpus, and nvswitch_generation is
one oracle knows. Each contradiction is one error naming the file and key, exit 2."""

from __future__ import annotations

import pytest
from conftest import ROOT, run_cli
from test_robustness import one_error

from oracle.load import load_system
from oracle.vocabulary import NVSWITCH_GENERATIONS

GB200 = ROOT / "systems" / "gb200-nvl72.yaml"
DGX = ROOT / "systems" / "dgx-h100-superpod.yaml"


def _edited(tmp_path, base, old: str, new: str):
    text = base.read_text()
    assert text.count(old) == 1, old
    path = tmp_path / base.name
    path.write_text(text.replace(old, new))
    return path


@pytest.mark.parametrize(
    ("base", "old", "new", "domain"),
    [
        (GB200, "max_gpus: 72 ", "max_gpus: 4 ", 72),  # the NVLink level a tray, the domain a rack
        (GB200, "max_gpus: 72 ", "max_gpus: 144 ", 72),  # the NVLink level beyond the rack
        (GB200, "nvlink_domain_gpus: 72", "nvlink_domain_gpus: 36", 36),  # half a rack
        (DGX, "max_gpus: 8 ", "max_gpus: 4 ", 8),  # a level of half the host, the next beyond it
    ],
)  # fmt: skip
def test_a_domain_without_its_level_is_one_error(tmp_path, base, old, new, domain):
    path = _edited(tmp_path, base, old, new)
    one_error(run_cli("show", "system", str(path)), str(path), "interconnect.nvlink_domain_gpus",
              f"got {domain}", f"max_gpus: {domain}")  # fmt: skip


def test_the_level_is_named_that_would_carry_the_domain(tmp_path):
    """Under 72 GPUs of NVLink with an NVLink level of 4, a rack's collectives would run on
    the InfiniBand level: the error says so."""
    path = _edited(tmp_path, GB200, "max_gpus: 72 ", "max_gpus: 4 ")
    line = one_error(run_cli("show", "system", str(path)))
    assert "nvlink 4, ib 10368" in line and "run on level ib" in line


def test_levels_inside_the_domain_are_allowed(tmp_path):
    """A level ending inside the domain (a tray of 4) is a finer fit, not a contradiction, as long
    as one ends at the domain's 72."""
    text = GB200.read_text().replace(
        "  - name: nvlink\n", "  - {name: tray, max_gpus: 4, alpha_s: 8.0e-6, bandwidth_GB_per_s: 889}\n"
                             "  - name: nvlink\n", 1)  # fmt: skip
    path = tmp_path / "tray.yaml"
    path.write_text(text)
    assert [lv.max_gpus for lv in load_system(path).network] == [4, 72, 10368]


@pytest.mark.parametrize("generation", [5, 9, -1])
def test_an_unknown_nvswitch_generation_is_one_error_listing_the_known(tmp_path, generation):
    path = _edited(tmp_path, GB200, "nvswitch_generation: 4", f"nvswitch_generation: {generation}")
    line = one_error(run_cli("show", "system", str(path)), str(path), "interconnect.nvswitch_generation",
                     f"got {generation}")  # fmt: skip
    for known in NVSWITCH_GENERATIONS:
        assert f"{known} (" in line


def test_every_known_generation_loads(tmp_path):
    # generations below 3 have no NVLS
    for generation in NVSWITCH_GENERATIONS:
        nvls = "true" if generation >= 3 else "false"
        path = _edited(tmp_path, GB200, "nvswitch_generation: 4 ", f"nvswitch_generation: {generation} ")
        path.write_text(path.read_text().replace("nvls: true ", f"nvls: {nvls} "))
        assert load_system(path).interconnect.nvswitch_generation == generation


def test_every_shipped_system_loads():
    for path in sorted((ROOT / "systems").glob("*.yaml")):
        s = load_system(path)
        domain = s.interconnect.nvlink_domain_gpus
        assert domain is None or domain in [lv.max_gpus for lv in s.network], path


def _all_gather_log(path, nodes_text: str) -> None:
    """An nccl-tests all_gather_perf table (bus factor (p-1)/p): the ring fit's path."""
    rows = [f"  {m:>10} {m // 4:>12}     float    none      -1  {t:8.1f} {m / t / 1e3:7.2f} {m / t / 1e3:7.2f}      0"
            f"  {t:8.1f} {m / t / 1e3:7.2f} {m / t / 1e3:7.2f}      0"
            for m, t in ((2**k, 10.0 + 2**k / 2e5) for k in range(20, 31))]  # fmt: skip
    head = ["# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20",
            "#", "#  out-of-place in-place",
            "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
            "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)"]  # fmt: skip
    (path / f"all_gather_{nodes_text}.txt").write_text("\n".join(head + rows) + "\n")


def test_a_ring_fit_without_a_level_at_the_domain_writes_nothing(tmp_path):
    """oracle fit network's ring fit replaces the base's levels by one per span: logs across
    nodes alone leave no level at the base's 8-GPU NVLink domain, which is one error naming
    the option, and nothing written; a log on one node gives it."""
    _all_gather_log(tmp_path, "2nodes")
    out = tmp_path / "fitted.yaml"
    r = run_cli("fit", "network", "-s", "dgx-h100-superpod", "-o", str(out), str(tmp_path / "all_gather_2nodes.txt"))
    one_error(r, "--output", "8-GPU NVLink domain", "n16")
    assert not out.exists()
    _all_gather_log(tmp_path, "intra")
    r = run_cli("fit", "network", "-s", "dgx-h100-superpod", "-o", str(out),
                str(tmp_path / "all_gather_2nodes.txt"), str(tmp_path / "all_gather_intra.txt"))  # fmt: skip
    assert r.code == 0, r.err
    assert [lv.max_gpus for lv in load_system(out).network] == [8, 4608]
