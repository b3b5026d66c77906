#!/usr/bin/env bash
# replay-fixtures: every tests/fixtures/traces/NAME.trace is replayed through
# BUILD_DIR/replay and every column of every row must equal NAME.expected.csv
# beside it (PyTorch's own figures, from tests/torch/make_traces.py on a GPU;
# worked_examples is hand-computed from ALLOCATOR.md). Each is then replayed
# with --no-addresses, and the share of rows that still agree in every column
# is printed: a figure about the host backend's placement rule, not a test.
#   tests/replay-fixtures.sh [BUILD_DIR]      (default build)
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/scripts/lib.sh"
build=${1:-build}
replay=$build/replay
dir=$here/fixtures/traces
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ ! -x "$replay" ]; then
    failure "replay binary" "$replay is missing: run make first"
    summary
    exit 1
fi

# first_difference EXPECTED GOT: "row N, column NAME: got X, want Y" for the
# first cell that differs (or a row count difference).
first_difference() {
    awk -F, 'NR == FNR { want[FNR] = $0; n = FNR; next }
             FNR == 1 { split($0, head, ",") }
             { got_rows = FNR
               if (!(FNR in want)) { printf "row %d is extra: %s\n", FNR - 1, $0; found = 1; exit }
               if ($0 == want[FNR]) next
               m = split(want[FNR], w, ",")
               for (i = 1; i <= (NF > m ? NF : m); i++)
                   if ($i != w[i]) {
                       printf "row %d, column %s: got %s, want %s\n", FNR - 1, head[i], $i, w[i]
                       found = 1; exit
                   }
             }
             END { if (!found && got_rows < n) printf "only %d of %d rows\n", got_rows - 1, n - 1 }' "$1" "$2"
}

found=0
for trace in "$dir"/*.trace; do
    [ -f "$trace" ] || continue
    name=$(basename "$trace" .trace)
    expected=$dir/$name.expected.csv
    found=$((found + 1))
    if [ ! -f "$expected" ]; then
        failure "$name: expected CSV" "$expected is missing"
        continue
    fi
    rows=$(($(wc -l < "$expected") - 1))
    "$replay" "$trace" > "$tmp/$name.csv" 2> "$tmp/$name.err"
    rc=$?
    if [ "$rc" -ne 0 ]; then
        failure "$name: replay exits 0" "exit $rc: $(head -3 "$tmp/$name.err")"
        continue
    fi
    if cmp -s "$expected" "$tmp/$name.csv"; then
        pass "$name: all $rows rows equal the expected CSV in every column"
    else
        failure "$name: rows equal the expected CSV" "$(first_difference "$expected" "$tmp/$name.csv")"
    fi
    if grep -q "differ from the model" "$tmp/$name.err"; then
        failure "$name: every address the trace gives is the model's" "$(head -3 "$tmp/$name.err")"
    else
        pass "$name: every block lands at the trace's address"
    fi
    # The figure: how far the host placement rule alone gets.
    "$replay" --no-addresses "$trace" > "$tmp/$name.noaddr.csv" 2>/dev/null
    agree=$(awk 'NR == FNR { want[FNR] = $0; next } FNR > 1 && $0 == want[FNR] { n++ } END { print n + 0 }' \
            "$expected" "$tmp/$name.noaddr.csv")
    awk -v n="$name" -v a="$agree" -v r="$rows" \
        'BEGIN { printf "figure: %s without addresses: %d of %d rows agree in every column (%.1f%%)\n", n, a, r, r ? 100 * a / r : 0 }'
done
echo "$found trace fixtures found in tests/fixtures/traces"
summary
