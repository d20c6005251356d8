"""The cost model of every strategy (SPEC §2, §4), checked against hand arithmetic.

Small models, a per-layer profile with round numbers and a two-level network are built
in this file; every expected value is written out from the SPEC formulas with explicit
numbers (the ring collectives of SPEC §4.1 are re-typed below as ``ar``/``ag``, they are
not the implementation's helpers).  Comments show the arithmetic.

Documented choices of the implementation that the tests pin (see the brief in the
module docstrings of oracle/compute): listing of strategies with 'all', hybrids without
--p2 list p1, p2 >= 2 only, halos only for layers with halo > 0 and with the α/β of the
slowest neighbour pair, the pipeline's y_Gi counts every tensor crossing the cut, the
channel split excludes layers reading the model input, the spatial all-gather goes to
``layer_collectives_s``, balanced spatial grids, and the derivation of φ.

System used throughout ("Two"): 4 GPUs per node, 16 nodes (64 GPUs), 2 links per node,
    level A: max_gpus  4, α = 1e-5 s, β = 1e-10 s/B   (inside a node)
    level B: max_gpus 64, α = 1e-4 s, β = 1e-9  s/B   (between nodes)
δ = 4 bytes (fp32) unless said otherwise.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import pytest

from oracle.compute.context import Context
from oracle.compute.context import Options as _Options


def Options(**kw):  # noqa: N802 - these tests pin ParaDL's Table 3 (SPEC §4.6 ParaDL mode)
    kw.setdefault("memory_model", "paradl")
    kw.setdefault("compute_scaling", "linear")
    return _Options(**kw)
from oracle.compute.binding import bind_profile
from oracle.compute.strategies.spatial import halo_elements
from oracle.compute.sweep import sweep
from oracle.load.model import load_model
from oracle.load.profile import load_profile
from oracle.load.system import load_system

REL = 1e-12

# network levels of the system "Two"
AA, BA = 1.0e-5, 1.0e-10  # level A (span <= 4)
AB, BB = 1.0e-4, 1.0e-9  # level B (span <= 64)


def ar(p: int, m: float, alpha: float, beta: float) -> float:
    """SPEC §4.1 ring all-reduce of m bytes: 2(p-1)(α + (m/p)β); 0 on one PE."""
    return 0.0 if p == 1 else 2 * (p - 1) * (alpha + m / p * beta)


def ag(p: int, m_each: float, alpha: float, beta: float) -> float:
    """SPEC §4.1 ring all-gather, m_i bytes per PE: (p-1)(α + m_i β); 0 on one PE."""
    return 0.0 if p == 1 else (p - 1) * (alpha + m_each * beta)


# --------------------------------------------------------------------------------------
# Input files
# --------------------------------------------------------------------------------------

SYSTEM_TWO = """\
name: Two
gpu: {model: G, memory_GB: 16}
gpus_per_node: 4
nodes: 16
links_per_node: 2
network:
  - {name: A, max_gpus: 4,  alpha_s: 1.0e-5, beta_s_per_byte: 1.0e-10}
  - {name: B, max_gpus: 64, alpha_s: 1.0e-4, beta_s_per_byte: 1.0e-9}
"""
# the same with a fixed contention factor, and without links_per_node
SYSTEM_PHI = SYSTEM_TWO.replace("links_per_node: 2", "links_per_node: 2\ncontention_factor: 1.5")
SYSTEM_NOLINKS = SYSTEM_TWO.replace("links_per_node: 2\n", "")

# Net2D: 2-D CNN, D = 1000.  Hand-derived shapes (per sample):
#  #  layer  type                      input      output     |x|   |y|   |w|
#  0  conv1  conv f4 k3 p1 (+bias)     [2,16,16]  [4,16,16]   512  1024  4*2*9+4  = 76
#  1  bn1    batchnorm                 [4,16,16]  [4,16,16]  1024  1024  2*4      = 8
#  2  relu1  relu                                            1024  1024  0
#  3  conv2  conv f8 k3 s2 p1 (+bias)  [4,16,16]  [8,8,8]    1024   512  8*4*9+8  = 296
#  4  pool1  maxpool k2 (s2)           [8,8,8]    [8,4,4]     512   128  0
#  5  conv3  conv f6 k1 (+bias), 1x1   [8,4,4]    [6,4,4]     128    96  6*8+6    = 54
#  6  flat   flatten                   [6,4,4]    [96]         96    96  0
#  7  fc     fc 5 (+bias)              [96]       [5]          96     5  96*5+5   = 485
# Σw = 919; x+y: 1536, 2048, 2048, 1536, 640, 224, 192, 101 -> Σ(x+y) = 8325
# times (fw, bw, wu) in s:      fw+bw
#  conv1 1e-3  2e-3  1e-4       3e-3
#  bn1   2e-4  2e-4  5e-5       4e-4
#  relu1 1e-4  1e-4  0          2e-4
#  conv2 2e-3  4e-3  2e-4       6e-3
#  pool1 1e-4  1e-4  0          2e-4
#  conv3 5e-4  5e-4  1e-4       1e-3
#  flat  0     0     0          0
#  fc    3e-4  6e-4  3e-4       9e-4
# ΣFW+BW = 0.0117, ΣWU = 7.5e-4
NET2D_MODEL = """\
name: Net2D
input: [2, 16, 16]
dataset: {name: toy, samples: 1000}
layers:
  - {name: conv1, type: conv, filters: 4, kernel: 3, padding: 1}
  - {name: bn1, type: batchnorm}
  - {name: relu1, type: relu}
  - {name: conv2, type: conv, filters: 8, kernel: 3, stride: 2, padding: 1}
  - {name: pool1, type: maxpool, kernel: 2}
  - {name: conv3, type: conv, filters: 6, kernel: 1}
  - {name: flat, type: flatten}
  - {name: fc, type: fc, outputs: 5}
"""
NET2D_PROFILE = """\
model: Net2D
device: G
layers:
  conv1: {fw_s: 1.0e-3, bw_s: 2.0e-3, wu_s: 1.0e-4}
  bn1:   {fw_s: 2.0e-4, bw_s: 2.0e-4, wu_s: 5.0e-5}
  relu1: {fw_s: 1.0e-4, bw_s: 1.0e-4}
  conv2: {fw_s: 2.0e-3, bw_s: 4.0e-3, wu_s: 2.0e-4}
  pool1: {fw_s: 1.0e-4, bw_s: 1.0e-4}
  conv3: {fw_s: 5.0e-4, bw_s: 5.0e-4, wu_s: 1.0e-4}
  flat:  {fw_s: 0, bw_s: 0}
  fc:    {fw_s: 3.0e-4, bw_s: 6.0e-4, wu_s: 3.0e-4}
"""

# Net3D: 3-D CNN, D = 512.
#  #  layer  type                 input        output       |x|  |y|  |w|
#  0  conv1  conv f2 k3 p1        [1,4,4,4]    [2,4,4,4]     64  128  2*1*27+2 = 56
#  1  pool1  maxpool k2           [2,4,4,4]    [2,2,2,2]    128   16  0
#  2  flat   flatten              [2,2,2,2]    [16]          16   16  0
#  3  fc     fc 3                 [16]         [3]           16    3  16*3+3 = 51
# times: conv1 (2e-3, 4e-3, wu 1e-4), pool1 (1e-4, 1e-4), flat 0, fc (1e-4, 2e-4, wu 1e-4)
NET3D_MODEL = """\
name: Net3D
input: [1, 4, 4, 4]
dataset: {name: toy3d, samples: 512}
layers:
  - {name: conv1, type: conv, filters: 2, kernel: 3, padding: 1}
  - {name: pool1, type: maxpool, kernel: 2}
  - {name: flat, type: flatten}
  - {name: fc, type: fc, outputs: 3}
"""
NET3D_PROFILE = """\
model: Net3D
layers:
  conv1: {fw_s: 2.0e-3, bw_s: 4.0e-3, wu_s: 1.0e-4}
  pool1: {fw_s: 1.0e-4, bw_s: 1.0e-4}
  flat:  {fw_s: 0, bw_s: 0}
  fc:    {fw_s: 1.0e-4, bw_s: 2.0e-4, wu_s: 1.0e-4}
