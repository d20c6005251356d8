#!/usr/bin/env bash
# Regenerate the pictures and the example report the README shows (docs/).
#
# Usage:  scripts/make_docs.sh            (from anywhere; needs oracle[plot] installed)
#
# Writes
#   docs/scaling-resnet50-abci.png   the scaling plot of the README
#   docs/example-report.html         a complete `oracle report`, measured runs included
# for ResNet-50 on ABCI, 4 to 1,024 GPUs, 32 samples per GPU, memory reuse γ = 0.5
# (at the default γ = 1 nothing fits in a 16 GB V100: see the README).  Outputs carry
# no timestamps, so running it again changes nothing unless the projections (or the
# matplotlib version) changed.  ORACLE=/path/to/oracle picks another executable.
set -euo pipefail

cd "$(dirname "$0")/.."
oracle=${ORACLE:-oracle}
mkdir -p docs

sweep=(-m resnet50 -s abci -p resnet50_v100 --gpus 4-1024 --batch-per-gpu 32 --memory-reuse 0.5)

"$oracle" plot scaling "${sweep[@]}" --dpi 100 -o docs/scaling-resnet50-abci.png
"$oracle" report "${sweep[@]}" --measured validation/abci-paradl.csv -o docs/example-report.html

ls -l docs/scaling-resnet50-abci.png docs/example-report.html
