#!/usr/bin/env bash
# make whatif (build/whatif, tools/whatif.c) without a GPU: on a synthetic
# snapshot whose peak is known (tests/whatif/make_snapshot.py) the whole sweep
# runs, the smallest card that fits is the one the peak and the context
# imply, the first refused request is the one the generator implies, every
# figure of whatif.csv and the timeline are build/replay's for the same
# setting and card, the threads change nothing, WHATIF.md, the CSV and the
# charts are written into a new folder atomically (also when interrupted),
# scripts/whatif still runs it, and bad input exits 2 with one line and
# writes nothing.
#   tests/scripts/test_whatif.sh BUILD_DIR
set -u
# The program is under test here; the model's invariants on such traces are
# checked under every setting by test_snapshot2trace.sh.
export MEMCLAIMS_MODEL_CHECKS=0
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
build=${1:-build/san}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
whatif=$build/whatif
GiB=1073741824
MiB=1048576
cards="8 12 16 24 32 40 48 80 96 141"

# A run that peaks at 600 blocks of 20 MiB = 11.72 GiB, gzipped as a user's
# snapshot may be.
gen=$(python3 "$root/tests/whatif/make_snapshot.py" --events 1500 --max-live 600 --block-mib 20 \
      --seed 3 --gzip "$tmp/train run.pickle.gz")
peak=$(sed -n 's/.*peak_reserved=\([0-9]*\).*/\1/p' <<<"$gen")
check_eq "the generator's peak is 600 x 20 MiB" "$peak" $((600 * 20 * MiB))
block=$((20 * MiB))

# smallest CONTEXT: the smallest card whose room (GiB - context) holds the peak.
smallest() { for c in $cards; do [ $((c * GiB - $1)) -ge "$peak" ] && { echo "$c"; return; }; done; echo ""; }
# below CARD: the card before it in the list.
below() { local p=""; for c in $cards; do [ "$c" = "$1" ] && { echo "$p"; return; }; p=$c; done; }
# col FILE SETTING CARD COLUMN: a figure of whatif.csv (the conf is quoted and
# may hold commas, so count columns from the end: 16 columns in all).
col() { awk -F, -v s="$2" -v c="$3" -v k="$4" '$1 == s && $(NF - 13) == c { print $(NF - 16 + k) }' "$1"; }

# ------------------------------------------------------------ a given context
res=$tmp/results
ctx=$((3 * GiB + 600 * MiB))     # puts the answer at 16 GiB: 12 GiB - ctx < peak <= 16 GiB - ctx
"$whatif" --results "$res" --context "$ctx" "$tmp/train run.pickle.gz" > "$tmp/out" 2> "$tmp/err"
check_eq "whatif exits 0 on a synthetic snapshot" "$?" 0
run=$(ls -d "$res"/whatif-*-train_run 2>/dev/null | head -1)
check "whatif writes results/whatif-<time>-<name>/" test -d "$run"
check_eq "whatif-latest points at it" "$(readlink "$res/whatif-latest")" "$(basename "$run")"
for f in WHATIF.md whatif.csv answer.csv failed.csv timeline_default.csv; do
    check "whatif writes $f" test -s "$run/$f"
done
check_eq "no temporary folder is left" "$(ls -A "$res" | grep -c tmp)" 0
check "whatif prints progress on stderr" grep -q '^whatif: \[[0-9]*/[0-9]*\] default, card 16: done$' "$tmp/err"
check "whatif says where the context came from" grep -q "given with --context" "$tmp/err"
want=$(smallest "$ctx")
check_eq "the smallest card for the default is what the peak and context imply" \
    "$(awk -F, '$1 == "default" { print $4 }' "$run/answer.csv")" "$want"
check_eq "the answer is 16 GiB" "$want" 16
check "WHATIF.md opens with that answer" \
    grep -q "^\*\*Under the default settings the run fits the $want GiB card\*\* (peak reserved 11.72 GiB)" "$run/WHATIF.md"
check_eq "peak reserved with no card is the generator's" "$(col "$run/whatif.csv" default none 9)" "$peak"
check_eq "peak allocated with no card is the generator's" "$(col "$run/whatif.csv" default none 8)" "$peak"
for s in default expandable_segments max_split_64MiB roundup_power2_4 gc_0.6_limit; do
    check "answer.csv has the setting $s" grep -q "^$s," "$run/answer.csv"
