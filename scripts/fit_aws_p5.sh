#!/bin/sh
# Refit the inter-node (EFA) level of systems/aws-p5-h100.yaml to the nccl-tests all-reduce
# runs on 2 to 32 p5.48xlarge copied into data/nccl-tests/h100-aws-p5/ (see data/README.md),
# and check that NCCL's collective model reproduces every node count's times with a median
# relative error of at most 10% (exit 1 otherwise).  The fitted lines are printed; the
# shipped file holds them rounded to four digits (tests/test_aws_p5.py checks that they agree).
#
# Usage (from anywhere; needs `oracle` installed):
#   sh scripts/fit_aws_p5.sh
#
# The logs are written from the source table by scripts/aws_p5_logs.py first.  Every
# inter-node line is bounded by the instance's 400 GB/s of EFA (32 x 100 Gb/s): the logs
# start at 32 MiB, which alone leaves the LL and LL128 lines free.
set -eu
cd "$(dirname "$0")/.."
ORACLE=${ORACLE:-oracle}
PYTHON=${PYTHON:-python}
$PYTHON scripts/aws_p5_logs.py
exec $ORACLE fit network \
  --system systems/aws-p5-h100.yaml \
  --max-bandwidth-GB-per-s 400 \
  --max-median-error 0.10 \
  data/nccl-tests/h100-aws-p5/all_reduce_2nodes.txt \
  data/nccl-tests/h100-aws-p5/all_reduce_4nodes.txt \
  data/nccl-tests/h100-aws-p5/all_reduce_8nodes.txt \
  data/nccl-tests/h100-aws-p5/all_reduce_16nodes.txt \
  data/nccl-tests/h100-aws-p5/all_reduce_32nodes.txt
