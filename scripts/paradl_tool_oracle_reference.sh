#!/bin/sh
# Regenerates validation/paradl-tool-oracle-models.csv (issue 27): ParaDL's own tool, run
# UNCHANGED on oracle's shipped AlexNet, VGG16, ResNet-50 and CosmoFlow as the `paradl` stack
# sees them (scripts/paradl_tool_oracle_models.py writes them as .net/.lc/.plat files), with the
# batch options of ParaDL's scripts. tests/test_paradl_stack.py checks that
# `oracle predict --stack paradl` gives every row. TOOL_DIR and PY2 as in paradl_tool_reference.sh.
#   usage: PY2=/path/to/python2.7 scripts/paradl_tool_oracle_reference.sh TOOL_DIR > validation/paradl-tool-oracle-models.csv
set -e
TOOL_DIR=$(cd "$1" && pwd)
PY2=${PY2:-python2.7}
REPO=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
(cd "$REPO" && python scripts/paradl_tool_oracle_models.py "$WORK" > "$WORK/runs.txt")
cp "$TOOL_DIR/parallel_analysis.py" "$WORK"/
cp "$(dirname "$0")/paradl_tool_runner.py2" "$WORK/runner.py"  # prints repr() floats
cd "$WORK"
echo "net_file,lc_file,paratype,cmaxB,cBon,case,B,p,memory_bytes,compute_s,communication_s"
while read -r net lc maxb b kind; do
  lcarg=""; [ "$lc" != "-" ] && lcarg="--lc $lc"
  "$PY2" runner.py "$net,$lc,\"$kind\",$maxb,$b" -net "./$net" -plat oracle.plat -goal 1 --cmaxp 2048 \
    --cmaxB "$maxb" --cBon="$b" --paratype "$kind" --debug y $lcarg | sed -n 's/^RESULT,//p'
done < runs.txt