done
fail=$(below "$want")
check_eq "the largest card that does not fit is the one below" \
    "$(awk -F, '$1 == "default" { print $5 }' "$run/answer.csv")" "$fail"
room=$((fail * GiB - ctx))
# The first iteration allocates 600 blocks in a row: the first refused one is
# the (room / block + 1)-th request, which is step room / block + 1.
check_eq "the first refused request is the one past the card's room" \
    "$(col "$run/whatif.csv" default "$fail" 12)" $((room / block + 1))
check_eq "it asks for one block" "$(col "$run/whatif.csv" default "$fail" 13)" "$block"
check "failed.csv lists it" grep -q "^default,$fail,$((room / block + 1)),[0-9]*,$block$" "$run/failed.csv"
check "WHATIF.md names it with its step and size" \
    grep -q "^| default | $fail GiB | $((room / block + 1)): 20.0 MiB" "$run/WHATIF.md"
check_eq "every card at or above the answer fits, every card below does not" \
    "$(awk -F, -v w="$want" '$1 == "default" && $(NF - 13) != "none" {
          if (($(NF - 13) >= w) != ($(NF - 10) == "yes")) bad++ } END { print bad + 0 }' "$run/whatif.csv")" 0
n=$(($(wc -l < "$run/timeline_default.csv") - 1))
check "the timeline has 1000..2100 points (got $n)" test "$n" -ge 1000 -a "$n" -le 2100
check_eq "the timeline keeps the peak" \
    "$(awk -F, 'NR > 1 && $3 > m { m = $3 } END { print m }' "$run/timeline_default.csv")" "$peak"
if command -v gnuplot >/dev/null; then
    for png in peak_reserved cards timeline; do
        check "whatif draws $png.png (a PNG file)" bash -c "head -c 4 '$run/$png.png' | grep -q PNG"
        check_eq "gnuplot says nothing for $png" "$(cat "$run/logs/plot-$png.log" 2>/dev/null)" ""
    done
    check "WHATIF.md links the charts" grep -q '!\[.*\](timeline.png)' "$run/WHATIF.md"
else
    echo "SKIP: gnuplot not installed: charts not drawn (make deps)"
fi

# ------------------------------------------------------------ the same as build/replay
# Each row of whatif.csv is what build/replay --summary gives for that
# setting and card (--conf always: it replaces the trace's settings; the
# garbage-collection setting also with the card's room as --limit).
trace=$tmp/run.trace
gzip -dc "$tmp/train run.pickle.gz" > "$tmp/run.pickle" && "$root/scripts/snapshot2trace" --replay "$build/replay" "$tmp/run.pickle" > "$trace"
# as_replay SETTING CARD: the row's figures, and build/replay's, as two lines
as_replay() {
    local row conf cap limit
    row=$(awk -F, -v s="$1" -v c="$2" '$1 == s && $(NF - 13) == c' "$run/whatif.csv")
    [ -n "$row" ] || { printf 'no row for %s on %s\n\n' "$1" "$2"; return; }
    conf=$(sed 's/^[^,]*,"\(.*\)",[^"]*$/\1/' <<<"$row")
    cap=$(awk -F, '{ print $(NF - 12) }' <<<"$row")
    limit=$(awk -F, '{ print $(NF - 11) }' <<<"$row")
    awk -F, '{ for (i = NF - 9; i <= NF; i++) printf "%s%s", $i, (i < NF ? "," : "\n") }' <<<"$row"
    "$build/replay" --summary --conf "$conf" --capacity "$cap" ${limit:+--limit "$limit"} "$trace" | python3 -c '
import json, sys
s = json.load(sys.stdin)
keys = "steps peak_allocated peak_reserved alloc_retries ooms first_oom_step first_oom_bytes segments_peak largest_free_at_peak_reserved free_at_peak_reserved"
print(",".join("" if s[k] is None else str(s[k]) for k in keys.split()))'
}
for pair in "default none" "default $fail" "default $want" "expandable_segments $fail" \
            "roundup_power2_list none" "gc_0.6_limit $fail" "gc_0.6_limit $want"; do
    got=$(as_replay $pair)
    check_eq "whatif.csv's figures for $pair are build/replay --summary's" "$(sed -n 1p <<<"$got")" "$(sed -n 2p <<<"$got")"
