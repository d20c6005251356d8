# Sourced by scripts/gpu_session*.sh (a session lent one GPU): $OUT (default ./gpu-out), this
# checkout's oracle on PYTHONPATH, $M the step-measuring script, stage LIMIT CMD... (runs CMD
# under its own time limit and says how it ended), and $OUT/env.txt (GPU, driver, host CPU).
set -u
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
M=scripts/measure_training_step.py
stage() { local limit=$1; shift; echo "== $(date +%T) $*"; timeout "$limit" "$@"; echo "== rc $?"; }
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv; lscpu | head -20; } >"$OUT/env.txt" 2>&1
