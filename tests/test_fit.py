"""``oracle fit network``: benchmark-log parsing, the α-β fit, the written system file.

Real data: the nccl-tests and OSU all-reduce logs of ABCI copied into ``data/``
(see data/README.md).  Synthetic logs are generated from known α, β in nccl-tests and
OSU format and must be recovered to 1e-6.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import numpy as np
import pytest
from conftest import cli_runner

from oracle.cli.main import cli
from oracle.compute.calibration.fit import FitOptions, coefficients, fit_network
from oracle.errors import OracleError
from oracle.load.benchlogs import load_benchlog, name_layout, parse_benchlog

ROOT = Path(__file__).resolve().parent.parent
NCCL = ROOT / "data" / "nccl-tests" / "abci-v100"
OSU = ROOT / "data" / "osu" / "abci-v100"
NCCL_LOGS = [
    NCCL / f
    for f in (
        "intra_vnode_4nodes.txt",
        "inter_vnode_2nodes.txt",
        "inter_vnode_4nodes.txt",
        "inter_vnode_8nodes.txt",
        "inter_vnode_16nodes.txt",
        "inter_vnode_32nodes.txt",
    )
]
SHIPPED = ROOT / "systems" / "abci.yaml"
MIB = 1 << 20


def run(*args: str):
    return cli_runner().invoke(cli, [str(a) for a in args], catch_exceptions=True)


# -- synthetic logs ---------------------------------------------------------------------

SIZES = [4 * 2**i for i in range(24)]  # 4 B .. 32 MiB, as nccl-tests -b 4 -e 32M -f 2


def nccl_text(op: str, p: int, alpha: float, beta: float, per_host: int = 4, declare: bool = True) -> str:
    """An nccl-tests log (rank table, header, rows) whose times follow the ring model."""
    a, b = coefficients(op, p)
    names = {"allreduce": "all_reduce_perf", "allgather": "all_gather_perf"}
    lines = [
        "[1623231099.720529] [g0001:1:0]    ucp_context.c:1437 UCX  WARN  UCP version is incompatible",
        "# nThread 1 nGpus 1 minBytes 4 maxBytes 33554432 step: 2(factor) warmup iters: 5 iters: 100",
        "#",
    ]
    if declare:
        lines.insert(1, f"# Collective test starting: {names[op]}")
    lines.append("# Using devices")
    for r in range(p):
        lines.append(
            f"#   Rank {r:2d} Pid {1000 + r:6d} on {'h%03d' % (r // per_host):>10s} device {r % per_host:2d}"
            " [0x3d] Tesla V100-SXM2-16GB"
        )
    lines += [
        "#",
        "#                                                     out-of-place                       in-place",
        "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error",
        "#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)",
    ]
    redop = "sum" if op == "allreduce" else "none"
    for m in SIZES:
        t = a * alpha + b * m * beta
        algbw = m / t / 1e9
        lines.append(
            f"{m:12d} {m // 4:13d}   float {redop:>7s} {t * 1e6:.9f} {algbw:7.2f} {algbw * b:7.2f}  1e-07"
            f" {t * 1e6 * 1.01:.9f} {algbw / 1.01:7.2f} {algbw * b / 1.01:7.2f}  1e-07"
        )
    lines += ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 1.0", "#"]
    return "\n".join(lines) + "\n"


def osu_text(op: str, p: int, alpha: float, beta: float) -> str:
    """An OSU log; for all-gather the Size column is the bytes each rank sends."""
    a, b = coefficients(op, p)
    title = {"allreduce": "Allreduce", "allgather": "Allgather"}[op]
    lines = ["", f"# OSU MPI-CUDA {title} Latency Test v5.7", "# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations"]
    for m in SIZES:
        total = m * p if op == "allgather" else m
        t = (a * alpha + b * total * beta) * 1e6
        lines.append(f"{m:<10d} {t:20.9f} {t:17.9f} {t:17.9f} {1000:11d}")
    return "\n".join(lines) + "\n"


# -- parsing ----------------------------------------------------------------------------


def test_nccl_rank_table_gives_gpus_and_nodes():
    log = load_benchlog(NCCL / "inter_vnode_2nodes.txt")
    assert (log.tool, log.operation) == ("nccl-tests", "allreduce")
    assert (log.gpus, log.nodes, log.gpus_per_node) == (8, 2, 4)
    assert log.hosts[:4] == ("g0185",) * 4 and log.hosts[4:] == ("g0186",) * 4
    assert len(log.rows) == 24 and len(log.in_place_rows) == 24
    assert log.rows[0] == (4, pytest.approx(17.98e-6))
    assert log.in_place_rows[-1] == (33554432, pytest.approx(2969.8e-6))
    assert "busbw/algbw" in log.operation_from  # no header line, no op in the file name
    # the rank table wins over the misleading "4nodes" job name
    intra = load_benchlog(NCCL / "intra_vnode_4nodes.txt")
    assert (intra.gpus, intra.nodes, intra.gpus_per_node) == (4, 1, 4)
    big = load_benchlog(NCCL / "inter_vnode_32nodes.txt")
    assert (big.gpus, big.nodes) == (128, 32)


@pytest.mark.parametrize(
    "name, nodes, gpus",
    [
        ("inter_vnode_8nodes.txt", 8, 32),
        ("inter_vnode_2nodes.txt", 2, 8),
        ("intra_vnode_4nodes.txt", 1, 4),
    ],
)
def test_osu_file_name_rule(name, nodes, gpus):
    log = load_benchlog(OSU / name, gpus_per_node=4)
    assert (log.tool, log.operation) == ("osu", "allreduce")
    assert (log.nodes, log.gpus, log.gpus_per_node) == (nodes, gpus, 4)
    assert len(log.rows) == 24 and log.rows[0][0] == 4 and log.rows[-1][0] == 32 * MIB
    if name == "inter_vnode_2nodes.txt":
        assert log.rows[0][1] == pytest.approx(28.87e-6)


def test_osu_needs_gpus_per_node_when_the_name_gives_only_nodes():
    with pytest.raises(OracleError) as e:
        load_benchlog(OSU / "inter_vnode_8nodes.txt")
    assert "inter_vnode_8nodes.txt" in str(e.value) and "--gpus-per-node" in str(e.value)


def test_file_name_rule_words():
    assert name_layout("intra_vnode_4nodes.txt")[:2] == (1, None)
    assert name_layout("inter_vnode_16nodes.txt")[:2] == (16, None)
    assert name_layout("run-2node-8gpus.log")[:2] == (2, 8)
    assert name_layout("allreduce.txt")[:2] == (None, None)
    assert name_layout("x_12nodesfoo.txt")[:2] == (None, None)  # not a word of its own


def test_osu_counts_from_options(tmp_path):
    p = tmp_path / "osu_run.txt"
    p.write_text((OSU / "inter_vnode_2nodes.txt").read_text())
    log = load_benchlog(p, gpus=6, gpus_per_node=4)
    assert (log.gpus, log.nodes) == (6, 2)
    r = run("fit", "network", "-f", "json", "--gpus", f"{p}=8", "--gpus-per-node", "4", p)
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [lv["span"] for lv in doc["levels"]] == [8]


def test_operation_from_header_and_conflict(tmp_path):
    text = nccl_text("allgather", 8, 5e-6, 5e-11)
    log = parse_benchlog(text, "x.txt")
    assert log.operation == "allgather" and "Collective test starting" in log.operation_from
    with pytest.raises(OracleError, match="--operation allreduce"):
        parse_benchlog(text, "x.txt", operation="allreduce")
    # without the header line: inferred from busbw/algbw and redop 'none'
    log = parse_benchlog(nccl_text("allgather", 8, 5e-6, 5e-11, declare=False), "x.txt")
    assert log.operation == "allgather"


def test_allreduce_and_reduce_are_ambiguous_on_two_gpus():
    text = nccl_text("allreduce", 2, 5e-6, 5e-11, declare=False)
    with pytest.raises(OracleError, match="--operation"):
        parse_benchlog(text, "two.txt")
    assert parse_benchlog(text, "two.txt", operation="allreduce").operation == "allreduce"


def test_noise_lines_are_skipped():
    text = nccl_text("allreduce", 8, 5e-6, 5e-11)
    noisy = text.replace("# Using devices", "g0001:1:1 [0] NCCL INFO Bootstrap : Using ib0\n# Using devices")
    noisy += "[g0001:00001] 7 more processes have sent help message help-mpi-btl-openib.txt\n"
    assert parse_benchlog(noisy, "n.txt").rows == parse_benchlog(text, "n.txt").rows


# -- malformed logs ---------------------------------------------------------------------

MALFORMED = {
    "no_rows.txt": "# nThread 1 nGpus 1 minBytes 4\n# Using devices\n#   Rank  0 Pid 1 on h device  0 [0x3d] V100\n",
    "bad_number.txt": "# Using devices\n#   Rank  0 Pid 1 on h device  0 [0x3d] V100\n#   Rank  1 Pid 2 on h device  1 [0x3d] V100\n"
    "           4             1   float     sum    8.4x    0.00    0.00  1e-07     8.34    0.00    0.00  0e+00\n",
    "short_row.txt": "# Using devices\n#   Rank  0 Pid 1 on h device  0 [0x3d] V100\n"
    "           4             1   float     sum    8.48    0.00\n",
    "not_a_log.txt": "hello\nworld\n",
    "osu_no_rows.txt": "# OSU MPI-CUDA Allreduce Latency Test v5.7\n# Size       Avg Latency(us)\n",
}


@pytest.mark.parametrize("name", sorted(MALFORMED) + ["binary.txt", "empty.txt", "missing.txt"])
def test_malformed_log_is_one_line_exit_2(tmp_path, name):
    p = tmp_path / name
    if name == "binary.txt":
        p.write_bytes(b"\x00\x01\x02# OSU")
    elif name == "empty.txt":
        p.write_text("")
    elif name != "missing.txt":
        p.write_text(MALFORMED[name])
    r = run("fit", "network", "--gpus-per-node", "4", "--gpus", "2", p)
    assert r.exit_code == 2, (r.stdout, r.stderr)
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("oracle: error: ") and name in lines[0]
    assert "Traceback" not in r.stderr + r.stdout


def test_malformed_row_names_its_line(tmp_path):
    p = tmp_path / "bad_number.txt"
    p.write_text(MALFORMED["bad_number.txt"])
    r = run("fit", "network", p)
    assert r.exit_code == 2
    assert f"{p}:4:" in r.stderr and "8.4x" in r.stderr


# -- the fit ----------------------------------------------------------------------------


@pytest.mark.parametrize("op, p", [("allreduce", 8), ("allreduce", 64), ("allgather", 16)])
def test_synthetic_nccl_log_is_recovered(op, p):
    alpha, beta = 3.7e-6, 1.0 / 18.5e9
    log = parse_benchlog(nccl_text(op, p, alpha, beta), f"synthetic_{p}.txt")
    for opt in (FitOptions(), FitOptions(min_bytes=0), FitOptions(in_place=True, bw_fraction=0.25)):
        fit = fit_network([log], opt)
        (lv,) = fit.levels
        k = 1.01 if opt.in_place else 1.0  # the synthetic in-place times are 1% slower
        assert lv.alpha_s == pytest.approx(k * alpha, rel=1e-6)
        assert lv.beta_s_per_byte == pytest.approx(k * beta, rel=1e-6)
        assert lv.in_range.max < 1e-6 and not lv.constrained


def test_synthetic_osu_allgather_uses_total_bytes():
    alpha, beta = 2.5e-6, 1.0 / 7e9
    log = parse_benchlog(osu_text("allgather", 8, alpha, beta), "osu_allgather_2nodes.txt", gpus_per_node=4)
    assert (log.gpus, log.nodes, log.operation) == (8, 2, "allgather")
    assert log.rows[-1][0] == 8 * SIZES[-1]
    (lv,) = fit_network([log], FitOptions(min_bytes=0)).levels
    assert lv.alpha_s == pytest.approx(alpha, rel=1e-6)
    assert lv.beta_s_per_byte == pytest.approx(beta, rel=1e-6)


def test_logs_of_one_span_are_pooled_and_levels_follow_spans():
    a = parse_benchlog(nccl_text("allreduce", 8, 4e-6, 5e-11), "a.txt")
    b = parse_benchlog(nccl_text("allgather", 8, 4e-6, 5e-11), "b.txt")
    c = parse_benchlog(nccl_text("allreduce", 16, 5e-6, 6e-11), "c.txt")
    fit = fit_network([c, a, b], FitOptions(min_bytes=0), gpus_per_node=4, total_gpus=1024)
    assert [(lv.name, lv.span, lv.max_gpus) for lv in fit.levels] == [("n8", 8, 8), ("n16", 16, 1024)]
    assert fit.levels[0].files == ("a.txt", "b.txt") and fit.levels[0].operations == ("allgather", "allreduce")
    assert fit.levels[0].alpha_s == pytest.approx(4e-6, rel=1e-6)
    assert fit.levels[1].beta_s_per_byte == pytest.approx(6e-11, rel=1e-6)


def test_negative_alpha_is_refitted_at_the_floor():
    p = 8
    a, b = coefficients("allreduce", p)
    beta = 5e-11
    # t = B·m·β - 2 µs: the unconstrained intercept is negative
    text = "# Using devices\n" + "".join(
        f"#   Rank {r} Pid {r} on h{r // 4} device {r % 4} [0x3d] V100\n" for r in range(p)
    )
    for m in (1 << 20, 1 << 22, 1 << 24):
        t = (b * m * beta - 2e-6) * 1e6
        text += f"{m} {m // 4} float sum {t:.6f} 1.0 1.75 0 {t:.6f} 1.0 1.75 0\n"
    (lv,) = fit_network([parse_benchlog(text, "neg.txt")]).levels
    assert lv.alpha_s == pytest.approx(1e-9) and lv.beta_s_per_byte > 0
    assert "floor" in lv.constrained


def test_times_that_do_not_grow_are_an_error():
    text = "# Using devices\n" + "".join(f"#   Rank {r} Pid {r} on h device {r} [0x3d] V100\n" for r in range(4))
    for m, t in ((1 << 20, 300.0), (1 << 21, 200.0), (1 << 22, 100.0)):
        text += f"{m} {m // 4} float sum {t} 1.0 1.5 0 {t} 1.0 1.5 0\n"
    with pytest.raises(OracleError, match="do not grow"):
        fit_network([parse_benchlog(text, "flat.txt")], FitOptions(min_bytes=0))


def test_single_gpu_count_gives_one_level_covering_the_system(tmp_path):
    out = tmp_path / "one.yaml"
    r = run("fit", "network", "--system", "abci", "-o", out, NCCL / "inter_vnode_2nodes.txt")
    assert r.exit_code == 0, r.stderr
    from oracle.load.system import load_system

    s = load_system(out)
    assert [(lv.name, lv.max_gpus) for lv in s.network] == [("n8", 4352)]


def test_a_range_with_one_size_is_an_error(tmp_path):
    r = run("fit", "network", "--min-bytes", "32MiB", NCCL / "inter_vnode_2nodes.txt")
    assert r.exit_code == 2 and "need at least 2" in r.stderr


@pytest.mark.parametrize(("text", "size"), [
    ("1048576", 2**20), ("1M", 2**20), ("1MiB", 2**20), ("1miB", 2**20), ("1MB", 10**6), ("1 kB", 1000),
    ("1TiB", 2**40), ("1tIB", 2**40), ("1T", 2**40), ("1TB", 10**12), ("2GiB", 2**31), ("1.5KiB", 1536),
    ("1PiB", 2**50), ("1PB", 10**15), ("1152921504606846976", 2**60), ("1024P", 2**60), ("12B", 12),
])  # fmt: skip
def test_byte_sizes_take_binary_and_decimal_units_in_any_case(text, size):
    """K..P and KiB..PiB are powers of 1024 (nccl-tests' -b/-e), KB..PB of 1000, the prefix in
    any case; exact up to 2^60."""
    from oracle.cli.types import ByteSize

    assert ByteSize().convert(text, None, None) == size


@pytest.mark.parametrize(("text", "says"), [
    ("١٢", "not a byte count"), ("１２", "not a byte count"), ("1_2", "not a byte count"),  # plain digits only
    ("1152921504606846977", "more than 2^60"), ("1025P", "more than 2^60"),  # 2^60 + 1 was read as 2^60
    ("1Mb", "lower-case b is bits"), ("1mb", "lower-case b is bits"), ("1mib", "lower-case b is bits"),
    ("8b", "lower-case b is bits"), ("1.5", "not a whole number of bytes"),
])  # fmt: skip
@pytest.mark.parametrize("option", ["--min-bytes", "--max-bytes"])
def test_byte_sizes_refused(option, text, says):
    """--min-bytes ١٢ and １２ were read as 12 (every other option takes ASCII digits only),
    2^60 + 1 was rounded to 2^60 by float arithmetic, and 1Mb read as 10^6 bytes."""
    from conftest import run_cli
    from test_robustness import one_error

    one_error(run_cli("fit", "network", option, text, NCCL / "inter_vnode_2nodes.txt"), option, says)


def test_a_terabyte_bound_is_taken(tmp_path):
    """--max-bytes 1TiB bounds nothing in a log up to 1 GiB: the fit is the unbounded one."""
    log = NCCL / "inter_vnode_2nodes.txt"
    r, plain = run("fit", "network", "--max-bytes", "1TiB", "-f", "json", log), run("fit", "network", "-f", "json", log)
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["levels"] == json.loads(plain.stdout)["levels"]
    r = run("fit", "network", "--max-bytes", "1XiB", log)
    assert r.exit_code == 2 and "--max-bytes" in r.stderr and "not a byte count" in r.stderr


def test_mixed_tools_at_one_span_are_an_error():
    r = run("fit", "network", "--gpus-per-node", "4", NCCL / "inter_vnode_2nodes.txt", OSU / "inter_vnode_2nodes.txt")
    assert r.exit_code == 2 and "different tools" in r.stderr


# -- the ABCI copies: reproduction and the shipped system ----------------------------------


def test_abci_allreduce_reproduced_within_12_percent_median_at_1mib_and_up():
    """The shipped fitted system reproduces every measured all-reduce of >= 1 MiB with
    a median relative error <= 12%, per log and overall (computed with the cost
    engine's own collective formula, not the fit's)."""
    from oracle.compute.network import allreduce, link, span_contiguous
    from oracle.load.system import load_system

    s = load_system(SHIPPED)
    overall = []
    report = []
    for path in NCCL_LOGS:
        log = load_benchlog(path)
        lk = link(s, span_contiguous(log.gpus, s.gpus_per_node), "allreduce")
        rel = [abs(allreduce(log.gpus, m, lk) - t) / t for m, t in log.rows if m >= MIB]
        assert len(rel) == 6
        med = statistics.median(rel)
        report.append(f"{path.name}: {lk.level} median {100 * med:.1f}%")
        assert med <= 0.12, report
        overall += rel
    print("\n".join(report), f"\noverall median {100 * statistics.median(overall):.1f}%")
    assert statistics.median(overall) <= 0.12


def test_shipped_file_matches_a_regeneration(tmp_path):
    out = tmp_path / "abci.yaml"
    r = run("fit", "network", "--system", "abci-nominal", "--name", "ABCI", "--max-median-error", "0.12",
            "-o", out, *NCCL_LOGS)
    assert r.exit_code == 0, r.stderr

    from oracle.load.system import load_system

    new, shipped = load_system(out), load_system(SHIPPED)
    assert [(lv.name, lv.max_gpus, lv.alpha_s, lv.beta_s_per_byte) for lv in new.network] == [
        (lv.name, lv.max_gpus, lv.alpha_s, lv.beta_s_per_byte) for lv in shipped.network
    ]
    assert (new.name, new.gpus_per_node, new.nodes, new.links_per_node) == (
        shipped.name, shipped.gpus_per_node, shipped.nodes, shipped.links_per_node
    )


def test_written_system_loads_and_predicts(tmp_path):
    out = tmp_path / "fitted.yaml"
    r = run("fit", "network", "--system", "abci", "-f", "json", "-o", out, *NCCL_LOGS)
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [lv["name"] for lv in doc["levels"]] == ["n4", "n8", "n16", "n32", "n64", "n128"]
    assert doc["levels"][-1]["max_gpus"] == 4352
    assert all(lv["alpha_s"] > 0 and lv["beta_s_per_byte"] > 0 for lv in doc["levels"])
    text = out.read_text()
    assert text.startswith("# ABCI (systems/abci.yaml)") and "oracle fit network" in text
    r = run("predict", "-m", "resnet50", "-s", out, "-p", "resnet50_v100", "--gpus", "8", "-b", "32", "-f", "json")
    assert r.exit_code == 0, r.stderr
    points = json.loads(r.stdout)
    assert points and all(pt["system"] == "ABCI (fitted network)" for pt in points)
    data = next(pt for pt in points if pt["strategy"] == "data")
    assert data["communication_s"] > 0


def test_check_failure_writes_nothing(tmp_path):
    out = tmp_path / "x.yaml"
    r = run("fit", "network", "--system", "abci", "--max-median-error", "0.001", "-o", out, *NCCL_LOGS)
    assert r.exit_code == 1 and "check failed" in r.stderr
    assert not out.exists()


def test_network_snippet_without_system(tmp_path):
    out = tmp_path / "net.yaml"
    r = run("fit", "network", "-o", out, NCCL / "intra_vnode_4nodes.txt", NCCL / "inter_vnode_2nodes.txt")
    assert r.exit_code == 0, r.stderr
    import yaml

    doc = yaml.safe_load(out.read_text())
    assert list(doc) == ["network"]
    assert [lv["max_gpus"] for lv in doc["network"]] == [4, 8]
    assert all(isinstance(lv["alpha_s"], float) for lv in doc["network"])


def test_fit_residuals_on_the_copies_are_reported():
    logs = [load_benchlog(p) for p in NCCL_LOGS]
    fit = fit_network(logs, gpus_per_node=4, total_gpus=4352)
    assert [lv.span for lv in fit.levels] == [4, 8, 16, 32, 64, 128]
    for lv in fit.levels:
        assert lv.in_range.points >= 3 and lv.in_range.median < 0.1
        assert lv.range_bytes[1] == 32 * MIB and lv.range_bytes[0] >= MIB
    assert fit.overall_large.points == 36 and fit.overall_large.median <= 0.12
    # bandwidth degrades with scale: the 128-GPU level is the slowest inter-node one
    assert fit.levels[-1].bandwidth_Bps < min(lv.bandwidth_Bps for lv in fit.levels[1:-1])
    assert np.isfinite([lv.alpha_s for lv in fit.levels]).all()


def test_fewer_gpus_per_node_than_the_base_system_is_said(run):
    """Issue 17: 4-GPU-per-node logs fitted onto an 8-GPU-per-node base land on the level of
    their nodes' span (an 8-GPU log on n16); the fit says so instead of relabelling silently."""
    log = parse_benchlog((NCCL / "inter_vnode_2nodes.txt").read_text(), "two-nodes.txt")
    assert (log.gpus, log.nodes, log.gpus_per_node) == (8, 2, 4)
    fit = fit_network([log], gpus_per_node=8)
    assert [lv.name for lv in fit.levels] == ["n16"]
    assert fit.warnings == (
        "two-nodes.txt: 8 GPUs on 2 nodes (4 per node) are fitted as level n16, the span of 2 whole nodes of the"
        " base system (8 GPUs each), not n8; a base system with 4 GPUs per node keeps n8",
    )
    assert fit_network([log], gpus_per_node=4).warnings == ()
    r = run("fit", "network", "--system", "bigbasin-p100", NCCL / "inter_vnode_2nodes.txt", "-f", "json")
    assert r.code == 0, r.err
    assert "fitted as level n16" in r.err and "not n8" in r.err
    # NCCL's model carries the node counts: the two 4-GPU hosts are two NCCL nodes, not one
    # node of the base system's 8 (which fitted the network's times as NVSwitch lines)
    r = run("fit", "network", "--system", "dgx-a100-40gb", NCCL / "inter_vnode_2nodes.txt", "-f", "json")
    assert r.code == 0 and "fitted as level" not in r.err, r.err
    doc = json.loads(r.out)
    assert doc["logs"][0]["nccl_nodes"] == 2 and {ln["where"] for ln in doc["lines"] if not ln["fixed"]} == {"inter"}
    # a partly filled node (3 GPUs on 2 nodes of 4) is said the same way, without the advice
    osu = load_benchlog(OSU / "inter_vnode_2nodes.txt", gpus=3, gpus_per_node=4)
    (warning,) = fit_network([osu], gpus_per_node=4).warnings
    assert warning.endswith("are fitted as level n8, the span of 2 whole nodes of the base system (4 GPUs each), not n3")