done
check "the garbage-collection rows have a limit (the card's room)" \
    awk -F, -v w="$want" '$1 == "gc_0.6_limit" && $(NF - 13) == w && $(NF - 11) == $(NF - 12) { f = 1 } END { exit !f }' "$run/whatif.csv"
# The timeline: build/replay's CSV with no card, each point the largest
# allocated and reserved of its stretch of steps (about 2000 stretches).
"$build/replay" --capacity 1099511627776 --conf "" "$trace" | awk -F, -v n="$(col "$run/whatif.csv" default none 7)" '
    NR == 1 { print "step,allocated,reserved"; k = int((n + 1999) / 2000); if (k < 1) k = 1; next }
    { if ($6 + 0 > a) a = $6 + 0; if ($7 + 0 > r) r = $7 + 0; c++
      if (c == k) { printf "%s,%.0f,%.0f\n", $1, a, r; a = 0; r = 0; c = 0 }; last = $1 }
    END { if (c > 0) printf "%s,%.0f,%.0f\n", last, a, r }' > "$tmp/timeline.csv"
check "timeline_default.csv is build/replay's CSV cut to stretches" cmp "$tmp/timeline.csv" "$run/timeline_default.csv"

# ------------------------------------------------------------ threads change nothing
# One thread and four: the same files, byte for byte (WHATIF.md's run time aside).
for j in 1 4; do
    "$whatif" --results "$tmp/jobs$j" --context "$ctx" --cards 8,12,16 --jobs "$j" "$tmp/train run.pickle.gz" \
        > /dev/null 2> "$tmp/err.jobs$j"
    check_eq "whatif --jobs $j exits 0" "$?" 0
done
check "--jobs 4 says so" grep -q "^whatif: 32 replays (8 settings, each with no card and on 3 cards), 4 at a time$" "$tmp/err.jobs4"
same=0
for f in whatif.csv answer.csv failed.csv timeline_default.csv WHATIF.md; do
    cmp -s <(sed 's/replays in [0-9.]* s\.$//' "$tmp/jobs1/whatif-latest/$f") \
           <(sed 's/replays in [0-9.]* s\.$//' "$tmp/jobs4/whatif-latest/$f") && same=$((same + 1))
done
check_eq "--jobs 1 and --jobs 4 write the same five files" "$same" 5

# ------------------------------------------------------------ no gnuplot, scripts/whatif
GNUPLOT=$tmp/no-such-gnuplot "$root/scripts/whatif" --build "$build" --results "$tmp/wrapped" --context "$ctx" \
    --cards 16 "$tmp/train run.pickle.gz" > "$tmp/out" 2> "$tmp/err"
check_eq "scripts/whatif --build runs BUILD/whatif" "$?" 0
check "it prints where the answer is" grep -q "^whatif: $tmp/wrapped/whatif-.*-train_run/WHATIF.md (results/whatif-latest)$" "$tmp/out"
check "without gnuplot it says the charts are skipped" grep -q "^whatif: gnuplot not found: charts skipped" "$tmp/err"
check_eq "and WHATIF.md links no chart" "$(grep -c '!\[' "$tmp/wrapped/whatif-latest/WHATIF.md")" 0
check_eq "and draws none" "$(ls "$tmp/wrapped/whatif-latest" | grep -c png)" 0
check "bad input through scripts/whatif: exit 2" bash -c "'$root/scripts/whatif' --build '$build' --cards x > /dev/null 2>&1; test \$? = 2"
check "a missing build: exit 2" bash -c "'$root/scripts/whatif' --build '$tmp/nowhere' x > /dev/null 2>&1; test \$? = 2"

# ------------------------------------------------------------ interrupted
# A gnuplot that waits: SIGTERM while it runs ends the run with 130, and
# neither the folder nor its temporary one is left.
printf '#!/bin/sh\ntouch "%s/plotting"\nexec sleep 60\n' "$tmp" > "$tmp/slowplot" && chmod +x "$tmp/slowplot"
mkdir -p "$tmp/stopped"
GNUPLOT=$tmp/slowplot "$whatif" --results "$tmp/stopped" --context "$ctx" --cards 16 "$tmp/train run.pickle.gz" \
    > /dev/null 2> "$tmp/err.stop" &
