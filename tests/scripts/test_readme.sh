#!/usr/bin/env bash
# The README's figures, counts and verdict table agree with the committed
# reference run and fixtures (scripts/readme --check), and the check reads
# those files: a changed figure in a copy of the run, or a hand-edited
# README, makes it fail.
#   tests/scripts/test_readme.sh [BUILD_DIR]   (no build needed)
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check "README.md agrees with results/reference-h100 and tests/fixtures" "$root/scripts/readme" --check

# A hand-edited figure in the README is caught.
sed 's/pageable ones at \([0-9.]*\) (H2D)/pageable ones at 6.8 (H2D)/' "$root/README.md" > "$tmp/README.md"
check "the edit under test changed the copy" test -n "$(diff "$root/README.md" "$tmp/README.md")"
MEMCLAIMS_README=$tmp/README.md "$root/scripts/readme" --check >/dev/null 2>&1; rc=$?
check_eq "a hand-edited figure fails the check (exit 1)" "$rc" 1

# The figures come from the run's CSVs: a copy of the run whose 256 MiB
# pageable H2D rate is 12.0e9 B/s gives 12.0 GB/s in the block.
cp -r "$root/results/reference-h100" "$tmp/run"
awk -F, -v OFS=, '$3 == "pageable" && $5 == "268435456" && $6 == "h2d_bandwidth_host_clock" { $9 = "12.0e9" } { print }' \
    "$root/results/reference-h100/pinned_vs_pageable.csv" > "$tmp/run/pinned_vs_pageable.csv"
block=$(MEMCLAIMS_REFERENCE=$tmp/run "$root/scripts/readme" --block figures)
check "the figures block reads the run's CSV" grep -q 'pageable ones at 12.0 (H2D)' <<< "$block"

# The verdict table is the run's own verdict rows.
sed 's/,verdict,,0,,,,,,holds,/,verdict,,0,,,,,,does-not-hold,/' "$root/results/reference-h100/del_empty_cache.csv" \
    > "$tmp/run/del_empty_cache.csv"
block=$(MEMCLAIMS_REFERENCE=$tmp/run "$root/scripts/readme" --block verdicts)
check "the verdict table reads the run's verdict rows" grep -q '^| C01 .*| \*\*does-not-hold\*\* | holds |$' <<< "$block"

# A missing figure is an error, not a silent blank.
grep -v 'pcie_theoretical_bandwidth' "$root/results/reference-h100/pinned_vs_pageable.csv" > "$tmp/run/pinned_vs_pageable.csv"
MEMCLAIMS_REFERENCE=$tmp/run "$root/scripts/readme" --block figures >/dev/null 2>"$tmp/err"; rc=$?
check_eq "a figure missing from the run: exit 2" "$rc" 2
check_eq "a figure missing from the run: one line" "$(wc -l < "$tmp/err")" 1

# The fixture counts are counted, not typed.
block=$("$root/scripts/readme" --block fixtures)
n=$(ls "$root"/tests/fixtures/mlp/*.meta | wc -l)
check "the fixtures block counts the MLP fixtures ($n)" grep -q " $n configurations" <<< "$block"
summary
