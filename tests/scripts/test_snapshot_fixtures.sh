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
#     gives them after catching the OutOfMemoryError);
#   - every row: num_alloc_retries and num_ooms exactly PyTorch's, as
#     replay --summary gives them (alloc_retries, ooms: up to and including
#     the first refused request, where PyTorch's process stopped), and equal
#     to the CSV's counters on that request's row (or the last row).
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
    while IFS='|' read -r setting conf limit outcome pa pr retries ooms; do
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
        # The CSV: outcome, the peaks and the retry and OOM counters up to
        # the first refused request (or the end), as PyTorch read them.
        got=$(MEMCLAIMS_MODEL_CHECKS=$checks "$replay" "${args[@]}" "$trace" 2> "$tmp/$name.replay.err" | awk -F, '
            NR > 1 && $5 == "oom" { print "oom", $8, $9, $15, $16; found = 1; exit }
            NR > 1 { a = $8; r = $9; t = $15; o = $16 }
            END { if (!found) print "fits", a, r, t, o }')
        if [ "${PIPESTATUS[0]:-0}" != 0 ] && [ -z "$got" ]; then
            echo "MISMATCH $name $setting: replay failed: $(head -c 200 "$tmp/$name.replay.err")"; bad=$((bad + 1)); continue
        fi
        # The summary's alloc_retries and ooms (the figures compared).
        local sum
        sum=$(MEMCLAIMS_MODEL_CHECKS=0 "$replay" --summary "${args[@]}" "$trace" 2> "$tmp/$name.replay.err" |
              python3 -c 'import json, sys; d = json.load(sys.stdin); print(d["alloc_retries"], d["ooms"])' 2>&1)
        if [ $? != 0 ] || [ "$(wc -w <<< "$sum")" != 2 ]; then
            echo "MISMATCH $name $setting: replay --summary failed: $(head -c 200 "$tmp/$name.replay.err") ${sum:0:200}"
            bad=$((bad + 1)); continue
        fi
        local verdict
        verdict=$(awk -v got="$got" -v sum="$sum" -v outcome="$outcome" -v pa="$pa" -v pr="$pr" -v retries="$retries" \
                      -v ooms="$ooms" -v exact="$([ "$setting" = default ] && echo 1 || echo 0)" '
            function off(g, w) { return (w == 0 ? (g == 0 ? 0 : 1) : (g > w ? g - w : w - g) / w) }
            BEGIN { split(got, g, " "); split(sum, s, " ")
                    ok = (g[1] == outcome)
                    if (exact) ok = ok && g[2] == pa && g[3] == pr
                    else ok = ok && off(g[2], pa) <= 0.02 && off(g[3], pr) <= 0.02
                    ok = ok && s[1] == retries && s[2] == ooms
                    same = (s[1] == g[4] && s[2] == g[5])
                    printf "%s outcome %s (PyTorch %s), peak allocated %s (PyTorch %s, %+.2f%%), peak reserved %s (PyTorch %s, %+.2f%%), alloc retries %s (PyTorch %s), OOMs %s (PyTorch %s)%s\n",
                        (ok && same ? "ok" : "MISMATCH"), g[1], outcome, g[2], pa, 100 * (g[2] - pa) / (pa ? pa : 1),
                        g[3], pr, 100 * (g[3] - pr) / (pr ? pr : 1), s[1], retries, s[2], ooms,
                        (same ? "" : sprintf("; the CSV says %s retries, %s OOMs there", g[4], g[5])) }')
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
# Retries and OOMs must be exact: the replay goes on past the first refused
# request (the synthetic limit_oom is refused again in later iterations), but
# PyTorch's process stopped there, with 1 retry and 1 OOM.
python3 "$root/tests/whatif/make_snapshot.py" --events 4000 --max-live 60 --seed 5 --gzip --fixture \
    "$syn/synthetic.pickle.gz" > /dev/null
gzip -dc "$syn/synthetic.pickle.gz" > "$tmp/s.pickle"
"$root/scripts/snapshot2trace" --replay "$replay" "$tmp/s.pickle" > "$tmp/s.trace"
MEMCLAIMS_MODEL_CHECKS=0 "$replay" --summary --limit "$(awk -F'\t' '$1 == "limit_oom" { print $3 }' "$syn/synthetic.expected.tsv")" \
    "$tmp/s.trace" > "$tmp/s.json"
check_eq "the synthetic limit_oom is refused more than once in the replay, the others counted after the first" \
    "$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
print(d["refused"] > 1 and d["ooms"] == 1 and d["after_first_oom"]["ooms"] == d["refused"] - 1)' "$tmp/s.json")" True
awk -F'\t' -v OFS='\t' '$1 == "limit_oom" { $7 += 1 } $1 == "limit_fits" { $8 = 1 } { print }' \
    "$syn/synthetic.expected.tsv" > "$tmp/e" && mv "$tmp/e" "$syn/synthetic.expected.tsv"
verify "$syn" synthetic > "$tmp/syn.out"
check_eq "a retry count one off and an OOM count where there was none are rejected" "$?" 2
check "  ... saying so" grep -q '^MISMATCH synthetic limit_oom .*alloc retries 1 (PyTorch 2), OOMs 1 (PyTorch 1)$' "$tmp/syn.out"

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
    check_eq "$name: the model equals PyTorch (default exact, what-if within 2%, same outcome, retries and OOMs exact)" "$rc" 0
done
[ "$n" -gt 0 ] || echo "SKIP: no PyTorch snapshot fixtures yet in tests/fixtures/snapshots (record them on a GPU: tests/torch/make_snapshots.py)"

# ---------------------------------------------------------- recorded mid-training
# tests/fixtures/snapshots_midtrain/: runs under max_split_size_mb whose
# recording began after a few steps, so the trace starts with segments and
# live blocks from before it; NAME_limit under a memory fraction. Each must
# replay exactly (peaks, retries, OOMs), and under every what-if setting with
# the model's invariant check after every operation.
mid=$root/tests/fixtures/snapshots_midtrain
n=0
for f in "$mid"/*.pickle.gz; do
    [ -e "$f" ] || continue
    name=$(basename "$f" .pickle.gz)
    n=$((n + 1))
    verify "$mid" "$name" > "$tmp/$name.out"
    rc=$?
    sed 's/^/    /' "$tmp/$name.out"
    check_eq "$name (mid-training, $(sed -n 's/^conf: //p' "$mid/$name.meta")): the model equals PyTorch exactly" "$rc" 0
    check "$name: the trace starts with segments and live blocks from before the recording" \
        grep -q '^live ' "$tmp/$name.trace"
    lim=$(awk -F'\t' 'NR == 2 { print $3 }' "$mid/$name.expected.tsv")
    check_eq "$name: every block lands at the address PyTorch gave it" \
        "$(MEMCLAIMS_MODEL_CHECKS=0 "$replay" --summary ${lim:+--limit "$lim"} "$tmp/$name.trace" 2> /dev/null |
           python3 -c 'import json, sys; print(json.load(sys.stdin)["addr_mismatches"])')" 0
    for conf in max_split_size_mb:20 expandable_segments:True roundup_power2_divisions:4 \
                garbage_collection_threshold:0.6,max_split_size_mb:100; do
        MEMCLAIMS_MODEL_CHECKS=1 "$replay" --summary --conf "$conf" --limit 1500Mi "$tmp/$name.trace" \
            > /dev/null 2> "$tmp/$name.whatif.err"
        rc=$?
        check_eq "$name under $conf, 1500 MiB limit: replays with every invariant kept" "$rc" 0
        [ "$rc" = 0 ] || head -3 "$tmp/$name.whatif.err"
    done
done
check_eq "mid-training fixtures: 6 (three runs, each without and with a limit)" "$n" 6

summary
