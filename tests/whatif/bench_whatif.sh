#!/usr/bin/env bash
# bench_whatif.sh: times the whole `make whatif` sweep (convert once, 88
# replays, two timelines, charts, WHATIF.md) on a synthetic snapshot of about
# 10^6 events (tests/whatif/make_snapshot.py). The goal: at most 60 s on two
# cores. Not part of make test (it takes tens of seconds).
#   tests/whatif/bench_whatif.sh [BUILD_DIR] [EVENTS]
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
events=${2:-1000000}
[ -x "$build/whatif" ] || { echo "bench_whatif: $build/whatif is missing: run make first" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 "$here/make_snapshot.py" --events "$events" --max-live 600 --gzip "$tmp/bench.pickle.gz" > /dev/null || exit 1
echo "bench_whatif: $events events ($(wc -c < "$tmp/bench.pickle.gz") bytes gzipped), $(nproc) cores" \
     "$([ -r /proc/loadavg ] && echo "(load average $(cut -d' ' -f1-3 /proc/loadavg))")"
t0=$(date +%s.%N)
"$root/scripts/whatif" --build "$build" --results "$tmp/results" --context 524M "$tmp/bench.pickle.gz" 2> "$tmp/err" > /dev/null \
    || { cat "$tmp/err" >&2; exit 1; }
t1=$(date +%s.%N)
awk -v a="$t0" -v b="$t1" 'BEGIN { s = b - a; printf "bench_whatif: the whole sweep took %.1f s (goal 60 s: %s)\n", s, (s <= 60 ? "met" : "not met") }'
grep -E 'converted|replays|done in' "$tmp/err" | sed 's/^/  /'
