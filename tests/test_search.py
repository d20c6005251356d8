"""The search (oracle/compute/layerwise/search.py) and ``oracle search`` (issue 8).

* Dryden et al.'s shortest path on line graphs and Jia et al.'s node/edge elimination
  on DAGs give the optimum of exhaustive enumeration: on random costs, and on small
  real models (a chain, a residual block, an inception-like block with concat) with
  the full objective (per layer + redistribution + one latency per gradient group);
* the search is never worse than the uniform assignments it contains;
* ``oracle search`` explains the winner (table and JSON), writes a configuration file
  that ``--evaluate`` reads back, and rejects bad input with exit status 2;
* ResNet-152 on 1024 GPUs is searched in well under a second (generous bound here;
  benchmarks/search.py measures it).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from oracle.compute.context import Context
from oracle.compute.context import Options as _Options


def Options(**kw):  # noqa: N802 - these tests pin ParaDL's Table 3 memory (SPEC §4.6 ParaDL mode)
    kw.setdefault("memory_model", "paradl")
    return _Options(**kw)
from oracle.compute.binding import bind_profile
from oracle.compute.layerwise.layerwise import Costs, Dist, distributions, evaluate
from oracle.compute.layerwise.search import (
    brute_force,
    eliminate,
    is_line,
    objective,
    search,
    search_layerwise,
    shortest_path_line,
    solve,
)
from oracle.load import load_model, load_profile, load_system
from oracle.load.layerwise import bind_layerwise, load_layerwise

# --------------------------------------------------------------------------------------
# graph algorithms on random costs
# --------------------------------------------------------------------------------------


def random_costs(rng, n, edges, nd, holes=0.1):
    node = rng.uniform(0, 10, (n, nd))
    node[rng.random((n, nd)) < holes] = np.inf  # some distributions do not fit a layer
    node[np.arange(n), rng.integers(0, nd, n)] = rng.uniform(0, 10, n)  # at least one fits
    mats = rng.uniform(0, 5, (len(edges), nd, nd))
    for e in range(len(edges)):
        np.fill_diagonal(mats[e], 0.0)  # same distribution: no shuffle
    return node, mats


CHAIN = [(k, k + 1) for k in range(6)]  # 7 layers
RESIDUAL = [(0, 1), (1, 2), (2, 3), (3, 5), (0, 4), (4, 5), (5, 6)]  # two branches joined by an add
RESIDUAL_ID = [(0, 1), (1, 2), (2, 3), (0, 3), (3, 4)]  # identity shortcut
INCEPTION = [(0, 1), (0, 2), (2, 3), (0, 4), (4, 5), (1, 6), (3, 6), (5, 6)]  # 3 branches, concat
FORKED = [
    (0, 1),
    (1, 2),
    (1, 3),
    (2, 4),
    (3, 4),
    (0, 5),
    (4, 5),
    (5, 6),
]  # InceptionE: a fork in a branch
NON_SP = [(0, 1), (0, 2), (1, 2), (1, 3), (2, 3)]  # K4 minus an edge: not series-parallel
TWO_HEADS = [(0, 1), (1, 2), (1, 3)]  # two outputs (an auxiliary head)


@pytest.mark.parametrize("nd", [3, 4])
@pytest.mark.parametrize("seed", range(6))
def test_shortest_path_equals_enumeration_on_line_graphs(seed, nd):
    rng = np.random.default_rng(seed)
    n = 7 if nd == 3 else 6
    edges = CHAIN[: n - 1]
    assert is_line(n, edges)
    node, mats = random_costs(rng, n, edges, nd)
    choice, value = shortest_path_line(node, mats)
    _, bf_value = brute_force(node, edges, mats)
    assert value == pytest.approx(bf_value)
    assert objective(choice, node, edges, mats) == pytest.approx(bf_value)
    # and the eliminations agree on a chain
    _, v2, stats = eliminate(n, edges, node, mats)
    assert v2 == pytest.approx(bf_value)
    assert stats.final_nodes == 2 and stats.node_eliminations == n - 2


@pytest.mark.parametrize("edges", [RESIDUAL, RESIDUAL_ID, INCEPTION, FORKED, NON_SP, TWO_HEADS],
                         ids=["residual", "residual-identity", "inception", "forked", "non-sp", "two-heads"])  # fmt: skip
@pytest.mark.parametrize("seed", range(5))
def test_elimination_equals_enumeration_on_dags(edges, seed):
    rng = np.random.default_rng(100 + seed)
    n = max(max(e) for e in edges) + 1
    nd = 4
    node, mats = random_costs(rng, n, edges, nd)
    choice, value, stats = eliminate(n, edges, node, mats)
    _, bf_value = brute_force(node, edges, mats)
    assert value == pytest.approx(bf_value)
    assert objective(choice, node, edges, mats) == pytest.approx(value)
    if edges in (RESIDUAL, RESIDUAL_ID, INCEPTION, FORKED):
        assert stats.final_nodes == 2  # Jia et al.: real CNNs reduce to two nodes


def test_elimination_with_tiny_enumeration_limit_folds_leaves():
    """When the final graph is too large to enumerate, single-edge nodes are folded
    into their neighbour too; the result stays optimal."""
    rng = np.random.default_rng(5)
    edges = NON_SP + [(3, 4), (4, 5), (0, 6), (6, 3)]
    n = 7
    node, mats = random_costs(rng, n, edges, 3)
    choice, value, stats = eliminate(n, edges, node, mats, enumerate_limit=100)
    assert value == pytest.approx(brute_force(node, edges, mats)[1])
    assert stats.leaf_eliminations > 0 and stats.exact
    # a graph that cannot get small enough: coordinate descent, flagged as not exact
    choice, value, stats = eliminate(n, edges, node, mats, enumerate_limit=10)
    assert not stats.exact
    assert value >= brute_force(node, edges, mats)[1] - 1e-9
    assert objective(choice, node, edges, mats) == pytest.approx(value)


def test_solve_dispatches():
    rng = np.random.default_rng(0)
    node, mats = random_costs(rng, 4, CHAIN[:3], 3)
    assert solve(4, CHAIN[:3], node, mats)[2].startswith("shortest path")
    node, mats = random_costs(rng, 7, RESIDUAL, 3)
    assert solve(7, RESIDUAL, node, mats)[2] == "node/edge elimination"


# --------------------------------------------------------------------------------------
# the whole search on small real models = exhaustive enumeration
# --------------------------------------------------------------------------------------

SYSTEM = """\
name: Small
gpu: {model: V100, memory_GB: 16, peak_TFLOPS: 15.7}
gpus_per_node: 2
nodes: 4
network:
  - {name: nvlink, max_gpus: 2, alpha_s: 2.0e-6, beta_s_per_byte: 2.0e-11}
  - {name: ib, max_gpus: 8, alpha_s: 2.0e-5, beta_s_per_byte: 1.0e-10}