pid=$!
for _ in $(seq 600); do [ -e "$tmp/plotting" ] && break; sleep 0.1; done
kill -TERM "$pid"
wait "$pid"
check_eq "SIGTERM during the charts: exit 130" "$?" 130
check_eq "it says nothing was written" "$(tail -1 "$tmp/err.stop")" "whatif: interrupted; nothing written"
check_eq "and nothing was" "$(ls -A "$tmp/stopped")" ""

# ------------------------------------------------------------ leaks
# make test runs this suite without LeakSanitizer's exit scan; one run with it.
ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=1:exitcode=23 "$whatif" --results "$tmp/leaks" --context "$ctx" \
    --cards 16 "$tmp/train run.pickle.gz" > /dev/null 2> "$tmp/err.leaks"
check_eq "a whole run leaks nothing (LeakSanitizer)" "$?" 0
ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=1:exitcode=23 "$whatif" --results "$tmp/leaks" --context 1G \
    "$tmp/nonexistent.pickle" > /dev/null 2>&1
check_eq "bad input leaks nothing either (exit 2)" "$?" 2

# ------------------------------------------------------------ context from a run
# No --context: the latest run's C11 figure (here a fake results/latest).
mkdir -p "$res/20260101T000000Z-fake/"
ln -sfn 20260101T000000Z-fake "$res/latest"
{ echo "claim,experiment,variant,param,param_value,metric,unit,n,median,min,max,mean,stdev,status,note"
  echo "C11,context_cost,lazy,stage,1,device_used_delta_nvsmi,bytes,5,$((5 * GiB)),0,0,0,0,ok,context"; } \
    > "$res/20260101T000000Z-fake/context_cost.csv"
before=$(cd "$run" && find . -type f -exec md5sum {} + | sort | md5sum)
# Three cards around the answer are enough here (the whole sweep ran above).
"$whatif" --results "$res" --cards 16,24,32 "$tmp/train run.pickle.gz" > /dev/null 2> "$tmp/err"
check_eq "whatif exits 0 with the context of the latest run" "$?" 0
check "it says the context came from results/latest" grep -q "context: 5120 MiB.*latest/context_cost.csv" "$tmp/err"
run2=$(readlink -f "$res/whatif-latest")
check "a second run writes a second folder" test "$run2" != "$(readlink -f "$run")"
check_eq "the earlier folder is untouched" "$(cd "$run" && find . -type f -exec md5sum {} + | sort | md5sum)" "$before"
check_eq "the smallest card follows that context" \
    "$(awk -F, '$1 == "default" { print $4 }' "$run2/answer.csv")" "$(smallest $((5 * GiB)))"

# No --context, no latest run: the committed H100 reference's figure.
rm "$res/latest"
"$whatif" --results "$res" --cards 16,24 "$tmp/train run.pickle.gz" > /dev/null 2> "$tmp/err"
check_eq "whatif exits 0 with the reference's context" "$?" 0
check "it says the context came from the H100 reference" \
    grep -q "context: [0-9]* MiB ([0-9]* bytes), C11's measured CUDA context (results/reference-h100/context_cost.csv)" "$tmp/err"

# ------------------------------------------------------------ bad input
bad() { # WHAT ARGS...: exit 2, one line on stderr, nothing new in the results folder
    local what=$1; shift
    local listing; listing=$(ls -A "$res")
    "$whatif" --results "$res" "$@" > "$tmp/out" 2> "$tmp/err"
    local rc=$?
    check_eq "$what: exit 2" "$rc" 2
    check_eq "$what: one line on stderr" "$(wc -l < "$tmp/err")" 1
    check_eq "$what: nothing written" "$(ls -A "$res")" "$listing"
}
echo "not a pickle" > "$tmp/text.pickle"
: > "$tmp/empty.pickle"
bad "no snapshot" --context 1G
bad "a missing snapshot" --context 1G "$tmp/nonexistent.pickle"
bad "a folder for a snapshot" --context 1G "$tmp"
bad "an empty snapshot" --context 1G "$tmp/empty.pickle"
bad "a file that is not a snapshot" --context 1G "$tmp/text.pickle"
bad "a context that is not a number" --context lots "$tmp/train run.pickle.gz"
bad "a negative context" --context -5 "$tmp/train run.pickle.gz"
bad "a context larger than every card" --context 200G "$tmp/train run.pickle.gz"
bad "bad card sizes" --cards 16,x "$tmp/train run.pickle.gz"
bad "an unknown option" --frobnicate "$tmp/train run.pickle.gz"