"""

# Chain: a line graph for the pipeline, D = 1200.
#  #  layer  type     x  y  w          fw    bw    (ms)  fw+bw  wu (ms)
#  0  flat   flatten  8  8  0          1     2            3      0
#  1  fc1    fc 6     8  6  8*6+6=54   1     1            2      0.1
#  2  fc2    fc 4     6  4  6*4+4=28   2     4            6      0.2
#  3  relu   relu     4  4  0          1     1            2      0
#  4  fc3    fc 3     4  3  4*3+3=15   3.5   0.5          4      0.4
CHAIN_MODEL = """\
name: Chain
input: [1, 8]
dataset: {samples: 1200}
layers:
  - {name: flat, type: flatten}
  - {name: fc1, type: fc, outputs: 6}
  - {name: fc2, type: fc, outputs: 4}
  - {name: relu, type: relu}
  - {name: fc3, type: fc, outputs: 3}
"""
CHAIN_PROFILE = """\
model: Chain
layers:
  flat: {fw_s: 1.0e-3, bw_s: 2.0e-3}
  fc1:  {fw_s: 1.0e-3, bw_s: 1.0e-3, wu_s: 1.0e-4}
  fc2:  {fw_s: 2.0e-3, bw_s: 4.0e-3, wu_s: 2.0e-4}
  relu: {fw_s: 1.0e-3, bw_s: 1.0e-3}
  fc3:  {fw_s: 3.5e-3, bw_s: 0.5e-3, wu_s: 4.0e-4}
"""

# Skip: a DAG with a skip connection, D = 1000.
#  #  layer  type                    y    fw+bw (ms, fw = bw)
#  0  flat   flatten [1,4] -> [4]    4    1
#  1  fc1    fc 6                    6    5
#  2  fc2    fc 4                    4    1
#  3  add    add(flat, fc2)          4    1
#  4  fc3    fc 2                    2    3
SKIP_MODEL = """\
name: Skip
input: [1, 4]
dataset: {samples: 1000}
layers:
  - {name: flat, type: flatten}
  - {name: fc1, type: fc, outputs: 6}
  - {name: fc2, type: fc, outputs: 4}
  - {name: add, type: add, inputs: [flat, fc2]}
  - {name: fc3, type: fc, outputs: 2}
"""
SKIP_PROFILE = """\
model: Skip
layers:
  flat: {fw_s: 0.5e-3, bw_s: 0.5e-3}
  fc1:  {fw_s: 2.5e-3, bw_s: 2.5e-3}
  fc2:  {fw_s: 0.5e-3, bw_s: 0.5e-3}
  add:  {fw_s: 0.5e-3, bw_s: 0.5e-3}
  fc3:  {fw_s: 1.5e-3, bw_s: 1.5e-3}
