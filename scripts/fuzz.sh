#!/usr/bin/env bash
# Fuzz the CLI for MINUTES minutes (default 10): run the hypothesis tests of
# tests/test_fuzz.py, tests/test_fuzz_round3.py and tests/test_fuzz_options.py in rounds of ORACLE_FUZZ_ROUND examples per test (default 500),
# each round with a new --hypothesis-seed, until the time is up (the round running at
# the deadline is finished).  Prints the number of examples run per test and in total,
# and the log of every failing round.  Exit status 1 if any round failed.
#
#   scripts/fuzz.sh            # 10 minutes
#   scripts/fuzz.sh 60         # an hour
#   ORACLE_FUZZ_SEED=1234 ORACLE_FUZZ_ROUND=200 scripts/fuzz.sh 2
#
# Run it from an environment where oracle and its test extras are installed
# (pip install '.[test]'); PYTHON selects the interpreter (default: python).
set -u

minutes=${1:-10}
per_round=${ORACLE_FUZZ_ROUND:-500}
seed=${ORACLE_FUZZ_SEED:-$(( (RANDOM << 15) | RANDOM ))}
python=${PYTHON:-python}
cd "$(dirname "$0")/.." || exit 2

logs=$(mktemp -d "${TMPDIR:-/tmp}/oracle-fuzz-logs.XXXXXX")
counts="$logs/counts.txt"
: > "$counts"
start=$(date +%s)
seconds=$(awk -v m="$minutes" 'BEGIN { if (m + 0 != m || m < 0) exit 1; printf "%d", m * 60 }') || {
    echo "usage: scripts/fuzz.sh [MINUTES]  (got '$minutes')" >&2
    exit 2
}
deadline=$(( start + seconds ))
rounds=0
failed=0

echo "fuzzing for $minutes min, $per_round examples per test and round, first seed $seed; logs in $logs"
while [ "$(date +%s)" -lt "$deadline" ]; do
    rounds=$(( rounds + 1 ))
    log="$logs/round-$rounds-seed-$seed.log"
    if ORACLE_FUZZ_EXAMPLES=$per_round ORACLE_FUZZ_COUNT_FILE=$counts \
        "$python" -m pytest -q -p no:cacheprovider -W ignore::RuntimeWarning \
        --hypothesis-seed="$seed" tests/test_fuzz.py tests/test_fuzz_round3.py tests/test_fuzz_options.py >"$log" 2>&1; then
        echo "round $rounds (seed $seed): passed  [$(( $(date +%s) - start )) s]"
    else
        failed=$(( failed + 1 ))
        echo "round $rounds (seed $seed): FAILED, see $log"
        grep -E "^(FAILED|ERROR)" "$log" | sed 's/^/    /'
    fi
    seed=$(( seed + 1 ))
done

elapsed=$(( $(date +%s) - start ))
echo
echo "examples per test:"
awk '{n[$1] += $2} END {for (t in n) printf "  %-22s %8d\n", t, n[t]}' "$counts" | sort
total=$(awk '{s += $2} END {print s + 0}' "$counts")
echo "total: $total examples in $rounds rounds, $elapsed s; failing rounds: $failed"
[ "$failed" -eq 0 ]