# ------------------------------------------------------------ snapshots snapshot2trace refuses
# Each is refused before any work: exit 2, one line naming the user's file
# (not a temporary one) and what is wrong in it, nothing left in the results
# folder (no .whatif.tmp.*, no run folder).
mkdir -p "$tmp/snaps"
python3 - "$tmp/snaps" <<'EOF'
import gzip, pickle, sys
d = sys.argv[1]
A = 0x7F0000000000
MiB = 1 << 20
def seg(addr=A, size=20 * MiB, blocks=None):
    return {"device": 0, "address": addr, "total_size": size, "stream": 0, "segment_type": "large",
            "blocks": [{"address": addr, "size": size, "state": "inactive"}] if blocks is None else blocks}
def ev(action, addr=A + 64 * MiB, size=4096, stream=0):
    return {"action": action, "addr": addr, "size": size, "stream": stream}
one = [ev("alloc")]
cases = {
    "size_past_2_64": ([], [ev("alloc", size=2**64 + 5)]),
    "segment_at_0": ([seg(addr=0)], one),
    "streams_300": ([], [ev("alloc", A + i * 2 * MiB, 1000, stream=i + 1) for i in range(300)]),
    "block_past_segment": ([seg(size=2 * MiB, blocks=[{"address": A, "size": 40 * MiB, "state": "active_allocated"}])], one),
    "blocks_not_list": ([seg(blocks=5)], one),
}
for name, (segs, hist) in cases.items():
    with open("%s/%s.pickle" % (d, name), "wb") as f:
        pickle.dump({"segments": segs, "device_traces": [hist]}, f)
# device 0 recorded nothing (as when another device ran the model), device 1 did
with gzip.open("%s/device1_only.pickle.gz" % d, "wb") as f:
    pickle.dump({"segments": [], "device_traces": [[], [ev("alloc", size=3 << 30)]]}, f)
EOF
python3 -c 'import sys, zlib
c = zlib.compressobj(1, zlib.DEFLATED, 31)
with open(sys.argv[1], "wb") as f:
    f.write(c.compress(b"\x80\x04"))
    for _ in range(64): f.write(c.compress(b"\0" * (1 << 20)))
    f.write(c.flush())' "$tmp/snaps/bomb.pickle.gz"
# refused_snap NAME PATTERN [OPTIONS]: bad input naming the snapshot, its line matching PATTERN (grep -E)
refused_snap() {
    local name=$1 f=$tmp/snaps/$1 what=$2; shift 2
    bad "$name${1:+ ($*)}" --context 1G --cards 16 "$@" "$f"
    check "  ... naming the snapshot and what is wrong ($what)" grep -qE "^whatif: $f: .*$what" "$tmp/err"
    check "  ... and no temporary file" sh -c "! grep -q 'whatif.tmp' '$tmp/err'"
}
refused_snap size_past_2_64.pickle "'size' is a 65-bit number"
refused_snap segment_at_0.pickle "segments\[0\]: a segment of 20971520 bytes at 0x0"
refused_snap streams_300.pickle "301 streams; the model keeps pools for at most 256"
refused_snap block_past_segment.pickle "segments\[0\]\['blocks'\]\[0\]: 41943040 bytes at 0x7f0000000000: not inside its segment"
refused_snap blocks_not_list.pickle "segments\[0\]: 'blocks' is 5, not a list"
refused_snap device1_only.pickle.gz "device 0 recorded no events: nothing to replay \(devices with events: 1 \(--device N\)\)"
refused_snap device1_only.pickle.gz "the snapshot has no device 2" --device 2
MEMCLAIMS_MAX_PICKLE_BYTES=16Mi refused_snap bomb.pickle.gz "larger than the limit of 16777216 bytes"
"$whatif" --results "$tmp/dev1" --context 1G --cards 2,8 --device 1 "$tmp/snaps/device1_only.pickle.gz" > /dev/null 2> "$tmp/err"
check_eq "--device 1 replays the device that has events (exit 0)" "$?" 0
check "  ... and says so" grep -q "^whatif: converted .*device1_only.pickle.gz (device 1)$" "$tmp/err"
check_eq "  ... whose 3 GiB fit the 8 GiB card, not the 2 GiB one" \
    "$(awk -F, '$1 == "default" { print $4 ":" $5 }' "$tmp/dev1/whatif-latest/answer.csv")" "8:2"
