#!/usr/bin/env bash
# The allocator model under traces that start mid-training (segments and live
# blocks from before the recording) and every setting:
#   - the structured fuzzer (tests/fuzz/fuzz_structured.c through the fuzz
#     target of make fuzz), FUZZ_TRACES traces (default 600) from a fixed
#     seed, the invariant check after every operation: a fixed budget, the
#     same traces on every machine;
#   - the traces issue 31 found (tests/fixtures/hostile/), each replayed
#     under the what-if setting that broke the model: exit 0, figures a card
#     can have (reserved within the device, inactive split bytes within
#     reserved minus allocated), the request no setting can grant refused;
#   - the 2 GiB-segment snapshot through whatif: no setting "fits the 8 GiB
#     card" when a live block pins 2 GiB and 7 GiB more are asked for.
#   tests/scripts/test_fuzz.sh BUILD_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
build=${1:-build/san}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
hostile=$root/tests/fixtures/hostile

# --- the structured fuzzer
out=$("$build/tests/fuzz_structured" "${FUZZ_TRACES:-600}" 31 2>&1); rc=$?
check_eq "fuzz_structured: ${FUZZ_TRACES:-600} traces, no crash, no broken invariant (rc)" "$rc" 0
[ "$rc" = 0 ] || echo "$out" | tail -5
split=$(sed -n 's/.*traces (\([0-9]*\) with pre-recording segments under a max_split_size what-if).*/\1/p' <<< "$out")
check "fuzz_structured: some traces have pre-recording segments under max_split_size (${split:-none})" test \
    "${split:-0}" -gt 0