"""

CHAIN_MODEL = """\
name: Chain7
input: [3, 32, 32]
dataset: {name: toy, samples: 10000}
layers:
  - {name: conv1, type: conv, filters: 32, kernel: 3, padding: 1}
  - {name: bn1, type: batchnorm}
  - {name: relu1, type: relu}
  - {name: conv2, type: conv, filters: 64, kernel: 3, stride: 2, padding: 1}
  - {name: relu2, type: relu}
  - {name: flat, type: flatten}
  - {name: fc, type: fc, outputs: 100}
"""

RESIDUAL_MODEL = """\
name: Residual9
input: [16, 16, 16]
dataset: {name: toy, samples: 10000}
layers:
  - {name: conv1, type: conv, filters: 32, kernel: 3, padding: 1, bias: false}
  - {name: relu1, type: relu}
  - {name: conv2a, type: conv, filters: 32, kernel: 3, padding: 1, bias: false}
  - {name: conv2b, type: conv, filters: 64, kernel: 1, bias: false}
  - {name: proj, type: conv, inputs: [relu1], filters: 64, kernel: 1, bias: false}
  - {name: add, type: add, inputs: [conv2b, proj]}
  - {name: gap, type: globalavgpool}
  - {name: flat, type: flatten}
  - {name: fc, type: fc, outputs: 1000}
