#!/usr/bin/env bash
# The allocator model against PyTorch on real training runs: every fixture in
# tests/fixtures/snapshots/ (NAME.pickle.gz, the run's memory snapshot under
# the default settings, and NAME.expected.tsv, PyTorch's memory_stats() for
# that run and for the same run under each what-if setting and limit; made by
# tests/torch/make_snapshots.py on the GPU) is converted with
# scripts/snapshot2trace and replayed with build/replay:
#   - the default row: peak allocated and peak reserved exactly PyTorch's;
#   - every other row, replayed with --conf (and --limit): the same outcome
#     (fits, or runs out of memory) and both peaks within 2% (for a run that
#     ran out: the peaks up to its first refused request, as memory_stats()
#     gives them after catching the OutOfMemoryError).
# First the check itself is tested on a synthetic fixture whose figures are
# known by construction (tests/whatif/make_snapshot.py --fixture), and on a
# copy with wrong figures, which it must reject.
#   tests/scripts/test_snapshot_fixtures.sh BUILD_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
build=${1:-build/san}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
replay=$build/replay
fixtures=$root/tests/fixtures/snapshots

# verify DIR NAME: prints one line per row ("ok ..." or "MISMATCH ...") and
# returns the number of mismatches (2 if the fixture cannot be replayed).
verify() {
    local dir=$1 name=$2 trace=$tmp/$2.trace bad=0
    gzip -dc "$dir/$name.pickle.gz" > "$tmp/$name.pickle" || { echo "MISMATCH $name: cannot gunzip"; return 2; }
    "$root/scripts/snapshot2trace" --replay "$replay" "$tmp/$name.pickle" > "$trace" 2> "$tmp/$name.convert.err" \
        || { echo "MISMATCH $name: snapshot2trace: $(head -c 200 "$tmp/$name.convert.err")"; return 2; }
    # '|' not tab: read would merge the empty fields (default conf, no limit).
    while IFS='|' read -r setting conf limit outcome pa pr _retries _ooms; do
        local args=()
        # The default row replays under the trace's own settings (exact mode).
        [ "$setting" = default ] || args+=(--conf "$conf")
        [ -n "$limit" ] && args+=(--limit "$limit")
        # The model's per-operation invariant check runs on the default row;
        # the what-if rows compare figures only (test_snapshot2trace checks
        # the invariants under every setting): the walk costs seconds per
        # replay of a real snapshot under ASan.
        local got checks=0
        [ "$setting" = default ] && checks=1
        got=$(MEMCLAIMS_MODEL_CHECKS=$checks "$replay" "${args[@]}" "$trace" 2> "$tmp/$name.replay.err" | awk -F, '
            NR > 1 && $5 == "oom" { print "oom", $8, $9; found = 1; exit }
            NR > 1 { a = $8; r = $9 }
            END { if (!found) print "fits", a, r }')
        if [ "${PIPESTATUS[0]:-0}" != 0 ] && [ -z "$got" ]; then
            echo "MISMATCH $name $setting: replay failed: $(head -c 200 "$tmp/$name.replay.err")"; bad=$((bad + 1)); continue
        fi
        local verdict
        verdict=$(awk -v got="$got" -v outcome="$outcome" -v pa="$pa" -v pr="$pr" -v exact=$([ "$setting" = default ] && echo 1 || echo 0) '
            function off(g, w) { return (w == 0 ? (g == 0 ? 0 : 1) : (g > w ? g - w : w - g) / w) }
            BEGIN { split(got, g, " ")
                    ok = (g[1] == outcome)
                    if (exact) ok = ok && g[2] == pa && g[3] == pr
                    else ok = ok && off(g[2], pa) <= 0.02 && off(g[3], pr) <= 0.02
                    printf "%s outcome %s (PyTorch %s), peak allocated %s (PyTorch %s, %+.2f%%), peak reserved %s (PyTorch %s, %+.2f%%)\n",
                        (ok ? "ok" : "MISMATCH"), g[1], outcome, g[2], pa, 100 * (g[2] - pa) / (pa ? pa : 1),
                        g[3], pr, 100 * (g[3] - pr) / (pr ? pr : 1) }')
        echo "${verdict%% *} $name $setting${conf:+ [$conf]}${limit:+ limit $limit}: ${verdict#* }"
        case $verdict in ok*) ;; *) bad=$((bad + 1)) ;; esac
    done < <(tail -n +2 "$dir/$name.expected.tsv" | tr '\t' '|')
    return $bad
}