# The generator writes what it fuzzes (make fuzz seeds libFuzzer from it).
mkdir "$tmp/gen"
"$build/tests/fuzz_structured" 20 31 --write "$tmp/gen" > /dev/null 2>&1
check_eq "fuzz_structured --write: 20 traces written" "$(ls "$tmp/gen" | wc -l)" 20
n_ok=0
for f in "$tmp/gen"/*; do MEMCLAIMS_MODEL_CHECKS=1 "$build/replay" --summary "$f" > /dev/null 2>&1 && n_ok=$((n_ok + 1)); done
check "fuzz_structured: most generated traces are well formed and replay ($n_ok of 20)" test "$n_ok" -ge 15
err=$("$build/tests/fuzz_structured" 0 1 2>&1); rc=$?
check_eq "fuzz_structured: a budget of 0 is a usage error" "$rc" 2

# --- the regressions
# sane CSV: every row's reserved <= CAP, inactive split bytes <= reserved - allocated
sane() {
    awk -F, -v cap="$2" 'NR > 1 { if ($7 + 0 > cap + 0 || $12 + 0 > $7 - $6) { print "row " $1 ": reserved " $7 \
        ", allocated " $6 ", inactive split " $12; bad = 1; exit } } END { exit bad }' "$1"
}
"$build/replay" --conf max_split_size_mb:20 "$hostile/preload_split_huge_request.trace" > "$tmp/a.csv" 2> "$tmp/a.err"; rc=$?
check_eq "preload_split_huge_request under max_split_size_mb:20: exit 0 ($(head -c 200 "$tmp/a.err"))" "$rc" 0
check_eq "preload_split_huge_request: the 2^60-byte request is refused" "$(awk -F, '$2 == "alloc" { print $5 }' "$tmp/a.csv")" oom
check_eq "preload_split_huge_request: the segment with a live block stays reserved" \
    "$(awk -F, '$2 == "alloc" { print $7 }' "$tmp/a.csv")" 46137344
check "preload_split_huge_request: figures a card can have" sane "$tmp/a.csv" 46137344

"$build/replay" --conf max_split_size_mb:20 --capacity 60Mi "$hostile/preload_split_capacity.trace" > "$tmp/b.csv" 2> "$tmp/b.err"; rc=$?
check_eq "preload_split_capacity under max_split_size_mb:20, 60 MiB: exit 0 ($(head -c 200 "$tmp/b.err"))" "$rc" 0
check_eq "preload_split_capacity: 50 MiB beside a pinned 44 MiB segment do not fit 60 MiB" \
    "$(awk -F, '$3 == "2" { print $5 }' "$tmp/b.csv")" oom
check "preload_split_capacity: reserved never past 60 MiB, inactive split within reserved - allocated" \
    sane "$tmp/b.csv" $((60 << 20))
check_eq "preload_split_capacity: after empty_cache the next request gets a 2 MiB segment" \
    "$(tail -1 "$tmp/b.csv" | cut -d, -f5,7)" "ok,2097152"

for conf in max_split_size_mb:20 max_split_size_mb:64 expandable_segments:True garbage_collection_threshold:0.6 \
            roundup_power2_divisions:4 ""; do
    args=(--capacity 8Gi)
    [ -n "$conf" ] && args+=(--conf "$conf")
    [ "$conf" = garbage_collection_threshold:0.6 ] && args+=(--limit 8Gi)
    "$build/replay" "${args[@]}" "$hostile/preload_2g_7g_request.trace" > "$tmp/c.csv" 2> "$tmp/c.err"; rc=$?
    check_eq "preload_2g_7g_request ${conf:-default} on 8 GiB: exit 0 ($(head -c 200 "$tmp/c.err"))" "$rc" 0
    check_eq "preload_2g_7g_request ${conf:-default} on 8 GiB: 7 GiB beside a pinned 2 GiB segment refused" \
        "$(awk -F, '$3 == "2" { print $5; exit }' "$tmp/c.csv")" oom
done

# pinned OUT SEG_GIB REQUEST NEW_SEGMENT: a snapshot whose segment of SEG_GIB
# GiB, from before its history, holds a live 1 MiB block; the history then
# asks for REQUEST bytes in a new segment of NEW_SEGMENT bytes and frees them.
pinned() {
    python3 - "$@" <<'EOF'
import pickle, sys
out, seg_gib, req, new = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
GiB, MiB, base = 1 << 30, 1 << 20, 0x7f0000000000
seg = dict(device=0, address=base, total_size=seg_gib * GiB, allocated_size=MiB, active_size=MiB,
           requested_size=MiB, stream=0, segment_type="large", segment_pool_id=(0, 0), is_expandable=False,
           frames=[], blocks=[dict(address=base, size=MiB, requested_size=MiB, state="active_allocated", frames=[]),
                              dict(address=base + MiB, size=seg_gib * GiB - MiB, requested_size=0, state="inactive",
                                   frames=[])])
a = base + 16 * GiB
ev = lambda action, size, t: dict(action=action, addr=a, size=size, stream=0, time_us=t, frames=[])
trace = [ev("segment_alloc", new, 1), ev("alloc", req, 2), ev("free_requested", req, 3), ev("free_completed", req, 4)]
pickle.dump(dict(segments=[seg], device_traces=[trace], allocator_settings={}), open(out, "wb"))
EOF
}

# --- through whatif: the same state as a snapshot
pinned "$tmp/pinned.pickle" 2 $((7 << 30)) $((7 << 30))
mkdir "$tmp/res"
"$build/whatif" --context 0 --cards 8,16 --jobs 2 --results "$tmp/res" "$tmp/pinned.pickle" > "$tmp/w.out" 2> "$tmp/w.err"; rc=$?
check_eq "whatif on the pinned 2 GiB snapshot: exit 0" "$rc" 0
[ "$rc" = 0 ] || tail -3 "$tmp/w.err"
md=$(ls "$tmp"/res/whatif-*/WHATIF.md 2>/dev/null | head -1)
check "whatif: WHATIF.md written" test -n "$md"
check "whatif: no setting is said to fit the 8 GiB card" bash -c "! grep -qi 'fits the 8 GiB card' '$md'"
check "whatif: the 16 GiB card fits" grep -q '16 GiB' "$md"
# --- a card smaller than the memory from before the recording: an answer, not a failure
pinned "$tmp/pinned10.pickle" 10 $((4 << 20)) $((20 << 20))
"$root/scripts/snapshot2trace" --replay "$build/replay" "$tmp/pinned10.pickle" > "$tmp/pinned10.trace" 2> /dev/null
check_eq "replay --capacity 8Gi of a run that held 10 GiB before its recording: refused at its start" \
    "$("$build/replay" --summary --capacity 8Gi "$tmp/pinned10.trace" 2>/dev/null |
       python3 -c 'import json, sys; d = json.load(sys.stdin); print(d["preload_refused"], d["refused"], d["ooms"])')" \
    "True 1 1"
"$build/replay" --summary --capacity 16Gi "$tmp/pinned10.trace" > "$tmp/p16.json" 2>/dev/null
check_eq "... and on 16 GiB it starts and fits" \
    "$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(d["preload_refused"], d["refused"])' "$tmp/p16.json")" \
    "False 0"
mkdir "$tmp/res10"
"$build/whatif" --context 0 --cards 8,16 --jobs 2 --results "$tmp/res10" "$tmp/pinned10.pickle" > /dev/null 2> "$tmp/w10.err"
rc=$?
check_eq "whatif with 8 and 16 GiB cards on it: exit 0 (a replay that cannot start is an answer)" "$rc" 0
[ "$rc" = 0 ] || tail -2 "$tmp/w10.err"
check "whatif: the run fits the 16 GiB card, not the 8 GiB one" \
    grep -q 'fits the 16 GiB card' "$tmp"/res10/whatif-*/WHATIF.md
summary