check "  ... and WHATIF.md names the device" grep -q "snapshot's device 1" "$tmp/dev1/whatif-latest/WHATIF.md"
"$whatif" --results "$tmp/new/results" --context 1G "$tmp/snaps/segment_at_0.pickle" > /dev/null 2>&1
check_eq "a refused snapshot with a results folder not there yet: exit 2" "$?" 2
check "  ... and the folder is not made" test ! -e "$tmp/new"

# ------------------------------------------------------------ numeric options
bad "a card past 2^64 bytes" --cards 18446744073 "$tmp/train run.pickle.gz"
bad "a card of 0 GiB" --cards 0,16 "$tmp/train run.pickle.gz"
bad "a card past 1024 GiB" --cards 16,1025 "$tmp/train run.pickle.gz"
bad "a card given twice" --cards 16,16.0 "$tmp/train run.pickle.gz"
bad "33 cards" --cards "$(seq -s, 1 33)" "$tmp/train run.pickle.gz"
bad "an empty card list" --cards "" "$tmp/train run.pickle.gz"
bad "a context that leaves the largest card given no room" --context 8G --cards 4,8 "$tmp/train run.pickle.gz"
bad "a context past 2^64" --context 99999999999999999999999G "$tmp/train run.pickle.gz"
bad "--jobs 0" --jobs 0 "$tmp/train run.pickle.gz"
bad "--jobs 100" --jobs 100 "$tmp/train run.pickle.gz"
bad "--device 128" --device 128 "$tmp/train run.pickle.gz"
bad "--device -1" --device -1 "$tmp/train run.pickle.gz"
bad "--device x" --device x "$tmp/train run.pickle.gz"
bad "--device without a value" "$tmp/train run.pickle.gz" --device
check "--help documents --device" sh -c "'$whatif' --help | grep -q -- '--device N'"

# ------------------------------------------------------------ a trace the replay refuses anyway
# A checkout whose snapshot2trace writes a trace build/replay refuses (here
# a stand-in; the real one refuses such snapshots itself): exit 2, one line
# naming the user's snapshot and the parser's or the replay's reason, with
# the trace's line, not the temporary file's name; nothing left behind.
mkdir -p "$tmp/fake/build" "$tmp/fake/scripts" "$tmp/fake/results"
cp "$whatif" "$build/replay" "$tmp/fake/build/"
fake_s2t() { printf '#!/bin/sh\n%s\n' "$1" > "$tmp/fake/scripts/snapshot2trace"; chmod +x "$tmp/fake/scripts/snapshot2trace"; }
# fake_bad WHAT PATTERN CODE: the fake whatif on the synthetic snapshot exits CODE, one line matching PATTERN
fake_bad() {
    "$tmp/fake/build/whatif" --results "$tmp/fake/results" --context 1G --cards 16 "$tmp/train run.pickle.gz" \
        > "$tmp/out" 2> "$tmp/err"
    check_eq "$1: exit $3, one line" "$?:$(wc -l < "$tmp/err")" "$3:1"
    check "  ... naming the snapshot and the reason ($2)" grep -qE "$2" "$tmp/err"
    check "  ... not the temporary trace" sh -c "! grep -q 'whatif.tmp' '$tmp/err'"
    check_eq "  ... nothing left in the results folder" "$(ls -A "$tmp/fake/results")" ""
}
fake_s2t 'printf "segment 0x0 2097152\nalloc 1 512\n"'
fake_bad "a trace the parser refuses" \
    "^whatif: '$tmp/train run.pickle.gz': the replay's parser refuses the trace snapshot2trace made of it \(line 1 of its trace: bad segment address '0x0'" 2
fake_s2t 'printf "segment 0x7f0000000000 2097152\nlive 1 4194304 0x7f0000000000 block=4194304\nalloc 2 512\n"'
fake_bad "a trace the parser reads but the replay cannot rebuild" \
    "^whatif: '$tmp/train run.pickle.gz': the replay refuses the trace snapshot2trace made of it \(line 1 of its trace: live block 0x7f0000000000 of 4194304 bytes .*does not fit" 2
fake_s2t 'echo "Traceback (most recent call last):" >&2; echo "KeyError: boom" >&2; exit 1'
fake_bad "a snapshot2trace that fails" "^whatif: scripts/snapshot2trace failed on '$tmp/train run.pickle.gz' \(exit 1\): KeyError: boom$" 1

summary
