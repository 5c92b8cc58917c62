#!/usr/bin/env bash
# Instructions per chunk of the core's ingest and of its serde_json floor,
# counted by callgrind: unlike times, the same for the same binary and
# input whatever else the machine does. The demo agent (another process)
# is not counted. Two sizes; the difference cancels the start-up.
#   build-aux/callgrind-ingest.sh            (needs valgrind)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "needs valgrind (apt install valgrind)" >&2; exit 2; }
cargo bench --bench core --no-run >/dev/null 2>&1
bench=$(ls -t target/release/deps/core-* | grep -v '\.d$' | head -1)
count() { # WHAT N
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bench" --bench "$1" "$2" 2>&1 \
    | sed -n 's/.*Collected : \([0-9]*\).*/\1/p' | tail -1
}
small=10000; large=60000
core_small=$(count ingest-once $small); core_large=$(count ingest-once $large)
floor_small=$(count floor-once $small); floor_large=$(count floor-once $large)
lines_small=$(count lines-once $small); lines_large=$(count lines-once $large)
python3 - "$core_small" "$core_large" "$floor_small" "$floor_large" "$lines_small" "$lines_large" "$small" "$large" <<'PY'
import sys
cs, cl, fs, fl, ls, ll, s, l = map(int, sys.argv[1:])
core = (cl - cs) / (l - s)
# The floor's own run makes its lines first: that is not parsing.
floor = ((fl - fs) - (ll - ls)) / (l - s)
print(f"ingest, instructions per chunk (callgrind): core {core:,.0f}   floor (serde_json) {floor:,.0f}   ratio {core / floor:.2f}")
PY