# ---------------------------------------------------------- the check itself
syn=$tmp/synthetic
mkdir -p "$syn"
python3 "$root/tests/whatif/make_snapshot.py" --events 4000 --max-live 60 --seed 5 --gzip --fixture \
    "$syn/synthetic.pickle.gz" > /dev/null
verify "$syn" synthetic > "$tmp/syn.out"
check_eq "a synthetic fixture with known figures passes every row" "$?" 0
check_eq "it has six rows (default, three settings, two limits)" "$(grep -c '^ok ' "$tmp/syn.out")" 6
check "its limit below the peak runs out of memory" grep -q '^ok synthetic limit_oom limit [0-9]*: outcome oom' "$tmp/syn.out"
# A default peak off by one block: the exact check must reject it.
awk -F'\t' -v OFS='\t' '$1 == "default" { $6 += 20971520 } { print }' "$syn/synthetic.expected.tsv" > "$tmp/e" \
    && mv "$tmp/e" "$syn/synthetic.expected.tsv"
verify "$syn" synthetic > "$tmp/syn.out"
check_eq "a default peak reserved one block off is rejected" "$?" 1
# A what-if figure 3% off, and an outcome flipped: both rejected.
python3 "$root/tests/whatif/make_snapshot.py" --events 4000 --max-live 60 --seed 5 --gzip --fixture \
    "$syn/synthetic.pickle.gz" > /dev/null
awk -F'\t' -v OFS='\t' '$1 == "expandable_segments" { $5 = int($5 * 1.03) } $1 == "limit_fits" { $4 = "oom" } { print }' \
    "$syn/synthetic.expected.tsv" > "$tmp/e" && mv "$tmp/e" "$syn/synthetic.expected.tsv"
verify "$syn" synthetic > "$tmp/syn.out"
check_eq "a what-if peak 3% off and a flipped outcome are rejected" "$?" 2
python3 "$root/tests/whatif/make_snapshot.py" --events 4000 --max-live 60 --seed 5 --gzip --fixture \
    "$syn/synthetic.pickle.gz" > /dev/null
awk -F'\t' -v OFS='\t' '$1 == "max_split_64MiB" { $6 = int($6 * 1.015) } { print }' \
    "$syn/synthetic.expected.tsv" > "$tmp/e" && mv "$tmp/e" "$syn/synthetic.expected.tsv"
verify "$syn" synthetic > "$tmp/syn.out"
check_eq "a what-if peak 1.5% off is within the 2% allowed" "$?" 0

# ---------------------------------------------------------- PyTorch's runs
n=0
for f in "$fixtures"/*.pickle.gz; do
    [ -e "$f" ] || continue
    name=$(basename "$f" .pickle.gz)
    n=$((n + 1))
    if [ ! -f "$fixtures/$name.expected.tsv" ]; then failure "$name has its expected.tsv"; continue; fi
    verify "$fixtures" "$name" > "$tmp/$name.out"
    rc=$?
    sed 's/^/    /' "$tmp/$name.out"
    check_eq "$name: the model equals PyTorch (default exact, what-if within 2%, same outcome)" "$rc" 0
done
[ "$n" -gt 0 ] || echo "SKIP: no PyTorch snapshot fixtures yet in tests/fixtures/snapshots (record them on a GPU: tests/torch/make_snapshots.py)"

summary