"""

INCEPTION_MODEL = """\
name: Inception10
input: [8, 16, 16]
dataset: {name: toy, samples: 10000}
layers:
  - {name: stem, type: conv, filters: 32, kernel: 3, padding: 1}
  - {name: b1, type: conv, inputs: [stem], filters: 16, kernel: 1}
  - {name: b2a, type: conv, inputs: [stem], filters: 16, kernel: 1}
  - {name: b2b, type: conv, filters: 24, kernel: 3, padding: 1}
  - {name: b3pool, type: avgpool, inputs: [stem], kernel: 3, stride: 1, padding: 1}
  - {name: b3, type: conv, filters: 8, kernel: 1}
  - {name: mixed, type: concat, inputs: [b1, b2b, b3]}
  - {name: gap, type: globalavgpool}
  - {name: flat, type: flatten}
  - {name: fc, type: fc, outputs: 500}
"""


def small_context(tmp_path, model_text, per_sample=2e-4, wu=1e-4, **options) -> Context:
    name = model_text.split("\n", 1)[0].split(": ", 1)[1]
    (tmp_path / "m.yaml").write_text(model_text)
    (tmp_path / "s.yaml").write_text(SYSTEM)
    (tmp_path / "p.yaml").write_text(
        f"model: {name}\ntotal: {{fw_bw_per_sample_s: {per_sample}, wu_per_iteration_s: {wu}}}\n"
    )
    m, s, pr = (
        load_model(str(tmp_path / "m.yaml")),
        load_system(str(tmp_path / "s.yaml")),
        load_profile(str(tmp_path / "p.yaml")),
    )
    return Context(m, s, bind_profile(m, pr), Options(**options), pr.kind)


def enumerate_all(costs: Costs) -> tuple[np.ndarray, float]:
    """Exhaustive enumeration of the full objective: per layer + per edge + the latency
    of each gradient group in use; infeasible (layer, distribution) excluded."""
    grids, total = all_totals(costs)
    k = int(np.argmin(total))
    return grids[:, k], float(total[k])


def all_totals(costs: Costs) -> tuple[np.ndarray, np.ndarray]:
    G, nd = costs.G, costs.nd
    grids = np.indices((nd,) * G).reshape(G, -1)
    rows = np.arange(G)[:, None]
    node = np.where(costs.feasible, costs.node_time, np.inf)
    total = node[rows, grids].sum(axis=0)
    mats = costs.edge_matrices()
    for e, (i, j) in enumerate(costs.edges):
        total = total + mats[e][grids[i], grids[j]]
    cls = np.where(costs.grad_bytes > 0, costs.grad_class, -1)[rows, grids]
    for g, lat in enumerate(costs.group_latency):
        total = total + lat * (cls == g).any(axis=0)
    return grids, total


@pytest.mark.parametrize(
    "model_text,line",
    [(CHAIN_MODEL, True), (RESIDUAL_MODEL, False), (INCEPTION_MODEL, False)],
    ids=["chain", "residual", "inception"],
)
@pytest.mark.parametrize(
    "dists",
    [
        [Dist.data(4), Dist("spatial", 1, 4), Dist("filter", 2, 2)],
        [Dist.data(4), Dist("spatial", 2, 2), Dist("filter", 1, 4), Dist("channel", 2, 2)],
        [Dist("spatial", 2, 2), Dist("filter", 2, 2), Dist("channel", 1, 4)],
        # issue 18: Lee et al.'s replicated weight gradients widen the space
        [Dist.data(4), Dist("replicated", 4, 1), Dist("filter", 2, 2), Dist("spatial", 2, 2)],
        # and so do layers on a subset of the GPUs (Jia et al. §4)
        [Dist.data(4), Dist("data", 2, 1, of=4), Dist("filter", 1, 2, of=4), Dist("spatial", 1, 4),
         Dist("data", 1, 1, of=4)],  # fmt: skip
        # and samples x space x filters together (Jia et al. §4, {n, h, w, c})
        [Dist.data(4), Dist("spatial+filter", 1, 2, p3=2), Dist("filter", 2, 2), Dist("spatial", 2, 2)],
    ],
    ids=["3dists", "4dists", "no-data", "replicated", "subsets", "spatial+filter"],
)
@pytest.mark.parametrize("batch", [16.0, 256.0])
def test_search_equals_enumeration_on_small_models(tmp_path, model_text, line, dists, batch):
    ctx = small_context(tmp_path, model_text)
    costs = Costs(ctx, 4, batch, dists)
    assert is_line(costs.G, costs.edges) == line
    res = search_layerwise(ctx, 4, batch, costs=costs)
    assert res.method.startswith("shortest path" if line else "node/edge elimination")
    assert res.proven and not res.memory_constrained
    bf_choice, bf_value = enumerate_all(costs)
    assert res.assessment.point.total_s == pytest.approx(bf_value, rel=1e-9)
    # the enumerated optimum evaluates to the same total (the objective is the model)
    assert costs.assess(bf_choice).point.total_s == pytest.approx(bf_value, rel=1e-9)


def test_fixed_charges_matter(tmp_path):
    """With a large all-reduce latency, mixing gradient groups costs one latency per
    group: the search accounts for it (and enumeration agrees)."""
    slow = SYSTEM.replace("alpha_s: 2.0e-5", "alpha_s: 2.0e-3")
    ctx = small_context(tmp_path, RESIDUAL_MODEL)
    (tmp_path / "s.yaml").write_text(slow)
    s = load_system(str(tmp_path / "s.yaml"))
    ctx = Context(ctx.model, s, tuple(_times(ctx)), Options(), "")
    dists = [Dist.data(8), Dist("filter", 4, 2), Dist("filter", 2, 4), Dist("spatial", 2, 4)]
    costs = Costs(ctx, 8, 64.0, dists)
    res = search_layerwise(ctx, 8, 64.0, costs=costs)
    assert res.assessment.point.total_s == pytest.approx(enumerate_all(costs)[1], rel=1e-9)


def _times(ctx):
    from oracle.model import LayerTimes

    return [LayerTimes(float(f), float(b), float(u)) for f, b, u in zip(ctx.fw, ctx.bw, ctx.wu)]


def context(model, system, profile) -> Context:
    m, s, pr = load_model(model), load_system(system), load_profile(profile)
    return Context(m, s, bind_profile(m, pr), Options(), pr.kind)


@pytest.mark.parametrize("model,profile", [("resnet50", "resnet50_v100"), ("vgg16", "vgg16_v100")])
@pytest.mark.parametrize("p", [8, 64])
def test_search_is_never_worse_than_uniform_assignments(model, profile, p):
    ctx = context(model, "abci", profile)
    B = 8.0 * p
    res = search_layerwise(ctx, p, B)
    best = res.assessment.point.total_s
    for d in distributions(p):
        a = evaluate(ctx, p, B, [d] * ctx.G).point
        if a.feasible:
            assert best <= a.total_s * (1 + 1e-9), d.label
    assert res.proven


def test_search_result_and_winner():
    ctx = context("vgg16", "abci", "vgg16_v100")
    r = search(ctx, 64, 16.0 * 64)
    bu = r.best_uniform
    assert bu is not None and bu.rank == 1
    assert r.winner is not None
    assert r.saved_s == pytest.approx(bu.total_s - r.layerwise_point.total_s)
    # VGG16: the fc layers' 120M weights are all-reduced far cheaper when split
    assert r.saved_s > 0 and r.winner is r.layerwise_point
    kinds = {d.kind for d in r.layerwise.assessment.assignment}
    assert "filter" in kinds or "channel" in kinds
    # pipeline at several segment counts is among the uniform candidates
    segments = {pt.segments for pt in r.uniform if pt.strategy == "pipeline"}
    assert {1, 2, 4, 8} <= segments


def test_inception_v3_search_on_16_gpus(tmp_path):
    (tmp_path / "inc.yaml").write_text("model: Inception-v3\ntotal: {fw_bw_per_sample_s: 0.006}\n")
    ctx = context("inception_v3", "abci", str(tmp_path / "inc.yaml"))
    res = search_layerwise(ctx, 16, 16 * 16.0)  # its speed: benchmarks/search.py
    assert res.method == "node/edge elimination"
    assert res.stats.final_nodes == 2
    assert res.stats.edge_eliminations > 0  # the branches of every mixed block merge
    data = evaluate(ctx, 16, 256.0, [Dist.data(16)] * ctx.G).point
    assert res.assessment.point.total_s <= data.total_s * (1 + 1e-12)


def test_resnet152_on_1024_gpus(tmp_path):
    (tmp_path / "r152.yaml").write_text("model: ResNet-152\ntotal: {fw_bw_per_sample_s: 0.009}\n")
    ctx = context("resnet152", "abci", str(tmp_path / "r152.yaml"))
    r = search(ctx, 1024, 8.0 * 1024)  # its speed (target < 1 s): benchmarks/search.py
    assert r.layerwise.stats.final_nodes == 2
    assert r.layerwise.costs.nd == 31


# --------------------------------------------------------------------------------------
# oracle search (CLI)
# --------------------------------------------------------------------------------------

VGG = ("search", "-m", "vgg16", "-s", "abci", "-p", "vgg16_v100")


def ok(result):
    assert result.code == 0, (
        f"exit {result.code}\nstderr: {result.err}\nexception: {result.exception!r}"
    )
    return result


def test_cli_table_explains_the_winner(run):
    r = ok(run(*VGG, "--gpus", "64", "-b", "16"))
    out = r.out
    assert "Winner: per-layer configuration" in out
    assert "Per-layer configuration" in out and "distribution" in out
    assert "vs best uniform" in out and "saves" in out
    assert "Memory per GPU" in out and "headroom" in out
    assert "Best uniform strategies" in out
    assert "shortest path (line graph)" in out
    assert "fc6" in out or "fc8" in out


def test_cli_json(run):
    r = ok(run(*VGG, "--gpus", "64", "-b", "16", "--format", "json"))
    doc = json.loads(r.out)
    assert doc["model"] == "VGG16" and doc["winner"]["gpus"] == 64
    (s,) = doc["searches"]
    lw = s["layerwise"]
    assert lw["saved_s"] > 0 and 0 < lw["saved_fraction"] < 1
    assert lw["memory_headroom_bytes"] == pytest.approx(
        lw["memory_limit_bytes"] - lw["memory_bytes"]
    )
    ranges = lw["ranges"]
    assert ranges[0]["from"] == "conv1_1" and ranges[-1]["to"] == "fc8"
    assert sum(x["layers"] for x in ranges) == 39
    assert {
        "distribution",
        "kind",
        "p1",
        "p2",
        "compute_s",
        "communication_s",
        "redistribution_s",
        "memory_bytes",
    } <= set(ranges[0])
    assert lw["search"]["method"].startswith("shortest path") and lw["search"]["proven_optimal"]
    assert s["best_uniform"]["rank"] == 1
    assert s["winner"] == "layer-wise"
    assert lw["point"]["strategy"] == "layer-wise"
    assert lw["point"]["total_s"] == pytest.approx(s["best_uniform"]["total_s"] - lw["saved_s"])


def test_cli_writes_a_configuration_that_evaluate_reads(run, tmp_path):
    out = tmp_path / "vgg16-64.yaml"
    r = ok(run(*VGG, "--gpus", "64", "-b", "16", "-o", str(out), "--format", "json"))
    searched = json.loads(r.out)["searches"][0]["layerwise"]["point"]["total_s"]
    cfg = load_layerwise(out)
    assert cfg.gpus == 64 and cfg.batch == 1024
    assert len(bind_layerwise(cfg, load_model("vgg16"))) == 39
    assert out.read_text().startswith("# Layer-wise configuration written by `oracle search`")
    r = ok(run(*VGG, "--evaluate", str(out), "--format", "json"))
    doc = json.loads(r.out)["searches"][0]
    assert doc["given"] is True
    assert doc["layerwise"]["point"]["total_s"] == pytest.approx(searched, rel=1e-12)
    assert doc["search_best"]["point"]["total_s"] == pytest.approx(searched, rel=1e-12)
    r = ok(run(*VGG, "--evaluate", str(out)))
    assert "Given per-layer configuration" in r.out and "as fast" in r.out


def test_cli_max_gpus(run):
    r = ok(run("search", "-m", "alexnet", "-s", "abci", "-p", "alexnet_v100", "--gpus", "4", "--max-gpus", "16",
               "-b", "32", "--format", "json"))  # fmt: skip
    doc = json.loads(r.out)
    assert [s["gpus"] for s in doc["searches"]] == [4, 8, 16]
    r = ok(
        run(
            "search",
            "-m",
            "alexnet",
            "-s",
            "abci",
            "-p",
            "alexnet_v100",
            "--max-gpus",
            "8",
            "-b",
            "32",
        )
    )
    assert "Fastest over 1, 2, 4, 8 GPUs" in r.out


def test_cli_distributions_option(run):
    r = ok(
        run(*VGG, "--gpus", "16", "-b", "16", "--distributions", "data,spatial", "--format", "json")
    )
    kinds = {x["kind"] for x in json.loads(r.out)["searches"][0]["layerwise"]["ranges"]}
    assert kinds <= {"data", "spatial"}


@pytest.mark.parametrize(
    "args,message",
    [
        (("--gpus", "8", "--distributions", "data,spacial"), "did you mean 'spatial'"),
        (("-b", "16"), "give --gpus N"),
        (("--gpus", "8", "-b", "16", "-B", "128"), "not both"),
        (("--gpus", "8", "--max-gpus", "4"), "below --gpus"),
        (("--gpus", "8", "--strategy", "dta"), "unknown strategy"),
    ],
)
def test_cli_errors(run, args, message):
    r = run(*VGG, *args)
    assert r.code == 2, r.out
    assert message in r.err
    assert "Traceback" not in r.err


@pytest.mark.parametrize("option", ["--gpus", "--max-gpus"])
def test_the_search_budget_of_gpus_says_it_is_one(run, tmp_path, option):
    """--gpus 100000 stopped at click's '1<=x<=65536' where every other GPU count goes to
    10^7: the search's own budget now says what it is; beyond 10^7, the shared limit's
    words; a layer-wise file's gpus the same budget."""
    from test_robustness import one_error

    one_error(run(*VGG, option, "100000"), option, "got 100,000", "per-layer search takes at most 65,536 GPUs",
              "budget")  # fmt: skip
    one_error(run(*VGG, option, "100000000"), option, "expected a GPU count >= 1 and <= 10,000,000")
    one_error(run(*VGG, option, "１６"), option, "plain digits 0-9", "<= 10,000,000")
    big = tmp_path / "big.yaml"
    big.write_text("model: VGG16\ngpus: 100000\nlayers:\n  - {from: conv1_1, to: fc8, distribution: data}\n")
    one_error(run(*VGG, "--evaluate", str(big)), f"{big}: gpus: got 100,000", "at most 65,536 GPUs")


