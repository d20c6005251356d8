#!/bin/sh
# Refit the Simple lines of systems/gb200-nvl72.yaml (inside a rack and between racks) to
# CoreWeave's public nccl-tests all-reduce runs on 1, 2 and 20 GB200 NVL72 racks, copied into
# data/nccl-tests/gb200-nvl72-coreweave/ (see data/README.md). The runs start at 512 MiB, so
# only the Simple lines are fitted (--fit-protocol Simple): LL keeps the file's NCCL constants
# and LL128 inside a rack its NCCL latency at 0.92 of the fitted Simple bandwidth; between
# racks the runs' NCCL 2.26.2 ran no LL128 (the file's collectives: ll128_across_nodes). The
# fitted lines are printed; the shipped file holds them rounded to four digits
# (tests/test_gb200.py checks that they agree). Median |error| 8.3%, 0.7%, 1.2% on 1, 2 and
# 20 racks (exit 1 above 10%).
#
# Usage (from anywhere; needs `oracle` installed):
#   sh scripts/fit_gb200.sh
set -eu
cd "$(dirname "$0")/.."
ORACLE=${ORACLE:-oracle}
exec $ORACLE fit network \
  --system systems/gb200-nvl72.yaml \
  --fit-protocol Simple \
  --max-median-error 0.10 \
  data/nccl-tests/gb200-nvl72-coreweave/all_reduce_18nodes.txt \
  data/nccl-tests/gb200-nvl72-coreweave/all_reduce_36nodes.txt \
  data/nccl-tests/gb200-nvl72-coreweave/all_reduce_360nodes.txt
