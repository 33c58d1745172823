#!/bin/bash
# The check of the 8-piece tables beside their build (bench/build_eight.sh), pair by pair in the
# build's order: each waits for its materials' stamps (<material>.native.json, written last), then
# `egtb verify` checks it from its compact files alone, on one core, under bench/peak_memory.py.
# A check resumes from its records (<material>.verify.json) and skips what passed with the same
# files, so the script is run again as it is after any interruption.
#
#   bench/verify_eight.sh [CHECKOUT] [TABLES] [MONITOR]     # e.g. /work/verifier /work/egtb
set -e
R=${1:-$(cd "$(dirname "$0")/.." && pwd)}
T=${2:-/work/egtb}
MONITOR=${3:-/work/verify-monitor.log}
for pair in 4k-4k 4k-1m3k,1m3k-4k 1m3k-1m3k 4k-2m2k,2m2k-4k 1m3k-2m2k,2m2k-1m3k \
            3m1k-4k,4k-3m1k 1m3k-3m1k,3m1k-1m3k 2m2k-2m2k 2m2k-3m1k,3m1k-2m2k \
            4k-4m,4m-4k 3m1k-3m1k 1m3k-4m,4m-1m3k 2m2k-4m,4m-2m2k 3m1k-4m,4m-3m1k 4m-4m; do
  for m in ${pair//,/ }; do
    while [ ! -e "$T/$m.native.json" ]; do sleep 60; done
  done
  echo "=== $(date -u +%FT%TZ) verify $pair"
  "$R/.venv/bin/python" "$R/bench/peak_memory.py" --log "$MONITOR" --log-every 60 -- \
    "$R/.venv/bin/egtb" verify --tables "$T" --jobs 1 --materials "$pair"
done
echo "=== $(date -u +%FT%TZ) the 15 pairs of the 4-4 set checked"