def test_cli_evaluate_errors(run, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "model: VGG16\ngpus: 8\nlayers:\n  - {from: conv1_1, to: fc7, distribution: data}\n"
    )
    r = run(*VGG, "--evaluate", str(bad))
    assert r.code == 2 and "to 'fc8' are not covered" in r.err and f"{bad}:4" in r.err
    good = tmp_path / "good.yaml"
    good.write_text(
        "model: VGG16\ngpus: 8\nlayers:\n  - {from: conv1_1, to: fc8, distribution: data}\n"
    )
    r = run(*VGG, "--evaluate", str(good), "--gpus", "16")
    assert r.code == 2 and "differs from the file's gpus" in r.err
    r = ok(run(*VGG, "--evaluate", str(good), "-b", "8"))
    assert "Given per-layer configuration" in r.out


def test_memory_limit_lagrangian(tmp_path):
    """When the fastest assignment does not fit in GPU memory, the search returns one
    that fits (Lagrangian relaxation), no faster than the best that fits."""
    ctx = small_context(tmp_path, RESIDUAL_MODEL)
    dists = [Dist.data(4), Dist("filter", 1, 4), Dist("spatial", 1, 4)]
    B = 64.0
    free = search_layerwise(ctx, 4, B, costs=Costs(ctx, 4, B, dists))
    costs = free.costs
    fastest_mem = free.assessment.point.memory_bytes
    least = float(np.where(costs.feasible, costs.mem_bytes, np.inf).min(axis=1).sum())
    assert least < fastest_mem
    limit = 0.5 * (least + fastest_mem)
    small = SYSTEM.replace("memory_GB: 16", f"memory_GB: {limit / 1e9!r}")
    (tmp_path / "s.yaml").write_text(small)
    ctx2 = Context(
        ctx.model, load_system(str(tmp_path / "s.yaml")), tuple(_times(ctx)), Options(), ""
    )
    res = search_layerwise(ctx2, 4, B, costs=Costs(ctx2, 4, B, dists))
    assert res.memory_constrained and not res.proven
    assert res.assessment.point.memory_bytes <= limit
    assert res.assessment.point.feasible
    # the best assignment that fits, by enumeration: the relaxation cannot beat it,
    # and here (a small model) it finds it
    grids, total = all_totals(res.costs)
    fits = res.costs.mem_bytes[np.arange(res.costs.G)[:, None], grids].sum(axis=0) <= limit
    best_fit = float(total[fits].min())
    assert res.assessment.point.total_s >= best_fit * (1 - 1e-9)
    assert res.assessment.point.total_s <= best_fit * 1.05