"""

MODELS = {
    "net2d": (NET2D_MODEL, NET2D_PROFILE),
    "net3d": (NET3D_MODEL, NET3D_PROFILE),
    "chain": (CHAIN_MODEL, CHAIN_PROFILE),
    "skip": (SKIP_MODEL, SKIP_PROFILE),
}
SYSTEMS = {"two": SYSTEM_TWO, "phi": SYSTEM_PHI, "nolinks": SYSTEM_NOLINKS}


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict:
    root: Path = tmp_path_factory.mktemp("strategies")
    out: dict = {}
    for key, (model_text, profile_text) in MODELS.items():
        mp = root / f"{key}.yaml"
        pp = root / f"{key}_profile.yaml"
        mp.write_text(textwrap.dedent(model_text), encoding="utf-8")
        pp.write_text(textwrap.dedent(profile_text), encoding="utf-8")
        model = load_model(mp)
        out[key] = (model, bind_profile(model, load_profile(pp)))
    for key, text in SYSTEMS.items():
        sp = root / f"system_{key}.yaml"
        sp.write_text(text, encoding="utf-8")
        out["system_" + key] = load_system(sp)
    return out


@pytest.fixture(scope="module")
def run(files):
    """run(model, gpus, strategies, system='two', **sweep kwargs) -> list of points."""

    def _run(model: str, gpus, strategies, system: str = "two", **kw):
        m, times = files[model]
        kw.setdefault("options", Options())
        return sweep(m, files["system_" + system], times, gpus, strategies, **kw)

    return _run


@pytest.fixture(scope="module")
def one(run):
    """The single point of one strategy at one GPU count (p1/p2 to pick a hybrid)."""

    def _one(model: str, p: int, strategy: str, *, p1=None, p2=None, system="two", **kw):
        pts = [pt for pt in run(model, [p], [strategy], system=system, p2=p2, **kw)]
        if p1 is not None:
            pts = [pt for pt in pts if pt.p1 == p1]
        assert len(pts) == 1, pts
        return pts[0]

    return _one


def check(pt, *, fb, wu, ge=0.0, lc=0.0, halo=0.0, p2p=0.0, mem):
    """Every phase, the sums and the memory of a point, to rel 1e-12."""
    bd = pt.breakdown
    assert bd.forward_backward_s == pytest.approx(fb, rel=REL)
    assert bd.weight_update_s == pytest.approx(wu, rel=REL)
    assert bd.gradient_exchange_s == pytest.approx(ge, rel=REL)
    assert bd.layer_collectives_s == pytest.approx(lc, rel=REL)
    assert bd.halo_s == pytest.approx(halo, rel=REL)
    assert bd.pipeline_p2p_s == pytest.approx(p2p, rel=REL)
    assert pt.compute_s == pytest.approx(fb + wu, rel=REL)
    assert pt.communication_s == pytest.approx(ge + lc + halo + p2p, rel=REL)
    assert pt.total_s == pytest.approx(fb + wu + ge + lc + halo + p2p, rel=REL)
    assert pt.memory_bytes == pytest.approx(mem, rel=REL)


def reasons(pt) -> list[str]:
    return [lim.reason for lim in pt.limits]


# --------------------------------------------------------------------------------------
# The hand-derived model numbers themselves (guards for everything below)
# --------------------------------------------------------------------------------------


def test_hand_shapes_of_the_test_models(files):
    m, _ = files["net2d"]
    assert [i.input_elements for i in m.info] == [512, 1024, 1024, 1024, 512, 128, 96, 96]
    assert [i.output_elements for i in m.info] == [1024, 1024, 1024, 512, 128, 96, 96, 5]
    assert [i.parameters for i in m.info] == [76, 8, 0, 296, 0, 54, 0, 485]
    m3, _ = files["net3d"]
    assert [i.output_shape for i in m3.info] == [(2, 4, 4, 4), (2, 2, 2, 2), (16,), (3,)]
    assert [i.parameters for i in m3.info] == [56, 0, 0, 51]
    mc, _ = files["chain"]
    assert [i.parameters for i in mc.info] == [0, 54, 28, 0, 15]
    assert [i.output_elements for i in mc.info] == [8, 6, 4, 4, 3]


# --------------------------------------------------------------------------------------
# serial
# --------------------------------------------------------------------------------------


def test_serial(one):
    pt = one("net2d", 1, "serial", batch=8)
    I = 1000 / 8  # 125 iterations
    check(
        pt,
        fb=1000 * 0.0117,  # D ΣFW+BW = 11.7 s
        wu=I * 7.5e-4,  # I ΣWU = 0.09375 s
        mem=4 * (2 * 8 * 8325 + 2 * 919),  # δ(Σ 2B(x+y) + 2w) = 4 * 135038 = 540152 B
    )
    assert (pt.p1, pt.p2) == (1, 1)
    assert pt.feasible and pt.rank == 1
    assert pt.iterations_per_epoch == 125.0
    assert pt.iteration_s == pytest.approx((11.7 + 0.09375) / 125, rel=REL)


def test_serial_listed_explicitly_above_one_gpu_is_infeasible(run):
    pts = run("net2d", [2], "serial", batch=8)
    assert len(pts) == 1 and pts[0].strategy == "serial"
    assert reasons(pts[0]) == ["serial runs on one GPU, not 2"]
    assert pts[0].rank is None


# --------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------


def test_data_inside_one_node_uses_level_a(one):
    # p = 4 on GPUs 0..3: one node, span 4 -> level A
    pt = one("net2d", 4, "data", batch=32)
    I = 1000 / 32  # 31.25
    # AR(4, δΣw = 4*919 = 3676 B) = 2*3*(1e-5 + 919*1e-10)
    check(
        pt,
        fb=1000 / 4 * 0.0117,  # 2.925
        wu=I * 7.5e-4,
        ge=I * 6 * (1e-5 + 919e-10),
        mem=4 * (2 * 32 / 4 * 8325 + 2 * 919),
    )
    assert (pt.p1, pt.p2) == (4, 1)
    assert pt.detail("allreduce_level") == "A"


@pytest.mark.parametrize(
    "p, alpha, beta, level",
    [
        (2, AA, BA, "A"),  # span 2
        (4, AA, BA, "A"),  # span 4 = gpus_per_node
        (5, AB, BB, "B"),  # GPUs 0..4 touch 2 nodes: span 2*4 = 8
        (8, AB, BB, "B"),  # span 8
        (64, AB, BB, "B"),  # span 64 = max_gpus of B
    ],
)
def test_data_level_switch(one, p, alpha, beta, level):
    B = 8.0 * p  # weak scaling b = 8
    pt = one("net2d", p, "data", batch_per_gpu=8)
    I = 1000 / B
    check(
        pt,
        fb=1000 / p * 0.0117,
        wu=I * 7.5e-4,
        ge=I * 2 * (p - 1) * (alpha + 3676 / p * beta),
        mem=4 * (2 * 8 * 8325 + 2 * 919),  # 2B/p = 16 for every p
    )
    assert pt.detail("allreduce_level") == level
    assert pt.global_batch == B


def test_data_p8_numbers(one):
    # p = 8, B = 64, I = 15.625; level B: AR(8, 3676) = 14*(1e-4 + 459.5e-9)
    pt = one("net2d", 8, "data", batch=64)
    ge = 15.625 * 14 * (1e-4 + 459.5e-9)
    assert pt.breakdown.gradient_exchange_s == pytest.approx(ge, rel=REL)
    assert pt.breakdown.gradient_exchange_s == pytest.approx(0.021975515625, rel=REL)


def test_data_more_gpus_than_batch(one):
    pt = one("net2d", 16, "data", batch=8)
    assert reasons(pt) == ["fewer than one sample per GPU: B=8 over 16"]
    assert pt.limits[0].code == "batch"
    assert pt.rank is None
    # the numbers are still projected
    assert pt.breakdown.forward_backward_s == pytest.approx(1000 / 16 * 0.0117, rel=REL)


def test_data_p_equal_b_is_feasible(one):
    assert one("net2d", 8, "data", batch=8).feasible


# --------------------------------------------------------------------------------------
# spatial
# --------------------------------------------------------------------------------------
# Split set of Net2D: conv1..conv3 (conv3's output 4x4 is the last spatial one);
# replicated: flat, fc.  Σs FW+BW = 3e-3+4e-4+2e-4+6e-3+2e-4+1e-3 = 0.0108, Σr = 9e-4.
# Σs w = 76+8+296+54 = 434 (δ -> 1736 B), Σs (x+y) = 8032, Σr (x+y) = 293, y_last = 96.
#
# Halos (SPEC §4: 2·floor(K/2)·(product of the other dims' local extents)·C, and the
# same on the outputs with F), layers with halo: conv1 (k3), conv2 (k3, stride 2),
# pool1 (k2 -> floor(2/2) = 1).  conv3 is 1x1: floor(1/2) = 0, no halo, no 2α.
#
# grid 2x1 (only H split, "1-way split"):
#   conv1 x: 16x16 -> local 8x16, C=2:  2*1*16*2 = 64    dy: 16x16, F=4: 2*16*4 = 128
#   conv2 x: 16x16 -> local 8x16, C=4:  2*16*4   = 128   dy: 8x8 -> 4x8, F=8: 2*8*8 = 128
#   pool1 x: 8x8   -> local 4x8,  C=8:  2*8*8    = 128   dy: 4x4 -> 2x4, F=8: 2*4*8 = 64
#   Σ = 192 + 256 + 192 = 640
# grid 2x2 ("2-way split"), every dimension: 2*1*(other local extent)*C, twice:
#   conv1 x: local 8x8: 2*(2*8*2) = 64       dy: local 8x8: 2*(2*8*4) = 128
#   conv2 x: local 8x8: 2*(2*8*4) = 128      dy: 8x8 -> 4x4: 2*(2*4*8) = 128
#   pool1 x: 8x8 -> 4x4: 2*(2*4*8) = 128     dy: 4x4 -> 2x2: 2*(2*2*8) = 64
#   Σ = 192 + 256 + 192 = 640
# grid 4x2 (p = 8):
#   conv1 x: local 4x8: dim0 2*8*2 = 32, dim1 2*4*2 = 16 -> 48
#         dy: local 4x8: 2*8*4 = 64, 2*4*4 = 32 -> 96                  conv1 = 144
#   conv2 x: local 4x8: 2*8*4 = 64, 2*4*4 = 32 -> 96
#         dy: 8x8 -> 2x4: 2*4*8 = 64, 2*2*8 = 32 -> 96                 conv2 = 192
#   pool1 x: 8x8 -> 2x4: 2*4*8 = 64, 2*2*8 = 32 -> 96
#         dy: 4x4 -> 1x2: 2*2*8 = 32, 2*1*8 = 16 -> 48                 pool1 = 144
#   Σ = 480

SPATIAL_2D_CASES = [
    # p, grid, Σ halo elements, (α, β) of halo, of the AR/AG over GPUs 0..p-1
    (2, (2, 1), 640, (AA, BA), (AA, BA)),  # neighbours on one node; span 2
    (4, (2, 2), 640, (AA, BA), (AA, BA)),  # span 4
    (8, (4, 2), 480, (AB, BB), (AB, BB)),  # some neighbour pair crosses nodes: span 8
]


@pytest.mark.parametrize("p, grid, halo_sum, halo_link, coll_link", SPATIAL_2D_CASES)
def test_spatial_2d(one, p, grid, halo_sum, halo_link, coll_link):
    B, I = 8, 1000 / 8  # I = 125
    pt = one("net2d", p, "spatial", batch=B)
    ha, hb = halo_link
    ca, cb = coll_link
    # halo per iteration: 2 Σ_{3 layers} (2α + B δ (halo x + halo dy) β)
    halo = 2 * (3 * 2 * ha + B * 4 * halo_sum * hb)
    check(
        pt,
        fb=1000 / p * 0.0108 + 1000 * 9e-4,  # (D/p) Σs + D Σr
        wu=I * 7.5e-4,  # I ΣWU
        ge=I * ar(p, 4 * 434, ca, cb),  # AR(p, δΣs w)
        lc=I * ag(p, 4 * B * 96 / p, ca, cb),  # AG(p, δ B y_last / p)
        halo=I * halo,
        mem=4 * (2 * B / p * 8032 + 2 * B * 293 + 2 * 919),
    )
    assert pt.detail("grid") == grid
    assert (pt.p1, pt.p2) == (1, p)
    assert pt.feasible


# per layer (conv1, conv2, pool1, conv3): (halo(x), halo(dy)) in elements of one sample
HALO_2D = {
    (2, 1): [(64, 128), (128, 128), (128, 64), (0, 0)],
    (2, 2): [(64, 128), (128, 128), (128, 64), (0, 0)],
    (4, 2): [(48, 96), (96, 96), (96, 48), (0, 0)],
}


@pytest.mark.parametrize("grid", sorted(HALO_2D))
def test_spatial_halo_elements_per_layer(files, grid):
    # the per-layer halo sizes behind the sums above (conv3 is 1x1: no halo)
    model, times = files["net2d"]
    ctx = Context(model, files["system_two"], times, Options())
    hx, hdy = halo_elements(ctx, grid)
    assert [(float(a), float(b)) for a, b in zip(hx, hdy)] == HALO_2D[grid]


def test_spatial_2d_p4_explicit_numbers(one):
    # p = 4, B = 8, I = 125, all on level A:
    # AR(4, 1736) = 6*(1e-5 + 434e-10)            = 6.02604e-5
    # AG(4, 4*8*96/4 = 768) = 3*(1e-5 + 768e-10)  = 3.02304e-5
    # halo = 2*(6*1e-5 + 8*4*640*1e-10) = 2*(6e-5 + 2.048e-6) = 1.24096e-4
    pt = one("net2d", 4, "spatial", batch=8)
    assert pt.breakdown.gradient_exchange_s == pytest.approx(125 * 6.02604e-5, rel=REL)
    assert pt.breakdown.layer_collectives_s == pytest.approx(125 * 3.02304e-5, rel=REL)
    assert pt.breakdown.halo_s == pytest.approx(125 * 1.24096e-4, rel=REL)
    assert pt.breakdown.forward_backward_s == pytest.approx(2.7 + 0.9, rel=REL)
    # memory: 4*(4*8032 + 16*293 + 1838) = 4*(32128 + 4688 + 1838) = 154616
    assert pt.memory_bytes == pytest.approx(154616, rel=REL)


@pytest.mark.parametrize("p, grid", [(8, (4, 2)), (12, (4, 3)), (16, (4, 4)), (2, (2, 1))])
def test_spatial_grid_2d(one, p, grid):
    assert one("net2d", p, "spatial", batch=64).detail("grid") == grid


def test_spatial_factor_larger_than_an_output_extent(one):
    # p = 32 -> grid 8x4; pool1's output is 4x4 < 8 (conv1 16x16, conv2 8x8 are fine)
    pt = one("net2d", 32, "spatial", batch=64)
    assert pt.detail("grid") == (8, 4)
    assert reasons(pt) == ["spatial split 8x4 exceeds the 4x4 output of pool1"]
    assert pt.limits[0].code == "spatial"


# Net3D: split conv1, pool1 (pool1 output 2x2x2 > 1); replicated flat, fc.
# Σs FW+BW = 6e-3 + 2e-4 = 6.2e-3, Σr = 3e-4, ΣWU = 2e-4; Σs w = 56 (224 B), Σw = 107;
# Σs (x+y) = 192 + 144 = 336, Σr (x+y) = 32 + 19 = 51, y_last = 16.
# grid 2x1x1:  conv1 x: 4^3 -> 2x4x4, C=1: 2*16*1 = 32;  dy F=2: 2*16*2 = 64  -> 96
#              pool1 x: 4^3 -> 2x4x4, C=2: 2*16*2 = 64;  dy 2^3 -> 1x2x2: 2*4*2 = 16 -> 80
#              Σ = 176                                     ("1-way split")
# grid 2x2x1:  conv1 x: local 2x2x4: 2*(2*8*1) = 32; dy: 2*(2*8*2) = 64 -> 96
#              pool1 x: 2*(2*8*2) = 64; dy local 1x1x2: 2*(2*2*2) = 16 -> 80
#              Σ = 176                                     ("2-way split")
# grid 2x2x2:  conv1 x: local 2^3: 3*(2*4*1) = 24; dy: 3*(2*4*2) = 48 -> 72
#              pool1 x: 3*(2*4*2) = 48; dy local 1^3: 3*(2*1*2) = 12 -> 60
#              Σ = 132                                     ("3-way split")
SPATIAL_3D_CASES = [
    (2, (2, 1, 1), 176, (AA, BA)),
    (4, (2, 2, 1), 176, (AA, BA)),
    (8, (2, 2, 2), 132, (AB, BB)),
]


@pytest.mark.parametrize("p, grid, halo_sum, link", SPATIAL_3D_CASES)
def test_spatial_3d(one, p, grid, halo_sum, link):
    B, I = 4, 512 / 4  # I = 128
    a, b = link
    pt = one("net3d", p, "spatial", batch=B)
    check(
        pt,
        fb=512 / p * 6.2e-3 + 512 * 3e-4,
        wu=I * 2e-4,
        ge=I * ar(p, 4 * 56, a, b),
        lc=I * ag(p, 4 * B * 16 / p, a, b),
        halo=I * 2 * (2 * 2 * a + B * 4 * halo_sum * b),  # 2 layers with halo
        mem=4 * (2 * B / p * 336 + 2 * B * 51 + 2 * 107),
    )
    assert pt.detail("grid") == grid
    assert pt.feasible


HALO_3D = {  # (conv1, pool1): (halo(x), halo(dy))
    (2, 1, 1): [(32, 64), (64, 16)],
    (2, 2, 1): [(32, 64), (64, 16)],
    (2, 2, 2): [(24, 48), (48, 12)],
}


@pytest.mark.parametrize("grid", sorted(HALO_3D))
def test_spatial_halo_elements_per_layer_3d(files, grid):
    model, times = files["net3d"]
    ctx = Context(model, files["system_two"], times, Options())
    hx, hdy = halo_elements(ctx, grid)
    assert [(float(a), float(b)) for a, b in zip(hx, hdy)] == HALO_3D[grid]


def test_spatial_3d_limit(one):
    # p = 16 on 3-D -> 4x2x2; pool1's output 2x2x2 is smaller than 4
    pt = one("net3d", 16, "spatial", batch=16)
    assert pt.detail("grid") == (4, 2, 2)
    assert reasons(pt) == ["spatial split 4x2x2 exceeds the 2x2x2 output of pool1"]


# --------------------------------------------------------------------------------------
# filter and channel
# --------------------------------------------------------------------------------------
# Filter split of Net2D: conv1, conv2, conv3, fc.  Σs FW+BW = 3e-3+6e-3+1e-3+9e-4 =
# 0.0109, Σr = 4e-4+2e-4+2e-4+0 = 8e-4; Σs WU = 7e-4, Σr WU = 5e-5 (bn1);
# Σs w = 911, Σr w = 8; collectives after conv1 (y 1024), conv2 (512), conv3 (96);
# min filters: conv1 with 4.


def test_filter_p4(one):
    B, p, I = 8, 4, 125
    pt = one("net2d", p, "filter", batch=B)
    # per split layer but the last: AG(4, δBy/4) + AR(4, δBy) = 3*3*(α + δBy/4 β) on A
    lc = sum(ag(4, 4 * B * y / 4, AA, BA) + ar(4, 4 * B * y, AA, BA) for y in (1024, 512, 96))
    assert lc == pytest.approx(9 * (3 * 1e-5 + 8 * (1024 + 512 + 96) * 1e-10), rel=REL)
    check(
        pt,
        fb=1000 / 4 * 0.0109 + 1000 * 8e-4,  # 2.725 + 0.8
        wu=125 / 4 * 7e-4 + 125 * 5e-5,  # 0.021875 + 0.00625
        lc=I * lc,
        mem=4 * (2 * B * 8325 + 2 * 911 / 4 + 2 * 8),  # 4*(133200 + 455.5 + 16)
    )
    assert (pt.p1, pt.p2) == (1, 4)
    assert pt.feasible


def test_filter_more_gpus_than_filters(one):
    # p = 8 > 4 filters of conv1; its collectives span 2 nodes -> level B
    B, p, I = 8, 8, 125
    pt = one("net2d", p, "filter", batch=B)
    assert reasons(pt) == ["p=8 exceeds the 4 filters of conv1"]
    assert pt.limits[0].code == "filters"
    lc = sum(ag(8, 4 * B * y / 8, AB, BB) + ar(8, 4 * B * y, AB, BB) for y in (1024, 512, 96))
    assert pt.breakdown.layer_collectives_s == pytest.approx(I * lc, rel=REL)


# Channel split of Net2D: conv2, conv3, fc (conv1 reads the model input).
# Σs FW+BW = 6e-3+1e-3+9e-4 = 0.0079, Σr = 3e-3+4e-4+2e-4+2e-4 = 0.0038;
# Σs WU = 6e-4, Σr WU = 1.5e-4; Σs w = 835, Σr w = 84; collectives after conv2 (512),
# conv3 (96); input channels: conv2 4, conv3 8, fc 96 -> min 4 (conv2).


def test_channel_p4(one):
    B, p, I = 8, 4, 125
    pt = one("net2d", p, "channel", batch=B)
    lc = sum(ag(4, 4 * B * y / 4, AA, BA) + ar(4, 4 * B * y, AA, BA) for y in (512, 96))
    check(
        pt,
        fb=1000 / 4 * 0.0079 + 1000 * 0.0038,  # 1.975 + 3.8
        wu=125 / 4 * 6e-4 + 125 * 1.5e-4,  # 0.01875 + 0.01875
        lc=I * lc,
        mem=4 * (2 * B * 8325 + 2 * 835 / 4 + 2 * 84),  # 4*(133200 + 417.5 + 168)
    )
    assert pt.feasible


def test_channel_excludes_the_layer_reading_the_input(one):
    # conv1 has C = 2 input channels but is not split: p = 3 is fine (min C = 4, conv2)
    assert one("net2d", 3, "channel", batch=8).feasible


def test_channel_more_gpus_than_channels(one):
    pt = one("net2d", 8, "channel", batch=8)
    assert reasons(pt) == ["p=8 exceeds the 4 input channels of conv2"]
    assert pt.limits[0].code == "channels"


# Beyond ParaDL mode a run must also combine the partial sums of the LAST split layer's
# output (ParaDL's Σ_{l<G} leaves it out) and gather the input gradient of the FIRST split
# layer's slices for the replicated layers before it that have weights (conv1, bn1 here):
# docs/cost-model.md "Channel parallelism at the ends".


def test_channel_beyond_paradl_mode_combines_the_last_output_and_gathers_the_first_input_gradient(one):
    B, p, I = 8, 4, 125
    pt = one("net2d", p, "channel", batch=B, options=Options(compute_scaling="model"))
    pairs = sum(ag(4, 4 * B * y / 4, AA, BA) + ar(4, 4 * B * y, AA, BA) for y in (512, 96))
    last = ar(4, 4 * B * 5, AA, BA)  # fc's 5 outputs: 6*(1e-5 + 40e-10)
    first = ag(4, 4 * B * 1024 / 4, AA, BA)  # conv2's input gradient, |x| = 1024: 3*(1e-5 + 8192e-10)
    assert pt.breakdown.layer_collectives_s == pytest.approx(I * (pairs + last + first), rel=REL)
    assert I * (last + first) == pytest.approx(125 * (6 * (1e-5 + 4e-9) + 3 * (1e-5 + 8.192e-7)), rel=REL)


ONE_SPLIT = """\
name: OneSplit
input: [3, 4, 4]
dataset: {{name: toy, samples: 1000}}
layers:
  - {{name: first, type: {first}}}
  - {{name: relu, type: relu}}
  - {{name: flat, type: flatten}}
  - {{name: fc, type: fc, outputs: 10}}
