#!/bin/sh
# Regenerate systems/abci.yaml from the nccl-tests logs copied into data/
# (see data/README.md for their source), and check that the fitted model reproduces the
# measured all-reduce times of messages >= 1 MiB with a median relative error of at most
# 12%, per log and overall (exit 1 and write nothing otherwise).
#
# Usage (from anywhere; needs `oracle` installed, e.g. the project's .venv):
#   sh scripts/fit_abci.sh            # rewrites systems/abci.yaml, prints the fit
#
# The fit: one level per measured span (4, 8, 16, 32, 64, 128 GPUs), α and β by least
# squares of the relative error over the sizes from half the peak bus bandwidth up
# (oracle/compute/calibration/fit.py), and below them NCCL's LL and LL128 protocol lines fitted to
# the smaller sizes (--protocols 3, oracle/compute/protocols.py); out-of-place times;
# the outermost level covers all of ABCI.
set -eu
cd "$(dirname "$0")/.."
ORACLE=${ORACLE:-oracle}
exec $ORACLE fit network \
  --system systems/abci-nominal.yaml \
  --name ABCI \
  --max-median-error 0.12 \
  --protocols 3 \
  --source "nccl-tests all_reduce_perf on ABCI compute nodes (V), aistabci/abci2.0benchmark allreduce/ (2021; NCCL 2.8.4, CUDA 11.2.2, OpenMPI 4.0.5, nccl-tests 0b30de5); copies in data/nccl-tests/abci-v100/, see data/README.md" \
  -o systems/abci.yaml \
  data/nccl-tests/abci-v100/intra_vnode_4nodes.txt \
  data/nccl-tests/abci-v100/inter_vnode_2nodes.txt \
  data/nccl-tests/abci-v100/inter_vnode_4nodes.txt \
  data/nccl-tests/abci-v100/inter_vnode_8nodes.txt \
  data/nccl-tests/abci-v100/inter_vnode_16nodes.txt \
  data/nccl-tests/abci-v100/inter_vnode_32nodes.txt
