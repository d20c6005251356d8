"""collectives: table — measured collective times used instead of α-β (issue 5)."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import cli_runner

from oracle import api
from oracle.cli.main import cli
from oracle.compute.network import table_time
from oracle.load import load_model, load_system
from oracle.model import CollectiveTable

REPO = Path(__file__).resolve().parents[1]
TABLE = CollectiveTable("allreduce", 8, 8, (1e3, 1e6, 1e7), (1e-5, 1e-4, 9e-4))


def test_table_time_by_hand():
    assert table_time(TABLE, np.array(1e6)) == pytest.approx(1e-4)  # a measured size
    # log-log midpoint between (1e3, 1e-5) and (1e6, 1e-4): size 10^4.5 -> time 10^-4.5
    assert table_time(TABLE, np.array(10**4.5)) == pytest.approx(10**-4.5)
    assert table_time(TABLE, np.array(10.0)) == pytest.approx(1e-5)  # latency floor
    # beyond the largest size: the last bandwidth, (9e-4 - 1e-4) / (1e7 - 1e6) s/B
    slope = 8e-4 / 9e6
    assert table_time(TABLE, np.array(2e7)) == pytest.approx(9e-4 + 1e7 * slope)


def _system(tmp_path, tables: str) -> Path:
    p = tmp_path / "s.yaml"
    p.write_text(textwrap.dedent("""
        name: T
        gpu: {model: x, memory_GB: 1000}
        gpus_per_node: 4
        nodes: 8
        network:
          - {name: a, max_gpus: 4, alpha_s: 1.0e-5, beta_s_per_byte: 1.0e-10}
          - {name: b, max_gpus: 32, alpha_s: 1.0e-4, beta_s_per_byte: 1.0e-9}
    """) + textwrap.dedent(tables))
    return p


TABLES = """
collectives:
  mode: table
  tables:
    - {operation: allreduce, gpus: 8, nodes: 2, bytes: [1.0e+6, 1.0e+9], seconds: [1.0e-3, 0.5]}
"""


def test_data_parallel_uses_the_table_at_exactly_its_scale(tmp_path):
    s = _system(tmp_path, TABLES)
    pts = api.predict("alexnet", s, "alexnet_v100", gpus=[8, 16], strategies="data", batch_per_gpu=32)
    m = 4 * load_model("alexnet").parameters  # 244 MB: between the two sizes
    expected_8 = math.exp(np.interp(math.log(m), [math.log(1e6), math.log(1e9)], [math.log(1e-3), math.log(0.5)]))
    p8, p16 = pts
    assert p8.communication_s / p8.iterations_per_epoch == pytest.approx(expected_8)
    # 16 GPUs: no table, the ring α-β of level b
    assert p16.communication_s / p16.iterations_per_epoch == pytest.approx(2 * 15 * (1e-4 + m / 16 * 1e-9))


def test_alpha_beta_mode_ignores_tables(tmp_path):
    s = load_system(_system(tmp_path, TABLES.replace("mode: table", "mode: alpha-beta")))
    assert s.collective_tables == ()


@pytest.mark.parametrize(
    "bad,needle",
    [
        ("seconds: [1.0e-3, 0.5]", "seconds: [1.0e-3]"),
        ("bytes: [1.0e+6, 1.0e+9]", "bytes: [1.0e+9, 1.0e+6]"),
        ("operation: allreduce", "operation: alltoall"),
    ],
)
def test_bad_tables_exit_2(tmp_path, bad, needle):
    s = _system(tmp_path, TABLES.replace(bad, needle))
    res = cli_runner().invoke(cli, ["show", "system", str(s)])
    assert res.exit_code == 2 and "collectives.tables[0]" in res.stderr


def test_fit_writes_tables_that_load(tmp_path):
    logs = sorted(str(p) for p in (REPO / "data" / "nccl-tests" / "abci-v100").glob("*.txt"))
    out = tmp_path / "abci-tables.yaml"
    res = cli_runner().invoke(cli, ["fit", "network", "--system", "abci-nominal", "--collectives", "table", "-o", str(out), *logs])
    assert res.exit_code == 0, res.stderr
    s = load_system(out)
    assert sorted((t.gpus, t.span) for t in s.collective_tables) == [(4, 4), (8, 8), (16, 16), (32, 32), (64, 64), (128, 128)]
    t8 = s.table("allreduce", 8, 8)
    # inter_vnode_2nodes.txt line 47: 33554432 bytes, 2970.9 us out of place
    assert t8.bytes[-1] == 33554432 and t8.seconds[-1] == pytest.approx(2970.9e-6)
