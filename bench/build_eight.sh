#!/bin/bash
# The 8-piece build on one 2-core, 24 GB machine, step by step, from whatever the table directory
# holds (each step resumes from its checkpoints and skips what is complete): up to 6 pieces as
# masters and their compact files (what `egtb verify` of the compact-native tables reads), the
# 4-3 tables of 7 pieces compact-native (all that the 4-4 set reaches), the 4-4 set in three
# steps, then the other 7-piece tables and the 5-3 set, each step planned alone so that its disk
# peak fits under 60 GB (docs/performance.md, "Eight pieces"). The 4-3 tables are 19.1 G of the
# 34.2 G positions of 7 pieces: after a lost directory the 8-piece work starts that much sooner.
# Every step runs under bench/peak_memory.py, which logs the summed RSS and the directory's size
# to MONITOR every 30 s.
#
#   bench/build_eight.sh [CHECKOUT] [TABLES] [MONITOR]     # e.g. /work/runner8 /work/egtb
set -e
R=${1:-$(cd "$(dirname "$0")/.." && pwd)}
T=${2:-/work/egtb}
MONITOR=${3:-/work/egtb-monitor.log}
mkdir -p "$T"
step() {
  echo "=== $(date -u +%FT%TZ) step: $*"
  "$R/.venv/bin/python" "$R/bench/peak_memory.py" --log "$MONITOR" --log-every 30 --directory "$T" -- \
    "$R/.venv/bin/egtb" build --tables "$T" --memory 20 --jobs 2 --disk 60 "$@"
}
step -n 6
"$R/.venv/bin/egtb" compact --stale --tables "$T" --jobs 2   # only the files missing or stale
step -n 7 --min-pieces 7 --max-per-side 4 --compact-native
E8="-n 8 --min-pieces 8 --split-pairs 5e9"
step $E8 --max-per-side 4 --materials 4k-4k,4k-1m3k,4k-2m2k,1m3k-1m3k,1m3k-2m2k
step $E8 --max-per-side 4 --materials 3m1k-4k,1m3k-3m1k,2m2k-2m2k,2m2k-3m1k
step $E8 --max-per-side 4
step -n 7 --min-pieces 7 --compact-native
step $E8 --max-per-side 5 --materials 3k-5k,3k-1m4k,5k-1m2k,1m2k-1m4k,3k-2m3k,5k-2m1k
step $E8 --max-per-side 5
echo "=== $(date -u +%FT%TZ) all steps done"
