#!/usr/bin/env bash
# C26 (build/c26_mmap_dataset) removes its dataset file on every exit path:
# a normal run, a refused --file-size, and SIGTERM in the middle of a run
# (no CSV is left under the final name either).
#   tests/scripts/test_mmap_dataset.sh BUILD_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
build=${1:-build/san}
exe=$build/c26_mmap_dataset
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/t" "$tmp/out"

TMPDIR=$tmp/t "$exe" --quick --file-size 3M --out "$tmp/out" 2>/dev/null; rc=$?
check_eq "--file-size 3M (768 records): exit 0" "$rc" 0
TMPDIR=$tmp/t "$exe" --file-size 1000000 --out "$tmp/out" 2>"$tmp/err"; rc=$?
check_eq "--file-size not a multiple of 4 KiB: exit 2" "$rc" 2
check_eq "... with one line on stderr" "$(wc -l < "$tmp/err")" 1
check_eq "nothing left in \$TMPDIR after a run and a refusal" "$(ls -A "$tmp/t" | wc -l)" 0
check "the 3 MiB run states a verdict" grep -q ',verdict,' "$tmp/out/mmap_dataset.csv"

# SIGTERM once the dataset exists (a 256 MiB file takes a while to write and read).
rm -f "$tmp/out/mmap_dataset.csv"
TMPDIR=$tmp/t "$exe" --file-size 256M --repeats 1 --out "$tmp/out" 2>/dev/null &
pid=$!
for _ in $(seq 1 200); do
    ls "$tmp/t" | grep -q memclaims-c26 && break
    sleep 0.05
done
check "the dataset file appears in \$TMPDIR" bash -c "ls '$tmp/t' | grep -q memclaims-c26"
kill -TERM "$pid"
wait "$pid"; rc=$?
check_eq "SIGTERM ends the run by the signal (exit 143)" "$rc" 143
sleep 0.5 # a child of the run may still be ending
check_eq "SIGTERM leaves no dataset in \$TMPDIR" "$(ls -A "$tmp/t" | wc -l)" 0
check_eq "SIGTERM leaves no CSV, not even a temporary one" "$(ls -A "$tmp/out" | wc -l)" 0
summary