"""


@pytest.mark.parametrize("first, gather", [("conv, filters: 2, kernel: 1", True), ("relu", False)])
def test_channel_with_one_split_layer_still_combines_its_partial_sums(tmp_path, files, first, gather):
    """QA: conv1 (reading the input) -> relu -> flatten -> fc showed no communication on
    several GPUs: fc, the only split layer, is also the last.  Its 10 outputs are partial
    sums over each GPU's slice of its 32 input features: AR(8, δ·B·10); the gradient of
    those features is gathered, AG(8, δ·B·32/8), when conv1 (weights) needs it, not when
    only the input and unweighted layers come before.  p = 8 spans two nodes: level B."""
    model_file = tmp_path / "one.yaml"
    model_file.write_text(ONE_SPLIT.format(first=first), encoding="utf-8")
    m = load_model(model_file)
    profile = "model: OneSplit\ndevice: G\ntotal: {fw_bw_per_sample_s: 1.0e-3}\n"
    (tmp_path / "p.yaml").write_text(profile, encoding="utf-8")
    times = bind_profile(m, load_profile(tmp_path / "p.yaml"))
    B, I = 8, 125

    def lc(**kw):
        (pt,) = sweep(m, files["system_two"], times, [8], ["channel"], batch=B, options=Options(**kw))
        assert pt.feasible, pt.limits  # 8 GPUs <= fc's 32 input features
        return pt.breakdown.layer_collectives_s

    assert lc() == 0.0  # ParaDL mode: eq. 19 sums over the split layers but the last
    expected = ar(8, 4 * B * 10, AB, BB) + (ag(8, 4 * B * 32 / 8, AB, BB) if gather else 0.0)
    assert lc(compute_scaling="model") == pytest.approx(I * expected, rel=REL)
    assert lc(memory_model="framework", compute_scaling="model") == pytest.approx(I * expected, rel=REL)


# --------------------------------------------------------------------------------------
# pipeline
# --------------------------------------------------------------------------------------
# Chain, FW+BW per layer (ms): 3, 2, 6, 2, 4 (total 17).
# p = 2: cut after flat: 3|14, fc1: 5|12, fc2: 11|6, relu: 13|4 -> {flat,fc1,fc2}|{relu,fc3}
#        (11); FW_G = 4, 4.5 ms; BW_G = 7, 1.5 ms -> max FW + max BW = 11.5 ms
# p = 3: {flat,fc1} 5 | {fc2} 6 | {relu,fc3} 6 -> 6 (unique: fc2 cannot join either side)
#        FW_G = 2, 2, 4.5; BW_G = 3, 4, 1.5 -> 4.5 + 4 = 8.5 ms
# per-layer memory elements 2B(x+y) + 2w at B = 8: flat 16*16 = 256, fc1 16*14+108 = 332,
#   fc2 16*10+56 = 216, relu 16*8 = 128, fc3 16*7+30 = 142


def test_pipeline_p1(one):
    # S = min(B, 4p) = min(8, 4) = 4; (p+S-1)/S = 1
    pt = one("chain", 1, "pipeline", batch=8)
    I = 1200 / 8  # 150
    check(
        pt,
        fb=1200 * (8.5e-3 + 8.5e-3),  # ΣFW = 8.5 ms, ΣBW = 8.5 ms
        wu=I * 7e-4,
        mem=4 * (256 + 332 + 216 + 128 + 142),  # one group: 4 * 1074
    )
    assert pt.segments == 4
    assert pt.detail("stages") == (("flat", "fc3"),)


def test_pipeline_p2(one):
    pt = one("chain", 2, "pipeline", batch=8)
    I, S = 150, 8  # S = min(8, 4*2) = 8
    # cut after fc2: y = 4, GPUs 0, 1 on one node -> level A; B/S = 1
    p2p = I * 2 * (2 + S - 2) * (AA + 1 * 4 * 4 * BA)
    check(
        pt,
        fb=1200 * (2 + S - 1) / S * (4.5e-3 + 7e-3),  # 1200 * 9/8 * 11.5e-3 = 15.525
        wu=I * 4e-4,  # max(WU_G1 = 0.3 ms, WU_G2 = 0.4 ms)
        p2p=p2p,
        mem=4 * (256 + 332 + 216),  # max(804, 270) elements
    )
    assert pt.breakdown.forward_backward_s == pytest.approx(15.525, rel=REL)
    assert pt.segments == 8
    assert pt.detail("stages") == (("flat", "fc2"), ("relu", "fc3"))
    assert (pt.p1, pt.p2) == (1, 2)


def test_pipeline_p3(one):
    pt = one("chain", 3, "pipeline", batch=8)
    I, S = 150, 8  # S = min(8, 12) = 8
    # cuts after fc1 (y 6) and fc2 (y 4), both pairs inside node 0 -> level A;
    # the max is the larger message: α + (8/8)*4*6*β
    p2p = I * 2 * (3 + S - 2) * (AA + 4 * 6 * BA)
    check(
        pt,
        fb=1200 * (3 + S - 1) / S * 8.5e-3,  # 1200 * 10/8 * 8.5e-3 = 12.75
        wu=I * 4e-4,  # max(0.1, 0.2, 0.4) ms
        p2p=p2p,
        mem=4 * (256 + 332),  # max(588, 216, 270)
    )
    assert pt.detail("stages") == (("flat", "fc1"), ("fc2", "fc2"), ("relu", "fc3"))


def test_pipeline_explicit_segments(one):
    pt = one("chain", 2, "pipeline", batch=8, options=Options(segments=2))
    I, S = 150, 2
    check(
        pt,
        fb=1200 * (2 + S - 1) / S * 11.5e-3,  # 1200 * 1.5 * 11.5e-3 = 20.7
        wu=I * 4e-4,
        p2p=I * 2 * (2 + S - 2) * (AA + (8 / 2) * 4 * 4 * BA),  # B/S = 4 samples
        mem=4 * 804,
    )
    assert pt.segments == 2


def test_pipeline_stage_pair_across_nodes(one):
    # p = 5: one layer per stage; pair (3, 4) sits on nodes 0 and 1 -> span 8 -> level B.
    # cuts: flat y 8 (A), fc1 y 6 (A), fc2 y 4 (A), relu y 4 (B); S = min(8, 20) = 8
    # A max: 1e-5 + 4*8*1e-10 = 1.00032e-5; B: 1e-4 + 4*4*1e-9 = 1.00016e-4 -> B wins
    pt = one("chain", 5, "pipeline", batch=8)
    I, S = 150, 8
    check(
        pt,
        fb=1200 * (5 + S - 1) / S * (3.5e-3 + 4e-3),  # max FW 3.5 (fc3), max BW 4 (fc2)
        wu=I * 4e-4,
        p2p=I * 2 * (5 + S - 2) * (AB + 4 * 4 * BB),
        mem=4 * 332,
    )


def test_pipeline_default_segments_limited_by_batch(one):
    pt = one("chain", 3, "pipeline", batch=2)  # S = min(2, 12) = 2
    assert pt.segments == 2
    assert pt.feasible


def test_pipeline_more_stages_than_layers(one):
    pt = one("chain", 6, "pipeline", batch=8)
    assert reasons(pt) == ["p=6 exceeds the 5 layers of Chain (one stage per layer at most)"]
    assert pt.limits[0].code == "layers"
    assert math.isnan(pt.compute_s) and math.isnan(pt.communication_s)
    assert math.isnan(pt.total_s) and math.isnan(pt.memory_bytes)
    assert pt.rank is None


def test_pipeline_more_segments_than_batch(one):
    pt = one("chain", 2, "pipeline", batch=8, options=Options(segments=16))
    assert reasons(pt) == ["S=16 segments exceed the batch B=8"]
    assert pt.limits[0].code == "segments"
    assert pt.segments == 16


def test_pipeline_crossing_on_a_skip_connection(one):
    # Skip, FW+BW (ms) 1, 5, 1, 1, 3: p = 2 -> {flat, fc1} 6 | {fc2, add, fc3} 5
    # the cut after fc1 is crossed by fc1's output (6) and flat's output (4, read by add)
    pt = one("skip", 2, "pipeline", batch=8)
    I, S = 1000 / 8, 8
    assert pt.detail("stages") == (("flat", "fc1"), ("fc2", "fc3"))
    assert pt.breakdown.pipeline_p2p_s == pytest.approx(
        I * 2 * (2 + S - 2) * (AA + 1 * 4 * (6 + 4) * BA), rel=REL
    )
    # max FW = max BW = 3 ms (group 1) -> 1000 * 9/8 * 6e-3
    assert pt.breakdown.forward_backward_s == pytest.approx(1000 * 9 / 8 * 6e-3, rel=REL)


# --------------------------------------------------------------------------------------
# data+filter
# --------------------------------------------------------------------------------------


def test_data_filter_p16_p2_4_with_contention(one):
    # p1 = 4 groups of p2 = 4.  Filter group = GPUs 0..3 -> level A.
    # data group {0, 4, 8, 12}: 4 nodes -> span 16 -> level B; flows per node
    # min(p2, 4) = 4 -> φ = ceil(4 / 2 links) = 2.
    p, p1, p2, B = 16, 4, 4, 32
    I = 1000 / B  # 31.25
    pt = one("net2d", p, "data+filter", p2=p2, batch=B)
    lc = sum(
        ag(4, 4 * B * y / p, AA, BA) + ar(4, 4 * B * y / p1, AA, BA) for y in (1024, 512, 96)
    )
    # AR_φ(p1, δ(Σs w/p2 + Σr w)) = AR(4, 4*(911/4 + 8) = 943 B) with β·φ
    ge = 2 * 3 * (AB + 943 / 4 * BB * 2)
    check(
        pt,
        fb=1000 / 16 * 0.0109 + 1000 / 4 * 8e-4,  # 0.68125 + 0.2
        wu=I / 4 * 7e-4 + I * 5e-5,  # 0.00546875 + 0.0015625
        ge=I * ge,
        lc=I * lc,
        mem=4 * (2 * B / p1 * 8325 + 2 * 911 / p2 + 2 * 8),  # 4*(133200 + 455.5 + 16)
    )
    assert pt.detail("contention") == 2.0
    assert pt.detail("allreduce_level") == "B"
    assert (pt.p1, pt.p2) == (4, 4)
    assert pt.feasible


def test_data_filter_p4_inside_one_node(one):
    # p1 = p2 = 2: data group {0, 2} on node 0 -> level A, no inter-node flow, φ = 1
    p, p1, p2, B = 4, 2, 2, 32
    I = 1000 / B
    pt = one("net2d", p, "data+filter", p2=p2, batch=B)
    lc = sum(ag(2, 4 * B * y / 4, AA, BA) + ar(2, 4 * B * y / 2, AA, BA) for y in (1024, 512, 96))
    check(
        pt,
        fb=1000 / 4 * 0.0109 + 1000 / 2 * 8e-4,
        wu=I / 2 * 7e-4 + I * 5e-5,
        ge=I * ar(2, 4 * (911 / 2 + 8), AA, BA),
        lc=I * lc,
        mem=4 * (2 * B / 2 * 8325 + 2 * 911 / 2 + 2 * 8),
    )
    assert pt.detail("contention") == 1.0
    assert pt.detail("allreduce_level") == "A"


@pytest.mark.parametrize(
    "p, p2, level, phi",
    [
        (4, 2, "A", 1.0),  # {0,2}: one node, 0 flows
        (8, 2, "B", 1.0),  # {0,2,4,6}: 2 nodes; flows min(2,4) = 2 -> ceil(2/2) = 1
        (8, 4, "B", 2.0),  # {0,4}: flows 4 -> 2
        (16, 2, "B", 1.0),  # {0,2,...,14}: 4 nodes; flows 2 -> 1
        (16, 4, "B", 2.0),  # {0,4,8,12}: flows 4 -> 2
        (16, 8, "B", 2.0),  # {0,8}: flows min(8,4) = 4 -> 2
        (12, 3, "B", 2.0),  # {0,3,6,9}: 3 nodes; flows 3 -> ceil(3/2) = 2
    ],
)
def test_data_filter_contention_and_level(one, p, p2, level, phi):
    pt = one("net2d", p, "data+filter", p2=p2, batch=64)
    assert pt.detail("contention") == phi
    assert pt.detail("allreduce_level") == level
    p1 = p // p2
    a, b = (AA, BA) if level == "A" else (AB, BB)
    ge = ar(p1, 4 * (911 / p2 + 8), a, b * phi)
    assert pt.breakdown.gradient_exchange_s == pytest.approx(1000 / 64 * ge, rel=REL)


def test_data_filter_contention_option_wins(one):
    pt = one("net2d", 16, "data+filter", p2=4, batch=32, options=Options(contention=3))
    assert pt.detail("contention") == 3.0
    assert pt.breakdown.gradient_exchange_s == pytest.approx(
        31.25 * 2 * 3 * (AB + 943 / 4 * BB * 3), rel=REL
    )


def test_data_filter_system_contention_factor(one):
    # contention_factor 1.5 in the system file beats the derived 2 ...
    pt = one("net2d", 16, "data+filter", p2=4, batch=32, system="phi")
    assert pt.detail("contention") == 1.5
    assert pt.breakdown.gradient_exchange_s == pytest.approx(
        31.25 * 2 * 3 * (AB + 943 / 4 * BB * 1.5), rel=REL
    )
    # ... and a flag beats the system file
    pt = one(
        "net2d", 16, "data+filter", p2=4, batch=32, system="phi", options=Options(contention=4)
    )
    assert pt.detail("contention") == 4.0


def test_data_filter_without_links_no_contention(one):
    pt = one("net2d", 16, "data+filter", p2=4, batch=32, system="nolinks")
    assert pt.detail("contention") == 1.0
    assert pt.breakdown.gradient_exchange_s == pytest.approx(
        31.25 * 2 * 3 * (AB + 943 / 4 * BB), rel=REL
    )


def test_data_filter_model_group_across_nodes(one):
    # p2 = 8: GPUs 0..7 span 2 nodes -> layer collectives on level B; 8 > 4 filters
    p, p1, p2, B = 16, 2, 8, 32
    pt = one("net2d", p, "data+filter", p2=p2, batch=B)
    lc = sum(ag(8, 4 * B * y / p, AB, BB) + ar(8, 4 * B * y / p1, AB, BB) for y in (1024, 512, 96))
    assert pt.breakdown.layer_collectives_s == pytest.approx(1000 / B * lc, rel=REL)
    assert reasons(pt) == ["p2=8 exceeds the 4 filters of conv1"]


def test_data_filter_fewer_samples_than_groups(one):
    pt = one("net2d", 16, "data+filter", p2=2, batch=4)  # p1 = 8 > B = 4
    assert reasons(pt) == ["fewer than one sample per data-parallel group: B=4 over 8"]
    assert pt.limits[0].code == "batch"


@pytest.mark.parametrize(
    "p, expected",
    [
        (2, {(0, 0)}),  # 2 = 1*2 = 2*1 only: the named hybrid's one infeasible point says so
        (4, {(2, 2)}),
        (8, {(4, 2), (2, 4)}),
        (12, {(6, 2), (4, 3), (3, 4), (2, 6)}),
        (16, {(8, 2), (4, 4), (2, 8)}),
    ],
)
@pytest.mark.parametrize("strategy", ["data+filter", "data+spatial"])
def test_hybrid_factorizations_listed(run, strategy, p, expected):
    pts = run("net2d", [p], [strategy], batch=64)
    got = [(pt.p1, pt.p2) for pt in pts]
    assert len(got) == len(set(got))
    assert set(got) == expected
    assert all(pt.p1 * pt.p2 == p and pt.gpus == p for pt in pts if pt.p1)
    assert all(not pt.feasible and [lim.code for lim in pt.limits] == ["no_factorization"] for pt in pts if not pt.p1)


def test_hybrid_fixed_p2(run):
    pts = run("net2d", [8, 16], ["data+filter"], batch=64, p2=4)
    assert [(pt.gpus, pt.p1, pt.p2) for pt in pts] == [(8, 2, 4), (16, 4, 4)]


@pytest.mark.parametrize("strategy", ["data+filter", "data+spatial"])
def test_hybrid_p2_not_dividing_p(one, strategy):
    pt = one("net2d", 6, strategy, p2=4, batch=64)
    assert reasons(pt) == ["p=6 is not a multiple of p2=4"]
    assert pt.limits[0].code == "factorization"
    assert math.isnan(pt.total_s) and math.isnan(pt.memory_bytes)
    assert pt.rank is None


# --------------------------------------------------------------------------------------
# data+spatial
# --------------------------------------------------------------------------------------


def test_data_spatial_p16_p2_4(one):
    # p1 = 4 groups of p2 = 4 (grid 2x2), B = 32 -> b = B/p1 = 8 samples per group.
    # AR_φ(16, δΣs w = 1736) over GPUs 0..15: span 16 -> level B; 1 flow per node ->
    #   φ = ceil(1/2) = 1.
    # AR_φ(4, δΣr w = 4*485 = 1940) over {0,4,8,12}: level B, φ = ceil(4/2) = 2.
    # halo: 2x2 grid, neighbours inside node 0 -> level A, Σ halo = 640 (see spatial).
    # AG(4, δ b y_last / 4 = 4*8*96/4 = 768 B) over GPUs 0..3 -> level A.
    p, p1, p2, B, b = 16, 4, 4, 32, 8
    I = 1000 / B
    pt = one("net2d", p, "data+spatial", p2=p2, batch=B)
    ge = 2 * 15 * (AB + 1736 / 16 * BB * 1) + 2 * 3 * (AB + 1940 / 4 * BB * 2)
    check(
        pt,
        fb=1000 / 16 * 0.0108 + 1000 / 4 * 9e-4,  # 0.675 + 0.225
        wu=I * 7.5e-4,
        ge=I * ge,
        lc=I * 3 * (AA + 768 * BA),
        halo=I * 2 * (3 * 2 * AA + b * 4 * 640 * BA),
        mem=4 * (2 * B / p * 8032 + 2 * b * 293 + 2 * 919),  # 4*(32128 + 4688 + 1838)
    )
    assert pt.detail("grid") == (2, 2)
    assert pt.detail("contention") == 2.0
    assert (pt.p1, pt.p2) == (4, 4)
    assert pt.feasible


def test_data_spatial_p8_p2_2(one):
    # p1 = 4, p2 = 2 (grid 2x1), B = 32, b = 8.  AR(8, 1736) over GPUs 0..7: level B,
    # φ = ceil(1/2) = 1.  data group {0,2,4,6}: level B, flows 2 -> φ = 1.
    p, p1, p2, B, b = 8, 4, 2, 32, 8
    I = 1000 / B
    pt = one("net2d", p, "data+spatial", p2=p2, batch=B)
    ge = ar(8, 1736, AB, BB) + ar(4, 1940, AB, BB)
    check(
        pt,
        fb=1000 / 8 * 0.0108 + 1000 / 4 * 9e-4,
        wu=I * 7.5e-4,
        ge=I * ge,
        lc=I * ag(2, 4 * b * 96 / 2, AA, BA),
        halo=I * 2 * (3 * 2 * AA + b * 4 * 640 * BA),
        mem=4 * (2 * B / p * 8032 + 2 * b * 293 + 2 * 919),
    )
    assert pt.detail("grid") == (2, 1)
    assert pt.detail("contention") == 1.0


def test_data_spatial_inside_one_node(one):
    # p = 4, p2 = 2, p1 = 2: everything on node 0 (level A), φ = 1 everywhere
    p, p1, p2, B, b = 4, 2, 2, 32, 16
    I = 1000 / B
    pt = one("net2d", p, "data+spatial", p2=p2, batch=B)
    check(
        pt,
        fb=1000 / 4 * 0.0108 + 1000 / 2 * 9e-4,
        wu=I * 7.5e-4,
        ge=I * (ar(4, 1736, AA, BA) + ar(2, 1940, AA, BA)),
        lc=I * ag(2, 4 * b * 96 / 2, AA, BA),
        halo=I * 2 * (3 * 2 * AA + b * 4 * 640 * BA),
        mem=4 * (2 * B / p * 8032 + 2 * b * 293 + 2 * 919),
    )
    assert pt.detail("contention") == 1.0


def test_data_spatial_contention_option_applies_to_both_allreduces(one):
    pt = one("net2d", 16, "data+spatial", p2=4, batch=32, options=Options(contention=3))
    ge = 2 * 15 * (AB + 1736 / 16 * BB * 3) + 2 * 3 * (AB + 1940 / 4 * BB * 3)
    assert pt.breakdown.gradient_exchange_s == pytest.approx(31.25 * ge, rel=REL)
    assert pt.detail("contention") == 3.0


def test_data_spatial_limits(one):
    # p2 = 32 -> grid 8x4 > pool1's 4x4 output
    pt = one("net2d", 64, "data+spatial", p2=32, batch=64)
    assert reasons(pt) == ["spatial split 8x4 exceeds the 4x4 output of pool1"]
    # p1 = 8 > B = 4
    pt = one("net2d", 16, "data+spatial", p2=2, batch=4)
    assert reasons(pt) == ["fewer than one sample per data-parallel group: B=4 over 8"]


# --------------------------------------------------------------------------------------
# limits shared by every strategy
# --------------------------------------------------------------------------------------


def test_more_gpus_than_the_system(one):
    pt = one("net2d", 128, "data", batch=1024)
    assert reasons(pt) == [
        "needs 128 GPUs; Two has 64",
        "global batch B=1024 exceeds the 1000 samples of the dataset (fewer than one iteration per epoch)",
    ]
    assert pt.limits[0].code == "gpus"
    assert pt.rank is None
    # span 32 nodes * 4 = 128 > every max_gpus -> the outermost level (B)
    assert pt.detail("allreduce_level") == "B"
    assert pt.breakdown.gradient_exchange_s == pytest.approx(
        1000 / 1024 * 2 * 127 * (AB + 3676 / 128 * BB), rel=REL
    )


def test_out_of_gpu_memory(one):
    # serial, B = 1e6: 4*(2e6*8325 + 1838) = 66,600,007,352 B > 16e9
    pt = one("net2d", 1, "serial", batch=1_000_000, options=Options(samples=10**7))
    assert pt.memory_bytes == pytest.approx(4 * (2e6 * 8325 + 1838), rel=REL)
    assert reasons(pt) == ["needs 66.6 GB of 16.0 GB GPU memory"]
    assert pt.limits[0].code == "memory"
    assert pt.rank is None


def test_memory_limit_is_strictly_greater(one):
    # fp32 serial memory 4*(2B*8325 + 1838) <= 16e9 for B = 240000: 15,984,007,352 B
    assert one("net2d", 1, "serial", batch=240_000, options=Options(samples=10**7)).feasible


def test_global_batch_larger_than_the_dataset_is_a_limit(one):
    # issue 13: D = 1000 samples, B = 1001 -> fewer than one iteration per epoch
    assert one("net2d", 1, "serial", batch=1000).feasible
    pt = one("net2d", 1, "serial", batch=1001)
    assert [lim.code for lim in pt.limits] == ["dataset"]
    assert "exceeds the 1000 samples of the dataset" in pt.limits[0].reason
    assert pt.rank is None


# --------------------------------------------------------------------------------------
# ranking and listing
# --------------------------------------------------------------------------------------


def test_ranking_within_each_gpu_count(run):
    pts = run("net2d", [1, 4, 16], "all", batch=8)
    assert [pt.gpus for pt in pts] == sorted(pt.gpus for pt in pts)
    for g in (1, 4, 16):
        group = [pt for pt in pts if pt.gpus == g]
        feas = [pt for pt in group if pt.feasible]
        infeas = [pt for pt in group if not pt.feasible]
        # feasible first, by total; ranks 1..n; then the infeasible with rank None
        assert group == feas + infeas
        assert [pt.rank for pt in feas] == list(range(1, len(feas) + 1))
        assert [pt.total_s for pt in feas] == sorted(pt.total_s for pt in feas)
        assert all(pt.rank is None and pt.limits for pt in infeas)
        if feas:
            assert feas[0].total_s == min(pt.total_s for pt in feas)


def test_infeasible_cheapest_point_gets_no_rank(run):
    # p = 16, B = 8: data is the cheapest point but 16 > B; it must not be ranked
    pts = run("net2d", [16], ["data", "spatial"], batch=8)
    data = next(pt for pt in pts if pt.strategy == "data")
    spatial = next(pt for pt in pts if pt.strategy == "spatial")
    assert data.total_s < spatial.total_s
    assert data.rank is None and spatial.rank == 1
    assert pts == [spatial, data]


def test_rank_by_hand(run):
    # p = 4, B = 32: data total = 2.925 + 0.0234375 + 31.25 * 6*(1e-5 + 919e-10) and
    # filter total = (250*0.0109 + 1000*8e-4) + ... > data; data ranks before filter
    pts = run("net2d", [4], ["filter", "data"], batch=32)
    assert [pt.strategy for pt in pts] == ["data", "filter"]
    assert [pt.rank for pt in pts] == [1, 2]
    total = 2.925 + 0.0234375 + 31.25 * 6 * (1e-5 + 919e-10)
    assert pts[0].total_s == pytest.approx(total, rel=REL)


def test_all_lists_serial_only_on_one_gpu(run):
    pts = run("net2d", [1, 2, 4], "all", batch=8)
    by = {g: sorted(pt.strategy for pt in pts if pt.gpus == g) for g in (1, 2, 4)}
    assert by[1] == ["serial"]
    # at 2 GPUs the hybrids have no factorization with p1, p2 >= 2
    assert by[2] == sorted(["data", "spatial", "filter", "channel", "pipeline"])
    assert by[4] == sorted(
        ["data", "spatial", "filter", "channel", "pipeline", "data+filter", "data+spatial"]
    )


def test_explicit_list_lists_what_was_asked(run):
    pts = run("net2d", [1, 2], "serial,data", batch=8)
    assert sorted((pt.gpus, pt.strategy) for pt in pts) == [
        (1, "data"),
        (1, "serial"),
        (2, "data"),
        (2, "serial"),
    ]
    one_gpu_data = next(pt for pt in pts if pt.gpus == 1 and pt.strategy == "data")
    assert one_gpu_data.communication_s == 0.0  # AR over one PE costs 0


# --------------------------------------------------------------------------------------
# precision, γ, samples
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_half_precision_halves_messages_and_memory(one, precision):
    # data, p = 8, B = 64, δ = 2: AR(8, 2*919 = 1838 B) on level B
    pt = one("net2d", 8, "data", batch=64, options=Options(precision=precision))
    I = 1000 / 64
    check(
        pt,
        fb=1000 / 8 * 0.0117,
        wu=I * 7.5e-4,
        ge=I * 14 * (1e-4 + 1838 / 8 * 1e-9),
        mem=2 * (2 * 64 / 8 * 8325 + 2 * 919),
    )
    full = one("net2d", 8, "data", batch=64)
    assert pt.memory_bytes == pytest.approx(full.memory_bytes / 2, rel=REL)


def test_half_precision_halo_and_pipeline_messages(one):
    # spatial p = 4 (level A): halo 2*(6α + B δ 640 β) with δ = 2
    pt = one("net2d", 4, "spatial", batch=8, options=Options(precision="fp16"))
    assert pt.breakdown.halo_s == pytest.approx(125 * 2 * (6 * AA + 8 * 2 * 640 * BA), rel=REL)
    lc = 125 * 3 * (AA + 2 * 8 * 96 / 4 * BA)  # AG(4, δ B y_last / 4) with δ = 2
    assert pt.breakdown.layer_collectives_s == pytest.approx(lc, rel=REL)
    pt = one("chain", 2, "pipeline", batch=8, options=Options(precision="fp16"))
    assert pt.breakdown.pipeline_p2p_s == pytest.approx(150 * 2 * 8 * (AA + 2 * 4 * BA), rel=REL)


def test_memory_reuse_scales_memory_only(one):
    base = one("net2d", 4, "spatial", batch=8)
    pt = one("net2d", 4, "spatial", batch=8, options=Options(memory_reuse=0.5))
    assert pt.memory_bytes == pytest.approx(0.5 * 154616, rel=REL)
    assert pt.breakdown == base.breakdown


def test_samples_override_dataset_size(one):
    # D = 2000 instead of 1000: I = 2000/32 = 62.5
    pt = one("net2d", 4, "data", batch=32, options=Options(samples=2000))
    I = 62.5
    check(
        pt,
        fb=2000 / 4 * 0.0117,
        wu=I * 7.5e-4,
        ge=I * 6 * (1e-5 + 919e-10),
        mem=4 * (2 * 8 * 8325 + 2 * 919),
    )
    assert pt.iterations_per_epoch == 62.5


# --------------------------------------------------------------------------------------
# weak and strong scaling
# --------------------------------------------------------------------------------------


def test_weak_scaling(run):
    pts = run("net2d", [1, 2, 3, 4], ["data"], batch_per_gpu=8)
    assert [pt.global_batch for pt in pts] == [8, 16, 24, 32]  # B = b·p
    assert [pt.iterations_per_epoch for pt in pts] == pytest.approx(
        [125.0, 62.5, 1000 / 24, 31.25], rel=REL
    )
    # per-GPU activations stay the same: memory is constant
    assert len({pt.memory_bytes for pt in pts}) == 1


def test_strong_scaling(run):
    pts = run("net2d", [1, 2, 3, 4], ["data"], batch=48)
    assert [pt.global_batch for pt in pts] == [48, 48, 48, 48]
    # I = D/B is a real number: 1000/48 = 20.8333...
    for pt in pts:
        assert pt.iterations_per_epoch == pytest.approx(1000 / 48, rel=REL)
        assert pt.iterations_per_epoch != int(pt.iterations_per_epoch)
    p3 = pts[2]
    check(
        p3,
        fb=1000 / 3 * 0.0117,
        wu=1000 / 48 * 7.5e-4,
        ge=1000 / 48 * 4 * (1e-5 + 3676 / 3 * 1e-10),  # AR(3, 3676) on A
        mem=4 * (2 * 48 / 3 * 8325 + 2 * 919),
    )
